// run_options.cpp — run_options.hpp: the run flags, and the scenario they build.
#include "run_options.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "gpuplan/error.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/file_text.hpp"
#include "gpuplan/io/profile.hpp"
#include "gpuplan/names.hpp"
#include "gpuplan/peft.hpp"
#include "gpuplan/scenario.hpp"
#include "json_text.hpp"

namespace gpuplan::cli {
using nlohmann::json;

template <class T>
CLI::Option* add_key_flag(CLI::App* sub, run_args& a, const std::string& flag, const std::string& path, const std::string& help) {
  a.flag_of[path] = flag;
  const std::string name = flag.substr(0, flag.find(','));
  return sub->add_option_function<T>(
      flag,
      [&a, path, name](const T& v) {
        // JSON has no NaN or infinity: say what was typed instead of "got null".
        if constexpr (std::is_floating_point_v<T>)
          if (!std::isfinite(v)) throw config_error(name, "must be a finite number (got " + gpuplan::detail::num(v) + ")");
        a.overrides.emplace_back(path, json(v));
      },
      help);
}
template CLI::Option* add_key_flag<std::string>(CLI::App*, run_args&, const std::string&, const std::string&, const std::string&);
template CLI::Option* add_key_flag<double>(CLI::App*, run_args&, const std::string&, const std::string&, const std::string&);
template CLI::Option* add_key_flag<std::int64_t>(CLI::App*, run_args&, const std::string&, const std::string&, const std::string&);

namespace {

// Flags a subcommand defines itself (search's --global-batch, recommend's --price ...).
thread_local const std::set<std::string>* skipped_flags = nullptr;
bool skipped(const std::string& flag) {
  return skipped_flags != nullptr && skipped_flags->contains(flag.substr(0, flag.find(',')));
}

template <class T>
void add_key(CLI::App* sub, run_args& a, const std::string& flag, const std::string& path, const std::string& help) {
  if (!skipped(flag)) add_key_flag<T>(sub, a, flag, path, help);
}

void add_bool_key(CLI::App* sub, run_args& a, const std::string& flag, const std::string& path, const std::string& help,
                  bool value = true) {
  if (skipped(flag)) return;
  a.flag_of[path] = flag;
  sub->add_flag_function(
      flag, [&a, path, value](std::int64_t) { a.overrides.emplace_back(path, json(value)); }, help);
}

// Sequence, batch, precision and the training recipe.
void add_step_keys(CLI::App* sub, run_args& a) {
  using gpuplan::name_list;
  add_key<std::int64_t>(sub, a, "--seq", "seq_len", "Sequence length (tokens)");
  add_key<std::int64_t>(sub, a, "--batch,-b", "micro_batch", "Micro-batch size per GPU");
  add_key<std::int64_t>(sub, a, "--grad-accum", "grad_accum", "Gradient accumulation steps");
  add_key<std::int64_t>(sub, a, "--global-batch", "global_batch", "Global batch (derives --grad-accum)");
  add_key<std::string>(sub, a, "--precision", "precision", name_list<gpuplan::precision>());
  add_key<std::string>(sub, a, "--optimizer", "optimizer", name_list<gpuplan::optimizer>());
  add_key<std::string>(sub, a, "--framework", "framework", "Training framework (its defaults, memory and speed): " + name_list<gpuplan::framework>());
  add_key<std::string>(sub, a, "--checkpointing", "checkpointing", "Activation checkpointing (default: the framework's recipe): " + name_list<gpuplan::checkpointing>());
  add_key<std::string>(sub, a, "--attention", "attention", name_list<gpuplan::attention>());
}

// GPUs and parallelism.
void add_parallel_keys(CLI::App* sub, run_args& a) {
  using gpuplan::name_list;
  add_key<std::int64_t>(sub, a, "--gpus,-n", "num_gpus", "Number of GPUs");
  add_key<std::int64_t>(sub, a, "--gpus-per-node", "gpus_per_node", "GPUs per node (default 8)");
  add_key<std::int64_t>(sub, a, "--tp", "parallel.tp", "Tensor-parallel degree");
  add_key<std::int64_t>(sub, a, "--pp", "parallel.pp", "Pipeline-parallel degree");
  add_key<std::int64_t>(sub, a, "--virtual-stages", "parallel.virtual_stages", "Interleaved pipeline stages per GPU");
  add_bool_key(sub, a, "--sp", "parallel.sp", "Megatron sequence parallelism");
  add_bool_key(sub, a, "--account-for-embedding-in-pipeline-split", "parallel.account_for_embedding_in_pipeline_split",
               "megatron: the embedding counts as one layer of the pipeline split");
  add_bool_key(sub, a, "--account-for-loss-in-pipeline-split", "parallel.account_for_loss_in_pipeline_split",
               "megatron: the loss counts as one layer of the pipeline split");
  add_key<std::int64_t>(sub, a, "--first-stage-layers", "parallel.first_stage_layers",
                        "megatron: blocks on the first pipeline stage (--decoder-first-pipeline-num-layers)");
  add_key<std::int64_t>(sub, a, "--last-stage-layers", "parallel.last_stage_layers",
                        "megatron: blocks on the last pipeline stage (--decoder-last-pipeline-num-layers)");
  add_key<std::int64_t>(sub, a, "--cp", "parallel.cp", "Context-parallel degree");
  add_key<std::int64_t>(sub, a, "--ep", "parallel.ep", "Expert-parallel degree");
  add_key<std::int64_t>(sub, a, "--zero", "parallel.zero", "ZeRO stage 0-3 (FSDP full shard = 3)");
  add_key<std::string>(sub, a, "--offload-optimizer", "parallel.offload_optimizer", name_list<gpuplan::offload>());
  add_key<std::string>(sub, a, "--offload-params", "parallel.offload_params", name_list<gpuplan::offload>());
}

// LoRA, freeze and quantization.
void add_adapter_keys(CLI::App* sub, run_args& a) {
  using gpuplan::join_names;
  add_key<std::int64_t>(sub, a, "--lora-rank", "lora.rank", "LoRA rank");
  add_key<double>(sub, a, "--lora-alpha", "lora.alpha", "LoRA alpha");
  add_key<std::string>(sub, a, "--lora-targets", "lora.targets",
                       "Comma list of " + join_names(gpuplan::kLoraSingleTargetNames, ",") + " or " +
                           std::string(gpuplan::to_string(gpuplan::lora_all_linear)));
  add_key<std::int64_t>(sub, a, "--freeze-layers", "freeze.trainable_layers", "method freeze: top N layers train");
  add_key<std::string>(sub, a, "--quant", "quantization.weights", "Base weights: " + join_names(gpuplan::kWeightDtypeNames));
  add_bool_key(sub, a, "--double-quant", "quantization.double_quant", "Double quantization of 4-bit scales");
  add_key<std::int64_t>(sub, a, "--group-size", "quantization.group_size", "Quantization group size");
}

// Kernels, loss, offload of activations and the optimizer step.
void add_kernel_keys(CLI::App* sub, run_args& a) {
  using gpuplan::name_list;
  add_bool_key(sub, a, "--chunked-loss", "chunked_loss", "Chunked cross-entropy (no full logits)");
  add_bool_key(sub, a, "--fused-linear-loss", "fused_linear_loss",
               "LM head and cross-entropy fused per chunk of tokens, no logits tensor (Liger FLCE, use_liger_kernel; ALST TiledFusedLogitsLoss; verl use_fused_kernels)");
  add_bool_key(sub, a, "--tiled-mlp", "tiled_mlp",
               "ALST TiledMLP: the MLP over sequence shards of hidden-size tokens (ArcticTraining tiled_mlp_compute, axolotl tiled_mlp)");
  add_bool_key(sub, a, "--inplace-loss", "inplace_loss", "Cross-entropy writing its gradient into the 16-bit logits (flash-attn Triton)");
  add_key<std::int64_t>(sub, a, "--loss-tokens", "loss_tokens", "Positions per sequence the loss computes logits for (logits_to_keep; default all)");
  add_bool_key(sub, a, "--compile", "compile", "torch.compile");
  add_bool_key(sub, a, "--fused-kernels", "fused_kernels", "Fused norm/rotary/MLP kernels without torch.compile (Liger, Apex, Transformer Engine)");
  add_bool_key(sub, a, "--activation-offload", "activation_offload", "Offload saved activations to the CPU");
  add_bool_key(sub, a, "--optimizer-in-backward", "optimizer_in_backward", "Step the optimizer during backward");
  add_key<std::string>(sub, a, "--optimizer-kernel", "optimizer_kernel",
                       "Optimizer step kernels: " + name_list<gpuplan::optimizer_kernel>() + " (default: the framework's)");
  add_bool_key(sub, a, "--keep-gradients", "keep_gradients", "Gradients kept between steps (PyTorch < 2.0 zero_grad(), set_to_none=False)");
  add_bool_key(sub, a, "--expandable-segments", "expandable_segments", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less allocator slack)");
}

// Serving (workload infer).
void add_serving_keys(CLI::App* sub, run_args& a) {
  using gpuplan::join_names;
  using gpuplan::name_list;
  add_bool_key(sub, a, "--infer", "workload", "Serving instead of training (workload infer)");
  // --infer writes "infer", not a boolean: fix up in build_scenario.
  add_key<std::int64_t>(sub, a, "--infer-batch", "inference.batch", "Serving: concurrent sequences");
  add_key<std::int64_t>(sub, a, "--prompt-len", "inference.prompt_len", "Serving: prompt tokens");
  add_key<std::int64_t>(sub, a, "--gen-len", "inference.gen_len", "Serving: generated tokens");
  add_key<std::string>(sub, a, "--kv-dtype", "inference.kv_cache_dtype", "Serving: KV-cache dtype: " + join_names(gpuplan::kKvCacheDtypeNames));
  add_key<std::string>(sub, a, "--engine", "engine", "Serving engine: " + name_list<gpuplan::engine>());
  add_key<std::int64_t>(sub, a, "--max-batched-tokens", "inference.max_batched_tokens", "Serving: tokens per engine step (default: the engine's)");
  add_key<std::string>(sub, a, "--gguf", "inference.gguf", "llama.cpp GGUF weight type: " + join_names(gpuplan::kGgufTypeNames));
  add_key<std::int64_t>(sub, a, "--gpu-layers,--ngl", "inference.gpu_layers", "llama.cpp: layers on the GPU (default all)");
  add_key<double>(sub, a, "--gpu-memory-utilization,--mem-fraction", "inference.memory_fraction",
                  "Serving: the engine's share of GPU memory (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static)");
  add_bool_key(sub, a, "--enforce-eager", "inference.cuda_graphs",
               "Serving: decode without CUDA graphs (vLLM --enforce-eager; default: the engine's)", false);
}

void group_run_options(CLI::App* sub, const std::set<std::string>& skip) {
  // Help groups, in the order a reader looks for them.
  const std::pair<const char*, std::vector<const char*>> groups[] = {
      {"Run", {"--scenario", "--gpu", "--gpu-file", "--method", "--seq", "--batch", "--grad-accum", "--global-batch",
               "--framework", "--precision", "--optimizer", "--checkpointing", "--attention", "--chunked-loss",
               "--fused-linear-loss", "--tiled-mlp", "--loss-tokens", "--compile", "--fused-kernels",
               "--activation-offload", "--optimizer-in-backward", "--optimizer-kernel", "--keep-gradients"}},
      {"Parallelism", {"--gpus", "--gpus-per-node", "--tp", "--pp", "--virtual-stages", "--sp", "--cp", "--ep",
                       "--zero", "--offload-optimizer", "--offload-params", "--account-for-embedding-in-pipeline-split",
                       "--account-for-loss-in-pipeline-split", "--first-stage-layers", "--last-stage-layers"}},
      {"LoRA, QLoRA, freeze", {"--lora-rank", "--lora-alpha", "--lora-targets", "--freeze-layers", "--quant",
                               "--double-quant", "--group-size"}},
      {"Serving", {"--infer", "--infer-batch", "--prompt-len", "--gen-len", "--kv-dtype", "--engine", "--max-batched-tokens",
                   "--gguf", "--gpu-layers", "--gpu-memory-utilization", "--enforce-eager"}},
      {"Time and cost", {"--tokens", "--price"}},
  };
  for (const auto& [group, names] : groups)
    for (const char* name : names)
      if (!skip.contains(name)) sub->get_option(name)->group(group);
}

// Scenario keys a serving run (workload infer) never reads: its batch and lengths are
// inference.* (--infer-batch, --prompt-len, --gen-len), its kernels the engine's
// (--engine), and it has no optimizer, gradients, ZeRO states, pipeline schedule,
// trainable layers or tokens to train (cost needs those tokens). The serving model
// (detail/memory_serving.hpp, detail/timing_serving.hpp) reads model, gpu, num_gpus,
// gpus_per_node, tp, pp, ep, precision, attention, method with lora/peft and
// quantization, and inference.*. A flag that sets a key listed here with --infer (or in
// serve, recommend --serve) is refused as a serving flag without --infer is.
constexpr std::string_view kTrainingOnlyKeys[] = {
    "seq_len", "micro_batch", "grad_accum", "global_batch", "optimizer", "framework", "checkpointing",
    "parallel.virtual_stages", "parallel.sp", "parallel.cp", "parallel.zero", "parallel.offload_optimizer",
    "parallel.offload_params", "parallel.account_for_embedding_in_pipeline_split",
    "parallel.account_for_loss_in_pipeline_split", "parallel.first_stage_layers", "parallel.last_stage_layers",
    "freeze.trainable_layers", "chunked_loss", "fused_linear_loss", "tiled_mlp", "inplace_loss", "loss_tokens", "compile", "fused_kernels", "activation_offload",
    "optimizer_in_backward", "optimizer_kernel", "keep_gradients", "expandable_segments", "tokens", "price_per_gpu_hour"};

// A training-only flag given for a serving run: one line naming the flag.
void refuse_training_flags(const json& j, const run_args& a) {
  const auto w = j.find("workload");
  if (w == j.end() || *w != json(gpuplan::to_string(gpuplan::workload::infer))) return;
  for (const auto& o : a.overrides) {
    if (std::ranges::find(kTrainingOnlyKeys, std::string_view(o.first)) == std::end(kTrainingOnlyKeys)) continue;
    const auto it = a.flag_of.find(o.first);
    const std::string flag = it == a.flag_of.end() ? o.first : it->second.substr(0, it->second.find(','));
    // The serving flag a user reaching for --seq or --batch means.
    const std::string_view key = o.first;
    const char* instead = key == "seq_len" ? "; serving lengths are --prompt-len and --gen-len"
                          : key == "micro_batch" ? "; the serving batch is --infer-batch" : "";
    throw config_error(flag, std::string("only applies to workload train (got workload infer)") + instead);
  }
}

// Regular files of at most 16 MiB (io/file_text.hpp), bounded nesting and escaped bytes
// (the readers' shared parser, src/json_text.hpp).
json read_json_file(const std::string& file, const std::string& path) {
  const std::string text = io::read_text_file(file, path);
  return gpuplan::detail::parse_json_text(text, path, "malformed JSON in '" + gpuplan::detail::quote_text(file) + "'");
}

// Rewrites a reader error's path ("scenario.parallel.tp") to the flag that set it ("--tp").
[[noreturn]] void rethrow_naming_flag(const config_error& e, const run_args& a) {
  std::string path = e.path();
  const std::string what = e.what();
  const std::string reason = what.size() > path.size() + 2 ? what.substr(path.size() + 2) : what;
  std::string key = path.rfind("scenario.", 0) == 0 ? path.substr(9) : path;
  if (const auto bracket = key.find('['); bracket != std::string::npos) key = key.substr(0, bracket);
  auto given = [&](const std::string& k) {
    for (const auto& o : a.overrides)
      if (o.first == k) return true;
    return false;
  };
  const gpuplan::error_kind kind = e.kind();
  if (key == "model" && !a.model.empty()) throw config_error("model", reason, kind);
  if (key == "gpu" && !a.gpu.empty()) throw config_error("--gpu", reason, kind);
  if (key == "method" && a.methods_opt != nullptr && a.methods_opt->count() > 0) throw config_error("--method", reason, kind);
  // A key the user did not write in a scenario file came from a flag or its default:
  // name the flag either way ("--seq: exceeds max_position_embeddings=1024 ...").
  if ((given(key) || !a.file_keys.contains(key)) && a.flag_of.count(key) != 0) {
    std::string flag = a.flag_of.at(key);
    if (const auto comma = flag.find(','); comma != std::string::npos) flag = flag.substr(0, comma);
    throw config_error(flag, reason, kind);
  }
  // An error about a whole object ("scenario.lora: only applies to method lora") names
  // the first flag that wrote inside it.
  for (const auto& o : a.overrides)
    if (o.first.rfind(key + ".", 0) == 0 && a.flag_of.count(o.first) != 0) {
      std::string flag = a.flag_of.at(o.first);
      throw config_error(flag.substr(0, flag.find(',')), reason, kind);
    }
  throw e;
}

}  // namespace

void add_run_options(CLI::App* sub, run_args& a, bool model_positional, bool fit_methods,
                     const std::set<std::string>& skip) {
  using gpuplan::name_list;
  skipped_flags = &skip;
  if (model_positional)
    sub->add_option("MODEL", a.model, "Catalog name (see 'gpuplan models'), Hub id, config.json or checkpoint dir");
  sub->add_option("--scenario,-s", a.scenario_file, "Scenario JSON file (docs/scenario.md); flags override its keys");
  sub->add_option("--gpu,-g", a.gpu, "GPU catalog id (see 'gpuplan gpus') or a GPU JSON file; default a100-80gb");
  sub->add_option("--gpu-file", a.gpu_file, "JSON file of extra GPUs (an array) added to the catalog");
  if (fit_methods)
    a.methods_opt = sub->add_option("--method,-m", a.methods, "Comma list of " + name_list<gpuplan::method>() + ": one column each");
  else
    add_key<std::string>(sub, a, "--method,-m", "method", name_list<gpuplan::method>());
  add_step_keys(sub, a);
  add_parallel_keys(sub, a);
  add_adapter_keys(sub, a);
  add_kernel_keys(sub, a);
  add_serving_keys(sub, a);
  add_key<std::string>(sub, a, "--tokens", "tokens", "Training tokens: 1T, 300B, 2e9");
  add_key<double>(sub, a, "--price", "price_per_gpu_hour", "Price per GPU-hour (for cost)");
  sub->add_option("--profile", a.profile_file, "Calibration profile from 'gpuplan calibrate': its constants and bands")
      ->group("Calibration");
  group_run_options(sub, skip);
  skipped_flags = nullptr;
}

std::vector<std::string> split_methods(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) throw config_error("--method", "empty entry in the list (got '" + s + "')");
    out.push_back(item);
  }
  if (out.empty()) throw config_error("--method", "must name at least one method (got '" + s + "')");
  return out;
}

void rethrow_with_flag(const config_error& e, const run_args& a) { rethrow_naming_flag(e, a); }

json build_scenario_json(run_args& a, const std::string* method_override) {
  json j = json::object();
  if (!a.scenario_file.empty()) {
    j = read_json_file(a.scenario_file, "--scenario");
    if (!j.is_object()) throw config_error("--scenario", "must contain a JSON object (got " + std::string(j.type_name()) + ")");
    for (const auto& [k, v] : j.items()) {
      a.file_keys.insert(k);
      if (v.is_object())
        for (const auto& [k2, v2] : v.items()) a.file_keys.insert(k + "." + k2);
    }
  }
  if (!a.model.empty()) j["model"] = a.model;
  if (!j.contains("model")) throw config_error("model", "is required: give MODEL or --scenario FILE with a \"model\" key");
  if (!a.gpu.empty()) {
    // A path to a JSON file is an inline GPU object; anything else a catalog id.
    std::error_code ec;  // exists, not opened: opening a FIFO blocks; read_json_file refuses what is not a file
    if (a.gpu.find(".json") != std::string::npos || (a.gpu.find('/') != std::string::npos && std::filesystem::exists(a.gpu, ec)))
      j["gpu"] = read_json_file(a.gpu, "--gpu");
    else
      j["gpu"] = a.gpu;
  }
  for (const auto& [path, value] : a.overrides) {
    json v = value;
    if (path == "workload") v = gpuplan::to_string(gpuplan::workload::infer);
    if (path == "lora.targets" && v.is_string() && v.get_ref<const std::string&>() != gpuplan::to_string(gpuplan::lora_all_linear)) {
      json list = json::array();
      std::stringstream ss(v.get<std::string>());
      for (std::string item; std::getline(ss, item, ',');) list.push_back(item);
      v = list;
    }
    std::string pointer = "/" + path;
    for (char& c : pointer)
      if (c == '.') c = '/';
    j[json::json_pointer(pointer)] = v;
  }
  if (method_override != nullptr) {
    j["method"] = *method_override;
    // In a list such as full,lora,qlora the LoRA (or freeze) keys are meant for the
    // columns that use them: other columns drop them. With no such column they stay,
    // and the reader names the flag that does not apply.
    using gpuplan::method;
    std::set<method> all;
    for (const auto& name : split_methods(a.methods))
      if (const auto m = gpuplan::from_string<method>(name)) all.insert(*m);
    const auto self = gpuplan::from_string<method>(*method_override);
    auto lora_like = [](std::optional<method> m) { return m && gpuplan::has_low_rank_path(*m); };
    if (!lora_like(self) && std::ranges::any_of(all, [&](method m) { return lora_like(m); })) j.erase("lora");
    auto peft_like = [](std::optional<method> m) {
      return m && gpuplan::traits_of(*m).peft_keys != 0;
    };
    if (!peft_like(self) && std::ranges::any_of(all, [&](method m) { return peft_like(m); })) j.erase("peft");
    if (self != method::freeze && all.contains(method::freeze)) j.erase("freeze");
  }
  refuse_training_flags(j, a);
  return j;
}

io::resolved_run build_run(run_args& a, const std::string* method_override) {
  const json j = build_scenario_json(a, method_override);
  io::resolved_run r = [&] {
    try {
      return io::read_scenario(j);
    } catch (const config_error& e) {
      rethrow_naming_flag(e, a);
    }
  }();
  if (!a.profile_file.empty()) {
    if (!a.profile) {
      try {
        a.profile = std::make_shared<const gpuplan::profile>(io::read_profile_file(a.profile_file));
      } catch (const config_error& e) {
        throw config_error("--profile", e.what(), e.kind());
      }
    }
    r.run.calibrate_with(a.profile);
  }
  return r;
}

void load_extra_gpus(const run_args& a) {
  if (a.gpu_file.empty()) return;
  try {
    io::load_gpu_file(a.gpu_file);
  } catch (const config_error& e) {
    throw config_error("--gpu-file", e.what(), e.kind());  // the file's errors name the file: add the flag
  }
}

}  // namespace gpuplan::cli
