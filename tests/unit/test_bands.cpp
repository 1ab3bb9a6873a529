// bands.hpp — error bands from the validation residuals and the three-state verdict.
#include <doctest/doctest.h>

#include <array>
#include <cmath>

#include "gpuplan/bands.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/plan/margin.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_bands {

using namespace gpuplan;

TEST_CASE("bands: verdict is fits / tight / does_not_fit by P90 and P50 against capacity") {
  const band b{90, 100, 120};
  CHECK(verdict_of(b, 120) == verdict::fits);    // P90 within capacity
  CHECK(verdict_of(b, 119) == verdict::tight);   // P50 within, P90 not
  CHECK(verdict_of(b, 100) == verdict::tight);
  CHECK(verdict_of(b, 99.9) == verdict::does_not_fit);
  CHECK(to_string(verdict::does_not_fit) == "does_not_fit");
}

TEST_CASE("bands: the most specific regime with enough cases, else its parent, else the widest") {
  using detail::band_metric;
  const std::array<detail::band_row, 4> rows{{
      {band_metric::memory_train, -1, -1, 40, {0.8, 1.0, 1.3}},
      {band_metric::memory_train, 1, -1, 20, {0.9, 1.0, 1.1}},
      {band_metric::memory_train, 1, 1, 3, {0.99, 1.0, 1.01}},  // too few cases: never chosen
      {band_metric::time_train, -1, -1, 40, {0.5, 1.0, 2.0}},
  }};
  const band_source peft_multi = detail::select_band(rows, band_metric::memory_train, 1, 1, true);
  CHECK(peft_multi.peft == 1);
  CHECK(peft_multi.multi_gpu == -1);
  CHECK(peft_multi.cases == 20);
  const band_source full = detail::select_band(rows, band_metric::memory_train, 0, 0, true);
  CHECK(full.cases == 40);
  // Outside the validated regime: the widest memory band (0.8–1.3), never a time row.
  const band_source outside = detail::select_band(rows, band_metric::memory_train, 1, 0, false);
  CHECK_FALSE(outside.validated);
  CHECK(outside.factors.q10 == 0.8);
  CHECK(outside.factors.q90 == 1.3);
}

TEST_CASE("bands: a run's memory band scales its estimate; time bands invert for step time") {
  const architecture& m = io::find_model("llama-2-7b");
  const run r(m, scenario{.meth = method::qlora, .seq_len = 1024, .ckpt = checkpointing::full, .gpu = io::find_gpu("t4")});
  const memory_breakdown mem = estimate_memory(r);
  const memory_bands mb = bands_of(r, mem);
  CHECK(mb.source.validated);  // llama, bf16-mixed, 1 GPU were all measured
  CHECK(mb.source.cases >= detail::kMinBandCases);
  CHECK(mb.device.p10 == doctest::Approx(in_bytes(mem.device) * mb.source.factors.q10));
  CHECK(mb.device.p10 <= mb.device.p50);
  CHECK(mb.device.p50 <= mb.device.p90);
  const time_estimate t = estimate_time(r);
  const time_bands tb = bands_of(r, t);
  // Throughput P10 (slow end) corresponds to step-time P90.
  CHECK(tb.step_seconds.p90 * tb.tokens_per_second_per_gpu.p10 == doctest::Approx(in_seconds(t.step) * t.tokens_per_second_per_gpu));
  // A family never measured takes the widest band.
  const run phi(io::find_model("phi-2"), scenario{.gpu = io::find_gpu("a100-80gb")});
  CHECK_FALSE(bands_of(phi, estimate_memory(phi)).source.validated);
  // The banded estimate holds the same figures as the separate calls.
  const banded_estimate e = estimate_with_bands(r);
  CHECK(in_bytes(e.memory.device) == in_bytes(mem.device));
  CHECK(e.memory_bands.device == mb.device);
  CHECK(e.time_bands.step_seconds == tb.step_seconds);
}

TEST_CASE("bands: the planning margin's quantile factor and verdict (plan/margin.hpp)") {
  const detail::band_factors f{0.8, 1.0, 1.2};
  CHECK(detail::quantile_factor(f, 0.5) == 1.0);
  CHECK(detail::quantile_factor(f, 0.9) == 1.2);
  // P99 extrapolates the P50→P90 spread with z(0.99)/z(0.9) = 2.3263/1.2816 = 1.8152: 1 + 0.2 × 1.8152.
  CHECK(detail::quantile_factor(f, 0.99) == doctest::Approx(1.36304).epsilon(1e-5));
  // A hand-made breakdown on a 100 GiB card with a (1.0, 1.2) band: the margin keeps
  // max(5% × 100 GiB, 1 GiB) = 5 GiB free.
  memory_breakdown m;
  m.capacity = gib(100);
  memory_bands b;
  b.source.factors = f;
  m.device = gib(79);  // P90 94.8 + 5 = 99.8 <= 100: fits
  CHECK(verdict_of(m, b) == verdict::fits);
  m.device = gib(80);  // P90 96 + 5 > 100, P50 80 <= 100: tight
  CHECK(verdict_of(m, b) == verdict::tight);
  CHECK(verdict_of(m, b, {.confidence = 0.5}) == verdict::fits);  // 80 + 5 <= 100
  m.device = gib(96);  // P50 + 5 GiB > 100 but P50 <= 100: tight even at 0.5
  CHECK(verdict_of(m, b, {.confidence = 0.5}) == verdict::tight);
  m.device = gib(101);
  CHECK(verdict_of(m, b) == verdict::does_not_fit);
  // Paged optimizer state is not resident-required: 60 GiB reserved + overhead, 30 GiB paged.
  m.paged = gib(30);
  m.peak_reserved = gib(60);
  m.overhead = gib(1) + bytes(memory_defaults::cublas_workspace);
  m.device = gib(91);
  CHECK(detail::resident_device(m) == doctest::Approx(in_bytes(gib(61))));
  CHECK(verdict_of(m, b) == verdict::fits);  // 61 × 1.2 + 5 = 78.2 <= 100
}

TEST_CASE("bands: GPU classes are GeForce, and data-centre cards by generation") {
  CHECK(detail::gpu_class(io::find_gpu("rtx-4090")) == "consumer");
  CHECK(detail::gpu_class(io::find_gpu("rtx-3090")) == "consumer");
  CHECK(detail::gpu_class(io::find_gpu("v100-sxm2-16gb")) == "datacenter-pre-ampere");
  CHECK(detail::gpu_class(io::find_gpu("t4")) == "datacenter-pre-ampere");
  CHECK(detail::gpu_class(io::find_gpu("a100-80gb")) == "datacenter-ampere");
  CHECK(detail::gpu_class(io::find_gpu("l40s")) == "datacenter-ampere");
  CHECK(detail::gpu_class(io::find_gpu("h100-sxm")) == "datacenter-hopper");
}

TEST_CASE("bands: a combination no validation row measured gets a wider band and says so") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s{.meth = method::lora, .seq_len = 1024, .ckpt = checkpointing::full, .gpu = io::find_gpu("rtx-4090")};
  s.fw = framework::torchtune;  // torchtune LoRA on a GeForce card, one GPU: measured (T3, T4)
  const band_source seen = detail::band_source_for(run(m, s), detail::band_metric::memory_train);
  CHECK(seen.covered);
  s.fw = framework::unsloth;  // the same run under Unsloth: no row
  const band_source unseen = detail::band_source_for(run(m, s), detail::band_metric::memory_train);
  CHECK_FALSE(unseen.covered);
  // Same regime (PEFT, one GPU), P50 kept, P10 and P90 moved out by kUncoveredSpread in log space.
  CHECK(unseen.cases == seen.cases);
  CHECK(unseen.factors.q50 == doctest::Approx(seen.factors.q50));
  CHECK(std::log(unseen.factors.q90 / unseen.factors.q50) ==
        doctest::Approx(detail::kUncoveredSpread * std::log(seen.factors.q90 / seen.factors.q50)));
  CHECK(std::log(unseen.factors.q50 / unseen.factors.q10) ==
        doctest::Approx(detail::kUncoveredSpread * std::log(seen.factors.q50 / seen.factors.q10)));
  CHECK(detail::kUncoveredSpread > 1.0);
}

}  // namespace unit_bands
