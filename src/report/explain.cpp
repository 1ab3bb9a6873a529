// report/explain.cpp — `gpuplan explain`: each term of the estimate with its value,
// formula and source, and the framework profile's rules that change the run.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/framework_rules.hpp"
#include "gpuplan/io/report.hpp"

namespace gpuplan::io {
using nlohmann::json;

// Formula and source of each term. Wording follows docs/memory-model.md and
// docs/time-model.md (owned by the memory and time authors); keep them in step.

const std::vector<term_info>& memory_terms() {
  // Symbols as in docs/memory-model.md: Ψ parameters per GPU, Ψ_t trainable, N the
  // ZeRO/FSDP sharding degree, T tokens per GPU per micro-batch, e activation bytes.
  static const std::vector<term_info> terms = {
      {"weights_bytes", "Weights",
       "Ψ_linear·bits(q)/8 + Ψ_other·w_e + Ψ_adapters·w_e (+1 B/param fp8 copy); ÷ tp, ep, pp stage; "
       "ZeRO-3/FSDP: W/N + w_e·largest_layer",
       "dtype.hpp bits_per_element (QLoRA §3, LLM.int8, GPTQ); Megatron-LM; DeepSpeed estimate_zero3"},
      {"master_weights_bytes", "Master weights",
       "4·Ψ_t for fp16/bf16/fp8-mixed, none for fp32 and bf16-pure; under ZeRO ≥ 1 reported in optimizer",
       "Micikevicius et al. 2018; Rajbhandari et al. 2020 (ZeRO)"},
      {"gradients_bytes", "Gradients",
       "g_e·Ψ_t; ZeRO-1/2 + 4Ψ_t/N fp32 partition; ZeRO-3 g_e·largest_layer + 4Ψ_t/N; "
       "optimizer-in-backward: largest tensor only",
       "DeepSpeed stage_1_and_2.py / stage3.py estimators; torchtune optimizer_in_bwd"},
      {"optimizer_bytes", "Optimizer state",
       "Ψ_t × bytes/param (AdamW 2·s_e, 8-bit AdamW 2.031, SGD-momentum and Lion s_e, Adafactor factored) "
       "÷ N under ZeRO ≥ 1; paged state outside the allocator",
       "torch.optim; Dettmers et al. 2022 (8-bit); Shazeer & Stern 2018; Chen et al. 2023 (Lion)"},
      {"activations_bytes", "Activations",
       "Σ blocks T × bytes saved per token (norms, q/k/v/o, MLP intermediates, masks; eager adds the s² "
       "softmax terms); checkpointing, tp/sp, cp, 1F1B in-flight micro-batches",
       "Korthikanti et al. 2022 §4 and Table 2; Narayanan et al. 2021 §2.2; measured with saved_tensors_hooks"},
      {"transient_bytes", "Transient buffers",
       "largest working set at the peak phase: loss (e+8)·V·T forward / 12·V·T backward, one block's "
       "backward, ZeRO-3 gathered + prefetched block, reduce bucket, optimizer temporaries",
       "PyTorch cross_entropy; torchtune chunked CE; DeepSpeed stage-3 prefetch and reduce bucket"},
      {"overhead_bytes", "Framework overhead",
       "CUDA context 1343 MiB + NCCL 512 MiB when num_gpus > 1 + cuBLAS workspace",
       "Hugging Face model-memory anatomy; NCCL_BUFFSIZE × channels × peers"},
      {"kv_cache_bytes", "KV cache",
       "2 · L_dec · max(1, kv_heads/tp) · d_head · kv dtype bytes × (prompt + gen) × batch",
       "Pope et al. 2022 (Efficiently Scaling Transformer Inference)"},
      {"peak_allocated_bytes", "Peak allocated",
       "max over forward/loss, loss backward, backward start/end and optimizer step of live bytes "
       "(a maximum, not a sum of maxima)",
       "torch.cuda.max_memory_allocated"},
      {"peak_reserved_bytes", "Peak reserved", "1.10 · peak allocated + 32 MiB cuBLAS workspace",
       "PyTorch CUDACachingAllocator block rounding and fragmentation"},
      {"device_bytes", "Device",
       "peak reserved + CUDA context + NCCL buffers + paged optimizer state", "nvidia-smi"},
      {"capacity_bytes", "Usable capacity", "the GPU's usable memory", "GPU catalog (src/data/gpus.csv, SOURCES)"},
      {"headroom_bytes", "Headroom", "capacity − device (negative: it does not fit)", "definition"},
      {"host_bytes", "Host RAM",
       "offloaded optimizer state, fp32 gradients and master, parameters and activations × GPUs per node",
       "Ren et al. 2021 (ZeRO-Offload); torchtune OffloadActivations"},
  };
  return terms;
}

const std::vector<term_info>& time_terms() {
  static const std::vector<term_info> terms = {
      {"compute_seconds", "Compute",
       "Σ GEMMs max(FLOPs / (peak · ceiling · shape), bytes / bandwidth), shape = output tiles in waves of the "
       "GPU's SMs × k/(k+64); + flash attention at its fraction of peak + element-wise traffic (eager ops "
       "counted one by one, fused kernels one pass) / bandwidth, at least the kernel-launch floor",
       "dense peaks, best-shape fractions and SM counts: src/data/gpus.md; NVIDIA DL Performance Guide (tile "
       "and wave quantization); FA2/FA3 papers; docs/time-model.md"},
      {"communication_seconds", "Communication (exposed)",
       "ring all-reduce 2(n−1)/n·S, reduce-scatter/all-gather (n−1)/n·S over link × 0.8 + latency, "
       "for DP, ZeRO/FSDP, TP, PP, EP, CP; minus what overlaps",
       "NCCL bus bandwidth; Li et al. 2020 (DDP buckets); Megatron-LM"},
      {"bubble_seconds", "Pipeline bubble", "(p−1)/v × one micro-batch's stage time: (p−1)/m of compute (1F1B), "
       "(p−1)/(m·v) interleaved", "Narayanan et al. 2021 §2.2"},
      {"optimizer_seconds", "Optimizer step",
       "bytes per trainable parameter read and written over HBM (weights, gradient, states), ÷ dp under ZeRO",
       "torch.optim fused/foreach kernels; bitsandbytes"},
      {"offload_seconds", "Offload traffic",
       "gradients and 16-bit parameters over PCIe × 0.8 + CPU Adam at 1e9 params/s per node; NVMe 6 GB/s",
       "Ren et al. 2021 (ZeRO-Offload); Rajbhandari et al. 2021 (ZeRO-Infinity)"},
      {"step_seconds", "Step time", "compute + exposed communication + bubble + optimizer + offload",
       "definition"},
      {"tokens_per_second", "Tokens/s", "global batch × seq_len ÷ step time", "definition"},
      {"model_flops_per_step", "Model FLOPs per step",
       "2·m·k·n per matmul (GQA, gated MLP, MoE top-k, LoRA, logits) + attention 4·b·s²·q (causal flash: ½); "
       "backward 2× forward; no recompute",
       "Narayanan et al. 2021 eq. 3; Korthikanti et al. 2022; Dao 2023 (FA2)"},
      {"hardware_flops_per_step", "Hardware FLOPs per step",
       "model FLOPs + recompute (selective: attention core; full: block forward) + flash in-kernel recompute",
       "Korthikanti et al. 2022 §5"},
      {"mfu", "MFU", "model FLOPs ÷ (step × GPUs × dense peak)", "Chowdhery et al. 2022 (PaLM) App. B"},
      {"hfu", "HFU", "hardware FLOPs ÷ (step × GPUs × dense peak)", "Chowdhery et al. 2022 (PaLM) App. B"},
      {"total_seconds", "Time to train", "tokens ÷ tokens/s", "definition"},
      {"gpu_hours", "GPU-hours", "time to train × GPUs ÷ 3600", "definition"},
      {"cost", "Cost", "GPU-hours × price per GPU-hour", "definition"},
      {"energy_kwh", "Energy",
       "GPU-hours × TDP × (0.3 + 0.7 × (compute + optimizer)/step) ÷ 1000",
       "assumption (idle ≈ 30% of TDP), docs/time-model.md"},
      {"time_to_first_token_seconds", "Time to first token", "prefill of the prompt batch through the compute model",
       "docs/time-model.md (Serving)"},
      {"decode_tokens_per_second", "Decode tokens/s",
       "batch ÷ max(bytes read per token / (bandwidth · 0.8), FLOPs / (peak · ceiling)) at prompt + gen/2",
       "memory-bandwidth roofline (Williams et al. 2009)"},
  };
  return terms;
}

// The framework profile and, for each memory and time term it (or a mechanism every
// framework shares) changes in this run, the rule and its source (framework_rules.hpp).
std::string framework_text(const architecture& a, const scenario& r) {
  const framework_profile& p = profile_of(r.fw);
  std::string out = "Framework profile: " + std::string(to_string(r.fw)) + " (" + std::string(p.summary) +
                    "; include/gpuplan/framework.hpp)\n";
  auto term = [&](const std::string& text) { out += "  - " + text + "\n"; };
  const bool peft = traits_of(r.meth).peft_recipe;
  term("activation checkpointing: " + std::string(to_string(r.ckpt.value_or(checkpointing::none))) +
       " (recipe default for " + (peft ? "LoRA/QLoRA" : "full training") + ": " +
       std::string(to_string(peft ? p.peft_checkpointing : p.full_checkpointing)) + ")");
  if (r.parallel.tp_size() > 1) term(std::string("sequence parallelism with tensor parallelism: ") + (r.parallel.sp_enabled() ? "on" : "off"));
  if (base_quantization(r).weights == dtype::int8)
    term("LLM.int8 matmuls x" + format_number(detail::kLlmInt8GemmFactor) + " of 16-bit (bitsandbytes)");
  for (const framework_rule& x : framework_rules(a, r))
    out += "  - " + x.terms + ": " + x.effect + "\n      rule: " + x.rule + " [" + x.source + "]\n";
  return out;
}

std::string explain_report(const resolved_run& r, const style& s) {
  const json j = estimate_json(r);
  const json& mem = j["memory"];
  const json& tim = j["time"];
  auto value_of = [&](std::string_view key) -> std::string {
    const std::string k(key);
    const json* v = nullptr;
    if (mem.contains(k)) v = &mem[k];
    else if (tim.contains(k)) v = &tim[k];
    else if (tim["breakdown"].contains(k)) v = &tim["breakdown"][k];
    if (v == nullptr) return "";
    if (v->is_null()) return "n/a";
    if (!v->is_number()) return v->dump();
    const double x = v->get<double>();
    if (k.ends_with("_bytes")) return format_bytes(bytes(x));
    if (k.ends_with("_seconds")) return format_seconds(seconds(x));
    if (k == "mfu" || k == "hfu") return report_detail::pct(x);
    if (k == "tokens_per_second" || k == "decode_tokens_per_second") return format_rate(x, "tokens");
    if (k == "energy_kwh") return format_number(x) + " kWh";
    return format_number(x);
  };
  std::vector<const term_info*> terms;
  for (const auto& t : memory_terms())
    if (!value_of(t.key).empty()) terms.push_back(&t);
  for (const auto& t : time_terms())
    if (!value_of(t.key).empty()) terms.push_back(&t);

  std::string out = (s.format == report_format::markdown ? "### " : "") + printable(r.model().name) + ": " +
                    run_summary(r.settings()) + "\n\n" + framework_text(r.model(), r.settings()) + "\n";
  if (r.run.calibration() != nullptr) out += calibration_text(r.run) + "\n";
  if (s.format == report_format::markdown) {
    table t;
    t.header = {"Term", "Value", "Formula", "Source"};
    for (const auto* term : terms)
      t.rows.push_back({std::string(term->label), value_of(term->key), std::string(term->formula),
                        std::string(term->source)});
    t.right_align = {false, true, false, false};
    return out + render(t, s);
  }
  const char* bold = s.color ? "\033[1m" : "";
  const char* reset = s.color ? "\033[0m" : "";
  for (const auto* term : terms) {
    out += std::string(bold) + std::string(term->label) + reset + " = " + value_of(term->key) + "  [" +
           std::string(term->key) + "]\n";
    out += "  formula: " + std::string(term->formula) + "\n";
    out += "  source:  " + std::string(term->source) + "\n";
  }
  return out;
}

}  // namespace gpuplan::io
