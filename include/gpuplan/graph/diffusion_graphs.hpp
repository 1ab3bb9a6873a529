// graph/diffusion_graphs.hpp — Stable Diffusion's networks as layer graphs
// (graph/layer.hpp), built from their configs (graph/diffusion_config.hpp): diffusers'
// UNet2DConditionModel, AutoencoderKL's encoder and decoder, the CLIP text encoders and
// the SD 1.x safety checker, with the host calls of diffusers' modules. docs/diffusion.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/graph/diffusion_config.hpp"
#include "gpuplan/graph/layer.hpp"

namespace gpuplan::diffusion {

using layers::graph;
namespace make = layers::make;

namespace detail {
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

}  // namespace gpuplan::diffusion
