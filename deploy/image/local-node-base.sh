#!/usr/bin/env bash
# Makes a slim Node 20 base image without a registry: Debian bookworm (debootstrap, minbase) plus this
# machine's Node 20 binary, npm and corepack, imported into podman's store as $1
# (default localhost/aex-node-base:20). What docker.io's node:20-bookworm-slim gives elsewhere.
# Needs root, debootstrap and podman (Debian packages), and a reachable Debian mirror (DEBIAN_MIRROR).
set -euo pipefail
TAG="${1:-localhost/aex-node-base:20}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
NODE_BIN="$(command -v node)"
NODE_LIB="$(dirname "$(dirname "$(readlink -f "$NODE_BIN")")")/lib/node_modules"
case "$("$NODE_BIN" --version)" in v20.*) ;; *) echo "node 20 is needed, found $("$NODE_BIN" --version)" >&2; exit 1 ;; esac
if podman image exists "$TAG"; then echo "$TAG exists"; exit 0; fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
ROOTFS="$WORK/rootfs"
debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
  || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
install -m 0755 "$NODE_BIN" "$ROOTFS/usr/local/bin/node"
mkdir -p "$ROOTFS/usr/local/lib/node_modules"
cp -a "$NODE_LIB/npm" "$NODE_LIB/corepack" "$ROOTFS/usr/local/lib/node_modules/"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$ROOTFS/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$ROOTFS/usr/local/bin/npx"
ln -s ../lib/node_modules/corepack/dist/corepack.js "$ROOTFS/usr/local/bin/corepack"
tar -C "$ROOTFS" -c . | podman import --change 'CMD ["node"]' - "$TAG" >/dev/null
echo "$TAG built"
