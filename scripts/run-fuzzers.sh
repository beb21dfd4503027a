#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for
# FUZZ_SECONDS (default 600), seeded from the test data. Prints each
# target's execution count; exits non-zero on any finding.
set -euo pipefail
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
build_dir=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-600}
targets=${FUZZ_TARGETS:-"gguf_fuzz safetensors_fuzz tokenizer_fuzz hf_tokenizer_fuzz chat_template_fuzz request_fuzz step_plan_fuzz"}

CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_FUZZ=ON \
  -DTESSERA_CUDA=OFF -DTESSERA_TESTS=ON -DTESSERA_SANITIZE=address,undefined >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target $targets

seed_dir() {  # target -> a fresh corpus seeded from the test data
  local corpus="$build_dir/corpus-$1"
  mkdir -p "$corpus"
  case "$1" in
    gguf_fuzz) cp tests/data/malformed/*.gguf tests/data/gguf/*.gguf "$corpus/" ;;
    safetensors_fuzz) cp tests/data/malformed/*.safetensors "$corpus/" ;;
    tokenizer_fuzz) cp tests/data/tokenizer-vectors/*.inp "$corpus/" ;;
    hf_tokenizer_fuzz) cp tests/data/hf/spm-bpe/tokenizer.json "$corpus/spm.json"; cp tests/data/hf/tiny-sharded/tokenizer.json "$corpus/byte.json" ;;
    chat_template_fuzz) cp tests/data/chat-templates/*.jinja "$corpus/" ;;
    request_fuzz)
      printf '%s' '{"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.5, "stop": ["x"]}' >"$corpus/chat.json"
      printf '%s' '{"model": "m", "prompt": "hi", "max_tokens": 4, "stream": true}' >"$corpus/completion.json" ;;
    step_plan_fuzz)  # an empty plan: magic "TSPL", version 1, three zero counts
      printf 'TSPL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >"$corpus/empty.bin" ;;
  esac
  echo "$corpus"
}

status=0
for target in $targets; do
  corpus=$(seed_dir "$target")
  log="$build_dir/$target.log"
  echo "fuzz: running $target for $seconds s"
  if "$build_dir/tests/fuzz/$target" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=65536 \
      -artifact_prefix="$build_dir/$target-" "$corpus" >"$log" 2>&1; then
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || true)
    [ -n "$execs" ] || execs=$(grep -Eo '#[0-9]+' "$log" | tail -1 | tr -d '#')
    echo "fuzz: $target: no finding, $execs executions"
  else
    echo "fuzz: $target: FINDING, see $log"
    tail -40 "$log"
    status=1
  fi
done
exit $status
