// time.cpp — `gpuplan time`: step time, tokens/s, MFU/HFU, time to train, GPU-hours,
// cost and energy of a run, with its memory verdict.
#include "command.hpp"

#include <string>

#include "gpuplan/bands.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/timing.hpp"

namespace gpuplan::cli {

namespace {

int cmd_time(run_args& a, const output_args& out) {
  load_extra_gpus(a);
  const io::style st = make_style(out);
  const io::resolved_run r = build_run(a, nullptr);
  if (st.format == io::report_format::json) {
    print_json(io::estimate_json(r));
    return kExitOk;
  }
  const gpuplan::time_estimate t = gpuplan::estimate_time(r.run);
  const gpuplan::memory_breakdown mem = gpuplan::estimate_memory(r.run);
  const bool md = st.format == io::report_format::markdown;
  std::string text = std::string(md ? "### " : "") + io::printable(r.model().name) + " on " +
                     std::to_string(r.settings().num_gpus) + " × " + io::printable(r.settings().gpu.name) + "\n" + io::run_summary(r.settings()) + "\n\n";
  text += io::time_report(t, r.settings(), st);
  text += "\nmemory: " + io::verdict_line(mem, gpuplan::bands_of(r.run, mem), st) + "\n";
  for (const auto& w : io::warning_messages(t.warnings | mem.warnings)) text += "warning: " + w + "\n";
  print(text);
  return kExitOk;
}

}  // namespace

command register_time(CLI::App& app, context& ctx) {
  auto* sub = app.add_subcommand("time", "Step time, tokens/s, MFU/HFU, time to train, GPU-hours, cost, energy");
  add_run_options(sub, ctx.args, true, false);
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n"
                          "  gpuplan time llama-2-7b --gpu a100-80gb --gpus 64 --tokens 1T --price 2.0\n"
                          "  gpuplan time llama-3-70b --gpu h100-sxm --gpus 512 --tp 8 --pp 4 --tokens 300B\n"
                          "  gpuplan time llama-2-7b --gpu rtx-4090 --infer --infer-batch 8\n") +
              kExitCodes);
  return {sub, [&ctx] { return cmd_time(ctx.args, ctx.out); }};
}

}  // namespace gpuplan::cli
