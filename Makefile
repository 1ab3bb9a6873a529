# The two set-up commands of the README. Both install missing Debian packages
# first (scripts/install-deps.sh, idempotent) and build with CMake presets.
PY := /usr/bin/python3
.PHONY: demo test deps build-release build-dev test-cpp test-asan test-python accuracy clean

demo: deps build-release
	./build/release/bin/gpuplan fit llama-2-13b --gpu rtx-4090 --method full,lora,qlora --seq 2048

test: deps test-cpp test-asan test-python

deps:
	@bash scripts/install-deps.sh

build-release:
	cmake --preset release >/dev/null
	cmake --build --preset release

build-dev:
	cmake --preset dev >/dev/null
	cmake --build --preset dev

test-cpp: build-dev
	ctest --preset dev

test-asan:
	cmake --preset asan >/dev/null
	cmake --build --preset asan
	ctest --preset asan

test-python: build-dev
	@if [ -d python ] && [ -d tests/python ]; then bash scripts/test-python.sh; fi

# Regenerates docs/accuracy.md from the validation cases (a test checks it is current).
accuracy: build-dev
	./build/dev/bin/gpuplan-accuracy > docs/accuracy.md

clean:
	rm -rf build
