// cases.hpp — runs the published validation cases (tests/data/validation/*.jsonl)
// through the same JSON output the CLI prints, and measures the error in sample
// and out of sample.
//
// Out of sample, two ways:
//  - held out: cases-2.jsonl to cases-5.jsonl were not used to set any default or constant;
//  - leave one source out (LOSO): for each source, the time model's three fitted
//    efficiency constants (calibrate.hpp: matmul_scale, bandwidth_fraction,
//    comm_fraction) are refit by robust (Huber) least squares on every other source's training
//    time rows, and that source's rows are estimated with them. The memory model
//    has no constant fitted to measurements (its constants come from framework
//    documentation and code, docs/memory-model.md), so its LOSO error is its error.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/bands.hpp"
#include "gpuplan/calibrate.hpp"
#include "gpuplan/diffusion.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"

namespace gpuplan::accuracy {

struct case_result {
  std::string id, src, source, file, metric, note;
  bool is_verdict = false;     // memory.fits
  bool unexpressible = false;  // the schema cannot express the run yet (a CNN, a PEFT method, ...)
  double expected = 0, estimate = 0;
  double error = 0;            // (estimate - expected) / expected, with the shipped defaults
  double loso_error = NAN;     // the same with constants chosen without this row's source
  bool verdict_ok = true;
  std::string failure;         // non-empty when the estimator threw (or the row is unexpressible)
  std::optional<io::resolved_run> run;
  nlohmann::json scenario;     // the row's scenario as written (kept for rows the schema cannot express)
};

// The source a row belongs to: a repository and its top folder or document, or a
// paper, without the commit ("pytorch/torchtune README @30b8519e" -> "pytorch/torchtune README").
inline std::string source_key(const std::string& src) {
  std::string s = src.substr(0, std::min(src.find(" @"), src.find(" (")));
  if (const auto t = s.find(" Table"); t != std::string::npos) s = s.substr(0, t);
  const auto sp = s.find(' ');
  if (sp == std::string::npos || s.substr(0, sp).find('/') == std::string::npos) return s;
  const std::string rest = s.substr(sp + 1);
  return s.substr(0, sp) + " " + rest.substr(0, std::min(rest.find('/'), rest.find(' ')));
}

// A metric is a JSON path into the estimate ("memory.device_bytes") or a sum of
// keys under one section ("memory.weights_bytes+gradients_bytes+optimizer_bytes").
inline double metric_value(const nlohmann::json& out, const std::string& metric) {
  const auto dot = metric.find('.');
  const std::string section = metric.substr(0, dot);
  std::stringstream keys(metric.substr(dot + 1));
  std::string key;
  double sum = 0;
  while (std::getline(keys, key, '+')) {
    const auto& v = out.at(section).at(key);
    sum += v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
  }
  return sum;
}

// cases-2.jsonl to cases-5.jsonl: collected after the defaults and constants were set.
inline bool held_out(const case_result& r) { return r.file != "cases.jsonl"; }
inline bool is_memory(const case_result& r) { return r.metric.rfind("memory.", 0) == 0 && !r.is_verdict && !r.unexpressible; }
inline bool is_time(const case_result& r) { return r.metric.rfind("time.", 0) == 0 && !r.unexpressible; }
inline bool is_verdict(const case_result& r) { return r.is_verdict && !r.unexpressible; }
// A serving row (workload infer) estimated with `e`'s engine profile (engine.hpp).
inline bool is_serving(const case_result& r, engine e) {
  return !r.unexpressible && r.run && r.run->settings().work == workload::infer && r.run->settings().inference.eng == e;
}

inline void read_cases(const std::string& file, const std::string& label, std::vector<case_result>& results) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto row = nlohmann::json::parse(line);
    case_result r;
    r.id = row.at("id").get<std::string>();
    r.src = row.at("src").get<std::string>();
    r.source = source_key(r.src);
    r.file = label;
    r.metric = row.at("metric").get<std::string>();
    r.note = row.value("note", "");
    r.is_verdict = r.metric == "memory.fits";
    r.expected = row.at("expected").is_boolean() ? (row["expected"].get<bool>() ? 1.0 : 0.0) : row["expected"].get<double>();
    r.scenario = row.value("scenario", nlohmann::json::object());
    if (row.contains("unexpressible")) {
      r.unexpressible = true;
      r.failure = "not expressible yet: " + row["unexpressible"].get<std::string>();
      r.error = NAN;
      results.push_back(std::move(r));
      continue;
    }
    try {
      r.run = io::read_scenario(row.at("scenario"));
      r.estimate = metric_value(io::estimate_json(*r.run), r.metric);
      if (r.is_verdict) r.verdict_ok = r.estimate == r.expected;
      else r.error = (r.estimate - r.expected) / r.expected;
    } catch (const std::exception& e) {
      r.failure = e.what();
      r.verdict_ok = false;
      r.error = NAN;
    }
    results.push_back(std::move(r));
  }
}

// A training time row as a calibration measurement (serving rows measure decode
// speed, which calibrate() does not model).
inline std::optional<measurement> as_measurement(const case_result& r) {
  if (!is_time(r) || !r.run || !r.failure.empty() || r.run->settings().work != workload::train) return std::nullopt;
  measurement m;
  m.model = r.run->model();
  m.run = r.run->settings();
  if (r.metric == "time.step_seconds") m.step = seconds(r.expected);
  else if (r.metric == "time.tokens_per_second_per_gpu") m.tokens_per_second_per_gpu = r.expected;
  else return std::nullopt;
  return m;
}

// A duration (step, time to first token) rather than a rate (tokens/s).
inline bool is_duration(const case_result& r) {
  return r.metric == "time.step_seconds" || r.metric == "time.time_to_first_token_seconds";
}

inline double time_metric(const case_result& r, const efficiency_params& p) {
  const time_estimate t = estimate_time(r.run->run, p);
  if (r.metric == "time.step_seconds") return in_seconds(t.step);
  if (r.metric == "time.time_to_first_token_seconds") return in_seconds(t.time_to_first_token);
  return t.tokens_per_second_per_gpu;
}

// Fills loso_error for every estimated row (see the file comment).
inline void leave_one_source_out(std::vector<case_result>& rs) {
  std::map<std::string, efficiency_params> fitted;
  for (auto& r : rs) {
    if (!r.failure.empty() || r.unexpressible) continue;
    if (!is_time(r)) {
      r.loso_error = r.error;  // no fitted memory constant
      continue;
    }
    auto it = fitted.find(r.source);
    if (it == fitted.end()) {
      std::vector<measurement> others;
      for (const auto& o : rs)
        if (o.source != r.source)
          if (auto m = as_measurement(o)) others.push_back(std::move(*m));
      it = fitted.emplace(r.source, calibrate(others).params).first;
    }
    r.loso_error = (time_metric(r, it->second) - r.expected) / r.expected;
  }
}

// All validation files, estimated and cross-validated.
inline std::vector<case_result> run_all(const std::string& dir) {
  std::vector<case_result> rs;
  read_cases(dir + "/cases.jsonl", "cases.jsonl", rs);
  read_cases(dir + "/cases-2.jsonl", "cases-2.jsonl", rs);
  read_cases(dir + "/cases-3.jsonl", "cases-3.jsonl", rs);
  read_cases(dir + "/cases-4.jsonl", "cases-4.jsonl", rs);
  read_cases(dir + "/cases-5.jsonl", "cases-5.jsonl", rs);
  leave_one_source_out(rs);
  return rs;
}

// The q-quantile (nearest rank on the sorted values) of |error| over the rows a
// predicate selects; a failed row counts as an infinite error.
template <class Pred>
double quantile_abs_error(const std::vector<case_result>& rs, Pred pred, double q, bool loso = false) {
  std::vector<double> e;
  for (const auto& r : rs)
    if (pred(r)) {
      const double v = loso ? r.loso_error : r.error;
      e.push_back(r.failure.empty() && !std::isnan(v) ? std::fabs(v) : INFINITY);
    }
  if (e.empty()) return NAN;
  std::sort(e.begin(), e.end());
  const std::size_t n = e.size();
  if (q == 0.5) return n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
  const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
  return e[std::min(n, std::max<std::size_t>(k, 1)) - 1];
}
template <class Pred>
double median_abs_error(const std::vector<case_result>& rs, Pred pred, bool loso = false) {
  return quantile_abs_error(rs, pred, 0.5, loso);
}

// ---- error bands (bands.hpp) --------------------------------------------------

// measured / estimated with the leave-one-source-out constants; for time in
// throughput terms (a step-time row's ratio is estimated / measured step).
inline double band_ratio(const case_result& r) {
  const double e = r.loso_error;
  return is_duration(r) ? 1.0 + e : 1.0 / (1.0 + e);
}
inline bool in_bands(const case_result& r) {
  return r.failure.empty() && !r.unexpressible && !r.is_verdict && !std::isnan(r.loso_error) && r.run.has_value();
}
inline detail::band_metric band_metric_of(const case_result& r) {
  const bool train = r.run->settings().work == workload::train;
  if (is_memory(r)) return train ? detail::band_metric::memory_train : detail::band_metric::memory_infer;
  return train ? detail::band_metric::time_train : detail::band_metric::time_infer;
}
inline int peft_of(const case_result& r) { return r.run->settings().meth == method::full ? 0 : 1; }
inline int multi_of(const case_result& r) { return r.run->settings().num_gpus > 1 ? 1 : 0; }

// Linear-interpolation quantile (type 7) of sorted values.
inline double quantile_sorted(const std::vector<double>& v, double q) {
  const double h = (static_cast<double>(v.size()) - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// Rows of a Stable Diffusion pipeline (scenario.model names the Hub repository, then a note:
// "runwayml/stable-diffusion-v1-5 (UNet2DConditionModel)"): the scenario schema cannot express
// them; diffusion::estimate_pipeline does, at the row's GPU, batch and resolution.
inline bool is_diffusion(const case_result& r) {
  if (!r.scenario.is_object() || !r.scenario.contains("model") || !r.scenario["model"].is_string()) return false;
  return r.scenario["model"].get<std::string>().find("stable-diffusion") != std::string::npos;
}
inline diffusion::pipeline_estimate diffusion_estimate(const case_result& r) {
  const auto& sc = r.scenario;
  diffusion::inference_options o;
  o.batch = sc.value("batch", std::int64_t{1});
  o.resolution = sc.value("resolution", std::int64_t{512});
  o.steps = sc.value("steps", std::int64_t{50});
  const std::string prec = sc.value("precision", std::string{"fp16"});
  o.prec = prec == "bf16" ? precision::bf16_pure : prec == "fp32" ? precision::fp32 : precision::fp16_mixed;
  const std::string model = sc["model"].get<std::string>();
  return diffusion::estimate_pipeline(diffusion::pipeline_by_name(model.substr(0, model.find(' '))),
                                      io::find_gpu(sc.value("gpu", std::string{})), o);
}
// The rows a time is estimated for — one denoising step or one pipeline call — but not
// torch.compile (its CUDA graphs are not modelled).
inline bool is_diffusion_time(const case_result& r) {
  return is_diffusion(r) && (r.metric == "time.step_seconds" || r.metric == "time.pipeline_seconds") &&
         !r.scenario.value("compile", false);
}
// The estimate in the row's metric.
inline double diffusion_time(const case_result& r, const diffusion::pipeline_estimate& e) {
  return in_seconds(r.metric == "time.pipeline_seconds" ? e.total : e.unet_step);
}

// How widely P10 and P90 are moved away from P50 in log space, per kind of metric: case-level
// quantiles understate how much a source, framework or GPU class not yet measured differs
// from the others, so each spread is chosen by held-out coverage (band_spreads below).
struct spreads {
  double memory = 1.0, time = 1.0;
};
inline double spread_of(const spreads& k, detail::band_metric m) {
  return m == detail::band_metric::memory_train || m == detail::band_metric::memory_infer ? k.memory : k.time;
}

// Band rows (every metric × method class × scale, -1 = any) over the cases `keep` selects,
// widened by `k`.
template <class Keep>
std::vector<detail::band_row> band_rows(const std::vector<case_result>& rs, Keep keep, const spreads& k = {}) {
  std::vector<detail::band_row> rows;
  for (int m = 0; m < 4; ++m)
    for (int peft = -1; peft <= 1; ++peft)
      for (int multi = -1; multi <= 1; ++multi) {
        std::vector<double> v;
        for (const auto& r : rs)
          if (in_bands(r) && keep(r) && static_cast<int>(band_metric_of(r)) == m && (peft == -1 || peft_of(r) == peft) &&
              (multi == -1 || multi_of(r) == multi))
            v.push_back(band_ratio(r));
        if (v.empty()) continue;
        std::sort(v.begin(), v.end());
        const detail::band_factors f{quantile_sorted(v, 0.1), quantile_sorted(v, 0.5), quantile_sorted(v, 0.9)};
        rows.push_back({static_cast<detail::band_metric>(m), peft, multi, static_cast<int>(v.size()),
                        detail::widened(f, spread_of(k, static_cast<detail::band_metric>(m)))});
      }
  return rows;
}

// The groups a case is held out by: its source, its framework, its GPU class (bands.hpp).
enum class grouping : std::uint8_t { source, framework, gpu_class };
inline constexpr std::array<grouping, 3> kGroupings{grouping::source, grouping::framework, grouping::gpu_class};
inline std::string_view grouping_name(grouping g) {
  return g == grouping::source ? "source" : g == grouping::framework ? "framework" : "GPU class";
}
inline std::string group_of(const case_result& r, grouping g) {
  if (g == grouping::source) return r.source;
  if (g == grouping::framework) return std::string(to_string(r.run->settings().fw));
  return std::string(detail::gpu_class(r.run->settings().gpu));
}

// The combination a case measured, in the order of band_types.hpp validated_combo:
// framework, method class (1 PEFT), GPU class, scale (1 several GPUs).
using combo = std::tuple<std::string_view, int, std::string_view, int>;
inline combo combo_of(const case_result& r) {
  const scenario& s = r.run->settings();
  return {to_string(s.fw), peft_of(r), detail::gpu_class(s.gpu), multi_of(r)};
}
// No case of another source measured this case's combination: to a new user, its run is uncovered.
inline bool uncovered_without_own_source(const std::vector<case_result>& rs, const case_result& r) {
  const combo c = combo_of(r);
  return std::none_of(rs.begin(), rs.end(), [&](const case_result& o) {
    return in_bands(o) && o.source != r.source && combo_of(o) == c;
  });
}

// Coverage of the bands, each case's band built without its group (the cases of its
// source, framework or GPU class); `extra` widens the bands of uncovered cases further.
struct band_coverage {
  int cases = 0, inside_p10_p90 = 0, memory_cases = 0, memory_below_p90 = 0, memory_inside = 0;
  int time_cases = 0, time_inside = 0;
};
inline band_coverage coverage(const std::vector<case_result>& rs, const spreads& k, grouping g = grouping::source,
                              double extra = 1.0, bool only_uncovered = false) {
  band_coverage c;
  std::map<std::string, std::vector<detail::band_row>> by_group;
  for (const auto& r : rs) {
    if (!in_bands(r)) continue;
    const bool uncovered = uncovered_without_own_source(rs, r);
    if (only_uncovered && !uncovered) continue;
    const std::string key = group_of(r, g);
    auto it = by_group.find(key);
    if (it == by_group.end())
      it = by_group.emplace(key, band_rows(rs, [&](const case_result& o) { return group_of(o, g) != key; }, k)).first;
    band_source b = detail::select_band(it->second, band_metric_of(r), peft_of(r), multi_of(r), true);
    if (b.cases == 0) continue;  // no other group measured this metric
    if (uncovered) b.factors = detail::widened(b.factors, extra);
    const double q = band_ratio(r);
    const bool inside = q >= b.factors.q10 && q <= b.factors.q90;
    ++c.cases;
    c.inside_p10_p90 += inside ? 1 : 0;
    if (is_memory(r)) {
      ++c.memory_cases;
      c.memory_below_p90 += q <= b.factors.q90 ? 1 : 0;
      c.memory_inside += inside ? 1 : 0;
    } else {
      ++c.time_cases;
      c.time_inside += inside ? 1 : 0;
    }
  }
  return c;
}

// Targets: P10–P90 holds 80% of held-out cases (nominal); the memory P90 is at or above the
// measurement for 90% of them (a plan on P90 must not OOM).
inline constexpr double kTargetCoverage = 0.80;
inline constexpr double kTargetMemoryBelowP90 = 0.90;
inline bool memory_ok(const band_coverage& c) {
  return c.memory_cases == 0 || (c.memory_below_p90 >= kTargetMemoryBelowP90 * c.memory_cases &&
                                 c.memory_inside >= kTargetCoverage * c.memory_cases);
}
inline bool time_ok(const band_coverage& c) {
  return c.time_cases == 0 || static_cast<double>(c.time_inside) >= kTargetCoverage * c.time_cases;
}

// The smallest widening (steps of 0.05 from 1) meeting a target under one grouping.
template <class Ok, class Make>
double smallest_spread(Make make, Ok ok) {
  double k = 1.0;
  for (; k < 4.0; k += 0.05)
    if (ok(make(k))) break;
  return k;
}

// The spreads: for memory and for time, the widest of the smallest spreads that meet the
// targets holding out each source, each framework and each GPU class in turn.
inline spreads band_spreads(const std::vector<case_result>& rs) {
  spreads out;
  for (const grouping g : kGroupings) {
    out.memory = std::max(out.memory, smallest_spread([&](double k) { return coverage(rs, {k, 1.0}, g); }, memory_ok));
    out.time = std::max(out.time, smallest_spread([&](double k) { return coverage(rs, {1.0, k}, g); }, time_ok));
  }
  return out;
}

// The further widening of an uncovered run's band: the smallest factor with which the cases
// whose combination no other source measured meet both targets, their source held out.
inline double uncovered_spread(const std::vector<case_result>& rs, const spreads& k) {
  return smallest_spread([&](double x) { return coverage(rs, k, grouping::source, x, true); },
                         [](const band_coverage& c) { return memory_ok(c) && time_ok(c); });
}

}  // namespace gpuplan::accuracy
