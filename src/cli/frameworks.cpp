// frameworks.cpp — `gpuplan frameworks`: the training framework profiles (framework.hpp) as
// a table or JSON: the defaults each one's recipes use and the layouts it can launch.
#include "command.hpp"

#include "gpuplan/framework.hpp"

namespace gpuplan::cli {
using nlohmann::json;

namespace {

std::string zero_stages_of(const framework_profile& p) {
  std::string s;
  for (int z = 0; z < 4; ++z)
    if (p.allows_zero(z)) s += (s.empty() ? "" : ",") + std::to_string(z);
  return s;
}

std::string offload_of(const framework_profile& p) {
  if (p.offload_everything && p.offload_optimizer_only) return "optimizer, all";
  if (p.offload_everything) return "all";
  return p.offload_optimizer_only ? "optimizer" : "none";
}

int cmd_frameworks(const output_args& out) {
  const io::style st = make_style(out);
  json arr = json::array();
  io::table t;
  t.header = {"Framework", "Checkpointing (LoRA / full)", "ZeRO", "Offload", "TP", "PP", "CP", "GPUs", "Reserved / allocated"};
  for (const framework_profile& p : kFrameworkProfiles) {
    const std::string name(to_string(p.id));
    const std::string peft_ckpt(to_string(p.peft_checkpointing)), full_ckpt(to_string(p.full_checkpointing));
    arr.push_back({{"name", name},
                   {"summary", std::string(p.summary)},
                   {"peft_checkpointing", peft_ckpt},
                   {"full_checkpointing", full_ckpt},
                   {"sequence_parallel_with_tp", p.sequence_parallel_with_tp},
                   {"zero_stages", zero_stages_of(p)},
                   {"offload", offload_of(p)},
                   {"tensor_parallel", p.tensor_parallel},
                   {"pipeline_parallel", p.pipeline_parallel},
                   {"context_parallel", p.context_parallel},
                   {"max_gpus", p.max_gpus},
                   {"reserved_factor", p.reserved_factor}});
    t.rows.push_back({name, peft_ckpt + " / " + full_ckpt, zero_stages_of(p), offload_of(p),
                      p.tensor_parallel ? (p.sequence_parallel_with_tp ? "yes (+SP)" : "yes") : "no",
                      p.pipeline_parallel ? "yes" : "no", p.context_parallel ? "yes" : "no",
                      p.max_gpus > 0 ? std::to_string(p.max_gpus) : "any",
                      io::format_number(p.reserved_factor)});
  }
  if (st.format == io::report_format::json) {
    print_json(arr);
  } else {
    t.notes.push_back("Defaults for what a scenario leaves unset, and the layouts each framework launches "
                      "(include/gpuplan/framework.hpp). 'gpuplan explain' shows the rules behind one run.");
    print(io::render(t, st));
  }
  return kExitOk;
}

}  // namespace

command register_frameworks(CLI::App& app, context& ctx) {
  auto* sub = app.add_subcommand("frameworks", "List the training framework profiles: recipe defaults and layouts");
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n  gpuplan frameworks\n  gpuplan frameworks --json\n") + kExitCodes);
  return {sub, [&ctx] { return cmd_frameworks(ctx.out); }};
}

}  // namespace gpuplan::cli
