// run_options.hpp — the run flags of every subcommand that estimates a run (fit, time,
// estimate, explain, search/plan, recommend, serve, calibrate). Each flag becomes a
// scenario key (a dotted path) of a scenario JSON object built from --scenario FILE,
// MODEL and the flags, handed to io::read_scenario: the CLI, the scenario file, C++ and
// Python share one validation path (run_options.cpp).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/profile.hpp"

namespace gpuplan::cli {

// Flags become scenario keys (dotted paths); `flag_of` maps each path back to its
// flag so a validation error names what the user typed.
struct run_args {
  std::string model;
  std::string scenario_file;
  std::string gpu;
  std::string gpu_file;
  std::string methods;  // fit: a comma list
  CLI::Option* methods_opt = nullptr;
  std::vector<std::pair<std::string, nlohmann::json>> overrides;
  std::map<std::string, std::string> flag_of;
  std::set<std::string> file_keys;  // dotted paths present in the --scenario file
  std::string profile_file;         // --profile: a calibration profile (gpuplan calibrate)
  std::shared_ptr<const gpuplan::profile> profile;  // read once, shared by every run built
};

// Adds the run flags to `sub`, bound to `a`. `fit_methods`: --method takes a comma list
// (one column each, `fit`); `skip`: flags the subcommand defines itself (search's
// --global-batch, recommend's --price ...).
void add_run_options(CLI::App* sub, run_args& a, bool model_positional, bool fit_methods,
                     const std::set<std::string>& skip = {});
// A flag writing the scenario JSON key `path` ("inference.gen_len", "rl.generations"): the
// value joins a.overrides, NaN and infinity are refused naming the flag. Instantiated for
// std::string, double and std::int64_t.
template <class T>
CLI::Option* add_key_flag(CLI::App* sub, run_args& a, const std::string& flag, const std::string& path, const std::string& help);
// The run the flags describe; `method_override`: one method of fit's list. A reader
// error names the flag that set the key.
io::resolved_run build_run(run_args& a, const std::string* method_override);
// The scenario JSON object the flags describe (--scenario FILE, MODEL and the flags) before a
// reader sees it: build_run reads it with io::read_scenario, `gpuplan rl` with its "rl" object
// through io::read_rl_scenario.
nlohmann::json build_scenario_json(run_args& a, const std::string* method_override);
// A reader's error re-thrown naming the flag that set its key ("scenario.parallel.tp" -> "--tp"),
// or as it is when no flag did.
[[noreturn]] void rethrow_with_flag(const config_error& e, const run_args& a);
// --gpu-file: its GPUs join the catalog.
void load_extra_gpus(const run_args& a);
// fit's --method list: "full,lora,qlora" -> its entries.
std::vector<std::string> split_methods(const std::string& s);

}  // namespace gpuplan::cli
