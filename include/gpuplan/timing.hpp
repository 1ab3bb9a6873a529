// timing.hpp — step time, throughput, time-to-train and cost.
// (Interface fixed here; implemented by the training-time issue.)
#pragma once

#include <optional>

#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/warnings.hpp"

namespace gpuplan {

struct time_breakdown {
  Seconds compute = seconds(0);
  Seconds communication = seconds(0);  // exposed (not overlapped) communication
  Seconds bubble = seconds(0);         // pipeline bubble
  Seconds optimizer = seconds(0);
  Seconds offload = seconds(0);
};

struct time_estimate {
  Seconds step = seconds(0);  // one optimizer step (all micro-batches)
  double tokens_per_second_per_gpu = 0;
  double tokens_per_second = 0;
  FlopCount model_flops_per_step = flops(0);     // excludes recompute
  FlopCount hardware_flops_per_step = flops(0);  // includes recompute
  double mfu = 0;
  double hfu = 0;
  Seconds total = seconds(0);  // time to train `tokens` (0 when tokens unset)
  double gpu_hours = 0;
  std::optional<double> cost;
  double energy_kwh = 0;
  time_breakdown breakdown{};
  // Serving (workload: infer).
  Seconds time_to_first_token = seconds(0);
  double decode_tokens_per_second_per_sequence = 0;
  double decode_tokens_per_second = 0;
  std::int64_t decode_compute_bound_batch = 0;
  warning_set warnings = 0;
};

inline time_estimate estimate_time(const architecture& model, const scenario& run);

// PLACEHOLDER until the training-time issue lands.
inline time_estimate estimate_time(const architecture&, const scenario&) { return {}; }

}  // namespace gpuplan
