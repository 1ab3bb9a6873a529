// plan.hpp — the questions users ask, answered from the memory and time models:
//   fit        will it fit? headroom, binding term, max micro-batch / seq, min GPUs per ZeRO stage
//   suggest    what would make it fit, ranked by the step-time cost of each change
//   recommend  which GPU and how many for a workload, a deadline and a budget (+ system sizing)
//   search     the fastest parallel layout on N GPUs, exhaustive, with exact pruning
// Every function is a pure function of value types; see docs/planner.md for the
// rules, orders and tie-breaks, and docs/performance.md for the measured speed.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gpuplan/detail/plan_search.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/validate.hpp"

namespace gpuplan {

// ===========================================================================
// fit
// ===========================================================================

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
  bool fits = false;
  Bytes headroom = bytes(0);
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
// Largest k in [1, k_max] with pred(k) true, assuming pred is monotone
// (true then false). Galloping then bisection: O(log k) calls.
template <class Pred>
std::optional<std::int64_t> largest_true(std::int64_t k_max, Pred pred) {
  if (k_max < 1 || !pred(1)) return std::nullopt;
  std::int64_t lo = 1;  // pred(lo) true
  std::int64_t hi = 2;  // first candidate not yet known
  while (hi <= k_max && pred(hi)) { lo = hi; hi = hi * 2; }
  hi = std::min(hi, k_max + 1);  // pred(hi) false or beyond range
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (pred(mid)) lo = mid; else hi = mid;
  }
  return lo;
}
// Smallest k in [1, k_max] with pred(k) true, assuming pred is monotone (false then true).
template <class Pred>
std::optional<std::int64_t> smallest_true(std::int64_t k_max, Pred pred) {
  if (k_max < 1 || !pred(k_max)) return std::nullopt;
  std::int64_t lo = 0, hi = k_max;  // pred(hi) true; lo false or out of range
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (pred(mid)) hi = mid; else lo = mid;
  }
  return hi;
}
inline bool fits_quietly(const architecture& m, const scenario& s) {
  try {
    return estimate_memory(m, s).fits;
  } catch (const config_error&) {
    return false;
  }
}
// Smallest dp multiple (num_gpus = tp*pp*cp*dp) that fits, or nullopt up to max_gpus.
// The smallest multiple is checked on its own (one GPU has no data-parallel
// buffers); from the next one on, device memory is non-increasing in dp at fixed
// micro_batch/grad_accum (more ZeRO sharding; docs/planner.md property P5, tested)
// and the count is bisected.
inline gpu_count_fit min_gpus_for(const architecture& m, scenario s, int zero, int max_gpus) {
  gpu_count_fit r;
  r.zero = zero;
  s.parallel.zero = zero;
  if ((s.parallel.offload_optimizer != offload::none && zero == 0) ||
      (s.parallel.offload_params != offload::none && zero != 3) || s.work == workload::infer) {
    r.applicable = false;
    return r;
  }
  const int mp = s.model_parallel();
  const int ep = s.parallel.ep;
  const int dstep = ep / std::gcd(ep, s.parallel.cp);  // ep must divide dp*cp
  const std::int64_t unit = std::int64_t{mp} * dstep;
  const std::int64_t kmax = unit > 0 ? max_gpus / unit : 0;
  r.searched_up_to = static_cast<int>(kmax * unit);
  auto pred = [&](std::int64_t k) {
    s.num_gpus = static_cast<int>(k * unit);
    return fits_quietly(m, s);
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
}  // namespace detail

inline fit_report fit(const architecture& m, const scenario& s, const fit_options& o = {}) {
  validate(m, s);
  if (o.max_gpus < 1) detail::fail("fit.max_gpus", "must be at least 1 (got " + std::to_string(o.max_gpus) + ")");
  fit_report r;
  r.memory = estimate_memory(m, s);
  r.fits = r.memory.fits;
  r.headroom = r.memory.headroom;
  r.binding = largest_component(r.memory);

  scenario t = s;
  const bool infer = s.work == workload::infer;
  // Largest micro-batch: device memory is non-decreasing in the micro-batch (P1).
  r.max_micro_batch = detail::largest_true(kMaxBatch, [&](std::int64_t b) {
    (infer ? t.inference.batch : t.micro_batch) = b;
    return detail::fits_quietly(m, t);
  });
  t = s;

  // Longest sequence: a multiple of the divisibility unit (sp: tp; cp: 2*cp),
  // capped by max_position_embeddings (always for learned positions).
  if (m.is_vit()) {
    r.seq_step = 1;
    r.seq_limit = m.vit_tokens();
    if (r.fits) r.max_seq_len = m.vit_tokens();
  } else {
    std::int64_t step = 1;
    if (!infer && s.parallel.sp) step = std::lcm(step, std::int64_t{s.parallel.tp});
    if (!infer && s.parallel.cp > 1) step = std::lcm(step, std::int64_t{2} * s.parallel.cp);
    std::int64_t limit = kMaxSeq;
    const bool hard = m.positions == position_kind::learned;
    if (m.max_positions > 0 && (hard || o.cap_seq_at_max_positions)) limit = m.max_positions;
    if (infer) limit -= s.inference.gen_len;
    r.seq_step = step;
    r.seq_limit = limit;
    auto k = detail::largest_true(limit / step, [&](std::int64_t kk) {
      (infer ? t.inference.prompt_len : t.seq_len) = kk * step;
      return detail::fits_quietly(m, t);
    });
    if (k) r.max_seq_len = *k * step;
  }
  for (int z = 0; z < 4; ++z) r.min_gpus[static_cast<std::size_t>(z)] = detail::min_gpus_for(m, s, z, o.max_gpus);
  return r;
}

// ===========================================================================
// search
// ===========================================================================

enum class search_objective : std::uint8_t {
  time,  // step time on exactly `num_gpus` GPUs
  cost,  // GPU-seconds per step (step × gpus) over every GPU count dividing num_gpus
};
enum class search_pruning : std::uint8_t {
  bounds,  // branch and bound (the default)
  none,    // brute force: every configuration through both estimators (reference)
};

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
};

struct search_row {
  layout config;
  scenario run;
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

struct search_plan {
  std::vector<search_group> groups;
  std::vector<std::int64_t> chain;        // micro-batch values, concatenated per group
  std::vector<std::size_t> chain_begin;   // groups.size() + 1 offsets
  std::vector<checkpointing> ckpts;
  std::vector<zero_variant> variants;
};

inline search_plan plan_space(const architecture& m, const scenario& t, const search_options& o, std::int64_t gb) {
  search_plan p;
  const std::int64_t layers = m.total_layers();
  const std::int64_t kv = m.n_kv_heads();
  const int n_total = t.num_gpus;
  std::vector<std::int64_t> counts;
  if (o.objective == search_objective::cost) counts = divisors(n_total);
  else counts.push_back(n_total);
  for (const std::int64_t n : counts) {
    for (const std::int64_t tp : divisors(n)) {
      if (m.heads % tp != 0 || m.ffn % tp != 0 || (kv % tp != 0 && tp % kv != 0)) continue;
      if (o.tp_within_node && tp > t.cluster.gpus_per_node) continue;
      for (const std::int64_t pp : divisors(n / tp)) {
        if (layers % pp != 0) continue;
        const std::int64_t dp = n / (tp * pp);
        if (gb % dp != 0) continue;
        if (t.parallel.ep > 1 && dp % t.parallel.ep != 0) continue;
        for (std::int64_t v = 1; v <= (pp > 1 ? layers / pp : 1); ++v) {
          if (layers % (pp * v) != 0) continue;
          if (o.max_virtual_stages > 0 && v > o.max_virtual_stages) continue;
          if (v > 1024) continue;  // validate(): virtual_stages <= 1024
          for (int spi = 0; spi < 2; ++spi) {
            const bool sp = spi == 1;
            if (sp && (tp == 1 || t.seq_len % tp != 0)) continue;
            if (!o.vary_sp && sp != (t.parallel.sp && tp > 1)) continue;
            const std::int64_t b = gb / dp;
            const std::size_t begin = p.chain.size();
            for (const std::int64_t mb : divisors(b)) {
              const std::int64_t ga = b / mb;
              // Megatron-LM interleaved 1F1B needs micro-batches % pp == 0 (schedules.py).
              if (v > 1 && ga % pp != 0) continue;
              if (t.optimizer_in_backward && ga > 1) continue;
              if (mb > kMaxBatch || ga > kMaxBatch) continue;
              p.chain.push_back(mb);
            }
            if (p.chain.size() == begin) continue;
            if (p.chain_begin.empty()) p.chain_begin.push_back(0);
            p.groups.push_back({static_cast<int>(n), static_cast<int>(tp), static_cast<int>(pp),
                                static_cast<int>(v), sp, b});
            p.chain_begin.push_back(p.chain.size());
          }
        }
      }
    }
  }
  if (p.chain_begin.empty()) p.chain_begin.push_back(0);
  if (o.vary_checkpointing) p.ckpts.assign(kCkpt.begin(), kCkpt.end());
  else p.ckpts.push_back(t.ckpt);
  if (o.vary_zero) {
    for (const auto& z : kZeroVariants)
      if (o.allow_offload || z.opt == offload::none) p.variants.push_back(z);
  } else {
    p.variants.push_back({t.parallel.zero, t.parallel.offload_optimizer, t.parallel.offload_params});
  }
  return p;
}

// One worker: groups are taken from a shared counter (dynamic balance); the
// result does not depend on which worker takes which group.
//
// Per group (n, tp, pp, v, sp) and per (micro-batch, ckpt):
//  1. time bound: one estimate_time of the same layout on tp*pp GPUs (dp = 1,
//     ZeRO-0, no offload); compute + exposed communication + bubble of that run
//     bound the step of every (dp, ZeRO, offload) variant from below (P4, P6);
//     that bound also bounds the next checkpointing levels (P3).
//  2. memory: per (ckpt, variant) the micro-batch frontier (how many chain
//     entries fit) is found by bisection on first need (P1), starting from the
//     frontier of the previous checkpointing level (P2).
//  3. survivors get their own estimate_time and enter the top-k.
inline void search_worker(const architecture& m, const scenario& tmpl, const search_options& o,
                          const search_plan& p, std::atomic<std::size_t>& next, shared_cutoff& cut,
                          top_k_list& best, search_counters& c) {
  run s(m, tmpl);  // one mutable run per thread; the inner loops edit its layout fields
  const bool bounds = o.pruning == search_pruning::bounds;
  const std::size_t nc = p.ckpts.size();
  const std::size_t nv = p.variants.size();
  constexpr int kUnknown = -1;
  std::array<std::array<int, kZeroVariants.size()>, kCkpt.size()> frontier{};
  const auto cutoff = [&] { return std::min(best.cutoff(), cut.load()); };
  for (std::size_t gi = next.fetch_add(1); gi < p.groups.size(); gi = next.fetch_add(1)) {
    const search_group& g = p.groups[gi];
    layout l;
    l.gpus = g.gpus; l.tp = g.tp; l.pp = g.pp; l.virtual_stages = g.v; l.sp = g.sp;
    for (auto& row : frontier) row.fill(kUnknown);
    const double per_score = o.objective == search_objective::cost ? g.gpus : 1.0;
    const std::size_t c0 = p.chain_begin[gi];
    const int len = static_cast<int>(p.chain_begin[gi + 1] - c0);
    const auto set_mb = [&](int k) {
      l.micro_batch = p.chain[c0 + static_cast<std::size_t>(k)];
      l.grad_accum = g.per_replica_batch / l.micro_batch;
    };
    // Memory: does chain entry k fit under (ckpt ci, variant vi)? Brute force asks the model.
    const auto fits_at = [&](std::size_t ci, std::size_t vi, int k) -> int {  // 1 fits, 0 not, -1 rejected
      const zero_variant& z = p.variants[vi];
      l.ckpt = p.ckpts[ci];
      l.zero = z.zero; l.offload_optimizer = z.opt; l.offload_params = z.params;
      set_mb(k);
      try {
        s.edit([&](scenario& x) { apply_layout(x, l); });
        ++c.memory_calls;
        return estimate_memory(s).fits ? 1 : 0;
      } catch (const config_error&) {
        return -1;
      }
    };
    const auto frontier_of = [&](std::size_t ci, std::size_t vi) -> int {
      int& f = frontier[ci][vi];
      if (f != kUnknown) return f;
      int lo = (ci > 0 && frontier[ci - 1][vi] != kUnknown) ? frontier[ci - 1][vi] : 0;  // entries [0, lo) fit (P2)
      int hi = len;                                                                      // entries [hi, len) do not
      while (lo < hi) {  // invariant: [0, lo) fit, [hi, len) do not
        const int mid = lo + (hi - lo) / 2;
        const int r = fits_at(ci, vi, mid);
        if (r == 1) lo = mid + 1; else hi = mid;
      }
      f = lo;
      return f;
    };
    for (int k = 0; k < len; ++k) {
      double lb_compute = 0;  // P3: the dp = 1 bound is non-decreasing in checkpointing
      for (std::size_t ci = 0; ci < nc; ++ci) {
        c.evaluated += static_cast<std::int64_t>(nv);
        if (bounds && lb_compute * per_score > cutoff()) {
          c.pruned_time += static_cast<std::int64_t>(nv);
          continue;
        }
        // 1. The time bound from the dp = 1 run of this layout.
        double lb_step = 0;
        l.ckpt = p.ckpts[ci];
        set_mb(k);
        time_estimate t_dp1;
        bool dp1_is_variant0 = false;
        if (bounds) {
          layout l1 = l;
          const bool dp1_valid = tmpl.parallel.ep == 1;
          if (dp1_valid) l1.gpus = g.tp * g.pp;
          l1.zero = 0; l1.offload_optimizer = offload::none; l1.offload_params = offload::none;
          try {
            s.edit([&](scenario& x) { apply_layout(x, l1); });
            ++c.time_calls;
            t_dp1 = estimate_time(s);
            const double compute = in_seconds(t_dp1.breakdown.compute);
            lb_step = dp1_valid ? compute + in_seconds(t_dp1.breakdown.communication) + in_seconds(t_dp1.breakdown.bubble)
                                : compute;
            lb_compute = std::max(lb_compute, lb_step);  // P3: the bound grows with checkpointing
            const zero_variant& z0 = p.variants[0];
            dp1_is_variant0 = l1.gpus == g.gpus && z0.zero == 0 && z0.opt == offload::none && z0.params == offload::none;
          } catch (const config_error&) {
            lb_step = 0;
          }
          if (std::max(lb_step, lb_compute) * per_score > cutoff()) {
            c.pruned_time += static_cast<std::int64_t>(nv);
            continue;
          }
        }
        for (std::size_t vi = 0; vi < nv; ++vi) {
          if (bounds && std::max(lb_step, lb_compute) * per_score > cutoff()) { ++c.pruned_time; continue; }
          // 2. Memory.
          if (bounds) {
            if (k >= frontier_of(ci, vi)) { ++c.infeasible; continue; }
          } else {
            const int r = fits_at(ci, vi, k);
            if (r < 0) { ++c.rejected; continue; }
            if (r == 0) { ++c.infeasible; continue; }
          }
          // 3. Time.
          const zero_variant& z = p.variants[vi];
          l.ckpt = p.ckpts[ci];
          l.zero = z.zero; l.offload_optimizer = z.opt; l.offload_params = z.params;
          set_mb(k);
          double step = 0;
          if (vi == 0 && dp1_is_variant0) {
            step = in_seconds(t_dp1.step);
          } else {
            try {
              s.edit([&](scenario& x) { apply_layout(x, l); });
              ++c.time_calls;
              step = in_seconds(estimate_time(s).step);
            } catch (const config_error&) {
              ++c.rejected;
              continue;
            }
          }
          ++c.fitting;
          const double score = step * per_score;
          if (score <= cutoff()) {
            best.insert({score, l});
            cut.offer(best.cutoff());
          }
        }
      }
    }
  }
}

}  // namespace detail

// The fastest (objective time) or cheapest (objective cost) parallel layouts of
// a training run. The template supplies everything but the layout: model,
// method, precision, optimizer, seq_len, GPU, num_gpus (N), cluster.
inline search_result search(const architecture& m, const scenario& tmpl, const search_options& o = {}) {
  const auto t_start = std::chrono::steady_clock::now();
  if (tmpl.work != workload::train) detail::fail("search", "searches training layouts only (got workload infer)");
  if (o.top_k < 1 || o.top_k > 100000) detail::fail("search.top_k", "must be between 1 and 100000 (got " + std::to_string(o.top_k) + ")");
  if (o.threads < 1 || o.threads > 256) detail::fail("search.threads", "must be between 1 and 256 (got " + std::to_string(o.threads) + ")");
  // The template minus its layout must be a valid run.
  scenario base = tmpl;
  apply_layout(base, layout{.gpus = tmpl.num_gpus});
  base.parallel.ep = 1;
  validate(m, base);
  const std::int64_t gb = o.global_batch.value_or(tmpl.micro_batch * tmpl.grad_accum * std::max(1, tmpl.dp()));
  if (gb < 1 || gb > kMaxBatch) detail::fail("search.global_batch", "must be between 1 and " + std::to_string(kMaxBatch) + " (got " + std::to_string(gb) + ")");

  const detail::search_plan plan = detail::plan_space(m, tmpl, o, gb);
  const int nthreads = std::max(1, std::min<int>(o.threads, static_cast<int>(std::max<std::size_t>(1, plan.groups.size()))));
  std::atomic<std::size_t> next{0};
  detail::shared_cutoff cut;
  if (o.max_score) cut.offer(*o.max_score);
  std::vector<detail::top_k_list> bests(static_cast<std::size_t>(nthreads), detail::top_k_list(o.top_k));
  std::vector<detail::search_counters> counters(static_cast<std::size_t>(nthreads));
  {
    std::vector<std::thread> pool;
    for (int i = 1; i < nthreads; ++i)
      pool.emplace_back([&, i] {
        detail::search_worker(m, tmpl, o, plan, next, cut, bests[static_cast<std::size_t>(i)], counters[static_cast<std::size_t>(i)]);
      });
    detail::search_worker(m, tmpl, o, plan, next, cut, bests[0], counters[0]);
    for (auto& th : pool) th.join();
  }
  // Merge: the top-k of the union under the strict total order (deterministic).
  std::vector<detail::candidate> all;
  detail::search_counters total;
  for (int i = 0; i < nthreads; ++i) {
    const auto& items = bests[static_cast<std::size_t>(i)].items();
    all.insert(all.end(), items.begin(), items.end());
    total.add(counters[static_cast<std::size_t>(i)]);
  }
  std::sort(all.begin(), all.end(), detail::candidate_less);
  if (all.size() > o.top_k) all.resize(o.top_k);

  search_result r;
  for (const auto& cand : all) {
    search_row row;
    row.config = cand.l;
    row.run = tmpl;
    apply_layout(row.run, cand.l);
    row.memory = estimate_memory(m, row.run);
    row.time = estimate_time(m, row.run);
    row.score = cand.score;
    r.rows.push_back(std::move(row));
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

}  // namespace gpuplan

#include "gpuplan/detail/plan_advice.hpp"
