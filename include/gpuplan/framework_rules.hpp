// framework_rules.hpp — which rules of the run's framework profile (framework.hpp), and
// which mechanisms every framework shares, change the estimate's memory and time terms
// for one run: the term each one changes, the rule that produced it and its source.
// `gpuplan explain` prints them under the profile's name; the estimators apply the same
// conditions (the detail/ function each rule mirrors is named beside it).
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/detail/memory_precision.hpp"
#include "gpuplan/dtype.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/peft.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan {

struct framework_rule {
  std::string terms;   // the estimate's keys it changes: "optimizer_bytes, host_bytes"
  std::string rule;    // "<framework>.<profile field>" or "all frameworks: <mechanism>"
  std::string effect;  // what it does in this run
  std::string source;
};

namespace detail {
inline std::string fmt_factor(double v) {  // 1.15 -> "1.15"
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}
}  // namespace detail

namespace detail {
// What every group of rules reads, computed once, and the list they append to.
struct rule_facts {
  const framework_profile& p;
  std::string fw;
  bool train;
  quantization q;
  bool master;  // mixed precision keeps fp32 master weights
};
struct rule_list {
  rule_facts facts;
  std::vector<framework_rule> out;
  void add(std::string terms, std::string rule, std::string effect, std::string source) {
    out.push_back({std::move(terms), std::move(rule), std::move(effect), std::move(source)});
  }
};

// Weights, gradients and optimizer state, on the GPU or the host.
inline void model_state_rules([[maybe_unused]] const architecture& a, const scenario& r, rule_list& rules) {
  const auto& [p, fw, train, q, master] = rules.facts;
  auto add = [&](std::string terms, std::string rule, std::string effect, std::string source) {
    rules.add(std::move(terms), std::move(rule), std::move(effect), std::move(source));
  };
  // ---- weights (memory_states.hpp kbit_prepared, sharded_master_is_weight, zero3_states_hold_gathered)
  if (train && is_bitsandbytes(q.weights) && p.kbit_non_quantized_fp32)
    add("weights_bytes", fw + ".kbit_non_quantized_fp32",
        "k-bit preparation upcast: embeddings, LM head, norms and biases (everything bitsandbytes did not quantise) "
        "held in fp32, 4 B/param",
        "peft/utils/other.py prepare_model_for_kbit_training (\"cast all non INT8 parameters to fp32\")");
  if (train && r.parallel.zero >= 3 && master) {
    if (p.sharded_fp32_is_master)
      add("weights_bytes, master_weights_bytes, optimizer_bytes", fw + ".sharded_fp32_is_master",
          "FSDP flat parameters: the fp32 shard is the master copy, 4 + 4 + 8 = 16 B/param / N",
          "torch/distributed/fsdp/api.py MixedPrecision (sharded parameters kept in full precision)");
    else
      add("weights_bytes, gradients_bytes", fw + ".sharded_fp32_is_master = false",
          "DeepSpeed ZeRO-3: 16-bit shard + fp32 partitions, 18 B/param / N, plus the largest layer's 16-bit "
          "parameters and gradients (4 B x largest layer) as model states",
          "deepspeed/runtime/zero/stage3.py estimate_zero3_model_states_mem_needs");
  }
  // ---- gradients allocated by the backward (memory_phases.hpp gradients_by_phase)
  if (train && r.grad_accum == 1 && !r.keep_gradients && (r.num_gpus > 1 || r.parallel.zero > 0) &&
      p.gradients_allocated_in_backward)
    add("gradients_bytes, peak_allocated_bytes", fw + ".gradients_allocated_in_backward",
        "one micro-batch per step: the sharded gradients appear as each unit's reduce-scatter lands and "
        "zero_grad(set_to_none=True) frees them, so the backward starts without them",
        "torch/distributed/fsdp/_runtime_utils.py _post_backward_hook; FSDP2 _fsdp_param_group.py post_backward");
  // ---- gradients and optimizer on the host (framework.hpp optimizer_on_host)
  if (train && r.parallel.offload_params != offload::none && p.param_offload_moves_optimizer)
    add("gradients_bytes, optimizer_bytes, master_weights_bytes, host_bytes, offload_seconds",
        fw + ".param_offload_moves_optimizer",
        "parameter offload takes the gradients and the optimizer step to the CPU: the optimizer state and fp32 "
        "gradients live in host RAM, the gradients cross PCIe every step",
        "torch/distributed/fsdp/api.py CPUOffload(offload_params=True); FSDP2 CPUOffloadPolicy");
  else if (train && r.parallel.offload_optimizer != offload::none)
    add("optimizer_bytes, master_weights_bytes, host_bytes, offload_seconds",
        "all frameworks: offload_optimizer",
        std::string("optimizer state, fp32 master and gradient partitions on the ") +
            (r.parallel.offload_optimizer == offload::nvme ? "NVMe drive" : "host") + "; CPU Adam runs the step",
        "DeepSpeed zero_optimization.offload_optimizer (deepspeed/runtime/zero/offload_config.py); Ren et al. 2021");
  // ---- paged optimizer state (memory_states.hpp resident_states: paged)
  if (train && detail::mem::optimizer_is_paged(r.opt))
    add("optimizer_bytes, device_bytes, host_bytes",
        std::string("all frameworks: optimizer ") + std::string(to_string(r.opt)),
        "paged optimizer state in CUDA managed memory, outside the caching allocator: resident in what the rest "
        "leaves free, evicted to host RAM under pressure (never makes the run not fit)",
        "bitsandbytes paged optimizers (cudaMallocManaged; bitsandbytes/optim/optimizer.py is_paged)");
}

// Saved activations.
inline void activation_rules([[maybe_unused]] const architecture& a, const scenario& r, rule_list& rules) {
  const auto& [p, fw, train, q, master] = rules.facts;
  auto add = [&](std::string terms, std::string rule, std::string effect, std::string source) {
    rules.add(std::move(terms), std::move(rule), std::move(effect), std::move(source));
  };
  // ---- activations (memory_activations.hpp stage_activations: on_host)
  if (train && r.ckpt == checkpointing::full && p.checkpoints_on_host)
    add("activations_bytes, host_bytes", fw + ".checkpoints_on_host",
        "offloaded gradient checkpointing: each checkpointed block input goes to pinned host memory and comes "
        "back for the block's recomputation",
        "unslothai/unsloth unsloth/models/_utils.py Unsloth_Offloaded_Gradient_Checkpointer");
  else if (train && r.activation_offload)
    add("activations_bytes, host_bytes", "all frameworks: activation_offload",
        "saved activations offloaded to host memory", "torchtune training/_activation_offloading.py OffloadActivations");
}

// Transient buffers: gathers, dequantized weights, the loss.
inline void transient_rules([[maybe_unused]] const architecture& a, const scenario& r, rule_list& rules) {
  const auto& [p, fw, train, q, master] = rules.facts;
  auto add = [&](std::string terms, std::string rule, std::string effect, std::string source) {
    rules.add(std::move(terms), std::move(rule), std::move(effect), std::move(source));
  };
  // ---- transients (memory_transients.hpp step_transients, zero3_gather_bytes, loss_bytes)
  if (train && r.parallel.zero >= 3 && p.root_unit_stays_gathered)
    add("transient_bytes", fw + ".root_unit_stays_gathered",
        "the unit in use gathered plus the next one prefetched (one transformer block each, the FSDP wrap unit), "
        "and the root unit (embeddings, final norm, head) gathered from forward to the end of backward; at the loss "
        "the root alone, at the head's backward the root and the last block",
        "torch/distributed/fsdp/_runtime_utils.py _post_forward_reshard (the root is not resharded after forward), "
        "_pre_backward_hook (the backward prefetch starts at the root's outputs); FSDP2 fully_shard "
        "reshard_after_forward (False for the root)");
  else if (train && r.parallel.zero >= 3)
    add("transient_bytes", "all frameworks: ZeRO-3 / FSDP all-gather buffers",
        "the unit in use gathered plus the next one prefetched (one transformer block each, the FSDP wrap unit), "
        "and the largest module not already in the model states",
        "torch FSDP forward_prefetch / FSDP2 all-gather buffers; DeepSpeed stage-3 prefetch_bucket_size");
  if (train && (q.weights == dtype::nf4 || q.weights == dtype::fp4) && r.parallel.zero >= 3 && r.fw != framework::torchtune)
    add("weights_bytes", "all frameworks: bitsandbytes 4-bit statistics under ZeRO-3 / FSDP",
        "the quantization statistics (absmax, nested absmax) are not parameters: every rank keeps them whole, "
        "also with parameter offload",
        "bitsandbytes nn/modules.py fix_4bit_weight_quant_state_from_module");
  if (train && is_quantized(q.weights))
    add("transient_bytes", "all frameworks: dequantized weight",
        r.fw == framework::torchtune && !r.compile
            ? "torchao NF4 dequantized eagerly, about 14 B per element of the largest block linear"
            : "one 16-bit copy of the largest block linear, dequantized for its matmul",
        r.fw == framework::torchtune ? "torchao/dtypes/nf4tensor.py get_original_weight (linear_nf4)"
                                     : "bitsandbytes autograd/_functions.py MatMul4Bit (F.dequantize_4bit)");
  if (train && a.head == head_kind::lm && fused_linear_loss(r))
    add("transient_bytes", p.fused_linear_loss ? fw + ".fused_linear_loss" : std::string("all frameworks: fused_linear_loss"),
        "the LM head and cross-entropy fused chunk by chunk: no logits tensor, the head's input gradient "
        "(e·h per token) and an fp32 statistic per token",
        p.fused_linear_loss ? "unslothai/unsloth unsloth/models/llama.py fused_linear_cross_entropy (cut cross-entropy)"
                            : "linkedin/Liger-Kernel ops/fused_linear_cross_entropy.py; DeepSpeed ulysses_sp.py TiledFusedLogitsLoss");
  if (train && r.tiled_mlp)
    add("activations_bytes, transient_bytes", "all frameworks: tiled_mlp",
        "TiledMLP: each block's MLP runs over ceil(s / hidden) sequence shards under no_grad, saving its input; "
        "backward recomputes and back-propagates one shard at a time (+ one MLP forward per block)",
        "deepspeed/runtime/sequence_parallel/ulysses_sp.py TiledMLP; ArcticTraining tiled_mlp_compute");
  if (train && is_peft(r.meth) && p.fused_lora_kernels)
    add("activations_bytes, transient_bytes", fw + ".fused_lora_kernels",
        "fused LoRA autograd functions save the block's inputs and Q, K, V, gate and up outputs, "
        "e·(2h + 2q + 2kv + 2f) per token, and back-propagate SwiGLU in place",
        "unslothai/unsloth unsloth/kernels/fast_lora.py (LoRA_MLP, LoRA_QKV), unsloth/kernels/swiglu.py");
  if (train && a.head == head_kind::lm && a.vocab > 0 && !(r.compile && p.compile_fuses_loss) && !r.chunked_loss &&
      !r.inplace_loss && !fused_linear_loss(r))
    add("transient_bytes", r.compile ? fw + ".compile_fuses_loss" : std::string("all frameworks: eager cross-entropy"),
        "fp32 logits copy: the loss holds the 16-bit logits, their fp32 copy and log_softmax's fp32 output "
        "(e + 8 B per logit) on the last pipeline stage",
        "transformers LlamaForCausalLM (logits.float()); torch.nn.functional.cross_entropy");
}

// The allocator's reserve and the pipeline stages.
inline void allocator_and_pipeline_rules([[maybe_unused]] const architecture& a, const scenario& r, rule_list& rules) {
  const auto& [p, fw, train, q, master] = rules.facts;
  auto add = [&](std::string terms, std::string rule, std::string effect, std::string source) {
    rules.add(std::move(terms), std::move(rule), std::move(effect), std::move(source));
  };
  // ---- allocator (run.hpp memory_constants; memory_allocator.hpp)
  const bool pools = sharded_stream_pools(r);
  add("peak_reserved_bytes, device_bytes", pools ? std::string("all frameworks: ZeRO-3 / FSDP stream pools") : fw + ".reserved_factor",
      "reserved = " + detail::fmt_factor(allocator_factor(pools ? kReservedFactorStreamPools : p.reserved_factor, r.expandable_segments)) +
          " x allocated + cuBLAS workspace (a calibration profile's fitted factor replaces it)" +
          (r.expandable_segments ? std::string("; expandable segments keep 0.70 of the slack") : std::string()),
      std::string(pools ? "per-stream allocator pools of the all-gather / reduce-scatter streams (torch/distributed/_composable/"
                          "fsdp/_fsdp_param_group.py; PyTorch docs, CUDA semantics: memory management); the median of 11 published "
                          "reserved / active pairs (framework.hpp kReservedFactorStreamPools)"
                        : "PyTorch CUDACachingAllocator block rounding and fragmentation (detail/memory_constants.hpp)") +
          (r.expandable_segments ? "; 5 paired datasets with and without expandable segments (framework.hpp kExpandableSlackKept)" : ""));
  // ---- pipeline stages (memory_layout.hpp blocks_of_stage)
  if (r.parallel.pp > 1) {
    const bool units = r.parallel.account_for_embedding_in_pipeline_split || r.parallel.account_for_loss_in_pipeline_split;
    add("weights_bytes, transient_bytes, compute_seconds",
        units ? fw + ".account_in_pipeline_split" : "all frameworks: pipeline stages",
        "the embedding on the first stage, the final norm, head and logits on the last; every stage's memory is "
        "estimated and the largest reported; the slowest stage paces the pipeline" +
            std::string(units ? "; the embedding / loss counts as one layer of the split, one block fewer there"
                              : "; blocks split evenly, a remainder one each on the last stages"),
        "megatron/core/models/gpt/gpt_model.py pre_process/post_process; megatron/core/transformer/"
        "transformer_block.py get_num_layers_to_build");
  }
}

// Step time: communication, dequantisation, casts, the optimizer kernel and fused kernels.
inline void time_rules([[maybe_unused]] const architecture& a, const scenario& r, rule_list& rules) {
  const auto& [p, fw, train, q, master] = rules.facts;
  auto add = [&](std::string terms, std::string rule, std::string effect, std::string source) {
    rules.add(std::move(terms), std::move(rule), std::move(effect), std::move(source));
  };
  // ---- time (timing_comm.hpp zero3_per_microbatch; timing_compute.hpp block_linears, head_seconds)
  if (train && r.parallel.zero == 3 && r.dp() > 1)
    add("communication_seconds", "all frameworks: ZeRO-3 / FSDP per micro-batch",
        "all-gather of the stage's parameters for forward and again for backward, reduce-scatter of its gradients, "
        "every micro-batch (not once per step); prefetch hides part of it behind compute",
        "Rajbhandari et al. 2020 (ZeRO) §5; torch FSDP FULL_SHARD reshard_after_forward");
  if (train && (traits_of(r.meth).quantized_base || is_quantized(q.weights)))
    add("compute_seconds", "all frameworks: quantized base",
        "dequantisation: every forward and backward reads the packed weights and writes a 16-bit copy the GEMM "
        "reads (packed + 2 B per weight)",
        "bitsandbytes functional.py dequantize_4bit / matmul_4bit");
  // timing_compute.hpp autocast_weight_casts
  if (autocast_casts_weights(r))
    add("compute_seconds", fw + ".autocast_fp32_weights",
        "mixed precision is torch.autocast over the fp32 trainable weights: each forward casts them to 16-bit "
        "(6 B/param), each backward casts their gradients back (6 B/param) and accumulation adds them into the "
        "fp32 .grad (12 B/param)",
        "torch.autocast weight cache (cache_enabled=True); transformers Trainer autocast_smart_context_manager");
  // timing_optimizer.hpp optimizer_bytes_per_param
  if (train && !optimizer_brings_own_kernels(r.opt) && !optimizer_on_host(r)) {
    const bool fused = optimizer_kernel_of(r) == optimizer_kernel::fused;
    add("optimizer_seconds", r.opt_kernel ? "all frameworks: optimizer_kernel" : fw + ".optimizer_step",
        fused ? "one fused kernel: weight, gradient and each moment read and written once"
              : "foreach kernels, one element-wise pass per line of the update: AdamW moves about 2.2x a fused "
                "kernel's bytes",
        fused ? "torch.optim fused=True (_fused_adamw_); apex / DeepSpeed FusedAdam"
              : "torch/optim/adam.py _multi_tensor_adam");
  }
  if (p.fused_kernels)
    add("compute_seconds", fw + ".fused_kernels", "element-wise ops in fused kernels: one pass per chain instead of the eager op-by-op count",
        fw == "unsloth" ? "unsloth/kernels (Triton RMSNorm, RoPE, SwiGLU, cross-entropy)"
                        : "Megatron-LM fused kernels (megatron/core/fusions)");
}

}  // namespace detail

// The rules that apply to training or serving `r` of model `a`, in the order of the
// estimate's terms (weights, gradients, optimizer, activations, transients, reserved, time).
inline std::vector<framework_rule> framework_rules(const architecture& a, const scenario& r) {
  const precision pr = precision_of(r);
  detail::rule_list rules{{profile_of(r.fw), std::string(to_string(r.fw)), r.work == workload::train, base_quantization(r),
                           pr == precision::fp16_mixed || pr == precision::bf16_mixed || pr == precision::fp8_mixed},
                          {}};
  detail::model_state_rules(a, r, rules);
  detail::activation_rules(a, r, rules);
  detail::transient_rules(a, r, rules);
  detail::allocator_and_pipeline_rules(a, r, rules);
  detail::time_rules(a, r, rules);
  return std::move(rules.out);
}

}  // namespace gpuplan
