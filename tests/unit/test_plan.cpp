// Planner tests (plan.hpp): fit, suggest, recommend, search. Every figure is
// checked against estimate_memory / estimate_time called directly; the search's
// pruning properties (docs/planner.md P1–P5) are checked on sample spaces and
// the pruned search is compared with brute force.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/plan.hpp"
#include "support/models.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_plan {

using namespace gpuplan;
using test::gpt3_175b;

namespace {

scenario train_on(const std::string& gpu, int n = 1) {
  scenario s;
  s.gpu = io::find_gpu(gpu);
  s.num_gpus = n;
  return s;
}

double dev(const architecture& m, const scenario& s) { return in_bytes(estimate_memory(m, s).device); }
// The planner's criterion (plan/margin.hpp), called directly.
bool fits(const architecture& m, const scenario& s, const plan_margin& g = {}) {
  const run r(m, s);
  return plans_fit(r, estimate_memory(r), g);
}

}  // namespace

// ---------------------------------------------------------------------------
TEST_CASE("plan: fit reports the verdict, headroom and binding term of estimate_memory") {
  const architecture& m = io::find_model("llama-2-13b");
  scenario s = train_on("rtx-4090");
  const fit_report r = fit(m, s);
  const memory_breakdown direct = estimate_memory(m, s);
  CHECK(r.fits == fits(m, s));
  CHECK_FALSE(direct.fits);
  CHECK_FALSE(r.fits);
  CHECK(r.state == verdict::does_not_fit);  // 13B full fine-tuning needs ~16 B/param = ~208 GB
  CHECK(in_bytes(r.headroom) == in_bytes(direct.headroom));
  // The largest term binds: for full AdamW mixed precision the optimizer state (8 B/param).
  CHECK(r.binding == memory_component::optimizer);
  CHECK(!r.max_micro_batch.has_value());  // micro-batch 1 does not fit
  CHECK(!r.max_seq_len.has_value());
}

TEST_CASE("plan: max micro-batch and seq_len are the largest that fit (checked directly)") {
  const architecture& m = io::find_model("llama-2-13b");
  scenario s = train_on("rtx-4090");
  s.meth = method::qlora;
  s.seq_len = 512;
  const fit_report r = fit(m, s);
  REQUIRE(r.fits);
  REQUIRE(r.max_micro_batch.has_value());
  scenario t = s;
  t.micro_batch = *r.max_micro_batch;
  CHECK(fits(m, t));
  t.micro_batch = *r.max_micro_batch + 1;
  CHECK_FALSE(fits(m, t));
  // QLoRA 13B on 24 GB at seq 512: weights ~7 GB, so several sequences fit but not 100.
  CHECK(*r.max_micro_batch >= 2);
  CHECK(*r.max_micro_batch < 100);

  REQUIRE(r.max_seq_len.has_value());
  CHECK(r.seq_step == 1);
  CHECK(r.seq_limit == 4096);  // llama-2: max_position_embeddings (rotary, capped by default)
  t = s;
  t.seq_len = *r.max_seq_len;
  CHECK(fits(m, t));
  if (*r.max_seq_len < r.seq_limit) {
    t.seq_len = *r.max_seq_len + 1;
    CHECK_FALSE(fits(m, t));
  }
}

TEST_CASE("plan: seq_len search respects sequence-parallel divisibility") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s = train_on("a100-80gb", 8);
  s.parallel.tp = 8;
  s.parallel.sp = true;
  s.ckpt = checkpointing::full;
  const fit_report r = fit(m, s);
  CHECK(r.seq_step == 8);
  REQUIRE(r.max_seq_len.has_value());
  CHECK(*r.max_seq_len % 8 == 0);
  scenario t = s;
  t.seq_len = *r.max_seq_len;
  CHECK(fits(m, t));
}

TEST_CASE("plan: min GPUs per ZeRO stage is the smallest count that fits") {
  const architecture& m = io::find_model("llama-2-13b");
  scenario s = train_on("a100-80gb");
  s.ckpt = checkpointing::full;
  const fit_report r = fit(m, s, {.max_gpus = 64});
  // ZeRO-0: model states 16 B/param x 13.0 B = 208 GB on every GPU: none fits.
  CHECK(r.min_gpus[0].applicable);
  CHECK(!r.min_gpus[0].gpus.has_value());
  CHECK(r.min_gpus[0].searched_up_to == 64);
  // ZeRO-1/2 keep the 26 GB of bf16 weights (and ZeRO-1 the gradients) on every GPU:
  // at the full-fine-tuning P90 (×1.29) plus headroom they may not fit up to 64.
  for (int z = 1; z <= 3; ++z) {
    const gpu_count_fit& g = r.min_gpus[static_cast<std::size_t>(z)];
    CAPTURE(z);
    scenario t = s;
    t.parallel.zero = z;
    if (!g.gpus) {
      CHECK(z < 3);
      t.num_gpus = 64;
      CHECK_FALSE(fits(m, t));
      continue;
    }
    t.num_gpus = *g.gpus;
    CHECK(fits(m, t));
    if (*g.gpus > 1) {
      t.num_gpus = *g.gpus - 1;
      CHECK_FALSE(fits(m, t));
    }
  }
  // More sharding never needs more GPUs.
  REQUIRE(r.min_gpus[3].gpus.has_value());
  if (r.min_gpus[2].gpus) CHECK(*r.min_gpus[3].gpus <= *r.min_gpus[2].gpus);
  if (r.min_gpus[1].gpus) CHECK((r.min_gpus[2].gpus && *r.min_gpus[2].gpus <= *r.min_gpus[1].gpus));
  // ZeRO-3 shards all 16 B/param: 208 GB / (80 GB - overheads) -> at least 3 GPUs.
  CHECK(*r.min_gpus[3].gpus >= 3);
}

TEST_CASE("plan: offload settings make incompatible ZeRO stages not applicable") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s = train_on("a100-80gb", 2);
  s.parallel.zero = 3;
  s.parallel.offload_params = offload::cpu;
  s.parallel.offload_optimizer = offload::cpu;
  const fit_report r = fit(m, s, {.max_gpus = 8});
  CHECK_FALSE(r.min_gpus[0].applicable);
  CHECK_FALSE(r.min_gpus[1].applicable);
  CHECK_FALSE(r.min_gpus[2].applicable);
  CHECK(r.min_gpus[3].applicable);
}

// ---------------------------------------------------------------------------
TEST_CASE("plan: suggest for llama-2-13b full fine-tuning on an rtx-4090 offers QLoRA, and it fits") {
  const architecture& m = io::find_model("llama-2-13b");
  const scenario s = train_on("rtx-4090");
  suggest_options o;
  for (const char* id : {"rtx-4090", "rtx-a6000", "a100-80gb", "h100-sxm", "h200-sxm"}) o.gpus.push_back(io::find_gpu(id));
  const std::vector<suggestion> list = suggest(m, s, o);
  REQUIRE(!list.empty());
  bool qlora_fits = false;
  for (const auto& g : list) {
    // Every row's memory is estimate_memory of its run, and every row is a plan.
    CHECK(in_bytes(g.memory.device) == dev(m, g.run));
    CHECK(g.fits);
    CHECK(fits(m, g.run));
    if (std::find(g.changes.begin(), g.changes.end(), change_kind::qlora) != g.changes.end()) qlora_fits = true;
  }
  CHECK(qlora_fits);
  // Ranked: own card, then more cards, then other GPUs; on the own card by effect, then time.
  for (std::size_t i = 1; i < list.size(); ++i) {
    const suggestion& a = list[i - 1];
    const suggestion& b = list[i];
    CHECK(a.scope <= b.scope);
    if (a.scope == suggestion_scope::own_card && b.scope == suggestion_scope::own_card) {
      CHECK(a.effect <= b.effect);
      if (a.effect == b.effect && !std::isnan(b.time_change)) CHECK(a.time_change <= b.time_change);
    }
  }
  // LoRA alone on bf16 13B weights (26 GB) cannot fit 24 GB: not listed.
  for (const auto& g : list) CHECK(g.changes != std::vector<change_kind>{change_kind::lora});
  // No other GPU of the list fits the run as it is: 13B full fine-tuning with AdamW in
  // mixed precision keeps 16 B/param = 208 GB, above the largest card's 141 GB (H200).
  const bool any_gpu = std::any_of(list.begin(), list.end(), [](const suggestion& g) {
    return g.changes == std::vector<change_kind>{change_kind::bigger_gpu};
  });
  CHECK_FALSE(any_gpu);
  // ZeRO-3 across N GPUs picks the smallest N that fits.
  for (const auto& g : list) {
    if (g.changes != std::vector<change_kind>{change_kind::zero3_gpus} || !g.fits) continue;
    scenario t = g.run;
    t.num_gpus -= 1;
    if (t.num_gpus >= 1) CHECK_FALSE(fits(m, t));
  }
}

TEST_CASE("plan: 13B full fine-tuning on one rtx-4090: offload everything to the CPU comes first, with its host RAM") {
  // fit says ZeRO-3 with optimizer and parameter offload (and full checkpointing) fits one
  // 24 GB card; it keeps the result (same_result), so it ranks above QLoRA (different
  // model), and the row says how much host RAM the offloaded state needs.
  const architecture& m = io::find_model("llama-2-13b");
  const scenario s = train_on("rtx-4090");
  suggest_options o;
  o.gpus = {io::find_gpu("rtx-4090"), io::find_gpu("a100-80gb")};
  const std::vector<suggestion> list = suggest(m, s, o);
  REQUIRE(!list.empty());
  const suggestion& first = list.front();
  CAPTURE(first.description);
  CHECK(std::find(first.changes.begin(), first.changes.end(), change_kind::cpu_offload_all) != first.changes.end());
  CHECK(first.scope == suggestion_scope::own_card);
  CHECK(first.effect == change_effect::same_result);
  CHECK(first.run.parallel.offload_params == offload::cpu);
  // 13.0e9 parameters: fp32 master + Adam moments (12 B) and bf16 weights and gradients
  // on the host, > 180 GiB; the description carries the figure.
  CHECK(in_gib(first.memory.host) > 180);
  CHECK(first.description.find("GiB host RAM") != std::string::npos);
  // A GeForce card never gets "ZeRO-3 across 28 cards": one machine holds at most four.
  for (const auto& g : list) CHECK(g.run.num_gpus <= 4);
}

TEST_CASE("plan: smaller micro-batch keeps the global batch") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s = train_on("a100-80gb");
  s.meth = method::lora;
  s.micro_batch = 64;
  s.grad_accum = 2;
  const auto list = suggest(m, s);
  bool seen = false;
  for (const auto& g : list) {
    if (g.changes != std::vector<change_kind>{change_kind::smaller_micro_batch}) continue;
    seen = true;
    CHECK(g.run.micro_batch * g.run.grad_accum == 128);
    CHECK(g.run.micro_batch < 64);
  }
  CHECK(seen);
}

// ---------------------------------------------------------------------------
TEST_CASE("plan: cuda floor and system sizing rules") {
  CHECK(cuda_floor(io::find_gpu("a100-80gb")) == cuda_version{11, 0});
  CHECK(cuda_floor(io::find_gpu("rtx-4090")) == cuda_version{11, 8});
  CHECK(cuda_floor(io::find_gpu("h100-sxm")) == cuda_version{12, 0});
  CHECK(cuda_floor(io::find_gpu("rtx-3090")) == cuda_version{11, 1});
  scenario s = train_on("a100-80gb", 16);
  const system_sizing z = size_system(s, memory_breakdown{}, time_estimate{});
  // Per node (8 GPUs, an NVSwitch board: a 2-socket server).
  CHECK(z.nodes == 2);
  CHECK(z.platform == platform_class::server);
  CHECK(z.cpu_cores == 64);      // 8 per GPU x 8, under the server's 192
  CHECK(z.cpu_cores_min == 32);  // 4 per GPU x 8
  // (8 x 400 W + 720 W CPUs + 150 W) x 1.3 = 5291 W, rounded up to 100 W.
  CHECK(z.psu_watts == doctest::Approx(5300.0));
  CHECK(z.psu_watts_per_node == doctest::Approx(5300.0));
  // 2 x 8 x 80 GiB (catalog nominal) = 1280 GiB, rounded up to a DIMM total: 1536 GiB.
  CHECK(in_bytes(z.host_ram) == doctest::Approx(1536.0 * 1024 * 1024 * 1024));
}

TEST_CASE("plan: recommend respects deadline and budget, rows fit and are ordered") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario t;
  t.meth = method::lora;
  t.micro_batch = 4;
  t.grad_accum = 8;
  t.seq_len = 2048;
  t.ckpt = checkpointing::full;
  recommend_options o;
  for (const char* id : {"rtx-4090", "a100-80gb", "h100-sxm"}) o.gpus.push_back(io::find_gpu(id));
  o.price_per_gpu_hour = {{"rtx-4090", 0.4}, {"a100-80gb", 1.8}, {"h100-sxm", 3.0}};
  o.tokens = 2e8;
  o.max_gpus = 8;
  o.deadline = seconds(3 * 3600.0);
  o.budget = 20.0;
  const auto rows = recommend(m, t, o);
  REQUIRE(!rows.empty());
  bool seen_late = false, seen_over = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    CHECK(r.memory.fits);
    CHECK(r.meets_deadline == (in_seconds(r.wall) <= 3 * 3600.0));
    REQUIRE(r.cost.has_value());
    CHECK(r.within_budget == (*r.cost <= 20.0));
    CHECK(*r.cost == doctest::Approx(r.gpu_hours * o.price_per_gpu_hour.at(r.gpu.id)));
    // Deadline-meeting rows first, then within-budget ones, then by cost.
    if (!r.meets_deadline) seen_late = true;
    else CHECK_FALSE(seen_late);
    if (r.meets_deadline && !r.within_budget) seen_over = true;
    if (r.meets_deadline && r.within_budget) CHECK_FALSE(seen_over);
    if (i > 0 && rows[i - 1].meets_deadline == r.meets_deadline && rows[i - 1].within_budget == r.within_budget)
      CHECK(*rows[i - 1].cost <= *r.cost);
    // wall = tokens / (global batch x seq) x step.
    CHECK(in_seconds(r.wall) == doctest::Approx(2e8 / (32.0 * 2048) * in_seconds(r.time.step)));
  }
  recommend_options strict = o;
  strict.keep_late = false;
  for (const auto& r : recommend(m, t, strict)) {
    CHECK(r.meets_deadline);
    CHECK(r.within_budget);
  }
}

TEST_CASE("plan: recommend notes a consumer card's missing NVLink when the layout needs it") {
  scenario s = train_on("rtx-4090", 4);
  s.parallel.tp = 4;
  const system_sizing z = size_system(s, memory_breakdown{}, time_estimate{});
  CHECK_FALSE(z.nvlink_present);
  CHECK(z.nvlink_needed);
  REQUIRE(!z.notes.empty());
  CHECK(z.notes[0].find("no NVLink") != std::string::npos);
}

// ---------------------------------------------------------------------------
namespace {
scenario search_template(const char* gpu, int n, std::int64_t seq = 2048) {
  scenario s = train_on(gpu, n);
  s.seq_len = seq;
  s.fw = framework::megatron;  // the framework that launches TP, PP and interleaved stages
  return s;
}
bool same_rows(const search_result& a, const search_result& b) {
  if (a.rows.size() != b.rows.size()) return false;
  for (std::size_t i = 0; i < a.rows.size(); ++i)
    if (!(a.rows[i].config == b.rows[i].config) || a.rows[i].score != b.rows[i].score) return false;
  return true;
}
}  // namespace

TEST_CASE("plan: search with bounds returns brute force's top-k (small spaces)") {
  struct small_case {
    const char* model;
    const char* gpu;
    int n;
    std::int64_t gb;
    search_objective obj;
    std::int64_t seq;
  };
  const small_case cases[] = {
      {"llama-2-7b", "a100-80gb", 8, 32, search_objective::time, 2048},
      {"llama-2-13b", "a100-40gb", 8, 16, search_objective::time, 4096},
      {"gpt2-xl", "rtx-4090", 4, 16, search_objective::time, 1024},
      {"llama-2-7b", "h100-sxm", 16, 64, search_objective::cost, 2048},
  };
  for (const auto& c : cases) {
    CAPTURE(c.model);
    CAPTURE(c.gpu);
    const architecture& m = io::find_model(c.model);
    const scenario t = search_template(c.gpu, c.n, c.seq);
    search_options o{.top_k = 12, .global_batch = c.gb, .objective = c.obj};
    const search_result fast = search(m, t, o);
    o.pruning = search_pruning::none;
    const search_result brute = search(m, t, o);
    CHECK(fast.evaluated == brute.evaluated);
    CHECK(brute.pruned_time == 0);
    CHECK(same_rows(fast, brute));
    CHECK(fast.memory_calls + fast.time_calls <= brute.memory_calls + brute.time_calls);
    // Every configuration is accounted for exactly once.
    CHECK(fast.fitting + fast.infeasible + fast.pruned_time + fast.rejected == fast.evaluated);
    CHECK(fast.rejected == 0);
    // Rows are real: their memory fits and their time is estimate_time's.
    for (const auto& row : fast.rows) {
      CHECK(row.memory.fits);
      CHECK(in_seconds(estimate_time(m, row.run).step) * (c.obj == search_objective::cost ? row.run.num_gpus : 1) ==
            doctest::Approx(row.score));
      CHECK(row.run.global_batch() == c.gb);
    }
    for (std::size_t i = 1; i < fast.rows.size(); ++i) CHECK(fast.rows[i - 1].score <= fast.rows[i].score);
  }
}

TEST_CASE("plan: search is identical with one and two threads") {
  const architecture m = gpt3_175b();
  const scenario t = search_template("a100-80gb", 64);
  search_options o{.top_k = 20, .global_batch = 256};
  const search_result one = search(m, t, o);
  o.threads = 2;
  const search_result two = search(m, t, o);
  CHECK(two.threads == 2);
  CHECK(one.evaluated == two.evaluated);
  CHECK(same_rows(one, two));
  CHECK(!one.rows.empty());
}

TEST_CASE("plan: search space size for 175B on 1024 A100s is counted exactly") {
  const architecture m = gpt3_175b();
  const scenario t = search_template("a100-80gb", 1024);
  const search_result r = search(m, t, {.top_k = 5, .global_batch = 1536, .threads = 2});
  REQUIRE(!r.rows.empty());
  CHECK(r.fitting + r.infeasible + r.pruned_time + r.rejected == r.evaluated);
  // Best layout uses model parallelism: 175B cannot be replicated on 80 GB.
  CHECK(r.rows[0].config.tp * r.rows[0].config.pp > 1);
  MESSAGE("175B/1024 A100: evaluated " << r.evaluated << " in " << r.seconds << " s; estimator calls "
          << r.memory_calls + r.time_calls << "; best step " << r.rows[0].score << " s (tp=" << r.rows[0].config.tp
          << " pp=" << r.rows[0].config.pp << " v=" << r.rows[0].config.virtual_stages << " mb=" << r.rows[0].config.micro_batch << ")");
}

// The properties the pruning relies on (docs/planner.md), sampled over the
// layouts of real searches. If a model change breaks one, this test names it.
TEST_CASE("plan: pruning properties P1-P4, P6 hold for the memory and time models") {
  struct sample {
    const char* model;
    const char* gpu;
    int n;
    std::int64_t gb;
  };
  const sample samples[] = {{"llama-2-7b", "a100-80gb", 8, 64}, {"llama-2-13b", "rtx-4090", 4, 16}};
  for (const auto& c : samples) {
    CAPTURE(c.model);
    const architecture& m = io::find_model(c.model);
    const scenario t = search_template(c.gpu, c.n);
    const auto plan = detail::plan_space(m, t, search_options{}, c.gb);
    scenario s = t;
    for (std::size_t gi = 0; gi < plan.groups.size(); ++gi) {
      const auto& g = plan.groups[gi];
      for (const auto& z : plan.variants) {
        layout l{.gpus = g.gpus, .tp = g.tp, .pp = g.pp, .virtual_stages = g.v, .sp = g.sp, .zero = z.zero,
                 .offload_optimizer = z.opt, .offload_params = z.params};
        double prev_mem[3] = {-1, -1, -1};
        for (std::size_t k = plan.chain_begin[gi]; k < plan.chain_begin[gi + 1]; ++k) {
          l.micro_batch = plan.chain[k];
          l.grad_accum = g.per_replica_batch / l.micro_batch;
          double mem_c[3], compute_c[3], dp1_c[3];
          for (std::size_t ci = 0; ci < 3; ++ci) {
            l.ckpt = detail::kCkpt[ci];
            apply_layout(s, l);
            mem_c[ci] = dev(m, s);
            const time_estimate te = estimate_time(m, s);
            compute_c[ci] = in_seconds(te.breakdown.compute);
            // P4: step >= compute, and compute does not depend on ZeRO / offload.
            CHECK(in_seconds(te.step) >= compute_c[ci]);
            layout l0 = l;
            l0.zero = 0; l0.offload_optimizer = offload::none; l0.offload_params = offload::none;
            scenario s0 = t;
            apply_layout(s0, l0);
            CHECK(in_seconds(estimate_time(m, s0).breakdown.compute) == doctest::Approx(compute_c[ci]).epsilon(1e-12));
            // P6: compute + exposed communication + bubble of the same layout on tp*pp GPUs
            // (dp = 1, ZeRO-0, no offload) never exceed the step of any variant.
            layout l1 = l0;
            l1.gpus = l.tp * l.pp;
            scenario s1 = t;
            apply_layout(s1, l1);
            const time_estimate t1 = estimate_time(m, s1);
            dp1_c[ci] = in_seconds(t1.breakdown.compute) + in_seconds(t1.breakdown.communication) + in_seconds(t1.breakdown.bubble);
            CHECK(in_seconds(te.step) >= (in_seconds(t1.breakdown.compute) + in_seconds(t1.breakdown.communication) +
                                          in_seconds(t1.breakdown.bubble)) * (1 - 1e-12));
            // P1: memory non-decreasing along the micro-batch chain (mb up, grad_accum down).
            CHECK(mem_c[ci] >= prev_mem[ci]);
            prev_mem[ci] = mem_c[ci];
          }
          // P2: more checkpointing never needs more memory; P3: never less compute.
          CHECK(mem_c[0] >= mem_c[1]);
          CHECK(mem_c[1] >= mem_c[2]);
          CHECK(compute_c[0] <= compute_c[1]);
          CHECK(compute_c[1] <= compute_c[2]);
          CHECK(dp1_c[0] <= dp1_c[1]);
          CHECK(dp1_c[1] <= dp1_c[2]);
        }
      }
    }
  }
}

// From dp = 2 on: going from one GPU to two adds data-parallel buffers (NCCL,
// DDP buckets), so fit() checks one GPU on its own and bisects from two.
TEST_CASE("plan: P5 - device memory does not grow with the data-parallel degree (dp >= 2)") {
  const architecture& m = io::find_model("llama-2-13b");
  for (int z = 0; z <= 3; ++z) {
    scenario s = train_on("a100-80gb");
    s.parallel.zero = z;
    double prev = 1e300;
    for (int n = 2; n <= 64; ++n) {
      s.num_gpus = n;
      const double d = dev(m, s);
      CAPTURE(z);
      CAPTURE(n);
      CHECK(d <= prev);
      prev = d;
    }
  }
}

TEST_CASE("plan: bad options name the field") {
  const architecture& m = io::find_model("llama-2-7b");
  const scenario t = search_template("a100-80gb", 8);
  search_options bad_k;
  bad_k.top_k = 0;
  CHECK_THROWS_WITH_AS(search(m, t, bad_k), "search.top_k: must be between 1 and 100000 (got 0)", config_error);
  search_options bad_threads;
  bad_threads.threads = 0;
  CHECK_THROWS_WITH_AS(search(m, t, bad_threads), "search.threads: must be between 1 and 256 (got 0)", config_error);
  recommend_options o;
  CHECK_THROWS_WITH_AS(recommend(m, t, o), "recommend.tokens: a workload needs tokens (or epochs × dataset_tokens)", config_error);
}

// ---------------------------------------------------------------------------
// The run-based planner and its (architecture, scenario) convenience overloads.
namespace {
bool same_memory(const memory_breakdown& a, const memory_breakdown& b) {
  return in_bytes(a.device) == in_bytes(b.device) && a.fits == b.fits && in_bytes(a.headroom) == in_bytes(b.headroom);
}
}  // namespace

TEST_CASE("plan: fit, suggest, search and recommend of a run equal the convenience overloads") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s = train_on("rtx-4090");
  s.meth = method::qlora;
  s.micro_batch = 4;
  s.seq_len = 1024;
  const run r(m, s);

  const fit_report a = fit(r, {.max_gpus = 16});
  const fit_report b = fit(m, s, {.max_gpus = 16});
  CHECK(same_memory(a.memory, b.memory));
  CHECK(a.binding == b.binding);
  CHECK(a.max_micro_batch == b.max_micro_batch);
  CHECK(a.max_seq_len == b.max_seq_len);
  for (std::size_t z = 0; z < 4; ++z) {
    CHECK(a.min_gpus[z].applicable == b.min_gpus[z].applicable);
    CHECK(a.min_gpus[z].gpus == b.min_gpus[z].gpus);
  }

  scenario full = s;
  full.meth = method::full;
  const std::vector<suggestion> sa = suggest(run(m, full), {.gpus = {io::find_gpu("a100-80gb")}});
  const std::vector<suggestion> sb = suggest(m, full, {.gpus = {io::find_gpu("a100-80gb")}});
  REQUIRE(sa.size() == sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    CHECK(sa[i].changes == sb[i].changes);
    CHECK(sa[i].description == sb[i].description);
    CHECK(sa[i].run == sb[i].run);
    CHECK(same_memory(sa[i].memory, sb[i].memory));
    CHECK(in_seconds(sa[i].time.step) == in_seconds(sb[i].time.step));
  }

  const scenario t = search_template("a100-80gb", 8);
  const search_result ra = search(run(m, t), {.top_k = 6, .global_batch = 32});
  const search_result rb = search(m, t, {.top_k = 6, .global_batch = 32});
  CHECK(same_rows(ra, rb));
  CHECK(ra.evaluated == rb.evaluated);
  for (std::size_t i = 0; i < ra.rows.size() && i < rb.rows.size(); ++i) CHECK(ra.rows[i].run == rb.rows[i].run);

  recommend_options o;
  o.gpus = {io::find_gpu("rtx-4090"), io::find_gpu("a100-80gb")};
  o.tokens = 1e8;
  o.max_gpus = 4;
  scenario tmpl = s;
  tmpl.micro_batch = 2;
  tmpl.grad_accum = 4;
  const auto xa = recommend(run(m, tmpl), o);
  const auto xb = recommend(m, tmpl, o);
  REQUIRE(xa.size() == xb.size());
  REQUIRE(!xa.empty());
  for (std::size_t i = 0; i < xa.size(); ++i) {
    CHECK(xa[i].gpu.id == xb[i].gpu.id);
    CHECK(xa[i].count == xb[i].count);
    CHECK(xa[i].run == xb[i].run);
    CHECK(in_seconds(xa[i].wall) == in_seconds(xb[i].wall));
  }

  const run big(m, search_template("a100-80gb", 16));
  const system_sizing za = size_system(big);
  const system_sizing zb = size_system(big.settings(), estimate_memory(big), estimate_time(big));
  CHECK(za.psu_watts == zb.psu_watts);
  CHECK(za.notes == zb.notes);
  CHECK(in_bytes(za.host_ram) == in_bytes(zb.host_ram));
}

TEST_CASE("plan: search rows carry the run's resolved settings with the row's layout") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario t = search_template("a100-80gb", 8);
  t.meth = method::qlora;
  const search_result r = search(run(m, t), {.top_k = 3, .global_batch = 16});
  REQUIRE(!r.rows.empty());
  for (const auto& row : r.rows) {
    CHECK(row.run.quant.has_value());  // QLoRA's base quantization, resolved
    CHECK(row.run.num_gpus == row.config.gpus);
    CHECK(row.run.parallel.tp_size() == row.config.tp);
    CHECK(row.run.micro_batch == row.config.micro_batch);
    CHECK(same_memory(row.memory, estimate_memory(m, row.run)));
  }
}

TEST_CASE("plan: the template's own layout does not limit search or recommend") {
  const architecture& m = io::find_model("llama-2-7b");
  // tp = 2 on two GPUs: one GPU cannot hold that layout, yet every count is searched.
  scenario t = search_template("a100-80gb", 2);
  t.meth = method::lora;
  t.parallel.tp = 2;
  t.micro_batch = 2;
  t.grad_accum = 2;
  recommend_options o;
  o.gpus = {io::find_gpu("a100-80gb")};
  o.tokens = 1e8;
  o.max_gpus = 4;
  for (const auto& rows : {recommend(run(m, t), o), recommend(m, t, o)}) {
    REQUIRE(rows.size() == 3);  // 1, 2 and 4 GPUs
    for (const auto& r : rows) {
      CHECK(r.run.num_gpus == r.count);
      CHECK(r.run.global_batch() == 4);
    }
  }
  // A template whose layout does not suit its GPU count is searched on that count.
  scenario bad = search_template("a100-80gb", 4);
  bad.parallel.tp = 8;
  const search_result r = search(m, bad, {.top_k = 2, .global_batch = 8});
  REQUIRE(!r.rows.empty());
  CHECK(r.rows[0].config.gpus == 4);
  CHECK_THROWS_AS((void)run(m, bad), config_error);
}

TEST_CASE("plan: a run left invalid by a failed edit is refused by the planner") {
  const architecture& m = io::find_model("llama-2-7b");
  run r(m, search_template("a100-80gb", 8));
  CHECK_THROWS_AS(r.edit([](scenario& x) { x.seq_len = 0; }), config_error);
  REQUIRE_FALSE(r.valid());
  CHECK_THROWS_AS((void)fit(r), config_error);
  CHECK_THROWS_AS((void)suggest(r), config_error);
  CHECK_THROWS_AS((void)search(r), config_error);
  CHECK_THROWS_AS((void)size_system(r), config_error);
  CHECK_THROWS_AS((void)recommend(r, {.tokens = 1e6}), config_error);
}

// ---------------------------------------------------------------------------
// The planning margin (plan/margin.hpp): the device memory at the band's quantile
// plus max(5% of capacity, 1 GiB) must be within the usable capacity.
namespace {
scenario lora_7b_on_4090(std::int64_t seq) {
  scenario s = train_on("rtx-4090");
  s.meth = method::lora;
  s.ckpt = checkpointing::full;
  s.seq_len = seq;
  return s;
}
// The (PEFT, one GPU) training-memory band: the generated table's row (detail/error_bands_data.hpp,
// `make accuracy`), read here so that regenerating the table does not rewrite these tests.
gpuplan::detail::band_factors peft_single_memory_band() {
  for (const auto& row : gpuplan::detail::kBandRows)
    if (row.metric == gpuplan::detail::band_metric::memory_train && row.peft == 1 && row.multi_gpu == 0) return row.f;
  return {};
}
// The band the run gets: the table's regime, widened when its combination is uncovered.
gpuplan::detail::band_factors run_memory_band(const run& r) {
  return gpuplan::detail::band_source_for(r, gpuplan::detail::band_metric::memory_train).factors;
}
}  // namespace

TEST_CASE("plan: a run whose P50 fits and whose P90 does not is tight, a plan at 0.5 and not at 0.9") {
  const architecture& m = io::find_model("llama-2-7b");
  const plan_margin p50{.confidence = 0.5};
  const plan_margin p90{};  // the default: P90, max(5%, 1 GiB)
  // The longest sequence that is a plan at P50 (fit() with that margin).
  const fit_report at50 = fit(m, lora_7b_on_4090(512), {.max_gpus = 1, .cap_seq_at_max_positions = false, .margin = p50});
  REQUIRE(at50.max_seq_len.has_value());
  const std::int64_t seq = *at50.max_seq_len;
  const run r(m, lora_7b_on_4090(seq));
  const memory_breakdown mem = estimate_memory(r);
  // LoRA, one GPU: the band is (peft, single GPU), P50 ≈ 0.95 × the estimate and P90 above
  // 1.08 × (detail/error_bands_data.hpp; hf LoRA on a GeForce card is a combination no row
  // measured, so the band is widened by kUncoveredSpread). At the P50 limit d × P50 + keep ≈ C,
  // so d × P90 + keep exceeds C by more than 0.13 × d ≈ 3 GiB: a plan at P50, not at P90.
  const gpuplan::detail::band_factors band = run_memory_band(r);
  CHECK(band.q90 > peft_single_memory_band().q90);
  REQUIRE(band.q50 < 1.0);
  REQUIRE(band.q90 > band.q50 + 0.1);
  const double cap = in_bytes(mem.capacity);
  const double keep = std::max(0.05 * cap, 1073741824.0);  // 5% of 23.99 GiB = 1.2 GiB > 1 GiB
  CHECK(in_bytes(margin_headroom(p90, mem.capacity)) == doctest::Approx(keep));
  CHECK(in_bytes(mem.device) * band.q50 + keep <= cap);
  CHECK(in_bytes(mem.device) * band.q90 + keep > cap);
  CHECK(plans_fit(r, mem, p50));
  CHECK_FALSE(plans_fit(r, mem, p90));
  CHECK(verdict_of(r, mem, p90) == verdict::tight);
  CHECK(verdict_of(r, mem, p50) == verdict::fits);
  const fit_report f = fit(r, {.max_gpus = 1, .cap_seq_at_max_positions = false});
  CHECK_FALSE(f.fits);
  CHECK(f.state == verdict::tight);
  CHECK(f.device_quantile == doctest::Approx(in_bytes(mem.device) * band.q90));
  // fit's own limit at P90 is shorter; search returns the run at 0.5 and nothing at 0.9
  // (one GPU, one sample per step, checkpointing and ZeRO as given: one layout).
  REQUIRE(f.max_seq_len.has_value());
  CHECK(*f.max_seq_len < seq);
  search_options o{.top_k = 3, .global_batch = 1, .vary_checkpointing = false, .vary_zero = false};
  o.margin = p50;
  CHECK(search(r, o).rows.size() == 1);
  o.margin = p90;
  CHECK(search(r, o).rows.empty());
}

TEST_CASE("plan: less than the headroom free on a 24 GB card is not a plan") {
  const architecture& m = io::find_model("llama-2-7b");
  const plan_margin bare{.confidence = 0.9, .headroom_fraction = 0, .headroom_min = bytes(0)};
  // The longest sequence whose P90 fits with no headroom at all: one token more does not,
  // and a token of 7B LoRA with full checkpointing costs far less than 1 GiB, so the
  // P90 leaves less than 1 GiB free there.
  const fit_report f = fit(m, lora_7b_on_4090(512), {.max_gpus = 1, .cap_seq_at_max_positions = false, .margin = bare});
  REQUIRE(f.max_seq_len.has_value());
  const run r(m, lora_7b_on_4090(*f.max_seq_len));
  const memory_breakdown mem = estimate_memory(r);
  const gpuplan::detail::band_factors band = run_memory_band(r);
  const double free_at_p90 = in_bytes(mem.capacity) - in_bytes(mem.device) * band.q90;
  CHECK(free_at_p90 >= 0);
  CHECK(free_at_p90 < 1073741824.0);
  CHECK(mem.fits);  // the point estimate fits with room to spare
  CHECK(plans_fit(r, mem, bare));
  CHECK_FALSE(plans_fit(r, mem));  // default margin: 1.2 GiB kept free
  CHECK_FALSE(plans_fit(r, mem, {.confidence = 0.9, .headroom_fraction = 0, .headroom_min = gib(1)}));
  // P99 is stricter than P90: P50 + (P90 − P50) × z(0.99)/z(0.9) = P50 + (P90 − P50) × 2.3263/1.2816.
  CHECK_FALSE(plans_fit(r, mem, {.confidence = 0.99, .headroom_fraction = 0, .headroom_min = bytes(0)}));
  const double p99 = band.q50 + (band.q90 - band.q50) * 2.3263 / 1.2816;
  CHECK(device_quantile(r, mem, {.confidence = 0.99}) == doctest::Approx(in_bytes(mem.device) * p99).epsilon(1e-4));
}

TEST_CASE("plan: margin options out of range name the field") {
  const architecture& m = io::find_model("llama-2-7b");
  const scenario s = lora_7b_on_4090(512);
  CHECK_THROWS_WITH_AS(fit(m, s, {.margin = {.confidence = 0.8}}), "fit.margin.confidence: must be 0.5, 0.9 or 0.99 (got 0.8)",
                       config_error);
  CHECK_THROWS_WITH_AS(suggest(m, s, {.margin = {.headroom_fraction = 0.6}}),
                       "suggest.margin.headroom_fraction: must be between 0 and 0.5 (got 0.6)", config_error);
  search_options o;
  o.margin.headroom_min = bytes(-1);
  CHECK_THROWS_WITH_AS(search(m, search_template("a100-80gb", 8), o),
                       "search.margin.headroom_min: must be between 0 and 1 TiB (got -1 bytes)", config_error);
  o.margin = {.confidence = std::nan("")};
  CHECK_THROWS_AS(search(m, search_template("a100-80gb", 8), o), config_error);
}

TEST_CASE("plan: the search's margin table agrees with plans_fit") {
  // margin_table looks the band up once per search; plans_fit looks it up per call.
  const architecture& m = io::find_model("llama-2-13b");
  for (const int n : {1, 2, 8, 512}) {
    scenario s = train_on("a100-80gb", n);
    s.parallel.zero = 3;
    s.ckpt = checkpointing::full;
    const run r(m, s);
    const memory_breakdown mem = estimate_memory(r);
    for (const double c : {0.5, 0.9, 0.99}) {
      const plan_margin g{.confidence = c};
      CAPTURE(n);
      CAPTURE(c);
      const detail::margin_table t(r, g);
      CHECK(t.fits(mem, n) == plans_fit(r, mem, g));
    }
  }
}

// Owners first: for a 24 GB GeForce owner and a T4 owner, the first suggestions
// for a 7B/13B run that does not fit are changes on their own card, and every row fits.
TEST_CASE("plan: suggestions for GeForce and T4 owners start on their own card, and every row fits") {
  struct owner_case {
    const char* model;
    const char* gpu;
    method meth;
    std::int64_t seq;
    std::int64_t micro_batch;
  };
  const owner_case cases[] = {
      {"llama-2-13b", "rtx-4090", method::qlora, 4096, 8},  // 7.9 GB NF4 weights, activations of 8 × 4096 do not
      {"llama-2-13b", "rtx-3090", method::lora, 2048, 1},   // 26 GB of bf16 weights > 24 GB
      {"llama-2-7b", "rtx-4090", method::full, 2048, 1},    // 16 B/param = 108 GB
      {"llama-2-7b", "t4", method::lora, 2048, 1},          // 13.5 GB of weights + the rest > 15 GiB at P90
      {"llama-2-7b", "t4", method::qlora, 4096, 8},
      {"llama-2-13b", "t4", method::full, 2048, 1},
  };
  suggest_options o;
  for (const auto& id : io::gpu_ids()) o.gpus.push_back(io::find_gpu(id));
  o.price_per_gpu_hour = {{"a100-80gb", 1.5}, {"h100-sxm", 2.5}, {"rtx-a6000", 0.8}, {"l40s", 1.0}};
  for (const auto& c : cases) {
    CAPTURE(c.model);
    CAPTURE(c.gpu);
    CAPTURE(to_string(c.meth));
    const architecture& m = io::find_model(c.model);
    scenario s = train_on(c.gpu);
    s.meth = c.meth;
    s.seq_len = c.seq;
    s.micro_batch = c.micro_batch;
    s.ckpt = c.meth == method::full ? checkpointing::none : checkpointing::full;
    REQUIRE_FALSE(fits(m, s));
    const std::vector<suggestion> list = suggest(m, s, o);
    REQUIRE(!list.empty());
    CHECK(list.front().scope == suggestion_scope::own_card);
    CHECK(list.front().run.gpu.id == c.gpu);
    CHECK(list.front().run.num_gpus == 1);
    double last_price = 0;
    for (const auto& g : list) {
      CAPTURE(g.description);
      CHECK(g.fits);
      CHECK(fits(m, g.run));  // re-checked from scratch
      if (g.scope == suggestion_scope::other_gpu) {
        CHECK(in_bytes(g.run.gpu.usable_memory) > in_bytes(s.gpu.usable_memory));
        if (g.price_per_gpu_hour) {
          CHECK(*g.price_per_gpu_hour >= last_price);  // cheapest first (no token count: by price)
          last_price = *g.price_per_gpu_hour;
        }
      }
    }
  }
}

TEST_CASE("plan: shorter sequence is the longest that fits, and a token count prices the run") {
  const architecture& m = io::find_model("llama-2-13b");
  scenario s = train_on("rtx-4090");
  s.meth = method::qlora;
  s.ckpt = checkpointing::full;
  s.seq_len = 4096;
  s.micro_batch = 8;
  s.tokens = 1e8;
  suggest_options o{.gpus = {io::find_gpu("a100-80gb")}, .pairs = false};
  o.price_per_gpu_hour = {{"a100-80gb", 1.5}};
  const std::vector<suggestion> list = suggest(m, s, o);
  bool seen_seq = false, seen_gpu = false;
  for (const auto& g : list) {
    if (g.changes == std::vector<change_kind>{change_kind::shorter_sequence}) {
      seen_seq = true;
      CHECK(g.effect == change_effect::different_data);
      CHECK(g.run.seq_len < 4096);
      scenario t = s;
      t.seq_len = g.run.seq_len + 1;
      CHECK_FALSE(fits(m, t));
    }
    if (g.changes == std::vector<change_kind>{change_kind::bigger_gpu}) {
      seen_gpu = true;
      REQUIRE(g.run_cost.has_value());
      // cost = GPU-hours of 1e8 tokens on one A100 × 1.5 $/GPU-hour.
      CHECK(*g.run_cost == doctest::Approx(estimate_time(m, g.run).gpu_hours * 1.5));
    }
  }
  CHECK(seen_seq);
  CHECK(seen_gpu);
}

}  // namespace unit_plan
