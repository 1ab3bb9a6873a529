// io/report.hpp — one formatter for every interface: JSON, text tables, markdown.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/timing.hpp"

namespace gpuplan::io {

// The whole estimate of a run, as `gpuplan estimate --scenario FILE --json` prints it:
// {"model": {"name", "parameters", "trainable_parameters"}, "memory": {...}, "time": {...},
//  "warnings": [...]}. Keys documented in docs/scenario.md and issue texts.
nlohmann::json estimate_json(const resolved_run& r);
nlohmann::json memory_json(const memory_breakdown& m);
nlohmann::json time_json(const time_estimate& t);

}  // namespace gpuplan::io
