// io/serve_report.hpp — the formatter of serve.hpp's result: `gpuplan serve` (table and
// --json) and Python's gp.serve print through these functions, so both read the same.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/plan/serve_recommend.hpp"
#include "gpuplan/serve.hpp"

namespace gpuplan::io {

// Inter-token latency targets: 0.01 ms (below one decode step of any model on any GPU) to
// 1 h (a token an hour serves nobody); config_error naming `path` quoting `typed` otherwise.
inline double checked_latency(double seconds, const std::string& path, const std::string& typed) {
  if (!(seconds >= 1e-5 && seconds <= 3600))
    gpuplan::detail::fail(path, "must be between 0.01ms and 3600s (got " + typed + ")");
  return seconds;
}

// An inter-token latency target: "50ms", "0.05s", "0.05" -> seconds; config_error naming `path` otherwise.
inline double parse_latency(const std::string& text, const std::string& path = "--latency-target") {
  if (text.size() > 2 && text.compare(text.size() - 2, 2, "ms") == 0) {
    const auto v = parse_finite(text.substr(0, text.size() - 2));
    if (!v || !(*v > 0)) gpuplan::detail::fail(path, "must be a positive duration such as 50ms or 0.05s (got '" + text + "')");
    return checked_latency(*v / 1000.0, path, "'" + text + "'");
  }
  return checked_latency(parse_duration(text, path), path, "'" + text + "'");
}

// A serving workload's request rate: at least one request a week (1.65e-6/s; below it the
// cost per million tokens is a division by almost nothing); the planner caps it at 1e7/s.
inline double checked_request_rate(double per_second, const std::string& path) {
  if (per_second > 0 && per_second < 1.0 / (7 * 86400.0))  // non-positive and NaN: the planner's own message
    gpuplan::detail::fail(path, "must be at least one request a week, 1.65e-6 per second (got " + gpuplan::detail::num(per_second) + ")");
  return per_second;
}

// The point at `concurrency` requests in flight (`gpuplan serve --concurrency`, gp.serve's
// concurrency), or config_error naming `path`: at least 1, at most the requests the KV pool
// holds at once (s.max_concurrency; 1 when none fit) — past it requests queue, which
// serve_at does not model (1e12 printed a TTFT of 1.3e11 ms and more than the curve's peak).
inline serve_point serve_at_checked(const run& r, const serve_result& s, std::int64_t concurrency, const std::string& path) {
  if (concurrency < 1) gpuplan::detail::fail(path, "must be at least 1 (got " + std::to_string(concurrency) + ")");
  const std::int64_t most = std::max<std::int64_t>(1, s.max_concurrency);
  if (concurrency > most)
    gpuplan::detail::fail(path, "must be at most " + std::to_string(most) + ", the requests the KV cache pool holds at once (got " +
                                    std::to_string(concurrency) + ")");
  return serve_at(r, concurrency);
}

inline nlohmann::json serve_point_json(const serve_point& p) {
  return nlohmann::json{{"concurrency", p.concurrency},
                        {"time_to_first_token_s", in_seconds(p.time_to_first_token)},
                        {"inter_token_latency_s", in_seconds(p.inter_token_latency)},
                        {"tokens_per_second_per_request", p.tokens_per_second_per_request},
                        {"tokens_per_second", p.tokens_per_second}};
}

// `gpuplan serve --json`: the scenario, the engine's pool, the limits, the curve, the point
// at --concurrency ("at") and the concurrency meeting --latency-target.
inline nlohmann::json serve_json(const resolved_run& r, const serve_result& s, const std::optional<serve_point>& at) {
  nlohmann::json j;
  j["scenario"] = write_scenario(r);
  j["engine"] = to_string(s.eng);
  j["kernel"] = std::string(s.kernel);
  j["paged"] = s.paged;
  j["memory_fraction"] = s.memory_fraction;
  j["step_tokens"] = s.step_tokens;
  j["pool_bytes"] = in_bytes(s.pool);
  j["block_tokens"] = s.block_tokens;
  j["pool_blocks"] = s.pool_blocks;
  j["pool_tokens"] = s.pool_tokens;
  j["pool_concurrency"] = s.pool_concurrency;
  j["max_concurrency"] = s.max_concurrency;
  j["largest_context"] = s.largest_context;
  j["fits"] = s.memory.fits;
  j["device_bytes"] = in_bytes(s.memory.device);
  j["curve"] = nlohmann::json::array();
  for (const auto& p : s.curve) j["curve"].push_back(serve_point_json(p));
  if (at) j["at"] = serve_point_json(*at);
  if (s.itl_target) {
    j["latency_target_s"] = in_seconds(*s.itl_target);
    j["concurrency_for_target"] = s.concurrency_for_target.value_or(0);
  }
  return j;
}

namespace serve_detail {
inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
inline std::string ms(Seconds s) { return fmt("%.4g ms", in_seconds(s) * 1000.0); }
inline std::string num4(double v) { return fmt("%.4g", v); }
}  // namespace serve_detail

// The lines above the curve: engine, requests, device memory, pool, limits.
inline std::string serve_summary(const resolved_run& r, const serve_result& s) {
  using serve_detail::num4;
  const scenario& sc = r.settings();
  std::string t = printable(r.model().name) + " on " + std::to_string(sc.num_gpus) + " × " + printable(sc.gpu.name) + ", engine " +
                  std::string(to_string(s.eng)) + " (" + std::string(profile_of(s.eng).summary) + ")" +
                  (decode_uses_cuda_graphs(sc) || !profile_of(s.eng).has_cuda_graphs()
                       ? ""
                       : "; decode without CUDA graphs") +
                  "\n";
  t += "requests: " + std::to_string(sc.inference.prompt_len) + " prompt + " + std::to_string(sc.inference.gen_len) +
       " output tokens\n";
  t += "device: " + format_bytes_short(s.memory.device) + " of " + format_bytes_short(s.memory.capacity) + ", weights " +
       format_bytes_short(s.memory.weights) + " (kernel: " + std::string(s.kernel) + ")" +
       (s.memory.fits ? "" : "  — does NOT fit") + "\n";
  if (s.paged)
    t += "KV pool: " + format_bytes_short(s.pool) + " = " + std::to_string(s.pool_blocks) + " blocks × " +
         std::to_string(s.block_tokens) + " = " + std::to_string(s.pool_tokens) + " tokens (memory fraction " +
         num4(s.memory_fraction) + ", step " + std::to_string(s.step_tokens) + " tokens); " + num4(s.pool_concurrency) +
         "× requests\n";
  else
    t += "KV cache: " + format_bytes_short(s.memory.kv_cache) + " for the typed batch (no pool)\n";
  t += "max concurrency: " + std::to_string(s.max_concurrency) + " requests; largest single context: " +
       std::to_string(s.largest_context) + " tokens\n";
  return t;
}

// The throughput–latency curve as a table (the point at --concurrency last, marked);
// the ITL target's answer as its note.
inline table serve_table(const serve_result& s, const std::optional<serve_point>& at) {
  using serve_detail::ms;
  using serve_detail::num4;
  table t;
  t.title = "throughput–latency curve";
  t.header = {"concurrency", "TTFT", "ITL", "tok/s/request", "tok/s total"};
  t.right_align = {true, true, true, true, true};
  auto row = [&](const serve_point& p, const std::string& mark) {
    t.rows.push_back({std::to_string(p.concurrency) + mark, ms(p.time_to_first_token), ms(p.inter_token_latency),
                      num4(p.tokens_per_second_per_request), num4(p.tokens_per_second)});
  };
  for (const auto& p : s.curve) row(p, "");
  if (at) {
    row(*at, " *");
    t.notes.push_back("* at --concurrency " + std::to_string(at->concurrency));
  }
  if (s.itl_target)
    t.notes.push_back("ITL ≤ " + ms(*s.itl_target) + ": up to " + std::to_string(s.concurrency_for_target.value_or(0)) +
                      " concurrent requests");
  return t;
}

// `gpuplan recommend --serve --json` and gp.recommend_serving's data: the workload and one
// row per GPU x TP (meeting rows first, cheapest first).
inline nlohmann::json serve_recommend_json(const std::string& model, engine eng, const serve_recommendation& r) {
  const serve_workload& w = r.workload;
  nlohmann::json j;
  j["model"] = model;
  j["engine"] = to_string(eng);
  j["workload"] = {{"requests_per_second", w.requests_per_second}, {"prompt_len", w.prompt_len},
                   {"output_len", w.output_len}, {"itl_target_s", in_seconds(w.itl_target)}};
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json rows = nlohmann::json::array();
  for (const serve_option& o : r.rows) {
    nlohmann::json x{{"gpu", o.gpu_id}, {"tp", o.tp}, {"meets", o.meets}, {"reason", o.reason},
                     {"max_concurrency", o.max_concurrency}, {"concurrency", o.concurrency},
                     {"time_to_first_token_s", in_seconds(o.time_to_first_token)},
                     {"inter_token_latency_s", in_seconds(o.inter_token_latency)},
                     {"tokens_per_second", o.tokens_per_second}, {"requests_per_second", o.requests_per_second},
                     {"replicas", o.replicas}, {"gpus", o.gpus}};
    x["price_per_gpu_hour"] = opt(o.price_per_gpu_hour);
    x["cost_per_hour"] = opt(o.cost_per_hour);
    x["cost_per_million_tokens"] = opt(o.cost_per_million_tokens);
    rows.push_back(std::move(x));
  }
  j["rows"] = std::move(rows);
  return j;
}

inline std::string serve_recommend_summary(const std::string& model, engine eng, const serve_recommendation& r) {
  const serve_workload& w = r.workload;
  return printable(model) + " served by " + std::string(to_string(eng)) + ": " + format_number(w.requests_per_second, 4) +
         " requests/s of " + std::to_string(w.prompt_len) + " prompt + " + std::to_string(w.output_len) +
         " output tokens, ITL <= " + format_seconds(w.itl_target) + "\n";
}

// The rows meeting the target (at most `top_k`), with what the others lack in a note.
inline table serve_recommend_table(const serve_recommendation& r, std::size_t top_k) {
  auto money = [](const std::optional<double>& v) { return v ? "$" + format_number(*v, 3) : std::string("-"); };
  table t;
  t.header = {"GPU", "TP", "Concurrency", "ITL", "TTFT", "Tokens/s", "Req/s", "Replicas", "GPUs", "Cost/h", "Cost/M tokens"};
  std::size_t missing = 0;
  for (const serve_option& o : r.rows) {
    if (!o.meets) {
      ++missing;
      continue;
    }
    if (t.rows.size() >= top_k) continue;
    t.rows.push_back({o.gpu_id, std::to_string(o.tp), std::to_string(o.concurrency), format_seconds(o.inter_token_latency),
                      format_seconds(o.time_to_first_token), format_number(o.tokens_per_second, 4),
                      format_number(o.requests_per_second, 4), std::to_string(o.replicas), std::to_string(o.gpus),
                      money(o.cost_per_hour), money(o.cost_per_million_tokens)});
  }
  if (t.rows.empty()) t.notes.push_back("No GPU x TP combination fits and meets the target.");
  t.notes.push_back("Per replica: the most requests in flight whose inter-token latency meets the target; Req/s = "
                    "concurrency / (TTFT + output x ITL); cost per million output tokens at the workload's rate.");
  if (missing > 0)
    t.notes.push_back(std::to_string(missing) + " GPU x TP combinations do not fit or miss the target (--json says why).");
  return t;
}

}  // namespace gpuplan::io
