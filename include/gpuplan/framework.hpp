// framework.hpp — the run the user will launch: what each training framework keeps
// on the GPU, the defaults its recipes use, how fast its kernels are and which
// layouts it can run. One profile per framework, as data; the estimators read the
// profile's fields and never test the framework's name.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/warnings.hpp"

namespace gpuplan {

struct framework_profile {
  framework id = framework::hf;
  std::string_view summary;

  // ---- defaults for what the scenario leaves unset (the framework's own recipes) ----
  checkpointing peft_checkpointing = checkpointing::none;  // LoRA / QLoRA
  checkpointing full_checkpointing = checkpointing::none;  // full fine-tuning and pre-training
  bool sequence_parallel_with_tp = false;                  // sequence parallelism whenever tp > 1

  // ---- memory semantics ----
  // QLoRA base: every parameter bitsandbytes did not quantise (embeddings, LM head,
  // norms) upcast to fp32 by PEFT's prepare_model_for_kbit_training.
  bool kbit_non_quantized_fp32 = false;
  // ZeRO-3 with a master copy: the sharded fp32 parameters are the master (FSDP
  // mixed precision: 4 + 4 + 8 = 16 B/param / N) rather than DeepSpeed's separate
  // 16-bit shard plus fp32 partitions (18 B/param / N, estimate_zero3_model_states_mem_needs).
  bool sharded_fp32_is_master = false;
  // The caching allocator's pool over live tensors (torch reserved / allocated) when the
  // run carries no calibration profile (run::memory_constants; a profile's fitted value wins).
  double reserved_factor = memory_defaults::reserved_factor;
  // Parameter offload carries the gradients and the optimizer step to the CPU with the
  // parameters: FSDP CPUOffload(offload_params=True) "offloads gradients to CPU as well,
  // meaning that the optimizer step runs on CPU" (torch/distributed/fsdp/api.py CPUOffload;
  // FSDP2 CPUOffloadPolicy, torch/distributed/_composable/fsdp/_fsdp_api.py).
  bool param_offload_moves_optimizer = false;
  // Sharded gradients exist only from the backward that reduce-scatters them: FSDP assigns each
  // unit's shard to .grad in its post-backward hook (torch/distributed/fsdp/_runtime_utils.py
  // _post_backward_hook; FSDP2 _fsdp_param_group.py post_backward) and zero_grad(set_to_none=True)
  // frees them, so one micro-batch per step starts its backward without them (DeepSpeed's
  // partitioned gradients live in buffers allocated once, stage3.py grad_partitions_flat_buffer).
  bool gradients_allocated_in_backward = false;
  // ZeRO-3: the root unit (parameters outside every wrapped block: embeddings, final norm, head)
  // is not resharded after forward, so it stays gathered through the backward (FSDP1
  // torch/distributed/fsdp/_runtime_utils.py _post_forward_reshard: "Do not free the root's
  // parameters in the post-forward"; FSDP2 fully_shard: "The root FSDP state has its value
  // [reshard_after_forward] specially set to False"). DeepSpeed fetches module by module.
  bool root_unit_stays_gathered = false;
  // torch.compile covers the loss: the scenario's `compile` fuses the cross-entropy (the model's
  // forward computes it: transformers *ForCausalLM.loss_function; torchtune compiles it with
  // training.compile_loss). false: compile wraps each transformer block and the loss runs eager
  // (torchtitan apply_compile "Apply torch.compile to each TransformerBlock"; its
  // cross_entropy_loss upcasts pred.float() outside the compiled blocks).
  bool compile_fuses_loss = true;
  // The LM head and the cross-entropy run fused, chunk by chunk, so the logits never exist
  // whole: the loss keeps the head's input gradient (e·h per token) and an fp32 statistic per
  // token (unslothai/unsloth unsloth/models/llama.py fused_linear_cross_entropy through
  // cut-cross-entropy; unsloth_zoo UnslothFusedLoss).
  bool fused_linear_loss = false;
  // LoRA and QLoRA run through hand-written autograd functions that save only the block's
  // inputs and the projections' outputs (unsloth/kernels/fast_lora.py LoRA_MLP saves X, e, g;
  // LoRA_QKV saves X and Q, K, V before K/V are expanded) and back-propagate SwiGLU in place
  // (unsloth/kernels/swiglu.py): detail/memory_activations.hpp fused_lora_block_bytes.
  bool fused_lora_kernels = false;
  // Full checkpointing offloads each checkpointed block input to pinned host memory and
  // brings it back for the block's recomputation (unslothai/unsloth unsloth/models/_utils.py
  // Unsloth_Offloaded_Gradient_Checkpointer: hidden_states.to("cpu", non_blocking=True)).
  bool checkpoints_on_host = false;

  // ---- speed semantics ----
  // Element-wise work runs in fused kernels (as under torch.compile).
  bool fused_kernels = false;
  // fp16/bf16-mixed runs under torch.autocast with the fp32 trainable weights themselves as the
  // master copy (no separate 16-bit copy): every forward casts each weight to 16-bit and every
  // backward casts its gradient back (timing_compute.hpp autocast_weight_casts).
  bool autocast_fp32_weights = false;
  // The optimizer step's kernels when the scenario does not say (timing_optimizer.hpp). torch.optim
  // picks foreach on CUDA unless told fused=True (torch/optim/optimizer.py _default_to_fused_or_foreach).
  optimizer_kernel optimizer_step = optimizer_kernel::foreach;

  // ---- layouts the framework can launch (plan/search.hpp keeps only these) ----
  // Bit s set: ZeRO stage s (FSDP ShardingStrategy: NO_SHARD = 0, SHARD_GRAD_OP = 2, FULL_SHARD = 3).
  std::uint8_t zero_stages = 0b1111;
  bool offload_optimizer_only = true;  // the optimizer on the CPU, parameters on the GPU (DeepSpeed offload_optimizer)
  bool offload_everything = true;      // parameters and optimizer on the CPU (ZeRO-3 offload_param; FSDP CPUOffload)
  bool tensor_parallel = false;        // tp > 1 and sequence parallelism
  bool pipeline_parallel = false;      // pp > 1 and interleaved (virtual) stages
  // cp > 1: the sequence split over GPUs, every activation at s/cp tokens per GPU (ring attention,
  // Ulysses all-to-all; docs/long-context.md). plan/max_context.hpp's ladder uses it; search does not.
  bool context_parallel = false;
  // Pipeline stages, every framework: the embedding on the first stage, the final norm, the
  // head and the loss (logits) on the last (Megatron-LM megatron/core/models/gpt/gpt_model.py
  // pre_process / post_process; DeepSpeed PipelineModule's first and last LayerSpecs), blocks
  // split evenly with the remainder one each on the last stages (detail/memory_layout.hpp
  // blocks_of_stage). Here: the split may count the embedding and the loss as one layer each
  // (Megatron-LM --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split).
  bool account_in_pipeline_split = false;
  // Selective activation recompute (attention only): Megatron --recompute-granularity selective
  // (megatron/training/arguments.py); torchtune ac_mode "selective" (torchtune/training/activations.py
  // apply_selective_activation_checkpointing). HF gradient_checkpointing, DeepSpeed and FSDP wrap whole blocks.
  bool selective_checkpointing = false;
  int max_gpus = 0;                    // 0: any count; else at most this many GPUs

  [[nodiscard]] constexpr bool allows_zero(int stage) const noexcept {
    return stage >= 0 && stage < 4 && ((zero_stages >> stage) & 1U) != 0;
  }
};

// Rules every framework shares (plan/search.hpp applies them with the profile's):
// ZeRO-2/3 cannot run with pipeline parallelism — DeepSpeed PipelineEngine asserts
// "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"
// (deepspeed/runtime/pipe/engine.py); Megatron's distributed optimizer is ZeRO-1.
inline constexpr int kMaxZeroWithPipeline = 1;
// ZeRO-3 on one data-parallel rank shards nothing: the planner offers it only at dp >= 2.
inline constexpr int kMinDpForZero3 = 2;

// Reserved / allocated of a run that shards its parameters (ZeRO-3 / FSDP FULL_SHARD, any
// framework): the all-gathers and reduce-scatters run on their own CUDA streams
// (torch/distributed/_composable/fsdp/_fsdp_param_group.py all_gather_stream,
// reduce_scatter_stream; DeepSpeed stage3 partitioned_param_coordinator's allgather stream),
// the caching allocator pools blocks per stream and does not hand a block freed on one stream
// to another (PyTorch docs, "CUDA semantics: memory management"), and blocks used by a
// collective stay unavailable until it completes (record_stream). The median of the
// published reserved / active pairs of sharded runs (tests/data/validation/allocator.jsonl:
// torchtitan PR #165 FSDP1/FSDP2 1.36, llama-recipes PR #41 FSDP 1.27, DeepSpeed ZeRO-3 runs
// of gpjt/fine-tune-2024-04 1.25-1.42; 11 runs, 3 sources; leave-one-source-out 1.34-1.36).
inline constexpr double kReservedFactorStreamPools = 1.35;
// Whether a run's collectives keep their own stream pools (the factor above applies).
constexpr bool sharded_stream_pools(const scenario& s) { return s.parallel.zero >= 3; }
// With expandable_segments:True the pool keeps this share of the slack (reserved - allocated)
// it keeps without: the median of the medians of gpjt/fine-tune-2024-04's five paired datasets
// that differ only in the setting (its *-with-/no-expandable-segments and *-with-/no-env-var
// CSVs: Llama-3-8B under DeepSpeed ZeRO-3 by batch 0.75, by sequence 0.77, with optimizer
// offload 0.70; Qwen 0.5B by batch 0.48, by sequence 0.48; 2,085 pairs).
inline constexpr double kExpandableSlackKept = 0.70;
// The reserved / allocated ratio a run's allocator setting gives, from the ratio without it.
constexpr double allocator_factor(double factor, bool expandable_segments) {
  return expandable_segments ? 1.0 + (factor - 1.0) * kExpandableSlackKept : factor;
}

inline constexpr std::array<framework_profile, 6> kFrameworkProfiles{{
    // transformers Trainer / TRL SFTTrainer + PEFT + bitsandbytes + accelerate.
    {.id = framework::hf,
     .summary = "transformers Trainer/TRL + PEFT + bitsandbytes + accelerate",
     // PEFT prepare_model_for_kbit_training(use_gradient_checkpointing=True); TRL
     // SFTConfig gradient_checkpointing=True (trl/trainer/sft_config.py).
     .peft_checkpointing = checkpointing::full,
     .full_checkpointing = checkpointing::none,  // TrainingArguments.gradient_checkpointing=False
     .kbit_non_quantized_fp32 = true,  // peft/utils/other.py prepare_model_for_kbit_training
     // TrainingArguments fp16/bf16: the model stays fp32 and the forward runs under torch.autocast
     // (transformers/trainer.py autocast_smart_context_manager; accelerate's native AMP).
     .autocast_fp32_weights = true,
     // TrainingArguments.optim: "adamw_torch_fused" with torch >= 2.8 (transformers/training_args.py default_optim).
     .optimizer_step = optimizer_kernel::fused,
     // accelerate launches DDP, DeepSpeed ZeRO-1..3 (with offload) or FSDP; no TP/PP
     // (accelerate docs, "DeepSpeed" and "Fully Sharded Data Parallel").
     // No context parallelism of its own: accelerate's ParallelismConfig(cp_size=...) runs only
     // with FSDP2 (accelerate docs, concept_guides/context_parallelism), the fsdp profile, and
     // Ulysses/ALST with DeepSpeed, the deepspeed profile.
     .zero_stages = 0b1111},
    // DeepSpeed ZeRO (with the HF Trainer or its own engine).
    {.id = framework::deepspeed,
     .summary = "DeepSpeed ZeRO engine",
     .peft_checkpointing = checkpointing::full,
     .full_checkpointing = checkpointing::none,
     // reserved_factor: the default. contiguous_gradients (default true) copies gradients into
     // one pre-allocated buffer "to avoid memory fragmentation" (DeepSpeed config docs, zero_optimization).
     // zero_optimization.stage 0-3, offload_optimizer (stages 1-3) and offload_param (stage 3)
     // (DeepSpeed docs, "ZeRO"); TP/PP need Megatron-DeepSpeed, i.e. the megatron profile.
     // A config's "Adam"/"AdamW" runs FusedAdam unless "torch_adam": true
     // (deepspeed/runtime/engine.py _configure_basic_optimizer).
     .optimizer_step = optimizer_kernel::fused,
     .zero_stages = 0b1111,
     // DeepSpeed-Ulysses sequence parallelism (deepspeed/sequence/layer.py DistributedAttention) and
     // ALST (deepspeed/runtime/sequence_parallel/ulysses_sp.py; ArcticTraining sequence_parallel_size);
     // ring attention beside ZeRO-3 (360-LLaMA-Factory's ring-flash-attn).
     .context_parallel = true},
    // PyTorch FSDP / FSDP2 (accelerate FSDP, torchtitan-style without Megatron kernels).
    {.id = framework::fsdp,
     .summary = "PyTorch FSDP / FSDP2",
     .peft_checkpointing = checkpointing::full,
     .full_checkpointing = checkpointing::none,
     // torch/distributed/fsdp/api.py MixedPrecision: sharded parameters kept in full precision.
     .sharded_fp32_is_master = true,
     .param_offload_moves_optimizer = true,
     .gradients_allocated_in_backward = true,
     .root_unit_stays_gathered = true,
     .compile_fuses_loss = false,  // torchtitan-style loops compile the blocks (see the field)
     // torch/distributed/fsdp/api.py ShardingStrategy: NO_SHARD, SHARD_GRAD_OP, FULL_SHARD (no
     // optimizer-only sharding); CPUOffload(offload_params=True) moves parameters, gradients
     // and the optimizer step to the CPU together.
     .zero_stages = 0b1101,
     .offload_optimizer_only = false,
     // torchtitan --parallelism.context_parallel_degree: torch.distributed.tensor.experimental
     // context_parallel, FSDP over the flattened dp_shard x cp mesh (parallelisms/parallel_dims.py).
     .context_parallel = true},
    // torchtune recipes: bf16, FSDP2, activation checkpointing on in most configs
    // (recipes/configs/*: enable_activation_checkpointing: True).
    {.id = framework::torchtune,
     .summary = "torchtune recipes (FSDP2, bf16)",
     .peft_checkpointing = checkpointing::full,
     .full_checkpointing = checkpointing::full,
     .sharded_fp32_is_master = true,
     .param_offload_moves_optimizer = true,  // recipes' fsdp_cpu_offload: FSDP2 CPUOffloadPolicy
     .gradients_allocated_in_backward = true,
     // root_unit_stays_gathered false: the recipes shard tok_embeddings and output as units of their
     // own (recipes/configs/llama3_1/8B_full.yaml memory_efficient_fsdp_wrap, later custom_sharded_layers).
     .optimizer_step = optimizer_kernel::fused,  // recipes/configs/*: torch.optim.AdamW with fused: True
     // Single-device recipes, or FSDP2 fully_shard over every rank (recipes/*_distributed.py);
     // fsdp_cpu_offload: True offloads parameters, gradients and optimizer together.
     .zero_stages = 0b1001,
     .offload_optimizer_only = false,
     // recipes/full_finetune_distributed.py context_parallel_dim (torch context_parallel).
     .context_parallel = true,
     .selective_checkpointing = true},
    // Megatron-LM / NeMo / torchtitan-style fused stacks.
    {.id = framework::megatron,
     .summary = "Megatron-LM / NeMo (fused kernels, TP+SP, pipeline)",
     .peft_checkpointing = checkpointing::selective,
     // --recompute-activations (selective, Korthikanti et al. 2022) in the published recipes.
     .full_checkpointing = checkpointing::selective,
     // Sequence parallelism pairs with TP in Megatron's and torchtitan's recipes (Korthikanti et al. 2022 §4.2.2).
     .sequence_parallel_with_tp = true,
     .fused_kernels = true,
     // Megatron's optimizer is TE / apex FusedAdam (megatron/core/optimizer/__init__.py); torchtitan's
     // default optimizer.implementation is "fused" (torchtitan/config/job_config.py).
     .optimizer_step = optimizer_kernel::fused,
     // --use-distributed-optimizer shards the optimizer state (ZeRO-1,
     // megatron/core/optimizer/distrib_optimizer.py); TP, SP, PP and interleaved stages
     // (--num-layers-per-virtual-pipeline-stage); no CPU offload of the model state.
     .zero_stages = 0b0011,
     .offload_optimizer_only = false,
     .offload_everything = false,
     .tensor_parallel = true,
     .pipeline_parallel = true,
     // --context-parallel-size (megatron/core/parallel_state.py; Megatron Core "context parallel" guide).
     .context_parallel = true,
     .account_in_pipeline_split = true,
     .selective_checkpointing = true},
    // Unsloth: fused Triton kernels, its own offloaded gradient checkpointing.
    {.id = framework::unsloth,
     .summary = "Unsloth (fused Triton kernels, offloaded checkpointing)",
     // FastLanguageModel.get_peft_model(use_gradient_checkpointing="unsloth").
     .peft_checkpointing = checkpointing::full,
     .full_checkpointing = checkpointing::full,
     .fused_linear_loss = true,
     .fused_lora_kernels = true,
     .checkpoints_on_host = true,  // use_gradient_checkpointing="unsloth", the get_peft_model default
     .fused_kernels = true,
     .autocast_fp32_weights = true,               // the transformers Trainer's AMP, as in hf
     .optimizer_step = optimizer_kernel::fused,  // the transformers Trainer's default, as in hf
     // One GPU: the open-source Unsloth trains on a single device (unsloth README,
     // "multi-GPU" listed as not in the open-source release).
     .zero_stages = 0b0001,
     .offload_optimizer_only = false,
     .offload_everything = false,
     .max_gpus = 1},
}};

// The table is in enum order, so a profile is one index away (estimators call this per estimate).
constexpr bool profiles_in_enum_order() {
  for (std::size_t i = 0; i < kFrameworkProfiles.size(); ++i)
    if (static_cast<std::size_t>(kFrameworkProfiles[i].id) != i) return false;
  return true;
}
static_assert(profiles_in_enum_order() && kFrameworkProfiles.size() == kFrameworkNames.size());

constexpr const framework_profile& profile_of(framework f) {
  const auto i = static_cast<std::size_t>(f);
  return i < kFrameworkProfiles.size() ? kFrameworkProfiles[i] : kFrameworkProfiles[0];
}

// The layout rules of the run's framework profile, and the shared one above, that a
// training run's layout breaks, as warnings: the planner never proposes such a layout
// (detail/plan_search_space.hpp variant_allowed / group_allowed check the same), and an
// explicit one is estimated and flagged on every command. ZeRO-3 on one data-parallel
// rank is a planner preference (kMinDpForZero3), not a rule: not flagged.
constexpr warning_set framework_layout_warnings(const scenario& s) {
  if (s.work != workload::train) return 0;
  const framework_profile& f = profile_of(s.fw);
  const parallel_config& p = s.parallel;
  warning_set w = 0;
  if (f.max_gpus > 0 && s.num_gpus > f.max_gpus) w |= warn_framework_gpus;
  if (((p.tp_size() > 1 || p.sp_enabled()) && !f.tensor_parallel) || ((p.pp > 1 || p.virtual_stages > 1) && !f.pipeline_parallel))
    w |= warn_framework_parallelism;
  const bool params_off = p.offload_params != offload::none;
  const bool optimizer_only = p.offload_optimizer != offload::none && !params_off;
  if (!f.allows_zero(p.zero) || (params_off && !f.offload_everything) || (optimizer_only && !f.offload_optimizer_only))
    w |= warn_framework_zero;
  if (p.pp > 1 && p.zero > kMaxZeroWithPipeline) w |= warn_zero_with_pipeline;
  return w;
}

// bitsandbytes' optimizers (one fused CUDA kernel each) and transformers' Adafactor (its own
// sequence of tensor ops) bring their own kernels: optimizer_kernel does not apply to them.
constexpr bool optimizer_brings_own_kernels(optimizer o) {
  return o == optimizer::adamw_8bit || o == optimizer::paged_adamw_8bit || o == optimizer::paged_adamw_32bit ||
         o == optimizer::adafactor;
}

// The LM head and the loss fused chunk by chunk, no logits tensor: the framework's own
// (Unsloth, framework_profile fused_linear_loss) or the run's (scenario fused_linear_loss: Liger, ALST).
constexpr bool fused_linear_loss(const scenario& s) { return s.fused_linear_loss || profile_of(s.fw).fused_linear_loss; }

// The optimizer step's kernels: the scenario's, else its framework's default.
constexpr optimizer_kernel optimizer_kernel_of(const scenario& s) {
  return s.opt_kernel.value_or(profile_of(s.fw).optimizer_step);
}

// The optimizer step runs on the CPU: optimizer offload (DeepSpeed offload_optimizer,
// CPU Adam), or parameter offload in a framework whose parameter offload takes the
// gradients and the optimizer along (param_offload_moves_optimizer).
constexpr bool optimizer_on_host(const scenario& s) {
  return s.parallel.offload_optimizer != offload::none ||
         (s.parallel.offload_params != offload::none && profile_of(s.fw).param_offload_moves_optimizer);
}

// Training whose fp16/bf16 mixed precision is torch.autocast over the fp32 trainable weights
// (autocast_fp32_weights), which ZeRO replaces with its engine's own 16-bit copy.
constexpr bool autocast_casts_weights(const scenario& s) {
  return s.work == workload::train && (precision_of(s) == precision::fp16_mixed || precision_of(s) == precision::bf16_mixed) &&
         profile_of(s.fw).autocast_fp32_weights && s.parallel.zero == 0;
}

}  // namespace gpuplan
