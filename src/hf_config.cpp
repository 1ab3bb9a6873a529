// hf_config.cpp — Hugging Face config.json → gpuplan::architecture.
//
// Each family maps the fields its transformers `configuration_*.py` defines onto
// an architecture, with the defaults those config classes use, and sets every
// structural flag that family's `modeling_*.py` implies (biases, norms, head,
// positions), so that count_parameters() equals `model.num_parameters()`.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/io/hf_config.hpp"
#include "gpuplan/model.hpp"
#include "json_text.hpp"
#include "json_fields.hpp"

namespace gpuplan::io {
namespace {

using json = nlohmann::json;
using detail::fail;

using json_fields::clean;
using json_fields::show;

// Field access with aliases; errors name the alias actually present in the file.
class fields {
 public:
  fields(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string at(std::string_view key) const { return path_ + "." + std::string(key); }

  // The first alias present with a non-null value.
  [[nodiscard]] const json* find(std::initializer_list<std::string_view> names, std::string* used = nullptr) const {
    for (auto n : names) {
      auto it = j_.find(std::string(n));
      if (it != j_.end() && !it->is_null()) {
        if (used) *used = std::string(n);
        return &*it;
      }
    }
    return nullptr;
  }

  [[nodiscard]] std::optional<std::int64_t> opt_int(std::initializer_list<std::string_view> names) const {
    std::string used;
    const json* v = find(names, &used);
    if (!v) return std::nullopt;
    return as_int(*v, at(used));
  }
  [[nodiscard]] std::int64_t req_int(std::initializer_list<std::string_view> names) const {
    auto v = opt_int(names);
    if (!v) missing(names);
    return *v;
  }
  [[nodiscard]] std::int64_t int_or(std::initializer_list<std::string_view> names, std::int64_t def) const {
    return opt_int(names).value_or(def);
  }
  [[nodiscard]] std::optional<double> opt_num(std::initializer_list<std::string_view> names) const {
    std::string used;
    const json* v = find(names, &used);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(at(used), "must be a number (got " + show(*v) + ")");
    const double d = v->get<double>();
    if (!std::isfinite(d)) fail(at(used), "must be a finite number (got " + show(*v) + ")");
    return d;
  }
  [[nodiscard]] double num_or(std::initializer_list<std::string_view> names, double def) const {
    return opt_num(names).value_or(def);
  }
  [[nodiscard]] bool bool_or(std::initializer_list<std::string_view> names, bool def) const {
    std::string used;
    const json* v = find(names, &used);
    if (!v) return def;
    if (!v->is_boolean()) fail(at(used), "must be true or false (got " + show(*v) + ")");
    return v->get<bool>();
  }
  [[nodiscard]] std::optional<std::string> opt_str(std::initializer_list<std::string_view> names) const {
    std::string used;
    const json* v = find(names, &used);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(at(used), "must be a string (got " + show(*v) + ")");
    return v->get<std::string>();
  }
  [[nodiscard]] std::string str_or(std::initializer_list<std::string_view> names, std::string def) const {
    return opt_str(names).value_or(std::move(def));
  }

  [[noreturn]] void missing(std::initializer_list<std::string_view> names) const {
    std::string reason = "missing required field";
    if (names.size() > 1) {
      reason += " (also accepted: ";
      bool first = true;
      for (auto it = names.begin() + 1; it != names.end(); ++it) {
        if (!first) reason += ", ";
        reason += std::string(*it);
        first = false;
      }
      reason += ")";
    }
    fail(at(*names.begin()), reason);
  }

  static std::int64_t as_int(const json& v, const std::string& where) {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(where, "integer too large (got " + show(v) + ")");
      return v.get<std::int64_t>();
    }
    if (v.is_number_float()) {
      // Some configs write integral sizes as floats (MPT "expansion_ratio": 4.0).
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.0e15) return static_cast<std::int64_t>(d);
    }
    fail(where, "must be an integer (got " + show(v) + ")");
  }

  [[nodiscard]] const json& raw() const { return j_; }

 private:
  const json& j_;
  std::string path_;
};

// Positive integer fields are checked by validate(); here only the families'
// own constraints. Activation names as transformers' ACT2FN spells them.
activation_kind activation_of(const std::string& name, const std::string& where) {
  if (name == "silu" || name == "swish" || name == "swiglu") return activation_kind::silu;
  if (name == "relu" || name == "relu2") return activation_kind::relu;
  if (name.rfind("gelu", 0) == 0 || name == "quick_gelu" || name == "geglu") return activation_kind::gelu;
  fail(where, "unsupported activation (got \"" + clean(name) + "\"; supported: gelu*, silu, swish, relu)");
}

double dropout_of(const fields& f, std::initializer_list<std::string_view> names, double def) {
  std::string used;
  const auto v = f.opt_num(names);
  const double d = v.value_or(def);
  if (!(d >= 0.0 && d < 1.0)) {
    (void)f.find(names, &used);
    fail(f.at(used), "must be in [0, 1) (got " + detail::num(d) + ")");
  }
  return d;
}

// The `architectures` list, e.g. ["LlamaForCausalLM"].
std::vector<std::string> architectures_of(const fields& f) {
  std::vector<std::string> out;
  const json* v = f.find({"architectures"});
  if (!v) return out;
  if (!v->is_array()) fail(f.at("architectures"), "must be an array of strings (got " + show(*v) + ")");
  for (const auto& e : *v) {
    if (!e.is_string()) fail(f.at("architectures"), "must be an array of strings (got " + show(*v) + ")");
    out.push_back(e.get<std::string>());
  }
  return out;
}

bool has_suffix(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Number of classification labels: len(id2label), else num_labels, else
// PretrainedConfig's default of 2.
std::int64_t num_labels_of(const fields& f) {
  if (const json* v = f.find({"id2label"})) {
    if (!v->is_object()) fail(f.at("id2label"), "must be an object (got " + show(*v) + ")");
    if (!v->empty()) return static_cast<std::int64_t>(v->size());
  }
  const std::int64_t n = f.int_or({"num_labels"}, 2);
  if (n <= 0) fail(f.at("num_labels"), "must be a positive integer (got " + std::to_string(n) + ")");
  return n;
}

// A classification head when the checkpoint class says so.
void apply_head(architecture& a, const fields& f) {
  for (const auto& cls : architectures_of(f)) {
    if (has_suffix(cls, "ForSequenceClassification") || has_suffix(cls, "ForImageClassification")) {
      a.head = head_kind::classifier;
      a.num_labels = num_labels_of(f);
      return;
    }
  }
}

// k * v for derived defaults (4 * n_embd): saturates instead of overflowing, so
// validate() reports the size itself as too large.
std::int64_t times(std::int64_t k, std::int64_t v) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(k, v, &r)) return v > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
  return r;
}

void llama_like(architecture& a, const fields& f, const std::string& family) {
  // configuration_{llama,mistral,mixtral,qwen2,qwen3,gemma,phi3}.py; modeling: RMSNorm
  // (weight only), rotary, SwiGLU/GeGLU MLP (gate/up/down), untied by default
  // except Gemma.
  a.kind = model_kind::decoder;
  a.hidden = f.req_int({"hidden_size"});
  a.layers = f.req_int({"num_hidden_layers"});
  a.heads = f.req_int({"num_attention_heads"});
  a.kv_heads = f.int_or({"num_key_value_heads"}, a.heads);
  a.head_dim = f.int_or({"head_dim"}, family == "gemma" ? 256 : 0);
  if (a.head_dim > 0 && a.heads > 0 && a.hidden % a.heads == 0 && a.head_dim == a.hidden / a.heads) a.head_dim = 0;  // the default
  a.ffn = f.req_int({"intermediate_size"});
  a.vocab = f.req_int({"vocab_size"});
  a.max_positions = f.int_or({"max_position_embeddings"}, 0);
  a.mlp = mlp_kind::gated;
  a.norm = norm_kind::rmsnorm;
  a.norm_bias = false;
  a.positions = position_kind::rotary;
  a.tied_embeddings = f.bool_or({"tie_word_embeddings"}, family == "gemma");
  const std::string act_key = f.find({"hidden_activation"}) && family == "gemma" ? "hidden_activation" : "hidden_act";
  a.activation = activation_of(f.str_or({act_key}, family == "gemma" ? "gelu_pytorch_tanh" : "silu"), f.at(act_key));
  if (family == "qwen2") {
    a.q_bias = true;  // Qwen2Attention: q/k/v with bias, o_proj without
  } else if (family == "llama" || family == "qwen3") {
    // Qwen3Attention: attention_bias (default false) and RMSNorms of q and k over head_dim
    // (configuration_qwen3.py, modeling_qwen3.py); the q/k norms' 2 x head_dim weights per
    // layer are not counted (under 1e-5 of the parameters).
    a.q_bias = a.out_bias = f.bool_or({"attention_bias"}, false);
    a.mlp_bias = f.bool_or({"mlp_bias"}, false);
  } else if (family == "gemma") {
    a.q_bias = a.out_bias = f.bool_or({"attention_bias"}, false);
  }
  a.dropout = dropout_of(f, {"attention_dropout"}, 0.0);
  if (family == "phi3") a.dropout = dropout_of(f, {"resid_pdrop"}, 0.0);
  if (family == "mixtral") {
    a.experts = f.int_or({"num_local_experts"}, 8);
    a.experts_per_token = f.int_or({"num_experts_per_tok"}, 2);
  }
}

void gpt2(architecture& a, const fields& f) {
  // configuration_gpt2.py: n_inner None -> 4*n_embd; Conv1D layers with bias;
  // learned positions; tied head.
  a.hidden = f.req_int({"n_embd", "hidden_size"});
  a.layers = f.req_int({"n_layer", "num_hidden_layers"});
  a.heads = f.req_int({"n_head", "num_attention_heads"});
  a.ffn = f.int_or({"n_inner", "intermediate_size"}, times(4, a.hidden));
  a.vocab = f.req_int({"vocab_size"});
  a.max_positions = f.int_or({"n_positions", "max_position_embeddings"}, 1024);
  a.positions = position_kind::learned;
  a.q_bias = a.out_bias = a.mlp_bias = true;
  a.tied_embeddings = f.bool_or({"tie_word_embeddings"}, true);
  a.activation = activation_of(f.str_or({"activation_function"}, "gelu_new"), f.at("activation_function"));
  a.dropout = dropout_of(f, {"resid_pdrop"}, 0.1);
}

void gpt_neox(architecture& a, const fields& f) {
  // configuration_gpt_neox.py: rotary, biased linears, two LayerNorms per block
  // even with use_parallel_residual (so parallel_block stays false), untied embed_out.
  a.hidden = f.req_int({"hidden_size"});
  a.layers = f.req_int({"num_hidden_layers"});
  a.heads = f.req_int({"num_attention_heads"});
  a.ffn = f.req_int({"intermediate_size"});
  a.vocab = f.req_int({"vocab_size"});
  a.max_positions = f.int_or({"max_position_embeddings"}, 2048);
  a.positions = position_kind::rotary;
  a.q_bias = a.out_bias = f.bool_or({"attention_bias"}, true);
  a.mlp_bias = true;
  a.tied_embeddings = f.bool_or({"tie_word_embeddings"}, false);
  a.activation = activation_of(f.str_or({"hidden_act"}, "gelu"), f.at("hidden_act"));
  a.dropout = dropout_of(f, {"hidden_dropout"}, 0.0);
}

void gptj(architecture& a, const fields& f) {
  // modeling_gptj.py: q/k/v/out without bias, fc_in/fc_out with bias, one ln_1
  // feeding attention and MLP in parallel, untied lm_head with bias.
  a.hidden = f.req_int({"n_embd", "hidden_size"});
  a.layers = f.req_int({"n_layer", "num_hidden_layers"});
  a.heads = f.req_int({"n_head", "num_attention_heads"});
  a.ffn = f.int_or({"n_inner", "intermediate_size"}, times(4, a.hidden));
  a.vocab = f.req_int({"vocab_size"});
  a.max_positions = f.int_or({"n_positions", "max_position_embeddings"}, 2048);
  a.positions = position_kind::rotary;
  a.mlp_bias = true;
  a.parallel_block = true;
  a.tied_embeddings = f.bool_or({"tie_word_embeddings"}, false);
  a.lm_head_bias = true;
  a.activation = activation_of(f.str_or({"activation_function"}, "gelu_new"), f.at("activation_function"));
  a.dropout = dropout_of(f, {"resid_pdrop"}, 0.0);
}

void phi(architecture& a, const fields& f) {
  // modeling_phi.py: biased q/k/v/dense and fc1/fc2, one input_layernorm
  // (parallel block), final_layernorm, untied lm_head with bias, partial rotary.
  a.hidden = f.req_int({"hidden_size", "n_embd"});
  a.layers = f.req_int({"num_hidden_layers", "n_layer"});
  a.heads = f.req_int({"num_attention_heads", "n_head"});
  a.kv_heads = f.int_or({"num_key_value_heads"}, a.heads);
  a.ffn = f.int_or({"intermediate_size", "n_inner"}, times(4, a.hidden));
  a.vocab = f.req_int({"vocab_size"});
  a.max_positions = f.int_or({"max_position_embeddings", "n_positions"}, 2048);
  a.positions = position_kind::rotary;
  a.q_bias = a.out_bias = a.mlp_bias = true;
  a.parallel_block = true;
  a.tied_embeddings = f.bool_or({"tie_word_embeddings"}, false);
  a.lm_head_bias = true;
  a.activation = activation_of(f.str_or({"hidden_act"}, "gelu_new"), f.at("hidden_act"));
  a.dropout = dropout_of(f, {"resid_pdrop"}, 0.0);
  if (f.bool_or({"qk_layernorm"}, false))
    fail(f.at("qk_layernorm"), "per-head q/k LayerNorms are not modelled (got true)");
}

void opt(architecture& a, const fields& f) {
  // modeling_opt.py: learned positions with an offset of 2 rows, biased
  // linears, ReLU, tied head, final_layer_norm only when do_layer_norm_before.
  a.hidden = f.req_int({"hidden_size"});
  a.layers = f.req_int({"num_hidden_layers"});
  a.heads = f.req_int({"num_attention_heads"});
  a.ffn = f.req_int({"ffn_dim", "intermediate_size"});
  a.vocab = f.req_int({"vocab_size"});
  a.max_positions = f.int_or({"max_position_embeddings"}, 2048);
  a.position_offset = 2;
  a.positions = position_kind::learned;
  const bool bias = f.bool_or({"enable_bias"}, true);
  a.q_bias = a.out_bias = a.mlp_bias = bias;
  a.norm_bias = f.bool_or({"layer_norm_elementwise_affine"}, true);
  a.final_norm = f.bool_or({"do_layer_norm_before"}, true);
  a.tied_embeddings = f.bool_or({"tie_word_embeddings"}, true);
  a.activation = activation_of(f.str_or({"activation_function"}, "relu"), f.at("activation_function"));
  a.dropout = dropout_of(f, {"dropout"}, 0.1);
  const std::int64_t proj = f.int_or({"word_embed_proj_dim"}, a.hidden);
  if (proj != a.hidden)
    fail(f.at("word_embed_proj_dim"), "embedding projections (project_in/project_out) are not modelled; must equal hidden_size=" +
                                          std::to_string(a.hidden) + " (got " + std::to_string(proj) + ")");
}

void bloom(architecture& a, const fields& f) {
  // modeling_bloom.py: word_embeddings_layernorm, ALiBi, biased linears,
  // 4h MLP, tied head.
  a.hidden = f.req_int({"hidden_size", "n_embed"});
  a.layers = f.req_int({"n_layer", "num_hidden_layers"});
  a.heads = f.req_int({"n_head", "num_attention_heads"});
  a.ffn = times(4, a.hidden);
  a.vocab = f.req_int({"vocab_size"});
  a.positions = position_kind::alibi;
  a.q_bias = a.out_bias = a.mlp_bias = true;
  a.embedding_norm = true;
  a.tied_embeddings = f.bool_or({"tie_word_embeddings"}, true);
  a.activation = activation_kind::gelu;
  a.dropout = dropout_of(f, {"hidden_dropout"}, 0.0);
}

void falcon(architecture& a, const fields& f) {
  // configuration_falcon.py / modeling_falcon.py: multi_query -> one KV head;
  // new_decoder_architecture -> num_kv_heads and two parallel LayerNorms
  // (ln_attn, ln_mlp); otherwise parallel_attn -> one input_layernorm.
  a.hidden = f.req_int({"hidden_size", "n_embed"});
  a.layers = f.req_int({"num_hidden_layers", "n_layer"});
  a.heads = f.req_int({"num_attention_heads", "n_head"});
  a.vocab = f.req_int({"vocab_size"});
  a.ffn = f.int_or({"ffn_hidden_size"}, times(4, a.hidden));
  a.max_positions = f.int_or({"max_position_embeddings"}, 2048);
  const bool new_arch = f.bool_or({"new_decoder_architecture"}, false);
  const bool multi_query = f.bool_or({"multi_query"}, true);
  const bool parallel = f.bool_or({"parallel_attn"}, true);
  if (new_arch) {
    a.kv_heads = f.int_or({"num_kv_heads", "n_head_kv"}, a.heads);
    a.parallel_block = f.int_or({"num_ln_in_parallel_attn"}, 2) == 1;
  } else {
    a.kv_heads = multi_query ? 1 : a.heads;
    a.parallel_block = parallel;
  }
  const bool bias = f.bool_or({"bias"}, false);
  a.q_bias = a.out_bias = a.mlp_bias = bias;
  a.positions = f.bool_or({"alibi"}, false) ? position_kind::alibi : position_kind::rotary;
  a.tied_embeddings = f.bool_or({"tie_word_embeddings"}, true);
  a.activation = activation_of(f.str_or({"activation"}, "gelu"), f.at("activation"));
  a.dropout = dropout_of(f, {"hidden_dropout"}, 0.0);
}

void mpt(architecture& a, const fields& f) {
  // configuration_mpt.py / modeling_mpt.py: expansion_ratio * d_model MLP,
  // no_bias -> no linear biases and LayerNorm without bias, ALiBi (the HF
  // module always builds ALiBi and has no position table), tied head.
  a.hidden = f.req_int({"d_model", "hidden_size"});
  a.layers = f.req_int({"n_layers", "num_hidden_layers"});
  a.heads = f.req_int({"n_heads", "num_attention_heads"});
  a.vocab = f.req_int({"vocab_size"});
  std::string used = "expansion_ratio";
  const json* er = f.find({"expansion_ratio"}, &used);
  if (er) {
    if (!er->is_number()) fail(f.at("expansion_ratio"), "must be a number (got " + show(*er) + ")");
    const double r = er->get<double>();
    const double ffn = r * static_cast<double>(a.hidden);
    if (!(r > 0) || !std::isfinite(r) || !(ffn > 0) || ffn != std::trunc(ffn) || ffn > 9.0e15)
      fail(f.at("expansion_ratio"), "must make expansion_ratio * d_model a positive integer (got " + show(*er) + ")");
    a.ffn = static_cast<std::int64_t>(ffn);
  } else {
    a.ffn = times(4, a.hidden);
  }
  a.max_positions = f.int_or({"max_seq_len"}, 2048);
  const bool no_bias = f.bool_or({"no_bias"}, true);
  a.q_bias = a.out_bias = a.mlp_bias = !no_bias;
  a.norm_bias = !no_bias;
  a.positions = position_kind::alibi;
  if (const json* ac = f.find({"attn_config"})) {
    if (!ac->is_object()) fail(f.at("attn_config"), "must be an object (got " + show(*ac) + ")");
    const fields af(*ac, f.at("attn_config"));
    (void)af.bool_or({"alibi"}, true);
    a.dropout = dropout_of(af, {"attn_pdrop"}, 0.0);
  }
  a.tied_embeddings = true;
  a.activation = activation_kind::gelu;
  a.dropout = std::max(a.dropout, dropout_of(f, {"resid_pdrop"}, 0.0));
}

void bert(architecture& a, const fields& f) {
  // modeling_bert.py: embeddings (word, position, token_type) + LayerNorm,
  // post-LN blocks with two LayerNorms and no final norm, pooler (BertModel).
  a.kind = model_kind::encoder;
  a.hidden = f.req_int({"hidden_size"});
  a.layers = f.req_int({"num_hidden_layers"});
  a.heads = f.req_int({"num_attention_heads"});
  a.ffn = f.req_int({"intermediate_size"});
  a.vocab = f.req_int({"vocab_size"});
  a.max_positions = f.int_or({"max_position_embeddings"}, 512);
  a.type_vocab = f.int_or({"type_vocab_size"}, 2);
  a.positions = position_kind::learned;
  a.q_bias = a.out_bias = a.mlp_bias = true;
  a.embedding_norm = true;
  a.final_norm = false;
  a.head = head_kind::pooler;
  a.activation = activation_of(f.str_or({"hidden_act"}, "gelu"), f.at("hidden_act"));
  a.dropout = dropout_of(f, {"hidden_dropout_prob"}, 0.1);
}

void t5(architecture& a, const fields& f, bool mt5) {
  // configuration_t5.py / mt5: d_kv head size, RMSNorm (T5LayerNorm), no
  // biases, relative attention bias in the first layer of each stack,
  // gated-gelu -> wi_0/wi_1/wo; t5 ties the head by default, mt5 does not.
  a.kind = model_kind::encoder_decoder;
  a.hidden = f.req_int({"d_model", "hidden_size"});
  a.layers = f.req_int({"num_layers", "num_hidden_layers"});
  a.decoder_layers = f.int_or({"num_decoder_layers"}, a.layers);
  a.heads = f.req_int({"num_heads", "num_attention_heads"});
  a.head_dim = f.int_or({"d_kv"}, 64);
  a.ffn = f.req_int({"d_ff", "intermediate_size"});
  a.vocab = f.req_int({"vocab_size"});
  a.relative_buckets = f.int_or({"relative_attention_num_buckets"}, 32);
  a.positions = position_kind::relative;
  a.norm = norm_kind::rmsnorm;
  a.norm_bias = false;
  const std::string proj = f.str_or({"feed_forward_proj"}, mt5 ? "gated-gelu" : "relu");
  std::string act = proj;
  if (proj.rfind("gated-", 0) == 0) {
    a.mlp = mlp_kind::gated;
    act = proj.substr(6);
  }
  a.activation = activation_of(act, f.at("feed_forward_proj"));
  a.tied_embeddings = f.bool_or({"tie_word_embeddings"}, !mt5);
  a.dropout = dropout_of(f, {"dropout_rate"}, 0.1);
}

void vit(architecture& a, const fields& f) {
  // modeling_vit.py: conv patch embedding + CLS + positions, pre-LN blocks with
  // biased linears (qkv_bias), final layernorm; ViTModel adds a pooler,
  // ViTForImageClassification a classifier instead.
  a.kind = model_kind::encoder;
  a.hidden = f.req_int({"hidden_size"});
  a.layers = f.req_int({"num_hidden_layers"});
  a.heads = f.req_int({"num_attention_heads"});
  a.ffn = f.req_int({"intermediate_size"});
  a.vocab = 0;
  a.image_size = f.int_or({"image_size"}, 224);
  a.patch_size = f.int_or({"patch_size"}, 16);
  a.channels = f.int_or({"num_channels"}, 3);
  if (a.patch_size <= 0) fail(f.at("patch_size"), "must be a positive integer (got " + std::to_string(a.patch_size) + ")");
  if (a.channels <= 0) fail(f.at("num_channels"), "must be a positive integer (got " + std::to_string(a.channels) + ")");
  a.positions = position_kind::learned;
  a.q_bias = f.bool_or({"qkv_bias"}, true);
  a.out_bias = a.mlp_bias = true;
  a.head = head_kind::pooler;
  a.activation = activation_of(f.str_or({"hidden_act"}, "gelu"), f.at("hidden_act"));
  a.dropout = dropout_of(f, {"hidden_dropout_prob"}, 0.0);
}

void chatglm(architecture& a, const fields& f) {
  // THUDM configuration_chatglm.py / modeling_chatglm.py: multi-query groups,
  // kv_channels head size, SwiGLU (dense_h_to_4h is 2*ffn wide), RMSNorm,
  // add_qkv_bias / add_bias_linear, separate output_layer.
  a.hidden = f.req_int({"hidden_size"});
  a.layers = f.req_int({"num_layers", "num_hidden_layers"});
  a.heads = f.req_int({"num_attention_heads"});
  if (f.bool_or({"multi_query_attention"}, false)) a.kv_heads = f.int_or({"multi_query_group_num"}, 1);
  a.head_dim = f.int_or({"kv_channels"}, 0);
  if (a.head_dim > 0 && a.heads > 0 && a.hidden % a.heads == 0 && a.head_dim == a.hidden / a.heads) a.head_dim = 0;
  a.ffn = f.req_int({"ffn_hidden_size", "intermediate_size"});
  a.vocab = f.req_int({"padded_vocab_size", "vocab_size"});
  a.max_positions = f.int_or({"seq_length", "max_position_embeddings"}, 2048);
  a.mlp = mlp_kind::gated;
  a.activation = activation_kind::silu;
  a.norm = f.bool_or({"rmsnorm"}, true) ? norm_kind::rmsnorm : norm_kind::layernorm;
  a.norm_bias = a.norm == norm_kind::layernorm;
  a.final_norm = f.bool_or({"post_layer_norm"}, true);
  a.positions = position_kind::rotary;
  a.q_bias = f.bool_or({"add_qkv_bias"}, false);
  a.out_bias = a.mlp_bias = f.bool_or({"add_bias_linear"}, false);
  a.tied_embeddings = f.bool_or({"tie_word_embeddings"}, false);
  a.dropout = dropout_of(f, {"hidden_dropout"}, 0.0);
}

constexpr std::string_view kSupported =
    "bert, bloom, chatglm, falcon, gemma, gpt2, gpt_neox, gptj, llama, mistral, mixtral, mpt, mt5, opt, phi, phi3, qwen2, "
    "qwen3, t5, vit";

}  // namespace

architecture read_hf_config(const nlohmann::json& config, const std::string& path) {
  if (!config.is_object()) fail(path, "a config.json must be a JSON object (got " + show(config) + ")");
  const fields f(config, path);
  std::string type;
  {
    const json* t = f.find({"model_type"});
    if (!t) fail(f.at("model_type"), "missing required field (one of: " + std::string(kSupported) + ")");
    if (!t->is_string()) fail(f.at("model_type"), "must be a string (got " + show(*t) + ")");
    type = t->get<std::string>();
  }
  // Older remote-code model_type spellings of the same families.
  if (type == "RefinedWebModel" || type == "RefinedWeb") type = "falcon";

  architecture a;
  a.family = type;
  if (type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2" || type == "qwen3" || type == "gemma" ||
      type == "phi3")
    llama_like(a, f, type);
  else if (type == "gpt2") gpt2(a, f);
  else if (type == "gpt_neox") gpt_neox(a, f);
  else if (type == "gptj") gptj(a, f);
  else if (type == "phi") phi(a, f);
  else if (type == "opt") opt(a, f);
  else if (type == "bloom") bloom(a, f);
  else if (type == "falcon") falcon(a, f);
  else if (type == "mpt") mpt(a, f);
  else if (type == "bert") bert(a, f);
  else if (type == "t5") t5(a, f, false);
  else if (type == "mt5") t5(a, f, true);
  else if (type == "vit") vit(a, f);
  else if (type == "chatglm") chatglm(a, f);
  else
    fail(f.at("model_type"), "unsupported model_type '" + clean(type) + "' (supported: " + std::string(kSupported) + ")",
         error_kind::unknown_name);

  apply_head(a, f);
  if (a.head == head_kind::classifier && a.kind == model_kind::encoder_decoder)
    fail(f.at("architectures"), "sequence classification heads of encoder-decoder models are not modelled (got " +
                                    show(config["architectures"]) + ")");
  if (auto n = f.opt_str({"_name_or_path"}); n && !n->empty()) a.name = *n;
  else a.name = type;
  validate(a, path);
  return a;
}

architecture read_hf_config_file(const std::string& file, const std::string& path) {
  const json j = detail::parse_json_text(read_text_file(file, path, "config file"), path, "malformed JSON in '" + clean(file) + "'");
  return read_hf_config(j, path);
}

}  // namespace gpuplan::io
