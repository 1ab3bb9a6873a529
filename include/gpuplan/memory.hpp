// memory.hpp — the memory model: every byte on every GPU for training and serving.
// (Interface fixed here; the model is implemented below by the memory issue.)
#pragma once

#include <vector>

#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/warnings.hpp"

namespace gpuplan {

// Per-GPU memory. Three peaks:
//   peak_allocated — live tensors (torch.cuda.max_memory_allocated)
//   peak_reserved  — the caching allocator's pool (torch.cuda.max_memory_reserved)
//   device         — what nvidia-smi shows: reserved + CUDA context + library workspaces
//                    + memory outside PyTorch's allocator (paged optimizer state)
// `fits` compares device with the GPU's usable capacity.
struct memory_breakdown {
  Bytes weights = bytes(0);         // (quantized) base and trainable weights in compute dtype
  Bytes master_weights = bytes(0);  // fp32 master copy (mixed precision)
  Bytes gradients = bytes(0);
  Bytes optimizer = bytes(0);       // optimizer state
  Bytes activations = bytes(0);     // saved for backward at the peak
  Bytes transient = bytes(0);       // largest working set alive at the peak
  Bytes overhead = bytes(0);        // CUDA context, cuBLAS/NCCL workspaces
  Bytes peak_allocated = bytes(0);
  Bytes peak_reserved = bytes(0);
  Bytes device = bytes(0);
  Bytes capacity = bytes(0);
  Bytes headroom = bytes(0);        // capacity - device (negative when it does not fit)
  bool fits = false;
  Bytes host = bytes(0);            // host (CPU) RAM for offloaded state, per node
  int stage = 0;                    // pipeline stage these figures describe
  // Serving only: KV cache and how many sequences of prompt_len+gen_len fit.
  Bytes kv_cache = bytes(0);
  std::int64_t max_concurrent_sequences = 0;
  warning_set warnings = 0;
};

// One breakdown per pipeline stage (size pp); estimate_memory reports the most loaded.
inline std::vector<memory_breakdown> estimate_memory_stages(const architecture& model, const scenario& run);
inline memory_breakdown estimate_memory(const architecture& model, const scenario& run);

// Parameters that receive gradients under the run's method (full, freeze, LoRA adapters).
inline std::int64_t trainable_parameters(const architecture& model, const scenario& run);

// PLACEHOLDER until the memory issue lands: zero-filled results so dependants link.
inline std::int64_t trainable_parameters(const architecture& model, const scenario&) {
  return count_parameters(model).total;
}
inline memory_breakdown estimate_memory(const architecture&, const scenario& run) {
  memory_breakdown m;
  m.capacity = run.gpu.usable_memory;
  return m;
}
inline std::vector<memory_breakdown> estimate_memory_stages(const architecture& model, const scenario& run) {
  return {estimate_memory(model, run)};
}

}  // namespace gpuplan
