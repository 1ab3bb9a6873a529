// register_report.cpp — the formatter every interface shares (io/report.hpp):
// Python's __repr__ prints estimate_report, _repr_html_ renders memory_table /
// time_table, to_dict() is estimate_json — the same numbers and words as the CLI.
#include <vector>

#include "common.hpp"
#include "gpuplan/io/report.hpp"

namespace gpuplan::python {

namespace {
io::style style_of(const std::string& format) { return {.format = io::parse_report_format(format), .color = false}; }
}  // namespace

void register_report(py::module_& m) {
  m.def("estimate_json", [](const io::resolved_run& r) { return from_json(io::estimate_json(r)); }, py::arg("run"),
        "The whole estimate as `gpuplan estimate --json` prints it.");
  m.def("describe_json", [](const architecture& a) { return from_json(io::describe_json(a)); }, py::arg("model"),
        "The model as `gpuplan describe --json` prints it.");
  m.def("estimate_report", [](const io::resolved_run& r, const std::string& format) {
          return io::estimate_report(r, style_of(format)); },
        py::arg("run"), py::arg("format") = "text",
        "The estimate as `gpuplan estimate` prints it ('text' or 'markdown').");
  m.def("describe_report", [](const architecture& a, const std::string& format) {
          return io::describe_report(a, style_of(format)); },
        py::arg("model"), py::arg("format") = "text", "The model as `gpuplan describe` prints it.");
  m.def("memory_table",
        [](const std::vector<std::pair<std::string, memory_breakdown>>& columns, const std::string& workload_name,
           const io::resolved_run* run) {
          std::vector<io::labelled_memory> cols;
          // With the run, each column carries the verdict's answer (its Verdict and Headroom rows).
          for (const auto& [label, mem] : columns)
            cols.push_back({label, mem, run != nullptr ? std::optional(io::answer_of(mem, bands_of(run->run, mem))) : std::nullopt});
          const auto work = from_string<workload>(workload_name);
          if (!work)
            throw config_error("workload", "must be one of " + name_list<workload>() + " (got '" + workload_name + "')",
                               error_kind::unknown_name);
          return table_dict(io::memory_table(cols, *work));
        },
        py::arg("columns"), py::arg("workload") = "train", py::arg("run").none(true) = py::none(),
        "The CLI's memory table over labelled breakdowns: {title, header, rows, notes, right_align}; with the run, "
        "the Verdict and Headroom rows are the verdict's (default margin).");
  m.def("time_table", [](const time_estimate& t, const io::resolved_run& r) { return table_dict(io::time_table(t, r.settings())); },
        py::arg("time"), py::arg("run"), "The CLI's time table: {title, header, rows, notes, right_align}.");
  m.def(
      "verdict_line",
      [](const memory_breakdown& mem, const io::resolved_run* run) {
        if (run == nullptr) return io::verdict_line(mem, style_of("text"));
        return io::verdict_line(mem, bands_of(run->run, mem), style_of("text"));
      },
      py::arg("memory"), py::arg("run").none(true) = py::none(),
      "'FITS with ... headroom' / 'DOES NOT FIT: short by ...'; with the run, the three-state verdict line of its "
      "band under the default margin (as `gpuplan fit` prints it).");
  m.def(
      "verdict",
      [](const memory_breakdown& mem, const io::resolved_run& run) {
        return std::string(to_string(io::answer_of(mem, bands_of(run.run, mem)).state));
      },
      py::arg("memory"), py::arg("run"),
      "The three-state verdict of the run's estimate under the default margin, as estimate_json's memory.verdict.");
  m.def("binding_component", [](const memory_breakdown& mem) { return io::binding_component(mem); }, py::arg("memory"),
        "The component with the most bytes.");
  m.def("run_summary", [](const io::resolved_run& r) { return io::run_summary(r.settings()); }, py::arg("run"),
        "One line describing the run.");
}

}  // namespace gpuplan::python
