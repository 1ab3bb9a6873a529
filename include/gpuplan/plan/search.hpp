// plan/search.hpp — the fastest (or cheapest) parallel layouts of a training run:
// an exhaustive branch and bound over the black-box estimators. Every
// configuration of the space is either evaluated with estimate_memory /
// estimate_time or excluded by an exact bound derived from an evaluated
// configuration plus one of the monotonicity properties listed in
// docs/planner.md (each checked against the real models in tests/unit/test_plan.cpp).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpuplan/detail/plan_search_space.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/plan/layout.hpp"
#include "gpuplan/plan/margin.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/validate.hpp"

namespace gpuplan {

enum class search_objective : std::uint8_t {
  time,  // step time on exactly `num_gpus` GPUs
  cost,  // GPU-seconds per step (step × gpus) over every GPU count dividing num_gpus
};
enum class search_pruning : std::uint8_t {
  bounds,  // branch and bound (the default)
  none,    // brute force: every configuration through both estimators (reference)
};

// Limits of the options (config_error beyond them).
inline constexpr std::size_t kSearchMaxTopK = 100000;  // rows kept: far beyond any table a person reads
inline constexpr int kSearchMaxThreads = 256;           // workers: far beyond the cores of one host
inline constexpr int kSearchMaxVirtualStages = 1024;    // validate(): scenario.parallel.virtual_stages <= 1024

struct search_options {
  std::size_t top_k = 10;
  // Samples per optimizer step: micro_batch × grad_accum × dp is held at this.
  // Default: the template's micro_batch × grad_accum × dp.
  std::optional<std::int64_t> global_batch{};
  int threads = 1;
  search_objective objective = search_objective::time;
  search_pruning pruning = search_pruning::bounds;
  bool tp_within_node = true;      // tp <= cluster.gpus_per_node (TP over the network is never fastest)
  int max_virtual_stages = 0;      // 0 = every v with pp*v dividing the layer count
  bool vary_checkpointing = true;  // false: the template's
  bool vary_zero = true;           // false: the template's ZeRO stage and offload
  bool allow_offload = true;       // include CPU offload of optimizer (and params, ZeRO-3)
  bool vary_sp = true;             // false: the template's sequence parallelism
  // Only layouts scoring at most this (seconds, or GPU-seconds for cost) are kept.
  std::optional<double> max_score{};
  plan_margin margin{};  // a layout fits when its memory quantile plus headroom does (plan/margin.hpp)
};

struct search_row {
  layout config;
  scenario run;  // the template's settings with this layout
  memory_breakdown memory;
  time_estimate time;
  double score = 0;  // seconds (time) or GPU-seconds (cost) per step
};

struct search_result {
  std::vector<search_row> rows;  // best first
  // Configurations of the space decided: each one was evaluated with the
  // estimators or excluded by an exact bound (docs/planner.md). Deterministic.
  std::int64_t evaluated = 0;
  std::int64_t fitting = 0;        // fully evaluated and fitting
  std::int64_t infeasible = 0;     // does not fit: a memory call, or P1/P2 from one
  std::int64_t pruned_time = 0;    // cannot enter the top-k: a time bound (P3/P4/P6)
  std::int64_t rejected = 0;       // rejected by the estimators (config_error)
  std::int64_t memory_calls = 0;   // estimate_memory calls (varies with threads)
  std::int64_t time_calls = 0;     // estimate_time calls (varies with threads)
  double seconds = 0;
  int threads = 1;
  std::int64_t global_batch = 0;
};

namespace detail {

// Appends the group `g` with its micro-batch chain (every divisor mb of the
// per-replica batch, `mbs`, whose grad_accum the run allows); a group without one is dropped.
inline void add_group(search_plan& p, const scenario& t, const search_group& g, const std::vector<std::int64_t>& mbs) {
  const std::size_t begin = p.chain.size();
  for (const std::int64_t mb : mbs) {
    const std::int64_t ga = g.per_replica_batch / mb;
    // Megatron-LM interleaved 1F1B needs micro-batches % pp == 0 (schedules.py).
    if (g.v > 1 && ga % g.pp != 0) continue;
    if (t.optimizer_in_backward && ga > 1) continue;
    if (mb > kMaxBatch || ga > kMaxBatch) continue;
    p.chain.push_back(mb);
  }
  if (p.chain.size() == begin) return;
  if (p.chain_begin.empty()) p.chain_begin.push_back(0);
  p.groups.push_back(g);
  p.chain_begin.push_back(p.chain.size());
}

// The groups of one (n, tp, pp): every virtual-stage count, sequence parallelism off and on.
inline void add_pipeline_groups(search_plan& p, const architecture& m, const scenario& t, const search_options& o,
                                std::int64_t n, std::int64_t tp, std::int64_t pp, std::int64_t gb) {
  const std::int64_t layers = m.total_layers();
  const std::int64_t dp = n / (tp * pp);
  const std::vector<std::int64_t> mbs = divisors(gb / dp);  // every group of (n, tp, pp) has this per-replica batch
  for (std::int64_t v = 1; v <= (pp > 1 ? layers / pp : 1); ++v) {
    if (layers % (pp * v) != 0) continue;
    if (o.max_virtual_stages > 0 && v > o.max_virtual_stages) continue;
    if (v > kSearchMaxVirtualStages) continue;
    for (const bool sp : {false, true}) {
      if (sp && (tp == 1 || t.seq_len % tp != 0)) continue;
      if (!o.vary_sp && sp != (t.parallel.sp_enabled() && tp > 1)) continue;
      if (!group_allowed(profile_of(t.fw), static_cast<int>(n), static_cast<int>(tp), static_cast<int>(pp),
                         static_cast<int>(v), sp))
        continue;  // a layout the framework cannot launch (framework.hpp)
      add_group(p, t, {static_cast<int>(n), static_cast<int>(tp), static_cast<int>(pp), static_cast<int>(v), sp, gb / dp}, mbs);
    }
  }
}

// The space of a search of the template `t` at global batch `gb` (docs/planner.md).
inline search_plan plan_space(const architecture& m, const scenario& t, const search_options& o, std::int64_t gb) {
  search_plan p;
  const std::int64_t layers = m.total_layers();
  const std::int64_t kv = m.n_kv_heads();
  std::vector<std::int64_t> counts;
  if (o.objective == search_objective::cost) counts = divisors(t.num_gpus);
  else counts.push_back(t.num_gpus);
  for (const std::int64_t n : counts) {
    for (const std::int64_t tp : divisors(n)) {
      if (m.heads % tp != 0 || m.ffn % tp != 0 || (kv % tp != 0 && tp % kv != 0)) continue;
      if (o.tp_within_node && tp > t.cluster.gpus_per_node) continue;
      for (const std::int64_t pp : divisors(n / tp)) {
        if (layers % pp != 0) continue;
        const std::int64_t dp = n / (tp * pp);
        if (gb % dp != 0) continue;
        if (t.parallel.ep > 1 && dp % t.parallel.ep != 0) continue;
        add_pipeline_groups(p, m, t, o, n, tp, pp, gb);
      }
    }
  }
  if (p.chain_begin.empty()) p.chain_begin.push_back(0);
  if (o.vary_checkpointing) {
    for (const checkpointing c : kCkpt)  // selective recompute only where the framework has it (framework.hpp)
      if (c != checkpointing::selective || profile_of(t.fw).selective_checkpointing) p.ckpts.push_back(c);
  }
  else p.ckpts.push_back(t.ckpt.value_or(checkpointing::none));
  if (o.vary_zero) {
    for (const auto& z : kZeroVariants)
      if (o.allow_offload || z.opt == offload::none) p.variants.push_back(z);
  } else {
    p.variants.push_back({t.parallel.zero, t.parallel.offload_optimizer, t.parallel.offload_params});
  }
  return p;
}

// One worker of the search: groups are taken from a shared counter (dynamic
// balance); the result does not depend on which worker takes which group. The
// worker owns one run and edits its layout in place (no allocation per layout).
//
// Per group (n, tp, pp, v, sp) and per (micro-batch, ckpt):
//  1. memory first: per (ckpt, variant) the micro-batch frontier (how many chain
//     entries fit) is found on first need (P1), bracketed by the frontiers of the
//     other checkpointing levels (P2) and looked for first where the last group of
//     the same (gpus, tp, pp, sp) had it (frontier_table); each probe is the fit
//     test stage by stage (margin_table::fits(run): stage 0, the last, then the
//     middle stages P7 does not cover), stopping at the first stage that does not
//     fit. When no variant fits at this level, no time is estimated.
//  2. time bound: one estimate_time of the same layout on tp*pp GPUs (dp = 1,
//     ZeRO-0, no offload); compute + exposed communication + bubble of that run
//     bound the step of every (dp, ZeRO, offload) variant from below (P4, P6);
//     that bound also bounds the next checkpointing levels (P3).
//  3. survivors get their own estimate_time and enter the top-k.
// Nothing the layout leaves unchanged is recomputed per configuration: the margin's
// band factors (margin_table), the framework profile, the model's parameter count
// (run::parameters) and the per-block costs of a micro-batch shape (block_memo).
class layout_searcher {
 public:
  layout_searcher(const run& start, int ep, const search_options& o, const search_plan& p, shared_cutoff& cut,
                  top_k_list& best, search_counters& c)
      : r_(start), ep_(ep), bounds_(o.pruning == search_pruning::bounds), per_gpu_(o.objective == search_objective::cost),
        nc_(p.ckpts.size()), nv_(p.variants.size()), fit_(start, o.margin), p_(p), cut_(cut), best_(best), c_(c),
        fw_(profile_of(start.settings().fw)) {}

  void operator()(std::atomic<std::size_t>& next) {
    for (std::size_t gi = next.fetch_add(1); gi < p_.groups.size(); gi = next.fetch_add(1)) visit_group(gi);
  }

 private:
  [[nodiscard]] double cutoff() const noexcept { return std::min(best_.cutoff(), cut_.load()); }

  void edit_to(const layout& l) {
    r_.edit([&](scenario& x) {
      apply_layout(x, l);
      x.parallel.ep = ep_;
    });
  }
  void set_micro_batch(int k) {
    l_.micro_batch = p_.chain[c0_ + static_cast<std::size_t>(k)];
    l_.grad_accum = g_->per_replica_batch / l_.micro_batch;
  }
  void set_variant(std::size_t ci, std::size_t vi) {
    const zero_variant& z = p_.variants[vi];
    l_.ckpt = p_.ckpts[ci];
    l_.zero = z.zero; l_.offload_optimizer = z.opt; l_.offload_params = z.params;
  }

  void visit_group(std::size_t gi) {
    g_ = &p_.groups[gi];
    l_ = layout{.gpus = g_->gpus, .tp = g_->tp, .pp = g_->pp, .virtual_stages = g_->v, .sp = g_->sp};
    per_score_ = per_gpu_ ? g_->gpus : 1.0;
    const int dp = g_->gpus / (g_->tp * g_->pp);
    nallowed_ = 0;
    for (std::size_t vi = 0; vi < nv_; ++vi) {
      allowed_[vi] = variant_allowed(fw_, p_.variants[vi], dp, g_->pp);
      nallowed_ += allowed_[vi] ? 1 : 0;
    }
    c0_ = p_.chain_begin[gi];
    len_ = static_cast<int>(p_.chain_begin[gi + 1] - c0_);
    frontier_.start(*g_, p_.chain.data() + c0_, len_);
    for (int k = 0; k < len_; ++k) {
      double lb_compute = 0;  // P3: the dp = 1 bound is non-decreasing in checkpointing
      for (std::size_t ci = 0; ci < nc_; ++ci) search_level(k, ci, lb_compute);
    }
  }

  // Every variant of chain entry k at checkpointing level ci.
  void search_level(int k, std::size_t ci, double& lb_compute) {
    const auto nv = nallowed_;  // the space holds only the variants the framework can launch
    c_.evaluated += nv;
    if (bounds_ && lb_compute * per_score_ > cutoff()) {
      c_.pruned_time += nv;
      return;
    }
    dp1_is_variant0_ = false;
    if (bounds_) {
      // Memory first: when no variant fits at this level, the time bound would be wasted.
      bool any_fits = false;
      for (std::size_t vi = 0; vi < nv_ && !any_fits; ++vi) any_fits = allowed_[vi] && k < frontier_of(ci, vi);
      if (!any_fits) {
        c_.infeasible += nv;
        return;
      }
      lb_compute = std::max(lb_compute, time_bound(k, ci));  // P3: the bound grows with checkpointing
      if (lb_compute * per_score_ > cutoff()) {
        c_.pruned_time += nv;
        return;
      }
    }
    for (std::size_t vi = 0; vi < nv_; ++vi) {
      if (!allowed_[vi]) continue;  // not in the space: the framework cannot launch it (framework.hpp)
      if (bounds_ && lb_compute * per_score_ > cutoff()) ++c_.pruned_time;
      else search_variant(k, ci, vi);
    }
  }

  // 1. The time bound from the dp = 1 run of this layout (0 when the estimators
  // reject it); keeps that run's time when it is variant 0 itself.
  double time_bound(int k, std::size_t ci) {
    layout l1 = l_;
    l1.ckpt = p_.ckpts[ci];
    l1.micro_batch = p_.chain[c0_ + static_cast<std::size_t>(k)];
    l1.grad_accum = g_->per_replica_batch / l1.micro_batch;
    const bool dp1_valid = ep_ == 1;
    if (dp1_valid) l1.gpus = g_->tp * g_->pp;
    l1.zero = 0; l1.offload_optimizer = offload::none; l1.offload_params = offload::none;
    try {
      edit_to(l1);
      ++c_.time_calls;
      dp1_time_ = estimate_time_reusing(r_, blocks_);
    } catch (const config_error&) {
      return 0;
    }
    const zero_variant& z0 = p_.variants[0];
    dp1_is_variant0_ = l1.gpus == g_->gpus && z0.zero == 0 && z0.opt == offload::none && z0.params == offload::none;
    const time_breakdown& t = dp1_time_.breakdown;
    const double compute = in_seconds(t.compute);
    return dp1_valid ? compute + in_seconds(t.communication) + in_seconds(t.bubble) : compute;
  }

  // 2. Memory, 3. time of one variant; a fitting one is offered to the top-k.
  void search_variant(int k, std::size_t ci, std::size_t vi) {
    if (bounds_) {
      if (k >= frontier_of(ci, vi)) { ++c_.infeasible; return; }
    } else {
      const int r = fits_at(ci, vi, k);
      if (r < 0) { ++c_.rejected; return; }
      if (r == 0) { ++c_.infeasible; return; }
    }
    set_variant(ci, vi);
    set_micro_batch(k);
    double step = 0;
    if (vi == 0 && dp1_is_variant0_) {
      step = in_seconds(dp1_time_.step);
    } else {
      try {
        edit_to(l_);
        ++c_.time_calls;
        step = in_seconds(estimate_time_reusing(r_, blocks_).step);
      } catch (const config_error&) {
        ++c_.rejected;
        return;
      }
    }
    ++c_.fitting;
    const double score = step * per_score_;
    if (score <= cutoff()) {
      best_.insert({score, l_});
      cut_.offer(best_.cutoff());
    }
  }

  // Does chain entry k fit under (ckpt ci, variant vi)? 1 fits, 0 not, -1 rejected.
  int fits_at(std::size_t ci, std::size_t vi, int k) {
    set_variant(ci, vi);
    set_micro_batch(k);
    try {
      edit_to(l_);
      ++c_.memory_calls;
      return fit_.fits(r_, l_.gpus) ? 1 : 0;  // the memory estimate, stage by stage until one does not fit
    } catch (const config_error&) {
      return -1;
    }
  }

  // How many chain entries fit under (ckpt ci, variant vi) (frontier_table: P1, P2).
  int frontier_of(std::size_t ci, std::size_t vi) {
    auto fits = [this](std::size_t c, std::size_t v, int k) { return fits_at(c, v, k) == 1; };
    return frontier_.get(ci, vi, nc_, fits);
  }

  run r_;
  const int ep_;
  const bool bounds_;   // search_pruning::bounds
  const bool per_gpu_;  // search_objective::cost: scores are GPU-seconds
  const std::size_t nc_, nv_;  // checkpointing levels, (ZeRO, offload) variants
  const margin_table fit_;     // the planning margin, its band factors looked up once
  const search_plan& p_;
  shared_cutoff& cut_;
  top_k_list& best_;
  search_counters& c_;
  // The group being searched.
  const search_group* g_ = nullptr;
  layout l_;
  double per_score_ = 1;
  std::size_t c0_ = 0;
  int len_ = 0;
  frontier_table frontier_;  // memory frontiers of the group, hints from the last one
  block_memo blocks_;        // block costs of earlier time estimates (runs differ only in layout)
  std::array<bool, kZeroVariants.size()> allowed_{};  // variants the framework can launch on this group
  std::int64_t nallowed_ = 0;
  const framework_profile& fw_;
  // The dp = 1 run of the current (micro-batch, ckpt) and whether it is variant 0 itself.
  time_estimate dp1_time_;
  bool dp1_is_variant0_ = false;
};

// Runs the workers over the plan and merges their top-k lists under the total order.
inline std::vector<candidate> best_layouts(const run& start, int ep, const search_options& o, const search_plan& plan,
                                           int nthreads, search_counters& total) {
  std::atomic<std::size_t> next{0};
  shared_cutoff cut;
  if (o.max_score) cut.offer(*o.max_score);
  const auto n = static_cast<std::size_t>(nthreads);
  std::vector<top_k_list> bests;
  bests.reserve(n);
  for (std::size_t i = 0; i < n; ++i) bests.emplace_back(o.top_k);  // each reserves its k + 1 slots
  std::vector<search_counters> counters(n);
  {
    std::vector<std::thread> pool;
    for (std::size_t i = 1; i < n; ++i)
      pool.emplace_back([&, i] { layout_searcher(start, ep, o, plan, cut, bests[i], counters[i])(next); });
    layout_searcher(start, ep, o, plan, cut, bests[0], counters[0])(next);
    for (auto& th : pool) th.join();
  }
  std::vector<candidate> all;
  for (std::size_t i = 0; i < n; ++i) {
    all.insert(all.end(), bests[i].items().begin(), bests[i].items().end());
    total.add(counters[i]);
  }
  std::sort(all.begin(), all.end(), candidate_less);
  if (all.size() > o.top_k) all.resize(o.top_k);
  return all;
}

inline void check_search_options(const scenario& tmpl, const search_options& o) {
  if (tmpl.work != workload::train) fail("search", "searches training layouts only (got workload infer)");
  if (o.top_k < 1 || o.top_k > kSearchMaxTopK)
    fail("search.top_k", "must be between 1 and " + std::to_string(kSearchMaxTopK) + " (got " + std::to_string(o.top_k) + ")");
  if (o.threads < 1 || o.threads > kSearchMaxThreads)
    fail("search.threads", "must be between 1 and " + std::to_string(kSearchMaxThreads) + " (got " + std::to_string(o.threads) + ")");
  check_margin(o.margin, "search.margin");
}

// The template minus its layout (one GPU count, ep 1): what every searched run keeps.
inline scenario without_layout(scenario s) {
  apply_layout(s, layout{.gpus = s.num_gpus});
  s.parallel.ep = 1;
  s.parallel.first_stage_layers.reset();  // the search splits stages evenly
  s.parallel.last_stage_layers.reset();
  return s;
}

// The search of the template `tmpl` from `start`, a valid run of the model whose
// settings are the template's but for the layout (each worker edits a copy).
inline search_result search_from(const run& start, const scenario& tmpl, const search_options& o) {
  const auto t_start = std::chrono::steady_clock::now();
  const std::int64_t gb = o.global_batch.value_or(tmpl.micro_batch * tmpl.grad_accum * std::max(1, tmpl.dp()));
  if (gb < 1 || gb > kMaxBatch) fail("search.global_batch", "must be between 1 and " + std::to_string(kMaxBatch) + " (got " + std::to_string(gb) + ")");
  const search_plan plan = plan_space(start.model(), tmpl, o, gb);
  const int nthreads = std::max(1, std::min<int>(o.threads, static_cast<int>(std::max<std::size_t>(1, plan.groups.size()))));
  const int ep = tmpl.parallel.ep;
  search_counters total;
  search_result r;
  for (const candidate& cand : best_layouts(start, ep, o, plan, nthreads, total)) {
    run x = start;
    x.edit([&](scenario& s) {
      apply_layout(s, cand.l);
      s.parallel.ep = ep;
    });
    r.rows.push_back({cand.l, x.settings(), estimate_memory(x), estimate_time(x), cand.score});
  }
  r.evaluated = total.evaluated;
  r.fitting = total.fitting;
  r.infeasible = total.infeasible;
  r.pruned_time = total.pruned_time;
  r.rejected = total.rejected;
  r.memory_calls = total.memory_calls;
  r.time_calls = total.time_calls;
  r.threads = nthreads;
  r.global_batch = gb;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return r;
}

}  // namespace detail

// The fastest (objective time) or cheapest (objective cost) parallel layouts of a
// training run. `base` supplies everything but the layout: model, method,
// precision, optimizer, seq_len, GPU, num_gpus (N), cluster, ep; its own layout
// sets the default global batch and the values the vary_* options keep.
inline search_result search(const run& base, const search_options& o = {}) {
  detail::require_valid(base);
  detail::check_search_options(base.settings(), o);
  return detail::search_from(base, base.settings(), o);
}

// Convenience: the template need not be a valid run with its own layout; the
// template minus its layout must be (config_error naming the field otherwise).
inline search_result search(const architecture& m, const scenario& tmpl, const search_options& o = {}) {
  detail::check_search_options(tmpl, o);
  return detail::search_from(run(m, detail::without_layout(tmpl)), tmpl, o);
}

}  // namespace gpuplan
