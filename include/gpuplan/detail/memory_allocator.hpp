// detail/memory_allocator.hpp — phase 5 of the memory model (training and
// serving): from the peak of live tensors to the caching allocator's pool and to
// what nvidia-smi shows. docs/memory-model.md § Overheads, reserved and device.
#pragma once

#include <algorithm>

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

// What a pool squeezed under memory pressure still holds of the live tensors: them with
// single-stream fragmentation, the run's factor but at most memory_defaults::reserved_factor
// (the other streams' cached blocks are released first). plan/margin.hpp firm_device reads it too.
inline double squeezed_live(double allocated, double factor = memory_defaults::reserved_factor) {
  return allocated * std::min(factor, memory_defaults::reserved_factor);
}

// reserved = allocated x reserved_factor + cuBLAS workspace;
// device = reserved + CUDA context + NCCL buffers (more than one GPU) + paged
// optimizer state (CUDA managed memory, outside the allocator). The factor and the
// context are the run's (profile.hpp: the defaults unless calibrated).
// Under memory pressure the pool stops growing: a failed cudaMalloc makes the allocator
// release every cached free segment, of every stream, and retry (CUDACachingAllocator.cpp
// release_cached_blocks), so on a GPU of `capacity` bytes (0: no limit) the pool is at most
// what the context leaves, as long as the live tensors with single-stream fragmentation
// (memory_defaults::reserved_factor) fit there; beyond that it is their size (does not fit).
inline device_peaks allocator_and_context(double allocated, double paged, int num_gpus, const memory_params& mp = {},
                                          double capacity = 0) {
  using memory_defaults::cublas_workspace;
  using memory_defaults::nccl_buffers;
  device_peaks p;
  p.allocated = allocated;
  p.reserved = allocated * mp.reserved_factor + cublas_workspace;
  const double context = mp.cuda_context + (num_gpus > 1 ? nccl_buffers : 0.0);
  const double room = capacity - context;
  p.overhead = context + cublas_workspace;
  if (capacity > 0 && p.reserved > room) {
    const double squeezed = squeezed_live(allocated, mp.reserved_factor) + cublas_workspace;
    if (squeezed <= room) {  // the pool fills the card exactly (not room + context, which may round above it)
      p.reserved = room;
      p.device = capacity + paged;
      return p;
    }
    p.reserved = squeezed;
  }
  p.device = p.reserved + context + paged;
  return p;
}

}  // namespace gpuplan::detail::mem
