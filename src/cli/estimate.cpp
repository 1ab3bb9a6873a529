// estimate.cpp — `gpuplan estimate`: the whole estimate (memory and time) of a scenario,
// as io/report.hpp's estimate_json or estimate_report.
#include "command.hpp"

namespace gpuplan::cli {

namespace {

int cmd_estimate(run_args& a, const output_args& out) {
  load_extra_gpus(a);
  const io::style st = make_style(out);
  const io::resolved_run r = build_run(a, nullptr);
  if (st.format == io::report_format::json) print_json(io::estimate_json(r));
  else print(io::estimate_report(r, st));
  return kExitOk;
}

}  // namespace

command register_estimate(CLI::App& app, context& ctx) {
  auto* sub = app.add_subcommand("estimate", "The whole estimate (memory and time) of a scenario");
  add_run_options(sub, ctx.args, true, false);
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n  gpuplan estimate --scenario run.json --json\n"
                          "  gpuplan estimate llama-2-13b --gpu a100-80gb --method lora\n") +
              kExitCodes);
  return {sub, [&ctx] { return cmd_estimate(ctx.args, ctx.out); }};
}

}  // namespace gpuplan::cli
