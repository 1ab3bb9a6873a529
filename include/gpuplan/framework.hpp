// framework.hpp — the run the user will launch: what each training framework keeps
// on the GPU, the defaults its recipes use, how fast its kernels are and which
// layouts it can run. One profile per framework, as data; the estimators read the
// profile's fields and never test the framework's name.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "gpuplan/scenario.hpp"

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

  // ---- speed semantics ----
  // Element-wise work runs in fused kernels (as under torch.compile).
  bool fused_kernels = false;
};

inline constexpr std::array<framework_profile, 6> kFrameworkProfiles{{
    // transformers Trainer / TRL SFTTrainer + PEFT + bitsandbytes + accelerate.
    {.id = framework::hf,
     .summary = "transformers Trainer/TRL + PEFT + bitsandbytes + accelerate",
     // PEFT prepare_model_for_kbit_training(use_gradient_checkpointing=True); TRL
     // SFTConfig gradient_checkpointing=True (trl/trainer/sft_config.py).
     .peft_checkpointing = checkpointing::full,
     .full_checkpointing = checkpointing::none,  // TrainingArguments.gradient_checkpointing=False
     .kbit_non_quantized_fp32 = true},  // peft/utils/other.py prepare_model_for_kbit_training
    // DeepSpeed ZeRO (with the HF Trainer or its own engine).
    {.id = framework::deepspeed,
     .summary = "DeepSpeed ZeRO engine",
     .peft_checkpointing = checkpointing::full,
     .full_checkpointing = checkpointing::none},
    // PyTorch FSDP / FSDP2 (accelerate FSDP, torchtitan-style without Megatron kernels).
    {.id = framework::fsdp,
     .summary = "PyTorch FSDP / FSDP2",
     .peft_checkpointing = checkpointing::full,
     .full_checkpointing = checkpointing::none,
     // torch/distributed/fsdp/api.py MixedPrecision: sharded parameters kept in full precision.
     .sharded_fp32_is_master = true},
    // torchtune recipes: bf16, FSDP2, activation checkpointing on in most configs
    // (recipes/configs/*: enable_activation_checkpointing: True).
    {.id = framework::torchtune,
     .summary = "torchtune recipes (FSDP2, bf16)",
     .peft_checkpointing = checkpointing::full,
     .full_checkpointing = checkpointing::full,
     .sharded_fp32_is_master = true},
    // Megatron-LM / NeMo / torchtitan-style fused stacks.
    {.id = framework::megatron,
     .summary = "Megatron-LM / NeMo (fused kernels, TP+SP, pipeline)",
     .peft_checkpointing = checkpointing::selective,
     // --recompute-activations (selective, Korthikanti et al. 2022) in the published recipes.
     .full_checkpointing = checkpointing::selective,
     // Sequence parallelism pairs with TP in Megatron's and torchtitan's recipes (Korthikanti et al. 2022 §4.2.2).
     .sequence_parallel_with_tp = true,
     .fused_kernels = true},
    // Unsloth: fused Triton kernels, its own offloaded gradient checkpointing.
    {.id = framework::unsloth,
     .summary = "Unsloth (fused Triton kernels, offloaded checkpointing)",
     // FastLanguageModel.get_peft_model(use_gradient_checkpointing="unsloth").
     .peft_checkpointing = checkpointing::full,
     .full_checkpointing = checkpointing::full,
     .fused_kernels = true},
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

}  // namespace gpuplan
