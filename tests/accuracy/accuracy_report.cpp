// gpuplan-accuracy: prints docs/accuracy.md from the validation cases
// (`make accuracy`). The test suite checks that the committed file is current.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <string>

#include "cases.hpp"
#include "gpuplan/diffusion.hpp"
#include "gpuplan/vision.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/replay.hpp"

using namespace gpuplan::accuracy;

namespace {
std::string fmt(double v, const std::string& metric) {
  char buf[64];
  if (metric == "memory.fits") return v != 0 ? "fits" : "OOM";
  if (metric.rfind("memory.", 0) == 0) std::snprintf(buf, sizeof buf, "%.2f GiB", v / 1073741824.0);
  else if (metric == "time.step_seconds" || metric == "time.pipeline_seconds") std::snprintf(buf, sizeof buf, "%.3f s", v);
  else if (metric == "time.time_to_first_token_seconds") std::snprintf(buf, sizeof buf, "%.1f ms", 1000 * v);
  else std::snprintf(buf, sizeof buf, "%.0f tok/s", v);
  return buf;
}
std::string pct(double e) {
  if (std::isnan(e)) return "–";
  if (std::isinf(e)) return "error";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * e);
  return buf;
}
std::string apct(double e) {
  if (std::isnan(e)) return "–";
  if (std::isinf(e)) return "error";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * e);
  return buf;
}

// The median of a list (linear interpolation, cases.hpp quantile_sorted); NaN when empty.
double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

template <class Pred>
std::size_t count(const std::vector<case_result>& rs, Pred p) {
  return static_cast<std::size_t>(std::count_if(rs.begin(), rs.end(), p));
}

// "median 5.0%, P90 16.0%, worst 33.5% (n = 27)"
template <class Pred>
std::string stats(const std::vector<case_result>& rs, Pred p, bool loso) {
  const std::size_t n = count(rs, p);
  if (n == 0) return "no cases";
  return "median " + apct(quantile_abs_error(rs, p, 0.5, loso)) + ", P90 " + apct(quantile_abs_error(rs, p, 0.9, loso)) +
         ", worst " + apct(quantile_abs_error(rs, p, 1.0, loso)) + " (n = " + std::to_string(n) + ")";
}

void table(const std::vector<case_result>& rs, bool (*pred)(const case_result&)) {
  std::cout << "| case | file | metric | source | expected | estimate | error | LOSO error |\n"
               "|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rs) {
    if (!pred(r)) continue;
    std::cout << "| " << r.id << " | " << r.file << " | `" << r.metric << "` | " << r.src << " | " << fmt(r.expected, r.metric)
              << " | " << (r.failure.empty() ? fmt(r.estimate, r.metric) : "error: " + r.failure) << " | "
              << (r.is_verdict ? (r.verdict_ok ? "right" : "**wrong**") : pct(r.error)) << " | "
              << (r.is_verdict ? "" : pct(r.loso_error)) << " |\n";
  }
}

std::string percent_of(int part, int whole) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d of %d (%.0f%%)", part, whole, 100.0 * part / std::max(1, whole));
  return buf;
}

std::string band_text(const std::vector<case_result>& rs) {
  const spreads k = band_spreads(rs);
  const double extra = uncovered_spread(rs, k);
  const band_coverage c0 = coverage(rs, {});
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "- case-level quantiles, each case's source held out, cover %s cases within P10–P90: sources, "
                "frameworks and GPU classes differ more than cases within one, so P10 and P90 are widened in log "
                "space, for memory and for time, by the smallest factor that meets the targets (P10–P90 holds 80%%; "
                "memory at or below P90 for 90%%) holding out each source, each framework and each GPU class in "
                "turn, and the widest of the three is kept: memory %.2f, time %.2f\n"
                "- a run whose framework × method class × GPU class × scale no validation row measured is widened "
                "further by %.2f: the smallest factor with which the cases that no other source's row covers meet "
                "both targets\n\n",
                percent_of(c0.inside_p10_p90, c0.cases).c_str(), k.memory, k.time, extra);
  std::string out = buf;
  out += "| held out by | cases | inside P10–P90 | memory cases | memory at or below P90 | memory inside P10–P90 |\n"
         "|---|---|---|---|---|---|\n";
  for (const grouping g : kGroupings) {
    const band_coverage c = coverage(rs, k, g, extra);
    out += "| " + std::string(grouping_name(g)) + " | " + std::to_string(c.cases) + " | " +
           percent_of(c.inside_p10_p90, c.cases) + " | " + std::to_string(c.memory_cases) + " | " +
           percent_of(c.memory_below_p90, c.memory_cases) + " | " + percent_of(c.memory_inside, c.memory_cases) + " |\n";
  }
  const band_coverage u = coverage(rs, k, grouping::source, extra, true);
  out += "| source, uncovered cases only | " + std::to_string(u.cases) + " | " + percent_of(u.inside_p10_p90, u.cases) +
         " | " + std::to_string(u.memory_cases) + " | " + percent_of(u.memory_below_p90, u.memory_cases) + " | " +
         percent_of(u.memory_inside, u.memory_cases) + " |\n";
  return out;
}

void per_source(const std::vector<case_result>& rs) {
  std::set<std::string> sources;
  for (const auto& r : rs)
    if (!r.unexpressible) sources.insert(r.source);
  std::cout << "| source | memory cases | memory median | time cases | time median | time median, LOSO |\n"
               "|---|---|---|---|---|---|\n";
  for (const auto& s : sources) {
    auto mem = [&](const case_result& r) { return r.source == s && is_memory(r); };
    auto tim = [&](const case_result& r) { return r.source == s && is_time(r); };
    std::cout << "| " << s << " | " << count(rs, mem) << " | " << apct(median_abs_error(rs, mem)) << " | " << count(rs, tim)
              << " | " << apct(median_abs_error(rs, tim)) << " | " << apct(median_abs_error(rs, tim, true)) << " |\n";
  }
}
// Serving rows per engine (engine.hpp) and metric: the engines hold memory and spend time
// differently, so each gets its own figures. Targets from the serving issue: memory median
// at most 5%, decode tokens/s median at most 15% per engine.
void per_engine(const std::vector<case_result>& rs) {
  std::cout << "| engine | metric | cases | median | P90 | worst | median, LOSO | P90, LOSO |\n"
               "|---|---|---|---|---|---|---|---|\n";
  std::string without;
  for (const auto& [e, name] : gpuplan::kEngineNames) {
    bool any = false;
    // memory; decode speed (tokens/s); time to first token (the prompt's prefill).
    for (const int kind : {0, 1, 2}) {
      const gpuplan::engine eng = e;
      auto pick = [eng, kind](const case_result& r) {
        if (!is_serving(r, eng)) return false;
        if (kind == 0) return is_memory(r);
        const bool ttft = r.metric == "time.time_to_first_token_seconds";
        return is_time(r) && (kind == 2) == ttft;
      };
      const std::size_t n = count(rs, pick);
      if (n == 0) continue;
      any = true;
      static constexpr const char* kKind[] = {"memory", "time", "time to first token"};
      std::cout << "| " << name << " | " << kKind[kind] << " | " << n << " | "
                << apct(quantile_abs_error(rs, pick, 0.5)) << " | " << apct(quantile_abs_error(rs, pick, 0.9)) << " | "
                << apct(quantile_abs_error(rs, pick, 1.0)) << " | " << apct(quantile_abs_error(rs, pick, 0.5, true)) << " | "
                << apct(quantile_abs_error(rs, pick, 0.9, true)) << " |\n";
    }
    if (!any) without += std::string(without.empty() ? "" : ", ") + std::string(name);
  }
  if (!without.empty()) std::cout << "\nNo published row yet for: " << without << ".\n";
}
// "- step time: median |error| …, worst … (n = …); k of n estimates are below the measurement (why)."
void print_step_errors(std::vector<double> errors, int below, const char* why, const char* what = "step time") {
  if (errors.empty()) return;
  const std::size_t n = errors.size();
  std::cout << "\n- " << what << ": median |error| " << apct(median(errors)) << ", worst "
            << apct(*std::max_element(errors.begin(), errors.end())) << " (n = " << n
            << "); " << below << " of " << n << " estimates are below the measurement (" << why << ").\n";
}

// Rows of a torchvision image model (scenario.model "resnet50 v1.5"): vision.hpp estimates them.
bool is_vision(const case_result& r) {
  if (!r.scenario.is_object() || !r.scenario.contains("model") || !r.scenario["model"].is_string()) return false;
  return r.scenario["model"].get<std::string>().rfind("resnet50", 0) == 0;
}

void vision_section(const std::vector<case_result>& rs) {
  std::cout << "\n## Image models\n\n"
               "Image-classification training rows, estimated by `vision::estimate_graph` (include/gpuplan/vision.hpp, "
               "docs/vision.md) on torchvision's ResNet-50 graph at 224 x 224 (v1.5: stride on the 3x3 convolution), "
               "the row's per-GPU batch, fp16 mixed precision, SGD with momentum and, on several GPUs, DDP's overlapped "
               "all-reduce, with the shipped efficiency defaults. They are counted in no figure above.\n\n"
               "| case | GPU | GPUs | batch | source | expected | estimate | error |\n|---|---|---|---|---|---|---|---|\n";
  std::vector<double> errors;
  int below = 0;
  const auto graph = gpuplan::vision::vision_model("resnet-50", 224, 1000);
  for (const auto& r : rs) {
    if (!is_vision(r)) continue;
    const auto& sc = r.scenario;
    const std::string gpu_id = sc.value("gpu", std::string{});
    const int gpus = sc.value("num_gpus", 1);
    const std::int64_t batch = sc.value("micro_batch", std::int64_t{256});
    const auto e = gpuplan::vision::estimate_graph(graph, batch, gpuplan::precision::fp16_mixed,
                                                   gpuplan::optimizer::sgd_momentum, gpuplan::io::find_gpu(gpu_id), true,
                                                   {}, gpus);
    const double est = gpuplan::in_seconds(e.step);
    const double err = (est - r.expected) / r.expected;
    errors.push_back(std::fabs(err));
    below += err < 0 ? 1 : 0;
    std::cout << "| " << r.id << " | " << gpu_id << " | " << gpus << " | " << batch << " | " << r.src << " | "
              << fmt(r.expected, r.metric) << " | " << fmt(est, r.metric) << " | " << pct(err) << " |\n";
  }
  print_step_errors(errors, below, "docs/vision.md: the 8-GPU row's per-GPU rate drops 16% from one GPU, which the "
                                   "all-reduce alone does not explain");
  std::cout << "- Leave one source out: both rows come from one source (NVIDIA DeepLearningExamples), and no constant "
               "was fitted to them, so the figures above are out of sample.\n";
}

void diffusion_section(const std::vector<case_result>& rs) {
  std::cout << "\n## Diffusion pipelines\n\n"
               "Stable Diffusion text-to-image rows, estimated by `diffusion::estimate_pipeline` (include/gpuplan/diffusion.hpp, "
               "docs/diffusion.md): the seconds of one denoising step (the UNet on 2 x batch under classifier-free guidance) or of one "
               "pipeline call (SX1: text encoders, the steps, the VAE decode), in the row's precision, SDPA attention, with the shipped efficiency defaults (detail/timing_params.hpp). They are counted in no "
               "figure above.\n\n| case | model | GPU | batch | source | expected | estimate | error |\n|---|---|---|---|---|---|---|---|\n";
  std::vector<double> errors;
  int below = 0;
  std::string not_modelled;
  double not_modelled_step = 0;
  for (const auto& r : rs) {
    if (!is_diffusion(r)) continue;
    const auto& sc = r.scenario;
    const std::string gpu_id = sc.value("gpu", std::string{});
    const gpuplan::gpu_spec& gpu = gpuplan::io::find_gpu(gpu_id);
    const auto e = diffusion_estimate(r);
    std::cout << "| " << r.id << " | " << e.model << " | " << gpu_id << " | " << e.batch << " | " << r.src << " | "
              << fmt(r.expected, r.metric) << " | ";
    if (!is_diffusion_time(r)) {
      // torch.compile(mode="reduce-overhead") records CUDA graphs; their private memory pool is not modelled.
      std::cout << "not modelled (without compile: " << (e.fits(gpu) ? "fits" : "OOM") << ", device "
                << fmt(gpuplan::in_bytes(e.device), "memory.device_bytes") << ") | – |\n";
      not_modelled += r.id;
      not_modelled_step = gpuplan::in_seconds(e.unet_step);
      continue;
    }
    const double est = diffusion_time(r, e);
    const double err = (est - r.expected) / r.expected;
    errors.push_back(std::fabs(err));
    below += err < 0 ? 1 : 0;
    std::cout << fmt(est, r.metric) << " | " << pct(err) << " |\n";
  }
  print_step_errors(errors, below, "docs/diffusion.md: host time per call that differs between machines by up to 1.6x "
                                   "on one GPU model (RTX 4090: 24.7 and 40.2 ms), and GPUs sustaining less than their GEMM ceiling on these convolutions",
                   "time");
  std::cout << "- Leave one source out: no constant was fitted to these rows (the time model's constants come from the "
               "LLM training rows and documentation; the host calls are counted in diffusers' code), so leaving a source "
               "out changes nothing and the figures above are the out-of-sample ones.\n";
  if (!not_modelled.empty())
    std::cout << "- " << not_modelled << " (T4, batch 16, torch.compile mode=\"reduce-overhead\": \"OOM after 2nd iteration\"): "
                 "reduce-overhead records CUDA graphs, whose private memory pool holds the captured UNet's intermediates "
                 "besides the eager allocator's pool; gpuplan does not model that pool's size, so the OOM is not "
                 "predicted. The same run without compile is reported to run at 2.34 s/it; the estimate fits, at "
              << fmt(not_modelled_step, "time.step_seconds") << " per step.\n";
}
// allocator.jsonl: published runs that give both the peak allocated (or active) and the
// peak reserved memory; the measured ratio against the fixed factor's and the replay's.
void allocator_pairs(const std::string& dir) {
  std::ifstream in(dir + "/allocator.jsonl");
  if (!in) return;
  std::cout << "\nPublished runs that report both peaks (`tests/data/validation/allocator.jsonl`): the measured "
               "reserved / allocated ratio against the fixed factor and the replay's.\n\n"
               "| case | source | statistic | allocated | reserved | measured ratio | factor | replay ratio |\n"
               "|---|---|---|---|---|---|---|---|\n";
  std::vector<double> fixed, replayed;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto row = nlohmann::json::parse(line);
    const double reserved = row.at("peak_reserved_bytes").get<double>();
    const auto& a = row.contains("peak_allocated_bytes") && !row["peak_allocated_bytes"].is_null() ? row["peak_allocated_bytes"]
                                                                                                     : row.at("peak_active_bytes");
    const double allocated = a.get<double>();
    const auto rr = gpuplan::io::read_scenario(row.at("scenario"));
    const auto m = gpuplan::estimate_memory(rr.run);
    const double factor = gpuplan::fast_path_ratio(m);
    const double replay = gpuplan::replay_allocator(rr.run).ratio;
    const double measured = reserved / allocated;
    fixed.push_back(std::fabs(factor / measured - 1));
    replayed.push_back(std::fabs(replay / measured - 1));
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.3f | %.3f | %.3f", measured, factor, replay);
    std::cout << "| " << row.at("id").get<std::string>() << " | " << row.at("src").get<std::string>() << " | "
              << row.value("statistic", std::string("peak")) << " | " << fmt(allocated, "memory.x") << " | "
              << fmt(reserved, "memory.x") << " | " << buf << " |\n";
  }
  if (!fixed.empty())
    std::cout << "\n- median |ratio error| over " << fixed.size() << " runs: fixed factor " << apct(median(fixed))
              << ", replay " << apct(median(replayed))
              << ". The sharded runs' factor is the median of these pairs, so the fixed factor is in sample here. "
                 "The replay sees one stream and fixed shapes: not the collectives' own stream pools, not the blocks a "
                 "collective holds until it completes (record_stream), not the allocations of model loading and "
                 "DeepSpeed's setup that these whole-process peaks include; it gives 1.0-1.2 where the runs measured "
                 "1.25-1.42, so the estimate keeps the factor and reports the replay beside it.\n";
}

// The allocator replay (replay.hpp) against the fixed reserved/allocated factor, on every
// training row that measured the pool (reserved) or the device: the same allocated
// estimate, the pool from the factor or from the replay's ratio.
void replay_section(const std::vector<case_result>& rs, const std::string& dir) {
  std::cout << "\n## Allocator replay\n\n"
               "`replay_allocator` (include/gpuplan/replay.hpp) replays two training steps, tensor by tensor, through "
               "the rules of PyTorch's caching allocator (include/gpuplan/allocator.hpp). The estimate's pool is its "
               "peak allocated times a fixed factor (1.10; 1.35 for sharded runs, whose collectives keep their own "
               "stream pools; capped at the card: docs/memory-model.md); the replay gives the factor for the run from "
               "fixed-shape, single-stream allocations. "
               "On the rows that measured the pool or the device memory, with the same allocated estimate:\n\n"
               "| case | framework | metric | expected | factor | error | replay factor | replay error |\n"
               "|---|---|---|---|---|---|---|---|\n";
  std::vector<double> fixed, replayed;
  for (const auto& r : rs) {
    if (!is_memory(r) || !r.failure.empty() || r.run->settings().work != gpuplan::workload::train) continue;
    if (r.metric != "memory.peak_reserved_bytes" && r.metric != "memory.device_bytes") continue;
    const auto m = gpuplan::estimate_memory(r.run->run);
    const auto rp = gpuplan::replay_allocator(r.run->run);
    const double alloc = gpuplan::in_bytes(m.peak_allocated), pool = gpuplan::in_bytes(m.peak_reserved);
    const double pool_replay = alloc * rp.ratio + gpuplan::memory_defaults::cublas_workspace;
    const double est = r.estimate - pool + pool_replay;
    const double err = (est - r.expected) / r.expected;
    fixed.push_back(std::fabs(r.error));
    replayed.push_back(std::fabs(err));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f | %s | %.3f", gpuplan::fast_path_ratio(m), pct(r.error).c_str(), rp.ratio);
    std::cout << "| " << r.id << " | " << gpuplan::to_string(r.run->settings().fw) << " | `" << r.metric.substr(7) << "` | "
              << fmt(r.expected, r.metric) << " | " << buf << " | " << pct(err) << " |\n";
  }
  std::cout << "\n- median |error| over these " << fixed.size() << " rows: fixed factor " << apct(median(fixed))
            << ", replay " << apct(median(replayed)) << ".\n";
  allocator_pairs(dir);
}
}  // namespace

// detail/error_bands_data.hpp: the band rows of every case plus the validated regime.
int print_bands(const std::vector<case_result>& rs) {
  const spreads k = band_spreads(rs);
  const auto rows = band_rows(rs, [](const case_result&) { return true; }, k);
  std::set<combo> combos;
  for (const auto& r : rs)
    if (in_bands(r)) combos.insert(combo_of(r));
  std::set<std::string> families, precisions;
  int max_gpus = 0;
  for (const auto& r : rs)
    if (in_bands(r)) {
      families.insert(r.run->model().family);
      precisions.insert(std::string(gpuplan::to_string(gpuplan::precision_of(r.run->settings()))));
      max_gpus = std::max(max_gpus, r.run->settings().num_gpus);
    }
  static const char* metric_names[] = {"memory_train", "memory_infer", "time_train", "time_infer"};
  std::cout << "// detail/error_bands_data.hpp — generated by `make accuracy` (gpuplan-accuracy --bands) from the\n"
               "// leave-one-source-out residuals of tests/data/validation; a test fails when it is stale.\n"
               "// Columns: metric, peft (-1 any), multi_gpu (-1 any), cases, {P10, P50, P90} of measured / estimated.\n"
               "#pragma once\n\n#include <array>\n#include <string_view>\n\n#include \"gpuplan/detail/band_types.hpp\"\n\n"
               "namespace gpuplan::detail {\n\n";
  std::cout << "inline constexpr std::array<band_row, " << rows.size() << "> kBandRows{{\n";
  char buf[256];
  for (const auto& row : rows) {
    std::snprintf(buf, sizeof buf, "    {band_metric::%s, %d, %d, %d, {%.4f, %.4f, %.4f}},\n", metric_names[static_cast<int>(row.metric)],
                  row.peft, row.multi_gpu, row.cases, row.f.q10, row.f.q50, row.f.q90);
    std::cout << buf;
  }
  std::cout << "}};\n";
  auto list = [](const char* name, const std::set<std::string>& items) {
    std::cout << "inline constexpr std::array<std::string_view, " << items.size() << "> " << name << "{{";
    bool first = true;
    for (const auto& i : items) { std::cout << (first ? "" : ", ") << '"' << i << '"'; first = false; }
    std::cout << "}};\n";
  };
  list("kValidatedFamilies", families);
  list("kValidatedPrecisions", precisions);
  std::cout << "inline constexpr int kValidatedMaxGpus = " << max_gpus << ";\n";
  std::cout << "// framework × method class (1 PEFT) × GPU class × scale (1 several GPUs) of every band case.\n"
            << "inline constexpr std::array<validated_combo, " << combos.size() << "> kValidatedCombos{{\n";
  for (const auto& [fw, peft, cls, multi] : combos)
    std::cout << "    {\"" << fw << "\", " << peft << ", \"" << cls << "\", " << multi << "},\n";
  std::snprintf(buf, sizeof buf, "%.2f", uncovered_spread(rs, k));
  std::cout << "}};\n// The further widening of a run outside every combination above (docs/accuracy.md, Error bands).\n"
            << "inline constexpr double kUncoveredSpread = " << buf << ";\n\n}  // namespace gpuplan::detail\n";
  return 0;
}

// "3 of 4 right" over the fit/OOM verdicts of one file.
std::string verdicts_of(const std::vector<case_result>& rs, const std::string& file) {
  int n = 0, ok = 0;
  for (const auto& r : rs)
    if (r.file == file && is_verdict(r)) { ++n; ok += r.verdict_ok ? 1 : 0; }
  return std::to_string(ok) + " of " + std::to_string(n) + " right";
}

int main(int argc, char** argv) {
  const bool bands = argc > 1 && std::string(argv[1]) == "--bands";
  const std::string dir = argc > (bands ? 2 : 1) ? argv[bands ? 2 : 1] : GPUPLAN_CASES_DIR;
  const auto rs = run_all(dir);
  if (bands) return print_bands(rs);
  auto held_mem = [](const case_result& r) { return held_out(r) && is_memory(r); };
  auto held_time = [](const case_result& r) { return held_out(r) && is_time(r); };
  auto in_mem = [](const case_result& r) { return r.file == "cases.jsonl" && is_memory(r); };
  auto in_time = [](const case_result& r) { return r.file == "cases.jsonl" && is_time(r); };
  std::size_t verdicts = 0, right = 0;
  for (const auto& r : rs)
    if (is_verdict(r)) { ++verdicts; right += r.verdict_ok ? 1 : 0; }

  std::cout << "# Accuracy against published measurements\n\n"
               "Generated by `make accuracy` (tests/accuracy/accuracy_report.cpp) from "
               "`tests/data/validation/cases.jsonl` and `cases-2.jsonl` to `cases-5.jsonl`; the test suite fails when this file is stale "
               "and when the out-of-sample figures below get worse than recorded in tests/unit/test_validation.cpp.\n"
               "Each case is a published figure (source in the table) written as a gpuplan scenario; "
               "error = (estimate − expected) / expected, |error| quantiles by nearest rank. One set of defaults "
               "for every case: nothing is tuned per case.\n\n"
               "## Out of sample (the figures to quote)\n\n"
               "**Held out** — `cases-2.jsonl` to `cases-5.jsonl` were collected after the model's defaults and "
               "constants were set and were not used to choose any of them. They have pointed at mechanisms the "
               "model then gained, each counted from the code that runs rather than fitted to the row (for example "
               "the eager RMSNorm upcast, which the PEFT L40S rows missed by 30-46%; for `cases-4.jsonl`, "
               "torchtitan's eager loss beside its compiled blocks, bitsandbytes' unsharded 4-bit statistics under "
               "FSDP, the dequantized weight, Unsloth's fused loss and LoRA kernels, and the pool of sharded runs, "
               "whose factor comes from the separate reserved/active pairs of `allocator.jsonl`). Before those, "
               "`cases-4.jsonl`'s 38 memory rows were off by a median 12.0% (P90 32%) and 4 of its 11 verdicts were "
               "wrong. Treat the held-out figures as optimistic by that much and the leave-one-source-out figures "
               "below as the ones to quote. `cases-5.jsonl` (long context: the LLaMA-Factory wiki's QLoRA table to "
               "100k tokens, ArcticTraining's one-GPU baseline, 360-LLaMA-Factory's ring-attention maxima; "
               "docs/long-context.md) pointed at two mechanisms, each set without its rows: the allocator's "
               "`expandable_segments` setting, which ArcticTraining's recipe uses (its share of the slack from "
               "gpjt/fine-tune-2024-04's paired runs), and the verdict's median test on the memory the allocator "
               "cannot give back (plan/margin.hpp `firm_device`); before them its one-GPU rows read +9.7% and a "
               "wrong verdict (4 of 5 right). Its ALST rows (AT3-AT7, ArcticTraining's recipes with TiledMLP, "
               "the fused head and loss and checkpoint offload) came with the `tiled_mlp` and `fused_linear_loss` "
               "keys and the memory of Liger's fused RMSNorm and SwiGLU (`fused_kernels`), each counted from the "
               "code and not fitted; in sample for those three mechanisms: before the last, the two recipes "
               "without TiledMLP read 98.6 and 114 GB of an 80 GB card:\n\n"
            << "- memory: " << stats(rs, held_mem, false) << "\n"
            << "- time: " << stats(rs, held_time, false) << "\n"
            << "- `cases-5.jsonl` alone, memory: " << stats(rs, [&](const case_result& r) { return r.file == "cases-5.jsonl" && is_memory(r); }, false)
            << "; verdicts: " << verdicts_of(rs, "cases-5.jsonl") << "\n\n"
            << "**Leave one source out** (every file) — for each source, the time model's three fitted efficiency "
               "constants (matmul_scale, bandwidth_fraction, comm_fraction; `calibrate.hpp`) are refit by robust (Huber) least squares "
               "on every other source's training time rows and that source is estimated with them. The memory model "
               "has no constant fitted to measurements (its constants come from framework documentation and code, "
               "docs/memory-model.md), so its LOSO error is its error:\n\n"
            << "- memory: " << stats(rs, is_memory, true) << "\n"
            << "- time: " << stats(rs, is_time, true) << "\n"
            << "- fit/OOM verdicts: " << right << " of " << verdicts << " right\n\n"
            << "## In sample\n\n`cases.jsonl`, the rows the defaults were chosen with:\n\n"
            << "- memory: " << stats(rs, in_mem, false) << "\n"
            << "- time: " << stats(rs, in_time, false) << "\n\n"
            << "## Error bands\n\nEvery estimate carries a P10/P50/P90 band: the quantiles of measured / estimated over "
               "the leave-one-source-out residuals of its regime (memory or time × training or serving × full or "
               "PEFT × one or several GPUs; a regime with fewer than 6 cases uses its parent's; a run whose model "
               "family, precision or GPU count was never measured gets the widest band and says so; a run whose "
               "framework × method class × GPU class × scale no row measured gets a further widening and says so: "
               "`memory.bands.regime.covered` false in `--json`). "
               "The verdict (plan/margin.hpp) is `fits` when the device P90 plus a headroom (the larger of 5% "
               "and 1 GiB) is within capacity, `tight` when only the P50 is, `does_not_fit` otherwise; the "
               "planner plans on the same margin. A run calibrated to the user's own measurements "
               "(docs/calibration.md) takes its band from that fit instead. Honesty of the bands, each case's band built "
               "without its own source, then without its own framework, then without its own GPU class (GeForce cards; "
               "data-centre cards before Ampere, Ampere/Ada, Hopper and later):\n\n"
            << band_text(rs) << "\n"
            << "Which memory: `peak_allocated` = live tensors (torch.cuda.max_memory_allocated); "
               "`peak_reserved` = the caching allocator's pool; `device` = what nvidia-smi shows (reserved + CUDA "
               "context + library workspaces + memory outside PyTorch's allocator). Each case compares the figure "
               "its source measured.\n\n## Serving, per engine\n\n"
               "The serving rows (workload infer; both files) by the engine that produced them (`engine` in the "
               "scenario: transformers `generate()` is `hf`; docs/serving.md describes each engine's model). "
               "Targets: memory median at most 5%, decode tokens/s median at most 15% per engine. "
               "LOSO: the three efficiency constants refit on the other sources' training rows, which the serving time model uses too (memory has no fitted constant).\n\n";
  per_engine(rs);
  std::cout << "\n## Per source\n\n";
  per_source(rs);
  std::cout << "\n## Memory\n\n";
  table(rs, [](const case_result& r) { return r.metric.rfind("memory.", 0) == 0 && !r.unexpressible; });
  std::cout << "\n## Time\n\n";
  table(rs, is_time);
  replay_section(rs, dir);
  vision_section(rs);
  diffusion_section(rs);
  std::cout << "\n## Not expressible yet\n\nRows whose run the scenario schema cannot express and no other estimator "
               "covers (counted in no figure above):\n\n| case | metric | source | what is missing |\n|---|---|---|---|\n";
  for (const auto& r : rs)
    if (r.unexpressible && !is_diffusion(r) && !is_vision(r)) std::cout << "| " << r.id << " | `" << r.metric << "` | " << r.src << " | " << r.failure.substr(21) << " |\n";
  std::cout << "\nCaveats per source are in `tests/data/validation/README.md` and `cases-2-notes.md`.\n";
  return 0;
}
