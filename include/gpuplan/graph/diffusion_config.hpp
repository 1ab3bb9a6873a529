// graph/diffusion_config.hpp — the configs a Stable Diffusion pipeline is built from:
// diffusers' UNet2DConditionModel and AutoencoderKL config.json fields, transformers'
// CLIPTextConfig, the pipeline that holds them, and the checks on every field (validate).
// The graphs they build: graph/diffusion_graphs.hpp. docs/diffusion.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpuplan/error.hpp"

namespace gpuplan::diffusion {

// diffusers UNet2DConditionModel config.json (models/unets/unet_2d_condition.py). A list
// of one value applies to every block (the config's int form); otherwise one per block.
struct unet_config {
  std::int64_t in_channels = 4, out_channels = 4;
  std::vector<std::int64_t> block_out_channels{320, 640, 1280, 1280};
  std::vector<std::string> down_block_types{"CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"};
  std::vector<std::string> up_block_types{"UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"};
  std::string mid_block_type = "UNetMidBlock2DCrossAttn";
  std::int64_t layers_per_block = 2;
  // The heads per block: num_attention_heads, or when it is null the legacy
  // attention_head_dim (unet_2d_condition.py: `num_attention_heads = num_attention_heads or attention_head_dim`).
  std::vector<std::int64_t> attention_head_dim{8};
  std::vector<std::int64_t> num_attention_heads;  // empty: null in config.json
  std::int64_t cross_attention_dim = 768;
  std::vector<std::int64_t> transformer_layers_per_block{1};
  bool use_linear_projection = false;  // proj_in/proj_out Linear instead of 1x1 Conv2d (same parameters)
  std::string addition_embed_type;     // "" (none) or "text_time" (SDXL)
  std::int64_t addition_time_embed_dim = 0, projection_class_embeddings_input_dim = 0;
  std::int64_t norm_num_groups = 32;
  std::int64_t sample_size = 64;  // latent side the model was trained at
};

// diffusers AutoencoderKL config.json (models/autoencoders/autoencoder_kl.py, vae.py).
struct vae_config {
  std::int64_t in_channels = 3, out_channels = 3, latent_channels = 4;
  std::vector<std::int64_t> block_out_channels{128, 256, 512, 512};
  std::int64_t layers_per_block = 2;
  std::int64_t norm_num_groups = 32;
  std::int64_t sample_size = 512;
  bool mid_block_add_attention = true;
  bool use_quant_conv = true, use_post_quant_conv = true;
  bool force_upcast = false;  // SDXL: the pipeline decodes in fp32 when the VAE is fp16
};

// transformers CLIPTextConfig (models/clip/modeling_clip.py CLIPTextModel; with_projection:
// CLIPTextModelWithProjection's text_projection Linear(hidden, projection_dim, bias=False)).
struct clip_text_config {
  std::string name = "text_encoder";
  std::int64_t vocab_size = 49408, hidden_size = 768, intermediate_size = 3072;
  std::int64_t num_hidden_layers = 12, num_attention_heads = 12, max_position_embeddings = 77;
  std::int64_t projection_dim = 768;
  bool with_projection = false;
};

struct pipeline {
  std::string name;
  unet_config unet;
  vae_config vae;
  std::vector<clip_text_config> text_encoders;
  // StableDiffusionSafetyChecker (CLIP ViT-L/14 vision tower + projection), loaded by the SD 1.x pipeline.
  bool safety_checker = false;
  // model_index.json force_zeros_for_empty_prompt (SDXL): without a negative prompt the
  // unconditional embeddings are zeros, so the text encoders run once, not twice.
  bool force_zeros_for_empty_prompt = false;
  std::int64_t resolution = 512;  // default image side: unet.sample_size x the VAE's scale factor
};

namespace detail {
using gpuplan::detail::fail;
inline constexpr std::int64_t kMaxChannels = 65536;

inline void check_range(const std::string& field, std::int64_t v, std::int64_t lo, std::int64_t hi) {
  if (v < lo || v > hi)
    fail(field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " + std::to_string(v) + ")");
}
// One value per block: a list of one is broadcast (the config's int form).
inline std::vector<std::int64_t> per_block(const std::vector<std::int64_t>& v, std::size_t n, const std::string& field,
                                           std::int64_t lo, std::int64_t hi) {
  if (v.size() != 1 && v.size() != n)
    fail(field, "must have 1 or " + std::to_string(n) + " entries, one per block (got " + std::to_string(v.size()) + ")");
  std::vector<std::int64_t> out(n, v.front());
  for (std::size_t i = 0; i < n; ++i) {
    if (v.size() == n) out[i] = v[i];
    check_range(field + "[" + std::to_string(v.size() == n ? i : 0) + "]", out[i], lo, hi);
  }
  return out;
}

// The fields UNet and VAE configs share: in/out channels, 1 to 6 blocks, each a multiple of the groups.
inline void check_channels(const std::string& prefix, std::int64_t in, std::int64_t out,
                           const std::vector<std::int64_t>& blocks, std::int64_t groups) {
  check_range(prefix + "in_channels", in, 1, kMaxChannels);
  check_range(prefix + "out_channels", out, 1, kMaxChannels);
  const std::size_t n = blocks.size();
  if (n < 1 || n > 6) fail(prefix + "block_out_channels", "must have 1 to 6 entries (got " + std::to_string(n) + ")");
  check_range(prefix + "norm_num_groups", groups, 1, 1024);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string f = prefix + "block_out_channels[" + std::to_string(i) + "]";
    check_range(f, blocks[i], 1, kMaxChannels);
    if (blocks[i] % groups != 0)
      fail(f, "must be a multiple of norm_num_groups=" + std::to_string(groups) + " (got " + std::to_string(blocks[i]) + ")");
  }
}
}  // namespace detail

// Checks every field a graph is built from; errors name `prefix`.field (e.g. "unet.block_out_channels[2]").
inline void validate(const unet_config& c, const std::string& prefix = "unet.") {
  using detail::check_range;
  using detail::fail;
  // Bounds well above every published UNet (SDXL: 3 blocks, 2 resnets, 10 transformer
  // layers) that keep a graph below a few hundred thousand layers.
  detail::check_channels(prefix, c.in_channels, c.out_channels, c.block_out_channels, c.norm_num_groups);
  const std::size_t n = c.block_out_channels.size();
  if (c.down_block_types.size() != n)
    fail(prefix + "down_block_types", "must have one entry per block_out_channels (" + std::to_string(n) + ", got " +
                                          std::to_string(c.down_block_types.size()) + ")");
  if (c.up_block_types.size() != n)
    fail(prefix + "up_block_types", "must have one entry per block_out_channels (" + std::to_string(n) + ", got " +
                                        std::to_string(c.up_block_types.size()) + ")");
  for (std::size_t i = 0; i < n; ++i) {
    const auto& d = c.down_block_types[i];
    if (d != "CrossAttnDownBlock2D" && d != "DownBlock2D")
      fail(prefix + "down_block_types[" + std::to_string(i) + "]", "must be CrossAttnDownBlock2D or DownBlock2D (got " + d + ")", error_kind::unknown_name);
    const auto& u = c.up_block_types[i];
    if (u != "CrossAttnUpBlock2D" && u != "UpBlock2D")
      fail(prefix + "up_block_types[" + std::to_string(i) + "]", "must be CrossAttnUpBlock2D or UpBlock2D (got " + u + ")", error_kind::unknown_name);
  }
  if (c.mid_block_type != "UNetMidBlock2DCrossAttn")
    fail(prefix + "mid_block_type", "must be UNetMidBlock2DCrossAttn (got " + c.mid_block_type + ")", error_kind::unknown_name);
  check_range(prefix + "layers_per_block", c.layers_per_block, 1, 16);
  const auto heads = detail::per_block(c.num_attention_heads.empty() ? c.attention_head_dim : c.num_attention_heads, n,
                                       prefix + (c.num_attention_heads.empty() ? "attention_head_dim" : "num_attention_heads"), 1, 4096);
  for (std::size_t i = 0; i < n; ++i)
    if (c.block_out_channels[i] % heads[i] != 0)
      fail(prefix + (c.num_attention_heads.empty() ? "attention_head_dim[" : "num_attention_heads[") + std::to_string(i) + "]",
           "the heads must divide block_out_channels[" + std::to_string(i) + "]=" + std::to_string(c.block_out_channels[i]) +
               " (got " + std::to_string(heads[i]) + ")");
  detail::per_block(c.transformer_layers_per_block, n, prefix + "transformer_layers_per_block", 1, 64);
  check_range(prefix + "cross_attention_dim", c.cross_attention_dim, 1, detail::kMaxChannels);
  if (c.addition_embed_type == "text_time") {
    check_range(prefix + "addition_time_embed_dim", c.addition_time_embed_dim, 1, detail::kMaxChannels);
    check_range(prefix + "projection_class_embeddings_input_dim", c.projection_class_embeddings_input_dim, 1, detail::kMaxChannels);
  } else if (!c.addition_embed_type.empty()) {
    fail(prefix + "addition_embed_type", "must be null or text_time (got " + c.addition_embed_type + ")", error_kind::unknown_name);
  }
  check_range(prefix + "sample_size", c.sample_size, 1, 4096);
}

inline void validate(const vae_config& c, const std::string& prefix = "vae.") {
  using detail::check_range;
  detail::check_channels(prefix, c.in_channels, c.out_channels, c.block_out_channels, c.norm_num_groups);
  check_range(prefix + "latent_channels", c.latent_channels, 1, detail::kMaxChannels);
  check_range(prefix + "layers_per_block", c.layers_per_block, 1, 16);
  check_range(prefix + "sample_size", c.sample_size, 1, 65536);
}

inline void validate(const clip_text_config& c, const std::string& prefix = "text_encoder.") {
  using detail::check_range;
  check_range(prefix + "vocab_size", c.vocab_size, 1, 1 << 22);
  check_range(prefix + "hidden_size", c.hidden_size, 1, detail::kMaxChannels);
  check_range(prefix + "intermediate_size", c.intermediate_size, 1, 1 << 20);
  check_range(prefix + "num_hidden_layers", c.num_hidden_layers, 1, 512);
  check_range(prefix + "num_attention_heads", c.num_attention_heads, 1, 4096);
  if (c.hidden_size % c.num_attention_heads != 0)
    detail::fail(prefix + "num_attention_heads", "must divide hidden_size=" + std::to_string(c.hidden_size) + " (got " +
                                                     std::to_string(c.num_attention_heads) + ")");
  check_range(prefix + "max_position_embeddings", c.max_position_embeddings, 1, 1 << 16);
  if (c.with_projection) check_range(prefix + "projection_dim", c.projection_dim, 1, detail::kMaxChannels);
}

// The VAE's spatial factor: 2^(len(block_out_channels) - 1) (pipeline_stable_diffusion.py vae_scale_factor).
inline std::int64_t vae_scale_factor(const vae_config& c) {
  return std::int64_t{1} << (c.block_out_channels.size() - 1);
}

}  // namespace gpuplan::diffusion
