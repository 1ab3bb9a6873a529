// serve.cpp — `gpuplan serve`: the KV pool, maximum concurrency, largest context and the
// throughput–latency curve of a serving engine (include/gpuplan/serve.hpp).
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/serve.hpp"

namespace gpuplan::cli {

// "50ms", "0.05s", "0.05" -> seconds; config_error naming --latency-target otherwise.
double parse_latency(const std::string& text) {
  if (text.size() > 2 && text.compare(text.size() - 2, 2, "ms") == 0) {
    const auto v = io::parse_finite(text.substr(0, text.size() - 2));
    if (!v || !(*v > 0)) gpuplan::detail::fail("--latency-target", "must be a positive duration such as 50ms or 0.05s (got '" + text + "')");
    return *v / 1000.0;
  }
  return io::parse_duration(text, "--latency-target");
}

namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string ms(Seconds s) { return fmt("%.4g ms", in_seconds(s) * 1000.0); }
std::string num4(double v) { return fmt("%.4g", v); }
}  // namespace

int run_serve(const io::resolved_run& r, const std::optional<std::string>& latency, std::optional<std::int64_t> concurrency,
              bool json_out) {
  std::optional<Seconds> target;
  if (latency) target = seconds(parse_latency(*latency));
  if (concurrency && *concurrency < 1)
    gpuplan::detail::fail("--concurrency", "must be at least 1 (got " + std::to_string(*concurrency) + ")");
  const serve_result s = serve(r.run, target);
  std::optional<serve_point> at;
  if (concurrency) at = serve_at(r.run, *concurrency);
  auto point_json = [](const serve_point& p) {
    return nlohmann::json{{"concurrency", p.concurrency},
                          {"time_to_first_token_s", in_seconds(p.time_to_first_token)},
                          {"inter_token_latency_s", in_seconds(p.inter_token_latency)},
                          {"tokens_per_second_per_request", p.tokens_per_second_per_request},
                          {"tokens_per_second", p.tokens_per_second}};
  };
  if (json_out) {
    nlohmann::json j;
    j["scenario"] = io::write_scenario(r);
    j["engine"] = to_string(s.eng);
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
    for (const auto& p : s.curve) j["curve"].push_back(point_json(p));
    if (at) j["at"] = point_json(*at);
    if (target) {
      j["latency_target_s"] = in_seconds(*target);
      j["concurrency_for_target"] = s.concurrency_for_target.value_or(0);
    }
    std::printf("%s\n", j.dump(2).c_str());
    return s.memory.fits ? 0 : 1;
  }
  const scenario& sc = r.settings();
  std::string t = r.model().name + " on " + std::to_string(sc.num_gpus) + " × " + sc.gpu.name + ", engine " +
                  std::string(to_string(s.eng)) + " (" + std::string(profile_of(s.eng).summary) + ")\n";
  t += "requests: " + std::to_string(sc.inference.prompt_len) + " prompt + " + std::to_string(sc.inference.gen_len) +
       " output tokens\n";
  t += "device: " + io::format_bytes_short(s.memory.device) + " of " + io::format_bytes_short(s.memory.capacity) + ", weights " +
       io::format_bytes_short(s.memory.weights) + (s.memory.fits ? "" : "  — does NOT fit") + "\n";
  if (s.paged)
    t += "KV pool: " + io::format_bytes_short(s.pool) + " = " + std::to_string(s.pool_blocks) + " blocks × " +
         std::to_string(s.block_tokens) + " = " + std::to_string(s.pool_tokens) + " tokens (memory fraction " +
         num4(s.memory_fraction) + ", step " + std::to_string(s.step_tokens) + " tokens); " + num4(s.pool_concurrency) +
         "× requests\n";
  else
    t += "KV cache: " + io::format_bytes_short(s.memory.kv_cache) + " for the typed batch (no pool)\n";
  t += "max concurrency: " + std::to_string(s.max_concurrency) + " requests; largest single context: " +
       std::to_string(s.largest_context) + " tokens\n\n";
  t += "concurrency      TTFT       ITL   tok/s/request   tok/s total\n";
  auto row = [&](const serve_point& p) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%11lld %9s %9s %15s %13s\n", static_cast<long long>(p.concurrency), ms(p.time_to_first_token).c_str(),
                  ms(p.inter_token_latency).c_str(), num4(p.tokens_per_second_per_request).c_str(), num4(p.tokens_per_second).c_str());
    t += buf;
  };
  for (const auto& p : s.curve) row(p);
  if (at) {
    t += "at --concurrency:\n";
    row(*at);
  }
  if (target)
    t += "\nITL ≤ " + ms(*target) + ": up to " + std::to_string(s.concurrency_for_target.value_or(0)) + " concurrent requests\n";
  std::fputs(t.c_str(), stdout);
  return s.memory.fits ? 0 : 1;
}

}  // namespace gpuplan::cli
