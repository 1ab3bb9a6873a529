// hooks.cpp — the planner behind the CLI (plan.hpp through io/report.hpp's tables).
#include "hooks.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "gpuplan/error.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/prices.hpp"
#include "gpuplan/plan.hpp"
#include "gpuplan/plan_names.hpp"

namespace gpuplan::cli {
namespace {

void print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }
void print_json(const nlohmann::json& j) {
  print(j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::vector<std::string> split_list(const std::string& s, const std::string& flag) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) throw config_error(flag, "empty entry in the list (got '" + s + "')");
    out.push_back(item);
  }
  if (out.empty()) throw config_error(flag, "must name at least one entry (got '" + s + "')");
  return out;
}

double parse_number(const std::string& digits, const std::string& flag, const std::string& whole, const char* expected) {
  if (const auto d = io::parse_finite(digits)) return *d;
  throw config_error(flag, std::string("must be ") + expected + " (got '" + whole + "')");
}

std::vector<gpu_spec> catalog_gpus() {
  std::vector<gpu_spec> out;
  for (const auto& id : io::gpu_ids()) out.push_back(io::find_gpu(id));
  return out;
}

}  // namespace

std::map<std::string, double, std::less<>> parse_prices(const std::string& text, const std::string& flag) {
  std::map<std::string, double, std::less<>> out;
  for (const auto& item : split_list(text, flag)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw config_error(flag, "each entry is GPU=PRICE, e.g. rtx-4090=0.4 (got '" + item + "')");
    const std::string id = item.substr(0, eq);
    (void)io::find_gpu(id, flag);  // unknown ids are errors, with "did you mean"
    const double p = parse_number(item.substr(eq + 1), flag, item, "GPU=PRICE with a number, e.g. rtx-4090=0.4");
    if (p < 0) throw config_error(flag, "prices must be non-negative (got '" + item + "')");
    if (!out.emplace(id, p).second) throw config_error(flag, "GPU '" + id + "' given twice");
  }
  return out;
}

std::optional<fit_suggestions> what_would_make_it_fit(const io::resolved_run& run, const plan_margin& margin) {
  suggest_options o;
  o.gpus = catalog_gpus();
  o.margin = margin;
  const std::vector<io::price_row>& prices = io::price_catalog();
  for (const gpu_spec& g : o.gpus)
    if (const auto p = io::cheapest_price(prices, g.id)) o.price_per_gpu_hour.emplace(g.id, *p);
  const std::vector<suggestion> s = suggest(run.run, o);
  return fit_suggestions{io::suggestions_table(s), io::suggestions_json(s, run.model(), run.model_spec)};
}

fit_limits limits_of(const io::resolved_run& run, const plan_margin& margin) {
  fit_options o;
  o.margin = margin;
  const fit_report f = fit(run.run, o);
  return {io::fit_limits_table(f, run.settings()), io::fit_limits_json(f)};
}

plan_margin parse_margin(const margin_request& request) {
  plan_margin g;
  g.confidence = io::parse_confidence(request.confidence, "--confidence");
  const io::headroom_amount h = io::parse_headroom(request.headroom, "--headroom");
  g.headroom_fraction = h.fraction;
  g.headroom_min = bytes(h.bytes);
  return g;
}

int run_search(const io::resolved_run& run, const search_request& request, const io::style& style) {
  search_options o;
  o.margin = request.margin;
  o.top_k = request.top_k;
  o.threads = request.threads;
  o.global_batch = request.global_batch;
  if (const auto objective = from_string<search_objective>(request.objective)) o.objective = *objective;
  else throw config_error("--objective", "must be " + name_list<search_objective>(" or ") + " (got '" + request.objective + "')",
                          error_kind::unknown_name);
  if (request.top_k < 1 || request.top_k > 100000)
    throw config_error("--top", "must be between 1 and 100000 (got " + std::to_string(request.top_k) + ")");
  if (request.threads < 1 || request.threads > 256)
    throw config_error("--threads", "must be between 1 and 256 (got " + std::to_string(request.threads) + ")");
  if (request.global_batch && *request.global_batch < 1)
    throw config_error("--global-batch", "must be at least 1 (got " + std::to_string(*request.global_batch) + ")");
  search_result r;
  try {
    r = search(run.run, o);
  } catch (const config_error& e) {
    // search.global_batch etc. -> the flag the user typed.
    const std::string path = e.path();
    const std::string what = e.what();
    const std::string reason = what.size() > path.size() + 2 ? what.substr(path.size() + 2) : what;
    if (path == "search.global_batch") throw config_error("--global-batch", reason, e.kind());
    throw;
  }
  if (style.format == io::report_format::json) {
    nlohmann::json j = io::search_json(r, run.model(), run.model_spec, o.objective);
    j["model"] = run.model().name;
    j["gpu"] = run.settings().gpu.id;
    j["num_gpus"] = run.settings().num_gpus;
    print_json(j);
    return 0;
  }
  const bool md = style.format == io::report_format::markdown;
  std::string text = std::string(md ? "### " : "") + run.model().name + " on " + std::to_string(run.settings().num_gpus) +
                     " × " + run.settings().gpu.name + "\n" + io::run_summary(run.settings()) + " (template)\n\n";
  text += io::render(io::search_table(r, o.objective), style);
  print(text);
  return 0;
}

int run_recommend(const io::resolved_run& run, const recommend_request& request, const io::style& style) {
  recommend_options o;
  o.margin = request.margin;
  if (request.gpus_list.empty()) {
    o.gpus = catalog_gpus();
  } else {
    for (const auto& id : split_list(request.gpus_list, "--gpus-list")) o.gpus.push_back(io::find_gpu(id, "--gpus-list"));
  }
  if (!request.prices.empty()) o.price_per_gpu_hour = parse_prices(request.prices, "--price");
  if (request.dataset_tokens) {
    if (run.settings().tokens) throw config_error("--dataset-tokens", "give either --tokens or --dataset-tokens (with --epochs), not both");
    o.dataset_tokens = io::parse_amount(*request.dataset_tokens, "--dataset-tokens");
  }
  if (request.epochs) {
    if (!request.dataset_tokens) throw config_error("--epochs", "needs --dataset-tokens");
    if (!(*request.epochs > 0) || !std::isfinite(*request.epochs))
      throw config_error("--epochs", "must be a positive number (got " + detail::num(*request.epochs) + ")");
    o.epochs = *request.epochs;
  }
  o.deadline = seconds(io::parse_duration(request.deadline, "--deadline"));
  if (request.budget && (!(*request.budget >= 0) || !std::isfinite(*request.budget)))
    throw config_error("--budget", "must be a non-negative number (got " + detail::num(*request.budget) + ")");
  o.budget = request.budget;
  if (request.max_gpus < 1 || request.max_gpus > 4096)
    throw config_error("--max-gpus", "must be between 1 and 4096 (got " + std::to_string(request.max_gpus) + ")");
  o.max_gpus = request.max_gpus;
  if (const auto rank = from_string<recommend_rank>(request.rank)) o.rank = *rank;
  else throw config_error("--rank", "must be " + name_list<recommend_rank>(" or ") + " (got '" + request.rank + "')",
                          error_kind::unknown_name);
  if (request.top_k < 1 || request.top_k > 100000)
    throw config_error("--top", "must be between 1 and 100000 (got " + std::to_string(request.top_k) + ")");
  if (!run.settings().tokens && !o.dataset_tokens) throw config_error("--tokens", "recommend needs --tokens (or --epochs with --dataset-tokens)");

  std::vector<recommendation> rows = recommend(run.run, o);
  const std::size_t total = rows.size();
  if (rows.size() > request.top_k) rows.resize(request.top_k);
  const double tokens = o.dataset_tokens ? o.epochs * *o.dataset_tokens : run.settings().tokens.value_or(0);
  if (style.format == io::report_format::json) {
    nlohmann::json j = {{"model", run.model().name},
                        {"method", to_string(run.settings().meth)},
                        {"tokens", tokens},
                        {"deadline_seconds", in_seconds(o.deadline)},
                        {"budget", o.budget ? nlohmann::json(*o.budget) : nlohmann::json(nullptr)},
                        {"rank_by", request.rank},
                        {"total_rows", total},
                        {"rows", io::recommend_json(rows)}};
    print_json(j);
    return 0;
  }
  const bool md = style.format == io::report_format::markdown;
  std::string text = std::string(md ? "### " : "") + run.model().name + ": " + io::format_number(tokens) +
                     " tokens, global batch " +
                     std::to_string(run.settings().global_batch()) + " (set --global-batch or --batch/--grad-accum), " +
                     io::run_summary(run.settings(), true) + " (template)\n";
  if (o.budget) text += "budget " + io::format_number(*o.budget) + "\n";
  text += "\n";
  io::table t = io::recommend_table(rows, o.deadline);
  if (total > rows.size())
    t.notes.push_back("showing " + std::to_string(rows.size()) + " of " + std::to_string(total) + " rows (--top)");
  text += io::render(t, style);
  print(text);
  return 0;
}

}  // namespace gpuplan::cli
