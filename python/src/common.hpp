// common.hpp — shared declarations of the gpuplan._core bind files.
// One register_<concept>(module) per file (boost-histogram's layout); module.cpp
// calls them in order. Adding a C++ capability = one new register_*.cpp + one line
// in module.cpp + its stub in gpuplan/_core.pyi.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "gpuplan/io/report.hpp"

namespace gpuplan::python {
namespace py = pybind11;

// Python value -> JSON: None, bool, int (incl. numpy integers), float, str,
// os.PathLike, dict (str keys), list/tuple. Anything else raises ConfigError
// naming `path` and the Python type.
nlohmann::json to_json(py::handle obj, const std::string& path);
// JSON -> plain Python (dict/list/str/int/float/bool/None).
py::object from_json(const nlohmann::json& j);

// A report table as a dict: title, header, rows, notes, right_align (the typed
// results' to_frame and repr read it).
inline py::dict table_dict(const io::table& t) {
  py::dict td;
  td["title"] = t.title;
  td["header"] = t.header;
  td["rows"] = t.rows;
  td["notes"] = t.notes;
  td["right_align"] = t.right_align;
  return td;
}

// A typed result (_plan.py, _serve.py) as a dict: "data" (the CLI's --json), "table"
// (table_dict), "text" and "markdown" (the CLI's rendering). With `summary` (the
// newline-terminated lines the CLI prints above the table, as `gpuplan serve` does)
// also "summary", and text/markdown start with it: "summary\n<table>" and
// "```\nsummary```\n\n<table>" (src/cli/serve.cpp).
inline py::dict result_dict(const nlohmann::json& data, const io::table& t,
                            const std::optional<std::string>& summary = std::nullopt) {
  py::dict d;
  d["data"] = from_json(data);
  d["table"] = table_dict(t);
  const std::string text = io::render(t, {.format = io::report_format::text, .color = false});
  const std::string markdown = io::render(t, {.format = io::report_format::markdown, .color = false});
  if (summary) {
    d["summary"] = *summary;
    d["text"] = *summary + "\n" + text;
    d["markdown"] = "```\n" + *summary + "```\n\n" + markdown;
  } else {
    d["text"] = text;
    d["markdown"] = markdown;
  }
  return d;
}

// Messages of every warning bit set in `w`, in bit order (the CLI's formatter).
inline py::list warning_messages(unsigned w) { return py::cast(io::warning_messages(w)); }

void register_errors(py::module_& m);
void register_units(py::module_& m);
void register_model(py::module_& m);
void register_hardware(py::module_& m);
void register_scenario(py::module_& m);
void register_memory(py::module_& m);
void register_timing(py::module_& m);
void register_report(py::module_& m);
void register_sweep(py::module_& m);
void register_plan(py::module_& m);
void register_long_context(py::module_& m);
void register_serve(py::module_& m);
void register_rl(py::module_& m);
void register_calibrate(py::module_& m);
void register_vision(py::module_& m);
void register_diffusion(py::module_& m);

}  // namespace gpuplan::python
