#!/usr/bin/env bash
# The whole GPU check from the GPU kit (scripts/make-gpu-kit.sh), run in a
# copy of the source tree on a bare GPU machine, in at most 8 minutes; every
# stage has its own limit (scripts/gpu_check.py). Results: OUTDIR/summary.json
# and OUTDIR/summary.txt, with each stage's log.
#
#   scripts/gpu-check.sh OUTDIR [--archive gpu-kit.tar.xz | --kit DIR] [--device cpu] [gpu_check.py options]
#
# --device cpu is the dry run: the CPU against itself, the stages that need
# an accelerator skipped by name. NCCL comes from the machine's PyTorch
# (its nvidia-nccl package); Python needs numpy.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/gpu-check.sh OUTDIR [--archive FILE | --kit DIR] [options]}
shift
archive=$repo/gpu-kit.tar.xz
kit=""
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --archive) archive=$2; shift 2 ;;
    --kit) kit=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
mkdir -p "$out"
if [ -z "$kit" ]; then
  unpacked=$(mktemp -d)
  tar -C "$unpacked" -xJf "$archive"
  kit=$unpacked/tessera-gpu-kit
fi
nccl=$(python3 -c 'import importlib.util as u; s = u.find_spec("nvidia.nccl"); print(list(s.submodule_search_locations)[0] + "/lib")' 2>/dev/null || true)
if [ -n "$nccl" ] && [ -d "$nccl" ]; then export LD_LIBRARY_PATH="$nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
python3 -c 'import numpy' || { echo "gpu-check: numpy must be importable" >&2; exit 2; }
export PYTHONUNBUFFERED=1
exec timeout --kill-after=10 480 python3 "$repo/scripts/gpu_check.py" "$out" --kit "$kit" "${args[@]}"
