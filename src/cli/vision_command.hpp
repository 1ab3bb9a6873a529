// vision_command.hpp — `gpuplan vision MODEL --gpu ID`: memory and time of training or
// running a torchvision image model on one GPU (include/gpuplan/vision.hpp).
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "gpuplan/io/report.hpp"

namespace gpuplan::cli {

struct vision_request {
  std::string model;
  std::string gpu = "a100-80gb";
  std::int64_t batch = 32;
  std::int64_t image = 224;
  std::int64_t classes = 1000;
  std::string precision = "fp16-mixed";
  std::string optimizer = "sgd-momentum";
  bool infer = false;
  std::optional<std::string> images;  // dataset size: "1.28M"
  double epochs = 1;
};

// Adds the subcommand and its flags (bound to `req`) to `app`.
CLI::App* add_vision_command(CLI::App& app, vision_request& req);
int run_vision(const vision_request& req, const io::style& style);

}  // namespace gpuplan::cli
