// flops.hpp — floating-point operations of a training step or a forward pass.
// Model FLOPs exclude activation recomputation; hardware FLOPs include it
// (Korthikanti et al. 2022, §6; Chowdhery et al. 2022, App. B for MFU/HFU).
// Conventions (docs/time-model.md):
//   * A matmul of (m x k) by (k x n) costs 2·m·k·n FLOPs (one multiply-add = 2).
//   * Backward of a trainable linear = 2x its forward (input grad + weight grad);
//     a frozen linear on the gradient path needs only the input grad (1x).
//   * Attention core (QK^T and AV) forward = 4·b·s_q·s_kv·(heads·d_head) per layer;
//     FlashAttention skips fully masked blocks, so causal self-attention costs half
//     (Dao 2023, FlashAttention-2 §3.1 "causal masking"); eager kernels compute the
//     full s x s product and then mask it.
//   * FlashAttention's backward recomputes the scores inside the kernel: its
//     hardware backward is 2.5x the forward, model backward 2x (Dao 2023, §4).
//   * Norms, activations, softmax and residual adds are not counted here (they are
//     bandwidth-bound and timed from bytes in timing.hpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "gpuplan/model.hpp"
#include "gpuplan/peft.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan {

// FLOPs of one forward pass over `batch` sequences, all layers, by component.
struct forward_flops {
  FlopCount block_linear = flops(0);    // q,k,v,o (self + cross), MLP/experts, MoE router
  FlopCount attention_core = flops(0);  // QK^T + AV (self and cross), causal halving applied for flash
  FlopCount adapters = flops(0);        // LoRA A and B matrices
  FlopCount head = flops(0);            // LM head / MLM head / pooler + classifier
  FlopCount embed = flops(0);           // ViT patch projection (token embeddings are look-ups: 0)
  [[nodiscard]] FlopCount total() const { return block_linear + attention_core + adapters + head + embed; }
};

// FLOPs of one optimizer step over the global batch (all GPUs together).
struct flop_breakdown {
  FlopCount forward = flops(0);
  FlopCount backward = flops(0);         // model backward (2x trainable matmuls, 1x frozen input-grad path)
  FlopCount recompute = flops(0);        // activation recomputation (selective: attention core; full: block forward)
  FlopCount flash_recompute = flops(0);  // FlashAttention backward's in-kernel score recompute (0.5x core forward)
  FlopCount model = flops(0);            // forward + backward
  FlopCount hardware = flops(0);         // model + recompute + flash_recompute
  forward_flops pass{};                  // one forward pass of the whole global batch, by component
};

namespace detail {

// Sequence length the model actually sees (a ViT's is fixed by its patch grid).
inline std::int64_t effective_seq(const architecture& a, std::int64_t seq_len) {
  return a.is_vit() ? a.vit_tokens() : seq_len;
}

// Linear FLOPs of one block for `tokens` tokens (2·T·in·out per instance).
// MoE: experts run on top-k of the tokens each, shared experts on all, plus the
// h x E router (Fedus et al. 2021 Switch; Mixtral modeling file).
inline double block_linear_flops(const architecture& a, double tokens, bool decoder_block) {
  double f = 0;
  for (int i = 0; i < kLinearKinds; ++i) {
    const auto id = static_cast<linear_id>(i);
    const linear_shape s = linear_of(a, id, decoder_block);
    if (s.count == 0) continue;
    const bool mlp = id == linear_id::gate || id == linear_id::up || id == linear_id::down;
    double count = static_cast<double>(s.count);
    if (mlp && a.is_moe()) count = static_cast<double>(a.experts_per_token + a.shared_experts);
    f += 2.0 * tokens * static_cast<double>(s.in) * static_cast<double>(s.out) * count;
  }
  if (a.is_moe()) f += 2.0 * tokens * static_cast<double>(a.hidden) * static_cast<double>(a.experts);
  return f;
}

// LoRA adapter FLOPs of one block: r·(in+out) multiply-adds per token per targeted
// linear instance (Hu et al. 2021: x·A (in x r) then ·B (r x out)).
inline double block_adapter_flops(const architecture& a, const scenario& run, double tokens, bool decoder_block) {
  if (!has_low_rank_path(run.meth)) return 0;  // LoRA, DoRA, VeRA (peft.hpp)
  double f = 0;
  const double r = static_cast<double>(adapter_rank(run));
  for (int i = 0; i < kLinearKinds; ++i) {
    if ((run.lora.targets & (1u << i)) == 0) continue;
    const auto id = static_cast<linear_id>(i);
    const linear_shape s = linear_of(a, id, decoder_block);
    if (s.count == 0) continue;
    const bool mlp = id == linear_id::gate || id == linear_id::up || id == linear_id::down;
    double count = static_cast<double>(s.count);
    if (mlp && a.is_moe()) count = static_cast<double>(a.experts_per_token + a.shared_experts);
    f += 2.0 * tokens * r * static_cast<double>(s.in + s.out) * count;
  }
  return f;
}

// Attention core of one layer: 4·b·s_q·s_kv·q_dim (QK^T: 2·s_q·s_kv·d per head, AV the same).
inline double attention_core_flops(const architecture& a, double batch, double s_q, double s_kv, bool causal, bool flash) {
  const double full = 4.0 * batch * s_q * s_kv * static_cast<double>(a.q_dim());
  return (causal && flash) ? 0.5 * full : full;
}

}  // namespace detail

// Forward FLOPs of `batch` sequences of `seq_len` tokens (decoder sequences of an
// encoder-decoder are assumed as long as the encoder's, stated in docs/time-model.md).
inline forward_flops forward_pass_flops(const architecture& a, const scenario& run, double batch, std::int64_t seq_len) {
  forward_flops out;
  const double s = static_cast<double>(detail::effective_seq(a, seq_len));
  const double T = batch * s;
  const bool flash = run.attn == attention::flash;
  const bool causal_self = a.kind != model_kind::encoder;  // decoder-only and the decoder of enc-dec
  const double L = static_cast<double>(a.layers);
  const double Ld = static_cast<double>(a.decoder_layers);
  double lin = 0, core = 0, ad = 0;
  if (a.kind == model_kind::encoder_decoder) {
    // Encoder: non-causal self-attention; decoder: causal self + non-causal cross
    // (cross k,v project encoder outputs: same token count under the equal-length assumption).
    lin = L * detail::block_linear_flops(a, T, false) + Ld * detail::block_linear_flops(a, T, true);
    core = L * detail::attention_core_flops(a, batch, s, s, false, flash) +
           Ld * (detail::attention_core_flops(a, batch, s, s, true, flash) +
                 detail::attention_core_flops(a, batch, s, s, false, flash));
    ad = L * detail::block_adapter_flops(a, run, T, false) + Ld * detail::block_adapter_flops(a, run, T, true);
  } else {
    lin = L * detail::block_linear_flops(a, T, false);
    core = L * detail::attention_core_flops(a, batch, s, s, causal_self, flash);
    ad = L * detail::block_adapter_flops(a, run, T, false);
  }
  // Prefix tuning: every query also attends to the P prefix keys, none masked (peft.hpp).
  core += (L + Ld) * detail::attention_core_flops(a, batch, s, static_cast<double>(prefix_tokens(run)), false, flash);
  const double h = static_cast<double>(a.hidden);
  double head = 0;
  switch (a.head) {
    case head_kind::lm:
      // LM head over every position (HF computes logits for all tokens); an encoder's
      // MLM head adds the h x h transform (BertLMPredictionHead).
      head = 2.0 * T * h * static_cast<double>(a.vocab);
      if (a.kind == model_kind::encoder) head += 2.0 * T * h * h;
      break;
    case head_kind::pooler: head = 2.0 * batch * h * h; break;  // CLS token only
    case head_kind::classifier:
      head = 2.0 * batch * h * static_cast<double>(a.num_labels) + (a.is_vit() ? 0.0 : 2.0 * batch * h * h);
      break;
    case head_kind::none: break;
  }
  double embed = 0;
  if (a.is_vit()) {
    const double patches = static_cast<double>(a.vit_tokens() - 1);
    embed = 2.0 * batch * patches * static_cast<double>(a.channels * a.patch_size * a.patch_size) * h;
  }
  out.block_linear = flops(lin);
  out.attention_core = flops(core);
  out.adapters = flops(ad);
  out.head = flops(head);
  out.embed = flops(embed);
  return out;
}

// Fraction of blocks that backward runs through and whose weights train.
// full: all blocks train. lora/qlora: all blocks on the gradient path, base frozen.
// freeze: the top `trainable_layers` blocks train, nothing below them runs backward.
struct backward_scope {
  double trained_blocks = 1.0;  // fraction of blocks whose linear weights get gradients
  double path_blocks = 1.0;     // fraction of blocks that backward runs through
  bool head_trains = true;
};

inline backward_scope backward_scope_of(const architecture& a, const scenario& run) {
  backward_scope b;
  switch (run.meth) {
    case method::full: break;
    case method::lora:
    case method::qlora:
    case method::dora:
    case method::ia3:
    case method::prompt_tuning:
    case method::prefix_tuning:
    case method::vera:
    case method::ln_tuning:
      b.trained_blocks = 0.0;
      b.head_trains = has_low_rank_path(run.meth) && (run.lora.modules_to_save & lora_save_head) != 0;  // modules_to_save
      break;
    case method::freeze: {
      const double total = static_cast<double>(std::max<std::int64_t>(1, a.total_layers()));
      const double n = static_cast<double>(std::clamp<std::int64_t>(run.freeze.trainable_layers, 0, a.total_layers()));
      b.trained_blocks = n / total;
      b.path_blocks = n / total;
      break;
    }
  }
  return b;
}

// FLOPs of one optimizer step (global batch = micro_batch · grad_accum · dp sequences).
inline flop_breakdown training_flops(const architecture& a, const scenario& run) {
  flop_breakdown f;
  const double batch = static_cast<double>(run.global_batch());
  const forward_flops p = forward_pass_flops(a, run, batch, run.seq_len + prompt_tokens(run));  // prompt tuning: S+P
  const backward_scope sc = backward_scope_of(a, run);
  const double lin = in_flops(p.block_linear), core = in_flops(p.attention_core), ad = in_flops(p.adapters);
  const double head = in_flops(p.head), embed = in_flops(p.embed);
  // Backward: trainable linears 2x, frozen linears on the path 1x (input grad only;
  // the weight-grad matmul is skipped for frozen weights), attention core 2x (dQ,dK,dV).
  double bwd = lin * (2.0 * sc.trained_blocks + 1.0 * (sc.path_blocks - sc.trained_blocks));
  bwd += 2.0 * core * sc.path_blocks;
  bwd += 2.0 * ad;  // adapters: input grad + weight grads of A and B
  bwd += head * (sc.head_trains ? 2.0 : 1.0);
  if (run.meth == method::full) bwd += embed;  // ViT patch projection: weight grad only (pixels need no grad)
  // Recompute over the blocks backward runs through.
  double rec = 0;
  if (run.ckpt == checkpointing::selective) rec = core * sc.path_blocks;  // Korthikanti 2022 §5: attention core only
  if (run.ckpt == checkpointing::full) rec = (lin + core) * sc.path_blocks + ad;  // whole block forward
  const double flash_rec = run.attn == attention::flash ? 0.5 * core * sc.path_blocks : 0.0;
  f.pass = p;
  f.forward = flops(lin + core + ad + head + embed);
  f.backward = flops(bwd);
  f.recompute = flops(rec);
  f.flash_recompute = flops(flash_rec);
  f.model = f.forward + f.backward;
  f.hardware = f.model + f.recompute + f.flash_recompute;
  return f;
}

// Forward-only FLOPs of `batch` sequences of `tokens` (serving prefill).
inline FlopCount inference_flops(const architecture& a, const scenario& run, double batch, std::int64_t tokens) {
  return forward_pass_flops(a, run, batch, tokens).total();
}

}  // namespace gpuplan
