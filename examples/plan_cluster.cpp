// plan_cluster.cpp — the planner's search: the fastest parallel layout for a
// GPT-3-style model (175B: 96 layers, hidden 12288, 96 heads; Brown et al. 2020,
// Table 2.1) on a cluster of A100-80GB nodes (8 GPUs per node, NVLink inside).
// The search is exhaustive over tp, pp, virtual stages, dp, micro-batch / gradient
// accumulation at a fixed global batch, checkpointing, ZeRO stage, sequence
// parallelism and CPU offload (docs/planner.md); it prints the top layouts and how
// many configurations it evaluated.
//
// Usage: example_plan_cluster [GPUS] [GLOBAL_BATCH] [THREADS]   (default 1024 1536 2)
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include <gpuplan/gpuplan.hpp>
#include <gpuplan/io/catalog.hpp>
#include <gpuplan/io/report.hpp>

int main(int argc, char** argv) {
  using namespace gpuplan;
  const int gpus = argc > 1 ? std::atoi(argv[1]) : 1024;
  const std::int64_t global_batch = argc > 2 ? std::atoll(argv[2]) : 1536;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;

  // A GPT-style model from a Hugging Face config (GPT-2 architecture at GPT-3 175B size).
  const architecture model = io::load_model(nlohmann::json{{"model_type", "gpt2"},
                                                           {"n_embd", 12288},
                                                           {"n_layer", 96},
                                                           {"n_head", 96},
                                                           {"n_positions", 2048},
                                                           {"vocab_size", 50257}},
                                            "model");

  // The base run: everything but the layout (search chooses tp, pp, ... itself).
  scenario settings;
  settings.meth = method::full;
  settings.prec = precision::bf16_mixed;
  settings.opt = optimizer::adamw;
  settings.seq_len = 2048;
  settings.gpu = io::find_gpu("a100-80gb");
  settings.num_gpus = gpus;
  settings.cluster.gpus_per_node = 8;
  settings.fw = framework::megatron;  // tensor and pipeline parallelism need Megatron-LM (framework.hpp)
  const run base(model, settings);  // validated once; the search edits copies of it

  search_options o;
  o.top_k = 5;
  o.global_batch = global_batch;
  o.threads = threads;
  const search_result r = search(base, o);

  std::printf("GPT-3 175B (%.1f B parameters) on %d x %s, global batch %lld x %lld tokens\n\n",
              static_cast<double>(count_parameters(model).total) / 1e9, gpus, base.gpu().name.c_str(),
              static_cast<long long>(global_batch), static_cast<long long>(base.settings().seq_len));
  // The same table as `gpuplan search` (io/report.hpp).
  std::fputs(io::render(io::search_table(r), {}).c_str(), stdout);
  for (const search_row& row : r.rows)
    if (!row.memory.fits || in_seconds(row.time.step) <= 0) {
      std::fprintf(stderr, "a returned layout does not fit or has no step time\n");
      return 1;
    }
  if (r.rows.empty() || r.evaluated <= 0) {
    std::fprintf(stderr, "no layout found\n");
    return 1;
  }
  const search_row& best = r.rows.front();
  std::printf("\nbest: tp %d, pp %d (v %d), dp %d, micro-batch %lld x %lld accumulation steps, %s checkpointing, "
              "ZeRO-%d: %.2f s per step, MFU %.1f %%\n",
              best.config.tp, best.config.pp, best.config.virtual_stages, best.config.dp(),
              static_cast<long long>(best.config.micro_batch), static_cast<long long>(best.config.grad_accum),
              std::string(to_string(best.config.ckpt)).c_str(), best.config.zero, in_seconds(best.time.step),
              100.0 * best.time.mfu);
  std::printf("evaluated %lld configurations in %.3f s (%d threads)\n", static_cast<long long>(r.evaluated), r.seconds,
              r.threads);
  return 0;
}
