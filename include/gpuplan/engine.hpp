// engine.hpp — the software that serves the model (workload infer): how each inference
// engine holds the KV cache, what it reserves at start-up, and what its decode step costs
// beyond the GPU's roofline. One profile per engine, as data; the estimators read the
// profile's fields and never test the engine's name. docs/serving.md explains each field.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan {

// SGLang's rule for mem_fraction_static: reserve base + per_gpu x (tp x pp) GiB on GPUs
// below `below_gib` and give the rest to weights + KV pool.
struct memory_reserve_rule {
  double below_gib = 0;
  double base_gib = 0;
  double per_gpu_gib = 0;
  std::int64_t step_tokens = 0;  // the chunked-prefill size on such a GPU
};

inline constexpr int kNoCudaGraphs = 1 << 30;  // engine_profile::cuda_graphs_from_sm of an engine without them

struct engine_profile {
  engine id = engine::hf;
  std::string_view summary;

  // ---- memory ----
  // The KV cache is one pool of fixed-size blocks allocated at start-up from what the
  // memory budget leaves (vLLM, SGLang, TGI); otherwise it grows with batch x length.
  bool paged_pool = false;
  double memory_fraction = 1.0;              // the share of the GPU's memory the engine budgets
  std::span<const memory_reserve_rule> reserve_rules{};  // when non-empty: the fraction by GPU size (SGLang)
  // The fraction is of the memory free when the engine starts (SGLang: model_runner.py takes
  // total_gpu_memory from get_available_gpu_memory, torch.cuda.mem_get_info's free, before
  // loading), not of the GPU's total (vLLM >= 0.7: gpu_worker.py requested_memory =
  // total x gpu_memory_utilization). Alone on a GPU the two agree up to the CUDA context;
  // beside a trainer that already holds memory (RL, rl.hpp) the first is smaller.
  bool fraction_of_free = false;
  bool activations_in_budget = true;         // the profiled activation peak is taken from the budget
  double pool_share = 1.0;                   // share of what is left that becomes the pool (TGI wiggle room)
  std::int64_t block_tokens = 1;             // tokens per KV block (page)
  std::int64_t step_tokens_small = 0;        // default tokens per engine step (max_num_batched_tokens), GPU < 70 GiB
  std::int64_t step_tokens_large = 0;        // the same on GPUs of 70 GiB or more
  std::int64_t max_seqs = 1;                 // sequences per step the start-up profile samples logits for
  double non_torch_bytes = 0;                // CUDA context and libraries outside the allocator, counted in the budget
  double cuda_graph_bytes = 0;               // CUDA graph pool captured after the pool, outside the budget

  // ---- time ----
  bool continuous_batching = false;          // requests join and leave every step; prefill is chunked into steps
  // Kernels one decoder layer's decode step launches; the engine replays them as one CUDA
  // graph on GPUs from compute capability `cuda_graphs_from_sm` (e.g. 70; kNoCudaGraphs:
  // never), where each costs the GPU kGraphKernelSeconds beyond its bytes, and otherwise
  // launches them one by one at `eager_kernel_seconds` each (timing_serving.hpp).
  double decode_kernels_per_layer = 0;
  bool separate_bias_kernels = false;        // q/k/v biases are added by kernels of their own (+3 per layer)
  int cuda_graphs_from_sm = kNoCudaGraphs;
  double eager_kernel_seconds = 0;
  double step_overhead_seconds = 0;          // scheduler, sampling and output handling per engine step
  // Passes over the KV cache per decode step: 1, the attention's read; transformers'
  // DynamicCache.update appends with torch.cat (cache_utils.py), reading the old cache and
  // writing a new one every step: 3.
  double kv_cache_passes = 1;
  bool int4_dequantizes = false;             // int4 GPTQ/AWQ kernels dequantise to 16-bit: weights cost their fp16 bytes
  bool int8_is_llm_int8 = false;             // int8 weights run bitsandbytes LLM.int8 (outlier decomposition)
  bool gguf_weights = false;                 // weights are GGUF tensors; layers may stay on the CPU (-ngl)

  // The engine can replay its decode step as a CUDA graph on some GPU.
  [[nodiscard]] constexpr bool has_cuda_graphs() const { return cuda_graphs_from_sm != kNoCudaGraphs; }
};

namespace detail {
// SGLang python/sglang/srt/server_args.py (v0.4.7, __post_init__): reserved_mem by GPU memory,
// mem_fraction_static = (gpu_mem - reserved_mem) / gpu_mem; chunked_prefill_size 2048 / 8192 / 16384.
inline constexpr std::array<memory_reserve_rule, 4> kSglangReserve{{
    {35, 2.8, 0.1, 2048}, {90, 9.5, 0.5, 8192}, {160, 12, 0.5, 8192},
    {std::numeric_limits<double>::infinity(), 32, 0, 16384}}};
// PyTorch eager dispatch + kernel launch per op on the decode path, ~12 us (PyTorch
// "Performance Tuning Guide" / gpt-fast blog: eager Llama-7B decode is CPU-overhead bound).
inline constexpr double kEagerOpSeconds = 12e-6;
// Ops per decoder layer of a transformers Llama/Qwen2 decode step: 2 RMSNorms (6 each), q/k/v/o
// (+3 bias adds), rotary (~10), DynamicCache cat (2), attention (3), 2 residual adds, MLP (5).
inline constexpr double kHfOpsPerLayer = 45;
// Kernels per decoder layer of a vLLM / SGLang / TGI Llama decode step: fused add + RMSNorm (2),
// the fused qkv and gate_up GEMMs, o and down (4), rotary, KV-cache write, attention with its
// split-KV combine (4), SiLU-and-mul (1) (vllm/model_executor/models/llama.py LlamaDecoderLayer).
inline constexpr double kFusedDecodeKernelsPerLayer = 11;
// Kernels per decoder layer of a llama.cpp decode step (llama-graph.cpp build for llama, CUDA
// backend, flash attention off): RMSNorm + weight mul (2) twice, seven quantized mat-vecs each
// with its q8_1 quantization of the input (14), rope q and k (2), K and V copies into the cache
// (2), KQ, softmax, KQV and the permute copy (4), SiLU and the gate mul (2), two residual adds (2):
// 30, plus one add per q/k/v bias where the model has them.
inline constexpr double kLlamaCppDecodeKernelsPerLayer = 30;
inline constexpr double kBiasAddKernels = 3;  // q, k and v bias adds
// ggml-cuda launches a kernel from C++ at 3.3 us of step time where it has no CUDA graph: the
// median of (measured - roofline) / (32 layers x 30 kernels) over llama.cpp #6766 (LLaMA-2 7B
// Q4_0 tg, RTX 3090 116.3 t/s, RTX 4090 138.3: 3.33, 2.28 us) and #6763 (llama-2-7b Q4_K_M,
// H100 PCIe 143.4: 4.28 us) before graphs; with them (128.3, 146.8, 163.8 t/s: 2.49, 1.84,
// 3.36 us) the same median is 2.5 us: kGraphKernelSeconds.
inline constexpr double kGgmlEagerKernelSeconds = 3.3e-6;
inline constexpr double kGraphKernelSeconds = 2.5e-6;
}  // namespace detail

inline constexpr std::array<engine_profile, 5> kEngineProfiles{{
    // transformers generate(): eager PyTorch, DynamicCache growing with batch x length.
    {.id = engine::hf,
     .summary = "transformers generate() (eager, KV grows with batch x length)",
     .decode_kernels_per_layer = detail::kHfOpsPerLayer,
     .eager_kernel_seconds = detail::kEagerOpSeconds,
     .kv_cache_passes = 3,
     .int4_dequantizes = true,
     .int8_is_llm_int8 = true},  // load_in_8bit=True is bitsandbytes LLM.int8 (transformers quantization docs)  // AutoGPTQ/AutoAWQ kernels in transformers dequantise per matmul (Qwen2.5 speed benchmark: int4 no faster than bf16)
    // vLLM V1: vllm/v1/worker/gpu_worker.py determine_available_memory: requested =
    // total x gpu_memory_utilization; KV = requested - (weights + profiled peak + non-torch).
    {.id = engine::vllm,
     .summary = "vLLM (PagedAttention pool, continuous batching, CUDA graphs)",
     .paged_pool = true,
     .memory_fraction = 0.9,  // vllm/config.py CacheConfig.gpu_memory_utilization default 0.9
     .block_tokens = 16,      // vllm/config.py CacheConfig.block_size default 16 on CUDA
     // vllm/engine/arg_utils.py get_batch_defaults, OPENAI_API_SERVER: 2048 (< 70 GiB or A100), 8192 above.
     .step_tokens_small = 2048,
     .step_tokens_large = 8192,
     .max_seqs = 256,  // same place: max_num_seqs 256 (1024 on >= 70 GiB non-A100)
     // "non_torch_memory=0.35GiB" in vLLM's memory-profiling log (github.com/vllm-project/vllm/issues/10517).
     .non_torch_bytes = 0.35 * kGiB,
     // "Graph capturing finished ... took 0.5 GiB" order of the capture log (vllm/v1/worker/gpu_model_runner.py capture_model).
     .cuda_graph_bytes = 0.5 * kGiB,
     .continuous_batching = true,
     .decode_kernels_per_layer = detail::kFusedDecodeKernelsPerLayer,
     .cuda_graphs_from_sm = 0,  // decode replayed as CUDA graphs (--enforce-eager: scenario inference.cuda_graphs false)
     .eager_kernel_seconds = detail::kEagerOpSeconds,
     // vLLM v0.6.0 blog (blog.vllm.ai 2024-09-05): scheduling, sampling and detokenisation
     // took a large share of each step before the async output processor; ~1 ms per step assumed.
     .step_overhead_seconds = 1e-3},
    // SGLang: model_runner.py profile_max_num_token: KV = free after weights - total x (1 - mem_fraction_static).
    {.id = engine::sglang,
     .summary = "SGLang (RadixAttention token pool, continuous batching, CUDA graphs)",
     .paged_pool = true,
     .memory_fraction = 0.88,  // server_args.py fallback mem_fraction_static 0.88 (tp 1)
     .reserve_rules = detail::kSglangReserve,
     .fraction_of_free = true,
     .activations_in_budget = false,  // the reserved (1 - fraction) holds activations and CUDA graphs
     .block_tokens = 1,               // server_args.py page_size default 1
     .step_tokens_small = 2048,
     .step_tokens_large = 8192,
     .max_seqs = 256,
     .non_torch_bytes = 0.35 * kGiB,  // the same CUDA context as vLLM's log (both PyTorch processes)
     .continuous_batching = true,
     .decode_kernels_per_layer = detail::kFusedDecodeKernelsPerLayer,
     .cuda_graphs_from_sm = 0,  // decode replayed as CUDA graphs (--enforce-eager: scenario inference.cuda_graphs false)
     .eager_kernel_seconds = detail::kEagerOpSeconds,
     .step_overhead_seconds = 0.5e-3},  // overlap scheduler hides most CPU work (SGLang v0.4 blog, zero-overhead batch scheduler)
    // TGI: server/text_generation_server/models/flash_causal_lm.py warmup: a prefill of
    // max_batch_prefill_tokens, then blocks = free x TGI_WIGGLE_ROOM / block bytes.
    {.id = engine::tgi,
     .summary = "text-generation-inference (paged blocks, continuous batching, CUDA graphs)",
     .paged_pool = true,
     .memory_fraction = 1.0,  // launcher --cuda-memory-fraction default 1.0
     .pool_share = 0.90,      // server/text_generation_server/models/globals.py TGI_WIGGLE_ROOM default 0.90
     .block_tokens = 16,      // globals.py BLOCK_SIZE 16 with the paged attention kernels
     .step_tokens_small = 4096,  // launcher --max-batch-prefill-tokens default 4096
     .step_tokens_large = 4096,
     .max_seqs = 256,
     .non_torch_bytes = 0.35 * kGiB,
     .cuda_graph_bytes = 0.5 * kGiB,
     .continuous_batching = true,
     .decode_kernels_per_layer = detail::kFusedDecodeKernelsPerLayer,
     .cuda_graphs_from_sm = 0,  // decode replayed as CUDA graphs (--enforce-eager: scenario inference.cuda_graphs false)
     .eager_kernel_seconds = detail::kEagerOpSeconds,
     .step_overhead_seconds = 1e-3},
    // llama.cpp (llama-server): GGUF weights, KV for the whole context allocated at start,
    // -ngl layers on the GPU and the rest computed by the CPU from host memory.
    {.id = engine::llama_cpp,
     .summary = "llama.cpp (GGUF, fixed context, -ngl GPU/CPU split)",
     .step_tokens_small = 2048,  // common/common.h n_batch default 2048 (prompt tokens per decode call)
     .step_tokens_large = 2048,
     .non_torch_bytes = 0.35 * kGiB,  // CUDA context of the ggml-cuda backend (same driver context)
     .continuous_batching = true,     // llama-server slots share one batch per step
     .decode_kernels_per_layer = detail::kLlamaCppDecodeKernelsPerLayer,
     .separate_bias_kernels = true,
     // ggml-cuda.cu ggml_cuda_graph_set_enabled: CUDA graphs from Volta (compute capability 7.0)
     // since #25749; from Ampere (8.0) before it.
     .cuda_graphs_from_sm = 70,
     .eager_kernel_seconds = detail::kGgmlEagerKernelSeconds,
     .step_overhead_seconds = 0.3e-3,  // ggml graph build + sampling per token (llama-bench tg vs roofline gap, assumed)
     .gguf_weights = true},
}};

constexpr bool engine_profiles_in_enum_order() {
  for (std::size_t i = 0; i < kEngineProfiles.size(); ++i)
    if (static_cast<std::size_t>(kEngineProfiles[i].id) != i) return false;
  return true;
}
static_assert(engine_profiles_in_enum_order() && kEngineProfiles.size() == kEngineNames.size());

constexpr const engine_profile& profile_of(engine e) {
  const auto i = static_cast<std::size_t>(e);
  return i < kEngineProfiles.size() ? kEngineProfiles[i] : kEngineProfiles[0];
}

// Whether the decode step runs as a CUDA graph: the scenario's inference.cuda_graphs, else the
// engine's default on this GPU.
inline bool decode_uses_cuda_graphs(const scenario& run) {
  const engine_profile& e = profile_of(run.inference.eng);
  return run.inference.cuda_graphs.value_or(run.gpu.sm() >= e.cuda_graphs_from_sm);
}

// Host memory bandwidth that bounds llama.cpp's CPU layers: dual-channel DDR5-4800,
// 2 channels x 8 B x 4.8 GT/s = 76.8 GB/s (JEDEC JESD79-5 data rate; a typical desktop).
inline constexpr double kHostMemoryBytesPerSecond = 76.8e9;

// Bits per weight of a GGUF type over a whole model file: block formats from
// ggml/src/ggml-common.h (Q8_0: 34 B / 32, Q4_0: 18 B / 32, Q6_K: 210 B / 256); the _M
// mixes as tools/quantize/README.md measures them on Llama-2-7B (Q4_K_M 4.84, Q5_K_M 5.68).
constexpr double gguf_bits_per_weight(gguf_type t) {
  switch (t) {
    case gguf_type::f16: return 16.0;
    case gguf_type::q8_0: return 34.0 * 8 / 32;
    case gguf_type::q6_k: return 210.0 * 8 / 256;
    case gguf_type::q5_k_m: return 5.68;
    case gguf_type::q4_k_m: return 4.84;
    case gguf_type::q4_0: return 18.0 * 8 / 32;
  }
  return 16.0;
}

// The share of the GPU's memory an engine budgets, for a GPU of `capacity_gib` serving
// with `model_parallel` = tp x pp GPUs per replica.
constexpr double memory_fraction_of(const engine_profile& p, double capacity_gib, int model_parallel) {
  for (const auto& r : p.reserve_rules)
    if (capacity_gib < r.below_gib) return (capacity_gib - (r.base_gib + r.per_gpu_gib * model_parallel)) / capacity_gib;
  return p.memory_fraction;
}

// The scenario's engine budget: its memory_fraction where set (vLLM --gpu-memory-utilization,
// SGLang --mem-fraction-static), else the engine's default for the GPU and replica.
constexpr double memory_fraction_of(const scenario& s, double capacity_gib) {
  if (s.inference.memory_fraction) return *s.inference.memory_fraction;
  return memory_fraction_of(profile_of(s.inference.eng), capacity_gib, s.parallel.tp_size() * s.parallel.pp);
}

// Tokens of one engine step (the start-up profile's activation peak and the prefill chunk).
constexpr std::int64_t step_tokens_of(const engine_profile& p, double capacity_gib) {
  for (const auto& r : p.reserve_rules)
    if (capacity_gib < r.below_gib) return r.step_tokens;
  // vllm/engine/arg_utils.py: the larger default from 70 GiB of device memory.
  return capacity_gib >= 70 ? p.step_tokens_large : p.step_tokens_small;
}

}  // namespace gpuplan
