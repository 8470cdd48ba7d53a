#!/usr/bin/env bash
# Installs what builds and runs the image on a Debian machine without Docker (test/e2e/image.test.ts):
# buildah (build), podman with runc (run; crun fails where cgroups are in hybrid mode), debootstrap
# (a local base image when no registry is reachable). Needs root and apt.
set -euo pipefail
missing=()
for tool in buildah podman runc debootstrap; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q "${missing[@]}" >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
