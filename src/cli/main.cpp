// main.cpp — the `gpuplan` command-line tool (CLI11): wiring only. Each subcommand
// registers itself and its flags (src/cli/<name>.cpp, command.hpp); here they are listed,
// parsed and dispatched. Every command that estimates a run builds a scenario JSON object
// (from --scenario FILE, MODEL and flags, run_options.hpp) and hands it to
// io::read_scenario, so the CLI, the scenario file, C++ and Python share one validation
// path. Exit codes: 0 ok, 1 "does not fit" (fit only), 2 usage or input error, 3 "tight"
// (fit only); every error is one line "gpuplan: <path>: <reason>".
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/version.hpp"
#include "numeric_options.hpp"

namespace {

using gpuplan::config_error;
using gpuplan::cli::kExitCodes;
using gpuplan::cli::kExitUsage;
using gpuplan::cli::one_line;

// Every subcommand, in the order `gpuplan --help` and the completion script list them.
constexpr gpuplan::cli::registrar kCommands[] = {
    gpuplan::cli::register_describe,
    gpuplan::cli::register_models,
    gpuplan::cli::register_gpus,
    gpuplan::cli::register_frameworks,
    gpuplan::cli::register_fit,
    gpuplan::cli::register_time,
    gpuplan::cli::register_estimate,
    gpuplan::cli::register_explain,
    gpuplan::cli::register_search,
    gpuplan::cli::register_plan,
    gpuplan::cli::register_recommend,
    gpuplan::cli::register_vision,
    gpuplan::cli::register_diffusion,
    gpuplan::cli::register_serve,
    gpuplan::cli::register_rl,
    gpuplan::cli::register_calibrate,
    gpuplan::cli::register_completion,
};

// CLI11 reports a mistyped command as "a subcommand is required"; name it instead.
bool known_command(CLI::App& app, int argc, char** argv) {
  if (argc >= 2 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      found = found || sub->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::fprintf(stderr, "gpuplan: usage: unknown command '%s' (commands: %s)\n", argv[1], known.c_str());
      return false;
    }
  }
  return true;
}

int run(int argc, char** argv) {
  CLI::App app{"gpuplan " + std::string(gpuplan::version_string) +
                   " — GPU memory, time and plans for training and serving transformers",
               "gpuplan"};
  app.set_version_flag("--version,-V", std::string("gpuplan ") + gpuplan::version_string);
  app.require_subcommand(1);
  app.footer(std::string("Examples:\n"
                         "  gpuplan fit llama-2-13b --gpu rtx-4090 --method full,lora,qlora\n"
                         "  gpuplan time llama-2-7b --gpu a100-80gb --gpus 64 --tokens 1T --price 2.0\n"
                         "  gpuplan estimate --scenario run.json --json\n"
                         "  gpuplan explain llama-3-8b --gpu h100-sxm --method lora\n"
                         "  gpuplan describe mixtral-8x7b --json\n"
                         "  gpuplan search llama-2-70b --gpu h100-sxm --gpus 64 --global-batch 512\n"
                         "  gpuplan recommend llama-2-13b --method qlora --tokens 2B --deadline 24h\n") +
             kExitCodes + "\nColour only when stdout is a terminal and NO_COLOR is unset.");

  gpuplan::cli::context ctx;
  std::vector<gpuplan::cli::command> commands;
  for (const gpuplan::cli::registrar add : kCommands) commands.push_back(add(app, ctx));

  if (!known_command(app, argc, argv)) return kExitUsage;
  gpuplan::cli::guard_numeric_options(app);  // integers overflow-checked, floats finite
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Name the subcommand being parsed, if any, so the line says where to look.
    std::string where = "usage";
    for (const CLI::App* sub : app.get_subcommands()) where = sub->get_name();
    std::fprintf(stderr, "gpuplan: %s: %s (see 'gpuplan%s --help')\n", where.c_str(), one_line(e.what()).c_str(),
                 where == "usage" ? "" : (" " + where).c_str());
    return kExitUsage;
  }

  for (const gpuplan::cli::command& c : commands)
    if (c.sub->parsed()) return c.run();
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const config_error& e) {
    std::fprintf(stderr, "gpuplan: %s\n", one_line(e.what()).c_str());
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "gpuplan: json: %s\n", one_line(e.what()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuplan: error: %s\n", one_line(e.what()).c_str());
  } catch (...) {
    std::fprintf(stderr, "gpuplan: error: unknown exception\n");
  }
  return kExitUsage;
}
