#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one run, each with its own time
# limit, logs and a one-line verdict per stage at the end:
#   tests   the backend parity suite and NCCL tests (tessera_gpu_tests)
#   models  tests/python/test_accelerator_models.py on cuda:0 (greedy, logits,
#           perplexity over the whole text, serving) for the models fetched
#   decode  tests/bench/gpu_decode_bench.py (batch-1 decode, weight GB/s; with
#           LLAMA_BENCH set, llama.cpp's CUDA llama-bench on the same models)
#   serve   tests/bench/gpu_serve_bench.py (throughput at 1/8/32 streams)
#   kernels tests/bench/gemv_vs_cublas.py and the paged decode attention
#           benchmark (tessera_accel_bench)
#
#   scripts/gpu-checks.sh [STAGE ...]        (default: all five)
#
# Environment: TESSERA_BIN (build/tessera), TESSERA_GPU_TESTS
# (build/tests/tessera_gpu_tests), TESSERA_ACCEL_BENCH
# (build/tests/tessera_accel_bench), TESSERA_MODEL_DIR
# (~/.cache/tessera/models), LLAMA_BENCH (unset: no peer), PEAK_GBS (3350),
# CHECKS_OUT (gpu-checks-out): where logs and JSON reports go.
set -u
cd "$(dirname "$0")/.."
bin=${TESSERA_BIN:-build/tessera}
gpu_tests=${TESSERA_GPU_TESTS:-build/tests/tessera_gpu_tests}
accel_bench=${TESSERA_ACCEL_BENCH:-build/tests/tessera_accel_bench}
models=${TESSERA_MODEL_DIR:-$HOME/.cache/tessera/models}
out=${CHECKS_OUT:-gpu-checks-out}
mkdir -p "$out"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(tests models decode serve kernels)
peak_gbs=${PEAK_GBS:-3350}
verdicts=()

stage() {  # name limit_s command...: runs it, logs to $out/name.log
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  verdicts+=("$name: exit $rc in $((SECONDS - t0)) s")
  tail -n 25 "$out/$name.log"
}

fetched_models() {
  local f
  for f in SmolLM2-135M-Instruct.Q4_1.gguf gemma-3-270m-q4_k_m.gguf qwen2.5-coder-0.5b-instruct-q4_k_m.gguf; do
    [ -f "$models/$f" ] && echo "$models/$f"
  done
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$bin" backends || true

for s in "${stages[@]}"; do
  case $s in
    tests)
      stage tests 240 "$gpu_tests" --gtest_output="xml:$out/gpu_tests.xml" ;;
    models)
      # Unbuffered and verbose, so that a stage cut off by its limit still
      # names the test it was in; with pytest-timeout, a test that hangs
      # fails alone.
      per_test=()
      python3 -c "import pytest_timeout" 2>/dev/null && per_test=(--timeout=150)
      TESSERA_BIN=$bin TESSERA_MODEL_DIR=$models TESSERA_ACCEL_REPORT=$out/models.jsonl \
        TESSERA_ACCEL_PPL_CHUNKS=${TESSERA_ACCEL_PPL_CHUNKS:-0} \
        stage models 300 python3 -u -m pytest -v -p no:cacheprovider "${per_test[@]}" \
        tests/python/test_accelerator_models.py -k cuda ;;
    decode)
      mapfile -t files < <(fetched_models)
      peer=()
      [ -n "${LLAMA_BENCH:-}" ] && peer=(--llama-bench "$LLAMA_BENCH")
      stage decode 180 python3 tests/bench/gpu_decode_bench.py --tessera "$bin" --device cuda:0 \
        --peak-gbs "$peak_gbs" "${peer[@]}" "${files[@]}" ;;
    serve)
      mapfile -t files < <(fetched_models)
      stage serve 120 python3 tests/bench/gpu_serve_bench.py "${files[0]}" --tessera "$bin" --device cuda:0 ;;
    kernels)
      stage gemv 150 python3 tests/bench/gemv_vs_cublas.py --bench "$accel_bench" --peak-gbs "$peak_gbs" --reps 5
      stage attention 60 "$accel_bench" --only attention --peak-gbs "$peak_gbs" --reps 5 ;;
    *) echo "unknown stage $s" >&2; exit 2 ;;
  esac
done
printf '%s\n' "${verdicts[@]}"
