// graph/calibrate_profile.hpp — both fits (graph/calibrate_time.hpp,
// graph/calibrate_memory.hpp) into a named profile (profile.hpp) with the bands of the fit,
// and the checks that the points and the fit are consistent (calibrate_profile).
// docs/calibration.md.
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
#include "gpuplan/graph/calibrate_memory.hpp"
#include "gpuplan/graph/calibrate_time.hpp"

namespace gpuplan {

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
