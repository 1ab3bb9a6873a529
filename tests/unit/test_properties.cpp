// Property tests: invariants of the memory and time models over
// thousands of random valid scenarios drawn with a fixed seed (std::mt19937_64,
// seed below), so every failure is reproducible. Each violation prints the
// scenario as JSON (io::write_scenario), the variant and the two numbers.
//
// GPUPLAN_PROPERTY_CASES overrides the number of base scenarios (default 1500;
// the suite must stay under ~10 s in a Debug build and also runs under ASan).
// GPUPLAN_PROPERTY_EXAMPLES sets how many violations per invariant are printed (3).
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/validate.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_properties {

using namespace gpuplan;
using json = nlohmann::json;

namespace {

constexpr std::uint64_t kSeed = 0x6770'7570'6c61'6e08ULL;  // "gpuplan" + 0x08: a fixed seed

int case_count() {
  if (const char* s = std::getenv("GPUPLAN_PROPERTY_CASES")) return std::max(1, std::atoi(s));
  return 1500;
}

// Per-GPU model states: what ZeRO shards (Rajbhandari et al. 2020, §5).
double states(const memory_breakdown& m) {
  return in_bytes(m.weights) + in_bytes(m.master_weights) + in_bytes(m.gradients) + in_bytes(m.optimizer);
}
// The most loaded pipeline stage by model states (estimate_memory reports the
// stage with the largest device total, which can switch between variants).
double max_states(const architecture& a, const scenario& s) {
  double worst = 0;
  for (const memory_breakdown& m : estimate_memory_stages(a, s)) worst = std::max(worst, states(m));
  return worst;
}

template <class T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}
int roll(std::mt19937_64& rng, int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }

struct generated {
  json j;
  io::resolved_run r;
};

// One random scenario that the reader should accept: the layout is drawn from
// the divisors the validator requires, so most draws are valid.
json draw(std::mt19937_64& rng, const std::vector<std::string>& models, const std::vector<std::string>& gpus) {
  const std::string& name = pick(rng, models);
  const architecture& a = io::find_model(name);
  const std::string& gpu_id = pick(rng, gpus);
  const gpu_spec& g = io::find_gpu(gpu_id);
  json j = {{"model", name}, {"gpu", gpu_id}};

  const bool infer = roll(rng, 6) == 0;
  if (infer) {
    j["workload"] = "infer";
    j["inference"] = {{"batch", 1 << roll(rng, 6)}, {"prompt_len", 64 << roll(rng, 4)}, {"gen_len", 32 << roll(rng, 3)}};
    return j;
  }
  static const std::vector<std::string> methods = {"full", "lora", "qlora", "freeze"};
  const std::string meth = pick(rng, methods);
  j["method"] = meth;
  if (meth == "lora" || meth == "qlora") {
    std::vector<std::string> targets = {"q", "k", "v", "o", "up", "down"};
    if (a.mlp == mlp_kind::gated) targets.push_back("gate");
    json t = json::array();
    for (const auto& x : targets)
      if (roll(rng, 2) == 0) t.push_back(x);
    if (t.empty()) t.push_back("q");
    j["lora"] = {{"rank", 4 << roll(rng, 4)}, {"targets", t}, {"dropout", roll(rng, 2) == 0 ? 0.0 : 0.05}};
  }
  if (meth == "freeze") j["freeze"] = {{"trainable_layers", 1 + roll(rng, static_cast<int>(std::min<std::int64_t>(4, a.total_layers())))}};
  std::vector<std::string> precs = {"fp32", "tf32", "fp16-mixed", "bf16-mixed", "bf16-pure"};
  if (g.has_fp8()) precs.push_back("fp8-mixed");
  j["precision"] = pick(rng, precs);
  static const std::vector<std::string> opts = {"adamw", "adam", "adamw-8bit", "paged-adamw-8bit", "paged-adamw-32bit",
                                                "sgd", "sgd-momentum", "adafactor", "lion"};
  j["optimizer"] = pick(rng, opts);
  j["micro_batch"] = 1 + roll(rng, 8);
  if (!a.is_vit()) {
    std::int64_t seq = 128 << roll(rng, 6);
    if (a.positions == position_kind::learned && a.max_positions > 0) seq = std::min(seq, a.max_positions);
    j["seq_len"] = seq;
  }
  static const std::vector<std::string> ckpts = {"none", "selective", "full"};
  j["checkpointing"] = pick(rng, ckpts);
  j["attention"] = roll(rng, 3) == 0 ? "eager" : "flash";

  // Layout: tp | heads, kv rule, tp | ffn; pp | layers; dp free.
  std::vector<int> tps;
  for (int tp : {1, 2, 4, 8})
    if (a.heads % tp == 0 && (a.n_kv_heads() % tp == 0 || tp % a.n_kv_heads() == 0) && a.ffn % tp == 0) tps.push_back(tp);
  std::vector<int> pps;
  for (int pp : {1, 2, 4})
    if (a.total_layers() % pp == 0) pps.push_back(pp);
  const int tp = roll(rng, 2) == 0 ? 1 : pick(rng, tps);
  const int pp = roll(rng, 2) == 0 ? 1 : pick(rng, pps);
  const int dp = 1 << roll(rng, 4);
  j["num_gpus"] = tp * pp * dp;
  j["parallel"] = {{"tp", tp}, {"pp", pp}, {"zero", roll(rng, 4)}};
  if (tp > 1 && roll(rng, 2) == 0) j["parallel"]["sp"] = true;
  return j;
}

// Readable failure: the scenario, what changed, the two numbers.
struct violations {
  std::map<std::string, int> count;
  std::vector<std::string> shown;
  void add(const std::string& invariant, const io::resolved_run& r, const std::string& variant, double a, double b) {
    static const int limit = std::getenv("GPUPLAN_PROPERTY_EXAMPLES") ? std::atoi(std::getenv("GPUPLAN_PROPERTY_EXAMPLES")) : 3;
    if (++count[invariant] > limit) return;  // three examples per invariant are enough to fix it
    std::ostringstream os;
    os.precision(17);
    os << invariant << "\n  scenario: " << io::write_scenario(r).dump() << "\n  " << variant << ": " << a << " vs " << b;
    shown.push_back(os.str());
  }
};

// r with one change, if it is still a valid run.
std::optional<scenario> variant(const io::resolved_run& r, const std::function<void(scenario&)>& change) {
  scenario s = r.settings();
  change(s);
  try {
    validate(r.model(), s);
  } catch (const config_error&) {
    return std::nullopt;
  }
  return s;
}

std::vector<generated> sample(int n, std::uint64_t seed, int* rejected) {
  std::mt19937_64 rng(seed);
  const std::vector<std::string> models = io::model_names();
  const std::vector<std::string> gpus = io::gpu_ids();
  std::vector<generated> out;
  *rejected = 0;
  for (int i = 0; i < n; ++i) {
    json j = draw(rng, models, gpus);
    try {
      out.push_back({j, io::read_scenario(j)});
    } catch (const config_error&) {
      ++*rejected;
    }
  }
  return out;
}

bool memory_model_is_placeholder() {
  const auto r = io::read_scenario(json{{"model", "gpt2"}, {"seq_len", 1024}});
  return in_bytes(estimate_memory(r.run).weights) == 0;
}
bool time_model_is_placeholder() {
  const auto r = io::read_scenario(json{{"model", "gpt2"}, {"seq_len", 1024}});
  return in_seconds(estimate_time(r.run).step) == 0;
}

// Every double of the estimates, for bit-for-bit comparison.
std::vector<std::uint64_t> bits_of(const memory_breakdown& m, const time_estimate& t) {
  std::vector<double> v = {in_bytes(m.weights), in_bytes(m.master_weights), in_bytes(m.gradients), in_bytes(m.optimizer),
                           in_bytes(m.activations), in_bytes(m.transient), in_bytes(m.overhead), in_bytes(m.peak_allocated),
                           in_bytes(m.peak_reserved), in_bytes(m.device), in_bytes(m.capacity), in_bytes(m.headroom),
                           in_bytes(m.host), in_bytes(m.kv_cache), static_cast<double>(m.max_concurrent_sequences),
                           static_cast<double>(m.fits), static_cast<double>(m.stage), static_cast<double>(m.warnings),
                           in_seconds(t.step), t.tokens_per_second_per_gpu, t.tokens_per_second,
                           in_flops(t.model_flops_per_step), in_flops(t.hardware_flops_per_step), t.mfu, t.hfu,
                           in_seconds(t.total), t.gpu_hours, t.cost.value_or(-1), t.energy_kwh,
                           in_seconds(t.breakdown.compute), in_seconds(t.breakdown.communication),
                           in_seconds(t.breakdown.bubble), in_seconds(t.breakdown.optimizer), in_seconds(t.breakdown.offload),
                           in_seconds(t.time_to_first_token), t.decode_tokens_per_second_per_sequence,
                           t.decode_tokens_per_second, static_cast<double>(t.decode_compute_bound_batch),
                           static_cast<double>(t.warnings)};
  std::vector<std::uint64_t> out;
  out.reserve(v.size());
  for (double d : v) out.push_back(std::bit_cast<std::uint64_t>(d));
  return out;
}

}  // namespace

TEST_CASE("properties: the random scenarios are mostly valid and round-trip through JSON unchanged") {
  int rejected = 0;
  const auto runs = sample(case_count(), kSeed, &rejected);
  // The generator draws layouts from the validator's own divisibility rules;
  // a low acceptance rate would mean the properties below test too little.
  CHECK(runs.size() >= static_cast<std::size_t>(case_count()) * 3 / 4);
  int bad = 0;
  for (const auto& g : runs) {
    const json written = io::write_scenario(g.r);
    const auto back = io::read_scenario(written);
    if (!(back.settings() == g.r.settings()) || !(back.model() == g.r.model()) || io::write_scenario(back) != written) {
      if (++bad <= 3) FAIL_CHECK("round trip changed the run: " << g.j.dump() << "\n  written: " << written.dump());
    }
  }
  CHECK(bad == 0);
  MESSAGE(runs.size() << " scenarios accepted, " << rejected << " rejected by validation");
}

TEST_CASE("properties: a scenario with any network latency round-trips exactly") {
  // latency_us is stored as seconds (us * 1e-6) and written back as seconds * 1e6,
  // which is not the identity in binary floating point for ~30% of 3-decimal values.
  std::mt19937_64 rng(kSeed);
  int bad = 0;
  std::string first;
  for (int i = 0; i < 200; ++i) {
    const double us = static_cast<double>(std::uniform_int_distribution<int>(1, 999'999)(rng)) / 1000.0;
    const auto r = io::read_scenario(json{{"model", "gpt2"}, {"seq_len", 1024}, {"network", {{"latency_us", us}}}});
    const auto back = io::read_scenario(io::write_scenario(r));
    if (!(back.settings() == r.settings())) {
      if (++bad == 1) first = json{{"latency_us", us}}.dump();
    }
  }
  CHECK_MESSAGE(bad == 0, bad << " of 200 latencies do not round-trip, e.g. " << first);
}

TEST_CASE("properties: memory invariants over random valid scenarios") {
  if (memory_model_is_placeholder()) {
    MESSAGE("memory model is still the placeholder: memory invariants not evaluated");
    return;
  }
  int rejected = 0;
  const auto runs = sample(case_count(), kSeed + 1, &rejected);
  violations bad;
  int checked_zero = 0, checked_ckpt = 0, checked_attn = 0, checked_method = 0, checked_mb = 0, checked_gpus = 0;
  for (const auto& g : runs) {
    const io::resolved_run& r = g.r;
    memory_breakdown m;
    try {
      m = estimate_memory(r.run);
    } catch (const std::exception& e) {
      bad.add(std::string("a validated scenario estimates without throwing: ") + e.what(), r, "estimate_memory", 0, 0);
      continue;
    }

    // Peaks nest: live tensors <= the allocator's pool <= what nvidia-smi shows.
    if (!(in_bytes(m.peak_allocated) <= in_bytes(m.peak_reserved)))
      bad.add("peak_allocated <= peak_reserved", r, "allocated vs reserved", in_bytes(m.peak_allocated), in_bytes(m.peak_reserved));
    if (!(in_bytes(m.peak_reserved) <= in_bytes(m.device)))
      bad.add("peak_reserved <= device", r, "reserved vs device", in_bytes(m.peak_reserved), in_bytes(m.device));
    if (!(in_bytes(m.headroom) == in_bytes(m.capacity) - in_bytes(m.device)) || m.fits != (in_bytes(m.device) <= in_bytes(m.capacity)))
      bad.add("headroom = capacity - device, fits = headroom >= 0", r, "headroom vs capacity-device", in_bytes(m.headroom),
              in_bytes(m.capacity) - in_bytes(m.device));
    for (double v : {in_bytes(m.weights), in_bytes(m.master_weights), in_bytes(m.gradients), in_bytes(m.optimizer),
                     in_bytes(m.activations), in_bytes(m.transient), in_bytes(m.overhead), in_bytes(m.host), in_bytes(m.kv_cache)})
      if (!(std::isfinite(v) && v >= 0)) bad.add("every component finite and >= 0", r, "component", v, 0);
    if (r.settings().work != workload::train) continue;

    // More ZeRO sharding never increases per-GPU model states. Only with dp >= 2:
    // at dp = 1 nothing is sharded and ZeRO-1/2 add DeepSpeed's fp32 gradient
    // partition (estimate_zero2: 4Ψ + 16Ψ/N), which is more than plain AMP.
    if (r.settings().parallel.offload_optimizer == offload::none && r.settings().parallel.offload_params == offload::none && r.settings().dp() >= 2) {
      double prev = -1;
      for (int z = 0; z <= 3; ++z) {
        auto s = variant(r, [z](scenario& x) { x.parallel.zero = z; });
        if (!s) continue;
        const double now = max_states(r.model(), *s);
        if (prev >= 0 && now > prev)
          bad.add("more ZeRO sharding never increases per-GPU model states", r,
                  "zero=" + std::to_string(z - 1) + " vs zero=" + std::to_string(z), prev, now);
        prev = now;
        ++checked_zero;
      }
    }
    // More GPUs (x2 data parallel, x2 tensor parallel, x2 pipeline stages) never increase them.
    // From dp >= 2 up: going from dp 1 to 2 legitimately adds DDP's gradient buckets
    // (torch DDP gradient_as_bucket_view=False keeps a copy of the gradients).
    if (r.settings().dp() >= 2) {
      const double base = max_states(r.model(), r.settings());
      const std::pair<const char*, std::function<void(scenario&)>> more[] = {
          {"num_gpus x2 (dp x2)", [](scenario& x) { x.num_gpus *= 2; }},
          {"tp x2 (num_gpus x2)", [](scenario& x) { x.parallel.tp = x.parallel.tp_size() * 2; x.num_gpus *= 2; }},
          {"pp x2 (num_gpus x2)", [](scenario& x) { x.parallel.pp *= 2; x.num_gpus *= 2; }}};
      for (const auto& [what, change] : more) {
        auto s = variant(r, change);
        if (!s) continue;
        const double now = max_states(r.model(), *s);
        if (now > base) bad.add("more GPUs never increase per-GPU model states", r, std::string("as is vs ") + what, base, now);
        ++checked_gpus;
      }
    }
    // Activations and the peak: full checkpointing <= selective <= none.
    {
      double act[3] = {-1, -1, -1}, peak[3] = {-1, -1, -1};
      for (int c = 0; c < 3; ++c) {
        auto s = variant(r, [c](scenario& x) { x.ckpt = static_cast<checkpointing>(c); });
        if (!s) continue;
        const memory_breakdown mc = estimate_memory(r.model(), *s);
        act[c] = in_bytes(mc.activations);
        peak[c] = in_bytes(mc.peak_allocated);
      }
      if (act[0] >= 0 && act[1] >= 0 && act[1] > act[0]) bad.add("activations: selective <= none", r, "none vs selective", act[0], act[1]);
      if (act[1] >= 0 && act[2] >= 0 && act[2] > act[1]) bad.add("activations: full <= selective", r, "selective vs full", act[1], act[2]);
      if (peak[0] >= 0 && peak[1] >= 0 && peak[1] > peak[0]) bad.add("peak_allocated: selective <= none", r, "none vs selective", peak[0], peak[1]);
      if (peak[1] >= 0 && peak[2] >= 0 && peak[2] > peak[1]) bad.add("peak_allocated: full <= selective", r, "selective vs full", peak[1], peak[2]);
      ++checked_ckpt;
    }
    // Peak allocated: flash <= eager (the activations term alone belongs to each run's peak moment,
    // which may differ: eager attention's score gradients can move the peak into backward).
    {
      auto f = variant(r, [](scenario& x) { x.attn = attention::flash; });
      auto e = variant(r, [](scenario& x) { x.attn = attention::eager; });
      if (f && e) {
        const double af = in_bytes(estimate_memory(r.model(), *f).peak_allocated);
        const double ae = in_bytes(estimate_memory(r.model(), *e).peak_allocated);
        // Under PEFT eager attention keeps no output for the frozen o_proj, which flash attention's
        // backward keeps: flash may exceed eager by that output (q_dim per token and layer, at most 4 B).
        const scenario& x = r.settings();
        const double slack = is_peft(x.meth) ? static_cast<double>(x.micro_batch) * static_cast<double>(x.seq_len) *
                                                   static_cast<double>(r.model().total_layers()) *
                                                   static_cast<double>(r.model().q_dim()) * 4.0 * std::max(1, x.parallel.pp)
                                             : 0.0;
        if (af > ae + slack) bad.add("peak_allocated: flash <= eager", r, "flash vs eager", af, ae);
        ++checked_attn;
      }
    }
    // Doubling the micro-batch never decreases activations.
    {
      auto s = variant(r, [](scenario& x) { x.micro_batch *= 2; });
      if (s) {
        const double a2 = in_bytes(estimate_memory(r.model(), *s).activations);
        if (a2 < in_bytes(m.activations)) bad.add("doubling micro_batch never decreases activations", r, "micro_batch vs 2x", in_bytes(m.activations), a2);
        ++checked_mb;
      }
    }
    // Method ordering of per-GPU model states: QLoRA < LoRA < full, same run
    // otherwise, for adapters of rank <= min(in, out)/16 (so adapters stay below
    // 1/8 of the linear weights; a rank-`width` LoRA can exceed full fine-tuning).
    {
      std::int64_t width = INT64_MAX;
      for (int i = 0; i < kLinearKinds; ++i) {
        const linear_shape sh = linear_of(r.model(), static_cast<linear_id>(i));
        if (sh.count > 0) width = std::min(width, std::min(sh.in, sh.out));
      }
      const std::int64_t rank = std::max<std::int64_t>(1, std::min<std::int64_t>(r.settings().lora.rank, width / 16));
      auto with = [&](method me) {
        return variant(r, [&](scenario& x) {
          x.meth = me;
          x.fw = framework::torchtune;  // a quantized base that keeps the rest in 16 bit (no fp32 upcast)
          x.keep_gradients = true;      // gradients counted at every moment (FSDP allocates them in backward)
          x.quant.reset();
          x.lora.rank = rank;
          if (precision_of(x) == precision::fp8_mixed) x.prec = precision::bf16_mixed;
        });
      };
      auto q = with(method::qlora), l = with(method::lora), f = with(method::full);
      if (q && l && f) {
        const double sq = max_states(r.model(), *q), sl = max_states(r.model(), *l), sf = max_states(r.model(), *f);
        if (!(sq < sl)) bad.add("model states: qlora < lora", r, "qlora vs lora (rank " + std::to_string(rank) + ")", sq, sl);
        if (!(sl < sf)) bad.add("model states: lora < full", r, "lora (rank " + std::to_string(rank) + ") vs full", sl, sf);
        const double wq = in_bytes(estimate_memory(r.model(), *q).weights), wl = in_bytes(estimate_memory(r.model(), *l).weights);
        if (!(wq < wl)) bad.add("weights: qlora < lora", r, "qlora vs lora weights", wq, wl);
        ++checked_method;
      }
    }
  }
  MESSAGE(runs.size() << " scenarios; variants checked: zero " << checked_zero << ", gpus " << checked_gpus << ", ckpt " << checked_ckpt
                      << ", attention " << checked_attn << ", micro_batch " << checked_mb << ", method " << checked_method);
  CHECK(checked_zero > 100);
  CHECK(checked_method > 100);
  for (const auto& s : bad.shown) FAIL_CHECK(s);
  for (const auto& [k, n] : bad.count) MESSAGE(k << ": " << n << " violations");
}

TEST_CASE("properties: time invariants over random valid scenarios") {
  if (time_model_is_placeholder()) {
    MESSAGE("time model is still the placeholder: time invariants not evaluated");
    return;
  }
  int rejected = 0;
  const auto runs = sample(case_count() / 2, kSeed + 2, &rejected);
  violations bad;
  for (const auto& g : runs) {
    const io::resolved_run& r = g.r;
    time_estimate t;
    try {
      t = estimate_time(r.run);
    } catch (const std::exception& e) {
      bad.add(std::string("a validated scenario estimates without throwing: ") + e.what(), r, "estimate_time", 0, 0);
      continue;
    }
    if (r.settings().work != workload::train) continue;
    if (!(in_seconds(t.step) > 0 && std::isfinite(in_seconds(t.step)))) bad.add("step time finite and > 0", r, "step", in_seconds(t.step), 0);
    if (!(t.mfu > 0 && t.mfu <= 1)) bad.add("0 < MFU <= 1", r, "mfu", t.mfu, 1);
    if (!(t.hfu >= t.mfu)) bad.add("HFU >= MFU (recompute only adds)", r, "hfu vs mfu", t.hfu, t.mfu);
    if (!(in_flops(t.hardware_flops_per_step) >= in_flops(t.model_flops_per_step)))
      bad.add("hardware FLOPs >= model FLOPs", r, "hardware vs model", in_flops(t.hardware_flops_per_step), in_flops(t.model_flops_per_step));
    // Full recomputation never makes a step faster than none — except with a
    // paged optimizer, whose page traffic shrinks when checkpointing frees memory
    // (bitsandbytes pages state out only under memory pressure).
    auto none = variant(r, [](scenario& x) { x.ckpt = checkpointing::none; });
    auto full = variant(r, [](scenario& x) { x.ckpt = checkpointing::full; });
    const bool paged = r.settings().opt == optimizer::paged_adamw_8bit || r.settings().opt == optimizer::paged_adamw_32bit;
    if (none && full && !paged) {
      double tn = 0, tf = 0;
      try {
        tn = in_seconds(estimate_time(r.model(), *none).step);
        tf = in_seconds(estimate_time(r.model(), *full).step);
      } catch (const std::exception&) {
        continue;  // reported above for the base scenario
      }
      if (tf < tn) bad.add("step time: full checkpointing >= none", r, "none vs full", tn, tf);
    }
  }
  for (const auto& s : bad.shown) FAIL_CHECK(s);
  for (const auto& [k, n] : bad.count) MESSAGE(k << ": " << n << " violations");
}

TEST_CASE("properties: estimates are deterministic, independent of order and thread") {
  int rejected = 0;
  const auto runs = sample(std::min(case_count(), 600), kSeed + 3, &rejected);
  REQUIRE(runs.size() > 100);
  using result = std::vector<std::uint64_t>;
  auto eval = [&](std::vector<result>& out, bool reverse) {
    out.assign(runs.size(), {});
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const std::size_t i = reverse ? runs.size() - 1 - k : k;
      const auto& r = runs[i].r;
      try {
        out[i] = bits_of(estimate_memory(r.run), estimate_time(r.run));
      } catch (const std::exception& e) {
        out[i] = {0xdeadULL, std::hash<std::string>{}(e.what())};  // same error both times is still deterministic
      }
    }
  };
  std::vector<result> serial, forward, backward;
  eval(serial, false);
  std::thread t1([&] { eval(forward, false); });
  std::thread t2([&] { eval(backward, true); });
  t1.join();
  t2.join();
  int differ = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (serial[i] != forward[i] || serial[i] != backward[i]) {
      if (++differ <= 3) FAIL_CHECK("estimate differs between evaluations: " << io::write_scenario(runs[i].r).dump());
    }
  }
  CHECK(differ == 0);
}

}  // namespace unit_properties
