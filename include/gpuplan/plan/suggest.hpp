// plan/suggest.hpp — what would make a run fit, as a card owner would act on it:
// only changes that fit with the planning margin (plan/margin.hpp), changes on
// the user's own card first (ordered by how little they change what is trained,
// then by time), then more cards of the same type, then other GPUs ranked by
// money (docs/planner.md, "suggest"). Not allocation-free (rows carry
// descriptions and scenarios), but the estimators run only O(changes × log)
// times, each on a scratch run edited in place.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/detail/plan_probe.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/kernels.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/peft.hpp"
#include "gpuplan/plan/fit.hpp"
#include "gpuplan/plan/margin.hpp"
#include "gpuplan/plan/system.hpp"
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
  cpu_offload_all,        // ZeRO-3 Offload / FSDP CPU offload: parameters, gradients and optimizer state on the CPU
  shorter_sequence,       // the longest sequence that fits, shorter than asked (training)
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
    case change_kind::cpu_offload_all: return "cpu_offload_all";
    case change_kind::shorter_sequence: return "shorter_sequence";
    case change_kind::zero3_gpus: return "zero3_gpus";
    case change_kind::bigger_gpu: return "bigger_gpu";
    case change_kind::weights_int8: return "weights_int8";
    case change_kind::weights_int4: return "weights_int4";
    case change_kind::kv_cache_fp8: return "kv_cache_fp8";
    case change_kind::tensor_parallel_gpus: return "tensor_parallel_gpus";
  }
  return "?";
}

// Where a suggestion leaves the user: the same card, more cards of that type, another GPU.
enum class suggestion_scope : std::uint8_t { own_card, more_cards, other_gpu };
constexpr std::string_view to_string(suggestion_scope s) {
  return s == suggestion_scope::own_card ? "own_card" : s == suggestion_scope::more_cards ? "more_cards" : "other_gpu";
}

// How much a change alters what is trained (or served), the first key of the
// own-card order; each change's tier and its source are in change_tier().
enum class change_effect : std::uint8_t {
  same_result,      // the same computation: only memory and time change
  approximate,      // the same model, numerics approximated (8-bit optimizer state, int8 weights, FP8 KV cache)
  different_model,  // other trainable parameters or a quantized base (LoRA, QLoRA, int4 weights)
  different_data,   // the examples are cut (shorter sequence)
};
constexpr std::string_view to_string(change_effect e) {
  switch (e) {
    case change_effect::same_result: return "same_result";
    case change_effect::approximate: return "approximate";
    case change_effect::different_model: return "different_model";
    case change_effect::different_data: return "different_data";
  }
  return "?";
}

struct suggest_options {
  std::vector<gpu_spec> gpus{};  // candidates for bigger_gpu (the CLI passes the catalog)
  int max_gpus = 1024;         // limit for zero3_gpus / tensor_parallel_gpus
  bool pairs = true;           // add "two changes" rows when no single change of the pair fits
  plan_margin margin{};        // a row is shown only when it fits with this margin
  // Per-GPU-hour prices by GPU id (the CLI passes the catalog's cheapest
  // on-demand price, io/prices.hpp); other GPUs are ranked by them.
  std::map<std::string, double, std::less<>> price_per_gpu_hour{};
  int max_gpu_rows = 3;        // other-GPU rows kept, cheapest first
};

struct suggestion {
  std::vector<change_kind> changes;  // one or two
  std::string description;           // "QLoRA (NF4 base, double quantization) + full checkpointing"
  scenario run;                      // the changed run
  memory_breakdown memory;
  time_estimate time;
  bool fits = false;                 // a plan under the margin (every returned row fits)
  suggestion_scope scope = suggestion_scope::own_card;
  change_effect effect = change_effect::same_result;  // the larger of its changes'
  // GPU-seconds per trained sample relative to the original run (1.0 = same;
  // equals the step-time ratio when GPU count and global batch are unchanged).
  // NaN when either step time is zero (no time model for that run).
  double time_cost = std::numeric_limits<double>::quiet_NaN();
  // Wall-clock seconds per trained sample relative to the original run (the
  // step-time change on one card; more cards can make it < 1). NaN as above.
  double time_change = std::numeric_limits<double>::quiet_NaN();
  double device_quantile = 0;        // resident device memory at the margin's confidence, bytes
  Bytes headroom_kept = bytes(0);    // the margin's headroom on this GPU
  std::optional<double> price_per_gpu_hour;  // other GPUs with a price
  std::optional<double> run_cost;    // price × GPU-hours, when the run has a token count
};

namespace detail {

inline double seconds_per_sample(const scenario& s, const time_estimate& t) {
  const double gb = s.work == workload::infer ? static_cast<double>(s.inference.batch)
                                              : static_cast<double>(s.global_batch());
  return in_seconds(t.step) / std::max(1.0, gb);
}
inline double gpu_seconds_per_sample(const scenario& s, const time_estimate& t) {
  return seconds_per_sample(s, t) * s.num_gpus;
}

// What each change does to the result (the own-card order's first key):
//  same_result: chunked cross-entropy computes the same loss in chunks (Liger-Kernel,
//    Hsu et al. 2024); checkpointing recomputes the forward, identical values at
//    ~33% more compute for full (Chen et al. 2016) and a few % for selective
//    (Korthikanti et al. 2022); paged AdamW is AdamW with its state in managed
//    memory (bitsandbytes docs); more accumulation at the same global batch is the
//    same update (layer norm has no batch statistics); ZeRO-Offload runs the same
//    Adam step on the CPU (Ren et al. 2021), ZeRO-3 Offload also streams the parameters
//    from host memory (Rajbhandari et al. 2021, ZeRO-Infinity); a smaller serving batch
//    serves the same tokens.
//  approximate: 8-bit AdamW keeps block-wise quantized moments, matching 32-bit on
//    the paper's benchmarks (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
//    Quantization"); LLM.int8 weights (Dettmers et al. 2022); FP8 KV cache (vLLM docs).
//  different_model: LoRA trains low-rank adapters instead of the weights (Hu et al.
//    2021); QLoRA also quantizes the base to NF4 (Dettmers et al. 2023); int4 weights
//    (GPTQ, Frantar et al. 2023).
//  different_data: a shorter sequence truncates the examples.
// More cards keep the result (ZeRO-3 / tensor parallelism shard the same computation).
constexpr change_effect change_tier(change_kind k) {
  switch (k) {
    case change_kind::optimizer_8bit:
    case change_kind::weights_int8:
    case change_kind::kv_cache_fp8: return change_effect::approximate;
    case change_kind::lora:
    case change_kind::qlora:
    case change_kind::weights_int4: return change_effect::different_model;
    case change_kind::shorter_sequence: return change_effect::different_data;
    default: return change_effect::same_result;
  }
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
      if (s.chunked_loss || s.fused_linear_loss) return false;  // the fused head and loss keep no logits to chunk
      s.chunked_loss = true;
      text = "chunked cross-entropy loss";
      return true;
    case change_kind::selective_checkpointing:
      if (s.ckpt != checkpointing::none || !profile_of(s.fw).selective_checkpointing) return false;
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
      if (is_peft(s.meth)) return false;
      s.meth = method::lora;
      text = "LoRA r=" + n2s(s.lora.rank) + " on " + lora_targets_text(s.lora.targets);
      return true;
    case change_kind::qlora:
      if (s.meth == method::qlora) return false;
      s.meth = method::qlora;
      s.quant.reset();  // QLoRA's default: NF4 with double quantization
      if (precision_of(s) == precision::fp32 || precision_of(s) == precision::tf32) s.prec = precision::bf16_mixed;
      text = "QLoRA r=" + n2s(s.lora.rank) + " on " + lora_targets_text(s.lora.targets) + " (NF4 base, double quantization)";
      return true;
    case change_kind::cpu_offload:
      if (s.parallel.offload_optimizer != offload::none) return false;
      s.parallel.zero = std::max(s.parallel.zero, 2);
      s.parallel.offload_optimizer = offload::cpu;
      text = "CPU offload of the optimizer state (ZeRO-Offload, ZeRO-" + n2s(s.parallel.zero) + ")";
      return true;
    case change_kind::cpu_offload_all:
      // Parameters too: ZeRO-3 with offload_param, or FSDP's CPU offload (which moves all three).
      if (s.parallel.offload_params != offload::none || !profile_of(s.fw).allows_zero(3)) return false;
      s.parallel.zero = 3;
      s.parallel.offload_optimizer = s.parallel.offload_params = offload::cpu;
      text = "CPU offload of parameters, gradients and optimizer state (ZeRO-3 Offload)";
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
      // Named by the kernel the engine runs for them (kernels.hpp: LLM.int8 under transformers, W8A8 in vLLM).
      text = std::string(k == change_kind::weights_int8 ? "int8" : "int4") + " weights (" + std::string(kernel_for(s).name) + ")";
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
inline bool shrink_serving_batch(run& probe, scenario& s, std::string& text, const plan_margin& g) {
  if (s.inference.batch <= 1) return false;
  const std::int64_t b0 = s.inference.batch;
  const auto best = largest_true(b0 - 1, [&](std::int64_t b) {
    s.inference.batch = b;
    return fits_as(probe, s, g);
  });
  s.inference.batch = best.value_or(1);
  text = "serving batch " + n2s(b0) + " → " + n2s(s.inference.batch);
  return true;
}

// Training: the largest divisor of mb×ga below mb that fits (fastest first: fewer
// accumulation steps), keeping the global batch; 1 when none does.
inline bool shrink_micro_batch(run& probe, scenario& s, std::string& text, const plan_margin& g) {
  if (s.micro_batch <= 1 || s.optimizer_in_backward) return false;
  const std::int64_t mb0 = s.micro_batch, ga0 = s.grad_accum;
  const std::int64_t per_replica = mb0 * ga0;
  std::int64_t chosen = 1;
  for (std::int64_t d = mb0 - 1; d >= 1; --d) {
    if (per_replica % d != 0) continue;
    s.micro_batch = d;
    s.grad_accum = per_replica / d;
    if (fits_as(probe, s, g)) { chosen = d; break; }
  }
  s.micro_batch = chosen;
  s.grad_accum = per_replica / chosen;
  text = "micro-batch " + n2s(mb0) + " → " + n2s(chosen) + " with grad_accum " + n2s(ga0) + " → " +
         n2s(s.grad_accum) + " (same global batch)";
  return true;
}

// Training: the longest sequence shorter than the run's that fits (a multiple of
// the divisibility unit: sp → tp, cp → 2·cp); memory is non-decreasing in it (P1).
// Not applicable when none fits or the run is a ViT (fixed token count).
inline bool shorten_sequence(run& probe, scenario& s, std::string& text, const plan_margin& g) {
  if (s.work == workload::infer || probe.model().is_vit()) return false;
  std::int64_t step = 1;
  if (s.parallel.sp_enabled()) step = std::lcm(step, std::int64_t{s.parallel.tp_size()});
  if (s.parallel.cp > 1) step = std::lcm(step, std::int64_t{2} * s.parallel.cp);
  const std::int64_t seq0 = s.seq_len;
  const auto k = largest_true((seq0 - 1) / step, [&](std::int64_t kk) {
    s.seq_len = kk * step;
    return fits_as(probe, s, g);
  });
  s.seq_len = seq0;
  if (!k) return false;
  s.seq_len = *k * step;
  text = "sequence " + n2s(seq0) + " → " + n2s(s.seq_len) + " tokens (longer examples truncated)";
  return true;
}

// Training: ZeRO-3 data parallelism on the smallest GPU count that fits; the
// global batch is kept where grad_accum allows it.
inline bool spread_zero3(run& probe, scenario& s, std::string& text, const suggest_options& o) {
  if (s.work == workload::infer) return false;
  const std::int64_t samples = s.global_batch();
  s.parallel.zero = 3;
  const gpu_count_fit g = min_gpus_for(probe, s, 3, max_cards_of(s.gpu, o.max_gpus), o.margin);
  if (!g.applicable) return false;
  s.num_gpus = g.gpus.value_or(std::max(g.searched_up_to, s.model_parallel()));
  const std::int64_t per_step = s.micro_batch * s.dp();
  if (per_step > 0 && samples % per_step == 0) s.grad_accum = std::max<std::int64_t>(1, samples / per_step);
  text = "ZeRO-3 across " + n2s(s.num_gpus) + " × " + s.gpu.id;
  if (!g.gpus) text += " (none fits up to " + n2s(g.searched_up_to) + ")";
  return true;
}

// Serving: the smallest tensor-parallel degree (a power of two up to the heads) that fits.
inline bool spread_tensor_parallel(run& probe, scenario& s, std::string& text, const suggest_options& o) {
  if (s.work != workload::infer) return false;
  std::optional<int> found;
  const int max_cards = max_cards_of(s.gpu, o.max_gpus);
  for (int tp = 2; tp <= max_cards && tp <= probe.model().heads; tp *= 2) {
    scenario t = s;
    t.parallel.tp = tp;
    t.num_gpus = tp * s.parallel.pp;
    if (t.num_gpus > max_cards) break;
    if (fits_as(probe, t, o.margin)) { found = tp; break; }
  }
  if (!found) return false;
  s.parallel.tp = *found;
  s.num_gpus = *found * s.parallel.pp;
  text = "tensor parallelism across " + n2s(s.num_gpus) + " × " + s.gpu.id;
  return true;
}

// Applies one change to `s` (probe: a scratch run of the model for the searching
// changes); false when it does not apply. Sets the description.
inline bool apply_change(run& probe, change_kind k, scenario& s, std::string& text, const suggest_options& o) {
  switch (k) {
    case change_kind::smaller_micro_batch:
      return s.work == workload::infer ? shrink_serving_batch(probe, s, text, o.margin)
                                       : shrink_micro_batch(probe, s, text, o.margin);
    case change_kind::shorter_sequence: return shorten_sequence(probe, s, text, o.margin);
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
    case change_kind::cpu_offload:
    case change_kind::cpu_offload_all: return 5;
    default: return 100 + static_cast<int>(k);
  }
}

inline bool nan_less(double a, double b) {
  const bool an = std::isnan(a), bn = std::isnan(b);
  if (an != bn) return bn;  // numbers before NaN
  if (an) return false;
  return a < b;
}

// Ranking (docs/planner.md, "suggest"): fitting rows first; then scope — own card,
// more cards, other GPUs. Own card: by effect (how much the result changes), then
// wall time per sample (NaN last). More cards: fewer GPUs, then effect, then time.
// Other GPUs: priced rows first, by run cost when both have one, else by price
// per GPU-hour; unpriced rows by usable memory. Ties: fewer changes, change_kind
// order, less device memory, GPU id.
inline bool suggestion_less(const suggestion& a, const suggestion& b) {
  if (a.fits != b.fits) return a.fits;
  if (a.scope != b.scope) return a.scope < b.scope;
  if (a.scope == suggestion_scope::more_cards && a.run.num_gpus != b.run.num_gpus) return a.run.num_gpus < b.run.num_gpus;
  if (a.scope == suggestion_scope::other_gpu) {
    if (a.price_per_gpu_hour.has_value() != b.price_per_gpu_hour.has_value()) return a.price_per_gpu_hour.has_value();
    if (a.run_cost && b.run_cost && *a.run_cost != *b.run_cost) return *a.run_cost < *b.run_cost;
    if (a.price_per_gpu_hour && b.price_per_gpu_hour && *a.price_per_gpu_hour != *b.price_per_gpu_hour)
      return *a.price_per_gpu_hour < *b.price_per_gpu_hour;
    const double ma = in_bytes(a.run.gpu.usable_memory), mb = in_bytes(b.run.gpu.usable_memory);
    if (ma != mb) return ma < mb;
  }
  if (a.effect != b.effect) return a.effect < b.effect;
  if (nan_less(a.time_change, b.time_change)) return true;
  if (nan_less(b.time_change, a.time_change)) return false;
  if (a.changes.size() != b.changes.size()) return a.changes.size() < b.changes.size();
  if (a.changes != b.changes) return a.changes < b.changes;
  if (in_bytes(a.memory.device) != in_bytes(b.memory.device)) return in_bytes(a.memory.device) < in_bytes(b.memory.device);
  return a.run.gpu.id < b.run.gpu.id;
}

// The original run's time per sample, wall-clock and GPU-seconds.
struct base_costs {
  double wall = 0, gpu = 0;
};

// Estimates a suggestion's changed run against the original; false when the
// changed run is not a valid run. Sets fits (under the margin), scope, effect,
// the time ratios and, for another GPU with a price, the price and run cost.
inline bool estimate_change(run& probe, suggestion& g, const scenario& base, const base_costs& c0,
                            const suggest_options& o) {
  try {
    probe.edit([&](scenario& x) { x = g.run; });
    g.memory = estimate_memory(probe);
    g.time = estimate_time(probe);
  } catch (const config_error&) {
    return false;
  }
  g.fits = plans_fit(probe, g.memory, o.margin);
  // Offloaded state needs host RAM: say how much, and when it exceeds the node's.
  if (in_bytes(g.memory.host) > 0 && (g.run.parallel.offload_optimizer != offload::none || g.run.parallel.offload_params != offload::none)) {
    g.description += "; needs " + n2s(std::llround(std::ceil(in_gib(g.memory.host)))) + " GiB host RAM";
    if (in_bytes(g.memory.host) > in_bytes(g.run.cluster.host_memory_per_node))
      g.description += " (more than the " + n2s(std::llround(in_gib(g.run.cluster.host_memory_per_node))) + " GiB per node assumed)";
  }
  g.device_quantile = device_quantile(probe, g.memory, o.margin);
  g.headroom_kept = margin_headroom(o.margin, g.memory.capacity);
  g.scope = g.run.gpu.id != base.gpu.id          ? suggestion_scope::other_gpu
            : g.run.num_gpus > base.num_gpus ? suggestion_scope::more_cards
                                             : suggestion_scope::own_card;
  g.effect = change_effect::same_result;
  for (const change_kind k : g.changes) g.effect = std::max(g.effect, change_tier(k));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double gs = gpu_seconds_per_sample(g.run, g.time), ws = seconds_per_sample(g.run, g.time);
  g.time_cost = (c0.gpu > 0 && gs > 0) ? gs / c0.gpu : nan;
  g.time_change = (c0.wall > 0 && ws > 0) ? ws / c0.wall : nan;
  if (g.scope == suggestion_scope::other_gpu) {
    if (auto it = o.price_per_gpu_hour.find(g.run.gpu.id); it != o.price_per_gpu_hour.end()) {
      g.price_per_gpu_hour = it->second;
      if (g.time.gpu_hours > 0) g.run_cost = g.time.gpu_hours * it->second;
    }
  }
  return true;
}

// Every applicable single change, fitting or not (bigger GPUs excepted).
inline std::vector<suggestion> single_changes(run& probe, const scenario& s, const base_costs& c0,
                                              const suggest_options& o) {
  constexpr std::array<change_kind, 16> kSingles{
      change_kind::chunked_loss, change_kind::selective_checkpointing, change_kind::full_checkpointing,
      change_kind::optimizer_8bit, change_kind::paged_optimizer, change_kind::smaller_micro_batch,
      change_kind::lora, change_kind::qlora, change_kind::cpu_offload, change_kind::cpu_offload_all, change_kind::shorter_sequence,
      change_kind::zero3_gpus, change_kind::weights_int8, change_kind::weights_int4, change_kind::kv_cache_fp8,
      change_kind::tensor_parallel_gpus};
  std::vector<suggestion> out;
  for (const change_kind k : kSingles) {
    suggestion g;
    g.run = s;
    if (!apply_change(probe, k, g.run, g.description, o)) continue;
    g.changes = {k};
    if (estimate_change(probe, g, s, c0, o)) out.push_back(std::move(g));
  }
  return out;
}

// Other GPUs from the list with more usable memory than the run's, as the run
// is (same count and layout): those that fit with the margin, cheapest first
// (suggestion_less), at most max_gpu_rows.
inline void bigger_gpus(run& probe, const scenario& s, const base_costs& c0, const suggest_options& o,
                        std::vector<suggestion>& out) {
  std::vector<suggestion> gpus;
  for (const gpu_spec& gpu : o.gpus) {
    if (in_bytes(gpu.usable_memory) <= in_bytes(s.gpu.usable_memory) || gpu.id == s.gpu.id) continue;
    suggestion g;
    g.run = s;
    g.run.gpu = gpu;
    g.changes = {change_kind::bigger_gpu};
    g.description = (s.num_gpus > 1 ? n2s(s.num_gpus) + " × " : std::string()) + gpu.id + " (" + gpu.name + ")";
    if (estimate_change(probe, g, s, c0, o) && g.fits) gpus.push_back(std::move(g));
  }
  std::stable_sort(gpus.begin(), gpus.end(), suggestion_less);
  const std::size_t keep = static_cast<std::size_t>(std::max(0, o.max_gpu_rows));
  for (std::size_t i = 0; i < gpus.size() && i < keep; ++i) out.push_back(std::move(gpus[i]));
}

// Two changes where neither alone fits but the pair does. Searching changes
// (micro-batch reduction, shorter sequence, ZeRO-3 GPU count) are applied last,
// so they choose under the other change; ZeRO-3 always last.
inline void change_pairs(run& probe, const scenario& s, const base_costs& c0, const suggest_options& o,
                         const std::vector<suggestion>& singles, std::vector<suggestion>& out) {
  const auto searching = [](change_kind k) {
    return k == change_kind::smaller_micro_batch || k == change_kind::shorter_sequence || k == change_kind::zero3_gpus;
  };
  for (std::size_t i = 0; i < singles.size(); ++i) {
    for (std::size_t j = i + 1; j < singles.size(); ++j) {
      const change_kind a = singles[i].changes[0], b = singles[j].changes[0];
      if (singles[i].fits || singles[j].fits) continue;
      if (change_group(a) == change_group(b)) continue;
      if (a == change_kind::tensor_parallel_gpus || b == change_kind::tensor_parallel_gpus) continue;
      suggestion g;
      g.run = s;
      std::string ta, tb;
      const bool b_first = b == change_kind::zero3_gpus ? false : searching(a);
      if (b_first) {
        if (!apply_change(probe, b, g.run, tb, o) || !apply_change(probe, a, g.run, ta, o)) continue;
      } else {
        if (!apply_change(probe, a, g.run, ta, o) || !apply_change(probe, b, g.run, tb, o)) continue;
      }
      g.changes = {a, b};
      g.description = b_first ? tb + " + " + ta : ta + " + " + tb;
      if (estimate_change(probe, g, s, c0, o) && g.fits) out.push_back(std::move(g));
    }
  }
}

}  // namespace detail

// What would make the run fit with the margin (options.margin): every single
// change that does, and, with options.pairs, two-change rows where neither
// change does alone but the pair does; other GPUs of the list that do (at most
// max_gpu_rows). Only fitting rows are returned, sorted by
// detail::suggestion_less: own card, more cards, other GPUs (docs/planner.md).
inline std::vector<suggestion> suggest(const run& r, const suggest_options& o = {}) {
  detail::require_valid(r);
  detail::check_margin(o.margin, "suggest.margin");
  if (o.max_gpus < 1) detail::fail("suggest.max_gpus", "must be at least 1 (got " + std::to_string(o.max_gpus) + ")");
  for (const auto& [id, price] : o.price_per_gpu_hour)
    if (!(price >= 0) || !std::isfinite(price))
      detail::fail("suggest.price_per_gpu_hour." + id, "must be a non-negative number (got " + detail::num(price) + ")");
  const scenario& s = r.settings();
  const time_estimate t0 = estimate_time(r);
  const detail::base_costs c0{detail::seconds_per_sample(s, t0), detail::gpu_seconds_per_sample(s, t0)};
  run probe = r;  // every changed run is estimated on this copy, edited in place
  const std::vector<suggestion> singles = detail::single_changes(probe, s, c0, o);
  std::vector<suggestion> out;
  for (const auto& g : singles)
    if (g.fits) out.push_back(g);
  detail::bigger_gpus(probe, s, c0, o, out);
  if (o.pairs) detail::change_pairs(probe, s, c0, o, singles, out);
  std::stable_sort(out.begin(), out.end(), detail::suggestion_less);
  return out;
}

// Convenience: validates (config_error naming the field), then suggest(run).
inline std::vector<suggestion> suggest(const architecture& m, const scenario& s, const suggest_options& o = {}) {
  return suggest(run(m, s), o);
}

}  // namespace gpuplan
