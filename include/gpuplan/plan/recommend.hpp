// plan/recommend.hpp — which GPU and how many: GPU types × counts ranked by
// deadline, budget, cost and time, each with its fastest layout from search()
// and the system around it (docs/planner.md, "recommend").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/plan/search.hpp"
#include "gpuplan/plan/system.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/validate.hpp"

namespace gpuplan {

enum class recommend_rank : std::uint8_t {
  cost,  // cheapest first (rows without a price after priced rows, by time)
  time,  // fastest first
};

// The guides' "a day" rule: a training run should finish within 24 hours.
inline constexpr double kDefaultDeadlineSeconds = 24 * 3600.0;

struct recommend_options {
  std::vector<gpu_spec> gpus{};                           // candidates (the CLI passes the catalog)
  std::map<std::string, double, std::less<>> price_per_gpu_hour{};  // by GPU id; absent: no cost
  std::optional<double> tokens{};        // total tokens; else epochs × dataset_tokens; else the template's
  double epochs = 1;
  std::optional<double> dataset_tokens{};
  Seconds deadline = seconds(kDefaultDeadlineSeconds);
  std::optional<double> budget{};            // currency, same as the prices
  int max_gpus = 64;                         // counts 1, 2, 4, ... up to this
  recommend_rank rank = recommend_rank::cost;
  bool keep_late = true;  // keep rows past the deadline / over budget (ranked after)
  plan_margin margin{};   // what "fits" means for every searched layout (plan/margin.hpp)
};

struct recommendation {
  gpu_spec gpu;
  int count = 1;
  scenario run;  // the fastest layout found by search() on `count` GPUs
  memory_breakdown memory;
  time_estimate time;
  Seconds wall = seconds(0);   // tokens / (global batch × seq_len) steps × step time
  double gpu_hours = 0;
  std::optional<double> cost;  // gpu_hours × price
  bool meets_deadline = false;
  bool within_budget = true;   // true when no budget is given
  system_sizing system;
};

namespace detail {

inline bool recommendation_less(const recommendation& a, const recommendation& b, recommend_rank rank) {
  if (a.meets_deadline != b.meets_deadline) return a.meets_deadline;
  if (a.within_budget != b.within_budget) return a.within_budget;
  const double ta = in_seconds(a.wall), tb = in_seconds(b.wall);
  if (rank == recommend_rank::cost && a.cost.has_value() != b.cost.has_value()) return a.cost.has_value();
  if (rank == recommend_rank::cost && a.cost && b.cost && *a.cost != *b.cost) return *a.cost < *b.cost;
  if (ta != tb) return ta < tb;
  if (a.count != b.count) return a.count < b.count;
  return a.gpu.id < b.gpu.id;
}

// Checks the options and returns the tokens to train: options.tokens, else
// epochs × dataset_tokens, else the template's.
inline double recommend_tokens(const scenario& tmpl, const recommend_options& o) {
  if (tmpl.work != workload::train) fail("recommend", "ranks training runs only (got workload infer)");
  if (o.max_gpus < 1 || o.max_gpus > kMaxGpus) fail("recommend.max_gpus", "must be between 1 and " + std::to_string(kMaxGpus) + " (got " + std::to_string(o.max_gpus) + ")");
  if (!(in_seconds(o.deadline) > 0)) fail("recommend.deadline", "must be positive (got " + num(in_seconds(o.deadline)) + " s)");
  if (o.budget && !(*o.budget >= 0)) fail("recommend.budget", "must be non-negative (got " + num(*o.budget) + ")");
  check_margin(o.margin, "recommend.margin");
  if (!(o.epochs > 0)) fail("recommend.epochs", "must be positive (got " + num(o.epochs) + ")");
  for (const auto& [id, price] : o.price_per_gpu_hour)
    if (!(price >= 0) || !std::isfinite(price)) fail("recommend.price_per_gpu_hour." + id, "must be a non-negative number (got " + num(price) + ")");
  double tokens = 0;
  if (o.tokens) tokens = *o.tokens;
  else if (o.dataset_tokens) tokens = o.epochs * *o.dataset_tokens;
  else if (tmpl.tokens) tokens = *tmpl.tokens;
  else fail("recommend.tokens", "a workload needs tokens (or epochs × dataset_tokens)");
  if (!(tokens >= 1) || !std::isfinite(tokens)) fail("recommend.tokens", "must be at least 1 (got " + num(tokens) + ")");
  return tokens;
}

// The row of `count` GPUs from the best layout of its search.
inline recommendation recommendation_of(const gpu_spec& gpu, int count, const search_row& row, double tokens,
                                        std::int64_t gb, const recommend_options& o) {
  recommendation r;
  r.gpu = gpu;
  r.count = count;
  r.run = row.run;
  r.memory = row.memory;
  r.time = row.time;
  // Steps to train `tokens` at global batch × seq_len tokens per step.
  const double steps = tokens / (static_cast<double>(gb) * static_cast<double>(row.run.seq_len));
  r.wall = seconds(steps * in_seconds(row.time.step));
  r.gpu_hours = in_hours(r.wall) * count;
  if (auto it = o.price_per_gpu_hour.find(gpu.id); it != o.price_per_gpu_hour.end()) r.cost = r.gpu_hours * it->second;
  r.meets_deadline = in_seconds(r.wall) <= in_seconds(o.deadline);
  r.within_budget = !o.budget || (r.cost && *r.cost <= *o.budget);
  r.system = size_system(r.run, r.memory, r.time);
  return r;
}

// The best layout of `t` (its GPU, count and tokens set) at global batch `gb`.
// `start` is the scratch run the searches start from, made on first use and then
// edited in place; a config_error means no count of this GPU can run.
inline search_result best_layout_on(const architecture& m, std::optional<run>& start, const scenario& t, std::int64_t gb,
                                    const plan_margin& margin) {
  const scenario b = without_layout(t);
  if (start) start->edit([&](scenario& x) { x = b; });
  else start.emplace(m, b);
  return search_from(*start, t, {.top_k = 1, .global_batch = gb, .margin = margin});
}

inline std::vector<recommendation> recommend_from(const architecture& m, std::optional<run> start, const scenario& tmpl,
                                                  double tokens, const recommend_options& o) {
  const std::int64_t gb = tmpl.micro_batch * tmpl.grad_accum * std::max(1, tmpl.dp());
  std::vector<recommendation> out;
  for (const gpu_spec& gpu : o.gpus) {
    for (int n = 1; n <= o.max_gpus; n *= 2) {
      scenario t = tmpl;
      t.gpu = gpu;
      t.num_gpus = n;
      t.tokens = tokens;
      search_result sr;
      try {
        sr = best_layout_on(m, start, t, gb, o.margin);
      } catch (const config_error&) {
        break;  // e.g. a precision this GPU cannot run: no count helps
      }
      if (sr.rows.empty()) continue;
      recommendation r = recommendation_of(gpu, n, sr.rows.front(), tokens, gb, o);
      if (!o.keep_late && (!r.meets_deadline || !r.within_budget)) continue;
      out.push_back(std::move(r));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](const recommendation& a, const recommendation& b) { return recommendation_less(a, b, o.rank); });
  return out;
}

}  // namespace detail

// Ranks GPU types × counts (powers of two up to max_gpus) for a training
// workload: each (GPU, count) gets its fastest fitting layout from search()
// (top-1, same global batch as the template); configurations that fit nowhere
// are dropped. Order: meets deadline, within budget, then cost (or time), then
// time, fewer GPUs, GPU id. `base` supplies everything but the GPU, the count
// and the layout (its own layout sets the global batch).
inline std::vector<recommendation> recommend(const run& base, const recommend_options& o) {
  detail::require_valid(base);
  const double tokens = detail::recommend_tokens(base.settings(), o);
  return detail::recommend_from(base.model(), base, base.settings(), tokens, o);
}

// Convenience: the template's GPU and layout need not form a valid run; each
// (GPU, count) is validated as its search starts.
inline std::vector<recommendation> recommend(const architecture& m, const scenario& tmpl, const recommend_options& o) {
  const double tokens = detail::recommend_tokens(tmpl, o);
  return detail::recommend_from(m, std::nullopt, tmpl, tokens, o);
}

}  // namespace gpuplan
