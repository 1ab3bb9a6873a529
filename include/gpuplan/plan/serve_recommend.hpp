// plan/serve_recommend.hpp — which GPU and how many to serve a workload of R requests
// per second of P prompt + O output tokens under an inter-token latency target: for each
// GPU type x tensor-parallel size, the most concurrent requests one replica holds within
// the target (serve.hpp), the requests per second it then completes, the replicas R
// needs, and what they cost per hour and per million output tokens.
// docs/serving.md, "recommend --serve".
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/serve.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan {

struct serve_workload {
  double requests_per_second = 1;
  std::int64_t prompt_len = 512;
  std::int64_t output_len = 256;
  Seconds itl_target = seconds(0.05);
};

struct serve_option {
  std::string gpu_id, gpu_name;
  int tp = 1;                            // GPUs per replica (tensor parallel)
  bool meets = false;                    // fits and meets the latency target at concurrency >= 1
  std::string reason;                    // why not, when !meets
  std::int64_t concurrency = 0;          // requests in flight per replica at the target
  std::int64_t max_concurrency = 0;      // what the memory holds per replica
  Seconds time_to_first_token = seconds(0);
  Seconds inter_token_latency = seconds(0);
  double tokens_per_second = 0;          // output tokens/s of one replica at `concurrency`
  double requests_per_second = 0;        // completed requests/s of one replica (Little's law)
  std::int64_t replicas = 0;             // ceil(R / requests_per_second)
  int gpus = 0;                          // replicas x tp
  std::optional<double> price_per_gpu_hour{};
  std::optional<double> cost_per_hour{};
  std::optional<double> cost_per_million_tokens{};  // per million output tokens at the workload's rate
};

struct serve_recommendation {
  serve_workload workload{};
  std::vector<serve_option> rows;  // meeting rows by cost per hour (unpriced by GPUs), then the others
};

// Tensor-parallel sizes tried: 1, 2, 4, 8 up to `max_tp` (vLLM's TP splits attention
// heads: num_attention_heads % tp == 0, vllm/config.py verify_with_parallel_config).
inline std::vector<int> serve_tp_sizes(int max_tp) {
  std::vector<int> out;
  for (int t = 1; t <= std::max(1, max_tp); t *= 2) out.push_back(t);
  return out;
}

// One GPU type at one TP size. A replica at concurrency C completes C requests every
// TTFT + O x ITL seconds (Little's law: in flight = rate x time in system).
inline serve_option serve_option_for(const architecture& m, const scenario& templ, const serve_workload& w, const gpu_spec& g,
                                     int tp, std::optional<double> price) {
  serve_option o;
  o.gpu_id = g.id;
  o.gpu_name = g.name;
  o.tp = tp;
  o.price_per_gpu_hour = price;
  scenario s = templ;
  serve_instead(s);
  s.gpu = g;
  s.num_gpus = tp;
  s.parallel = parallel_config{};
  s.parallel.tp = tp;
  s.inference.prompt_len = w.prompt_len;
  s.inference.gen_len = w.output_len;
  s.inference.batch = 1;
  if (tp > 1 && m.heads % tp != 0) {
    o.reason = "tp " + std::to_string(tp) + " does not divide " + std::to_string(m.heads) + " attention heads";
    return o;
  }
  serve_result r;
  try {
    r = serve(run(m, s), w.itl_target);
  } catch (const config_error& e) {
    o.reason = e.what();
    return o;
  }
  o.max_concurrency = r.max_concurrency;
  if (r.max_concurrency < 1) {
    o.reason = "does not fit one request of " + std::to_string(w.prompt_len + w.output_len) + " tokens";
    return o;
  }
  const std::int64_t c = r.concurrency_for_target.value_or(0);
  if (c < 1) {
    const serve_point one = serve_at(run(m, s), 1);
    o.inter_token_latency = one.inter_token_latency;
    o.reason = "one request alone takes " + std::to_string(static_cast<int>(std::round(in_seconds(one.inter_token_latency) * 1e3))) +
               " ms per token";
    return o;
  }
  const serve_point p = serve_at(run(m, s), c);
  o.meets = true;
  o.concurrency = c;
  o.time_to_first_token = p.time_to_first_token;
  o.inter_token_latency = p.inter_token_latency;
  o.tokens_per_second = p.tokens_per_second;
  const double request_seconds =
      in_seconds(p.time_to_first_token) + static_cast<double>(w.output_len) * in_seconds(p.inter_token_latency);
  o.requests_per_second = static_cast<double>(c) / request_seconds;
  o.replicas = static_cast<std::int64_t>(std::ceil(w.requests_per_second / o.requests_per_second - 1e-9));
  o.replicas = std::max<std::int64_t>(1, o.replicas);
  o.gpus = static_cast<int>(std::min<std::int64_t>(o.replicas * tp, std::numeric_limits<int>::max()));
  if (price) {
    o.cost_per_hour = *price * static_cast<double>(o.replicas) * tp;
    // Output tokens per hour at the workload's rate: R x O x 3600.
    o.cost_per_million_tokens = *o.cost_per_hour / (w.requests_per_second * static_cast<double>(w.output_len) * 3600.0 / 1e6);
  }
  return o;
}

inline void check_serve_workload(const serve_workload& w) {
  if (!(w.requests_per_second > 0) || !std::isfinite(w.requests_per_second) || w.requests_per_second > 1e7)
    detail::fail("--requests-per-second", "must be a number above 0 and at most 1e7 (got " + detail::num(w.requests_per_second) + ")");
  if (w.prompt_len < 1) detail::fail("--prompt-len", "must be at least 1 (got " + std::to_string(w.prompt_len) + ")");
  if (w.output_len < 1) detail::fail("--output-len", "must be at least 1 (got " + std::to_string(w.output_len) + ")");
  const double t = in_seconds(w.itl_target);
  if (!(t > 0) || !std::isfinite(t) || t > 3600)
    detail::fail("--itl-target", "must be above 0 and at most 1h (got " + detail::num(t) + " s)");
}

// Every GPU in `gpus` at TP 1, 2, 4, ... max_tp; prices per GPU-hour by id (absent: no cost).
inline serve_recommendation recommend_serving(const architecture& m, const scenario& templ, const serve_workload& w,
                                              std::span<const gpu_spec> gpus,
                                              const std::map<std::string, double, std::less<>>& price_per_gpu_hour,
                                              int max_tp = 8) {
  check_serve_workload(w);
  if (max_tp < 1 || max_tp > 64) detail::fail("--max-gpus", "must be between 1 and 64 (got " + std::to_string(max_tp) + ")");
  serve_recommendation out;
  out.workload = w;
  for (const gpu_spec& g : gpus) {
    std::optional<double> price;
    if (auto it = price_per_gpu_hour.find(g.id); it != price_per_gpu_hour.end()) price = it->second;
    for (const int tp : serve_tp_sizes(max_tp)) {
      out.rows.push_back(serve_option_for(m, templ, w, g, tp, price));
    }
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const serve_option& a, const serve_option& b) {
    if (a.meets != b.meets) return a.meets;
    const bool pa = a.cost_per_hour.has_value(), pb = b.cost_per_hour.has_value();
    if (pa != pb) return pa;
    if (pa && *a.cost_per_hour != *b.cost_per_hour) return *a.cost_per_hour < *b.cost_per_hour;
    return a.gpus < b.gpus;
  });
  return out;
}

}  // namespace gpuplan
