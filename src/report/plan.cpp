// report/plan.cpp — the planner's fit limits, "what would make it fit" and search
// results (plan.hpp) as JSON and tables.
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/plan_names.hpp"

namespace gpuplan::io {
using nlohmann::json;

namespace {

json opt_int(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

json scenario_of(const architecture& a, const scenario& s, const std::string& spec) {
  return write_scenario(resolved_run{run(a, s), spec});
}

std::string time_change_text(double r) {
  if (!std::isfinite(r)) return "n/a";
  const double d = (r - 1) * 100;
  if (std::fabs(d) < 0.5) return "same";
  return (d > 0 ? "+" : "−") + format_number(std::fabs(d), 2) + "% time";
}
std::string where_text(const suggestion& g) {
  switch (g.scope) {
    case suggestion_scope::own_card: return "your card";
    case suggestion_scope::more_cards: return std::to_string(g.run.num_gpus) + " × " + g.run.gpu.id;
    case suggestion_scope::other_gpu: return "rent or buy";
  }
  return "?";
}
std::string price_text(const suggestion& g) {
  if (!g.price_per_gpu_hour) return g.scope == suggestion_scope::other_gpu ? "no price" : "-";
  std::string out = "$" + format_number(*g.price_per_gpu_hour) + "/GPU-h";
  if (g.run_cost) out += "; run $" + format_number(*g.run_cost, 4);
  return out;
}
json opt_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

}  // namespace

std::string format_cuda(const std::optional<cuda_version>& v) {
  if (!v) return "-";
  return std::to_string(v->major) + "." + std::to_string(v->minor);
}

json fit_limits_json(const fit_report& f) {
  json mg = json::array();
  for (const auto& g : f.min_gpus)
    mg.push_back({{"zero", g.zero},
                  {"applicable", g.applicable},
                  {"gpus", g.gpus ? json(*g.gpus) : json(nullptr)},
                  {"searched_up_to", g.searched_up_to}});
  return {{"max_micro_batch", opt_int(f.max_micro_batch)},
          {"max_seq_len", opt_int(f.max_seq_len)},
          {"seq_step", f.seq_step},
          {"seq_limit", f.seq_limit},
          {"min_gpus", std::move(mg)}};
}

table fit_limits_table(const fit_report& f, const scenario& run) {
  table t;
  t.title = "Limits on " + run.gpu.id;
  t.header = {"Limit", "Value"};
  const bool infer = run.work == workload::infer;
  t.rows.push_back({infer ? "Largest serving batch" : "Largest micro-batch",
                    f.max_micro_batch ? std::to_string(*f.max_micro_batch) : std::string("none (1 does not fit)")});
  std::string seq = f.max_seq_len ? std::to_string(*f.max_seq_len) : std::string("none");
  if (f.max_seq_len && *f.max_seq_len + f.seq_step > f.seq_limit) seq += " (limit " + std::to_string(f.seq_limit) + ")";
  t.rows.push_back({infer ? "Longest prompt" : "Longest sequence", seq});
  for (const auto& g : f.min_gpus) {
    std::string v;
    if (!g.applicable) v = "n/a";
    else if (g.gpus) v = std::to_string(*g.gpus) + " × " + run.gpu.id;
    else v = "none up to " + std::to_string(g.searched_up_to);
    t.rows.push_back({"Min GPUs, ZeRO-" + std::to_string(g.zero), v});
  }
  t.right_align = {false, true};
  if (!infer)
    t.notes.push_back("Min GPUs keep the micro-batch, grad_accum and model parallelism (tp×pp×cp) of the run.");
  return t;
}

std::string margin_text(const plan_margin& g) {
  return std::string(g.confidence <= 0.5 ? "P50" : g.confidence <= 0.9 ? "P90" : "P99") + " plus " +
         (g.headroom_fraction > 0 ? report_detail::pct(g.headroom_fraction) + " or " : std::string()) +
         format_number(in_gib(g.headroom_min)) + " GiB, the larger,";
}

json suggestions_json(const std::vector<suggestion>& s, const architecture& a, const std::string& model_spec) {
  json arr = json::array();
  int rank = 1;
  for (const auto& g : s) {
    json changes = json::array();
    for (const auto k : g.changes) changes.push_back(to_string(k));
    arr.push_back({{"rank", rank++},
                   {"changes", std::move(changes)},
                   {"description", g.description},
                   {"fits", g.fits},
                   {"scope", to_string(g.scope)},
                   {"effect", to_string(g.effect)},
                   {"device_bytes", in_bytes(g.memory.device)},
                   {"device_quantile_bytes", g.device_quantile},
                   {"capacity_bytes", in_bytes(g.memory.capacity)},
                   {"headroom_bytes", in_bytes(g.memory.headroom)},
                   {"headroom_kept_bytes", in_bytes(g.headroom_kept)},
                   {"step_seconds", in_seconds(g.time.step)},
                   {"time_cost", finite_or_null(g.time_cost)},
                   {"time_change", finite_or_null(g.time_change)},
                   {"price_per_gpu_hour", opt_number(g.price_per_gpu_hour)},
                   {"run_cost", opt_number(g.run_cost)},
                   {"num_gpus", g.run.num_gpus},
                   {"gpu", g.run.gpu.id},
                   {"scenario", scenario_of(a, g.run, model_spec)}});
  }
  return arr;
}

table suggestions_table(const std::vector<suggestion>& s) {
  table t;
  t.title = "What would make it fit";
  t.header = {"#", "Where", "Change", "Peak", "Free at margin", "Time", "Price"};
  int rank = 1;
  for (const auto& g : s)
    t.rows.push_back({std::to_string(rank++), where_text(g), g.description,
                      format_number(in_gib(g.memory.device)) + " GiB of " + format_number(in_gib(g.memory.capacity)) + " GiB",
                      format_number((in_bytes(g.memory.capacity) - g.device_quantile) / (1024.0 * 1024.0 * 1024.0)) + " GiB",
                      time_change_text(g.time_change), price_text(g)});
  t.right_align = {true, false, false, true, true, true, false};
  if (s.empty()) t.notes.push_back("No single change, pair of changes or catalog GPU fits with the margin.");
  t.notes.push_back("Only changes that fit with the margin. Your card first (the same result before approximate "
                    "optimizer state, adapters and shorter sequences; then by time), then more of your cards, then "
                    "other GPUs by price (catalog on-demand $/GPU-hour; run cost when --tokens is given).");
  t.notes.push_back("Peak = estimated device memory; Free at margin = capacity − the band's quantile (P90 by "
                    "default); Time = wall-clock time per trained sample relative to the run.");
  return t;
}

json layout_json(const layout& l) {
  return {{"gpus", l.gpus},
          {"tp", l.tp},
          {"pp", l.pp},
          {"virtual_stages", l.virtual_stages},
          {"dp", l.dp()},
          {"micro_batch", l.micro_batch},
          {"grad_accum", l.grad_accum},
          {"checkpointing", to_string(l.ckpt)},
          {"zero", l.zero},
          {"sp", l.sp},
          {"offload_optimizer", to_string(l.offload_optimizer)},
          {"offload_params", to_string(l.offload_params)}};
}

json search_json(const search_result& r, const architecture& a, const std::string& model_spec,
                 search_objective objective) {
  json rows = json::array();
  int rank = 1;
  for (const auto& row : r.rows)
    rows.push_back({{"rank", rank++},
                    {"layout", layout_json(row.config)},
                    {"score", row.score},
                    {"device_bytes", in_bytes(row.memory.device)},
                    {"headroom_bytes", in_bytes(row.memory.headroom)},
                    {"step_seconds", in_seconds(row.time.step)},
                    {"tokens_per_second", row.time.tokens_per_second},
                    {"tokens_per_second_per_gpu", row.time.tokens_per_second_per_gpu},
                    {"mfu", row.time.mfu},
                    {"scenario", scenario_of(a, row.run, model_spec)}});
  return {{"rows", std::move(rows)},
          {"objective", to_string(objective)},
          {"global_batch", r.global_batch},
          {"evaluated", r.evaluated},
          {"fitting", r.fitting},
          {"infeasible", r.infeasible},
          {"pruned_time", r.pruned_time},
          {"rejected", r.rejected},
          {"memory_calls", r.memory_calls},
          {"time_calls", r.time_calls},
          {"threads", r.threads},
          {"seconds", r.seconds}};
}

table search_table(const search_result& r, search_objective objective) {
  table t;
  const bool cost = objective == search_objective::cost;
  t.title = std::string(cost ? "Cheapest" : "Fastest") + " layouts (global batch " + std::to_string(r.global_batch) + ")";
  t.header = {"#"};
  if (cost) t.header.push_back("GPUs");
  for (const char* h : {"tp", "pp", "v", "dp", "mb", "ga", "ckpt", "zero", "sp", "offload", "Device memory",
                        "Step time", "Tokens/s", "MFU"})
    t.header.emplace_back(h);
  if (cost) t.header.emplace_back("GPU-s/step");
  int rank = 1;
  for (const auto& row : r.rows) {
    const layout& l = row.config;
    std::vector<std::string> cells{std::to_string(rank++)};
    if (cost) cells.push_back(std::to_string(l.gpus));
    for (std::string c : {std::to_string(l.tp), std::to_string(l.pp), std::to_string(l.virtual_stages),
                          std::to_string(l.dp()), std::to_string(l.micro_batch), std::to_string(l.grad_accum),
                          std::string(to_string(l.ckpt)), std::to_string(l.zero), std::string(l.sp ? "on" : "off"),
                          report_detail::offload_text(l.offload_optimizer, l.offload_params), format_bytes(row.memory.device),
                          format_seconds(row.time.step), format_rate(row.time.tokens_per_second, "tokens"),
                          report_detail::pct(row.time.mfu)})
      cells.push_back(std::move(c));
    if (cost) cells.push_back(format_number(row.score));
    t.rows.push_back(std::move(cells));
  }
  t.right_align.assign(t.header.size(), true);
  const std::size_t ck = cost ? 8 : 7;  // ckpt, zero, sp, offload: left
  t.right_align[ck] = false;
  t.right_align[ck + 2] = false;
  t.right_align[ck + 3] = false;
  if (r.rows.empty()) t.notes.push_back("No layout fits.");
  t.notes.push_back("evaluated " + format_count(r.evaluated) + " configurations in " + format_number(r.seconds) +
                    " s (" + format_count(r.fitting) + " fit and were timed, " + format_count(r.infeasible) +
                    " do not fit, " + format_count(r.pruned_time) + " pruned by a time bound; " +
                    std::to_string(r.threads) + (r.threads == 1 ? " thread)" : " threads)"));
  return t;
}

}  // namespace gpuplan::io
