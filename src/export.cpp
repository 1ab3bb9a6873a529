// export.cpp — the writers of io/export.hpp: one function per launcher, each from
// the resolved run and the chosen layout to the text the launcher reads.
#include "gpuplan/io/export.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "embedded.hpp"
#include "export_common.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/engine.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/file_text.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::io {

namespace export_detail {

std::string num(double v) { return detail::num(v); }

void checker::cannot(const std::string& element, const std::string& hint) const {
  detail::fail(path, std::string(target) + " cannot express " + element + hint);
}

const nlohmann::json& contract(std::string_view tool) {
  static const std::map<std::string, nlohmann::json, std::less<>> contracts = [] {
    std::map<std::string, nlohmann::json, std::less<>> m;
    for (const char* name : {"torchtune", "deepspeed", "accelerate", "axolotl", "megatron", "vllm"}) {
      const std::string_view text = detail::embedded_file("export/" + std::string(name) + ".json");
      if (text.empty()) throw std::logic_error("gpuplan: the export contract export/" + std::string(name) + ".json is missing");
      m.emplace(name, nlohmann::json::parse(text));
    }
    return m;
  }();
  const auto it = contracts.find(tool);
  if (it == contracts.end()) throw std::logic_error("gpuplan: no export contract for " + std::string(tool));
  return it->second;
}

std::string checked_against(std::string_view tool) {
  const nlohmann::json& c = contract(tool);
  return c["tool"].get<std::string>() + " " + c["version"].get<std::string>() + " (" + c["repository"].get<std::string>() +
         "@" + c["commit"].get<std::string>().substr(0, 7) + ")";
}

bool contract_lists(const nlohmann::json& c, std::string_view key, std::string_view value) {
  const auto it = c.find(key);
  if (it == c.end()) return false;
  for (const nlohmann::json& v : *it)
    if (v.is_string() && v.get<std::string>() == value) return true;
  return false;
}

bool is_bf16(precision p) { return p == precision::bf16_mixed || p == precision::bf16_pure; }

int nodes_of(const checker& c, const scenario& s, int gpus, std::string_view launcher) {
  const int gpn = std::max(1, s.cluster.gpus_per_node);
  const int nodes = (gpus + gpn - 1) / gpn;
  if (gpus % nodes != 0)
    c.cannot(num(std::int64_t{gpus}) + " GPUs on " + num(std::int64_t{nodes}) + " nodes",
             ": " + std::string(launcher) + " starts the same count per node; use a multiple of the node size");
  return nodes;
}

void require_training(const checker& c, const scenario& s) {
  if (s.work != workload::train) c.cannot("a serving run (workload infer)", ": use --export vllm");
}
void require_data_parallel(const checker& c, const layout& l) {
  if (l.tp > 1) c.cannot("tensor parallelism (tp=" + num(std::int64_t{l.tp}) + ")", ": use --export torchrun (Megatron-LM)");
  if (l.pp > 1) c.cannot("pipeline parallelism (pp=" + num(std::int64_t{l.pp}) + ")", ": use --export torchrun (Megatron-LM)");
}
void require_no_selective(const checker& c, const layout& l) {
  if (l.ckpt == checkpointing::selective) c.cannot("selective activation checkpointing", ": use --checkpointing full or none");
}

}  // namespace export_detail

namespace {

using namespace export_detail;
using detail::fail;

std::string yaml_bool(bool b) { return b ? "true" : "false"; }

// The learning rate a plan cannot know: the usual starting point of the method's recipes
// (2e-4 for LoRA-style adapters: PEFT/QLoRA examples; 2e-5 for full fine-tuning: the
// HF Trainer's examples). Always listed among what to fill in.
double placeholder_lr(const scenario& s) { return is_lora_family(s.meth) ? 2e-4 : 2e-5; }

// ---- DeepSpeed -------------------------------------------------------------------------
// Keys and rules: the DeepSpeed contract (deepspeed/runtime/config.py DEEPSPEED_OPTIMIZERS
// and _batch_assertion, runtime/zero/config.py, zero/offload_config.py, engine.py
// _configure_optimizer). The config is for a plain deepspeed.initialize script: numbers,
// never "auto" (only the HF integration fills it).

// The DeepSpeed optimizer section for the plan's optimizer; none for an optimizer
// DeepSpeed does not build (bitsandbytes 8-bit, Adafactor, SGD), which the script passes.
std::optional<nlohmann::ordered_json> deepspeed_optimizer(const scenario& s) {
  const nlohmann::ordered_json betas = nlohmann::ordered_json::array({0.9, 0.999});
  switch (s.opt) {  // torch/HF defaults: betas (0.9, 0.999), eps 1e-8, weight decay 0 (TrainingArguments)
    case optimizer::adamw:
    case optimizer::adam:
      return nlohmann::ordered_json{{"type", s.opt == optimizer::adamw ? "AdamW" : "Adam"},
                                    {"params", {{"lr", placeholder_lr(s)}, {"betas", betas}, {"eps", 1e-8}, {"weight_decay", 0.0}}}};
    case optimizer::lion:  // Lion's paper defaults: betas (0.9, 0.99)
      return nlohmann::ordered_json{{"type", "Lion"},
                                    {"params", {{"lr", placeholder_lr(s) / 3}, {"betas", {0.9, 0.99}}, {"weight_decay", 0.0}}}};
    default: return std::nullopt;
  }
}

// The zero_optimization section (shared with axolotl's inline DeepSpeed config).
nlohmann::ordered_json deepspeed_zero(const layout& l, const checker& c, launch_config& out) {
  if (l.offload_params != offload::none && l.zero != 3)
    c.cannot("parameter offload at ZeRO stage " + num(std::int64_t{l.zero}), ": offload_param is valid with stage 3 only; use --zero 3");
  if (l.offload_optimizer != offload::none && l.zero == 0)
    c.cannot("optimizer offload at ZeRO stage 0", ": offload_optimizer is valid with stages 1-3; use --zero 1 or higher");
  nlohmann::ordered_json z;
  z["stage"] = l.zero;
  const auto section = [&](offload o) {
    nlohmann::ordered_json d{{"device", o == offload::nvme ? "nvme" : "cpu"}, {"pin_memory", true}};
    if (o == offload::nvme) {
      d["nvme_path"] = "/local_nvme";
      out.fill_in.emplace_back("nvme_path: a directory on the node's NVMe drive (/local_nvme is a placeholder)");
    }
    return d;
  };
  if (l.offload_optimizer != offload::none) z["offload_optimizer"] = section(l.offload_optimizer);
  if (l.offload_params != offload::none) z["offload_param"] = section(l.offload_params);
  z["overlap_comm"] = l.zero >= 2;  // DeepSpeed's ZeRO tutorial configs overlap reduction with backward at stages 2-3
  z["contiguous_gradients"] = l.zero >= 2;
  return z;
}

launch_config deepspeed_json(const resolved_run& run, const layout& l, const checker& c) {
  const scenario& s = run.settings();
  require_training(c, s);
  require_data_parallel(c, l);
  require_no_selective(c, l);
  if (precision_of(s) == precision::fp8_mixed) c.cannot("fp8-mixed precision", ": DeepSpeed's config has bf16 and fp16 only; use --precision bf16-mixed");
  const auto opt = deepspeed_optimizer(s);
  const bool offloads = l.offload_optimizer != offload::none;
  if (offloads && !opt)
    c.cannot("optimizer " + std::string(to_string(s.opt)) + " with ZeRO-Offload",
             ": offload runs DeepSpeed's CPU Adam, AdamW or Lion (engine.py _configure_optimizer); use --optimizer adamw");
  launch_config out;
  out.checked_against = checked_against("deepspeed");
  nlohmann::ordered_json j;
  j["train_batch_size"] = l.micro_batch * l.grad_accum * l.dp();  // DeepSpeed asserts mb × ga × dp == this (runtime/config.py)
  j["train_micro_batch_size_per_gpu"] = l.micro_batch;
  j["gradient_accumulation_steps"] = l.grad_accum;
  j["gradient_clipping"] = 1.0;  // the HF Trainer's max_grad_norm default (TrainingArguments)
  j["bf16"] = {{"enabled", is_bf16(precision_of(s))}};
  j["fp16"] = {{"enabled", precision_of(s) == precision::fp16_mixed}};
  if (opt) {
    j["optimizer"] = *opt;
    out.fill_in.emplace_back("optimizer.params.lr: " + num(opt->at("params").at("lr").get<double>()) +
                             " is a placeholder; set your learning rate");
  } else {
    // ZeRO asserts on an optimizer outside its tested set unless this is set (zero/utils.py).
    if (l.zero > 0) j["zero_allow_untested_optimizer"] = true;
    out.fill_in.emplace_back("the optimizer: pass your " + std::string(to_string(s.opt)) +
                             " optimizer to deepspeed.initialize (DeepSpeed's config cannot build it)");
  }
  j["zero_optimization"] = deepspeed_zero(l, c, out);
  // The section configures deepspeed.checkpointing; a Hugging Face model enables
  // checkpointing itself (gradient_checkpointing_enable()).
  if (l.ckpt == checkpointing::full) {
    j["activation_checkpointing"] = {{"partition_activations", false},
                                     {"cpu_checkpointing", s.activation_offload},
                                     {"contiguous_memory_optimization", false}};
    out.fill_in.emplace_back("checkpointing: call model.gradient_checkpointing_enable() (the plan checkpoints every layer)");
  }
  out.text = j.dump(2) + "\n";
  return out;
}

// ---- accelerate FSDP -------------------------------------------------------------------
// Keys: the accelerate contract (src/accelerate/commands/config/config_args.py
// ClusterConfig, utils/launch.py prepare_multi_gpu_env, commands/launch.py FSDP keys).
// FSDP2 (fsdp_version 2): fsdp_reshard_after_forward true = FULL_SHARD (ZeRO-3), false =
// SHARD_GRAD_OP (ZeRO-2); ZeRO-0 is plain DDP (distributed_type MULTI_GPU).

// Multi-node keys: the main node's address and port, and the node's rank (the only value
// that differs per node), as placeholders the output names.
std::string accelerate_machines(int machines, launch_config& out) {
  std::string t = "machine_rank: 0\n";
  if (machines > 1) {
    t += "main_process_ip: FILL_IN_MAIN_NODE_IP\n";
    t += "main_process_port: 29500\n";
    out.fill_in.emplace_back("main_process_ip: the first node's address (FILL_IN_MAIN_NODE_IP), the same on every node");
    out.fill_in.emplace_back("machine_rank: 0 on the first node, 1.." + num(std::int64_t{machines - 1}) +
                             " on the others (or accelerate launch --machine_rank)");
  }
  return t;
}

launch_config accelerate_fsdp_yaml(const resolved_run& run, const layout& l, const checker& c) {
  const scenario& s = run.settings();
  require_training(c, s);
  require_data_parallel(c, l);
  require_no_selective(c, l);
  if (l.zero == 1) c.cannot("ZeRO stage 1 (optimizer-only sharding)", ": FSDP shards gradients and optimizer, or everything; use --zero 2 or 3");
  // torch CPUOffloadPolicy moves parameters, gradients and the optimizer step together.
  if (l.offload_optimizer != l.offload_params) c.cannot("optimizer offload without parameter offload", ": FSDP offloads both or neither; use --offload-params cpu too");
  if (l.offload_params == offload::nvme) c.cannot("NVMe offload", ": FSDP offloads to CPU memory only; use --export deepspeed");
  if (l.zero == 0 && l.offload_params != offload::none) c.cannot("CPU offload without sharding", ": use ZeRO-3 (FULL_SHARD)");
  const std::string mixed = is_bf16(precision_of(s))                     ? "bf16"
                            : precision_of(s) == precision::fp16_mixed   ? "fp16"
                            : precision_of(s) == precision::fp8_mixed    ? "fp8"
                                                                : "'no'";
  const int machines = nodes_of(c, s, l.gpus, "accelerate launch");
  const bool fsdp = l.zero >= 2;
  const bool fsdp_ckpt = fsdp && l.ckpt == checkpointing::full;
  launch_config out;
  out.checked_against = checked_against("accelerate");
  std::string t;
  // The Trainer refuses --gradient_checkpointing beside FSDP's activation checkpointing
  // (transformers trainer.py create_accelerator_and_postprocess): one or the other.
  t += "# accelerate launch --config_file accelerate.yaml" + std::string(machines > 1 ? " --machine_rank $NODE_RANK" : "") +
       " train.py --per_device_train_batch_size " + num(l.micro_batch) + " --gradient_accumulation_steps " + num(l.grad_accum) +
       (l.ckpt == checkpointing::full && !fsdp_ckpt ? " --gradient_checkpointing" : "") + "\n";
  t += "# global batch " + num(l.micro_batch * l.grad_accum * l.dp()) + " = micro-batch " + num(l.micro_batch) +
       " x grad accumulation " + num(l.grad_accum) + " x " + num(std::int64_t{l.dp()}) + " processes\n";
  t += "compute_environment: LOCAL_MACHINE\n";
  t += "debug: false\n";
  t += std::string("distributed_type: ") + (fsdp ? "FSDP" : l.gpus > 1 ? "MULTI_GPU" : "'NO'") + "\n";
  t += "downcast_bf16: 'no'\n";
  if (fsdp) {
    t += "fsdp_config:\n";
    t += "  fsdp_activation_checkpointing: " + yaml_bool(fsdp_ckpt) + "\n";
    t += "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
    t += "  fsdp_cpu_ram_efficient_loading: true\n";
    t += "  fsdp_offload_params: " + yaml_bool(l.offload_params == offload::cpu) + "\n";
    t += "  fsdp_reshard_after_forward: " + yaml_bool(l.zero == 3) + "\n";
    t += "  fsdp_state_dict_type: SHARDED_STATE_DICT\n";
    t += "  fsdp_version: 2\n";
  }
  t += accelerate_machines(machines, out);
  t += "main_training_function: main\n";
  t += "mixed_precision: " + mixed + "\n";
  t += "num_machines: " + num(std::int64_t{machines}) + "\n";
  t += "num_processes: " + num(std::int64_t{l.gpus}) + "\n";  // the total over all machines
  t += "rdzv_backend: static\n";
  t += "same_network: true\n";
  t += "use_cpu: false\n";
  out.text = t;
  out.fill_in.emplace_back("train.py: your training script (the HF Trainer's arguments are on the first line)");
  return out;
}

// ---- axolotl -----------------------------------------------------------------------------
// Keys: the axolotl contract (src/axolotl/utils/schemas/config.py, training.py, peft.py,
// fsdp.py, enums.py, validation.py): required base_model, datasets, learning_rate and two
// of micro_batch_size / gradient_accumulation_steps / batch_size; attn_implementation
// (the boolean attention flags are deprecated); FSDP as fsdp_version 2 + fsdp_config
// without the fsdp_ prefix; deepspeed as a path or an inline dict.
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

std::string axolotl_adapter(const scenario& s) {
  if (!is_lora_family(s.meth)) return "";
  std::string t = std::string("adapter: ") + (s.meth == method::qlora ? "qlora" : "lora") + "\n";
  t += "load_in_4bit: " + yaml_bool(s.meth == method::qlora) + "\n";  // qlora requires it (schemas/peft.py)
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
  return t;
}

// Sharding: FSDP2 for the fsdp/torchtune frameworks, else DeepSpeed inline (the HF
// integration fills "auto" from axolotl's own keys). Empty when nothing is sharded.
std::string axolotl_sharding(const scenario& s, const layout& l, const checker& c, launch_config& out) {
  const bool fsdp = s.fw == framework::fsdp || s.fw == framework::torchtune;
  if (fsdp && l.zero > 0) {
    if (l.zero == 1) c.cannot("ZeRO stage 1 with FSDP", ": FSDP shards gradients and optimizer, or everything; use --zero 2 or 3");
    if (l.offload_optimizer != l.offload_params) c.cannot("optimizer offload without parameter offload", ": FSDP offloads both; use --offload-params cpu too");
    if (l.offload_params == offload::nvme) c.cannot("NVMe offload with FSDP", ": FSDP offloads to CPU memory only; use --framework deepspeed");
    if (s.opt == optimizer::adamw_8bit || s.opt == optimizer::paged_adamw_8bit)
      c.cannot("optimizer " + std::string(to_string(s.opt)) + " with FSDP2", ": axolotl refuses bitsandbytes 8-bit optimizers under fsdp_version 2 (validation.py); use --optimizer adamw");
    std::string t = "fsdp_version: 2\n";
    t += "fsdp_config:\n";
    t += "  offload_params: " + yaml_bool(l.offload_params == offload::cpu) + "\n";
    t += "  reshard_after_forward: " + yaml_bool(l.zero == 3) + "\n";
    t += "  auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
    t += "  state_dict_type: FULL_STATE_DICT\n";
    t += "  cpu_ram_efficient_loading: true\n";
    t += "  activation_checkpointing: " + yaml_bool(l.ckpt == checkpointing::full) + "\n";
    return t;
  }
  const bool offloads = l.offload_optimizer != offload::none || l.offload_params != offload::none;
  if (!(l.zero > 0 && l.gpus > 1) && !offloads) return "";
  nlohmann::ordered_json ds;
  ds["zero_optimization"] = deepspeed_zero(l, c, out);
  for (const char* key : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "gradient_clipping"})
    ds[key] = "auto";
  ds["bf16"] = {{"enabled", "auto"}};
  ds["fp16"] = {{"enabled", "auto"}};
  return "deepspeed: " + ds.dump() + "\n";  // a JSON object is a YAML flow mapping
}

launch_config axolotl_yaml(const resolved_run& run, const layout& l, const checker& c) {
  const scenario& s = run.settings();
  require_training(c, s);
  require_data_parallel(c, l);
  require_no_selective(c, l);
  if (s.meth != method::full && !is_lora_family(s.meth))
    c.cannot("method " + std::string(to_string(s.meth)), ": its adapters are lora and qlora (DoRA through peft_use_dora); use --method lora");
  if (precision_of(s) == precision::fp8_mixed) c.cannot("fp8-mixed precision", ": use --precision bf16-mixed");
  launch_config out;
  out.checked_against = checked_against("axolotl");
  const std::string sharding = axolotl_sharding(s, l, c, out);
  const bool fsdp_ckpt = sharding.rfind("fsdp_version", 0) == 0;
  // Several nodes: accelerate's multi-node arguments on each (its launcher, utils/launch.py).
  const int machines = nodes_of(c, s, l.gpus, "accelerate launch");
  std::string launch = "accelerate launch";
  if (machines > 1) {
    launch += " --num_machines " + num(std::int64_t{machines}) + " --num_processes " + num(std::int64_t{l.gpus}) +
              " --machine_rank $NODE_RANK --main_process_ip $MASTER_ADDR --main_process_port 29500";
    out.fill_in.emplace_back("MASTER_ADDR and NODE_RANK: the first node's address, and 0.." + num(std::int64_t{machines - 1}) +
                             " per node, on the accelerate launch line");
  }
  std::string t;
  t += "# axolotl train config.yaml  (on " + num(std::int64_t{l.gpus}) + (l.gpus == 1 ? " GPU: " : " GPUs: ") + launch + " -m axolotl.cli.train config.yaml)\n";
  t += "base_model: " + launch_model_id(run) + "\n";
  t += axolotl_adapter(s);
  t += "datasets:\n  - path: data/train.jsonl\n    type: alpaca\n";
  t += "learning_rate: " + num(placeholder_lr(s)) + "\n";
  t += "sequence_len: " + num(s.seq_len) + "\n";
  t += "micro_batch_size: " + num(l.micro_batch) + "\n";
  t += "gradient_accumulation_steps: " + num(l.grad_accum) + "\n";
  // With FSDP the checkpointing is fsdp_config.activation_checkpointing (the Trainer refuses both).
  t += "gradient_checkpointing: " + yaml_bool(l.ckpt == checkpointing::full && !fsdp_ckpt) + "\n";
  t += "bf16: " + yaml_bool(is_bf16(precision_of(s))) + "\n";
  t += "fp16: " + yaml_bool(precision_of(s) == precision::fp16_mixed) + "\n";
  t += "tf32: " + yaml_bool(precision_of(s) == precision::tf32) + "\n";
  t += "optimizer: " + axolotl_optimizer(s) + "\n";
  t += std::string("attn_implementation: ") + (s.attn == attention::flash ? "flash_attention_2" : "eager") + "\n";
  // ALST's TiledMLP (examples/alst/llama3-8b-fsdp2-alst.yaml) and Liger's fused linear
  // cross-entropy through its plugin (integrations/liger/args.py LigerArgs, README.md).
  if (s.tiled_mlp) t += "tiled_mlp: true\n";
  if (s.fused_linear_loss)
    t += "plugins:\n  - axolotl.integrations.liger.LigerPlugin\nliger_fused_linear_cross_entropy: true\n";
  t += sharding;
  out.text = t;
  out.fill_in.emplace_back("datasets: your data (data/train.jsonl in alpaca format is a placeholder)");
  out.fill_in.emplace_back("learning_rate: " + num(placeholder_lr(s)) + " is a placeholder; set yours");
  return out;
}

// ---- vLLM ----------------------------------------------------------------------------------
// Arguments and quantization rules: the vLLM contract (vllm/engine/arg_utils.py EngineArgs,
// vllm/config/model.py _verify_quantization, model_loader/weight_utils.py get_quant_config).

// The quant_method of the checkpoint the model spec names (a config.json, or the
// directory holding one), lower-cased; empty for a catalog model or an unquantized one.
std::string checkpoint_quant_method(const resolved_run& run) {
  const std::string& spec = run.model_spec;
  if (spec.empty() || spec.front() == '{') return "";
  std::error_code ec;
  std::filesystem::path p{spec};
  if (std::filesystem::is_directory(p, ec)) p /= "config.json";
  std::string text;
  try {
    text = read_text_file(p.string(), "model", "config");  // the one reader of user files (io/file_text.hpp)
  } catch (const config_error&) {
    return "";  // a Hub id or a catalog name: no local checkpoint to inspect
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const auto qc = j.is_object() ? j.find("quantization_config") : j.end();
  if (qc == j.end() || !qc->is_object() || !qc->contains("quant_method") || !(*qc)["quant_method"].is_string()) return "";
  std::string method = (*qc)["quant_method"].get<std::string>();
  std::transform(method.begin(), method.end(), method.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return method;
}

// --quantization for the plan's weights: none for a pre-quantized checkpoint (vLLM reads
// its quant_method and refuses a different one); fp8 and int8 quantized at load; 4-bit
// NF4/FP4 through bitsandbytes (out of tree since v0.28: the vllm-bnb-plugin package);
// int4 only from an AWQ/GPTQ checkpoint (awq/gptq at load fail: "Cannot find the config file").
std::string vllm_quantization(const resolved_run& run, const checker& c, launch_config& out) {
  const nlohmann::json& v = contract("vllm");
  const std::string method = checkpoint_quant_method(run);
  const quantization q = base_quantization(run.settings());
  if (!method.empty()) {
    const bool four_bit = method.find("awq") != std::string::npos || method.find("gptq") != std::string::npos;
    if (q.weights == dtype::int4 && !four_bit)
      c.cannot("int4 weights from a " + method + " checkpoint", ": vLLM serves the checkpoint's own quant_method; set --quant to match it");
    return "";  // vLLM takes quant_method from config.json
  }
  switch (q.weights) {
    case dtype::fp8_e4m3: return " --quantization fp8";
    case dtype::int8:
      if (contract_lists(v, "quantization_methods", "int8_per_channel_weight_only")) return " --quantization int8_per_channel_weight_only";
      break;
    case dtype::nf4:
    case dtype::fp4:
      out.fill_in.emplace_back("pip install vllm-bnb-plugin: vLLM 0.28+ loads bitsandbytes 4-bit through this plugin");
      return " --quantization bitsandbytes";
    case dtype::int4:
      c.cannot("int4 weights from the unquantized checkpoint " + launch_model_id(run),
               ": vLLM quantizes at load to fp8, int8 or (bitsandbytes) nf4 only; pass an AWQ/GPTQ checkpoint's config.json "
               "as the model, or use --quant nf4");
    default: break;
  }
  return "";
}

launch_config vllm_command(const resolved_run& run, const checker& c) {
  const scenario& s = run.settings();
  if (s.work != workload::infer) c.cannot("a training run", ": vllm serves a model; use --infer, or a training target");
  const inference_config& inf = s.inference;
  launch_config out;
  out.checked_against = checked_against("vllm");
  std::string t = "vllm serve " + launch_model_id(run);
  t += " --tensor-parallel-size " + num(std::int64_t{s.parallel.tp_size()});
  if (s.parallel.pp > 1) t += " --pipeline-parallel-size " + num(std::int64_t{s.parallel.pp});
  if (s.dp() > 1) t += " --data-parallel-size " + num(std::int64_t{s.dp()});
  t += " --max-model-len " + num(inf.prompt_len + inf.gen_len);
  // The budget the plan's KV pool was computed from (engine.hpp vLLM profile), written
  // out: vLLM's own default has changed between releases (0.9, then 0.92).
  const double fraction = s.inference.memory_fraction.value_or(
      memory_fraction_of(profile_of(engine::vllm), in_gib(s.gpu.usable_memory), s.parallel.tp_size() * s.parallel.pp));
  t += " --gpu-memory-utilization " + num(std::round(fraction * 100) / 100);
  t += " --max-num-seqs " + num(inf.batch);
  if (inf.max_batched_tokens > 0) t += " --max-num-batched-tokens " + num(inf.max_batched_tokens);
  t += vllm_quantization(run, c, out);
  switch (inf.kv_cache_dtype) {
    case dtype::fp8_e4m3: t += " --kv-cache-dtype fp8"; break;
    case dtype::bf16:
    case dtype::fp16: break;  // auto: the model's dtype
    default: c.cannot("a " + std::string(to_string(inf.kv_cache_dtype)) + " KV cache", ": --kv-cache-dtype is auto or fp8; use --kv-dtype fp8 or the model's dtype");
  }
  out.text = t + "\n";
  return out;
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

launch_config export_launch(const resolved_run& run, const layout& l, export_target target, const std::string& path) {
  const checker c{path, to_string(target)};
  switch (target) {
    case export_target::deepspeed: return deepspeed_json(run, l, c);
    case export_target::accelerate_fsdp: return accelerate_fsdp_yaml(run, l, c);
    case export_target::torchtune: return torchtune_command(run, l, c);
    case export_target::axolotl: return axolotl_yaml(run, l, c);
    case export_target::torchrun: return megatron_command(run, l, c);
    case export_target::vllm: return vllm_command(run, c);
  }
  fail(path, "unknown export target");
}

launch_config export_launch(const resolved_run& run, export_target target, const std::string& path) {
  if (run.settings().parallel.cp > 1)
    checker{path, to_string(target)}.cannot("context parallelism (cp=" + num(std::int64_t{run.settings().parallel.cp}) + ")", ": use --cp 1");
  return export_launch(run, layout_of(run.settings()), target, path);
}

std::string export_config(const resolved_run& run, const layout& l, export_target target, const std::string& path) {
  return export_launch(run, l, target, path).text;
}

std::string export_config(const resolved_run& run, export_target target, const std::string& path) {
  return export_launch(run, target, path).text;
}

}  // namespace gpuplan::io
