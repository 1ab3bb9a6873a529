// Every published case in tests/data/validation/cases.jsonl and cases-2.jsonl to cases-5.jsonl,
// run through the JSON output (the same path as `gpuplan estimate --json`).
// In sample (cases.jsonl): memory median |error| <= 10% with every fit/OOM
// verdict right; time median |error| <= 15%; one set of defaults for all.
// Out of sample (cases-2.jsonl to cases-5.jsonl held out; leave one source out over all): the
// figures docs/accuracy.md reports may not get worse than recorded below.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "accuracy/cases.hpp"
#include "gpuplan/replay.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_validation {

using namespace gpuplan::accuracy;

namespace {
const std::vector<case_result>& results() {
  static const auto rs = run_all(GPUPLAN_TEST_DATA_DIR "/validation");
  return rs;
}
bool in_sample(const case_result& r) { return r.file == "cases.jsonl"; }
// Per-case ceilings: a single case may miss by more than the median target
// (sources differ in what they measured), but not by more than these.
constexpr double kMemoryCaseCeiling = 0.30;
constexpr double kTimeCaseCeiling = 0.60;
// Rows whose source leaves the run under-specified get a wider ceiling, each
// with its reason (tests/data/validation/README.md, "Caveats per source"):
struct known_miss {
  const char* id;
  double ceiling;
  const char* why;
};
constexpr known_miss kKnownMisses[] = {
    {"P1l", 0.50, "PEFT README: precision and sequence lengths not stated; T0's decoder targets are a few tokens, "
                  "gpuplan runs the decoder over seq_len"},
    {"P2l", 0.50, "PEFT README: as P1l (mt0-xxl encoder-decoder)"},
    {"TT1t", 0.80, "torchtitan ran the H100 96GB variant capped at 500 W (catalog h100-sxm is the 700 W part)"},
};
double ceiling_for(const case_result& r, double normal) {
  for (const auto& k : kKnownMisses)
    if (r.id == k.id) return k.ceiling;
  return normal;
}
}  // namespace

TEST_CASE("validation: all 61 + 63 + 9 + 49 + 25 cases load; every expressible one estimates") {
  REQUIRE(results().size() == 61 + 63 + 9 + 49 + 25);
  int unexpressible = 0;
  for (const auto& r : results()) {
    CAPTURE(r.id);
    if (r.unexpressible) { ++unexpressible; continue; }
    CHECK(r.failure == "");
  }
  // BOFT, OSF, CNN, diffusion (three sources), encoder-only inference; April 2024's Unsloth (cases-5.jsonl LU1-LU8)
  CHECK(unexpressible == 25);
}

// Published fit/OOM verdicts the model gets wrong, each with its reason (docs/accuracy.md).
constexpr known_miss kKnownVerdictMisses[] = {
    {"UC8", 0, "Unsloth README 70B table, 48 GB row: a maximum context the table interpolates between measured "
               "cards (cases-4-notes.md); the estimate needs 53.6 GB of the card's 50.5 GB, 40.6 GB of it the NF4 "
               "weights with the bf16 embeddings and head"},
};
TEST_CASE("validation: every fit/OOM verdict is right but the known misses") {
  int verdicts = 0, misses = 0;
  for (const auto& r : results()) {
    if (!is_verdict(r)) continue;
    CAPTURE(r.id);
    const bool known = std::any_of(std::begin(kKnownVerdictMisses), std::end(kKnownVerdictMisses),
                                   [&](const known_miss& k) { return r.id == k.id; });
    CHECK(r.verdict_ok != known);  // a known miss that turns right must leave the list
    misses += known ? 1 : 0;
    ++verdicts;
  }
  CHECK(verdicts == 23);  // P2f, P3f, AQ18, UC1-UC11 (no UC3), LF7, AT2-AT7, SL1-SL3
  CHECK(misses == static_cast<int>(std::size(kKnownVerdictMisses)));
}

TEST_CASE("validation: memory median |error| <= 10%, each case within 30% (known misses listed)") {
  for (const auto& r : results()) {
    if (!is_memory(r) || !in_sample(r)) continue;
    CAPTURE(r.id);
    CAPTURE(r.expected);
    CAPTURE(r.estimate);
    CHECK(std::fabs(r.error) <= ceiling_for(r, kMemoryCaseCeiling));
  }
  CHECK(median_abs_error(results(), [](const case_result& r) { return in_sample(r) && is_memory(r); }) <= 0.10);
}

TEST_CASE("validation: time median |error| <= 15%, each case within 60% (known misses listed)") {
  for (const auto& r : results()) {
    if (!is_time(r) || !in_sample(r)) continue;
    CAPTURE(r.id);
    CAPTURE(r.expected);
    CAPTURE(r.estimate);
    CHECK(std::fabs(r.error) <= ceiling_for(r, kTimeCaseCeiling));
  }
  CHECK(median_abs_error(results(), [](const case_result& r) { return in_sample(r) && is_time(r); }) <= 0.15);
}

// The out-of-sample figures of docs/accuracy.md, recorded: a change may improve
// them (then lower the record) but not make them worse by more than kSlack.
namespace {
constexpr double kSlack = 0.01;  // one percentage point of |error|
struct recorded { const char* what; bool held_out; bool memory; bool loso; double median, p90; };
// The sets include the rows of the PEFT methods beyond LoRA (PF5m-PF9m, PF11m, PF7t, QW-E2048),
// whose seq_len is the benchmark's truncation cap: an upper bound. Memory was 8.5% / 30.7%
// held out and 5.1% / 27.2% LOSO until PEFT's frozen base stopped saving what only weight
// gradients need (memory_terms.hpp frozen_linears). LOSO time was 18.7% until GPTQ training's
// PyTorch unpacking was charged (timing_compute.hpp kGptqTorchDequantBytes): QW-Q256t went from
// -57% to -35%, and the fits without each other source lost the pull toward slower constants that
// this unmodelled cost had lent them, so the rows the model makes too fast (torchtitan, llm-foundry)
// moved further out. LOSO memory was 4.4% / 15.7% until the transformers-docs rows (2022,
// PyTorch 1.x) said that their Trainer's zero_grad() kept the gradients (keep_gradients).
// Held-out time P90 was 56.8% over 26 rows until cases-3.jsonl added the llama.cpp rows:
// decode LC1t (+68%: a 3B model whose per-token kernels, not its weight bytes, bound the
// step) and prompt LC1p (+0.3%), new measurements rather than a change of the model.
// LOSO time was 20.6% / 57.9% until the optimizer step was counted per kernel of the
// implementation that runs (foreach vs fused, timing_optimizer.hpp) and power-limited parts took
// their measured matmul ceilings (timing_model.hpp kMeasuredGemm): PF1t +58% -> +24%, the L40S
// LoRA rows 5-7 points closer. PF1t's optimizer no longer pulls the refits' bandwidth_fraction
// down (now 0.72 without the llama.cpp or Qwen2.5 source), so those sources' decode rows, which the
// model makes too fast, moved out: LC1t +29% -> +54%, QS7-30720t +58% -> +74% (the P90).
// LOSO time was 19.7% until autocast's weight casts were charged (timing_compute.hpp
// autocast_weight_casts): bytes, and a cast kernel per weight tensor forward and backward,
// which the host-bound fp16 micro-batch-1 BERT rows show (H5t +27% -> -2%, H7t +41% -> +9%).
// Held-out time was 16.7% (n = 28) and LOSO time 16.3% (n = 54) until cases-3.jsonl added the
// same pull request's V100 llama-bench run, new measurements rather than a change of the model:
// decode LC2t +151% and prompt LC2p -47% (llama.cpp's quantized kernels on Volta, unmodelled).
// LOSO time was 17.9% / 59.9% until calibrate() took Huber's loss (17.5% / 50.0%): a far-off
// row pulls the refits by its sign, not its size. Held-out time was 17.4% / 68.4% and LOSO
// 17.5% / 50.0% until each decode kernel was charged (engine.hpp: a CUDA graph node's 2.5 us,
// ggml's own launch 3.3 us, both from llama.cpp #6766 / #6763, not from these rows; llama.cpp
// graphs from Volta, and LC2's build before them): LC1t +68% -> -23%, LC2t +151% -> +4%,
// the vLLM rows 4-10 points closer. Held-out time was 16.1% / 46.9% and LOSO 16.9% / 48.8%
// until eager element-wise work was counted op by op from the modules' code (timing_compute.hpp:
// RMSNorm's fp32 upcast, rotate_half rotary, act-then-multiply SwiGLU; one native LayerNorm
// kernel) instead of 2x a fused pass: PF* +31..46% -> +6..21%, NB1/2/4/6 8-13 points closer
// (NB5 +17% -> +30%),
// and the 8-GPU FSDP rows F*, whose misses the old factor had partly hidden, +11..29% -> +16..49%
// (TL1 and FA1 now state the fused kernels their sources use: fused_kernels). Then held-out
// 8.6% / 44.2% and LOSO 13.1% / 45.3% until GEMM tiles ran in waves of the GPU's SM count
// (timing_model.hpp tile_wave_efficiency, best of five tile shapes): held-out 7.5% / 46.3%,
// LOSO 9.0% / 42.6%; the held-out P90 rose because LC2p (llama.cpp's prompt rate on a V100,
// -44% -> -46%) is its 27th of 30, while PF* moved from +19..21% to +7..12%.
// Held-out memory was 4.3% / 12.3% (n = 25) and LOSO memory 4.2% / 12.3% (n = 52) until cases-4.jsonl
// added 38 memory rows of runs no file had (FSDP+QLoRA on consumer cards, torchtune tutorials,
// torchtitan float8 and compile, PEFT's FSDP/DeepSpeed pages): 12.0% / 32% on those rows alone, then
// 8.4% / 26.7% once the mechanisms they pointed at were counted from the frameworks' code (docs/accuracy.md).
// LOSO memory P90 was 20.2% (n = 90) until cases-5.jsonl added 7 long-context memory rows, new measurements
// rather than a change of the model: the LLaMA-Factory wiki's QLoRA rows at 1K-2K tokens (LF1 +22.8%, LF2
// +15.9%: whole-GB figures of 6 and 7 GB) and ArcticTraining's expandable-segments baseline (AT1 +9.7%).
// Held-out memory was 6.2% / 22.8% and LOSO memory 5.0% / 22.2% until PyTorch FSDP's own timing was
// counted (framework.hpp gradients_allocated_in_backward, root_unit_stays_gathered): the gradient
// shards appear in backward, and the root unit (embeddings, final norm, head) stays gathered from
// forward to the end of backward. The FSDP rows measured as live tensors moved onto their figures
// (AQ3a -4.8% -> -0.5%, AQ4a -3.6% -> +0.2%) and the allocator replay's median over the 69 pool rows
// went from 6.7% to 5.6%, while the fixed 1.35 pool factor of sharded runs now overstates some of
// those pools (AQ2 +16% -> +25%, AQ4 +17% -> +22%, AQ13 +18% -> +26%; its median 6.1% -> 7.1%):
// held-out 7.2% / 25.0%, LOSO 5.3% / 23.6%.
constexpr recorded kRecorded[] = {
    {"held-out memory", true, true, false, 0.072, 0.250},
    {"held-out time", true, false, false, 0.075, 0.463},
    {"LOSO memory", false, true, true, 0.053, 0.236},
    {"LOSO time", false, false, true, 0.090, 0.426},
};
}  // namespace

TEST_CASE("validation: out-of-sample median and P90 no worse than recorded") {
  for (const auto& rec : kRecorded) {
    CAPTURE(rec.what);
    auto pick = [&](const case_result& r) {
      return (!rec.held_out || held_out(r)) && (rec.memory ? is_memory(r) : is_time(r));
    };
    CHECK(quantile_abs_error(results(), pick, 0.5, rec.loso) <= rec.median + kSlack);
    CHECK(quantile_abs_error(results(), pick, 0.9, rec.loso) <= rec.p90 + kSlack);
  }
}

TEST_CASE("validation: source keys group a repository's documents and drop commits") {
  CHECK(source_key("pytorch/torchtune README @30b8519e") == "pytorch/torchtune README");
  CHECK(source_key("huggingface/peft method_comparison/MetaMathQA/results/lora.json @51c2ff66") == "huggingface/peft method_comparison");
  CHECK(source_key("Korthikanti et al. 2022 Table 5") == "Korthikanti et al. 2022");
  CHECK(source_key("NVIDIA/NeMo docs performance_summary.md (24.07)") == "NVIDIA/NeMo docs");
}

TEST_CASE("validation: the diffusion step range the report prints is the published rows' measured / estimated") {
  // diffusion.hpp kStepMeasuredOverEstimate: P10, P50, P90 of measured / estimated step time over
  // every Stable Diffusion step row (docs/accuracy.md, "Diffusion pipelines"). Stale constants fail.
  std::vector<double> ratios;
  for (const auto& r : results())
    if (is_diffusion_time(r)) ratios.push_back(r.expected / diffusion_time(r, diffusion_estimate(r)));
  REQUIRE(ratios.size() == 11);
  std::sort(ratios.begin(), ratios.end());
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(quantile_sorted(ratios, std::array{0.1, 0.5, 0.9}[i]) ==
          doctest::Approx(gpuplan::diffusion::kStepMeasuredOverEstimate[i]).epsilon(0.002));
  }
  // Every row ran slower than its estimate: the range starts above 1.
  CHECK(ratios.front() > 1.0);
}

TEST_CASE("validation: the allocator replay checks the single-stream factor") {
  // replay.hpp: fixed-shape, single-stream allocations through the caching allocator's rules.
  // Over the validation's training runs its pool is never below the live tensors, and its
  // median ratio is at most the single-stream factor (memory_defaults::reserved_factor): a
  // factor below what the allocator's rounding and splitting alone leave would be wrong.
  std::vector<double> ratios;
  for (const auto& r : results()) {
    if (!is_memory(r) || !r.failure.empty() || r.run->settings().work != gpuplan::workload::train) continue;
    const gpuplan::allocator_replay rp = gpuplan::replay_allocator(r.run->run);
    CAPTURE(r.id);
    CHECK(rp.ratio >= 1.0);
    CHECK(rp.ratio < 1.5);
    ratios.push_back(rp.ratio);
  }
  REQUIRE(ratios.size() >= 60);
  std::sort(ratios.begin(), ratios.end());
  CHECK(ratios[ratios.size() / 2] <= gpuplan::memory_defaults::reserved_factor);
  CHECK(ratios[ratios.size() / 2] >= 1.0);
}

}  // namespace unit_validation
