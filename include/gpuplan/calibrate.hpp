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
#include <vector>

#include <Eigen/Dense>

#include "gpuplan/error.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/profile.hpp"
#include "gpuplan/timing.hpp"

namespace gpuplan {

// One measured run: at most one of step time or tokens/s per GPU, and any of the
// three memory figures (torch.cuda.max_memory_allocated, max_memory_reserved,
// nvidia-smi "used"); calibrate() needs the time, calibrate_profile() at least one figure.
struct measurement {
  architecture model;
  scenario run;
  std::optional<Seconds> step;
  std::optional<double> tokens_per_second_per_gpu;
  std::optional<Bytes> peak_allocated, peak_reserved, device;
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
inline double measured_step(const measurement& m, std::size_t i) {
  const std::string path = "measurements[" + std::to_string(i) + "]";
  if (m.step.has_value() == m.tokens_per_second_per_gpu.has_value())
    fail(path, "give exactly one of step or tokens_per_second_per_gpu");
  if (m.step) {
    if (!(in_seconds(*m.step) > 0)) fail(path + ".step", "must be positive (got " + num(in_seconds(*m.step)) + ")");
    return in_seconds(*m.step);
  }
  const double tps = *m.tokens_per_second_per_gpu;
  if (!(tps > 0)) fail(path + ".tokens_per_second_per_gpu", "must be positive (got " + num(tps) + ")");
  const double s = static_cast<double>(m.model.is_vit() ? m.model.vit_tokens() : m.run.seq_len);
  const double tokens_per_gpu = static_cast<double>(m.run.global_batch()) * s / m.run.num_gpus;
  return tokens_per_gpu / tps;
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
  const double lo = std::log(0.05), hi = std::log(1.5);
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
  const std::string path = "measurements[" + std::to_string(i) + "]";
  const run r(m.model, m.run);  // no profile: the documented defaults
  const memory_breakdown e = estimate_memory(r);
  memory_point p;
  p.working = in_bytes(e.activations) + in_bytes(e.transient);
  p.states = in_bytes(e.peak_allocated) - p.working;
  p.context_extra = m.run.num_gpus > 1 ? memory_defaults::nccl_buffers : 0.0;
  p.paged_resident = std::max(0.0, in_bytes(e.device) - in_bytes(e.peak_reserved) - memory_defaults::cuda_context - p.context_extra);
  if (m.peak_allocated) p.allocated = positive_bytes(m.peak_allocated, path + ".peak_allocated");
  if (m.peak_reserved) p.reserved = positive_bytes(m.peak_reserved, path + ".peak_reserved");
  if (m.device) p.device = positive_bytes(m.device, path + ".device");
  return p;
}

// The estimate of whichever figure was measured (the most complete one: device,
// then reserved, then allocated), and the measured value.
inline std::pair<double, double> compared_figure(const memory_point& p, const memory_params& mp) {
  const double alloc = mp.states_scale * p.states + mp.activation_scale * p.working;
  const double reserved = alloc * mp.reserved_factor + memory_defaults::cublas_workspace;
  if (p.device) return {reserved + mp.cuda_context + p.context_extra + p.paged_resident, *p.device};
  if (p.reserved) return {reserved, *p.reserved};
  return {alloc, *p.allocated};
}

}  // namespace detail

// Closed forms and one 2x2 ridge solve, in order:
//   1 reserved_factor: least squares of (reserved - cuBLAS workspace) on allocated, through 0;
//   2 cuda_context: mean of device - reserved - NCCL - resident paged state;
//   3 states_scale, activation_scale: least squares of relative error of the allocated
//     peak (measured, or derived from reserved / device with 1 and 2), with a prior
//     toward 1 that is strong for the states (exact formulas of the framework's
//     tensors) and weak for working memory (the least certain term).
// Constants no measurement informs keep their value in `start`.
inline memory_calibration calibrate_memory(std::span<const measurement> data, const memory_params& start_at = {}) {
  // The documented defaults start from the framework's reserved/allocated ratio when every
  // measurement shares one framework, as an uncalibrated run does (run::memory_constants).
  memory_params start = start_at;
  if (start_at == memory_params{} && !data.empty() &&
      std::all_of(data.begin(), data.end(), [&](const measurement& m) { return m.run.fw == data[0].run.fw; }))
    start.reserved_factor = profile_of(data[0].run.fw).reserved_factor;
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
  if (den > 0) mp.reserved_factor = std::clamp(num / den, 1.0, 2.0);
  double ctx = 0;
  int n_ctx = 0;
  for (const auto& p : pts)
    if (p.device && p.reserved) { ctx += *p.device - *p.reserved - p.context_extra - p.paged_resident; ++n_ctx; }
  if (n_ctx > 0) mp.cuda_context = std::clamp(ctx / n_ctx, 0.0, 8.0 * kGiB);
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
  mp.states_scale = std::clamp(x(0), 0.5, 2.0);
  mp.activation_scale = std::clamp(x(1), 0.1, 10.0);
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

}  // namespace detail

// Both fits over whatever each measurement gives, as a named profile. The bands
// apply to runs on the GPU and framework every measurement shares ("mixed": none).
inline profile calibrate_profile(std::span<const measurement> data, std::string name, const profile& start = {}) {
  if (data.empty()) detail::fail("measurements", "need at least one measurement");
  if (name.empty()) detail::fail("name", "must not be empty");
  std::vector<measurement> timed;
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (!data[i].has_time() && !data[i].has_memory())
      detail::fail("measurements[" + std::to_string(i) + "]",
                   "gives nothing measured (step, tokens_per_second_per_gpu, peak_allocated, peak_reserved or device)");
    if (data[i].has_time()) {
      (void)detail::measured_step(data[i], i);  // names measurements[i] on a bad figure
      timed.push_back(data[i]);
    }
  }
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
    p.memory = mc.params;
    p.memory_points = static_cast<int>(mc.ratios.size());
    p.memory_band = detail::band_of_ratios(mc.ratios, detail::kMemoryFloorSigma);
  }
  if (!timed.empty()) {
    const calibration_result tc = calibrate(timed, start.time);
    p.time = tc.params;
    p.time_points = static_cast<int>(timed.size());
    std::vector<double> ratios;  // throughput measured / estimated = estimated step / measured step
    for (double r : tc.residuals) ratios.push_back(1.0 + r);
    p.time_band = detail::band_of_ratios(ratios, detail::kTimeNoiseSigma);
  }
  return p;
}

}  // namespace gpuplan
