// calibrate.hpp — fit the models' free constants to a user's own measurements by
// least squares (Eigen). Time: robust (Huber) Levenberg–Marquardt on log step times over
// matmul_scale, bandwidth_fraction, comm_fraction (efficiency_params); everything
// else keeps the value of `start`. Memory: the allocator's reserved/allocated
// factor, the CUDA context, and the scales of model states and of working memory
// (memory_params). calibrate_profile() fits both into a profile (profile.hpp) with
// the bands of the fit.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <Eigen/Dense>

#include "gpuplan/error.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/profile.hpp"
#include "gpuplan/timing.hpp"

namespace gpuplan {

// How errors name one measurement and its figures: a file's keys
// (measurements[2].peak_reserved_gib), the CLI's flags (--measured-reserved). An empty
// name is measurements[i] and measurements[i].step, .tokens_per_second_per_gpu,
// .peak_allocated, .peak_reserved, .device.
struct measurement_names {
  std::string point, step, tokens_per_second, allocated, reserved, device;
};

// One measured run: at most one of step time or tokens/s per GPU, and any of the
// three memory figures (torch.cuda.max_memory_allocated, max_memory_reserved,
// nvidia-smi "used"); calibrate() needs the time, calibrate_profile() at least one figure.
struct measurement {
  architecture model;
  scenario run;
  std::optional<Seconds> step;
  std::optional<double> tokens_per_second_per_gpu;
  std::optional<Bytes> peak_allocated, peak_reserved, device;
  measurement_names names;
  [[nodiscard]] bool has_time() const { return step || tokens_per_second_per_gpu; }
  [[nodiscard]] bool has_memory() const { return peak_allocated || peak_reserved || device; }
};

struct calibration_result {
  efficiency_params params;
  std::vector<double> residuals;  // per measurement: estimate/measured - 1 (step time), after the fit
  std::vector<double> residuals_before;  // the same with `start`
  double rms_log_error = 0;       // sqrt(mean(log(estimate/measured)^2)) after the fit
  int iterations = 0;
  bool converged = false;
};

namespace detail {
// The names errors give measurement `i` (its own where set, measurements[i]... otherwise).
inline measurement_names names_of(const measurement& m, std::size_t i) {
  const std::string p = "measurements[" + std::to_string(i) + "]";
  measurement_names n = m.names;
  const auto or_default = [](std::string& name, std::string fallback) {
    if (name.empty()) name = std::move(fallback);
  };
  or_default(n.point, p);
  or_default(n.step, p + ".step");
  or_default(n.tokens_per_second, p + ".tokens_per_second_per_gpu");
  or_default(n.allocated, p + ".peak_allocated");
  or_default(n.reserved, p + ".peak_reserved");
  or_default(n.device, p + ".device");
  return n;
}
// Tokens one GPU processes per optimizer step (what tokens/s per GPU divides into a step time).
inline double tokens_per_step_per_gpu(const measurement& m) {
  const double s = static_cast<double>(m.model.is_vit() ? m.model.vit_tokens() : m.run.seq_len);
  return static_cast<double>(m.run.global_batch()) * s / m.run.num_gpus;
}
inline double measured_step(const measurement& m, std::size_t i) {
  const measurement_names n = names_of(m, i);
  if (m.step.has_value() == m.tokens_per_second_per_gpu.has_value())
    fail(n.point, "give exactly one of step or tokens_per_second_per_gpu");
  if (m.step) {
    if (!(in_seconds(*m.step) > 0)) fail(n.step, "must be positive (got " + num(in_seconds(*m.step)) + ")");
    return in_seconds(*m.step);
  }
  const double tps = *m.tokens_per_second_per_gpu;
  if (!(tps > 0)) fail(n.tokens_per_second, "must be positive (got " + num(tps) + ")");
  return tokens_per_step_per_gpu(m) / tps;
}
inline efficiency_params with(efficiency_params p, const Eigen::Vector3d& x) {
  p.matmul_scale = std::exp(x(0));
  p.bandwidth_fraction = std::exp(x(1));
  p.comm_fraction = std::exp(x(2));
  return p;
}
// Huber loss on log step-time residuals (Huber 1981, Robust Statistics §4): quadratic within
// k = 1.345 scale (its 95%-efficiency constant under normal errors), linear beyond. The scale
// is the spread one job's step time has anyway, ~5% (clock boost, data loading, thermal
// state), so residuals of that size are averaged as by least squares, and a run the model
// misses by far more (an overhead it does not know, a throttled card) pulls the constants
// like a least-absolute-deviations point: by its sign, not its size.
inline constexpr double kTimeNoiseSigma = 0.05;
inline constexpr double kHuberK = 1.345;
// Reweighting rounds (iteratively reweighted least squares); the weights settle in ~20.
inline constexpr int kReweightRounds = 30;

// Bounds of the fitted constants (the profile reader accepts the same ranges; a fit
// that reaches one is refused, calibrate_profile). The three efficiencies are fractions
// of datasheet peaks: below 5% or above 150% they no longer describe the hardware.
inline constexpr double kEfficiencyMin = 0.05, kEfficiencyMax = 1.5;
// reserved / allocated: the pool holds every live block (>= 1); over 2x is not a steady step.
inline constexpr double kReservedFactorMin = 1.0, kReservedFactorMax = 2.0;
// CUDA context and library handles: up to 8 GiB, six times the documented 1343 MiB.
inline constexpr double kCudaContextMax = 8.0 * kGiB;
// Model states are exact tensor formulas: 2x off is another precision or optimizer, not a scale.
inline constexpr double kStatesScaleMin = 0.5, kStatesScaleMax = 2.0;
// Working memory (activations, transients) is the least certain term: a decade either way.
inline constexpr double kActivationScaleMin = 0.1, kActivationScaleMax = 10.0;

inline Eigen::VectorXd huber_weights(const Eigen::VectorXd& r) {
  const double k = kHuberK * kTimeNoiseSigma;
  Eigen::VectorXd w(r.size());
  for (Eigen::Index i = 0; i < r.size(); ++i) w(i) = std::fabs(r(i)) <= k ? 1.0 : k / std::fabs(r(i));
  return w;
}
}  // namespace detail

// Fits the three parameters in log space (so they stay positive), bounded to
// [0.05, 1.5] of their nominal meaning, with Huber's robust loss (iteratively reweighted
// Levenberg–Marquardt): a few measurements far off the rest move the constants little.
// With fewer measurements than parameters, or a parameter the data cannot see (e.g. no
// communication), the damping keeps that parameter at its start value.
inline calibration_result calibrate(std::span<const measurement> data, const efficiency_params& start = {},
                                    int max_iterations = 50) {
  if (data.empty()) detail::fail("measurements", "need at least one measurement");
  const std::size_t n = data.size();
  std::vector<double> target(n);
  for (std::size_t i = 0; i < n; ++i) target[i] = std::log(detail::measured_step(data[i], i));
  auto residuals = [&](const Eigen::Vector3d& x, Eigen::VectorXd& r) {
    const efficiency_params p = detail::with(start, x);
    for (std::size_t i = 0; i < n; ++i)
      r(static_cast<Eigen::Index>(i)) = std::log(in_seconds(estimate_time(data[i].model, data[i].run, p).step)) - target[i];
  };
  const double lo = std::log(detail::kEfficiencyMin), hi = std::log(detail::kEfficiencyMax);
  Eigen::Vector3d x(std::log(start.matmul_scale), std::log(start.bandwidth_fraction), std::log(start.comm_fraction));
  const Eigen::Vector3d x0 = x;
  const auto N = static_cast<Eigen::Index>(n);
  Eigen::VectorXd r(N), rt(N);
  residuals(x, r);
  calibration_result out;
  out.residuals_before.resize(n);
  for (std::size_t i = 0; i < n; ++i) out.residuals_before[i] = std::exp(r(static_cast<Eigen::Index>(i))) - 1.0;
  Eigen::MatrixXd J(N, 3);
  // Prior pull toward the start (weight 1e-3) regularises unobservable parameters.
  const double prior = 1e-3;
  int it = 0;
  Eigen::VectorXd w_prev = Eigen::VectorXd::Ones(N);
  for (int round = 0; round < detail::kReweightRounds; ++round) {
    const Eigen::VectorXd w = detail::huber_weights(r);
    if (round > 0 && (w - w_prev).cwiseAbs().maxCoeff() < 1e-4) break;  // the weights have settled
    w_prev = w;
    auto cost_of = [&](const Eigen::VectorXd& res) { return (w.array() * res.array().square()).sum(); };
    double lambda = 1e-2;
    double cost = cost_of(r);
    bool converged = false;
    for (int step = 0; step < max_iterations; ++step, ++it) {
      // Forward-difference Jacobian (the model is piecewise smooth: max() of terms).
      for (int k = 0; k < 3; ++k) {
        Eigen::Vector3d xp = x;
        const double hstep = 1e-4;
        xp(k) += hstep;
        residuals(xp, rt);
        J.col(k) = (rt - r) / hstep;
      }
      const Eigen::Matrix3d JtJ = J.transpose() * w.asDiagonal() * J;
      const Eigen::Vector3d g = J.transpose() * w.asDiagonal() * r;
      bool improved = false;
      for (int tries = 0; tries < 10 && !improved; ++tries) {
        Eigen::Matrix3d A = JtJ + prior * Eigen::Matrix3d::Identity();
        A.diagonal() += lambda * (JtJ.diagonal().array() + 1e-9).matrix();
        const Eigen::Vector3d b = -(g + prior * (x - x0));
        Eigen::Vector3d xn = x + A.ldlt().solve(b);
        xn = xn.cwiseMax(lo).cwiseMin(hi);
        residuals(xn, rt);
        const double cn = cost_of(rt);
        if (cn < cost) {
          const double gain = cost - cn;
          x = xn;
          r = rt;
          cost = cn;
          lambda = std::max(lambda / 3.0, 1e-9);
          improved = true;
          if (gain < 1e-12 * std::max(1.0, cost)) converged = true;
        } else {
          lambda *= 4.0;
        }
      }
      if (!improved || converged) {
        converged = true;
        break;
      }
    }
    out.converged = converged;
  }
  out.iterations = it;
  out.params = detail::with(start, x);
  out.residuals.resize(n);
  for (std::size_t i = 0; i < n; ++i) out.residuals[i] = std::exp(r(static_cast<Eigen::Index>(i))) - 1.0;
  out.rms_log_error = std::sqrt(r.squaredNorm() / static_cast<double>(n));
  return out;
}

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

// ---- A profile ------------------------------------------------------------

namespace detail {

// One-sided 90% quantile of Student's t with n-1 degrees of freedom over z(0.9) =
// 1.2816, for n points (NIST/SEMATECH e-Handbook 1.3.6.7.2); n = 1: as for 2 points.
inline double small_sample_factor(std::size_t n) {
  static constexpr std::array<double, 11> t90{3.078, 3.078, 3.078, 1.886, 1.638, 1.533, 1.476, 1.440, 1.415, 1.397, 1.383};
  const double t = n < t90.size() ? t90[n] : 1.2816 + 1.0 / static_cast<double>(n);
  return t / 1.2816;
}

// P10/P50/P90 of measured / estimated from the fit's ratios: a log-normal with the
// ratios' median, their RMS log spread combined with a floor (what one run cannot
// show: run-to-run and version-to-version variation), widened for few points.
inline band_factors band_of_ratios(std::span<const double> ratios, double floor_sigma) {
  std::vector<double> logs;
  for (double q : ratios) logs.push_back(std::log(q));
  std::sort(logs.begin(), logs.end());
  const std::size_t n = logs.size();
  const double median = n % 2 ? logs[n / 2] : 0.5 * (logs[n / 2 - 1] + logs[n / 2]);
  double ss = 0;
  for (double l : logs) ss += (l - median) * (l - median);
  const double sigma = std::sqrt(ss / static_cast<double>(n) + floor_sigma * floor_sigma);
  const double half = 1.2816 * sigma * small_sample_factor(n);
  return {std::exp(median - half), std::exp(median), std::exp(median + half)};
}

// Floors of the spread: the same job's peak memory moves ~2% between runs and
// library versions (allocator block rounding, cuDNN/cuBLAS workspace choices);
// its step time ~5% (kTimeNoiseSigma).
inline constexpr double kMemoryFloorSigma = 0.02;

inline std::string common_or_mixed(std::span<const measurement> data, auto key) {
  const std::string first(key(data.front()));
  for (const measurement& m : data)
    if (std::string(key(m)) != first) return "mixed";
  return first;
}

// ---- Is the fit consistent? (docs/calibration.md § Checks) -----------------

// Two points of one run differ by run-to-run noise alone; five of its sigmas apart
// (memory kMemoryFloorSigma, time kTimeNoiseSigma; a 3e-7 one-sided chance) is a contradiction.
inline constexpr double kSameRunSigmas = 5.0;
// A memory figure the fit leaves beyond 1.5x its calibrated estimate: three times the
// widest memory band of the validation table (0.84-1.16, before any fitting).
inline constexpr double kMemoryResidualBound = 1.5;
// A step the fit leaves beyond 2x its calibrated estimate: outside the widest time band
// of the validation table (0.58-1.98, multi-GPU training), before any fitting.
inline constexpr double kTimeResidualBound = 2.0;
// The calibrated band contains the calibrated estimate (ratio 1) but for the rounding
// of figures typed to three significant digits.
inline constexpr double kBandSlack = 0.01;
// A constant the fit pins at its bound is a lie only where it leaves a point unexplained:
// beyond three sigmas of run-to-run noise (a 0.3% two-sided chance for normal errors).
// Within that, the data merely cannot tell the constants apart (published Qwen-7B runs
// pin matmul_scale at its bound with every step within 5%).
inline constexpr double kBoundSigmas = 3.0;

// One figure of a point as the checks compare it (bytes; time: the step in seconds),
// its name and the value as given.
struct named_value {
  double value = 0;
  const std::string* name = nullptr;
  std::string shown;
};
inline std::optional<named_value> measured_figure(const measurement& m, int k) {
  const std::optional<Bytes>& b = k == 0 ? m.peak_allocated : k == 1 ? m.peak_reserved : m.device;
  if (!b) return std::nullopt;
  return named_value{in_bytes(*b), k == 0 ? &m.names.allocated : k == 1 ? &m.names.reserved : &m.names.device,
                     show_bytes(in_bytes(*b))};
}
inline std::string show_seconds(double s) { return num(s) + " s"; }
inline std::optional<named_value> measured_time(const measurement& m, std::size_t i) {
  if (!m.has_time()) return std::nullopt;
  const double s = measured_step(m, i);
  if (m.step) return named_value{s, &m.names.step, show_seconds(s)};
  return named_value{s, &m.names.tokens_per_second, num(*m.tokens_per_second_per_gpu) + " tokens/s, a " + show_seconds(s) + " step"};
}
inline std::string show_ratio(double r) { return num(std::round(r * 1000) / 1000) + "x"; }

// Points of one run (model and scenario equal, indices `same`): each figure's largest and
// smallest within `bound` of each other, else an error naming both points.
inline void check_one_run(std::span<const measurement> data, std::span<const std::size_t> same) {
  const auto spread = [&](auto figure, double bound, const std::string& noise) {
    std::optional<named_value> lo, hi;
    std::size_t ilo = 0, ihi = 0;
    for (std::size_t i : same) {
      const std::optional<named_value> v = figure(data[i], i);
      if (!v) continue;
      if (!lo || v->value < lo->value) { lo = v; ilo = i; }
      if (!hi || v->value > hi->value) { hi = v; ihi = i; }
    }
    if (!lo || !(hi->value > bound * lo->value)) return;
    const named_value& a = ilo < ihi ? *lo : *hi;
    const named_value& b = ilo < ihi ? *hi : *lo;
    fail(*b.name, "contradicts " + *a.name + " of the same run (" + a.shown + "): " + show_ratio(hi->value / lo->value) +
                      " apart where one run varies " + noise + " (got " + b.shown + ")");
  };
  const double mem_bound = std::exp(kSameRunSigmas * kMemoryFloorSigma), time_bound = std::exp(kSameRunSigmas * kTimeNoiseSigma);
  for (int k = 0; k < 3; ++k)
    spread([k](const measurement& m, std::size_t) { return measured_figure(m, k); }, mem_bound, "~2% in memory");
  spread(measured_time, time_bound, "~5% in step time");
}

// Groups the points by run (a cheap key first, then full equality) and checks each group.
inline void check_same_runs(std::span<const measurement> data) {
  std::vector<std::size_t> order(data.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto key = [&](std::size_t i) {
    const measurement& m = data[i];
    return std::tie(m.model.name, m.run.gpu.id, m.run.seq_len, m.run.micro_batch, m.run.num_gpus);
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  std::vector<bool> done(data.size(), false);
  for (std::size_t a = 0; a < order.size(); ++a) {
    if (done[order[a]]) continue;
    std::vector<std::size_t> same{order[a]};
    for (std::size_t b = a + 1; b < order.size() && key(order[b]) == key(order[a]); ++b)
      if (!done[order[b]] && data[order[b]].model == data[order[a]].model && data[order[b]].run == data[order[a]].run) {
        same.push_back(order[b]);
        done[order[b]] = true;
      }
    if (same.size() > 1) check_one_run(data, same);
  }
}

// One figure against its calibrated estimate: log(measured / estimated).
struct residual {
  double log_ratio = 0, estimated = 0;
  const std::string* name = nullptr;
  std::string shown;  // the measured value as given
};
// The worst residual beyond `bound`, or beyond kBoundSigmas x `sigma` of a fit that pinned
// a constant at its bound (`at_bound` names it), is refused, naming the point furthest from it.
inline void check_residuals(std::span<const residual> rs, double bound, double sigma, const char* at_bound, auto show) {
  if (rs.empty()) return;
  const auto worst = std::max_element(rs.begin(), rs.end(), [](const residual& a, const residual& b) {
    return std::fabs(a.log_ratio) < std::fabs(b.log_ratio);
  });
  const double miss = std::fabs(worst->log_ratio);
  if (miss <= std::log(bound) && (at_bound == nullptr || miss <= kBoundSigmas * sigma)) return;
  // The other figure furthest from it: of the opposite sign, it pulled the fit the other way.
  const residual* other = nullptr;
  for (const residual& r : rs)
    if (&r != &*worst && (other == nullptr || std::fabs(r.log_ratio - worst->log_ratio) > std::fabs(other->log_ratio - worst->log_ratio)))
      other = &r;
  std::string why = at_bound != nullptr ? "the fit needs " + std::string(at_bound) + " beyond its bounds"
                                        : "more than " + show_ratio(bound) + " off after the fit";
  if (other != nullptr)
    why += (other->log_ratio * worst->log_ratio < 0 ? "; it contradicts " : "; together with ") + *other->name + " (" +
           show_ratio(std::exp(other->log_ratio)) + " its estimate)";
  else
    why += "; is the scenario the run that was measured?";
  fail(*worst->name, "is " + show_ratio(std::exp(worst->log_ratio)) + " its calibrated estimate " + show(worst->estimated) +
                         ": " + why + " (got " + worst->shown + ")");
}

// Every memory figure against the calibrated estimate of its run, and the fitted
// constants within their bounds (a clamped constant leaves the points unexplained).
inline void check_memory_fit(std::span<const measurement> data, const memory_params& mp) {
  std::vector<residual> rs;
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (!data[i].has_memory()) continue;
    const std::array<double, 3> est = estimated_figures(memory_point_of(data[i], i), mp);
    for (int k = 0; k < 3; ++k)
      if (const auto v = measured_figure(data[i], k)) rs.push_back({std::log(v->value / est[k]), est[k], v->name, v->shown});
  }
  const char* at_bound = mp.states_scale == kStatesScaleMin || mp.states_scale == kStatesScaleMax ? "states_scale (0.5 to 2)"
                         : mp.activation_scale == kActivationScaleMin || mp.activation_scale == kActivationScaleMax
                             ? "activation_scale (0.1 to 10)"
                         : mp.reserved_factor == kReservedFactorMax ? "reserved_factor (1 to 2)"
                         : mp.cuda_context == kCudaContextMax       ? "cuda_context (0 to 8 GiB)"
                                                                    : nullptr;
  check_residuals(rs, kMemoryResidualBound, kMemoryFloorSigma, at_bound, show_bytes);
}

// Every step against its calibrated estimate, and the efficiencies within their bounds.
inline void check_time_fit(std::span<const measurement> timed, const calibration_result& tc) {
  std::vector<residual> rs;
  for (std::size_t i = 0; i < timed.size(); ++i) {
    const named_value v = *measured_time(timed[i], i);
    const double est = v.value * (1.0 + tc.residuals[i]);
    rs.push_back({std::log(v.value / est), est, v.name, v.shown});
  }
  const auto bounded = [](double x) {
    return std::fabs(std::log(x / kEfficiencyMin)) < 1e-9 || std::fabs(std::log(x / kEfficiencyMax)) < 1e-9;
  };
  const efficiency_params& e = tc.params;
  const char* at_bound = bounded(e.matmul_scale)         ? "matmul_scale (0.05 to 1.5)"
                         : bounded(e.bandwidth_fraction) ? "bandwidth_fraction (0.05 to 1.5)"
                         : bounded(e.comm_fraction)      ? "comm_fraction (0.05 to 1.5)"
                                                         : nullptr;
  check_residuals(rs, kTimeResidualBound, kTimeNoiseSigma, at_bound, show_seconds);
}

// The band of a fit contains its own estimate: P10 <= 1 <= P90 (within kBandSlack).
inline void check_band(const band_factors& f, const char* metric, const std::string& name) {
  if (f.q10 <= 1.0 + kBandSlack && f.q90 >= 1.0 - kBandSlack) return;
  fail(name, std::string("leaves the calibrated ") + metric + " band [" + num(f.q10) + ", " + num(f.q50) + ", " + num(f.q90) +
                 "] without the calibrated estimate itself (ratio 1): the points disagree with every constant the fit may take");
}

}  // namespace detail

// Both fits over whatever each measurement gives, as a named profile. The bands
// apply to runs on the GPU and framework every measurement shares ("mixed": none).
//
// Refused with a one-line config_error naming the point (and the one it contradicts):
// a point that is not physical (check_measurement), two points of one run further apart
// than run-to-run noise, a figure the fit leaves beyond kMemoryResidualBound /
// kTimeResidualBound of its estimate or a constant the fit pins at its bound, and a
// band that excludes the calibrated estimate itself.
inline profile calibrate_profile(std::span<const measurement> given, std::string name, const profile& start = {}) {
  if (given.empty()) detail::fail("measurements", "need at least one measurement");
  if (name.empty()) detail::fail("name", "must not be empty");
  // Every point carries its names from here on: the timed subset keeps them.
  std::vector<measurement> data(given.begin(), given.end());
  std::vector<measurement> timed;
  for (std::size_t i = 0; i < data.size(); ++i) {
    data[i].names = detail::names_of(data[i], i);
    if (!data[i].has_time() && !data[i].has_memory())
      detail::fail(data[i].names.point,
                   "gives nothing measured (step, tokens_per_second_per_gpu, peak_allocated, peak_reserved or device)");
    if (data[i].has_time()) (void)detail::measured_step(data[i], i);  // names the point on a bad figure
    check_measurement(data[i], i);
    if (data[i].has_time()) timed.push_back(data[i]);
  }
  detail::check_same_runs(data);
  profile p = start;
  p.name = std::move(name);
  p.model = detail::common_or_mixed(data, [](const measurement& m) { return m.model.name; });
  p.gpu = detail::common_or_mixed(data, [](const measurement& m) { return m.run.gpu.id; });
  p.framework = detail::common_or_mixed(data, [](const measurement& m) { return to_string(m.run.fw); });
  p.memory_points = 0;
  p.time_points = 0;
  p.memory_band.reset();
  p.time_band.reset();
  if (std::any_of(data.begin(), data.end(), [](const measurement& m) { return m.has_memory(); })) {
    const memory_calibration mc = calibrate_memory(data, start.memory);
    detail::check_memory_fit(data, mc.params);
    p.memory = mc.params;
    p.memory_points = static_cast<int>(mc.ratios.size());
    p.memory_band = detail::band_of_ratios(mc.ratios, detail::kMemoryFloorSigma);
    detail::check_band(*p.memory_band, "memory", "measurements");
  }
  if (!timed.empty()) {
    const calibration_result tc = calibrate(timed, start.time);
    detail::check_time_fit(timed, tc);
    p.time = tc.params;
    p.time_points = static_cast<int>(timed.size());
    std::vector<double> ratios;  // throughput measured / estimated = estimated step / measured step
    for (double r : tc.residuals) ratios.push_back(1.0 + r);
    p.time_band = detail::band_of_ratios(ratios, detail::kTimeNoiseSigma);
    detail::check_band(*p.time_band, "time", "measurements");
  }
  return p;
}

}  // namespace gpuplan
