// hooks.cpp — the planner behind the CLI (plan.hpp through io/report.hpp's tables).
#include "hooks.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include "gpuplan/error.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/export.hpp"
#include "gpuplan/io/graph_plan.hpp"
#include "gpuplan/io/prices.hpp"
#include "gpuplan/io/serve_report.hpp"
#include "gpuplan/plan.hpp"
#include "gpuplan/plan_names.hpp"
#include "json_text.hpp"
#include "output.hpp"

namespace gpuplan::cli {
namespace {

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

namespace {

// The candidates, prices and ranking of --gpus-list, --price, --prices, --spot and --rank.
recommend_options market_of(const recommend_request& request) {
  std::optional<std::vector<std::string>> gpus;
  if (!request.gpus_list.empty()) gpus = split_list(request.gpus_list, "--gpus-list");
  const auto prices = request.prices.empty() ? std::map<std::string, double, std::less<>>{} : parse_prices(request.prices, "--price");
  try {
    return io::market_options(gpus, prices, request.prices_file, request.spot, request.rank,
                              {"--gpus-list", "--price", "--rank", "name GPUs with --gpus-list or give --price"});
  } catch (const config_error& e) {
    // The price file's errors name the file (its rows "FILE:3"): say which flag gave it.
    if (!request.prices_file.empty() && e.path().rfind(gpuplan::detail::quote_text(request.prices_file), 0) == 0)
      throw config_error("--prices", e.what(), e.kind());
    throw;
  }
}

}  // namespace

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

namespace {

// --export: the launch config of the first-ranked layout (or, for vllm, of the serving
// run as given), written to --export-file or returned for stdout / the "export" member.
struct export_output {
  std::string text;   // empty when written to a file
  std::string notes;  // "Checked against ... Fill in: ..."
  nlohmann::json json;
};
export_output export_plan(const io::resolved_run& run, const search_request& request, const search_result* r) {
  const io::export_target target = io::parse_export_target(request.export_target, "--export");
  io::launch_config launch;
  nlohmann::json j{{"target", request.export_target}};
  if (r == nullptr) {
    launch = io::export_launch(run, target, "--export");
  } else {
    if (r->rows.empty()) throw config_error("--export", "no layout fits: nothing to export", error_kind::does_not_fit);
    // The first-ranked layout the target can express; when none can, the first one's error.
    std::optional<config_error> first_error;
    for (std::size_t i = 0; i < r->rows.size() && launch.text.empty(); ++i) {
      try {
        launch = io::export_launch(run, r->rows[i].config, target, "--export");
        j["layout"] = i + 1;
      } catch (const config_error& e) {
        if (!first_error) first_error = e;
      }
    }
    if (launch.text.empty()) throw *first_error;
    if (first_error) j["skipped"] = std::string(first_error->what()).substr(std::string("--export: ").size());
  }
  if (target == io::export_target::deepspeed) j["config"] = nlohmann::json::parse(launch.text);
  j["text"] = launch.text;
  j["fill_in"] = launch.fill_in;
  j["checked_against"] = launch.checked_against;
  // What the user must still supply, and the version the names were checked against.
  std::string notes = "Checked against " + launch.checked_against + ". Fill in:\n";
  for (const std::string& f : launch.fill_in) notes += "  - " + f + "\n";
  if (request.export_file.empty()) return {launch.text, notes, j};
  std::ofstream out(request.export_file, std::ios::binary);
  if (out) out << launch.text;
  if (!out || !out.flush())
    throw config_error("--export-file", "cannot write file '" + request.export_file + "'", error_kind::io_error);
  j["file"] = request.export_file;
  return {"", notes, j};
}

}  // namespace

int run_search(const io::resolved_run& run, const search_request& request, const io::style& style) {
  if (request.export_target.empty() && !request.export_file.empty())
    throw config_error("--export-file", "needs --export (got '" + request.export_file + "')");
  // A serving run has no layouts to search: vllm exports the run as given.
  if (request.export_target == "vllm" && !run.run.training()) {
    const export_output e = export_plan(run, request, nullptr);
    if (style.format == io::report_format::json) print_json({{"model", run.model().name}, {"export", e.json}});
    else print((e.text.empty() ? "Wrote vllm command to " + request.export_file + "\n" : e.text) + e.notes);
    return 0;
  }
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
    if (!request.export_target.empty()) j["export"] = export_plan(run, request, &r).json;
    print_json(j);
    return 0;
  }
  const bool md = style.format == io::report_format::markdown;
  std::string text = std::string(md ? "### " : "") + io::printable(run.model().name) + " on " +
                     std::to_string(run.settings().num_gpus) + " × " + io::printable(run.settings().gpu.name) + "\n" +
                     io::run_summary(run.settings()) + " (template)\n\n";
  text += io::render(io::search_table(r, o.objective), style);
  if (const framework_profile& f = profile_of(run.settings().fw); !f.tensor_parallel)
    text += "Layouts " + std::string(to_string(run.settings().fw)) +
            " can launch: data parallel with its ZeRO/FSDP stages (--framework megatron for tensor and pipeline parallelism).\n";
  if (!request.export_target.empty()) {
    const export_output e = export_plan(run, request, &r);
    const std::string which = "layout " + e.json["layout"].dump() +
                              (e.json.contains("skipped") ? " (layout 1: " + e.json["skipped"].get<std::string>() + ")" : "");
    text += e.text.empty() ? "\nWrote the " + request.export_target + " config of " + which + " to " + request.export_file + "\n"
                           : "\n" + request.export_target + " config of " + which + ":\n" + std::string(md ? "```\n" : "") +
                                 e.text + (md ? "```\n" : "");
    text += e.notes;
  }
  print(text);
  return 0;
}

namespace {

// Money with three significant digits ($53,634 -> "$53,600").
std::string money(double v) {
  if (!(std::fabs(v) >= 1000) || !std::isfinite(v)) return "$" + io::format_number(v);
  const double scale = std::pow(10.0, std::floor(std::log10(std::fabs(v))) - 2);
  return "$" + io::format_number(std::round(v / scale) * scale);
}

std::string global_batch_reason(const architecture& m, const scenario& s, const recommend_request& request,
                                std::int64_t gb, double tokens) {
  if (request.global_batch) return "--global-batch";
  if (s.global_batch() > 1) return "--batch × --grad-accum";
  (void)m;
  if (is_pretraining(s, tokens))
    return "pre-training default: ~" + io::format_number(static_cast<double>(gb * s.seq_len) / 1e6) +
           "M tokens per step (GPT-3 Table 2.1, Llama 2 §2.2); set --global-batch";
  return "fine-tuning default: 16-128 sequences, ~64k tokens per step (QLoRA Table 9, Alpaca); set --global-batch";
}

}  // namespace

namespace {

// `gpuplan recommend MODEL --serve`: GPU types x TP sizes for R requests/s under an ITL target.
int run_recommend_serving(const io::resolved_run& run, const recommend_request& request, const io::style& style) {
  if (!request.requests_per_second) throw config_error("--requests-per-second", "recommend --serve needs the request rate: --requests-per-second 5");
  const int max_gpus = request.max_gpus.value_or(64);
  if (max_gpus < 1 || max_gpus > 64)
    throw config_error("--max-gpus", "must be between 1 and 64 with --serve (got " + std::to_string(max_gpus) + ")");
  if (request.top_k < 1 || request.top_k > 100000)
    throw config_error("--top", "must be between 1 and 100000 (got " + std::to_string(request.top_k) + ")");
  const scenario& s = run.settings();
  serve_workload w;
  w.requests_per_second = io::checked_request_rate(*request.requests_per_second, "--requests-per-second");
  w.prompt_len = s.inference.prompt_len;
  w.output_len = s.inference.gen_len;
  w.itl_target = seconds(io::parse_latency(request.itl_target, "--itl-target"));
  // The cheapest published offer per GPU-hour, then the user's --price over it.
  const recommend_options market = market_of(request);
  const serve_recommendation r = recommend_serving(run.model(), s, w, market.gpus, io::hourly_prices(market), std::min(max_gpus, 8));
  std::size_t meeting = 0;
  for (const serve_option& o : r.rows) meeting += o.meets ? 1 : 0;
  if (style.format == io::report_format::json) {
    print_json(io::serve_recommend_json(run.model().name, s.inference.eng, r));
    return meeting > 0 ? 0 : 1;
  }
  const bool md = style.format == io::report_format::markdown;
  print(std::string(md ? "### " : "") + io::serve_recommend_summary(run.model().name, s.inference.eng, r) + "\n" +
        io::render(io::serve_recommend_table(r, request.top_k), style));
  return meeting > 0 ? 0 : 1;
}

}  // namespace

// The candidates, prices and limits every training recommendation shares: --price, --prices,
// --spot, --kwh-price, --gpus-list, --deadline, --budget, --max-gpus (default `max_gpus`),
// --rank and --top.
recommend_options market_options(const recommend_request& request, int max_gpus) {
  recommend_options o = market_of(request);
  o.margin = request.margin;
  if (request.kwh_price) {
    if (!(*request.kwh_price >= 0) || !std::isfinite(*request.kwh_price) || *request.kwh_price > 100)
      throw config_error("--kwh-price", "must be a number between 0 and 100 per kWh (got " + detail::num(*request.kwh_price) + ")");
    o.kwh_price = *request.kwh_price;
  }
  o.deadline = seconds(io::parse_duration(request.deadline, "--deadline"));
  // 1e12: a trillion in any currency, beyond every compute budget there is.
  if (request.budget && (!(*request.budget >= 0) || !std::isfinite(*request.budget) || *request.budget > 1e12))
    throw config_error("--budget", "must be a number between 0 and 1e12 (got " + detail::num(*request.budget) + ")");
  o.budget = request.budget;
  o.max_gpus = request.max_gpus.value_or(max_gpus);
  if (o.max_gpus < 1 || o.max_gpus > 4096)
    throw config_error("--max-gpus", "must be between 1 and 4096 (got " + std::to_string(o.max_gpus) + ")");
  if (request.top_k < 1 || request.top_k > 100000)
    throw config_error("--top", "must be between 1 and 100000 (got " + std::to_string(request.top_k) + ")");
  return o;
}

std::string prices_source(const recommend_request& request) {
  return std::string("prices: ") + (request.spot ? "spot where published, else on-demand" : "on-demand") +
         " (src/data/prices.csv, dated rows" + (request.prices_file.empty() ? "" : ", with " + request.prices_file) +
         (request.prices.empty() ? "" : ", --price") + ")";
}

std::string prices_line(const recommend_request& request, const recommend_options& o) {
  return prices_source(request) + "; electricity $" + io::format_number(o.kwh_price) + "/kWh\n";
}

namespace {

// The limits of a training recommendation: market_options plus --global-batch, the
// tokens to train (--tokens, or --epochs over --dataset-tokens).
recommend_options training_options(const io::resolved_run& run, const recommend_request& request) {
  recommend_options o = market_options(request, 64);
  if (request.global_batch) {
    if (*request.global_batch < 1 || *request.global_batch > kMaxBatch)
      throw config_error("--global-batch", "must be between 1 and " + std::to_string(kMaxBatch) + " (got " +
                                               std::to_string(*request.global_batch) + ")");
    o.global_batch = request.global_batch;
  }
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
  if (!run.settings().tokens && !o.dataset_tokens) throw config_error("--tokens", "recommend needs --tokens (or --epochs with --dataset-tokens)");
  return o;
}

// "No row meets the deadline: ..." — what more GPUs would do (more_gpus_for_deadline);
// `total` rows were ranked, `gb` is the global batch.
std::string more_gpus_text(const deadline_extrapolation& more, const recommend_options& o, const io::resolved_run& run,
                           std::size_t total, std::int64_t gb) {
  std::string more_text;
  // GPU counts as whole numbers with thousands separators ("1,024"), like the rest of the output.
  auto gpus = [](double n) { return io::format_count(std::llround(n)); };
  const std::string measured = gpus(more.measured_count) + "×" + io::printable(more.gpu.id) + " takes " +
                               io::format_seconds(more.measured_wall);
  // No row at all (nothing fits at or below --max-gpus): the modelled count is also the
  // measured one (more_gpus_for_deadline), so the answer is said once.
  if (more.count && more.modelled && total == 0)
    more_text = "No row at or below --max-gpus " + gpus(o.max_gpus) + " meets the deadline: " +
                gpus(*more.count) + "×" + io::printable(more.gpu.id) + " would, in " + io::format_seconds(more.wall) +
                (more.cost ? " for " + money(*more.cost) : "") + " (the model's best layout at that count).";
  else if (more.count && more.modelled)
    more_text = "No row meets the deadline: " + gpus(*more.count) + "×" + io::printable(more.gpu.id) + " would, in " +
                io::format_seconds(more.wall) + (more.cost ? " for " + money(*more.cost) : "") +
                " (the model's best layout at that count, beyond --max-gpus); " + measured + ".";
  else if (more.count)
    more_text = "No row meets the deadline: needs ~" + gpus(*more.count) + "×" + io::printable(more.gpu.id) + " for " +
                io::format_seconds(o.deadline) + "; " + measured + " (extrapolated: wall-clock ∝ GPUs^-" +
                io::format_number(more.exponent, 2) +
                (more.exponent_measured ? ", the scaling of its two largest counts" : ", linear scaling assumed") + ").";
  else
    more_text = "No row meets the deadline, and more " + io::printable(more.gpu.id) + "s do not help: " + measured + ".";
  if (!more.modelled && !profile_of(run.settings().fw).tensor_parallel)
    more_text += " Data parallelism stops at the global batch (" + std::to_string(gb) +
                 "): a larger --global-batch, or --framework megatron for tensor/pipeline parallelism, lets more GPUs help.";
  return more_text;
}

nlohmann::json more_gpus_json(const std::optional<deadline_extrapolation>& more) {
  nlohmann::json x = nullptr;
  if (more)
    x = {{"gpu", more->gpu.id},
         {"measured_count", more->measured_count},
         {"measured_wall_seconds", in_seconds(more->measured_wall)},
         {"exponent", more->exponent},
         {"exponent_measured", more->exponent_measured},
         {"count", more->count ? nlohmann::json(*more->count) : nlohmann::json(nullptr)},
         {"extrapolated", !more->modelled},
         {"wall_seconds", more->modelled ? nlohmann::json(in_seconds(more->wall)) : nlohmann::json(nullptr)},
         {"cost", more->cost ? nlohmann::json(*more->cost) : nlohmann::json(nullptr)}};
  return x;
}

// The ranked rows of a training recommendation and what the output says about them.
struct recommend_outcome {
  std::vector<recommendation> rows;  // at most --top
  std::size_t total = 0;             // rows ranked
  std::int64_t gb = 0;               // the global batch
  double tokens = 0;
  std::string gb_reason;
  std::optional<deadline_extrapolation> more;
  std::string more_text;
};

recommend_outcome recommend_rows(const io::resolved_run& run, const recommend_request& request, const recommend_options& o) {
  recommend_outcome out;
  try {
    out.gb = recommend_global_batch(run.model(), run.settings(), o);
    out.rows = recommend(run.run, o);
  } catch (const config_error& e) {
    const std::string path = e.path();
    const std::string what = e.what();
    const std::string reason = what.size() > path.size() + 2 ? what.substr(path.size() + 2) : what;
    if (path == "recommend.budget") throw config_error("--budget", reason, e.kind());
    throw;
  }
  out.more = more_gpus_for_deadline(run.run, o, out.rows);
  out.total = out.rows.size();
  if (out.rows.size() > request.top_k) out.rows.resize(request.top_k);
  out.tokens = o.dataset_tokens ? o.epochs * *o.dataset_tokens : run.settings().tokens.value_or(0);
  out.gb_reason = global_batch_reason(run.model(), run.settings(), request, out.gb, out.tokens);
  if (out.more) out.more_text = more_gpus_text(*out.more, o, run, out.total, out.gb);
  return out;
}

}  // namespace

int run_recommend(const io::resolved_run& run, const recommend_request& request, const io::style& style) {
  if (request.serve) return run_recommend_serving(run, request, style);
  const recommend_options o = training_options(run, request);
  const recommend_outcome r = recommend_rows(run, request, o);
  if (style.format == io::report_format::json) {
    nlohmann::json j = {{"model", run.model().name},
                        {"method", to_string(run.settings().meth)},
                        {"tokens", r.tokens},
                        {"global_batch", r.gb},
                        {"global_batch_source", r.gb_reason},
                        {"deadline_seconds", in_seconds(o.deadline)},
                        {"budget", o.budget ? nlohmann::json(*o.budget) : nlohmann::json(nullptr)},
                        {"price_kind", request.spot ? "spot" : "on-demand"},
                        {"kwh_price", o.kwh_price},
                        {"rank_by", request.rank},
                        {"total_rows", r.total},
                        {"deadline_extrapolation", more_gpus_json(r.more)},
                        {"rows", io::recommend_json(r.rows)}};
    print_json(j);
    return 0;
  }
  const bool md = style.format == io::report_format::markdown;
  std::string text = std::string(md ? "### " : "") + io::printable(run.model().name) + ": " + io::format_number(r.tokens) +
                     " tokens, global batch " + std::to_string(r.gb) + " sequences (" + r.gb_reason + "), " +
                     io::run_summary(run.settings(), true) + " (template)\n";
  text += prices_line(request, o);
  if (o.budget) text += "budget " + money(*o.budget) + "\n";
  if (!r.more_text.empty()) text += r.more_text + "\n";
  text += "\n";
  io::table t = io::recommend_table(r.rows, o.deadline);
  if (r.total > r.rows.size())
    t.notes.push_back("showing " + std::to_string(r.rows.size()) + " of " + std::to_string(r.total) + " rows (--top)");
  text += io::render(t, style);
  print(text);
  return 0;
}

// `gpuplan recommend resnet-50|sd-2.1|--graph FILE`: GPU types × counts for a layer-graph
// model under DDP (plan/graph_recommend.hpp), from its published recipe unless overridden.
int run_recommend_graph(io::graph_recommend_query q, const recommend_request& request, const io::style& style) {
  if (request.serve) throw config_error("--serve", "serving is planned for language models only (got '" + q.model + "')");
  if (request.dataset_tokens)
    throw config_error("--dataset-tokens", "does not apply to image and diffusion models: give --images (got " + *request.dataset_tokens + ")");
  const recommend_options o = market_options(request, 8);
  q.epochs = request.epochs;
  q.global_batch = request.global_batch;
  q.flag_prefix = "--";
  const io::graph_plan plan = io::graph_plan_of(q);
  std::vector<graph_recommendation> rows = recommend_graph(plan.workload, o);
  const std::size_t total = rows.size();
  if (rows.size() > request.top_k) rows.resize(request.top_k);
  if (style.format == io::report_format::json) {
    print_json(io::graph_recommend_document(plan, rows, o, total, request.spot));
    return 0;
  }
  const bool md = style.format == io::report_format::markdown;
  std::string text = std::string(md ? "### " : "") + plan.summary + "\n" + prices_line(request, o);
  if (o.budget) text += "budget " + money(*o.budget) + "\n";
  text += "\n";
  io::table t = io::graph_recommend_table(rows, o.deadline, plan.settings.value("zero", 0));
  if (total > rows.size()) t.notes.push_back("showing " + std::to_string(rows.size()) + " of " + std::to_string(total) + " rows (--top)");
  text += io::render(t, style);
  print(text);
  return 0;
}

}  // namespace gpuplan::cli
