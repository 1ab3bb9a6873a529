// export_torchtune.cpp — `tune run` for a plan, from the torchtune contract
// (src/data/export/torchtune.json: torchtune/_recipe_registry.py, _cli/run.py and the
// model builders at the contract's commit).
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "export_common.hpp"
#include "gpuplan/framework.hpp"

namespace gpuplan::io::export_detail {

namespace {

using nlohmann::json;

// The config kinds, in order of preference, that can launch `m` after the overrides of
// torchtune_overrides: QLoRA from a LoRA config by quantizing the base, DoRA from a
// LoRA config with use_dora (torchtune/models/*/_model_builders.py: qlora_* is
// partial(lora_*, quantize_base=True); lora_* takes use_dora).
std::vector<std::string_view> kinds_for(method m) {
  switch (m) {
    case method::full: return {"full"};
    case method::qlora: return {"qlora", "lora"};
    case method::dora: return {"dora", "lora", "qlora"};
    default: return {"lora", "qlora"};
  }
}

// "llama3_1/8B_qlora_single_device" with prefix "llama3_1/8B_" -> "qlora".
std::string_view kind_of_config(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return {};
  const std::string_view rest = name.substr(prefix.size());
  return rest.substr(0, rest.find('_'));
}

struct torchtune_choice {
  std::string recipe;
  std::string config;
  std::string config_kind;
  bool sibling = false;  // the config is registered for the other device count's recipe
};

// The recipe for the method and device count, and the registered config of the model
// that it can run: the recipe's own configs first, then the sibling recipe's (tune run
// falls back to any recipe's config of that name, _cli/run.py _get_config).
torchtune_choice choose_config(const json& c, const json& model, method m, bool single, const checker& ck,
                               const std::string& model_name) {
  const std::string family = m == method::full ? "full" : "lora";
  const std::string own = family + "_finetune_" + (single ? "single_device" : "distributed");
  const std::string sibling = family + "_finetune_" + (single ? "distributed" : "single_device");
  const std::string prefix = model["dir"].get<std::string>() + "_";
  for (const std::string_view kind : kinds_for(m))
    for (const std::string& recipe : {own, sibling})
      for (const json& name : c["recipes"][recipe]) {
        const std::string config = name.get<std::string>();
        if (kind_of_config(config, prefix) == kind) return {own, config, std::string(kind), recipe != own};
      }
  std::string registered;
  for (const auto& [recipe, configs] : c["recipes"].items())
    for (const json& name : configs)
      if (!kind_of_config(name.get<std::string>(), prefix).empty())
        registered += (registered.empty() ? "" : ", ") + name.get<std::string>();
  ck.cannot("method " + std::string(to_string(m)) + " for " + model_name,
            ": torchtune registers no " + family + " config for " + model["dir"].get<std::string>() + " (it has " +
                (registered.empty() ? "none" : registered) + "); use --export accelerate-fsdp or axolotl");
}

// The model overrides that turn the chosen config into the plan's method.
std::vector<std::string> model_overrides(const json& model, const torchtune_choice& t, method m, const checker& ck,
                                         const std::string& model_name) {
  std::vector<std::string> out;
  const std::string module = model["module"].get<std::string>();
  const auto unsupported = [&](std::string_view kwarg) {
    if (const auto it = model.find("unsupported_kwargs"); it != model.end())
      for (const json& k : *it)
        if (k.get<std::string>() == kwarg) return true;
    return false;
  };
  if (m == method::dora && t.config_kind != "dora") {
    if (unsupported("use_dora")) ck.cannot("DoRA for " + model_name, ": its LoRA builder takes no use_dora; use --method lora");
    if (t.config_kind == "qlora") out.push_back("model._component_=" + module + "." + model["lora"].get<std::string>());
    out.emplace_back("model.use_dora=True");
  } else if (m == method::qlora && t.config_kind != "qlora") {
    if (model.contains("qlora")) out.push_back("model._component_=" + module + "." + model["qlora"].get<std::string>());
    else out.emplace_back("model.quantize_base=True");
  } else if ((m == method::lora) && t.config_kind != "lora") {
    out.push_back("model._component_=" + module + "." + model["lora"].get<std::string>());
  }
  return out;
}

// The launcher part: nothing for a single-device recipe (tune run refuses torchrun
// arguments for it, _cli/run.py), torchrun's arguments otherwise; several nodes meet at
// an explicit c10d endpoint (without --rdzv_endpoint tune run goes standalone).
std::string launcher_args(const checker& ck, const scenario& s, const layout& l, launch_config& out) {
  if (l.gpus == 1) return "";
  const int nodes = nodes_of(ck, s, l.gpus, "tune run");
  std::string t;
  if (nodes > 1) {
    t += " --nnodes " + num(std::int64_t{nodes});
    out.fill_in.emplace_back("MASTER_ADDR: the first node's address, set on every node");
  }
  t += " --nproc_per_node " + num(std::int64_t{l.gpus / nodes});
  if (nodes > 1) t += " --rdzv_id gpuplan --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:29500";
  return t;
}

void require_torchtune_layout(const checker& c, const scenario& s, const layout& l) {
  require_training(c, s);
  require_data_parallel(c, l);
  require_no_selective(c, l);
  if (s.meth != method::full && !is_lora_family(s.meth))
    c.cannot("method " + std::string(to_string(s.meth)), ": its recipes are full, LoRA, QLoRA and DoRA fine-tuning; use --export axolotl");
  const bool single = l.gpus == 1;
  if (!single && l.zero != 2 && l.zero != 3)
    c.cannot("ZeRO stage " + num(std::int64_t{l.zero}) + " on " + num(std::int64_t{l.gpus}) + " GPUs",
             ": its distributed recipes shard with FSDP2; use --zero 3 (or 2)");
  if (l.offload_optimizer != l.offload_params)
    c.cannot("optimizer offload without parameter offload", ": fsdp_cpu_offload moves both; use --offload-params cpu too");
  if (l.offload_params == offload::nvme) c.cannot("NVMe offload", ": fsdp_cpu_offload offloads to CPU memory only; use --export deepspeed");
  if (single && l.offload_params != offload::none) c.cannot("CPU offload on one GPU", ": fsdp_cpu_offload is a distributed-recipe option; use --export deepspeed");
  if (precision_of(s) == precision::fp16_mixed || precision_of(s) == precision::fp8_mixed)
    c.cannot(std::string(to_string(precision_of(s))) + " precision", ": dtype is bf16 or fp32 (the recipes refuse fp16)");
  if (s.activation_offload && l.ckpt != checkpointing::full)
    c.cannot("activation offload without checkpointing", ": enable_activation_offloading needs enable_activation_checkpointing; use --checkpointing full");
}

// LoRA's modules: lora_attn_modules (q_proj k_proj v_proj output_proj) and
// apply_lora_to_mlp (the three MLP projections at once), torchtune/modules/peft.
std::string lora_overrides(const checker& c, const scenario& s) {
  static constexpr std::array<std::pair<lora_target, std::string_view>, 4> kAttn{
      {{lora_q, "q_proj"}, {lora_k, "k_proj"}, {lora_v, "v_proj"}, {lora_o, "output_proj"}}};
  std::string attn;
  for (const auto& [bit, module] : kAttn)
    if ((s.lora.targets & bit) != 0) attn += (attn.empty() ? "" : ",") + std::string(module);
  const unsigned mlp = s.lora.targets & (lora_gate | lora_up | lora_down);
  if (mlp != 0 && mlp != (lora_gate | lora_up | lora_down))
    c.cannot("LoRA on part of the MLP", ": apply_lora_to_mlp adapts gate, up and down together; use --export axolotl");
  return " 'model.lora_attn_modules=[" + attn + "]' model.apply_lora_to_mlp=" + (mlp != 0 ? "True" : "False") +
         " model.lora_rank=" + num(s.lora.rank) + " model.lora_alpha=" + num(s.lora.alpha);
}

}  // namespace

// Overrides (recipes/configs/*, read by recipes/<recipe>.py; each is in the contract's
// recipe_keys for the recipe): batch_size, gradient_accumulation_steps,
// enable_activation_checkpointing, enable_activation_offloading, fsdp_cpu_offload,
// fsdp_reshard_after_forward, optimizer_in_bwd, dtype, tokenizer.max_seq_len, model.*.
launch_config torchtune_command(const resolved_run& run, const layout& l, const checker& c) {
  const scenario& s = run.settings();
  const json& tt = contract("torchtune");
  const std::string& name = run.model().name;
  if (!tt["models"].contains(name)) {
    const std::string reason = tt["no_builder"].contains(name) ? tt["no_builder"][name].get<std::string>()
                                                               : "torchtune has no builder for " + name;
    c.cannot("model " + name, " (" + reason + "); use --export accelerate-fsdp or axolotl");
  }
  const json& model = tt["models"][name];
  if (model["dir"].is_null()) c.cannot("model " + name, ": torchtune has its builders but no config; use --export axolotl");
  require_torchtune_layout(c, s, l);
  const bool single = l.gpus == 1;
  const torchtune_choice t = choose_config(tt, model, s.meth, single, c, name);
  const json& keys = tt["recipe_keys"][t.recipe];
  const auto reads = [&](std::string_view key) {
    for (const json& k : keys)
      if (k.get<std::string>() == key) return true;
    return false;
  };
  if (s.optimizer_in_backward && !reads("optimizer_in_bwd"))
    c.cannot("the optimizer step in backward", ": " + t.recipe + " has no optimizer_in_bwd; use --export axolotl");
  if (s.optimizer_in_backward && l.grad_accum > 1)
    c.cannot("the optimizer step in backward with gradient accumulation", ": optimizer_in_bwd refuses gradient_accumulation_steps > 1; use --grad-accum 1");
  launch_config out;
  out.checked_against = checked_against("torchtune");
  std::string t_line = "tune run" + launcher_args(c, s, l, out) + " " + t.recipe + " --config " + t.config;
  t_line += " batch_size=" + num(l.micro_batch) + " gradient_accumulation_steps=" + num(l.grad_accum);
  t_line += std::string(" enable_activation_checkpointing=") + (l.ckpt == checkpointing::full ? "True" : "False");
  if (s.activation_offload) t_line += " enable_activation_offloading=True";
  if (!single) {
    t_line += std::string(" fsdp_cpu_offload=") + (l.offload_params == offload::cpu ? "True" : "False");
    t_line += std::string(" fsdp_reshard_after_forward=") + (l.zero == 3 ? "True" : "False");  // ZeRO-3 / ZeRO-2
  }
  // The single-device recipes read cfg.compile as a required key; a distributed config may lack it.
  if (t.sibling && single) t_line += " compile=False";
  if (reads("optimizer_in_bwd")) t_line += std::string(" optimizer_in_bwd=") + (s.optimizer_in_backward ? "True" : "False");
  t_line += std::string(" dtype=") + (is_bf16(precision_of(s)) ? "bf16" : "fp32");
  t_line += " tokenizer.max_seq_len=" + num(s.seq_len);
  if (is_lora_family(s.meth)) {
    for (const std::string& o : model_overrides(model, t, s.meth, c, name)) t_line += " " + o;
    t_line += lora_overrides(c, s);
  }
  out.text = t_line + "\n";
  out.fill_in.emplace_back("checkpointer.checkpoint_dir and tokenizer.path: where the checkpoint was downloaded (tune download)");
  out.fill_in.emplace_back("dataset and optimizer.lr: the config's defaults unless overridden");
  return out;
}

}  // namespace gpuplan::io::export_detail
