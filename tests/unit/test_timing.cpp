#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
// test_timing.cpp — time model tests and the time rows of tests/data/validation/cases.jsonl, built in C++
// until the JSON scenario reader and the accuracy harness land. Architecture fields
// come from src/data/models/*.json or the inline objects in cases.jsonl; GPU figures
// from src/data/gpus.csv. Each row keeps its source.

#include <string>
#include <vector>

#include "gpuplan/memory.hpp"
#include "gpuplan/timing.hpp"

// Its own namespace: the suite is compiled in batches (unity build).
namespace gpuplan::unit_timing {

struct time_case {
  std::string id;
  std::string src;
  bool step_seconds = false;  // metric: time.step_seconds (else tokens/s per GPU)
  double expected = 0;
  architecture model;
  scenario run;
};

// One row of gpus.csv (dense TFLOPS, GB/s, bidirectional link GB/s).
inline gpu_spec csv_gpu(const char* id, int cc_major, int cc_minor, double mem_gb, double bw_gb_s, double fp32,
                        double tf32, double bf16, double fp16_acc16, double fp8, const char* link, double link_bidir,
                        int link_group, int pcie_gen, double tdp) {
  gpu_spec g;
  g.id = id;
  g.cc_major = cc_major;
  g.cc_minor = cc_minor;
  g.memory = gb(mem_gb);
  g.usable_memory = gb(mem_gb * 0.98);
  g.bandwidth = gb_per_s(bw_gb_s);
  g.fp32 = tflop_per_s(fp32);
  if (tf32 > 0) g.tf32 = tflop_per_s(tf32);
  if (bf16 > 0) g.bf16 = tflop_per_s(bf16);
  if (fp16_acc16 > 0) g.fp16_acc16 = tflop_per_s(fp16_acc16);
  if (fp8 > 0) g.fp8 = tflop_per_s(fp8);
  g.link = link;
  g.link_per_direction = gb_per_s(link_bidir / 2);
  g.link_group = link_group;
  g.pcie_gen = pcie_gen;
  g.tdp_watts = tdp;
  return g;
}
inline gpu_spec rtx4090() { return csv_gpu("rtx-4090", 8, 9, 24, 1008, 82.6, 82.6, 165.2, 330.3, 330.3, "none", 0, 1, 4, 450); }
inline gpu_spec v100_16() { return csv_gpu("v100-sxm2-16gb", 7, 0, 16, 900, 15.7, 0, 0, 125, 0, "nvlink2", 300, 8, 3, 300); }
inline gpu_spec a100_40() { return csv_gpu("a100-40gb", 8, 0, 40, 1555, 19.5, 156, 312, 312, 0, "nvlink3", 600, 8, 4, 400); }
inline gpu_spec a100_80() { return csv_gpu("a100-80gb", 8, 0, 80, 2039, 19.5, 156, 312, 312, 0, "nvlink3", 600, 8, 4, 400); }
inline gpu_spec h100_sxm() { return csv_gpu("h100-sxm", 9, 0, 80, 3350, 67, 494.7, 989.4, 989.4, 1979, "nvlink4", 900, 8, 5, 700); }

inline architecture llama(std::int64_t h, std::int64_t L, std::int64_t heads, std::int64_t kv, std::int64_t ffn,
                          std::int64_t vocab, std::int64_t maxpos) {
  architecture a;
  a.family = "llama";
  a.hidden = h; a.layers = L; a.heads = heads; a.kv_heads = kv; a.ffn = ffn; a.vocab = vocab; a.max_positions = maxpos;
  a.mlp = mlp_kind::gated; a.activation = activation_kind::silu; a.norm = norm_kind::rmsnorm; a.norm_bias = false;
  a.positions = position_kind::rotary; a.tied_embeddings = false;
  return a;
}
inline architecture llama31_8b() { return llama(4096, 32, 32, 8, 14336, 128256, 131072); }
inline architecture llama2_7b() { return llama(4096, 32, 32, 32, 11008, 32000, 4096); }
inline architecture tinyllama() { return llama(2048, 22, 32, 4, 5632, 32000, 2048); }

// BERT-large for sequence classification (HF perf docs: AutoModelForSequenceClassification).
inline architecture bert_large() {
  architecture a;
  a.family = "bert";
  a.kind = model_kind::encoder;
  a.hidden = 1024; a.layers = 24; a.heads = 16; a.ffn = 4096; a.vocab = 30522; a.max_positions = 512; a.type_vocab = 2;
  a.q_bias = a.out_bias = a.mlp_bias = true; a.embedding_norm = true; a.final_norm = false;
  a.head = head_kind::classifier; a.num_labels = 2; a.dropout = 0.1;
  return a;
}
// GPT-2 style (Megatron GPT / HF gpt2): learned positions, biases, tied head, ffn 4h.
inline architecture gpt2_like(std::int64_t h, std::int64_t L, std::int64_t heads, std::int64_t vocab, double dropout) {
  architecture a;
  a.family = "gpt2";
  a.hidden = h; a.layers = L; a.heads = heads; a.ffn = 4 * h; a.vocab = vocab; a.max_positions = 2048;
  a.q_bias = a.out_bias = a.mlp_bias = true; a.dropout = dropout;
  return a;
}
// MPT (llm-foundry): no biases, LayerNorm without bias, ALiBi, tied embeddings, ffn = 4·d_model.
inline architecture mpt(std::int64_t d, std::int64_t L, std::int64_t heads) {
  architecture a;
  a.family = "mpt";
  a.hidden = d; a.layers = L; a.heads = heads; a.ffn = 4 * d; a.vocab = 50368; a.max_positions = 2048;
  a.norm_bias = false; a.positions = position_kind::alibi;
  return a;
}

inline scenario train(const gpu_spec& g, int gpus, precision p, std::int64_t mb, std::int64_t seq, std::int64_t ga,
                      checkpointing ck, attention at, int zero) {
  scenario s;
  s.gpu = g; s.num_gpus = gpus; s.prec = p; s.micro_batch = mb; s.seq_len = seq; s.grad_accum = ga;
  s.ckpt = ck; s.attn = at; s.parallel.zero = zero;
  return s;
}

inline std::vector<time_case> time_cases() {
  std::vector<time_case> v;
  const char* tt = "pytorch/torchtune README @30b8519e";
  const char* hf = "huggingface/transformers docs perf_train_gpu_one";
  const char* lf = "mosaicml/llm-foundry scripts/train/benchmarking/README.md";
  using enum precision;
  using enum checkpointing;
  using enum attention;
  {
    scenario s = train(rtx4090(), 1, bf16_pure, 2, 2048, 1, full, flash, 0);
    s.compile = true; s.opt = optimizer::paged_adamw_8bit; s.optimizer_in_backward = true;
    v.push_back({"T1t", tt, false, 1650, llama31_8b(), s});
    s.opt = optimizer::adamw; s.optimizer_in_backward = false; s.meth = method::lora;
    s.lora = {.rank = 8, .alpha = 16, .dropout = 0.0, .targets = lora_q | lora_v};
    v.push_back({"T3t", tt, false, 3083, llama31_8b(), s});
    s.meth = method::qlora; s.lora.targets = lora_all_linear;
    v.push_back({"T4t", tt, false, 2413, llama31_8b(), s});
  }
  {
    auto bert = [&](const char* id, double exp, precision p, std::int64_t mb, std::int64_t ga, checkpointing ck, optimizer o) {
      scenario s = train(v100_16(), 1, p, mb, 512, ga, ck, eager, 0);
      s.opt = o;
      s.opt_kernel = optimizer_kernel::foreach;  // the 2022 Trainer's adamw_hf: a per-tensor loop
      v.push_back({id, hf, false, exp, bert_large(), s});
    };
    bert("H1t", 4536.32, fp32, 4, 1, none, optimizer::adamw);
    bert("H2t", 3968.0, fp32, 1, 4, none, optimizer::adamw);
    bert("H3t", 3066.88, fp32, 1, 4, full, optimizer::adamw);
    bert("H4t", 9543.68, fp16_mixed, 4, 1, none, optimizer::adamw);
    bert("H5t", 5166.08, fp16_mixed, 1, 4, full, optimizer::adamw);
    bert("H6t", 4075.52, fp32, 4, 1, none, optimizer::adafactor);
    bert("H7t", 4638.72, fp16_mixed, 1, 4, full, optimizer::adafactor);
    bert("H8at", 4684.8, fp32, 4, 1, none, optimizer::adamw_8bit);
    bert("H8bt", 5299.2, fp16_mixed, 1, 4, full, optimizer::adamw_8bit);
  }
  {
    scenario s = train(h100_sxm(), 8, bf16_mixed, 2, 8192, 1, selective, flash, 3);
    s.opt_kernel = optimizer_kernel::fused;  // torchtitan optimizer.implementation = "fused"
    v.push_back({"TT1t", "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md", false, 5762, llama31_8b(), s});
  }
  v.push_back({"F1", lf, false, 10643, mpt(4096, 32, 32), train(h100_sxm(), 8, bf16_mixed, 6, 2048, 1, none, flash, 3)});
  v.push_back({"F2", lf, false, 4641, mpt(4096, 32, 32), train(a100_80(), 8, bf16_mixed, 6, 2048, 1, none, flash, 3)});
  v.push_back({"F7", lf, false, 19271, mpt(2048, 24, 16), train(a100_40(), 8, bf16_pure, 8, 2048, 8, none, flash, 3)});
  v.push_back({"F8", lf, false, 30586, mpt(2560, 32, 20), train(h100_sxm(), 8, fp8_mixed, 10, 2048, 6, none, flash, 3)});
  v.push_back({"M1", "Narayanan et al. 2021 Table 1", false, 9287.934978862319, gpt2_like(2304, 24, 24, 51200, 0.1),
               train(a100_80(), 32, fp16_mixed, 16, 2048, 1, full, eager, 0)});
  {
    scenario s = train(a100_80(), 256, fp16_mixed, 8, 2048, 4, full, eager, 0);
    s.parallel.tp = 8;
    v.push_back({"M2", "Narayanan et al. 2021 Table 1", false, 871.5545133688312, gpt2_like(6144, 40, 48, 51200, 0.1), s});
  }
  {
    scenario s = train(a100_80(), 8, bf16_mixed, 4, 2048, 1, full, eager, 0);
    s.parallel.tp = 8;
    v.push_back({"K1f", "Korthikanti et al. 2022 Table 5", true, 1.42, gpt2_like(6144, 48, 64, 51200, 0.1), s});
    s.ckpt = selective; s.parallel.sp = true;
    v.push_back({"K1s", "Korthikanti et al. 2022 Table 5", true, 1.10, gpt2_like(6144, 48, 64, 51200, 0.1), s});
  }
  const char* ib = "pytorch.github.io _posts/2024-03-13-maximizing-training.md";
  v.push_back({"IB1a", ib, false, 3700, llama2_7b(), train(a100_80(), 128, bf16_mixed, 2, 4096, 1, none, flash, 3)});
  v.push_back({"IB1b", ib, false, 7500, llama2_7b(), train(h100_sxm(), 96, bf16_mixed, 2, 4096, 1, none, flash, 3)});
  v.push_back({"TL1", "jzhang38/TinyLlama README", false, 24000, tinyllama(),
               train(a100_40(), 16, bf16_mixed, 8, 2048, 1, none, flash, 3)});
  v.push_back({"NM2", "NVIDIA/NeMo docs performance_summary.md (24.07)", false, 16847, llama2_7b(),
               train(h100_sxm(), 8, fp8_mixed, 1, 4096, 16, none, flash, 1)});
  v.push_back({"FA1", "Dao-AILab/flash-attention training/README.md", false, 163750.0, gpt2_like(768, 12, 12, 50257, 0.0),
               train(a100_80(), 8, bf16_mixed, 32, 2048, 1, none, flash, 0)});
  return v;
}

}  // namespace gpuplan::unit_timing

namespace unit_timing_tests {
using namespace gpuplan;

namespace {
[[maybe_unused]] double estimate_of(const unit_timing::time_case& c, const efficiency_params& e = {}) {
  const time_estimate t = estimate_time(c.model, c.run, e);
  return c.step_seconds ? in_seconds(t.step) : t.tokens_per_second_per_gpu;
}
}  // namespace

// Accuracy against every published time case with ONE set of defaults. The table is
// printed so docs/accuracy.md can quote it; the assertion is the target.
TEST_CASE("time: published cases, median |error| <= 15% with default efficiencies") {
  const auto cases = unit_timing::time_cases();
  std::vector<double> errs;
  std::printf("%-6s %-12s %12s %12s %8s  step(s) comp comm bub opt off  mfu\n", "case", "metric", "expected", "estimate", "err%");
  for (const auto& c : cases) {
    const time_estimate t = estimate_time(c.model, c.run);
    const double est = c.step_seconds ? in_seconds(t.step) : t.tokens_per_second_per_gpu;
    const double err = (est - c.expected) / c.expected * 100.0;
    errs.push_back(std::fabs(err));
    std::printf("%-6s %-12s %12.4g %12.4g %+8.1f  %.3f %.3f %.3f %.3f %.3f %.3f  %.3f\n", c.id.c_str(),
                c.step_seconds ? "step_s" : "tok/s/gpu", c.expected, est, err, in_seconds(t.step),
                in_seconds(t.breakdown.compute), in_seconds(t.breakdown.communication), in_seconds(t.breakdown.bubble),
                in_seconds(t.breakdown.optimizer), in_seconds(t.breakdown.offload), t.mfu);
  }
  std::sort(errs.begin(), errs.end());
  const std::size_t n = errs.size();
  const double median = n % 2 ? errs[n / 2] : 0.5 * (errs[n / 2 - 1] + errs[n / 2]);
  std::printf("median |error| over %zu cases: %.1f%%\n", n, median);
  CHECK(median <= 15.0);
}

TEST_CASE("time: peak selection, impossible precisions and warnings") {
  const architecture a = unit_timing::llama2_7b();
  scenario r = unit_timing::train(unit_timing::v100_16(), 1, precision::fp8_mixed, 1, 512, 1, checkpointing::none, attention::eager, 0);
  CHECK_THROWS_WITH_AS(estimate_time(a, r), "scenario.precision: fp8-mixed needs FP8 tensor cores (sm_89+); v100-sxm2-16gb is sm_70",
                       config_error);
  r.prec = precision::tf32;  // no TF32 on Volta: PyTorch runs FP32, warned
  const time_estimate tf = estimate_time(a, r);
  CHECK((tf.warnings & warn_tf32_unsupported) != 0);
  CHECK(tf.peak_flop_per_s == doctest::Approx(15.7e12));
  r.prec = precision::bf16_mixed;  // emulated on Volta: FP32 rate, warned
  const time_estimate bf = estimate_time(a, r);
  CHECK((bf.warnings & warn_bf16_emulated) != 0);
  CHECK(bf.peak_flop_per_s == doctest::Approx(15.7e12));
  r.prec = precision::fp16_mixed;  // V100 fp16 tensor cores: 125 TFLOP/s
  const time_estimate fp = estimate_time(a, r);
  CHECK(fp.peak_flop_per_s == doctest::Approx(125e12));
  CHECK(fp.step < bf.step);
  r.attn = attention::flash;
  CHECK((estimate_time(a, r).warnings & warn_flash_unsupported) != 0);
  // GeForce: FP32 accumulate at half the FP16-accumulate rate.
  scenario g = unit_timing::train(unit_timing::rtx4090(), 1, precision::bf16_mixed, 1, 512, 1, checkpointing::none, attention::flash, 0);
  const time_estimate ge = estimate_time(a, g);
  CHECK((ge.warnings & warn_fp32_accumulate_half_rate) != 0);
  CHECK(ge.peak_flop_per_s == doctest::Approx(165.2e12));
  g.prec = precision::fp8_mixed;  // Ada has FP8
  CHECK(estimate_time(a, g).peak_flop_per_s == doctest::Approx(330.3e12));
  // Bad layouts name the field.
  scenario t = unit_timing::train(unit_timing::a100_80(), 8, precision::bf16_mixed, 1, 512, 1, checkpointing::none, attention::flash, 0);
  t.parallel.tp = 3;
  CHECK_THROWS_WITH_AS(estimate_time(a, t), "scenario.parallel.tp: must divide num_attention_heads=32 (got 3)", config_error);
  t.parallel.tp = 4;
  t.num_gpus = 6;
  CHECK_THROWS_WITH_AS(estimate_time(a, t), "scenario.num_gpus: must be a multiple of tp*pp*cp=4 (got 6)", config_error);
  // An unvalidated scenario never reaches the arithmetic: seq_len 0 is an error, not a number.
  t.num_gpus = 8;
  t.seq_len = 0;
  CHECK_THROWS_WITH_AS(estimate_time(a, t), "scenario.seq_len: must be at least 1 (got 0)", config_error);
  CHECK_THROWS_WITH_AS(estimate_memory(a, t), "scenario.seq_len: must be at least 1 (got 0)", config_error);
}

TEST_CASE("time: collectives follow the ring formulas") {
  using namespace gpuplan::detail;
  const efficiency_params e;
  const comm_link l{100e9, 5e-6};
  // all-reduce of 1 GB over 8: 2·7/8·1e9 / (100e9·0.8) + 14·5 µs = 21.875 ms + 70 µs.
  CHECK(all_reduce_seconds(1e9, 8, l, e) == doctest::Approx(2 * 7.0 / 8 * 1e9 / 80e9 + 14 * 5e-6));
  CHECK(gather_seconds(1e9, 8, l, e) == doctest::Approx(7.0 / 8 * 1e9 / 80e9 + 7 * 5e-6));
  CHECK(all_reduce_seconds(1e9, 1, l, e) == 0);
  // Links: 8 A100s in a node use NVLink (300 GB/s per direction); 16 cross nodes at 25 GB/s.
  scenario r;
  r.gpu = unit_timing::a100_80();
  r.num_gpus = 8;
  CHECK(group_link(r, 8, 1).bytes_per_s == doctest::Approx(300e9));
  r.num_gpus = 16;
  CHECK(group_link(r, 16, 1).bytes_per_s == doctest::Approx(25e9));
  CHECK(group_link(r, 2, 8).bytes_per_s == doctest::Approx(25e9));  // dp across tp=8 nodes
  r.gpu = unit_timing::rtx4090();  // no NVLink: PCIe 4.0 x16 = 32 GB/s
  r.num_gpus = 4;
  CHECK(group_link(r, 4, 1).bytes_per_s == doctest::Approx(32e9));
  r.gpu = unit_timing::h100_sxm();  // DGX H100 reference network: 8 x 400 Gb/s
  r.num_gpus = 16;
  CHECK(group_link(r, 16, 1).bytes_per_s == doctest::Approx(50e9));
}

TEST_CASE("time: pipeline bubble (p-1)/(m·v) and the step adds up") {
  const architecture a = unit_timing::gpt2_like(6144, 48, 64, 51200, 0.0);
  scenario r = unit_timing::train(unit_timing::a100_80(), 64, precision::bf16_mixed, 1, 2048, 16, checkpointing::full, attention::flash, 0);
  r.parallel.tp = 8;
  r.parallel.pp = 8;
  const time_estimate t = estimate_time(a, r);
  const auto& b = t.breakdown;
  const double per_mb = (in_seconds(b.compute) + in_seconds(b.communication)) / 16;  // dp = 1: all comm per micro-batch
  CHECK(in_seconds(b.bubble) == doctest::Approx(7.0 * per_mb).epsilon(0.02));  // (p-1)/m of m micro-batches
  r.parallel.virtual_stages = 2;
  CHECK(in_seconds(estimate_time(a, r).breakdown.bubble) == doctest::Approx(3.5 * per_mb).epsilon(0.02));
  CHECK(in_seconds(t.step) == doctest::Approx(in_seconds(b.compute + b.communication + b.bubble + b.optimizer + b.offload)));
  // MFU/HFU from the FLOP counts: HFU > MFU under full recompute, both below the A100 GEMM ceiling 0.81.
  CHECK(t.hfu > t.mfu);
  CHECK(t.hfu < 0.81);
  CHECK(t.mfu == doctest::Approx(in_flops(t.model_flops_per_step) / (in_seconds(t.step) * 64 * 312e12)));
}

TEST_CASE("time: backward TP all-reduces hide behind the column-parallel dW GEMMs (Megatron async all-reduce)") {
  using namespace gpuplan::detail;
  // GPT h=6144, 48 layers, tp=8 on one DGX A100 node, b=4, s=2048, no recompute, dp=1.
  // One all-reduce of T·h·2 B = 8192·6144·2 B over NVLink (300 GB/s per direction · 0.8):
  // 2·7/8·100.7 MB / 240 GB/s ≈ 0.73 ms, shorter than the q,k,v forward GEMMs (2·8192·6144·
  // 18432/8 FLOP ≈ 232 GFLOP at ≤ 0.81·312 TFLOP/s ≈ 0.92 ms) and the MLP up GEMM (1.22 ms):
  // both backward all-reduces are hidden, the 2 forward ones per layer are exposed.
  const architecture a = unit_timing::gpt2_like(6144, 48, 64, 51200, 0.1);
  scenario r = unit_timing::train(unit_timing::a100_80(), 8, precision::bf16_mixed, 4, 2048, 1, checkpointing::none, attention::eager, 0);
  r.parallel.tp = 8;
  const efficiency_params e;
  const double ar = all_reduce_seconds(8192.0 * 6144 * 2, 8, group_link(r, 8, 1), e);
  CHECK(ar == doctest::Approx(2 * 7.0 / 8 * 8192.0 * 6144 * 2 / (300e9 * 0.8)).epsilon(0.01));
  CHECK(in_seconds(estimate_time(a, r).breakdown.communication) == doctest::Approx(48 * 2 * ar).epsilon(1e-6));
  // Full recompute repeats the forward's 2 (exposed) all-reduces in backward.
  r.ckpt = checkpointing::full;
  CHECK(in_seconds(estimate_time(a, r).breakdown.communication) == doctest::Approx(48 * 4 * ar).epsilon(1e-6));
  // LoRA: frozen base weights have no dW GEMM to hide behind: 2 forward + 2 backward exposed.
  r.ckpt = checkpointing::none;
  r.meth = method::lora;
  CHECK(in_seconds(estimate_time(a, r).breakdown.communication) == doctest::Approx(48 * 4 * ar).epsilon(1e-6));
}

TEST_CASE("time: time to train, GPU-hours, cost and energy") {
  scenario r = unit_timing::train(unit_timing::a100_80(), 8, precision::bf16_mixed, 4, 2048, 1, checkpointing::none, attention::flash, 1);
  r.tokens = 1e9;
  r.price_per_gpu_hour = 2.0;
  const time_estimate t = estimate_time(unit_timing::tinyllama(), r);
  CHECK(in_seconds(t.total) == doctest::Approx(1e9 / t.tokens_per_second));
  CHECK(t.gpu_hours == doctest::Approx(in_seconds(t.total) * 8 / 3600));
  REQUIRE(t.cost.has_value());
  CHECK(*t.cost == doctest::Approx(2.0 * t.gpu_hours));
  // Energy between idle (30% TDP) and full TDP for those GPU-hours.
  CHECK(t.energy_kwh > 0.3 * 0.4 * t.gpu_hours);
  CHECK(t.energy_kwh <= 0.4 * t.gpu_hours);
}

TEST_CASE("time: serving — decode is bandwidth-bound at batch 1, compute-bound beyond a batch") {
  // llama-2-7b bf16 on one A100-80GB: decode reads 13.5 GB of weights per token, so at
  // batch 1 the GPU part is 13.5e9 / (2039e9·0.8) = 8.28 ms (plus the small KV read); transformers
  // generate adds its eager launch floor, 32 layers × 45 ops × 12 µs = 17.28 ms (engine.hpp).
  scenario r;
  r.work = workload::infer;
  r.gpu = unit_timing::a100_80();
  r.inference = {.batch = 1, .prompt_len = 512, .gen_len = 256, .kv_cache_dtype = dtype::bf16};
  const architecture a = unit_timing::llama2_7b();
  const double launch = 32 * 45 * 12e-6;
  const time_estimate t = estimate_time(a, r);
  CHECK(t.decode_tokens_per_second_per_sequence == doctest::Approx(1 / (13.5e9 / (2039e9 * 0.8) + launch)).epsilon(0.05));
  CHECK(t.time_to_first_token > seconds(0.02));  // 512 tokens · 13.5 GFLOP at < 271 TFLOP/s ≥ 25 ms
  // Weight matmuls turn compute-bound at B = (2 B/param / 2 FLOP/param) · 271e12 / 1631e9 ≈ 166.
  CHECK(t.decode_compute_bound_batch == doctest::Approx(166).epsilon(0.05));
  // 4-bit weights in transformers dequantise to 16-bit: no faster than bf16 (Qwen2.5 speed benchmark).
  r.quant = quantization{.weights = dtype::int4, .double_quant = false, .group_size = 128};
  CHECK(estimate_time(a, r).decode_tokens_per_second_per_sequence <= t.decode_tokens_per_second_per_sequence * 1.001);
  // Under vLLM (Marlin kernels, CUDA graphs) they read ~3.5x fewer bytes; the step's fixed
  // parts, 1 ms of engine overhead and 32 layers x 11 graph kernels x 2.5 us = 0.88 ms, stay:
  // (8.28 + 1.88) / (8.28 / 3.5 + 1.88) = 2.4x faster than vLLM bf16.
  r.inference.eng = engine::vllm;
  const double vllm_int4 = estimate_time(a, r).decode_tokens_per_second_per_sequence;
  r.quant.reset();
  const double vllm_bf16 = estimate_time(a, r).decode_tokens_per_second_per_sequence;
  CHECK(vllm_int4 / vllm_bf16 == doctest::Approx(2.4).epsilon(0.05));
  // bitsandbytes LLM.int8 in transformers: 2-3x slower than bf16, not faster (kLlmInt8GemmFactor 2.5).
  r.inference.eng = engine::hf;
  r.quant = quantization{.weights = dtype::int8, .double_quant = false, .group_size = 0};
  CHECK(estimate_time(a, r).decode_tokens_per_second_per_sequence < t.decode_tokens_per_second_per_sequence);
  // Larger batches raise aggregate throughput; the MHA KV cache (0.5 MB per token), read and
  // rewritten by DynamicCache's torch.cat and read by attention (3 passes), then costs more
  // than the weights: 3·32·640·0.52 MB = 32.2 GB vs 13.5 GB; the launch floor is paid once
  // per step whatever the batch.
  r.quant.reset();
  r.inference.batch = 32;
  const double agg = estimate_time(a, r).decode_tokens_per_second / t.decode_tokens_per_second;
  const double bw = 2039e9 * 0.8;
  CHECK(agg == doctest::Approx(32 * (13.5e9 / bw + 3 * 0.335e9 / bw + launch) / (13.5e9 / bw + 3 * 32 * 0.335e9 / bw + launch)).epsilon(0.03));
}

TEST_CASE("time: overlap, ZeRO and offload move time where they should") {
  const architecture a = unit_timing::llama2_7b();
  scenario r = unit_timing::train(unit_timing::a100_80(), 16, precision::bf16_mixed, 2, 4096, 1, checkpointing::none, attention::flash, 0);
  const time_estimate ddp = estimate_time(a, r);
  CHECK(ddp.total_communication > ddp.breakdown.communication);  // DDP hides most of its all-reduce
  r.parallel.zero = 3;
  const time_estimate z3 = estimate_time(a, r);
  // ZeRO-3 moves 3 x 2 B/param (2 all-gathers + reduce-scatter, 16-bit) vs DDP's fp32
  // all-reduce 2 x 4 B/param: 6/8 of the bytes, all over the 25 GB/s inter-node link.
  CHECK(in_seconds(z3.total_communication) == doctest::Approx(0.75 * in_seconds(ddp.total_communication)).epsilon(0.01));
  r.parallel.offload_optimizer = offload::cpu;
  const time_estimate off = estimate_time(a, r);
  CHECK(off.breakdown.offload > seconds(0));
  CHECK(off.step > z3.step);
  // Full fine-tuning a 7B model with LoRA needs far less optimizer time.
  r.parallel.offload_optimizer = offload::none;
  r.meth = method::lora;
  CHECK(estimate_time(a, r).breakdown.optimizer < 0.01 * z3.breakdown.optimizer);
}

TEST_CASE("time: serving with gen_len 0 is prefill only") {
  // Found by fuzz_scenario_fields: validation accepts gen_len 0, the time model rejected it.
  const architecture a = unit_timing::llama2_7b();
  scenario r = unit_timing::train(unit_timing::v100_16(), 1, precision::fp16_mixed, 1, 512, 1, checkpointing::none, attention::eager, 0);
  r.work = workload::infer;
  r.inference.gen_len = 0;
  const time_estimate t = estimate_time(a, r);
  CHECK(in_seconds(t.step) == doctest::Approx(in_seconds(t.time_to_first_token)));
  CHECK(t.tokens_per_second == 0);
  r.inference.gen_len = 64;
  CHECK(in_seconds(estimate_time(a, r).step) > in_seconds(t.step));
}

}  // namespace unit_timing_tests
