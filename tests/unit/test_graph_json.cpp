// Graph files (io/graph_json.hpp, docs/trace.md): exact write/read round trips of
// every catalog model, the short forms (scalar and per-axis spatial fields, names as
// references), and hostile files rejected with one line naming the field and value.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/diffusion.hpp"
#include "gpuplan/io/graph_json.hpp"
#include "gpuplan/layers.hpp"
#include "gpuplan/vision.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_graph_json {

using namespace gpuplan;
namespace L = gpuplan::layers;
namespace mk = gpuplan::layers::make;
using json = nlohmann::json;

namespace {
// The message of the config_error `text` raises ("" when it reads without error).
std::string error_of(const std::string& text) {
  try {
    (void)io::read_graph_text(text);
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}
std::string one_layer(const std::string& layer, const std::string& input = R"({"c": 3, "h": 8, "w": 8})") {
  return R"({"name": "t", "input": )" + input + R"(, "layers": [)" + layer + "]}";
}

// write -> text -> read gives the same graph (segments included), the same text, the same analysis.
void check_round_trip(const L::graph& g) {
  const std::string text = io::write_graph(g).dump();
  const L::graph back = io::read_graph_text(text);
  CHECK(io::same_graph(g, back));
  CHECK(back.segments == g.segments);
  CHECK(io::write_graph(back).dump() == text);
  const auto a = L::analyze(g), b = L::analyze(back);
  CHECK(a.params == b.params);
  CHECK(a.flops == b.flops);
  CHECK(a.saved_bytes(2) == b.saved_bytes(2));
  CHECK(a.peak_live_elements == b.peak_live_elements);
}
}  // namespace

TEST_CASE("graph json: every catalog model survives write -> text -> read unchanged, analysis included") {
  for (const auto& name : vision::vision_model_names()) {
    CAPTURE(name);
    for (std::int64_t image : {224, 64}) {
      if (name.rfind("vit", 0) == 0 && image == 64) image = 112;  // a multiple of the patch (16, 14)
      check_round_trip(vision::vision_model(name, image, 1000));
    }
  }
}

TEST_CASE("graph json: the diffusion graphs (concat, second inputs, q/k/v without bias, checkpoint segments) round-trip") {
  for (const char* name : {"sd-1.5", "sdxl-base"}) {
    CAPTURE(name);
    const auto p = diffusion::pipeline_by_name(name);
    for (const L::graph& g : {diffusion::unet_graph(p.unet, 64, 64), diffusion::vae_decoder_graph(p.vae, 64, 64),
                              diffusion::clip_text_graph(p.text_encoders.front())})
      check_round_trip(g);
  }
  CHECK(diffusion::unet_graph(diffusion::pipeline_by_name("sd-1.5").unet, 64, 64).segments.size() > 0);
  // host_ops travels with the layer and is written only where it is not 0.
  const L::graph sd = diffusion::unet_graph(diffusion::pipeline_by_name("sd-1.5").unet, 64, 64);
  const auto back = io::read_graph_text(io::write_graph(sd).dump());
  CHECK(L::analyze(back).host_ops == L::analyze(sd).host_ops);
  CHECK(io::write_graph(sd)["layers"][2].contains("host_ops") == false);  // time_embedding.linear_1
  CHECK_THROWS_WITH_AS(io::read_graph_text(R"({"input": {"c": 4}, "layers": [{"kind": "linear", "out": 4}], "segments": [[0, 1]]})"),
                       "graph.segments[0]: must be layer indices 0 <= first <= last < 1 (got [0,1])", config_error);
  CHECK_THROWS_WITH_AS(io::read_graph_text(R"({"input": {"c": 4}, "layers": [{"kind": "input"}]})"),
                       doctest::Contains("layers[0].source: is required for a input layer"), config_error);
}

TEST_CASE("graph json: the written form is the short one (scalar spatial fields, defaults omitted)") {
  const json j = io::write_graph(vision::resnet(50));
  CHECK(j["input"] == json({{"c", 3}, {"h", 224}, {"w", 224}}));
  CHECK(j["layers"][0] == json({{"kind", "conv"}, {"out", 64}, {"kernel", 7}, {"stride", 2}, {"padding", 3},
                                {"bias", false}, {"name", "conv1"}}));
  CHECK(j["layers"][1] == json({{"kind", "norm"}, {"name", "bn1"}}));  // batch norm, affine: the defaults
  CHECK(j["layers"][2] == json({{"kind", "activation"}, {"inplace", true}}));
  // The first bottleneck: conv1..bn3 are layers 4..11, the downsample conv (from the max pool, 3) and
  // its batch norm 12 and 13 (kernel 1, stride 1: the defaults); the add reads bn3 (11) and skips to 13.
  CHECK(j["layers"][12] == json({{"kind", "conv"}, {"out", 256}, {"bias", false}, {"from", 3}, {"name", "layer1.0.downsample"}}));
  CHECK(j["layers"][14] == json({{"kind", "add"}, {"skip", 13}, {"inplace", true}, {"from", 11}, {"name", "layer1.0.add"}}));
}

TEST_CASE("graph json: hand-written forms read as the constructors build them") {
  // A 2-D conv with per-axis kernel [h, w], a [d, h, w] stride, and a name used as a reference.
  const L::graph g = io::read_graph_text(R"({"name": "n", "input": {"c": 3, "h": 16, "w": 12}, "layers": [
      {"kind": "conv", "out": 8, "kernel": [3, 5], "stride": [1, 2, 2], "padding": [1, 2], "name": "c1"},
      {"kind": "activation", "act": "gelu"},
      {"kind": "conv", "out": 8, "kernel": 1, "from": "c1"},
      {"kind": "add", "skip": 1},
      {"kind": "pool", "pool": "adaptive_avg", "out_size": 1},
      {"kind": "flatten"},
      {"kind": "linear", "out": 10}]})");
  REQUIRE(g.layers.size() == 7);
  CHECK(g.layers[0].kernel == std::array<std::int64_t, 3>{1, 3, 5});
  CHECK(g.layers[0].stride == std::array<std::int64_t, 3>{1, 2, 2});
  CHECK(g.layers[0].padding == std::array<std::int64_t, 3>{0, 1, 2});
  CHECK(g.layers[2].from == 0);
  CHECK(g.layers[4].out_size == std::array<std::int64_t, 3>{1, 1, 1});
  const auto c = L::analyze(g);
  // conv1: 8·3·3·5 + 8 = 368; conv2: 8·8 + 8 = 72; linear: 8·10 + 10 = 90
  CHECK(c.params == 368 + 72 + 90);
  // stride [d, h, w] = [1, 2, 2]: H = (16 + 2 - 3)/2 + 1 = 8; W = (12 + 4 - 5)/2 + 1 = 6
  CHECK(c.per_layer[0].out == L::shape{8, 1, 8, 6});
  // Per-axis forms that are not the scalar one are written per axis and read back unchanged.
  CHECK(io::write_graph(g)["layers"][0]["kernel"] == json::array({3, 5}));
  CHECK(io::same_graph(io::read_graph(io::write_graph(g)), g));
  // A graph whose ignored axes are not the constructors' survives as [d, h, w].
  L::graph odd = g;
  odd.layers[0].kernel = {2, 3, 5};
  CHECK(io::write_graph(odd)["layers"][0]["kernel"] == json::array({2, 3, 5}));
  CHECK(io::same_graph(io::read_graph(io::write_graph(odd)), odd));
}

TEST_CASE("graph json: the kind list is the table's, and every kind writes and reads") {
  const auto kinds = io::graph_layer_kinds();
  CHECK(kinds.size() >= 16);
  CHECK(kinds.front() == "linear");
  const std::string msg = error_of(one_layer(R"({"kind": "convolution", "out": 4})"));
  CHECK(msg.find("layers[0].kind: must be one of linear, conv, norm,") == 0);
  CHECK(msg.find("(got \"convolution\")") != std::string::npos);
}

TEST_CASE("graph json: hostile files are one-line errors naming the field and the value") {
  struct bad { const char* text; const char* starts; };
  const bad cases[] = {
      {"[]", "graph: must be a JSON object"},
      {R"({"input": {"c": 3}, "layers": []})", "graph.layers: must be a non-empty array"},
      {R"({"input": {"c": 3}})", "graph.layers: is required"},
      {R"({"layers": [{"kind": "flatten"}]})", "graph.input: is required"},
      {R"({"input": {"c": 0}, "layers": [{"kind": "flatten"}]})", "graph.input.c: must be in [1, 16777216] (got 0)"},
      {R"({"input": {"c": 3, "x": 1}, "layers": [{"kind": "flatten"}]})", "graph.input.x: unknown key"},
      {R"({"input": {"c": 3}, "layers": [{"kind": "flatten"}], "extra": 1})", "graph.extra: unknown key"},
      {R"({"input": {"c": 3}, "layers": [7]})", "layers[0]: must be a JSON object"},
      {R"({"input": {"c": 3}, "layers": [{"out": 3}]})", "layers[0].kind: is required"},
  };
  for (const auto& b : cases) {
    CAPTURE(b.text);
    const std::string msg = error_of(b.text);
    CAPTURE(msg);
    CHECK(msg.rfind(b.starts, 0) == 0);
    CHECK(msg.find('\n') == std::string::npos);
  }
  const bad layer_cases[] = {
      {R"({"kind": "conv", "out": 4, "kernel": 0})", "layers[0].kernel: must be in [1, 16777216] (got 0)"},
      {R"({"kind": "conv", "out": 4, "kernel": [3, 0]})", "layers[0].kernel[1]: must be in [1, 16777216] (got 0)"},
      {R"({"kind": "conv", "out": 4, "kernel": [3, 3, 3, 3]})", "layers[0].kernel: must be a number, 2 numbers or [d, h, w]"},
      {R"({"kind": "conv", "out": 4, "kernel": "3"})", "layers[0].kernel: must be an integer (got string \"3\")"},
      {R"({"kind": "conv", "out": 4, "kernel": 2.5})", "layers[0].kernel: must be an integer (got 2.5)"},
      {R"({"kind": "conv", "out": 4, "kernel": 1e300})", "layers[0].kernel: too large (got 1e+300)"},
      {R"({"kind": "conv", "out": 4, "padding": -1})", "layers[0].padding: must be in [0, 16777216] (got -1)"},
      {R"({"kind": "conv", "out": 4, "dims": 4})", "layers[0].dims: must be 1, 2 or 3 (got 4)"},
      {R"({"kind": "conv", "kernel": 3})", "layers[0].out: is required for a conv layer"},
      {R"({"kind": "conv", "out": 4, "heads": 2})", "layers[0].heads: does not apply to a conv layer (its fields: dims, out, bias, kernel, "},
      {R"({"kind": "conv", "out": 4, "colour": 2})", "layers[0].colour: unknown key (expected one of: kind, name, from,"},
      {R"({"kind": "conv", "out": 4, "name": "c", "kernel": 9})", "layers[0] (c).kernel: larger than the padded input 8 (got 9)"},
      {R"({"kind": "conv", "out": 4, "groups": 2})", "layers[0].groups: must divide in_channels=3"},
      {R"({"kind": "norm", "norm": "instance"})", "layers[0].norm: must be one of batch, group, layer, rms (got \"instance\")"},
      {R"({"kind": "activation", "act": 3})", "layers[0].act: must be one of relu, gelu, silu, sigmoid, relu6 (got 3)"},
      {R"({"kind": "activation", "inplace": "yes"})", "layers[0].inplace: must be true or false (got string \"yes\")"},
      {R"({"kind": "dropout", "p": 1})", "layers[0].p: must be in [0, 1) (got 1)"},
      {R"({"kind": "add"})", "layers[0].skip: is required for a add layer"},
      {R"({"kind": "add", "skip": 0})", "layers[0].skip: must be -2 (the input) (got 0)"},
      {R"({"kind": "add", "skip": -1})", "layers[0].skip: must be -2 (the input) (got -1)"},
      {R"({"kind": "add", "skip": "nowhere"})", "layers[0].skip: names no earlier layer (got \"nowhere\")"},
      {R"({"kind": "linear", "out": 4, "from": 5})", "layers[0].from: must be -2 (the input), -1 (the previous layer) (got 5)"},
      {R"({"kind": "linear", "out": 4, "name": 5})", "layers[0].name: must be a string of at most 256 characters without control characters (got 5)"},
      {R"({"kind": "linear", "out": 4, "name": "a\nb"})", "layers[0].name: must be a string of at most 256 characters without control"},
      {R"({"kind": "embedding", "out": 4})", "layers[0].vocab: is required for a embedding layer"},
      {R"({"kind": "attention", "heads": 2})", "layers[0].heads: must divide the width 3 (got 2)"},
      {R"({"kind": "linear", "out": 4, "host_ops": -1})", "layers[0].host_ops: must be in [0, 10000] (got -1)"},
      {R"({"kind": "linear", "out": 4, "host_ops": 10001})", "layers[0].host_ops: must be in [0, 10000] (got 10001)"},
      {R"({"kind": "linear", "out": 4, "host_ops": 1.5})", "layers[0].host_ops: must be an integer (got 1.5)"},
      {R"({"kind": "linear", "out": 4, "host_ops": "3"})", "layers[0].host_ops: must be an integer (got string \"3\")"},
  };
  for (const auto& b : layer_cases) {
    CAPTURE(b.text);
    const std::string msg = error_of(one_layer(b.text));
    CAPTURE(msg);
    CHECK(msg.rfind(b.starts, 0) == 0);
    CHECK(msg.find('\n') == std::string::npos);
  }
  CHECK(error_of(one_layer(R"({"kind": "activation"}, {"kind": "add", "skip": 1})"))
            .rfind("layers[1].skip: must be an earlier layer's index in [0, 0], -2 (the input) or a layer name (got 1)", 0) == 0);
  // Two layers of one name: a name reference must be unique.
  CHECK(error_of(one_layer(R"({"kind": "activation", "name": "a"}, {"kind": "activation", "name": "a"},
                              {"kind": "add", "skip": "a"})"))
            .rfind("layers[2].skip: names 2 earlier layers; use an index", 0) == 0);
  // add operands of different shapes: layers::analyze's check, reached through the file.
  CHECK(error_of(one_layer(R"({"kind": "conv", "out": 4, "kernel": 1}, {"kind": "add", "skip": -2})"))
            .rfind("layers[1].skip: shape 3x64 does not match the input 4x64", 0) == 0);
  // Malformed text and deep nesting are parse errors, not crashes.
  CHECK(error_of("{\"input\": ").rfind("graph: malformed JSON: parse error", 0) == 0);
  CHECK(error_of(std::string(300, '[')).rfind("graph: malformed JSON: nested deeper than 256 levels", 0) == 0);
  // More layers than the bound.
  std::string many = R"({"input": {"c": 3}, "layers": [)";
  for (std::size_t i = 0; i <= io::kMaxGraphLayers; ++i) many += std::string(i ? "," : "") + R"({"kind":"flatten"})";
  many += "]}";
  CHECK(error_of(many).rfind("graph.layers: more than 20000 layers (got 20001)", 0) == 0);
}

TEST_CASE("graph json: files: a missing file is an io_error, a saved file reads back") {
  try {
    (void)io::read_graph_file("/nonexistent/graph.json");
    FAIL("no error");
  } catch (const config_error& e) {
    CHECK(e.kind() == error_kind::io_error);
  }
  const L::graph g = vision::efficientnet_b0(96, 10);
  const std::string file = "graph_json_test_" + std::to_string(reinterpret_cast<std::uintptr_t>(&g)) + ".json";
  io::save_graph_file(g, file);
  CHECK(io::same_graph(io::read_graph_file(file), g));
  std::remove(file.c_str());
}

}  // namespace unit_graph_json
