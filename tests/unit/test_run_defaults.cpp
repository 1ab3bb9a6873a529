// Defaults live in run (run.hpp resolve_defaults) and nowhere else: the scenario reader
// only parses, so a C++ program that builds run(model, scenario) gets the run the CLI and
// Python get for the same input. Python and the CLI are compared over the same validation
// files in tests/python/test_run_defaults.py.
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/run.hpp"

using namespace gpuplan;
using nlohmann::json;

namespace {

// The run a C++ caller builds by hand, field by field, against the reader's for the same JSON.
void check_same_run(const scenario& by_hand, const std::string& model, json file) {
  file["model"] = model;
  const run cpp(io::find_model(model), by_hand);
  const io::resolved_run read = io::read_scenario(file);
  CAPTURE(file.dump());
  CHECK(cpp.settings() == read.settings());
}

}  // namespace

TEST_CASE("run defaults: a C++ scenario with fields left unset resolves as the scenario file does") {
  const gpu_spec t4 = io::find_gpu("t4"), h100 = io::find_gpu("h100-sxm"), a100 = io::find_gpu("a100-80gb");
  // No bf16 tensor cores: fp16 AMP (PyTorch autocast docs); an explicit bf16 is kept.
  check_same_run(scenario{.gpu = t4}, "llama-2-7b", {{"gpu", "t4"}});
  CHECK(run(io::find_model("llama-2-7b"), scenario{.gpu = t4}).settings().prec == precision::fp16_mixed);
  check_same_run(scenario{.prec = precision::bf16_mixed, .gpu = t4}, "llama-2-7b", {{"gpu", "t4"}, {"precision", "bf16-mixed"}});
  // A paged serving engine on 4 GPUs splits the model by tensor parallelism (vLLM --tensor-parallel-size).
  scenario vllm{.work = workload::infer, .gpu = a100, .num_gpus = 4};
  vllm.inference.eng = engine::vllm;
  check_same_run(vllm, "llama-2-13b", {{"workload", "infer"}, {"engine", "vllm"}, {"gpu", "a100-80gb"}, {"num_gpus", 4}});
  CHECK(run(io::find_model("llama-2-13b"), vllm).settings().parallel.tp == 4);
  // transformers generate replicates the model instead; an explicit tp=1 on vLLM means replicas.
  scenario hf_serve = vllm;
  hf_serve.inference.eng = engine::hf;
  CHECK(run(io::find_model("llama-2-13b"), hf_serve).settings().parallel.tp == 1);
  vllm.parallel.tp = 1;
  check_same_run(vllm, "llama-2-13b",
                 {{"workload", "infer"}, {"engine", "vllm"}, {"gpu", "a100-80gb"}, {"num_gpus", 4}, {"parallel", {{"tp", 1}}}});
  // Megatron pairs sequence parallelism with tensor parallelism; an explicit sp=false is kept.
  scenario mega{.fw = framework::megatron, .gpu = h100, .num_gpus = 8};
  mega.parallel.tp = 8;
  check_same_run(mega, "llama-2-70b", {{"framework", "megatron"}, {"gpu", "h100-sxm"}, {"num_gpus", 8}, {"parallel", {{"tp", 8}}}});
  CHECK(run(io::find_model("llama-2-70b"), mega).settings().parallel.sp == true);
  mega.parallel.sp = false;
  check_same_run(mega, "llama-2-70b",
                 {{"framework", "megatron"}, {"gpu", "h100-sxm"}, {"num_gpus", 8}, {"parallel", {{"tp", 8}, {"sp", false}}}});
  // QLoRA's NF4 base and the PEFT recipe's checkpointing.
  check_same_run(scenario{.meth = method::qlora, .gpu = a100}, "llama-2-13b", {{"method", "qlora"}});
  // No GPU at all: C++ names the field (the scenario file's default is a100-80gb).
  CHECK_THROWS_WITH_AS(run(io::find_model("llama-2-7b"), scenario{}), doctest::Contains("scenario.gpu: is required"), config_error);
}

TEST_CASE("run defaults: the reader only parses — every validation scenario, resolved by run alone") {
  int n = 0;
  for (const char* file :
       {"cases.jsonl", "cases-2.jsonl", "cases-3.jsonl", "cases-4.jsonl", "cases-5.jsonl", "allocator.jsonl"}) {
    std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR "/validation/") + file);
    REQUIRE(in);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const json c = json::parse(line);
      if (!c.contains("scenario") || c.contains("unexpressible")) continue;  // no gpuplan scenario
      const json& j = c["scenario"];
      CAPTURE(c.value("id", std::string{}));
      const io::scenario_input parsed = io::parse_scenario(j);
      const scenario& s = parsed.settings;
      // What the file leaves out stays unset until run resolves it.
      CHECK(s.prec.has_value() == j.contains("precision"));
      CHECK(s.ckpt.has_value() == j.contains("checkpointing"));
      const bool tp_given = j.contains("parallel") && j["parallel"].contains("tp");
      const bool sp_given = j.contains("parallel") && j["parallel"].contains("sp");
      CHECK(s.parallel.tp.has_value() == tp_given);
      CHECK(s.parallel.sp.has_value() == sp_given);
      const run resolved(parsed.model, s);
      CHECK(resolved.settings() == io::read_scenario(j).settings());
      CHECK(resolved.settings().prec.has_value());
      CHECK(resolved.settings().parallel.tp.has_value());
      CHECK(resolved.settings().parallel.sp.has_value());
      // Written back, every default is explicit and reads back to the same run.
      CHECK(io::read_scenario(io::write_scenario(io::read_scenario(j))).settings() == resolved.settings());
      ++n;
    }
  }
  CHECK(n >= 150);  // 213 rows, 17 unexpressible
}
