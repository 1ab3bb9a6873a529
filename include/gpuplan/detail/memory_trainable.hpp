// detail/memory_trainable.hpp — the trainable parameters on one pipeline stage,
// per GPU. Summed over the stages at tp = 1 this is run.hpp's
// trainable_parameters (tests/unit/test_memory_phases.cpp checks it), except that
// a full fine-tune with a tied LM head on a separate last stage trains the
// head's own copy there too (Megatron-LM share_embeddings_and_output_weights).
#pragma once

#include <algorithm>
#include <cstdint>

#include "gpuplan/detail/memory_facts.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/peft.hpp"

namespace gpuplan::detail::mem {

// First block (execution order) that trains under method::freeze: the top N train.
inline std::int64_t first_trainable_block(const architecture& a, const scenario& r) {
  return std::max<std::int64_t>(0, a.total_layers() - r.freeze.trainable_layers);
}

// modules_to_save copies on the stage, per GPU: the embedding's on the first, the head's on the last (peft.hpp).
inline double saved_modules_on_stage(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  return ((sp.first ? d(saved_embedding_params(a, r)) : 0.0) + (sp.last ? d(saved_head_params(a, r)) : 0.0)) / f.tp;
}

// Trainable parameters on one stage, per GPU (after tp).
inline double trainable_on_stage(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  switch (r.meth) {
    case method::full: return sp.linear + sp.other;
    case method::lora:
    case method::qlora:
    case method::dora:
      return (d(sp.enc_blocks) * f.lora_enc.params + d(sp.dec_blocks) * f.lora_dec.params) / f.tp +
             saved_modules_on_stage(a, r, f, sp);
    case method::ia3:
    case method::prompt_tuning:
    case method::prefix_tuning:
    case method::vera:
    case method::ln_tuning:
      // Per-block adapters, plus the prompt embedding (first stage) or the final norm(s) (last).
      return (d(sp.enc_blocks) * f.lora_enc.params + d(sp.dec_blocks) * f.lora_dec.params) / f.tp +
             ((r.meth == method::prompt_tuning ? sp.first : sp.last) ? d(peft_model_params(a, r)) : 0.0) +
             saved_modules_on_stage(a, r, f, sp);
    case method::freeze: {
      // The top N blocks of the execution order, plus head and final norm(s) (and a
      // tied LM head's embedding matrix, which is the head's weight).
      const std::int64_t first_trainable = first_trainable_block(a, r);
      double t = 0;
      for (std::int64_t i = 0; i < sp.enc_blocks + sp.dec_blocks; ++i) {
        const std::int64_t idx = sp.begin_block + i;
        if (idx < first_trainable) continue;
        t += d(idx < a.layers ? f.p.per_layer : f.p.per_decoder_layer) / f.tp;
      }
      if (sp.last) {
        t += final_norm_params(a) + d(f.p.head) / f.tp;
        if (a.head == head_kind::lm && a.tied_embeddings) t += d(a.vocab * a.hidden) / f.tp;
      }
      return t;
    }
  }
  return 0;
}

// Largest single trainable module on the stage, per GPU: the ZeRO-3 gather unit
// whose gradient exists unsharded before reduce-scatter, the optimizer-in-backward
// gradient, the per-tensor optimizer temporaries. Full: the stage's largest module;
// LoRA: the largest adapter matrix; freeze: the head or a trainable block's largest
// linear (the frozen embedding never has a gradient).
inline double largest_trainable(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  switch (r.meth) {
    case method::full: return sp.largest;
    case method::lora:
    case method::qlora:
    case method::dora:
    case method::ia3:
    case method::prefix_tuning:
    case method::vera:
    case method::ln_tuning:
      return std::max({sp.enc_blocks > 0 ? f.lora_enc.largest : 0.0, sp.dec_blocks > 0 ? f.lora_dec.largest : 0.0,
                       sp.first ? d(saved_embedding_params(a, r)) : 0.0, sp.last ? d(saved_head_params(a, r)) : 0.0}) / f.tp;
    case method::prompt_tuning: return sp.first ? d(peft_model_params(a, r)) : 0.0;  // the P×h prompt embedding
    case method::freeze: {
      const bool blocks = sp.begin_block + sp.enc_blocks + sp.dec_blocks > first_trainable_block(a, r);
      return std::max(blocks ? sp.largest_block_matrix : 0.0, sp.head_module);
    }
  }
  return 0;
}

// The head's trainable parameters on the last stage (a tied LM head's embedding
// matrix included): the first gradient a backward produces. LoRA adapters never
// touch the head.
inline double head_trainable(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  if (is_peft(r.meth)) {
    // modules_to_save: the head's copy (a tied head: the embedding copy, on a single stage).
    const bool tied_lm = a.head == head_kind::lm && a.tied_embeddings;
    const bool head_saved = has_low_rank_path(r.meth) && (r.lora.modules_to_save & lora_save_head) != 0;
    if (!sp.last || !head_saved) return 0;
    return tied_lm ? (sp.first ? d(saved_embedding_params(a, r)) / f.tp : 0.0) : d(saved_head_params(a, r)) / f.tp;
  }
  if (!sp.last) return 0;
  const bool tied_lm = a.head == head_kind::lm && a.tied_embeddings;
  return (d(f.p.head) + (tied_lm ? d(a.vocab * a.hidden) : 0.0)) / f.tp;
}

// The trainable set of one stage, per GPU.
struct stage_trainables {
  double params = 0;   // trainable parameters (trainable_on_stage)
  double largest = 0;  // largest trainable module (largest_trainable)
  double head = 0;     // the head's trainable parameters (head_trainable)
};

inline stage_trainables trainables_of_stage(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  return {trainable_on_stage(a, r, f, sp), largest_trainable(a, r, f, sp), head_trainable(a, r, f, sp)};
}

}  // namespace gpuplan::detail::mem
