// detail/plan_search.hpp — the exhaustive parallel-layout search behind
// gpuplan::search (plan.hpp). Branch and bound over the black-box estimators:
// every configuration of the space is either evaluated with estimate_memory /
// estimate_time or excluded by an exact bound derived from an evaluated
// configuration plus one of the monotonicity properties listed in
// docs/planner.md (each checked against the real models in tests/unit/test_plan.cpp).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/timing.hpp"

namespace gpuplan {

// One point of the search space.
struct layout {
  int gpus = 1;
  int tp = 1;
  int pp = 1;
  int virtual_stages = 1;
  bool sp = false;
  checkpointing ckpt = checkpointing::none;
  int zero = 0;
  offload offload_optimizer = offload::none;
  offload offload_params = offload::none;
  std::int64_t micro_batch = 1;
  std::int64_t grad_accum = 1;

  [[nodiscard]] constexpr int dp() const noexcept { return gpus / (tp * pp); }
  friend bool operator==(const layout&, const layout&) = default;
};

// Writes a layout into a scenario (cp is fixed at 1 by the search).
inline void apply_layout(scenario& s, const layout& l) {
  s.num_gpus = l.gpus;
  s.parallel.tp = l.tp;
  s.parallel.pp = l.pp;
  s.parallel.virtual_stages = l.virtual_stages;
  s.parallel.sp = l.sp;
  s.parallel.cp = 1;
  s.parallel.zero = l.zero;
  s.parallel.offload_optimizer = l.offload_optimizer;
  s.parallel.offload_params = l.offload_params;
  s.ckpt = l.ckpt;
  s.micro_batch = l.micro_batch;
  s.grad_accum = l.grad_accum;
}

namespace detail {

// The (zero, offload) variants searched, in the documented tie-break order.
struct zero_variant {
  int zero;
  offload opt;
  offload params;
};
inline constexpr std::array<zero_variant, 8> kZeroVariants{{
    {0, offload::none, offload::none},
    {1, offload::none, offload::none},
    {1, offload::cpu, offload::none},
    {2, offload::none, offload::none},
    {2, offload::cpu, offload::none},
    {3, offload::none, offload::none},
    {3, offload::cpu, offload::none},
    {3, offload::cpu, offload::cpu},
}};
inline constexpr std::array<checkpointing, 3> kCkpt{checkpointing::none, checkpointing::selective,
                                                    checkpointing::full};

// A (gpus, tp, pp, v, sp) group: everything hoisted out of the inner loops.
struct search_group {
  int gpus, tp, pp, v;
  bool sp;
  std::int64_t per_replica_batch;  // global batch / dp
};

// A candidate in a top-k list, ordered by (score, layout key).
struct candidate {
  double score;
  layout l;
};

constexpr int ckpt_rank(checkpointing c) { return static_cast<int>(c); }
constexpr int offload_rank(offload o) { return static_cast<int>(o); }

// Strict total order: score first, then the documented tie-break
// (fewer GPUs, smaller tp, pp, v; sp off before on; less checkpointing; lower
// ZeRO stage; less offload; larger micro-batch).
inline bool candidate_less(const candidate& a, const candidate& b) {
  if (a.score != b.score) return a.score < b.score;
  const layout& x = a.l;
  const layout& y = b.l;
  if (x.gpus != y.gpus) return x.gpus < y.gpus;
  if (x.tp != y.tp) return x.tp < y.tp;
  if (x.pp != y.pp) return x.pp < y.pp;
  if (x.virtual_stages != y.virtual_stages) return x.virtual_stages < y.virtual_stages;
  if (x.sp != y.sp) return !x.sp;
  if (x.ckpt != y.ckpt) return ckpt_rank(x.ckpt) < ckpt_rank(y.ckpt);
  if (x.zero != y.zero) return x.zero < y.zero;
  if (x.offload_optimizer != y.offload_optimizer) return offload_rank(x.offload_optimizer) < offload_rank(y.offload_optimizer);
  if (x.offload_params != y.offload_params) return offload_rank(x.offload_params) < offload_rank(y.offload_params);
  return x.micro_batch > y.micro_batch;
}

// Fixed-capacity sorted top-k; storage reserved once, no allocation per insert.
class top_k_list {
 public:
  explicit top_k_list(std::size_t k) : k_(k) { items_.reserve(k + 1); }
  // The score a candidate must not exceed to possibly enter (inf until full).
  [[nodiscard]] double cutoff() const noexcept {
    return items_.size() < k_ ? std::numeric_limits<double>::infinity() : items_.back().score;
  }
  void insert(const candidate& c) {
    if (items_.size() == k_ && !candidate_less(c, items_.back())) return;
    auto it = std::upper_bound(items_.begin(), items_.end(), c, candidate_less);
    items_.insert(it, c);  // capacity k+1 reserved: never reallocates
    if (items_.size() > k_) items_.pop_back();
  }
  [[nodiscard]] const std::vector<candidate>& items() const noexcept { return items_; }

 private:
  std::size_t k_;
  std::vector<candidate> items_;
};

struct search_counters {
  std::int64_t evaluated = 0;      // configurations decided (every one of the space)
  std::int64_t fitting = 0;        // evaluated in full and fitting
  std::int64_t infeasible = 0;     // does not fit (a memory call, or P1/P2 from one)
  std::int64_t pruned_time = 0;    // excluded by a time bound (cannot enter the top-k)
  std::int64_t rejected = 0;       // the estimators rejected the configuration (config_error)
  std::int64_t memory_calls = 0;
  std::int64_t time_calls = 0;
  void add(const search_counters& o) {
    evaluated += o.evaluated; fitting += o.fitting; infeasible += o.infeasible;
    pruned_time += o.pruned_time; rejected += o.rejected;
    memory_calls += o.memory_calls; time_calls += o.time_calls;
  }
};

// A lock-free "best known cutoff" shared by the threads: the minimum over the
// threads' own k-th best scores. Each thread's k-th best is >= the global k-th
// best, so the minimum is still a valid (never too tight) pruning bound.
class shared_cutoff {
 public:
  [[nodiscard]] double load() const noexcept { return v_.load(std::memory_order_relaxed); }
  void offer(double x) noexcept {
    double cur = v_.load(std::memory_order_relaxed);
    while (x < cur && !v_.compare_exchange_weak(cur, x, std::memory_order_relaxed)) {}
  }

 private:
  std::atomic<double> v_{std::numeric_limits<double>::infinity()};
};

// Divisors of n in ascending order.
inline std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> lo, hi;
  for (std::int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    lo.push_back(d);
    if (d != n / d) hi.push_back(n / d);
  }
  lo.insert(lo.end(), hi.rbegin(), hi.rend());
  return lo;
}

}  // namespace detail
}  // namespace gpuplan
