// model.hpp — transformer architecture and its exact parameter count by component.
// Counts follow each family's Hugging Face modeling_*.py module list, counted
// the way `model.num_parameters()` counts them (tied embeddings once).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gpuplan/error.hpp"

namespace gpuplan {

enum class model_kind : std::uint8_t { decoder, encoder, encoder_decoder };
enum class norm_kind : std::uint8_t { layernorm, rmsnorm };
enum class position_kind : std::uint8_t { learned, rotary, alibi, relative, none };
enum class mlp_kind : std::uint8_t { plain, gated };
enum class activation_kind : std::uint8_t { gelu, silu, relu };
// lm: language-model head (tied or not); classifier: pooled classification head
// (num_labels); pooler: BERT-style pooler only; none: bare encoder.
enum class head_kind : std::uint8_t { lm, classifier, pooler, none };

struct architecture {
  std::string name;
  std::string family;  // Hugging Face model_type
  model_kind kind = model_kind::decoder;

  std::int64_t hidden = 0;
  std::int64_t layers = 0;          // decoder-only: decoder layers; encoder / enc-dec: encoder layers
  std::int64_t decoder_layers = 0;  // encoder-decoder only
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  // 0 = heads (MHA); 1 = MQA; otherwise GQA
  std::int64_t head_dim = 0;  // 0 = hidden / heads
  std::int64_t ffn = 0;       // MLP intermediate size
  std::int64_t vocab = 0;
  std::int64_t max_positions = 0;
  std::int64_t position_offset = 0;  // extra learned position rows (OPT: 2)
  std::int64_t type_vocab = 0;       // token-type embeddings (BERT: 2)
  std::int64_t relative_buckets = 0; // T5 relative attention bias buckets (first layer of each stack)

  mlp_kind mlp = mlp_kind::plain;
  activation_kind activation = activation_kind::gelu;
  norm_kind norm = norm_kind::layernorm;
  bool norm_bias = true;  // LayerNorm with a bias vector
  position_kind positions = position_kind::learned;
  bool q_bias = false;    // bias on q,k,v projections
  bool out_bias = false;  // bias on the attention output projection
  bool mlp_bias = false;
  bool tied_embeddings = true;
  bool lm_head_bias = false;
  bool parallel_block = false;  // attention and MLP read the same normed input (GPT-J, Falcon, Phi)
  bool embedding_norm = false;  // a norm right after the embeddings (BLOOM, BERT, ViT has none)
  bool final_norm = true;
  double dropout = 0.0;  // hidden/attention dropout probability used in training

  // Mixture of experts (experts <= 1: dense).
  std::int64_t experts = 0;
  std::int64_t experts_per_token = 0;
  std::int64_t shared_experts = 0;
  std::int64_t expert_ffn = 0;  // 0 = ffn

  head_kind head = head_kind::lm;
  std::int64_t num_labels = 0;

  // Vision transformer patch embedding (patch_size > 0 marks a ViT).
  std::int64_t image_size = 0;
  std::int64_t patch_size = 0;
  std::int64_t channels = 3;

  [[nodiscard]] constexpr std::int64_t n_kv_heads() const noexcept { return kv_heads > 0 ? kv_heads : heads; }
  [[nodiscard]] constexpr std::int64_t d_head() const noexcept {
    return head_dim > 0 ? head_dim : (heads > 0 ? hidden / heads : 0);
  }
  [[nodiscard]] constexpr std::int64_t q_dim() const noexcept { return heads * d_head(); }
  [[nodiscard]] constexpr std::int64_t kv_dim() const noexcept { return n_kv_heads() * d_head(); }
  [[nodiscard]] constexpr bool is_moe() const noexcept { return experts > 1; }
  [[nodiscard]] constexpr std::int64_t d_expert() const noexcept { return expert_ffn > 0 ? expert_ffn : ffn; }
  [[nodiscard]] constexpr bool is_vit() const noexcept { return patch_size > 0; }
  [[nodiscard]] constexpr std::int64_t total_layers() const noexcept { return layers + decoder_layers; }
  // Sequence length of a ViT (patches + CLS); 0 for text models.
  [[nodiscard]] constexpr std::int64_t vit_tokens() const noexcept {
    return is_vit() ? (image_size / patch_size) * (image_size / patch_size) + 1 : 0;
  }

  friend bool operator==(const architecture&, const architecture&) = default;
};

// The linear layers of one transformer block, by LoRA target name.
enum class linear_id : std::uint8_t { q, k, v, o, gate, up, down };
inline constexpr int kLinearKinds = 7;

struct linear_shape {
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::int64_t count = 0;  // instances per block (experts multiply MLP linears; 0 = absent)
};

struct parameter_breakdown {
  std::int64_t embeddings = 0;  // token, position, token-type, patch embeddings and embedding norm
  std::int64_t attention = 0;   // q,k,v,o (+ biases, relative-position tables, cross-attention)
  std::int64_t mlp = 0;         // dense MLP or experts (+ routers, shared experts)
  std::int64_t norms = 0;       // per-layer and final norms
  std::int64_t head = 0;        // untied LM head, pooler, classifier
  std::int64_t total = 0;
  std::int64_t largest_layer = 0;  // largest single module (DeepSpeed's largest_layer_params)
  std::int64_t per_layer = 0;       // one decoder-only / encoder block
  std::int64_t per_decoder_layer = 0;  // one decoder block of an encoder-decoder
};

// Largest accepted model dimension (hidden, layers, vocab, ...): 2^24.
inline constexpr std::int64_t kMaxModelDim = std::int64_t{1} << 24;

namespace detail {
// Checked 64-bit arithmetic: a model too large for int64 is an explicit error.
inline std::int64_t cmul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail("model", "parameter count too large for 64-bit arithmetic");
  return r;
}
inline std::int64_t cadd(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) fail("model", "parameter count too large for 64-bit arithmetic");
  return r;
}
inline std::int64_t norm_params(const architecture& a) {
  return (a.norm == norm_kind::layernorm && a.norm_bias) ? 2 * a.hidden : a.hidden;
}
}  // namespace detail

// Shape of each linear in one block. For decoder blocks of an encoder-decoder,
// cross-attention doubles q,k,v,o (count 2).
inline linear_shape linear_of(const architecture& a, linear_id id, bool decoder_block = false) {
  const std::int64_t h = a.hidden;
  const std::int64_t attn = decoder_block ? 2 : 1;
  const std::int64_t mlp_count = a.is_moe() ? a.experts + a.shared_experts : 1;
  const std::int64_t f = a.is_moe() ? a.d_expert() : a.ffn;
  switch (id) {
    case linear_id::q: return {h, a.q_dim(), attn};
    case linear_id::k: return {h, a.kv_dim(), attn};
    case linear_id::v: return {h, a.kv_dim(), attn};
    case linear_id::o: return {a.q_dim(), h, attn};
    case linear_id::gate: return {h, f, a.mlp == mlp_kind::gated ? mlp_count : 0};
    case linear_id::up: return {h, f, mlp_count};
    case linear_id::down: return {f, h, mlp_count};
  }
  return {};
}

namespace detail {
// Parameters of one block's attention (self, and cross for decoder blocks of enc-dec).
inline std::int64_t block_attention(const architecture& a, bool decoder_block) {
  const std::int64_t h = a.hidden;
  std::int64_t one = cadd(cmul(h, a.q_dim() + 2 * a.kv_dim()), cmul(a.q_dim(), h));
  if (a.q_bias) one = cadd(one, a.q_dim() + 2 * a.kv_dim());
  if (a.out_bias) one = cadd(one, h);
  return decoder_block ? 2 * one : one;
}
inline std::int64_t one_mlp(const architecture& a, std::int64_t f) {
  const std::int64_t mats = a.mlp == mlp_kind::gated ? 3 : 2;
  std::int64_t p = cmul(mats, cmul(a.hidden, f));
  if (a.mlp_bias) p = cadd(p, (mats - 1) * f + a.hidden);
  return p;
}
inline std::int64_t block_mlp(const architecture& a) {
  if (!a.is_moe()) return one_mlp(a, a.ffn);
  // Router: a bias-free h x E linear (Mixtral `gate`, Switch router).
  const std::int64_t expert = one_mlp(a, a.d_expert());
  return cadd(cmul(a.experts + a.shared_experts, expert), cmul(a.hidden, a.experts));
}
inline std::int64_t block_norms(const architecture& a, bool decoder_block) {
  const std::int64_t n = a.parallel_block ? 1 : 2;
  return (n + (decoder_block ? 1 : 0)) * norm_params(a);
}
}  // namespace detail

// Exact parameter count by component.
inline parameter_breakdown count_parameters(const architecture& a) {
  using detail::cadd;
  using detail::cmul;
  parameter_breakdown p;
  const std::int64_t h = a.hidden;
  // Embeddings.
  std::int64_t token = cmul(a.vocab, h);
  std::int64_t emb = token;
  if (a.positions == position_kind::learned && a.max_positions > 0)
    emb = cadd(emb, cmul(a.max_positions + a.position_offset, h));
  if (a.type_vocab > 0) emb = cadd(emb, cmul(a.type_vocab, h));
  if (a.embedding_norm) emb = cadd(emb, detail::norm_params(a));
  if (a.is_vit()) {
    // ViT: conv patch projection (C*p*p*h + h), CLS token (h), positions ((N+1)*h); no vocabulary.
    token = cadd(cmul(a.channels * a.patch_size * a.patch_size, h), h);
    emb = cadd(cadd(token, h), cmul(a.vit_tokens(), h));
    if (a.embedding_norm) emb = cadd(emb, detail::norm_params(a));
  }
  p.embeddings = emb;

  const std::int64_t enc_attn = detail::block_attention(a, false);
  const std::int64_t mlp = detail::block_mlp(a);
  const std::int64_t enc_norms = detail::block_norms(a, false);
  p.per_layer = cadd(cadd(enc_attn, mlp), enc_norms);
  std::int64_t rel = a.relative_buckets > 0 ? cmul(a.relative_buckets, a.heads) : 0;
  p.attention = cadd(cmul(a.layers, enc_attn), rel);
  p.mlp = cmul(a.layers, mlp);
  p.norms = cmul(a.layers, enc_norms);
  std::int64_t final_norms = a.final_norm ? detail::norm_params(a) : 0;
  if (a.kind == model_kind::encoder_decoder) {
    const std::int64_t dec_attn = detail::block_attention(a, true);
    const std::int64_t dec_norms = detail::block_norms(a, true);
    p.per_decoder_layer = cadd(cadd(dec_attn, mlp), dec_norms);
    p.attention = cadd(p.attention, cadd(cmul(a.decoder_layers, dec_attn), rel));
    p.mlp = cadd(p.mlp, cmul(a.decoder_layers, mlp));
    p.norms = cadd(p.norms, cmul(a.decoder_layers, dec_norms));
    if (a.final_norm) final_norms *= 2;  // encoder and decoder final norms
  }
  p.norms = cadd(p.norms, final_norms);

  // Head.
  std::int64_t head = 0;
  switch (a.head) {
    case head_kind::lm:
      if (!a.tied_embeddings) head = cmul(a.vocab, h);
      if (a.lm_head_bias) head = cadd(head, a.vocab);
      break;
    case head_kind::pooler: head = cadd(cmul(h, h), h); break;
    case head_kind::classifier:
      head = cadd(cmul(h, a.num_labels), a.num_labels);
      if (!a.is_vit()) head = cadd(head, cadd(cmul(h, h), h));  // BERT pooler before the classifier
      break;
    case head_kind::none: break;
  }
  p.head = head;
  p.total = cadd(cadd(cadd(p.embeddings, p.attention), cadd(p.mlp, p.norms)), p.head);

  // Largest single module: the token embedding, an untied LM head, or one block's
  // largest linear (DeepSpeed's estimate_zero3 `largest_layer_params`).
  std::int64_t largest = token;
  if (a.head == head_kind::lm && !a.tied_embeddings) largest = std::max(largest, cmul(a.vocab, h));
  for (int i = 0; i < kLinearKinds; ++i) {
    const linear_shape s = linear_of(a, static_cast<linear_id>(i));
    if (s.count > 0) largest = std::max(largest, cmul(s.in, s.out));
  }
  p.largest_layer = largest;
  return p;
}

// Parameters per pipeline-splittable unit, in execution order: [embeddings,
// block_0 .. block_{L-1}, head (final norms + head)]. Used for stage splits.
inline std::vector<std::int64_t> layer_parameters(const architecture& a) {
  const parameter_breakdown p = count_parameters(a);
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(a.total_layers() + 2));
  out.push_back(p.embeddings);
  for (std::int64_t i = 0; i < a.layers; ++i) out.push_back(p.per_layer);
  for (std::int64_t i = 0; i < a.decoder_layers; ++i) out.push_back(p.per_decoder_layer);
  std::int64_t rel = a.relative_buckets > 0 ? a.relative_buckets * a.heads : 0;
  if (rel > 0 && a.layers > 0) out[1] += rel;
  if (rel > 0 && a.decoder_layers > 0) out[static_cast<std::size_t>(1 + a.layers)] += rel;
  std::int64_t final_norms = a.final_norm ? detail::norm_params(a) : 0;
  if (a.kind == model_kind::encoder_decoder) final_norms *= 2;
  out.push_back(final_norms + p.head);
  return out;
}

// Throws config_error naming the field when an architecture is not a model.
inline void validate(const architecture& a, const std::string& path = "model") {
  // Bounds first, so that no check below (and no product in count_parameters)
  // can overflow: every dimension <= 2^24, so products of two fit in 2^48.
  auto bounded = [&](std::int64_t v, const char* field, std::int64_t max = kMaxModelDim) {
    if (v < 0) detail::fail(path + "." + field, "must not be negative (got " + std::to_string(v) + ")");
    if (v > max) detail::fail(path + "." + field, "too large (max " + std::to_string(max) + ", got " + std::to_string(v) + ")");
  };
  bounded(a.hidden, "hidden_size");
  bounded(a.layers, "num_hidden_layers");
  bounded(a.decoder_layers, "num_decoder_layers");
  bounded(a.heads, "num_attention_heads");
  bounded(a.kv_heads, "num_key_value_heads");
  bounded(a.head_dim, "head_dim");
  bounded(a.ffn, "intermediate_size");
  bounded(a.vocab, "vocab_size");
  bounded(a.max_positions, "max_position_embeddings");
  bounded(a.position_offset, "position_offset", 1024);
  bounded(a.type_vocab, "type_vocab_size");
  bounded(a.relative_buckets, "relative_attention_num_buckets");
  bounded(a.experts, "num_local_experts", 1 << 16);
  bounded(a.experts_per_token, "num_experts_per_tok", 1 << 16);
  bounded(a.shared_experts, "num_shared_experts", 1 << 16);
  bounded(a.expert_ffn, "moe_intermediate_size");
  bounded(a.num_labels, "num_labels");
  bounded(a.image_size, "image_size");
  bounded(a.patch_size, "patch_size", 1 << 12);
  bounded(a.channels, "num_channels", 64);

  auto positive = [&](std::int64_t v, const char* field) {
    if (v <= 0) detail::fail(path + "." + field, "must be a positive integer (got " + std::to_string(v) + ")");
  };
  positive(a.hidden, "hidden_size");
  positive(a.layers, "num_hidden_layers");
  positive(a.heads, "num_attention_heads");
  positive(a.ffn, "intermediate_size");
  if (!a.is_vit()) positive(a.vocab, "vocab_size");
  if (a.kind == model_kind::encoder_decoder) positive(a.decoder_layers, "num_decoder_layers");
  if (a.head_dim == 0 && a.hidden % a.heads != 0)
    detail::fail(path + ".num_attention_heads", "must divide hidden_size=" + std::to_string(a.hidden) +
                                                    " (got " + std::to_string(a.heads) + ")");
  if (a.kv_heads > a.heads || (a.kv_heads > 0 && a.heads % a.kv_heads != 0))
    detail::fail(path + ".num_key_value_heads", "must divide num_attention_heads=" + std::to_string(a.heads) +
                                                    " (got " + std::to_string(a.kv_heads) + ")");
  if (a.is_moe() && (a.experts_per_token <= 0 || a.experts_per_token > a.experts))
    detail::fail(path + ".num_experts_per_tok", "must be between 1 and num_local_experts=" + std::to_string(a.experts) +
                                                    " (got " + std::to_string(a.experts_per_token) + ")");
  if (a.is_vit() && (a.image_size <= 0 || a.image_size % a.patch_size != 0))
    detail::fail(path + ".image_size", "must be a positive multiple of patch_size=" + std::to_string(a.patch_size) +
                                           " (got " + std::to_string(a.image_size) + ")");
  if (!(a.dropout >= 0 && a.dropout < 1))
    detail::fail(path + ".dropout", "must be in [0, 1) (got " + detail::num(a.dropout) + ")");
  (void)count_parameters(a);  // checked arithmetic: throws "too large" on overflow
}

}  // namespace gpuplan
