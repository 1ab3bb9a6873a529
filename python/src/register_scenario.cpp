// register_scenario.cpp — the scenario file schema, shared with the CLI: Python
// builds the same JSON object the CLI reads and goes through io::read_scenario, so
// validation and error messages are identical.
#include <string_view>
#include <utility>

#include "common.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/file_text.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/plan_names.hpp"

namespace gpuplan::python {

namespace {
// The name tables (scenario.hpp, plan_names.hpp, error.hpp) by the key whose values
// they are: a scenario key, a planner option, or "error_kind".
std::vector<std::pair<std::string_view, std::vector<std::string>>> name_tables() {
  return {
      {"workload", names_of(kWorkloadNames)},
      {"method", names_of(kMethodNames)},
      {"precision", names_of(kPrecisionNames)},
      {"optimizer", names_of(kOptimizerNames)},
      {"checkpointing", names_of(kCheckpointingNames)},
      {"attention", names_of(kAttentionNames)},
      {"optimizer_kernel", names_of(kOptimizerKernelNames)},
      {"parallel.offload_optimizer", names_of(kOffloadNames)},
      {"parallel.offload_params", names_of(kOffloadNames)},
      {"lora.targets", names_of(kLoraTargetNames)},
      {"peft.ia3_targets", names_of(kLoraTargetNames)},
      {"quantization.weights", names_of(kWeightDtypeNames)},
      {"inference.kv_cache_dtype", names_of(kKvCacheDtypeNames)},
      {"engine", names_of(kEngineNames)},
      {"inference.gguf", names_of(kGgufTypeNames)},
      {"search.objective", names_of(kSearchObjectiveNames)},
      {"recommend.rank", names_of(kRecommendRankNames)},
      {"error_kind", names_of(kErrorKindNames)},
  };
}

std::vector<std::string> names_for(const std::string& key) {
  std::string known;
  for (auto& [k, names] : name_tables()) {
    if (k == key) return std::move(names);
    known += (known.empty() ? "" : ", ") + std::string(k);
  }
  throw config_error("names", "unknown key '" + key + "' (expected one of: " + known + ")", error_kind::unknown_name);
}
}  // namespace

void register_scenario(py::module_& m) {
  using R = io::resolved_run;
  py::class_<R>(m, "Run", "A validated (model, scenario) pair: what io::read_scenario returns.")
      .def_property_readonly("model", [](const R& r) -> const architecture& { return r.model(); },
                             py::return_value_policy::reference_internal, "The resolved architecture.")
      .def_readonly("model_spec", &R::model_spec, "What the scenario said: a catalog name, a path, or 'inline'.")
      .def_property_readonly("gpu", [](const R& r) { return r.settings().gpu; }, "The GPU (a copy).")
      .def_property_readonly("workload", [](const R& r) { return std::string(to_string(r.settings().work)); }, "'train' or 'infer'.")
      .def_property_readonly("method", [](const R& r) { return std::string(to_string(r.settings().meth)); },
                             "'full', 'lora', 'qlora', 'freeze' or a PEFT method ('dora', 'ia3', 'prompt-tuning', 'prefix-tuning', 'vera', 'ln-tuning').")
      .def_property_readonly("precision", [](const R& r) { return std::string(to_string(precision_of(r.settings()))); }, "Precision policy.")
      .def_property_readonly("optimizer", [](const R& r) { return std::string(to_string(r.settings().opt)); }, "Optimizer.")
      .def_property_readonly("micro_batch", [](const R& r) { return r.settings().micro_batch; }, "Sequences per micro-batch per GPU.")
      .def_property_readonly("seq_len", [](const R& r) { return r.settings().seq_len; }, "Tokens per sequence.")
      .def_property_readonly("grad_accum", [](const R& r) { return r.settings().grad_accum; }, "Micro-batches per optimizer step.")
      .def_property_readonly("num_gpus", [](const R& r) { return r.settings().num_gpus; }, "GPUs in the job.")
      .def_property_readonly("global_batch", [](const R& r) { return r.settings().global_batch(); },
                             "Sequences per optimizer step over all data-parallel replicas.")
      .def_property_readonly("tokens", [](const R& r) { return r.settings().tokens; }, "Training tokens, or None.")
      .def_property_readonly("price_per_gpu_hour", [](const R& r) { return r.settings().price_per_gpu_hour; },
                             "Price per GPU-hour, or None.")
      .def("trainable_parameters", [](const R& r) { return trainable_parameters(r.run); },
           "Parameters that receive gradients under the run's method.")
      .def("to_dict", [](const R& r) { return from_json(io::write_scenario(r)); },
           "The scenario as the CLI's JSON schema (all keys, canonical names).");

  m.def("names", &names_for, py::arg("key"),
        "The accepted names of a scenario key ('method', 'quantization.weights', 'lora.targets', ...),\n"
        "a planner option ('search.objective', 'recommend.rank') or 'error_kind', in table order.");
  m.def("parse_amount", &io::parse_amount, py::arg("value"),
        py::arg("path"), "A positive count: '2e9', '300B', '1T' (io/amount.hpp); ConfigError naming `path` otherwise.");
  m.def("parse_amount", &io::positive_amount, py::arg("value"), py::arg("path"), "A positive finite number, as is.");
  m.def("parse_duration", &io::parse_duration, py::arg("value"),
        py::arg("path"), "A positive duration in seconds: '3600', '90m', '24h', '2d'; ConfigError naming `path` otherwise.");
  m.def("parse_duration", &io::checked_seconds, py::arg("value"), py::arg("path"), "Seconds between 1e-6 and 100 years, as is.");
  m.def("read_scenario", [](py::handle obj) { return io::read_scenario(to_json(obj, "scenario")); }, py::arg("scenario"),
        "Parses and validates a scenario dict (the CLI's schema).");
  m.def("read_scenario_text", &io::read_scenario_text, py::arg("text"), "Parses and validates scenario JSON text.");
  m.def("read_scenario_file", &io::read_scenario_file, py::arg("file"), "Reads and validates a scenario JSON file.");
  m.def(
      "read_text_file", [](const std::string& file, const std::string& path) { return py::bytes(io::read_text_file(file, path)); },
      py::arg("file"), py::arg("path"),
      "The bytes of a file the user named (io/file_text.hpp): a regular file of at most 16 MiB, or ConfigError naming `path`.");
}

}  // namespace gpuplan::python
