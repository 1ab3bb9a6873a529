// Scenario file: parsing, defaults, round trip, and one rejection per rule.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "support/errors.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_scenario {

using namespace gpuplan;
using json = nlohmann::json;

namespace {
std::string message_of(const json& j) {
  try {
    (void)io::read_scenario(j);
  } catch (const config_error& e) {
    return e.what();
  }
  return "<accepted>";
}
}  // namespace

TEST_CASE("scenario: defaults documented in docs/scenario.md") {
  const auto r = io::read_scenario(json{{"model", "llama-2-13b"}});
  const scenario& s = r.settings();
  CHECK(s.work == workload::train);
  CHECK(s.meth == method::full);
  CHECK(precision_of(s) == precision::bf16_mixed);
  CHECK(s.opt == optimizer::adamw);
  CHECK(s.micro_batch == 1);
  CHECK(s.seq_len == 2048);
  CHECK(s.grad_accum == 1);
  CHECK(s.ckpt == checkpointing::none);
  CHECK(s.attn == attention::flash);
  CHECK(s.gpu.id == "a100-80gb");
  CHECK(s.num_gpus == 1);
  CHECK(s.cluster.gpus_per_node == 8);
  CHECK(s.dp() == 1);
  CHECK(r.model().hidden == 5120);
}

TEST_CASE("scenario: qlora defaults to NF4 with double quantization") {
  const auto r = io::read_scenario(json{{"model", "llama-2-13b"}, {"method", "qlora"}, {"gpu", "rtx-4090"}});
  const quantization q = base_quantization(r.settings());
  CHECK(q.weights == dtype::nf4);
  CHECK(q.double_quant);
  CHECK(bits_per_element(q) == doctest::Approx(4.127).epsilon(1e-3));
  const auto fp4 = io::read_scenario(json{{"model", "llama-2-13b"}, {"method", "qlora"}, {"quantization", {{"weights", "fp4"}}}});
  CHECK(base_quantization(fp4.settings()).weights == dtype::fp4);
  CHECK(base_quantization(fp4.settings()).double_quant);
}

TEST_CASE("scenario: every key parsed, data-parallel degree derived") {
  const json j = json::parse(R"({
    "model": "llama-2-70b", "workload": "train", "method": "lora",
    "lora": {"rank": 16, "alpha": 32, "dropout": 0.05, "targets": "all-linear"},
    "precision": "bf16-pure", "optimizer": "paged-adamw-8bit", "micro_batch": 2, "seq_len": 4096,
    "global_batch": 64, "checkpointing": "selective", "attention": "eager", "compile": true,
    "chunked_loss": true, "tiled_mlp": true, "activation_offload": true, "optimizer_in_backward": false,
    "gpu": "h100-sxm", "num_gpus": 32, "gpus_per_node": 8,
    "network": {"internode_gb_s": 50, "latency_us": 3, "host_memory_gib": 2048},
    "parallel": {"tp": 4, "pp": 2, "virtual_stages": 2, "sp": true, "cp": 1, "ep": 1, "zero": 1,
                 "offload_optimizer": "cpu", "offload_params": "none"},
    "tokens": "1T", "price_per_gpu_hour": 2.5})");
  const auto r = io::read_scenario(j);
  const scenario& s = r.settings();
  CHECK(s.lora.rank == 16);
  CHECK(s.lora.targets == lora_all_linear);
  CHECK(s.dp() == 4);
  CHECK(s.grad_accum == 64 / (2 * 4));
  CHECK(s.global_batch() == 64);
  CHECK(in_gb_per_s(*s.cluster.internode_per_gpu) == doctest::Approx(50));
  CHECK(in_seconds(s.cluster.internode_latency) == doctest::Approx(3e-6));
  CHECK(*s.tokens == doctest::Approx(1e12));
  CHECK(s.parallel.offload_optimizer == offload::cpu);
  CHECK(s.chunked_loss);
  CHECK(s.tiled_mlp);
  CHECK_FALSE(s.fused_linear_loss);
}

TEST_CASE("scenario: write then read gives the same run") {
  const json j = json::parse(R"({"model": "mixtral-8x7b", "method": "qlora", "lora": {"rank": 4, "targets": ["q","k","v","o"]},
    "gpu": "a100-40gb", "num_gpus": 8, "parallel": {"ep": 4, "zero": 2}, "seq_len": 1024, "micro_batch": 3, "tokens": 5e9,
    "fused_linear_loss": true, "tiled_mlp": true})");
  const auto a = io::read_scenario(j);
  const auto b = io::read_scenario(io::write_scenario(a));
  CHECK(a.settings() == b.settings());
  CHECK(b.settings().fused_linear_loss);
  CHECK(b.settings().tiled_mlp);
  CHECK(io::write_scenario(a).at("fused_linear_loss") == true);
  CHECK(io::write_scenario(a).at("tiled_mlp") == true);
  CHECK(a.model() == b.model());
  CHECK(io::write_scenario(b) == io::write_scenario(a));
}

TEST_CASE("scenario: inline model objects and the infer workload") {
  const json j = json::parse(R"({"model": {"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4,
    "vocab_size": 1000, "n_positions": 256}, "workload": "infer", "seq_len": 128,
    "inference": {"batch": 4, "prompt_len": 100, "gen_len": 28, "kv_cache_dtype": "fp8"}})");
  const auto r = io::read_scenario(j);
  CHECK(r.model().layers == 2);
  CHECK(r.settings().inference.kv_cache_dtype == dtype::fp8_e4m3);
  const auto back = io::read_scenario(io::write_scenario(r));
  CHECK(back.model() == r.model());
}

TEST_CASE("scenario: malformed JSON is one line naming the position") {
  std::string msg;
  try {
    (void)io::read_scenario_text("{\"model\": \"gpt2\",,}");
  } catch (const config_error& e) {
    msg = e.what();
  }
  CHECK(msg.rfind("scenario: malformed JSON: ", 0) == 0);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK_THROWS_WITH_AS(io::read_scenario_file("/nonexistent/run.json"), "scenario: cannot open file '/nonexistent/run.json'", config_error);
  CHECK_THROWS_WITH_AS(io::read_scenario_text("[1,2]"), "scenario: must be a JSON object (got array [1,2])", config_error);
}

namespace {
// The kind of the config_error `f` throws (the message is checked elsewhere).
using test::kind_thrown;
}  // namespace

TEST_CASE("scenario: each rejection carries its error kind") {
  CHECK(kind_thrown([] { (void)io::read_scenario_text("{\"model\": \"gpt2\",,}"); }) == error_kind::parse_error);
  CHECK(kind_thrown([] { (void)io::read_scenario_file("/nonexistent/run.json"); }) == error_kind::io_error);
  CHECK(kind_thrown([] { (void)io::read_scenario(json{{"model", "llama-2-13"}}); }) == error_kind::unknown_name);
  CHECK(kind_thrown([] { (void)io::read_scenario(json{{"model", "gpt2"}, {"gpu", "rtx-409"}}); }) == error_kind::unknown_name);
  CHECK(kind_thrown([] { (void)io::read_scenario(json{{"model", "gpt2"}, {"modle", "gpt2"}}); }) == error_kind::unknown_name);
  CHECK(kind_thrown([] { (void)io::read_scenario(json{{"model", "gpt2"}, {"method", "adalora"}}); }) == error_kind::unknown_name);
  CHECK(kind_thrown([] { (void)io::read_scenario(json{{"model", "gpt2"}, {"micro_batch", 0}}); }) == error_kind::invalid_input);
  CHECK(kind_thrown([] { (void)io::read_scenario(json{{"model", "gpt2"}, {"parallel", {{"tp", 3}}}}); }) ==
        error_kind::invalid_input);
  CHECK(kind_thrown([] { (void)io::read_scenario(json{{"model", "gpt2"}, {"tokens", "lots"}}); }) == error_kind::invalid_input);
  CHECK(kind_thrown([] { (void)io::read_scenario_text("[1,2]"); }) == error_kind::invalid_input);
  // The kind does not change the message.
  try {
    (void)io::read_scenario(json{{"model", "gpt2"}, {"method", "adalora"}});
  } catch (const config_error& e) {
    CHECK(std::string(e.what()) == "scenario.method: must be one of full, lora, qlora, freeze, dora, ia3, prompt-tuning, prefix-tuning, vera, ln-tuning (got \"adalora\")");
    CHECK(e.path() == "scenario.method");
  }
}

TEST_CASE("scenario: bf16 on T4/V100 is accepted (emulated, warned by the estimators)") {
  CHECK_NOTHROW(io::read_scenario(json{{"model", "gpt2"}, {"seq_len", 1024}, {"gpu", "t4"}, {"precision", "bf16-mixed"}}));
  CHECK_NOTHROW(io::read_scenario(json{{"model", "gpt2"}, {"seq_len", 1024}, {"gpu", "v100-sxm2-16gb"}, {"precision", "bf16-pure"}}));
}

TEST_CASE("scenario: each rule rejects with its exact message (tests/data/bad_scenarios.jsonl)") {
  std::ifstream in(GPUPLAN_TEST_DATA_DIR "/bad_scenarios.jsonl");
  REQUIRE(in);
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const json row = json::parse(line);
    CAPTURE(line);
    CHECK(message_of(row["scenario"]) == row["error"].get<std::string>());
    ++rows;
  }
  CHECK(rows >= 100);
}

TEST_CASE("scenario: a custom or overridden GPU round-trips in full") {
  // Found by fuzz_scenario: the writer used to emit only the id, dropping the override.
  const json j = json::parse(R"({"model": "llama-3-8b", "gpu": {"base": "rtx-4090", "memory_gb": 48},
    "method": "freeze", "freeze": {"trainable_layers": 2}})");
  const auto a = io::read_scenario(j);
  const json written = io::write_scenario(a);
  REQUIRE(written["gpu"].is_object());
  CHECK(written["gpu"]["memory_gb"].get<double>() == 48.0);
  const auto b = io::read_scenario(written);
  CHECK(a.settings() == b.settings());
  // Catalog GPUs stay ids.
  CHECK(io::write_scenario(io::read_scenario(json{{"model", "gpt2"}, {"seq_len", 1024}, {"gpu", "h100-sxm"}}))["gpu"] == "h100-sxm");
}

TEST_CASE("scenario: network latency is kept at the nanosecond resolution the writer prints") {
  // Found by fuzz_scenario_fields: 1e-308 us was read as such and written as 0.
  for (const double us : {1e-308, 0.0004, 0.0006, 2.5, 1234.5678}) {
    CAPTURE(us);
    const auto a = io::read_scenario(json{{"model", "gpt2"}, {"seq_len", 128}, {"network", {{"latency_us", us}}}});
    CHECK(in_seconds(a.settings().cluster.internode_latency) == doctest::Approx(std::round(us * 1e3) / 1e9).epsilon(1e-12));
    const auto b = io::read_scenario(io::write_scenario(a));
    CHECK(a.settings() == b.settings());
  }
}

TEST_CASE("gpu: write_gpu is the exact inverse of read_gpu for every catalog GPU") {
  for (const auto& id : io::gpu_ids()) {
    CAPTURE(id);
    const gpu_spec& g = io::find_gpu(id);
    CHECK(io::read_gpu(io::write_gpu(g)) == g);
  }
}

}  // namespace unit_scenario
