// profile.hpp — a calibration profile: the free constants of the memory and time
// models fitted to the user's own measured run (calibrate.hpp), and the spread of
// that fit, which becomes the error band of runs like the measured one. A run
// carries at most one (run::calibrate_with); every estimator reads its constants
// from it, and the documented defaults when it has none. Files: io/profile.hpp.
#pragma once

#include <optional>
#include <string>

#include "gpuplan/detail/band_types.hpp"
#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/detail/timing_params.hpp"

namespace gpuplan {

// The memory model's free constants (docs/memory-model.md § Calibration).
struct memory_params {
  double states_scale = 1.0;      // multiplies weights, master weights, gradients and optimizer state
  double activation_scale = 1.0;  // multiplies saved activations and step transients
  double reserved_factor = memory_defaults::reserved_factor;  // torch reserved / allocated
  double cuda_context = memory_defaults::cuda_context;        // bytes: nvidia-smi minus the allocator's pool
  friend bool operator==(const memory_params&, const memory_params&) = default;
};

struct profile {
  std::string name;
  memory_params memory{};
  efficiency_params time{};
  // P10/P50/P90 of measured / estimated over the calibration points after the fit
  // (time: of throughput), widened for the number of points; empty without points.
  std::optional<detail::band_factors> memory_band, time_band;
  int memory_points = 0, time_points = 0;
  // What was measured ("mixed" when the points differ): the bands apply to runs of the
  // same model on the same GPU with the same framework (bands.hpp).
  std::string model, gpu, framework;
  friend bool operator==(const profile&, const profile&) = default;
};

}  // namespace gpuplan
