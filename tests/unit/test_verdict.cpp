// The verdict and `fits` never disagree (plan/margin.hpp verdict_of, io::answer_of):
// for capacities around the estimate and bands of every shape, absurd ones included,
// fits == (verdict != does_not_fit) in the answer, the verdict line, the memory table,
// the estimate's JSON and its text report, and the line never prints FITS beside
// "short by" (docs/planner.md, "Safety margin").
#include <doctest/doctest.h>

#include <array>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/bands.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/plan.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_verdict {

using namespace gpuplan;

namespace {
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The word of each verdict in the line and in the table's Verdict row.
std::string line_word(verdict v) { return v == verdict::fits ? "FITS: " : v == verdict::tight ? "TIGHT: " : "DOES NOT FIT: "; }
std::string row_word(verdict v) { return v == verdict::fits ? "fits" : v == verdict::tight ? "tight" : "does not fit"; }

// The cells of the row labelled `label` of a memory table.
std::vector<std::string> row_of(const io::table& t, const std::string& label) {
  for (const auto& r : t.rows)
    if (!r.empty() && r[0] == label) return r;
  FAIL("no row " << label);
  return {};
}

// The answer, the line and the table of one breakdown under one band and margin agree.
void check_outputs(const memory_breakdown& m, const memory_bands& b, const plan_margin& g) {
  const io::fit_answer a = io::answer_of(m, b, g);
  CHECK(a.fits == (a.state != verdict::does_not_fit));
  CHECK(a.state == verdict_of(m, b, g));
  // The rule: does_not_fit exactly when the P50 device figure, the cached slack the allocator
  // gives back under pressure aside, exceeds capacity (training runs).
  const double p50 = detail::firm_device(m) * b.source.factors.q50;
  CHECK((a.state == verdict::does_not_fit) == (p50 > in_bytes(m.capacity)));
  CHECK(in_bytes(a.headroom) == doctest::Approx(in_bytes(m.capacity) - p50));
  const std::string line = io::verdict_line(m, b, {}, g);
  CHECK_MESSAGE(line.rfind(line_word(a.state), 0) == 0, line);
  CHECK_MESSAGE(has(line, "short by") == !a.fits, line);
  CHECK_MESSAGE(has(line, "headroom at P50") == a.fits, line);
  const io::table t = io::memory_table({{"per GPU", m, a}});
  CHECK(row_of(t, "Verdict")[1] == row_word(a.state));
  CHECK(row_of(t, "Headroom at P50")[1] == io::format_bytes(a.headroom));
}
}  // namespace

TEST_CASE("verdict: fits == (verdict != does_not_fit) for every capacity and band, in every output") {
  // A hand-made 80 GiB resident estimate against capacities from far below to far above,
  // bands from sensible to absurd (unordered, tiny, huge), at the three confidences.
  const std::array<detail::band_factors, 7> bands{{{0.9, 1.0, 1.1},
                                                   {0.85, 0.95, 1.06},
                                                   {1e-9, 1e-9, 1e-9},
                                                   {0.01, 1.0, 99.0},
                                                   {50.0, 60.0, 99.0},
                                                   {0.9, 1.2, 1.1},   // P90 below P50
                                                   {1.3, 1.0, 0.7}}};  // inverted
  const std::array<double, 13> capacities{1, 40, 72, 76, 79, 80, 81, 84, 88, 100, 200, 1e4, 1e9};
  const std::array<plan_margin, 3> margins{plan_margin{}, plan_margin{.confidence = 0.5, .headroom_fraction = 0, .headroom_min = bytes(0)},
                                           plan_margin{.confidence = 0.99}};
  int seen[3] = {0, 0, 0};
  for (const auto& f : bands)
    for (double cap_gib : capacities)
      for (const plan_margin& g : margins) {
        memory_breakdown m;
        m.device = gib(80);
        m.peak_reserved = gib(78);
        m.capacity = gib(cap_gib);
        m.headroom = m.capacity - m.device;
        m.fits = in_bytes(m.device) <= in_bytes(m.capacity);
        memory_bands b;
        b.source.factors = f;
        b.source.regime_factors = f;
        b.device = detail::apply(in_bytes(m.device), f);
        check_outputs(m, b, g);
        ++seen[static_cast<int>(verdict_of(m, b, g))];
      }
  // Every verdict occurs, so every branch of the line and the table was printed.
  CHECK(seen[0] > 0);
  CHECK(seen[1] > 0);
  CHECK(seen[2] > 0);
}

TEST_CASE("verdict: the estimate's JSON and text report agree with it, calibrated bands included") {
  // gpt2 on an A100-80GB whose usable memory is moved around the estimate, with a profile
  // whose memory band (sensible or absurd) applies to the run (same model, GPU, framework).
  io::resolved_run base = io::read_scenario(nlohmann::json{{"model", "gpt2"}, {"gpu", "a100-80gb"}, {"seq_len", 1024}});
  const double device = in_bytes(estimate_memory(base.run).device);
  const std::array<std::optional<detail::band_factors>, 4> bands{
      {std::nullopt, detail::band_factors{0.96, 1.0, 1.04}, detail::band_factors{1e-9, 1e-9, 1e-9},
       detail::band_factors{0.5, 2.0, 99.0}}};
  int seen[3] = {0, 0, 0};
  for (const auto& f : bands)
    for (double k : {0.3, 0.9, 0.99, 1.0, 1.01, 1.05, 1.2, 2.5, 1e6}) {
      io::resolved_run r = base;
      r.run.edit([&](scenario& s) { s.gpu.usable_memory = bytes(device * k); });
      if (f) {
        auto p = std::make_shared<profile>();
        p->name = "band";
        p->model = "gpt2";
        p->gpu = "a100-80gb";
        p->framework = "hf";
        p->memory_points = 1;
        p->memory_band = *f;
        r.run.calibrate_with(p);
      }
      const memory_breakdown m = estimate_memory(r.run);
      const memory_bands b = bands_of(r.run, m);
      check_outputs(m, b, {});
      const nlohmann::json j = io::estimate_json(r);
      const bool fits = j["memory"]["fits"].get<bool>();
      const std::string v = j["memory"]["verdict"].get<std::string>();
      CHECK(fits == (v != "does_not_fit"));
      CHECK(v == to_string(verdict_of(m, b)));
      for (const auto& stage : j["memory"]["stages"]) CHECK(stage["fits"].get<bool>() == fits);  // one stage
      const std::string text = io::estimate_report(r, {});
      CHECK_MESSAGE(has(text, "\n" + line_word(verdict_of(m, b))), text);
      CHECK_MESSAGE(has(text, "short by") != fits, text);
      ++seen[static_cast<int>(verdict_of(m, b))];
    }
  CHECK(seen[0] > 0);
  CHECK(seen[1] > 0);
  CHECK(seen[2] > 0);
}

TEST_CASE("verdict: a paged serving engine whose pool holds no request does not fit, whatever its band") {
  // memory.hpp: fits is false with the bytes within capacity only for this engine rule.
  memory_breakdown m;
  m.peak_phase = memory_breakdown::phase::inference;
  m.device = gib(70);
  m.peak_reserved = gib(70);
  m.capacity = gib(80);
  m.headroom = m.capacity - m.device;
  m.fits = false;
  memory_bands b;
  b.source.factors = {0.9, 1.0, 1.1};
  const io::fit_answer a = io::answer_of(m, b);
  CHECK(a.state == verdict::does_not_fit);
  CHECK_FALSE(a.fits);
  CHECK(a.cannot_start);
  const std::string line = io::verdict_line(m, b, {});
  CHECK(line.rfind("DOES NOT FIT: ", 0) == 0);
  CHECK(has(line, "holds no whole request"));
  CHECK_FALSE(has(line, "headroom at P50"));
}

}  // namespace unit_verdict
