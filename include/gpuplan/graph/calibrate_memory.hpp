// graph/calibrate_memory.hpp — the fit of the memory model's free constants to a user's
// measured runs (graph/calibrate_time.hpp's measurement): the allocator's reserved/allocated
// factor, the CUDA context, and the scales of model states and of working memory
// (memory_params); and the physical checks of one measurement (check_measurement).
// docs/calibration.md.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "gpuplan/error.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/profile.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/graph/calibrate_time.hpp"

namespace gpuplan {

// ---- Memory ---------------------------------------------------------------

struct memory_calibration {
  memory_params params;
  std::vector<double> ratios;         // per memory measurement: measured / estimated after the fit
  std::vector<double> ratios_before;  // the same with `start`
};

namespace detail {

// One memory measurement against the estimate of its run: the parts the fit moves.
struct memory_point {
  double states = 0;       // weights + master + gradients + optimizer (resident, without paged state)
  double working = 0;      // saved activations + transients at the peak
  double paged_resident = 0;
  double context_extra = 0;  // NCCL buffers (more than one GPU)
  std::optional<double> allocated, reserved, device;
};

inline double positive_bytes(const std::optional<Bytes>& b, const std::string& path) {
  const double v = in_bytes(*b);
  if (!(v > 0) || !std::isfinite(v)) fail(path, "must be a positive size (got " + num(v) + ")");
  return v;
}

inline memory_point memory_point_of(const measurement& m, std::size_t i) {
  const measurement_names n = names_of(m, i);
  const run r(m.model, m.run);  // no profile: the documented defaults
  const memory_breakdown e = estimate_memory(r);
  memory_point p;
  p.working = in_bytes(e.activations) + in_bytes(e.transient);
  p.states = in_bytes(e.peak_allocated) - p.working;
  p.context_extra = m.run.num_gpus > 1 ? memory_defaults::nccl_buffers : 0.0;
  p.paged_resident = std::max(0.0, in_bytes(e.device) - in_bytes(e.peak_reserved) - memory_defaults::cuda_context - p.context_extra);
  if (m.peak_allocated) p.allocated = positive_bytes(m.peak_allocated, n.allocated);
  if (m.peak_reserved) p.reserved = positive_bytes(m.peak_reserved, n.reserved);
  if (m.device) p.device = positive_bytes(m.device, n.device);
  return p;
}

// The estimates of the three figures of a point under `mp`: allocated, reserved, device.
inline std::array<double, 3> estimated_figures(const memory_point& p, const memory_params& mp) {
  const double alloc = mp.states_scale * p.states + mp.activation_scale * p.working;
  const double reserved = alloc * mp.reserved_factor + memory_defaults::cublas_workspace;
  return {alloc, reserved, reserved + mp.cuda_context + p.context_extra + p.paged_resident};
}

// The estimate of whichever figure was measured (the most complete one: device,
// then reserved, then allocated), and the measured value.
inline std::pair<double, double> compared_figure(const memory_point& p, const memory_params& mp) {
  const auto [alloc, reserved, device] = estimated_figures(p, mp);
  if (p.device) return {device, *p.device};
  if (p.reserved) return {reserved, *p.reserved};
  return {alloc, *p.allocated};
}

// ---- What one measured run can be -------------------------------------------
// Each check is a one-line config_error naming the figure (names_of) and its value;
// docs/calibration.md § Checks.

// A step shorter than 0.1 ms: even the smallest training step launches dozens of
// forward, backward and optimizer kernels at microseconds of launch cost each, so a
// smaller figure is a unit mistake (milliseconds typed as seconds), not a step.
inline constexpr double kMinStepSeconds = 1e-4;
// 10^7 s (116 days) for one optimizer step is no training run anyone measures.
inline constexpr double kMaxStepSeconds = 1e7;
// A memory figure holds the model's weights resident on the GPU: the estimate counts
// their tensors exactly (parameters x bytes per parameter on each GPU), so a figure
// below 90% of that is of another run or in another unit (10%: buffers and
// quantization layouts the count may place differently).
inline constexpr double kWeightsFloor = 0.9;
// The catalog holds the card's memory in GiB (hardware.hpp); a figure read in GB but
// typed as GiB is 2^30 / 10^9 = 1.074x too large, so up to 8% above the card is that
// confusion (a lie of 7%, which the fit's residuals bound), more is another card.
inline constexpr double kCapacityCeiling = 1.08;
// Peaks nest: allocated <= reserved (PyTorch's caching allocator pools every live
// block) <= device (nvidia-smi adds the CUDA context); figures typed to three
// significant digits round by up to 0.5%.
inline constexpr double kNestingSlack = 1.005;

// A size for a message: GiB from 1 GiB, MiB from 1 MiB, bytes below (3 decimals).
inline std::string show_bytes(double b) {
  const auto r3 = [](double v) { return num(std::round(v * 1000) / 1000); };
  if (std::fabs(b) >= kGiB) return r3(b / kGiB) + " GiB";
  if (std::fabs(b) >= kMiB) return r3(b / kMiB) + " MiB";
  return num(b) + " bytes";
}

// Step time (or the step tokens/s per GPU implies) within kMinStepSeconds..kMaxStepSeconds.
inline void check_measured_time(const measurement& m, const measurement_names& n) {
  if (m.step && m.tokens_per_second_per_gpu) fail(n.point, "give exactly one of step or tokens_per_second_per_gpu");
  const std::string range = "between 0.0001 and 10^7 seconds";
  if (m.step) {
    const double s = in_seconds(*m.step);
    if (!(s >= kMinStepSeconds && s <= kMaxStepSeconds)) fail(n.step, "must be " + range + " (got " + num(s) + " s)");
  }
  if (m.tokens_per_second_per_gpu) {
    const double tps = *m.tokens_per_second_per_gpu;
    if (!(tps > 0 && std::isfinite(tps))) fail(n.tokens_per_second, "must be positive and finite (got " + num(tps) + ")");
    const double tokens = tokens_per_step_per_gpu(m), s = tokens / tps;
    if (!(s >= kMinStepSeconds && s <= kMaxStepSeconds))
      fail(n.tokens_per_second, "implies a step of " + num(s) + " s (" + num(tokens) + " tokens per GPU per step), not " +
                                    range + " (got " + num(tps) + ")");
  }
}

// Memory figures: positive, nested, within the card and at least the weights.
inline void check_measured_memory(const measurement& m, const measurement_names& n) {
  struct figure {
    double bytes;
    const std::string* name;
  };
  std::vector<figure> figs;
  const auto take = [&](const std::optional<Bytes>& b, const std::string& name) {
    if (b) figs.push_back({positive_bytes(b, name), &name});
  };
  take(m.peak_allocated, n.allocated);
  take(m.peak_reserved, n.reserved);
  take(m.device, n.device);
  if (figs.empty()) return;
  const double cap = in_bytes(m.run.gpu.memory);
  for (const figure& f : figs)
    if (cap > 0 && f.bytes > kCapacityCeiling * cap)
      fail(*f.name, "exceeds the memory of one " + m.run.gpu.id + ", " + show_bytes(cap) + " (got " + show_bytes(f.bytes) + ")");
  // Consecutive figures in allocated, reserved, device order must not decrease.
  for (std::size_t k = 1; k < figs.size(); ++k)
    if (figs[k].bytes * kNestingSlack < figs[k - 1].bytes)
      fail(*figs[k].name, "must be at least " + *figs[k - 1].name + " (" + show_bytes(figs[k - 1].bytes) + "): " +
                              (figs[k].name == &n.device ? "nvidia-smi counts the allocator's pool and the CUDA context"
                                                         : "the allocator's pool holds every live tensor") +
                              " (got " + show_bytes(figs[k].bytes) + ")");
  const double weights = in_bytes(estimate_memory(run(m.model, m.run)).weights);
  for (const figure& f : figs)
    if (f.bytes < kWeightsFloor * weights)
      fail(*f.name, "is below the weights alone: " + m.model.name + " keeps " + show_bytes(weights) +
                        " of weights on each GPU of this run (got " + show_bytes(f.bytes) + ")");
}

}  // namespace detail

// The physical checks of one measurement (calibrate_profile runs them on every
// point; the measurements reader and the CLI as they read, so their errors name keys
// and flags): time in range, memory figures positive, nested, within the card and
// at least the weights. `i` names it where m.names does not.
inline void check_measurement(const measurement& m, std::size_t i) {
  const measurement_names n = detail::names_of(m, i);
  detail::check_measured_time(m, n);
  detail::check_measured_memory(m, n);
}

// Closed forms and one 2x2 ridge solve, in order:
//   1 reserved_factor: least squares of (reserved - cuBLAS workspace) on allocated, through 0;
//   2 cuda_context: mean of device - reserved - NCCL - resident paged state;
//   3 states_scale, activation_scale: least squares of relative error of the allocated
//     peak (measured, or derived from reserved / device with 1 and 2), with a prior
//     toward 1 that is strong for the states (exact formulas of the framework's
//     tensors) and weak for working memory (the least certain term).
// Constants no measurement informs keep their value in `start`.
inline memory_calibration calibrate_memory(std::span<const measurement> data, const memory_params& start_at = {}) {
  // The documented defaults start from the reserved/allocated ratio an uncalibrated run
  // takes (run::memory_constants: its framework's, or the stream pools' of a sharded run)
  // when every measurement takes the same one.
  memory_params start = start_at;
  const auto default_factor = [](const measurement& m) { return run(m.model, m.run).memory_constants().reserved_factor; };
  if (start_at == memory_params{} && !data.empty()) {
    const double f = default_factor(data[0]);
    if (std::all_of(data.begin(), data.end(), [&](const measurement& m) { return default_factor(m) == f; }))
      start.reserved_factor = f;
  }
  std::vector<detail::memory_point> pts;
  for (std::size_t i = 0; i < data.size(); ++i)
    if (data[i].has_memory()) pts.push_back(detail::memory_point_of(data[i], i));
  if (pts.empty()) detail::fail("measurements", "no memory figure (peak_allocated, peak_reserved or device) in any measurement");
  memory_calibration out;
  memory_params mp = start;
  for (const auto& p : pts) {
    const auto [est, meas] = detail::compared_figure(p, start);
    out.ratios_before.push_back(meas / est);
  }
  const double ws = memory_defaults::cublas_workspace;
  double num = 0, den = 0;
  for (const auto& p : pts)
    if (p.allocated && p.reserved) { num += *p.allocated * (*p.reserved - ws); den += *p.allocated * *p.allocated; }
  if (den > 0) mp.reserved_factor = std::clamp(num / den, detail::kReservedFactorMin, detail::kReservedFactorMax);
  double ctx = 0;
  int n_ctx = 0;
  for (const auto& p : pts)
    if (p.device && p.reserved) { ctx += *p.device - *p.reserved - p.context_extra - p.paged_resident; ++n_ctx; }
  if (n_ctx > 0) mp.cuda_context = std::clamp(ctx / n_ctx, 0.0, detail::kCudaContextMax);
  // Allocated peak of each point, measured or derived.
  Eigen::Matrix2d A = Eigen::Matrix2d::Zero();
  Eigen::Vector2d b = Eigen::Vector2d::Zero();
  for (const auto& p : pts) {
    double y = 0;
    if (p.allocated) y = *p.allocated;
    else if (p.reserved) y = (*p.reserved - ws) / mp.reserved_factor;
    else y = (*p.device - mp.cuda_context - p.context_extra - p.paged_resident - ws) / mp.reserved_factor;
    if (!(y > 0)) continue;
    const Eigen::Vector2d row(p.states / y, p.working / y);
    A += row * row.transpose();
    b += row;  // target: row . (s, w) = 1
  }
  // Prior weights (relative-error units): states 0.1, working memory 1e-3.
  const Eigen::Vector2d prior(0.1, 1e-3);
  A.diagonal() += prior;
  b += prior.cwiseProduct(Eigen::Vector2d(start.states_scale, start.activation_scale));
  const Eigen::Vector2d x = A.ldlt().solve(b);
  mp.states_scale = std::clamp(x(0), detail::kStatesScaleMin, detail::kStatesScaleMax);
  mp.activation_scale = std::clamp(x(1), detail::kActivationScaleMin, detail::kActivationScaleMax);
  out.params = mp;
  for (const auto& p : pts) {
    const auto [est, meas] = detail::compared_figure(p, mp);
    out.ratios.push_back(meas / est);
  }
  return out;
}

}  // namespace gpuplan
