// diffusion.hpp — Stable Diffusion pipelines as layer graphs (layers.hpp): diffusers'
// UNet2DConditionModel, AutoencoderKL and the CLIP text encoders built from configs that
// mirror their config.json fields, and the memory and time of text-to-image inference
// (classifier-free guidance, `steps` denoising steps, VAE decode) on one GPU. docs/diffusion.md.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/detail/memory_precision.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/layers.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/vision.hpp"

namespace gpuplan::diffusion {

using layers::graph;
namespace make = layers::make;

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

// Tensor calls of diffusers' modules besides their layers' kernels (layer::host_ops), counted in
// their forward code: each is one more dispatch from the host in eager PyTorch.
// AttnProcessor2_0 (attention_processor.py) on (B, L, C): view + transpose of q, k and v (6),
// transpose + reshape of the output (2), .to(query.dtype), to_out[1] (Dropout), the division by
// rescale_output_factor.
inline constexpr std::int64_t kAttnProcessorOps = 11;
// ... on (B, C, H, W) (the VAE's mid-block attention): + view and transpose in, transpose and reshape out.
inline constexpr std::int64_t kAttnProcessor4dOps = kAttnProcessorOps + 4;
// ResnetBlock2D.forward (resnet.py): self.dropout, the division by output_scale_factor, and
// temb[:, :, None, None] where there is a time embedding.
inline constexpr std::int64_t kResnetOps = 2;
// Transformer2DModel (transformer_2d.py): permute + reshape to (B, HW, C) after proj_in (or
// before it), reshape + permute + contiguous back to (B, C, H, W).
inline constexpr std::int64_t kTransformer2dOps = 5;
// FeedForward (attention.py): the Dropout after GEGLU (GEGLU's chunk is the second of the graph's
// two projection halves, layers::push_geglu).
inline constexpr std::int64_t kFeedForwardOps = 1;
// StableDiffusionPipeline.__call__'s denoising loop around each UNet call: the scheduler's step
// (PNDMScheduler.step_plms, the SD 1.x/2.x default: the four-term multistep sum, 8 calls, and
// _get_prev_sample, 18), and under guidance torch.cat([latents] * 2), noise_pred.chunk(2) and
// uncond + scale * (text - uncond).
inline constexpr std::int64_t kSchedulerStepOps = 26;
inline constexpr std::int64_t kGuidanceOps = 5;
// UNet2DConditionModel.forward's timestep embedding: timesteps.expand, get_timestep_embedding
// (embeddings.py: arange, mul, div, exp, two index views, float, two muls, sin, cos, cat, two
// slices, cat) and .to(sample.dtype).
inline constexpr std::int64_t kTimeProjOps = 17;
inline layers::layer with_host_ops(layers::layer l, std::int64_t ops) {
  l.host_ops = ops;
  return l;
}

// ResnetBlock2D (diffusers models/resnet.py): norm1, SiLU, conv1 3x3, + time_emb_proj(SiLU(temb))
// per channel, norm2, SiLU, dropout (0: identity), conv2 3x3, + (conv_shortcut 1x1 when the
// channels change) input. `emb` < 0: no time embedding (the VAE's blocks).
inline int resnet(graph& g, int x, std::int64_t in, std::int64_t out, std::int64_t groups, int emb, const std::string& nm) {
  const int first = g.push(make::group_norm(groups), nm + ".norm1", x);
  g.push(make::silu());
  int h = g.push(make::conv2d(out, 3, 1, 1), nm + ".conv1");
  if (emb >= 0) {
    g.push(make::silu(), nm + ".temb_act", emb);
    const int t = g.push(with_host_ops(make::linear(out), 1), nm + ".time_emb_proj");  // [:, :, None, None]
    h = g.push(make::add(t), nm + ".add_temb", h);
  }
  g.push(make::group_norm(groups), nm + ".norm2", h);
  g.push(make::silu());
  const int main = g.push(make::conv2d(out, 3, 1, 1), nm + ".conv2");
  const int shortcut = in != out ? g.push(make::conv2d(out, 1), nm + ".conv_shortcut", x) : x;
  const int y = g.push(with_host_ops(make::add(shortcut), kResnetOps), nm + ".add", main);
  g.segments.push_back({first, y});
  return y;
}

// Transformer2DModel (diffusers models/transformers/transformer_2d.py) over C channels:
// GroupNorm (eps 1e-6), proj_in (1x1 conv or Linear), `depth` BasicTransformerBlocks
// (attention.py: LayerNorm + self Attention, LayerNorm + cross Attention on the text
// context, LayerNorm + FeedForward GEGLU(C, 4C) + Linear(4C, C), each with a residual add),
// proj_out, + the input. Attention: q/k/v without bias, out with bias (attention_processor.py).
inline int transformer(graph& g, int x, std::int64_t C, std::int64_t heads, std::int64_t depth, std::int64_t groups,
                       bool linear_proj, std::int64_t ctx_len, std::int64_t ctx_dim, const std::string& nm) {
  g.push(make::group_norm(groups), nm + ".norm", x);
  g.push(with_host_ops(linear_proj ? make::linear(C) : make::conv2d(C, 1), kTransformer2dOps), nm + ".proj_in");
  for (std::int64_t b = 0; b < depth; ++b) {
    const std::string bn = nm + ".transformer_blocks." + std::to_string(b);
    const int a = g.last();
    const int first = g.push(make::layer_norm(), bn + ".norm1");
    g.push(with_host_ops(make::diffusers_attention(heads), kAttnProcessorOps), bn + ".attn1");
    const int s = g.push(make::add(a), bn + ".add1");
    g.push(make::layer_norm(), bn + ".norm2");
    g.push(with_host_ops(make::diffusers_attention(heads, ctx_len, ctx_dim), kAttnProcessorOps), bn + ".attn2");
    const int c = g.push(make::add(s), bn + ".add2");
    g.push(make::layer_norm(), bn + ".norm3");
    layers::push_geglu(g, 4 * C, bn + ".ff.net.0");
    g.push(with_host_ops(make::linear(C), kFeedForwardOps), bn + ".ff.net.2");
    g.segments.push_back({first, g.push(make::add(c), bn + ".add3")});
  }
  g.push(linear_proj ? make::linear(C) : make::conv2d(C, 1), nm + ".proj_out");
  return g.push(make::add(x), nm + ".add");
}

// Upsample2D (resnet.py / upsampling.py): nearest x2, then a 3x3 convolution keeping the channels.
inline int upsample2d(graph& g, std::int64_t channels, const std::string& nm) {
  g.push(make::upsample(2), nm + ".upsamplers.0.interpolate");
  return g.push(make::conv2d(channels, 3, 1, 1), nm + ".upsamplers.0.conv");
}

// The output head of the UNet, the VAE encoder and decoder: GroupNorm, SiLU, 3x3 conv_out.
inline void conv_out(graph& g, std::int64_t groups, std::int64_t out_channels, const std::string& prefix) {
  g.push(make::group_norm(groups), prefix + "conv_norm_out");
  g.push(make::silu());
  g.push(make::conv2d(out_channels, 3, 1, 1), prefix + "conv_out");
}

// The VAE's mid-block attention (vae.py UNetMidBlock2D, attention_head_dim = channels: one
// head): Attention with group_norm, q/k/v/out with bias, residual connection.
inline int vae_attention(graph& g, int x, std::int64_t groups, const std::string& nm) {
  g.push(make::group_norm(groups), nm + ".group_norm", x);
  g.push(with_host_ops(make::diffusers_attention(1, 0, 0, true), kAttnProcessor4dOps), nm);
  return g.push(make::add(x), nm + ".add");
}

inline void check_latent(std::int64_t h, std::int64_t w, std::int64_t multiple, const std::string& field) {
  for (const std::int64_t v : {h, w}) {
    check_range(field, v, 1, 4096);
    if (v % multiple != 0)
      fail(field, "must be a multiple of " + std::to_string(multiple) + " so every down-sampling halves it exactly (got " +
                      std::to_string(v) + ")");
  }
}
}  // namespace detail

namespace detail {
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

// UNet2DConditionModel.forward (unet_2d_condition.py) on a latent of h x w with a text
// context of ctx_len tokens: timestep embedding (Timesteps -> TimestepEmbedding Linear,
// SiLU, Linear to 4·block_out_channels[0]; SDXL adds add_embedding of the 2816 text_time
// inputs), conv_in, down blocks (resnets, transformers, a stride-2 conv but in the last),
// the cross-attention mid block, up blocks concatenating the down path's outputs (torch.cat
// on channels; layers_per_block + 1 resnets), an upsampler (nearest 2x + 3x3 conv), and
// GroupNorm, SiLU, conv_out.
inline graph unet_graph(const unet_config& c, std::int64_t h, std::int64_t w, std::int64_t ctx_len = 77) {
  validate(c);
  const std::size_t n = c.block_out_channels.size();
  detail::check_latent(h, w, std::int64_t{1} << (n - 1), "latent");
  detail::check_range("context_length", ctx_len, 1, 1 << 16);
  const auto heads = detail::per_block(c.num_attention_heads.empty() ? c.attention_head_dim : c.num_attention_heads, n, "heads", 1, 4096);
  const auto tl = detail::per_block(c.transformer_layers_per_block, n, "transformer_layers_per_block", 1, 64);
  const auto& boc = c.block_out_channels;
  const std::int64_t G = c.norm_num_groups, temb = 4 * boc[0];
  graph g;
  g.name = "unet";
  g.input = {c.in_channels, 1, h, w};
  g.push(detail::with_host_ops(make::input({boc[0], 1, 1, 1}), detail::kTimeProjOps), "time_proj");
  g.push(make::linear(temb), "time_embedding.linear_1");
  g.push(make::silu());
  int emb = g.push(make::linear(temb), "time_embedding.linear_2");
  if (c.addition_embed_type == "text_time") {
    // add_time_proj(time_ids) concatenated with the pooled text embeddings (unet_2d_condition.py get_aug_embed)
    g.push(make::input({c.projection_class_embeddings_input_dim, 1, 1, 1}), "add_embeds");
    g.push(make::linear(temb), "add_embedding.linear_1");
    g.push(make::silu());
    g.push(make::linear(temb), "add_embedding.linear_2");
    emb = g.push(make::add(emb), "emb + aug_emb");
  }
  int x = g.push(make::conv2d(boc[0], 3, 1, 1), "conv_in", -2);
  std::vector<std::pair<int, std::int64_t>> skips{{x, boc[0]}};
  std::int64_t ch = boc[0];
  for (std::size_t i = 0; i < n; ++i) {
    const bool cross = c.down_block_types[i] == "CrossAttnDownBlock2D";
    const std::string nm = "down_blocks." + std::to_string(i);
    for (std::int64_t j = 0; j < c.layers_per_block; ++j) {
      x = detail::resnet(g, x, ch, boc[i], G, emb, nm + ".resnets." + std::to_string(j));
      ch = boc[i];
      if (cross)
        x = detail::transformer(g, x, ch, heads[i], tl[i], G, c.use_linear_projection, ctx_len, c.cross_attention_dim,
                                nm + ".attentions." + std::to_string(j));
      skips.emplace_back(x, ch);
    }
    if (i + 1 < n) {
      x = g.push(make::conv2d(ch, 3, 2, 1), nm + ".downsamplers.0");
      skips.emplace_back(x, ch);
    }
  }
  // UNetMidBlock2DCrossAttn (unet_2d_blocks.py): resnet, then (transformer, resnet) once.
  x = detail::resnet(g, x, ch, ch, G, emb, "mid_block.resnets.0");
  x = detail::transformer(g, x, ch, heads[n - 1], tl[n - 1], G, c.use_linear_projection, ctx_len, c.cross_attention_dim,
                          "mid_block.attentions.0");
  x = detail::resnet(g, x, ch, ch, G, emb, "mid_block.resnets.1");
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t r = n - 1 - i;  // reversed_block_out_channels / reversed heads and layers
    const bool cross = c.up_block_types[i] == "CrossAttnUpBlock2D";
    const std::string nm = "up_blocks." + std::to_string(i);
    for (std::int64_t j = 0; j <= c.layers_per_block; ++j) {
      const auto [skip, skip_ch] = skips.back();
      skips.pop_back();
      x = g.push(make::concat(skip), nm + ".cat." + std::to_string(j), x);
      x = detail::resnet(g, x, ch + skip_ch, boc[r], G, emb, nm + ".resnets." + std::to_string(j));
      ch = boc[r];
      if (cross)
        x = detail::transformer(g, x, ch, heads[r], tl[r], G, c.use_linear_projection, ctx_len, c.cross_attention_dim,
                                nm + ".attentions." + std::to_string(j));
    }
    if (i + 1 < n) x = detail::upsample2d(g, ch, nm);
  }
  detail::conv_out(g, G, c.out_channels, "");
  return g;
}

// AutoencoderKL's Encoder (vae.py) + quant_conv on an h x w image: conv_in, DownEncoderBlock2D
// (resnets without time embedding; Downsample2D pads (0,1,0,1) and convolves 3x3 stride 2
// without padding — the same output size and work as padding 1), mid block (resnet,
// attention, resnet), GroupNorm, SiLU, conv_out to 2·latent_channels (mean and log-variance).
inline graph vae_encoder_graph(const vae_config& c, std::int64_t h, std::int64_t w) {
  validate(c);
  detail::check_latent(h, w, vae_scale_factor(c), "image");
  const auto& boc = c.block_out_channels;
  const std::size_t n = boc.size();
  const std::int64_t G = c.norm_num_groups;
  graph g;
  g.name = "vae.encoder";
  g.input = {c.in_channels, 1, h, w};
  int x = g.push(make::conv2d(boc[0], 3, 1, 1), "encoder.conv_in");
  std::int64_t ch = boc[0];
  for (std::size_t i = 0; i < n; ++i) {
    const std::string nm = "encoder.down_blocks." + std::to_string(i);
    for (std::int64_t j = 0; j < c.layers_per_block; ++j) {
      x = detail::resnet(g, x, ch, boc[i], G, -1, nm + ".resnets." + std::to_string(j));
      ch = boc[i];
    }
    if (i + 1 < n) x = g.push(make::conv2d(ch, 3, 2, 1), nm + ".downsamplers.0");
  }
  x = detail::resnet(g, x, ch, ch, G, -1, "encoder.mid_block.resnets.0");
  if (c.mid_block_add_attention) x = detail::vae_attention(g, x, G, "encoder.mid_block.attentions.0");
  detail::resnet(g, x, ch, ch, G, -1, "encoder.mid_block.resnets.1");
  detail::conv_out(g, G, 2 * c.latent_channels, "encoder.");
  if (c.use_quant_conv) g.push(make::conv2d(2 * c.latent_channels, 1), "quant_conv");
  return g;
}

// post_quant_conv + AutoencoderKL's Decoder (vae.py) from an h x w latent: conv_in, mid block,
// UpDecoderBlock2D (layers_per_block + 1 resnets, nearest 2x + 3x3 conv but in the last),
// GroupNorm, SiLU, conv_out.
inline graph vae_decoder_graph(const vae_config& c, std::int64_t h, std::int64_t w) {
  validate(c);
  detail::check_range("latent", h, 1, 4096);
  detail::check_range("latent", w, 1, 4096);
  const auto& boc = c.block_out_channels;
  const std::size_t n = boc.size();
  const std::int64_t G = c.norm_num_groups;
  graph g;
  g.name = "vae.decoder";
  g.input = {c.latent_channels, 1, h, w};
  if (c.use_post_quant_conv) g.push(make::conv2d(c.latent_channels, 1), "post_quant_conv", -2);
  int x = g.push(make::conv2d(boc[n - 1], 3, 1, 1), "decoder.conv_in", c.use_post_quant_conv ? -1 : -2);
  std::int64_t ch = boc[n - 1];
  x = detail::resnet(g, x, ch, ch, G, -1, "decoder.mid_block.resnets.0");
  if (c.mid_block_add_attention) x = detail::vae_attention(g, x, G, "decoder.mid_block.attentions.0");
  x = detail::resnet(g, x, ch, ch, G, -1, "decoder.mid_block.resnets.1");
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t out = boc[n - 1 - i];
    const std::string nm = "decoder.up_blocks." + std::to_string(i);
    for (std::int64_t j = 0; j <= c.layers_per_block; ++j) {
      x = detail::resnet(g, x, ch, out, G, -1, nm + ".resnets." + std::to_string(j));
      ch = out;
    }
    if (i + 1 < n) x = detail::upsample2d(g, ch, nm);
  }
  detail::conv_out(g, G, c.out_channels, "decoder.");
  return g;
}

// transformers CLIPTextModel (modeling_clip.py) on max_position_embeddings tokens (the
// pipelines pad every prompt to the tokenizer's 77): token and position embeddings,
// pre-norm encoder layers (LayerNorm, self-attention with q/k/v/out bias, LayerNorm, MLP
// fc1, GELU / quick_gelu, fc2), final LayerNorm; with_projection: the EOS token's
// text_projection (CLIPTextModelWithProjection).
inline graph clip_text_graph(const clip_text_config& c) {
  validate(c, c.name + ".");
  graph g;
  g.name = c.name;
  g.input = {1, 1, c.max_position_embeddings, 1};
  g.push(make::embedding(c.vocab_size, c.hidden_size), "embeddings.token_embedding");
  g.push(make::position_embedding(), "embeddings.position_embedding");
  for (std::int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string nm = "encoder.layers." + std::to_string(i);
    const int a = g.last();
    g.push(make::layer_norm(), nm + ".layer_norm1");
    g.push(make::self_attention(c.num_attention_heads), nm + ".self_attn");
    const int b = g.push(make::add(a), nm + ".add1");
    g.push(make::layer_norm(), nm + ".layer_norm2");
    g.push(make::linear(c.intermediate_size), nm + ".mlp.fc1");
    g.push(make::gelu());
    g.push(make::linear(c.hidden_size), nm + ".mlp.fc2");
    g.push(make::add(b), nm + ".add2");
  }
  g.push(make::layer_norm(), "final_layer_norm");
  if (c.with_projection) {
    g.push(make::take_token(), "pooled (EOS token)");
    g.push(make::linear(c.projection_dim, false), "text_projection");
  }
  return g;
}

// StableDiffusionSafetyChecker (diffusers pipelines/stable_diffusion/safety_checker.py): a
// CLIPVisionModel ViT-L/14 at 224 (patch conv without bias, class embedding, position
// embedding, pre_layrnorm, 24 encoder layers of width 1024, post_layernorm on the class
// token) and visual_projection Linear(1024, 768, bias=False).
inline graph safety_checker_graph() {
  graph g;
  g.name = "safety_checker";
  g.input = {3, 1, 224, 224};
  g.push(make::conv2d(1024, 14, 14, 0, 1, false), "vision_model.embeddings.patch_embedding");
  g.push(make::class_token(), "vision_model.embeddings.class_embedding");
  g.push(make::position_embedding(), "vision_model.embeddings.position_embedding");
  g.push(make::layer_norm(), "vision_model.pre_layrnorm");
  for (int i = 0; i < 24; ++i) {
    const std::string nm = "vision_model.encoder.layers." + std::to_string(i);
    const int a = g.last();
    g.push(make::layer_norm(), nm + ".layer_norm1");
    g.push(make::self_attention(16), nm + ".self_attn");
    const int b = g.push(make::add(a), nm + ".add1");
    g.push(make::layer_norm(), nm + ".layer_norm2");
    g.push(make::linear(4096), nm + ".mlp.fc1");
    g.push(make::gelu());
    g.push(make::linear(1024), nm + ".mlp.fc2");
    g.push(make::add(b), nm + ".add2");
  }
  g.push(make::take_token());
  g.push(make::layer_norm(), "vision_model.post_layernorm");
  g.push(make::linear(768, false), "visual_projection");
  return g;
}
// The safety checker's parameters outside its layers: concept_embeds (17 x 768),
// special_care_embeds (3 x 768), concept_embeds_weights (17), special_care_embeds_weights (3).
inline constexpr std::int64_t kSafetyCheckerConceptParams = 17 * 768 + 3 * 768 + 17 + 3;

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

// ---- text-to-image inference on one GPU ------------------------------------------

struct inference_options {
  std::int64_t batch = 1;       // images per prompt batch (num_images_per_prompt x prompts)
  std::int64_t steps = 50;      // num_inference_steps (diffusers' default)
  std::int64_t resolution = 0;  // image side in pixels; 0: the pipeline's default
  precision prec = precision::fp16_mixed;  // torch_dtype: fp16 (fp16_mixed's 2-byte weights), bf16 (bf16_pure), fp32
  bool guidance = true;         // classifier-free guidance (guidance_scale > 1): the UNet runs on 2 x batch
};

struct component_estimate {
  std::string name;
  std::int64_t params = 0;
  Bytes weights = bytes(0);      // resident while the pipeline runs
  Bytes working_set = bytes(0);  // live activations of one call (layers.hpp peak_live_elements x batch)
  std::int64_t batch = 0;        // samples per call
  double calls = 0;              // calls per pipeline run
  Seconds per_call = seconds(0);
  double forward_macs_per_sample = 0;
};

struct pipeline_estimate {
  std::string model;
  std::int64_t batch = 0, steps = 0, resolution = 0, latent = 0;
  std::vector<component_estimate> components;
  Seconds unet_step = seconds(0);   // one denoising step (the UNet on 2 x batch under guidance)
  Seconds text_encode = seconds(0), vae_decode = seconds(0), safety_check = seconds(0);
  Seconds total = seconds(0);       // one pipeline call: text + steps x unet_step + decode (+ safety check)
  double images_per_s = 0;
  Bytes weights = bytes(0);         // every component resident (diffusers .to("cuda"), no offload)
  Bytes peak_allocated = bytes(0);  // torch.cuda.max_memory_allocated: weights + the largest phase's working set
  Bytes reserved = bytes(0);        // torch.cuda.max_memory_reserved (detail/memory_allocator.hpp)
  Bytes device = bytes(0);          // nvidia-smi: reserved + the CUDA context
  std::string peak_phase;           // "text encoding", "denoising", "vae decode" or "safety check"
  [[nodiscard]] bool fits(const gpu_spec& g) const { return device <= g.usable_memory; }
};

// StableDiffusionPipeline / StableDiffusionXLPipeline.__call__ (diffusers pipelines/
// stable_diffusion*/): encode the prompt (and, under guidance, the negative prompt: a second
// pass unless force_zeros_for_empty_prompt), `steps` UNet calls on torch.cat([latents] * 2),
// one VAE decode of the batch at full resolution (in fp32 when vae.force_upcast and the
// weights are fp16: pipeline_stable_diffusion_xl.py upcast_vae), then the safety checker.
// Each call is vision::estimate_graph(..., train = false): GEMM-shaped layers at the GPU's
// ceiling and shape factor, attention at the FlashAttention fraction (SDPA), memory-bound
// layers by bytes, and at least kernels x launch_seconds of host time per call (eager PyTorch).
inline pipeline_estimate estimate_pipeline(const pipeline& p, const gpu_spec& gpu, const inference_options& o,
                                           const efficiency_params& eff = {}) {
  using detail::check_range;
  check_range("batch", o.batch, 1, 4096);
  check_range("steps", o.steps, 1, 10000);
  const std::int64_t res = o.resolution == 0 ? p.resolution : o.resolution;
  const std::int64_t f = vae_scale_factor(p.vae);
  const std::int64_t multiple = f * (std::int64_t{1} << (p.unet.block_out_channels.size() - 1));
  check_range("resolution", res, multiple, 16384);
  if (res % multiple != 0)
    detail::fail("resolution", "must be a multiple of " + std::to_string(multiple) + " (the VAE's factor " + std::to_string(f) +
                                   " x the UNet's down-sampling) (got " + std::to_string(res) + ")");
  if (o.prec != precision::fp16_mixed && o.prec != precision::bf16_pure && o.prec != precision::fp32)
    detail::fail("precision", "must be fp16, bf16 or fp32 for a diffusion pipeline (got " + std::string(to_string(o.prec)) + ")");
  if (p.text_encoders.empty()) detail::fail("text_encoders", "a pipeline needs at least one text encoder (got 0)");
  const std::int64_t lat = res / f, B = o.batch, ctx = p.text_encoders.front().max_position_embeddings;
  const double act = gpuplan::detail::mem::bytes_of(o.prec).act;
  const bool upcast_vae = p.vae.force_upcast && o.prec == precision::fp16_mixed;
  pipeline_estimate r;
  r.model = p.name;
  r.batch = B;
  r.steps = o.steps;
  r.resolution = res;
  r.latent = lat;
  // `loop_ops`: host calls around each call (the denoising loop's), added to the eager floor.
  auto run = [&](const graph& g, std::int64_t batch, precision prec, double calls, const std::string& name,
                 double loop_ops = 0) {
    const auto e = vision::estimate_graph(g, batch, prec, optimizer::sgd, gpu, false, eff);
    const auto gc = layers::analyze(g);
    const Seconds per_call = std::max(e.step, e.launch + seconds(loop_ops * eff.launch_seconds));
    component_estimate c{name, e.params, e.weights, e.activations, batch, calls, per_call, gc.matmul_flops / 2};
    r.components.push_back(c);
    return c;
  };
  const double text_calls = o.guidance && !p.force_zeros_for_empty_prompt ? 2 : 1;
  Bytes text_ws = bytes(0);
  std::int64_t ctx_dim = 0;
  for (const auto& t : p.text_encoders) {
    const auto c = run(clip_text_graph(t), B, o.prec, text_calls, t.name);
    r.text_encode += c.per_call * text_calls;
    text_ws = std::max(text_ws, c.working_set);
    ctx_dim += t.hidden_size;
  }
  if (ctx_dim != p.unet.cross_attention_dim)
    detail::fail("unet.cross_attention_dim", "must equal the text encoders' hidden sizes together, " + std::to_string(ctx_dim) +
                                                 " (got " + std::to_string(p.unet.cross_attention_dim) + ")");
  const std::int64_t unet_batch = o.guidance ? 2 * B : B;
  const double loop_ops = static_cast<double>(detail::kSchedulerStepOps + (o.guidance ? detail::kGuidanceOps : 0));
  const auto unet = run(unet_graph(p.unet, lat, lat, ctx), unet_batch, o.prec, static_cast<double>(o.steps), "unet", loop_ops);
  r.unet_step = unet.per_call;
  // The VAE: all of it is resident; only the decoder runs (txt2img).
  const graph dec = vae_decoder_graph(p.vae, lat, lat);
  const auto vae = run(dec, B, upcast_vae ? precision::fp32 : o.prec, 1, "vae");
  r.vae_decode = vae.per_call;
  auto& vc = r.components.back();
  vc.params += layers::analyze(vae_encoder_graph(p.vae, res, res)).params;
  vc.weights = bytes(static_cast<double>(vc.params) * act);
  Bytes checker_ws = bytes(0);
  if (p.safety_checker) {
    const auto sc = run(safety_checker_graph(), B, o.prec, 1, "safety_checker");
    auto& c = r.components.back();
    c.params += kSafetyCheckerConceptParams;
    c.weights = bytes(static_cast<double>(c.params) * act);
    r.safety_check = sc.per_call;
    checker_ws = sc.working_set;
  }
  for (const auto& c : r.components) r.weights += c.weights;
  // Tensors that outlive a phase: the prompt embeddings (2B x ctx x width) through the
  // denoising loop, the latents (B x 4 x lat², fp32 in the scheduler's arithmetic is
  // ignored), the decoded images (B x 3 x res²) into the safety checker.
  const double prompt = static_cast<double>(unet_batch * ctx * ctx_dim) * act;
  const double latents = static_cast<double>(B * p.unet.in_channels * lat * lat) * act;
  const double images = static_cast<double>(B * p.vae.out_channels * res * res) * act;
  struct phase { const char* name; double bytes; };
  // upcast_vae: the VAE's weights are fp32 (4 B, +2 B per parameter) while it decodes.
  const double vae_upcast = upcast_vae ? static_cast<double>(vae.params + layers::analyze(vae_encoder_graph(p.vae, res, res)).params) * 2 : 0;
  const phase phases[] = {{"text encoding", in_bytes(text_ws)},
                          {"denoising", prompt + 2 * latents + in_bytes(unet.working_set)},
                          {"vae decode", latents + vae_upcast + in_bytes(vae.working_set)},
                          {"safety check", images + in_bytes(checker_ws)}};
  double peak = -1;
  for (const auto& ph : phases)
    if (ph.bytes > peak) { peak = ph.bytes; r.peak_phase = ph.name; }
  r.peak_allocated = r.weights + bytes(peak);
  const auto peaks = gpuplan::detail::mem::allocator_and_context(in_bytes(r.peak_allocated), 0, 1);
  r.reserved = bytes(peaks.reserved);
  r.device = bytes(peaks.device);
  r.total = r.text_encode + r.unet_step * static_cast<double>(o.steps) + r.vae_decode + r.safety_check;
  r.images_per_s = static_cast<double>(B) / in_seconds(r.total);
  return r;
}

// How published runs compare: measured / estimated time over the validation rows
// (docs/accuracy.md, "Diffusion pipelines": 11 rows from three sources, ten denoising steps and
// one pipeline call; no constant fitted to them), P10, P50 and P90 by linear interpolation.
// Every row ran slower than its estimate, by 1.0x on a fast host up to 2.2x (A100 and T4 at
// batch 4 and 1); test_validation.cpp recomputes these from the rows and fails when they are stale.
inline constexpr std::array<double, 3> kStepMeasuredOverEstimate{1.148, 1.520, 2.140};
inline std::array<Seconds, 3> step_as_measured(const pipeline_estimate& e) {
  return {e.unet_step * kStepMeasuredOverEstimate[0], e.unet_step * kStepMeasuredOverEstimate[1],
          e.unet_step * kStepMeasuredOverEstimate[2]};
}

// ---- fine-tuning the UNet on one GPU ------------------------------------------------

// Bytes saved for backward per sample, checkpointed or not: vision::saved_bytes_of.
using vision::saved_bytes_of;

inline double checkpointed_saved_bytes(const graph& g, const layers::graph_cost& gc, double act) {
  return saved_bytes_of(g, gc, act, true);
}

// LoRA on every attention's projections: which layers save (saved_bytes_of). A layer's
// output needs a gradient when an input does or it holds adapters (the attentions); a layer
// whose inputs need none saves nothing, a frozen linear layer saves nothing, the rest as analyze().
inline std::vector<char> lora_saves(const graph& g) {
  const std::size_t n = g.layers.size();
  std::vector<char> grad(n, 0), saves(n, 0);
  auto needs = [&](int src) { return src >= 0 && grad[static_cast<std::size_t>(src)] != 0; };
  for (std::size_t i = 0; i < n; ++i) {
    const auto& l = g.layers[i];
    const int src = l.from == -1 ? static_cast<int>(i) - 1 : l.from;
    bool in = l.k != layers::kind::input && needs(src);
    if (l.k == layers::kind::add || l.k == layers::kind::mul || l.k == layers::kind::concat) in = in || needs(l.skip);
    const bool adapters = l.k == layers::kind::attention;
    grad[i] = in || adapters ? 1 : 0;
    saves[i] = adapters || (in && l.k != layers::kind::linear) ? 1 : 0;
  }
  return saves;
}

enum class finetune_method : std::uint8_t { full, lora };

struct finetune_options {
  finetune_method method = finetune_method::full;
  std::int64_t batch = 1;
  std::int64_t resolution = 0;   // 0: the pipeline's default
  std::int64_t lora_rank = 4;    // train_text_to_image_lora.py --rank default
  bool gradient_checkpointing = false;
  // --use_ema (train_text_to_image.py, full only): EMAModel's fp32 copy of the UNet, moved to
  // the GPU (ema_unet.to(accelerator.device)) and updated after every optimizer step.
  bool ema = false;
  optimizer opt = optimizer::adamw;
  // examples/dreambooth/train_dreambooth.py --with_prior_preservation: collate_fn concatenates
  // `batch` class images to the instance images, so the VAE encoder, the text encoder and the
  // UNet run on 2 x batch.
  bool prior_preservation = false;
  // --train_text_encoder (train_dreambooth.py, train_dreambooth_lora.py,
  // train_dreambooth_lora_sdxl.py): the text encoders train with the UNet — in full (fp32
  // weights, gradients and optimizer state) or, under lora, with adapters on their q/k/v/out
  // projections — and keep their activations for backward; gradient checkpointing covers them
  // too (text_encoder.gradient_checkpointing_enable()).
  bool train_text_encoder = false;
  // optimizer.zero_grad(set_to_none=...): true frees the gradients after each optimizer step
  // (PyTorch >= 2.0's default, the call train_text_to_image.py makes); false zeroes and keeps
  // them (train_dreambooth.py unless --set_grads_to_none), resident through the next forward.
  bool grads_set_to_none = true;
};

// The fine-tuning recipe of diffusers' examples/text_to_image/README.md, what `gpuplan
// recommend` plans with: train_text_to_image.py --train_batch_size=1
// --gradient_accumulation_steps=4 --gradient_checkpointing --use_ema --max_train_steps=15000
// (full); train_text_to_image_lora.py --train_batch_size=1 --gradient_accumulation_steps=4
// --max_train_steps=15000, rank 4, no checkpointing (LoRA).
struct finetune_recipe {
  std::int64_t global_batch = 4;  // images per optimizer step: 1 x 4 accumulation
  double steps = 15000;           // optimizer steps
  bool gradient_checkpointing = false;
  bool ema = false;
  const char* source = "";
};
inline finetune_recipe finetune_recipe_of(finetune_method m) {
  if (m == finetune_method::full)
    return {4, 15000, true, true, "diffusers examples/text_to_image README: batch 1 x 4 accumulation, 15,000 steps, "
                                  "gradient checkpointing, EMA"};
  return {4, 15000, false, false, "diffusers examples/text_to_image README (LoRA): batch 1 x 4 accumulation, 15,000 steps, rank 4"};
}

struct finetune_estimate {
  std::int64_t trainable_params = 0, frozen_params = 0;
  Bytes frozen_weights = bytes(0);     // fp16 (weight_dtype): the VAE, the text encoders, and the UNet under LoRA
  // fp32 trainable parameters (accelerate mixed_precision fp16 keeps them fp32) and, for fully
  // trained networks, the fp16 copies autocast makes of them for the forward (2 B each), which
  // live from the forward until backward has used them.
  Bytes trainable_weights = bytes(0);
  Bytes gradients = bytes(0), optimizer_state = bytes(0);
  Bytes activations = bytes(0);        // the UNet's (and a trained text encoder's) saved tensors
  Bytes transient = bytes(0);          // backward's largest layer input + output gradients
  Bytes ema = bytes(0);                // the EMA copy of the UNet (fp32), when options.ema
  Bytes peak_allocated = bytes(0), reserved = bytes(0), device = bytes(0);  // as pipeline_estimate's
  // unet: forward and backward; optimizer: its step and the EMA update, once per optimizer step.
  Seconds unet = seconds(0), encode = seconds(0), optimizer = seconds(0), step = seconds(0);
  double images_per_s = 0;
  [[nodiscard]] bool fits(const gpu_spec& g) const { return device <= g.usable_memory; }
};

// The LoRA parameters of diffusers' train_text_to_image_lora.py (peft LoraConfig on
// to_q, to_k, to_v, to_out.0 of every UNet Attention): rank x (in + out) per projection.
inline std::int64_t unet_lora_params(const graph& unet, std::int64_t rank) {
  const auto gc = layers::analyze(unet);
  std::int64_t p = 0;
  for (std::size_t i = 0; i < unet.layers.size(); ++i) {
    const auto& l = unet.layers[i];
    if (l.k != layers::kind::attention) continue;
    const std::int64_t C = gc.per_layer[i].in.c, Dk = l.kv_dim > 0 ? l.kv_dim : C;
    p += rank * ((C + C) + 2 * (Dk + C) + (C + C));
  }
  return p;
}

// accelerate's fp16 mixed precision trains fp32 parameters: their gradients are fp32.
inline constexpr double kFp32GradBytes = 4;

// One training step of diffusers' examples/text_to_image (train_text_to_image.py: the whole
// UNet trained; train_text_to_image_lora.py: LoRA adapters on the attention projections,
// the UNet frozen in fp16) with accelerate's mixed_precision="fp16": encode the images with
// the frozen VAE encoder and the captions with the frozen text encoder(s) (no grad), then the
// UNet's forward and backward on the noisy latents (no guidance in training) and the optimizer.
// Full: estimate_graph(train) of the UNet (fp32 weights and gradients, AdamW: 16 B per
// parameter). LoRA: the frozen convolutions, norms and activations still save what they
// need to carry the gradient back to earlier adapters; frozen linear layers and the layers
// before the first adapter save nothing (lora_saves); backward computes input
// gradients only, one forward's work (Kaplan et al. 2020: backward = 2 x forward, half of it
// the weight gradients). Gradient checkpointing (unet.enable_gradient_checkpointing(): each
// ResnetBlock2D and BasicTransformerBlock) keeps segment inputs and recomputes one forward.
inline finetune_estimate estimate_finetune(const pipeline& p, const gpu_spec& gpu, const finetune_options& o,
                                           const efficiency_params& eff = {}) {
  using detail::check_range;
  check_range("batch", o.batch, 1, 4096);
  if (o.train_text_encoder && p.text_encoders.empty())
    detail::fail("train_text_encoder", "the pipeline has no text encoder to train (got " + p.name + ")");
  if (o.method == finetune_method::lora) check_range("lora_rank", o.lora_rank, 1, 4096);
  if (o.ema && o.method != finetune_method::full) detail::fail("ema", "applies to full fine-tuning only (got method lora)");
  const std::int64_t res = o.resolution == 0 ? p.resolution : o.resolution;
  const std::int64_t f = vae_scale_factor(p.vae);
  const std::int64_t multiple = f * (std::int64_t{1} << (p.unet.block_out_channels.size() - 1));
  check_range("resolution", res, multiple, 16384);
  if (res % multiple != 0)
    detail::fail("resolution", "must be a multiple of " + std::to_string(multiple) + " (got " + std::to_string(res) + ")");
  if (p.text_encoders.empty()) detail::fail("text_encoders", "a pipeline needs at least one text encoder (got 0)");
  // Prior preservation: the class images join each batch (train_dreambooth.py collate_fn).
  const std::int64_t lat = res / f, B = o.batch * (o.prior_preservation ? 2 : 1),
                     ctx = p.text_encoders.front().max_position_embeddings;
  const precision prec = precision::fp16_mixed;
  const double act = gpuplan::detail::mem::bytes_of(prec).act;
  const double Bd = static_cast<double>(B);
  const graph unet = unet_graph(p.unet, lat, lat, ctx);
  const auto gc = layers::analyze(unet);
  finetune_estimate r;
  // Frozen components in fp16: the whole VAE and every text encoder.
  const graph enc = vae_encoder_graph(p.vae, res, res);
  const auto enc_e = vision::estimate_graph(enc, B, prec, optimizer::sgd, gpu, false, eff);
  double frozen = static_cast<double>(enc_e.params + layers::analyze(vae_decoder_graph(p.vae, lat, lat)).params);
  Seconds text = seconds(0);
  Bytes text_ws = bytes(0);
  const auto pb = gpuplan::detail::mem::bytes_of(prec);
  double text_trainable = 0, text_saved = 0;  // a trained text encoder's parameters and saved bytes (all samples)
  Seconds text_train = seconds(0);            // its forward + backward (and recompute), part of the UNet's step
  Bytes text_weights = bytes(0), text_grads = bytes(0), text_opt = bytes(0);
  for (std::size_t i = 0; i < p.text_encoders.size(); ++i) {
    const graph tg = clip_text_graph(p.text_encoders[i]);
    const auto te = vision::estimate_graph(tg, B, prec, optimizer::sgd, gpu, false, eff);
    if (!o.train_text_encoder) {
      frozen += static_cast<double>(te.params);
      text += te.step;
      text_ws = std::max(text_ws, te.activations);
      continue;
    }
    if (o.method == finetune_method::full) {
      // Full: as the UNet, estimate_graph's training figures (fp32 weights + autocast copies,
      // fp32 gradients, the optimizer's state), checkpointed over its encoder layers.
      const auto tt = vision::estimate_graph(tg, B, prec, o.opt, gpu, true, eff, 1, o.gradient_checkpointing);
      text_trainable += static_cast<double>(tt.params);
      text_weights += tt.weights;  // fp32 + the autocast copies, 6 B per parameter
      text_grads += bytes(static_cast<double>(tt.params) * kFp32GradBytes);
      text_opt += tt.optimizer;
      text_saved += in_bytes(tt.activations);
      text_train += tt.step - tt.optimizer_step;
    } else {
      // LoRA (train_dreambooth_lora.py text_lora_config: q_proj, k_proj, v_proj, out_proj), fp32
      // adapters; what the frozen layers save to reach them (lora_saves) and each adapter's rank-r output.
      const auto tgc = layers::analyze(tg);
      graph ck = tg;  // checkpointed per encoder layer, as estimate_graph does without segments
      if (ck.segments.empty()) ck.segments = vision::residual_segments(tg);
      const double D = static_cast<double>(p.text_encoders[i].hidden_size);
      const double L = static_cast<double>(ctx);
      double attentions = 0;
      for (const auto& l : tg.layers) attentions += l.k == layers::kind::attention ? 1 : 0;
      const double adapters = attentions * 4 * static_cast<double>(o.lora_rank) * 2 * D;
      text_trainable += adapters;
      frozen += static_cast<double>(te.params);
      text_weights += bytes(adapters * 4);
      text_grads += bytes(adapters * kFp32GradBytes);
      text_opt += bytes(adapters * gpuplan::detail::mem::optimizer_bytes_per_param(o.opt, pb.state));
      text_saved += static_cast<double>(B) * (saved_bytes_of(ck, tgc, act, o.gradient_checkpointing, lora_saves(tg)) +
                                              attentions * act * static_cast<double>(o.lora_rank) * 4 * L);
      text_train += te.step * (o.gradient_checkpointing ? 3.0 : 2.0);
    }
  }
  r.encode = enc_e.step + text;
  const auto fwd = vision::estimate_graph(unet, B, prec, o.opt, gpu, false, eff);
  double saved = saved_bytes_of(unet, gc, act, o.gradient_checkpointing,
                                o.method == finetune_method::lora ? lora_saves(unet) : std::vector<char>{});
  if (o.method == finetune_method::full) {
    const auto tr = vision::estimate_graph(unet, B, prec, o.opt, gpu, true, eff);
    r.trainable_params = gc.params;
    r.trainable_weights = tr.weights;  // AMP: 2 B + 4 B master = fp32 weights + the autocast copies
    r.gradients = bytes(static_cast<double>(gc.params) * kFp32GradBytes);  // on the fp32 parameters
    r.optimizer_state = tr.optimizer;
    r.transient = tr.transient;
    r.unet = tr.step - tr.optimizer_step;
    r.optimizer = tr.optimizer_step;
    if (o.ema) {
      // EMAModel.step: shadow = shadow - (1 - decay) x (shadow - param), fp32: read both, write the shadow.
      warning_set w{};
      r.ema = bytes(static_cast<double>(gc.params) * 4);
      r.optimizer += seconds(static_cast<double>(gc.params) * 12 / gpuplan::detail::device_rates_of(gpu, prec, eff, w).bwe);
    }
  } else {
    const auto lora = static_cast<double>(unet_lora_params(unet, o.lora_rank));
    r.trainable_params = static_cast<std::int64_t>(lora);
    frozen += static_cast<double>(gc.params);
    // cast_training_params(..., dtype=torch.float32): the adapters train in fp32.
    r.trainable_weights = bytes(lora * 4);
    r.gradients = bytes(lora * 4);
    r.optimizer_state = bytes(lora * gpuplan::detail::mem::optimizer_bytes_per_param(o.opt, pb.state));
    // Each adapter saves lora_A's rank-r output for lora_B's gradient (its input is the base
    // layer's, already counted): r x (L for to_q and to_out, Lk for to_k and to_v) per attention.
    for (std::size_t i = 0; i < unet.layers.size(); ++i)
      if (unet.layers[i].k == layers::kind::attention) {
        const double L = static_cast<double>(gc.per_layer[i].in.positions());
        const double Lk = unet.layers[i].kv_len > 0 ? static_cast<double>(unet.layers[i].kv_len) : L;
        saved += act * static_cast<double>(o.lora_rank) * (2 * L + 2 * Lk);
      }
    double largest_io = 0;
    for (const auto& c : gc.per_layer) largest_io = std::max(largest_io, static_cast<double>(c.in.elements() + c.out.elements()));
    r.transient = bytes(Bd * largest_io * act);
    r.unet = fwd.step * 2.0;  // forward + input-gradient backward; the adapters' optimizer step (a few MB) is left out
  }
  if (o.gradient_checkpointing) r.unet += fwd.step;  // the segments' forward again during backward
  r.unet += text_train;
  // fp16 autocast copies of the fully trained networks' fp32 parameters (2 B each).
  const double full_casts = o.method == finetune_method::full
                                ? (static_cast<double>(gc.params) + text_trainable) * gpuplan::detail::mem::bytes_of(prec).weight
                                : 0;
  r.trainable_params += static_cast<std::int64_t>(text_trainable);
  r.trainable_weights += text_weights;
  r.gradients += text_grads;
  r.optimizer_state += text_opt;
  r.frozen_params = static_cast<std::int64_t>(frozen);
  r.frozen_weights = bytes(frozen * act);
  r.activations = bytes(Bd * saved + text_saved);
  // Phases: encoding (the VAE encoder's and text encoders' working sets, no grad) and the UNet step.
  const double latents = Bd * static_cast<double>(p.unet.in_channels * lat * lat) * act;
  double ctx_dim = 0;
  for (const auto& t : p.text_encoders) ctx_dim += static_cast<double>(t.hidden_size);
  const double embeds = Bd * static_cast<double>(ctx) * ctx_dim * act;
  const double images = Bd * static_cast<double>(p.vae.in_channels * res * res) * act;
  const double encode_phase = images + std::max(in_bytes(enc_e.activations), in_bytes(text_ws));
  const double unet_phase = latents * 3 + embeds + in_bytes(r.activations + r.transient);  // noisy latents, noise, target
  // Gradients kept between steps are resident in every phase. Freed ones (set_to_none) exist
  // only in backward, which releases the saved activations as it produces them: the step
  // holds the larger of the two, not their sum (the first gradients and the last activations
  // overlap; an approximation that is exact when either side dominates).
  // The autocast copies of fully trained networks exist from their forward until backward has
  // used them (released before the gradients are complete).
  const double grads = in_bytes(r.gradients), casts = full_casts;
  const double train_phase = casts + unet_phase;
  const double phases = o.grads_set_to_none ? std::max({encode_phase, train_phase, grads + latents * 3 + embeds})
                                            : grads + std::max(encode_phase, train_phase);
  r.peak_allocated = r.frozen_weights + r.trainable_weights - bytes(casts) + r.optimizer_state + r.ema + bytes(phases);
  const auto peaks = gpuplan::detail::mem::allocator_and_context(in_bytes(r.peak_allocated), 0, 1);
  r.reserved = bytes(peaks.reserved);
  r.device = bytes(peaks.device);
  r.step = r.encode + r.unet + r.optimizer;
  r.images_per_s = Bd / in_seconds(r.step);
  return r;
}

}  // namespace gpuplan::diffusion
