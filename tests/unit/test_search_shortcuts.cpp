// The search's exact shortcuts (plan/search.hpp, docs/planner.md "Algorithm"): the fit
// test stage by stage (memory.hpp every_stage, property P7), the memory frontiers found
// with P1/P2 and hints (detail/plan_search_space.hpp frontier_table), the hoisted
// parameter count (run::parameters) and the per-block costs shared between pipeline
// stages (timing_compute.hpp stage_blocks_of). Each is compared with what it replaces.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/plan.hpp"
#include "support/models.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_search_shortcuts {

using namespace gpuplan;

namespace {

scenario megatron_on(const char* gpu, int n, std::int64_t seq = 2048) {
  scenario s;
  s.gpu = io::find_gpu(gpu);
  s.num_gpus = n;
  s.seq_len = seq;
  s.fw = framework::megatron;
  return s;
}

// Every `step`-th layout of the search space of `t` at global batch `gb`, every level and variant.
std::vector<layout> sample_layouts(const architecture& m, const scenario& t, std::int64_t gb, std::size_t step) {
  const detail::search_plan plan = detail::plan_space(m, t, search_options{}, gb);
  std::vector<layout> out;
  std::size_t i = 0;
  for (std::size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const detail::search_group& g = plan.groups[gi];
    for (std::size_t k = plan.chain_begin[gi]; k < plan.chain_begin[gi + 1]; ++k)
      for (const checkpointing c : plan.ckpts)
        for (const detail::zero_variant& z : plan.variants) {
          if (i++ % step != 0) continue;
          out.push_back({.gpus = g.gpus, .tp = g.tp, .pp = g.pp, .virtual_stages = g.v, .sp = g.sp, .ckpt = c,
                         .zero = z.zero, .offload_optimizer = z.opt, .offload_params = z.params,
                         .micro_batch = plan.chain[k], .grad_accum = g.per_replica_batch / plan.chain[k]});
        }
  }
  return out;
}

struct shortcut_case {
  std::string name;
  architecture model;
  scenario tmpl;
  std::int64_t gb;
  std::size_t step;
};

std::vector<shortcut_case> shortcut_cases() {
  std::vector<shortcut_case> cases;
  cases.push_back({"gpt3-175b on 1024 A100", test::gpt3_175b(), megatron_on("a100-80gb", 1024), 1536, 7});
  cases.push_back({"llama-2-7b on 32 A100-40GB", io::find_model("llama-2-7b"), megatron_on("a100-40gb", 32), 64, 3});
  // Embedding and loss counted in the split: middle stages of two block counts.
  scenario units = megatron_on("a100-80gb", 64);
  units.parallel.account_for_embedding_in_pipeline_split = true;
  units.parallel.account_for_loss_in_pipeline_split = true;
  cases.push_back({"llama-2-13b, embedding and loss in the split", io::find_model("llama-2-13b"), units, 128, 5});
  // Freeze: trainable blocks depend on the block positions, so no middle stage covers another.
  scenario frozen = megatron_on("a100-80gb", 32);
  frozen.meth = method::freeze;
  frozen.freeze.trainable_layers = 7;
  cases.push_back({"llama-2-7b, freeze", io::find_model("llama-2-7b"), frozen, 64, 3});
  // A paged optimizer: the whole estimate decides.
  scenario paged = megatron_on("rtx-4090", 16);
  paged.opt = optimizer::paged_adamw_8bit;
  cases.push_back({"llama-2-7b, paged optimizer", io::find_model("llama-2-7b"), paged, 32, 3});
  return cases;
}

}  // namespace

TEST_CASE("search shortcuts: the fit test stage by stage equals the whole estimate's") {
  for (const shortcut_case& c : shortcut_cases()) {
    CAPTURE(c.name);
    run r(c.model, c.tmpl);
    for (const plan_margin& g : {plan_margin{}, plan_margin{.confidence = 0.5, .headroom_fraction = 0},
                                 plan_margin{.confidence = 0.99, .headroom_fraction = 0.2}}) {
      const detail::margin_table table(r, g);
      int fit = 0, not_fit = 0;
      for (const layout& l : sample_layouts(c.model, c.tmpl, c.gb, c.step)) {
        try {
          r.edit([&](scenario& s) { apply_layout(s, l); });
        } catch (const config_error&) {
          continue;  // a layout the rules reject: the search counts it rejected
        }
        CAPTURE(l.tp);
        CAPTURE(l.pp);
        CAPTURE(l.virtual_stages);
        CAPTURE(l.micro_batch);
        const bool whole = table.fits(estimate_memory(r), l.gpus);
        CHECK(table.fits(r, l.gpus) == whole);
        CHECK(whole == plans_fit(r, estimate_memory(r), g));
        (whole ? fit : not_fit) += 1;
      }
      CHECK(fit + not_fit > 0);
    }
  }
}

// every_stage with a threshold on device memory, for every threshold a stage sets: the
// same answer as the whole estimate (the stage of the largest device figure), on runs whose
// middle stages hold one or two block counts (uneven splits outside Megatron-LM).
TEST_CASE("search shortcuts: every_stage answers as the largest stage, for any threshold") {
  const architecture& m = io::find_model("llama-2-7b");  // 32 blocks
  int runs = 0;
  for (const framework fw : {framework::deepspeed, framework::megatron})
    for (const int pp : {2, 3, 4, 5, 6, 7, 8, 16})
      for (const std::int64_t ga : {1, 3, 12, 64})
        for (const checkpointing c : {checkpointing::none, checkpointing::full}) {
          scenario s = megatron_on("a100-80gb", pp, 4096);
          s.fw = fw;
          s.parallel.pp = pp;
          s.grad_accum = ga;
          s.micro_batch = 2;
          s.ckpt = c;
          std::optional<run> made;
          try {
            made.emplace(m, s);
          } catch (const config_error&) {
            continue;  // Megatron-LM's even split
          }
          ++runs;
          const run& r = *made;
          CAPTURE(pp);
          CAPTURE(ga);
          const double worst = in_bytes(estimate_memory(r).device);
          for (const memory_breakdown& st : estimate_memory_stages(r))
            for (const double x : {in_bytes(st.device), in_bytes(st.device) * (1 - 1e-12)}) {
              auto within = [&](const memory_breakdown& b) { return in_bytes(b.device) <= x; };
              CHECK(detail::mem::every_stage(r, within) == (worst <= x));
            }
        }
  CHECK(runs > 40);
}

// P7: a middle stage (neither first nor last) holding the same blocks as an earlier middle
// stage, with no more micro-batches in flight, needs no more device memory.
TEST_CASE("search shortcuts: P7 - middle stages with the same blocks grow with the micro-batches in flight") {
  int compared = 0;
  for (const shortcut_case& c : shortcut_cases()) {
    CAPTURE(c.name);
    if (c.tmpl.meth == method::freeze) continue;
    for (const layout& l : sample_layouts(c.model, c.tmpl, c.gb, c.step * 3)) {
      if (l.pp < 4) continue;
      scenario s = c.tmpl;
      apply_layout(s, l);
      std::optional<run> made;
      try {
        made.emplace(c.model, s);
      } catch (const config_error&) {
        continue;
      }
      const run& r = *made;
      const std::vector<memory_breakdown> stages = estimate_memory_stages(r);
      const detail::mem::facts f = detail::mem::facts_with_acts(c.model, r.settings());
      for (int a = 1; a < l.pp - 1; ++a)
        for (int b = a + 1; b < l.pp - 1; ++b) {
          std::int64_t begin = 0, ea = 0, da = 0, eb = 0, db = 0;
          detail::mem::blocks_of_stage(c.model, r.settings().parallel, a, begin, ea, da);
          detail::mem::blocks_of_stage(c.model, r.settings().parallel, b, begin, eb, db);
          if (ea != eb || da != db) continue;
          if (detail::mem::in_flight_micro_batches(r.settings(), f, a) < detail::mem::in_flight_micro_batches(r.settings(), f, b)) continue;
          CHECK(in_bytes(stages[static_cast<std::size_t>(a)].device) >= in_bytes(stages[static_cast<std::size_t>(b)].device));
          ++compared;
        }
    }
  }
  CHECK(compared > 0);
}

// A monotone predicate (entry k fits below a threshold per level) found exactly, whatever
// the hints left by the previous group, with at most one probe per entry.
TEST_CASE("search shortcuts: the frontier table finds every threshold") {
  const std::vector<std::int64_t> chain{1, 2, 3, 4, 6, 8, 12, 16, 24, 48};
  const int len = static_cast<int>(chain.size());
  detail::frontier_table table;
  const detail::search_group g{.gpus = 64, .tp = 8, .pp = 4, .v = 1, .sp = true, .per_replica_batch = 48};
  std::vector<detail::search_group> groups(40, g);
  int round = 0;
  for (int f0 = 0; f0 <= len; f0 += 3)
    for (int f1 = f0; f1 <= len; f1 += 2)
      for (int f2 = f1; f2 <= len; f2 += 4) {
        const int want[3] = {f0, f1, f2};
        int probes = 0;
        auto fits = [&](std::size_t ci, std::size_t, int k) {
          ++probes;
          return k < want[ci];
        };
        table.start(groups[static_cast<std::size_t>(round++ % 40)], chain.data(), len);
        for (const std::size_t ci : {std::size_t{0}, std::size_t{1}, std::size_t{2}}) {
          CAPTURE(ci);
          CHECK(table.get(ci, 0, 3, fits) == want[ci]);
          CHECK(table.get(ci, 3, 3, fits) == want[ci]);
        }
        CHECK(probes <= 2 * 3 * len);
      }
}

// The search's time estimates keep the block costs of earlier layouts (block_memo): each
// equals estimate_time of the run, to the last bit, in the order the space is visited.
TEST_CASE("search shortcuts: time estimates reusing block costs equal estimate_time") {
  for (const shortcut_case& c : shortcut_cases()) {
    CAPTURE(c.name);
    run r(c.model, c.tmpl);
    detail::block_memo memo;
    int compared = 0;
    for (const layout& l : sample_layouts(c.model, c.tmpl, c.gb, c.step)) {
      try {
        r.edit([&](scenario& s) { apply_layout(s, l); });
      } catch (const config_error&) {
        continue;
      }
      const time_estimate reused = detail::estimate_time_reusing(r, memo), own = estimate_time(r);
      CHECK(in_seconds(reused.step) == in_seconds(own.step));
      CHECK(in_seconds(reused.breakdown.compute) == in_seconds(own.breakdown.compute));
      CHECK(in_seconds(reused.breakdown.communication) == in_seconds(own.breakdown.communication));
      CHECK(in_seconds(reused.breakdown.bubble) == in_seconds(own.breakdown.bubble));
      CHECK(reused.mfu == own.mfu);
      ++compared;
    }
    CHECK(compared > 0);
  }
}

TEST_CASE("search shortcuts: a run counts its model's parameters once, as count_parameters does") {
  const architecture& m = io::find_model("mixtral-8x7b");
  run r(m, megatron_on("h100-sxm", 8));
  const parameter_breakdown p = count_parameters(m);
  CHECK(r.parameters().total == p.total);
  CHECK(r.parameters().largest_layer == p.largest_layer);
  r.edit([](scenario& s) { s.parallel.tp = 2; });
  CHECK(r.parameters().total == p.total);
  CHECK(trainable_parameters(r) == trainable_parameters(m, r.settings()));
}

// Encoder-decoder with four stages: the last holds decoder blocks only, so the other
// stages' encoder blocks are costed on their own; every stage equals its own costing.
TEST_CASE("search shortcuts: pipeline stages share their per-block costs") {
  const architecture& a = io::find_model("t5-base");
  scenario s = megatron_on("a100-80gb", 4, 512);
  s.parallel.pp = 4;
  s.grad_accum = 8;
  const run r(a, s);
  const efficiency_params e{};
  warning_set w = 0;
  const detail::device_rates d = detail::device_rates_of(r.gpu(), precision_of(r.settings()), e, w);
  const detail::microbatch_shape mb = detail::microbatch_of(a, r.settings());
  const detail::stage_blocks last = detail::stage_blocks_of(a, r.settings(), d, mb, e);
  CHECK(last.plain.count == 0);
  for (int st = 0; st < 4; ++st) {
    CAPTURE(st);
    const detail::stage_blocks own = detail::stage_blocks_of(a, r.settings(), d, mb, e, st);
    const detail::stage_blocks lent = detail::stage_blocks_of(a, r.settings(), d, mb, e, st, &last);
    for (const auto& [x, y] : {std::pair{own.plain, lent.plain}, std::pair{own.decoder, lent.decoder}}) {
      CHECK(x.count == y.count);
      CHECK(x.cost.linear == y.cost.linear);
      CHECK(x.cost.core == y.cost.core);
      CHECK(x.cost.core_bwd == y.cost.core_bwd);
      CHECK(x.cost.elementwise == y.cost.elementwise);
      CHECK(x.cost.tp_bytes == y.cost.tp_bytes);
    }
  }
}

}  // namespace unit_search_shortcuts
