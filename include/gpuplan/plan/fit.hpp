// plan/fit.hpp — will it fit? The verdict under the planning margin
// (plan/margin.hpp), headroom and binding term of estimate_memory, the largest
// micro-batch and longest sequence that fit with the margin, and the smallest GPU
// count per ZeRO stage (docs/planner.md, "fit").
#pragma once

#include <array>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>

#include "gpuplan/detail/plan_probe.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/plan/margin.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/validate.hpp"

namespace gpuplan {

// The terms of a memory_breakdown, in the order used to break ties.
enum class memory_component : std::uint8_t {
  weights, master_weights, gradients, optimizer, activations, transient, overhead, kv_cache
};
constexpr std::string_view to_string(memory_component c) {
  switch (c) {
    case memory_component::weights: return "weights";
    case memory_component::master_weights: return "master_weights";
    case memory_component::gradients: return "gradients";
    case memory_component::optimizer: return "optimizer";
    case memory_component::activations: return "activations";
    case memory_component::transient: return "transient";
    case memory_component::overhead: return "overhead";
    case memory_component::kv_cache: return "kv_cache";
  }
  return "?";
}
inline Bytes component_bytes(const memory_breakdown& m, memory_component c) {
  switch (c) {
    case memory_component::weights: return m.weights;
    case memory_component::master_weights: return m.master_weights;
    case memory_component::gradients: return m.gradients;
    case memory_component::optimizer: return m.optimizer;
    case memory_component::activations: return m.activations;
    case memory_component::transient: return m.transient;
    case memory_component::overhead: return m.overhead;
    case memory_component::kv_cache: return m.kv_cache;
  }
  return bytes(0);
}
// The largest term (the one that binds); ties go to the earlier enumerator.
inline memory_component largest_component(const memory_breakdown& m) {
  memory_component best = memory_component::weights;
  for (int i = 1; i <= static_cast<int>(memory_component::kv_cache); ++i) {
    const auto c = static_cast<memory_component>(i);
    if (in_bytes(component_bytes(m, c)) > in_bytes(component_bytes(m, best))) best = c;
  }
  return best;
}

struct fit_options {
  int max_gpus = 4096;  // min-GPU search limit
  // Cap the sequence search at max_position_embeddings also for rotary/ALiBi
  // models (learned positions are always capped: longer is an error).
  bool cap_seq_at_max_positions = true;
  plan_margin margin{};  // what "fits" means for the verdict and every limit (plan/margin.hpp)
};

// The smallest number of GPUs of the run's type that fits with one ZeRO stage.
struct gpu_count_fit {
  int zero = 0;
  bool applicable = true;    // false: the run's offload settings need another stage (or serving)
  std::optional<int> gpus;   // nullopt: none up to `searched_up_to`
  int searched_up_to = 0;
};

struct fit_report {
  memory_breakdown memory;
  bool fits = false;           // a plan under the margin: quantile + headroom within capacity
  verdict state = verdict::does_not_fit;  // fits / tight (P50 fits, the margin does not) / does_not_fit
  Bytes headroom = bytes(0);   // capacity − device (the point estimate)
  Bytes headroom_kept = bytes(0);  // what the margin keeps free: max(fraction × capacity, min)
  double device_quantile = 0;  // resident device memory at the margin's confidence, bytes
  memory_component binding = memory_component::weights;
  // Training: micro_batch; serving: inference.batch. nullopt: 1 does not fit.
  std::optional<std::int64_t> max_micro_batch;
  // Training: seq_len (a multiple of seq_step); serving: inference.prompt_len.
  std::optional<std::int64_t> max_seq_len;
  std::int64_t seq_step = 1;
  std::int64_t seq_limit = 0;  // the upper end of the sequence search
  std::array<gpu_count_fit, 4> min_gpus{};  // ZeRO 0..3
};

namespace detail {

// Smallest dp multiple (num_gpus = tp*pp*cp*dp) of the settings `s` that fits with
// ZeRO stage `zero`, or nullopt up to max_gpus; `probe` is a scratch run of the model.
// The smallest multiple is checked on its own (one GPU has no data-parallel
// buffers); from the next one on, device memory is non-increasing in dp at fixed
// micro_batch/grad_accum (more ZeRO sharding; docs/planner.md property P5, tested)
// and the count is bisected. The margin's band factor is the same for every count
// from 2 to the validated scale (bands.hpp); beyond it the widest band applies, so
// counts above kValidatedMaxGpus are planned on that band.
inline gpu_count_fit min_gpus_for(run& probe, const scenario& s, int zero, int max_gpus, const plan_margin& g) {
  gpu_count_fit r;
  r.zero = zero;
  if ((s.parallel.offload_optimizer != offload::none && zero == 0) ||
      (s.parallel.offload_params != offload::none && zero != 3) || s.work == workload::infer) {
    r.applicable = false;
    return r;
  }
  const int ep = s.parallel.ep;
  const int dstep = ep / std::gcd(ep, s.parallel.cp);  // ep must divide dp*cp
  const std::int64_t unit = std::int64_t{s.model_parallel()} * dstep;
  const std::int64_t kmax = unit > 0 ? max_gpus / unit : 0;
  r.searched_up_to = static_cast<int>(kmax * unit);
  const auto pred = [&](std::int64_t k) {
    return fits_after(probe, g, [&](scenario& x) {
      x = s;
      x.parallel.zero = zero;
      x.num_gpus = static_cast<int>(k * unit);
    });
  };
  if (kmax >= 1 && pred(1)) {
    r.gpus = static_cast<int>(unit);
    return r;
  }
  // k in [2, kmax] mapped to j = k - 1 in [1, kmax - 1].
  if (auto j = smallest_true(kmax - 1, [&](std::int64_t jj) { return pred(jj + 1); }))
    r.gpus = static_cast<int>((*j + 1) * unit);
  return r;
}

// The largest micro-batch (serving: batch) that fits: memory is non-decreasing in it (P1).
inline std::optional<std::int64_t> max_micro_batch(const run& r, const plan_margin& g) {
  run t = r;
  const bool infer = !r.training();
  return largest_true(kMaxBatch, [&](std::int64_t b) {
    return fits_after(t, g, [&](scenario& x) { (infer ? x.inference.batch : x.micro_batch) = b; });
  });
}

// The longest sequence (serving: prompt) that fits, a multiple of the divisibility
// unit (sp: tp; cp: 2*cp), capped by max_position_embeddings (always for learned positions).
inline void max_sequence(const run& r, const fit_options& o, fit_report& out) {
  const architecture& m = r.model();
  const scenario& s = r.settings();
  const bool infer = !r.training();
  if (m.is_vit()) {
    out.seq_step = 1;
    out.seq_limit = m.vit_tokens();
    if (out.fits) out.max_seq_len = m.vit_tokens();
    return;
  }
  std::int64_t step = 1;
  if (!infer && s.parallel.sp_enabled()) step = std::lcm(step, std::int64_t{s.parallel.tp_size()});
  if (!infer && s.parallel.cp > 1) step = std::lcm(step, std::int64_t{2} * s.parallel.cp);
  std::int64_t limit = kMaxSeq;
  const bool hard = m.positions == position_kind::learned;
  if (m.max_positions > 0 && (hard || o.cap_seq_at_max_positions)) limit = m.max_positions;
  if (infer) limit -= s.inference.gen_len;
  out.seq_step = step;
  out.seq_limit = limit;
  run t = r;
  const auto k = largest_true(limit / step, [&](std::int64_t kk) {
    return fits_after(t, o.margin, [&](scenario& x) { (infer ? x.inference.prompt_len : x.seq_len) = kk * step; });
  });
  if (k) out.max_seq_len = *k * step;
}

}  // namespace detail

// Will the run fit, and how far is each limit (docs/planner.md, "fit").
inline fit_report fit(const run& r, const fit_options& o = {}) {
  detail::require_valid(r);
  if (o.max_gpus < 1) detail::fail("fit.max_gpus", "must be at least 1 (got " + std::to_string(o.max_gpus) + ")");
  detail::check_margin(o.margin, "fit.margin");
  fit_report out;
  out.memory = estimate_memory(r);
  out.fits = plans_fit(r, out.memory, o.margin);
  out.state = verdict_of(r, out.memory, o.margin);
  out.headroom = out.memory.headroom;
  out.headroom_kept = margin_headroom(o.margin, out.memory.capacity);
  out.device_quantile = device_quantile(r, out.memory, o.margin);
  out.binding = largest_component(out.memory);
  out.max_micro_batch = detail::max_micro_batch(r, o.margin);
  detail::max_sequence(r, o, out);
  run probe = r;
  for (int z = 0; z < 4; ++z)
    out.min_gpus[static_cast<std::size_t>(z)] = detail::min_gpus_for(probe, r.settings(), z, o.max_gpus, o.margin);
  return out;
}

// Convenience: validates (config_error naming the field), then fit(run).
inline fit_report fit(const architecture& m, const scenario& s, const fit_options& o = {}) {
  return fit(run(m, s), o);
}

}  // namespace gpuplan
