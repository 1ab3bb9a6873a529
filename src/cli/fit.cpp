// fit.cpp — `gpuplan fit`: will it fit? The per-GPU memory table of one or more methods,
// the verdict under the planning margin, fit's limits and "what would make it fit".
// Exit 0 fits, 1 does not fit, 3 tight.
#include "command.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gpuplan/bands.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/plan.hpp"

namespace gpuplan::cli {
using nlohmann::json;

namespace {

// fit as text or markdown: the memory table of every method, one verdict line each, the
// limits and, for each run that does not fit with the margin, what would make it fit.
std::string fit_text(const std::vector<io::resolved_run>& runs, const std::vector<io::labelled_memory>& cols,
                     const std::vector<gpuplan::memory_bands>& bands, const gpuplan::plan_margin& margin,
                     const io::style& st) {
  const auto& first = runs.front();
  const bool md = st.format == io::report_format::markdown;
  std::string text = std::string(md ? "### " : "") + io::printable(first.model().name) + " (" +
                     io::format_params(gpuplan::count_parameters(first.model()).total) + " parameters) on " +
                     std::to_string(first.settings().num_gpus) + " × " + io::printable(first.settings().gpu.name) + "\n";
  text += io::run_summary(first.settings(), runs.size() == 1) + "\n\n";
  io::table t = io::memory_table(cols, first.settings().work);
  text += io::render(t, st) + "\n";
  gpuplan::warning_set warnings = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs.size() > 1) text += (md ? "- **" + cols[i].label + "**: " : cols[i].label + ": ");
    text += io::verdict_line(cols[i].memory, bands[i], st, margin) + "\n";
    warnings |= cols[i].memory.warnings;
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    io::table limits = gpuplan::cli::limits_of(runs[i], margin).table;
    if (runs.size() > 1) limits.title += " (" + cols[i].label + ")";
    text += "\n" + io::render(limits, st);
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (gpuplan::verdict_of(cols[i].memory, bands[i], margin) == gpuplan::verdict::fits) continue;
    if (auto s = gpuplan::cli::what_would_make_it_fit(runs[i], margin)) {
      s->table.title = "What would make " + cols[i].label + " fit";
      text += "\n" + io::render(s->table, st);
    }
  }
  for (const auto& w : io::warning_messages(warnings)) text += "warning: " + w + "\n";
  return text;
}

// --max-context and --max-context-gpus N (the ladder's top; implies --max-context).
struct context_request {
  bool on = false;
  int ladder_gpus = 0;
  CLI::Option* gpus_opt = nullptr;
};

// fit --max-context: the largest trainable context of the one run (plan/max_context.hpp), the
// memory table at that length and, on several GPUs, the ladder. Exit 0 when a length fits, else 1.
int cmd_max_context(run_args& a, const context_request& c, const gpuplan::plan_margin& margin, const io::style& st) {
  const std::string flag = c.on ? "--max-context" : "--max-context-gpus";
  std::vector<std::string> methods;
  if (a.methods_opt != nullptr && a.methods_opt->count() > 0) methods = split_methods(a.methods);
  if (methods.size() > 1) throw config_error(flag, "takes one method (got '" + a.methods + "')");
  const io::resolved_run r = build_run(a, methods.empty() ? nullptr : &methods.front());
  if (!r.run.training())
    throw config_error(flag, "answers training runs; `gpuplan serve` prints a serving run's largest context (got workload infer)");
  gpuplan::max_context_options o;
  o.margin = margin;
  o.ladder_gpus = c.gpus_opt->count() > 0 ? c.ladder_gpus : r.settings().num_gpus;
  if (o.ladder_gpus < 1 || o.ladder_gpus > gpuplan::kMaxGpus)
    throw config_error("--max-context-gpus", "must be between 1 and " + std::to_string(gpuplan::kMaxGpus) + " (got " +
                                                 std::to_string(o.ladder_gpus) + ")");
  const gpuplan::max_context_report mc = gpuplan::max_context(r.run, o);
  const int exit_code = mc.tokens ? kExitOk : kExitDoesNotFit;
  if (st.format == io::report_format::json) {
    print_json({{"model", r.model().name}, {"gpu", r.settings().gpu.id}, {"num_gpus", r.settings().num_gpus},
                {"method", gpuplan::to_string(r.settings().meth)}, {"fits", mc.tokens.has_value()},
                {"max_context", io::max_context_json(mc)}});
    return exit_code;
  }
  const bool md = st.format == io::report_format::markdown;
  gpuplan::scenario at = r.settings();
  at.seq_len = mc.tokens.value_or(mc.step);
  std::string text = std::string(md ? "### " : "") + io::printable(r.model().name) + ": how long a context fits on " +
                     std::to_string(at.num_gpus) + " × " + io::printable(at.gpu.name) + "\n";
  text += io::run_summary(at) + "\n\n" + io::max_context_summary(mc, margin) + "\n";
  const std::string label = "at " + io::format_tokens(at.seq_len);
  gpuplan::run at_run = r.run;
  at_run.edit([&](gpuplan::scenario& x) { x.seq_len = at.seq_len; });
  const io::fit_answer answer = io::answer_of(mc.memory, gpuplan::bands_of(at_run, mc.memory), margin);
  text += io::render(io::memory_table({{label, mc.memory, answer}}, at.work), st);
  if (!mc.ladder.empty()) text += "\n" + io::render(io::context_ladder_table(mc), st);
  for (const auto& w : io::warning_messages(mc.memory.warnings)) text += "warning: " + w + "\n";
  print(text);
  return exit_code;
}

int cmd_fit(run_args& a, const output_args& out, const gpuplan::cli::margin_request& mr, const context_request& c) {
  load_extra_gpus(a);
  const io::style st = make_style(out);
  const gpuplan::plan_margin margin = gpuplan::cli::parse_margin(mr);
  if (c.on || c.gpus_opt->count() > 0) return cmd_max_context(a, c, margin, st);
  std::vector<std::string> methods;
  if (a.methods_opt != nullptr && a.methods_opt->count() > 0) methods = split_methods(a.methods);
  std::vector<io::resolved_run> runs;
  if (methods.empty()) runs.push_back(build_run(a, nullptr));
  for (const auto& m : methods) runs.push_back(build_run(a, &m));

  std::vector<io::labelled_memory> cols;
  std::vector<gpuplan::memory_bands> bands;
  bool all_fit = true;
  gpuplan::verdict worst = gpuplan::verdict::fits;
  json results = json::array();
  for (const auto& r : runs) {
    const gpuplan::memory_breakdown mem = gpuplan::estimate_memory(r.run);
    bands.push_back(gpuplan::bands_of(r.run, mem));
    // One answer per run: its verdict, fits = verdict != does_not_fit, the P50 headroom (io::answer_of).
    const io::fit_answer answer = io::answer_of(mem, bands.back(), margin);
    const gpuplan::verdict v = answer.state;
    worst = std::max(worst, v);
    all_fit = all_fit && answer.fits;
    cols.push_back({std::string(gpuplan::to_string(r.settings().meth)), mem, answer});
    if (st.format == io::report_format::json) {
      json j = io::estimate_json(r);
      json item = {{"method", gpuplan::to_string(r.settings().meth)},
                   {"model", j["model"]},
                   {"scenario", j["scenario"]},
                   {"memory", j["memory"]},
                   {"fits", answer.fits},
                   {"verdict", gpuplan::to_string(v)},
                   {"binding", gpuplan::to_string(gpuplan::largest_component(mem))},
                   {"warnings", io::warning_messages(mem.warnings)},
                   {"limits", gpuplan::cli::limits_of(r, margin).json},
                   {"suggestions", nullptr}};
      if (v != gpuplan::verdict::fits)
        if (auto s = gpuplan::cli::what_would_make_it_fit(r, margin)) item["suggestions"] = s->json;
      results.push_back(std::move(item));
    }
  }
  const int exit_code = worst == gpuplan::verdict::does_not_fit ? kExitDoesNotFit
                        : worst == gpuplan::verdict::tight       ? kExitTight
                                                                 : kExitOk;
  if (st.format == io::report_format::json) {
    print_json({{"fits", all_fit}, {"verdict", gpuplan::to_string(worst)}, {"results", std::move(results)}});
    return exit_code;
  }

  print(fit_text(runs, cols, bands, margin, st));
  return exit_code;
}

}  // namespace

command register_fit(CLI::App& app, context& ctx) {
  auto margin = std::make_shared<margin_request>();
  auto context = std::make_shared<context_request>();
  auto* sub = app.add_subcommand("fit", "Will it fit? Per-GPU memory breakdown, verdict, headroom, binding term");
  add_run_options(sub, ctx.args, true, true);
  add_margin_options(sub, *margin);
  sub->add_flag("--max-context", context->on,
                "The largest trainable sequence length at the micro-batch given, with its memory; per GPU count "
                "(context parallel where the framework runs it) with --gpus > 1 (docs/long-context.md)")
      ->group("Long context");
  context->gpus_opt = sub->add_option("--max-context-gpus", context->ladder_gpus,
                                      "The GPU-count ladder of --max-context up to N GPUs (1, 2, 4, ..., N; implies --max-context)")
                          ->group("Long context");
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n"
                          "  gpuplan fit llama-2-13b --gpu rtx-4090 --method full,lora,qlora\n"
                          "  gpuplan fit llama-3-8b --gpu a100-80gb --seq 8192 --batch 2 --checkpointing full\n"
                          "  gpuplan fit llama-2-70b --gpu h100-sxm --gpus 8 --zero 3 --json\n"
                          "  gpuplan fit llama-3.1-8b --gpu h100-sxm --framework deepspeed --zero 3 --max-context-gpus 8\n"
                          "With several methods, exit 1 when any of them does not fit, else 3 when any is tight.\n"
                          "--max-context: exit 0 when some length fits, 1 when none does.\n") +
              kExitCodes);
  return {sub, [margin, context, &ctx] { return cmd_fit(ctx.args, ctx.out, *margin, *context); }};
}

}  // namespace gpuplan::cli
