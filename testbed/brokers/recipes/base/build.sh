#!/usr/bin/env bash
# Builds the JRE base image without a registry: debootstrap a minimal Debian with a headless JRE,
# then `docker import` the root filesystem. Usage: build.sh IMAGE:TAG MIRROR
set -euo pipefail
image="$1"
mirror="$2"
suite="${TESTBED_BASE_SUITE:-bookworm}"
rootfs="$(mktemp -d /tmp/testbed-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT
debootstrap --variant=minbase --include=openjdk-17-jre-headless,procps,iproute2 \
  "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || { tail -n 30 "$rootfs.log" >&2; exit 1; }
rm -f "$rootfs.log"
# Keep the image lean: package caches and docs are not needed at run time.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
  "$rootfs"/usr/share/man/*
tar -C "$rootfs" -c . | docker import \
  --change 'ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64' \
  --change 'ENV LANG=C.UTF-8' \
  - "$image" >/dev/null
echo "$image"
