// The plan exported as the config that launches it (include/gpuplan/io/export.hpp):
// each export is parsed (nlohmann::json for DeepSpeed; a line reader for the YAML and
// the command lines) and its keys are checked against the layout it was written from.
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/io/export.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/plan/search.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_export {

namespace {

using namespace gpuplan;
using nlohmann::json;

io::resolved_run make_run(const json& j) { return io::read_scenario(j); }

// A training run of `model` on `gpus` x `gpu`; `extra` adds or overrides scenario keys.
io::resolved_run run_on(const char* model, const char* gpu, int gpus, const json& extra = json::object()) {
  json j{{"model", model}, {"gpu", gpu}, {"num_gpus", gpus}};
  j.update(extra);
  return make_run(j);
}

// export_config refuses the layout for `target` with a one-line config_error naming
// --export and containing `expected`.
void check_refused(const io::resolved_run& run, const layout& l, io::export_target target, const std::string& expected) {
  CAPTURE(expected);
  try {
    (void)io::export_config(run, l, target, "--export");
    FAIL("expected a config_error");
  } catch (const config_error& e) {
    const std::string what = e.what();
    CHECK(what.rfind("--export: ", 0) == 0);
    CHECK(what.find(expected) != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
  }
}

// Top-level and nested "key: value" pairs of the flat YAML the writers print
// ("fsdp_config.fsdp_sharding_strategy" for a nested key); comments and list items skipped.
std::map<std::string, std::string> yaml_keys(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string parent;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const bool nested = line.rfind("  ", 0) == 0;
    const std::string body = nested ? line.substr(2) : line;
    if (body.rfind("- ", 0) == 0) continue;
    const auto colon = body.find(':');
    REQUIRE(colon != std::string::npos);
    const std::string key = body.substr(0, colon);
    std::string value = colon + 1 < body.size() ? body.substr(colon + 2) : "";
    if (const auto hash = value.find("  #"); hash != std::string::npos) value = value.substr(0, hash);
    if (!nested) parent = key;
    out[nested ? parent + "." + key : key] = value;
  }
  return out;
}

// "--flag value" and "key=value" arguments of a command line; a flag without a value maps to "".
std::map<std::string, std::string> args_of(const std::string& command) {
  std::istringstream in(command);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("--", 0) == 0) {
      const bool has_value = i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0;
      out[w] = has_value ? words[i + 1] : "";
      if (has_value) ++i;
    } else if (const auto eq = w.find('='); eq != std::string::npos) {
      out[w.substr(0, eq)] = w.substr(eq + 1);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("export: DeepSpeed JSON carries the layout's ZeRO stage, offload and batch") {
  // 8 × A100 for llama-2-7b full fine-tuning; a hand-written layout: ZeRO-3, optimizer
  // and parameters on the CPU, micro-batch 4 × grad-accum 2 × dp 8 = 64.
  const auto run = run_on("llama-2-7b", "a100-80gb", 8);
  layout l{.gpus = 8, .ckpt = checkpointing::full, .zero = 3, .offload_optimizer = offload::cpu,
           .offload_params = offload::cpu, .micro_batch = 4, .grad_accum = 2};
  const json j = json::parse(io::export_config(run, l, io::export_target::deepspeed));
  CHECK(j.at("zero_optimization").at("stage") == 3);
  CHECK(j.at("zero_optimization").at("offload_optimizer").at("device") == "cpu");
  CHECK(j.at("zero_optimization").at("offload_param").at("device") == "cpu");
  CHECK(j.at("train_micro_batch_size_per_gpu") == 4);
  CHECK(j.at("gradient_accumulation_steps") == 2);
  CHECK(j.at("train_batch_size") == 4 * 2 * 8);  // mb × ga × dp
  CHECK(j.at("bf16").at("enabled") == true);     // bf16-mixed is the scenario default
  CHECK(j.at("fp16").at("enabled") == false);
  CHECK(j.contains("activation_checkpointing"));
  CHECK(j.at("gradient_clipping") == 1.0);
  // ZeRO-Offload needs DeepSpeed's own CPU optimizer: the config builds it (a client
  // optimizer raises ZeRORuntimeException, runtime/engine.py _configure_optimizer).
  CHECK(j.at("optimizer").at("type") == "AdamW");
  CHECK(j.at("optimizer").at("params").at("lr").get<double>() > 0);
  // An optimizer DeepSpeed does not build cannot be offloaded.
  const auto bnb = run_on("llama-2-7b", "a100-80gb", 8, {{"optimizer", "adamw-8bit"}});
  check_refused(bnb, l, io::export_target::deepspeed, "optimizer adamw-8bit with ZeRO-Offload");

  // ZeRO-1 without offload: no offload sections, no checkpointing section.
  l.zero = 1;
  l.offload_optimizer = l.offload_params = offload::none;
  l.ckpt = checkpointing::none;
  const json j1 = json::parse(io::export_config(run, l, io::export_target::deepspeed));
  CHECK(j1.at("zero_optimization").at("stage") == 1);
  CHECK_FALSE(j1.at("zero_optimization").contains("offload_optimizer"));
  CHECK_FALSE(j1.at("zero_optimization").contains("offload_param"));
  CHECK_FALSE(j1.contains("activation_checkpointing"));
}

TEST_CASE("export: the first-ranked search layout, exported to DeepSpeed, keeps mb × ga × dp = global batch") {
  // llama-2-7b on 8 × A100 under the DeepSpeed profile (data parallel only), global batch 64.
  const auto run = run_on("llama-2-7b", "a100-80gb", 8, {{"framework", "deepspeed"}});
  search_options o;
  o.global_batch = 64;
  o.top_k = 1;
  const search_result r = search(run.run, o);
  REQUIRE_FALSE(r.rows.empty());
  const layout& best = r.rows.front().config;
  const json j = json::parse(io::export_config(run, best, io::export_target::deepspeed));
  CHECK(j.at("train_batch_size") == 64);
  CHECK(j.at("train_micro_batch_size_per_gpu").get<std::int64_t>() * j.at("gradient_accumulation_steps").get<std::int64_t>() *
            best.dp() ==
        64);
  CHECK(j.at("zero_optimization").at("stage") == best.zero);
  CHECK(j.at("zero_optimization").contains("offload_optimizer") == (best.offload_optimizer != offload::none));
}

TEST_CASE("export: accelerate YAML: FSDP2 resharding for ZeRO-2/3, DDP for ZeRO-0, multi-node placeholders") {
  const auto run = run_on("llama-2-13b", "a100-80gb", 16);
  // Two 8-GPU nodes (gpus_per_node default 8).
  layout l{.gpus = 16, .ckpt = checkpointing::full, .micro_batch = 2, .grad_accum = 4};
  for (const int zero : {2, 3}) {
    CAPTURE(zero);
    l.zero = zero;
    const std::string text = io::export_config(run, l, io::export_target::accelerate_fsdp);
    const auto y = yaml_keys(text);
    CHECK(y.at("distributed_type") == "FSDP");
    CHECK(y.at("fsdp_config.fsdp_version") == "2");
    CHECK(y.at("fsdp_config.fsdp_reshard_after_forward") == (zero == 3 ? "true" : "false"));
    CHECK(y.at("fsdp_config.fsdp_offload_params") == "false");
    CHECK(y.at("fsdp_config.fsdp_activation_checkpointing") == "true");
    // The Trainer refuses --gradient_checkpointing beside FSDP's own checkpointing.
    CHECK(text.find("--gradient_checkpointing") == std::string::npos);
    CHECK(y.at("mixed_precision") == "bf16");
    CHECK(y.at("num_processes") == "16");  // the total over both machines
    CHECK(y.at("num_machines") == "2");    // 16 GPUs / 8 per node
    CHECK(y.at("main_process_ip") == "FILL_IN_MAIN_NODE_IP");
    CHECK(y.at("main_process_port") == "29500");
  }
  l.zero = 3;
  l.offload_optimizer = l.offload_params = offload::cpu;
  const io::launch_config offloaded = io::export_launch(run, l, io::export_target::accelerate_fsdp);
  CHECK(yaml_keys(offloaded.text).at("fsdp_config.fsdp_offload_params") == "true");
  CHECK(offloaded.fill_in.size() == 3);  // main_process_ip, machine_rank, train.py
  CHECK(offloaded.checked_against.rfind("accelerate ", 0) == 0);
  // ZeRO-0 is plain DDP: no FSDP section, checkpointing through the Trainer's flag.
  l.zero = 0;
  l.offload_optimizer = l.offload_params = offload::none;
  const std::string ddp = io::export_config(run, l, io::export_target::accelerate_fsdp);
  CHECK(yaml_keys(ddp).at("distributed_type") == "MULTI_GPU");
  CHECK(yaml_keys(ddp).count("fsdp_config.fsdp_version") == 0);
  CHECK(ddp.find("--gradient_checkpointing") != std::string::npos);
}

TEST_CASE("export: layouts a target cannot express are one-line errors naming --export and the element") {
  const auto run = run_on("llama-2-13b", "a100-80gb", 8);
  const layout tp{.gpus = 8, .tp = 2}, pp{.gpus = 8, .pp = 4}, z1{.gpus = 8, .zero = 1}, z3{.gpus = 8, .zero = 3};
  check_refused(run, tp, io::export_target::deepspeed, "deepspeed cannot express tensor parallelism (tp=2)");
  check_refused(run, tp, io::export_target::accelerate_fsdp, "tensor parallelism (tp=2)");
  check_refused(run, tp, io::export_target::axolotl, "tensor parallelism (tp=2)");
  check_refused(run, pp, io::export_target::accelerate_fsdp, "accelerate-fsdp cannot express pipeline parallelism (pp=4)");
  check_refused(run, z1, io::export_target::accelerate_fsdp, "ZeRO stage 1");
  check_refused(run, z3, io::export_target::torchrun, "ZeRO stage 3");
  check_refused(run, z3, io::export_target::vllm, "vllm cannot express a training run");
  CHECK_THROWS_WITH_AS(io::parse_export_target("megatron", "--export"), doctest::Contains("--export: must be deepspeed"),
                       config_error);
  try {
    (void)io::parse_export_target("nope", "--export");
  } catch (const config_error& e) {
    CHECK(e.kind() == error_kind::unknown_name);
  }
}

TEST_CASE("export: torchrun carries Megatron-LM's tp, pp, virtual stages, sp and batch") {
  // llama-2-70b (80 layers) on 64 × H100: tp 8 × pp 4 × dp 2, 5 virtual stages per rank
  // -> 80 / (4 × 5) = 4 layers per virtual stage; global batch 1 × 16 × 2 = 32.
  const auto run = run_on("llama-2-70b", "h100-sxm", 64, {{"framework", "megatron"}});
  const layout l{.gpus = 64, .tp = 8, .pp = 4, .virtual_stages = 5, .sp = true, .ckpt = checkpointing::selective,
                 .zero = 1, .micro_batch = 1, .grad_accum = 16};
  const std::string cmd = io::export_config(run, l, io::export_target::torchrun);
  // validate_args refuses tensor parallelism without CUDA_DEVICE_MAX_CONNECTIONS=1.
  CHECK(cmd.rfind("CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun ", 0) == 0);
  const auto a = args_of(cmd);
  CHECK(a.at("--nnodes") == "8");  // 64 GPUs / 8 per node
  CHECK(a.at("--nproc_per_node") == "8");
  CHECK(a.at("--tensor-model-parallel-size") == "8");
  CHECK(a.at("--pipeline-model-parallel-size") == "4");
  CHECK(a.at("--num-virtual-stages-per-pipeline-rank") == "5");
  CHECK(a.at("--rdzv_endpoint") == "$MASTER_ADDR:29500");
  CHECK(a.count("--sequence-parallel") == 1);
  CHECK(a.at("--micro-batch-size") == "1");
  CHECK(a.at("--global-batch-size") == "32");
  CHECK(a.at("--recompute-granularity") == "selective");
  CHECK(a.count("--use-distributed-optimizer") == 1);
  CHECK(a.at("--num-layers") == "80");
  CHECK(a.at("--num-query-groups") == "8");  // llama-2-70b: 8 KV heads
  // Llama's architecture, not Megatron's GPT defaults (LayerNorm, GELU, learned positions, biases).
  for (const char* flag : {"--swiglu", "--disable-bias-linear", "--untie-embeddings-and-output-weights"}) CHECK(a.count(flag) == 1);
  CHECK(a.at("--normalization") == "RMSNorm");
  CHECK(a.at("--position-embedding-type") == "rope");
  CHECK(a.at("--padded-vocab-size") == "32000");
  CHECK(a.at("--tokenizer-model") == "meta-llama/Llama-2-70b-hf");
  CHECK(a.count("--account-for-embedding-in-pipeline-split") == 0);
  // The scenario's Megatron split flags travel with a pipelined layout: (80 + 1 + 1) / 2 = 41 units per stage.
  const auto split = run_on("llama-2-70b", "h100-sxm", 64,
                            {{"framework", "megatron"},
                             {"parallel", {{"account_for_embedding_in_pipeline_split", true},
                                           {"account_for_loss_in_pipeline_split", true}}}});
  const auto b = args_of(io::export_config(split, layout{.gpus = 64, .tp = 8, .pp = 2, .zero = 1, .grad_accum = 16},
                                           io::export_target::torchrun));
  CHECK(b.count("--account-for-embedding-in-pipeline-split") == 1);
  CHECK(b.count("--account-for-loss-in-pipeline-split") == 1);
}

TEST_CASE("export: torchtune recipe and overrides follow the method and the GPU count") {
  // One GPU, QLoRA: the single-device LoRA recipe with the qlora config.
  const auto one = run_on("llama-3.1-8b", "rtx-4090", 1, {{"method", "qlora"}, {"micro_batch", 2}, {"grad_accum", 8}, {"seq_len", 1024}});
  const std::string c1 = io::export_config(one, io::export_target::torchtune);
  CHECK(c1.find("tune run lora_finetune_single_device --config llama3_1/8B_qlora_single_device") == 0);
  const auto a1 = args_of(c1);
  CHECK(a1.at("batch_size") == "2");
  CHECK(a1.at("gradient_accumulation_steps") == "8");
  CHECK(a1.at("enable_activation_checkpointing") == "True");  // PEFT default: full checkpointing
  CHECK(a1.at("tokenizer.max_seq_len") == "1024");
  CHECK(a1.at("dtype") == "bf16");
  CHECK(a1.at("model.lora_rank") == "8");
  CHECK(a1.at("'model.lora_attn_modules") == "[q_proj,v_proj]'");  // PEFT's default targets q, v
  CHECK(a1.at("model.apply_lora_to_mlp") == "False");
  CHECK(a1.count("fsdp_cpu_offload") == 0);

  // Four GPUs, full fine-tuning with FSDP full shard and CPU offload.
  const auto four = run_on("llama-2-7b", "a100-80gb", 4,
                           {{"framework", "torchtune"},
                            {"parallel", {{"zero", 3}, {"offload_optimizer", "cpu"}, {"offload_params", "cpu"}}}});
  const std::string c4 = io::export_config(four, io::export_target::torchtune);
  CHECK(c4.find("tune run --nproc_per_node 4 full_finetune_distributed --config llama2/7B_full ") == 0);
  CHECK(args_of(c4).at("fsdp_cpu_offload") == "True");

  // Four GPUs at ZeRO-0 (DDP): torchtune's distributed recipes always shard.
  const auto ddp = run_on("llama-2-7b", "a100-80gb", 4);
  CHECK_THROWS_WITH_AS(io::export_config(ddp, io::export_target::torchtune, "--export"),
                       doctest::Contains("ZeRO stage 0 on 4 GPUs"), config_error);
}

TEST_CASE("export: axolotl YAML carries adapter, batch and the DeepSpeed stage") {
  const auto run = run_on("llama-2-13b", "a100-80gb", 2,
                          {{"method", "qlora"}, {"lora", {{"rank", 16}, {"alpha", 32}, {"targets", "all-linear"}}},
                           {"parallel", {{"zero", 2}}}, {"micro_batch", 4}, {"grad_accum", 4}});
  const auto y = yaml_keys(io::export_config(run, io::export_target::axolotl));
  CHECK(y.at("base_model") == "meta-llama/Llama-2-13b-hf");
  CHECK(y.at("adapter") == "qlora");
  CHECK(y.at("load_in_4bit") == "true");
  CHECK(y.at("lora_r") == "16");
  CHECK(y.at("lora_alpha") == "32");
  CHECK(y.at("lora_target_linear") == "true");
  CHECK(y.at("micro_batch_size") == "4");
  CHECK(y.at("gradient_accumulation_steps") == "4");
  CHECK(y.at("sequence_len") == "2048");
  CHECK(y.at("bf16") == "true");
  CHECK(y.at("gradient_checkpointing") == "true");
  CHECK(y.at("learning_rate") == "0.0002");
  CHECK(y.at("attn_implementation") == "flash_attention_2");
  CHECK(y.count("flash_attention") == 0);  // deprecated for attn_implementation
  // DeepSpeed inline (a JSON object is a YAML flow mapping), never a path inside axolotl's repository.
  const json ds = json::parse(y.at("deepspeed"));
  CHECK(ds.at("zero_optimization").at("stage") == 2);
  CHECK_FALSE(ds.at("zero_optimization").contains("offload_optimizer"));
  CHECK(ds.at("train_micro_batch_size_per_gpu") == "auto");  // the HF integration fills it from axolotl's keys
}

TEST_CASE("export: axolotl YAML carries tiled_mlp and Liger's fused linear cross-entropy") {
  const auto plain = run_on("llama-2-13b", "a100-80gb", 1, {{"method", "qlora"}});
  const auto p = yaml_keys(io::export_config(plain, io::export_target::axolotl));
  CHECK(p.count("tiled_mlp") == 0);
  CHECK(p.count("plugins") == 0);
  CHECK(p.count("liger_fused_linear_cross_entropy") == 0);
  const auto run = run_on("llama-2-13b", "a100-80gb", 1, {{"method", "qlora"}, {"tiled_mlp", true}, {"fused_linear_loss", true}});
  const std::string text = io::export_config(run, io::export_target::axolotl);
  const auto y = yaml_keys(text);
  CHECK(y.at("tiled_mlp") == "true");
  CHECK(y.at("liger_fused_linear_cross_entropy") == "true");
  CHECK(text.find("plugins:\n  - axolotl.integrations.liger.LigerPlugin\n") != std::string::npos);
}

TEST_CASE("export: vllm serve arguments for a serving run") {
  // llama-2-70b on 4 GPUs at tp 4, fp8 KV cache; max model len = prompt 1000 + gen 24.
  const auto run = run_on("llama-2-70b", "h100-sxm", 4,
                          {{"workload", "infer"}, {"parallel", {{"tp", 4}}},
                           {"inference", {{"batch", 32}, {"prompt_len", 1000}, {"gen_len", 24}, {"kv_cache_dtype", "fp8"}}}});
  const std::string cmd = io::export_config(run, io::export_target::vllm);
  CHECK(cmd.rfind("vllm serve meta-llama/Llama-2-70b-hf ", 0) == 0);
  const auto a = args_of(cmd);
  CHECK(a.at("--tensor-parallel-size") == "4");
  CHECK(a.at("--max-model-len") == "1024");
  CHECK(a.at("--gpu-memory-utilization") == "0.9");
  CHECK(a.at("--kv-cache-dtype") == "fp8");
  CHECK(a.at("--max-num-seqs") == "32");
  CHECK(a.count("--quantization") == 0);
  CHECK(a.count("--data-parallel-size") == 0);
  // A training run cannot be served; a serving run cannot be trained.
  const auto train = make_run(json{{"model", "llama-2-7b"}});
  CHECK_THROWS_AS(io::export_config(train, io::export_target::vllm), config_error);
  CHECK_THROWS_WITH_AS(io::export_config(run, io::export_target::deepspeed, "--export"),
                       doctest::Contains("a serving run"), config_error);
}

TEST_CASE("export: hostile requests are one-line errors") {
  // Empty and near-miss target names.
  for (const char* name : {"", "DeepSpeed ", "accelerate", "vllm\n"}) {
    CAPTURE(name);
    CHECK_THROWS_AS((void)io::parse_export_target(name, "--export"), config_error);
  }
  // 9 GPUs at 8 per node: 2 nodes cannot start the same count each (9 = 2 × 4.5).
  const auto run = run_on("gpt2", "a100-80gb", 9, {{"seq_len", 1024}, {"framework", "megatron"}});
  check_refused(run, layout{.gpus = 9}, io::export_target::torchrun, "9 GPUs on 2 nodes");
  const auto llama = run_on("llama-2-7b", "a100-80gb", 9, {{"framework", "torchtune"}});
  check_refused(llama, layout{.gpus = 9, .zero = 3}, io::export_target::torchtune, "9 GPUs on 2 nodes");
  // Methods a launcher has no recipe for.
  const auto ia3 = make_run(json{{"model", "gpt2"}, {"seq_len", 1024}, {"method", "ia3"}});
  CHECK_THROWS_WITH_AS(io::export_config(ia3, io::export_target::axolotl, "--export"), doctest::Contains("method ia3"),
                       config_error);
  CHECK_THROWS_WITH_AS(io::export_config(ia3, io::export_target::torchrun, "--export"), doctest::Contains("method ia3"),
                       config_error);
}

}  // namespace unit_export
