// serve.hpp — serving as the engines do it: the KV pool a paged engine builds at start-up,
// how many requests of prompt + output tokens it holds, and per request at a given
// concurrency the time to first token, the inter-token latency and the tokens/s, over a
// curve of concurrencies (1, 2, 4, ..., max). docs/serving.md derives every term.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "gpuplan/engine.hpp"
#include "gpuplan/kernels.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/timing.hpp"

namespace gpuplan {

// One request's view at `concurrency` requests in flight (steady state).
struct serve_point {
  std::int64_t concurrency = 1;
  Seconds time_to_first_token = seconds(0);
  Seconds inter_token_latency = seconds(0);
  double tokens_per_second_per_request = 0;  // 1 / inter-token latency
  double tokens_per_second = 0;              // all requests of one replica: concurrency / inter-token latency
};

struct serve_result {
  engine eng = engine::hf;
  std::string_view kernel;               // the matmul kernel for the weight format (kernels.hpp)
  bool paged = false;                    // a KV pool of fixed-size blocks (vLLM, SGLang, TGI)
  double memory_fraction = 1.0;          // the engine's budget as a share of the GPU
  std::int64_t step_tokens = 0;          // tokens per engine step (profiled peak, prefill chunk)
  Bytes pool = bytes(0);                 // the KV pool per GPU (paged engines)
  std::int64_t block_tokens = 1, pool_blocks = 0, pool_tokens = 0;
  double pool_concurrency = 0;           // pool tokens / (prompt + output): vLLM's "Maximum concurrency ... x"
  std::int64_t max_concurrency = 0;      // whole requests of prompt + output that fit
  std::int64_t largest_context = 0;      // the longest single request (prompt + output) that fits
  std::vector<serve_point> curve;        // concurrency 1, 2, 4, ..., max_concurrency
  std::optional<Seconds> itl_target;
  std::optional<std::int64_t> concurrency_for_target;  // the most requests whose inter-token latency meets the target
  memory_breakdown memory{};
};

namespace detail {

// Seconds to prefill one request's prompt alone (batch 1), all stages.
inline double request_prefill_seconds(const architecture& a, const scenario& s, const device_rates& d, const efficiency_params& e,
                                      std::int64_t batch) {
  scenario one = s;
  one.inference.batch = batch;
  return prefill_seconds(a, one, d, e).seconds;
}

// The tokens an engine step carries: the scenario's, else the engine's default for the GPU.
inline std::int64_t step_tokens_for(const scenario& s) {
  if (s.inference.max_batched_tokens > 0) return s.inference.max_batched_tokens;
  return step_tokens_of(profile_of(s.inference.eng), in_gib(s.gpu.usable_memory));
}

}  // namespace detail

// Steady state at `concurrency` requests of prompt_len + gen_len tokens.
//  Continuous batching (vLLM, SGLang, TGI, llama-server): each step decodes one token of
//  every request and, chunked prefill mixing the prompts into the same steps, carries
//  concurrency x prompt / gen prompt tokens on average: ITL = decode step(concurrency) +
//  concurrency x prefill(prompt) / gen. TTFT = the request's own prefill in chunks of
//  step_tokens, each chunk sharing its step with the other requests' decodes, plus half a
//  step of waiting for the step in flight.
//  Static batching (transformers generate): the batch prefills together (TTFT = prefill of
//  concurrency x prompt), then decodes in lock-step (ITL = decode step(concurrency)).
inline serve_point serve_at(const run& r, std::int64_t concurrency, const efficiency_params& e = {}) {
  detail::require_valid(r);
  const architecture& a = r.model();
  scenario s = r.settings();
  const std::int64_t C = std::max<std::int64_t>(1, concurrency);
  s.inference.batch = C;
  warning_set w = 0;
  const detail::device_rates d = detail::device_rates_of(s.gpu, precision_of(s), e, w);
  const parameter_breakdown P = count_parameters(a);
  const detail::decode_shape ds = detail::decode_shape_of(a, s, d, P);
  const double step = detail::decode_step_seconds(a, s, d, ds, static_cast<double>(C), e);
  const engine_profile& ep = profile_of(s.inference.eng);
  const double gen = static_cast<double>(std::max<std::int64_t>(1, s.inference.gen_len));
  serve_point p;
  p.concurrency = C;
  double itl = step, ttft = 0;
  if (ep.continuous_batching) {
    const double own = detail::request_prefill_seconds(a, s, d, e, 1);
    itl = step + static_cast<double>(C) * own / gen;
    const std::int64_t chunk = std::max<std::int64_t>(1, detail::step_tokens_for(s));
    const double chunks = std::ceil(static_cast<double>(s.inference.prompt_len) / static_cast<double>(chunk));
    const double others = C > 1 ? detail::decode_step_seconds(a, s, d, ds, static_cast<double>(C - 1), e) : 0.0;
    ttft = own + chunks * others + 0.5 * itl;
  } else {
    ttft = detail::request_prefill_seconds(a, s, d, e, C);
  }
  p.time_to_first_token = seconds(ttft);
  p.inter_token_latency = seconds(itl);
  p.tokens_per_second_per_request = 1.0 / itl;
  p.tokens_per_second = static_cast<double>(C) / itl;
  return p;
}

// Concurrencies 1, 2, 4, ... below `max`, then `max` itself.
inline std::vector<std::int64_t> concurrency_ladder(std::int64_t max) {
  std::vector<std::int64_t> out;
  for (std::int64_t c = 1; c < max; c *= 2) out.push_back(c);
  if (max >= 1) out.push_back(max);
  return out;
}

inline serve_result serve(const run& r, std::optional<Seconds> itl_target = {}, const efficiency_params& e = {}) {
  detail::require_valid(r);
  const architecture& a = r.model();
  const scenario& s = r.settings();
  if (s.work != workload::infer) throw config_error("scenario.workload", "serve needs workload infer (got train)");
  const engine_profile& ep = profile_of(s.inference.eng);
  serve_result out;
  out.eng = s.inference.eng;
  out.kernel = kernel_for(s).name;
  out.paged = ep.paged_pool;
  out.memory = estimate_memory(r);
  out.step_tokens = detail::step_tokens_for(s);
  out.memory_fraction = memory_fraction_of(s, in_gib(s.gpu.usable_memory));
  out.max_concurrency = out.memory.max_concurrent_sequences;
  const std::int64_t positions = a.max_positions > 0 ? a.max_positions : kMaxSeq;
  if (ep.paged_pool) {
    const detail::mem::facts f = detail::mem::facts_with_acts(a, s);
    const detail::mem::stage_params sp = detail::mem::params_of_stage(a, f, s, out.memory.stage);
    const detail::mem::kv_pool p = detail::mem::kv_pool_of(a, s, f, sp, detail::mem::kv_per_token(a, s));
    out.pool = bytes(p.bytes);
    out.block_tokens = p.block_tokens;
    out.pool_blocks = p.blocks;
    out.pool_tokens = p.tokens;
    out.pool_concurrency = static_cast<double>(p.tokens) / static_cast<double>(s.inference.prompt_len + s.inference.gen_len);
    out.largest_context = std::min<std::int64_t>(p.tokens, positions);
  } else {
    // The longest single request whose memory fits: bisection over prompt_len (gen 0, batch 1).
    scenario one = s;
    one.inference.batch = 1;
    one.inference.gen_len = 0;
    auto fits = [&](std::int64_t len) {
      one.inference.prompt_len = len;
      try {
        return estimate_memory(run(a, one)).fits;
      } catch (const config_error&) {
        return false;
      }
    };
    std::int64_t lo = 0, hi = positions;
    if (fits(hi)) lo = hi;
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    out.largest_context = lo;
  }
  for (const std::int64_t c : concurrency_ladder(out.max_concurrency)) out.curve.push_back(serve_at(r, c, e));
  if (itl_target) {
    out.itl_target = itl_target;
    // The inter-token latency grows with concurrency: bisection for the largest that meets the target.
    auto meets = [&](std::int64_t c) { return in_seconds(serve_at(r, c, e).inter_token_latency) <= in_seconds(*itl_target); };
    if (out.max_concurrency >= 1 && meets(1)) {
      std::int64_t lo = 1, hi = out.max_concurrency;
      if (meets(hi)) lo = hi;
      while (hi - lo > 1) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        (meets(mid) ? lo : hi) = mid;
      }
      out.concurrency_for_target = lo;
    } else {
      out.concurrency_for_target = 0;
    }
  }
  return out;
}

inline serve_result serve(const architecture& model, const scenario& s, std::optional<Seconds> itl_target = {},
                          const efficiency_params& e = {}) {
  return serve(run(model, s), itl_target, e);
}

}  // namespace gpuplan
