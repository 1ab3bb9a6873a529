// graph/calibrate_time.hpp — a user's measured runs (measurement) and the fit of the time
// model's free constants to them by least squares (Eigen): robust (Huber) Levenberg–Marquardt
// on log step times over matmul_scale, bandwidth_fraction, comm_fraction (efficiency_params);
// everything else keeps the value of `start`. The bounds of every fitted constant.
// Memory: graph/calibrate_memory.hpp; the profile: graph/calibrate_profile.hpp. docs/calibration.md.
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

}  // namespace gpuplan
