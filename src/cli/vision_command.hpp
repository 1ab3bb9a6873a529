// vision_command.hpp — `gpuplan vision MODEL --gpu ID`: memory and time of training or
// running a torchvision image model on one GPU (io/vision_report.hpp, docs/vision.md).
#pragma once

#include <CLI/CLI.hpp>

#include "gpuplan/io/report.hpp"
#include "gpuplan/io/vision_report.hpp"

namespace gpuplan::cli {

// Adds the subcommand and its flags (bound to `q`) to `app`.
CLI::App* add_vision_command(CLI::App& app, io::vision_query& q);
int run_vision(io::vision_query q, const io::style& style);

}  // namespace gpuplan::cli
