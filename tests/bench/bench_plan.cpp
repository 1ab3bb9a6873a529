// Planner and estimator benchmarks (docs/performance.md quotes these figures).
//   gpuplan_bench --benchmark_filter=estimate   single estimates
//   gpuplan_bench --benchmark_filter=replay     the allocator replay of one run
//   gpuplan_bench --benchmark_filter=search     configurations per second, 1 and 2 threads
#include <benchmark/benchmark.h>

#include <cstdint>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/plan.hpp"
#include "gpuplan/replay.hpp"
#include "support/models.hpp"

using namespace gpuplan;
using test::gpt3_175b;

namespace {

scenario qlora_13b_4090() {
  scenario s;
  s.meth = method::qlora;
  s.gpu = io::find_gpu("rtx-4090");
  s.micro_batch = 4;
  s.seq_len = 2048;
  s.ckpt = checkpointing::full;
  return s;
}

scenario megatron_70b() {
  scenario s;
  s.gpu = io::find_gpu("h100-sxm");
  s.num_gpus = 64;
  s.fw = framework::megatron;
  s.parallel.tp = 8;
  s.parallel.pp = 4;
  s.parallel.zero = 1;
  s.micro_batch = 1;
  s.grad_accum = 64;
  s.seq_len = 4096;
  s.ckpt = checkpointing::selective;
  return s;
}

// The validated run of bench case 0 (QLoRA 13B on a 4090) or 1 (Megatron 70B on 64 H100).
run bench_run(std::int64_t c) {
  return run(io::find_model(c == 0 ? "llama-2-13b" : "llama-2-70b"), c == 0 ? qlora_13b_4090() : megatron_70b());
}

// The estimators on a validated run (what the planner and a notebook loop pay).
void BM_estimate_memory(benchmark::State& st) {
  const run r = bench_run(st.range(0));
  for (auto _ : st) benchmark::DoNotOptimize(estimate_memory(r));
}
BENCHMARK(BM_estimate_memory)->Arg(0)->Arg(1)->ArgName("case");

void BM_estimate_memory_and_time(benchmark::State& st) {
  const run r = bench_run(st.range(0));
  for (auto _ : st) {
    benchmark::DoNotOptimize(estimate_memory(r));
    benchmark::DoNotOptimize(estimate_time(r));
  }
}
BENCHMARK(BM_estimate_memory_and_time)->Arg(0)->Arg(1)->ArgName("case");

// The allocator replay (replay.hpp): two training steps through the caching-allocator rules,
// what `estimate`/`fit` add per run (target: under 1 ms).
void BM_replay_allocator(benchmark::State& st) {
  const run r = bench_run(st.range(0));
  for (auto _ : st) benchmark::DoNotOptimize(replay_allocator(r));
  st.counters["tensors"] = replay_allocator(r).tensors;
}
BENCHMARK(BM_replay_allocator)->Arg(0)->Arg(1)->ArgName("case")->Unit(benchmark::kMicrosecond);

// Validation: making a run from a scenario (copies the scenario, checks every rule).
void BM_make_run(benchmark::State& st) {
  const scenario s = st.range(0) == 0 ? qlora_13b_4090() : megatron_70b();
  const architecture& m = io::find_model(st.range(0) == 0 ? "llama-2-13b" : "llama-2-70b");
  for (auto _ : st) benchmark::DoNotOptimize(run(m, s));
}
BENCHMARK(BM_make_run)->Arg(0)->Arg(1)->ArgName("case");

// Full-space layout search of the run `base` (everything but the layout);
// counters: configurations decided per second (evaluated or excluded by an exact
// bound) and estimator calls per search.
void run_search(benchmark::State& st, const architecture& m, const scenario& t, std::int64_t gb) {
  const run base(m, t);
  search_options o;
  o.top_k = 10;
  o.global_batch = gb;
  o.threads = static_cast<int>(st.range(0));
  std::int64_t evaluated = 0, calls = 0;
  double seconds = 0;
  for (auto _ : st) {
    const search_result r = search(base, o);
    evaluated += r.evaluated;
    calls += r.memory_calls + r.time_calls;
    seconds += r.seconds;
    benchmark::DoNotOptimize(r.rows.data());
  }
  const double iters = static_cast<double>(st.iterations());
  st.counters["configs"] = static_cast<double>(evaluated) / iters;
  st.counters["estimator_calls"] = static_cast<double>(calls) / iters;
  st.counters["search_s"] = seconds / iters;
  st.counters["configs/s"] = static_cast<double>(evaluated) / seconds;
}

void BM_search_175b_1024_a100(benchmark::State& st) {
  scenario t;
  t.gpu = io::find_gpu("a100-80gb");
  t.num_gpus = 1024;
  t.seq_len = 2048;
  t.fw = framework::megatron;  // the framework whose layout space includes TP, PP and interleaving
  run_search(st, gpt3_175b(), t, 1536);
}
BENCHMARK(BM_search_175b_1024_a100)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_search_70b_64_h100(benchmark::State& st) {
  scenario t = megatron_70b();
  run_search(st, io::find_model("llama-2-70b"), t, 512);
}
BENCHMARK(BM_search_70b_64_h100)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_search_7b_8_a100(benchmark::State& st) {
  scenario t;
  t.gpu = io::find_gpu("a100-80gb");
  t.num_gpus = 8;
  t.seq_len = 4096;
  t.fw = framework::megatron;
  run_search(st, io::find_model("llama-2-7b"), t, 256);
}
BENCHMARK(BM_search_7b_8_a100)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
