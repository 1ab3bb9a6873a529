// io/export.hpp — the plan as the config file or command line that launches it:
// a DeepSpeed JSON, an accelerate FSDP YAML, a torchtune recipe override, an axolotl
// YAML, a torchrun command with Megatron-LM's arguments, or `vllm serve` arguments.
// Pure functions: (resolved run, chosen layout) -> text. Names and rules come from a
// contract per tool kept as data (src/data/export/<tool>.json: the tool's version,
// commit and files). What the target cannot express (tensor parallelism to DeepSpeed,
// a model torchtune has no builder for, an int4 checkpoint vLLM cannot quantize) is a
// config_error naming the element and the nearest thing that launches, never a config
// that fails at launch or launches something else. Per target: docs/export.md.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/names.hpp"
#include "gpuplan/plan/layout.hpp"

namespace gpuplan::io {

enum class export_target : std::uint8_t { deepspeed, accelerate_fsdp, torchtune, axolotl, torchrun, vllm };

inline constexpr std::array<enum_name<export_target>, 6> kExportTargetNames{{
    {export_target::deepspeed, "deepspeed"}, {export_target::accelerate_fsdp, "accelerate-fsdp"},
    {export_target::torchtune, "torchtune"}, {export_target::axolotl, "axolotl"},
    {export_target::torchrun, "torchrun"}, {export_target::vllm, "vllm"}}};

}  // namespace gpuplan::io

namespace gpuplan {
template <>
inline constexpr std::span<const enum_name<io::export_target>> name_table<io::export_target>{io::kExportTargetNames};
static_assert(names_are_unique(io::kExportTargetNames) && names_cover(io::kExportTargetNames, io::export_target::vllm));
}  // namespace gpuplan

namespace gpuplan::io {

// "deepspeed" -> export_target; unknown names: config_error(path, "must be deepspeed, ..."), unknown_name.
export_target parse_export_target(std::string_view name, const std::string& path = "export");

// A launch config: the text, what the user must still supply, and the tool version the
// contract it was written and checked against comes from.
struct launch_config {
  std::string text;
  // "MASTER_ADDR: the first node's address (on every node)", "datasets: your data": the
  // placeholders in `text` and the values a plan cannot know.
  std::vector<std::string> fill_in;
  std::string checked_against;  // "torchtune 0.7.0 (pytorch/torchtune@bd2a0fc)"
};

// The config that launches `run` with the layout `l` (training targets), or `run` as it
// is (vllm: serving runs). Errors name `path` (the CLI passes "--export") and the
// element: "--export: deepspeed cannot express tensor parallelism (tp=2): use --export torchrun".
launch_config export_launch(const resolved_run& run, const layout& l, export_target target,
                            const std::string& path = "export");
launch_config export_launch(const resolved_run& run, export_target target, const std::string& path = "export");

// export_launch(...).text.
std::string export_config(const resolved_run& run, const layout& l, export_target target,
                          const std::string& path = "export");
std::string export_config(const resolved_run& run, export_target target, const std::string& path = "export");

// The model id a launcher loads: the first Hub id of a catalog model, else the spec
// (a path to a checkpoint directory; the directory of a config.json).
std::string launch_model_id(const resolved_run& run);

}  // namespace gpuplan::io
