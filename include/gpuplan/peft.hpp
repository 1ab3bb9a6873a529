// peft.hpp — the PEFT methods beyond LoRA (DoRA, IA3, prompt tuning, prefix tuning,
// VeRA, LayerNorm tuning): their trainable parameters and what they add to a block's
// saved activations, as Hugging Face PEFT implements them. Sources: huggingface/peft
// at 5d602fdb (file:line cited per term); docs/memory-model.md § PEFT methods.
//
// PEFT's default autocast_adapter_dtype=True upcasts bf16/fp16 adapter parameters
// (and VeRA's BufferDict projections) to fp32 (tuners_utils.py:2657-2702), so the
// adapter-side tensors below are fp32 (kAdapterBytes) whatever the base dtype; LayerNorm
// tuning is excluded from the upcast (ln_tuning/model.py:133-137).
#pragma once

#include <algorithm>
#include <cstdint>

#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan {

// The traits of scenario.hpp kMethodTraits, by name.
// LoRA and its variants: the A/B adapters of lora_config on the targeted linears.
constexpr bool is_lora_family(method m) { return traits_of(m).lora_family; }
// The base model is frozen and something added to it trains (every method but full and freeze).
constexpr bool is_peft(method m) { return traits_of(m).peft; }
// Methods whose targeted linears run two thin GEMMs per token (x·A then ·B): LoRA, DoRA, VeRA.
constexpr bool has_low_rank_path(method m) { return traits_of(m).low_rank_path; }

// Linears a method attaches to, as lora_target bits (0: none).
constexpr std::uint8_t peft_targets(const scenario& s) {
  if (has_low_rank_path(s.meth)) return s.lora.targets;
  if (s.meth == method::ia3) return s.peft.ia3_targets;
  return 0;
}
// Rank of the low-rank path: VeRA's own rank, LoRA's otherwise.
constexpr std::int64_t adapter_rank(const scenario& s) { return s.meth == method::vera ? s.peft.vera_rank : s.lora.rank; }

// Prompt tuning prepends P virtual tokens to every sequence: the whole model, lm_head and
// loss included, runs on S+P positions (peft_model.py:2092-2130).
constexpr std::int64_t prompt_tokens(const scenario& s) {
  return s.meth == method::prompt_tuning ? s.peft.virtual_tokens : 0;
}
// Prefix tuning prepends P trained key/value rows to every layer's attention (keys S+P,
// queries S; peft_model.py:763-790).
constexpr std::int64_t prefix_tokens(const scenario& s) {
  return s.meth == method::prefix_tuning ? s.peft.virtual_tokens : 0;
}

namespace detail {
inline constexpr double kAdapterBytes = 4;  // fp32 adapters (autocast_adapter_dtype=True)
// IA3's feed-forward module for llama-style models: down_proj (peft/utils/constants.py:261).
constexpr bool ia3_feedforward(linear_id id) { return id == linear_id::down; }
}  // namespace detail

// One block's PEFT figures beyond the LoRA A/B matrices (which memory_facts.hpp's
// lora_of_block and run.hpp's trainable_parameters count).
struct peft_block {
  std::int64_t params = 0;  // trainable parameters of one block
  double saved = 0;         // bytes per token kept for backward, beyond the base model and LoRA's terms
  double largest = 0;       // largest single trainable tensor (elements)
  double transient = 0;     // bytes alive while one targeted block's forward runs (DoRA's weight norm)
};

// `act` is the activation dtype's bytes, `seq` the real sequence length (prefix terms are per sequence).
inline peft_block peft_of_block(const architecture& a, const scenario& s, double act, double seq, bool dec) {
  using detail::kAdapterBytes;
  peft_block b;
  const std::uint8_t targets = peft_targets(s);
  for (int i = 0; i < kLinearKinds; ++i) {
    const auto id = static_cast<linear_id>(i);
    const linear_shape sh = linear_of(a, id, dec);
    if (sh.count <= 0 || (targets & (1u << i)) == 0) continue;
    const double n = static_cast<double>(sh.count), in = static_cast<double>(sh.in), out = static_cast<double>(sh.out);
    switch (s.meth) {
      case method::dora:
        // Magnitude vector, one per output feature (lora/dora.py:130).
        b.params += sh.count * sh.out;
        // (m/‖W+sBA‖ − 1)·base_result saves base_result (act dtype) and m/‖·‖·lora_result
        // saves lora_result (fp32) (lora/variants.py:220-247).
        b.saved += n * (act + kAdapterBytes) * out;
        // get_lora_weight: eye(in) and B·A (in×out) in fp32; then the fp32 copy of W, and
        // W + s·BA (lora/dora.py:132-166), not cached in training (dora.py:44).
        b.transient = std::max(b.transient, kAdapterBytes * std::max(in * in + in * out, 3 * in * out));
        b.largest = std::max(b.largest, out);
        break;
      case method::ia3:
        // Scaling vector: input width on feed-forward targets, output width otherwise (ia3/layer.py:62-66).
        b.params += sh.count * (detail::ia3_feedforward(id) ? sh.in : sh.out);
        // ff: x.to(fp32)·ia3 saves the fp32 input; else result·ia3 saves the base output (ia3/layer.py:161-188).
        b.saved += detail::ia3_feedforward(id) ? n * kAdapterBytes * in : n * act * out;
        b.largest = std::max(b.largest, detail::ia3_feedforward(id) ? in : out);
        break;
      case method::vera: {
        const double r = static_cast<double>(s.peft.vera_rank);
        // lambda_d (r) and lambda_b (out) per targeted linear (vera/layer.py:89-90).
        b.params += sh.count * (s.peft.vera_rank + sh.out);
        // lambda_d·(x@Aᵀ) saves the fp32 r-wide product, lambda_b·(…@Bᵀ) the fp32 out-wide one;
        // the fp32 cast of x is not saved, A being a frozen buffer (vera/layer.py:284-285).
        b.saved += n * kAdapterBytes * (r + out);
        b.largest = std::max(b.largest, out);
        break;
      }
      default: break;
    }
  }
  if (s.meth == method::prefix_tuning) {
    const double P = static_cast<double>(s.peft.virtual_tokens);
    const double kv = static_cast<double>(a.kv_dim()), qd = static_cast<double>(a.q_dim());
    const std::int64_t attn = dec ? 2 : 1;
    // The prefix embedding holds P·2·kv per layer (prefix_tuning/model.py; GQA token_dim = kv,
    // utils/other.py:1198-1219).
    b.params += attn * s.peft.virtual_tokens * 2 * a.kv_dim();
    b.largest = static_cast<double>(a.total_layers()) * P * 2 * kv;
    // Per sequence and layer: the bf16 prefix K/V in the cache (2·kv per virtual token) and the
    // P extra rows of the saved K and V, expanded to q_dim columns like the real ones
    // (memory_terms.hpp attention_core_bytes). Spread over the sequence's S tokens.
    b.saved += static_cast<double>(attn) * P * act * (2 * kv + 2 * qd) / std::max(1.0, seq);
  }
  if (s.meth == method::ln_tuning) {
    // A deep copy of every norm trains (ln_tuning/layer.py:46-48), in the model dtype.
    b.params += detail::block_norms(a, dec);
    b.largest = static_cast<double>(detail::norm_params(a));
    // The norms' weight multiplies now keep x_normed for the weights' gradients: the
    // block's norm term counts it (memory_terms.hpp norm_bytes, frozen_norms false).
  }
  return b;
}

// Trainable parameters outside the blocks: prompt tuning's P×h prompt embedding
// (peft_model.py, PromptEmbedding), LayerNorm tuning's final norm(s).
inline std::int64_t peft_model_params(const architecture& a, const scenario& s) {
  if (s.meth == method::prompt_tuning) return s.peft.virtual_tokens * a.hidden;
  if (s.meth == method::ln_tuning && a.final_norm)
    return detail::norm_params(a) * (a.kind == model_kind::encoder_decoder ? 2 : 1);
  return 0;
}

// Frozen VeRA projections shared by all layers: vera_A (r × max in) and vera_B (max out × r),
// fp32 BufferDicts (vera/model.py:147-156), resident with the weights.
inline double peft_frozen_buffer_bytes(const architecture& a, const scenario& s) {
  if (s.meth != method::vera) return 0;
  std::int64_t max_in = 0, max_out = 0;
  for (int i = 0; i < kLinearKinds; ++i) {
    if ((s.lora.targets & (1u << i)) == 0) continue;
    const linear_shape sh = linear_of(a, static_cast<linear_id>(i));
    if (sh.count <= 0) continue;
    max_in = std::max(max_in, sh.in);
    max_out = std::max(max_out, sh.out);
  }
  return detail::kAdapterBytes * static_cast<double>(s.peft.vera_rank) * static_cast<double>(max_in + max_out);
}

// modules_to_save (LoRA, DoRA, VeRA): a deep copy of each listed module trains and the
// frozen original stays (utils/other.py:632-661). A tied LM head is the embedding matrix:
// one copy, counted with the embedding (first stage). Parameters of the copy:
// token embedding (first stage) and untied head (last stage).
inline std::int64_t saved_embedding_params(const architecture& a, const scenario& s) {
  if (!has_low_rank_path(s.meth)) return 0;
  const bool tied_lm = a.head == head_kind::lm && a.tied_embeddings;
  const bool embed = (s.lora.modules_to_save & lora_save_embed) != 0 || (tied_lm && (s.lora.modules_to_save & lora_save_head) != 0);
  return embed ? a.vocab * a.hidden : 0;
}
inline std::int64_t saved_head_params(const architecture& a, const scenario& s) {
  if (!has_low_rank_path(s.meth) || (s.lora.modules_to_save & lora_save_head) == 0) return 0;
  if (a.head == head_kind::lm && a.tied_embeddings) return 0;  // in saved_embedding_params
  return count_parameters(a).head;
}

// Trainable parameters beyond the LoRA A/B matrices, over the whole model: with
// run.hpp's LoRA count, exactly PEFT's print_trainable_parameters.
inline std::int64_t peft_extra_trainable(const architecture& a, const scenario& s) {
  const peft_block e = peft_of_block(a, s, 2, 1, false);
  const peft_block d = a.decoder_layers > 0 ? peft_of_block(a, s, 2, 1, true) : peft_block{};
  return a.layers * e.params + a.decoder_layers * d.params + peft_model_params(a, s) + saved_embedding_params(a, s) +
         saved_head_params(a, s);
}

}  // namespace gpuplan
