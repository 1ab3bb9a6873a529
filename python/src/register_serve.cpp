// register_serve.cpp — serving as the engines do it (serve.hpp): the KV pool, maximum
// concurrency, largest context and the throughput–latency curve of a resolved run.
// Returns {"data": <`gpuplan serve --json`>, "table": <the curve table as a dict>,
// "summary": <the lines above it>, "text", "markdown"}; Python's ServeResult (_serve.py)
// reads "data" and prints through the same formatter as the CLI (io/serve_report.hpp).
#include <cstdint>
#include <optional>
#include <string>

#include "common.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/serve_report.hpp"
#include "gpuplan/serve.hpp"

namespace gpuplan::python {

void register_serve(py::module_& m) {
  m.def(
      "serve",
      [](const io::resolved_run& r, std::optional<double> latency_target_s, std::optional<std::int64_t> concurrency) {
        std::optional<Seconds> target;
        if (latency_target_s) target = seconds(io::positive_amount(*latency_target_s, "serve.latency_target"));
        if (concurrency && *concurrency < 1)
          gpuplan::detail::fail("serve.concurrency", "must be at least 1 (got " + std::to_string(*concurrency) + ")");
        serve_result s;
        std::optional<serve_point> at;
        {
          py::gil_scoped_release unlocked;
          s = serve(r.run, target);
          if (concurrency) at = serve_at(r.run, *concurrency);
        }
        const io::table t = io::serve_table(s, at);
        const std::string summary = io::serve_summary(r, s);
        py::dict d;
        d["data"] = from_json(io::serve_json(r, s, at));
        py::dict td;
        td["title"] = t.title;
        td["header"] = t.header;
        td["rows"] = t.rows;
        td["notes"] = t.notes;
        td["right_align"] = t.right_align;
        d["table"] = td;
        d["summary"] = summary;
        d["text"] = summary + "\n" + io::render(t, {.format = io::report_format::text, .color = false});
        d["markdown"] = "```\n" + summary + "```\n\n" + io::render(t, {.format = io::report_format::markdown, .color = false});
        return d;
      },
      py::arg("run"), py::arg("latency_target_s") = py::none(), py::arg("concurrency") = py::none(),
      "serve.hpp: KV pool (blocks, tokens), max concurrency, largest context, the TTFT/ITL curve over\n"
      "concurrency 1, 2, 4, ..., max, and the most requests whose inter-token latency meets the target.");
  m.def("parse_latency", &io::parse_latency, py::arg("value"), py::arg("path"),
        "An inter-token latency target: '50ms', '0.05s', '0.05' -> seconds; ConfigError naming `path` otherwise.");
}

}  // namespace gpuplan::python
