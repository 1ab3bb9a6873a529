// detail/memory_allocator.hpp — phase 5 of the memory model (training and
// serving): from the peak of live tensors to the caching allocator's pool and to
// what nvidia-smi shows. docs/memory-model.md § Overheads, reserved and device.
#pragma once

#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/profile.hpp"

namespace gpuplan::detail::mem {

// The three peaks per GPU and the fixed overheads, in bytes.
struct device_peaks {
  double allocated = 0;  // live tensors (torch.cuda.max_memory_allocated)
  double reserved = 0;   // caching allocator's pool (torch.cuda.max_memory_reserved)
  double overhead = 0;   // CUDA context + NCCL buffers + cuBLAS workspace
  double device = 0;     // nvidia-smi: reserved + context + NCCL + paged state
};

// reserved = allocated x reserved_factor + cuBLAS workspace;
// device = reserved + CUDA context + NCCL buffers (more than one GPU) + paged
// optimizer state (CUDA managed memory, outside the allocator). The factor and the
// context are the run's (profile.hpp: the defaults unless calibrated).
inline device_peaks allocator_and_context(double allocated, double paged, int num_gpus, const memory_params& mp = {}) {
  using memory_defaults::cublas_workspace;
  using memory_defaults::nccl_buffers;
  device_peaks p;
  p.allocated = allocated;
  p.reserved = allocated * mp.reserved_factor + cublas_workspace;
  const double context = mp.cuda_context + (num_gpus > 1 ? nccl_buffers : 0.0);
  p.overhead = context + cublas_workspace;
  p.device = p.reserved + context + paged;
  return p;
}

}  // namespace gpuplan::detail::mem
