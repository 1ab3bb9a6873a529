// explain.cpp — `gpuplan explain`: each term of the estimate with its value, formula and
// source, and the framework profile's rules (io/report.hpp explain_report).
#include "command.hpp"

#include <string>

#include "gpuplan/framework.hpp"
#include "gpuplan/framework_rules.hpp"

namespace gpuplan::cli {
using nlohmann::json;

namespace {

int cmd_explain(run_args& a, const output_args& out) {
  load_extra_gpus(a);
  const io::style st = make_style(out);
  const io::resolved_run r = build_run(a, nullptr);
  if (st.format != io::report_format::json) {
    print(io::explain_report(r, st));
    return kExitOk;
  }
  const json e = io::estimate_json(r);
  json terms = json::array();
  auto lookup = [&](const std::string& k) -> json {
    if (e["memory"].contains(k)) return e["memory"][k];
    if (e["time"].contains(k)) return e["time"][k];
    if (e["time"]["breakdown"].contains(k)) return e["time"]["breakdown"][k];
    return json();
  };
  for (const auto* list : {&io::memory_terms(), &io::time_terms()})
    for (const auto& t : *list) {
      const std::string key(t.key);
      const bool present = e["memory"].contains(key) || e["time"].contains(key) || e["time"]["breakdown"].contains(key);
      if (!present) continue;
      terms.push_back({{"key", key}, {"label", t.label}, {"value", lookup(key)}, {"formula", t.formula}, {"source", t.source}});
    }
  json rules = json::array();
  for (const gpuplan::framework_rule& x : gpuplan::framework_rules(r.model(), r.settings()))
    rules.push_back({{"terms", x.terms}, {"rule", x.rule}, {"effect", x.effect}, {"source", x.source}});
  const gpuplan::framework_profile& fp = gpuplan::profile_of(r.settings().fw);
  json framework = {{"id", gpuplan::to_string(fp.id)}, {"summary", fp.summary}, {"rules", std::move(rules)}};
  print_json({{"model", e["model"]}, {"scenario", e["scenario"]}, {"framework", std::move(framework)}, {"terms", std::move(terms)}});
  return kExitOk;
}

}  // namespace

command register_explain(CLI::App& app, context& ctx) {
  auto* sub = app.add_subcommand("explain", "Each term of the estimate with its formula and source");
  add_run_options(sub, ctx.args, true, false);
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n  gpuplan explain llama-2-13b --gpu rtx-4090 --method qlora\n"
                          "  gpuplan explain --scenario run.json --format markdown\n") +
              kExitCodes);
  return {sub, [&ctx] { return cmd_explain(ctx.args, ctx.out); }};
}

}  // namespace gpuplan::cli
