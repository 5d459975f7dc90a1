#!/usr/bin/env bash
# Builds Eddy's container image from this repository alone (no registry is
# needed): the release binary from cargo on this machine, stripped, and the
# shared libraries `ldd` lists for it, staged as the root file system of a
# `FROM scratch` image (deploy/Dockerfile).
#
#   deploy/build-image.sh [TAG]      # default tag: eddy:latest (or $EDDY_IMAGE)
#
# The image runs on machines with the same architecture as this one; the
# libraries come from this machine, so it needs no glibc of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

tag=${1:-${EDDY_IMAGE:-eddy:latest}}
started=$(date +%s)

cargo build --release -p eddy
bin=target/release/eddy

ctx=target/image
rm -rf "$ctx"
root="$ctx/rootfs"
mkdir -p "$root/usr/local/bin" "$root/etc/eddy" "$root/tmp" "$ctx/data"
chmod 1777 "$root/tmp"
strip -o "$root/usr/local/bin/eddy" "$bin"

# Every library the binary loads, at the path its loader looks for it:
# `name => /path (addr)` lines, and the loader itself (`/path (addr)`).
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
  while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done

# Name lookups (other nodes by container name) read these; the user the
# node runs as has a name for tools that ask.
printf 'hosts: files dns\n' > "$root/etc/nsswitch.conf"
printf 'root:x:0:0:root:/:/nonexistent\neddy:x:1000:1000:eddy:/var/lib/eddy:/nonexistent\n' > "$root/etc/passwd"
printf 'root:x:0:\neddy:x:1000:\n' > "$root/etc/group"

cp deploy/Dockerfile "$ctx/Dockerfile"
docker build -t "$tag" "$ctx"
echo "built $tag in $(( $(date +%s) - started )) s: $(docker image inspect -f '{{.Size}}' "$tag") bytes"
