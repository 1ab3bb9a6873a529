// serve.cpp — `gpuplan serve`: the KV pool, maximum concurrency, largest context and the
// throughput–latency curve of a serving engine (include/gpuplan/serve.hpp), printed
// through io/serve_report.hpp (the formatter Python's gp.serve shares).
#include <cstdio>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/serve_report.hpp"
#include "gpuplan/serve.hpp"

namespace gpuplan::cli {
using nlohmann::json;

namespace {

int run_serve(const io::resolved_run& r, const std::optional<std::string>& latency, std::optional<std::int64_t> concurrency,
              const io::style& st) {
  std::optional<Seconds> target;
  if (latency) target = seconds(io::parse_latency(*latency));
  const serve_result s = serve(r.run, target);
  std::optional<serve_point> at;
  if (concurrency) at = io::serve_at_checked(r.run, s, *concurrency, "--concurrency");
  if (st.format == io::report_format::json) {
    std::printf("%s\n", io::serve_json(r, s, at).dump(2).c_str());
    return s.memory.fits ? 0 : 1;
  }
  const std::string summary = io::serve_summary(r, s);
  std::string out = st.format == io::report_format::markdown ? "```\n" + summary + "```\n\n" : summary + "\n";
  out += io::render(io::serve_table(s, at), st);
  std::fputs(out.c_str(), stdout);
  return s.memory.fits ? 0 : 1;
}

}  // namespace

command register_serve(CLI::App& app, context& ctx) {
  struct state {
    run_args args;
    std::optional<std::string> latency;
    std::optional<std::int64_t> concurrency;
  };
  auto st = std::make_shared<state>();
  auto* sub = app.add_subcommand("serve", "Serving: KV pool, max concurrency, TTFT/ITL curve of an inference engine");
  add_run_options(sub, st->args, true, false, {"--infer", "--infer-batch"});
  sub->add_option("--latency-target", st->latency, "Inter-token latency target (50ms, 0.05s): the concurrency that meets it");
  sub->add_option("--concurrency", st->concurrency, "Also report one request at this many concurrent requests");
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n  gpuplan serve llama-3.1-8b --gpu a100-80gb --engine vllm --prompt-len 1024 --output-len 256\n"
                          "  gpuplan serve llama-3.1-8b --gpu rtx-4090 --engine llama.cpp --gguf Q4_K_M --latency-target 50ms\n") +
              kExitCodes);
  st->args.overrides.emplace_back("workload", json("infer"));
  sub->add_option_function<std::int64_t>(
      "--output-len", [a = &st->args](const std::int64_t& v) { a->overrides.emplace_back("inference.gen_len", json(v)); },
      "Output tokens per request (same as --gen-len)");
  return {sub, [st, &ctx] {
            load_extra_gpus(st->args);
            return run_serve(build_run(st->args, nullptr), st->latency, st->concurrency, make_style(ctx.out));
          }};
}

}  // namespace gpuplan::cli
