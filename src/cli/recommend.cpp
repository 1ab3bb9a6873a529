// recommend.cpp — `gpuplan recommend`: GPU types × counts ranked for a workload, a deadline
// and a budget; for a language model's training run or serving (--serve), or an image or
// diffusion model (a layer graph, io/graph_plan.hpp). The planner itself: hooks.cpp.
#include "command.hpp"

#include <cstdint>
#include <memory>
#include <string>

#include "gpuplan/error.hpp"
#include "gpuplan/io/graph_plan.hpp"
#include "gpuplan/io/graph_query.hpp"

namespace gpuplan::cli {
using nlohmann::json;

namespace {

struct recommend_state {
  CLI::App* sub = nullptr;
  recommend_request req;
  run_args args;
  margin_request margin;
  io::graph_recommend_query graph;  // image and diffusion models
};

// recommend for an image or diffusion model: the run flags that apply to a layer graph
// become the query's fields, as typed (io::parse_graph_query parses the names and amounts
// once, into the typed graph_query); any other names what was typed and why it does not apply.
io::graph_recommend_query graph_query_of(const run_args& a, io::graph_recommend_query q) {
  const auto flag = [&a](const std::string& path) {
    const auto it = a.flag_of.find(path);
    return it == a.flag_of.end() ? path : it->second.substr(0, it->second.find(','));
  };
  const std::string not_graph = "does not apply to image and diffusion models";
  if (!a.scenario_file.empty()) throw config_error("--scenario", not_graph + " (got '" + a.scenario_file + "')");
  if (!a.gpu.empty()) throw config_error("--gpu", "recommend ranks the GPUs of --gpus-list (got '" + a.gpu + "')");
  if (!a.profile_file.empty()) throw config_error("--profile", not_graph + " (got '" + a.profile_file + "')");
  q.model = a.model;
  for (const auto& [path, v] : a.overrides) {
    const auto text = [&v = v] { return v.is_string() ? v.get<std::string>() : v.dump(); };
    if (path == "method") q.method = text();
    else if (path == "micro_batch") q.batch = v.get<std::int64_t>();
    else if (path == "precision") q.precision = text();
    else if (path == "optimizer") q.optimizer = text();
    else if (path == "lora.rank") q.lora_rank = v.get<std::int64_t>();
    else if (path == "parallel.zero") q.zero = v.get<int>();
    else if (path == "checkpointing") {
      if (text() != "none" && text() != "full")
        throw config_error("--checkpointing", "must be none or full for image and diffusion models (got " + text() + ")");
      q.checkpointing = text() == "full";
    } else {
      throw config_error(flag(path), not_graph + " (got " + text() + ")");
    }
  }
  return q;
}

void add_recommend_options(CLI::App* sub, recommend_state& s) {
  sub->add_option("--epochs", s.req.epochs, "Epochs over --dataset-tokens")->group("Recommend");
  sub->add_option("--dataset-tokens", s.req.dataset_tokens, "Dataset size in tokens: 500M, 2B")->group("Recommend");
  sub->add_option("--deadline", s.req.deadline, "Wall-clock deadline: 3600, 90m, 24h, 2d (default 24h)")
      ->group("Recommend");
  sub->add_option("--budget", s.req.budget, "Budget in the prices' currency")->group("Recommend");
  sub->add_option("--price", s.req.prices, "Your prices per GPU-hour (override the catalog's): rtx-4090=0.4,a100-80gb=1.8")
      ->group("Recommend");
  sub->add_option("--prices", s.req.prices_file, "Your prices: a CSV or JSON file (src/data/PRICES.md)")->group("Recommend");
  sub->add_flag("--spot", s.req.spot, "Spot prices where the catalog has them (default on-demand)")->group("Recommend");
  sub->add_option("--kwh-price", s.req.kwh_price, "Electricity per kWh for rent vs buy (default 0.1648, US 2024 average)")
      ->group("Recommend");
  sub->add_option("--global-batch", s.req.global_batch,
                  "Sequences per optimizer step (default: what practitioners use, stated in the output)")
      ->group("Recommend");
  sub->add_option("--gpus-list", s.req.gpus_list, "Candidate GPU ids (default: every GPU with a price)")
      ->group("Recommend");
  sub->add_option("--max-gpus", s.req.max_gpus, "Counts 1, 2, 4, ... up to this (default 64; 8 for image and diffusion models)")
      ->group("Recommend");
  sub->add_option("--rank", s.req.rank, "cost (default) or time")->group("Recommend");
  sub->add_option("--top,-k", s.req.top_k, "Rows to show (default 10)")->group("Recommend");
}

// Image and diffusion models (MODEL a vision or diffusion catalog name, or --graph): io/graph_plan.hpp.
void add_graph_options(CLI::App* sub, recommend_state& s) {
  sub->add_option("--images", s.graph.images,
                  "Image/diffusion models: dataset size in images, 1.28M (default ImageNet-1k; diffusion: the recipe's 60,000)")
      ->group("Image and diffusion models");
  sub->add_option("--graph", s.graph.graph_file, "A layer graph file (JSON, docs/trace.md) instead of MODEL")
      ->group("Image and diffusion models");
  sub->add_option("--image", s.graph.image, "Image models: image side in pixels (default the weights' crop)")
      ->group("Image and diffusion models");
  sub->add_option("--resolution", s.graph.resolution, "Diffusion: training resolution (default the pipeline's)")
      ->group("Image and diffusion models");
  sub->add_option("--ema", s.graph.ema, "Diffusion full fine-tuning: keep the EMA copy of the UNet (default: the recipe's, true for full, false for LoRA)")
      ->group("Image and diffusion models");
}

// recommend --serve: a serving workload (plan/serve_recommend.hpp, src/cli/hooks.cpp).
void add_serve_options(CLI::App* sub, recommend_state& s) {
  sub->add_flag("--serve", s.req.serve, "Serve the model instead of training it (default engine vllm)")->group("Serve");
  sub->add_option("--requests-per-second", s.req.requests_per_second, "--serve: requests per second to sustain")
      ->group("Serve");
  sub->add_option("--itl-target", s.req.itl_target, "--serve: inter-token latency target (default 50ms)")->group("Serve");
  sub->add_option_function<std::int64_t>(
      "--output-len", [&s](const std::int64_t& v) { s.args.overrides.emplace_back("inference.gen_len", json(v)); },
      "--serve: output tokens per request (same as --gen-len)")
      ->group("Serve");
}

// recommend --serve plans a serving workload: the training plan's own flags (the tokens
// to train, the deadline and budget of the run, its global batch, the electricity of
// rent vs buy, the ranking of training rows) would change nothing. The run's training
// flags are refused as for --infer (run_options.cpp).
void refuse_training_options(const CLI::App& sub) {
  for (const char* name : {"--epochs", "--dataset-tokens", "--deadline", "--budget", "--global-batch", "--kwh-price", "--rank"})
    if (sub.get_option(name)->count() > 0) throw config_error(name, "only applies to workload train (got workload infer)");
}

int cmd_recommend(recommend_state& s, const output_args& out) {
  load_extra_gpus(s.args);
  s.req.margin = parse_margin(s.margin);
  if (!s.graph.graph_file.empty() || io::is_graph_model(s.args.model))
    return run_recommend_graph(graph_query_of(s.args, s.graph), s.req, make_style(out));
  if (s.graph.images || s.graph.image || s.graph.resolution || s.graph.ema)
    throw config_error(s.graph.images ? "--images" : s.graph.image ? "--image" : s.graph.resolution ? "--resolution" : "--ema",
                       "applies to image and diffusion models only (got model '" + s.args.model + "')");
  // A named card is the candidate (its owner asks about it), not a template for others.
  if (!s.args.gpu.empty()) {
    if (!s.req.gpus_list.empty())
      throw config_error("--gpu", "recommend ranks --gpus-list; give one of --gpu or --gpus-list (got '" + s.args.gpu + "' and '" +
                                      s.req.gpus_list + "')");
    s.req.gpus_list = s.args.gpu;
  }
  if (s.req.serve) {  // workload infer, engine vllm unless --engine (later overrides win)
    refuse_training_options(*s.sub);
    s.args.overrides.insert(s.args.overrides.begin(), {{"workload", json("infer")}, {"engine", json("vllm")}});
  }
  return run_recommend(build_run(s.args, nullptr), s.req, make_style(out));
}

}  // namespace

command register_recommend(CLI::App& app, context& ctx) {
  auto s = std::make_shared<recommend_state>();
  auto* sub = app.add_subcommand("recommend", "Rank GPU types × counts for a workload, a deadline and a budget");
  s->sub = sub;
  add_run_options(sub, s->args, true, false, {"--price", "--gpus", "--global-batch"});
  add_recommend_options(sub, *s);
  add_margin_options(sub, s->margin);
  add_graph_options(sub, *s);
  add_serve_options(sub, *s);
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n"
                          "  gpuplan recommend llama-3.1-8b --method lora --tokens 2B --deadline 24h\n"
                          "  gpuplan recommend llama-2-7b --method qlora --tokens 500M --gpus-list rtx-4090,a100-80gb --spot\n"
                          "  gpuplan recommend llama-2-13b --method qlora --epochs 3 --dataset-tokens 500M "
                          "--deadline 12h --budget 500 --price rtx-4090=0.4,a100-80gb=1.8\n"
                          "  gpuplan recommend llama-2-13b --method full --tokens 1B --gpus-list a100-80gb,h100-sxm --json\n"
                          "  gpuplan recommend llama-3.1-8b --serve --requests-per-second 5 --prompt-len 1024 --output-len 256 "
                          "--itl-target 50ms\n"
                          "  gpuplan recommend resnet-50 --images 1.28M --epochs 90 --gpus-list rtx-4090,a100-80gb\n"
                          "  gpuplan recommend sd-2.1 --method full --gpus-list rtx-4090,a100-80gb --rank time\n"
                          "Each row is the fastest layout search finds for that GPU and count; rows that "
                          "meet the deadline (and budget) come first.\n") +
              kExitCodes);
  return {sub, [s, &ctx] { return cmd_recommend(*s, ctx.out); }};
}

}  // namespace gpuplan::cli
