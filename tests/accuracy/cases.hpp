// cases.hpp — runs the published validation cases (tests/data/validation/cases.jsonl)
// through the same JSON output the CLI prints, and measures the error.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"

namespace gpuplan::accuracy {

struct case_result {
  std::string id, src, metric, note;
  bool is_verdict = false;  // memory.fits
  double expected = 0, estimate = 0;
  double error = 0;         // (estimate - expected) / expected
  bool verdict_ok = true;
  std::string failure;      // non-empty when the estimator threw
};

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

inline std::vector<case_result> run_cases(const std::string& file) {
  std::ifstream in(file);
  std::vector<case_result> results;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto row = nlohmann::json::parse(line);
    case_result r;
    r.id = row.at("id").get<std::string>();
    r.src = row.at("src").get<std::string>();
    r.metric = row.at("metric").get<std::string>();
    r.note = row.value("note", "");
    r.is_verdict = r.metric == "memory.fits";
    r.expected = row.at("expected").is_boolean() ? (row["expected"].get<bool>() ? 1.0 : 0.0) : row["expected"].get<double>();
    try {
      const auto out = io::estimate_json(io::read_scenario(row.at("scenario")));
      r.estimate = metric_value(out, r.metric);
      if (r.is_verdict) r.verdict_ok = r.estimate == r.expected;
      else r.error = (r.estimate - r.expected) / r.expected;
    } catch (const std::exception& e) {
      r.failure = e.what();
      r.verdict_ok = false;
      r.error = NAN;
    }
    results.push_back(r);
  }
  return results;
}

inline bool is_memory(const case_result& r) { return r.metric.rfind("memory.", 0) == 0 && !r.is_verdict; }
inline bool is_time(const case_result& r) { return r.metric.rfind("time.", 0) == 0; }

// Median of |error| over the rows a predicate selects (NaN when a row failed).
template <class Pred>
double median_abs_error(const std::vector<case_result>& rs, Pred pred) {
  std::vector<double> e;
  for (const auto& r : rs)
    if (pred(r)) e.push_back(r.failure.empty() ? std::fabs(r.error) : INFINITY);
  if (e.empty()) return NAN;
  std::sort(e.begin(), e.end());
  const std::size_t n = e.size();
  return n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
}

}  // namespace gpuplan::accuracy
