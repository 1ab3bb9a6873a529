// diffusers pipeline folders (io/diffusers_config.hpp): the fixtures in tests/data/diffusers
// (the Hub's public config files) read into the catalog's pipelines, and hostile configs.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/diffusion.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/diffusers_config.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_diffusers_config {

using namespace gpuplan;
namespace df = gpuplan::diffusion;
namespace L = gpuplan::layers;
using json = nlohmann::json;

namespace {
const std::string kDir = std::string(GPUPLAN_TEST_DATA_DIR) + "/diffusers/";

json read_json(const std::string& file) {
  std::ifstream in(file);
  return json::parse(in);
}

// Two pipelines build the same graphs: every component's parameters and output shapes agree.
void check_same(const df::pipeline& a, const df::pipeline& b) {
  CHECK(a.resolution == b.resolution);
  CHECK(a.safety_checker == b.safety_checker);
  CHECK(a.force_zeros_for_empty_prompt == b.force_zeros_for_empty_prompt);
  CHECK(a.vae.force_upcast == b.vae.force_upcast);
  const std::int64_t lat = a.resolution / df::vae_scale_factor(a.vae);
  const auto ua = L::analyze(df::unet_graph(a.unet, lat, lat)), ub = L::analyze(df::unet_graph(b.unet, lat, lat));
  CHECK(ua.params == ub.params);
  CHECK(ua.matmul_flops == ub.matmul_flops);
  CHECK(L::analyze(df::vae_decoder_graph(a.vae, lat, lat)).params == L::analyze(df::vae_decoder_graph(b.vae, lat, lat)).params);
  REQUIRE(a.text_encoders.size() == b.text_encoders.size());
  for (std::size_t i = 0; i < a.text_encoders.size(); ++i) {
    CHECK(a.text_encoders[i].name == b.text_encoders[i].name);
    CHECK(L::analyze(df::clip_text_graph(a.text_encoders[i])).params == L::analyze(df::clip_text_graph(b.text_encoders[i])).params);
  }
}

// A scratch copy of a fixture folder with one file replaced.
std::string scratch_with(const std::string& fixture, const std::string& rel, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gpuplan-diffusers-" + fixture + "-" + std::to_string(std::hash<std::string>{}(rel + text)));
  fs::remove_all(dir);
  fs::copy(kDir + fixture, dir, fs::copy_options::recursive);
  std::ofstream(dir / rel, std::ios::trunc) << text;
  return dir.string();
}
}  // namespace

TEST_CASE("diffusers config: the fixture folders read into the catalog's pipelines") {
  check_same(io::read_diffusers_pipeline(kDir + "sd-1.5"), df::sd15());
  check_same(io::read_diffusers_pipeline(kDir + "sd-2.1"), df::sd21());
  check_same(io::read_diffusers_pipeline(kDir + "sdxl-base"), df::sdxl_base());
  const auto p = io::read_diffusers_pipeline(kDir + "sdxl-base");
  CHECK(p.name == "sdxl-base");
  CHECK(L::analyze(df::unet_graph(p.unet, 128, 128)).params == 2567463684);
  CHECK(p.text_encoders[1].with_projection);
  // SD 1.5's VAE config has no force_upcast (AutoencoderKL's default is true), but only the XL pipeline upcasts
  CHECK_FALSE(io::read_diffusers_pipeline(kDir + "sd-1.5").vae.force_upcast);
}

TEST_CASE("diffusers config: hostile unet configs are one-line errors naming the field") {
  const json sd = read_json(kDir + "sd-1.5/unet/config.json");
  auto with = [&](const char* key, const json& v) {
    json j = sd;
    j[key] = v;
    return j;
  };
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("class_embed_type", "timestep")), doctest::Contains("unet.class_embed_type: only null is modelled (got \"timestep\")"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("conv_in_kernel", 7)), doctest::Contains("unet.conv_in_kernel: only 3 is modelled (got 7)"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("block_out_channels", "wide")), doctest::Contains("unet.block_out_channels: must be an integer (got string \"wide\")"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("block_out_channels", json::array())), doctest::Contains("unet.block_out_channels: must have 1 to 64 entries (got 0)"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("layers_per_block", -2)), doctest::Contains("unet.layers_per_block: must be in [1, 16] (got -2)"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("layers_per_block", json::array({2, 3, 2, 2}))), doctest::Contains("unet.layers_per_block[1]: different layers per block are not modelled"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("cross_attention_dim", json::array({768, 768, 768, 768}))), doctest::Contains("unet.cross_attention_dim: per-block cross-attention widths are not modelled"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("transformer_layers_per_block", json::array({json::array({1, 2})}))), doctest::Contains("unet.transformer_layers_per_block[0]: per-layer lists (nested) are not modelled"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("use_linear_projection", 1)), doctest::Contains("unet.use_linear_projection: must be true or false (got number 1)"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("_class_name", "UNet3DConditionModel")), doctest::Contains("unet._class_name: must be UNet2DConditionModel"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("in_channels", 1e300)), doctest::Contains("unet.in_channels: too large"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(with("norm_num_groups", 7)), doctest::Contains("unet.block_out_channels[0]: must be a multiple of norm_num_groups=7 (got 320)"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config(json::array()), doctest::Contains("unet: must be a JSON object"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config_text("{\"in_channels\": 4,"), doctest::Contains("unet: malformed JSON"), config_error);
  CHECK_THROWS_WITH_AS(io::read_unet_config_text(std::string(300, '[')), doctest::Contains("unet: malformed JSON: nested deeper than 256 levels"), config_error);
  // An accepted config gives the same model as the catalog's
  CHECK(L::analyze(df::unet_graph(io::read_unet_config_text(sd.dump()), 64, 64)).params == 859520964);
}

TEST_CASE("diffusers config: hostile pipeline folders") {
  CHECK_THROWS_WITH_AS(io::read_diffusers_pipeline(kDir + "no-such-folder"), doctest::Contains("config: no such directory"), config_error);
  CHECK_THROWS_WITH_AS(io::read_diffusers_pipeline(scratch_with("sd-1.5", "model_index.json", "{\"_class_name\": \"KandinskyPipeline\"}")),
                       doctest::Contains("model_index.json._class_name: must be StableDiffusionPipeline or StableDiffusionXLPipeline (got \"KandinskyPipeline\")"), config_error);
  CHECK_THROWS_WITH_AS(io::read_diffusers_pipeline(scratch_with("sd-1.5", "vae/config.json", "not json")),
                       doctest::Contains("vae/config.json: malformed JSON"), config_error);
  CHECK_THROWS_WITH_AS(io::read_diffusers_pipeline(scratch_with("sd-1.5", "text_encoder/config.json", "{\"hidden_act\": \"relu\"}")),
                       doctest::Contains("text_encoder.hidden_act: must be gelu or quick_gelu (got \"relu\")"), config_error);
  // A text encoder whose width does not match the UNet's cross-attention is caught when estimating
  const auto p = io::read_diffusers_pipeline(scratch_with("sd-1.5", "text_encoder/config.json",
                                                          "{\"hidden_size\": 1024, \"num_attention_heads\": 16, \"intermediate_size\": 4096}"));
  CHECK(p.text_encoders[0].hidden_size == 1024);
  CHECK(p.text_encoders[0].num_hidden_layers == 12);  // CLIPTextConfig's default
}

}  // namespace unit_diffusers_config
