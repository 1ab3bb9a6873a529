// Search rate against a closed-form loop, measured in the same run (docs/performance.md,
// "Layout search"): configurations per second of search() for GPT-3 175B on 1,024 A100-80GB
// under framework megatron, on one thread, beside a loop that visits the same configurations
// and evaluates only a textbook memory formula for each. Nothing here asserts a speed.
//   gpuplan_bench --benchmark_filter=search_rate
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/plan.hpp"
#include "support/models.hpp"

using namespace gpuplan;

namespace {

// Bytes per parameter of mixed-precision Adam: 2 (16-bit weights) + 2 (16-bit gradients) +
// 12 (fp32 master, momentum, variance) (Rajbhandari et al. 2020, ZeRO §3.1, K = 12).
constexpr double kWeightBytes = 2, kGradientBytes = 2, kOptimizerBytes = 12;
// Activations per layer and token in units of h bytes: 10 + 24/t (34/t with sequence
// parallelism), plus 5·a·s/(h·t) of attention scores without recompute (Korthikanti et al. 2022, Table 2).
constexpr double kUnsplitUnits = 10, kSplitUnits = 24, kAttentionScoreUnits = 5;
// Full recompute keeps the layer input only: 2·s·b·h bytes (Korthikanti et al. 2022 §5).
constexpr double kCheckpointUnits = 2;

struct closed_form_count {
  std::int64_t configurations = 0;
  std::int64_t fit = 0;
};

// Stage-0 memory per GPU of one configuration, from the formulas above: model states split by
// tp·pp and (ZeRO) dp, activations of the stage's layers for its micro-batches in flight.
double closed_form_bytes(const architecture& m, double params, const detail::search_group& g, std::int64_t mb,
                         checkpointing c, const detail::zero_variant& z, double seq) {
  const double mp = g.tp * g.pp, dp = g.gpus / mp, h = static_cast<double>(m.hidden);
  const double states = params / mp *
                        (kWeightBytes / (z.zero >= 3 ? dp : 1) + kGradientBytes / (z.zero >= 2 ? dp : 1) +
                         (z.opt == offload::none ? kOptimizerBytes / (z.zero >= 1 ? dp : 1) : 0));
  const double tp = g.tp, heads = static_cast<double>(m.heads);
  double units = kCheckpointUnits / (g.sp ? tp : 1);
  if (c != checkpointing::full) units = g.sp ? (kUnsplitUnits + kSplitUnits) / tp : kUnsplitUnits + kSplitUnits / tp;
  if (c == checkpointing::none) units += kAttentionScoreUnits * heads * seq / (h * tp);
  // 1F1B keeps pp micro-batches on stage 0 (Narayanan et al. 2021 §2.2), interleaving
  // 1 + (pp − 1)/(pp·v) times that (Korthikanti et al. 2022 §4.2.3).
  const double in_flight = g.pp * (g.v > 1 ? 1 + (g.pp - 1.0) / (g.pp * g.v) : 1.0);
  const double layers = static_cast<double>(m.total_layers()) / g.pp;
  return states + layers * in_flight * seq * static_cast<double>(mb) * h * units;
}

// Every configuration of the plan the search visits (groups × micro-batch chain ×
// checkpointing × the variants the framework can launch), each through the formula.
closed_form_count closed_form_loop(const architecture& m, const scenario& t, const detail::search_plan& plan, double params) {
  closed_form_count out;
  const framework_profile& fw = profile_of(t.fw);
  const double capacity = in_bytes(t.gpu.usable_memory), seq = static_cast<double>(t.seq_len);
  for (std::size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const detail::search_group& g = plan.groups[gi];
    for (std::size_t k = plan.chain_begin[gi]; k < plan.chain_begin[gi + 1]; ++k)
      for (const checkpointing c : plan.ckpts)
        for (const detail::zero_variant& z : plan.variants) {
          if (!detail::variant_allowed(fw, z, g.gpus / (g.tp * g.pp), g.pp)) continue;
          ++out.configurations;
          out.fit += closed_form_bytes(m, params, g, plan.chain[k], c, z, seq) <= capacity ? 1 : 0;
        }
  }
  return out;
}

// search() of 175B on 1,024 A100-80GB (megatron, global batch 1536, top-10, one thread) and
// the closed-form loop over the same configurations, each timed on its own in every iteration.
void BM_search_rate_175b_1024_a100_megatron(benchmark::State& st) {
  const architecture m = test::gpt3_175b();
  scenario t;
  t.gpu = io::find_gpu("a100-80gb");
  t.num_gpus = 1024;
  t.seq_len = 2048;
  t.fw = framework::megatron;
  const run base(m, t);
  search_options o;
  o.top_k = 10;
  o.global_batch = 1536;
  const detail::search_plan plan = detail::plan_space(m, base.settings(), o, *o.global_batch);
  const auto params = static_cast<double>(count_parameters(m).total);
  std::int64_t evaluated = 0, memory_calls = 0, time_calls = 0, looped = 0;
  double search_s = 0, loop_s = 0;
  for (auto _ : st) {
    const search_result r = search(base, o);
    search_s += r.seconds;
    evaluated += r.evaluated;
    memory_calls += r.memory_calls;
    time_calls += r.time_calls;
    benchmark::DoNotOptimize(r.rows.data());
    const auto t0 = std::chrono::steady_clock::now();
    const closed_form_count c = closed_form_loop(m, base.settings(), plan, params);
    loop_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    looped += c.configurations;
    benchmark::DoNotOptimize(c.fit);
  }
  const double n = static_cast<double>(st.iterations());
  const double search_rate = static_cast<double>(evaluated) / search_s, loop_rate = static_cast<double>(looped) / loop_s;
  st.counters["configs"] = static_cast<double>(evaluated) / n;
  st.counters["closed_form_configs"] = static_cast<double>(looped) / n;
  st.counters["configs/s"] = search_rate;
  st.counters["closed_form_configs/s"] = loop_rate;
  st.counters["ratio"] = search_rate / loop_rate;  // search rate over the closed-form loop's
  st.counters["memory_calls"] = static_cast<double>(memory_calls) / n;
  st.counters["time_calls"] = static_cast<double>(time_calls) / n;
  st.counters["search_s"] = search_s / n;
}
BENCHMARK(BM_search_rate_175b_1024_a100_megatron)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
