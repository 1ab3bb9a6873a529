// hooks.hpp — the planner (plan.hpp) behind the CLI: `fit`'s limits and "what would
// make it fit", `search` / `plan` and `recommend`. Their subcommands (fit.cpp, search.cpp,
// recommend.cpp) parse the flags into a resolved run (the same path as every other
// command, run_options.hpp) plus the options below.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/io/graph_query.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"

namespace gpuplan::cli {

// "What would make it fit". Called by `gpuplan fit` for each run that does not fit;
// the table is printed after the verdict and `json` becomes the "suggestions" member
// of `fit --json`. Bigger GPUs are taken from the whole catalog.
struct fit_suggestions {
  io::table table;     // ranked changes, cheapest first
  nlohmann::json json;  // the same, as an array of objects
};
// Only rows that fit with `margin`; other GPUs carry the catalog's cheapest on-demand price.
std::optional<fit_suggestions> what_would_make_it_fit(const io::resolved_run& run, const plan_margin& margin = {});

// fit's limits: largest micro-batch, longest sequence, min GPUs per ZeRO stage.
struct fit_limits {
  io::table table;
  nlohmann::json json;
};
fit_limits limits_of(const io::resolved_run& run, const plan_margin& margin = {});

// --confidence 0.5|0.9|0.99 and --headroom 5%|2GiB|5%,1GiB (fit, search, plan, recommend).
struct margin_request {
  std::string confidence = "0.9";
  std::string headroom = "5%,1GiB";
};
plan_margin parse_margin(const margin_request& request);

// `gpuplan search|plan`.
struct search_request {
  std::size_t top_k = 10;
  int threads = 1;
  std::string objective = "time";  // a name of kSearchObjectiveNames (plan_names.hpp)
  std::optional<std::int64_t> global_batch;
  plan_margin margin{};
  std::string export_target;  // --export: a name of kExportTargetNames (io/export.hpp); empty: none
  std::string export_file;    // --export-file: where the export goes (default: stdout after the table)
};
int run_search(const io::resolved_run& run, const search_request& request, const io::style& style);

// `gpuplan recommend`. Strings are parsed here so errors name the flag.
struct recommend_request {
  std::optional<std::string> dataset_tokens;  // "2B"
  std::optional<double> epochs;
  std::string deadline = "24h";               // 3600, 90m, 24h, 2d
  std::optional<double> budget;
  std::string prices;                         // "rtx-4090=0.4,a100-80gb=1.8"
  std::string prices_file;                    // --prices FILE (CSV or JSON, io/prices.hpp)
  bool spot = false;                          // spot prices where published
  std::optional<double> kwh_price;            // electricity, currency per kWh
  std::optional<std::int64_t> global_batch;   // sequences per step; unset: practitioners' default
  std::string gpus_list;                      // "rtx-4090,a100-80gb"; empty: the catalog
  std::optional<int> max_gpus;               // default 64; 8 (one node) for image and diffusion models
  std::string rank = "cost";                  // a name of kRecommendRankNames (plan_names.hpp)
  std::size_t top_k = 10;
  plan_margin margin{};
  // --serve: a serving workload (plan/serve_recommend.hpp) instead of a training run.
  bool serve = false;
  std::optional<double> requests_per_second;
  std::string itl_target = "50ms";
};
int run_recommend(const io::resolved_run& run, const recommend_request& request, const io::style& style);
// An image or diffusion model (io/graph_plan.hpp): `q` from the model's flags, the rest from `request`.
int run_recommend_graph(io::graph_recommend_query q, const recommend_request& request, const io::style& style);

// The candidates, prices and limits every recommendation from the recommend flags shares
// (`recommend`, `rl --recommend`): --gpus-list (empty: every GPU one can rent), --price,
// --prices, --spot, --max-gpus (default `max_gpus`), --kwh-price, --deadline, --budget, --rank
// and --top, each checked naming its flag.
recommend_options market_options(const recommend_request& request, int max_gpus);
// "prices: on-demand (src/data/prices.csv, dated rows, with FILE, --price)": where the prices come from.
std::string prices_source(const recommend_request& request);
// prices_source and the electricity price, one line.
std::string prices_line(const recommend_request& request, const recommend_options& o);

// "rtx-4090=0.4,a100-80gb=1.8" -> {id: price}. Counts and durations ("2B", "24h") are
// read by io::parse_amount / io::parse_duration (gpuplan/io/amount.hpp).
std::map<std::string, double, std::less<>> parse_prices(const std::string& text, const std::string& flag);

}  // namespace gpuplan::cli
