// register_serve.cpp — serving as the engines do it (serve.hpp): the KV pool, maximum
// concurrency, largest context and the throughput–latency curve of a resolved run.
// Both return result_dict (common.hpp): {"data": <`gpuplan serve --json`>, "table": <the
// curve table as a dict>, "summary": <the lines above it>, "text", "markdown"}; Python's ServeResult (_serve.py)
// reads "data" and prints through the same formatter as the CLI (io/serve_report.hpp).
#include <cstdint>
#include <map>
#include <vector>
#include <optional>
#include <string>

#include "common.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/serve_report.hpp"
#include "gpuplan/serve.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/prices.hpp"
#include "gpuplan/plan/serve_recommend.hpp"

namespace gpuplan::python {

void register_serve(py::module_& m) {
  m.def(
      "serve",
      [](const io::resolved_run& r, std::optional<double> latency_target_s, std::optional<std::int64_t> concurrency) {
        std::optional<Seconds> target;
        if (latency_target_s) {
          const double t = io::positive_amount(*latency_target_s, "serve.latency_target");
          target = seconds(io::checked_latency(t, "serve.latency_target", gpuplan::detail::num(t)));
        }
        serve_result s;
        std::optional<serve_point> at;
        {
          py::gil_scoped_release unlocked;
          s = serve(r.run, target);
          if (concurrency) at = io::serve_at_checked(r.run, s, *concurrency, "serve.concurrency");
        }
        return result_dict(io::serve_json(r, s, at), io::serve_table(s, at), io::serve_summary(r, s));
      },
      py::arg("run"), py::arg("latency_target_s") = py::none(), py::arg("concurrency") = py::none(),
      "serve.hpp: KV pool (blocks, tokens), max concurrency, largest context, the TTFT/ITL curve over\n"
      "concurrency 1, 2, 4, ..., max, and the most requests whose inter-token latency meets the target.");
  m.def(
      "recommend_serving",
      [](const io::resolved_run& r, double requests_per_second, double itl_target_s, const std::vector<std::string>& gpu_ids,
         const std::map<std::string, double, std::less<>>& prices, int max_tp, std::size_t top_k) {
        serve_workload w;
        w.requests_per_second = io::checked_request_rate(requests_per_second, "recommend_serving.requests_per_second");
        w.prompt_len = r.settings().inference.prompt_len;
        w.output_len = r.settings().inference.gen_len;
        w.itl_target = seconds(io::checked_latency(itl_target_s, "recommend_serving.itl_target", gpuplan::detail::num(itl_target_s)));
        // The catalog's cheapest on-demand price per GPU-hour, the caller's prices over it.
        const recommend_options market = io::market_options(
            gpu_ids.empty() ? std::nullopt : std::optional(gpu_ids), prices, {}, false, "cost",
            {"recommend_serving.gpus", "recommend_serving.prices", "recommend_serving.rank", "name GPUs with gpus=[...] or give prices={...}"});
        const auto by_id = io::hourly_prices(market);
        const std::vector<gpu_spec>& gpus = market.gpus;
        serve_recommendation rec;
        {
          py::gil_scoped_release unlocked;
          rec = recommend_serving(r.model(), r.settings(), w, gpus, by_id, max_tp);
        }
        const engine eng = r.settings().inference.eng;
        return result_dict(io::serve_recommend_json(r.model().name, eng, rec), io::serve_recommend_table(rec, top_k),
                           io::serve_recommend_summary(r.model().name, eng, rec));
      },
      py::arg("run"), py::arg("requests_per_second"), py::arg("itl_target_s"), py::arg("gpus"), py::arg("prices"),
      py::arg("max_tp") = 8, py::arg("top_k") = 10,
      "plan/serve_recommend.hpp: per GPU x TP, the concurrency meeting the ITL target, its throughput, the replicas\n"
      "for the request rate and the cost per hour and per million output tokens.");
  m.def("parse_latency", &io::parse_latency, py::arg("value"), py::arg("path"),
        "An inter-token latency target: '50ms', '0.05s', '0.05' -> seconds; ConfigError naming `path` otherwise.");
}

}  // namespace gpuplan::python
