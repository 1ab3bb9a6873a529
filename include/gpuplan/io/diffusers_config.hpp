// io/diffusers_config.hpp — a diffusers pipeline folder (model_index.json, unet/config.json,
// vae/config.json, text_encoder*/config.json) read into diffusion::pipeline (diffusion.hpp).
// Fields that change the architecture away from what diffusion.hpp builds (class
// embeddings, other block types, a conv_in kernel other than 3, ...) are errors naming the
// field, never ignored. docs/diffusion.md.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/diffusion.hpp"

namespace gpuplan::io {

// One component's config.json as parsed JSON; errors name `path`.field.
diffusion::unet_config read_unet_config(const nlohmann::json& config, const std::string& path = "unet");
diffusion::vae_config read_vae_config(const nlohmann::json& config, const std::string& path = "vae");
diffusion::clip_text_config read_clip_text_config(const nlohmann::json& config, const std::string& path = "text_encoder");
// The same from untrusted text (malformed JSON is a parse_error naming `path`).
diffusion::unet_config read_unet_config_text(const std::string& text, const std::string& path = "unet");

// A pipeline folder: model_index.json names the components (StableDiffusionPipeline or
// StableDiffusionXLPipeline); each is read from its sub-folder's config.json.
diffusion::pipeline read_diffusers_pipeline(const std::string& dir);

}  // namespace gpuplan::io
