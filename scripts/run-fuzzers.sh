#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for
# FUZZ_SECONDS (default 600), seeded from the corpus in tests/fuzz/corpus.
# Prints each target's execution count; exits non-zero on any finding.
#   --build-only   configure and build (with FUZZ_EXTRA_TARGETS too: the
#                  sanitizer unit tests share this build), run nothing
set -euo pipefail
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
build_dir=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-600}
targets=${FUZZ_TARGETS:-"gguf_fuzz safetensors_fuzz tokenizer_fuzz hf_tokenizer_fuzz chat_template_fuzz request_fuzz step_plan_fuzz quantization_config_fuzz grammar_compile_fuzz grammar_matcher_fuzz chat_values_fuzz json_schema_fuzz artifact_fuzz"}

# -O1 with line tables: what the sanitizers need for exact reports, at
# about half the compile time of -O2 -g.
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_FUZZ=ON \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DTESSERA_CUDA=OFF -DTESSERA_HIP=OFF -DTESSERA_TESTS=ON -DTESSERA_SANITIZE=address,undefined >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target $targets ${FUZZ_EXTRA_TARGETS:-}
[ "${1:-}" = --build-only ] && exit 0

# The corpus kept in the repository (tests/fuzz/corpus/TARGET) seeds a
# working copy, which the run may grow.
seed_dir() {
  local corpus="$build_dir/corpus-$1"
  mkdir -p "$corpus"
  cp tests/fuzz/corpus/"$1"/* "$corpus/"
  echo "$corpus"
}

run_one() {  # target -> status; its log in $build_dir
  local target=$1 corpus log execs
  corpus=$(seed_dir "$target")
  log="$build_dir/$target.log"
  if "$build_dir/tests/fuzz/$target" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=65536 \
      -artifact_prefix="$build_dir/$target-" "$corpus" >"$log" 2>&1; then
    # libFuzzer's closing line; its recommended dictionary can hold text that looks like "#N".
    execs=$(grep -Eo '^Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' || true)
    [ -n "$execs" ] || execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || true)
    echo "fuzz: $target: no finding, $execs executions in $seconds s"
  else
    echo "fuzz: $target: FINDING, see $log"
    tail -40 "$log"
    return 1
  fi
}

# FUZZ_JOBS targets at a time (default: one per core).
jobs=${FUZZ_JOBS:-$(nproc)}
status=0
pids=()
for target in $targets; do
  run_one "$target" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status
