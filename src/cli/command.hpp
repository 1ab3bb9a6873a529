// command.hpp — one registration pattern for every `gpuplan` subcommand. Each lives in
// src/cli/<name>.cpp as register_<name>(app, ctx): it adds the subcommand and its flags
// to `app` and returns what runs when that subcommand is the one parsed. main.cpp only
// lists the registrations (in `gpuplan --help` order), parses and dispatches: a new
// subcommand is its own file, one declaration here and one line in main.cpp.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "output.hpp"
#include "run_options.hpp"

namespace gpuplan::cli {

// What subcommands share. Only the parsed subcommand's flags are ever set, so the
// commands that read one run as given (gpus, fit, time, estimate, explain) bind their
// run flags to the one `args`, and most commands their output flags to `out`.
struct context {
  output_args out;
  run_args args;
};

// A registered subcommand and its handler (its exit code; errors are thrown).
struct command {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};

using registrar = command (*)(CLI::App& app, context& ctx);

command register_describe(CLI::App& app, context& ctx);
command register_models(CLI::App& app, context& ctx);
command register_gpus(CLI::App& app, context& ctx);
command register_frameworks(CLI::App& app, context& ctx);
command register_fit(CLI::App& app, context& ctx);
command register_time(CLI::App& app, context& ctx);
command register_estimate(CLI::App& app, context& ctx);
command register_explain(CLI::App& app, context& ctx);
command register_search(CLI::App& app, context& ctx);
command register_plan(CLI::App& app, context& ctx);  // alias of search
command register_recommend(CLI::App& app, context& ctx);
command register_vision(CLI::App& app, context& ctx);
command register_diffusion(CLI::App& app, context& ctx);
command register_serve(CLI::App& app, context& ctx);
command register_rl(CLI::App& app, context& ctx);
command register_calibrate(CLI::App& app, context& ctx);
command register_completion(CLI::App& app, context& ctx);

}  // namespace gpuplan::cli
