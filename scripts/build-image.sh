#!/usr/bin/env bash
# Builds a tessera image without a Docker daemon: buildah with vfs storage
# and chroot isolation, which run unprivileged inside a container or a VM.
#   scripts/build-image.sh cpu     -> localhost/tessera:cpu
#   scripts/build-image.sh cpu --from-build build
#                                  -> localhost/tessera:cpu from the release binary
#                                     in build/ (a Debian 12 host's), not compiled again
#   scripts/build-image.sh cuda    -> localhost/tessera:cuda (needs NVIDIA's apt repository)
#   scripts/build-image.sh --can-run   exit 0 when buildah can run a container here
# Where no registry serves debian:12 (an offline build machine with a Debian
# mirror), the base images are made from the mirror with debootstrap.
# Then: TESSERA_IMAGE=localhost/tessera:cpu pytest tests/python/test_image.py
set -euo pipefail

flavour="${1:-cpu}"
from_build=""
if [ "${2:-}" = --from-build ]; then
  from_build="${3:?--from-build names a build directory}"
  [ "$flavour" = cpu ] || { echo "--from-build makes the cpu image only" >&2; exit 64; }
  [ -x "$from_build/tessera" ] || { echo "$from_build/tessera: no release binary there (make build)" >&2; exit 66; }
fi
case "$flavour" in
  cpu) dockerfile=deploy/docker/Dockerfile ;;
  cuda) dockerfile=deploy/docker/Dockerfile.cuda ;;
  --can-run) ;;
  *) echo "usage: $0 cpu|cuda|--can-run" >&2; exit 64 ;;
esac
root="$(cd "$(dirname "$0")/.." && pwd)"
buildah=(buildah --storage-driver vfs)
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

command -v buildah >/dev/null || { echo "buildah is not installed (apt-get install buildah)" >&2; exit 69; }

# debian:12-slim's layout: a minimal base without apt's package cache, lists,
# manuals or documentation other than the copyright files.
debootstrap_base() {
  command -v debootstrap >/dev/null || { echo "no registry and no debootstrap (apt-get install debootstrap)" >&2; exit 69; }
  local rootfs
  rootfs="$(mktemp -d /var/tmp/tessera-debian12.XXXXXX)"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
  find "$rootfs/usr/share/doc" -type f ! -name copyright -delete
  local ctr mnt
  ctr="$("${buildah[@]}" from scratch)"
  mnt="$("${buildah[@]}" mount "$ctr")"
  cp -a "$rootfs/." "$mnt/"
  "${buildah[@]}" umount "$ctr" >/dev/null
  "${buildah[@]}" config --cmd /bin/bash "$ctr"
  "${buildah[@]}" commit -q "$ctr" docker.io/library/debian:12-slim
  "${buildah[@]}" tag docker.io/library/debian:12-slim docker.io/library/debian:12
  "${buildah[@]}" rm "$ctr" >/dev/null
  rm -rf "$rootfs"
}

if ! "${buildah[@]}" inspect --type image docker.io/library/debian:12-slim >/dev/null 2>&1 &&
   ! "${buildah[@]}" pull -q docker.io/library/debian:12-slim >/dev/null 2>&1; then
  echo "debian:12-slim cannot be pulled: making it with debootstrap from $mirror" >&2
  debootstrap_base
fi
"${buildah[@]}" inspect --type image docker.io/library/debian:12 >/dev/null 2>&1 ||
  "${buildah[@]}" pull -q docker.io/library/debian:12 >/dev/null 2>&1 ||
  "${buildah[@]}" tag docker.io/library/debian:12-slim docker.io/library/debian:12

if [ "$flavour" = --can-run ]; then
  ctr="$("${buildah[@]}" from docker.io/library/debian:12-slim)"
  trap '"${buildah[@]}" rm "$ctr" >/dev/null 2>&1' EXIT
  "${buildah[@]}" run --isolation chroot "$ctr" -- true
  exit
fi

# Docker format: OCI image configs have no HEALTHCHECK.
cd "$root"
if [ -n "$from_build" ]; then
  # A context of just what the image holds: the binary (stripped), the XPU
  # plugin and the deploy files.
  context="$(mktemp -d /var/tmp/tessera-image.XXXXXX)"
  trap 'rm -rf "$context"' EXIT
  mkdir -p "$context/backends" "$context/deploy"
  cp "$from_build/tessera" "$context/tessera"
  [ -f "$from_build/backends/libtessera-backend-xpu.so" ] && cp "$from_build/backends/libtessera-backend-xpu.so" "$context/backends/"
  strip "$context/tessera" "$context"/backends/*.so 2>/dev/null || true
  cp -r deploy/docker "$context/deploy/docker"
  "${buildah[@]}" bud --isolation chroot --format docker -f deploy/docker/Dockerfile.prebuilt -t "localhost/tessera:$flavour" "$context"
else
  "${buildah[@]}" bud --isolation chroot --format docker -f "$dockerfile" -t "localhost/tessera:$flavour" .
fi
"${buildah[@]}" images "localhost/tessera:$flavour"
