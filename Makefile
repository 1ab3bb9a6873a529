# The two set-up commands of the README. Both install missing Debian packages
# first (scripts/install-deps.sh, idempotent) and build with CMake presets.
PY := /usr/bin/python3
.PHONY: demo test deps build-release build-dev build-asan test-cpp test-asan test-python test-fuzz bench accuracy clean web deps-web test-web

# The 13B-on-24GB question: full fine-tuning, LoRA and QLoRA side by side (the hf
# framework's defaults: PEFT/TRL checkpoint LoRA and QLoRA), then the default run
# with the ranked list of what would make it fit. `fit` exits 1 for "does not fit"
# and 3 for "tight": those are answers, not failures, so only exit code 2 fails the demo.
demo: deps
	cmake --preset release >/dev/null
	cmake --build --preset release --target gpuplan_cli
	./build/release/bin/gpuplan fit llama-2-13b --gpu rtx-4090 --method full,lora,qlora --seq 2048; \
	  rc=$$?; [ $$rc -ne 2 ]
	./build/release/bin/gpuplan fit llama-2-13b --gpu rtx-4090 --seq 2048; rc=$$?; [ $$rc -ne 2 ]

# Each test runs once in `make test`: the unit and CLI tests in the sanitizer build (with the
# fuzzers), so the plain build only makes what the rest needs (the Python module, the
# accuracy report, the packaging, header and example checks, the benchmarks compile) and the Python
# tests call the sanitized CLI. The Python tests and the fuzz runs each keep one core busy,
# so they run side by side (each one's output printed whole when it ends). `make test-cpp`
# alone still builds and runs everything in the plain build.
test: deps test-cpp test-asan
	$(MAKE) --no-print-directory -j2 --output-sync=target DEV_TARGETS="$(DEV_TARGETS)" test-python test-fuzz
	$(MAKE) --no-print-directory test-web

test: DEV_TARGETS := -DGPUPLAN_BUILD_UNIT_TESTS=OFF -DGPUPLAN_BUILD_CLI=OFF
test: export GPUPLAN_CLI := $(CURDIR)/build/asan/bin/gpuplan
DEV_TARGETS := -DGPUPLAN_BUILD_UNIT_TESTS=ON -DGPUPLAN_BUILD_CLI=ON

deps:
	@bash scripts/install-deps.sh

deps-web:
	@bash scripts/install-deps.sh --web

build-release:
	cmake --preset release >/dev/null
	cmake --build --preset release

# Under CI the Debug build keeps line tables only (-g1: about a fifth less compile time on
# the test files); developers get full debug information (-g).
DEV_DEBUG_FLAGS := $(if $(CI),-g1,-g)

build-dev:
	cmake --preset dev -DCMAKE_CXX_FLAGS_DEBUG="$(DEV_DEBUG_FLAGS)" $(DEV_TARGETS) >/dev/null
	cmake --build --preset dev

test-cpp: build-dev
	ctest --preset dev

# One clang build with ASan + UBSan serves both the sanitized C++ tests and the fuzzers.
build-asan:
	cmake --preset asan >/dev/null
	cmake --build --preset asan

test-asan: build-asan
	ctest --preset asan

test-python: build-dev
	@if [ -d python ] && [ -d tests/python ]; then bash scripts/test-python.sh; fi

# libFuzzer smoke run of every reader (clang, ASan+UBSan): a fixed seed and a fixed
# number of runs, so CI sees the same inputs every time. Longer, exploratory runs:
# FUZZ_SECONDS=600 bash scripts/fuzz-smoke.sh (docs/robustness.md).
test-fuzz: build-asan
	FUZZ_BUILD_DIR=build/asan FUZZ_CONFIGURE=0 FUZZ_RUNS=$${FUZZ_RUNS:-20000} FUZZ_SEED=$${FUZZ_SEED:-1} \
	  bash scripts/fuzz-smoke.sh

# Google Benchmark figures (Release): estimate latency and search throughput.
bench: build-release
	./build/release/tests/bench/gpuplan_bench

# Regenerates the error-band table and docs/accuracy.md from the validation cases
# (tests check both are current). The bands first: the report prints nothing that
# depends on them, but the library compiled into the report includes them.
accuracy: build-dev
	./build/dev/bin/gpuplan-accuracy --bands > include/gpuplan/detail/error_bands_data.hpp
	cmake --build --preset dev --target gpuplan_accuracy
	./build/dev/bin/gpuplan-accuracy > docs/accuracy.md

# The calculator in the browser: the core and the readers compiled to WebAssembly with
# Debian's emscripten (src/web/), assembled with the page's sources into web/ (open
# web/index.html from disk: the module carries its .wasm).
web: deps-web
	emcmake cmake -S src/web -B build/web >/dev/null
	cmake --build build/web -j2

# The page in headless chromium (puppeteer-core, installed by npm into tests/web/node_modules
# from its lock file), each answer compared with the CLI's: GPUPLAN_CLI, else the release CLI.
test-web: web tests/web/node_modules/.package-lock.json
	@if [ -z "$$GPUPLAN_CLI" ]; then cmake --preset release >/dev/null && \
	  cmake --build --preset release --target gpuplan_cli; fi
	node tests/web/test_web.mjs

tests/web/node_modules/.package-lock.json: tests/web/package.json tests/web/package-lock.json
	cd tests/web && npm ci --no-audit --no-fund

clean:
	rm -rf build web
