// diffusion_command.hpp — `gpuplan diffusion MODEL --gpu ID`: memory and time of a Stable
// Diffusion text-to-image pipeline on one GPU (io/diffusion_report.hpp, docs/diffusion.md).
#pragma once

#include <CLI/CLI.hpp>

#include "gpuplan/io/diffusion_report.hpp"
#include "gpuplan/io/report.hpp"

namespace gpuplan::cli {

// Adds the subcommand and its flags (bound to `q`) to `app`.
CLI::App* add_diffusion_command(CLI::App& app, io::diffusion_query& q, bool& no_guidance);
int run_diffusion(io::diffusion_query q, bool no_guidance, const io::style& style);

}  // namespace gpuplan::cli
