// framework.hpp — the run the user will launch: each framework's recipe defaults,
// what it keeps on the GPU and how fast its kernels are.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "gpuplan/framework.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/timing.hpp"

using namespace gpuplan;
using nlohmann::json;

TEST_CASE("framework: one profile per framework, found by id") {
  for (const auto& e : kFrameworkNames) CHECK(profile_of(e.value).id == e.value);
  CHECK(to_string(framework::deepspeed) == "deepspeed");
  CHECK(from_string<framework>("unsloth") == framework::unsloth);
}

TEST_CASE("framework: checkpointing defaults to the framework's recipe; an explicit value wins") {
  const architecture& m = io::find_model("llama-2-7b");
  const gpu_spec g = io::find_gpu("a100-80gb");
  // PEFT/TRL QLoRA and LoRA recipes checkpoint; a plain Trainer full fine-tune does not.
  CHECK(run(m, scenario{.meth = method::qlora, .gpu = g}).settings().ckpt == checkpointing::full);
  CHECK(run(m, scenario{.meth = method::lora, .gpu = g}).settings().ckpt == checkpointing::full);
  CHECK(run(m, scenario{.meth = method::full, .gpu = g}).settings().ckpt == checkpointing::none);
  // torchtune's full fine-tuning recipes checkpoint; Megatron recomputes selectively.
  CHECK(run(m, scenario{.fw = framework::torchtune, .gpu = g}).settings().ckpt == checkpointing::full);
  CHECK(run(m, scenario{.fw = framework::megatron, .gpu = g}).settings().ckpt == checkpointing::selective);
  CHECK(run(m, scenario{.meth = method::qlora, .ckpt = checkpointing::none, .gpu = g}).settings().ckpt == checkpointing::none);
}

TEST_CASE("framework: the reader's defaults — fp16 AMP without bf16 tensor cores, SP with TP in Megatron") {
  const auto t4 = io::read_scenario(json{{"model", "llama-2-7b"}, {"gpu", "t4"}, {"method", "qlora"}});
  CHECK(t4.settings().prec == precision::fp16_mixed);
  const auto explicit_bf16 = io::read_scenario(json{{"model", "llama-2-7b"}, {"gpu", "t4"}, {"precision", "bf16-mixed"}, {"method", "qlora"}});
  CHECK(explicit_bf16.settings().prec == precision::bf16_mixed);
  const json tp8 = {{"model", "llama-2-70b"}, {"gpu", "h100-sxm"}, {"num_gpus", 8}, {"parallel", {{"tp", 8}}}};
  CHECK_FALSE(io::read_scenario(tp8).settings().parallel.sp);  // an HF user's TP has no SP
  json mega = tp8;
  mega["framework"] = "megatron";
  CHECK(io::read_scenario(mega).settings().parallel.sp);
  mega["parallel"]["sp"] = false;
  CHECK_FALSE(io::read_scenario(mega).settings().parallel.sp);
  // The writer records the framework and the resolved checkpointing.
  const json w = io::write_scenario(io::read_scenario(mega));
  CHECK(w["framework"] == "megatron");
  CHECK(w["checkpointing"] == "selective");
}

TEST_CASE("framework: the common free-notebook recipes fit with the hf defaults") {
  // 7B QLoRA on a 16 GB T4 at seq 512 and 1024; 13B QLoRA on a 24 GB card at seq 2048.
  for (std::int64_t seq : {512, 1024}) {
    CAPTURE(seq);
    const auto r = io::read_scenario(json{{"model", "llama-2-7b"}, {"gpu", "t4"}, {"method", "qlora"}, {"seq_len", seq}});
    CHECK(estimate_memory(r.run).fits);
  }
  const auto r = io::read_scenario(json{{"model", "llama-2-13b"}, {"gpu", "rtx-4090"}, {"method", "qlora"}, {"seq_len", 2048}});
  CHECK(estimate_memory(r.run).fits);
}

TEST_CASE("framework: FSDP keeps 16 bytes per parameter of sharded model states, DeepSpeed 18 (+ gathered layer)") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s{.prec = precision::bf16_mixed, .seq_len = 512, .fw = framework::fsdp, .ckpt = checkpointing::full,
             .gpu = io::find_gpu("a100-80gb"), .num_gpus = 8};
  s.parallel.zero = 3;
  const double psi = static_cast<double>(count_parameters(m).total);
  auto states = [&](const memory_breakdown& b) { return in_bytes(b.weights + b.master_weights + b.gradients + b.optimizer); };
  // FSDP mixed precision: fp32 shard (the master) + fp32 gradient shard + Adam moments = 16 B/param / 8.
  CHECK(states(estimate_memory(m, s)) == doctest::Approx(16 * psi / 8).epsilon(1e-6));
  s.fw = framework::deepspeed;  // estimate_zero3_model_states_mem_needs: 4 x largest layer + 18 Psi / N
  const double largest = static_cast<double>(count_parameters(m).largest_layer);
  CHECK(states(estimate_memory(m, s)) == doctest::Approx(4 * largest + 18 * psi / 8).epsilon(1e-6));
}

TEST_CASE("framework: LLM.int8 matmuls are slower than 16-bit ones; fused frameworks skip the eager factor") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s{.meth = method::qlora, .seq_len = 1024, .gpu = io::find_gpu("a100-80gb")};
  s.quant = quantization{.weights = dtype::nf4};
  const double nf4 = in_seconds(estimate_time(m, s).step);
  s.quant = quantization{.weights = dtype::int8};
  const double int8 = in_seconds(estimate_time(m, s).step);
  CHECK(int8 > 1.5 * nf4);  // bitsandbytes issues #465, #181: 2-3x
  scenario f{.seq_len = 2048, .gpu = io::find_gpu("a100-80gb")};
  const double eager = in_seconds(estimate_time(m, f).step);
  f.fw = framework::megatron;
  f.ckpt = checkpointing::none;
  CHECK(in_seconds(estimate_time(m, f).step) < eager);
}
