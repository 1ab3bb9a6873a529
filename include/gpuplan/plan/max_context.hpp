// plan/max_context.hpp — how long a context fits: the largest trainable sequence length of a
// run at its micro-batch (bisection over scenario.seq_len of estimate_memory, "fits" as every
// output reports it: the P50 of its band within capacity, plan/margin.hpp verdict_of; and
// optionally as a plan under a margin), and the same on a ladder of GPU counts 1, 2, 4, ...
// with context parallelism over every GPU where the framework runs it (framework.hpp
// context_parallel), else data parallelism with the run's ZeRO stage. Formulas, sources and
// the published rows it is checked against: docs/long-context.md. A serving run's longest
// request is serve_result::largest_context (serve.hpp), not this.
#pragma once

#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/bands.hpp"
#include "gpuplan/detail/plan_probe.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/plan/margin.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/validate.hpp"

namespace gpuplan {

struct max_context_options {
  // The ladder's largest GPU count: 0 = the run's num_gpus; 1 = no ladder.
  int ladder_gpus = 0;
  // Also the largest context that is a plan under this margin (plan/margin.hpp): planned_tokens.
  std::optional<plan_margin> margin{};
};

// The largest context on `num_gpus` GPUs laid out as cp × dp (× the run's tp · pp).
struct context_rung {
  int num_gpus = 1;
  int cp = 1;
  int dp = 1;
  std::optional<std::int64_t> tokens;  // nullopt: not even `step` tokens fit
  std::int64_t step = 1;               // this layout's search unit
  memory_breakdown memory{};           // at `tokens` (at `step` when none fits)
  Bytes p50_device = bytes(0);         // its device memory at the band's P50: what decides "fits"
};

struct max_context_report {
  std::optional<std::int64_t> tokens;          // the run as given, where it fits; nullopt: not even `step` tokens fit
  std::optional<std::int64_t> planned_tokens;  // under options.margin (unset without one, or when none is a plan)
  memory_breakdown memory{};                   // at `tokens` (at `step` when none fits)
  Bytes p50_device = bytes(0);                 // its device memory at the band's P50: what decides "fits"
  std::int64_t micro_batch = 1;
  std::int64_t step = 1;           // the search unit: tp with sequence parallelism, 2·cp with context parallelism
  std::int64_t limit = 0;          // the search's upper end: max_position_embeddings (learned positions), else kMaxSeq
  std::int64_t max_positions = 0;  // the model's max_position_embeddings (0: none); rotary models may pass it
  bool context_parallel = false;   // the ladder splits the sequence (the framework runs context parallelism)
  std::vector<context_rung> ladder;  // 1, 2, 4, ... GPUs up to options.ladder_gpus; empty for one GPU
};

namespace detail {

// The divisibility unit of seq_len (validate.hpp): tp with sequence parallelism, 2·cp
// with context parallelism (the load-balanced causal split, Megatron-LM get_batch_on_this_cp_rank).
inline std::int64_t context_step(const scenario& s) {
  std::int64_t step = 1;
  if (s.parallel.sp_enabled()) step = std::lcm(step, std::int64_t{s.parallel.tp_size()});
  if (s.parallel.cp > 1) step = std::lcm(step, std::int64_t{2} * s.parallel.cp);
  return step;
}

// The largest multiple of `step` up to `limit` at which the settings `s` fit (margin unset: the
// verdict is not does_not_fit, as `fits` reads in fit, estimate and Python; set: plans_fit).
// Device memory is non-decreasing in seq_len and the band does not depend on it (docs/planner.md
// P1), so galloping then bisection finds it; a length the rules reject does not fit.
inline std::optional<std::int64_t> largest_context(run& probe, const scenario& s, std::int64_t step, std::int64_t limit,
                                                   const std::optional<plan_margin>& margin) {
  const auto k = largest_true(limit / step, [&](std::int64_t kk) {
    try {
      probe.edit([&](scenario& x) {
        x = s;
        x.seq_len = kk * step;
      });
      const memory_breakdown m = estimate_memory(probe);
      return margin ? plans_fit(probe, m, *margin) : verdict_of(probe, m) != verdict::does_not_fit;
    } catch (const config_error&) {
      return false;
    }
  });
  if (!k) return std::nullopt;
  return *k * step;
}

// The breakdown of `s` at `tokens` (at `step` when none fits), and its device memory at the
// band's P50 (the figure verdict_of compares with the capacity).
inline memory_breakdown context_memory(run& probe, const scenario& s, std::optional<std::int64_t> tokens, std::int64_t step,
                                       Bytes& p50_device) {
  probe.edit([&](scenario& x) {
    x = s;
    x.seq_len = tokens.value_or(step);
  });
  const memory_breakdown m = estimate_memory(probe);
  p50_device = bytes(firm_device(m) * bands_of(probe, m).source.factors.q50);
  return m;
}

// The ladder's counts: powers of two up to `top`, and `top` itself, that the run's tp · pp divide.
inline std::vector<int> ladder_counts(int top, int model_parallel) {
  std::vector<int> out;
  for (std::int64_t g = 1; g <= top; g *= 2)
    if (g % model_parallel == 0) out.push_back(static_cast<int>(g));
  if (top % model_parallel == 0 && (out.empty() || out.back() != top)) out.push_back(top);
  return out;
}

// One rung: `g` GPUs, cp = g / (tp · pp) where the framework runs context parallelism, else
// cp = 1 and data parallelism with the run's ZeRO stage. nullopt: a layout the rules or the
// framework refuse (an expert count that does not divide, more GPUs than the framework runs).
inline std::optional<context_rung> rung_of(run& probe, const scenario& s, int g, std::int64_t limit) {
  const framework_profile& f = profile_of(s.fw);
  if (f.max_gpus > 0 && g > f.max_gpus) return std::nullopt;
  scenario x = s;
  x.num_gpus = g;
  const int k = g / (x.parallel.tp_size() * x.parallel.pp);
  x.parallel.cp = f.context_parallel ? k : 1;
  context_rung out;
  out.num_gpus = g;
  out.cp = x.parallel.cp;
  out.dp = k / x.parallel.cp;
  out.step = context_step(x);
  try {
    probe.edit([&](scenario& y) {
      y = x;
      y.seq_len = out.step;
    });
  } catch (const config_error&) {
    return std::nullopt;
  }
  out.tokens = largest_context(probe, x, out.step, limit, std::nullopt);
  out.memory = context_memory(probe, x, out.tokens, out.step, out.p50_device);
  return out;
}

}  // namespace detail

// The largest trainable context of the run at its micro-batch, and per GPU count.
inline max_context_report max_context(const run& r, const max_context_options& o = {}) {
  detail::require_valid(r);
  const scenario& s = r.settings();
  const architecture& m = r.model();
  if (!r.training())
    detail::fail("scenario.workload", "max_context answers training runs; a serving run's longest request is "
                                      "serve().largest_context (gpuplan serve) (got workload infer)");
  if (m.is_vit())
    detail::fail("scenario.model", "a ViT's sequence is fixed by its image and patch size (got " + m.name + ")");
  if (o.ladder_gpus < 0 || o.ladder_gpus > kMaxGpus)
    detail::fail("max_context.ladder_gpus", "must be between 0 and " + std::to_string(kMaxGpus) + " (got " +
                                                std::to_string(o.ladder_gpus) + ")");
  if (o.margin) detail::check_margin(*o.margin, "max_context.margin");
  max_context_report out;
  out.micro_batch = s.micro_batch;
  out.step = detail::context_step(s);
  out.max_positions = m.max_positions;
  // Learned position embeddings have no row past max_position_embeddings; rotary and ALiBi
  // models run past it (with RoPE scaling for quality): memory alone decides there.
  out.limit = m.positions == position_kind::learned && m.max_positions > 0 ? m.max_positions : kMaxSeq;
  out.context_parallel = profile_of(s.fw).context_parallel;
  run probe = r;
  out.tokens = detail::largest_context(probe, s, out.step, out.limit, std::nullopt);
  if (o.margin) out.planned_tokens = detail::largest_context(probe, s, out.step, out.limit, o.margin);
  out.memory = detail::context_memory(probe, s, out.tokens, out.step, out.p50_device);
  const int top = o.ladder_gpus > 0 ? o.ladder_gpus : s.num_gpus;
  if (top > 1)
    for (const int g : detail::ladder_counts(top, s.parallel.tp_size() * s.parallel.pp))
      if (auto rung = detail::rung_of(probe, s, g, out.limit)) out.ladder.push_back(std::move(*rung));
  return out;
}

// Convenience: validates (config_error naming the field), then max_context(run).
inline max_context_report max_context(const architecture& m, const scenario& s, const max_context_options& o = {}) {
  return max_context(run(m, s), o);
}

}  // namespace gpuplan
