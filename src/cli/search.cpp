// search.cpp — `gpuplan search` and its alias `gpuplan plan`: the fastest (or cheapest)
// parallel layouts of a model on N GPUs, and --export of the first one's launch config
// (hooks.hpp run_search).
#include "command.hpp"

#include "gpuplan/error.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gpuplan::cli {

namespace {

// search and plan: the same flags and handler, each bound to its own request.
command add_search_command(CLI::App& app, context& ctx, const char* name) {
  struct state {
    search_request req;
    std::optional<std::int64_t> global_batch;
    run_args args;  // the flags build the template run exactly as for fit/time
    margin_request margin;
  };
  auto s = std::make_shared<state>();
  auto* sub = app.add_subcommand(name, std::string_view(name) == "plan"
                                           ? "Alias of 'search': fastest parallel layouts on N GPUs"
                                           : "Fastest (or cheapest) parallel layouts for a model on N GPUs");
  add_run_options(sub, s->args, true, false, {"--global-batch"});
  sub->add_option("--global-batch", s->global_batch, "Sequences per optimizer step (default: the run's micro-batch × grad_accum × GPUs)")
      ->group("Search");
  sub->add_option("--top,-k", s->req.top_k, "Layouts to show (default 10)")->group("Search");
  sub->add_option("--threads,-j", s->req.threads, "Search threads (results do not depend on it; default 1)")
      ->group("Search");
  sub->add_option("--objective", s->req.objective, "time (step time on N GPUs) or cost (GPU-seconds, any count dividing N)")
      ->group("Search");
  sub->add_option("--export", s->req.export_target,
                  "Write the launch config of the first layout: deepspeed, accelerate-fsdp, torchtune, axolotl, torchrun, vllm")
      ->group("Search");
  sub->add_option("--export-file", s->req.export_file, "Write the --export config to FILE (default: stdout after the table)")
      ->group("Search");
  add_margin_options(sub, s->margin);
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n"
                          "  gpuplan search llama-2-70b --gpu h100-sxm --gpus 64 --global-batch 512\n"
                          "  gpuplan search gpt3-175b --gpu a100-80gb --gpus 1024 --global-batch 1536 --threads 2 --top 5\n"
                          "  gpuplan plan llama-2-13b --gpu a100-80gb --gpus 8 --objective cost --json\n"
                          "  gpuplan plan llama-3.1-8b --gpu a100-80gb --gpus 8 --global-batch 64 --export deepspeed --export-file ds.json\n"
                          "Exhaustive over tp, pp, virtual stages, dp, micro-batch/grad-accum, checkpointing, ZeRO, sp "
                          "and offload; the footer says how many configurations were evaluated and how long it took.\n") +
              kExitCodes);
  return {sub, [s, &ctx] {
            load_extra_gpus(s->args);
            s->req.global_batch = s->global_batch;
            s->req.margin = parse_margin(s->margin);
            const io::resolved_run r = build_run(s->args, nullptr);
            // search's own --global-batch, like the run's training flags (run_options.cpp).
            if (s->global_batch && !r.run.training())
              throw config_error("--global-batch", "only applies to workload train (got workload infer)");
            return run_search(r, s->req, make_style(ctx.out));
          }};
}

}  // namespace

command register_search(CLI::App& app, context& ctx) { return add_search_command(app, ctx, "search"); }
command register_plan(CLI::App& app, context& ctx) { return add_search_command(app, ctx, "plan"); }

}  // namespace gpuplan::cli
