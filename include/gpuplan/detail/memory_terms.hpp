// detail/memory_terms.hpp — the activations one transformer block saves for
// backward, bytes per token, per operation (none, selective and full
// checkpointing alike). Pure functions over value types, allocation-free.
// docs/memory-model.md § Activations derives every term and names its source.
#pragma once

#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/model.hpp"

namespace gpuplan::detail::mem {

// Activations saved for backward by one block, in bytes per token of one
// sequence position (multiply by micro_batch*seq_len), before tp/sp/cp division.
// After Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", §4.1, eq. 1: 34sbh + 5as²b for a GPT layer in fp16 with
// dropout), re-derived per operation from what PyTorch autograd saves:
//  linear: its input; GELU/SiLU: input; ReLU: output; mul(a,b): a and b;
//  softmax: output; dropout: bool mask (1 B) — the next consumer saves the output;
//  LayerNorm: input (+ fp32 mean/rstd); RMSNorm written in torch (HF, torchtune,
//  litgpt): fp32 upcast input, the normalised tensor cast back, and the output.
// The split "tp" holds terms inside the tensor-parallel region (divided by tp),
// "seq" the terms that only sequence parallelism divides.
struct layer_act {
  double tp = 0;       // bytes/token inside attention/MLP (split by tp)
  double seq = 0;      // bytes/token of norms, residuals, dropout masks (split by tp only with sp)
  double s2 = 0;       // bytes per token per sequence position (x seq_len): eager attention scores
  double lse = 0;      // flash-attention logsumexp, bytes/token (split by tp)
  // Under ALST's TiledMLP (scenario tiled_mlp): the MLP intermediates, bytes/token (split by
  // tp), which exist for one sequence shard at a time and only in backward (mlp_tile_bytes).
  double mlp = 0;
};

struct act_context {
  double e = 2;          // activation bytes
  bool mixed = false;    // autocast: LayerNorm/softmax run in fp32
  bool compiled = false; // torch.compile: pointwise ops fused, cheap results recomputed
  // Fused norm and SwiGLU kernels without torch.compile (scenario fused_kernels; Liger's
  // LigerRMSNorm and LigerSiLUMulFunction, Apex FusedRMSNorm/FusedLayerNorm).
  bool fused = false;
  bool drop = false;     // dropout present (model.dropout > 0)
  bool flash = true;
  bool tiled_mlp = false;  // ALST TiledMLP: the MLP runs under no_grad, its input saved (layer_act::mlp)
  double lora_rank_elems = 0;  // per token: sum over targeted linear instances of rank
  double lora_drop_elems = 0;  // per token: sum of targeted input widths when LoRA dropout > 0
  double peft_saved_bytes = 0; // per token: other PEFT methods' saved tensors (peft.hpp peft_of_block)
  // PEFT (every method but full and freeze): the base linears are frozen, and autograd saves
  // a matmul's input only for its weight's gradient (measured: a frozen nn.Linear saves only
  // its weight, tests/python/test_torch_ground_truth.py; bitsandbytes MatMul4Bit keeps only
  // the packed weight, autograd/_functions.py `ctx.tensors = (None, B)`). So a frozen linear
  // saves nothing, and a frozen norm's weight multiply keeps nothing for the weight.
  bool frozen_linears = false;
  bool frozen_norms = false;      // every PEFT method but LayerNorm tuning
  double adapter_bytes = 2;       // bytes of the LoRA-family adapters' activations (lora_of_block)
  double adapter_input_bytes = 0; // per token: the inputs the adapters' A matrices save (no dropout)
};

// What one norm followed by a linear keeps for their backward, bytes per token
// (statistics apart): the norm's input, what its weight multiply keeps for the weight's
// gradient, and the output the next linear keeps for its own weight's gradient.
struct norm_saves {
  double input = 0, weight_mul = 0, output = 0;
};
inline norm_saves norm_parts(const architecture& a, const act_context& c) {
  const double h = static_cast<double>(a.hidden);
  if (c.compiled) return {h * c.e, 0, 0};  // Inductor saves the norm input, recomputes the output
  // A fused norm kernel saves its input (and its fp32 statistics) and computes the weight's
  // gradient from them; the next linear keeps the output (Liger ops/rms_norm.py
  // LigerRMSNormFunction: ctx.save_for_backward(X, W, RSTD); Apex FusedRMSNormAffineFunction).
  if (c.fused) return {h * c.e, 0, h * c.e};
  if (a.norm == norm_kind::rmsnorm) {
    // x.float() (4h, kept by pow and the rsqrt multiply), the normalised tensor cast back to
    // the input dtype and kept by the weight multiply (HF LlamaRMSNorm `self.weight *
    // hidden_states.to(input_dtype)`; torchtune `(x_fp32 * rsqrt(...)).type_as(x) * scale`;
    // litgpt `x_normed.to(dtype) * weight`), and the output the linear keeps; an fp32 model
    // keeps three fp32 tensors.
    const double e = c.e < kFp32Bytes ? c.e : kFp32Bytes;
    return {kFp32Bytes * h, e * h, e * h};
  }
  // nn.LayerNorm saves its input; under autocast layer_norm runs in fp32 (input cast
  // saved, 4h) and the next linear saves its own fp16 cast of the output.
  return {c.mixed ? kFp32Bytes * h : c.e * h, 0, c.e * h};
}
inline double norm_bytes(const architecture& a, const act_context& c) {
  const norm_saves p = norm_parts(a, c);
  return p.input + (c.frozen_norms ? 0 : p.weight_mul) + (c.frozen_linears ? 0 : p.output) + kNormStatsBytes;
}

inline double attention_core_bytes(const architecture& a, const act_context& c, double& s2, double& lse) {
  const double qd = static_cast<double>(a.q_dim());
  // K and V are expanded to all query heads before the kernel in HF (repeat_kv),
  // torchtune and litgpt, so the saved copies have q_dim columns.
  const double kvs = qd;
  double tp = c.e * (qd + 2 * kvs);  // q (after rotary), k, v saved by the attention kernel / matmuls
  // The attention output: flash attention's backward keeps it; else only o_proj does (for its weight).
  if (c.flash || !c.frozen_linears) tp += c.e * qd;
  if (c.flash) {
    lse += kFp32Bytes * static_cast<double>(a.heads);  // fp32 logsumexp per head per token
  } else {
    // Per token per key position: softmax output in fp32 (HF upcasts; autocast runs
    // softmax in fp32), then dropout mask (1 B) + dropout output in e, or the e cast
    // of the probabilities saved by the PV matmul (Korthikanti: 5as² in fp16 = 2+1+2).
    const double per = kFp32Bytes + (c.drop ? kMaskBytes + c.e : (c.e < kFp32Bytes ? c.e : 0.0));
    s2 += static_cast<double>(a.heads) * per;
  }
  return tp;
}

// T5/mT5 apply dropout inside the MLP, between the activation and `wo`
// (modeling_t5.py T5DenseActDense / T5DenseGatedActDense); BERT, GPT-2, BLOOM, OPT
// and Llama-style MLPs do not.
inline bool inner_mlp_dropout(const architecture& a) {
  return a.family == "t5" || a.family == "mt5" || a.family == "umt5";
}

inline double mlp_intermediate_bytes(const architecture& a, const act_context& c, double f) {
  const bool inner_drop = c.drop && inner_mlp_dropout(a);
  if (a.mlp == mlp_kind::gated) {
    // gate out (act input), up out, act out, product (down input, kept by a trainable down
    // only): 4f, frozen 3f; compiled: gate, up
    // Fused SwiGLU (Liger ops/swiglu.py LigerSiLUMulFunction): gate and up outputs kept, the
    // product recomputed in backward and kept by a trainable down only: 3f, frozen 2f.
    double v = c.compiled ? 2 * f * c.e : c.fused ? (c.frozen_linears ? 2 : 3) * f * c.e : (c.frozen_linears ? 3 : 4) * f * c.e;
    if (inner_drop) v += f * (kMaskBytes + c.e);  // T5 dropout between the product and wo
    return v;
  }
  double v = 0;
  if (c.compiled) v = f * c.e;  // up output only; activation recomputed for the down input
  else if (a.activation == activation_kind::relu) v = f * c.e;  // relu output == down input
  else v = (c.frozen_linears ? 1 : 2) * f * c.e;  // GELU input + down input (Korthikanti: 8sbh + 8sbh with f = 4h)
  if (inner_drop) v += f * (kMaskBytes + (c.compiled ? 0 : c.e));  // dropout after the activation (T5)
  return v;
}

inline layer_act block_activations(const architecture& a, const act_context& c, bool dec) {
  layer_act r;
  const double h = static_cast<double>(a.hidden);
  const int attn_blocks = dec ? 2 : 1;  // self + cross attention in encoder-decoder decoders
  // Pre-attention and pre-MLP norms (one shared norm in a parallel block: GPT-J,
  // Falcon), plus the cross-attention norm of an encoder-decoder decoder block.
  const int norms = (a.parallel_block ? 1 : 2) + (dec ? 1 : 0);
  r.seq += norms * norm_bytes(a, c);
  for (int i = 0; i < attn_blocks; ++i) r.tp += attention_core_bytes(a, c, r.s2, r.lse);
  // dropout masks after attention output and after the MLP
  if (c.drop) r.seq += (attn_blocks + 1) * kMaskBytes * h;
  // MLP (dense, or top-k experts + shared experts: each routed token copy holds
  // its own intermediates plus the permuted input, MegaBlocks/Mixtral style).
  double& mlp = c.tiled_mlp ? r.mlp : r.tp;
  if (a.is_moe()) {
    const double f = static_cast<double>(a.d_expert());
    const double k = static_cast<double>(a.experts_per_token);
    mlp += k * (mlp_intermediate_bytes(a, c, f) + h * c.e) + static_cast<double>(a.shared_experts) * mlp_intermediate_bytes(a, c, f);
    mlp += kFp32Bytes * static_cast<double>(a.experts);  // router logits in fp32
  } else {
    mlp += mlp_intermediate_bytes(a, c, static_cast<double>(a.ffn));
  }
  // LoRA: lora_B saves lora_A's r-wide output; A saves its input (adapter_input_bytes), or
  // with LoRA dropout the dropped copy + mask.
  r.tp += c.adapter_bytes * c.lora_rank_elems + c.adapter_input_bytes + (kMaskBytes + c.adapter_bytes) * c.lora_drop_elems;
  r.tp += c.peft_saved_bytes;  // DoRA, IA3, VeRA, prefix K/V, LN tuning (peft.hpp)
  return r;
}

// The block input kept at a checkpoint boundary, bytes per token (full and
// selective checkpointing alike): under autocast a LayerNorm model's residual
// stream is fp32 (layer_norm is on autocast's fp32 list and returns fp32, so the
// residual adds are fp32); otherwise the activation dtype.
inline double checkpoint_boundary_bytes(const architecture& a, const act_context& c) {
  return static_cast<double>(a.hidden) * ((c.mixed && a.norm == norm_kind::layernorm) ? kFp32Bytes : c.e);
}

// Activations kept per block under selective recomputation: PyTorch op-level
// selective activation checkpointing as torchtitan implements it
// (torchtitan/parallelisms/parallelize_llama.py `_save_list` + `_custom_policy`):
// the block input and the attention output are kept, and of the block's matmuls in
// execution order (q, k, v, o, [gate], up, down) the 1st, 3rd, 5th, ... are saved
// while every second one is recomputed; everything pointwise (norms, rotary,
// activation functions, dropout, softmax) is recomputed from the block input.
// The attention core is recomputed with either kernel — eager's s² terms and
// flash's logsumexp — which is Korthikanti et al.'s selective recomputation (§5)
// for that part (torchtitan itself keeps the SDPA outputs; see below).
inline layer_act block_activations_selective(const architecture& a, const act_context& c, bool dec) {
  layer_act r;
  const double h = static_cast<double>(a.hidden);
  const double qd = static_cast<double>(a.q_dim()), kvd = static_cast<double>(a.kv_dim());
  const double f = a.is_moe() ? static_cast<double>(a.d_expert()) : static_cast<double>(a.ffn);
  const double copies = a.is_moe() ? static_cast<double>(a.experts_per_token + a.shared_experts) : 1.0;
  r.seq += checkpoint_boundary_bytes(a, c);  // the block input (checkpoint boundary)
  double mm[kMaxBlockMatmuls];  // output widths of the block's matmuls in execution order
  int n = 0;
  const int attn_blocks = dec ? 2 : 1;
  for (int i = 0; i < attn_blocks; ++i) {
    mm[n++] = qd; mm[n++] = kvd; mm[n++] = kvd; mm[n++] = h;
    r.tp += c.e * qd;  // attention output (o_proj's input, saved by that linear)
    // The attention core is recomputed (Korthikanti et al. 2022 §5, and what the time
    // model charges: timing_model "selective = attention core forward again"), for
    // flash as for eager: its softmax statistics — flash's fp32 logsumexp, eager's s²
    // probabilities — are regenerated in the block's backward, not kept. (torchtitan's
    // op-level policy saves the SDPA outputs instead, logsumexp included: +4·heads
    // B/token per block, 0.1% of TT1.)
  }
  if (!c.tiled_mlp) {  // TiledMLP's forward runs under no_grad: the MLP saves nothing but its input
    if (a.mlp == mlp_kind::gated) mm[n++] = copies * f;
    mm[n++] = copies * f;
    mm[n++] = copies * h;
  }
  for (int i = 0; i < n; i += 2) r.tp += c.e * mm[i];
  r.tp += c.adapter_bytes * c.lora_rank_elems;
  r.tp += c.peft_saved_bytes;
  return r;
}

}  // namespace gpuplan::detail::mem
