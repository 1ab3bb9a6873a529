// Serving as the engines do it (engine.hpp, detail/memory_serving.hpp, serve.hpp).
#include <doctest/doctest.h>

#include <cmath>

#include "gpuplan/engine.hpp"
#include "gpuplan/detail/timing_serving.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/kernels.hpp"
#include "gpuplan/mig.hpp"
#include "gpuplan/plan/serve_recommend.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/serve.hpp"

// Its own namespace: the suite is compiled in batches (unity build).
namespace gpuplan::unit_serving {

namespace {
scenario vllm_on(const char* gpu, std::int64_t prompt, std::int64_t gen) {
  scenario s;
  s.work = workload::infer;
  s.prec = precision::bf16_pure;
  s.gpu = io::find_gpu(gpu);
  s.inference.eng = engine::vllm;
  s.inference.prompt_len = prompt;
  s.inference.gen_len = gen;
  return s;
}
}  // namespace

TEST_CASE("serving: the vLLM KV pool matches vLLM's own start-up log (github.com/vllm-project/vllm/issues/10517)") {
  // meta-llama/Llama-3.1-8B-Instruct on an RTX 3090, vLLM V0, gpu_memory_utilization 0.90,
  // --max-model-len 20000 (the profile run takes max_num_batched_tokens = max_model_len):
  //   "Memory profiling results: total_gpu_memory=23.58GiB ... peak_torch_memory=17.06GiB
  //    non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90
  //    # GPU blocks: 1952 ... Maximum concurrency for 20000 tokens per request: 1.56x"
  // The model computes weights (8.03e9 x 2 B) and the profiled peak (20000 tokens x 2 B x
  // (2 x 4096 + 3 x 14336) + 255 x 128256 x 4 B of logits); only non_torch (0.35 GiB) is the
  // engine profile's constant. Block = 16 tokens x 32 layers x 2 x 8 kv heads x 128 x 2 B = 2 MiB.
  const architecture& m = io::find_model("llama-3.1-8b");
  scenario s = vllm_on("rtx-3090", 10000, 10000);
  s.gpu.usable_memory = gib(23.58);  // the total vLLM measured (torch.cuda.mem_get_info)
  s.inference.max_batched_tokens = 20000;
  const serve_result r = serve(m, s);
  CHECK(r.block_tokens == 16);
  CHECK(r.pool_blocks == doctest::Approx(1952).epsilon(0.03));
  CHECK(r.pool_tokens == r.pool_blocks * 16);
  CHECK(r.pool_concurrency == doctest::Approx(1.56).epsilon(0.03));
  CHECK(r.max_concurrency == 1);
  // The same log at --max-model-len 29000: peak_torch 17.98 GiB, "# GPU blocks: 1478": the
  // larger profile step leaves fewer blocks (model: 1549, +4.8%: its activation peak is 0.1 GiB low).
  s.inference.max_batched_tokens = 29000;
  const serve_result r29 = serve(m, s);
  CHECK(r29.pool_blocks == doctest::Approx(1478).epsilon(0.05));
  CHECK(r29.pool_blocks < r.pool_blocks);
}

TEST_CASE("serving: the paged pool is independent of the typed batch; concurrency = pool / request") {
  const architecture& m = io::find_model("llama-3.1-8b");
  scenario s = vllm_on("a100-80gb", 1024, 1024);
  const memory_breakdown m1 = estimate_memory(m, s);
  s.inference.batch = 64;
  const memory_breakdown m64 = estimate_memory(m, s);
  CHECK(m1.max_concurrent_sequences == m64.max_concurrent_sequences);
  CHECK(in_bytes(m1.kv_cache) == in_bytes(m64.kv_cache));
  // Pool = 0.9 x 80 GiB - 16.06e9 B weights - 0.35 GiB - profile of 8192 tokens (gpuplan applies
  // vLLM's >= 70 GiB default by capacity alone; vllm/engine/arg_utils.py also excludes A100 by name).
  const double budget = 0.9 * in_bytes(s.gpu.usable_memory);
  const double act = 8192.0 * 2 * (2 * 4096 + 3 * 14336) + 255.0 * 128256 * 4;
  const double pool = budget - 16060522496.0 - 0.35 * kGiB - act;
  CHECK(in_bytes(m1.kv_cache) == doctest::Approx(pool).epsilon(1e-3));
  // 2048-token requests: pool / (131072 B x 2048) requests.
  CHECK(m1.max_concurrent_sequences == static_cast<std::int64_t>(std::floor(pool / (131072.0 * 16)) * 16 / 2048));
}

TEST_CASE("serving: SGLang's fraction follows the GPU size, TGI keeps 10% wiggle room") {
  const engine_profile& sg = profile_of(engine::sglang);
  // server_args.py: 80 GiB, tp 1 -> (80 - 9.5 - 0.5) / 80 = 0.875; 24 GiB -> (24 - 2.9) / 24 = 0.879.
  CHECK(memory_fraction_of(sg, 80, 1) == doctest::Approx(0.875));
  CHECK(memory_fraction_of(sg, 24, 1) == doctest::Approx(21.1 / 24));
  CHECK(memory_fraction_of(profile_of(engine::vllm), 80, 1) == 0.9);
  const architecture& m = io::find_model("llama-3.1-8b");
  scenario s = vllm_on("a100-80gb", 1024, 1024);
  s.inference.eng = engine::tgi;
  const memory_breakdown t = estimate_memory(m, s);
  CHECK(in_bytes(t.device) < 0.95 * in_bytes(s.gpu.usable_memory));  // the wiggle room stays free
}

TEST_CASE("serving: GGUF bits per weight from the block formats, -ngl moves layers to the CPU") {
  CHECK(gguf_bits_per_weight(gguf_type::q8_0) == 8.5);   // 34 B per 32 weights
  CHECK(gguf_bits_per_weight(gguf_type::q4_0) == 4.5);   // 18 B per 32 weights
  CHECK(gguf_bits_per_weight(gguf_type::q6_k) == 6.5625);  // 210 B per 256 weights
  const architecture& m = io::find_model("llama-3.1-8b");
  scenario s = vllm_on("rtx-4090", 512, 512);
  s.inference.eng = engine::llama_cpp;
  s.inference.gguf = gguf_type::q4_k_m;
  const memory_breakdown all = estimate_memory(m, s);
  // 8.03e9 weights x 4.84 / 8 = 4.858e9 B.
  CHECK(in_bytes(all.weights) == doctest::Approx(8030261248.0 * 4.84 / 8).epsilon(1e-6));
  const double tps_all = estimate_time(m, s).decode_tokens_per_second_per_sequence;
  s.inference.gpu_layers = 16;  // half the 32 layers
  CHECK(in_bytes(estimate_memory(m, s).weights) == doctest::Approx(in_bytes(all.weights) / 2).epsilon(1e-6));
  // Half the bytes now stream from 76.8 GB/s host memory instead of 1008 GB/s: > 5x slower.
  CHECK(estimate_time(m, s).decode_tokens_per_second_per_sequence < tps_all / 5);
}

TEST_CASE("serving: the curve — latency grows and aggregate throughput rises with concurrency") {
  const architecture& m = io::find_model("llama-3.1-8b");
  scenario s = vllm_on("a100-80gb", 512, 256);
  const serve_result r = serve(m, s, seconds(0.05));
  REQUIRE(r.curve.size() >= 3);
  CHECK(r.curve.front().concurrency == 1);
  CHECK(r.curve.back().concurrency == r.max_concurrency);
  for (std::size_t i = 1; i < r.curve.size(); ++i) {
    CHECK(in_seconds(r.curve[i].inter_token_latency) >= in_seconds(r.curve[i - 1].inter_token_latency));
    CHECK(r.curve[i].tokens_per_second > r.curve[i - 1].tokens_per_second);
  }
  // Batch 1 ITL: 16.06 GB / (2039 GB/s x 0.8) = 9.85 ms + 1 ms step overhead + the prefill share
  // of 512 tokens spread over 256 steps: between 10.8 and 13 ms.
  CHECK(in_seconds(r.curve.front().inter_token_latency) > 10.8e-3);
  CHECK(in_seconds(r.curve.front().inter_token_latency) < 13e-3);
  REQUIRE(r.concurrency_for_target.has_value());
  CHECK(*r.concurrency_for_target >= 1);
  CHECK(in_seconds(serve_at(run(m, s), *r.concurrency_for_target).inter_token_latency) <= 0.05);
  if (*r.concurrency_for_target < r.max_concurrency)
    CHECK(in_seconds(serve_at(run(m, s), *r.concurrency_for_target + 1).inter_token_latency) > 0.05);
  CHECK(r.largest_context == std::min<std::int64_t>(r.pool_tokens, 131072));
}

namespace {
// One decode step of `batch` sequences (seconds) for the scenario, as serve_at computes it.
double decode_step(const architecture& m, scenario s, std::int64_t batch) {
  s.inference.batch = batch;
  warning_set w = 0;
  const detail::device_rates d = detail::device_rates_of(s.gpu, precision_of(s), {}, w);
  const detail::decode_shape ds = detail::decode_shape_of(m, s, d, count_parameters(m));
  return detail::decode_step_seconds(m, s, d, ds, static_cast<double>(batch), {});
}
double prefill(const architecture& m, scenario s, std::int64_t batch) {
  s.inference.batch = batch;
  warning_set w = 0;
  const detail::device_rates d = detail::device_rates_of(s.gpu, precision_of(s), {}, w);
  return detail::prefill_seconds(m, s, d, {}).seconds;
}
scenario with_weights(scenario s, dtype d) {
  s.quant = quantization{.weights = d};
  return s;
}
}  // namespace

TEST_CASE("serving kernels: which kernel each engine runs for each weight format and GPU (vLLM quantization/*)") {
  scenario s = vllm_on("h100-sxm", 512, 256);
  // FP8 on Hopper: cutlass scaled_mm W8A8 at the FP8 tensor-core rate (1979 TFLOP/s dense).
  inference_kernel k = kernel_for(with_weights(s, dtype::fp8_e4m3));
  CHECK(k.kind == kernel_kind::fp8_w8a8);
  CHECK(k.w8a8);
  CHECK(in_flop_per_s(k.matmul_peak) == doctest::Approx(1979e12));
  // FP8 on Ampere (sm_80, no FP8 tensor cores): weight-only FP8 Marlin.
  s.gpu = io::find_gpu("a100-80gb");
  CHECK(kernel_for(with_weights(s, dtype::fp8_e4m3)).kind == kernel_kind::fp8_marlin);
  CHECK(kernel_for(with_weights(s, dtype::int4)).kind == kernel_kind::marlin_int4);
  // INT8 W8A8 at the A100's INT8 tensor rate, 624 TOPS.
  k = kernel_for(with_weights(s, dtype::int8));
  CHECK(k.kind == kernel_kind::int8_w8a8);
  CHECK(in_flop_per_s(k.matmul_peak) == doctest::Approx(624e12));
  CHECK(kernel_for(with_weights(s, dtype::nf4)).kind == kernel_kind::bnb_4bit);
  // T4 (sm_75): no Marlin; the AWQ/GPTQ CUDA kernels dequantise for prefill.
  s.gpu = io::find_gpu("t4");
  CHECK(kernel_for(with_weights(s, dtype::int4)).kind == kernel_kind::int4_dequant);
  // V100 has no INT8 tensor cores in the catalog and no FP8: a one-line error naming the field.
  s.gpu = io::find_gpu("v100-sxm2-32gb");
  CHECK_THROWS_WITH_AS(kernel_for(with_weights(s, dtype::int8)), doctest::Contains("scenario.quantization.weights"), config_error);
  CHECK_THROWS_WITH_AS(kernel_for(with_weights(s, dtype::fp8_e4m3)), doctest::Contains("sm_70"), config_error);
  // transformers: int4 dequantises to 16-bit, int8 is LLM.int8.
  s.gpu = io::find_gpu("a100-80gb");
  s.inference.eng = engine::hf;
  CHECK(kernel_for(with_weights(s, dtype::int4)).weights_as_fp16);
  CHECK(kernel_for(with_weights(s, dtype::int8)).kind == kernel_kind::llm_int8);
}

TEST_CASE("serving verdict: a paged engine's pool full by design is no risk; the requested batch's KV is") {
  // llama-2-13b in int4 under vLLM on an RTX 4090: the engine budgets 90% of the card and
  // fills it with the KV pool (22 GiB of 24), which the P90 band on the whole device used
  // to call TIGHT. The pool shrinks when the rest is larger than estimated: the plan is the
  // rest at P90 plus the requested batch's KV within the budget.
  const architecture& m = io::find_model("llama-2-13b");
  scenario s = vllm_on("rtx-4090", 512, 512);
  s.quant = quantization{.weights = dtype::int4};
  const run r(m, s);
  const memory_breakdown mem = estimate_memory(r);
  REQUIRE(in_bytes(mem.kv_needed) > 0);
  CHECK(in_bytes(mem.kv_needed) < in_bytes(mem.kv_cache));  // one request of 1,024 tokens, a pool of ~18
  CHECK(verdict_of(r, mem) == verdict::fits);
  // A batch the pool holds at P50 but not with the rest at P90 is tight; one beyond the pool does not fit.
  const std::int64_t n = mem.max_concurrent_sequences;
  REQUIRE(n > 2);
  s.inference.batch = n;
  const run full(m, s);
  CHECK(verdict_of(full, estimate_memory(full)) == verdict::tight);
  s.inference.batch = n + 4;
  const run over(m, s);
  CHECK(verdict_of(over, estimate_memory(over)) == verdict::does_not_fit);
}

TEST_CASE("serving kernels: bitsandbytes LLM.int8 decodes several times slower than fp16 (transformers)") {
  // Llama-7B at batch 1 under transformers: int8 154.55 ms vs fp16 32.89 ms per token on an
  // RTX 3090 (bitsandbytes #347, 4.7x), "about 5x as slow as bf16" on an A100 (#490): the
  // fixed per-linear cost (kernels.hpp) makes the step 3-7x the fp16 one on both cards,
  // while the int8 weights alone would halve the bytes read.
  const architecture& m = io::find_model("llama-7b");
  for (const char* gpu : {"rtx-3090", "a100-80gb"}) {
    CAPTURE(gpu);
    scenario s = vllm_on(gpu, 512, 128);
    s.prec = precision::fp16_mixed;
    s.inference.eng = engine::hf;
    const double fp16 = decode_step(m, s, 1), int8 = decode_step(m, with_weights(s, dtype::int8), 1);
    CHECK(int8 / fp16 > 3.0);
    CHECK(int8 / fp16 < 7.0);
  }
  // vLLM runs int8 as W8A8 on the tensor cores: no per-linear cost, faster than 16-bit at batch 1.
  scenario v = vllm_on("a100-80gb", 512, 128);
  CHECK(decode_step(m, with_weights(v, dtype::int8), 1) < decode_step(m, v, 1));
}

TEST_CASE("serving kernels: FP8 W8A8 prefill runs at the FP8 rate, Marlin int4 decode reads 4-bit weights") {
  const architecture& m = io::find_model("llama-3.1-8b");
  scenario s = vllm_on("h100-sxm", 2048, 256);
  // Prefill of 2048 tokens is compute-bound: 2 x 6.98e9 block weights x 2048 = 28.6 TFLOP of
  // block matmuls at 989 (bf16) vs 1979 (fp8) TFLOP/s x 0.71; attention, the head and the
  // per-token FP8 casts stay: the FP8 prefill takes 0.5-0.75 of the bf16 one.
  const double bf16 = prefill(m, s, 1), fp8 = prefill(m, with_weights(s, dtype::fp8_e4m3), 1);
  CHECK(fp8 / bf16 > 0.5);
  CHECK(fp8 / bf16 < 0.75);
  // INT8 W8A8 on an A100: 624 vs 312 TOPS for the block matmuls, the same bound.
  s.gpu = io::find_gpu("a100-80gb");
  CHECK(prefill(m, with_weights(s, dtype::int8), 1) / prefill(m, s, 1) < 0.75);
  // Marlin int4 prefill costs the 16-bit GEMM (no dequantised copy): within 2% of bf16.
  CHECK(prefill(m, with_weights(s, dtype::int4), 1) == doctest::Approx(prefill(m, s, 1)).epsilon(0.02));
  // Decode at batch 1 reads the weights: 6.98e9 block weights x 4.125 bits (group 128: 4 +
  // 16/128) = 3.60e9 B + 1.05e9 embedding/head weights x 2 B = 5.70e9 B against 16.06e9 B in
  // bf16: 0.355 of the memory time; the 1 ms step overhead and the KV reads are the same.
  const double overhead = profile_of(engine::vllm).step_overhead_seconds;
  const double dense = decode_step(m, s, 1) - overhead, int4 = decode_step(m, with_weights(s, dtype::int4), 1) - overhead;
  CHECK(int4 / dense == doctest::Approx(0.36).epsilon(0.05));
  // FP8 weight-only Marlin on the A100: 6.98e9 x 1 B + 2.1e9 B = 9.08e9 B: 0.57 of bf16.
  CHECK((decode_step(m, with_weights(s, dtype::fp8_e4m3), 1) - overhead) / dense == doctest::Approx(0.57).epsilon(0.05));
}

TEST_CASE("serving: every decode kernel costs a CUDA graph node (2.5 us) or, without graphs, the engine's own launch") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s = vllm_on("rtx-4090", 1, 128);
  s.prec = precision::fp16_mixed;
  s.inference.eng = engine::llama_cpp;
  s.inference.gguf = gguf_type::q4_0;
  // llama.cpp replays decode as a CUDA graph from Volta on (engine.hpp); the 32 layers x 30
  // kernels (no q/k/v biases) cost 960 x 2.5 us with it and 960 x 3.3 us launched one by one.
  CHECK(decode_uses_cuda_graphs(s));
  const double graphs = decode_step(m, s, 1);
  s.inference.cuda_graphs = false;
  const double eager = decode_step(m, s, 1);
  CHECK(eager - graphs == doctest::Approx(960 * (3.3e-6 - 2.5e-6)).epsilon(1e-6));
  // A Qwen2 model adds its three bias adds per layer: 28 layers x 3 more kernels under graphs.
  architecture q = io::find_model("qwen2.5-7b");
  REQUIRE(q.q_bias);
  s.inference.cuda_graphs.reset();
  const double with_bias = decode_step(q, s, 1);
  q.q_bias = false;
  CHECK(with_bias - decode_step(q, s, 1) == doctest::Approx(28 * 3 * 2.5e-6).epsilon(1e-6));
  // vLLM --enforce-eager: 11 kernels per layer at PyTorch's 12 us dispatch instead of 2.5 us,
  // and no CUDA graph pool (0.5 GiB) on the device.
  scenario v = vllm_on("a100-80gb", 512, 256);
  const double graphed = decode_step(m, v, 1);
  const Bytes graphed_device = estimate_memory(run(m, v)).device;
  v.inference.cuda_graphs = false;
  CHECK(decode_step(m, v, 1) - graphed == doctest::Approx(32 * 11 * (12e-6 - 2.5e-6)).epsilon(1e-6));
  CHECK(in_gib(graphed_device - estimate_memory(run(m, v)).device) == doctest::Approx(0.5).epsilon(1e-6));
  // transformers generate() has no CUDA graphs to turn on.
  scenario h = vllm_on("a100-80gb", 512, 256);
  h.inference.eng = engine::hf;
  h.inference.cuda_graphs = true;
  CHECK_THROWS_WITH_AS(estimate_memory(run(m, h)), "scenario.inference.cuda_graphs: engine hf does not replay decode as CUDA graphs (got true)",
                       config_error);
}

TEST_CASE("serving kernels: bitsandbytes 4-bit is fast at one token and slower than bf16 above it") {
  const architecture& m = io::find_model("llama-3.1-8b");
  const scenario s = vllm_on("a100-80gb", 512, 256);
  const scenario nf4 = with_weights(s, dtype::nf4);
  // One token: gemv_4bit reads the packed weights (~4.1 bits): faster than bf16.
  CHECK(decode_step(m, nf4, 1) < decode_step(m, s, 1));
  // Eight sequences: the packed read, a bf16 copy written and read again (0.52 + 2 + 2 B per
  // block weight vs 2 B): about twice the bf16 step's weight traffic.
  CHECK(decode_step(m, nf4, 8) > 1.5 * decode_step(m, s, 8));
}

TEST_CASE("MIG slices are GPUs: 1/7 of the SMs, 1/8 of the memory and no peer-to-peer (MIG user guide)") {
  const gpu_spec& full = io::find_gpu("a100-80gb");
  const gpu_spec& g = io::find_gpu("a100-80gb-mig-1g.10gb");
  CHECK(in_flop_per_s(*g.bf16) == doctest::Approx(312e12 / 7));
  CHECK(in_flop_per_s(g.fp32) == doctest::Approx(19.5e12 / 7));
  CHECK(in_gib(g.usable_memory) == doctest::Approx(9.75));
  CHECK(in_byte_per_s(g.bandwidth) == doctest::Approx(in_byte_per_s(full.bandwidth) / 8));
  CHECK_FALSE(g.p2p);
  CHECK_FALSE(g.has_nvlink());
  const gpu_spec& h = io::find_gpu("h100-sxm-mig-3g.40gb");
  CHECK(in_flop_per_s(*h.fp8) == doctest::Approx(1979e12 * 3 / 7));
  CHECK(in_gib(h.usable_memory) == doctest::Approx(39.38));
  CHECK(in_gib(io::find_gpu("a100-40gb-mig-1g.5gb").usable_memory) == doctest::Approx(4.75));
  // Slices are found by id but not listed among the catalog's GPUs.
  for (const std::string& id : io::gpu_ids()) CHECK(id.find("-mig-") == std::string::npos);
  CHECK_THROWS_AS(io::find_gpu("a100-80gb-mig-5g.50gb"), config_error);
  // Serving on a slice: an 8B model in bf16 (16.06 GB) does not fit 1g.10gb; on 3g.40gb the
  // batch-1 step reads the weights at 4/8 of the bandwidth: about twice the full GPU's step.
  const architecture& m = io::find_model("llama-3.1-8b");
  scenario s = vllm_on("a100-80gb-mig-1g.10gb", 512, 256);
  CHECK(serve(m, s).max_concurrency == 0);
  s.gpu = io::find_gpu("a100-80gb-mig-3g.40gb");
  CHECK(serve(m, s).max_concurrency > 0);
  const double overhead = profile_of(engine::vllm).step_overhead_seconds;
  const double slice = decode_step(m, s, 1) - overhead;
  s.gpu = full;
  CHECK(slice / (decode_step(m, s, 1) - overhead) == doctest::Approx(2.0).epsilon(0.03));
}

TEST_CASE("serving TP: all-reduces over PCIe eat more of the gain than over NVLink") {
  const architecture& m = io::find_model("llama-3.1-8b");
  // 128 sequences at ~640 tokens of context: each all-reduce carries 128 x 4096 x 2 B = 1 MiB,
  // 2 per layer x 32 layers. PCIe 4.0 x16 (L40S, 32 GB/s a way): ~40 us each, ~2.6 ms a step;
  // NVLink 4 (H100 SXM, 450 GB/s): ~3 us each, ~0.2 ms a step. The step itself halves.
  auto gain = [&](const char* gpu) {
    scenario s = vllm_on(gpu, 512, 256);
    const double one = in_seconds(serve_at(run(m, s), 128).inter_token_latency);
    s.num_gpus = 2;
    s.parallel.tp = 2;
    return one / in_seconds(serve_at(run(m, s), 128).inter_token_latency);
  };
  const double l40s = gain("l40s"), h100 = gain("h100-sxm");
  CHECK(l40s < h100);
  CHECK(l40s > 1.2);
  CHECK(h100 < 2.0);
  // H100 NVL cards come in bridged pairs (catalog: nvlink4-bridge-2way, 600 GB/s both ways):
  // TP=2 all-reduces over the bridge at 300 GB/s a way, TP=4 leaves the pair for PCIe 5.0 x16 (64 GB/s).
  scenario nvl = vllm_on("h100-nvl", 512, 256);
  nvl.num_gpus = 2;
  nvl.parallel.tp = 2;
  CHECK(detail::collective_link(nvl, 2, 1).bytes_per_s == doctest::Approx(300e9));
  nvl.num_gpus = 4;
  nvl.parallel.tp = 4;
  CHECK(detail::collective_link(nvl, 4, 1).bytes_per_s == doctest::Approx(64e9));
  // No peer-to-peer (GeForce): NCCL stages through host memory, 24/28 of the PCIe rate and
  // 14 us per step (detail/timing_comm.hpp): the same TP=2 step is slower than with P2P.
  scenario s = vllm_on("rtx-4090", 512, 256);
  s.num_gpus = 2;
  s.parallel.tp = 2;
  const double no_p2p = decode_step(m, s, 32);
  s.gpu.p2p = true;
  CHECK(no_p2p > decode_step(m, s, 32));
}

TEST_CASE("recommend --serve: replicas, throughput and cost from the serve curve (Little's law)") {
  const architecture& m = io::find_model("llama-3.1-8b");
  scenario t = vllm_on("a100-80gb", 512, 256);
  serve_workload w;
  w.requests_per_second = 5;
  w.prompt_len = 512;
  w.output_len = 256;
  w.itl_target = seconds(0.05);
  const std::vector<gpu_spec> gpus{io::find_gpu("a100-80gb"), io::find_gpu("l40s"), io::find_gpu("rtx-4060-ti-16gb")};
  const std::map<std::string, double, std::less<>> prices{{"a100-80gb", 2.0}, {"l40s", 1.0}, {"rtx-4060-ti-16gb", 0.3}};
  const serve_recommendation r = recommend_serving(m, t, w, gpus, prices, 2);
  REQUIRE(r.rows.size() == 6);  // 3 GPUs x TP 1, 2
  bool seen_miss = false;
  double last_cost = 0;
  for (const serve_option& o : r.rows) {
    if (!o.meets) {
      seen_miss = true;
      CHECK_FALSE(o.reason.empty());
      continue;
    }
    CHECK_FALSE(seen_miss);  // meeting rows first
    CHECK(in_seconds(o.inter_token_latency) <= 0.05);
    // Little's law: C requests in flight, each TTFT + 256 x ITL long.
    const double rps = static_cast<double>(o.concurrency) /
                       (in_seconds(o.time_to_first_token) + 256 * in_seconds(o.inter_token_latency));
    CHECK(o.requests_per_second == doctest::Approx(rps));
    CHECK(o.replicas == static_cast<std::int64_t>(std::ceil(5 / rps)));
    CHECK(o.gpus == o.replicas * o.tp);
    REQUIRE(o.cost_per_hour.has_value());  // every GPU has a price
    CHECK(*o.cost_per_hour == doctest::Approx(prices.at(o.gpu_id) * o.gpus));
    // 5 req/s x 256 output tokens x 3600 s = 4.608 M tokens an hour.
    CHECK(*o.cost_per_million_tokens == doctest::Approx(*o.cost_per_hour / 4.608));
    CHECK(*o.cost_per_hour >= last_cost);
    last_cost = *o.cost_per_hour;
    // The concurrency is the largest meeting the target: one more misses it (unless memory-bound).
    scenario s = t;
    s.gpu = io::find_gpu(o.gpu_id);
    s.num_gpus = o.tp;
    s.parallel.tp = o.tp;
    if (o.concurrency < o.max_concurrency)
      CHECK(in_seconds(serve_at(run(m, s), o.concurrency + 1).inter_token_latency) > 0.05);
  }
  // 16.06 GB of bf16 weights do not fit a 16 GB card at TP 1.
  bool small_tp1_misses = false;
  for (const serve_option& o : r.rows)
    if (o.gpu_id == "rtx-4060-ti-16gb" && o.tp == 1) small_tp1_misses = !o.meets;
  CHECK(small_tp1_misses);
  w.requests_per_second = 0;
  CHECK_THROWS_WITH_AS(recommend_serving(m, t, w, gpus, prices), doctest::Contains("--requests-per-second"), config_error);
  w.requests_per_second = std::nan("");
  CHECK_THROWS_AS(recommend_serving(m, t, w, gpus, prices), config_error);
  w.requests_per_second = 1;
  w.itl_target = seconds(-1);
  CHECK_THROWS_WITH_AS(recommend_serving(m, t, w, gpus, prices), doctest::Contains("--itl-target"), config_error);
}

}  // namespace gpuplan::unit_serving

