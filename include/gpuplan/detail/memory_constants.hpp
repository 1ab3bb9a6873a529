// detail/memory_constants.hpp — every fixed number of the memory model, each with
// its source. docs/memory-model.md § Overheads, reserved and device explains the
// defaults; the element sizes are those of the PyTorch dtypes named.
#pragma once

#include "gpuplan/units.hpp"

namespace gpuplan {

// Documented defaults of the allocator and the process (docs/memory-model.md § Overheads).
namespace memory_defaults {
// CUDA context + PyTorch kernels before the first tensor: 1343 MiB, HF transformers docs model_memory_anatomy (V100, eager module loading).
inline constexpr double cuda_context = 1343.0 * kMiB;
// cuBLAS workspace in PyTorch's caching allocator: CUBLAS_WORKSPACE_CONFIG ":4096:8" = 8 x 4 MiB (cuBLAS docs, PyTorch reproducibility notes).
inline constexpr double cublas_workspace = 32.0 * kMiB;
// NCCL communicator buffers per process once a collective runs: NCCL_BUFFSIZE 4 MiB x channels x peers, ~0.5 GiB on 8-GPU nodes (NCCL env docs).
inline constexpr double nccl_buffers = 512.0 * kMiB;
// A tensor-parallel serving engine's NCCL communicator buffers, allocated outside its sleep-mode pool and kept while it sleeps: ~1 GiB per rank at TP4 (vllm-project/vllm #51485; NVIDIA-NeMo/RL #223 measured 2,440 MiB asleep at TP2 vs 774 MiB at TP1).
inline constexpr double engine_nccl_buffers = 1024.0 * kMiB;
// Caching-allocator pool over live tensors: middle of the 5-15% reserved/allocated gap of transformer training (2 MiB block rounding, split segments).
inline constexpr double reserved_factor = 1.10;
// DeepSpeed ZeRO-1/2 reduce bucket: reduce_bucket_size default 5e8 elements (deepspeed/runtime/zero/config.py).
inline constexpr double zero_reduce_bucket_elems = 5e8;
// torchtune CEWithChunkedOutputLoss num_output_chunks default (torchtune/modules/loss/ce_chunked_output_loss.py).
inline constexpr double loss_chunks = 8;
}  // namespace memory_defaults

namespace detail::mem {
// Element sizes.
// torch.float32 element (IEEE 754 binary32).
inline constexpr double kFp32Bytes = 4;
// torch.long token index per position (input_ids / labels are int64).
inline constexpr double kTokenIndexBytes = 8;
// torch.bool element: dropout masks saved by CUDA native_dropout.
inline constexpr double kMaskBytes = 1;
// Bits per byte, to turn quantization bits per element into bytes.
inline constexpr double kBitsPerByte = 8;
// LayerNorm mean + rstd (RMSNorm: rstd) per token in fp32, kept for backward (aten native_layer_norm).
inline constexpr double kNormStatsBytes = 8;
// bitsandbytes 8-bit blockwise moment: 1 B + one fp32 absmax per block of 256 (Dettmers et al. 2022; bitsandbytes/optim/optimizer.py).
inline constexpr double kBnb8bitMoment = 1.0 + 4.0 / 256.0;

// Counts.
// K and V per layer in the KV cache (vLLM / HF DynamicCache).
inline constexpr double kKvTensors = 2;
// fp32 temporaries of the largest tensor per step of fused AdamW / bitsandbytes / DeepSpeed FusedAdam (one update buffer).
inline constexpr double kAdamStepTemporaries = 1;
// fp32 temporaries per step of HF transformers.optimization.Adafactor.step: grad.float(), update, p_data_fp32.
inline constexpr double kAdafactorStepTemporaries = 3;
// ZeRO-3 / FSDP units alive at once: the one in use + the one prefetched (torch FSDP BackwardPrefetch / forward_prefetch).
inline constexpr double kGatheredUnitsInFlight = 2;
// Blocks an activation-offloading run keeps on the GPU: the one in flight + the one being copied (torchtune OffloadActivations).
inline constexpr double kOffloadResidentBlocks = 2;
// Largest matmul count of one block: 2 attention blocks (self + cross) x q,k,v,o + gate, up, down.
inline constexpr int kMaxBlockMatmuls = 12;
}  // namespace detail::mem

}  // namespace gpuplan
