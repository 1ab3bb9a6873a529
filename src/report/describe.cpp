// report/describe.cpp — `gpuplan describe`: a model's architecture and exact parameter
// breakdown, as JSON and as text or markdown.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "gpuplan/dtype.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/model_names.hpp"

namespace gpuplan::io {
using nlohmann::json;

namespace {

std::string_view attention_layout(const architecture& a) {
  const std::int64_t kv = a.n_kv_heads();
  if (kv == a.heads) return "MHA";
  if (kv == 1) return "MQA";
  return "GQA";
}

}  // namespace

json describe_json(const architecture& a) {
  const parameter_breakdown p = count_parameters(a);
  json layers = json::array();
  const std::vector<std::int64_t> units = layer_parameters(a);
  for (std::size_t i = 0; i < units.size(); ++i) {
    std::string name;
    if (i == 0) name = "embeddings";
    else if (i + 1 == units.size()) name = "head";
    else if (static_cast<std::int64_t>(i) <= a.layers)
      name = (a.kind == model_kind::encoder_decoder ? "encoder." : "layer.") + std::to_string(i - 1);
    else name = "decoder." + std::to_string(static_cast<std::int64_t>(i) - 1 - a.layers);
    layers.push_back({{"name", name}, {"parameters", units[i]}});
  }
  json arch = {
      {"kind", to_string(a.kind)},
      {"hidden_size", a.hidden},
      {"num_layers", a.layers},
      {"num_decoder_layers", a.decoder_layers},
      {"num_attention_heads", a.heads},
      {"num_key_value_heads", a.n_kv_heads()},
      {"head_dim", a.d_head()},
      {"intermediate_size", a.ffn},
      {"vocab_size", a.vocab},
      {"max_position_embeddings", a.max_positions},
      {"mlp", to_string(a.mlp)},
      {"activation", to_string(a.activation)},
      {"norm", to_string(a.norm)},
      {"positions", to_string(a.positions)},
      {"tied_embeddings", a.tied_embeddings},
      {"head", to_string(a.head)},
  };
  if (a.is_moe()) {
    arch["num_experts"] = a.experts;
    arch["experts_per_token"] = a.experts_per_token;
    arch["shared_experts"] = a.shared_experts;
    arch["expert_intermediate_size"] = a.d_expert();
  }
  if (a.is_vit()) {
    arch["image_size"] = a.image_size;
    arch["patch_size"] = a.patch_size;
  }
  return {{"name", a.name},
          {"family", a.family},
          {"parameters", p.total},
          {"components", report_detail::components_json(p)},
          {"largest_layer_parameters", p.largest_layer},
          {"layers", std::move(layers)},
          {"architecture", std::move(arch)}};
}

std::string describe_report(const architecture& a, const style& s) {
  const parameter_breakdown p = count_parameters(a);
  const bool md = s.format == report_format::markdown;
  std::string out;
  out += (md ? "### " : "") + printable(a.name) + " (" + a.family + ", " + std::string(to_string(a.kind)) + ")\n";
  if (md) out += "\n";
  std::string shape = "layers " + std::to_string(a.layers);
  if (a.decoder_layers > 0) shape += " + " + std::to_string(a.decoder_layers) + " decoder";
  shape += " · hidden " + std::to_string(a.hidden) + " · heads " + std::to_string(a.heads) + " (" +
           std::string(attention_layout(a)) + ", kv " + std::to_string(a.n_kv_heads()) + ", head_dim " +
           std::to_string(a.d_head()) + ")";
  shape += " · ffn " + std::to_string(a.ffn) + " (" + std::string(to_string(a.mlp)) + ", " +
           std::string(to_string(a.activation)) + ")";
  if (a.is_moe())
    shape += " · experts " + std::to_string(a.experts) + " (top-" + std::to_string(a.experts_per_token) + ")";
  if (!a.is_vit()) shape += " · vocab " + std::to_string(a.vocab);
  else shape += " · image " + std::to_string(a.image_size) + " / patch " + std::to_string(a.patch_size);
  if (a.max_positions > 0) shape += " · context " + std::to_string(a.max_positions);
  out += shape + "\n";
  out += std::string(to_string(a.norm)) + " · " + std::string(to_string(a.positions)) + " positions · " +
         (a.tied_embeddings ? "tied" : "untied") + " embeddings · head " + std::string(to_string(a.head)) + "\n\n";

  table t;
  t.header = {"Component", "Parameters", "Share"};
  const double total = static_cast<double>(p.total);
  auto add = [&](const char* name, std::int64_t n) {
    t.rows.push_back({name, format_count(n), total > 0 ? report_detail::pct(static_cast<double>(n) / total) : ""});
  };
  add("embeddings", p.embeddings);
  add("attention", p.attention);
  add(a.is_moe() ? "mlp (experts + routers)" : "mlp", p.mlp);
  add("norms", p.norms);
  add("head", p.head);
  t.rows.push_back({"total", format_count(p.total) + " (" + format_params(p.total) + ")", "100 %"});
  t.rows.push_back({"per layer", format_count(p.per_layer), ""});
  t.rows.push_back({"largest layer", format_count(p.largest_layer), ""});
  t.right_align = {false, true, true};
  out += render(t, s) + "\n";

  // Weight memory of the whole model per storage format (bits include block scales, dtype.hpp).
  table w;
  w.header = {"Weights as", "Bits/param", "Memory"};
  const std::array<std::pair<const char*, quantization>, 6> formats = {{
      {"fp32", {.weights = dtype::fp32, .double_quant = false, .group_size = 0}},
      {"bf16 / fp16", {.weights = dtype::bf16, .double_quant = false, .group_size = 0}},
      {"int8 (LLM.int8)", {.weights = dtype::int8, .double_quant = false, .group_size = 0}},
      {"int4 (GPTQ g128)", {.weights = dtype::int4, .double_quant = false, .group_size = 0}},
      {"nf4", {.weights = dtype::nf4, .double_quant = false, .group_size = 0}},
      {"nf4 + double quant", {.weights = dtype::nf4, .double_quant = true, .group_size = 0}},
  }};
  for (const auto& [name, q] : formats) {
    const double bits = bits_per_element(q, static_cast<double>(a.hidden));
    w.rows.push_back({name, format_number(bits, 4), format_bytes(bytes(total * bits / 8.0))});
  }
  w.right_align = {false, true, true};
  w.notes.push_back("All parameters in the format (no layers kept in higher precision). GB = 10^9 bytes, GiB = 2^30 bytes.");
  out += render(w, s);
  return out;
}

}  // namespace gpuplan::io
