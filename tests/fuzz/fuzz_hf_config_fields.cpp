// fuzz_hf_config_fields — structured fuzzing of io::read_hf_config: a small but
// valid config of each supported family, then up to 8 fields replaced by
// hostile values (fuzz_values.hpp) or deleted. Reaches the arithmetic that raw
// byte fuzzing rarely gets to (sizes near 2^24, 2^31, 2^62, INT64_MAX).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "fuzz_values.hpp"
#include "gpuplan/io/hf_config.hpp"

namespace {

constexpr std::array<std::string_view, 19> kBases = {
    R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":100,"max_position_embeddings":256})",
    R"({"model_type":"mistral","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":100})",
    R"({"model_type":"mixtral","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":100,"num_local_experts":4,"num_experts_per_tok":2})",
    R"({"model_type":"qwen2","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,"vocab_size":100})",
    R"({"model_type":"gemma","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"head_dim":16,"intermediate_size":128,"vocab_size":100})",
    R"({"model_type":"phi3","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,"vocab_size":100,"resid_pdrop":0.1})",
    R"({"model_type":"gpt2","n_embd":64,"n_layer":2,"n_head":4,"vocab_size":100,"n_positions":128})",
    R"({"model_type":"gpt_neox","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":256,"vocab_size":100})",
    R"({"model_type":"gptj","n_embd":64,"n_layer":2,"n_head":4,"vocab_size":100})",
    R"({"model_type":"phi","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":256,"vocab_size":100})",
    R"({"model_type":"opt","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"ffn_dim":256,"vocab_size":100,"word_embed_proj_dim":64})",
    R"({"model_type":"bloom","hidden_size":64,"n_layer":2,"n_head":4,"vocab_size":100})",
    R"({"model_type":"falcon","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"new_decoder_architecture":true,"num_kv_heads":2})",
    R"({"model_type":"mpt","d_model":64,"n_layers":2,"n_heads":4,"vocab_size":100,"expansion_ratio":4,"attn_config":{"alibi":true}})",
    R"({"model_type":"bert","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":256,"vocab_size":100,"architectures":["BertForSequenceClassification"],"id2label":{"0":"a","1":"b","2":"c"}})",
    R"({"model_type":"t5","d_model":64,"num_layers":2,"num_heads":4,"d_kv":16,"d_ff":256,"vocab_size":100})",
    R"({"model_type":"mt5","d_model":64,"num_layers":2,"num_decoder_layers":3,"num_heads":4,"d_kv":16,"d_ff":256,"vocab_size":100})",
    R"({"model_type":"vit","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":256,"image_size":32,"patch_size":8})",
    R"({"model_type":"chatglm","hidden_size":64,"num_layers":2,"num_attention_heads":4,"multi_query_attention":true,"multi_query_group_num":2,"kv_channels":16,"ffn_hidden_size":128,"padded_vocab_size":100})",
};

// Every field some family reads (src/hf_config.cpp), plus a few it does not.
constexpr std::array<std::string_view, 62> kKeys = {
    "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "max_position_embeddings", "tie_word_embeddings", "hidden_activation",
    "hidden_act", "attention_bias", "mlp_bias", "attention_dropout", "resid_pdrop", "num_local_experts",
    "num_experts_per_tok", "n_embd", "n_layer", "n_head", "n_inner", "n_positions", "activation_function",
    "ffn_dim", "enable_bias", "layer_norm_elementwise_affine", "do_layer_norm_before", "dropout",
    "word_embed_proj_dim", "n_embed", "hidden_dropout", "ffn_hidden_size", "new_decoder_architecture",
    "multi_query", "parallel_attn", "num_kv_heads", "n_head_kv", "num_ln_in_parallel_attn", "bias", "alibi",
    "activation", "d_model", "n_layers", "n_heads", "expansion_ratio", "max_seq_len", "no_bias", "attn_config",
    "type_vocab_size", "hidden_dropout_prob", "num_layers", "num_decoder_layers", "num_heads", "d_kv", "d_ff",
    "relative_attention_num_buckets", "feed_forward_proj", "image_size", "patch_size", "num_channels",
    "architectures"};
constexpr std::array<std::string_view, 12> kMoreKeys = {
    "qkv_bias", "multi_query_attention", "multi_query_group_num", "kv_channels", "padded_vocab_size", "seq_length",
    "rmsnorm", "post_layer_norm", "add_qkv_bias", "add_bias_linear", "id2label", "num_labels"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  nlohmann::json j = nlohmann::json::parse(kBases[in.ConsumeIntegralInRange<std::size_t>(0, kBases.size() - 1)]);
  const int edits = in.ConsumeIntegralInRange<int>(0, 8);
  for (int i = 0; i < edits && in.remaining_bytes() > 0; ++i) {
    const std::size_t k = in.ConsumeIntegralInRange<std::size_t>(0, kKeys.size() + kMoreKeys.size() - 1);
    const std::string key(k < kKeys.size() ? kKeys[k] : kMoreKeys[k - kKeys.size()]);
    if (in.ConsumeIntegralInRange<int>(0, 9) == 0) j.erase(key);
    else if (key == "attn_config" && in.ConsumeBool()) j[key] = {{"attn_pdrop", gpuplan::fuzz::hostile_value(in)}};
    else j[key] = gpuplan::fuzz::hostile_value(in);
  }
  gpuplan::architecture a;
  gpuplan::fuzz::print_input(j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
  try {
    a = gpuplan::io::read_hf_config(j, "model");
  } catch (const gpuplan::config_error& e) {
    gpuplan::fuzz::check_error(e);
    return 0;
  }
  gpuplan::fuzz::check_model(a);
  return 0;
}
