// io/vision_report.hpp — one image model on one GPU as a report (JSON and a table):
// `gpuplan vision` and Python's gp.vision print the same figures (docs/vision.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/io/report.hpp"
#include "gpuplan/layers.hpp"

namespace gpuplan::io {

struct vision_query {
  std::string model;       // a catalog name (vision.hpp), or
  std::string graph_file;  // a graph file (io/graph_json.hpp, CLI --graph), or
  std::optional<layers::graph> graph;  // a graph (Python's gp.trace / gp.Graph)
  std::string gpu = "a100-80gb";
  std::int64_t batch = 32;  // per GPU
  int num_gpus = 1;         // data parallel (DDP)
  std::optional<std::int64_t> image;    // catalog models only (default vision::default_image: 224, EfficientNet-B1..B4 larger)
  std::optional<std::int64_t> classes;  // catalog models only (default 1000)
  std::string precision = "fp16-mixed";
  std::string optimizer = "sgd-momentum";
  bool infer = false;
  bool checkpointing = false;  // training: torch.utils.checkpoint over every residual block
  int zero = 0;                // training: ZeRO stage sharding the model states over num_gpus (3: FSDP FULL_SHARD)
  std::optional<std::string> images;  // dataset size, an amount: "1.28M"
  double epochs = 1;
  std::string export_graph;  // CLI --export-graph FILE
  std::string flag_prefix;  // "--" in the CLI, so errors name the flag
};

struct vision_report {
  nlohmann::json json;  // `gpuplan vision --json`
  table summary;        // the table `gpuplan vision` prints
  bool fits = false;
};

// The graph the query names: the catalog model at its image size and classes, the
// graph file, or the graph itself; config_error when none or more than one is given,
// or when image/classes are given with a graph.
layers::graph vision_graph_of(const vision_query& q);

// Throws config_error naming the field for an unknown model, GPU, precision or optimizer
// and for out-of-range numbers.
vision_report vision_report_of(const vision_query& q);

}  // namespace gpuplan::io
