// Every published case in tests/data/validation/cases.jsonl, run through the
// JSON output (the same path as `gpuplan estimate --json`).
// Targets (issues 3 and 4): memory median |error| <= 10% with every fit/OOM
// verdict right; time median |error| <= 15%; one set of defaults for all.
#include <doctest/doctest.h>

#include <cmath>

#include "accuracy/cases.hpp"

using namespace gpuplan::accuracy;

namespace {
const std::vector<case_result>& results() {
  static const auto rs = run_cases(GPUPLAN_TEST_DATA_DIR "/validation/cases.jsonl");
  return rs;
}
// Per-case ceilings: a single case may miss by more than the median target
// (sources differ in what they measured), but not by more than these.
constexpr double kMemoryCaseCeiling = 0.30;
constexpr double kTimeCaseCeiling = 0.60;
// Rows whose source leaves the run under-specified get a wider ceiling, each
// with its reason (tests/data/validation/README.md, "Caveats per source"):
struct known_miss {
  const char* id;
  double ceiling;
  const char* why;
};
constexpr known_miss kKnownMisses[] = {
    {"P1l", 0.50, "PEFT README: precision and sequence lengths not stated; T0's decoder targets are a few tokens, "
                  "gpuplan runs the decoder over seq_len"},
    {"P2l", 0.50, "PEFT README: as P1l (mt0-xxl encoder-decoder)"},
    {"TT1t", 0.80, "torchtitan ran the H100 96GB variant capped at 500 W (catalog h100-sxm is the 700 W part)"},
};
double ceiling_for(const case_result& r, double normal) {
  for (const auto& k : kKnownMisses)
    if (r.id == k.id) return k.ceiling;
  return normal;
}
}  // namespace

TEST_CASE("validation: all 55 cases load and estimate") {
  REQUIRE(results().size() == 55);
  for (const auto& r : results()) {
    CAPTURE(r.id);
    CHECK(r.failure == "");
  }
}

TEST_CASE("validation: every fit/OOM verdict is right") {
  int verdicts = 0;
  for (const auto& r : results()) {
    if (!r.is_verdict) continue;
    CAPTURE(r.id);
    CHECK(r.verdict_ok);
    ++verdicts;
  }
  CHECK(verdicts == 2);  // P2f, P3f
}

TEST_CASE("validation: memory median |error| <= 10%, each case within 30% (known misses listed)") {
  for (const auto& r : results()) {
    if (!is_memory(r)) continue;
    CAPTURE(r.id);
    CAPTURE(r.expected);
    CAPTURE(r.estimate);
    CHECK(std::fabs(r.error) <= ceiling_for(r, kMemoryCaseCeiling));
  }
  CHECK(median_abs_error(results(), is_memory) <= 0.10);
}

TEST_CASE("validation: time median |error| <= 15%, each case within 60% (known misses listed)") {
  for (const auto& r : results()) {
    if (!is_time(r)) continue;
    CAPTURE(r.id);
    CAPTURE(r.expected);
    CAPTURE(r.estimate);
    CHECK(std::fabs(r.error) <= ceiling_for(r, kTimeCaseCeiling));
  }
  CHECK(median_abs_error(results(), is_time) <= 0.15);
}
