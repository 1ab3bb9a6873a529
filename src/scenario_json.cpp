// scenario_json.cpp — the scenario file (docs/scenario.md): JSON <-> resolved run.
// Every rejection names the JSON path and the offending value.
#include "gpuplan/io/scenario_json.hpp"

#include <array>
#include <cmath>
#include <fstream>
#include <memory>
#include <initializer_list>
#include <sstream>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "gpuplan/io/amount.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/peft.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/validate.hpp"
#include "json_fields.hpp"
#include "json_text.hpp"

namespace gpuplan::io {
namespace {

using json = nlohmann::json;
using detail::fail;
using namespace json_fields;

// "all-linear", or a non-empty list of single targets (kLoraTargetNames).
std::uint8_t read_targets(const json& v, const std::string& path) {
  auto expected = [&](const char* list) {
    return "must be \"" + std::string(to_string(lora_all_linear)) + "\" or " + list + " of " +
           join_names(kLoraSingleTargetNames) + " (got " + show(v) + ")";
  };
  if (v.is_string()) {
    if (v.get_ref<const std::string&>() == to_string(lora_all_linear)) return lora_all_linear;
    fail(path, expected("a list"), error_kind::unknown_name);
  }
  if (!v.is_array() || v.empty()) fail(path, expected("a non-empty list"));
  std::uint8_t bits = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    bits |= get_enum(v[i], path + "[" + std::to_string(i) + "]", kLoraSingleTargetNames);
  return bits;
}

void read_parallel(const json& j, parallel_config& p) {
  const std::string path = "scenario.parallel";
  require_object(j, path);
  check_keys(j, path, {"tp", "pp", "virtual_stages", "sp", "cp", "ep", "zero", "offload_optimizer", "offload_params",
                       "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
                       "first_stage_layers", "last_stage_layers"});
  if (j.contains("tp")) p.tp = get_small_int(j["tp"], path + ".tp");
  if (j.contains("pp")) p.pp = get_small_int(j["pp"], path + ".pp");
  if (j.contains("virtual_stages")) p.virtual_stages = get_small_int(j["virtual_stages"], path + ".virtual_stages");
  if (j.contains("sp")) p.sp = get_bool(j["sp"], path + ".sp");
  if (j.contains("cp")) p.cp = get_small_int(j["cp"], path + ".cp");
  if (j.contains("ep")) p.ep = get_small_int(j["ep"], path + ".ep");
  if (j.contains("zero")) p.zero = get_small_int(j["zero"], path + ".zero");
  if (j.contains("offload_optimizer")) p.offload_optimizer = get_enum(j["offload_optimizer"], path + ".offload_optimizer", kOffloadNames);
  if (j.contains("offload_params")) p.offload_params = get_enum(j["offload_params"], path + ".offload_params", kOffloadNames);
  if (j.contains("account_for_embedding_in_pipeline_split"))
    p.account_for_embedding_in_pipeline_split =
        get_bool(j["account_for_embedding_in_pipeline_split"], path + ".account_for_embedding_in_pipeline_split");
  if (j.contains("account_for_loss_in_pipeline_split"))
    p.account_for_loss_in_pipeline_split =
        get_bool(j["account_for_loss_in_pipeline_split"], path + ".account_for_loss_in_pipeline_split");
  if (j.contains("first_stage_layers")) p.first_stage_layers = get_small_int(j["first_stage_layers"], path + ".first_stage_layers");
  if (j.contains("last_stage_layers")) p.last_stage_layers = get_small_int(j["last_stage_layers"], path + ".last_stage_layers");
}

// scenario.lora: rank, alpha, dropout, targets, modules_to_save.
void read_lora(const json& l, scenario& s) {
  require_object(l, "scenario.lora");
  if (!has_low_rank_path(s.meth))
    fail("scenario.lora", "only applies to method lora, qlora, dora or vera (got method " + std::string(to_string(s.meth)) + ")");
  check_keys(l, "scenario.lora", {"rank", "alpha", "dropout", "targets", "modules_to_save"});
  if (l.contains("rank")) s.lora.rank = get_int(l["rank"], "scenario.lora.rank");
  if (l.contains("alpha")) {
    s.lora.alpha = get_number(l["alpha"], "scenario.lora.alpha");
    // Here, not in validate() (read-only in this change): alpha/rank scales the update; PEFT's
    // examples use 8-512, so past [1e-3, 1e6] it is a slip. Non-positive: validate() says so.
    if (s.lora.alpha > 1e6 || (s.lora.alpha > 0 && s.lora.alpha < 1e-3))
      fail("scenario.lora.alpha", "must be between 0.001 and 1e6 (got " + detail::num(s.lora.alpha) + ")");
  }
  if (l.contains("dropout")) s.lora.dropout = get_number(l["dropout"], "scenario.lora.dropout");
  if (l.contains("targets")) s.lora.targets = read_targets(l["targets"], "scenario.lora.targets");
  if (l.contains("modules_to_save")) {
    const json& m = l["modules_to_save"];
    if (!m.is_array())
      fail("scenario.lora.modules_to_save", "must be a list of " + join_names(kLoraModuleNames) + " (got " + show(m) + ")");
    s.lora.modules_to_save = 0;
    for (std::size_t i = 0; i < m.size(); ++i)
      s.lora.modules_to_save |= get_enum(m[i], "scenario.lora.modules_to_save[" + std::to_string(i) + "]", kLoraModuleNames);
  }
}

// scenario.peft: options of the PEFT methods beyond LoRA (peft.hpp); each key belongs to its methods.
void read_peft(const json& p, scenario& s) {
  require_object(p, "scenario.peft");
  check_keys(p, "scenario.peft", {"virtual_tokens", "vera_rank", "ia3_targets"});
  // Each key applies to the methods whose traits list it (scenario.hpp kMethodTraits).
  const auto applies = [&](std::uint8_t key, const char* name) {
    if (!p.contains(name)) return false;
    if ((traits_of(s.meth).peft_keys & key) != 0) return true;
    std::string methods;
    for (const method_traits& t : kMethodTraits)
      if ((t.peft_keys & key) != 0) methods += (methods.empty() ? "" : " or ") + std::string(to_string(t.id));
    fail("scenario.peft." + std::string(name),
         "only applies to method " + methods + " (got method " + std::string(to_string(s.meth)) + ")");
  };
  if (applies(peft_key_virtual_tokens, "virtual_tokens"))
    s.peft.virtual_tokens = get_int(p["virtual_tokens"], "scenario.peft.virtual_tokens");
  if (applies(peft_key_vera_rank, "vera_rank")) s.peft.vera_rank = get_int(p["vera_rank"], "scenario.peft.vera_rank");
  if (applies(peft_key_ia3_targets, "ia3_targets"))
    s.peft.ia3_targets = read_targets(p["ia3_targets"], "scenario.peft.ia3_targets");
}

// scenario.freeze: the top layers that train.
void read_freeze(const json& f, scenario& s) {
  require_object(f, "scenario.freeze");
  if (s.meth != method::freeze)
    fail("scenario.freeze", "only applies to method freeze (got method " + std::string(to_string(s.meth)) + ")");
  check_keys(f, "scenario.freeze", {"trainable_layers"});
  if (f.contains("trainable_layers")) s.freeze.trainable_layers = get_int(f["trainable_layers"], "scenario.freeze.trainable_layers");
}

// scenario.quantization: the base weights' format (QLoRA's default under method qlora).
void read_quantization(const json& q, scenario& s) {
  require_object(q, "scenario.quantization");
  check_keys(q, "scenario.quantization", {"weights", "double_quant", "group_size"});
  quantization qq = s.meth == method::qlora ? base_quantization(s) : quantization{};
  if (q.contains("weights")) {
    qq.weights = get_enum(q["weights"], "scenario.quantization.weights", kWeightDtypeNames);
    if (qq.weights != dtype::nf4 && qq.weights != dtype::fp4) qq.double_quant = false;
  }
  if (q.contains("double_quant")) qq.double_quant = get_bool(q["double_quant"], "scenario.quantization.double_quant");
  if (q.contains("group_size")) qq.group_size = get_small_int(q["group_size"], "scenario.quantization.group_size");
  s.quant = qq;
}

// Precision, optimizer, batch, sequence and the training recipe's switches.
void read_training(const json& j, const architecture& model, scenario& s) {
  if (j.contains("precision")) s.prec = get_enum(j["precision"], "scenario.precision", kPrecisionNames);
  if (j.contains("optimizer")) s.opt = get_enum(j["optimizer"], "scenario.optimizer", kOptimizerNames);
  if (j.contains("micro_batch")) s.micro_batch = get_int(j["micro_batch"], "scenario.micro_batch");
  if (model.is_vit()) s.seq_len = model.vit_tokens();
  if (j.contains("seq_len")) s.seq_len = get_int(j["seq_len"], "scenario.seq_len");
  if (j.contains("grad_accum")) s.grad_accum = get_int(j["grad_accum"], "scenario.grad_accum");
  if (j.contains("framework")) s.fw = get_enum(j["framework"], "scenario.framework", kFrameworkNames);
  if (j.contains("checkpointing")) s.ckpt = get_enum(j["checkpointing"], "scenario.checkpointing", kCheckpointingNames);
  if (j.contains("attention")) s.attn = get_enum(j["attention"], "scenario.attention", kAttentionNames);
  if (j.contains("compile")) s.compile = get_bool(j["compile"], "scenario.compile");
  if (j.contains("fused_kernels")) s.fused_kernels = get_bool(j["fused_kernels"], "scenario.fused_kernels");
  if (j.contains("chunked_loss")) s.chunked_loss = get_bool(j["chunked_loss"], "scenario.chunked_loss");
  if (j.contains("inplace_loss")) s.inplace_loss = get_bool(j["inplace_loss"], "scenario.inplace_loss");
  if (j.contains("fused_linear_loss")) s.fused_linear_loss = get_bool(j["fused_linear_loss"], "scenario.fused_linear_loss");
  if (j.contains("tiled_mlp")) s.tiled_mlp = get_bool(j["tiled_mlp"], "scenario.tiled_mlp");
  if (j.contains("loss_tokens")) s.loss_tokens = get_int(j["loss_tokens"], "scenario.loss_tokens");
  if (j.contains("activation_offload")) s.activation_offload = get_bool(j["activation_offload"], "scenario.activation_offload");
  if (j.contains("optimizer_in_backward"))
    s.optimizer_in_backward = get_bool(j["optimizer_in_backward"], "scenario.optimizer_in_backward");
  if (j.contains("optimizer_kernel"))
    s.opt_kernel = get_enum(j["optimizer_kernel"], "scenario.optimizer_kernel", kOptimizerKernelNames);
  if (j.contains("keep_gradients")) s.keep_gradients = get_bool(j["keep_gradients"], "scenario.keep_gradients");
  if (j.contains("expandable_segments"))
    s.expandable_segments = get_bool(j["expandable_segments"], "scenario.expandable_segments");
  gpuplan::detail::validate_kernels(s);  // validate.hpp: also for scenarios built in C++ or Python
}

// scenario.network: the inter-node link, its latency and the host memory per node.
void read_network(const json& n, scenario& s) {
  require_object(n, "scenario.network");
  check_keys(n, "scenario.network", {"internode_gb_s", "latency_us", "host_memory_gib"});
  if (n.contains("internode_gb_s")) s.cluster.internode_per_gpu = gb_per_s(get_number(n["internode_gb_s"], "scenario.network.internode_gb_s"));
  if (n.contains("latency_us")) {
    const double us = get_number(n["latency_us"], "scenario.network.latency_us");
    detail::require_finite(us, 0, 1e6, "scenario.network.latency_us");
    // Kept at nanosecond resolution, as the writer prints it: a read run writes and reads back unchanged.
    s.cluster.internode_latency = seconds(std::round(us * 1e3) / 1e9);
  }
  if (n.contains("host_memory_gib")) {
    const double g = get_number(n["host_memory_gib"], "scenario.network.host_memory_gib");
    detail::require_finite(g, 1, 1e7, "scenario.network.host_memory_gib");
    s.cluster.host_memory_per_node = gib(g);
  }
}

// The GPU (default: an A100 80GB, the most common training card in published runs), its count and the network.
void read_hardware(const json& j, scenario& s) {
  if (j.contains("gpu")) {
    const json& g = j["gpu"];
    if (g.is_string()) s.gpu = find_gpu(g.get<std::string>(), "scenario.gpu");
    else if (g.is_object()) s.gpu = read_gpu(g, "scenario.gpu");
    else fail("scenario.gpu", "must be a catalog id or a GPU object (got " + show(g) + ")");
  } else {
    s.gpu = find_gpu("a100-80gb", "scenario.gpu");
  }
  if (j.contains("num_gpus")) s.num_gpus = get_small_int(j["num_gpus"], "scenario.num_gpus");
  if (j.contains("gpus_per_node")) s.cluster.gpus_per_node = get_small_int(j["gpus_per_node"], "scenario.gpus_per_node");
  if (j.contains("network")) read_network(j["network"], s);
}

// scenario.inference: the serving workload.
void read_inference(const json& in, scenario& s) {
  require_object(in, "scenario.inference");
  if (s.work != workload::infer) fail("scenario.inference", "only applies to workload infer (got workload train)");
  check_keys(in, "scenario.inference", {"batch", "prompt_len", "gen_len", "kv_cache_dtype", "max_batched_tokens", "gguf", "gpu_layers", "cuda_graphs", "memory_fraction"});
  if (in.contains("batch")) s.inference.batch = get_int(in["batch"], "scenario.inference.batch");
  if (in.contains("prompt_len")) s.inference.prompt_len = get_int(in["prompt_len"], "scenario.inference.prompt_len");
  if (in.contains("gen_len")) s.inference.gen_len = get_int(in["gen_len"], "scenario.inference.gen_len");
  if (in.contains("kv_cache_dtype")) s.inference.kv_cache_dtype = get_enum(in["kv_cache_dtype"], "scenario.inference.kv_cache_dtype", kKvCacheDtypeNames);
  if (in.contains("max_batched_tokens")) s.inference.max_batched_tokens = get_int(in["max_batched_tokens"], "scenario.inference.max_batched_tokens");
  if (in.contains("gguf")) s.inference.gguf = get_enum(in["gguf"], "scenario.inference.gguf", kGgufTypeNames);
  if (in.contains("gpu_layers")) {
    const std::int64_t ngl = get_int(in["gpu_layers"], "scenario.inference.gpu_layers");
    detail::require_range(ngl, 0, 1 << 20, "scenario.inference.gpu_layers");
    s.inference.gpu_layers = static_cast<int>(ngl);
  }
  if (in.contains("cuda_graphs")) s.inference.cuda_graphs = get_bool(in["cuda_graphs"], "scenario.inference.cuda_graphs");
  if (in.contains("memory_fraction")) s.inference.memory_fraction = get_number(in["memory_fraction"], "scenario.inference.memory_fraction");
}

// Serving engine, tokens to train and the price per GPU-hour.
void read_engine_and_costs(const json& j, scenario& s) {
  if (j.contains("engine")) {
    if (s.work != workload::infer) fail("scenario.engine", "only applies to workload infer (got workload train)");
    s.inference.eng = get_enum(j["engine"], "scenario.engine", kEngineNames);
  }
  if (j.contains("tokens")) s.tokens = get_amount(j["tokens"], "scenario.tokens");
  if (j.contains("price_per_gpu_hour")) {
    s.price_per_gpu_hour = get_number(j["price_per_gpu_hour"], "scenario.price_per_gpu_hour");
    // Here, not in validate() (read-only in this change; it bounds [0, 1e6]): 0 is a free GPU,
    // anything under a hundredth of a cent per GPU-hour a slip (the price catalog's lowest is $0.22).
    if (*s.price_per_gpu_hour > 0 && *s.price_per_gpu_hour < 1e-4)
      fail("scenario.price_per_gpu_hour", "must be 0 or at least 0.0001 per GPU-hour (got " + detail::num(*s.price_per_gpu_hour) + ")");
  }
}

// global_batch: derives grad_accum (or checks it) from micro_batch x data-parallel
// degree. The run is validated first, so every factor below is bounded.
void apply_global_batch(const json& j, const architecture& model, scenario& s) {
  const std::int64_t gbatch = get_int(j["global_batch"], "scenario.global_batch");
  detail::require_range(gbatch, 1, kMaxBatch * 1024, "scenario.global_batch");
  scenario r = s;  // the data-parallel degree depends on the resolved tp (run.hpp); s stays as written
  resolve_defaults(model, r);
  validate(model, r);
  const std::int64_t per_step = r.micro_batch * r.dp();
  if (per_step > gbatch)
    fail("scenario.micro_batch", "micro_batch*dp=" + std::to_string(per_step) + " exceeds global_batch=" + std::to_string(gbatch) +
                                     " (got micro_batch=" + std::to_string(s.micro_batch) + ")");
  if (gbatch % per_step != 0)
    fail("scenario.global_batch", "must be a multiple of micro_batch*dp=" + std::to_string(per_step) + " (got " + std::to_string(gbatch) + ")");
  if (j.contains("grad_accum") && s.grad_accum != gbatch / per_step)
    fail("scenario.grad_accum", "disagrees with global_batch/(micro_batch*dp)=" + std::to_string(gbatch / per_step) +
                                    " (got " + std::to_string(s.grad_accum) + ")");
  s.grad_accum = gbatch / per_step;
}

}  // namespace

scenario_input parse_scenario(const json& j) {
  require_object(j, "scenario");
  check_keys(j, "scenario", {
    "model", "workload", "method", "lora", "peft", "freeze", "quantization", "precision", "optimizer", "micro_batch",
    "seq_len", "grad_accum", "global_batch", "framework", "checkpointing", "attention", "compile", "fused_kernels",
    "chunked_loss", "fused_linear_loss", "tiled_mlp", "inplace_loss", "loss_tokens", "activation_offload", "optimizer_in_backward", "optimizer_kernel", "keep_gradients", "expandable_segments", "gpu", "num_gpus", "gpus_per_node", "network", "parallel",
    "inference", "tokens", "price_per_gpu_hour", "engine"});
  scenario s;
  if (!j.contains("model")) fail("scenario.model", "is required (a catalog name, a config.json path, a checkpoint directory or an inline config object)");
  auto model = std::make_shared<const architecture>(load_model(j["model"], "scenario.model"));
  std::string model_spec = j["model"].is_string() ? j["model"].get<std::string>()
                                                  : j["model"].dump(-1, ' ', false, json::error_handler_t::replace);

  if (j.contains("workload")) s.work = get_enum(j["workload"], "scenario.workload", kWorkloadNames);
  if (j.contains("method")) s.meth = get_enum(j["method"], "scenario.method", kMethodNames);
  if (j.contains("lora")) read_lora(j["lora"], s);
  if (j.contains("peft")) read_peft(j["peft"], s);
  if (j.contains("freeze")) read_freeze(j["freeze"], s);
  if (j.contains("quantization")) read_quantization(j["quantization"], s);
  read_training(j, *model, s);
  read_hardware(j, s);
  if (j.contains("parallel")) read_parallel(j["parallel"], s.parallel);
  if (j.contains("inference")) read_inference(j["inference"], s);
  read_engine_and_costs(j, s);
  if (j.contains("global_batch")) apply_global_batch(j, *model, s);

  return {std::move(model), std::move(s), std::move(model_spec)};
}

resolved_run read_scenario(const json& j) {
  scenario_input in = parse_scenario(j);
  return resolved_run{run(std::move(in.model), std::move(in.settings)), std::move(in.model_spec)};
}

resolved_run read_scenario_text(const std::string& text) {
  return read_scenario(detail::parse_json_text(text, "scenario"));
}

resolved_run read_scenario_file(const std::string& file) {
  return read_scenario_text(read_text_file(file, "scenario"));
}

namespace {

// The method's keys: lora, peft, freeze and quantization.
void write_method_keys(json& j, const scenario& s) {
  if (has_low_rank_path(s.meth)) {
    json targets = json::array();
    for (const auto& t : kLoraSingleTargetNames)
      if (s.lora.targets & t.value) targets.push_back(t.name);
    j["lora"] = {{"rank", s.lora.rank}, {"alpha", s.lora.alpha}, {"dropout", s.lora.dropout}, {"targets", targets}};
    if (s.lora.modules_to_save != 0) {
      json modules = json::array();
      for (const auto& m : kLoraModuleNames)
        if (s.lora.modules_to_save & m.value) modules.push_back(m.name);
      j["lora"]["modules_to_save"] = modules;
    }
  }
  const std::uint8_t keys = traits_of(s.meth).peft_keys;
  if (keys & peft_key_virtual_tokens) j["peft"]["virtual_tokens"] = s.peft.virtual_tokens;
  if (keys & peft_key_vera_rank) j["peft"]["vera_rank"] = s.peft.vera_rank;
  if (keys & peft_key_ia3_targets) {
    json targets = json::array();
    for (const auto& t : kLoraSingleTargetNames)
      if (s.peft.ia3_targets & t.value) targets.push_back(t.name);
    j["peft"]["ia3_targets"] = targets;
  }
  if (s.meth == method::freeze) j["freeze"] = {{"trainable_layers", s.freeze.trainable_layers}};
  if (s.quant)
    j["quantization"] = {{"weights", name_of(kWeightDtypeNames, s.quant->weights)},
                         {"double_quant", s.quant->double_quant},
                         {"group_size", s.quant->group_size}};
}

// The GPU (a catalog GPU by its id), its count, the network and the parallel layout.
void write_hardware_keys(json& j, const scenario& s) {
  // A catalog GPU by its id; anything else (a custom or overridden GPU) in full.
  bool catalog_gpu = false;
  try {
    catalog_gpu = !s.gpu.id.empty() && find_gpu(s.gpu.id) == s.gpu;
  } catch (const config_error&) {
    catalog_gpu = false;
  }
  if (catalog_gpu) j["gpu"] = s.gpu.id;
  else j["gpu"] = write_gpu(s.gpu);
  j["num_gpus"] = s.num_gpus;
  j["gpus_per_node"] = s.cluster.gpus_per_node;
  j["network"] = {{"latency_us", std::round(in_seconds(s.cluster.internode_latency) * 1e9) / 1e3},  // ns resolution: exact round trip
                  {"host_memory_gib", in_gib(s.cluster.host_memory_per_node)}};
  if (s.cluster.internode_per_gpu) j["network"]["internode_gb_s"] = in_gb_per_s(*s.cluster.internode_per_gpu);
  const auto& p = s.parallel;
  j["parallel"] = {{"tp", p.tp_size()}, {"pp", p.pp}, {"virtual_stages", p.virtual_stages}, {"sp", p.sp_enabled()}, {"cp", p.cp},
                   {"ep", p.ep}, {"zero", p.zero}, {"offload_optimizer", to_string(p.offload_optimizer)},
                   {"offload_params", to_string(p.offload_params)}};
  if (p.account_for_embedding_in_pipeline_split) j["parallel"]["account_for_embedding_in_pipeline_split"] = true;
  if (p.account_for_loss_in_pipeline_split) j["parallel"]["account_for_loss_in_pipeline_split"] = true;
  if (p.first_stage_layers) j["parallel"]["first_stage_layers"] = *p.first_stage_layers;
  if (p.last_stage_layers) j["parallel"]["last_stage_layers"] = *p.last_stage_layers;
}

// Serving: the inference keys and the engine.
void write_inference_keys(json& j, const scenario& s) {
  if (s.work == workload::infer)
    j["inference"] = {{"batch", s.inference.batch}, {"prompt_len", s.inference.prompt_len},
                      {"gen_len", s.inference.gen_len}, {"kv_cache_dtype", name_of(kKvCacheDtypeNames, s.inference.kv_cache_dtype)}};
  if (s.work == workload::infer) {
    j["engine"] = to_string(s.inference.eng);
    if (s.inference.max_batched_tokens > 0) j["inference"]["max_batched_tokens"] = s.inference.max_batched_tokens;
    if (s.inference.gguf) j["inference"]["gguf"] = to_string(*s.inference.gguf);
    if (s.inference.gpu_layers) j["inference"]["gpu_layers"] = *s.inference.gpu_layers;
    if (s.inference.cuda_graphs) j["inference"]["cuda_graphs"] = *s.inference.cuda_graphs;
    if (s.inference.memory_fraction) j["inference"]["memory_fraction"] = *s.inference.memory_fraction;
  }
}

}  // namespace

json write_scenario(const resolved_run& r) {
  const scenario& s = r.settings();
  json j;
  if (!r.model_spec.empty() && r.model_spec.front() == '{') j["model"] = json::parse(r.model_spec);
  else j["model"] = r.model_spec.empty() ? r.model().name : r.model_spec;
  j["workload"] = to_string(s.work);
  j["method"] = to_string(s.meth);
  write_method_keys(j, s);
  j["precision"] = to_string(precision_of(s));
  j["optimizer"] = to_string(s.opt);
  j["micro_batch"] = s.micro_batch;
  j["seq_len"] = s.seq_len;
  j["grad_accum"] = s.grad_accum;
  j["framework"] = to_string(s.fw);
  if (s.ckpt) j["checkpointing"] = to_string(*s.ckpt);
  j["attention"] = to_string(s.attn);
  j["compile"] = s.compile;
  j["fused_kernels"] = s.fused_kernels;
  j["chunked_loss"] = s.chunked_loss;
  j["fused_linear_loss"] = s.fused_linear_loss;
  j["tiled_mlp"] = s.tiled_mlp;
  j["inplace_loss"] = s.inplace_loss;
  if (s.loss_tokens) j["loss_tokens"] = *s.loss_tokens;
  j["activation_offload"] = s.activation_offload;
  j["optimizer_in_backward"] = s.optimizer_in_backward;
  if (s.opt_kernel) j["optimizer_kernel"] = to_string(*s.opt_kernel);
  j["keep_gradients"] = s.keep_gradients;
  j["expandable_segments"] = s.expandable_segments;
  write_hardware_keys(j, s);
  write_inference_keys(j, s);
  if (s.tokens) j["tokens"] = *s.tokens;
  if (s.price_per_gpu_hour) j["price_per_gpu_hour"] = *s.price_per_gpu_hour;
  return j;
}

}  // namespace gpuplan::io
