// register_long_context.cpp — how long a context fits (plan/max_context.hpp): the largest
// trainable sequence length of a resolved run, under the planning margin too, and per GPU
// count with context parallelism. Returns result_dict (common.hpp): {"data": <`gpuplan fit
// --max-context --json`'s "max_context">, "table": <the GPU-count ladder>, "summary": <the
// answer's lines>, "text", "markdown"}; Python's MaxContextResult (_long_context.py) reads "data".
#include <string>

#include "common.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/plan/max_context.hpp"

namespace gpuplan::python {

void register_long_context(py::module_& m) {
  m.def(
      "max_context",
      [](const io::resolved_run& r, int ladder_gpus, double confidence, const std::string& headroom) {
        plan_margin g;
        g.confidence = confidence;
        const io::headroom_amount h = io::parse_headroom(headroom, "max_context.headroom");
        g.headroom_fraction = h.fraction;
        g.headroom_min = bytes(h.bytes);
        detail::check_margin(g, "max_context");
        max_context_options o;
        o.ladder_gpus = ladder_gpus;
        o.margin = g;
        max_context_report mc;
        {
          py::gil_scoped_release unlocked;
          mc = max_context(r.run, o);
        }
        return result_dict(io::max_context_json(mc), io::context_ladder_table(mc), io::max_context_summary(mc, g));
      },
      py::arg("run"), py::arg("ladder_gpus") = 0, py::arg("confidence") = 0.9, py::arg("headroom") = "5%,1GiB",
      "plan/max_context.hpp: the largest trainable context at the run's micro-batch (fits: its P50 within\n"
      "capacity), the largest that is a plan under the margin, and per GPU count 1, 2, 4, ..., ladder_gpus\n"
      "(0: the run's num_gpus) with context parallelism where the framework runs it.");
}

}  // namespace gpuplan::python
