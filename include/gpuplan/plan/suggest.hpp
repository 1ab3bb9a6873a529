// plan/suggest.hpp — what would make a run fit: every applicable change, fitting
// or not, and pairs where neither change fits alone but the pair does, ranked by
// the cost of each change (docs/planner.md, "suggest"). Not allocation-free (rows
// carry descriptions and scenarios), but the estimators run only O(changes × log)
// times, each on a scratch run edited in place.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/detail/plan_probe.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/plan/fit.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/timing.hpp"

namespace gpuplan {

// Changes, in the documented tie-break order (cheaper-to-adopt first).
enum class change_kind : std::uint8_t {
  chunked_loss,           // chunked (Liger-style) cross-entropy
  selective_checkpointing,
  full_checkpointing,
  optimizer_8bit,         // bitsandbytes 8-bit AdamW
  paged_optimizer,        // bitsandbytes paged AdamW
  smaller_micro_batch,    // same global batch, more gradient accumulation (serving: smaller batch)
  lora,
  qlora,
  cpu_offload,            // ZeRO-Offload: optimizer state on the CPU (ZeRO stage >= 2)
  zero3_gpus,             // ZeRO-3 across N GPUs of the same type
  bigger_gpu,             // another GPU from the caller's list
  // Serving only.
  weights_int8,
  weights_int4,
  kv_cache_fp8,
  tensor_parallel_gpus,   // tensor parallelism across N GPUs
};
constexpr std::string_view to_string(change_kind k) {
  switch (k) {
    case change_kind::chunked_loss: return "chunked_loss";
    case change_kind::selective_checkpointing: return "selective_checkpointing";
    case change_kind::full_checkpointing: return "full_checkpointing";
    case change_kind::optimizer_8bit: return "optimizer_8bit";
    case change_kind::paged_optimizer: return "paged_optimizer";
    case change_kind::smaller_micro_batch: return "smaller_micro_batch";
    case change_kind::lora: return "lora";
    case change_kind::qlora: return "qlora";
    case change_kind::cpu_offload: return "cpu_offload";
    case change_kind::zero3_gpus: return "zero3_gpus";
    case change_kind::bigger_gpu: return "bigger_gpu";
    case change_kind::weights_int8: return "weights_int8";
    case change_kind::weights_int4: return "weights_int4";
    case change_kind::kv_cache_fp8: return "kv_cache_fp8";
    case change_kind::tensor_parallel_gpus: return "tensor_parallel_gpus";
  }
  return "?";
}

struct suggest_options {
  std::vector<gpu_spec> gpus{};  // candidates for bigger_gpu (the CLI passes the catalog)
  int max_gpus = 1024;         // limit for zero3_gpus / tensor_parallel_gpus
  bool pairs = true;           // add "two changes" rows when no single change of the pair fits
};

struct suggestion {
  std::vector<change_kind> changes;  // one or two
  std::string description;           // "QLoRA (NF4 base, double quantization) + full checkpointing"
  scenario run;                      // the changed run
  memory_breakdown memory;
  time_estimate time;
  bool fits = false;
  // GPU-seconds per trained sample relative to the original run (1.0 = same;
  // equals the step-time ratio when GPU count and global batch are unchanged).
  // NaN when either step time is zero (no time model for that run).
  double time_cost = std::numeric_limits<double>::quiet_NaN();
};

namespace detail {

inline double gpu_seconds_per_sample(const scenario& s, const time_estimate& t) {
  const double gb = s.work == workload::infer ? static_cast<double>(s.inference.batch)
                                              : static_cast<double>(s.global_batch());
  return in_seconds(t.step) * s.num_gpus / std::max(1.0, gb);
}

inline std::string lora_targets_text(std::uint8_t t) {
  std::string out;
  for (int i = 0; i < kLinearKinds; ++i) {
    if ((t & (1u << i)) == 0) continue;
    if (!out.empty()) out += ",";
    out += kLoraTargetNames[static_cast<std::size_t>(i)].name;
  }
  return out;
}

inline std::string n2s(std::int64_t v) { return std::to_string(v); }

// The changes that only set fields of a training run; false when one does not apply.
inline bool apply_training_change(change_kind k, scenario& s, std::string& text) {
  if (s.work == workload::infer) return false;
  switch (k) {
    case change_kind::chunked_loss:
      if (s.chunked_loss) return false;
      s.chunked_loss = true;
      text = "chunked cross-entropy loss";
      return true;
    case change_kind::selective_checkpointing:
      if (s.ckpt != checkpointing::none) return false;
      s.ckpt = checkpointing::selective;
      text = "selective activation checkpointing";
      return true;
    case change_kind::full_checkpointing:
      if (s.ckpt == checkpointing::full) return false;
      s.ckpt = checkpointing::full;
      text = "full activation checkpointing";
      return true;
    case change_kind::optimizer_8bit:
      if (s.opt != optimizer::adamw && s.opt != optimizer::adam && s.opt != optimizer::paged_adamw_32bit) return false;
      s.opt = s.opt == optimizer::paged_adamw_32bit ? optimizer::paged_adamw_8bit : optimizer::adamw_8bit;
      text = "8-bit AdamW (bitsandbytes)";
      return true;
    case change_kind::paged_optimizer:
      if (s.opt == optimizer::adamw || s.opt == optimizer::adam) s.opt = optimizer::paged_adamw_32bit;
      else if (s.opt == optimizer::adamw_8bit) s.opt = optimizer::paged_adamw_8bit;
      else return false;
      text = std::string("paged AdamW (") + std::string(to_string(s.opt)) + ")";
      return true;
    case change_kind::lora:
      if (s.meth != method::full && s.meth != method::freeze) return false;
      s.meth = method::lora;
      text = "LoRA r=" + n2s(s.lora.rank) + " on " + lora_targets_text(s.lora.targets);
      return true;
    case change_kind::qlora:
      if (s.meth == method::qlora) return false;
      s.meth = method::qlora;
      s.quant.reset();  // QLoRA's default: NF4 with double quantization
      if (s.prec == precision::fp32 || s.prec == precision::tf32) s.prec = precision::bf16_mixed;
      text = "QLoRA r=" + n2s(s.lora.rank) + " on " + lora_targets_text(s.lora.targets) + " (NF4 base, double quantization)";
      return true;
    case change_kind::cpu_offload:
      if (s.parallel.offload_optimizer != offload::none) return false;
      s.parallel.zero = std::max(s.parallel.zero, 2);
      s.parallel.offload_optimizer = offload::cpu;
      text = "CPU offload of the optimizer state (ZeRO-Offload, ZeRO-" + n2s(s.parallel.zero) + ")";
      return true;
    default:
      return false;
  }
}

// The changes that only set fields of a serving run; false when one does not apply.
inline bool apply_serving_change(change_kind k, scenario& s, std::string& text) {
  if (s.work != workload::infer) return false;
  switch (k) {
    case change_kind::weights_int8:
    case change_kind::weights_int4: {
      const dtype d = k == change_kind::weights_int8 ? dtype::int8 : dtype::int4;
      if (s.quant && s.quant->weights == d) return false;
      s.quant = quantization{.weights = d};
      text = k == change_kind::weights_int8 ? "int8 weights (LLM.int8)" : "int4 weights (GPTQ/AWQ, group 128)";
      return true;
    }
    case change_kind::kv_cache_fp8:
      if (s.inference.kv_cache_dtype == dtype::fp8_e4m3) return false;
      s.inference.kv_cache_dtype = dtype::fp8_e4m3;
      text = "FP8 KV cache";
      return true;
    default:
      return false;
  }
}

// Serving: the largest batch below the run's that fits (1 when none does).
inline bool shrink_serving_batch(run& probe, scenario& s, std::string& text) {
  if (s.inference.batch <= 1) return false;
  const std::int64_t b0 = s.inference.batch;
  const auto best = largest_true(b0 - 1, [&](std::int64_t b) {
    s.inference.batch = b;
    return fits_as(probe, s);
  });
  s.inference.batch = best.value_or(1);
  text = "serving batch " + n2s(b0) + " → " + n2s(s.inference.batch);
  return true;
}

// Training: the largest divisor of mb×ga below mb that fits (fastest first: fewer
// accumulation steps), keeping the global batch; 1 when none does.
inline bool shrink_micro_batch(run& probe, scenario& s, std::string& text) {
  if (s.micro_batch <= 1 || s.optimizer_in_backward) return false;
  const std::int64_t mb0 = s.micro_batch, ga0 = s.grad_accum;
  const std::int64_t per_replica = mb0 * ga0;
  std::int64_t chosen = 1;
  for (std::int64_t d = mb0 - 1; d >= 1; --d) {
    if (per_replica % d != 0) continue;
    s.micro_batch = d;
    s.grad_accum = per_replica / d;
    if (fits_as(probe, s)) { chosen = d; break; }
  }
  s.micro_batch = chosen;
  s.grad_accum = per_replica / chosen;
  text = "micro-batch " + n2s(mb0) + " → " + n2s(chosen) + " with grad_accum " + n2s(ga0) + " → " +
         n2s(s.grad_accum) + " (same global batch)";
  return true;
}

// Training: ZeRO-3 data parallelism on the smallest GPU count that fits; the
// global batch is kept where grad_accum allows it.
inline bool spread_zero3(run& probe, scenario& s, std::string& text, const suggest_options& o) {
  if (s.work == workload::infer) return false;
  const std::int64_t samples = s.global_batch();
  s.parallel.zero = 3;
  const gpu_count_fit g = min_gpus_for(probe, s, 3, o.max_gpus);
  if (!g.applicable) return false;
  s.num_gpus = g.gpus.value_or(std::max(g.searched_up_to, s.model_parallel()));
  const std::int64_t per_step = s.micro_batch * s.dp();
  if (per_step > 0 && samples % per_step == 0) s.grad_accum = std::max<std::int64_t>(1, samples / per_step);
  text = "ZeRO-3 across " + n2s(s.num_gpus) + " GPUs";
  if (!g.gpus) text += " (none fits up to " + n2s(g.searched_up_to) + ")";
  return true;
}

// Serving: the smallest tensor-parallel degree (a power of two up to the heads) that fits.
inline bool spread_tensor_parallel(run& probe, scenario& s, std::string& text, const suggest_options& o) {
  if (s.work != workload::infer) return false;
  std::optional<int> found;
  for (int tp = 2; tp <= o.max_gpus && tp <= probe.model().heads; tp *= 2) {
    scenario t = s;
    t.parallel.tp = tp;
    t.num_gpus = tp * s.parallel.pp;
    if (t.num_gpus > o.max_gpus) break;
    if (fits_as(probe, t)) { found = tp; break; }
  }
  if (!found) return false;
  s.parallel.tp = *found;
  s.num_gpus = *found * s.parallel.pp;
  text = "tensor parallelism across " + n2s(s.num_gpus) + " GPUs";
  return true;
}

// Applies one change to `s` (probe: a scratch run of the model for the searching
// changes); false when it does not apply. Sets the description.
inline bool apply_change(run& probe, change_kind k, scenario& s, std::string& text, const suggest_options& o) {
  switch (k) {
    case change_kind::smaller_micro_batch:
      return s.work == workload::infer ? shrink_serving_batch(probe, s, text) : shrink_micro_batch(probe, s, text);
    case change_kind::zero3_gpus: return spread_zero3(probe, s, text, o);
    case change_kind::tensor_parallel_gpus: return spread_tensor_parallel(probe, s, text, o);
    case change_kind::bigger_gpu: return false;  // handled by suggest() (one row per chosen GPU)
    default: return apply_training_change(k, s, text) || apply_serving_change(k, s, text);
  }
}

// The mutually exclusive groups for pairs (two changes from one group never combine);
// every other change is a group of its own (numbered from 100, past the shared ones).
constexpr int change_group(change_kind k) {
  switch (k) {
    case change_kind::selective_checkpointing:
    case change_kind::full_checkpointing: return 1;
    case change_kind::optimizer_8bit:
    case change_kind::paged_optimizer: return 2;
    case change_kind::lora:
    case change_kind::qlora: return 3;
    case change_kind::weights_int8:
    case change_kind::weights_int4: return 4;
    default: return 100 + static_cast<int>(k);
  }
}

inline bool nan_less(double a, double b) {
  const bool an = std::isnan(a), bn = std::isnan(b);
  if (an != bn) return bn;  // numbers before NaN
  if (an) return false;
  return a < b;
}

// Ranking: fits first; then time_cost ascending (NaN last); then fewer
// changes; then change_kind order; then less device memory; then GPU id.
inline bool suggestion_less(const suggestion& a, const suggestion& b) {
  if (a.fits != b.fits) return a.fits;
  if (nan_less(a.time_cost, b.time_cost)) return true;
  if (nan_less(b.time_cost, a.time_cost)) return false;
  if (a.changes.size() != b.changes.size()) return a.changes.size() < b.changes.size();
  if (a.changes != b.changes) return a.changes < b.changes;
  if (in_bytes(a.memory.device) != in_bytes(b.memory.device)) return in_bytes(a.memory.device) < in_bytes(b.memory.device);
  return a.run.gpu.id < b.run.gpu.id;
}

// Estimates a suggestion's changed run against the original (GPU-seconds per
// sample `base_cost`); false when the changed run is not a valid run.
inline bool estimate_change(run& probe, suggestion& g, double base_cost) {
  try {
    probe.edit([&](scenario& x) { x = g.run; });
    g.memory = estimate_memory(probe);
    g.time = estimate_time(probe);
  } catch (const config_error&) {
    return false;
  }
  g.fits = g.memory.fits;
  const double c = gpu_seconds_per_sample(g.run, g.time);
  g.time_cost = (base_cost > 0 && c > 0) ? c / base_cost : std::numeric_limits<double>::quiet_NaN();
  return true;
}

// Every applicable single change, fitting or not (bigger GPUs excepted).
inline std::vector<suggestion> single_changes(run& probe, const scenario& s, double base_cost, const suggest_options& o) {
  constexpr std::array<change_kind, 14> kSingles{
      change_kind::chunked_loss, change_kind::selective_checkpointing, change_kind::full_checkpointing,
      change_kind::optimizer_8bit, change_kind::paged_optimizer, change_kind::smaller_micro_batch,
      change_kind::lora, change_kind::qlora, change_kind::cpu_offload, change_kind::zero3_gpus,
      change_kind::weights_int8, change_kind::weights_int4, change_kind::kv_cache_fp8,
      change_kind::tensor_parallel_gpus};
  std::vector<suggestion> out;
  for (const change_kind k : kSingles) {
    suggestion g;
    g.run = s;
    if (!apply_change(probe, k, g.run, g.description, o)) continue;
    g.changes = {k};
    if (estimate_change(probe, g, base_cost)) out.push_back(std::move(g));
  }
  return out;
}

// Bigger GPUs from the list: the smallest that fits (ties: faster step, then id)
// and the fastest that fits when different; if none fits, the largest.
inline void bigger_gpus(run& probe, const scenario& s, double base_cost, const suggest_options& o,
                        std::vector<suggestion>& out) {
  std::vector<suggestion> gpus;
  for (const gpu_spec& gpu : o.gpus) {
    if (in_bytes(gpu.usable_memory) <= in_bytes(s.gpu.usable_memory) || gpu.id == s.gpu.id) continue;
    suggestion g;
    g.run = s;
    g.run.gpu = gpu;
    g.changes = {change_kind::bigger_gpu};
    g.description = "bigger GPU: " + gpu.id + " (" + gpu.name + ")";
    if (estimate_change(probe, g, base_cost)) gpus.push_back(std::move(g));
  }
  const auto mem = [](const suggestion& g) { return in_bytes(g.run.gpu.usable_memory); };
  const auto step = [](const suggestion& g) { return in_seconds(g.time.step); };
  const auto id_less = [](const suggestion& a, const suggestion& b) { return a.run.gpu.id < b.run.gpu.id; };
  const suggestion* smallest = nullptr;
  const suggestion* fastest = nullptr;
  const suggestion* largest = nullptr;
  for (const auto& g : gpus) {
    if (!largest || mem(g) > mem(*largest) || (mem(g) == mem(*largest) && id_less(g, *largest))) largest = &g;
    if (!g.fits) continue;
    if (!smallest || mem(g) < mem(*smallest) ||
        (mem(g) == mem(*smallest) && (step(g) < step(*smallest) || (step(g) == step(*smallest) && id_less(g, *smallest)))))
      smallest = &g;
    if (!fastest || step(g) < step(*fastest) || (step(g) == step(*fastest) && id_less(g, *fastest))) fastest = &g;
  }
  if (smallest) out.push_back(*smallest);
  if (fastest && fastest != smallest) out.push_back(*fastest);
  if (!smallest && largest) out.push_back(*largest);
}

// Two changes where neither alone fits but the pair does. Searching changes
// (micro-batch reduction, ZeRO-3 GPU count) are applied last, so they choose
// under the other change; ZeRO-3 always last.
inline void change_pairs(run& probe, const scenario& s, double base_cost, const suggest_options& o,
                         const std::vector<suggestion>& singles, std::vector<suggestion>& out) {
  for (std::size_t i = 0; i < singles.size(); ++i) {
    for (std::size_t j = i + 1; j < singles.size(); ++j) {
      const change_kind a = singles[i].changes[0], b = singles[j].changes[0];
      if (singles[i].fits || singles[j].fits) continue;
      if (change_group(a) == change_group(b)) continue;
      if (a == change_kind::tensor_parallel_gpus || b == change_kind::tensor_parallel_gpus) continue;
      suggestion g;
      g.run = s;
      std::string ta, tb;
      const bool b_first = b != change_kind::zero3_gpus &&
                           (a == change_kind::smaller_micro_batch || a == change_kind::zero3_gpus);
      if (b_first) {
        if (!apply_change(probe, b, g.run, tb, o) || !apply_change(probe, a, g.run, ta, o)) continue;
      } else {
        if (!apply_change(probe, a, g.run, ta, o) || !apply_change(probe, b, g.run, tb, o)) continue;
      }
      g.changes = {a, b};
      g.description = ta + " + " + tb;
      if (estimate_change(probe, g, base_cost) && g.fits) out.push_back(std::move(g));
    }
  }
}

}  // namespace detail

// What would make the run fit: single changes (every applicable one, fitting or
// not) and, with options.pairs, two-change rows where neither change fits alone
// but the pair does. Sorted by detail::suggestion_less (docs/planner.md).
inline std::vector<suggestion> suggest(const run& r, const suggest_options& o = {}) {
  detail::require_valid(r);
  const scenario& s = r.settings();
  const double base_cost = detail::gpu_seconds_per_sample(s, estimate_time(r));
  run probe = r;  // every changed run is estimated on this copy, edited in place
  const std::vector<suggestion> singles = detail::single_changes(probe, s, base_cost, o);
  std::vector<suggestion> out = singles;
  detail::bigger_gpus(probe, s, base_cost, o, out);
  if (o.pairs) detail::change_pairs(probe, s, base_cost, o, singles, out);
  std::stable_sort(out.begin(), out.end(), detail::suggestion_less);
  return out;
}

// Convenience: validates (config_error naming the field), then suggest(run).
inline std::vector<suggestion> suggest(const architecture& m, const scenario& s, const suggest_options& o = {}) {
  return suggest(run(m, s), o);
}

}  // namespace gpuplan
