// Report formatter (io/report.hpp): number formats, tables, and the JSON keys of
// `gpuplan estimate --json` that the CLI and Python all print.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_report {

using namespace gpuplan;
using json = nlohmann::json;

namespace {
std::set<std::string> keys_of(const json& j) {
  std::set<std::string> k;
  for (const auto& [key, v] : j.items()) k.insert(key);
  return k;
}
io::resolved_run read(const json& j) { return io::read_scenario(j); }
}  // namespace

TEST_CASE("report: bytes print in GB and GiB, both explicit") {
  // 13,015,864,320 parameters x 2 B (bf16) = 26,031,728,640 B = 26.03 GB = 24.24 GiB.
  CHECK(io::format_bytes(bytes(13015864320.0 * 2)) == "26.03 GB (24.24 GiB)");
  CHECK(io::format_bytes(gib(1)) == "1.07 GB (1.00 GiB)");
  CHECK(io::format_bytes(bytes(0)) == "0.00 GB (0.00 GiB)");
  CHECK(io::format_bytes(bytes(-0.0)) == "0.00 GB (0.00 GiB)");  // never "-0.00"
  CHECK(io::format_bytes(gb(-1)) == "-1.00 GB (-0.93 GiB)");    // 1e9 / 2^30 = 0.931
  CHECK(io::format_bytes_short(gb(80)) == "80.00 GB");
  CHECK(io::format_bytes(bytes(std::numeric_limits<double>::infinity())) == "n/a");
}

TEST_CASE("report: counts, parameters, seconds and rates") {
  CHECK(io::format_count(13015864320) == "13,015,864,320");
  CHECK(io::format_count(0) == "0");
  CHECK(io::format_count(999) == "999");
  CHECK(io::format_count(-1234567) == "-1,234,567");
  CHECK(io::format_count(std::numeric_limits<std::int64_t>::min()) == "-9,223,372,036,854,775,808");
  CHECK(io::format_params(13015864320) == "13.02 B");
  CHECK(io::format_params(124439808) == "124.4 M");
  CHECK(io::format_params(405853388800) == "405.85 B");
  CHECK(io::format_seconds(seconds(0.412)) == "412 ms");
  CHECK(io::format_seconds(seconds(3.21)) == "3.21 s");
  CHECK(io::format_seconds(seconds(5.4 * 3600)) == "5.40 h");
  CHECK(io::format_seconds(seconds(12.3 * 86400)) == "12.3 days");
  CHECK(io::format_seconds(seconds(25e-6)) == "25.0 µs");
  CHECK(io::format_number(0.0031858) == "0.00319");  // three significant digits below 1
  CHECK(io::format_number(1234567.0) == "1,234,567");
  CHECK(io::format_number(3.15e18) == "3.15e+18");
  CHECK(io::format_rate(12345.0, "tokens") == "12.3 k tokens/s");
}

TEST_CASE("report: --format names") {
  CHECK(io::parse_report_format("text") == io::report_format::text);
  CHECK(io::parse_report_format("md") == io::report_format::markdown);
  CHECK(io::parse_report_format("json") == io::report_format::json);
  try {
    (void)io::parse_report_format("xml");
    FAIL("expected config_error");
  } catch (const config_error& e) {
    CHECK(std::string(e.what()) == "--format: must be one of text, markdown, json (got 'xml')");
  }
}

TEST_CASE("report: tables align in text and become pipe tables in markdown") {
  io::table t;
  t.title = "T";
  t.header = {"Term", "Value"};
  t.rows = {{"weights", "1.00 GB"}, {"optimizer state", "10.00 GB"}};
  t.notes = {"note"};
  const std::string text = io::render(t, {});
  // Header, rule (─ is one column), right-aligned numbers: every body line ends at the same column.
  CHECK(text == "T\n"
                "Term                Value\n"
                "─────────────────────────\n"
                "weights           1.00 GB\n"
                "optimizer state  10.00 GB\n"
                "note\n");
  const std::string md = io::render(t, {.format = io::report_format::markdown, .color = false});
  CHECK(md == "**T**\n\n| Term | Value |\n|---|---:|\n| weights | 1.00 GB |\n| optimizer state | 10.00 GB |\n\nnote\n");
  // Colour only when asked for, and never in markdown.
  CHECK(text.find('\033') == std::string::npos);
  CHECK(io::render(t, {.format = io::report_format::text, .color = true}).find("\033[1m") != std::string::npos);
  CHECK(io::render(t, {.format = io::report_format::markdown, .color = true}).find('\033') == std::string::npos);
}

TEST_CASE("report: warnings become their messages in bit order") {
  const auto m = io::warning_messages(warn_host_memory | warn_bf16_emulated);
  REQUIRE(m.size() == 2);
  CHECK(m[0] == warning_message(warn_bf16_emulated));
  CHECK(m[1] == warning_message(warn_host_memory));
  CHECK(io::warning_messages(0).empty());
}

TEST_CASE("report: memory_json and time_json carry exactly the documented keys") {
  memory_breakdown m;
  m.weights = gb(26);
  m.headroom = gb(-3);
  const json mj = io::memory_json(m);
  CHECK(keys_of(mj) == std::set<std::string>{"weights_bytes", "master_weights_bytes", "gradients_bytes",
                                             "optimizer_bytes", "activations_bytes", "transient_bytes",
                                             "overhead_bytes", "peak_allocated_bytes", "peak_reserved_bytes",
                                             "device_bytes", "capacity_bytes", "headroom_bytes", "fits",
                                             "host_bytes", "stage", "peak_phase"});
  CHECK(mj["weights_bytes"].get<double>() == 26e9);
  CHECK(mj["headroom_bytes"].get<double>() == -3e9);
  const json mi = io::memory_json(m, workload::infer);
  CHECK(mi.contains("kv_cache_bytes"));
  CHECK(mi.contains("max_concurrent_sequences"));

  time_estimate t;
  t.step = seconds(2);
  const json tj = io::time_json(t);
  CHECK(keys_of(tj) == std::set<std::string>{"step_seconds", "tokens_per_second_per_gpu", "tokens_per_second",
                                             "model_flops_per_step", "hardware_flops_per_step", "mfu", "hfu",
                                             "total_seconds", "gpu_hours", "cost", "energy_kwh", "breakdown",
                                             "total_communication_seconds", "peak_flops_per_second"});
  CHECK(keys_of(tj["breakdown"]) == std::set<std::string>{"compute_seconds", "communication_seconds",
                                                          "bubble_seconds", "optimizer_seconds", "offload_seconds"});
  // No token count: the time-to-train figures do not exist (null, not 0).
  CHECK(tj["total_seconds"].is_null());
  CHECK(tj["cost"].is_null());
  t.total = seconds(3600);
  t.gpu_hours = 8;
  t.cost = 16.0;
  const json tt = io::time_json(t);
  CHECK(tt["total_seconds"].get<double>() == 3600);
  CHECK(tt["gpu_hours"].get<double>() == 8);
  CHECK(tt["cost"].get<double>() == 16);
  CHECK(io::time_json(t, workload::infer).contains("time_to_first_token_seconds"));
}

TEST_CASE("report: describe_json of llama-2-13b") {
  const json j = io::describe_json(io::find_model("llama-2-13b"));
  CHECK(j["parameters"].get<std::int64_t>() == 13015864320);  // official count, exact
  std::int64_t sum = 0;
  for (const auto& [k, v] : j["components"].items()) sum += v.get<std::int64_t>();
  CHECK(sum == 13015864320);
  REQUIRE(j["layers"].size() == 42);  // embeddings, 40 blocks, head
  CHECK(j["layers"][0]["name"] == "embeddings");
  CHECK(j["layers"][1]["name"] == "layer.0");
  CHECK(j["layers"][41]["name"] == "head");
  // One llama-2-13b block: 4*5120^2 attention + 3*5120*13824 MLP + 2*5120 norms = 317,204,480.
  CHECK(j["layers"][1]["parameters"].get<std::int64_t>() == 317204480);
  CHECK(j["largest_layer_parameters"].get<std::int64_t>() == 32000 * 5120);
}

TEST_CASE("report: estimate_json of a scenario has model, scenario, memory, stages, time, warnings") {
  const auto r = read({{"model", "llama-2-13b"}, {"gpu", "a100-80gb"}, {"num_gpus", 8},
                       {"parallel", {{"pp", 2}}}, {"tokens", "1T"}});
  const json j = io::estimate_json(r);
  CHECK(keys_of(j) == std::set<std::string>{"model", "scenario", "memory", "time", "warnings"});
  CHECK(j["model"]["name"] == "llama-2-13b");
  CHECK(j["model"]["parameters"].get<std::int64_t>() == 13015864320);
  CHECK(j["model"]["trainable_parameters"].get<std::int64_t>() == 13015864320);
  CHECK(j["memory"]["stages"].size() == 2);
  CHECK(j["memory"].contains("capacity_bytes"));
  CHECK(j["scenario"]["tokens"].get<double>() == 1e12);
  CHECK(j["warnings"].is_array());
  // The per-GPU figure is the most loaded stage (memory.hpp).
  double worst = 0;
  for (const auto& s : j["memory"]["stages"]) worst = std::max(worst, s["device_bytes"].get<double>());
  CHECK(j["memory"]["device_bytes"].get<double>() == doctest::Approx(worst).epsilon(1e-12));
}

TEST_CASE("report: text reports name every term once, with units") {
  const auto r = read({{"model", "llama-2-13b"}, {"gpu", "rtx-4090"}, {"method", "qlora"}});
  const std::string text = io::estimate_report(r, {});
  for (const char* label : {"Weights", "Master weights", "Gradients", "Optimizer state", "Activations",
                            "Transient buffers", "Framework overhead", "Peak allocated", "Peak reserved",
                            "Device (nvidia-smi)", "Usable capacity", "Headroom", "Step time", "MFU"})
    CHECK_MESSAGE(text.find(label) != std::string::npos, label);
  CHECK(text.find(" GiB)") != std::string::npos);
  const memory_breakdown m = estimate_memory(r.run);
  const std::string verdict = io::verdict_line(m, {});
  CHECK(verdict.rfind(m.fits ? "FITS: needs " : "DOES NOT FIT: needs ", 0) == 0);

  const std::string explain = io::explain_report(r, {});
  for (const auto& t : io::memory_terms()) {
    if (t.key == "kv_cache_bytes") continue;  // serving only
    CHECK_MESSAGE(explain.find("[" + std::string(t.key) + "]") != std::string::npos, t.key);
  }
  CHECK(explain.find("Korthikanti") != std::string::npos);
}

TEST_CASE("report: binding component is the largest term") {
  memory_breakdown m;
  m.weights = gb(10);
  m.optimizer = gb(40);
  m.activations = gb(20);
  CHECK(io::binding_component(m) == "optimizer state");
  m.kv_cache = gb(50);
  CHECK(io::binding_component(m) == "KV cache");
}

TEST_CASE("report: planner tables and JSON carry the estimators' numbers") {
  const io::resolved_run r = read({{"model", "llama-2-13b"}, {"gpu", "a100-80gb"}, {"num_gpus", 8}});
  search_options o;
  o.top_k = 3;
  o.global_batch = 16;
  const search_result sr = search(r.model(), r.settings(), o);
  REQUIRE(!sr.rows.empty());
  const json j = io::search_json(sr, r.model(), r.model_spec);
  CHECK(j["evaluated"].get<std::int64_t>() == sr.evaluated);
  CHECK(j["rows"].size() == sr.rows.size());
  // Row 1 = the estimators on its layout, through its own scenario JSON.
  const io::resolved_run again = io::read_scenario(j["rows"][0]["scenario"]);
  CHECK(j["rows"][0]["device_bytes"].get<double>() == in_bytes(estimate_memory(again.run).device));
  CHECK(j["rows"][0]["step_seconds"].get<double>() == in_seconds(estimate_time(again.run).step));
  CHECK(keys_of(j["rows"][0]["layout"]) == std::set<std::string>{"gpus", "tp", "pp", "virtual_stages", "dp",
                                                                   "micro_batch", "grad_accum", "checkpointing", "zero",
                                                                   "sp", "offload_optimizer", "offload_params"});
  const io::table t = io::search_table(sr);
  CHECK(t.rows.size() == sr.rows.size());
  CHECK(t.header.size() == t.rows[0].size());
  CHECK(t.notes.back().rfind("evaluated " + io::format_count(sr.evaluated) + " configurations in ", 0) == 0);

  // Suggestions: QLoRA is among the changes for 13B full fine-tuning on a 24 GB card.
  const io::resolved_run big = read({{"model", "llama-2-13b"}, {"gpu", "rtx-4090"}});
  const auto s = suggest(big.model(), big.settings());
  const json sj = io::suggestions_json(s, big.model(), big.model_spec);
  bool qlora = false;
  for (const auto& row : sj)
    for (const auto& c : row["changes"]) qlora = qlora || c == "qlora";
  CHECK(qlora);
  CHECK(io::suggestions_table(s).rows.size() == s.size());
  // Fit limits: four ZeRO stages; CUDA floors print major.minor.
  const json fj = io::fit_limits_json(fit(big.model(), big.settings()));
  CHECK(fj["min_gpus"].size() == 4);
  CHECK(io::format_cuda(cuda_version{12, 0}) == "12.0");
  CHECK(io::format_cuda(std::nullopt) == "-");
}

}  // namespace unit_report
