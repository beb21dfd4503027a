# Entry points: `make serve` and `make test` set up what is missing, build,
# and run. Everything else is plain CMake under build/.
BUILD_DIR ?= build
ASAN_BUILD_DIR ?= build-asan
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
MODEL_DIR ?= $(or $(TESSERA_MODEL_DIR),$(HOME)/.cache/tessera/models)
DEFAULT_MODEL ?= $(MODEL_DIR)/SmolLM2-135M-Instruct.Q4_1.gguf
VENV ?= .venv

.PHONY: setup deps models configure build test unit-tests python-tests sanitize-tests image-test serve fuzz fuzz-ci clean

setup: deps models

deps:
	@bash scripts/install-deps.sh

models: deps
	@TESSERA_MODEL_DIR="$(MODEL_DIR)" bash scripts/fetch-models.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

unit-tests: build models
	@cd $(BUILD_DIR) && TESSERA_MODEL_DIR="$(MODEL_DIR)" ctest --output-on-failure -j $(JOBS)

# Perplexity on accelerators: one chunk of SmolLM2 by default (the logits
# test holds every model's prefill to the CPU's bits), where PoCL
# (an XPU device on this CPU) takes minutes a chunk; a GPU run takes all.
ACCEL_PPL_CHUNKS ?= 1
ACCEL_PPL_MODELS ?= smollm2

python-tests: build models
	@TESSERA_BIN=$(abspath $(BUILD_DIR))/tessera TESSERA_MODEL_DIR="$(MODEL_DIR)" \
	  TESSERA_ACCEL_PPL_CHUNKS=$(ACCEL_PPL_CHUNKS) TESSERA_ACCEL_PPL_MODELS=$(ACCEL_PPL_MODELS) \
	  $(VENV)/bin/python -m pytest -q tests/python

# The file readers and tokenizers under AddressSanitizer and UBSan, fed the
# malformed-file corpus and the conformance vectors. The tensor-parallel
# model comparisons (minutes under ASan) run in the plain build only.
sanitize-tests: deps
	@cmake -S . -B $(ASAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_CUDA=OFF -DTESSERA_HIP=OFF \
	  -DTESSERA_SANITIZE=address,undefined $(CMAKE_ARGS)
	@cmake --build $(ASAN_BUILD_DIR) -j $(JOBS) --target tessera_unit_tests
	@cd $(ASAN_BUILD_DIR) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -L unit -E '^TensorParallel\.'

test: unit-tests python-tests

# Without arguments the daemon serves the embedded config/default.yaml; a
# model directory other than the default is passed as --model.
SERVE_ARGS ?= $(if $(filter $(HOME)/.cache/tessera/models,$(MODEL_DIR)),,--model "$(DEFAULT_MODEL)" --served-model-name smollm2)
serve: build models
	@$(BUILD_DIR)/tessera serve $(SERVE_ARGS)

fuzz: deps
	@bash scripts/run-fuzzers.sh

# Every fuzz target for 45 s, as CI runs them.
fuzz-ci: deps
	@FUZZ_SECONDS=45 bash scripts/run-fuzzers.sh

# Builds the CPU image with buildah and runs it (tests/python/test_image.py).
# Skipped, saying why, where buildah cannot run a container at all; a build
# or a check that fails fails.
image-test: deps models
	@if bash scripts/build-image.sh --can-run; then \
	  bash scripts/build-image.sh cpu && \
	  TESSERA_IMAGE=localhost/tessera:cpu TESSERA_MODEL_DIR="$(MODEL_DIR)" $(VENV)/bin/python -m pytest -q -s tests/python/test_image.py; \
	else echo "image-test: skipped: buildah cannot run a container on this machine (see above)"; fi

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) build-fuzz
