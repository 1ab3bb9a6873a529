// register_rl.cpp — RL post-training (rl.hpp): the core of gp.rl. `rl` reads a scenario dict
// with an "rl" object (io/rl_json.hpp), `rl_text` the same as JSON text; both return
// result_dict (common.hpp): {"data": <`gpuplan rl --json`>, "table": <the phase table>,
// "summary": <the lines above it>, "details": <the lines under it>, "text", "markdown"}, text
// and markdown being `gpuplan rl`'s whole report (io/rl_report.hpp); with largest_micro_batch,
// `gpuplan rl --max-micro-batch`'s. Python's RlResult (_rl.py) reads "data". `rl_recommend`
// returns the same dict of `gpuplan rl --recommend` (io/rl_report.hpp rl_recommend_json), whose
// "recommendations" _rl.py's gp.rl_recommend reads.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "gpuplan/io/prices.hpp"
#include "gpuplan/io/rl_json.hpp"
#include "gpuplan/io/rl_report.hpp"
#include "gpuplan/plan/recommend.hpp"

namespace gpuplan::python {

namespace {

// largest_micro_batch: the step at the largest micro-batch that fits (plan/rl_max_batch.hpp; at
// one sequence when none does), data["max_micro_batch"] that micro-batch or None.
py::dict rl_result(const io::rl_input& in, bool largest_micro_batch) {
  io::rl_answer a;
  {
    py::gil_scoped_release unlocked;
    a = io::answer_rl(in, largest_micro_batch);
  }
  const io::style text{.format = io::report_format::text, .color = false};
  const io::style markdown{.format = io::report_format::markdown, .color = false};
  py::dict d = result_dict(io::rl_json(a), io::rl_phase_table(a.estimate), io::rl_summary(a));
  d["details"] = io::rl_details(a, text);
  d["text"] = io::rl_report(a, text);
  d["markdown"] = io::rl_report(a, markdown);
  return d;
}

// Per GPU type the fewest GPUs that fit with the planning headroom: the candidates `gpus` (none:
// every GPU one can rent) priced as `gpuplan rl --recommend` prices them, the caller's over the catalog's.
py::dict rl_recommend_result(const io::rl_input& in, const std::optional<std::vector<std::string>>& gpus, int max_gpus,
                             const std::map<std::string, double, std::less<>>& prices) {
  recommend_options market = io::market_options(
      gpus, prices, {}, false, "cost",
      {"rl_recommend.gpus", "rl_recommend.prices", "rl_recommend.rank", "name GPUs with gpus=[...] or give prices={...}"});
  market.max_gpus = max_gpus;
  io::rl_recommendation r;
  {
    py::gil_scoped_release unlocked;
    r = io::recommend_rl(in, market);
  }
  return result_dict(io::rl_recommend_json(r), io::rl_recommend_table(r), io::rl_recommend_summary(r));
}

}  // namespace

void register_rl(py::module_& m) {
  m.def(
      "rl",
      [](py::handle obj, bool largest) { return rl_result(io::read_rl_scenario(to_json(obj, "scenario")), largest); },
      py::arg("scenario"), py::arg("largest_micro_batch") = false,
      "rl.hpp: an RL step (DPO, GRPO, PPO) from a scenario dict with an \"rl\" object: memory of a training GPU per\n"
      "phase, the models it holds, the step time and, when it does not fit, the changes that lower the peak.\n"
      "largest_micro_batch: the step at the largest micro-batch that fits (data[\"max_micro_batch\"]).");
  m.def(
      "rl_text", [](const std::string& text, bool largest) { return rl_result(io::read_rl_scenario_text(text), largest); },
      py::arg("text"), py::arg("largest_micro_batch") = false,
      "rl from scenario JSON text (a file's content), read exactly as `gpuplan rl --scenario FILE`.");
  m.def(
      "rl_recommend",
      [](py::handle obj, const std::optional<std::vector<std::string>>& gpus, int max_gpus,
         const std::map<std::string, double, std::less<>>& prices) {
        return rl_recommend_result(io::read_rl_recommend_scenario(to_json(obj, "scenario"), max_gpus), gpus, max_gpus, prices);
      },
      py::arg("scenario"), py::arg("gpus") = py::none(), py::arg("max_gpus") = 64,
      py::arg("prices") = std::map<std::string, double, std::less<>>{},
      "plan/rl_recommend.hpp: per GPU type (gpus, default every GPU with a price) the fewest GPUs, 1, 2, 4, ... up to\n"
      "max_gpus, whose every phase of the RL step fits with the planning headroom; `gpuplan rl --recommend --json`.");
}

}  // namespace gpuplan::python
