// test_timing_phases.cpp — each phase of the time model on its own, against numbers
// derived by hand from the phase's formula (docs/time-model.md). GPU figures are the
// catalog's (src/data/gpus.csv): A100-SXM4-80GB 312 TFLOP/s bf16, 2039 GB/s, NVLink
// 300 GB/s per direction, PCIe 4.0 x16 32 GB/s; cluster_spec latencies 2 µs in a node,
// 5 µs across nodes; efficiency_params defaults (comm_fraction 0.8, bandwidth_fraction
// 0.8, pcie_fraction 0.8, A100 GEMM ceiling 0.81, FlashAttention-2 0.60 on sm_80).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/timing.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_timing_phases {

using namespace gpuplan;
using namespace gpuplan::detail;

namespace {

constexpr double kA100Bf16 = 312e12;
constexpr double kA100Bandwidth = 2039e9;
constexpr double kNvlinkBus = 300e9 * 0.8;  // per direction × comm_fraction
constexpr double kIntraLatency = 2e-6;
constexpr double kPcie4 = 32e9 * 0.8;       // per direction × pcie_fraction
// Parameter counts (count_parameters, equal to the published figures).
constexpr double kLlama2_7b = 6738415616.0;   // Llama-2-7B: 6.74B
constexpr double kLlama31_8b = 8030261248.0;  // Llama-3.1-8B: 8.03B
// Qwen-7B (QwenLM/Qwen): 32 × (4·4096² + 3·4096 qkv bias + 3·4096·11008 + 2·4096 norms)
// + 2 × 151936·4096 (untied embedding and head) + 4096 final norm = 7,721,324,544.
constexpr double kQwen7b = 7721324544.0;

scenario on(const char* gpu, int gpus) {
  scenario s;
  s.gpu = io::find_gpu(gpu);
  s.num_gpus = gpus;
  return s;
}

// Qwen-7B as in tests/data/validation/cases-2.jsonl (a qwen2-type config with Qwen-7B's dimensions).
architecture qwen_7b() {
  return io::load_model(nlohmann::json::parse(
      R"({"model_type": "qwen2", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
          "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 151936,
          "max_position_embeddings": 32768, "tie_word_embeddings": false})"));
}

// QW-F256t (cases-2.jsonl): full fine-tuning with DeepSpeed ZeRO-3 on 2 A100-80GB, bf16,
// micro-batch 1, grad_accum 8, 256 tokens, full checkpointing, flash attention.
scenario qwen_zero3(std::int64_t grad_accum) {
  scenario s = on("a100-80gb", 2);
  s.parallel.zero = 3;
  s.micro_batch = 1;
  s.grad_accum = grad_accum;
  s.seq_len = 256;
  s.ckpt = checkpointing::full;
  return s;
}

}  // namespace

TEST_CASE("time phases: device rates and a GEMM at the ceiling take 2·m·n·k / (peak × ceiling)") {
  const efficiency_params e;
  warning_set w = 0;
  const device_rates d = device_rates_of(io::find_gpu("a100-80gb"), precision::bf16_mixed, e, w);
  CHECK(d.peak.gemm == doctest::Approx(kA100Bf16));
  CHECK(d.mfu_peak == doctest::Approx(kA100Bf16));
  CHECK(d.ceiling == doctest::Approx(0.81));
  CHECK(d.bwe == doctest::Approx(kA100Bandwidth * 0.8));
  CHECK(w == 0);
  // With the shape factor switched off (no SM count, tile_dim = tile_waves = 0 make the smooth
  // stand-in 1), an 8192³ bf16 GEMM runs at the ceiling: 2·8192³ / (312e12 · 0.81) = 4.3507 ms.
  efficiency_params flat = e;
  flat.tile_dim = 0;
  flat.tile_waves = 0;
  const double n = 8192;
  const double at_ceiling = 2 * n * n * n / (kA100Bf16 * 0.81);
  CHECK(at_ceiling == doctest::Approx(4.3507e-3).epsilon(1e-4));
  CHECK(gemm_seconds(n, n, n, 1, 1, d.peak.gemm, d.ceiling, 0, d.bw, 2, flat) == doctest::Approx(at_ceiling));
  CHECK(gemm_seconds(n, n, n, 1, 3, d.peak.gemm, d.ceiling, 0, d.bw, 2, flat) == doctest::Approx(3 * at_ceiling));
  // On the A100's 108 SMs: 128 x 256 tiles make 64·32 = 2048 tiles, 19 waves of 108 (2052
  // slots): 2048/2052 of the work paid for is useful (128², 128x64 tiles give the same);
  // k adds 8192/(8192+64). Time = at_ceiling / (8192/8256 · 2048/2052) = 4.3933 ms.
  CHECK(d.sms == 108);
  const double shape = 8192.0 / 8256.0 * 2048.0 / 2052.0;
  CHECK(gemm_seconds(n, n, n, 1, 1, d.peak.gemm, d.ceiling, d.sms, d.bw, 2, e) == doctest::Approx(at_ceiling / shape).scale(0));
  CHECK(at_ceiling / shape == doctest::Approx(4.3933e-3).epsilon(1e-4).scale(0));
  // A GEMV (m = 1) is bound by its operand bytes: 2 B · (8192 + 8192² + 8192) / (2039e9 · 0.8) = 82.30 µs.
  const double gemv = 2.0 * (n + n * n + n) / (kA100Bandwidth * 0.8);
  CHECK(gemv == doctest::Approx(82.30e-6).epsilon(1e-3));
  CHECK(gemm_seconds(1, n, n, 1, 1, d.peak.gemm, d.ceiling, d.sms, d.bw, 2, e) == doctest::Approx(gemv));
}

TEST_CASE("time phases: tile and wave quantization at the best tile shape") {
  // 840 tokens (the PEFT L40S rows: 4 x 210) through a 3072 x 3072 projection on the L40S's
  // 142 SMs. 128x256 tiles: 7·12 = 84 tiles, one wave; 256x128: 4·24 = 96, one wave; 128²:
  // 168, two waves: each pays for 142·32768 (or 284·16384) outputs, 840·3072/4653056 = 55.5%.
  // 128x64 and 64x128: 336 tiles, three waves of 142·8192: 840·3072/3489792 = 73.9%, the best.
  CHECK(tile_wave_efficiency(840, 3072, 1, 142) == doctest::Approx(840.0 * 3072 / (142.0 * 3 * 8192)));
  CHECK(tile_wave_efficiency(840, 3072, 1, 142) == doctest::Approx(0.7394).epsilon(1e-3));
  // The same GEMM on 80 SMs (V100): 128x256 makes 84 tiles in two waves (160·32768 paid),
  // 256x128 96 in two, 128² 168 in three (240·16384), 128x64 336 in five (400·8192): the
  // last pays least, 3276800, and 78.8% of it is useful.
  CHECK(tile_wave_efficiency(840, 3072, 1, 80) == doctest::Approx(840.0 * 3072 / (400.0 * 8192)));
  // Large outputs fill every wave whatever the tile: 8192² on 108 SMs, 2048/2052.
  CHECK(tile_wave_efficiency(8192, 8192, 1, 108) == doctest::Approx(2048.0 / 2052.0));
  // Catalog GPUs name their SM count (src/data/gpus.csv sm_count; gpus.md gives the sources);
  // a MIG slice has its share of its parent's.
  CHECK(io::find_gpu("t4").sm_count == 40);
  CHECK(io::find_gpu("l40s").sm_count == 142);
  CHECK(io::find_gpu("h100-sxm").sm_count == 132);
  CHECK(io::find_gpu("h100-pcie").sm_count == 114);
  CHECK(io::find_gpu("rtx-4090").sm_count == 128);
  CHECK(io::find_gpu("mi300x").sm_count == 304);
  CHECK(io::find_gpu("a100-80gb-mig-1g.10gb").sm_count == 108 / 7);
}

TEST_CASE("time phases: GEMM ceilings — the class's, lowered to a part's measured best matmul") {
  // Classes: A100 0.81, H100 0.71, other NVIDIA 0.80, GeForce 1.0 (above-spec boost clocks).
  CHECK(gpu_gemm_ceiling(io::find_gpu("a100-80gb")) == doctest::Approx(0.81));
  CHECK(gpu_gemm_ceiling(io::find_gpu("h100-sxm")) == doctest::Approx(0.71));
  CHECK(gpu_gemm_ceiling(io::find_gpu("rtx-a6000")) == doctest::Approx(0.80));
  CHECK(gpu_gemm_ceiling(io::find_gpu("rtx-4090")) == doctest::Approx(1.0));
  // Power-limited parts measured below their class: L40S 269.15 of 362 TFLOP/s (0.744), T4 41.93
  // of 65 (0.645), A100 40GB 246.33 of 312 (0.790 < 0.81), H100 PCIe 495.93 of 756 (0.656 < 0.71).
  CHECK(gpu_gemm_ceiling(io::find_gpu("l40s")) == doctest::Approx(0.7435).epsilon(1e-3));
  CHECK(gpu_gemm_ceiling(io::find_gpu("t4")) == doctest::Approx(0.6451).epsilon(1e-3));
  CHECK(gpu_gemm_ceiling(io::find_gpu("a100-40gb")) == doctest::Approx(0.7895).epsilon(1e-3));
  CHECK(gpu_gemm_ceiling(io::find_gpu("h100-pcie")) == doctest::Approx(0.6560).epsilon(1e-3));
  // A measurement never raises a class (min), and FP32 without tensor cores keeps 0.90.
  CHECK(gpu_gemm_ceiling(io::find_gpu("l40s"), true) == doctest::Approx(0.90));
  for (const measured_gemm& m : kMeasuredGemm) CHECK(gpu_gemm_ceiling(io::find_gpu(std::string(m.id))) <= 0.81);
}

TEST_CASE("time phases: attention core — flash FLOPs at the FlashAttention-2 fraction, backward 2.5×") {
  const architecture& a = io::find_model("llama-2-7b");
  scenario s = on("a100-80gb", 1);
  const efficiency_params e;
  warning_set w = 0;
  const device_rates d = device_rates_of(s.gpu, precision_of(s), e, w);
  // Causal flash over b = 1, s = 2048, q_dim = 4096: 4·2048²·4096 / 2 = 34.36 GFLOP at
  // 312e12 · 0.60 = 187.2 TFLOP/s: 183.5 µs forward, 2.5× that backward.
  const double fl = 4.0 * 2048 * 2048 * 4096 / 2;
  const attention_cost c = attention_core_seconds(a, s, d, 1, 2048, 2048, true, true, e);
  CHECK(c.fwd == doctest::Approx(fl / (kA100Bf16 * 0.60)));
  CHECK(c.fwd == doctest::Approx(183.5e-6).epsilon(1e-3));
  CHECK(c.bwd == doctest::Approx(2.5 * c.fwd));
  CHECK(c.scores == 0);
  // Non-causal computes every score: twice the FLOPs. tp = 2 halves the heads per GPU.
  CHECK(attention_core_seconds(a, s, d, 1, 2048, 2048, false, true, e).fwd == doctest::Approx(2 * c.fwd));
  s.parallel.tp = 2;
  CHECK(attention_core_seconds(a, s, d, 1, 2048, 2048, true, true, e).fwd == doctest::Approx(c.fwd / 2));
  // FA2 runs a head on the kernel for its size rounded up (flash_api.cpp head_size_rounded):
  // 32-multiples to 128, 64-multiples beyond. 128 and 64 run at full rate; SD 1.5's 40 on the
  // 64 kernel, Phi-2's 80 on the 96 kernel, 136 on the 192 kernel.
  CHECK(flash_head_dim_efficiency(128) == 1);
  CHECK(flash_head_dim_efficiency(64) == 1);
  CHECK(flash_head_dim_efficiency(40) == doctest::Approx(40.0 / 64));
  CHECK(flash_head_dim_efficiency(80) == doctest::Approx(80.0 / 96));
  CHECK(flash_head_dim_efficiency(136) == doctest::Approx(136.0 / 192));
  CHECK(flash_head_dim_efficiency(256) == 1);
  architecture odd = a;
  odd.heads = 32;
  odd.hidden = 2560;  // 32 heads of 80
  odd.kv_heads = 32;
  odd.head_dim = 0;
  const double fl80 = 4.0 * 2048 * 2048 * 2560 / 2;
  s.parallel.tp = 1;
  CHECK(attention_core_seconds(odd, s, d, 1, 2048, 2048, true, true, e).fwd ==
        doctest::Approx(fl80 / (kA100Bf16 * 0.60 * 80.0 / 96)));
}

TEST_CASE("time phases: compute per micro-batch from the block costs") {
  // One block (seconds): linears 4 ms (q,k,v 1 ms, gate/up 1.5 ms), core 1 ms forward and
  // 2.5 ms backward, element-wise 0.5 ms, 35 kernels; 10 blocks on the stage.
  block_group g;
  g.count = 10;
  g.cost.linear = 4e-3;
  g.cost.linear_col_attn = 1e-3;
  g.cost.linear_col_mlp = 1.5e-3;
  g.cost.core = 1e-3;
  g.cost.core_bwd = 2.5e-3;
  g.cost.elementwise = 0.5e-3;
  g.cost.kernels = 35;
  const backward_scope full{};
  // Forward 10·(4 + 1 + 0.5) = 55 ms. Backward: trainable linears 2× (80 ms), core 2.5 ms
  // and element-wise 2× (10·(2.5 + 1) = 35 ms): 115 ms. Kernels 10·35·3 (fwd + 2× bwd).
  compute_cost c = add_block_compute(compute_cost{}, g, checkpointing::none, full);
  CHECK(c.fwd == doctest::Approx(55e-3));
  CHECK(c.bwd == doctest::Approx(115e-3));
  CHECK(c.recompute == 0);
  CHECK(c.kernels == doctest::Approx(1050));
  // Selective recompute repeats the core (10 ms); full recompute the whole forward (55 ms)
  // and its launches (10·35·4).
  CHECK(add_block_compute(compute_cost{}, g, checkpointing::selective, full).recompute == doctest::Approx(10e-3));
  c = add_block_compute(compute_cost{}, g, checkpointing::full, full);
  CHECK(c.recompute == doctest::Approx(55e-3));
  CHECK(c.kernels == doctest::Approx(1400));
  // TiledMLP runs the MLP forward once more in backward: 10 blocks x 2.25 ms of MLP linears.
  g.cost.linear_mlp = 2.25e-3;
  CHECK(add_block_compute(compute_cost{}, g, checkpointing::full, full, true).recompute == doctest::Approx(55e-3 + 22.5e-3));
  CHECK(add_block_compute(compute_cost{}, g, checkpointing::none, full, true).recompute == doctest::Approx(22.5e-3));
  g.cost.linear_mlp = 0;
  // LoRA: every block on the gradient path, no weight grads: linears 1× (40 ms) + 35 ms.
  const backward_scope lora{.trained_blocks = 0.0, .path_blocks = 1.0, .head_trains = false};
  CHECK(add_block_compute(compute_cost{}, g, checkpointing::none, lora).bwd == doctest::Approx(75e-3));
  // freeze with a quarter of the blocks trainable: 2.5 blocks × (8 + 3.5) ms = 28.75 ms.
  const backward_scope quarter{.trained_blocks = 0.25, .path_blocks = 0.25, .head_trains = true};
  CHECK(add_block_compute(compute_cost{}, g, checkpointing::none, quarter).bwd == doctest::Approx(28.75e-3));
  // An empty group adds nothing.
  CHECK(add_block_compute(c, block_group{}, checkpointing::full, full).fwd == c.fwd);
}

TEST_CASE("time phases: element-wise traffic counted op by op, eager and fused") {
  // Llama-2-7B (h 4096, ffn 11008, q 4096, kv 4096; RMSNorm, SwiGLU, rotary), one 1000-token
  // micro-batch on an A100-80GB in bf16: bytes / (2039 GB/s × 0.8). Per token forward:
  //   fused: norms 2·2·h + residuals 2·3·h + SwiGLU 3·ffn + rotary 2·(q + kv) accesses
  //        = 16384 + 24576 + 33024 + 16384 = 90368 accesses × 2 B;
  //   eager: RMSNorm upcast 2·(4·2 B + 7·4 B)·h = 72·h B, residuals 2·3·h, act + mul 5·ffn,
  //        rotary 10·(q + kv) accesses: 294912 B + (24576 + 55040 + 81920) × 2 B = 617984 B.
  const architecture& a = io::find_model("llama-2-7b");
  scenario s = on("a100-80gb", 1);
  s.prec = precision::bf16_mixed;
  const efficiency_params e{};
  warning_set w = 0;
  const device_rates d = device_rates_of(s.gpu, precision_of(s), e, w);
  const double bwe = kA100Bandwidth * 0.8;
  CHECK(elementwise_seconds(a, s, d, 1000, false, true, 0) == doctest::Approx(1000 * 617984.0 / bwe));
  s.compile = true;
  CHECK(elementwise_seconds(a, s, d, 1000, false, true, 0) == doctest::Approx(1000 * 90368.0 * 2 / bwe));
  // Fused kernels without compile (Liger, Apex, TE: scenario fused_kernels) move the same bytes.
  s.compile = false;
  s.fused_kernels = true;
  CHECK(elementwise_seconds(a, s, d, 1000, false, true, 0) == doctest::Approx(1000 * 90368.0 * 2 / bwe));
  // fp32 activations: the upcast casts are no-ops, RMSNorm is 7 fp32 accesses of h.
  CHECK(norm_accesses(a, true, 4.0) == 7.0);
  CHECK(norm_accesses(a, true, 2.0) == 18.0);
  CHECK(norm_accesses(a, false, 2.0) == 2.0);
  // LayerNorm (BERT) is one native kernel in eager code too: r+w.
  CHECK(norm_accesses(io::find_model("bert-large-uncased"), true, 2.0) == 2.0);
}

TEST_CASE("time phases: compute per micro-batch is blocks + head, at least the launch floor") {
  // GPT-2 (124M), one 128-token sequence, eager on an H100: ~0.1 TFLOP per step is well under
  // a millisecond of GPU time, but 12 blocks × 35 kernels × 3 passes × 20 µs = 25.2 ms of launches,
  // plus autocast's casts of the 144 weight tensors forward and backward (5.76 ms).
  const architecture& a = io::find_model("gpt2");
  scenario s = on("h100-sxm", 1);
  s.seq_len = 128;
  s.attn = attention::eager;
  const efficiency_params e;
  warning_set w = 0;
  const device_rates d = device_rates_of(s.gpu, precision_of(s), e, w);
  const microbatch_shape m = microbatch_of(a, s);
  CHECK(m.tokens == 128);
  const backward_scope sc = backward_scope_of(a, s);
  const stage_blocks b = stage_blocks_of(a, s, d, m, e);
  CHECK(b.plain.count == 12);
  CHECK(b.decoder.count == 0);
  const double params = static_cast<double>(count_parameters(a).total);
  const compute_cost c = compute_per_microbatch(a, s, d, m, b, sc, e, params);
  const head_cost hd = head_seconds(a, s, d, m, sc, e);
  const block_cost& k = b.plain.cost;
  // bf16-mixed under the hf profile: autocast casts each fp32 weight once (6 B per parameter).
  const double cast = 6 * params / d.bwe;
  CHECK(c.fwd == doctest::Approx(12 * (k.linear + k.core + k.elementwise + k.scores) + hd.fwd + cast));
  // GPT-2's blocks: q,k,v,o, up, down with biases = 12 tensors, each cast forward and backward.
  CHECK(cast_tensors_per_block(a, s, false) == 12);
  CHECK(c.kernels == doctest::Approx(12 * 35 * 3 + 12 * 12 * 2));
  CHECK(c.fwd + c.bwd < 5e-3);
  CHECK(c.microbatch == doctest::Approx((12 * 35 * 3 + 12 * 12 * 2) * 20e-6));
  CHECK(c.backward_share == doctest::Approx(c.bwd / (c.fwd + c.bwd)));
}

TEST_CASE("time phases: autocast casts fp32 weights each forward and their gradients each backward") {
  // Llama-2-7B full fine-tuning, bf16-mixed, transformers Trainer (torch.autocast over the fp32
  // model) on an A100: the forward cast reads 4 B and writes 2 B per parameter:
  // 6.738e9 · 6 / (2039e9 · 0.8) = 24.79 ms; backward the same for the gradient.
  scenario s = on("a100-80gb", 1);
  const efficiency_params e;
  warning_set w = 0;
  const device_rates d = device_rates_of(s.gpu, precision_of(s), e, w);
  const double fwd = kLlama2_7b * 6 / (kA100Bandwidth * 0.8);
  CHECK(fwd == doctest::Approx(24.79e-3).epsilon(1e-3));
  weight_cast_cost c = autocast_weight_casts(s, d, kLlama2_7b, 32 * 7);
  CHECK(c.fwd == doctest::Approx(fwd));
  CHECK(c.bwd == doctest::Approx(fwd));
  CHECK(c.recompute == 0);
  // 32 blocks × 7 linear weights (no biases): a cast kernel each forward and one backward.
  CHECK(c.kernels == 2 * 224);
  // Gradient accumulation 4: three micro-batches in four add into .grad (12 B more each):
  // backward (6 + 12 · 3/4) B per parameter; full checkpointing casts again in the recompute.
  s.grad_accum = 4;
  s.ckpt = checkpointing::full;
  c = autocast_weight_casts(s, d, kLlama2_7b, 32 * 7);
  CHECK(c.bwd == doctest::Approx(fwd * 15 / 6));
  CHECK(c.recompute == doctest::Approx(fwd));
  CHECK(c.kernels == doctest::Approx(224 * (2 + 0.75 + 1)));  // + accumulation share + recompute casts
  s.keep_gradients = true;  // PyTorch 1.x: every micro-batch adds into the zero-filled gradient
  CHECK(autocast_weight_casts(s, d, kLlama2_7b, 32 * 7).bwd == doctest::Approx(fwd * 18 / 6));
  // Nothing to cast: 16-bit weights (bf16-pure), ZeRO's own 16-bit copy, frameworks whose
  // mixed precision keeps 16-bit parameters (DeepSpeed, FSDP, Megatron), or serving.
  for (auto edit : std::initializer_list<void (*)(scenario&)>{
           [](scenario& x) { x.prec = precision::bf16_pure; }, [](scenario& x) { x.parallel.zero = 1; },
           [](scenario& x) { x.fw = framework::deepspeed; }, [](scenario& x) { x.fw = framework::fsdp; },
           [](scenario& x) { x.fw = framework::megatron; }, [](scenario& x) { x.work = workload::infer; }}) {
    scenario t = s;
    edit(t);
    const weight_cast_cost z = autocast_weight_casts(t, d, kLlama2_7b, 32 * 7);
    CHECK(z.fwd + z.bwd + z.recompute + z.kernels == 0);
  }
}

TEST_CASE("time phases: a DP all-reduce of 2Ψ bytes takes 2(N−1)/N · bytes / link bandwidth") {
  // Llama-2-7B, pure bf16 (2-byte gradients), DDP over 8 A100s of one node (NVLink).
  const architecture& a = io::find_model("llama-2-7b");
  scenario s = on("a100-80gb", 8);
  s.prec = precision::bf16_pure;
  const efficiency_params e;
  const stage_parameters p = stage_parameters_of(s, count_parameters(a).total, trainable_parameters(a, s));
  CHECK(p.trainable_params == kLlama2_7b);
  // Ring all-reduce: 2·7/8 · 2Ψ / 240 GB/s + 2·7 steps × 2 µs = 98.27 ms + 28 µs.
  const double reduce = 2.0 * 7 / 8 * 2 * kLlama2_7b / kNvlinkBus + 14 * kIntraLatency;
  CHECK(reduce == doctest::Approx(98.30e-3).epsilon(1e-3));
  compute_cost c;
  c.microbatch = 0.1;
  c.backward_share = 0.5;
  dp_comm d = dp_reduction(s, p, c, e);
  CHECK(d.reduce == doctest::Approx(reduce));
  CHECK(d.gather == 0);
  // Bucketed overlap hides up to ddp_overlap (0.8) of the backward (0.5 · 0.1 s): 40 ms.
  CHECK(d.exposed == doctest::Approx(reduce - 0.8 * 0.5 * 0.1));
  // With a long backward, the last 25 MiB bucket stays exposed.
  c.microbatch = 10;
  const double bucket = 2.0 * 7 / 8 * 25 * kMiB / kNvlinkBus + 14 * kIntraLatency;
  CHECK(dp_reduction(s, p, c, e).exposed == doctest::Approx(bucket));
  // AMP (bf16-mixed) DDP reduces fp32 gradients: 4Ψ bytes, twice the bandwidth term.
  s.prec = precision::bf16_mixed;
  CHECK(dp_reduction(s, p, c, e).reduce == doctest::Approx(2.0 * 7 / 8 * 4 * kLlama2_7b / kNvlinkBus + 14 * kIntraLatency));
  // ZeRO-1: reduce-scatter of 16-bit gradients (7/8 · 2Ψ) then an exposed all-gather of the
  // 16-bit parameters (the same bytes).
  s.parallel.zero = 1;
  c.microbatch = 0.1;
  const double half = 7.0 / 8 * 2 * kLlama2_7b / kNvlinkBus + 7 * kIntraLatency;
  d = dp_reduction(s, p, c, e);
  CHECK(d.reduce == doctest::Approx(half));
  CHECK(d.gather == doctest::Approx(half));
  CHECK(d.exposed == doctest::Approx(std::max(bucket, half - 0.04) + half));
  // Across two nodes (16 GPUs) the ring runs at the A100 reference network's 25 GB/s per GPU, 5 µs steps.
  s.num_gpus = 16;
  s.parallel.zero = 0;
  s.prec = precision::bf16_pure;
  CHECK(dp_reduction(s, p, c, e).reduce ==
        doctest::Approx(2.0 * 15 / 16 * 2 * kLlama2_7b / (25e9 * 0.8) + 30 * 5e-6));
}

TEST_CASE("time phases: ZeRO-3 communicates every micro-batch (Qwen-7B, DeepSpeed ZeRO-3, 2 GPUs, grad_accum 8)") {
  const architecture a = qwen_7b();
  CHECK(static_cast<double>(count_parameters(a).total) == kQwen7b);
  const efficiency_params e;
  const scenario s = run(a, qwen_zero3(8)).settings();
  const stage_parameters p = stage_parameters_of(s, count_parameters(a).total, trainable_parameters(a, s));
  // Per micro-batch: all-gather 2-byte parameters for forward and for backward, reduce-scatter
  // 2-byte gradients; each (N−1)/N · 2Ψ over NVLink, 1 latency step: 3 × 32.17 ms = 96.52 ms.
  const double gather = 1.0 / 2 * 2 * kQwen7b / kNvlinkBus + kIntraLatency;
  CHECK(gather == doctest::Approx(32.18e-3).epsilon(1e-3));
  const zero3_comm z = zero3_per_microbatch(a, s, p, 0.05, e);
  CHECK(z.per_microbatch == doctest::Approx(3 * gather));
  // Prefetch hides 0.8 of a 50 ms micro-batch; the first of 32 layers' gather is exposed.
  CHECK(z.exposed == doctest::Approx(3 * gather - 0.8 * 0.05 + gather / 32));
  // Over a step, grad_accum = 8 repeats it 8 times: 772 ms. No DP reduction at the step's end.
  const time_estimate t8 = estimate_time(a, qwen_zero3(8));
  const time_estimate t1 = estimate_time(a, qwen_zero3(1));
  CHECK(in_seconds(t8.total_communication) == doctest::Approx(8 * 3 * gather));
  CHECK(in_seconds(t1.total_communication) == doctest::Approx(3 * gather));
  // DDP (ZeRO-0) reduces once per step: its communication does not grow with grad_accum.
  scenario ddp8 = qwen_zero3(8), ddp1 = qwen_zero3(1);
  ddp8.parallel.zero = ddp1.parallel.zero = 0;
  CHECK(in_seconds(estimate_time(a, ddp8).total_communication) ==
        doctest::Approx(in_seconds(estimate_time(a, ddp1).total_communication)));
}

TEST_CASE("time phases: QLoRA dequantisation — bitsandbytes every pass, GPTQ's PyTorch unpacking in forward only") {
  // Qwen-7B block linears: 4·4096² + 3·4096·11008 = 202,375,168 weights in 7 modules.
  const architecture a = qwen_7b();
  constexpr double kBlockLinears = 202375168.0;
  scenario s = on("a100-80gb", 1);
  s.meth = method::qlora;
  s.lora.targets = lora_all_linear;
  s.quant = quantization{.weights = dtype::int4, .group_size = 128};
  const efficiency_params e;
  warning_set w = 0;
  const device_rates d = device_rates_of(s.gpu, precision_of(s), e, w);
  const double bwe = kA100Bandwidth * 0.8;
  // 256 rows >= auto-gptq's kernel_switch_threshold (128): 16.5 B per weight in 9 extra kernels
  // per module, once per forward; backward reuses the 16-bit weight torch.matmul saved.
  const block_cost g = block_seconds(a, s, d, 256, 1, 256, 256, false, e);
  CHECK(g.dequant == doctest::Approx(kBlockLinears * 16.5 / bwe));
  CHECK(g.dequant == doctest::Approx(2.048e-3).epsilon(1e-3));
  CHECK(g.dequant_bwd == 0);
  CHECK(g.dequant_kernels == 9 * 7);
  // 64 rows take auto-gptq's CUDA kernel: read the packed weights (4 bits + fp16 scale and
  // 4-bit zero per 128 weights = 4.156 bits), write the 16-bit copy, in every pass.
  const block_cost small = block_seconds(a, s, d, 64, 1, 64, 64, false, e);
  CHECK(small.dequant == doctest::Approx((kBlockLinears * (4.0 + 20.0 / 128) / 8 + kBlockLinears * 2) / bwe).epsilon(1e-3));
  CHECK(small.dequant_bwd == small.dequant);
  CHECK(small.dequant_kernels == 0);
  // bitsandbytes nf4 dequantises in forward and again in backward (MatMul4Bit keeps the packed weight).
  s.quant = quantization{.weights = dtype::nf4};
  const block_cost nf4 = block_seconds(a, s, d, 256, 1, 256, 256, false, e);
  CHECK(nf4.dequant_bwd == nf4.dequant);
  CHECK(nf4.dequant < g.dequant / 4);
  // With full checkpointing the unpacking runs in the forward and in the recompute: its kernels twice.
  block_group grp;
  grp.count = 32;
  grp.cost = g;
  const backward_scope sc{.trained_blocks = 0, .path_blocks = 1};
  const compute_cost full = add_block_compute(compute_cost{}, grp, checkpointing::full, sc);
  const compute_cost none = add_block_compute(compute_cost{}, grp, checkpointing::none, sc);
  CHECK(full.kernels - none.kernels == doctest::Approx(32 * (g.kernels + g.dequant_kernels)));
  CHECK(full.recompute - none.recompute == doctest::Approx(32 * (g.linear + g.core + g.elementwise + g.scores + g.adapters + g.dequant)));
}

TEST_CASE("time phases: TP all-reduces exposed after overlap with the dW GEMMs") {
  // 48 blocks, tp = 8 in one DGX A100, T = 8192 tokens of h = 6144: one all-reduce of
  // T·h·2 B = 100.7 MB: 2·7/8 · 100.7 MB / 240 GB/s + 14 · 2 µs = 0.762 ms.
  const architecture& a = io::find_model("llama-2-7b");
  scenario s = on("a100-80gb", 8);
  s.parallel.tp = 8;
  const efficiency_params e;
  const double bytes = 8192.0 * 6144 * 2;
  const double ar = 2.0 * 7 / 8 * bytes / kNvlinkBus + 14 * kIntraLatency;
  CHECK(ar == doctest::Approx(0.762e-3).epsilon(1e-3));
  block_group g;
  g.count = 48;
  g.cost.tp_bytes = bytes;
  g.cost.linear_col_attn = 2 * ar;    // hides its backward all-reduce entirely
  g.cost.linear_col_mlp = 0.5 * ar;   // leaves half of it exposed
  const microbatch_shape m{.seq = 2048, .batch = 4, .tokens = 8192};
  // Forward: 2 all-reduces per block, exposed; backward: 0 + 0.5 · ar. 48 · 2.5 · ar.
  CHECK(plus_block_comm(block_comm{}, a, s, g, backward_scope{}, m, 2, e).tp == doctest::Approx(48 * 2.5 * ar));
  // Full recompute repeats the forward's 2: 48 · 4.5 · ar.
  s.ckpt = checkpointing::full;
  CHECK(plus_block_comm(block_comm{}, a, s, g, backward_scope{}, m, 2, e).tp == doctest::Approx(48 * 4.5 * ar));
  // Frozen blocks (LoRA) have no dW GEMM: 2 forward + 2 backward exposed.
  s.ckpt = checkpointing::none;
  const backward_scope lora{.trained_blocks = 0.0, .path_blocks = 1.0, .head_trains = false};
  CHECK(plus_block_comm(block_comm{}, a, s, g, lora, m, 2, e).tp == doctest::Approx(48 * 4 * ar));
}

TEST_CASE("time phases: pipeline p2p, 1F1B bubble (p−1)/m and interleaved (p−1)/(m·v)") {
  // Narayanan et al. 2021 §2.2: with p = 4 stages and m = 8 micro-batches the 1F1B bubble is
  // 3/8 of the ideal time; v = 2 virtual stages per GPU cut it to 3/16.
  CHECK(bubble_fraction(4, 8, 1) == doctest::Approx(3.0 / 8));
  CHECK(bubble_fraction(4, 8, 2) == doctest::Approx(3.0 / 16));
  CHECK(bubble_fraction(1, 8, 1) == 0);
  scenario s = on("a100-80gb", 4);
  s.parallel.pp = 4;
  s.grad_accum = 8;
  compute_cost c;
  c.microbatch = 0.2;
  comm_cost k;
  k.microbatch_exposed = 0.05;
  // Stage time 0.25 s per micro-batch; bubble = 3/8 · 8 · 0.25 = 0.75 s.
  pipeline_cost p = pipeline(s, c, k);
  CHECK(p.microbatch == doctest::Approx(0.25));
  CHECK(p.bubble == doctest::Approx(bubble_fraction(4, 8, 1) * 8 * 0.25));
  CHECK(p.bubble == doctest::Approx(0.75));
  s.parallel.virtual_stages = 2;
  CHECK(pipeline(s, c, k).bubble == doctest::Approx(0.375));
  // Point-to-point: activation forward + gradient backward of T·h·2 B. Llama-2-7B, 2 sequences
  // of 2048 tokens: 4096 · 4096 · 2 B = 33.55 MB over NVLink: 2 · (33.55 MB / 240 GB/s + 2 µs) = 283.6 µs.
  const architecture& a = io::find_model("llama-2-7b");
  s.micro_batch = 2;
  const microbatch_shape m = microbatch_of(a, s);
  const efficiency_params e;
  const double send = 4096.0 * 4096 * 2 / kNvlinkBus + kIntraLatency;
  CHECK(pipeline_p2p_seconds(a, s, m, 2, e) == doctest::Approx(2 * send));
  CHECK(2 * send == doctest::Approx(283.6e-6).epsilon(1e-3));
  s.parallel.pp = 1;
  CHECK(pipeline_p2p_seconds(a, s, m, 2, e) == 0);
}

TEST_CASE("time phases: optimizer bytes per parameter and offload") {
  scenario s = on("a100-80gb", 8);
  s.opt_kernel = optimizer_kernel::foreach;
  // AdamW under bf16-mixed, torch foreach (_multi_tensor_adam): fp32 weight 4 accesses (16 B), fp32
  // gradient 2 + 3 for clipping (20 B), 14 fp32 state-sized accesses (56 B), 16-bit copy (2 B) = 94 B.
  CHECK(optimizer_bytes_per_param(s) == 94);
  s.opt_kernel = optimizer_kernel::fused;  // one kernel: 2·4 + (1 + 3)·4 + 4·4 + 2 = 42 B
  CHECK(optimizer_bytes_per_param(s) == 42);
  s.opt_kernel.reset();  // hf: the Trainer's adamw_torch_fused
  CHECK(optimizer_bytes_per_param(s) == 42);
  s.fw = framework::fsdp;  // plain torch.optim: foreach
  CHECK(optimizer_bytes_per_param(s) == 94);
  s.fw = framework::hf;
  s.opt = optimizer::adamw_8bit;  // bitsandbytes, fused whatever the kernel: 8 + 16 + 4 one-byte accesses + 2 = 30 B
  CHECK(optimizer_bytes_per_param(s) == 30);
  s.opt_kernel = optimizer_kernel::foreach;
  CHECK(optimizer_bytes_per_param(s) == 30);
  s.opt = optimizer::adafactor;  // 12 fp32 kernels × r+w × 4 B
  CHECK(optimizer_bytes_per_param(s) == 96);
  s.opt = optimizer::sgd_momentum;  // foreach SGD with weight decay: 3·4 + (3 + 3)·4 + 5·4 + 2 = 58 B
  CHECK(optimizer_bytes_per_param(s) == 58);
  s.opt = optimizer::adamw;
  s.prec = precision::bf16_pure;  // everything 16-bit, no copy: 4·2 + 5·2 + 14·2 = 46 B
  CHECK(optimizer_bytes_per_param(s) == 46);
  s.prec = precision::bf16_mixed;
  // Llama-2-7B, DDP: every GPU updates all Ψ: Ψ · 94 / (2039e9 · 0.8) = 388.2 ms.
  const architecture& a = io::find_model("llama-2-7b");
  const efficiency_params e;
  warning_set w = 0;
  const device_rates d = device_rates_of(s.gpu, precision_of(s), e, w);
  const stage_parameters p = stage_parameters_of(s, count_parameters(a).total, trainable_parameters(a, s));
  const double adam = kLlama2_7b * 94 / (kA100Bandwidth * 0.8);
  CHECK(adam == doctest::Approx(388.2e-3).epsilon(1e-3));
  optimizer_cost o = optimizer_and_offload(a, s, d, p, e);
  CHECK(o.optimizer == doctest::Approx(adam));
  CHECK(o.offload == 0);
  // ZeRO-1 over 8 GPUs shards the update: 1/8.
  s.parallel.zero = 1;
  CHECK(optimizer_and_offload(a, s, d, p, e).optimizer == doctest::Approx(adam / 8));
  // ZeRO-Offload: Ψ/8 gradients (2 B) down and parameters (2 B) up over PCIe 4.0 at 0.8;
  // CPU Adam for the node's 8 shards = Ψ parameters at 1e9/s.
  s.parallel.offload_optimizer = offload::cpu;
  o = optimizer_and_offload(a, s, d, p, e);
  CHECK(o.offload == doctest::Approx(kLlama2_7b / 8 * (2 + 2) / kPcie4));
  CHECK(o.optimizer == doctest::Approx(kLlama2_7b / 1e9));
  // NVMe adds fp32 master + 2 moments (12 B) in and out for the node at 6 GB/s.
  s.parallel.offload_optimizer = offload::nvme;
  CHECK(optimizer_and_offload(a, s, d, p, e).offload ==
        doctest::Approx(kLlama2_7b / 8 * 4 / kPcie4 + 2 * kLlama2_7b * 12 / 6e9));
}

TEST_CASE("time phases: paged optimizer traffic beside the resident bytes") {
  // Llama-3.1-8B full fine-tuning on one 24 GB GPU, bf16-pure, paged 8-bit AdamW updated in
  // backward, full checkpointing, 2 × 2048 tokens (torchtune's single-device recipe, T1t).
  const architecture& a = io::find_model("llama-3.1-8b");
  scenario s = on("rtx-4090", 1);
  s.prec = precision::bf16_pure;
  s.opt = optimizer::paged_adamw_8bit;
  s.optimizer_in_backward = true;
  s.ckpt = checkpointing::full;
  s.micro_batch = 2;
  s.compile = true;
  // Resident: weights 2Ψ (16.06 GB), no gradients (updated in backward), activations
  // 32 layers × T·h·2 (full recompute keeps block inputs) + one layer's 17·T·h·2 in flight,
  // fp32 logits and their gradient T·V·8, 1 GiB context; T = 4096, h = 4096, V = 128256.
  const double T = 4096, h = 4096, V = 128256;
  const double resident = 2 * kLlama31_8b + 32 * T * h * 2 + 17 * T * h * 2 + T * V * 8 + kGiB;
  CHECK(resident == doctest::Approx(22981124096.0));
  CHECK(paged_optimizer_resident_bytes(a, s, count_parameters(a).total, trainable_parameters(a, s), 2) ==
        doctest::Approx(resident));
  // 8-bit state (2 B/param, 16.06 GB) beside the 1.02 GB left of 24e9 usable bytes: 15.04 GB
  // pages out and back in over PCIe 4.0 each step: 2 · 15.04 GB / 25.6 GB/s = 1.175 s.
  s.gpu.usable_memory = bytes(24e9);
  const stage_parameters p = stage_parameters_of(s, count_parameters(a).total, trainable_parameters(a, s));
  const double paged = 2 * kLlama31_8b - (24e9 - resident);
  CHECK(paged_optimizer_seconds(a, s, p, kLlama31_8b, 2, kPcie4) == doctest::Approx(2 * paged / kPcie4));
  CHECK(2 * paged / kPcie4 == doctest::Approx(1.1751).epsilon(1e-3));
  // With room for all of it nothing pages.
  s.gpu.usable_memory = bytes(80e9);
  CHECK(paged_optimizer_seconds(a, s, p, kLlama31_8b, 2, kPcie4) == 0);
}

TEST_CASE("time phases: serving — prefill through the blocks, decode as a bytes/FLOPs roofline") {
  const architecture& a = io::find_model("llama-2-7b");
  scenario s = on("a100-80gb", 1);
  s.work = workload::infer;
  s.inference = {.batch = 1, .prompt_len = 512, .gen_len = 256, .kv_cache_dtype = dtype::bf16};
  const efficiency_params e;
  warning_set w = 0;
  const device_rates d = device_rates_of(s.gpu, precision_of(s), e, w);
  const parameter_breakdown P = count_parameters(a);
  // Decode reads every weight in bf16 (2Ψ = 13.48 GB) and the KV cache: 2 (K,V) · 4096 · 32
  // layers · 2 B = 524,288 B per context token at the mean context 512 + 256/2 = 640.
  const decode_shape ds = decode_shape_of(a, s, d, P);
  CHECK(ds.context == 640);
  CHECK(ds.weight_bytes == doctest::Approx(2 * kLlama2_7b));
  CHECK(ds.kv_bytes_per_token == 524288);
  // Matmul weights per token: blocks + the LM head (4096 · 32000); attention 4 · 640 · 4096 · 32.
  const double active = static_cast<double>(P.attention + P.mlp) + 32000.0 * 4096;
  CHECK(ds.active_matmul == doctest::Approx(active));
  CHECK(ds.flop_per_seq == doctest::Approx(2 * active + 4.0 * 640 * 4096 * 32));
  // Batch 1 is bandwidth-bound: the weights and three passes over the KV cache (DynamicCache's
  // torch.cat reads and writes it, attention reads it: engine.hpp kv_cache_passes):
  // (13.48 GB + 3 · 640 · 524,288 B) / (2039e9 · 0.8) = 8.674 ms.
  const double step = (2 * kLlama2_7b + 3 * 640 * 524288.0) / (kA100Bandwidth * 0.8);
  // transformers generate adds its eager launch floor: 32 layers x 45 ops x 12 us (engine.hpp).
  const double launch = 32 * kHfOpsPerLayer * kEagerOpSeconds;
  CHECK(decode_step_seconds(a, s, d, ds, 1, e) == doctest::Approx(step + launch));
  CHECK(step == doctest::Approx(8.674e-3).epsilon(1e-3));
  // Ridge point: 2Ψ/(bandwidth·0.8) = B · 2·active / (312e12 · 0.81).
  const double ridge = 2 * kLlama2_7b / (kA100Bandwidth * 0.8) / (2 * active / (kA100Bf16 * 0.81));
  CHECK(decode_compute_bound_batch(s, d, ds, e) == static_cast<std::int64_t>(std::ceil(ridge)));
  // Prefill: the 512-token prompt through 32 blocks, the LM head on the last position only.
  const block_cost b = block_seconds(a, s, d, 512, 1, 512, 512, false, e);
  const double blocks = 32 * (b.linear + b.core + b.elementwise + b.scores + b.adapters + b.dequant);
  const prefill_cost pf = prefill_seconds(a, s, d, e);
  CHECK(pf.seconds == doctest::Approx(blocks + gemm_seconds(1, 32000, 4096, 1, 1, kA100Bf16, 0.81, 108, kA100Bandwidth, 2, e)));
  CHECK(pf.stage_tp_comm == 0);
  // The estimate: step = prefill + 256 decode steps.
  const time_estimate t = estimate_time(a, s);
  CHECK(in_seconds(t.step) == doctest::Approx(pf.seconds + 256 * (step + launch)));
  CHECK(in_seconds(t.time_to_first_token) == doctest::Approx(pf.seconds));
}

TEST_CASE("time phases: the step assembles the phases") {
  // 8 GPUs (dp 8), 2 × 2048-token micro-batches, grad_accum 4: 131,072 tokens per step.
  scenario s = on("a100-80gb", 8);
  s.micro_batch = 2;
  s.grad_accum = 4;
  s.tokens = 1e9;
  s.price_per_gpu_hour = 2.0;
  const efficiency_params e;
  warning_set w = 0;
  const device_rates d = device_rates_of(s.gpu, precision_of(s), e, w);
  const microbatch_shape m{.seq = 2048, .batch = 2, .tokens = 4096};
  flop_breakdown F;
  F.model = flops(1e15);
  F.hardware = flops(1.2e15);
  compute_cost c;
  c.microbatch = 0.5;
  comm_cost k;
  k.step_exposed = 0.3;
  k.total = 1.0;
  const pipeline_cost p{.microbatch = 0.5, .bubble = 0};
  const optimizer_cost o{.optimizer = 0.1, .offload = 0.05};
  // step = 4 · 0.5 + 0.3 + 0 + 0.1 + 0.05 = 2.45 s; 131,072 / 2.45 = 53,499 tokens/s.
  const time_estimate t = assemble_step(s, d, m, F, c, k, p, o, e, w);
  CHECK(in_seconds(t.step) == doctest::Approx(2.45));
  CHECK(in_seconds(t.breakdown.compute) == doctest::Approx(2.0));
  CHECK(in_seconds(t.total_communication) == doctest::Approx(1.0));
  CHECK(t.tokens_per_second == doctest::Approx(131072 / 2.45));
  CHECK(t.tokens_per_second_per_gpu == doctest::Approx(131072 / 2.45 / 8));
  // MFU = 1e15 / (2.45 s · 8 · 312e12) = 0.1635; HFU with the recompute FLOPs 0.1962.
  CHECK(t.mfu == doctest::Approx(1e15 / (2.45 * 8 * kA100Bf16)));
  CHECK(t.mfu == doctest::Approx(0.1635).epsilon(1e-3));
  CHECK(t.hfu == doctest::Approx(1.2 * t.mfu));
  // 1e9 tokens take 18,692 s = 41.5 GPU-hours at 8 GPUs; $2/GPU-hour; energy at 400 W × (0.3 +
  // 0.7 · (2.0 + 0.1)/2.45) utilisation.
  const double total = 1e9 / (131072 / 2.45);
  CHECK(in_seconds(t.total) == doctest::Approx(total));
  CHECK(t.gpu_hours == doctest::Approx(total * 8 / 3600));
  CHECK(*t.cost == doctest::Approx(2 * t.gpu_hours));
  CHECK(t.energy_kwh == doctest::Approx(400 * (0.3 + 0.7 * 2.1 / 2.45) * t.gpu_hours / 1000));
}

}  // namespace unit_timing_phases
