#!/usr/bin/env bash
# Builds, on this machine, everything a bare GPU machine (CUDA driver, nvcc,
# Python with PyTorch; none of Debian's libraries, no network) needs to run
# scripts/gpu-check.sh, and packs it as one archive:
#
#   tessera-gpu-kit/bin/      tessera, tessera_gpu_tests, tessera_accel_bench
#   tessera-gpu-kit/backends/ libtessera-backend-cuda.so (one architecture)
#   tessera-gpu-kit/lib/      the shared libraries those need that such a
#                             machine lacks; every binary finds them through
#                             its RPATH ($ORIGIN/../lib)
#
# Left out: glibc, libstdc++/libgcc, OpenSSL and the driver (the machine
# has them) and NCCL (gpu-check.sh takes it from the machine's PyTorch).
#
#   scripts/make-gpu-kit.sh [ARCHIVE]      (default gpu-kit.tar.xz)
#
# Environment: GPU_KIT_BUILD_DIR (build-gpu-kit), GPU_KIT_CUDA_ARCH (90a).
set -euo pipefail
cd "$(dirname "$0")/.."
archive=$(realpath -m "${1:-gpu-kit.tar.xz}")
build=${GPU_KIT_BUILD_DIR:-build-gpu-kit}
arch=${GPU_KIT_CUDA_ARCH:-90a}
export PATH="/usr/local/cuda/bin:$PATH"
# DT_RPATH, not DT_RUNPATH: a RUNPATH serves only the binary's own
# dependencies, so the libraries' dependencies (libgrpc++ -> libgrpc) would
# be looked for on the system; an RPATH serves the whole tree.
rpath_flags=-Wl,--disable-new-dtags

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_CUDA=ON -DTESSERA_HIP=OFF -DTESSERA_XPU=OFF \
  -DTESSERA_CUDA_ARCHITECTURES="$arch" -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' \
  "-DCMAKE_EXE_LINKER_FLAGS=$rpath_flags" "-DCMAKE_MODULE_LINKER_FLAGS=$rpath_flags" >/dev/null
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target tessera tessera_gpu_tests tessera_accel_bench tessera-backend-cuda

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
kit=$stage/tessera-gpu-kit
mkdir -p "$kit/bin" "$kit/backends" "$kit/lib"
cp "$build/tessera" "$build/tests/tessera_gpu_tests" "$build/tests/tessera_accel_bench" "$kit/bin/"
cp "$build/backends/libtessera-backend-cuda.so" "$kit/backends/"

# The closure: every library ldd resolves for the kit's programs, less the
# ones every GPU machine has.
provided='^(libc|libm|libdl|libpthread|librt|libutil|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcrypto|libssl|libcuda|libnccl)\.so'
for program in "$kit"/bin/* "$kit"/backends/*.so; do
  ldd "$program" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r soname path; do
  if [[ ! $soname =~ $provided ]]; then cp -L "$path" "$kit/lib/$soname"; fi
done
# Every library the kit's programs load must now come from the kit, or be
# one the machine provides.
stray=$(for program in "$kit"/bin/* "$kit"/backends/*.so; do
  ldd "$program" | awk '$2 == "=>" {print $1, $3}'
done | sort -u | while read -r soname path; do
  if [[ ! $soname =~ $provided ]] && [[ $(realpath -m "$path") != "$kit/lib/"* ]]; then echo "$soname $path"; fi
done)
if [ -n "$stray" ]; then
  echo "make-gpu-kit: these would be taken from this machine, not the kit:" >&2
  echo "$stray" >&2
  exit 1
fi
# Symbols stay in the programs and the plugin (a backtrace names functions).
strip --strip-debug "$kit"/bin/* "$kit"/backends/*.so
strip --strip-unneeded "$kit"/lib/*.so* 2>/dev/null || true

tar -C "$stage" -cf - tessera-gpu-kit | xz -T0 -9 >"$archive"
echo "$archive: $(du -k "$archive" | cut -f1) KiB packed, $(du -sk "$kit" | cut -f1) KiB unpacked," \
  "$(ls "$kit/lib" | wc -l) libraries"
