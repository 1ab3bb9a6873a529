// recommend with prices, rent vs buy, default global batch and the GPUs a deadline
// needs; the layouts each framework can launch; PCIe without peer-to-peer; the
// machine around a run (plan/recommend.hpp, plan/search.hpp, plan/system.hpp,
// framework.hpp, detail/timing_comm.hpp). Figures are derived in the comments.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/detail/timing_comm.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/prices.hpp"
#include "gpuplan/plan.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_recommend {

using namespace gpuplan;

namespace {

scenario on(const char* gpu, int n) {
  scenario s;
  s.gpu = io::find_gpu(gpu);
  s.num_gpus = n;
  return s;
}

bool has_note(const system_sizing& z, const std::string& needle) {
  for (const auto& n : z.notes)
    if (n.find(needle) != std::string::npos) return true;
  return false;
}

recommendation fake_row(const char* gpu, int count, double wall_hours) {
  recommendation r;
  r.gpu = io::find_gpu(gpu);
  r.count = count;
  r.wall = seconds(wall_hours * 3600);
  r.meets_deadline = false;
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------
TEST_CASE("framework rules: which (ZeRO, offload) variants and groups each framework launches") {
  using detail::group_allowed;
  using detail::variant_allowed;
  const auto& hf = profile_of(framework::hf);
  const auto& ds = profile_of(framework::deepspeed);
  const auto& fsdp = profile_of(framework::fsdp);
  const auto& tt = profile_of(framework::torchtune);
  const auto& mg = profile_of(framework::megatron);
  const auto& us = profile_of(framework::unsloth);
  const detail::zero_variant z0{0, offload::none, offload::none}, z1{1, offload::none, offload::none},
      z2{2, offload::none, offload::none}, z2o{2, offload::cpu, offload::none}, z3{3, offload::none, offload::none},
      z3all{3, offload::cpu, offload::cpu};
  // No ZeRO-3 at dp 1 (shards nothing), for any framework.
  CHECK_FALSE(variant_allowed(ds, z3, 1, 1));
  CHECK_FALSE(variant_allowed(ds, z3all, 1, 1));
  CHECK(variant_allowed(ds, z3, 2, 1));
  // No ZeRO-2/3 with pipeline parallelism (deepspeed/runtime/pipe/engine.py); ZeRO-1 is fine.
  CHECK_FALSE(variant_allowed(mg, z2, 4, 2));
  CHECK_FALSE(variant_allowed(ds, z3, 4, 2));
  CHECK(variant_allowed(mg, z1, 4, 2));
  // Megatron: distributed optimizer (ZeRO-1) only, no CPU offload.
  CHECK_FALSE(variant_allowed(mg, z2, 4, 1));
  CHECK_FALSE(variant_allowed(mg, z3all, 4, 1));
  // FSDP: NO_SHARD / SHARD_GRAD_OP / FULL_SHARD, offload of everything together only.
  CHECK_FALSE(variant_allowed(fsdp, z1, 4, 1));
  CHECK(variant_allowed(fsdp, z2, 4, 1));
  CHECK_FALSE(variant_allowed(fsdp, z2o, 4, 1));
  CHECK(variant_allowed(fsdp, z3all, 4, 1));
  // torchtune: single device or FULL_SHARD.
  CHECK(variant_allowed(tt, z0, 1, 1));
  CHECK_FALSE(variant_allowed(tt, z2, 4, 1));
  CHECK(variant_allowed(tt, z3, 4, 1));
  // hf (accelerate): every ZeRO stage and offload, but data parallel only.
  CHECK(variant_allowed(hf, z2o, 4, 1));
  CHECK_FALSE(group_allowed(hf, 8, 2, 1, 1, false));
  CHECK_FALSE(group_allowed(ds, 8, 1, 2, 1, false));
  CHECK_FALSE(group_allowed(fsdp, 8, 1, 1, 1, true));
  CHECK(group_allowed(hf, 8, 1, 1, 1, false));
  CHECK(group_allowed(mg, 8, 2, 2, 2, true));
  // Unsloth: one GPU.
  CHECK(group_allowed(us, 1, 1, 1, 1, false));
  CHECK_FALSE(group_allowed(us, 2, 1, 1, 1, false));
  CHECK(variant_allowed(us, z0, 1, 1));
  CHECK_FALSE(variant_allowed(us, z2o, 1, 1));
}

TEST_CASE("framework rules: search returns only layouts the framework can launch") {
  const architecture& m = io::find_model("llama-2-13b");
  scenario t = on("a100-80gb", 8);
  t.seq_len = 2048;
  search_options o{.top_k = 1000, .global_batch = 64};
  for (const framework f : {framework::hf, framework::deepspeed, framework::fsdp, framework::torchtune}) {
    t.fw = f;
    CAPTURE(to_string(f));
    const search_result r = search(m, t, o);
    REQUIRE(!r.rows.empty());
    for (const auto& row : r.rows) {
      CHECK(row.config.tp == 1);
      CHECK(row.config.pp == 1);
      CHECK_FALSE(row.config.sp);
      CHECK(profile_of(f).allows_zero(row.config.zero));
    }
    CHECK(r.fitting + r.infeasible + r.pruned_time + r.rejected == r.evaluated);
  }
  // Megatron on 64 GPUs: model parallelism appears, and never ZeRO-2/3 with a pipeline.
  t.fw = framework::megatron;
  t.num_gpus = 64;
  const search_result mr = search(io::find_model("llama-2-70b"), t, {.top_k = 1000, .global_batch = 512});
  REQUIRE(!mr.rows.empty());
  bool model_parallel = false;
  for (const auto& row : mr.rows) {
    model_parallel = model_parallel || row.config.tp * row.config.pp > 1;
    if (row.config.pp > 1) CHECK(row.config.zero <= 1);
    CHECK(row.config.zero <= 1);
  }
  CHECK(model_parallel);
  // No ZeRO-3 at dp 1: one GPU never gets it, whatever fits.
  scenario one = on("rtx-4090", 1);
  one.meth = method::qlora;
  for (const auto& row : search(io::find_model("llama-2-7b"), one, {.top_k = 1000, .global_batch = 8}).rows)
    CHECK(row.config.zero != 3);
  // Unsloth: no layout on 2 GPUs, some on 1.
  scenario u = on("rtx-4090", 2);
  u.meth = method::qlora;
  u.fw = framework::unsloth;
  CHECK(search(io::find_model("llama-2-7b"), u, {.global_batch = 8}).rows.empty());
  u.num_gpus = 1;
  CHECK_FALSE(search(io::find_model("llama-2-7b"), u, {.global_batch = 8}).rows.empty());
}

// ---------------------------------------------------------------------------
TEST_CASE("p2p: GeForce collectives go through host memory") {
  // PCIe 4.0 x16 = 32 GB/s per direction (hardware.hpp). Without P2P: × 24/28 and 14 µs
  // per step (2× RTX 5090 measurements, detail/timing_comm.hpp); with it: 2 µs intranode.
  const scenario g = on("rtx-4090", 2);
  const scenario pro = on("rtx-6000-ada", 2);
  CHECK_FALSE(g.gpu.p2p);
  CHECK(pro.gpu.p2p);
  const detail::comm_link lg = detail::collective_link(g, 2, 1);
  const detail::comm_link lp = detail::collective_link(pro, 2, 1);
  CHECK(lg.bytes_per_s == doctest::Approx(32e9 * 24.0 / 28.0));
  CHECK(lg.latency == doctest::Approx(14e-6));
  CHECK(lp.bytes_per_s == doctest::Approx(32e9));
  CHECK(lp.latency == doctest::Approx(2e-6));
  // The RTX 3090's NVLink bridge joins two cards: NVLink, not host memory (112.5 GB/s bidir / 2).
  const detail::comm_link l3090 = detail::collective_link(on("rtx-3090", 2), 2, 1);
  CHECK(l3090.bytes_per_s == doctest::Approx(56.25e9));
  // 2× data-parallel step, same model and layout: the 4090 pays more exposed communication
  // and is slower than the RTX 6000 Ada (same Ada class, P2P allowed).
  const architecture& m = io::find_model("llama-2-7b");
  scenario a = g, b = pro;
  for (scenario* s : {&a, &b}) {
    s->meth = method::qlora;
    s->seq_len = 2048;
    s->micro_batch = 1;
    s->grad_accum = 4;
  }
  const time_estimate ta = estimate_time(m, a), tb = estimate_time(m, b);
  CHECK(in_seconds(ta.breakdown.communication) > in_seconds(tb.breakdown.communication));
  CHECK(in_seconds(ta.step) > in_seconds(tb.step));
  // The same card with P2P switched on communicates less: the flag alone makes the difference.
  scenario a2 = a;
  a2.gpu.p2p = true;
  CHECK(in_seconds(estimate_time(m, a2).breakdown.communication) < in_seconds(ta.breakdown.communication));
}

TEST_CASE("p2p: the catalog column and the GPU JSON field") {
  // GeForce cards: no; data-centre and workstation cards: yes (src/data/gpus.md).
  for (const char* id : {"rtx-3060", "rtx-3090", "rtx-4090", "rtx-5090"}) CHECK_FALSE(io::find_gpu(id).p2p);
  for (const char* id : {"rtx-a6000", "rtx-6000-ada", "l40s", "a100-80gb", "h100-sxm"}) CHECK(io::find_gpu(id).p2p);
  const auto base = R"({"id": "x", "memory_gb": 24, "bandwidth_gb_s": 1000, "bf16_tflops": 100)";
  CHECK_FALSE(io::read_gpu(nlohmann::json::parse(std::string(base) + R"(, "p2p": "no"})")).p2p);
  CHECK_FALSE(io::read_gpu(nlohmann::json::parse(std::string(base) + R"(, "p2p": false})")).p2p);
  CHECK(io::read_gpu(nlohmann::json::parse(std::string(base) + "}")).p2p);  // default: allowed
  CHECK_THROWS_WITH_AS(io::read_gpu(nlohmann::json::parse(std::string(base) + R"(, "p2p": "maybe"})")),
                       R"(gpu.p2p: must be true/false or "yes"/"no" (got "maybe"))", config_error);
  CHECK_THROWS_AS(io::read_gpu(nlohmann::json::parse(std::string(base) + R"(, "p2p": 2})")), config_error);
  // The JSON a GPU writes reads back with its flag.
  CHECK_FALSE(io::read_gpu(io::write_gpu(io::find_gpu("rtx-4090"))).p2p);
}

// ---------------------------------------------------------------------------
TEST_CASE("recommend: the global batch practitioners use when none is given") {
  const architecture& m8 = io::find_model("llama-3.1-8b");
  scenario s;
  s.meth = method::lora;
  s.seq_len = 2048;
  CHECK(default_global_batch(m8, s, 2e9) == 32);  // 65,536 tokens / 2048 = 32 sequences
  s.seq_len = 512;
  CHECK(default_global_batch(m8, s, 2e9) == 128);  // 128 sequences, the cap
  s.seq_len = 8192;
  CHECK(default_global_batch(m8, s, 2e9) == 16);  // 8 → raised to the floor of 16
  // Pre-training (full, >= 10B tokens): Llama-2-70B 4M tokens / 4096 = 1024; 7B (6.7B) 2M / 2048 = 977 → 1024.
  scenario p;
  p.meth = method::full;
  p.seq_len = 4096;
  CHECK(default_global_batch(io::find_model("llama-2-70b"), p, 2e12) == 1024);
  p.seq_len = 2048;
  CHECK(default_global_batch(io::find_model("llama-2-7b"), p, 2e12) == 1024);
  // GPT-2 (124M): 0.5M / 1024 = 488 → 512.
  p.seq_len = 1024;
  CHECK(default_global_batch(io::find_model("gpt2"), p, 1e10) == 512);
  // Full fine-tuning on fewer tokens is fine-tuning.
  CHECK(default_global_batch(io::find_model("llama-2-7b"), p, 1e9) == 64);  // 65,536 / 1024
  // The option wins; else a template batch above 1.
  recommend_options o;
  o.tokens = 2e9;
  s.seq_len = 2048;
  CHECK(recommend_global_batch(m8, s, o) == 32);
  s.micro_batch = 4;
  s.grad_accum = 2;
  CHECK(recommend_global_batch(m8, s, o) == 8);
  o.global_batch = 256;
  CHECK(recommend_global_batch(m8, s, o) == 256);
}

TEST_CASE("recommend: rentals, whole instances and rent vs buy") {
  const std::vector<rental_offer> offers = {
      {"market", "per-gpu", 1, 2.0, "on-demand", ""},
      {"cloud", "8x", 8, 1.5, "on-demand", ""},
  };
  // 1 GPU: 2.0/h per GPU vs a whole 8-GPU instance at 12.0/h.
  CHECK(cheapest_rental(offers, 1)->price_per_hour == doctest::Approx(2.0));
  // 8 GPUs: 16.0 vs 12.0; 9 GPUs: 18.0 vs two instances 24.0.
  CHECK(cheapest_rental(offers, 8)->offer.provider == "cloud");
  CHECK(cheapest_rental(offers, 8)->price_per_hour == doctest::Approx(12.0));
  CHECK(cheapest_rental(offers, 9)->offer.provider == "market");
  CHECK(cheapest_rental({{"cloud", "8x", 8, 1.5, "on-demand", ""}}, 9)->instances == 2);
  CHECK_FALSE(cheapest_rental({}, 1).has_value());
  // RTX 4090: $1,599 / ($0.60 − 450 W × $0.1648/kWh) = 1599 / 0.52584 = 3040.9 h.
  CHECK(rent_vs_buy_hours(1599, 0.60, 450, kDefaultKwhPrice) == doctest::Approx(1599 / (0.60 - 0.450 * 0.1648)));
  CHECK(rent_vs_buy_hours(1599, 0.60, 450, kDefaultKwhPrice) == doctest::Approx(3040.9).epsilon(1e-4));
  // The catalog reader's checked version is the same formula.
  CHECK(io::break_even_hours(1599, 0.60, 450, 0.3) == rent_vs_buy_hours(1599, 0.60, 450, 0.3));
  // Renting below the card's electricity never pays off for the buyer.
  CHECK(std::isinf(rent_vs_buy_hours(1599, 0.05, 450, 0.2)));

  // In recommend: cost = wall-clock hours × the instances' price; break-even per card.
  const architecture& m = io::find_model("llama-2-7b");
  scenario t;
  t.meth = method::qlora;
  t.seq_len = 2048;
  recommend_options o;
  o.gpus = {io::find_gpu("rtx-4090")};
  o.rentals["rtx-4090"] = {{"market", "per-gpu", 1, 0.6, "on-demand", "2026-03-10"}};
  o.purchase_usd["rtx-4090"] = 1599;
  o.tokens = 5e7;
  o.max_gpus = 2;
  const auto rows = recommend(m, t, o);
  REQUIRE(!rows.empty());
  for (const auto& r : rows) {
    REQUIRE(r.cost.has_value());
    CHECK(*r.cost == doctest::Approx(in_hours(r.wall) * 0.6 * r.count));
    CHECK(*r.purchase == doctest::Approx(1599.0 * r.count));
    CHECK(*r.break_even_hours == doctest::Approx(3040.9).epsilon(1e-4));
    CHECK(*r.own_electricity == doctest::Approx(r.count * 0.450 * in_hours(r.wall) * kDefaultKwhPrice));
    CHECK(r.run.global_batch() == 32);  // the fine-tuning default at seq 2048
  }
  // A user price overrides the offers.
  o.price_per_gpu_hour["rtx-4090"] = 0.25;
  for (const auto& r : recommend(m, t, o)) CHECK(*r.cost == doctest::Approx(r.gpu_hours * 0.25));
}

TEST_CASE("recommend: cards to buy rank by purchase + electricity, GeForce in one machine") {
  // QLoRA of llama-2-7b over 100M tokens on RTX 3060s with no rental price, only a purchase
  // price: the first row is the fewest cards that meet the day's deadline, not the fastest
  // (32 cards in 4 servers before), and GeForce counts stop at one workstation's four.
  const architecture& m = io::find_model("llama-2-7b");
  scenario t;
  t.meth = method::qlora;
  t.seq_len = 2048;
  recommend_options o;
  o.gpus = {io::find_gpu("rtx-3060")};
  o.purchase_usd["rtx-3060"] = 329;
  o.tokens = 1e8;
  const auto rows = recommend(m, t, o);
  REQUIRE(!rows.empty());
  for (const auto& r : rows) {
    CHECK(r.count <= 4);
    CHECK_FALSE(r.cost.has_value());
    REQUIRE(r.own_cost.has_value());
    // purchase + this run's electricity: count × $329 + count × 170 W × hours × $/kWh.
    CHECK(*r.own_cost == doctest::Approx(r.count * 329.0 + r.count * 0.170 * in_hours(r.wall) * kDefaultKwhPrice));
    CHECK(r.system.nodes == 1);
  }
  const recommendation& first = rows.front();
  CHECK(first.meets_deadline);
  for (const auto& r : rows)
    if (r.meets_deadline) CHECK(first.count <= r.count);  // the fewest cards that meet the deadline
  // Data-center cards still scale past one machine.
  CHECK(max_cards_of(io::find_gpu("h100-sxm"), 64) == 64);
  CHECK(max_cards_of(io::find_gpu("rtx-4090"), 64) == 4);
}

TEST_CASE("recommend: a budget needs a price for every candidate, named in the error") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario t;
  t.meth = method::qlora;
  recommend_options o;
  o.gpus = {io::find_gpu("rtx-4090"), io::find_gpu("rtx-3060")};
  o.price_per_gpu_hour = {{"rtx-4090", 0.4}};
  o.tokens = 1e7;
  o.budget = 100;
  CHECK_THROWS_WITH_AS(recommend(m, t, o),
                       doctest::Contains("recommend.budget: no price for GPU 'rtx-3060'"), config_error);
  o.rentals["rtx-3060"] = {{"market", "per-gpu", 1, 0.1, "on-demand", ""}};
  CHECK_NOTHROW(recommend(m, t, o));
  o.kwh_price = -1;
  CHECK_THROWS_WITH_AS(recommend(m, t, o), doctest::Contains("recommend.kwh_price"), config_error);
  o.kwh_price = 0.2;
  o.global_batch = 0;
  CHECK_THROWS_WITH_AS(recommend(m, t, o), doctest::Contains("recommend.global_batch"), config_error);
}

TEST_CASE("recommend: GPUs a deadline needs, extrapolated or modelled") {
  // wall ∝ count^-α from the two largest counts of the fastest type.
  // 4 → 100 h, 8 → 50 h: α = 1; need 8 × 50/24 = 16.7 → 32 (the next power of two).
  std::vector<recommendation> rows = {fake_row("h100-sxm", 4, 100), fake_row("h100-sxm", 8, 50),
                                      fake_row("a100-80gb", 8, 120)};
  auto x = extrapolate_deadline(rows, seconds(24 * 3600.0));
  REQUIRE(x.has_value());
  CHECK(x->gpu.id == "h100-sxm");
  CHECK(x->measured_count == 8);
  CHECK(x->exponent == doctest::Approx(1.0));
  CHECK(x->exponent_measured);
  CHECK(*x->count == 32);
  // 8 → 60 h: α = ln(100/60)/ln 2 = 0.737; need 8 × 2.5^(1/0.737) = 27.7 → 32.
  rows[1] = fake_row("h100-sxm", 8, 60);
  x = extrapolate_deadline(rows, seconds(24 * 3600.0));
  CHECK(x->exponent == doctest::Approx(std::log(100.0 / 60.0) / std::log(2.0)));
  CHECK(*x->count == 32);
  // No speed-up from 4 to 8: more GPUs do not help.
  rows[1] = fake_row("h100-sxm", 8, 99.9);
  CHECK_FALSE(extrapolate_deadline(rows, seconds(24 * 3600.0))->count.has_value());
  // One count only: linear scaling assumed and said so.
  x = extrapolate_deadline({fake_row("b200", 2, 48)}, seconds(24 * 3600.0));
  CHECK_FALSE(x->exponent_measured);
  CHECK(*x->count == 4);
  // A row meeting the deadline: nothing to extrapolate.
  rows[0].meets_deadline = true;
  CHECK_FALSE(extrapolate_deadline(rows, seconds(24 * 3600.0)).has_value());

  // Modelled: 70B pre-training on H100 with Megatron, 16 GPUs at most in the table.
  const architecture& m = io::find_model("llama-2-70b");
  scenario t;
  t.meth = method::full;
  t.seq_len = 4096;
  t.fw = framework::megatron;
  t.gpu = io::find_gpu("h100-sxm");
  t.tokens = 1e11;
  recommend_options o;
  o.gpus = {io::find_gpu("h100-sxm")};
  o.max_gpus = 16;
  const run base(m, t);
  const auto table = recommend(base, o);
  // Empty or not (with the planning margin 70B may not fit on 16), the answer is modelled.
  const auto more = more_gpus_for_deadline(base, o, table);
  REQUIRE(more.has_value());
  REQUIRE(more->count.has_value());
  CHECK(more->modelled);
  CHECK(in_seconds(more->wall) <= 24 * 3600.0);
  // 6 × 69B × 1e11 tokens ≈ 4.1e22 FLOP; at ≤ 989 TFLOP/s per H100 a day needs ≥ 480 GPUs.
  CHECK(*more->count >= 512);
  // The count before it in the doubling does not meet the deadline.
  recommend_options half = o;
  half.max_gpus = static_cast<int>(*more->count / 2);
  for (const auto& r : recommend(base, half)) CHECK_FALSE(r.meets_deadline);
}

// ---------------------------------------------------------------------------
TEST_CASE("system: a machine you can buy, by platform class") {
  const memory_breakdown mem{};
  const time_estimate t{};
  // One RTX 3060 in a desktop: (170 W + 125 W CPU + 150 W) × 1.3 = 578.5 W → a 650 W PSU.
  system_sizing z = size_system(on("rtx-3060", 1), mem, t);
  CHECK(z.platform == platform_class::desktop);
  CHECK(z.psu_watts == 650);
  CHECK(z.psu_watts >= 550);
  CHECK(z.cpu_cores_min == 4);
  CHECK(z.cpu_cores == 8);
  CHECK(in_gib(z.host_ram) == doctest::Approx(32.0));  // 2 × 12 GiB = 24 → 32 GiB
  CHECK(z.pcie_lanes_per_gpu == 16);
  CHECK(z.driver_min == "455.23");  // CUDA 11.1 for sm_86
  CHECK(z.notes.empty());  // one GPU, a short run, x16: nothing to warn about
  // Two RTX 4090 in a desktop: x8/x8, (900 + 125 + 150) × 1.3 = 1527.5 W → 1600 W.
  z = size_system(on("rtx-4090", 2), mem, t);
  CHECK(z.platform == platform_class::desktop);
  CHECK(z.psu_watts == 1600);
  CHECK(z.pcie_lanes_per_gpu == 8);
  CHECK(has_note(z, "x8 of its x16"));
  CHECK(has_note(z, "peer-to-peer"));
  // (900 + 275) / 0.9 = 1306 W at the wall: within one 15 A / 120 V circuit (1,440 W).
  CHECK(z.wall_watts == doctest::Approx(1175.0 / 0.9));
  CHECK_FALSE(has_note(z, "15 A"));
  // Four RTX 4090: a workstation, (1800 + 350 + 150) × 1.3 = 2990 W → 3000 W (two PSUs);
  // 2300 / 0.9 = 2556 W > 1,440 W, < 3,680 W.
  z = size_system(on("rtx-4090", 4), mem, t);
  CHECK(z.platform == platform_class::workstation);
  CHECK(z.psu_watts == 3000);
  CHECK(z.cpu_cores == 32);
  CHECK(z.cpu_cores_min == 16);
  CHECK(in_gib(z.host_ram) == doctest::Approx(192.0));  // 2 × 4 × 24
  CHECK(z.pcie_lanes_per_gpu == 16);                     // 128 lanes / 4
  CHECK(has_note(z, "15 A / 120 V"));
  CHECK_FALSE(has_note(z, "16 A / 230 V"));
  CHECK(has_note(z, "two PSUs"));
  // Eight H100 SXM: a server, (5600 + 720 + 150) × 1.3 = 8411 W → 8500 W; no household circuit notes.
  z = size_system(on("h100-sxm", 8), mem, t);
  CHECK(z.platform == platform_class::server);
  CHECK(z.psu_watts == 8500);
  CHECK(z.cpu_cores == 64);
  CHECK_FALSE(has_note(z, "circuit"));
  CHECK(z.driver_min == "525.60.13");
  // Offloaded state adds to host RAM: 2 × 80 GiB + 300 GiB = 460 → 512 GiB.
  memory_breakdown off{};
  off.host = gib(300);
  z = size_system(on("a100-80gb", 1), off, t);
  CHECK(in_gib(z.host_ram) == doctest::Approx(512.0));
  // A rented instance: no PSU or circuit figures.
  z = size_system(on("h100-sxm", 8), mem, t, platform_class::cloud);
  CHECK(z.platform == platform_class::cloud);
  CHECK(z.psu_watts == 0);
}

TEST_CASE("recommend: a rented instance type is the machine; split instances are noted") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario t;
  t.meth = method::lora;
  t.seq_len = 2048;
  recommend_options o;
  o.gpus = {io::find_gpu("a100-40gb")};
  // An 8-GPU instance at 1.99/GPU-hour (15.92/h) and a 1-GPU one at 3.67.
  o.rentals["a100-40gb"] = {{"lambda", "8x", 8, 1.99, "on-demand", ""}, {"gcp", "1g", 1, 3.67, "on-demand", ""}};
  o.instances["lambda/8x"] = instance_shape{124, 1800, "nvswitch"};
  o.instances["gcp/1g"] = instance_shape{12, 85, "none"};
  o.tokens = 1e8;
  o.max_gpus = 16;
  bool seen_split = false;
  for (const auto& r : recommend(m, t, o)) {
    REQUIRE(r.rent.has_value());
    CHECK(r.system.platform == platform_class::cloud);
    CHECK(r.system.psu_watts == 0);
    // 1 GPU: 3.67 < 15.92; 2 GPUs: 7.34 < 15.92; 4: 14.68 < 15.92; 8: 15.92 < 29.36; 16: two 8x.
    const bool one_gpu_offer = r.count <= 4;
    CHECK(r.rent->offer.provider == (one_gpu_offer ? "gcp" : "lambda"));
    CHECK(r.system.cpu_cores == (one_gpu_offer ? 12 : 124));
    CHECK(in_gib(r.system.host_ram) == doctest::Approx(one_gpu_offer ? 85.0 : 1800.0));
    CHECK(r.system.nodes == r.rent->instances);
    CHECK(r.system.cpu_cores_min == 4 * r.system.gpus_per_node);  // per instance
    CHECK_FALSE(has_note(r.system, "vCPUs, fewer than"));
    const bool split = one_gpu_offer && r.count > 1;
    CHECK(has_note(r.system, "crosses the provider's network") == split);
    seen_split = seen_split || split;
  }
  CHECK(seen_split);
  // GPUs sold one at a time ("per-gpu") are not separate machines.
  o.rentals["a100-40gb"] = {{"market", "per-gpu", 1, 1.0, "on-demand", ""}};
  for (const auto& r : recommend(m, t, o)) CHECK_FALSE(has_note(r.system, "crosses the provider's network"));
}

}  // namespace unit_recommend
