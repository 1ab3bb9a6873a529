// io/scenario_json.hpp — the scenario file: JSON <-> (architecture, scenario).
#pragma once

#include <memory>
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

// The file's fields as written, nothing defaulted: keys the file leaves out stay unset in
// `settings` (precision, tp, sp, checkpointing, QLoRA's quantization), and run.hpp
// resolve_defaults fills them, the same for this reader, the CLI, Python and C++ callers.
// Only the file format's own defaults apply here: the GPU (a100-80gb) and global_batch,
// which becomes grad_accum.
struct scenario_input {
  std::shared_ptr<const architecture> model;
  scenario settings;
  std::string model_spec;
};
scenario_input parse_scenario(const nlohmann::json& j);

// parse_scenario, then run (validates and resolves). Errors name the path:
// "scenario.parallel.tp: must divide num_attention_heads=40 (got 3)".
resolved_run read_scenario(const nlohmann::json& j);
resolved_run read_scenario_text(const std::string& text);
resolved_run read_scenario_file(const std::string& file);
// Writes the scenario back (all keys, canonical names); read(write(x)) == x.
nlohmann::json write_scenario(const resolved_run& r);

}  // namespace gpuplan::io
