// io/graph_query.hpp — what `gpuplan recommend` and gp.recommend are asked about an image or
// diffusion model, as the user typed it (graph_recommend_query: the CLI's flags, Python's
// keywords), and its one parse into the typed query (graph/query.hpp graph_query) that
// io/graph_plan.hpp builds the run from. Kept apart so that the CLI's flag parsing does not
// compile the layer-graph models.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gpuplan/graph/query.hpp"
#include "gpuplan/layers.hpp"

namespace gpuplan::io {

// The edge form: names and amounts as text, parsed once by parse_graph_query.
struct graph_recommend_query {
  std::string model;                   // a vision catalog name or a diffusion pipeline name, or
  std::string graph_file;              // a layer graph file (io/graph_json.hpp), or
  std::optional<layers::graph> graph;  // a graph (Python's gp.trace / gp.Graph)
  std::optional<std::string> images;   // samples in the dataset, an amount ("1.28M")
  std::optional<double> epochs;        // passes over `images`
  std::optional<std::int64_t> image;         // classifiers: the image side (default the weights' crop)
  std::optional<std::int64_t> resolution;    // diffusion: the training resolution (default the pipeline's)
  std::optional<std::int64_t> global_batch;  // samples per optimizer step (default the recipe's)
  std::optional<std::int64_t> batch;         // micro-batch per GPU (default: the largest that fits)
  std::optional<std::int64_t> lora_rank;     // diffusion LoRA (default 4)
  std::optional<std::string> method;         // full (classifiers); full or lora (diffusion)
  std::optional<std::string> precision, optimizer;
  std::optional<bool> checkpointing, ema;    // diffusion (default the recipe's)
  std::optional<int> zero;                   // classifiers: ZeRO stage over the GPUs (default 0, DDP)
  std::string flag_prefix;  // "--" in the CLI, so errors name the flag
};

// A name `gpuplan recommend` plans as a layer graph: a vision or diffusion catalog name.
bool is_graph_model(std::string_view name);

// The typed query: the task (a diffusion catalog name fine-tunes a pipeline; any other model,
// or a graph, trains a classifier), the amount of images, and the method, precision and
// optimizer names of that task. One-line config_error naming the field and the value for an
// amount that does not parse and a name the task does not know; the rest: validate(graph_query).
graph_query parse_graph_query(const graph_recommend_query& q);

}  // namespace gpuplan::io
