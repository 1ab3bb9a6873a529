// diffusers_config.cpp — io/diffusers_config.hpp: diffusers config.json files into
// diffusion.hpp's configs. Field meanings: diffusers models/unets/unet_2d_condition.py and
// models/autoencoders/autoencoder_kl.py (__init__ arguments), transformers CLIPTextConfig.
#include "gpuplan/io/diffusers_config.hpp"

#include <filesystem>
#include <string_view>

#include "gpuplan/error.hpp"
#include "json_fields.hpp"
#include "json_text.hpp"

namespace gpuplan::io {

namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;
using gpuplan::detail::fail;
using namespace json_fields;

constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;  // real config.json files are a few KiB
constexpr std::size_t kMaxList = 64;

const json* member(const json& o, const char* key) {
  const auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}
std::int64_t int_or(const json& o, const char* key, std::int64_t dflt, const std::string& path) {
  const json* v = member(o, key);
  return v ? get_int(*v, path + "." + key) : dflt;
}
bool bool_or(const json& o, const char* key, bool dflt, const std::string& path) {
  const json* v = member(o, key);
  return v ? get_bool(*v, path + "." + key) : dflt;
}
std::string string_of(const json& v, const std::string& path) {
  if (!v.is_string()) fail(path, std::string("must be a string (got ") + type_name(v) + " " + show(v) + ")");
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > 200) fail(path, "longer than 200 characters (got " + show(v) + ")");
  return s;
}
// An int or a list of ints (diffusers accepts both for per-block fields).
std::vector<std::int64_t> ints(const json& v, const std::string& path) {
  if (!v.is_array()) return {get_int(v, path)};
  if (v.empty() || v.size() > kMaxList)
    fail(path, "must have 1 to " + std::to_string(kMaxList) + " entries (got " + std::to_string(v.size()) + ")");
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    if (v[i].is_array()) fail(p, "per-layer lists (nested) are not modelled (got " + show(v[i]) + ")");
    out.push_back(get_int(v[i], p));
  }
  return out;
}
std::vector<std::string> strings(const json& v, const std::string& path) {
  if (!v.is_array()) fail(path, std::string("must be a list of strings (got ") + type_name(v) + " " + show(v) + ")");
  if (v.empty() || v.size() > kMaxList)
    fail(path, "must have 1 to " + std::to_string(kMaxList) + " entries (got " + std::to_string(v.size()) + ")");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back(string_of(v[i], path + "[" + std::to_string(i) + "]"));
  return out;
}
// A field diffusion.hpp does not model must keep its default (null, false, a given value).
void must_be(const json& o, const char* key, const json& allowed, const std::string& path) {
  const json* v = member(o, key);
  if (v && *v != allowed)
    fail(path + "." + key, "only " + (allowed.is_null() ? std::string("null") : allowed.dump()) + " is modelled (got " + show(*v) + ")");
}
void check_class(const json& o, const char* expected, const std::string& path) {
  if (const json* v = member(o, "_class_name")) {
    const std::string c = string_of(*v, path + "._class_name");
    if (c != expected) fail(path + "._class_name", std::string("must be ") + expected + " (got " + show(*v) + ")", error_kind::unknown_name);
  }
}
json parse_config_file(const fs::path& file, const std::string& path) {
  std::error_code ec;
  require_regular_file(file.string(), path);  // a directory, FIFO or device named config.json
  const auto size = fs::file_size(file, ec);
  if (ec) fail(path, "cannot read '" + detail::quote_text(file.string()) + "'", error_kind::io_error);
  if (size > kMaxConfigBytes) fail(path, "larger than 1 MiB (got " + std::to_string(size) + " bytes)");
  const json j = detail::parse_json_text(read_text_file(file.string(), path), path);
  require_object(j, path);
  return j;
}
}  // namespace

diffusion::unet_config read_unet_config(const json& j, const std::string& path) {
  require_object(j, path);
  check_class(j, "UNet2DConditionModel", path);
  // Architecture options diffusion.hpp does not build: each must keep its default.
  for (const char* key : {"class_embed_type", "num_class_embeds", "encoder_hid_dim", "encoder_hid_dim_type",
                          "time_cond_proj_dim", "time_embedding_dim", "time_embedding_act_fn", "timestep_post_act",
                          "mid_block_only_cross_attention", "cross_attention_norm"})
    must_be(j, key, nullptr, path);
  for (const char* key : {"only_cross_attention", "dual_cross_attention", "class_embeddings_concat", "resnet_skip_time_act"})
    must_be(j, key, false, path);
  must_be(j, "conv_in_kernel", 3, path);
  must_be(j, "conv_out_kernel", 3, path);
  must_be(j, "resnet_time_scale_shift", "default", path);
  must_be(j, "time_embedding_type", "positional", path);
  must_be(j, "attention_type", "default", path);
  must_be(j, "act_fn", "silu", path);
  diffusion::unet_config c;
  c.in_channels = int_or(j, "in_channels", 4, path);
  c.out_channels = int_or(j, "out_channels", 4, path);
  if (const json* v = member(j, "block_out_channels")) c.block_out_channels = ints(*v, path + ".block_out_channels");
  if (const json* v = member(j, "down_block_types")) c.down_block_types = strings(*v, path + ".down_block_types");
  if (const json* v = member(j, "up_block_types")) c.up_block_types = strings(*v, path + ".up_block_types");
  if (const json* v = member(j, "mid_block_type")) c.mid_block_type = string_of(*v, path + ".mid_block_type");
  if (const json* v = member(j, "layers_per_block")) {
    const auto l = ints(*v, path + ".layers_per_block");
    for (std::size_t i = 1; i < l.size(); ++i)
      if (l[i] != l[0])
        fail(path + ".layers_per_block[" + std::to_string(i) + "]", "different layers per block are not modelled (got " +
                                                                         show((*v)[i]) + " after " + show((*v)[0]) + ")");
    c.layers_per_block = l[0];
  }
  if (const json* v = member(j, "attention_head_dim")) c.attention_head_dim = ints(*v, path + ".attention_head_dim");
  if (const json* v = member(j, "num_attention_heads")) c.num_attention_heads = ints(*v, path + ".num_attention_heads");
  if (const json* v = member(j, "cross_attention_dim")) {
    if (v->is_array()) fail(path + ".cross_attention_dim", "per-block cross-attention widths are not modelled (got " + show(*v) + ")");
    c.cross_attention_dim = get_int(*v, path + ".cross_attention_dim");
  }
  if (const json* v = member(j, "transformer_layers_per_block"))
    c.transformer_layers_per_block = ints(*v, path + ".transformer_layers_per_block");
  c.use_linear_projection = bool_or(j, "use_linear_projection", false, path);
  if (const json* v = member(j, "addition_embed_type")) c.addition_embed_type = string_of(*v, path + ".addition_embed_type");
  c.addition_time_embed_dim = int_or(j, "addition_time_embed_dim", 0, path);
  c.projection_class_embeddings_input_dim = int_or(j, "projection_class_embeddings_input_dim", 0, path);
  c.norm_num_groups = int_or(j, "norm_num_groups", 32, path);
  if (const json* v = member(j, "sample_size")) c.sample_size = ints(*v, path + ".sample_size").front();
  diffusion::validate(c, path + ".");
  return c;
}

diffusion::unet_config read_unet_config_text(const std::string& text, const std::string& path) {
  if (text.size() > kMaxConfigBytes) fail(path, "larger than 1 MiB (got " + std::to_string(text.size()) + " bytes)");
  return read_unet_config(detail::parse_json_text(text, path), path);
}

diffusion::vae_config read_vae_config(const json& j, const std::string& path) {
  require_object(j, path);
  check_class(j, "AutoencoderKL", path);
  must_be(j, "act_fn", "silu", path);
  diffusion::vae_config c;
  c.in_channels = int_or(j, "in_channels", 3, path);
  c.out_channels = int_or(j, "out_channels", 3, path);
  c.latent_channels = int_or(j, "latent_channels", 4, path);
  if (const json* v = member(j, "block_out_channels")) c.block_out_channels = ints(*v, path + ".block_out_channels");
  const std::size_t n = c.block_out_channels.size();
  for (const auto& [key, type] : {std::pair{"down_block_types", "DownEncoderBlock2D"}, {"up_block_types", "UpDecoderBlock2D"}}) {
    const json* v = member(j, key);
    if (!v) continue;
    const auto types = strings(*v, path + "." + key);
    if (types.size() != n)
      fail(path + "." + key, "must have one entry per block_out_channels (" + std::to_string(n) + ", got " + std::to_string(types.size()) + ")");
    for (std::size_t i = 0; i < n; ++i)
      if (types[i] != type)
        fail(path + "." + key + "[" + std::to_string(i) + "]", std::string("must be ") + type + " (got " + show((*v)[i]) + ")",
             error_kind::unknown_name);
  }
  c.layers_per_block = int_or(j, "layers_per_block", 1, path);  // AutoencoderKL's default is 1
  c.norm_num_groups = int_or(j, "norm_num_groups", 32, path);
  if (const json* v = member(j, "sample_size")) c.sample_size = ints(*v, path + ".sample_size").front();
  c.mid_block_add_attention = bool_or(j, "mid_block_add_attention", true, path);
  c.use_quant_conv = bool_or(j, "use_quant_conv", true, path);
  c.use_post_quant_conv = bool_or(j, "use_post_quant_conv", true, path);
  c.force_upcast = bool_or(j, "force_upcast", true, path);  // AutoencoderKL's default
  diffusion::validate(c, path + ".");
  return c;
}

diffusion::clip_text_config read_clip_text_config(const json& j, const std::string& path) {
  require_object(j, path);
  bool projection = false;
  if (const json* v = member(j, "architectures")) {
    const auto a = strings(*v, path + ".architectures");
    if (a.size() != 1 || (a[0] != "CLIPTextModel" && a[0] != "CLIPTextModelWithProjection"))
      fail(path + ".architectures", "must be [\"CLIPTextModel\"] or [\"CLIPTextModelWithProjection\"] (got " + show(*v) + ")",
           error_kind::unknown_name);
    projection = a[0] == "CLIPTextModelWithProjection";
  }
  if (const json* v = member(j, "hidden_act")) {
    const std::string act = string_of(*v, path + ".hidden_act");
    if (act != "gelu" && act != "quick_gelu")
      fail(path + ".hidden_act", "must be gelu or quick_gelu (got " + show(*v) + ")", error_kind::unknown_name);
  }
  // transformers CLIPTextConfig defaults
  diffusion::clip_text_config c;
  c.name = path;
  c.vocab_size = int_or(j, "vocab_size", 49408, path);
  c.hidden_size = int_or(j, "hidden_size", 512, path);
  c.intermediate_size = int_or(j, "intermediate_size", 2048, path);
  c.num_hidden_layers = int_or(j, "num_hidden_layers", 12, path);
  c.num_attention_heads = int_or(j, "num_attention_heads", 8, path);
  c.max_position_embeddings = int_or(j, "max_position_embeddings", 77, path);
  c.projection_dim = int_or(j, "projection_dim", 512, path);
  c.with_projection = projection;
  diffusion::validate(c, path + ".");
  return c;
}

diffusion::pipeline read_diffusers_pipeline(const std::string& dir) {
  std::error_code ec;
  const fs::path root(dir);
  if (!fs::is_directory(root, ec)) fail("config", "no such directory '" + detail::quote_text(dir) + "'", error_kind::io_error);
  const json index = parse_config_file(root / "model_index.json", "model_index.json");
  const std::string cls = member(index, "_class_name") ? string_of(index["_class_name"], "model_index.json._class_name") : "";
  const bool xl = cls == "StableDiffusionXLPipeline";
  if (cls != "StableDiffusionPipeline" && !xl)
    fail("model_index.json._class_name", "must be StableDiffusionPipeline or StableDiffusionXLPipeline (got " +
                                             show(index.value("_class_name", json())) + ")", error_kind::unknown_name);
  // A component entry is [library, class]; [null, null] means absent.
  auto component = [&](const char* key) -> std::string {
    const json* v = member(index, key);
    const std::string p = std::string("model_index.json.") + key;
    if (!v) return "";
    if (!v->is_array() || v->size() != 2) fail(p, "must be [library, class] (got " + show(*v) + ")");
    if ((*v)[1].is_null()) return "";
    return string_of((*v)[1], p + "[1]");
  };
  diffusion::pipeline p;
  p.name = root.filename().empty() ? root.parent_path().filename().string() : root.filename().string();
  if (component("unet") != "UNet2DConditionModel")
    fail("model_index.json.unet", "must be [\"diffusers\", \"UNet2DConditionModel\"] (got " + show(index.value("unet", json())) + ")",
         error_kind::unknown_name);
  if (component("vae") != "AutoencoderKL")
    fail("model_index.json.vae", "must be [\"diffusers\", \"AutoencoderKL\"] (got " + show(index.value("vae", json())) + ")",
         error_kind::unknown_name);
  p.unet = read_unet_config(parse_config_file(root / "unet" / "config.json", "unet/config.json"), "unet");
  p.vae = read_vae_config(parse_config_file(root / "vae" / "config.json", "vae/config.json"), "vae");
  p.vae.force_upcast = xl && p.vae.force_upcast;  // only the XL pipelines upcast (pipeline_stable_diffusion_xl.py)
  p.text_encoders.clear();
  for (const char* key : {"text_encoder", "text_encoder_2"}) {
    const std::string c = component(key);
    if (c.empty()) continue;
    if (c != "CLIPTextModel" && c != "CLIPTextModelWithProjection")
      fail(std::string("model_index.json.") + key, "must be CLIPTextModel or CLIPTextModelWithProjection (got " + show(index[key]) + ")",
           error_kind::unknown_name);
    auto t = read_clip_text_config(parse_config_file(root / key / "config.json", std::string(key) + "/config.json"), key);
    t.with_projection = c == "CLIPTextModelWithProjection";
    p.text_encoders.push_back(t);
  }
  if (p.text_encoders.empty()) fail("model_index.json.text_encoder", "a pipeline needs a text encoder (got none)");
  const std::string checker = component("safety_checker");
  if (!checker.empty() && checker != "StableDiffusionSafetyChecker")
    fail("model_index.json.safety_checker", "must be StableDiffusionSafetyChecker or [null, null] (got " + show(index["safety_checker"]) + ")",
         error_kind::unknown_name);
  p.safety_checker = !checker.empty();
  p.force_zeros_for_empty_prompt = bool_or(index, "force_zeros_for_empty_prompt", xl, "model_index.json");
  p.resolution = p.unet.sample_size * diffusion::vae_scale_factor(p.vae);
  return p;
}

}  // namespace gpuplan::io
