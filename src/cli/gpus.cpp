// gpus.cpp — `gpuplan gpus`: the GPU catalog (and --gpu-file's additions) as a table or JSON.
#include "command.hpp"

#include <optional>
#include <string>

#include "gpuplan/io/catalog.hpp"

namespace gpuplan::cli {
using nlohmann::json;

namespace {

std::string tflops(const std::optional<gpuplan::FlopRate>& r) {
  return r ? io::format_number(gpuplan::in_tflop_per_s(*r)) : std::string("-");
}

int cmd_gpus(const run_args& a, const output_args& out) {
  load_extra_gpus(a);
  const io::style st = make_style(out);
  json arr = json::array();
  io::table t;
  t.header = {"GPU", "Name", "Memory", "Usable", "Bandwidth", "BF16 dense", "FP8 dense", "Link", "TDP", "Confidence"};
  for (const auto& id : io::gpu_ids()) {
    const gpuplan::gpu_spec& g = io::find_gpu(id);
    arr.push_back(io::write_gpu(g));  // the catalog's columns and units: a valid GPU object
    t.rows.push_back({g.id, g.name, io::format_bytes_short(g.memory), io::format_bytes_short(g.usable_memory),
                      io::format_number(gpuplan::in_gb_per_s(g.bandwidth)) + " GB/s", tflops(g.bf16) + " TFLOP/s",
                      g.fp8 ? tflops(g.fp8) + " TFLOP/s" : std::string("-"), g.link,
                      io::format_number(g.tdp_watts) + " W", g.confidence});
  }
  if (st.format == io::report_format::json) {
    print_json(arr);
  } else {
    t.right_align = {false, false, true, true, true, true, true, false, true, false};
    t.notes.push_back("Tensor rates are dense (no 2:4 sparsity), BF16 with FP32 accumulate. GB = 10^9 bytes.");
    print(io::render(t, st));
  }
  return kExitOk;
}

}  // namespace

command register_gpus(CLI::App& app, context& ctx) {
  auto* sub = app.add_subcommand("gpus", "List the GPU catalog (dense tensor rates)");
  sub->add_option("--gpu-file", ctx.args.gpu_file, "JSON file of extra GPUs (an array) added to the catalog");
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n  gpuplan gpus\n  gpuplan gpus --format markdown\n") + kExitCodes);
  return {sub, [&ctx] { return cmd_gpus(ctx.args, ctx.out); }};
}

}  // namespace gpuplan::cli
