// detail/plan_search_space.hpp — the pieces of the layout search (plan/search.hpp)
// that hold no policy: the (ZeRO, offload) variants and checkpointing levels in
// tie-break order, the strict total order on candidates, a fixed-capacity top-k,
// the counters, and the cutoff the threads share.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <vector>

#include "gpuplan/framework.hpp"
#include "gpuplan/plan/layout.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::detail {

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

// Can framework `f` launch (ZeRO, offload) variant `z` on a group of data-parallel
// degree `dp` and pipeline degree `pp`? The profile's own rules (framework.hpp) plus
// the shared ones: no ZeRO-3 at dp 1, no ZeRO-2/3 with pipeline parallelism.
constexpr bool variant_allowed(const framework_profile& f, const zero_variant& z, int dp, int pp) noexcept {
  if (!f.allows_zero(z.zero)) return false;
  if (z.params != offload::none && !f.offload_everything) return false;
  if (z.opt != offload::none && z.params == offload::none && !f.offload_optimizer_only) return false;
  if (z.zero == 3 && dp < kMinDpForZero3) return false;
  if (pp > 1 && z.zero > kMaxZeroWithPipeline) return false;
  return true;
}

// Can framework `f` launch a (gpus, tp, pp, v, sp) group?
constexpr bool group_allowed(const framework_profile& f, int gpus, int tp, int pp, int v, bool sp) noexcept {
  if (f.max_gpus > 0 && gpus > f.max_gpus) return false;
  if ((tp > 1 || sp) && !f.tensor_parallel) return false;
  if ((pp > 1 || v > 1) && !f.pipeline_parallel) return false;
  return true;
}

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

// The space of one search: the groups, each group's micro-batch chain (ascending,
// concatenated), the checkpointing levels and the (ZeRO, offload) variants.
struct search_plan {
  std::vector<search_group> groups;
  std::vector<std::int64_t> chain;        // micro-batch values, concatenated per group
  std::vector<std::size_t> chain_begin;   // groups.size() + 1 offsets
  std::vector<checkpointing> ckpts;
  std::vector<zero_variant> variants;
};

// The memory frontiers of one group: per (checkpointing level ci, variant vi), how many
// entries of the group's micro-batch chain fit, found on first need with `fits(ci, vi, k)`
// (true: entry k fits). P1 makes each a threshold. P2 brackets it: at least the frontier of
// a level with less checkpointing, at most that of a level with more; the most checkpointed
// level's is found first, so a variant that fits at no micro-batch costs one call for all
// levels. Inside the bracket the first probes go where the last group of the same
// (gpus, tp, pp, sp) stopped fitting (groups differ there only in v), then bisection. A call
// that fits evaluates every pipeline stage, one that does not usually one stage, so a right
// guess (one call of each kind) saves most of the cost.
class frontier_table {
 public:
  static constexpr int kUnknown = -1;

  // A new group and its chain (len entries); the previous group's frontiers become hints.
  void start(const search_group& g, const std::int64_t* chain, int len) {
    if (g_ != nullptr) keep_hint();
    g_ = &g;
    chain_ = chain;
    len_ = len;
    for (auto& row : f_) row.fill(kUnknown);
  }

  template <class Fits>
  int get(std::size_t ci, std::size_t vi, std::size_t nc, Fits& fits) {
    if (f_[ci][vi] != kUnknown) return f_[ci][vi];
    int lo = 0, hi = ci + 1 < nc ? get(nc - 1, vi, nc, fits) : len_;  // entries [0, lo) fit, [hi, len) do not
    for (std::size_t c = 0; c < nc; ++c) {
      const int known = f_[c][vi];
      if (known == kUnknown || c == ci) continue;
      if (c < ci) lo = std::max(lo, known); else hi = std::min(hi, known);
    }
    auto probe = [&](int k) {
      if (k < lo || k >= hi) return;
      if (fits(ci, vi, k)) lo = k + 1; else hi = k;
    };
    if (const int g = guess(ci, vi); g != kUnknown) {
      const int at = std::clamp(g, lo, hi);
      probe(at);      // the first entry that did not fit there: does it fit here?
      probe(at - 1);  // and the last that did
    }
    while (lo < hi) probe(lo + (hi - lo) / 2);
    f_[ci][vi] = lo;
    return lo;
  }

 private:
  static constexpr std::int64_t kNoHint = 0;  // micro-batches are >= 1
  static constexpr std::int64_t kAllFit = std::numeric_limits<std::int64_t>::max();
  struct hint {
    int gpus = 0, tp = 0, pp = 0;
    // Micro-batch of the first entry that did not fit (kAllFit: every one did).
    std::array<std::array<std::int64_t, kZeroVariants.size()>, kCkpt.size()> mb{};
  };

  void keep_hint() {
    hint& h = hints_[g_->sp ? 1 : 0];
    h.gpus = g_->gpus; h.tp = g_->tp; h.pp = g_->pp;
    for (std::size_t ci = 0; ci < kCkpt.size(); ++ci)
      for (std::size_t vi = 0; vi < kZeroVariants.size(); ++vi) {
        const int f = f_[ci][vi];
        h.mb[ci][vi] = f == kUnknown ? kNoHint : f < len_ ? chain_[f] : kAllFit;
      }
  }
  // Entries of this chain below the hint's micro-batch, or kUnknown without a hint.
  [[nodiscard]] int guess(std::size_t ci, std::size_t vi) const {
    const hint& h = hints_[g_->sp ? 1 : 0];
    if (h.gpus != g_->gpus || h.tp != g_->tp || h.pp != g_->pp || h.mb[ci][vi] == kNoHint) return kUnknown;
    int k = 0;
    while (k < len_ && chain_[k] < h.mb[ci][vi]) ++k;
    return k;
  }

  const search_group* g_ = nullptr;
  const std::int64_t* chain_ = nullptr;
  int len_ = 0;
  std::array<std::array<int, kZeroVariants.size()>, kCkpt.size()> f_{};
  std::array<hint, 2> hints_{};  // sp off, on
};

}  // namespace gpuplan::detail
