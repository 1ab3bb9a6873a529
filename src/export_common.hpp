// export_common.hpp — what the launcher writers (src/export*.cpp) share: the one-line
// refusal, number spelling, the launch config under construction, and the contracts:
// src/data/export/<tool>.json, each taken from the tool's own source at a named commit
// (docs/export.md). The writers read names and rules from the contract; the tests check
// every export against the same files and, where it runs here, the tool's own parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpuplan/io/export.hpp"
#include "gpuplan/peft.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::io::export_detail {

inline std::string num(std::int64_t v) { return std::to_string(v); }
std::string num(double v);

// One checker per export: "<path>: <target> cannot express <element> (<value>)<hint>".
struct checker {
  const std::string& path;
  std::string_view target;
  [[noreturn]] void cannot(const std::string& element, const std::string& hint = "") const;
};

// The contract of a tool ("torchtune", "deepspeed", ...), parsed once from the embedded
// src/data/export/<tool>.json; a missing or malformed file is an internal error.
const nlohmann::json& contract(std::string_view tool);

// "torchtune 0.7.0 (pytorch/torchtune@bd2a0fc)": the version a contract was taken from.
std::string checked_against(std::string_view tool);

// True when the contract's string array `key` holds `value`.
bool contract_lists(const nlohmann::json& c, std::string_view key, std::string_view value);

bool is_bf16(precision p);

// Nodes of `gpus` GPUs at gpus_per_node; a count the launcher cannot split evenly is refused.
int nodes_of(const checker& c, const scenario& s, int gpus, std::string_view launcher);

// Shared rules: training runs only; data parallel only (ZeRO/FSDP launchers); no selective checkpointing.
void require_training(const checker& c, const scenario& s);
void require_data_parallel(const checker& c, const layout& l);
void require_no_selective(const checker& c, const layout& l);

launch_config torchtune_command(const resolved_run& run, const layout& l, const checker& c);
launch_config megatron_command(const resolved_run& run, const layout& l, const checker& c);

}  // namespace gpuplan::io::export_detail
