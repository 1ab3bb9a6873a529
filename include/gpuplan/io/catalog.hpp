// io/catalog.hpp — built-in model and GPU catalogs (data compiled in from src/data/).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpuplan/hardware.hpp"
#include "gpuplan/model.hpp"

namespace gpuplan::io {

// Catalog models by name; Hub-style ids are aliases ("meta-llama/Llama-2-13b-hf").
// Unknown names throw config_error(path, "unknown model 'x' (did you mean: a, b, c?)").
const architecture& find_model(std::string_view name, const std::string& path = "model");
std::vector<std::string> model_names();
// Official parameter count where verified (0 when not).
std::int64_t official_parameters(std::string_view name);
// The Hub ids of a catalog model (its _hub_id list; empty when not a catalog model).
std::vector<std::string> model_hub_ids(std::string_view name);

// A model from any spec: catalog name | path to config.json | checkpoint dir.
architecture load_model(std::string_view spec, const std::string& path = "model");
// Exact-match overloads: a std::string or literal would otherwise be ambiguous
// between the string_view and the nlohmann::json overloads.
architecture load_model(const std::string& spec, const std::string& path = "model");
architecture load_model(const char* spec, const std::string& path = "model");
// A model from a JSON value: a string (as load_model) or an inline config.json object.
architecture load_model(const nlohmann::json& value, const std::string& path = "model");

// GPUs by catalog id (src/data/gpus.csv). Unknown ids suggest the nearest.
const gpu_spec& find_gpu(std::string_view id, const std::string& path = "gpu");
std::vector<std::string> gpu_ids();
// A GPU from a JSON object (inline or a user file). With "base": "<id>", the
// object overrides that catalog entry's fields.
gpu_spec read_gpu(const nlohmann::json& value, const std::string& path = "gpu");
// The inverse of read_gpu: a GPU object (csv column names) that reads back to
// exactly `g` (bit for bit). Used to write scenarios with a custom GPU.
nlohmann::json write_gpu(const gpu_spec& g);
// Adds or replaces catalog GPUs from a JSON file (an array of GPU objects).
void load_gpu_file(const std::string& file);

}  // namespace gpuplan::io
