// hooks.hpp — seams where later issues plug into the CLI without touching its parsing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"

namespace gpuplan::cli {

// "What would make it fit" (issue 5). Called by `gpuplan fit` for each run that
// does not fit; the table is printed after the verdict and `json` becomes the
// "suggestions" member of `fit --json`. Returns nullopt while the planner is absent.
struct fit_suggestions {
  io::table table;     // ranked changes, cheapest first
  nlohmann::json json;  // the same, as an array of objects
};
std::optional<fit_suggestions> what_would_make_it_fit(const io::resolved_run& run);

// `gpuplan plan|search|recommend`: nullopt means "not available yet" (exit 2).
// When the planner lands, these return the exit code after printing.
struct planner_request {
  const char* command;        // "plan", "search" or "recommend"
  std::vector<std::string> args;  // the arguments after the subcommand, unparsed
};
std::optional<int> run_planner_command(const planner_request& request);

}  // namespace gpuplan::cli
