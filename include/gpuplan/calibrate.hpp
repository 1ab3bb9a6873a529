// calibrate.hpp — fit the time model's efficiency parameters to a user's own
// measurements by least squares (Levenberg–Marquardt on log step times, Eigen).
// Fitted: matmul_scale, bandwidth_fraction, comm_fraction (efficiency_params);
// everything else keeps the value of `start`.
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
#include "gpuplan/timing.hpp"

namespace gpuplan {

// One measured run: give exactly one of step time or tokens/s per GPU.
struct measurement {
  architecture model;
  scenario run;
  std::optional<Seconds> step;
  std::optional<double> tokens_per_second_per_gpu;
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
}  // namespace detail

// Fits the three parameters in log space (so they stay positive), bounded to
// [0.05, 1.5] of their nominal meaning. With fewer measurements than parameters, or a
// parameter the data cannot see (e.g. no communication), the damping keeps that
// parameter at its start value.
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
  Eigen::VectorXd r(static_cast<Eigen::Index>(n)), rt(static_cast<Eigen::Index>(n));
  residuals(x, r);
  calibration_result out;
  out.residuals_before.resize(n);
  for (std::size_t i = 0; i < n; ++i) out.residuals_before[i] = std::exp(r(static_cast<Eigen::Index>(i))) - 1.0;
  double lambda = 1e-2;
  double cost = r.squaredNorm();
  Eigen::MatrixXd J(static_cast<Eigen::Index>(n), 3);
  int it = 0;
  for (; it < max_iterations; ++it) {
    // Forward-difference Jacobian (the model is piecewise smooth: max() of terms).
    for (int k = 0; k < 3; ++k) {
      Eigen::Vector3d xp = x;
      const double hstep = 1e-4;
      xp(k) += hstep;
      residuals(xp, rt);
      J.col(k) = (rt - r) / hstep;
    }
    const Eigen::Matrix3d JtJ = J.transpose() * J;
    const Eigen::Vector3d g = J.transpose() * r;
    // Prior pull toward the start (weight 1e-3) regularises unobservable parameters.
    const double prior = 1e-3;
    bool improved = false;
    for (int tries = 0; tries < 10 && !improved; ++tries) {
      Eigen::Matrix3d A = JtJ + prior * Eigen::Matrix3d::Identity();
      A.diagonal() += lambda * (JtJ.diagonal().array() + 1e-9).matrix();
      const Eigen::Vector3d b = -(g + prior * (x - x0));
      Eigen::Vector3d xn = x + A.ldlt().solve(b);
      xn = xn.cwiseMax(lo).cwiseMin(hi);
      residuals(xn, rt);
      const double cn = rt.squaredNorm();
      if (cn < cost) {
        const double gain = cost - cn;
        x = xn;
        r = rt;
        cost = cn;
        lambda = std::max(lambda / 3.0, 1e-9);
        improved = true;
        if (gain < 1e-12 * std::max(1.0, cost)) {
          out.converged = true;
        }
      } else {
        lambda *= 4.0;
      }
    }
    if (!improved || out.converged) {
      out.converged = true;
      break;
    }
  }
  out.iterations = it;
  out.params = detail::with(start, x);
  out.residuals.resize(n);
  for (std::size_t i = 0; i < n; ++i) out.residuals[i] = std::exp(r(static_cast<Eigen::Index>(i))) - 1.0;
  out.rms_log_error = std::sqrt(cost / static_cast<double>(n));
  return out;
}

}  // namespace gpuplan
