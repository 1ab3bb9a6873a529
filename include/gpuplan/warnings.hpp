// warnings.hpp — conditions that do not stop an estimate but the user must see.
// A bit set keeps estimates allocation-free; messages are made at the edge.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpuplan {

enum warning : std::uint32_t {
  warn_bf16_emulated = 1u << 0,        // bf16 on a GPU without bf16 tensor cores (T4, V100)
  warn_host_memory = 1u << 1,          // offload needs more host RAM than a typical node has
  warn_unverified_gpu = 1u << 2,       // a GPU figure the catalog marks unverified
  warn_no_nvlink_tp = 1u << 3,         // tensor parallelism over PCIe only
  warn_flash_unsupported = 1u << 4,    // FlashAttention-2 needs sm_80+; SDPA memory-efficient kernel assumed
  warn_seq_beyond_positions = 1u << 5, // seq_len above the model's max_position_embeddings
  warn_fp32_accumulate_half_rate = 1u << 6,  // GeForce: FP32-accumulate runs at half the FP16-accumulate rate
  warn_tf32_unsupported = 1u << 7,     // tf32 requested on a GPU without TF32 tensor cores: FP32 rate
  // Layouts the training framework cannot launch (framework.hpp framework_layout_warnings);
  // the planner never proposes them, an explicit layout is estimated and flagged.
  warn_framework_gpus = 1u << 8,         // more GPUs than the framework runs on (Unsloth: one)
  warn_framework_parallelism = 1u << 9,  // tensor / pipeline parallelism the framework has not
  warn_framework_zero = 1u << 10,        // a ZeRO stage or offload variant the framework does not run
  warn_zero_with_pipeline = 1u << 11,    // ZeRO-2/3 with pipeline parallelism (no framework runs it)
};
using warning_set = std::uint32_t;

constexpr std::string_view warning_message(warning w) {
  switch (w) {
    case warn_bf16_emulated: return "bf16 is emulated on this GPU (no bf16 tensor cores): expect the FP32 rate; fp16-mixed is faster";
    case warn_host_memory: return "offload needs more host RAM than a typical node provides";
    case warn_unverified_gpu: return "some figures for this GPU are unverified in the catalog";
    case warn_no_nvlink_tp: return "tensor parallelism over PCIe (no NVLink): communication will dominate";
    case warn_flash_unsupported: return "FlashAttention-2 needs sm_80+; assuming PyTorch SDPA's memory-efficient kernel";
    case warn_seq_beyond_positions: return "seq_len exceeds the model's max_position_embeddings";
    case warn_fp32_accumulate_half_rate: return "GeForce tensor cores run FP32-accumulate at half the FP16-accumulate rate";
    case warn_tf32_unsupported: return "tf32 needs TF32 tensor cores (sm_80+); this GPU runs the matmuls in FP32";
    case warn_framework_gpus: return "the framework runs on fewer GPUs than this layout (Unsloth: one); the planner would not propose it";
    case warn_framework_parallelism:
      return "the framework has no tensor or pipeline parallelism for this layout (--framework megatron has); the planner would not propose it";
    case warn_framework_zero:
      return "the framework does not run this ZeRO stage or offload variant (gpuplan explain names its rules); the planner would not propose it";
    case warn_zero_with_pipeline:
      return "ZeRO-2/3 cannot run with pipeline parallelism (DeepSpeed's PipelineEngine asserts; Megatron's distributed optimizer is ZeRO-1)";
  }
  return "";
}

}  // namespace gpuplan
