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
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::detail::mem {

// KV cache per token of one sequence, per GPU: K and V x layers with a cache x kv
// heads x head_dim x kv dtype. KV heads are split over tp; with fewer kv heads than
// tp each rank keeps one (Megatron / vLLM replicate). Encoder-decoders cache self-
// and cross-attention in every decoder layer; encoders cache nothing.
inline double kv_per_token(const architecture& a, const scenario& r) {
  const double tp = std::max(1, r.parallel.tp);
  const double heads = std::max(1.0, d(a.n_kv_heads()) / tp);
  const double kv_layers = d(a.kind == model_kind::encoder_decoder ? 2 * a.decoder_layers : (a.kind == model_kind::encoder ? 0 : a.layers));
  return kKvTensors * kv_layers * heads * d(a.d_head()) * bytes_per_element(r.inference.kv_cache_dtype);
}

// Weights served: base (any quantization) + the encoder blocks' LoRA adapters.
inline double serving_weights(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  return base_weight_bytes(a, f, sp) + (is_lora(r) ? (d(sp.enc_blocks) * f.lora_enc.params) / f.tp * f.pb.weight : 0);
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
