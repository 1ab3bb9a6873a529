// Hostile input: config.json, safetensors headers, GPU JSON and the
// scenario's numeric edge cases. Every case runs in a forked child so that a
// crash (stack overflow, SIGFPE, a UBSan abort in the asan build) is reported
// as a failed check with the sanitizer's first line instead of killing the
// whole suite. Rejections must be gpuplan::config_error with one line of valid
// UTF-8 that starts with the field path; where the message is settled it is
// asserted exactly.
//
// Cases marked KNOWN DEFECT fail today (doctest::should_fail keeps CI green and
// turns red once the defect is fixed: then delete the decorator and rename the
// case "fixed defect"). Each names the file to fix; docs/robustness.md lists
// them with the proposed fix. "fixed defect" cases are their regression tests.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/hf_config.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/timing.hpp"

#include "support/errors.hpp"
#include "support/isolated.hpp"
#include "support/utf8.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_hostile_input {

using namespace gpuplan;
using json = nlohmann::json;

namespace {

using test::check_rejected;
using test::isolated;

std::string scenario_json(const json& j) {
  return isolated([&] { (void)io::read_scenario(j); });
}
std::string scenario_text(const std::string& text) {
  return isolated([&] { (void)io::read_scenario_text(text); });
}
std::string hf(const json& j) {
  return isolated([&] { (void)io::read_hf_config(j, "model"); });
}
std::string temp_file(const std::string& bytes, const char* suffix) {
  std::string path = std::string("/tmp/gpuplan-hostile-") + std::to_string(getpid()) + suffix;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}
std::string safetensors(const std::string& header, std::size_t data_bytes, std::uint64_t length_field) {
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[static_cast<std::size_t>(i)] = static_cast<char>((length_field >> (8 * i)) & 0xFF);
  return b + header + std::string(data_bytes, '\0');
}
std::string st(const std::string& header, std::size_t data_bytes) {
  return safetensors(header, data_bytes, header.size());
}
std::string st_file(const std::string& header, std::size_t data_bytes) {
  return temp_file(safetensors(header, data_bytes, header.size()), ".safetensors");
}
std::string read_st(const std::string& file) {
  return isolated([&] { (void)io::read_safetensors_header(file); });
}

std::string deep(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

const char* kLlama = R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,"vocab_size":100})";

json llama(std::initializer_list<std::pair<const std::string, json>> changes) {
  json j = json::parse(kLlama);
  for (const auto& [k, v] : changes) j[k] = v;
  return j;
}

}  // namespace

// ----------------------------------------------------------------- sizes and overflow

TEST_CASE("hostile: a 10^15-parameter model is counted exactly and estimated without overflow") {
  // Llama shapes: per layer 4h^2 (q,k,v,o; MHA) + 3*h*f (gate,up,down) + 2h (two RMSNorms);
  // untied embeddings and head 2*V*h; final norm h. h=65536, f=262144, V=32000, L=14552.
  const json cfg = llama({{"hidden_size", 65536}, {"num_attention_heads", 512}, {"intermediate_size", 262144},
                          {"vocab_size", 32000}, {"num_hidden_layers", 14552}});
  const architecture a = io::read_hf_config(cfg, "model");
  const std::int64_t h = 65536, f = 262144, V = 32000, L = 14552;
  const std::int64_t expected = L * (4 * h * h + 3 * h * f + 2 * h) + 2 * V * h + h;
  CHECK(expected == 1'000'011'927'191'552);  // 1.000012e15, exact in int64 and in double (< 2^53)
  CHECK(count_parameters(a).total == expected);

  const auto r = io::read_scenario(json{{"model", cfg}, {"gpu", "h100-sxm"}, {"seq_len", 4096}});
  const memory_breakdown m = estimate_memory(r.run);
  CHECK(std::isfinite(in_bytes(m.device)));
  CHECK_FALSE(m.fits);
  // bf16-mixed full fine-tuning: at least the bf16 weights, 2 bytes per parameter.
  CHECK(in_bytes(m.weights) >= 2.0 * static_cast<double>(expected) * (1 - 1e-12));
  CHECK(in_bytes(m.headroom) < 0);
}

TEST_CASE("hostile: parameter counts beyond int64 are an explicit 'too large' error") {
  CHECK(hf(llama({{"hidden_size", 16777216}, {"num_hidden_layers", 16777216}, {"num_attention_heads", 1},
                  {"intermediate_size", 16777216}, {"vocab_size", 16777216}})) ==
        "error: model: parameter count too large for 64-bit arithmetic");
  CHECK(hf(llama({{"hidden_size", 16777217}, {"num_attention_heads", 1}})) ==
        "error: model.hidden_size: too large (max 16777216, got 16777217)");
  CHECK(hf(llama({{"num_hidden_layers", 16777217}})) ==
        "error: model.num_hidden_layers: too large (max 16777216, got 16777217)");
  CHECK(hf(llama({{"vocab_size", std::numeric_limits<std::int64_t>::max()}})) ==
        "error: model.vocab_size: too large (max 16777216, got 9223372036854775807)");
  CHECK(hf(llama({{"vocab_size", std::numeric_limits<std::uint64_t>::max()}})) ==
        "error: model.vocab_size: integer too large (got 18446744073709551615)");
  CHECK(hf(llama({{"vocab_size", 1e15}})) == "error: model.vocab_size: too large (max 16777216, got 1000000000000000)");
  CHECK(hf(llama({{"vocab_size", 1e308}})) == "error: model.vocab_size: must be an integer (got 1e+308)");
  CHECK(hf(llama({{"vocab_size", -0.0}})) == "error: model.vocab_size: must be a positive integer (got 0)");
  CHECK(hf(llama({{"vocab_size", std::numeric_limits<std::int64_t>::min()}})) ==
        "error: model.vocab_size: must not be negative (got -9223372036854775808)");
  CHECK(hf(llama({{"attention_dropout", -0.0}})) == "accepted");
  CHECK(hf(llama({{"attention_dropout", 1e308}})) == "error: model.attention_dropout: must be in [0, 1) (got " +
                                                         detail::num(1e308) + ")");
  CHECK(hf(json{{"model_type", "mpt"}, {"d_model", 64}, {"n_layers", 2}, {"n_heads", 4}, {"vocab_size", 100},
                {"expansion_ratio", 1e308}}) ==
        "error: model.expansion_ratio: must make expansion_ratio * d_model a positive integer (got 1e+308)");
}

TEST_CASE("hostile: scenario integers at and beyond every limit") {
  const json base = {{"model", "gpt2"}, {"seq_len", 1024}};
  auto with = [&](const std::string& key, const json& v) {
    json j = base;
    j[json::json_pointer(key)] = v;
    return scenario_json(j);
  };
  CHECK(with("/micro_batch", 16777217) == "error: scenario.micro_batch: must be at most 16777216 (got 16777217)");
  CHECK(with("/micro_batch", 1e15) == "error: scenario.micro_batch: must be at most 16777216 (got 1000000000000000)");
  CHECK(with("/micro_batch", -0.0) == "error: scenario.micro_batch: must be at least 1 (got 0)");
  CHECK(with("/micro_batch", 1e308) == "error: scenario.micro_batch: too large (got 1e+308)");
  CHECK(with("/seq_len", std::numeric_limits<std::uint64_t>::max()) ==
        "error: scenario.seq_len: too large (got 18446744073709551615)");
  CHECK(with("/seq_len", std::numeric_limits<std::int64_t>::min()) ==
        "error: scenario.seq_len: must be at least 1 (got -9223372036854775808)");
  CHECK(with("/num_gpus", 2147483648LL) == "error: scenario.num_gpus: out of range (got 2147483648)");
  CHECK(with("/num_gpus", 1048577) == "error: scenario.num_gpus: must be at most 1048576 (got 1048577)");
  CHECK(with("/parallel/tp", 1073741824) == "error: scenario.parallel.tp: must be at most 1048576 (got 1073741824)");
  CHECK(with("/grad_accum", 0.5) == "error: scenario.grad_accum: must be an integer (got 0.5)");
  CHECK(with("/tokens", "1e308T") == "error: scenario.tokens: must be a finite number (got inf)");
  CHECK(with("/price_per_gpu_hour", -0.0) == "accepted");
  CHECK(with("/price_per_gpu_hour", -1e-308) == "error: scenario.price_per_gpu_hour: must be at least 0 (got -1e-308)");
}

TEST_CASE("hostile: -0.0 behaves exactly like 0.0") {
  const auto a = io::read_scenario(json{{"model", "llama-2-7b"}, {"method", "lora"}, {"lora", {{"dropout", 0.0}}}});
  const auto b = io::read_scenario(json{{"model", "llama-2-7b"}, {"method", "lora"}, {"lora", {{"dropout", -0.0}}}});
  const memory_breakdown ma = estimate_memory(a.run), mb = estimate_memory(b.run);
  CHECK(in_bytes(ma.device) == in_bytes(mb.device));
  CHECK(in_bytes(ma.activations) == in_bytes(mb.activations));
}

TEST_CASE("hostile: NaN and infinity (reachable from C++ and Python, not from JSON text) are rejected") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  check_rejected(scenario_json({{"model", "gpt2"}, {"seq_len", 1024}, {"price_per_gpu_hour", nan}}), "scenario.price_per_gpu_hour: ");
  check_rejected(scenario_json({{"model", "gpt2"}, {"seq_len", 1024}, {"tokens", inf}}), "scenario.tokens: ");
  check_rejected(scenario_json({{"model", "gpt2"}, {"seq_len", nan}}), "scenario.seq_len: ");
  check_rejected(scenario_json({{"model", "gpt2"}, {"seq_len", 1024}, {"network", {{"latency_us", -inf}}}}), "scenario.network.latency_us: ");
  check_rejected(hf(llama({{"attention_dropout", nan}})), "model.attention_dropout: ");
  check_rejected(hf(llama({{"hidden_size", inf}})), "model.hidden_size: ");
  check_rejected(scenario_json({{"model", "gpt2"}, {"seq_len", 1024}, {"gpu", {{"base", "a100-80gb"}, {"memory_gb", nan}}}}),
                 "scenario.gpu.memory_gb: ");
  // JSON text cannot carry them at all: nlohmann rejects NaN/Infinity literals.
  check_rejected(scenario_text(R"({"model": "gpt2", "tokens": NaN})"), "scenario: malformed JSON: ");
  check_rejected(scenario_text(R"({"model": "gpt2", "tokens": Infinity})"), "scenario: malformed JSON: ");
}

// ----------------------------------------------------------------- config.json

TEST_CASE("hostile: config.json wrong types and shapes, each with its exact message") {
  CHECK(hf(json::array({1, 2})) == "error: model: a config.json must be a JSON object (got [1,2])");
  CHECK(hf(json{{"hidden_size", 64}}) ==
        "error: model.model_type: missing required field (one of: bert, bloom, chatglm, falcon, gemma, gpt2, gpt_neox, "
        "gptj, llama, mistral, mixtral, mpt, mt5, opt, phi, phi3, qwen2, qwen3, t5, vit)");
  CHECK(hf(llama({{"model_type", 7}})) == "error: model.model_type: must be a string (got 7)");
  CHECK(hf(llama({{"hidden_size", "64"}})) == "error: model.hidden_size: must be an integer (got \"64\")");
  CHECK(hf(llama({{"hidden_size", true}})) == "error: model.hidden_size: must be an integer (got true)");
  CHECK(hf(llama({{"hidden_size", 64.5}})) == "error: model.hidden_size: must be an integer (got 64.5)");
  CHECK(hf(llama({{"hidden_size", json::array()}})) == "error: model.hidden_size: must be an integer (got [])");
  CHECK(hf(llama({{"hidden_size", nullptr}})) == "error: model.hidden_size: missing required field");
  CHECK(hf(llama({{"num_attention_heads", 3}})) == "error: model.num_attention_heads: must divide hidden_size=64 (got 3)");
  CHECK(hf(llama({{"num_key_value_heads", 3}})) == "error: model.num_key_value_heads: must divide num_attention_heads=4 (got 3)");
  CHECK(hf(llama({{"num_key_value_heads", -1}})) == "error: model.num_key_value_heads: must not be negative (got -1)");
  CHECK(hf(llama({{"head_dim", -5}})) == "error: model.head_dim: must not be negative (got -5)");
  CHECK(hf(llama({{"tie_word_embeddings", "yes"}})) == "error: model.tie_word_embeddings: must be true or false (got \"yes\")");
  CHECK(hf(llama({{"hidden_act", 1}})) == "error: model.hidden_act: must be a string (got 1)");
  CHECK(hf(llama({{"architectures", "LlamaForCausalLM"}})) ==
        "error: model.architectures: must be an array of strings (got \"LlamaForCausalLM\")");
  CHECK(hf(json{{"model_type", "vit"}, {"hidden_size", 64}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                {"intermediate_size", 64}, {"patch_size", 0}}) == "error: model.patch_size: must be a positive integer (got 0)");
  CHECK(hf(json{{"model_type", "vit"}, {"hidden_size", 64}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                {"intermediate_size", 64}, {"image_size", 30}, {"patch_size", 16}}) ==
        "error: model.image_size: must be a positive multiple of patch_size=16 (got 30)");
  CHECK(hf(json{{"model_type", "mixtral"}, {"hidden_size", 64}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                {"intermediate_size", 64}, {"vocab_size", 10}, {"num_experts_per_tok", 9}}) ==
        "error: model.num_experts_per_tok: must be between 1 and num_local_experts=8 (got 9)");
  CHECK(hf(json{{"model_type", "bert"}, {"hidden_size", 64}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                {"intermediate_size", 64}, {"vocab_size", 10}, {"architectures", {"BertForSequenceClassification"}},
                {"num_labels", 0}}) == "error: model.num_labels: must be a positive integer (got 0)");
  CHECK(hf(json{{"model_type", "mpt"}, {"d_model", 64}, {"n_layers", 2}, {"n_heads", 4}, {"vocab_size", 100},
                {"attn_config", 3}}) == "error: model.attn_config: must be an object (got 3)");
}

TEST_CASE("hostile: config.json files that are not JSON") {
  const std::string bad_utf8 = temp_file("{\"model_type\": \"llama\xff\"}", "-bad-utf8.json");
  CHECK(isolated([&] { (void)io::read_hf_config_file(bad_utf8, "model"); }) == "error: model: malformed JSON in '" + bad_utf8 +
            "': parse error at line 1, column 22: syntax error while parsing value - invalid string: ill-formed UTF-8 byte; "
            "last read: '\"llama\\xFF'");
  const std::string empty = temp_file("", "-empty.json");
  CHECK(isolated([&] { (void)io::read_hf_config_file(empty, "model"); }) == "error: model: malformed JSON in '" + empty +
            "': parse error at line 1, column 1: syntax error while parsing value - unexpected end of input; expected '[', "
            "'{', or a literal");
  CHECK(isolated([] { (void)io::read_hf_config_file("/nonexistent/config.json", "model"); }) ==
        "error: model: cannot open config file '/nonexistent/config.json'");
  // /dev/zero and FIFOs are not regular files: refused without reading.
  check_rejected(scenario_json({{"model", "/dev/zero"}}), "scenario.model: ");
  std::remove(bad_utf8.c_str());
  std::remove(empty.c_str());
}

// ----------------------------------------------------------------- safetensors

TEST_CASE("hostile: safetensors headers that lie, truncate or overflow") {
  const std::string w = R"({"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]}})";
  {
    const std::string f = st_file(w, 12);
    const auto info = io::read_safetensors_header(f);
    CHECK(info.parameters == 6);
    CHECK(info.bytes == 12);
    std::remove(f.c_str());
  }
  auto expect = [](const std::string& bytes, const std::string& reason) {
    const std::string f = temp_file(bytes, ".safetensors");
    CHECK(read_st(f) == "error: " + f + ": " + reason);
    std::remove(f.c_str());
  };
  expect("abc", "truncated: 3 bytes, shorter than the 8-byte header length");
  expect(safetensors(w, 12, std::uint64_t{1} << 40), "header length 1099511627776 exceeds the safetensors limit of 100000000 bytes");
  expect(safetensors(w, 12, std::numeric_limits<std::uint64_t>::max()),
         "header length 18446744073709551615 exceeds the safetensors limit of 100000000 bytes");
  expect(safetensors(w, 0, 1000), "header length 1000 exceeds the file size (" + std::to_string(8 + w.size()) + " bytes)");
  expect(safetensors("{", 0, 1), "header length 1 is too short for a JSON object");
  expect(st(w, 5), "truncated: tensor \"w\" ends at data byte 12 but the file holds 5 data bytes");
  expect(st("{\"w\":\xff}", 0), "malformed JSON header: parse error at line 1, column 6: syntax error while parsing value - invalid literal; "
         "last read: '\"w\":\\xFF'");
  expect(st("[1,2]", 0), "header must be a JSON object (got [1,2])");
  expect(st(R"({"w":{"dtype":"BF16","shape":[1000000,1000000],"data_offsets":[0,2000000000000]}})", 12),
         "truncated: tensor \"w\" ends at data byte 2000000000000 but the file holds 12 data bytes");
  expect(st(R"({"w":{"dtype":"BF16","shape":[4294967296,4294967296],"data_offsets":[0,12]}})", 12),
         "tensor \"w\": shape [4294967296,4294967296] has more elements than a 64-bit count holds");
  expect(st(R"({"w":{"dtype":"BF16","shape":[-1],"data_offsets":[0,12]}})", 12),
         "tensor \"w\": shape must be an array of non-negative integers (got [-1])");
  expect(st(R"({"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", 1),
         "tensor \"w\": unknown dtype \"Q4\" (known: BOOL, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, I16, U16, F16, BF16, I32, U32, "
         "F32, F64, I64, U64, F4, F6_E2M3, F6_E3M2, C64, F8_E4M3FNUZ)");
  expect(st(R"({"w":{"dtype":"BF16","shape":[2],"data_offsets":[4,0]}})", 4),
         "tensor \"w\": data_offsets begin > end (got [4,0])");
  expect(st(R"({"w\nx":{"dtype":"BF16","shape":[2],"data_offsets":[0,3]}})", 4),
         "tensor \"w\\nx\": data_offsets span 3 bytes but shape [2] of BF16 needs 4");
}

TEST_CASE("hostile: unreadable files are io errors, malformed contents parse errors") {
  const auto kind = [](auto f) { return test::kind_thrown(f); };
  const std::string truncated = temp_file("abc", ".safetensors");
  const std::string not_json = temp_file("{\"model_type\": ", "-cut.json");
  CHECK(kind([&] { (void)io::read_safetensors_header(truncated); }) == error_kind::parse_error);
  CHECK(kind([] { (void)io::read_safetensors_header("/nonexistent/model.safetensors"); }) == error_kind::io_error);
  CHECK(kind([] { (void)io::read_checkpoint_dir("/nonexistent/checkpoint"); }) == error_kind::io_error);
  CHECK(kind([&] { (void)io::read_hf_config_file(not_json, "model"); }) == error_kind::parse_error);
  CHECK(kind([] { (void)io::read_hf_config_file("/nonexistent/config.json", "model"); }) == error_kind::io_error);
  CHECK(kind([] { (void)io::read_hf_config(json{{"model_type", "mamba"}}, "model"); }) == error_kind::unknown_name);
  CHECK(kind([] { (void)io::read_hf_config(json{{"model_type", "llama"}, {"hidden_size", -1}}, "model"); }) ==
        error_kind::invalid_input);
  std::remove(truncated.c_str());
  std::remove(not_json.c_str());
}

// ----------------------------------------------------------------- GPU JSON

TEST_CASE("hostile: GPU objects with impossible figures") {
  auto gpu = [](const json& g) { return scenario_json({{"model", "gpt2"}, {"seq_len", 1024}, {"gpu", g}}); };
  check_rejected(gpu({{"base", "a100-80gb"}, {"memory_gb", -1}}), "scenario.gpu.memory_gb: ");
  check_rejected(gpu({{"base", "a100-80gb"}, {"memory_gb", 0}}), "scenario.gpu.memory_gb: ");
  check_rejected(gpu({{"base", "a100-80gb"}, {"memory_gb", "80"}}), "scenario.gpu.memory_gb: ");
  check_rejected(gpu({{"base", "a100-80gb"}, {"pcie_gen", 99}}), "scenario.gpu.pcie_gen: ");
  check_rejected(gpu({{"base", "a100-80gb"}, {"year", 1e308}}), "scenario.gpu.year: ");
  check_rejected(gpu({{"base", "no-such-gpu"}}), "scenario.gpu.base: ");
  check_rejected(gpu({{"base", 3}}), "scenario.gpu.base: ");
  check_rejected(gpu({{"base", "a100-80gb"}, {"flops", 3}}), "scenario.gpu.flops: ");
  check_rejected(gpu({{"id", "x"}}), "scenario.gpu");
  check_rejected(gpu(json::array()), "scenario.gpu: ");
}

// ----------------------------------------------------------------- defects found by fuzzing and review
// "fixed defect" cases are regression tests; docs/robustness.md tells each story.

TEST_CASE("fixed defect (src/scenario_json.cpp): global_batch with a huge micro_batch divides by a wrapped zero") {
  // per_step = micro_batch * dp is computed before validate() bounds micro_batch:
  // 2^62 * 4 wraps to 0 and `gbatch % per_step` raises SIGFPE.
  CHECK(scenario_json({{"model", "gpt2"}, {"seq_len", 1024}, {"micro_batch", std::int64_t{1} << 62}, {"num_gpus", 4},
                       {"global_batch", 8}}) ==
        "error: scenario.micro_batch: must be at most 16777216 (got 4611686018427387904)");
}

TEST_CASE("fixed defect (src/scenario_json.cpp): global_batch multiplies unbounded tp*pp*cp") {
  // tp*pp*cp = 2^90 overflows int64 (undefined behaviour; UBSan aborts) before validate() bounds tp.
  CHECK(scenario_json({{"model", "gpt2"}, {"seq_len", 1024}, {"global_batch", 8},
                       {"parallel", {{"tp", 1073741824}, {"pp", 1073741824}, {"cp", 1073741824}}}}) ==
        "error: scenario.parallel.tp: must be at most 1048576 (got 1073741824)");
}

TEST_CASE("fixed defect (include/gpuplan/validate.hpp): prompt_len + gen_len overflows before they are bounded") {
  // validate() adds them for the max_position_embeddings check before the serving range checks.
  CHECK(scenario_json({{"model", "gpt2"}, {"workload", "infer"},
                       {"inference", {{"prompt_len", std::int64_t{1} << 62}, {"gen_len", std::int64_t{1} << 62}}}}) ==
        "error: scenario.inference.prompt_len: must be at most 16777216 (got 4611686018427387904)");
}

TEST_CASE("fixed defect (src/hf_config.cpp): 4 * n_embd overflows before validate() bounds n_embd") {
  // gpt2/gptj/phi/bloom/falcon/mpt default ffn = 4 * hidden, computed on the raw value;
  // 4 * 2^62 wraps to 0 and the user is told about a field they never wrote.
  CHECK(hf(json{{"model_type", "gpt2"}, {"n_embd", std::int64_t{1} << 62}, {"n_layer", 1}, {"n_head", 1}, {"vocab_size", 1}}) ==
        "error: model.hidden_size: too large (max 16777216, got 4611686018427387904)");
}

TEST_CASE("fixed defect (include/gpuplan/model.hpp): head_dim is unbounded and heads*head_dim overflows") {
  CHECK(hf(llama({{"head_dim", std::int64_t{1} << 62}})) ==
        "error: model.head_dim: too large (max 16777216, got 4611686018427387904)");
}

TEST_CASE("fixed defect (include/gpuplan/model.hpp): ViT image_size/patch_size are unbounded; vit_tokens overflows") {
  CHECK(hf(json{{"model_type", "vit"}, {"hidden_size", 64}, {"num_hidden_layers", 1}, {"num_attention_heads", 1},
                {"intermediate_size", 64}, {"image_size", 4294967296LL}, {"patch_size", 1}}) ==
        "error: model.image_size: too large (max 16777216, got 4294967296)");
}

TEST_CASE("fixed defect (include/gpuplan/model.hpp): max_positions + position_offset is unchecked") {
  CHECK(hf(json{{"model_type", "opt"}, {"hidden_size", 64}, {"num_hidden_layers", 1}, {"num_attention_heads", 1},
                {"ffn_dim", 64}, {"vocab_size", 10}, {"max_position_embeddings", std::numeric_limits<std::int64_t>::max()}}) ==
        "error: model.max_position_embeddings: too large (max 16777216, got 9223372036854775807)");
}

// nlohmann parses and destroys iteratively but dump(), copy and == recurse; the
// readers dump a bad value into the message (show()) and the scenario reader
// dumps inline models into model_spec. Fix: reject depth > 64 while parsing (a
// parser_callback_t that throws config_error) and before dump().
TEST_CASE("fixed defect (src/scenario_json.cpp): scenario JSON nested 10^5 deep overflowed the stack") {
  CHECK(scenario_text(R"({"model": "gpt2", "parallel": )" + deep(100000) + "}") ==
        "error: scenario: malformed JSON: nested deeper than 256 levels");
  CHECK(scenario_text(R"({"model": {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 10, "x": )" +
                      deep(100000) + "}}") == "error: scenario: malformed JSON: nested deeper than 256 levels");
  CHECK(scenario_text(R"({"model": "gpt2", "seq_len": 1024, "parallel": {"x": )" + deep(200) + "}}") ==
        "error: scenario.parallel.x: unknown key (expected one of: tp, pp, virtual_stages, sp, cp, ep, zero, offload_optimizer, offload_params, account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split, first_stage_layers, last_stage_layers)");
}
TEST_CASE("fixed defect (src/hf_config.cpp): a config.json nested 10^5 deep overflowed the stack") {
  // Every reader parses untrusted text through detail::parse_json_text (src/json_text.hpp).
  const std::string cfg = temp_file(deep(100000), "-deep.json");
  const std::string outcome = isolated([&] { (void)io::read_hf_config_file(cfg, "model"); });
  check_rejected(outcome, "model: ");
  CHECK(outcome == "error: model: malformed JSON in '" + cfg + "': nested deeper than 256 levels");
  // 256 levels parse (and the value is then rejected as a config, quoting it safely).
  const std::string ok_depth = temp_file("{\"model_type\": " + deep(255) + "}", "-deep255.json");
  CHECK(isolated([&] { (void)io::read_hf_config_file(ok_depth, "model"); }) ==
        "error: model.model_type: must be a string (got " + std::string(77, '[') + "...)");
  std::remove(cfg.c_str());
  std::remove(ok_depth.c_str());
}
TEST_CASE("fixed defect (src/safetensors.cpp): a safetensors header nested 10^5 deep overflowed the stack") {
  const std::string st = temp_file(safetensors(deep(100000), 0, 200000), ".safetensors");
  const std::string outcome = read_st(st);
  check_rejected(outcome, st + ": ");
  CHECK(outcome == "error: " + st + ": malformed JSON header: nested deeper than 256 levels");
  std::remove(st.c_str());
}
TEST_CASE("fixed defect (src/catalog.cpp): a GPU file nested 10^5 deep") {
  const std::string f = temp_file(deep(100000), "-gpus.json");
  CHECK(isolated([&] { io::load_gpu_file(f); }) == "error: " + f + ": malformed JSON: nested deeper than 256 levels");
  std::remove(f.c_str());
}

TEST_CASE("fixed defect (src/scenario_json.cpp): invalid UTF-8 in a JSON value escapes as nlohmann::type_error") {
  // show() calls v.dump() without error_handler_t::replace (hf_config/catalog/safetensors use replace).
  check_rejected(scenario_json({{"model", "gpt2"}, {"workload", "\xff\xfe"}}), "scenario.workload: must be one of train, infer (got ");
  check_rejected(scenario_json({{"model", "gpt2"}, {"lora", {{"targets", {"\xff"}}}}, {"method", "lora"}}), "scenario.lora.targets[0]: ");
}

TEST_CASE("fixed defect (src/scenario_json.cpp): message truncation splits a UTF-8 character") {
  // show() cuts dump() at byte 57; dump() keeps UTF-8 raw (ensure_ascii=false).
  std::string v = "a";
  for (int i = 0; i < 40; ++i) v += "\xc3\xa9";  // "é"
  check_rejected(scenario_json({{"model", "gpt2"}, {"workload", v}}), "scenario.workload: ");
}

TEST_CASE("hostile: user strings are escaped in messages (newlines, invalid UTF-8)") {
  // "unknown model '...'", "unknown GPU '...'", "unsupported model_type '...'",
  // "unsupported activation (got \"...\")", ecc/compute_capability. (Was a defect:
  // raw strings split the one-line message; fixed in catalog.cpp/hf_config.cpp.)
  check_rejected(scenario_json({{"model", "gpt\n2"}}), "scenario.model: ");
  check_rejected(scenario_json({{"model", "gpt2"}, {"seq_len", 1024}, {"gpu", "a100\n80gb"}}), "scenario.gpu: ");
  check_rejected(hf(llama({{"model_type", "llama\n"}})), "model.model_type: ");
  check_rejected(hf(llama({{"hidden_act", "\xff"}})), "model.hidden_act: ");
  check_rejected(scenario_json({{"model", "gpt2"}, {"seq_len", 1024}, {"gpu", {{"base", "a100-80gb"}, {"ecc", "x\ny"}}}}),
                 "scenario.gpu.ecc: ");
}

TEST_CASE("fixed defect (src/catalog.cpp): GPU figures that overflow to infinity were accepted") {
  // memory_gb = 1e308 is finite, but memory_gb * 2^30 bytes is inf: the run then
  // "fit with inf headroom". Each figure now has an upper bound (catalog.cpp kMax*).
  auto gpu = [](const char* key, double v) {
    return scenario_json({{"model", "gpt2"}, {"seq_len", 1024}, {"gpu", {{"base", "a100-80gb"}, {key, v}}}});
  };
  CHECK(gpu("memory_gb", 1e308) == "error: scenario.gpu.memory_gb: must be at most 100000 (got 1e+308)");
  CHECK(gpu("bf16_tflops", 1e308) == "error: scenario.gpu.bf16_tflops: must be at most 1000000 (got 1e+308)");
  CHECK(gpu("usable_gib", 1e308) == "error: scenario.gpu.usable_gib: must be at most 100000 (got 1e+308)");
  CHECK(gpu("bandwidth_gb_s", 1e7) == "error: scenario.gpu.bandwidth_gb_s: must be at most 1000000 (got 10000000)");
  CHECK(gpu("gpu_link_gb_s_bidir", 1e300) == "error: scenario.gpu.gpu_link_gb_s_bidir: must be at most 1000000 (got 1e+300)");
  CHECK(gpu("tdp_w", 100001) == "error: scenario.gpu.tdp_w: must be at most 100000 (got 100001)");
  for (const char* rate : {"fp64_tflops", "fp32_tflops", "tf32_tflops", "fp16_acc16_tflops", "fp8_tflops", "int8_tops"})
    CHECK(gpu(rate, 1e6 * (1 + 1e-15)) == std::string("error: scenario.gpu.") + rate + ": must be at most 1000000 (got 1000000)");
  // The bounds themselves are accepted.
  CHECK(gpu("memory_gb", 1e5) == "accepted");
  CHECK(gpu("bf16_tflops", 1e6) == "accepted");
}

TEST_CASE("fixed defect (include/gpuplan/error.hpp): detail::num prints 1e308 with 309 digits") {
  CHECK(scenario_json({{"model", "gpt2"}, {"seq_len", 1024}, {"tokens", 1e308}}) ==
        "error: scenario.tokens: must be at most 1e+18 (got 1e+308)");
}

TEST_CASE("fixed defect (src/safetensors.cpp): overlapping data_offsets were counted twice") {
  // The reference implementation (safetensors Metadata::validate, after sorting
  // by offsets) requires the tensors to tile the data buffer exactly; here two
  // tensors share bytes [0, 12).
  const std::string f = st_file(R"({"a":{"dtype":"BF16","shape":[6],"data_offsets":[0,12]},)"
                                R"("b":{"dtype":"BF16","shape":[6],"data_offsets":[0,12]}})",
                                12);
  const std::string outcome = read_st(f);
  check_rejected(outcome, f);
  CHECK(outcome == "error: " + f + ": tensor \"b\": data_offsets [0,12] overlap tensor \"a\" [0,12]");
  std::remove(f.c_str());
}

TEST_CASE("fixed defect (src/json_text.hpp): the malformed-JSON message echoed raw input bytes (invalid UTF-8)") {
  // Found by fuzz_scenario: nlohmann's parse_error text quotes "last read: '20\xff'"
  // verbatim. parse_json_text escapes bytes >= 0x80 and control characters as \xNN.
  const std::string outcome = scenario_text("{\"model\": \"gpt2\", \"seq_len\": 20\xff}");
  check_rejected(outcome, "scenario: malformed JSON: ");
  CHECK(outcome == "error: scenario: malformed JSON: parse error at line 1, column 32: syntax error while parsing object - "
                   "invalid literal; last read: '20\\xFF'; expected '}'");
  // The same in every reader: a config.json and a GPU file with a raw 0xFF byte.
  const std::string cfg = temp_file("{\"model_type\": 1\xff}", "-ff.json");
  check_rejected(isolated([&] { (void)io::read_hf_config_file(cfg, "model"); }), "model: malformed JSON in '" + cfg + "': ");
  check_rejected(isolated([&] { io::load_gpu_file(cfg); }), cfg + ": malformed JSON: ");
  std::remove(cfg.c_str());
}

TEST_CASE("fixed defect (src/json_text.hpp): the malformed-JSON message quoted a whole long token (over 4 KiB)") {
  // Found by fuzz_diffusers_config: '{' then 700 tabs and a stray letter; nlohmann's
  // "last read" quoted every tab as "<U+0009>" (4.9 KiB). The token keeps its last 80 bytes
  // (src/json_text.hpp kMaxShown), whole escapes only: "x" and 79 bytes, 9 whole "<U+0009>".
  const std::string outcome = scenario_text("{" + std::string(700, '\t') + "x}");
  check_rejected(outcome, "scenario: malformed JSON: ");
  CHECK(outcome.size() < 300);
  std::string tabs;
  for (int i = 0; i < 9; ++i) tabs += "<U+0009>";
  CHECK(outcome == "error: scenario: malformed JSON: parse error at line 1, column 702: syntax error while parsing object key - "
                   "invalid literal; last read: '..." + tabs + "x'; expected string literal");
}

TEST_CASE("fixed defect (include/gpuplan/model.hpp): num_decoder_layers is unbounded (2^32 layers accepted, then OOM)") {
  // Found by fuzz_hf_config_fields: count_parameters fits int64, but layer_parameters()
  // reserves 2^32 entries (34 GB) -> std::bad_alloc / ASan out-of-memory.
  CHECK(hf(json{{"model_type", "t5"}, {"d_model", 64}, {"num_layers", 2}, {"num_decoder_layers", 4294967296LL}, {"num_heads", 4},
                {"d_kv", 16}, {"d_ff", 256}, {"vocab_size", 100}}) ==
        "error: model.num_decoder_layers: too large (max 16777216, got 4294967296)");
}

TEST_CASE("fixed defect (include/gpuplan/timing.hpp): the kernel counter was an int and overflowed for 2^24 layers") {
  // Found by fuzz_hf_config_fields: `kernels += static_cast<int>(n_blocks) * c.kernels * 4`
  // (timing.hpp add_blocks) overflows int at 16,777,216 T5 layers. Fix: double or int64.
  const json t5 = {{"model_type", "t5"}, {"d_model", 64}, {"num_layers", 16777216}, {"num_heads", 4}, {"d_kv", 16},
                   {"d_ff", 256}, {"vocab_size", 100}};
  const auto r = io::read_scenario(json{{"model", t5}, {"seq_len", 128}, {"checkpointing", "full"}});
  CHECK(isolated([&] {
          const time_estimate t = estimate_time(r.run);
          if (!(in_seconds(t.step) > 0 && std::isfinite(in_seconds(t.step)))) throw std::runtime_error("step not finite and > 0");
        }) == "accepted");
}

}  // namespace unit_hostile_input
