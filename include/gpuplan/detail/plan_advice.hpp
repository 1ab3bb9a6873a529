// detail/plan_advice.hpp — suggest ("what would make it fit") and recommend
// ("which GPU and how many"), part of plan.hpp. Not allocation-free (they build
// descriptions and scenarios) but each calls the estimators only O(changes ×
// log) or O(GPUs × counts) times; recommend runs one search per (GPU, count).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/plan.hpp"

namespace gpuplan {

// ===========================================================================
// suggest
// ===========================================================================

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
  std::vector<gpu_spec> gpus;  // candidates for bigger_gpu (the CLI passes the catalog)
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
    out += kLinearNames[i];
  }
  return out;
}

struct evaluated_run {
  memory_breakdown memory;
  time_estimate time;
};
// Validates and estimates; nullopt when the changed run is not a valid run.
inline std::optional<evaluated_run> try_estimate(const architecture& m, const scenario& s) {
  try {
    validate(m, s);
    return evaluated_run{estimate_memory(m, s), estimate_time(m, s)};
  } catch (const config_error&) {
    return std::nullopt;
  }
}

// Applies one change to `s`; returns false when it does not apply. Appends a description.
inline bool apply_change(const architecture& m, change_kind k, scenario& s, std::string& text,
                         const suggest_options& o) {
  const bool infer = s.work == workload::infer;
  auto n2s = [](std::int64_t v) { return std::to_string(v); };
  switch (k) {
    case change_kind::chunked_loss:
      if (infer || s.chunked_loss) return false;
      s.chunked_loss = true;
      text = "chunked cross-entropy loss";
      return true;
    case change_kind::selective_checkpointing:
      if (infer || s.ckpt != checkpointing::none) return false;
      s.ckpt = checkpointing::selective;
      text = "selective activation checkpointing";
      return true;
    case change_kind::full_checkpointing:
      if (infer || s.ckpt == checkpointing::full) return false;
      s.ckpt = checkpointing::full;
      text = "full activation checkpointing";
      return true;
    case change_kind::optimizer_8bit:
      if (infer || (s.opt != optimizer::adamw && s.opt != optimizer::adam && s.opt != optimizer::paged_adamw_32bit))
        return false;
      s.opt = s.opt == optimizer::paged_adamw_32bit ? optimizer::paged_adamw_8bit : optimizer::adamw_8bit;
      text = "8-bit AdamW (bitsandbytes)";
      return true;
    case change_kind::paged_optimizer:
      if (infer) return false;
      if (s.opt == optimizer::adamw || s.opt == optimizer::adam) s.opt = optimizer::paged_adamw_32bit;
      else if (s.opt == optimizer::adamw_8bit) s.opt = optimizer::paged_adamw_8bit;
      else return false;
      text = std::string("paged AdamW (") + std::string(to_string(s.opt)) + ")";
      return true;
    case change_kind::smaller_micro_batch: {
      if (infer) {
        if (s.inference.batch <= 1) return false;
        const std::int64_t b0 = s.inference.batch;
        auto best = largest_true(b0 - 1, [&](std::int64_t b) {
          s.inference.batch = b;
          return fits_quietly(m, s);
        });
        s.inference.batch = best.value_or(1);
        text = "serving batch " + n2s(b0) + " → " + n2s(s.inference.batch);
        return true;
      }
      if (s.micro_batch <= 1 || s.optimizer_in_backward) return false;
      const std::int64_t mb0 = s.micro_batch, ga0 = s.grad_accum;
      const std::int64_t per_replica = mb0 * ga0;
      std::int64_t chosen = 1;
      // Largest divisor of mb×ga below mb that fits (fastest first: fewer accumulation steps).
      for (std::int64_t d = mb0 - 1; d >= 1; --d) {
        if (per_replica % d != 0) continue;
        s.micro_batch = d;
        s.grad_accum = per_replica / d;
        if (fits_quietly(m, s)) { chosen = d; break; }
      }
      s.micro_batch = chosen;
      s.grad_accum = per_replica / chosen;
      text = "micro-batch " + n2s(mb0) + " → " + n2s(chosen) + " with grad_accum " + n2s(ga0) + " → " +
             n2s(s.grad_accum) + " (same global batch)";
      return true;
    }
    case change_kind::lora:
      if (infer || (s.meth != method::full && s.meth != method::freeze)) return false;
      s.meth = method::lora;
      text = "LoRA r=" + n2s(s.lora.rank) + " on " + lora_targets_text(s.lora.targets);
      return true;
    case change_kind::qlora:
      if (infer || s.meth == method::qlora) return false;
      s.meth = method::qlora;
      s.quant.reset();  // QLoRA's default: NF4 with double quantization
      if (s.prec == precision::fp32 || s.prec == precision::tf32) s.prec = precision::bf16_mixed;
      text = "QLoRA r=" + n2s(s.lora.rank) + " on " + lora_targets_text(s.lora.targets) + " (NF4 base, double quantization)";
      return true;
    case change_kind::cpu_offload:
      if (infer || s.parallel.offload_optimizer != offload::none) return false;
      s.parallel.zero = std::max(s.parallel.zero, 2);
      s.parallel.offload_optimizer = offload::cpu;
      text = "CPU offload of the optimizer state (ZeRO-Offload, ZeRO-" + n2s(s.parallel.zero) + ")";
      return true;
    case change_kind::zero3_gpus:
    case change_kind::tensor_parallel_gpus: {
      if (infer != (k == change_kind::tensor_parallel_gpus)) return false;
      if (!infer) {
        // ZeRO-3 data parallelism; the global batch is kept where grad_accum allows it.
        const std::int64_t samples = s.global_batch();
        s.parallel.zero = 3;
        const gpu_count_fit g = min_gpus_for(m, s, 3, o.max_gpus);
        if (!g.applicable) return false;
        s.num_gpus = g.gpus.value_or(std::max(g.searched_up_to, s.model_parallel()));
        const std::int64_t per_step = s.micro_batch * s.dp();
        if (per_step > 0 && samples % per_step == 0) s.grad_accum = std::max<std::int64_t>(1, samples / per_step);
        text = "ZeRO-3 across " + n2s(s.num_gpus) + " GPUs";
        if (!g.gpus) text += " (none fits up to " + n2s(g.searched_up_to) + ")";
        return true;
      }
      // Serving: the smallest tensor-parallel degree dividing the heads that fits.
      std::optional<int> found;
      for (int tp = 2; tp <= o.max_gpus && tp <= m.heads; tp *= 2) {
        scenario t = s;
        t.parallel.tp = tp;
        t.num_gpus = tp * s.parallel.pp;
        if (t.num_gpus > o.max_gpus) break;
        try { validate(m, t); } catch (const config_error&) { continue; }
        if (fits_quietly(m, t)) { found = tp; break; }
      }
      if (!found) return false;
      s.parallel.tp = *found;
      s.num_gpus = *found * s.parallel.pp;
      text = "tensor parallelism across " + n2s(s.num_gpus) + " GPUs";
      return true;
    }
    case change_kind::weights_int8:
    case change_kind::weights_int4: {
      if (!infer) return false;
      const dtype d = k == change_kind::weights_int8 ? dtype::int8 : dtype::int4;
      if (s.quant && s.quant->weights == d) return false;
      s.quant = quantization{.weights = d};
      text = k == change_kind::weights_int8 ? "int8 weights (LLM.int8)" : "int4 weights (GPTQ/AWQ, group 128)";
      return true;
    }
    case change_kind::kv_cache_fp8:
      if (!infer || s.inference.kv_cache_dtype == dtype::fp8_e4m3) return false;
      s.inference.kv_cache_dtype = dtype::fp8_e4m3;
      text = "FP8 KV cache";
      return true;
    case change_kind::bigger_gpu:
      return false;  // handled by suggest() (one row per chosen GPU)
  }
  return false;
}

// The mutually exclusive groups for pairs (two changes from one group never combine).
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

}  // namespace detail

// What would make the run fit: single changes (every applicable one, fitting or
// not) and, with options.pairs, two-change rows where neither change fits alone
// but the pair does. Sorted by detail::suggestion_less (docs/planner.md).
inline std::vector<suggestion> suggest(const architecture& m, const scenario& s, const suggest_options& o = {}) {
  validate(m, s);
  const detail::evaluated_run base{estimate_memory(m, s), estimate_time(m, s)};
  const double base_cost = detail::gpu_seconds_per_sample(s, base.time);
  std::vector<suggestion> out;
  auto finish = [&](suggestion& g) -> bool {
    const auto e = detail::try_estimate(m, g.run);
    if (!e) return false;
    g.memory = e->memory;
    g.time = e->time;
    g.fits = e->memory.fits;
    const double c = detail::gpu_seconds_per_sample(g.run, g.time);
    g.time_cost = (base_cost > 0 && c > 0) ? c / base_cost : std::numeric_limits<double>::quiet_NaN();
    return true;
  };

  constexpr std::array<change_kind, 13> kLocal{
      change_kind::chunked_loss, change_kind::selective_checkpointing, change_kind::full_checkpointing,
      change_kind::optimizer_8bit, change_kind::paged_optimizer, change_kind::smaller_micro_batch,
      change_kind::lora, change_kind::qlora, change_kind::cpu_offload, change_kind::zero3_gpus,
      change_kind::weights_int8, change_kind::weights_int4, change_kind::kv_cache_fp8};
  std::vector<suggestion> singles;
  for (const change_kind k : kLocal) {
    suggestion g;
    g.run = s;
    if (!detail::apply_change(m, k, g.run, g.description, o)) continue;
    g.changes = {k};
    if (finish(g)) singles.push_back(g);
  }
  {
    suggestion g;
    g.run = s;
    if (detail::apply_change(m, change_kind::tensor_parallel_gpus, g.run, g.description, o)) {
      g.changes = {change_kind::tensor_parallel_gpus};
      if (finish(g)) singles.push_back(g);
    }
  }
  out = singles;

  // Bigger GPUs: the smallest that fits (ties: faster step, then id) and the
  // fastest that fits when different; if none fits, the largest.
  {
    std::vector<suggestion> gpus;
    for (const gpu_spec& gpu : o.gpus) {
      if (in_bytes(gpu.usable_memory) <= in_bytes(s.gpu.usable_memory) || gpu.id == s.gpu.id) continue;
      suggestion g;
      g.run = s;
      g.run.gpu = gpu;
      g.changes = {change_kind::bigger_gpu};
      g.description = "bigger GPU: " + gpu.id + " (" + gpu.name + ")";
      if (finish(g)) gpus.push_back(std::move(g));
    }
    auto mem = [](const suggestion& g) { return in_bytes(g.run.gpu.usable_memory); };
    auto step = [](const suggestion& g) { return in_seconds(g.time.step); };
    const suggestion* smallest = nullptr;
    const suggestion* fastest = nullptr;
    const suggestion* largest = nullptr;
    for (const auto& g : gpus) {
      if (!largest || mem(g) > mem(*largest) || (mem(g) == mem(*largest) && g.run.gpu.id < largest->run.gpu.id)) largest = &g;
      if (!g.fits) continue;
      if (!smallest || mem(g) < mem(*smallest) ||
          (mem(g) == mem(*smallest) && (step(g) < step(*smallest) || (step(g) == step(*smallest) && g.run.gpu.id < smallest->run.gpu.id))))
        smallest = &g;
      if (!fastest || step(g) < step(*fastest) || (step(g) == step(*fastest) && g.run.gpu.id < fastest->run.gpu.id)) fastest = &g;
    }
    if (smallest) out.push_back(*smallest);
    if (fastest && fastest != smallest) out.push_back(*fastest);
    if (!smallest && largest) out.push_back(*largest);
  }

  // Two changes where neither alone fits.
  if (o.pairs) {
    for (std::size_t i = 0; i < singles.size(); ++i) {
      for (std::size_t j = i + 1; j < singles.size(); ++j) {
        const change_kind a = singles[i].changes[0], b = singles[j].changes[0];
        if (singles[i].fits || singles[j].fits) continue;
        if (detail::change_group(a) == detail::change_group(b)) continue;
        if (a == change_kind::tensor_parallel_gpus || b == change_kind::tensor_parallel_gpus) continue;
        suggestion g;
        g.run = s;
        std::string ta, tb;
        // Searching changes (micro-batch reduction, ZeRO-3 GPU count) are applied
        // last, so they choose under the other change; ZeRO-3 always last.
        const bool b_first = b != change_kind::zero3_gpus &&
                             (a == change_kind::smaller_micro_batch || a == change_kind::zero3_gpus);
        if (b_first) {
          if (!detail::apply_change(m, b, g.run, tb, o) || !detail::apply_change(m, a, g.run, ta, o)) continue;
        } else {
          if (!detail::apply_change(m, a, g.run, ta, o) || !detail::apply_change(m, b, g.run, tb, o)) continue;
        }
        g.changes = {a, b};
        g.description = ta + " + " + tb;
        if (finish(g) && g.fits) out.push_back(std::move(g));
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), detail::suggestion_less);
  return out;
}

// ===========================================================================
// recommend
// ===========================================================================

struct cuda_version {
  int major = 0;
  int minor = 0;
  friend bool operator==(const cuda_version&, const cuda_version&) = default;
};

// The first CUDA toolkit that compiles for the GPU's compute capability
// (NVIDIA CUDA Toolkit release notes, first release listing each sm_XX target;
// src/data/gpus.md: sm_89 ≥ 11.8, sm_90 ≥ 12.0, sm_120 ≥ 12.8). sm_100 (B200)
// first shipped in 12.8 too. nullopt for non-NVIDIA or unknown capabilities.
constexpr std::optional<cuda_version> cuda_floor(const gpu_spec& g) {
  if (g.vendor != gpu_vendor::nvidia || g.cc_major <= 0) return std::nullopt;
  const int sm = g.sm();
  if (sm >= 120) return cuda_version{12, 8};
  if (sm >= 100) return cuda_version{12, 8};
  if (sm >= 90) return cuda_version{12, 0};
  if (sm >= 89) return cuda_version{11, 8};
  if (sm >= 87) return cuda_version{11, 4};
  if (sm >= 86) return cuda_version{11, 1};
  if (sm >= 80) return cuda_version{11, 0};
  if (sm >= 75) return cuda_version{10, 0};
  if (sm >= 72) return cuda_version{10, 0};
  if (sm >= 70) return cuda_version{9, 0};
  return std::nullopt;
}

// Sizing rules (docs/planner.md cites each).
inline constexpr int kCpuCoresPerGpuMin = 10;     // logical cores per GPU for data loading (guides: 10–12)
inline constexpr int kCpuCoresPerGpu = 12;
inline constexpr double kHostRamPerGpuMemory = 2.0;  // host RAM >= 2 × total GPU memory
inline constexpr double kCpuSocketWatts = 350.0;   // server CPU TDP per socket (EPYC/Xeon class)
inline constexpr int kCpuSocketsPer8Gpus = 2;      // dual-socket 8-GPU servers (DGX/HGX)
inline constexpr double kPsuMargin = 1.30;         // +30% power-supply margin
inline constexpr double kCommFractionNeedsNvlink = 0.10;  // exposed comm > 10% of the step

struct system_sizing {
  int nodes = 1;
  int cpu_cores_min = 0;     // logical cores
  int cpu_cores = 0;         // recommended
  Bytes host_ram = bytes(0);  // whole system (all nodes)
  double gpu_watts = 0;
  double cpu_watts = 0;
  double psu_watts = 0;           // (GPU + CPU TDP) × 1.3, whole system
  double psu_watts_per_node = 0;
  std::optional<cuda_version> cuda_min;
  bool nvlink_present = false;
  bool nvlink_needed = false;  // tp > 1, or exposed communication > 10% of the step
  std::string ecc;             // the catalog's yes | no | soft-toggle | unverified
  std::vector<std::string> notes;
};

inline system_sizing size_system(const scenario& run, const memory_breakdown& mem, const time_estimate& t) {
  system_sizing z;
  const gpu_spec& g = run.gpu;
  const int n = run.num_gpus;
  const int per_node = std::max(1, run.cluster.gpus_per_node);
  z.nodes = (n + per_node - 1) / per_node;
  z.cpu_cores_min = kCpuCoresPerGpuMin * n;
  z.cpu_cores = kCpuCoresPerGpu * n;
  z.host_ram = bytes(kHostRamPerGpuMemory * n * in_bytes(g.memory) + z.nodes * in_bytes(mem.host));
  const int sockets = kCpuSocketsPer8Gpus * ((n + 7) / 8);
  z.gpu_watts = g.tdp_watts * n;
  z.cpu_watts = kCpuSocketWatts * sockets;
  z.psu_watts = (z.gpu_watts + z.cpu_watts) * kPsuMargin;
  const int node_gpus = std::min(n, per_node);
  z.psu_watts_per_node = (g.tdp_watts * node_gpus + kCpuSocketWatts * kCpuSocketsPer8Gpus * ((node_gpus + 7) / 8)) * kPsuMargin;
  z.cuda_min = cuda_floor(g);
  z.nvlink_present = g.has_nvlink();
  const double step = in_seconds(t.step);
  const double comm_fraction = step > 0 ? in_seconds(t.breakdown.communication) / step : 0.0;
  z.nvlink_needed = run.parallel.tp > 1 || (run.dp() > 1 && comm_fraction > kCommFractionNeedsNvlink);
  z.ecc = g.ecc;
  if (z.nvlink_needed && !z.nvlink_present)
    z.notes.push_back(run.parallel.tp > 1
                          ? "no NVLink: tensor-parallel all-reduces run over PCIe every layer"
                          : "no NVLink: gradient all-reduce over PCIe is a large part of the step");
  if (z.nvlink_present && g.link_group < n && (run.parallel.tp > g.link_group))
    z.notes.push_back("tp exceeds the NVLink group of " + std::to_string(g.link_group) + " GPUs (" + g.link + ")");
  if (g.ecc == "no" && (n > 1 || in_hours(t.total) > 24))
    z.notes.push_back("no ECC: a memory bit-flip goes undetected on a long multi-GPU run; checkpoint often");
  if (g.ecc == "soft-toggle")
    z.notes.push_back("ECC is off by default on this card (nvidia-smi -e 1 enables it at some bandwidth cost)");
  if (in_bytes(mem.host) > in_bytes(run.cluster.host_memory_per_node))
    z.notes.push_back("offload needs more host RAM per node than the cluster's host_memory_per_node");
  return z;
}

enum class recommend_rank : std::uint8_t {
  cost,  // cheapest first (rows without a price after priced rows, by time)
  time,  // fastest first
};

struct recommend_options {
  std::vector<gpu_spec> gpus;                             // candidates (the CLI passes the catalog)
  std::map<std::string, double, std::less<>> price_per_gpu_hour;  // by GPU id; absent: no cost
  std::optional<double> tokens{};        // total tokens; else epochs × dataset_tokens; else the template's
  double epochs = 1;
  std::optional<double> dataset_tokens{};
  Seconds deadline = seconds(24 * 3600.0);  // the guides' "a day" rule
  std::optional<double> budget{};            // currency, same as the prices
  int max_gpus = 64;                         // counts 1, 2, 4, ... up to this
  recommend_rank rank = recommend_rank::cost;
  bool keep_late = true;  // keep rows past the deadline / over budget (ranked after)
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
}  // namespace detail

// Ranks GPU types × counts (powers of two up to max_gpus) for a training
// workload: each (GPU, count) gets its fastest fitting layout from search()
// (top-1, same global batch as the template); configurations that fit nowhere
// are dropped. Order: meets deadline, within budget, then cost (or time), then
// time, fewer GPUs, GPU id.
inline std::vector<recommendation> recommend(const architecture& m, const scenario& tmpl, const recommend_options& o) {
  if (tmpl.work != workload::train) detail::fail("recommend", "ranks training runs only (got workload infer)");
  if (o.max_gpus < 1 || o.max_gpus > kMaxGpus) detail::fail("recommend.max_gpus", "must be between 1 and " + std::to_string(kMaxGpus) + " (got " + std::to_string(o.max_gpus) + ")");
  if (!(in_seconds(o.deadline) > 0)) detail::fail("recommend.deadline", "must be positive (got " + detail::num(in_seconds(o.deadline)) + " s)");
  if (o.budget && !(*o.budget >= 0)) detail::fail("recommend.budget", "must be non-negative (got " + detail::num(*o.budget) + ")");
  if (!(o.epochs > 0)) detail::fail("recommend.epochs", "must be positive (got " + detail::num(o.epochs) + ")");
  for (const auto& [id, price] : o.price_per_gpu_hour)
    if (!(price >= 0) || !std::isfinite(price)) detail::fail("recommend.price_per_gpu_hour." + id, "must be a non-negative number (got " + detail::num(price) + ")");
  double tokens = 0;
  if (o.tokens) tokens = *o.tokens;
  else if (o.dataset_tokens) tokens = o.epochs * *o.dataset_tokens;
  else if (tmpl.tokens) tokens = *tmpl.tokens;
  else detail::fail("recommend.tokens", "a workload needs tokens (or epochs × dataset_tokens)");
  if (!(tokens >= 1) || !std::isfinite(tokens)) detail::fail("recommend.tokens", "must be at least 1 (got " + detail::num(tokens) + ")");
  const std::int64_t gb = tmpl.micro_batch * tmpl.grad_accum * std::max(1, tmpl.dp());

  std::vector<recommendation> out;
  for (const gpu_spec& gpu : o.gpus) {
    for (int n = 1; n <= o.max_gpus; n *= 2) {
      scenario t = tmpl;
      t.gpu = gpu;
      t.num_gpus = n;
      t.tokens = tokens;
      search_result sr;
      search_options so;
      so.top_k = 1;
      so.global_batch = gb;
      try {
        sr = search(m, t, so);
      } catch (const config_error&) {
        break;  // e.g. a precision this GPU cannot run: no count helps
      }
      if (sr.rows.empty()) continue;
      const search_row& row = sr.rows.front();
      recommendation r;
      r.gpu = gpu;
      r.count = n;
      r.run = row.run;
      r.memory = row.memory;
      r.time = row.time;
      // Steps to train `tokens` at global batch × seq_len tokens per step.
      const double steps = tokens / (static_cast<double>(gb) * static_cast<double>(t.seq_len));
      r.wall = seconds(steps * in_seconds(row.time.step));
      r.gpu_hours = in_hours(r.wall) * n;
      if (auto it = o.price_per_gpu_hour.find(gpu.id); it != o.price_per_gpu_hour.end()) r.cost = r.gpu_hours * it->second;
      r.meets_deadline = in_seconds(r.wall) <= in_seconds(o.deadline);
      r.within_budget = !o.budget || (r.cost && *r.cost <= *o.budget);
      if (!o.budget) r.within_budget = true;
      r.system = size_system(r.run, r.memory, r.time);
      if (!o.keep_late && (!r.meets_deadline || !r.within_budget)) continue;
      out.push_back(std::move(r));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](const recommendation& a, const recommendation& b) { return detail::recommendation_less(a, b, o.rank); });
  return out;
}

}  // namespace gpuplan
