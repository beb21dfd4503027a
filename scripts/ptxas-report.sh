#!/usr/bin/env bash
# Registers, shared memory, stack and spills of every CUDA kernel, as the
# compiler reports them (nvcc -Xptxas=-v), for the GPU kit's build
# (scripts/make-gpu-kit.sh configures it; sm_90a by default):
#
#   scripts/ptxas-report.sh [BUILD_DIR]      (default build-gpu-kit)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu-kit}
[ -f "$build/build.ninja" ] || { echo "ptxas-report: configure $build first (make gpu-kit)" >&2; exit 2; }
objects=$(mktemp -d)
trap 'rm -rf "$objects"' EXIT
ninja -C "$build" -t commands backends/libtessera-backend-cuda.so | grep -E 'nvcc .* kernels/cuda/[a-z_]+\.cu$' |
  while read -r line; do
    # The same compile without ccache or dependency files, its object aside.
    line=${line#*ccache }
    line=$(sed -E 's/ -MD -MT [^ ]+ -MF [^ ]+//; s/ -o [^ ]+/ -o OBJ/' <<<"$line")
    (cd "$build" && eval "${line/ -o OBJ/ -o $objects/k.o} -Xptxas=-v" 2>&1)
  done >"$objects/ptxas.log"
python3 scripts/ptxas_report.py "$objects/ptxas.log"
