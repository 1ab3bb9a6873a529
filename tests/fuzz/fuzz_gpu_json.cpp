// fuzz_gpu_json — a user GPU description (--gpu-file / an inline "gpu" object)
// as raw bytes: nlohmann parse, then io::read_gpu. An accepted GPU has finite,
// non-negative capacities and rates, none below the smallest real part, and a GEMM rate for
// its default precision.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "gpuplan/detail/timing_model.hpp"
#include "gpuplan/io/catalog.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  gpuplan::gpu_spec g;
  try {
    g = gpuplan::io::read_gpu(j, "gpu");
  } catch (const gpuplan::config_error& e) {
    gpuplan::fuzz::check_error(e);
    return 0;
  }
  using namespace gpuplan;
  fuzz::finite_nonneg(in_bytes(g.memory), "gpu.memory");
  fuzz::finite_nonneg(in_bytes(g.usable_memory), "gpu.usable_memory");
  fuzz::finite_nonneg(in_byte_per_s(g.bandwidth), "gpu.bandwidth");
  fuzz::finite_nonneg(in_flop_per_s(g.fp32), "gpu.fp32");
  for (const auto& r : {g.tf32, g.bf16, g.fp16_acc16, g.fp8, g.int8})
    if (r) fuzz::finite_nonneg(in_flop_per_s(*r), "gpu rate");
  fuzz::finite_nonneg(in_byte_per_s(g.link_per_direction), "gpu.link_per_direction");
  if (g.sm_count < 0 || g.sm_count > 4096) fuzz::die("gpu.sm_count out of [0, 4096]", std::to_string(g.sm_count));
  // The lower bounds (catalog.cpp kMin*): nothing slower or smaller than a real part is accepted.
  if (in_bytes(g.memory) < 0.25 * 1073741824.0) fuzz::die("gpu.memory below 0.25 GiB", std::to_string(in_bytes(g.memory)));
  if (in_byte_per_s(g.bandwidth) < 1e9) fuzz::die("gpu.bandwidth below 1 GB/s", std::to_string(in_byte_per_s(g.bandwidth)));
  // An fp32 rate of 0 is one not given: the reader needs one of bf16, fp16 (acc16) and fp32
  // (catalog.cpp apply_figures); a given one is held to the same lower bound as the others.
  const bool fp32_given = in_flop_per_s(g.fp32) != 0;
  if (!fp32_given && !g.bf16 && !g.fp16_acc16) fuzz::die("gpu accepted without a bf16, fp16 or fp32 rate", g.id);
  const std::optional<FlopRate> fp32 = fp32_given ? std::optional<FlopRate>(g.fp32) : std::nullopt;
  for (const auto& r : {fp32, g.tf32, g.bf16, g.fp16_acc16, g.fp8, g.int8})
    if (r && in_flop_per_s(*r) < 1e10) fuzz::die("gpu rate below 0.01 TFLOP/s", std::to_string(in_flop_per_s(*r)));
  // fp32 is needed only where no tensor rate serves the precision (timing_model.hpp
  // fp32_fallback_of): whatever rates it gives, its default precision (bf16-mixed with a bf16
  // rate, else fp16-mixed; scenario.hpp precision_of) has one, so its default run estimates.
  const precision p = g.bf16 ? precision::bf16_mixed : precision::fp16_mixed;
  if (!fp32_given && detail::fp32_fallback_of(g, p)) fuzz::die("gpu accepted without a rate for its default precision", g.id);
  return 0;
}
