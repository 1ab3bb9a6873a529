// detail/memory_serving.hpp — the serving memory model (workload: infer) on one
// pipeline stage: weights, KV cache, the prefill working set, and how many
// sequences the KV cache leaves room for. docs/memory-model.md § Serving.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "gpuplan/detail/memory_allocator.hpp"
#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/detail/memory_facts.hpp"
#include "gpuplan/detail/memory_states.hpp"
#include "gpuplan/dtype.hpp"
#include "gpuplan/engine.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/peft.hpp"

namespace gpuplan::detail::mem {

// KV cache per token of one sequence, per GPU: K and V x layers with a cache x kv
// heads x head_dim x kv dtype. KV heads are split over tp; with fewer kv heads than
// tp each rank keeps one (Megatron / vLLM replicate). Encoder-decoders cache self-
// and cross-attention in every decoder layer; encoders cache nothing.
inline double kv_per_token(const architecture& a, const scenario& r) {
  const double tp = std::max(1, r.parallel.tp_size());
  const double heads = std::max(1.0, d(a.n_kv_heads()) / tp);
  const double kv_layers = d(a.kind == model_kind::encoder_decoder ? 2 * a.decoder_layers : (a.kind == model_kind::encoder ? 0 : a.layers));
  return kKvTensors * kv_layers * heads * d(a.d_head()) * bytes_per_element(r.inference.kv_cache_dtype);
}

// Weights served: base (any quantization) + the encoder blocks' LoRA adapters.
inline double serving_weights(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  // llama.cpp: every tensor of the stage in its GGUF type (the bits per weight of the whole file).
  if (profile_of(r.inference.eng).gguf_weights && r.inference.gguf)
    return (sp.linear + sp.other) * gguf_bits_per_weight(*r.inference.gguf) / kBitsPerByte;
  return base_weight_bytes(a, f, sp) + (is_peft(r.meth) ? (d(sp.enc_blocks) * f.lora_enc.params) / f.tp * f.pb.weight : 0);
}

struct kv_cache { double per_sequence = 0, total = 0; };

// The stage's share of the layers x (prompt_len + gen_len) tokens x batch sequences.
inline kv_cache kv_cache_of_stage(const architecture& a, const scenario& r, const stage_params& sp, double per_token) {
  const double blocks = d(sp.enc_blocks + sp.dec_blocks);
  const double share = blocks / std::max(1.0, d(a.total_layers()));
  const double per_seq_tokens = d(r.inference.prompt_len + r.inference.gen_len);
  const double batch = d(std::max<std::int64_t>(1, r.inference.batch));
  const double per_sequence = per_token * share * per_seq_tokens;
  return {per_sequence, per_sequence * batch};
}

// Prefill of the whole batch: per token the block input and its residual (2h) and
// the larger of q/k/v/attention output and the MLP intermediates (gated: gate, up,
// product) in e; eager attention adds fp32 scores + e probabilities per head and
// key; the LM head computes fp32 last-position logits only.
inline double prefill_working_set(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  const double e = f.pb.act;
  const double batch = d(std::max<std::int64_t>(1, r.inference.batch));
  const double P = d(r.inference.prompt_len);
  const double Tp = batch * P;
  const double h = d(a.hidden), qd = d(a.q_dim()), kvd = d(a.kv_dim());
  const double fm = a.is_moe() ? d(a.d_expert()) * d(a.experts_per_token) : d(a.ffn);
  const double mlp_intermediates = a.mlp == mlp_kind::gated ? 3 : 2;
  double act = Tp * e * (2 * h + std::max((qd + 2 * kvd + qd) / f.tp, mlp_intermediates * fm / f.tp));
  if (r.attn == attention::eager) act += batch * d(a.heads) / f.tp * P * P * (kFp32Bytes + e);
  if (sp.last && a.head == head_kind::lm) act += batch * d(a.vocab) / f.tp * kFp32Bytes;
  return act;
}

// The start-up profile of a paged engine: one step of `step_tokens` tokens through the
// model (the block working set above) plus fp32 logits of `max_seqs` sequences sampled
// (vllm/v1/worker/gpu_model_runner.py profile_run: _dummy_run + _dummy_sampler_run).
inline double profiled_activation_peak(const architecture& a, const scenario& r, const facts& f, const stage_params& sp,
                                       std::int64_t step_tokens, std::int64_t max_seqs) {
  scenario one = r;
  one.inference.batch = 1;
  one.inference.prompt_len = step_tokens;
  one.attn = attention::flash;  // the engines' attention kernels keep no score matrix
  double act = prefill_working_set(a, one, f, sp);
  if (sp.last && a.head == head_kind::lm) act += d(max_seqs - 1) * d(a.vocab) / f.tp * kFp32Bytes;
  return act;
}

// A paged engine's memory, per GPU: the budget (fraction x capacity), what it holds
// besides the KV cache, and the pool of fixed-size blocks made of the rest.
struct kv_pool {
  double budget = 0;       // memory fraction x capacity
  double weights = 0;
  double activations = 0;  // the profiled step's peak
  double non_torch = 0;    // CUDA context and libraries
  double cuda_graphs = 0;  // captured after the pool, outside the budget
  double bytes = 0;        // the pool
  double per_token = 0;    // KV bytes per token on this GPU (the stage's layers)
  std::int64_t block_tokens = 1, blocks = 0, tokens = 0;
  std::int64_t step_tokens = 0;
};

inline kv_pool kv_pool_of(const architecture& a, const scenario& r, const facts& f, const stage_params& sp, double per_token) {
  const engine_profile& e = profile_of(r.inference.eng);
  kv_pool p;
  const double cap = in_bytes(r.gpu.usable_memory);
  const double cap_gib = cap / kGiB;
  p.step_tokens = r.inference.max_batched_tokens > 0 ? r.inference.max_batched_tokens : step_tokens_of(e, cap_gib);
  p.budget = memory_fraction_of(r, cap_gib) * cap;
  p.weights = serving_weights(a, r, f, sp);
  p.activations = profiled_activation_peak(a, r, f, sp, p.step_tokens, e.max_seqs);
  p.non_torch = e.non_torch_bytes;
  p.cuda_graphs = decode_uses_cuda_graphs(r) ? e.cuda_graph_bytes : 0.0;
  const double share = d(sp.enc_blocks + sp.dec_blocks) / std::max(1.0, d(a.total_layers()));
  p.per_token = per_token * share;
  p.block_tokens = std::max<std::int64_t>(1, e.block_tokens);
  const double left = p.budget - p.weights - p.non_torch - (e.activations_in_budget ? p.activations : 0.0);
  const double block_bytes = p.per_token * d(p.block_tokens);
  if (left > 0 && block_bytes > 0) {
    p.blocks = static_cast<std::int64_t>(std::floor(left * e.pool_share / block_bytes));
    p.bytes = d(p.blocks) * block_bytes;
    p.tokens = p.blocks * p.block_tokens;
  }
  return p;
}

// Tokens one request holds in the pool: prompt + output rounded up to whole blocks.
inline std::int64_t pool_tokens_per_request(const scenario& r, std::int64_t block_tokens) {
  const std::int64_t len = r.inference.prompt_len + r.inference.gen_len;
  return (len + block_tokens - 1) / block_tokens * block_tokens;
}

// llama.cpp's CUDA compute buffer: one micro-batch (n_ubatch 512, common/common.h) of fp32
// intermediates (MLP up/gate, q/k/v/o) and its logits (ggml-cuda graph allocator).
inline constexpr double kLlamaCppUbatch = 512;
inline double llama_cpp_compute_buffer(const architecture& a, const facts& f) {
  const double fm = a.is_moe() ? d(a.d_expert()) * d(a.experts_per_token) : d(a.ffn);
  return kLlamaCppUbatch * kFp32Bytes * ((2 * fm + 4 * d(a.hidden)) / f.tp + d(a.vocab));
}

// Share of a stage's layers llama.cpp keeps on the GPU (-ngl; unset: all).
inline double gpu_layer_share(const architecture& a, const scenario& r) {
  if (!r.inference.gpu_layers) return 1.0;
  return std::clamp(d(*r.inference.gpu_layers) / std::max(1.0, d(a.total_layers())), 0.0, 1.0);
}

// Sequences of prompt_len + gen_len whose KV cache fits next to the overheads,
// weights and prefill working set, all but the overheads scaled by the allocator's pool.
inline std::int64_t concurrent_sequences(const scenario& r, const device_peaks& dev, double weights, double prefill,
                                         double kv_per_sequence) {
  using memory_defaults::reserved_factor;
  const double cap = in_bytes(r.gpu.usable_memory);
  const double free = cap - (dev.overhead + (weights + prefill) * reserved_factor);
  if (kv_per_sequence <= 0 || free <= 0) return 0;
  return static_cast<std::int64_t>(std::floor(free / (kv_per_sequence * reserved_factor)));
}

}  // namespace gpuplan::detail::mem
