// register_plan.cpp — the planner (plan.hpp): fit, suggest, recommend, search of
// a resolved run. Each returns {"data": <the CLI's --json>, "table": <the CLI's
// table as a dict>, "text": <the CLI's text>, "markdown": ...}: Python's typed
// results (_plan.py) read "data" and print, render and convert through the same
// formatter as `gpuplan fit|search|recommend`.
#include <map>
#include <set>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/export.hpp"
#include "gpuplan/io/graph_json.hpp"
#include "gpuplan/io/graph_plan.hpp"
#include "gpuplan/io/prices.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/plan.hpp"
#include "gpuplan/plan_names.hpp"

namespace gpuplan::python {

namespace {

std::vector<gpu_spec> gpu_list(const std::optional<std::vector<std::string>>& ids, const std::string& path) {
  std::vector<gpu_spec> out;
  if (!ids) {
    for (const auto& id : io::gpu_ids()) out.push_back(io::find_gpu(id));
    return out;
  }
  for (const auto& id : *ids) out.push_back(io::find_gpu(id, path));
  return out;
}

// The planning margin from Python's keywords: confidence 0.5/0.9/0.99, headroom
// "5%", "2GiB" or "5%,1GiB" (io/amount.hpp), errors naming `<path>.confidence` / `.headroom`.
plan_margin margin_of(double confidence, const std::string& headroom, const std::string& path) {
  plan_margin g;
  g.confidence = confidence;
  const io::headroom_amount h = io::parse_headroom(headroom, path + ".headroom");
  g.headroom_fraction = h.fraction;
  g.headroom_min = bytes(h.bytes);
  detail::check_margin(g, path);
  return g;
}

// The candidates, prices and limits of gp.recommend, for language models and layer graphs alike.
recommend_options market_of(const std::optional<std::vector<std::string>>& gpus, const std::map<std::string, double>& prices,
                            double deadline_seconds, std::optional<double> budget, int max_gpus, const std::string& rank,
                            bool keep_late, double confidence, const std::string& headroom, const std::string& prices_file,
                            bool spot) {
  const std::map<std::string, double, std::less<>> user_prices(prices.begin(), prices.end());
  recommend_options o = io::market_options(gpus, user_prices, prices_file, spot, rank,
                                           {"recommend.gpus", "recommend.price_per_gpu_hour", "recommend.rank",
                                            "name GPUs with gpus=[...] or give prices={...}"});
  o.margin = margin_of(confidence, headroom, "recommend");
  o.deadline = seconds(deadline_seconds);
  o.budget = budget;
  o.max_gpus = max_gpus;
  o.keep_late = keep_late;
  return o;
}

py::dict plan_fit_dict(const io::resolved_run& r, int max_gpus, double confidence, const std::string& headroom) {
  fit_options o;
  o.max_gpus = max_gpus;
  o.margin = margin_of(confidence, headroom, "fit");
  const fit_report f = fit(r.run, o);
  nlohmann::json j = io::fit_limits_json(f);
  // fits = verdict != does_not_fit, as every output reports it (io::answer_of).
  const memory_bands bands = bands_of(r.run, f.memory);
  const io::fit_answer answer = io::answer_of(f.memory, bands, o.margin);
  j["fits"] = answer.fits;
  j["verdict"] = to_string(answer.state);
  j["device_quantile_bytes"] = f.device_quantile;
  j["headroom_kept_bytes"] = in_bytes(f.headroom_kept);
  j["binding"] = to_string(f.binding);
  j["headroom_bytes"] = in_bytes(f.headroom);
  j["memory"] = io::memory_json(f.memory, r.settings().work);
  j["memory"]["fits"] = answer.fits;
  py::dict d = result_dict(j, io::fit_limits_table(f, r.settings()));
  d["verdict_line"] = io::verdict_line(f.memory, bands, {.format = io::report_format::text, .color = false}, o.margin);
  return d;
}

py::dict plan_suggest_dict(const io::resolved_run& r, const std::optional<std::vector<std::string>>& gpus, int max_gpus,
                           bool pairs, double confidence, const std::string& headroom) {
  suggest_options o;
  o.gpus = gpu_list(gpus, "suggest.gpus");
  o.max_gpus = max_gpus;
  o.pairs = pairs;
  o.margin = margin_of(confidence, headroom, "suggest");
  const std::vector<io::price_row>& prices = io::price_catalog();
  for (const gpu_spec& g : o.gpus)
    if (const auto p = io::cheapest_price(prices, g.id)) o.price_per_gpu_hour.emplace(g.id, *p);
  if (max_gpus < 1) throw config_error("suggest.max_gpus", "must be at least 1 (got " + std::to_string(max_gpus) + ")");
  const auto s = suggest(r.run, o);
  return result_dict(io::suggestions_json(s, r.model(), r.model_spec), io::suggestions_table(s));
}

py::dict plan_search_dict(const io::resolved_run& r, std::size_t top_k, std::optional<std::int64_t> global_batch, int threads,
                          const std::string& objective, double confidence, const std::string& headroom) {
  search_options o;
  o.margin = margin_of(confidence, headroom, "search");
  o.top_k = top_k;
  o.global_batch = global_batch;
  o.threads = threads;
  if (const auto v = from_string<search_objective>(objective)) o.objective = *v;
  else throw config_error("search.objective", "must be " + name_list<search_objective>(" or ") + " (got '" + objective + "')",
                          error_kind::unknown_name);
  search_result sr;
  {
    py::gil_scoped_release unlocked;
    sr = search(r.run, o);
  }
  return result_dict(io::search_json(sr, r.model(), r.model_spec, o.objective), io::search_table(sr, o.objective));
}

py::dict export_launch_dict(const io::resolved_run& r, const std::string& target) {
  const io::launch_config c = io::export_launch(r, io::parse_export_target(target, "export"), "export");
  py::dict d;
  d["text"] = c.text;
  d["fill_in"] = c.fill_in;
  d["checked_against"] = c.checked_against;
  return d;
}

py::dict plan_recommend_dict(const io::resolved_run& r, const std::optional<std::vector<std::string>>& gpus,
                             const std::map<std::string, double>& prices, std::optional<double> tokens, double epochs,
                             std::optional<double> dataset_tokens, double deadline_seconds, std::optional<double> budget,
                             int max_gpus, const std::string& rank, bool keep_late, double confidence,
                             const std::string& headroom, const std::string& prices_file, bool spot) {
  recommend_options o = market_of(gpus, prices, deadline_seconds, budget, max_gpus, rank, keep_late, confidence, headroom,
                                  prices_file, spot);
  o.tokens = tokens;
  o.epochs = epochs;
  o.dataset_tokens = dataset_tokens;
  std::vector<recommendation> rows;
  {
    py::gil_scoped_release unlocked;
    rows = recommend(r.run, o);
  }
  return result_dict(io::recommend_json(rows), io::recommend_table(rows, o.deadline));
}

// The query of gp.recommend for a layer graph: its keys are io::graph_recommend_query's
// fields; None leaves the recipe's default.
io::graph_recommend_query graph_query_of(const py::dict& query) {
  io::graph_recommend_query q;
  q.flag_prefix = "recommend.";
  const auto get = [&query](const char* k) -> py::object {
    return query.contains(k) ? py::reinterpret_borrow<py::object>(query[k]) : py::none();
  };
  for (auto item : query) {
    static const std::set<std::string> known{"model", "graph", "images", "epochs", "image", "resolution",
                                             "global_batch", "batch", "lora_rank", "method", "precision",
                                             "optimizer", "checkpointing", "ema", "zero"};
    const auto k = py::cast<std::string>(item.first);
    if (!known.contains(k)) throw config_error("recommend." + k, "does not apply to image and diffusion models");
  }
  q.model = get("model").is_none() ? "" : py::cast<std::string>(get("model"));
  if (!get("graph").is_none()) q.graph = io::read_graph_text(py::cast<std::string>(get("graph")));
  q.images = py::cast<std::optional<std::string>>(get("images"));
  q.epochs = py::cast<std::optional<double>>(get("epochs"));
  for (auto [k, f] : {std::pair{"image", &q.image}, {"resolution", &q.resolution}, {"global_batch", &q.global_batch},
                      {"batch", &q.batch}, {"lora_rank", &q.lora_rank}})
    *f = py::cast<std::optional<std::int64_t>>(get(k));
  for (auto [k, f] : {std::pair{"method", &q.method}, {"precision", &q.precision}, {"optimizer", &q.optimizer}})
    *f = py::cast<std::optional<std::string>>(get(k));
  q.checkpointing = py::cast<std::optional<bool>>(get("checkpointing"));
  q.ema = py::cast<std::optional<bool>>(get("ema"));
  q.zero = py::cast<std::optional<int>>(get("zero"));
  return q;
}

py::dict plan_recommend_graph_dict(const py::dict& query, const std::optional<std::vector<std::string>>& gpus,
                                   const std::map<std::string, double>& prices, double deadline_seconds,
                                   std::optional<double> budget, int max_gpus, const std::string& rank, bool keep_late,
                                   double confidence, const std::string& headroom, const std::string& prices_file,
                                   bool spot) {
  const io::graph_recommend_query q = graph_query_of(query);
  const recommend_options o = market_of(gpus, prices, deadline_seconds, budget, max_gpus, rank, keep_late, confidence,
                                        headroom, prices_file, spot);
  io::graph_plan plan;
  std::vector<graph_recommendation> rows;
  {
    py::gil_scoped_release unlocked;
    plan = io::graph_plan_of(q);
    rows = recommend_graph(plan.workload, o);
  }
  return result_dict(io::graph_recommend_document(plan, rows, o, rows.size(), spot),
                     io::graph_recommend_table(rows, o.deadline, plan.settings.value("zero", 0)));
}

}  // namespace

void register_plan(py::module_& m) {
  m.def("plan_fit", &plan_fit_dict, py::arg("run"), py::arg("max_gpus") = 4096, py::arg("confidence") = 0.9,
        py::arg("headroom") = "5%,1GiB",
        "plan::fit: verdict, binding term, largest micro-batch, longest sequence, min GPUs per ZeRO stage.");
  m.def("plan_suggest", &plan_suggest_dict, py::arg("run"), py::arg("gpus") = py::none(), py::arg("max_gpus") = 1024,
        py::arg("pairs") = true, py::arg("confidence") = 0.9, py::arg("headroom") = "5%,1GiB",
        "plan::suggest: what would make the run fit with the margin: own card, more cards, other GPUs by price. "
        "gpus=None: the catalog.");
  m.def("plan_search", &plan_search_dict, py::arg("run"), py::arg("top_k") = 10, py::arg("global_batch") = py::none(),
        py::arg("threads") = 1, py::arg("objective") = "time", py::arg("confidence") = 0.9,
        py::arg("headroom") = "5%,1GiB", "plan::search: the top-k parallel layouts (fastest or cheapest).");
  m.def(
      "export_config",
      [](const io::resolved_run& r, const std::string& target) {
        return io::export_config(r, io::parse_export_target(target, "export"), "export");
      },
      py::arg("run"), py::arg("target"),
      "io::export_config: the config file or command line that launches the run's layout "
      "(deepspeed, accelerate-fsdp, torchtune, axolotl, torchrun, vllm).");
  m.def("export_launch", &export_launch_dict, py::arg("run"), py::arg("target"),
        "io::export_launch: the launch config as {text, fill_in, checked_against}.");
  m.def("plan_recommend", &plan_recommend_dict, py::arg("run"), py::arg("gpus") = py::none(),
        py::arg("prices") = std::map<std::string, double>{}, py::arg("tokens") = py::none(), py::arg("epochs") = 1.0,
        py::arg("dataset_tokens") = py::none(), py::arg("deadline_seconds") = 86400.0, py::arg("budget") = py::none(),
        py::arg("max_gpus") = 64, py::arg("rank") = "cost", py::arg("keep_late") = true, py::arg("confidence") = 0.9,
        py::arg("headroom") = "5%,1GiB", py::arg("prices_file") = "", py::arg("spot") = false,
        "plan::recommend: GPU types x counts ranked by deadline, budget, cost and time, with system sizing.");
  m.def("plan_recommend_graph", &plan_recommend_graph_dict, py::arg("query"), py::arg("gpus") = py::none(),
        py::arg("prices") = std::map<std::string, double>{}, py::arg("deadline_seconds") = 86400.0,
        py::arg("budget") = py::none(), py::arg("max_gpus") = 8, py::arg("rank") = "cost", py::arg("keep_late") = true,
        py::arg("confidence") = 0.9, py::arg("headroom") = "5%,1GiB", py::arg("prices_file") = "",
        py::arg("spot") = false,
        "plan::recommend_graph: GPU types x counts for an image or diffusion model under DDP, from its published recipe.");
  m.def("is_graph_model", &io::is_graph_model, py::arg("name"), "Whether recommend plans `name` as a layer graph.");
}

}  // namespace gpuplan::python
