// detail/memory_facts.hpp — everything about a run that the memory model needs
// and that does not depend on the pipeline stage: precision policy, parallel
// degrees, tokens per GPU, LoRA adapter shapes, and the per-block activation
// figures of memory_terms.hpp. Computed once per estimate.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "gpuplan/detail/memory_layout.hpp"
#include "gpuplan/detail/memory_precision.hpp"
#include "gpuplan/detail/memory_terms.hpp"
#include "gpuplan/dtype.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/peft.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::detail::mem {

inline double d(std::int64_t v) { return static_cast<double>(v); }

constexpr bool targeted(const scenario& r, linear_id id) {
  return (r.lora.targets & (1u << static_cast<unsigned>(id))) != 0;
}
// Adapter-style methods (LoRA and the PEFT methods of peft.hpp): the base is frozen and
// the trained parameters are added to it.

// LoRA per block: adapter parameters, saved r-wide outputs, dropout copies,
// Adafactor state elements of the adapters and the largest adapter matrix.
// peft_saved / peft_transient: the other PEFT methods' terms (peft.hpp peft_of_block).
struct lora_block {
  double params = 0, rank_elems = 0, drop_elems = 0, adafactor = 0, largest = 0, peft_saved = 0, peft_transient = 0;
  double act_bytes = 2;    // bytes of the adapters' activations
  double input_bytes = 0;  // per token: what the adapters' A matrices save as their input (no dropout)
};

// The dtype of LoRA-family adapter activations: under autocast (AMP) the adapters' matmuls
// run in 16-bit on a cast copy of their input, one per adapter; in pure 16-bit training
// PEFT's autocast_adapter_dtype=True keeps the adapters fp32 and casts the input to fp32
// (peft tuners lora/layer.py `_cast_input_dtype`), one copy per adapter; fp32 runs share
// the input tensor itself.
inline double adapter_act_bytes(const precision_bytes& pb) { return pb.mixed ? pb.act : kAdapterBytes; }
inline lora_block lora_of_block(const architecture& a, const scenario& r, bool dec) {
  lora_block b;
  if (!is_peft(r.meth)) return b;
  const peft_block pe = peft_of_block(a, r, bytes_of(precision_of(r)).act, d(r.seq_len), dec);
  b.params = d(pe.params);
  b.adafactor = d(pe.params);  // vectors: Adafactor keeps them unfactored (second moment only)
  b.largest = pe.largest;
  b.peft_saved = pe.saved;
  b.peft_transient = pe.transient;
  if (!is_lora_family(r.meth)) return b;
  const double rank = d(r.lora.rank);
  const precision_bytes pb = bytes_of(precision_of(r));
  b.act_bytes = adapter_act_bytes(pb);
  const bool copies = pb.mixed || pb.act < kAdapterBytes;  // each adapter casts its own input
  bool shared_attn_in = false, shared_mlp_in = false;     // fp32: q/k/v, gate/up read one tensor each
  for (int i = 0; i < kLinearKinds; ++i) {
    const auto id = static_cast<linear_id>(i);
    const linear_shape s = linear_of(a, id, dec);
    if (s.count <= 0 || !targeted(r, id)) continue;
    const double n = d(s.count);
    b.params += n * rank * d(s.in + s.out);  // PEFT LoraLayer: A (r x in) + B (out x r)
    b.rank_elems += n * rank;
    if (r.lora.dropout > 0) b.drop_elems += n * d(s.in);
    else if (copies) b.input_bytes += n * b.act_bytes * d(s.in);
    else if (id == linear_id::q || id == linear_id::k || id == linear_id::v) shared_attn_in = true;
    else if (id == linear_id::gate || id == linear_id::up) shared_mlp_in = true;
    // o reads the attention output (kept by flash attention, else counted here); down the MLP product.
    else if (id == linear_id::down || r.attn != attention::flash) b.input_bytes += n * pb.act * d(s.in);
    b.adafactor += n * (rank + d(s.in) + d(s.out) + rank);  // factored rows + cols of A and B
    b.largest = std::max(b.largest, rank * d(std::max(s.in, s.out)));
  }
  b.input_bytes += (d(shared_attn_in) + d(shared_mlp_in)) * pb.act * d(a.hidden);
  return b;
}

// Everything about the run that does not depend on the stage.
struct facts {
  parameter_breakdown p;
  precision_bytes pb;
  act_context ctx;
  int tp = 1, pp = 1, cp = 1;
  double shard = 1;      // ZeRO / FSDP sharding degree (data-parallel ranks)
  double T = 0;          // tokens per micro-batch per GPU (after cp)
  double T_loss = 0;     // of those, the tokens whose logits the loss computes (scenario.loss_tokens)
  double s = 0;          // sequence length (keys per query) for eager scores
  double seq_div = 1;    // division of non-tp activation terms (sp)
  double mlp_tile = 1;   // share of T in one TiledMLP shard (scenario tiled_mlp; 1 without)
  bool quantized = false;
  quantization q;
  lora_block lora_enc, lora_dec;
  block_linears lin_enc, lin_dec;
  layer_act full_enc, full_dec, sel_enc, sel_dec;  // per-block activations (filled by facts_with_acts)
};

// `p` is count_parameters(a) (a run holds it: run::parameters).
inline facts facts_of(const architecture& a, const scenario& r, const parameter_breakdown& p) {
  facts f;
  f.p = p;
  f.pb = bytes_of(precision_of(r));
  f.tp = std::max(1, r.parallel.tp_size());
  f.pp = std::max(1, r.parallel.pp);
  f.cp = std::max(1, r.parallel.cp);
  f.shard = r.parallel.zero > 0 ? std::max(1.0, static_cast<double>(r.num_gpus) / (f.tp * f.pp)) : 1.0;
  f.s = d(a.is_vit() ? a.vit_tokens() : r.seq_len + prompt_tokens(r));  // prompt tuning: S+P positions (peft.hpp)
  f.T = d(r.micro_batch) * f.s / f.cp;
  // TiledMLP's num_shards = ceil(seqlen / hidden) of the GPU's own sequence (after Ulysses)
  // (DeepSpeed ulysses_sp.py TiledMLP docs; ArcticTraining and axolotl tiled_mlp_forward).
  if (r.tiled_mlp && a.hidden > 0) f.mlp_tile = 1.0 / std::max(1.0, std::ceil(f.s / f.cp / d(a.hidden)));
  // transformers logits_to_keep (TRL GRPO/PPO: the completion's tokens only): the LM head and
  // the loss see that many positions per sequence (modeling_llama.py LlamaForCausalLM.forward).
  f.T_loss = r.loss_tokens ? std::min(f.T, d(r.micro_batch) * d(*r.loss_tokens) / f.cp) : f.T;
  f.s += d(prefix_tokens(r));  // prefix tuning: P more keys per query, no more tokens
  f.seq_div = r.parallel.sp_enabled() ? f.tp : 1;
  f.q = base_quantization(r);
  // FP8 checkpoints (W8A8 / weight-only FP8, vLLM and llm-compressor) store the block
  // linears in one byte like a quantized format; the rest stays in the weight dtype.
  f.quantized = is_quantized(f.q.weights) || f.q.weights == dtype::fp8_e4m3 || f.q.weights == dtype::fp8_e5m2;
  f.lora_enc = lora_of_block(a, r, false);
  f.lora_dec = lora_of_block(a, r, true);
  f.ctx.e = f.pb.act;
  f.ctx.mixed = f.pb.mixed;
  f.ctx.compiled = r.compile;
  f.ctx.fused = r.fused_kernels && !r.compile;
  f.ctx.drop = a.dropout > 0;
  f.ctx.flash = r.attn == attention::flash;
  f.ctx.tiled_mlp = r.tiled_mlp;
  f.ctx.frozen_linears = is_peft(r.meth);
  f.ctx.frozen_norms = is_peft(r.meth) && r.meth != method::ln_tuning;
  f.lin_enc = linears_of_block(a, false);
  f.lin_dec = a.kind == model_kind::encoder_decoder ? linears_of_block(a, true) : f.lin_enc;
  return f;
}

inline facts facts_of(const architecture& a, const scenario& r) { return facts_of(a, r, count_parameters(a)); }

inline stage_params params_of_stage(const architecture& a, const facts& f, const scenario& r, int stage) {
  return params_of_stage(a, f.p, f.lin_enc, f.lin_dec, r, stage);
}

// Bytes for one block's saved activations, one micro-batch, per GPU: tp-region
// terms / tp, sequence terms / (tp with sp), logsumexp / tp, eager scores x keys / (cp tp).
inline double block_bytes(const facts& f, const layer_act& l) {
  return f.T * (l.tp / f.tp + l.seq / f.seq_div + l.lse / f.tp) + f.T * f.s / f.cp * l.s2 / f.tp;
}

// One TiledMLP shard's MLP intermediates, one micro-batch, per GPU: what the block being
// back-propagated recomputes at a time (0 without tiled_mlp).
inline double mlp_tile_bytes(const facts& f, const layer_act& l) { return f.T * f.mlp_tile * l.mlp / f.tp; }

inline layer_act acts_for(const architecture& a, const facts& f, bool dec, bool selective) {
  act_context c = f.ctx;
  const lora_block& lb = dec ? f.lora_dec : f.lora_enc;
  c.lora_rank_elems = lb.rank_elems;
  c.lora_drop_elems = lb.drop_elems;
  c.peft_saved_bytes = lb.peft_saved;
  c.adapter_bytes = lb.act_bytes;
  c.adapter_input_bytes = lb.input_bytes;
  return selective ? block_activations_selective(a, c, dec) : block_activations(a, c, dec);
}

// facts plus the per-block activation figures (computed once per estimate).
inline facts facts_with_acts(const architecture& a, const scenario& r, const parameter_breakdown& p) {
  facts f = facts_of(a, r, p);
  f.full_enc = acts_for(a, f, false, false);
  f.sel_enc = acts_for(a, f, false, true);
  if (a.kind == model_kind::encoder_decoder) {
    f.full_dec = acts_for(a, f, true, false);
    f.sel_dec = acts_for(a, f, true, true);
  } else {
    f.full_dec = f.full_enc;
    f.sel_dec = f.sel_enc;
  }
  return f;
}
inline facts facts_with_acts(const architecture& a, const scenario& r) { return facts_with_acts(a, r, count_parameters(a)); }

// GPUs of one node whose offloaded state shares that node's host memory.
inline double gpus_on_node(const scenario& r) { return std::max(1, std::min(r.num_gpus, r.cluster.gpus_per_node)); }

}  // namespace gpuplan::detail::mem
