// graph/diffusion_catalog.hpp — the pipelines of the catalog (SD 1.5, SD 2.1, SDXL base)
// as configs (graph/diffusion_config.hpp) and their lookup by name or Hub id. docs/diffusion.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/error.hpp"
#include "gpuplan/graph/diffusion_config.hpp"

namespace gpuplan::diffusion {

// ---- the catalog ---------------------------------------------------------------
// Configs: the models' config.json files on the Hugging Face Hub (tests/data/diffusers/
// holds copies with their sources).

inline clip_text_config clip_vit_l14_text() { return {}; }  // openai/clip-vit-large-patch14 text tower
inline clip_text_config openclip_vit_h14_text() {         // stabilityai/stable-diffusion-2-1 text_encoder (23 of 24 layers)
  clip_text_config c;
  c.hidden_size = 1024; c.intermediate_size = 4096; c.num_hidden_layers = 23; c.num_attention_heads = 16; c.projection_dim = 512;
  return c;
}
inline clip_text_config openclip_vit_bigg14_text() {      // stable-diffusion-xl-base-1.0 text_encoder_2
  clip_text_config c;
  c.name = "text_encoder_2";
  c.hidden_size = 1280; c.intermediate_size = 5120; c.num_hidden_layers = 32; c.num_attention_heads = 20; c.projection_dim = 1280;
  c.with_projection = true;
  return c;
}

inline pipeline sd15() {
  pipeline p;
  p.name = "sd-1.5";
  p.text_encoders = {clip_vit_l14_text()};
  p.safety_checker = true;
  p.resolution = 512;
  return p;
}
inline pipeline sd21() {
  pipeline p;
  p.name = "sd-2.1";
  p.unet.attention_head_dim = {5, 10, 20, 20};
  p.unet.cross_attention_dim = 1024;
  p.unet.use_linear_projection = true;
  p.unet.sample_size = 96;
  p.vae.sample_size = 768;
  p.text_encoders = {openclip_vit_h14_text()};
  p.resolution = 768;
  return p;
}
inline pipeline sdxl_base() {
  pipeline p;
  p.name = "sdxl-base";
  auto& u = p.unet;
  u.block_out_channels = {320, 640, 1280};
  u.down_block_types = {"DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"};
  u.up_block_types = {"CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"};
  u.attention_head_dim = {5, 10, 20};
  u.transformer_layers_per_block = {1, 2, 10};
  u.cross_attention_dim = 2048;
  u.use_linear_projection = true;
  u.addition_embed_type = "text_time";
  u.addition_time_embed_dim = 256;
  u.projection_class_embeddings_input_dim = 2816;
  u.sample_size = 128;
  p.vae.sample_size = 1024;
  p.vae.force_upcast = true;
  p.text_encoders = {clip_vit_l14_text(), openclip_vit_bigg14_text()};
  p.force_zeros_for_empty_prompt = true;
  p.resolution = 1024;
  return p;
}

inline std::vector<std::string> pipeline_names() { return {"sd-1.5", "sd-2.1", "sdxl-base"}; }

// Catalog lookup; also accepts the Hub ids (runwayml/stable-diffusion-v1-5, ...).
inline pipeline pipeline_by_name(std::string_view name) {
  std::string n;
  for (char ch : name) n.push_back(static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch));
  if (n == "sd-1.5" || n == "sd15" || n == "runwayml/stable-diffusion-v1-5" || n == "stable-diffusion-v1-5") return sd15();
  if (n == "sd-2.1" || n == "sd21" || n == "stabilityai/stable-diffusion-2-1" || n == "stable-diffusion-2-1") return sd21();
  if (n == "sdxl-base" || n == "sdxl" || n == "stabilityai/stable-diffusion-xl-base-1.0" || n == "stable-diffusion-xl-base-1.0")
    return sdxl_base();
  std::string list;
  for (const auto& m : pipeline_names()) list += (list.empty() ? "" : ", ") + m;
  detail::fail("model", "unknown diffusion pipeline '" + std::string(name) + "'; known: " + list, error_kind::unknown_name);
}

}  // namespace gpuplan::diffusion
