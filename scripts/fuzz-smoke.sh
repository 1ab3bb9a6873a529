#!/usr/bin/env bash
# fuzz-smoke.sh — build gpuplan's libFuzzer targets with clang in build/fuzz and
# run each for a bounded time; exits non-zero on the first crash, leak, timeout
# or violated invariant (issue 8).
#
#   scripts/fuzz-smoke.sh                  # FUZZ_SECONDS=20 per target
#   FUZZ_RUNS=4000 FUZZ_SEED=1 scripts/fuzz-smoke.sh   # CI (make test): deterministic
#   FUZZ_SECONDS=3600 FUZZ_JOBS=2 scripts/fuzz-smoke.sh   # the documented long run
#   FUZZ_TARGETS="fuzz_hf_config_fields" scripts/fuzz-smoke.sh
#
# Environment: FUZZ_SECONDS (per target, default 20), FUZZ_TARGETS (default: all
# built), FUZZ_JOBS (parallel workers per target, default 1), FUZZ_BUILD_DIR
# (default build/fuzz), FUZZ_JOBS_BUILD (make -j, default 2).
# New corpus entries go to build/fuzz/corpus/<target> (the committed seeds under
# tests/fuzz/corpus stay read-only); crash reproducers go to build/fuzz/artifacts/.
# Reproduce one: build/fuzz/fuzz/<target> build/fuzz/artifacts/<target>/crash-<sha>
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
build="${FUZZ_BUILD_DIR:-build/fuzz}"
seconds="${FUZZ_SECONDS:-20}"
jobs="${FUZZ_JOBS:-1}"

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz-smoke: clang++ not found (Debian: apt-get install clang)" >&2
  exit 2
fi

# FUZZ_CONFIGURE=0: "$build" is configured already (make test uses the asan preset's
# build, which instruments everything and builds the fuzzers beside the tests).
if [ "${FUZZ_CONFIGURE:-1}" != 0 ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DGPUPLAN_BUILD_FUZZ=ON \
    -DGPUPLAN_BUILD_TESTS=OFF -DGPUPLAN_BUILD_CLI=OFF -DGPUPLAN_BUILD_PYTHON=OFF -DGPUPLAN_BUILD_EXAMPLES=OFF \
    -DGPUPLAN_BUILD_BENCH=OFF -DGPUPLAN_INSTALL=OFF >"$build.configure.log" 2>&1 \
    || { cat "$build.configure.log" >&2; exit 1; }
fi
cmake --build "$build" --target gpuplan_fuzzers -j "${FUZZ_JOBS_BUILD:-2}"

seeds_of() {
  case "$1" in
    fuzz_scenario|fuzz_scenario_fields) echo tests/fuzz/corpus/scenario ;;
    fuzz_hf_config|fuzz_hf_config_fields) echo tests/fuzz/corpus/hf_config ;;
    fuzz_safetensors) echo tests/fuzz/corpus/safetensors ;;
    fuzz_gpu_json) echo tests/fuzz/corpus/gpu ;;
    fuzz_prices) echo tests/fuzz/corpus/prices ;;
    fuzz_profile) echo tests/fuzz/corpus/profile ;;
    fuzz_diffusers_config) echo tests/fuzz/corpus/diffusers_config ;;
    fuzz_graph_json) echo tests/fuzz/corpus/graph ;;
    fuzz_rl) echo tests/fuzz/corpus/rl ;;
  esac
}

targets="${FUZZ_TARGETS:-$(cd "$build/fuzz" 2>/dev/null && ls fuzz_* 2>/dev/null | tr '\n' ' ')}"
if [ -z "$targets" ]; then
  echo "fuzz-smoke: no fuzz targets were built (the readers they drive are not in src/ yet)" >&2
  exit 1
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
for t in $targets; do
  corpus="$build/corpus/$t"
  artifacts="$build/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  seeds="$(seeds_of "$t")"
  # Structured fuzzers read their input as choices, not JSON: seeds only for the byte fuzzers.
  case "$t" in *_fields) seeds="" ;; esac
  log="$build/$t.log"
  if [ -n "${FUZZ_RUNS:-}" ]; then label="${FUZZ_RUNS} runs, seed ${FUZZ_SEED:-1}"; else label="${seconds}s"; fi
  echo "== $t: $label x ${jobs} job(s)"
  # FUZZ_RUNS (with FUZZ_SEED) makes the run deterministic: the same inputs on every
  # machine, which is what CI uses; FUZZ_SECONDS is for exploratory runs.
  if [ -n "${FUZZ_RUNS:-}" ]; then
    budget=(-runs="$FUZZ_RUNS" -seed="${FUZZ_SEED:-1}")
  else
    budget=(-max_total_time="$seconds")
  fi
  args=("${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1
        -artifact_prefix="$artifacts/" -dict=tests/fuzz/json.dict)
  [ "$jobs" -gt 1 ] && args+=(-fork="$jobs")
  if "$build/fuzz/$t" "${args[@]}" "$corpus" $seeds >"$log" 2>&1; then
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$log" | tr '\n' ' ' || true
    echo
  else
    status=1
    echo "!! $t FAILED — last lines of $log:" >&2
    tail -n 40 "$log" >&2
    ls "$artifacts" >&2 || true
  fi
done
exit "$status"
