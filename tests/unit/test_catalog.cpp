// Catalog tests: every verified model's exact parameter count against the
// literal published figures in tests/data/official_parameters.json, aliases,
// unknown-name suggestions, and GPU catalog spot checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/hf_config.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/timing.hpp"
#include "support/errors.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_catalog {

using namespace gpuplan;
using nlohmann::json;

namespace {
json read_json(const std::string& file) {
  std::ifstream in(file);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}
}  // namespace

TEST_CASE("catalog: every verified model equals its published parameter count exactly") {
  const json official = read_json(std::string(GPUPLAN_TEST_DATA_DIR) + "/official_parameters.json");
  int checked = 0;
  for (const auto& item : official.items()) {  // (CAPTURE of a structured binding needs clang ≥ 16)
    const std::string name = item.key();
    const auto& value = item.value();
    if (name.front() == '_') continue;
    CAPTURE(name);
    const std::int64_t expected = value.get<std::int64_t>();
    CHECK(count_parameters(io::find_model(name)).total == expected);
    CHECK(io::official_parameters(name) == expected);
    ++checked;
  }
  CHECK(checked == 40);
}

TEST_CASE("catalog: every listed model is present, in catalog order") {
  const std::vector<std::string> expected = {
      "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "bert-base-uncased", "bert-large-uncased", "t5-small", "t5-base",
      "t5-3b", "t0-3b", "mt0-xxl", "opt-1.3b", "opt-6.7b", "bloomz-7b1", "falcon-7b", "tinyllama-1.1b", "mpt-7b",
      "llama-7b", "llama-13b", "llama-30b", "llama-65b", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b",
      "llama-3-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b", "mistral-7b",
      "mixtral-8x7b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-72b", "gemma-2b", "gemma-7b", "phi-2", "phi-3-mini",
      "chatglm3-6b", "vit-base-patch16-224", "vit-large-patch16-224"};
  CHECK(io::model_names() == expected);
  for (const auto& n : expected) CHECK(io::find_model(n).name == n);
}

TEST_CASE("catalog: unverified models keep their hand-derived counts and report no official figure") {
  // llama-65b: shapes give 65,285,660,672; the published 65,286,678,528 disagrees (reference README).
  CHECK(count_parameters(io::find_model("llama-65b")).total == 65285660672LL);
  CHECK(io::official_parameters("llama-65b") == 0);
  // falcon-7b (modeling_falcon.py, multi-query, parallel_attn, no biases, tied):
  //   embeddings 65024 x 4544 = 295,469,056
  //   per layer: query_key_value 4544 x (4544 + 2 x 64) = 21,229,568; dense 4544^2 = 20,647,936;
  //              MLP 2 x 4544 x 18176 = 165,183,488; input_layernorm 2 x 4544 = 9,088 -> 207,070,080
  //   32 layers = 6,626,242,560; ln_f 9,088; total 6,921,720,704.
  const auto falcon = count_parameters(io::find_model("falcon-7b"));
  CHECK(falcon.embeddings == 295469056LL);
  CHECK(falcon.per_layer == 207070080LL);
  CHECK(falcon.total == 6921720704LL);
  CHECK(io::official_parameters("falcon-7b") == 0);
  // vit-large-patch16-224 + 1000-class classifier: patch 3x16x16x1024 + 1024 = 787,456; CLS 1,024;
  // positions 197 x 1024 = 201,728; per layer 4,198,400 attn + 8,393,728 mlp + 4,096 norms = 12,596,224
  // (x24 = 302,309,376); final LN 2,048; classifier 1,025,000 -> 304,326,632 (timm: 304.33M).
  CHECK(count_parameters(io::find_model("vit-large-patch16-224")).total == 304326632LL);
  CHECK(io::official_parameters("vit-large-patch16-224") == 0);
  CHECK(io::official_parameters("no-such-model") == 0);
}

TEST_CASE("catalog: hub ids are case-insensitive aliases") {
  CHECK(io::find_model("meta-llama/Llama-2-13b-hf").name == "llama-2-13b");
  CHECK(io::find_model("META-LLAMA/llama-2-13B-chat-HF").name == "llama-2-13b");
  CHECK(io::find_model("LLaMA-2-13B").name == "llama-2-13b");
  CHECK(io::find_model("meta-llama/Meta-Llama-3.1-8B-Instruct").name == "llama-3.1-8b");
  CHECK(io::find_model("mistralai/Mixtral-8x7B-Instruct-v0.1").name == "mixtral-8x7b");
  CHECK(io::find_model("tiiuae/falcon-7b").name == "falcon-7b");
  CHECK(io::find_model("google/vit-base-patch16-224").name == "vit-base-patch16-224");
  CHECK(io::find_model("THUDM/chatglm3-6b").name == "chatglm3-6b");
  CHECK(io::find_model("openai-community/gpt2").name == "gpt2");
  CHECK(io::load_model("Qwen/Qwen2.5-72B-Instruct").name == "qwen2.5-72b");
  CHECK(io::official_parameters("microsoft/phi-2") == 2779683840LL);
}

TEST_CASE("catalog: unknown names suggest the nearest three") {
  CHECK_THROWS_WITH_AS(io::find_model("llama-2-13x"),
                       "model: unknown model 'llama-2-13x' (did you mean: llama-2-13b, llama-13b, llama-2-7b?)", config_error);
  CHECK_THROWS_WITH_AS(io::load_model(std::string("qwen"), "scenario.model"),
                       "scenario.model: unknown model 'qwen' (did you mean: qwen2.5-7b, qwen2.5-14b, qwen2.5-72b?)",
                       config_error);
  CHECK_THROWS_WITH_AS(io::load_model("./nope/config.json"), "model: no such file or directory './nope/config.json'",
                       config_error);
  CHECK_THROWS_WITH_AS(io::load_model(""),
                       "model: must name a catalog model, a config.json or a checkpoint directory (got \"\")", config_error);
  CHECK_THROWS_WITH_AS(io::load_model(json(42)),
                       "model: must be a model name, a path, or an object of config.json fields (got 42)", config_error);
  CHECK_THROWS_WITH_AS(io::find_gpu("h100"), "gpu: unknown GPU 'h100' (did you mean: h100-sxm, h100-pcie, h100-nvl?)",
                       config_error);
  CHECK_THROWS_WITH_AS(io::find_gpu("rtx-4900", "scenario.gpu"),
                       "scenario.gpu: unknown GPU 'rtx-4900' (did you mean: rtx-4090, rtx-a4000, rtx-3060?)", config_error);
}

TEST_CASE("catalog: errors carry their kind") {
  const auto kind = [](auto f) { return test::kind_thrown(f); };
  CHECK(kind([] { (void)io::find_model("llama-2-13x"); }) == error_kind::unknown_name);
  CHECK(kind([] { (void)io::load_model(std::string("qwen"), "scenario.model"); }) == error_kind::unknown_name);
  CHECK(kind([] { (void)io::find_gpu("h100"); }) == error_kind::unknown_name);
  CHECK(kind([] { (void)io::read_gpu(json{{"base", "rtx-4090"}, {"memory_gbs", 48}}); }) == error_kind::unknown_name);
  CHECK(kind([] { (void)io::read_gpu(json{{"base", "rtx-4090"}, {"ecc", "maybe"}}); }) == error_kind::unknown_name);
  CHECK(kind([] { (void)io::read_gpu(json{{"base", "rtx-4090"}, {"memory_gb", -1}}); }) == error_kind::invalid_input);
  CHECK(kind([] { (void)io::load_model("./nope/config.json"); }) == error_kind::io_error);
  CHECK(kind([] { io::load_gpu_file("/nonexistent/gpus.json"); }) == error_kind::io_error);
  CHECK(kind([] { (void)io::load_model(json(42)); }) == error_kind::invalid_input);
}

TEST_CASE("catalog: user text in messages stays one line of valid UTF-8") {
  CHECK_THROWS_WITH_AS(io::find_model("bad\nname"), "model: unknown model 'bad\\nname' (did you mean: t5-base, t5-small, falcon-7b?)",
                       config_error);
  CHECK_THROWS_WITH_AS(io::find_gpu(std::string("x\xff")), "gpu: unknown GPU 'x\xef\xbf\xbd' (did you mean: l4, t4, a10?)",
                       config_error);
  try {
    (void)io::read_gpu(json::parse(R"({"id": "x", "memory_gb": 24, "bandwidth_gb_s": 1, "bf16_tflops": 1, "a\nb": 1})"));
    FAIL("no error");
  } catch (const config_error& e) {
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
    CHECK(e.path() == "gpu.a\\nb");
  }
}

TEST_CASE("catalog: inline config objects") {
  const auto a = io::load_model(json::parse(R"({"model_type": "llama", "hidden_size": 5120, "num_hidden_layers": 40,
    "num_attention_heads": 40, "intermediate_size": 13824, "vocab_size": 32000})"));
  CHECK(count_parameters(a).total == 13015864320LL);
  CHECK(io::load_model(json("llama-2-13b")).name == "llama-2-13b");
}

TEST_CASE("gpus: dense rates, missing formats, and compute capability from the csv") {
  const auto& h100 = io::find_gpu("h100-sxm");
  CHECK(in_flop_per_s(*h100.bf16) == doctest::Approx(989.4e12));  // dense; 1979 is the sparse headline
  CHECK(in_flop_per_s(*h100.tf32) == doctest::Approx(494.7e12));
  CHECK(in_flop_per_s(*h100.fp8) == doctest::Approx(1979e12));
  CHECK(in_gb_per_s(h100.bandwidth) == doctest::Approx(3350));  // decimal GB/s
  CHECK(h100.cc_major == 9);
  CHECK(h100.cc_minor == 0);
  CHECK(h100.mig);
  CHECK(h100.arch == "Hopper");
  CHECK(h100.confidence == "vendor+measured");

  const auto& r4090 = io::find_gpu("rtx-4090");
  CHECK(in_flop_per_s(*r4090.bf16) == doctest::Approx(165.2e12));  // FP32 accumulate, not the 330 headline
  CHECK(in_flop_per_s(*r4090.fp16_acc16) == doctest::Approx(330.3e12));
  CHECK(r4090.sm() == 89);
  CHECK(r4090.ecc == "soft-toggle");
  CHECK_FALSE(r4090.mig);
  CHECK(r4090.pcie_gen == 4);

  const auto& t4 = io::find_gpu("T4");  // ids are case-insensitive
  CHECK_FALSE(t4.has_bf16());
  CHECK_FALSE(t4.tf32.has_value());
  CHECK(in_flop_per_s(*t4.fp16_acc16) == doctest::Approx(65e12));
  CHECK(t4.confidence == "vendor (no bf16 hardware; fp16 65)");
  CHECK_FALSE(io::find_gpu("v100-sxm2-32gb").has_bf16());
  // AD102 professional card: dense BF16 with FP32 accumulate at full rate, like the L40S.
  REQUIRE(io::find_gpu("rtx-6000-ada").has_bf16());
  CHECK(in_flop_per_s(*io::find_gpu("rtx-6000-ada").bf16) == doctest::Approx(364.2e12));

  const auto& mi300x = io::find_gpu("mi300x");
  CHECK(mi300x.vendor == gpu_vendor::amd);
  CHECK(mi300x.cc_major == 0);
  CHECK(mi300x.compute_capability == "gfx942");
  // AMD parts carry no CUDA sm (sm() == 0); FP8 support is the csv's fp8 figure:
  // MI300X 2615 dense FP8 TFLOPS (AMD CDNA3 datasheet), MI250X none (CDNA2).
  CHECK(mi300x.sm() == 0);
  REQUIRE(mi300x.has_fp8());
  CHECK(in_flop_per_s(*mi300x.fp8) == doctest::Approx(2615e12).epsilon(1e-12));
  CHECK(in_flop_per_s(*mi300x.bf16) == doctest::Approx(1307.4e12).epsilon(1e-12));
  CHECK(io::find_gpu("mi250x").vendor == gpu_vendor::amd);
  CHECK_FALSE(io::find_gpu("mi250x").has_fp8());
  // An MI250X is two GCDs, each its own 64 GB device.
  CHECK(in_gib(io::find_gpu("mi250x").memory) == doctest::Approx(64));
  CHECK(in_flop_per_s(*io::find_gpu("mi250x").bf16) == doctest::Approx(191.5e12));
  CHECK(io::find_gpu("rtx-5090").cc_major == 12);

  // FP8 exists from Ada/Hopper on (sm_89+); every NVIDIA row with an fp8 figure is sm_89+.
  int nvidia_fp8 = 0;
  for (const auto& id : io::gpu_ids()) {
    const auto& g = io::find_gpu(id);
    CAPTURE(id);
    if (g.vendor == gpu_vendor::nvidia && g.has_fp8()) {
      CHECK(g.sm() >= 89);
      ++nvidia_fp8;
    }
    if (g.vendor == gpu_vendor::nvidia && g.sm() < 89) CHECK_FALSE(g.has_fp8());
    CHECK(g.sm_count > 0);  // every row names its SMs (CUs), for the GEMM wave model
  }
  CHECK(nvidia_fp8 >= 15);
  CHECK(io::gpu_ids().size() == 36);
  CHECK(io::gpu_ids().front() == "rtx-3060");
}

TEST_CASE("gpus: memory, usable memory and links") {
  const auto& a100 = io::find_gpu("a100-40gb");
  CHECK(in_gib(a100.memory) == doctest::Approx(40));
  CHECK(in_mib(a100.usable_memory) == doctest::Approx(40441));  // published visible total
  CHECK(in_mib(io::find_gpu("h100-sxm").usable_memory) == doctest::Approx(81559));
  CHECK(in_mib(io::find_gpu("rtx-4090").usable_memory) == doctest::Approx(24564));
  CHECK(in_mib(io::find_gpu("v100-sxm2-16gb").usable_memory) == doctest::Approx(16160));
  CHECK(in_gib(io::find_gpu("b200").usable_memory) == doctest::Approx(179));
  CHECK(in_gib(io::find_gpu("rtx-5090").usable_memory) == doctest::Approx(31.4).epsilon(1e-4));
  CHECK(in_mib(io::find_gpu("l4").usable_memory) == doctest::Approx(24576.0 * 15 / 16));  // ECC reserve
  CHECK(in_gib(io::find_gpu("rtx-3060").usable_memory) == doctest::Approx(12 * 0.98));    // documented fraction
  for (const auto& id : io::gpu_ids()) {
    const auto& g = io::find_gpu(id);
    CAPTURE(id);
    CHECK(g.usable_memory <= g.memory);
    CHECK(g.usable_memory > g.memory * 0.9);
  }

  const auto& h100 = io::find_gpu("h100-sxm");
  CHECK(in_gb_per_s(h100.link_per_direction) == doctest::Approx(450));  // 900 GB/s counts both directions
  CHECK(h100.link_group == 8);
  CHECK(h100.has_nvlink());
  const auto& r3090 = io::find_gpu("rtx-3090");
  CHECK(r3090.link == "nvlink3-bridge-2way");
  CHECK(r3090.link_group == 2);
  CHECK(in_gb_per_s(r3090.link_per_direction) == doctest::Approx(56.25));
  const auto& r4090 = io::find_gpu("rtx-4090");
  CHECK(r4090.link == "none");
  CHECK(r4090.link_group == 1);
  CHECK_FALSE(r4090.has_nvlink());
  CHECK(io::find_gpu("b200").link_group == 8);
  CHECK(io::find_gpu("h200-sxm").link_group == 8);
  CHECK(io::find_gpu("a100-80gb").link_group == 8);
  CHECK(io::find_gpu("h100-nvl").link_group == 2);
  CHECK(io::find_gpu("gh200").link_group == 1);  // NVLink-C2C joins the GPU to its Grace CPU
  CHECK(io::find_gpu("rtx-4060-ti-16gb").pcie_lanes == 8);
  const auto& orin = io::find_gpu("jetson-agx-orin-64gb");
  CHECK(orin.pcie_lanes == 0);  // SoC: empty cell
  CHECK(in_flop_per_s(orin.fp64) == 0);
}

TEST_CASE("gpus: user GPUs from JSON") {
  const auto g = io::read_gpu(json::parse(R"({"id": "my-gpu", "memory_gb": 24, "bandwidth_gb_s": 1000, "bf16_tflops": 165})"));
  CHECK(g.id == "my-gpu");
  CHECK(g.name == "my-gpu");
  CHECK(in_gib(g.memory) == doctest::Approx(24));
  CHECK(in_gib(g.usable_memory) == doctest::Approx(24 * 0.98));
  CHECK(in_flop_per_s(*g.bf16) == doctest::Approx(165e12));
  CHECK_FALSE(g.has_fp8());
  CHECK(g.link_group == 1);

  // "base" overrides a catalog entry; usable memory follows a new capacity.
  const auto big = io::read_gpu(json::parse(R"({"base": "rtx-4090", "id": "rtx-4090-48gb", "memory_gb": 48})"));
  CHECK(big.id == "rtx-4090-48gb");
  CHECK(in_flop_per_s(*big.bf16) == doctest::Approx(165.2e12));
  CHECK(in_gib(big.usable_memory) == doctest::Approx(48 * 0.98));
  const auto oc = io::read_gpu(json::parse(R"({"base": "rtx-4090", "bandwidth_gb_s": 1100, "fp8_tflops": null})"));
  CHECK(oc.id == "rtx-4090");
  CHECK(in_mib(oc.usable_memory) == doctest::Approx(24564));  // capacity unchanged: published figure kept
  CHECK(in_gb_per_s(oc.bandwidth) == doctest::Approx(1100));
  CHECK_FALSE(oc.has_fp8());  // null removes a rate
  const auto nv = io::read_gpu(json::parse(R"({"base": "h100-sxm", "gpu_link": "none", "usable_gib": 70})"));
  CHECK(nv.link_group == 1);
  CHECK(in_gib(nv.usable_memory) == doctest::Approx(70));
  // The SM count: a GPU without one gets 0 (the smooth shape factor), "base" keeps the
  // catalog's, and a bad one names the field.
  CHECK(g.sm_count == 0);
  CHECK(big.sm_count == 128);
  CHECK(io::read_gpu(json::parse(R"({"base": "l40s", "sm_count": 100})")).sm_count == 100);
  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"base": "l40s", "sm_count": 0})")),
                       "gpu.sm_count: must be an integer in [1, 4096] (got 0)", config_error);
  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"base": "l40s", "sm_count": 1.5})")),
                       "gpu.sm_count: must be an integer in [1, 4096] (got 1.5)", config_error);

  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"id": "x", "memroy_gb": 24, "bandwidth_gb_s": 1, "bf16_tflops": 1})")),
                       "gpu.memroy_gb: unknown key (known: id, name, arch, compute_capability, memory_gb, memory_type, "
                       "bandwidth_gb_s, fp64_tflops, fp32_tflops, tf32_tflops, bf16_tflops, fp16_acc16_tflops, fp8_tflops, "
                       "int8_tops, gpu_link, gpu_link_gb_s_bidir, pcie_gen, pcie_lanes, tdp_w, ecc, mig, year, confidence, p2p, "
                       "sm_count, usable_gib, link_group, base)",
                       config_error);
  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"id": "x", "memory_gb": -1, "bandwidth_gb_s": 1, "bf16_tflops": 1})")),
                       "gpu.memory_gb: must be a positive finite number (got -1)", config_error);
  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"id": "x", "memory_gb": "24", "bandwidth_gb_s": 1, "bf16_tflops": 1})")),
                       "gpu.memory_gb: must be a positive finite number (got \"24\")", config_error);
  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"memory_gb": 24, "bandwidth_gb_s": 1, "bf16_tflops": 1})")),
                       "gpu.id: missing required field", config_error);
  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"id": "x", "bandwidth_gb_s": 1, "bf16_tflops": 1})")),
                       "gpu.memory_gb: missing required field", config_error);
  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"id": "x", "memory_gb": 24, "bandwidth_gb_s": 1})")),
                       "gpu: needs at least one of bf16_tflops, fp16_acc16_tflops, fp32_tflops", config_error);
  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"id": "x", "memory_gb": 24, "bandwidth_gb_s": 1, "bf16_tflops": 1,
    "compute_capability": "8"})")), "gpu.compute_capability: must look like \"8.9\" (NVIDIA) or \"gfx942\" (AMD) (got \"8\")",
                       config_error);
  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"id": "x", "memory_gb": 24, "bandwidth_gb_s": 1, "bf16_tflops": 1,
    "pcie_gen": 9})")), "gpu.pcie_gen: must be an integer in [1, 7] (got 9)", config_error);
  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"base": "rtx-4090", "usable_gib": 30})")),
                       "gpu.usable_gib: must not exceed memory_gb=24 (got 30)", config_error);
  CHECK_THROWS_WITH_AS(io::read_gpu(json::parse(R"({"base": "rtx-9090"})"), "scenario.gpu"),
                       "scenario.gpu.base: unknown GPU 'rtx-9090' (did you mean: rtx-3090, rtx-4090, rtx-5090?)", config_error);
  CHECK_THROWS_WITH_AS(io::read_gpu(json(3)), "gpu: must be a GPU id or an object of GPU fields (got 3)", config_error);
}

TEST_CASE("gpus: a GPU file with tensor rates alone estimates the runs they serve; others name the missing fp32 rate") {
  // The reader needs one of bf16, fp16_acc16 and fp32; the time model reads fp32 only where no
  // tensor rate serves the precision (timing_model.hpp fp32_fallback_of).
  const std::string figures = R"("id": "my-gpu", "memory_gb": 24, "bandwidth_gb_s": 1000, "compute_capability": "8.9")";
  scenario s;
  s.meth = method::lora;
  s.gpu = io::read_gpu(json::parse("{" + figures + R"(, "bf16_tflops": 165})"));
  REQUIRE(in_flop_per_s(s.gpu.fp32) == 0);
  const architecture& m = io::find_model("llama-2-7b");
  // The default precision, bf16-mixed: memory and a finite step, the same as with an fp32 rate given.
  const memory_breakdown mem = estimate_memory(m, s);
  CHECK(in_bytes(mem.peak_allocated) > 0);
  const double step = in_seconds(estimate_time(m, s).step);
  CHECK(std::isfinite(step));
  CHECK(step > 0);
  scenario with_fp32 = s;
  with_fp32.gpu = io::read_gpu(json::parse("{" + figures + R"(, "bf16_tflops": 165, "fp32_tflops": 82.6})"));
  CHECK(step == in_seconds(estimate_time(m, with_fp32).step));
  CHECK(in_bytes(mem.peak_allocated) == in_bytes(estimate_memory(m, with_fp32).peak_allocated));
  for (precision p : {precision::bf16_pure, precision::fp16_mixed}) {
    s.prec = p;
    CHECK(std::isfinite(in_seconds(estimate_time(m, s).step)));
  }
  // Precisions that run at the fp32 rate name the field and the missing value.
  s.prec = precision::fp32;
  CHECK_THROWS_WITH_AS((void)estimate_time(m, s), "scenario.gpu.fp32_tflops: precision fp32 needs the GPU's fp32 rate (got none)",
                       config_error);
  CHECK_THROWS_WITH_AS((void)estimate_memory(m, s), "scenario.gpu.fp32_tflops: precision fp32 needs the GPU's fp32 rate (got none)",
                       config_error);
  s.prec = precision::tf32;
  CHECK_THROWS_WITH_AS((void)estimate_time(m, s),
                       "scenario.gpu.fp32_tflops: precision tf32 without tf32_tflops needs the GPU's fp32 rate (got none)",
                       config_error);
  s.gpu.tf32 = tflop_per_s(82.6);  // TF32 tensor cores serve tf32
  CHECK(std::isfinite(in_seconds(estimate_time(m, s).step)));
  // fp16 tensor rate alone (T4-like): fp16-mixed, the default there, runs; bf16 would be emulated in fp32.
  s.prec.reset();
  s.gpu = io::read_gpu(json::parse("{" + figures + R"(, "fp16_acc16_tflops": 65})"));
  CHECK(std::isfinite(in_seconds(estimate_time(m, s).step)));
  s.prec = precision::bf16_mixed;
  CHECK_THROWS_WITH_AS((void)estimate_time(m, s),
                       "scenario.gpu.fp32_tflops: precision bf16-mixed without bf16_tflops needs the GPU's fp32 rate (got none)",
                       config_error);
}

TEST_CASE("gpus: a user file adds and replaces entries") {
  const auto file = (std::filesystem::temp_directory_path() / "gpuplan_test_gpus.json").string();
  std::ofstream(file) << R"([{"id": "test-gpu-a", "memory_gb": 20, "bandwidth_gb_s": 500, "bf16_tflops": 100},
                             {"base": "l4", "id": "test-gpu-b", "memory_gb": 48}])";
  io::load_gpu_file(file);
  const auto& a = io::find_gpu("test-gpu-a");
  CHECK(in_gib(a.memory) == doctest::Approx(20));
  CHECK(in_flop_per_s(*io::find_gpu("test-gpu-b").bf16) == doctest::Approx(121e12));
  const auto ids = io::gpu_ids();
  CHECK(std::find(ids.begin(), ids.end(), "test-gpu-a") != ids.end());
  // Replacing an entry keeps references handed out earlier valid.
  std::ofstream(file) << R"({"id": "test-gpu-a", "memory_gb": 40, "bandwidth_gb_s": 500, "bf16_tflops": 100})";
  io::load_gpu_file(file);
  CHECK(in_gib(io::find_gpu("test-gpu-a").memory) == doctest::Approx(40));
  CHECK(in_gib(a.memory) == doctest::Approx(20));
  CHECK(io::gpu_ids().size() == ids.size());
  // Errors name the file and the element; nothing is added on error.
  std::ofstream(file) << R"([{"id": "test-gpu-c", "memory_gb": 8, "bandwidth_gb_s": 1, "bf16_tflops": 1},
                             {"id": "test-gpu-d", "memory_gb": 0, "bandwidth_gb_s": 1, "bf16_tflops": 1}])";
  CHECK_THROWS_WITH_AS(io::load_gpu_file(file), (file + "[1].memory_gb: must be a positive finite number (got 0)").c_str(),
                       config_error);
  CHECK_THROWS_AS(io::find_gpu("test-gpu-c"), config_error);
  std::ofstream(file) << "[1,";
  CHECK_THROWS_WITH_AS(io::load_gpu_file(file), (file + ": malformed JSON: parse error at line 1, column 4: syntax error while parsing value - "
                                                        "unexpected end of input; expected '[', '{', or a literal").c_str(), config_error);
  std::remove(file.c_str());
  CHECK_THROWS_WITH_AS(io::load_gpu_file(file), (file + ": cannot open file '" + file + "'").c_str(), config_error);
}

}  // namespace unit_catalog
