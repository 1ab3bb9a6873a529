// HF config.json reader: each family's path, field aliases, transformers'
// defaults, and every error path with its exact message. Expected parameter
// counts are derived by hand in the comments (modeling_<family>.py module list).
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/hf_config.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_hf_config {

using namespace gpuplan;
using nlohmann::json;

namespace {
architecture read(const char* text) { return io::read_hf_config(json::parse(text)); }
std::int64_t total(const architecture& a) { return count_parameters(a).total; }
}  // namespace

TEST_CASE("hf_config: llama family (llama, mistral, qwen2, gemma, phi3, mixtral)") {
  SUBCASE("llama: GQA default = heads, untied, SwiGLU, RMSNorm, no biases") {
    const auto a = read(R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
      "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000, "max_position_embeddings": 4096})");
    CHECK(a.family == "llama");
    CHECK(a.kind == model_kind::decoder);
    CHECK(a.n_kv_heads() == 32);
    CHECK(a.mlp == mlp_kind::gated);
    CHECK(a.activation == activation_kind::silu);
    CHECK(a.norm == norm_kind::rmsnorm);
    CHECK_FALSE(a.norm_bias);
    CHECK(a.positions == position_kind::rotary);
    CHECK_FALSE(a.tied_embeddings);
    CHECK_FALSE(a.q_bias);
    CHECK(a.dropout == 0.0);
    CHECK(total(a) == 6738415616LL);  // llama-2-7b model card
  }
  SUBCASE("llama attention_bias / mlp_bias") {
    const auto a = read(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 128, "vocab_size": 100, "attention_bias": true, "mlp_bias": true})");
    CHECK(a.q_bias);
    CHECK(a.out_bias);
    CHECK(a.mlp_bias);
  }
  SUBCASE("qwen2: q/k/v bias only") {
    const auto a = read(R"({"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,
      "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064, "tie_word_embeddings": false})");
    CHECK(a.q_bias);
    CHECK_FALSE(a.out_bias);
    CHECK_FALSE(a.mlp_bias);
    CHECK(total(a) == 7615616512LL);  // Qwen2.5-7B model card
  }
  SUBCASE("gemma: tied by default, head_dim 256 default, GeGLU") {
    const auto a = read(R"({"model_type": "gemma", "hidden_size": 2048, "num_hidden_layers": 18, "num_attention_heads": 8,
      "num_key_value_heads": 1, "intermediate_size": 16384, "vocab_size": 256000})");
    CHECK(a.tied_embeddings);
    CHECK(a.d_head() == 256);
    CHECK(a.activation == activation_kind::gelu);
    CHECK(total(a) == 2506172416LL);  // gemma-2b model card
  }
  SUBCASE("phi3: fused qkv/gate_up count the same as separate linears") {
    const auto a = read(R"({"model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 32, "num_attention_heads": 32,
      "intermediate_size": 8192, "vocab_size": 32064, "resid_pdrop": 0.0})");
    CHECK_FALSE(a.tied_embeddings);
    CHECK(total(a) == 3821079552LL);  // Phi-3-mini model card
  }
  SUBCASE("mixtral: experts default 8, top-2") {
    const auto a = read(R"({"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
      "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000})");
    CHECK(a.experts == 8);
    CHECK(a.experts_per_token == 2);
    CHECK(total(a) == 46702792704LL);  // Mixtral-8x7B
  }
  SUBCASE("mistral") {
    const auto a = read(R"({"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
      "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000})");
    CHECK(total(a) == 7241732096LL);
  }
}

TEST_CASE("hf_config: gpt2 aliases and defaults") {
  // n_inner None -> 4 * n_embd; n_positions default 1024; resid_pdrop 0.1.
  const auto a = read(R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257,
    "n_inner": null})");
  CHECK(a.ffn == 3072);
  CHECK(a.max_positions == 1024);
  CHECK(a.dropout == doctest::Approx(0.1));
  CHECK(a.q_bias);
  CHECK(a.out_bias);
  CHECK(a.mlp_bias);
  CHECK(a.tied_embeddings);
  CHECK(a.positions == position_kind::learned);
  CHECK(total(a) == 124439808LL);
  // The transformers attribute_map names work too.
  const auto b = read(R"({"model_type": "gpt2", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "vocab_size": 50257, "max_position_embeddings": 1024})");
  CHECK(total(b) == total(a));
}

TEST_CASE("hf_config: gpt_neox keeps two norms with use_parallel_residual") {
  // pythia-160m: 2 x 50304*768 (untied embed_out) + 12 x (2,362,368 attn + 4,722,432 mlp + 3,072 norms)
  // + 1,536 final norm = 162,322,944 (Pythia paper, Table 1 total parameters).
  const auto a = read(R"({"model_type": "gpt_neox", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "vocab_size": 50304, "use_parallel_residual": true, "tie_word_embeddings": false})");
  CHECK_FALSE(a.parallel_block);
  CHECK(a.positions == position_kind::rotary);
  CHECK(total(a) == 162322944LL);
}

TEST_CASE("hf_config: gptj parallel block and biased untied head") {
  // gpt-j-6b: 2 x 50400*4096 + 50400 head bias + 28 x (4 x 4096^2 + 2 x 4096*16384 + 16384 + 4096 + 8192)
  // + 8192 = 6,050,882,784.
  const auto a = read(R"({"model_type": "gptj", "n_embd": 4096, "n_layer": 28, "n_head": 16, "vocab_size": 50400,
    "n_positions": 2048, "rotary_dim": 64})");
  CHECK(a.parallel_block);
  CHECK(a.lm_head_bias);
  CHECK_FALSE(a.tied_embeddings);
  CHECK_FALSE(a.q_bias);
  CHECK(a.mlp_bias);
  CHECK(a.ffn == 16384);
  CHECK(total(a) == 6050882784LL);
}

TEST_CASE("hf_config: phi (phi-2)") {
  const auto a = read(R"({"model_type": "phi", "hidden_size": 2560, "num_hidden_layers": 32, "num_attention_heads": 32,
    "intermediate_size": 10240, "vocab_size": 51200, "resid_pdrop": 0.1})");
  CHECK(a.parallel_block);
  CHECK(a.lm_head_bias);
  CHECK(a.dropout == doctest::Approx(0.1));
  CHECK(total(a) == 2779683840LL);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "phi", "hidden_size": 2560, "num_hidden_layers": 32, "num_attention_heads": 32,
    "intermediate_size": 10240, "vocab_size": 51200, "qk_layernorm": true})"),
                       "model.qk_layernorm: per-head q/k LayerNorms are not modelled (got true)", config_error);
}

TEST_CASE("hf_config: opt offset, ReLU, final norm flag, projections refused") {
  const auto a = read(R"({"model_type": "opt", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 32,
    "ffn_dim": 8192, "vocab_size": 50272, "max_position_embeddings": 2048, "word_embed_proj_dim": 2048})");
  CHECK(a.position_offset == 2);
  CHECK(a.activation == activation_kind::relu);
  CHECK(a.final_norm);
  CHECK(a.dropout == doctest::Approx(0.1));
  CHECK(total(a) == 1315758080LL);
  const auto b = read(R"({"model_type": "opt", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "ffn_dim": 256, "vocab_size": 100, "do_layer_norm_before": false})");
  CHECK_FALSE(b.final_norm);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "opt", "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
    "ffn_dim": 4096, "vocab_size": 50272, "word_embed_proj_dim": 512})"),
                       "model.word_embed_proj_dim: embedding projections (project_in/project_out) are not modelled; must "
                       "equal hidden_size=1024 (got 512)",
                       config_error);
}

TEST_CASE("hf_config: bloom embedding norm and ALiBi; n_embed alias") {
  const auto a = read(R"({"model_type": "bloom", "n_embed": 4096, "n_layer": 30, "num_attention_heads": 32, "vocab_size": 250880})");
  CHECK(a.embedding_norm);
  CHECK(a.positions == position_kind::alibi);
  CHECK(a.ffn == 4 * 4096);
  CHECK(total(a) == 7069016064LL);  // bloom-7b1
}

TEST_CASE("hf_config: falcon variants") {
  SUBCASE("falcon-7b: multi_query, parallel_attn, no bias") {
    const auto a = io::find_model("falcon-7b");
    CHECK(a.n_kv_heads() == 1);
    CHECK(a.parallel_block);
    CHECK_FALSE(a.q_bias);
    CHECK(a.tied_embeddings);
    CHECK(a.positions == position_kind::rotary);
  }
  SUBCASE("new_decoder_architecture: num_kv_heads, two parallel norms") {
    const auto a = read(R"({"model_type": "falcon", "hidden_size": 8192, "num_hidden_layers": 60, "num_attention_heads": 128,
      "num_kv_heads": 8, "new_decoder_architecture": true, "vocab_size": 65024})");
    CHECK(a.n_kv_heads() == 8);
    CHECK_FALSE(a.parallel_block);  // ln_attn + ln_mlp: two norms per block
    CHECK(count_parameters(a).norms == 60LL * 2 * 2 * 8192 + 2 * 8192);
  }
  SUBCASE("RW-1b style: no multi-query, sequential, ALiBi, bias; old model_type spelling") {
    const auto a = read(R"({"model_type": "RefinedWeb", "n_embed": 2048, "n_layer": 24, "n_head": 32, "vocab_size": 50304,
      "multi_query": false, "parallel_attn": false, "alibi": true, "bias": true})");
    CHECK(a.family == "falcon");
    CHECK(a.n_kv_heads() == 32);
    CHECK_FALSE(a.parallel_block);
    CHECK(a.positions == position_kind::alibi);
    CHECK(a.q_bias);
    CHECK(a.mlp_bias);
  }
}

TEST_CASE("hf_config: mpt no_bias, expansion_ratio, attn_config") {
  const auto a = read(R"({"model_type": "mpt", "d_model": 4096, "n_layers": 32, "n_heads": 32, "expansion_ratio": 4.0,
    "vocab_size": 50432, "max_seq_len": 2048, "no_bias": true, "attn_config": {"alibi": true, "attn_pdrop": 0.0}})");
  CHECK(a.ffn == 16384);
  CHECK_FALSE(a.norm_bias);
  CHECK_FALSE(a.q_bias);
  CHECK(a.positions == position_kind::alibi);
  CHECK(total(a) == 6649286656LL);  // mpt-7b
  const auto b = read(R"({"model_type": "mpt", "d_model": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 100, "no_bias": false})");
  CHECK(b.norm_bias);
  CHECK(b.q_bias);
  CHECK(b.ffn == 256);  // expansion_ratio default 4
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "mpt", "d_model": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 100,
    "expansion_ratio": 0.001})"),
                       "model.expansion_ratio: must make expansion_ratio * d_model a positive integer (got 0.001)", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "mpt", "d_model": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 100,
    "attn_config": "alibi"})"),
                       "model.attn_config: must be an object (got \"alibi\")", config_error);
}

TEST_CASE("hf_config: bert pooler by default, classifier from architectures") {
  const auto a = read(R"({"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "vocab_size": 30522, "architectures": ["BertForMaskedLM"]})");
  CHECK(a.kind == model_kind::encoder);
  CHECK(a.type_vocab == 2);
  CHECK(a.max_positions == 512);
  CHECK(a.embedding_norm);
  CHECK_FALSE(a.final_norm);
  CHECK(a.head == head_kind::pooler);
  CHECK(a.dropout == doctest::Approx(0.1));
  CHECK(total(a) == 109482240LL);
  const auto c = read(R"({"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "vocab_size": 30522, "architectures": ["BertForSequenceClassification"],
    "id2label": {"0": "neg", "1": "neu", "2": "pos"}})");
  CHECK(c.head == head_kind::classifier);
  CHECK(c.num_labels == 3);
  CHECK(total(c) == 109482240LL + 768 * 3 + 3);  // pooler kept, classifier 768x3 + 3
  const auto d = read(R"({"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "vocab_size": 30522, "architectures": ["BertForSequenceClassification"]})");
  CHECK(d.num_labels == 2);  // PretrainedConfig default
}

TEST_CASE("hf_config: t5 / mt5 / t5 v1.1") {
  const auto a = read(R"({"model_type": "t5", "d_model": 768, "num_layers": 12, "num_heads": 12, "d_kv": 64, "d_ff": 3072,
    "vocab_size": 32128})");
  CHECK(a.kind == model_kind::encoder_decoder);
  CHECK(a.decoder_layers == 12);  // num_decoder_layers defaults to num_layers
  CHECK(a.mlp == mlp_kind::plain);
  CHECK(a.activation == activation_kind::relu);
  CHECK(a.tied_embeddings);
  CHECK(total(a) == 222903552LL);  // t5-base
  // t5-v1_1-base: gated-gelu, untied: 2 x 24,674,304 + 12 x 7,079,424 + 12 x 9,439,488 + 768 + 1,536 = 247,577,856.
  const auto v11 = read(R"({"model_type": "t5", "d_model": 768, "num_layers": 12, "num_heads": 12, "d_kv": 64, "d_ff": 2048,
    "vocab_size": 32128, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": false})");
  CHECK(v11.mlp == mlp_kind::gated);
  CHECK(v11.activation == activation_kind::gelu);
  CHECK(total(v11) == 247577856LL);
  // mt5 defaults: gated-gelu and untied.
  const auto m = read(R"({"model_type": "mt5", "d_model": 4096, "num_layers": 24, "num_heads": 64, "d_kv": 64, "d_ff": 10240,
    "vocab_size": 250112})");
  CHECK(m.mlp == mlp_kind::gated);
  CHECK_FALSE(m.tied_embeddings);
  CHECK(total(m) == 12921057280LL);  // mt0-xxl
}

TEST_CASE("hf_config: vit pooler (ViTModel) or classifier") {
  const auto base = read(R"({"model_type": "vit", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072})");
  CHECK(base.is_vit());
  CHECK(base.image_size == 224);
  CHECK(base.patch_size == 16);
  CHECK(base.head == head_kind::pooler);
  // ViTModel: 86,567,656 - 769,000 classifier + 590,592 pooler.
  CHECK(total(base) == 86567656LL - 769000 + 590592);
  const auto cls = read(R"({"model_type": "vit", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "architectures": ["ViTForImageClassification"], "num_labels": 1000})");
  CHECK(cls.head == head_kind::classifier);
  CHECK(total(cls) == 86567656LL);
}

TEST_CASE("hf_config: chatglm fields") {
  const auto a = io::find_model("chatglm3-6b");
  CHECK(a.n_kv_heads() == 2);
  CHECK(a.d_head() == 128);
  CHECK(a.q_bias);
  CHECK_FALSE(a.out_bias);
  CHECK(a.vocab == 65024);
  CHECK(total(a) == 6243584000LL);
  const auto ln = read(R"({"model_type": "chatglm", "hidden_size": 64, "num_layers": 2, "num_attention_heads": 4,
    "ffn_hidden_size": 128, "padded_vocab_size": 100, "rmsnorm": false, "add_bias_linear": true})");
  CHECK(ln.norm == norm_kind::layernorm);
  CHECK(ln.norm_bias);
  CHECK(ln.out_bias);
  CHECK(ln.mlp_bias);
  CHECK(ln.n_kv_heads() == 4);  // multi_query_attention false
}

TEST_CASE("hf_config: error paths name the field and the value") {
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "xyz"})"),
                       "model.model_type: unsupported model_type 'xyz' (supported: bert, bloom, chatglm, falcon, gemma, gpt2, "
                       "gpt_neox, gptj, llama, mistral, mixtral, mpt, mt5, opt, phi, phi3, qwen2, qwen3, t5, vit)",
                       config_error);
  CHECK_THROWS_WITH_AS(read(R"({"hidden_size": 4})"),
                       "model.model_type: missing required field (one of: bert, bloom, chatglm, falcon, gemma, gpt2, gpt_neox, "
                       "gptj, llama, mistral, mixtral, mpt, mt5, opt, phi, phi3, qwen2, qwen3, t5, vit)",
                       config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": 7})"), "model.model_type: must be a string (got 7)", config_error);
  CHECK_THROWS_WITH_AS(read("[1]"), "model: a config.json must be a JSON object (got [1])", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 8, "vocab_size": 10})"),
                       "model.hidden_size: missing required field", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "gpt2", "n_layer": 2, "n_head": 4, "vocab_size": 10})"),
                       "model.n_embd: missing required field (also accepted: hidden_size)", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": "12", "n_head": 4, "vocab_size": 10})"),
                       "model.n_layer: must be an integer (got \"12\")", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2.5, "n_head": 4, "vocab_size": 10})"),
                       "model.n_layer: must be an integer (got 2.5)", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 10,
    "tie_word_embeddings": "yes"})"),
                       "model.tie_word_embeddings: must be true or false (got \"yes\")", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 10,
    "resid_pdrop": 1.5})"),
                       "model.resid_pdrop: must be in [0, 1) (got 1.5)", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 10,
    "activation_function": "tanh"})"),
                       "model.activation_function: unsupported activation (got \"tanh\"; supported: gelu*, silu, swish, relu)",
                       config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "gpt2", "n_embd": 100, "n_layer": 2, "n_head": 3, "vocab_size": 10})"),
                       "model.num_attention_heads: must divide hidden_size=100 (got 3)", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 3, "intermediate_size": 8, "vocab_size": 10})"),
                       "model.num_key_value_heads: must divide num_attention_heads=4 (got 3)", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "llama", "hidden_size": -64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 8, "vocab_size": 10})"),
                       "model.hidden_size: must not be negative (got -64)", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 18446744073709551615})"),
                       "model.vocab_size: integer too large (got 18446744073709551615)", config_error);
  // Found by fuzz_hf_config_fields: a default derived from a huge size (4 * hidden) must not overflow.
  CHECK_THROWS_WITH_AS(read(R"({"hidden_size": 9223372036854775807, "intermediate_size": 256, "model_type": "phi",
    "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100})"),
                       "model.hidden_size: too large (max 16777216, got 9223372036854775807)", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "opt", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "ffn_dim": 8, "vocab_size": 10, "max_position_embeddings": 9223372036854775807})"),
                       "model.max_position_embeddings: too large (max 16777216, got 9223372036854775807)", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "head_dim": 1099511627776, "intermediate_size": 8, "vocab_size": 10})"),
                       "model.head_dim: too large (max 16777216, got 1099511627776)", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "vit", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 8, "image_size": 1099511627776, "patch_size": 16})"),
                       "model.image_size: too large (max 16777216, got 1099511627776)", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 8, "vocab_size": 10, "architectures": "BertModel"})"),
                       "model.architectures: must be an array of strings (got \"BertModel\")", config_error);
  CHECK_THROWS_WITH_AS(read(R"({"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 8, "vocab_size": 10, "num_experts_per_tok": 9})"),
                       "model.num_experts_per_tok: must be between 1 and num_local_experts=8 (got 9)", config_error);
  // A custom path prefix flows into every message.
  CHECK_THROWS_WITH_AS(io::read_hf_config(json::parse(R"({"model_type": "gpt2"})"), "scenario.model"),
                       "scenario.model.n_embd: missing required field (also accepted: hidden_size)", config_error);
}

TEST_CASE("hf_config: files") {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string good = (dir / "gpuplan_hf_config_good.json").string();
  const std::string bad = (dir / "gpuplan_hf_config_bad.json").string();
  std::ofstream(good) << R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257})";
  std::ofstream(bad) << R"({"model_type": "gpt2", )";
  CHECK(total(io::read_hf_config_file(good)) == 124439808LL);
  CHECK(total(io::load_model(good)) == 124439808LL);
  CHECK_THROWS_WITH_AS(io::read_hf_config_file(bad), ("model: malformed JSON in '" + bad + "': parse error at line 1, column 24: syntax error while parsing object key - "
                        "unexpected end of input; expected string literal").c_str(), config_error);
  CHECK_THROWS_WITH_AS(io::read_hf_config_file("/nonexistent/config.json"),
                       "model: cannot open config file '/nonexistent/config.json'", config_error);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

TEST_CASE("hf_config: mpt expansion_ratio with a negative d_model is an error, not a wrapped cast") {
  // Found by fuzz_hf_config_fields (UBSan: double outside the range of int64).
  const auto j = nlohmann::json::parse(R"({"model_type": "mpt", "d_model": -1099511627776, "n_layers": 2,
    "n_heads": 2, "vocab_size": 100, "expansion_ratio": 1e8})");
  CHECK_THROWS_AS(io::read_hf_config(j), config_error);
}

}  // namespace unit_hf_config
