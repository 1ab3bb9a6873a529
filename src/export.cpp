// export.cpp — the writers of io/export.hpp: one function per launcher, each from
// the resolved run and the chosen layout to the text the launcher reads.
#include "gpuplan/io/export.hpp"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::io {

namespace {

using detail::fail;

std::string num(std::int64_t v) { return std::to_string(v); }
std::string num(double v) { return detail::num(v); }

// One checker per export: "<path>: <target> cannot express <element> (<value>)<hint>".
struct checker {
  const std::string& path;
  std::string_view target;
  [[noreturn]] void cannot(const std::string& element, const std::string& hint = "") const {
    fail(path, std::string(target) + " cannot express " + element + hint);
  }
};

bool is_lora_like(method m) { return m == method::lora || m == method::qlora || m == method::dora; }

// Training exports: the workload must be training, and data parallel only (no TP/PP/SP)
// for the ZeRO/FSDP launchers.
void require_training(const checker& c, const scenario& s) {
  if (s.work != workload::train)
    c.cannot("a serving run (workload infer)", ": use --export vllm");
}
void require_data_parallel(const checker& c, const layout& l) {
  if (l.tp > 1) c.cannot("tensor parallelism (tp=" + num(std::int64_t{l.tp}) + ")", ": use --export torchrun (Megatron-LM)");
  if (l.pp > 1) c.cannot("pipeline parallelism (pp=" + num(std::int64_t{l.pp}) + ")", ": use --export torchrun (Megatron-LM)");
}
void require_no_selective(const checker& c, const layout& l) {
  if (l.ckpt == checkpointing::selective) c.cannot("selective activation checkpointing", ": only none or full");
}

std::string yaml_bool(bool b) { return b ? "true" : "false"; }

// ---- DeepSpeed -------------------------------------------------------------------------
// Keys: deepspeed/runtime/constants.py (train_batch_size, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps, gradient_clipping, bf16/fp16 "enabled"),
// deepspeed/runtime/zero/config.py (zero_optimization: stage, offload_optimizer,
// offload_param, overlap_comm, contiguous_gradients), zero/offload_config.py (device
// "cpu"/"nvme", pin_memory, nvme_path) and deepspeed/runtime/activation_checkpointing/config.py.
std::string deepspeed_json(const resolved_run& run, const layout& l, const checker& c) {
  const scenario& s = run.settings();
  require_training(c, s);
  require_data_parallel(c, l);
  require_no_selective(c, l);
  if (s.prec == precision::fp8_mixed) c.cannot("fp8-mixed precision", ": DeepSpeed's config has bf16 and fp16 only");
  nlohmann::ordered_json j;
  j["train_batch_size"] = l.micro_batch * l.grad_accum * l.dp();  // DeepSpeed asserts mb × ga × dp == this (runtime/config.py)
  j["train_micro_batch_size_per_gpu"] = l.micro_batch;
  j["gradient_accumulation_steps"] = l.grad_accum;
  j["gradient_clipping"] = 1.0;  // the HF Trainer's max_grad_norm default (TrainingArguments)
  const bool bf16 = s.prec == precision::bf16_mixed || s.prec == precision::bf16_pure;
  j["bf16"] = {{"enabled", bf16}};
  j["fp16"] = {{"enabled", s.prec == precision::fp16_mixed}};
  nlohmann::ordered_json z;
  z["stage"] = l.zero;
  auto device = [](offload o) { return o == offload::nvme ? "nvme" : "cpu"; };
  if (l.offload_optimizer != offload::none) {
    z["offload_optimizer"] = {{"device", device(l.offload_optimizer)}, {"pin_memory", true}};
    if (l.offload_optimizer == offload::nvme) z["offload_optimizer"]["nvme_path"] = "/local_nvme";
  }
  if (l.offload_params != offload::none) {
    z["offload_param"] = {{"device", device(l.offload_params)}, {"pin_memory", true}};
    if (l.offload_params == offload::nvme) z["offload_param"]["nvme_path"] = "/local_nvme";
  }
  z["overlap_comm"] = l.zero >= 2;  // DeepSpeed's ZeRO tutorial configs overlap reduction with backward at stages 2-3
  z["contiguous_gradients"] = l.zero >= 2;
  j["zero_optimization"] = z;
  // The section configures deepspeed.checkpointing; the model enables checkpointing
  // itself (HF: gradient_checkpointing=True).
  if (l.ckpt == checkpointing::full)
    j["activation_checkpointing"] = {{"partition_activations", false},
                                     {"cpu_checkpointing", s.activation_offload},
                                     {"contiguous_memory_optimization", false}};
  return j.dump(2) + "\n";
}

// ---- accelerate FSDP -------------------------------------------------------------------
// Keys: accelerate docs/source/usage_guides/fsdp.md and src/accelerate/commands/config/
// cluster.py (FSDP questions): fsdp_sharding_strategy FULL_SHARD / SHARD_GRAD_OP / NO_SHARD
// (torch ShardingStrategy), fsdp_offload_params, fsdp_auto_wrap_policy, fsdp_activation_checkpointing.
std::string accelerate_fsdp_yaml(const resolved_run& run, const layout& l, const checker& c) {
  const scenario& s = run.settings();
  require_training(c, s);
  require_data_parallel(c, l);
  require_no_selective(c, l);
  const char* strategy = nullptr;
  switch (l.zero) {
    case 0: strategy = "NO_SHARD"; break;
    case 2: strategy = "SHARD_GRAD_OP"; break;
    case 3: strategy = "FULL_SHARD"; break;
    default: c.cannot("ZeRO stage 1 (optimizer-only sharding)", ": FSDP shards none, gradients and optimizer, or everything");
  }
  // torch CPUOffload(offload_params=True) moves parameters, gradients and the optimizer step together.
  if (l.offload_optimizer != l.offload_params)
    c.cannot("optimizer offload without parameter offload", ": FSDP offloads both or neither");
  if (l.offload_params == offload::nvme) c.cannot("NVMe offload", ": FSDP offloads to CPU memory only");
  const std::string mixed = s.prec == precision::bf16_mixed || s.prec == precision::bf16_pure ? "bf16"
                            : s.prec == precision::fp16_mixed                                 ? "fp16"
                            : s.prec == precision::fp8_mixed                                  ? "fp8"
                                                                                              : "'no'";
  const int gpn = std::max(1, s.cluster.gpus_per_node);
  const int machines = (l.gpus + gpn - 1) / gpn;
  std::string t;
  t += "# accelerate launch --config_file fsdp.yaml train.py --per_device_train_batch_size " + num(l.micro_batch) +
       " --gradient_accumulation_steps " + num(l.grad_accum) + (l.ckpt == checkpointing::full ? " --gradient_checkpointing" : "") +
       "\n";
  t += "# global batch " + num(l.micro_batch * l.grad_accum * l.dp()) + " = micro-batch " + num(l.micro_batch) +
       " x grad accumulation " + num(l.grad_accum) + " x " + num(std::int64_t{l.dp()}) + " processes\n";
  t += "compute_environment: LOCAL_MACHINE\n";
  t += "debug: false\n";
  t += "distributed_type: FSDP\n";
  t += "downcast_bf16: 'no'\n";
  t += "fsdp_config:\n";
  t += "  fsdp_activation_checkpointing: " + yaml_bool(l.ckpt == checkpointing::full) + "\n";
  t += "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
  t += "  fsdp_backward_prefetch: BACKWARD_PRE\n";
  t += "  fsdp_cpu_ram_efficient_loading: true\n";
  t += "  fsdp_offload_params: " + yaml_bool(l.offload_params == offload::cpu) + "\n";
  t += "  fsdp_sharding_strategy: " + std::string(strategy) + "\n";
  t += "  fsdp_state_dict_type: SHARDED_STATE_DICT\n";
  t += "  fsdp_sync_module_states: true\n";
  t += "  fsdp_use_orig_params: true\n";  // required with frozen (PEFT) parameters
  t += "machine_rank: 0\n";
  t += "main_training_function: main\n";
  t += "mixed_precision: " + mixed + "\n";
  t += "num_machines: " + num(std::int64_t{machines}) + "\n";
  t += "num_processes: " + num(std::int64_t{l.gpus}) + "\n";
  t += "rdzv_backend: static\n";
  t += "same_network: true\n";
  t += "use_cpu: false\n";
  return t;
}

// ---- torchtune ---------------------------------------------------------------------------
// The config of a catalog model as pytorch/torchtune recipes/configs names it:
// llama-3.1-8b -> llama3_1/8B, qwen2.5-7b -> qwen2_5/7B, phi-3-mini -> phi3/mini.
std::string torchtune_model_dir(const std::string& name) {
  const auto dash = name.rfind('-');
  if (dash == std::string::npos || dash == 0) return name;
  std::string family;
  for (const char ch : name.substr(0, dash)) {
    if (ch == '-') continue;
    family += ch == '.' ? '_' : ch;
  }
  std::string size = name.substr(dash + 1);
  if (!size.empty() && size[0] >= '0' && size[0] <= '9')
    for (char& ch : size) ch = static_cast<char>(ch == 'b' ? 'B' : ch);
  return family + "/" + size;
}

// Overrides: recipes/configs/*: batch_size, gradient_accumulation_steps,
// enable_activation_checkpointing, fsdp_cpu_offload, dtype, tokenizer.max_seq_len,
// model.lora_rank, model.lora_alpha; fsdp_reshard_after_forward (recipes/*_distributed.py).
std::string torchtune_command(const resolved_run& run, const layout& l, const checker& c) {
  const scenario& s = run.settings();
  require_training(c, s);
  require_data_parallel(c, l);
  require_no_selective(c, l);
  if (s.meth != method::full && !is_lora_like(s.meth))
    c.cannot("method " + std::string(to_string(s.meth)), ": its recipes are full, LoRA, QLoRA and DoRA fine-tuning");
  const bool single = l.gpus == 1;
  if (!single && l.zero != 2 && l.zero != 3)
    c.cannot("ZeRO stage " + num(std::int64_t{l.zero}) + " on " + num(std::int64_t{l.gpus}) + " GPUs",
             ": its distributed recipes shard with FSDP2 (ZeRO-2 or 3)");
  if (l.offload_optimizer != l.offload_params)
    c.cannot("optimizer offload without parameter offload", ": fsdp_cpu_offload moves both");
  if (l.offload_params == offload::nvme) c.cannot("NVMe offload", ": fsdp_cpu_offload offloads to CPU memory only");
  if (single && l.offload_params != offload::none) c.cannot("CPU offload on one GPU", ": fsdp_cpu_offload is a distributed-recipe option");
  if (s.prec == precision::fp16_mixed || s.prec == precision::fp8_mixed)
    c.cannot(std::string(to_string(s.prec)) + " precision", ": dtype is bf16 or fp32");
  const std::string kind = s.meth == method::full ? "full" : "lora";
  const std::string recipe = kind + "_finetune_" + (single ? "single_device" : "distributed");
  const std::string config_kind = s.meth == method::full ? "full" : s.meth == method::qlora ? "qlora" : "lora";
  const std::string config = torchtune_model_dir(run.model().name) + "_" + config_kind + (single ? "_single_device" : "");
  const bool bf16 = s.prec == precision::bf16_mixed || s.prec == precision::bf16_pure;
  std::string t = "tune run";
  if (!single) {
    const int gpn = std::max(1, s.cluster.gpus_per_node);
    const int nodes = (l.gpus + gpn - 1) / gpn;
    if (l.gpus % nodes != 0)
      c.cannot(num(std::int64_t{l.gpus}) + " GPUs on " + num(std::int64_t{nodes}) + " nodes", ": tune run starts the same count per node");
    if (nodes > 1) t += " --nnodes " + num(std::int64_t{nodes});
    t += " --nproc_per_node " + num(std::int64_t{l.gpus / nodes});
  }
  t += " " + recipe + " --config " + config;
  t += " batch_size=" + num(l.micro_batch);
  t += " gradient_accumulation_steps=" + num(l.grad_accum);
  t += std::string(" enable_activation_checkpointing=") + (l.ckpt == checkpointing::full ? "True" : "False");
  if (!single) {
    t += std::string(" fsdp_cpu_offload=") + (l.offload_params == offload::cpu ? "True" : "False");
    if (l.zero == 2) t += " fsdp_reshard_after_forward=False";  // SHARD_GRAD_OP
  }
  if (s.optimizer_in_backward) t += " optimizer_in_bwd=True";
  t += std::string(" dtype=") + (bf16 ? "bf16" : "fp32");
  t += " tokenizer.max_seq_len=" + num(s.seq_len);
  if (is_lora_like(s.meth)) {
    // lora_attn_modules (q_proj k_proj v_proj output_proj) and apply_lora_to_mlp (all three
    // MLP projections at once): torchtune/models/llama3_1/_model_builders.py lora_llama3_1_8b.
    static constexpr std::array<std::pair<lora_target, std::string_view>, 4> kAttn{
        {{lora_q, "q_proj"}, {lora_k, "k_proj"}, {lora_v, "v_proj"}, {lora_o, "output_proj"}}};
    std::string attn;
    for (const auto& [bit, module] : kAttn)
      if ((s.lora.targets & bit) != 0) attn += (attn.empty() ? "" : ",") + std::string(module);
    const unsigned mlp = s.lora.targets & (lora_gate | lora_up | lora_down);
    if (mlp != 0 && mlp != (lora_gate | lora_up | lora_down))
      c.cannot("LoRA on part of the MLP", ": apply_lora_to_mlp adapts gate, up and down together");
    t += " 'model.lora_attn_modules=[" + attn + "]' model.apply_lora_to_mlp=" + (mlp != 0 ? "True" : "False");
    t += " model.lora_rank=" + num(s.lora.rank) + " model.lora_alpha=" + num(s.lora.alpha);
    if (s.meth == method::dora) t += " model.use_dora=True";
  }
  return t + "\n";
}

// ---- axolotl -----------------------------------------------------------------------------
// Keys: axolotl-ai-cloud/axolotl docs/config.qmd (base_model, adapter, load_in_4bit,
// lora_r, lora_alpha, lora_dropout, lora_target_linear, lora_target_modules,
// peft_use_dora, sequence_len, micro_batch_size, gradient_accumulation_steps,
// gradient_checkpointing, bf16, fp16, tf32, optimizer, flash_attention, deepspeed, fsdp, fsdp_config).
std::string axolotl_optimizer(const scenario& s) {
  switch (s.opt) {  // transformers OptimizerNames (training_args.py), which axolotl's optimizer takes
    case optimizer::adamw: return optimizer_kernel_of(s) == optimizer_kernel::fused ? "adamw_torch_fused" : "adamw_torch";
    case optimizer::adam: return "adamw_torch";
    case optimizer::adamw_8bit: return "adamw_bnb_8bit";
    case optimizer::paged_adamw_8bit: return "paged_adamw_8bit";
    case optimizer::paged_adamw_32bit: return "paged_adamw_32bit";
    case optimizer::sgd:
    case optimizer::sgd_momentum: return "sgd";
    case optimizer::adafactor: return "adafactor";
    case optimizer::lion: return "lion_32bit";
  }
  return "adamw_torch";
}

std::string axolotl_yaml(const resolved_run& run, const layout& l, const checker& c) {
  const scenario& s = run.settings();
  require_training(c, s);
  require_data_parallel(c, l);
  require_no_selective(c, l);
  if (s.meth != method::full && !is_lora_like(s.meth))
    c.cannot("method " + std::string(to_string(s.meth)), ": its adapters are lora and qlora (DoRA through peft_use_dora)");
  if (s.prec == precision::fp8_mixed) c.cannot("fp8-mixed precision", ": bf16, fp16 or fp32");
  const bool fsdp = s.fw == framework::fsdp || s.fw == framework::torchtune;
  std::string t;
  t += "# axolotl train config.yaml  (accelerate launch -m axolotl.cli.train config.yaml on " + num(std::int64_t{l.gpus}) +
       " GPUs)\n";
  t += "base_model: " + launch_model_id(run) + "\n";
  if (is_lora_like(s.meth)) {
    t += std::string("adapter: ") + (s.meth == method::qlora ? "qlora" : "lora") + "\n";
    t += "load_in_4bit: " + yaml_bool(s.meth == method::qlora) + "\n";
    t += "load_in_8bit: false\n";
    t += "lora_r: " + num(s.lora.rank) + "\n";
    t += "lora_alpha: " + num(s.lora.alpha) + "\n";
    t += "lora_dropout: " + num(s.lora.dropout) + "\n";
    const bool all = (s.lora.targets & lora_all_linear) == lora_all_linear;
    t += "lora_target_linear: " + yaml_bool(all) + "\n";
    if (!all) {
      // Llama-style module names (q_proj ... down_proj), as PEFT target_modules.
      static constexpr std::array<std::string_view, 7> kModules{"q_proj", "k_proj", "v_proj", "o_proj",
                                                                "gate_proj", "up_proj", "down_proj"};
      t += "lora_target_modules:\n";
      for (std::size_t i = 0; i < kModules.size(); ++i)
        if ((s.lora.targets >> i) & 1U) t += "  - " + std::string(kModules[i]) + "\n";
    }
    if (s.meth == method::dora) t += "peft_use_dora: true\n";
  }
  t += "sequence_len: " + num(s.seq_len) + "\n";
  t += "micro_batch_size: " + num(l.micro_batch) + "\n";
  t += "gradient_accumulation_steps: " + num(l.grad_accum) + "\n";
  t += "gradient_checkpointing: " + yaml_bool(l.ckpt == checkpointing::full) + "\n";
  t += "bf16: " + yaml_bool(s.prec == precision::bf16_mixed || s.prec == precision::bf16_pure) + "\n";
  t += "fp16: " + yaml_bool(s.prec == precision::fp16_mixed) + "\n";
  t += "tf32: " + yaml_bool(s.prec == precision::tf32) + "\n";
  t += "optimizer: " + axolotl_optimizer(s) + "\n";
  t += "flash_attention: " + yaml_bool(s.attn == attention::flash) + "\n";
  if (fsdp && l.zero > 0) {
    if (l.zero == 1) c.cannot("ZeRO stage 1 with FSDP", ": FSDP shards gradients and optimizer, or everything");
    if (l.offload_optimizer != l.offload_params) c.cannot("optimizer offload without parameter offload", ": FSDP offloads both");
    if (l.offload_params == offload::nvme) c.cannot("NVMe offload with FSDP", "");
    t += "fsdp:\n";
    t += std::string("  - ") + (l.zero == 3 ? "full_shard" : "shard_grad_op") + "\n";
    if (l.offload_params == offload::cpu) t += "  - offload\n";
    t += "  - auto_wrap\n";
    t += "fsdp_config:\n";
    t += "  fsdp_offload_params: " + yaml_bool(l.offload_params == offload::cpu) + "\n";
    t += "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
    t += "  fsdp_use_orig_params: true\n";
  } else if (l.zero > 0 || l.offload_optimizer != offload::none) {
    // axolotl's bundled deepspeed_configs/zero{1,2,3}.json when nothing is offloaded.
    if (l.offload_optimizer == offload::none && l.offload_params == offload::none)
      t += "deepspeed: deepspeed_configs/zero" + num(std::int64_t{l.zero}) + ".json\n";
    else
      t += "deepspeed: ds_config.json  # the same plan with --export deepspeed (ZeRO-" + num(std::int64_t{l.zero}) +
           " with offload)\n";
  }
  return t;
}

// ---- torchrun + Megatron-LM ---------------------------------------------------------------
// Arguments: Megatron-LM megatron/training/arguments.py (--tensor-model-parallel-size,
// --pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-stage,
// --sequence-parallel, --micro-batch-size, --global-batch-size, --recompute-granularity,
// --recompute-method, --recompute-num-layers, --use-distributed-optimizer, --bf16, --fp16,
// --num-layers, --hidden-size, --ffn-hidden-size, --num-attention-heads,
// --group-query-attention, --num-query-groups, --seq-length, --max-position-embeddings).
std::string torchrun_command(const resolved_run& run, const layout& l, const checker& c) {
  const scenario& s = run.settings();
  const architecture& m = run.model();
  require_training(c, s);
  if (s.meth != method::full) c.cannot("method " + std::string(to_string(s.meth)), ": Megatron-LM trains the full model");
  if (l.zero > 1) c.cannot("ZeRO stage " + num(std::int64_t{l.zero}), ": Megatron-LM's distributed optimizer is ZeRO-1");
  if (l.offload_optimizer != offload::none || l.offload_params != offload::none)
    c.cannot("CPU/NVMe offload", ": Megatron-LM keeps the model state on the GPU");
  const int gpn = std::max(1, s.cluster.gpus_per_node);
  const int nodes = (l.gpus + gpn - 1) / gpn;
  if (l.gpus % nodes != 0)
    c.cannot(num(std::int64_t{l.gpus}) + " GPUs on " + num(std::int64_t{nodes}) + " nodes", ": torchrun starts the same count per node");
  std::string t = "torchrun --nnodes " + num(std::int64_t{nodes}) + " --nproc_per_node " + num(std::int64_t{l.gpus / nodes});
  if (nodes > 1) t += " --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:29500";
  t += " pretrain_gpt.py";
  t += " --tensor-model-parallel-size " + num(std::int64_t{l.tp});
  t += " --pipeline-model-parallel-size " + num(std::int64_t{l.pp});
  if (l.virtual_stages > 1)
    t += " --num-layers-per-virtual-pipeline-stage " + num(m.total_layers() / (std::int64_t{l.pp} * l.virtual_stages));
  if (l.sp) t += " --sequence-parallel";
  // The embedding / loss as a layer of the pipeline split (megatron/training/arguments.py).
  if (l.pp > 1 && s.parallel.account_for_embedding_in_pipeline_split) t += " --account-for-embedding-in-pipeline-split";
  if (l.pp > 1 && s.parallel.account_for_loss_in_pipeline_split) t += " --account-for-loss-in-pipeline-split";
  if (l.pp > 1 && s.parallel.first_stage_layers) t += " --decoder-first-pipeline-num-layers " + num(*s.parallel.first_stage_layers);
  if (l.pp > 1 && s.parallel.last_stage_layers) t += " --decoder-last-pipeline-num-layers " + num(*s.parallel.last_stage_layers);
  t += " --micro-batch-size " + num(l.micro_batch);
  t += " --global-batch-size " + num(l.micro_batch * l.grad_accum * l.dp());
  if (l.ckpt == checkpointing::selective) t += " --recompute-granularity selective";
  if (l.ckpt == checkpointing::full) t += " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  if (l.zero == 1) t += " --use-distributed-optimizer";
  if (s.prec == precision::bf16_mixed || s.prec == precision::bf16_pure) t += " --bf16";
  if (s.prec == precision::fp16_mixed) t += " --fp16";
  if (s.prec == precision::fp8_mixed) t += " --bf16 --fp8-format hybrid";
  t += " --num-layers " + num(m.total_layers());
  t += " --hidden-size " + num(m.hidden);
  t += " --ffn-hidden-size " + num(m.ffn);
  t += " --num-attention-heads " + num(m.heads);
  if (m.kv_heads > 0 && m.kv_heads != m.heads) t += " --group-query-attention --num-query-groups " + num(m.kv_heads);
  t += " --seq-length " + num(s.seq_len);
  t += " --max-position-embeddings " + num(std::max(s.seq_len, m.max_positions));
  return t + "\n";
}

// ---- vLLM ----------------------------------------------------------------------------------
// Arguments: vllm/engine/arg_utils.py EngineArgs (--tensor-parallel-size,
// --pipeline-parallel-size, --data-parallel-size, --max-model-len,
// --gpu-memory-utilization, --max-num-seqs, --max-num-batched-tokens, --quantization,
// --kv-cache-dtype auto|fp8).
std::string vllm_command(const resolved_run& run, const checker& c) {
  const scenario& s = run.settings();
  if (s.work != workload::infer) c.cannot("a training run", ": vllm serves a model (workload infer, --infer)");
  const inference_config& inf = s.inference;
  std::string t = "vllm serve " + launch_model_id(run);
  t += " --tensor-parallel-size " + num(std::int64_t{s.parallel.tp});
  if (s.parallel.pp > 1) t += " --pipeline-parallel-size " + num(std::int64_t{s.parallel.pp});
  if (s.dp() > 1) t += " --data-parallel-size " + num(std::int64_t{s.dp()});
  t += " --max-model-len " + num(inf.prompt_len + inf.gen_len);
  t += " --gpu-memory-utilization 0.9";  // vLLM's default (EngineArgs.gpu_memory_utilization)
  t += " --max-num-seqs " + num(inf.batch);
  if (inf.max_batched_tokens > 0) t += " --max-num-batched-tokens " + num(inf.max_batched_tokens);
  const quantization q = base_quantization(s);
  switch (q.weights) {
    case dtype::nf4:
    case dtype::fp4:
    case dtype::int8: t += " --quantization bitsandbytes"; break;
    case dtype::fp8_e4m3: t += " --quantization fp8"; break;
    case dtype::int4: t += " --quantization awq"; break;  // or gptq, as the checkpoint was quantized
    default: break;
  }
  switch (inf.kv_cache_dtype) {
    case dtype::fp8_e4m3: t += " --kv-cache-dtype fp8"; break;
    case dtype::bf16:
    case dtype::fp16: break;  // auto: the model's dtype
    default: c.cannot("a " + std::string(to_string(inf.kv_cache_dtype)) + " KV cache", ": --kv-cache-dtype is auto or fp8");
  }
  return t + "\n";
}

}  // namespace

export_target parse_export_target(std::string_view name, const std::string& path) {
  if (const auto t = from_string<export_target>(name)) return *t;
  fail(path, "must be " + name_list<export_target>(", ") + " (got '" + std::string(name) + "')", error_kind::unknown_name);
}

std::string launch_model_id(const resolved_run& run) {
  if (const auto ids = model_hub_ids(run.model_spec); !ids.empty()) return ids.front();
  if (const auto ids = model_hub_ids(run.model().name); !ids.empty()) return ids.front();
  const std::string& spec = run.model_spec;
  if (spec.empty() || spec.front() == '{') return run.model().name;  // an inline config: no checkpoint to name
  std::error_code ec;
  const std::filesystem::path p{spec};
  if (std::filesystem::is_regular_file(p, ec)) return p.has_parent_path() ? p.parent_path().string() : std::string(".");
  return spec;
}

std::string export_config(const resolved_run& run, const layout& l, export_target target, const std::string& path) {
  const checker c{path, to_string(target)};
  switch (target) {
    case export_target::deepspeed: return deepspeed_json(run, l, c);
    case export_target::accelerate_fsdp: return accelerate_fsdp_yaml(run, l, c);
    case export_target::torchtune: return torchtune_command(run, l, c);
    case export_target::axolotl: return axolotl_yaml(run, l, c);
    case export_target::torchrun: return torchrun_command(run, l, c);
    case export_target::vllm: return vllm_command(run, c);
  }
  fail(path, "unknown export target");
}

std::string export_config(const resolved_run& run, export_target target, const std::string& path) {
  if (run.settings().parallel.cp > 1)
    checker{path, to_string(target)}.cannot("context parallelism (cp=" + num(std::int64_t{run.settings().parallel.cp}) + ")");
  return export_config(run, layout_of(run.settings()), target, path);
}

}  // namespace gpuplan::io
