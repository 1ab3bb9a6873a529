// report/rl_recommend.cpp — io/rl_report.hpp's recommendation: which GPU and how many for an RL
// run (plan/rl_recommend.hpp) over a market's candidates and prices, as JSON, a table and the
// line above it. `gpuplan rl --recommend` and gp.rl_recommend print through these.
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpuplan/io/prices.hpp"
#include "gpuplan/io/rl_report.hpp"
#include "gpuplan/plan/recommend.hpp"

namespace gpuplan::io {

namespace rl_report_detail {  // defined in report/rl.cpp
std::string gib_cell(Bytes b);
std::string upper(std::string_view s);
const rl_phase& peak_of(const rl_estimate& e);
}  // namespace rl_report_detail

namespace rl_recommend_detail {

using json = nlohmann::json;

using rl_report_detail::peak_of;

// Price x GPUs x step / 3600 over the step's tokens (tokens/s per GPU x GPUs x step), per 1e6 tokens.
std::optional<double> cost_per_million_tokens(const rl_option& o) {
  const double tokens = o.estimate.tokens_per_second_per_gpu * o.estimate.gpus * in_seconds(o.estimate.step);
  if (!o.cost_per_step || !(tokens > 0)) return std::nullopt;
  return *o.cost_per_step / tokens * 1e6;
}

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json row_json(const rl_option& o, const rl_recommend_request& q) {
  const rl_estimate& e = o.estimate;
  return {{"gpu", o.gpu.id},
          {"gpus", o.gpus},
          {"rollout_gpus", e.rollout_gpus},
          {"peak_phase", std::string(peak_of(e).name)},
          {"device_bytes", in_bytes(e.device)},
          {"capacity_bytes", in_bytes(e.capacity)},
          {"headroom_bytes", in_bytes(e.headroom)},
          {"headroom_kept_bytes", in_bytes(q.headroom_kept(e.capacity))},
          {"step_seconds", in_seconds(e.step)},
          {"tokens_per_second_per_gpu", e.tokens_per_second_per_gpu},
          {"price_per_gpu_hour", optional_json(o.price_per_gpu_hour)},
          {"cost_per_step", optional_json(o.cost_per_step)},
          {"cost_per_million_tokens", optional_json(cost_per_million_tokens(o))}};
}

// The candidates with no row: no count up to max_gpus fits (or none can be laid out).
std::vector<std::string> not_fitting(const rl_recommendation& r) {
  std::vector<std::string> out;
  for (const gpu_spec& g : r.request.gpus) {
    bool found = false;
    for (const rl_option& o : r.rows) found = found || o.gpu.id == g.id;
    if (!found) out.push_back(g.id);
  }
  return out;
}

std::string money(const std::optional<double>& v) { return v ? "$" + format_number(*v) : std::string("-"); }

// "8", or "8 + 8 rollout" when the engine runs on GPUs of its own.
std::string gpus_cell(const rl_option& o) {
  const int rollout = o.estimate.rollout_gpus;
  return std::to_string(o.gpus) + (rollout > 0 ? " + " + std::to_string(rollout) + " rollout" : "");
}

}  // namespace rl_recommend_detail

rl_recommendation recommend_rl(const rl_input& in, const recommend_options& market) {
  rl_recommendation r{in, {}, {}};
  r.request.gpus = market.gpus;
  r.request.max_gpus = market.max_gpus;
  r.request.headroom_fraction = market.margin.headroom_fraction;
  r.request.headroom_min = market.margin.headroom_min;
  r.request.prices = hourly_prices(market);
  r.rows = gpuplan::recommend_rl(*in.policy.model, in.policy.settings, in.config, r.request);
  return r;
}

nlohmann::json rl_recommend_json(const rl_recommendation& r) {
  using namespace rl_recommend_detail;
  const resolved_run actor = actor_run(r.input);
  json j;
  j["model"] = {{"name", actor.model().name}, {"parameters", actor.run.parameters().total}};
  j["algorithm"] = to_string(r.input.config.algo);
  j["framework"] = to_string(r.input.config.fw);
  j["max_gpus"] = r.request.max_gpus;
  j["headroom_fraction"] = r.request.headroom_fraction;
  j["headroom_min_bytes"] = in_bytes(r.request.headroom_min);
  j["candidates"] = json::array();
  for (const gpu_spec& g : r.request.gpus) j["candidates"].push_back(g.id);
  j["not_fitting"] = not_fitting(r);
  j["recommendations"] = json::array();
  for (const rl_option& o : r.rows) j["recommendations"].push_back(row_json(o, r.request));
  return j;
}

table rl_recommend_table(const rl_recommendation& r) {
  using namespace rl_recommend_detail;
  using rl_report_detail::gib_cell;
  table t;
  t.header = {"GPU", "GPUs", "Peak phase", "Device (GiB)", "Headroom (GiB)", "Step", "Tokens/s/GPU", "$/GPU-h", "$/step", "$/M tokens"};
  for (const rl_option& o : r.rows) {
    const rl_estimate& e = o.estimate;
    t.rows.push_back({o.gpu.id, gpus_cell(o), std::string(peak_of(e).name), gib_cell(e.device), gib_cell(e.headroom),
                      format_seconds(e.step), format_number(e.tokens_per_second_per_gpu), money(o.price_per_gpu_hour),
                      money(o.cost_per_step), money(cost_per_million_tokens(o))});
  }
  t.right_align = {false, true, false, true, true, true, true, true, true, true};
  t.notes.push_back("Cheapest step first where priced (then by step time); $/M tokens: prompt + completion tokens of the step.");
  if (const auto none = not_fitting(r); !none.empty()) {
    std::string ids;
    for (const std::string& id : none) ids += (ids.empty() ? "" : ", ") + printable(id);
    t.notes.push_back("No count up to " + std::to_string(r.request.max_gpus) + " fits: " + ids + ".");
  }
  return t;
}

std::string rl_recommend_summary(const rl_recommendation& r) {
  const resolved_run actor = actor_run(r.input);
  return printable(actor.model().name) + " (" + format_params(actor.run.parameters().total) + " parameters): " +
         rl_report_detail::upper(to_string(r.input.config.algo)) + " under " + std::string(to_string(r.input.config.fw)) +
         "; per GPU type the fewest GPUs (1, 2, 4, ... up to " + std::to_string(r.request.max_gpus) +
         ") whose every phase fits with max(" + detail::num(100 * r.request.headroom_fraction) + "% of usable, " +
         detail::num(in_gib(r.request.headroom_min)) + " GiB) free\n";
}

}  // namespace gpuplan::io
