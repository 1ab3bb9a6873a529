// detail/memory_activations.hpp — phase 2 of the training memory model: the
// activations one pipeline stage stores for backward (checkpointing none /
// selective / full), the micro-batches in flight (1F1B, interleaved), what
// recomputation regenerates, and what activation offload moves to the host.
// docs/memory-model.md § Activations.
#pragma once

#include <algorithm>

#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/detail/memory_facts.hpp"
#include "gpuplan/detail/memory_terms.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/peft.hpp"

namespace gpuplan::detail::mem {

// Bytes per GPU (host: per node) of one stage's saved activations.
struct activation_plan {
  double stored = 0;          // saved for backward, all in-flight micro-batches, on the GPU
  double kept_per_block = 0;  // what one block keeps from its forward to its backward (one micro-batch)
  double recomputed = 0;      // regenerated for the block being back-propagated (checkpointing)
  double in_flight = 1;       // micro-batches whose activations are alive at once
  double host = 0;            // offloaded to pinned host memory, per node
};

// One figure per block kind: encoder (or decoder-only) blocks and decoder blocks.
struct per_block { double enc = 0, dec = 0; };

// What one block keeps between its forward and its backward, one micro-batch,
// given what it saves without checkpointing. Full checkpointing: the block input at
// the checkpoint boundary (fp32 residual stream under autocast LayerNorm), the same
// bytes selective keeps as its input.
inline per_block kept_by_block(const architecture& a, const scenario& r, const facts& f, const per_block& saved) {
  switch (r.ckpt.value_or(checkpointing::none)) {
    case checkpointing::none: return saved;
    case checkpointing::selective: return {block_bytes(f, f.sel_enc), block_bytes(f, f.sel_dec)};
    case checkpointing::full: {
      const double boundary = f.T * checkpoint_boundary_bytes(a, f.ctx) / f.seq_div;
      return {boundary, boundary};
    }
  }
  return saved;
}

// First stage: token indices (int64), the embedding dropout mask, BERT's
// embedding LayerNorm input (fp32 under autocast).
inline double embedding_activations(const architecture& a, const facts& f) {
  const double h = d(a.hidden);
  return f.T * (kTokenIndexBytes + (f.ctx.drop ? kMaskBytes * h : 0) +
                (a.embedding_norm ? (f.pb.mixed ? kFp32Bytes : f.pb.act) * h : 0));
}

// Micro-batches in flight on a stage. 1F1B: stage i holds min(pp - i, micro-batches)
// (Narayanan et al. 2021 §2.2); interleaving multiplies the first stage's by
// 1 + (pp - 1)/(pp·v) (Korthikanti et al. 2022 §4.2.3).
inline double in_flight_micro_batches(const scenario& r, const facts& f, int stage) {
  if (f.pp <= 1) return 1;
  double inflight = std::min<double>(d(r.grad_accum), f.pp - stage);
  if (r.parallel.virtual_stages > 1 && stage == 0) inflight *= 1.0 + (f.pp - 1.0) / (f.pp * r.parallel.virtual_stages);
  return inflight;
}

// What one block saves for backward under the framework's fused LoRA kernels
// (framework.hpp fused_lora_kernels), bytes per token: the two norms' inputs, the
// attention block's input to the LoRA QKV function with Q, K and V (K and V unexpanded),
// the attention output (o's input), and the MLP's input with its gate and up outputs.
inline double fused_lora_block_bytes(const architecture& a, const facts& f) {
  const double h = d(a.hidden), q = d(a.q_dim()), kv = d(a.kv_dim());
  const double ffn = a.is_moe() ? d(a.d_expert()) * d(a.experts_per_token) : d(a.ffn);
  return f.T * f.pb.act * ((2 * h + q + 2 * kv + q) / f.seq_div + 2 * ffn / f.tp);
}
inline bool uses_fused_lora(const scenario& r) { return is_peft(r.meth) && profile_of(r.fw).fused_lora_kernels; }

// Phase 2. The block being back-propagated regenerates, under full or selective
// checkpointing, its activations minus those it kept (already in `stored`).
// Activation offload (torchtune OffloadActivations) and Unsloth's offloaded checkpoints:
// saved tensors go to pinned host memory; the GPU keeps the block in flight and the one being copied.
inline activation_plan stage_activations(const architecture& a, const scenario& r, const facts& f, const stage_params& sp,
                                         int stage) {
  const per_block saved = uses_fused_lora(r) ? per_block{fused_lora_block_bytes(a, f), fused_lora_block_bytes(a, f)}
                                              : per_block{block_bytes(f, f.full_enc), block_bytes(f, f.full_dec)};
  const per_block kept = kept_by_block(a, r, f, saved);
  const double saved_max = std::max(sp.enc_blocks > 0 ? saved.enc : 0.0, sp.dec_blocks > 0 ? saved.dec : 0.0);
  activation_plan p;
  p.kept_per_block = std::max(sp.enc_blocks > 0 ? kept.enc : 0.0, sp.dec_blocks > 0 ? kept.dec : 0.0);
  double stored = d(sp.enc_blocks) * kept.enc + d(sp.dec_blocks) * kept.dec;
  if (sp.first) stored += embedding_activations(a, f);
  if (sp.last && a.final_norm) {  // the final norm's saved tensors; a trainable head (or its modules_to_save copy) keeps its input
    act_context c = f.ctx;
    if ((r.lora.modules_to_save & lora_save_head) != 0) c.frozen_linears = false;
    stored += f.T * norm_bytes(a, c) / f.seq_div;
  }
  p.recomputed = r.ckpt != checkpointing::none ? std::max(0.0, saved_max - p.kept_per_block) : 0.0;
  // TiledMLP recomputes its MLP in backward one shard at a time, checkpointed or not.
  p.recomputed += std::max(sp.enc_blocks > 0 ? mlp_tile_bytes(f, f.full_enc) : 0.0, sp.dec_blocks > 0 ? mlp_tile_bytes(f, f.full_dec) : 0.0);
  p.in_flight = in_flight_micro_batches(r, f, stage);
  stored *= p.in_flight;
  // Unsloth's offloaded gradient checkpointing moves the same checkpointed inputs (framework.hpp checkpoints_on_host).
  const bool on_host = r.activation_offload || (r.ckpt == checkpointing::full && profile_of(r.fw).checkpoints_on_host);
  if (on_host) {
    const double keep = std::min(stored, kOffloadResidentBlocks * p.kept_per_block * p.in_flight);
    p.host = (stored - keep) * gpus_on_node(r);
    stored = keep;
  }
  p.stored = stored;
  return p;
}

}  // namespace gpuplan::detail::mem
