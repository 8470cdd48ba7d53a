#!/usr/bin/env bash
# Installs what the tests use from Debian: curl, openssl and jq (the README's walkthrough, run as written
# by test/e2e/newcomer.test.ts) and chromium (the console's browser tests, test/e2e/console.test.ts).
# Needs root and apt when one is missing.
set -euo pipefail
missing=()
for tool in curl openssl jq chromium; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q "${missing[@]}" >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
