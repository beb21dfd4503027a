# Entry points: `make serve` and `make test` set up what is missing, build,
# and run. Everything else is plain CMake under build/.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
MODEL_DIR ?= $(or $(TESSERA_MODEL_DIR),$(HOME)/.cache/tessera/models)
DEFAULT_MODEL ?= $(MODEL_DIR)/SmolLM2-135M-Instruct.Q4_1.gguf
VENV ?= .venv

.PHONY: setup deps models configure build benches test test-avx2 test-full unit-tests python-tests sanitize-build sanitize-tests image-test include-graph serve fuzz fuzz-ci gpu-kit gpu-check-dry clean

setup: deps models

deps:
	@bash scripts/install-deps.sh

models: deps
	@TESSERA_MODEL_DIR="$(MODEL_DIR)" bash scripts/fetch-models.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The benchmark programs (tests/bench, load_tests read them from build/tests),
# which `build` leaves out.
benches: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target benches

# Model-level suites: `make test` (and CI) runs them on the smallest model,
# SmolLM2; `make test-full` (FULL=1) on all three real models.
FULL ?= 0
LARGER_MODEL_TESTS = ^(TensorParallel|ContextParallel)\.(Gemma3|Qwen25Coder)MatchesOneRank$$
UNIT_TEST_FILTER = $(if $(filter 1,$(FULL)),,-E '$(LARGER_MODEL_TESTS)')

unit-tests: build models
	@cd $(BUILD_DIR) && TESSERA_MODEL_DIR="$(MODEL_DIR)" ctest --output-on-failure -j $(JOBS) $(UNIT_TEST_FILTER)

# Perplexity on accelerators: one chunk of SmolLM2 by default (the logits
# test holds every model's prefill to the CPU's bits), where PoCL
# (an XPU device on this CPU) takes minutes a chunk; a GPU run takes all.
ACCEL_PPL_CHUNKS ?= 1
ACCEL_PPL_MODELS ?= smollm2
TEST_MODELS ?= $(if $(filter 1,$(FULL)),all,smollm2)

python-tests: build models
	@TESSERA_BIN=$(abspath $(BUILD_DIR))/tessera TESSERA_MODEL_DIR="$(MODEL_DIR)" \
	  TESSERA_TEST_MODELS=$(TEST_MODELS) TESSERA_ACCEL_PPL_CHUNKS=$(ACCEL_PPL_CHUNKS) TESSERA_ACCEL_PPL_MODELS=$(ACCEL_PPL_MODELS) \
	  $(VENV)/bin/python -m pytest -q --durations=15 tests/python

# One clang build under AddressSanitizer and UBSan serves both the sanitizer
# unit tests and the fuzz targets (scripts/run-fuzzers.sh configures it).
# The unit tests there are the parsers, file readers, tokenizers, grammars,
# request handling and kernels; the model-level comparisons (tensor and
# context parallel ranks, the scheduler driving a real model: preemption,
# speculation, prompt scoring, embeddings; a second backend's tokens, batch
# invariance, step plans through bytes: up to minutes each under ASan) run
# in the plain build only.
SANITIZE_BUILD_DIR ?= build-fuzz
SANITIZE_SKIP = ^(TensorParallel\.|ContextParallel\.|SchedulerWithEngine\.|SecondBackend\.|BatchInvariance\.|PromptLogprobs\.EachPromptTokenScoredOnceAsOneStepScoresIt$$|Embeddings\.|StepPlanCodec\.PlansThroughBytesGiveTheSameTokens$$)
sanitize-build: deps
	@FUZZ_BUILD_DIR=$(SANITIZE_BUILD_DIR) FUZZ_EXTRA_TARGETS=tessera_unit_tests bash scripts/run-fuzzers.sh --build-only

sanitize-tests: sanitize-build
	@cd $(SANITIZE_BUILD_DIR) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -L unit -E '$(SANITIZE_SKIP)'

test: unit-tests python-tests

# The AVX2 paths (Tessera's kernels and oneDNN's) on any x86 machine: the
# unit tests and the model goldens with AVX-512, VNNI and AMX capped off, so
# a machine with them still proves the path of one without. Where the CPU
# has no AVX-512, `make test` has run those paths natively, and this says so.
ISA_FALLBACK_ENV = TESSERA_MAX_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2
ISA_FALLBACK_RUN ?= $(shell grep -qw avx512f /proc/cpuinfo && echo yes)
test-avx2: build models
	@if [ "$(ISA_FALLBACK_RUN)" = yes ]; then \
	  (cd $(BUILD_DIR) && $(ISA_FALLBACK_ENV) TESSERA_MODEL_DIR="$(MODEL_DIR)" ctest --output-on-failure -j $(JOBS) $(UNIT_TEST_FILTER)) && \
	  $(ISA_FALLBACK_ENV) TESSERA_BIN=$(abspath $(BUILD_DIR))/tessera TESSERA_MODEL_DIR="$(MODEL_DIR)" TESSERA_TEST_MODELS=$(TEST_MODELS) \
	    $(VENV)/bin/python -m pytest -q tests/python/test_generation.py tests/python/test_hf_models.py tests/python/test_gguf_tiny_models.py; \
	else echo "test-avx2: this CPU has no AVX-512 ($$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')): make test ran the AVX2 paths natively"; fi

test-full:
	@$(MAKE) test FULL=1 ACCEL_PPL_MODELS=all

# Which library target includes which; fails on an include that no target
# dependency allows (scripts/include_graph.py).
include-graph: configure
	@python3 scripts/include_graph.py $(BUILD_DIR)

# Without arguments the daemon serves the embedded config/default.yaml; a
# model directory other than the default is passed as --model.
SERVE_ARGS ?= $(if $(filter $(HOME)/.cache/tessera/models,$(MODEL_DIR)),,--model "$(DEFAULT_MODEL)" --served-model-name smollm2)
serve: build models
	@$(BUILD_DIR)/tessera serve $(SERVE_ARGS)

fuzz: deps
	@bash scripts/run-fuzzers.sh

# Every fuzz target for 20 s, as CI runs them (make fuzz: 600 s each).
FUZZ_CI_SECONDS ?= 20
fuzz-ci: sanitize-build
	@FUZZ_BUILD_DIR=$(SANITIZE_BUILD_DIR) FUZZ_SECONDS=$(FUZZ_CI_SECONDS) bash scripts/run-fuzzers.sh

# Builds the CPU image with buildah and runs it (tests/python/test_image.py).
# IMAGE_FROM=build packs the release binary already built here (CI) instead
# of compiling inside the image. Skipped, saying why, where buildah cannot
# run a container at all; a build or a check that fails fails.
IMAGE_FROM ?= source
image-test: deps models
	@if bash scripts/build-image.sh --can-run; then \
	  $(if $(filter build,$(IMAGE_FROM)),bash scripts/build-image.sh cpu --from-build $(BUILD_DIR),bash scripts/build-image.sh cpu) && \
	  TESSERA_IMAGE=localhost/tessera:cpu TESSERA_MODEL_DIR="$(MODEL_DIR)" $(VENV)/bin/python -m pytest -q -s tests/python/test_image.py; \
	else echo "image-test: skipped: buildah cannot run a container on this machine (see above)"; fi

# The GPU kit: what a bare H100/H200 needs to run scripts/gpu-check.sh,
# built here (CUDA for sm_90a) and packed as gpu-kit.tar.xz; gpu-check-dry
# runs that check from the packed kit with the CPU against itself, in an
# empty folder, so the kit and the check cannot rot without a GPU.
GPU_KIT ?= gpu-kit.tar.xz
gpu-kit: deps
	@bash scripts/make-gpu-kit.sh $(GPU_KIT)

gpu-check-dry: gpu-kit
	@dir=$$(mktemp -d) && PATH="$(abspath $(VENV))/bin:$$PATH" \
	  bash scripts/gpu-check.sh "$$dir/out" --archive $(abspath $(GPU_KIT)) --device cpu --quick --work "$$dir/work" && \
	  rm -rf "$$dir"

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_BUILD_DIR)
