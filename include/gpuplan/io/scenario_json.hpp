// io/scenario_json.hpp — the scenario file: JSON <-> (architecture, scenario).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "gpuplan/model.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::io {

// A validated run read from a scenario file, with the model as the file named it.
struct resolved_run {
  gpuplan::run run;        // validated; owns its architecture
  std::string model_spec;  // what the file said ("llama-2-13b", a path, or an inline object)

  [[nodiscard]] const architecture& model() const noexcept { return run.model(); }
  [[nodiscard]] const scenario& settings() const noexcept { return run.settings(); }
};

// Parses and validates (unknown keys, enums, ranges, divisibility). Errors
// name the path: "scenario.parallel.tp: must divide num_attention_heads=40 (got 3)".
resolved_run read_scenario(const nlohmann::json& j);
resolved_run read_scenario_text(const std::string& text);
resolved_run read_scenario_file(const std::string& file);
// Writes the scenario back (all keys, canonical names); read(write(x)) == x.
nlohmann::json write_scenario(const resolved_run& r);

}  // namespace gpuplan::io
