// detail/band_types.hpp — the value types of the error-band table
// (detail/error_bands_data.hpp holds the generated rows; bands.hpp uses them).
#pragma once

#include <cstdint>
#include <string_view>

namespace gpuplan::detail {

enum class band_metric : std::uint8_t { memory_train, memory_infer, time_train, time_infer };

// Quantiles of measured / estimated (for time: of throughput, so > 1 is faster than estimated).
struct band_factors {
  double q10 = 1, q50 = 1, q90 = 1;
  friend bool operator==(const band_factors&, const band_factors&) = default;
};

// One regime: metric × method class (peft 1: LoRA/QLoRA/freeze, 0: full, -1: any)
// × scale (multi_gpu 1: several GPUs, 0: one, -1: any), with its case count.
struct band_row {
  band_metric metric = band_metric::memory_train;
  int peft = -1;
  int multi_gpu = -1;
  int cases = 0;
  band_factors f{};
};

// A combination the validation files measured: framework × method class × GPU class
// (bands.hpp gpu_class) × scale. A run outside every one gets a wider band.
struct validated_combo {
  std::string_view framework;
  int peft = 0;
  std::string_view gpu_class;
  int multi_gpu = 0;
};

}  // namespace gpuplan::detail
