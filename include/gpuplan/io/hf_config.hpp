// io/hf_config.hpp — Hugging Face config.json and safetensors header readers.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "gpuplan/model.hpp"

namespace gpuplan::io {

// Reads a config.json object for the supported families (llama, mistral, mixtral,
// qwen2, gemma, phi, phi3, gpt2, gpt_neox, gptj, opt, bloom, falcon, mpt, bert,
// t5, mt5, vit, chatglm), with each family's field aliases.
architecture read_hf_config(const nlohmann::json& config, const std::string& path = "model");
architecture read_hf_config_file(const std::string& file, const std::string& path = "model");

// Safetensors: exact parameter count and dtypes from the JSON headers only.
struct checkpoint_info {
  std::int64_t parameters = 0;
  std::map<std::string, std::int64_t> parameters_by_dtype;  // "BF16" -> count
  std::int64_t tensors = 0;
  std::int64_t bytes = 0;  // tensor data bytes
};
checkpoint_info read_safetensors_header(const std::string& file);
// A directory: model.safetensors.index.json (+ shards) or *.safetensors.
checkpoint_info read_checkpoint_dir(const std::string& dir);

}  // namespace gpuplan::io
