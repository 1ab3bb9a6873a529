// fuzz_diffusers_config — the bytes of a diffusers unet/config.json (gpuplan diffusion
// --config DIR reads it): io::read_unet_config_text. Bad input is a one-line config_error;
// an accepted config builds a UNet graph at its smallest latent whose analysis has a
// positive parameter count and finite, non-negative FLOPs and working set, and it reads
// back unchanged from the JSON of its own fields.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_invariants.hpp"
#include "gpuplan/diffusion.hpp"
#include "gpuplan/io/diffusers_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  using gpuplan::fuzz::expect;
  try {
    const gpuplan::diffusion::unet_config c = gpuplan::io::read_unet_config_text(text);
    // The smallest latent every down-sampling halves exactly.
    const std::int64_t side = std::int64_t{1} << (c.block_out_channels.size() - 1);
    const auto g = gpuplan::diffusion::unet_graph(c, side, side, 8);
    const auto cost = gpuplan::layers::analyze(g);
    expect(cost.params > 0, "accepted a UNet without parameters");
    expect(std::isfinite(cost.flops) && cost.flops >= 0, "FLOPs not finite");
    expect(std::isfinite(cost.peak_live_elements) && cost.peak_live_elements > 0, "working set not positive");
    expect(cost.output.c == c.out_channels && cost.output.h == side, "output shape is not the latent's");
    nlohmann::json back = {{"in_channels", c.in_channels}, {"out_channels", c.out_channels},
                           {"block_out_channels", c.block_out_channels}, {"down_block_types", c.down_block_types},
                           {"up_block_types", c.up_block_types}, {"layers_per_block", c.layers_per_block},
                           {"attention_head_dim", c.attention_head_dim}, {"cross_attention_dim", c.cross_attention_dim},
                           {"transformer_layers_per_block", c.transformer_layers_per_block},
                           {"use_linear_projection", c.use_linear_projection}, {"norm_num_groups", c.norm_num_groups},
                           {"sample_size", c.sample_size}, {"mid_block_type", c.mid_block_type},
                           {"addition_time_embed_dim", c.addition_time_embed_dim},
                           {"projection_class_embeddings_input_dim", c.projection_class_embeddings_input_dim}};
    if (!c.num_attention_heads.empty()) back["num_attention_heads"] = c.num_attention_heads;
    if (!c.addition_embed_type.empty()) back["addition_embed_type"] = c.addition_embed_type;
    const auto again = gpuplan::io::read_unet_config(back);
    expect(gpuplan::layers::analyze(gpuplan::diffusion::unet_graph(again, side, side, 8)).params == cost.params,
           "config changed in a read/write/read round trip");
  } catch (const gpuplan::config_error& e) {
    gpuplan::fuzz::check_error(e);
  }
  return 0;
}
