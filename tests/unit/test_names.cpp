// Name tables (names.hpp): every enumerator round-trips name -> enum -> name, names
// are unique, the scenario reader accepts exactly each table's names, and the
// amount parser (io/amount.hpp) gives the values and errors listed in
// tests/data/amounts.jsonl (tests/python/test_api.py reads the same file).
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/model_names.hpp"
#include "gpuplan/plan_names.hpp"
#include "gpuplan/scenario.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_names {

using namespace gpuplan;
using json = nlohmann::json;

namespace {

template <class Table>
void check_table(const Table& table, const char* what) {
  INFO(what);
  REQUIRE(std::size(table) > 0);
  std::set<std::string_view> names;
  std::set<int> values;
  for (const auto& e : table) {
    CHECK(!e.name.empty());
    CHECK(names.insert(e.name).second);                       // unique names
    CHECK(values.insert(static_cast<int>(e.value)).second);   // unique values
    CHECK(value_of(table, e.name) == e.value);                // name -> enum
    CHECK(name_of(table, e.value) == e.name);                 // enum -> name
  }
  CHECK_FALSE(value_of(table, "no-such-name").has_value());
}

// Every enumerator 0..last of a named enum round-trips through to_string/from_string.
template <named_enum E>
void check_enum(E last, const char* what) {
  INFO(what);
  check_table(name_table<E>, what);
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    const auto e = static_cast<E>(i);
    const std::string_view name = to_string(e);
    CHECK(name != "?");
    CHECK(from_string<E>(name) == e);
  }
  CHECK(name_list<E>() == join_names(name_table<E>));
}

json base() { return {{"model", "llama-2-13b"}, {"gpu", "a100-80gb"}}; }

// Sets `pointer` (e.g. "/parallel/zero") in a copy of `j` to `value`.
json with(json j, const std::string& pointer, const json& value) {
  j[json::json_pointer(pointer)] = value;
  return j;
}

error_kind kind_of(const json& j) {
  try {
    (void)io::read_scenario(j);
  } catch (const config_error& e) {
    return e.kind();
  }
  FAIL("accepted: " << j.dump());
  return error_kind::invalid_input;
}

// The reader accepts every name of `table` at `pointer` (in the context `ctx`)
// and rejects a name not in it with "must be one of <the table's names>".
template <class Table, class Get>
void check_reader(const Table& table, const json& ctx, const std::string& pointer, Get get) {
  INFO(pointer);
  for (const auto& e : table) {
    const io::resolved_run r = io::read_scenario(with(ctx, pointer, std::string(e.name)));
    CHECK(get(r.settings()) == e.value);
    // The writer spells it the same way.
    CHECK(io::write_scenario(r)[json::json_pointer(pointer)] == std::string(e.name));
  }
  const json bad = with(ctx, pointer, "no-such-name");
  try {
    (void)io::read_scenario(bad);
    FAIL("accepted no-such-name");
  } catch (const config_error& e) {
    std::string path = "scenario" + pointer;
    for (char& c : path)
      if (c == '/') c = '.';
    CHECK(std::string(e.what()) == path + ": must be one of " + join_names(table) + " (got \"no-such-name\")");
    CHECK(e.kind() == error_kind::unknown_name);
  }
}

}  // namespace

TEST_CASE("names: every enumerator round-trips name -> enum -> name; names are unique") {
  check_enum(workload::infer, "workload");
  check_enum(method::freeze, "method");
  check_enum(precision::fp8_mixed, "precision");
  check_enum(optimizer::lion, "optimizer");
  check_enum(checkpointing::full, "checkpointing");
  check_enum(attention::eager, "attention");
  check_enum(offload::nvme, "offload");
  check_enum(dtype::fp4, "dtype");
  check_enum(error_kind::does_not_fit, "error_kind");
  check_enum(model_kind::encoder_decoder, "model_kind");
  check_enum(norm_kind::rmsnorm, "norm_kind");
  check_enum(position_kind::none, "position_kind");
  check_enum(mlp_kind::gated, "mlp_kind");
  check_enum(activation_kind::relu, "activation_kind");
  check_enum(head_kind::none, "head_kind");
  check_enum(search_objective::cost, "search_objective");
  check_enum(recommend_rank::time, "recommend_rank");
  check_table(kLoraTargetNames, "lora targets");
  check_table(kWeightDtypeNames, "quantization.weights");
  check_table(kKvCacheDtypeNames, "inference.kv_cache_dtype");
  check_table(io::kReportFormatNames, "report formats");
  // LoRA: each single target is one bit; all-linear is all of them.
  std::uint8_t all = 0;
  for (const auto& t : kLoraSingleTargetNames) all = static_cast<std::uint8_t>(all | t.value);
  CHECK(all == lora_all_linear);
  CHECK(to_string(lora_all_linear) == "all-linear");
  // dtype aliases resolve, canonical names win.
  CHECK(parse_dtype("fp8") == dtype::fp8_e4m3);
  CHECK(parse_dtype("bfloat16") == dtype::bf16);
  CHECK(parse_dtype("fp8_e5m2") == dtype::fp8_e5m2);
  CHECK_FALSE(parse_dtype("int3").has_value());
  for (const auto& a : kDtypeAliases) CHECK_FALSE(from_string<dtype>(a.name).has_value());
}

TEST_CASE("names: the scenario reader accepts exactly each table's names") {
  const json lora = with(base(), "/method", "lora");
  const json qlora = with(base(), "/method", "qlora");
  const json infer = with(base(), "/workload", "infer");
  check_reader(kWorkloadNames, base(), "/workload", [](const scenario& s) { return s.work; });
  check_reader(kMethodNames, base(), "/method", [](const scenario& s) { return s.meth; });
  // fp8-mixed needs FP8 tensor cores: an H100.
  check_reader(kPrecisionNames, with(base(), "/gpu", "h100-sxm"), "/precision", [](const scenario& s) { return precision_of(s); });
  check_reader(kOptimizerNames, base(), "/optimizer", [](const scenario& s) { return s.opt; });
  check_reader(kCheckpointingNames, base(), "/checkpointing", [](const scenario& s) { return s.ckpt; });
  check_reader(kAttentionNames, base(), "/attention", [](const scenario& s) { return s.attn; });
  // Offload needs a ZeRO stage that shards what is offloaded (ZeRO-3 for parameters).
  const json zero3 = with(base(), "/parallel", json{{"zero", 3}});
  check_reader(kOffloadNames, zero3, "/parallel/offload_optimizer",
               [](const scenario& s) { return s.parallel.offload_optimizer; });
  check_reader(kOffloadNames, zero3, "/parallel/offload_params", [](const scenario& s) { return s.parallel.offload_params; });
  // Quantized weights train through adapters: qlora (bf16/fp16/fp32 bases are not quantized).
  for (const auto& w : kWeightDtypeNames) {
    const json j = with(with(infer, "/quantization", json::object()), "/quantization/weights", std::string(w.name));
    const io::resolved_run r = io::read_scenario(j);
    CHECK(r.settings().quant->weights == w.value);
    CHECK(io::write_scenario(r)["quantization"]["weights"] == std::string(w.name));
  }
  CHECK(kind_of(with(with(infer, "/quantization", json::object()), "/quantization/weights", "int3")) ==
        error_kind::unknown_name);
  check_reader(kKvCacheDtypeNames, infer, "/inference/kv_cache_dtype",
               [](const scenario& s) { return s.inference.kv_cache_dtype; });
  // LoRA targets: each single target as a one-element list, and "all-linear" as a string.
  for (const auto& t : kLoraSingleTargetNames) {
    const io::resolved_run r = io::read_scenario(with(lora, "/lora", json{{"targets", json::array({std::string(t.name)})}}));
    CHECK(r.settings().lora.targets == t.value);
    CHECK(io::write_scenario(r)["lora"]["targets"] == json::array({std::string(t.name)}));
  }
  CHECK(io::read_scenario(with(qlora, "/lora", json{{"targets", "all-linear"}})).settings().lora.targets == lora_all_linear);
  CHECK(kind_of(with(lora, "/lora", json{{"targets", json::array({"qkv"})}})) == error_kind::unknown_name);
  CHECK(kind_of(with(lora, "/lora", json{{"targets", "everything"}})) == error_kind::unknown_name);
}

TEST_CASE("names: enum values of the wrong JSON type are invalid input, not unknown names") {
  CHECK(kind_of(with(base(), "/method", 3)) == error_kind::invalid_input);
  CHECK(kind_of(with(base(), "/checkpointing", true)) == error_kind::invalid_input);
}

TEST_CASE("amounts: counts and durations as tests/data/amounts.jsonl lists them") {
  std::ifstream in(GPUPLAN_TEST_DATA_DIR "/amounts.jsonl");
  REQUIRE(in.good());
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const json row = json::parse(line);
    const std::string text = row["text"];
    const std::string parser = row["parser"];
    INFO(parser << " " << text);
    auto parse = [&] {
      return parser == "amount" ? io::parse_amount(text, "x") : io::parse_duration(text, "x");
    };
    if (row.contains("value")) {
      CHECK(parse() == row["value"].get<double>());
    } else {
      try {
        (void)parse();
        FAIL("accepted");
      } catch (const config_error& e) {
        CHECK(std::string(e.what()) == "x: " + row["error"].get<std::string>());
        CHECK(e.kind() == error_kind::invalid_input);
      }
    }
    ++rows;
  }
  CHECK(rows > 20);
  // The scenario's "tokens" reads counts with the same parser (its own message).
  CHECK(io::read_scenario(with(base(), "/tokens", "300B")).settings().tokens == 300e9);
  CHECK(io::positive_amount(2.5, "x") == 2.5);
  CHECK_THROWS_WITH_AS(io::positive_amount(0, "x"), "x: must be positive (got 0)", config_error);
}

}  // namespace unit_names
