#!/usr/bin/env bash
# Installs what the README's walkthrough uses, which a test runs as written (test/e2e/newcomer.test.ts):
# curl, openssl and jq, from Debian. Needs root and apt when one is missing.
set -euo pipefail
missing=()
for tool in curl openssl jq; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q "${missing[@]}" >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
