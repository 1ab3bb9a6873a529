// Serving as the engines do it (engine.hpp, detail/memory_serving.hpp, serve.hpp).
#include <doctest/doctest.h>

#include <cmath>

#include "gpuplan/engine.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/serve.hpp"

namespace gpuplan::test {

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

}  // namespace gpuplan::test
