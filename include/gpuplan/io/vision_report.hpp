// io/vision_report.hpp — one image model on one GPU as a report (JSON and a table):
// `gpuplan vision` and Python's gp.vision print the same figures (docs/vision.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/io/report.hpp"

namespace gpuplan::io {

struct vision_query {
  std::string model;
  std::string gpu = "a100-80gb";
  std::int64_t batch = 32;  // per GPU
  int num_gpus = 1;         // data parallel (DDP)
  std::int64_t image = 224;
  std::int64_t classes = 1000;
  std::string precision = "fp16-mixed";
  std::string optimizer = "sgd-momentum";
  bool infer = false;
  std::optional<std::string> images;  // dataset size, an amount: "1.28M"
  double epochs = 1;
  std::string flag_prefix;  // "--" in the CLI, so errors name the flag
};

struct vision_report {
  nlohmann::json json;  // `gpuplan vision --json`
  table summary;        // the table `gpuplan vision` prints
  bool fits = false;
};

// Throws config_error naming the field for an unknown model, GPU, precision or optimizer
// and for out-of-range numbers.
vision_report vision_report_of(const vision_query& q);

}  // namespace gpuplan::io
