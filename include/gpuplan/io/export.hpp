// io/export.hpp — the plan as the config file or command line that launches it:
// a DeepSpeed JSON, an accelerate FSDP YAML, a torchtune recipe override, an axolotl
// YAML, a torchrun command with Megatron-LM's arguments, or `vllm serve` arguments.
// Pure functions: (resolved run, chosen layout) -> text. A layout element the target
// cannot express (tensor parallelism to DeepSpeed, pipeline stages to FSDP, ZeRO-1 to
// FSDP, ...) is a config_error naming the element, never a config that silently
// launches something else. Key names and their sources: docs/planner.md § Export.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

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

// The text that launches `run` with the layout `l` (training targets), or `run` as it
// is (vllm: serving runs). Errors name `path` (the CLI passes "--export") and the
// layout element: "--export: deepspeed cannot express tensor parallelism (tp=2) ...".
std::string export_config(const resolved_run& run, const layout& l, export_target target,
                          const std::string& path = "export");
std::string export_config(const resolved_run& run, export_target target, const std::string& path = "export");

// The model id a launcher loads: the first Hub id of a catalog model, else the spec
// (a path to a checkpoint directory; the directory of a config.json).
std::string launch_model_id(const resolved_run& run);

}  // namespace gpuplan::io
