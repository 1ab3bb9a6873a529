// detail/memory_layout.hpp — what one pipeline stage holds, per GPU: its blocks
// and its parameters by storage class (quantizable block linears, the rest), and
// its largest modules (the ZeRO-3 / FSDP gather units). docs/memory-model.md § Weights.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::detail::mem {

// Parameters by storage class for one pipeline stage, per GPU.
struct stage_params {
  double linear = 0;       // block linears (quantizable, tp-sharded; experts ep-sharded)
  double other = 0;        // embeddings, norms, biases, head (not quantized)
  double largest = 0;      // largest single module on the stage (ZeRO-3 gather unit)
  double largest_block_matrix = 0;  // largest linear of the stage's blocks (per GPU)
  double head_module = 0;  // the last stage's head as one module (LM: vocab x hidden), per GPU
  double root = 0;         // outside every block (embeddings, final norm, head): FSDP's root unit
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

// Units of the pipeline split before the blocks (the embedding) and after them (the
// loss), each 0 or 1: Megatron-LM counts them as layers when asked
// (parallel_config::account_for_*_in_pipeline_split; get_num_layers_to_build).
struct split_units {
  std::int64_t lead = 0, tail = 0;
};
inline split_units split_units_of(const parallel_config& par) {
  if (par.pp <= 1) return {};
  return {par.account_for_embedding_in_pipeline_split ? 1 : 0, par.account_for_loss_in_pipeline_split ? 1 : 0};
}

// Blocks [begin, end) of the execution order encoder blocks then decoder blocks.
// The split's units (blocks, plus the embedding and loss when counted) are divided
// evenly; a remainder goes one unit each to the last stages (the first stage also
// holds the embeddings and the most in-flight micro-batches). Megatron-LM without
// --decoder-first/last-pipeline-num-layers requires an even split, which this is
// then (get_num_layers_to_build: (layers + embedding + loss) / pp per stage, one
// block fewer on the first stage for the embedding, on the last for the loss).
inline void blocks_of_stage(const architecture& a, const parallel_config& par, int stage, std::int64_t& begin_out,
                            std::int64_t& enc, std::int64_t& dec) {
  const int pp = std::max(1, par.pp);
  const std::int64_t total = a.total_layers();
  if (pp > 1 && (par.first_stage_layers || par.last_stage_layers)) {
    // Megatron's uneven stages: the first and last as set, the others the rest evenly
    // (validate.hpp has checked the split).
    const std::int64_t first = par.first_stage_layers.value_or(0), last = par.last_stage_layers.value_or(0);
    const std::int64_t left = pp - (par.first_stage_layers ? 1 : 0) - (par.last_stage_layers ? 1 : 0);
    const std::int64_t per = left > 0 ? (total - first - last) / left : 0;
    std::int64_t begin = 0, end = 0;
    if (stage == 0 && par.first_stage_layers) {
      end = first;
    } else if (stage == pp - 1 && par.last_stage_layers) {
      begin = total - last;
      end = total;
    } else {
      const std::int64_t k = stage - (par.first_stage_layers ? 1 : 0);  // index among the even stages
      begin = first + k * per;
      end = begin + per;
    }
    begin_out = begin;
    enc = std::max<std::int64_t>(0, std::min(end, a.layers) - begin);
    dec = (end - begin) - enc;
    return;
  }
  const split_units u = split_units_of(par);
  const std::int64_t units = total + u.lead + u.tail;
  const std::int64_t base = units / pp, extra = units % pp;
  const std::int64_t ubegin = stage * base + std::max<std::int64_t>(0, stage - (pp - extra));
  const std::int64_t uend = ubegin + base + (stage >= pp - extra ? 1 : 0);
  // Unit i is block i - lead; the embedding and loss units hold no block.
  const std::int64_t begin = std::clamp<std::int64_t>(ubegin - u.lead, 0, total);
  const std::int64_t end = std::clamp<std::int64_t>(uend - u.lead, 0, total);
  begin_out = begin;
  enc = std::max<std::int64_t>(0, std::min(end, a.layers) - begin);
  dec = (end - begin) - enc;
}

// Final norm parameters: one per stack (encoder and decoder of an encoder-decoder).
inline double final_norm_params(const architecture& a) {
  double fin = a.final_norm ? static_cast<double>(detail::norm_params(a)) : 0;
  if (a.kind == model_kind::encoder_decoder) fin *= 2;
  return fin;
}

// Largest single module on a stage (the unit ZeRO-3 gathers whole), before tp.
// One stage: DeepSpeed's largest_layer_params (estimate_zero3_model_states_mem_needs).
// Several: the stage's own — the token embedding (first), the LM head or its tied
// copy (last), else the largest block linear — so a middle stage never gathers the embedding.
inline double largest_module(const architecture& a, const parameter_breakdown& p, const stage_params& s, int pp,
                             double block_biggest) {
  if (pp == 1) return static_cast<double>(p.largest_layer);
  const double token = a.is_vit() ? static_cast<double>(a.channels * a.patch_size * a.patch_size * a.hidden + a.hidden)
                                  : static_cast<double>(a.vocab) * static_cast<double>(a.hidden);
  const double lm = static_cast<double>(a.vocab) * static_cast<double>(a.hidden);
  double big = block_biggest;
  if (s.first) big = std::max(big, token);
  if (s.last && a.head == head_kind::lm) big = std::max(big, lm);
  return big;
}

inline stage_params params_of_stage(const architecture& a, const parameter_breakdown& p, const block_linears& be,
                                    const block_linears& bd, const scenario& r, int stage) {
  const int pp = std::max(1, r.parallel.pp);
  const double tp = std::max(1, r.parallel.tp_size());
  const double ep = std::max(1, r.parallel.ep);
  stage_params s;
  s.first = stage == 0;
  s.last = stage == pp - 1;
  blocks_of_stage(a, r.parallel, stage, s.begin_block, s.enc_blocks, s.dec_blocks);
  const double ne = static_cast<double>(s.enc_blocks), nd = static_cast<double>(s.dec_blocks);
  // Megatron tensor parallelism splits every block matrix by tp; experts by ep.
  s.linear = ne * (be.dense / tp + be.expert / (tp * ep)) + nd * (bd.dense / tp + bd.expert / (tp * ep));
  const double enc_other = static_cast<double>(p.per_layer) - be.dense - be.expert;
  const double dec_other = static_cast<double>(p.per_decoder_layer) - bd.dense - bd.expert;
  s.other = ne * enc_other + nd * std::max(0.0, dec_other);
  const double in_blocks = s.other;
  // T5 relative-attention tables: one in the encoder's and one in the decoder's first block.
  const double rel = (a.relative_buckets > 0 ? static_cast<double>(a.relative_buckets * a.heads) : 0) *
                     (a.kind == model_kind::encoder_decoder ? 2 : 1);
  if (s.first) s.other += static_cast<double>(p.embeddings) / tp + rel;  // vocab-parallel embedding
  if (s.last) {
    s.other += final_norm_params(a) + static_cast<double>(p.head) / tp;
    // A tied LM head on a different stage than the embedding keeps its own copy
    // (Megatron-LM `share_embeddings_and_output_weights` on the last stage).
    if (pp > 1 && a.head == head_kind::lm && a.tied_embeddings) s.other += static_cast<double>(a.vocab * a.hidden) / tp;
  }
  s.root = s.other - in_blocks;
  const double blk_big = std::max(s.enc_blocks > 0 ? be.biggest : 0.0, s.dec_blocks > 0 ? bd.biggest : 0.0);
  s.largest_block_matrix = blk_big / tp;
  const double lm = static_cast<double>(a.vocab) * static_cast<double>(a.hidden);
  if (s.last) s.head_module = (a.head == head_kind::lm ? lm : static_cast<double>(p.head)) / tp;
  s.largest = largest_module(a, p, s, pp, blk_big) / tp;
  s.largest_block = std::max(static_cast<double>(p.per_layer), static_cast<double>(p.per_decoder_layer)) / tp;
  return s;
}

}  // namespace gpuplan::detail::mem
