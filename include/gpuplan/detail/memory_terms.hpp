// detail/memory_terms.hpp — the per-term formulas behind estimate_memory.
// Everything here is a pure function over value types, allocation-free, in
// plain doubles (bytes or elements); memory.hpp wraps the results in Bytes.
// docs/memory-model.md derives every term and names its source.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gpuplan/dtype.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::detail::mem {

// ---------------------------------------------------------------------------
// Precision policy: bytes per element of each persistent copy.
// Mixed precision after Micikevicius et al. 2018 and ZeRO (Rajbhandari et al.
// 2020, §3.1: 2Ψ fp16 params + 2Ψ fp16 grads + KΨ optimizer, K = 12 for Adam).
// bf16-pure (torchtune dtype=bf16, litgpt bf16-true): no master copy, optimizer
// moments in the parameter dtype (torch.optim creates state with zeros_like(p)).
struct precision_bytes {
  double act = 2;         // activations / compute dtype
  double weight = 2;      // persistent parameter copy used by forward/backward
  double master = 0;      // fp32 master copy of trainable parameters (0: none)
  double grad = 2;        // gradient in the compute dtype
  double state = 4;       // optimizer-moment element (full-precision optimizers)
  bool mixed = false;     // autocast-style mixed precision (norms/softmax in fp32)
  double fp8_copy = 0;    // extra per-linear-weight fp8 cast (Transformer Engine)
};

constexpr precision_bytes bytes_of(precision p) {
  switch (p) {
    case precision::fp32:
    case precision::tf32:  // tf32 is a matmul mode: tensors stay fp32
      return {.act = 4, .weight = 4, .master = 0, .grad = 4, .state = 4, .mixed = false, .fp8_copy = 0};
    case precision::fp16_mixed:
    case precision::bf16_mixed:
      return {.act = 2, .weight = 2, .master = 4, .grad = 2, .state = 4, .mixed = true, .fp8_copy = 0};
    case precision::bf16_pure:
      return {.act = 2, .weight = 2, .master = 0, .grad = 2, .state = 2, .mixed = false, .fp8_copy = 0};
    case precision::fp8_mixed:
      // Transformer Engine keeps bf16 weights plus an fp8 copy of each GEMM weight
      // (TE `fp8_weight` cache); activations stay bf16 in this model (conservative:
      // TE saves fp8 GEMM inputs, which would halve those terms).
      return {.act = 2, .weight = 2, .master = 4, .grad = 2, .state = 4, .mixed = true, .fp8_copy = 1};
  }
  return {};
}

// ---------------------------------------------------------------------------
// Optimizer state per trainable parameter (bytes), excluding the master copy.
// Inside PyTorch's caching allocator unless paged (bitsandbytes paged optimizers
// allocate CUDA managed memory: visible to nvidia-smi, not to max_memory_allocated).
constexpr bool optimizer_is_paged(optimizer o) {
  return o == optimizer::paged_adamw_8bit || o == optimizer::paged_adamw_32bit;
}

// bitsandbytes 8-bit blockwise state (Dettmers et al. 2022, "8-bit Optimizers via
// Block-wise Quantization"; bitsandbytes/optim/optimizer.py: one fp32 absmax per
// block of 256): 1 + 4/256 bytes per moment.
inline constexpr double kBnb8bitMoment = 1.0 + 4.0 / 256.0;

// Bytes per parameter for element-wise optimizers; adafactor is handled by
// adafactor_state_elements (factored) and returns 0 here.
constexpr double optimizer_bytes_per_param(optimizer o, double state_bytes) {
  switch (o) {
    case optimizer::adamw:
    case optimizer::adam: return 2 * state_bytes;            // exp_avg + exp_avg_sq
    case optimizer::adamw_8bit:
    case optimizer::paged_adamw_8bit: return 2 * kBnb8bitMoment;
    case optimizer::paged_adamw_32bit: return 8;             // fp32 moments whatever the params
    case optimizer::sgd: return 0;
    case optimizer::sgd_momentum: return state_bytes;        // momentum_buffer
    case optimizer::lion: return state_bytes;                // exp_avg only (Chen et al. 2023)
    case optimizer::adafactor: return 0;
  }
  return 0;
}

// ---------------------------------------------------------------------------
// Matrix shapes for Adafactor's factored second moment (Shazeer & Stern 2018;
// HF transformers.optimization.Adafactor: row + column vectors per >=2-D tensor,
// full exp_avg_sq for 1-D tensors, first moment off by default (beta1=None)).
// Returns state elements for the trainable set of a full fine-tune.
inline double adafactor_state_elements(const architecture& a) {
  const parameter_breakdown p = count_parameters(a);
  double factored = 0;     // sum of (rows + cols) over matrices
  double matrix_elems = 0; // elements covered by factoring
  auto blocks = [&](bool dec, double n) {
    for (int i = 0; i < kLinearKinds; ++i) {
      const linear_shape s = linear_of(a, static_cast<linear_id>(i), dec);
      if (s.count <= 0) continue;
      factored += n * static_cast<double>(s.count) * static_cast<double>(s.in + s.out);
      matrix_elems += n * static_cast<double>(s.count) * static_cast<double>(s.in) * static_cast<double>(s.out);
    }
  };
  blocks(false, static_cast<double>(a.layers));
  if (a.kind == model_kind::encoder_decoder) blocks(true, static_cast<double>(a.decoder_layers));
  const double h = static_cast<double>(a.hidden);
  if (!a.is_vit() && a.vocab > 0) { factored += static_cast<double>(a.vocab) + h; matrix_elems += static_cast<double>(a.vocab) * h; }
  if (a.head == head_kind::lm && !a.tied_embeddings) { factored += static_cast<double>(a.vocab) + h; matrix_elems += static_cast<double>(a.vocab) * h; }
  // Everything else (positions, norms, biases, pooler, relative tables) is taken
  // as full second moment: an upper bound for the small remainder.
  const double rest = std::max(0.0, static_cast<double>(p.total) - matrix_elems);
  return factored + rest;
}

// ---------------------------------------------------------------------------
// Parameters by storage class for one pipeline stage, per GPU.
struct stage_params {
  double linear = 0;       // block linears (quantizable, tp-sharded; experts ep-sharded)
  double other = 0;        // embeddings, norms, biases, head (not quantized)
  double largest = 0;      // largest single module on the stage (ZeRO-3 gather unit)
  double largest_block_matrix = 0;  // largest linear of the stage's blocks (per GPU)
  double head_module = 0;  // the last stage's head as one module (LM: vocab x hidden), per GPU
  double largest_block = 0;// one transformer block (FSDP wrap unit)
  std::int64_t begin_block = 0;
  std::int64_t enc_blocks = 0;
  std::int64_t dec_blocks = 0;
  bool first = false;
  bool last = false;
};

// Linear parameters of one block (weights only) split into dense and expert parts.
struct block_linears {
  double dense = 0;   // attention (and dense MLP) matrices
  double expert = 0;  // MoE expert matrices (shardable by ep)
  double biggest = 0; // largest single matrix
};

inline block_linears linears_of_block(const architecture& a, bool dec) {
  block_linears b;
  for (int i = 0; i < kLinearKinds; ++i) {
    const auto id = static_cast<linear_id>(i);
    const linear_shape s = linear_of(a, id, dec);
    if (s.count <= 0) continue;
    const double one = static_cast<double>(s.in) * static_cast<double>(s.out);
    const bool mlp = id == linear_id::gate || id == linear_id::up || id == linear_id::down;
    if (mlp && a.is_moe()) b.expert += one * static_cast<double>(s.count);
    else b.dense += one * static_cast<double>(s.count);
    b.biggest = std::max(b.biggest, one);
  }
  return b;
}

// Blocks [begin, end) of the execution order encoder blocks then decoder blocks.
inline void blocks_of_stage(const architecture& a, int pp, int stage, std::int64_t& begin_out, std::int64_t& enc,
                            std::int64_t& dec) {
  const std::int64_t total = a.total_layers();
  const std::int64_t base = total / pp, extra = total % pp;
  // Remainder blocks go to the middle-to-last stages (the first stage also holds
  // the embeddings and the most in-flight micro-batches).
  const std::int64_t begin = stage * base + std::max<std::int64_t>(0, stage - (pp - extra));
  const std::int64_t count = base + (stage >= pp - extra ? 1 : 0);
 const std::int64_t end = begin + count;
  begin_out = begin;
  enc = std::max<std::int64_t>(0, std::min(end, a.layers) - begin);
  dec = count - enc;
}

inline stage_params params_of_stage(const architecture& a, const parameter_breakdown& p, const block_linears& be,
                                    const block_linears& bd, const scenario& r, int stage) {
  const int pp = std::max(1, r.parallel.pp);
  const double tp = std::max(1, r.parallel.tp);
  const double ep = std::max(1, r.parallel.ep);
  stage_params s;
  s.first = stage == 0;
  s.last = stage == pp - 1;
  blocks_of_stage(a, pp, stage, s.begin_block, s.enc_blocks, s.dec_blocks);
  const double ne = static_cast<double>(s.enc_blocks), nd = static_cast<double>(s.dec_blocks);
  // Megatron tensor parallelism splits every block matrix by tp; experts by ep.
  s.linear = ne * (be.dense / tp + be.expert / (tp * ep)) + nd * (bd.dense / tp + bd.expert / (tp * ep));
  const double enc_other = static_cast<double>(p.per_layer) - be.dense - be.expert;
  const double dec_other = static_cast<double>(p.per_decoder_layer) - bd.dense - bd.expert;
  s.other = ne * enc_other + nd * std::max(0.0, dec_other);
  // T5 relative-attention tables: one in the encoder's and one in the decoder's first block.
  const double rel = (a.relative_buckets > 0 ? static_cast<double>(a.relative_buckets * a.heads) : 0) *
                     (a.kind == model_kind::encoder_decoder ? 2 : 1);
  if (s.first) s.other += static_cast<double>(p.embeddings) / tp + rel;  // vocab-parallel embedding
  if (s.last) {
    double fin = a.final_norm ? static_cast<double>(detail::norm_params(a)) : 0;
    if (a.kind == model_kind::encoder_decoder) fin *= 2;
    s.other += fin + static_cast<double>(p.head) / tp;
    // A tied LM head on a different stage than the embedding keeps its own copy
    // (Megatron-LM `share_embeddings_and_output_weights` on the last stage).
    if (pp > 1 && a.head == head_kind::lm && a.tied_embeddings) s.other += static_cast<double>(a.vocab * a.hidden) / tp;
  }
  // Largest single module on this stage (the unit ZeRO-3 gathers whole). One stage:
  // DeepSpeed's largest_layer_params (estimate_zero3_model_states_mem_needs). Several:
  // the stage's own — the token embedding (first), the LM head or its tied copy (last),
  // else the largest block linear — so a middle stage never gathers the embedding.
  const double blk_big = std::max(s.enc_blocks > 0 ? be.biggest : 0.0, s.dec_blocks > 0 ? bd.biggest : 0.0);
  s.largest_block_matrix = blk_big / tp;
  const double token = a.is_vit() ? static_cast<double>(a.channels * a.patch_size * a.patch_size * a.hidden + a.hidden)
                                  : static_cast<double>(a.vocab) * static_cast<double>(a.hidden);
  const double lm = static_cast<double>(a.vocab) * static_cast<double>(a.hidden);
  if (s.last) s.head_module = (a.head == head_kind::lm ? lm : static_cast<double>(p.head)) / tp;
  double big = blk_big;
  if (s.first) big = std::max(big, token);
  if (s.last && a.head == head_kind::lm) big = std::max(big, lm);
  s.largest = (pp == 1 ? static_cast<double>(p.largest_layer) : big) / tp;
  s.largest_block = std::max(static_cast<double>(p.per_layer), static_cast<double>(p.per_decoder_layer)) / tp;
  return s;
}

// ---------------------------------------------------------------------------
// Activations saved for backward by one block, in bytes per token of one
// sequence position (multiply by micro_batch*seq_len), before tp/sp/cp division.
// After Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", §4.1, eq. 1: 34sbh + 5as²b for a GPT layer in fp16 with
// dropout), re-derived per operation from what PyTorch autograd saves:
//  linear: its input; GELU/SiLU: input; ReLU: output; mul(a,b): a and b;
//  softmax: output; dropout: bool mask (1 B) — the next consumer saves the output;
//  LayerNorm: input (+ fp32 mean/rstd); RMSNorm written in torch (HF, torchtune,
//  litgpt): fp32 upcast input, fp32 normalised tensor, and the cast output.
// The split "tp" holds terms inside the tensor-parallel region (divided by tp),
// "seq" the terms that only sequence parallelism divides.
struct layer_act {
  double tp = 0;       // bytes/token inside attention/MLP (split by tp)
  double seq = 0;      // bytes/token of norms, residuals, dropout masks (split by tp only with sp)
  double s2 = 0;       // bytes per token per sequence position (x seq_len): eager attention scores
  double lse = 0;      // flash-attention logsumexp, bytes/token (split by tp)
};

struct act_context {
  double e = 2;          // activation bytes
  bool mixed = false;    // autocast: LayerNorm/softmax run in fp32
  bool compiled = false; // torch.compile: pointwise ops fused, cheap results recomputed
  bool drop = false;     // dropout present (model.dropout > 0)
  bool flash = true;
  double lora_rank_elems = 0;  // per token: sum over targeted linear instances of rank
  double lora_drop_elems = 0;  // per token: sum of targeted input widths when LoRA dropout > 0
};

// One norm followed by a linear: what stays alive for their backward.
inline double norm_bytes(const architecture& a, const act_context& c) {
  const double h = static_cast<double>(a.hidden);
  const double stats = 8;  // fp32 mean + rstd (LayerNorm) / rstd (RMSNorm), per token: negligible
  if (c.compiled) return h * c.e + stats;  // Inductor saves the norm input, recomputes the output
  if (a.norm == norm_kind::rmsnorm)
    // x.float() (4h) + x*rsqrt (4h, saved by the weight multiply) + output in e (saved by the linear)
    return (c.e < 4 ? 4 * h + 4 * h + c.e * h : 3 * 4 * h) + stats;
  // nn.LayerNorm saves its input; under autocast layer_norm runs in fp32 (input cast
  // saved, 4h) and the next linear saves its own fp16 cast of the output.
  return (c.mixed ? 4 * h : c.e * h) + c.e * h + stats;
}

inline double attention_core_bytes(const architecture& a, const act_context& c, double& s2, double& lse) {
  const double qd = static_cast<double>(a.q_dim());
  // K and V are expanded to all query heads before the kernel in HF (repeat_kv),
  // torchtune and litgpt, so the saved copies have q_dim columns.
  const double kvs = qd;
  double tp = c.e * (qd + 2 * kvs);  // q (after rotary), k, v saved by the attention kernel / matmuls
  tp += c.e * qd;                    // attention output = o_proj input
  if (c.flash) {
    lse += 4.0 * static_cast<double>(a.heads);  // fp32 logsumexp per head per token
  } else {
    // Per token per key position: softmax output in fp32 (HF upcasts; autocast runs
    // softmax in fp32), then dropout mask (1 B) + dropout output in e, or the e cast
    // of the probabilities saved by the PV matmul (Korthikanti: 5as² in fp16 = 2+1+2).
    const double per = 4.0 + (c.drop ? 1.0 + c.e : (c.e < 4 ? c.e : 0.0));
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
    // gate out (act input), up out, act out, product (down input): 4f; compiled: gate, up
    double v = c.compiled ? 2 * f * c.e : 4 * f * c.e;
    if (inner_drop) v += f * (1 + c.e);  // T5 dropout between the product and wo
    return v;
  }
  double v = 0;
  if (c.compiled) v = f * c.e;  // up output only; activation recomputed for the down input
  else if (a.activation == activation_kind::relu) v = f * c.e;  // relu output == down input
  else v = 2 * f * c.e;  // GELU input + down input (Korthikanti: 8sbh + 8sbh with f = 4h)
  if (inner_drop) v += f * (1 + (c.compiled ? 0 : c.e));  // dropout after the activation (T5)
  return v;
}

inline layer_act block_activations(const architecture& a, const act_context& c, bool dec) {
  layer_act r;
  const double h = static_cast<double>(a.hidden);
  const int attn_blocks = dec ? 2 : 1;  // self + cross attention in encoder-decoder decoders
  const int norms = (a.parallel_block ? 1 : 2) + (dec ? 1 : 0);
  r.seq += norms * norm_bytes(a, c);
  for (int i = 0; i < attn_blocks; ++i) r.tp += attention_core_bytes(a, c, r.s2, r.lse);
  // dropout masks after attention output and after the MLP (1 B each per element)
  if (c.drop) r.seq += (attn_blocks + 1) * h;
  // MLP (dense, or top-k experts + shared experts: each routed token copy holds
  // its own intermediates plus the permuted input, MegaBlocks/Mixtral style).
  if (a.is_moe()) {
    const double f = static_cast<double>(a.d_expert());
    const double k = static_cast<double>(a.experts_per_token);
    r.tp += k * (mlp_intermediate_bytes(a, c, f) + h * c.e) + static_cast<double>(a.shared_experts) * mlp_intermediate_bytes(a, c, f);
    r.tp += 4.0 * static_cast<double>(a.experts);  // router logits in fp32
  } else {
    r.tp += mlp_intermediate_bytes(a, c, static_cast<double>(a.ffn));
  }
  // LoRA: lora_B saves lora_A's r-wide output; with LoRA dropout, A saves the dropped copy + mask.
  r.tp += c.e * c.lora_rank_elems + (1 + c.e) * c.lora_drop_elems;
  return r;
}

// The block input kept at a checkpoint boundary, bytes per token (full and
// selective checkpointing alike): under autocast a LayerNorm model's residual
// stream is fp32 (layer_norm is on autocast's fp32 list and returns fp32, so the
// residual adds are fp32); otherwise the activation dtype.
inline double checkpoint_boundary_bytes(const architecture& a, const act_context& c) {
  return static_cast<double>(a.hidden) * ((c.mixed && a.norm == norm_kind::layernorm) ? 4.0 : c.e);
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
  double mm[12];
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
  if (a.mlp == mlp_kind::gated) mm[n++] = copies * f;
  mm[n++] = copies * f;
  mm[n++] = copies * h;
  for (int i = 0; i < n; i += 2) r.tp += c.e * mm[i];
  r.tp += c.e * c.lora_rank_elems;
  return r;
}

}  // namespace gpuplan::detail::mem
