// io/graph_json.hpp — a layer graph (layers.hpp) as a JSON file: the input of
// `gpuplan vision --graph FILE`, the output of `--export-graph` and of Python's
// gp.trace (docs/trace.md has the format):
//
//   {"name": "resnet-50", "input": {"c": 3, "h": 224, "w": 224},
//    "layers": [{"kind": "conv", "out": 64, "kernel": 7, "stride": 2, "padding": 3,
//                "bias": false, "name": "conv1"}, ..., {"kind": "add", "skip": 12}, ...]}
//
// Every field of layers::layer that applies to the layer's kind may be given; the
// others are errors. Spatial fields (kernel, stride, padding, dilation, out_size) are a
// number (the same on every used axis), an array of `dims` numbers in PyTorch's order
// or a [d, h, w] array. Enums (kind, norm, pool, act) are names. `from` and `skip` are
// layer indices (-2: the graph input) or the name of an earlier layer ("input": the
// graph input). read_graph(write_graph(g)) == g for every graph whose fields that do
// not apply to a layer's kind keep their defaults (every catalog model of vision.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpuplan/layers.hpp"

namespace gpuplan::io {

// Most layers a graph file may hold: bounds the work of a hostile file
// (layers::analyze's inference working set is quadratic in the layer count).
inline constexpr std::size_t kMaxGraphLayers = 20000;

nlohmann::json write_graph(const layers::graph& g);

// Read and check: one-line config_error naming the field path and the value
// ("layers[3].kernel: must be in [1, 16777216] (got 0)"), then layers::analyze's
// checks (shapes, groups, skip edges).
layers::graph read_graph(const nlohmann::json& j);
layers::graph read_graph_text(const std::string& text);
layers::graph read_graph_file(const std::string& file);
void save_graph_file(const layers::graph& g, const std::string& file);

// The layer kinds a graph file may name, in table order ("linear", "conv", ...).
std::vector<std::string> graph_layer_kinds();

// Equality of two graphs field by field (names included).
bool same_graph(const layers::graph& a, const layers::graph& b);

}  // namespace gpuplan::io
