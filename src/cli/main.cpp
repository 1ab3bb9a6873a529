// main.cpp — the `gpuplan` command-line tool (CLI11).
// Every subcommand builds a scenario JSON object (from --scenario FILE, MODEL and
// flags) and hands it to io::read_scenario, so the CLI, the scenario file, C++ and
// Python share one validation path. Exit codes: 0 ok, 1 "does not fit" (fit only),
// 2 usage or input error, 3 "tight" (fit only); every error is one line "gpuplan: <path>: <reason>".
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/framework_rules.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/export.hpp"
#include "gpuplan/io/file_text.hpp"
#include "gpuplan/io/profile.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/plan.hpp"
#include "gpuplan/plan_names.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/version.hpp"
#include "hooks.hpp"
#include "numeric_options.hpp"
#include "json_text.hpp"
#include "diffusion_command.hpp"
#include "vision_command.hpp"

namespace gpuplan::cli {
int run_serve(const io::resolved_run& r, const std::optional<std::string>& latency, std::optional<std::int64_t> concurrency,
              const io::style& st);
}  // namespace gpuplan::cli

namespace {

using nlohmann::json;
namespace io = gpuplan::io;
using gpuplan::config_error;

constexpr int kExitOk = 0;
constexpr int kExitDoesNotFit = 1;
constexpr int kExitUsage = 2;
constexpr int kExitTight = 3;  // fit: the median estimate fits, its P90 does not (bands.hpp)

const char* const kExitCodes =
    "Exit codes: 0 ok (fit: the P90 of the estimate plus the headroom, 5% or 1 GiB, fits; see --confidence, "
    "--headroom); 1 the run does not fit (fit only); 2 usage or input error (one line on stderr: "
    "'gpuplan: <path>: <reason>'); 3 tight: the median estimate fits, its P90 plus the headroom does not (fit only).";

// A message on one line of printable text: a name quoted raw in it cannot move the cursor.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  s = gpuplan::io::printable(s);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// ------------------------------------------------------------------ output style

struct output_args {
  bool json = false;
  std::string format = "text";
};

std::vector<std::string> report_format_words() {
  std::vector<std::string> words = gpuplan::names_of(io::kReportFormatNames);
  for (const auto& alias : gpuplan::names_of(io::kReportFormatAliases)) words.push_back(alias);
  return words;
}

void add_output_options(CLI::App* sub, output_args& out) {
  sub->add_flag("--json", out.json, "Print JSON (same as --format json)")->group("Output");
  sub->add_option("--format", out.format, "Output format: " + gpuplan::join_names(io::kReportFormatNames))
      ->check(CLI::IsMember(report_format_words()))
      ->group("Output");
}

// The planning margin of fit, search/plan and recommend (plan/margin.hpp).
void add_margin_options(CLI::App* sub, gpuplan::cli::margin_request& m) {
  sub->add_option("--confidence", m.confidence, "Plan on this quantile of the memory band: 0.5, 0.9 (default) or 0.99")
      ->group("Margin");
  sub->add_option("--headroom", m.headroom, "Memory kept free: 5%, 2GiB or 5%,1GiB (the larger; default)")->group("Margin");
}

io::style make_style(const output_args& out) {
  io::style s;
  s.format = out.json ? io::report_format::json : io::parse_report_format(out.format);
  // Colour only for a terminal, and never when NO_COLOR is set (https://no-color.org).
  const char* no_color = std::getenv("NO_COLOR");
  s.color = s.format == io::report_format::text && isatty(STDOUT_FILENO) == 1 &&
            (no_color == nullptr || no_color[0] == '\0');
  return s;
}

// ------------------------------------------------------------------- run options

// Flags become scenario keys (dotted paths); `flag_of` maps each path back to its
// flag so a validation error names what the user typed.
struct run_args {
  std::string model;
  std::string scenario_file;
  std::string gpu;
  std::string gpu_file;
  std::string methods;  // fit: a comma list
  CLI::Option* methods_opt = nullptr;
  std::vector<std::pair<std::string, json>> overrides;
  std::map<std::string, std::string> flag_of;
  std::set<std::string> file_keys;  // dotted paths present in the --scenario file
  std::string profile_file;         // --profile: a calibration profile (gpuplan calibrate)
  std::shared_ptr<const gpuplan::profile> profile;  // read once, shared by every run built
};

// Flags a subcommand defines itself (search's --global-batch, recommend's --price ...).
thread_local const std::set<std::string>* skipped_flags = nullptr;
bool skipped(const std::string& flag) {
  return skipped_flags != nullptr && skipped_flags->contains(flag.substr(0, flag.find(',')));
}

template <class T>
void add_key(CLI::App* sub, run_args& a, const std::string& flag, const std::string& path, const std::string& help) {
  if (skipped(flag)) return;
  a.flag_of[path] = flag;
  const std::string name = flag.substr(0, flag.find(','));
  sub->add_option_function<T>(
      flag,
      [&a, path, name](const T& v) {
        // JSON has no NaN or infinity: say what was typed instead of "got null".
        if constexpr (std::is_floating_point_v<T>)
          if (!std::isfinite(v)) throw config_error(name, "must be a finite number (got " + gpuplan::detail::num(v) + ")");
        a.overrides.emplace_back(path, json(v));
      },
      help);
}

void add_bool_key(CLI::App* sub, run_args& a, const std::string& flag, const std::string& path, const std::string& help,
                  bool value = true) {
  if (skipped(flag)) return;
  a.flag_of[path] = flag;
  sub->add_flag_function(
      flag, [&a, path, value](std::int64_t) { a.overrides.emplace_back(path, json(value)); }, help);
}

void add_run_options(CLI::App* sub, run_args& a, bool model_positional, bool fit_methods,
                     const std::set<std::string>& skip = {}) {
  using gpuplan::join_names;
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
  add_key<std::int64_t>(sub, a, "--seq", "seq_len", "Sequence length (tokens)");
  add_key<std::int64_t>(sub, a, "--batch,-b", "micro_batch", "Micro-batch size per GPU");
  add_key<std::int64_t>(sub, a, "--grad-accum", "grad_accum", "Gradient accumulation steps");
  add_key<std::int64_t>(sub, a, "--global-batch", "global_batch", "Global batch (derives --grad-accum)");
  add_key<std::string>(sub, a, "--precision", "precision", name_list<gpuplan::precision>());
  add_key<std::string>(sub, a, "--optimizer", "optimizer", name_list<gpuplan::optimizer>());
  add_key<std::string>(sub, a, "--framework", "framework", "Training framework (its defaults, memory and speed): " + name_list<gpuplan::framework>());
  add_key<std::string>(sub, a, "--checkpointing", "checkpointing", "Activation checkpointing (default: the framework's recipe): " + name_list<gpuplan::checkpointing>());
  add_key<std::string>(sub, a, "--attention", "attention", name_list<gpuplan::attention>());
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
  add_key<std::int64_t>(sub, a, "--lora-rank", "lora.rank", "LoRA rank");
  add_key<double>(sub, a, "--lora-alpha", "lora.alpha", "LoRA alpha");
  add_key<std::string>(sub, a, "--lora-targets", "lora.targets",
                       "Comma list of " + join_names(gpuplan::kLoraSingleTargetNames, ",") + " or " +
                           std::string(gpuplan::to_string(gpuplan::lora_all_linear)));
  add_key<std::int64_t>(sub, a, "--freeze-layers", "freeze.trainable_layers", "method freeze: top N layers train");
  add_key<std::string>(sub, a, "--quant", "quantization.weights", "Base weights: " + join_names(gpuplan::kWeightDtypeNames));
  add_bool_key(sub, a, "--double-quant", "quantization.double_quant", "Double quantization of 4-bit scales");
  add_key<std::int64_t>(sub, a, "--group-size", "quantization.group_size", "Quantization group size");
  add_bool_key(sub, a, "--chunked-loss", "chunked_loss", "Chunked cross-entropy (no full logits)");
  add_bool_key(sub, a, "--compile", "compile", "torch.compile");
  add_bool_key(sub, a, "--fused-kernels", "fused_kernels", "Fused norm/rotary/MLP kernels without torch.compile (Liger, Apex, Transformer Engine)");
  add_bool_key(sub, a, "--activation-offload", "activation_offload", "Offload saved activations to the CPU");
  add_bool_key(sub, a, "--optimizer-in-backward", "optimizer_in_backward", "Step the optimizer during backward");
  add_key<std::string>(sub, a, "--optimizer-kernel", "optimizer_kernel",
                       "Optimizer step kernels: " + name_list<gpuplan::optimizer_kernel>() + " (default: the framework's)");
  add_bool_key(sub, a, "--keep-gradients", "keep_gradients", "Gradients kept between steps (PyTorch < 2.0 zero_grad(), set_to_none=False)");
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
  add_bool_key(sub, a, "--enforce-eager", "inference.cuda_graphs",
               "Serving: decode without CUDA graphs (vLLM --enforce-eager; default: the engine's)", false);
  add_key<std::string>(sub, a, "--tokens", "tokens", "Training tokens: 1T, 300B, 2e9");
  add_key<double>(sub, a, "--price", "price_per_gpu_hour", "Price per GPU-hour (for cost)");
  sub->add_option("--profile", a.profile_file, "Calibration profile from 'gpuplan calibrate': its constants and bands")
      ->group("Calibration");

  // Help groups, in the order a reader looks for them.
  const std::pair<const char*, std::vector<const char*>> groups[] = {
      {"Run", {"--scenario", "--gpu", "--gpu-file", "--method", "--seq", "--batch", "--grad-accum", "--global-batch",
               "--framework", "--precision", "--optimizer", "--checkpointing", "--attention", "--chunked-loss", "--compile", "--fused-kernels",
               "--activation-offload", "--optimizer-in-backward", "--optimizer-kernel", "--keep-gradients"}},
      {"Parallelism", {"--gpus", "--gpus-per-node", "--tp", "--pp", "--virtual-stages", "--sp", "--cp", "--ep",
                       "--zero", "--offload-optimizer", "--offload-params", "--account-for-embedding-in-pipeline-split",
                       "--account-for-loss-in-pipeline-split", "--first-stage-layers", "--last-stage-layers"}},
      {"LoRA, QLoRA, freeze", {"--lora-rank", "--lora-alpha", "--lora-targets", "--freeze-layers", "--quant",
                               "--double-quant", "--group-size"}},
      {"Serving", {"--infer", "--infer-batch", "--prompt-len", "--gen-len", "--kv-dtype", "--engine", "--max-batched-tokens",
                   "--gguf", "--gpu-layers", "--enforce-eager"}},
      {"Time and cost", {"--tokens", "--price"}},
  };
  for (const auto& [group, names] : groups)
    for (const char* name : names)
      if (!skip.contains(name)) sub->get_option(name)->group(group);
  skipped_flags = nullptr;
}

// Regular files of at most 16 MiB (io/file_text.hpp), bounded nesting and escaped bytes
// (the readers' shared parser, src/json_text.hpp).
json read_json_file(const std::string& file, const std::string& path) {
  const std::string text = io::read_text_file(file, path);
  return gpuplan::detail::parse_json_text(text, path, "malformed JSON in '" + gpuplan::detail::quote_text(file) + "'");
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

// Rewrites a reader error's path ("scenario.parallel.tp") to the flag that set it ("--tp").
[[noreturn]] void rethrow_with_flag(const config_error& e, const run_args& a) {
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

io::resolved_run build_run(run_args& a, const std::string* method_override) {
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
    auto lora_like = [](std::optional<method> m) {
      return m == method::lora || m == method::qlora || m == method::dora || m == method::vera;
    };
    if (!lora_like(self) && std::ranges::any_of(all, [&](method m) { return lora_like(m); })) j.erase("lora");
    auto peft_like = [](std::optional<method> m) {
      return m == method::ia3 || m == method::vera || m == method::prompt_tuning || m == method::prefix_tuning;
    };
    if (!peft_like(self) && std::ranges::any_of(all, [&](method m) { return peft_like(m); })) j.erase("peft");
    if (self != method::freeze && all.contains(method::freeze)) j.erase("freeze");
  }
  io::resolved_run r = [&] {
    try {
      return io::read_scenario(j);
    } catch (const config_error& e) {
      rethrow_with_flag(e, a);
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

// recommend for an image or diffusion model: the run flags that apply to a layer graph
// become the query's fields; any other names what was typed and why it does not apply.
io::graph_recommend_query graph_query_of(const run_args& a, io::graph_recommend_query q) {
  const auto flag = [&a](const std::string& path) {
    const auto it = a.flag_of.find(path);
    return it == a.flag_of.end() ? path : it->second.substr(0, it->second.find(','));
  };
  const std::string not_graph = "does not apply to image and diffusion models";
  if (!a.scenario_file.empty()) throw config_error("--scenario", not_graph + " (got '" + a.scenario_file + "')");
  if (!a.gpu.empty()) throw config_error("--gpu", "recommend ranks the GPUs of --gpus-list (got '" + a.gpu + "')");
  if (!a.profile_file.empty()) throw config_error("--profile", not_graph + " (got '" + a.profile_file + "')");
  q.model = a.model;
  for (const auto& [path, v] : a.overrides) {
    const auto text = [&v = v] { return v.is_string() ? v.get<std::string>() : v.dump(); };
    if (path == "method") q.method = text();
    else if (path == "micro_batch") q.batch = v.get<std::int64_t>();
    else if (path == "precision") q.precision = text();
    else if (path == "optimizer") q.optimizer = text();
    else if (path == "lora.rank") q.lora_rank = v.get<std::int64_t>();
    else if (path == "parallel.zero") q.zero = v.get<int>();
    else if (path == "checkpointing") {
      if (text() != "none" && text() != "full")
        throw config_error("--checkpointing", "must be none or full for image and diffusion models (got " + text() + ")");
      q.checkpointing = text() == "full";
    } else {
      throw config_error(flag(path), not_graph + " (got " + text() + ")");
    }
  }
  return q;
}

void print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
}
// Invalid UTF-8 (a model path or name taken from the user) is replaced, not thrown.
void print_json(const json& j) { print(j.dump(2, ' ', false, json::error_handler_t::replace) + "\n"); }

// --------------------------------------------------------------------- commands

int cmd_describe(const std::string& model, const output_args& out) {
  const io::style st = make_style(out);
  const gpuplan::architecture a = io::load_model(std::string_view(model), "model");
  if (st.format == io::report_format::json) {
    json j = io::describe_json(a);
    if (const std::int64_t official = io::official_parameters(a.name); official > 0)
      j["official_parameters"] = official;
    print_json(j);
  } else {
    print(io::describe_report(a, st));
  }
  return kExitOk;
}

int cmd_models(const output_args& out) {
  const io::style st = make_style(out);
  json arr = json::array();
  io::table t;
  t.header = {"Model", "Family", "Parameters", "Layers", "Hidden", "Heads (kv)", "FFN", "Vocab", "Context"};
  for (const auto& name : io::model_names()) {
    const gpuplan::architecture& a = io::find_model(name);
    const auto p = gpuplan::count_parameters(a);
    arr.push_back({{"name", name},
                   {"family", a.family},
                   {"parameters", p.total},
                   {"official_parameters", io::official_parameters(name)},
                   {"layers", a.total_layers()},
                   {"hidden_size", a.hidden},
                   {"num_attention_heads", a.heads},
                   {"num_key_value_heads", a.n_kv_heads()},
                   {"intermediate_size", a.ffn},
                   {"vocab_size", a.vocab},
                   {"max_position_embeddings", a.max_positions}});
    t.rows.push_back({name, a.family, io::format_params(p.total), std::to_string(a.total_layers()),
                      std::to_string(a.hidden),
                      std::to_string(a.heads) + " (" + std::to_string(a.n_kv_heads()) + ")", std::to_string(a.ffn),
                      std::to_string(a.vocab), a.max_positions > 0 ? std::to_string(a.max_positions) : "-"});
  }
  if (st.format == io::report_format::json) {
    print_json(arr);
  } else {
    t.right_align = {false, false, true, true, true, true, true, true, true};
    t.notes.push_back(std::to_string(t.rows.size()) + " models. 'gpuplan describe MODEL' shows the breakdown.");
    print(io::render(t, st));
  }
  return kExitOk;
}

std::string tflops(const std::optional<gpuplan::FlopRate>& r) {
  return r ? io::format_number(gpuplan::in_tflop_per_s(*r)) : std::string("-");
}

int cmd_gpus(const run_args& a, const output_args& out) {
  load_extra_gpus(a);
  const io::style st = make_style(out);
  json arr = json::array();
  io::table t;
  t.header = {"GPU", "Name", "Memory", "Usable", "Bandwidth", "BF16 dense", "FP8 dense", "Link", "TDP", "Confidence"};
  for (const auto& id : io::gpu_ids()) {
    const gpuplan::gpu_spec& g = io::find_gpu(id);
    arr.push_back(io::write_gpu(g));  // the catalog's columns and units: a valid GPU object
    t.rows.push_back({g.id, g.name, io::format_bytes_short(g.memory), io::format_bytes_short(g.usable_memory),
                      io::format_number(gpuplan::in_gb_per_s(g.bandwidth)) + " GB/s", tflops(g.bf16) + " TFLOP/s",
                      g.fp8 ? tflops(g.fp8) + " TFLOP/s" : std::string("-"), g.link,
                      io::format_number(g.tdp_watts) + " W", g.confidence});
  }
  if (st.format == io::report_format::json) {
    print_json(arr);
  } else {
    t.right_align = {false, false, true, true, true, true, true, false, true, false};
    t.notes.push_back("Tensor rates are dense (no 2:4 sparsity), BF16 with FP32 accumulate. GB = 10^9 bytes.");
    print(io::render(t, st));
  }
  return kExitOk;
}

int cmd_fit(run_args& a, const output_args& out, const gpuplan::cli::margin_request& mr) {
  load_extra_gpus(a);
  const io::style st = make_style(out);
  const gpuplan::plan_margin margin = gpuplan::cli::parse_margin(mr);
  std::vector<std::string> methods;
  if (a.methods_opt != nullptr && a.methods_opt->count() > 0) methods = split_methods(a.methods);
  std::vector<io::resolved_run> runs;
  if (methods.empty()) runs.push_back(build_run(a, nullptr));
  for (const auto& m : methods) runs.push_back(build_run(a, &m));

  std::vector<io::labelled_memory> cols;
  std::vector<gpuplan::memory_bands> bands;
  bool all_fit = true;
  gpuplan::verdict worst = gpuplan::verdict::fits;
  json results = json::array();
  for (const auto& r : runs) {
    const gpuplan::memory_breakdown mem = gpuplan::estimate_memory(r.run);
    bands.push_back(gpuplan::bands_of(r.run, mem));
    // One answer per run: its verdict, fits = verdict != does_not_fit, the P50 headroom (io::answer_of).
    const io::fit_answer answer = io::answer_of(mem, bands.back(), margin);
    const gpuplan::verdict v = answer.state;
    worst = std::max(worst, v);
    all_fit = all_fit && answer.fits;
    cols.push_back({std::string(gpuplan::to_string(r.settings().meth)), mem, answer});
    if (st.format == io::report_format::json) {
      json j = io::estimate_json(r);
      json item = {{"method", gpuplan::to_string(r.settings().meth)},
                   {"model", j["model"]},
                   {"scenario", j["scenario"]},
                   {"memory", j["memory"]},
                   {"fits", answer.fits},
                   {"verdict", gpuplan::to_string(v)},
                   {"binding", gpuplan::to_string(gpuplan::largest_component(mem))},
                   {"warnings", io::warning_messages(mem.warnings)},
                   {"limits", gpuplan::cli::limits_of(r, margin).json},
                   {"suggestions", nullptr}};
      if (v != gpuplan::verdict::fits)
        if (auto s = gpuplan::cli::what_would_make_it_fit(r, margin)) item["suggestions"] = s->json;
      results.push_back(std::move(item));
    }
  }
  const int exit_code = worst == gpuplan::verdict::does_not_fit ? kExitDoesNotFit
                        : worst == gpuplan::verdict::tight       ? kExitTight
                                                                 : kExitOk;
  if (st.format == io::report_format::json) {
    print_json({{"fits", all_fit}, {"verdict", gpuplan::to_string(worst)}, {"results", std::move(results)}});
    return exit_code;
  }

  const auto& first = runs.front();
  const bool md = st.format == io::report_format::markdown;
  std::string text = std::string(md ? "### " : "") + io::printable(first.model().name) + " (" +
                     io::format_params(gpuplan::count_parameters(first.model()).total) + " parameters) on " +
                     std::to_string(first.settings().num_gpus) + " × " + io::printable(first.settings().gpu.name) + "\n";
  text += io::run_summary(first.settings(), runs.size() == 1) + "\n\n";
  io::table t = io::memory_table(cols, first.settings().work);
  text += io::render(t, st) + "\n";
  gpuplan::warning_set warnings = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs.size() > 1) text += (md ? "- **" + cols[i].label + "**: " : cols[i].label + ": ");
    text += io::verdict_line(cols[i].memory, bands[i], st, margin) + "\n";
    warnings |= cols[i].memory.warnings;
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    io::table limits = gpuplan::cli::limits_of(runs[i], margin).table;
    if (runs.size() > 1) limits.title += " (" + cols[i].label + ")";
    text += "\n" + io::render(limits, st);
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (gpuplan::verdict_of(cols[i].memory, bands[i], margin) == gpuplan::verdict::fits) continue;
    if (auto s = gpuplan::cli::what_would_make_it_fit(runs[i], margin)) {
      s->table.title = "What would make " + cols[i].label + " fit";
      text += "\n" + io::render(s->table, st);
    }
  }
  for (const auto& w : io::warning_messages(warnings)) text += "warning: " + w + "\n";
  print(text);
  return exit_code;
}

int cmd_time(run_args& a, const output_args& out) {
  load_extra_gpus(a);
  const io::style st = make_style(out);
  const io::resolved_run r = build_run(a, nullptr);
  if (st.format == io::report_format::json) {
    print_json(io::estimate_json(r));
    return kExitOk;
  }
  const gpuplan::time_estimate t = gpuplan::estimate_time(r.run);
  const gpuplan::memory_breakdown mem = gpuplan::estimate_memory(r.run);
  const bool md = st.format == io::report_format::markdown;
  std::string text = std::string(md ? "### " : "") + io::printable(r.model().name) + " on " +
                     std::to_string(r.settings().num_gpus) + " × " + io::printable(r.settings().gpu.name) + "\n" + io::run_summary(r.settings()) + "\n\n";
  text += io::time_report(t, r.settings(), st);
  text += "\nmemory: " + io::verdict_line(mem, gpuplan::bands_of(r.run, mem), st) + "\n";
  for (const auto& w : io::warning_messages(t.warnings | mem.warnings)) text += "warning: " + w + "\n";
  print(text);
  return kExitOk;
}

int cmd_estimate(run_args& a, const output_args& out) {
  load_extra_gpus(a);
  const io::style st = make_style(out);
  const io::resolved_run r = build_run(a, nullptr);
  if (st.format == io::report_format::json) print_json(io::estimate_json(r));
  else print(io::estimate_report(r, st));
  return kExitOk;
}

// `gpuplan calibrate`: measurements from --measurements FILE and/or one measured run
// given as run flags plus --measured-*; the profile is printed and saved with --out.
struct calibrate_args {
  std::string measurements_file, name = "my-run", out_file;
  std::string allocated, reserved, device, step;
  std::optional<double> tokens_per_second;
  bool force = false;  // --force: replace an existing --out file
};

// The run given by flags and its --measured-* figures, each checked as it is read:
// memory figures need a unit (io::parse_measured_size), and every error names the flag.
gpuplan::measurement flag_measurement(run_args& a, const calibrate_args& c) {
  const io::resolved_run r = build_run(a, nullptr);
  gpuplan::measurement m;
  m.model = r.model();
  m.run = r.settings();
  m.names = {"--measured-step", "--measured-step", "--measured-tokens-per-second", "--measured-allocated",
             "--measured-reserved", "--measured-device"};
  if (!c.allocated.empty()) m.peak_allocated = gpuplan::bytes(io::parse_measured_size(c.allocated, "--measured-allocated"));
  if (!c.reserved.empty()) m.peak_reserved = gpuplan::bytes(io::parse_measured_size(c.reserved, "--measured-reserved"));
  if (!c.device.empty()) m.device = gpuplan::bytes(io::parse_measured_size(c.device, "--measured-device"));
  if (!c.step.empty()) m.step = gpuplan::seconds(io::parse_positive_seconds(c.step, "--measured-step"));  // bounded below
  if (c.tokens_per_second) m.tokens_per_second_per_gpu = io::positive_amount(*c.tokens_per_second, "--measured-tokens-per-second");
  gpuplan::check_measurement(m, 0);
  return m;
}

int cmd_calibrate(run_args& a, const calibrate_args& c, const output_args& out) {
  load_extra_gpus(a);
  if (c.force && c.out_file.empty()) throw config_error("--force", "needs --out FILE (it replaces that file)");
  std::error_code ignored;
  if (!c.out_file.empty() && !c.force && std::filesystem::exists(c.out_file, ignored))
    throw config_error("--out", c.out_file + " exists; add --force to replace it", gpuplan::error_kind::io_error);
  std::vector<gpuplan::measurement> data;
  if (!c.measurements_file.empty()) {
    try {
      data = io::read_measurements_file(c.measurements_file);
    } catch (const config_error& e) {
      throw config_error("--measurements", e.what(), e.kind());
    }
  }
  const bool one = !c.allocated.empty() || !c.reserved.empty() || !c.device.empty() || !c.step.empty() || c.tokens_per_second;
  if (one) {
    data.push_back(flag_measurement(a, c));
  } else if (!a.model.empty() || !a.scenario_file.empty()) {
    throw config_error("--measured-device", "is missing: a run given by flags needs at least one --measured-* figure");
  }
  if (data.empty()) throw config_error("--measurements", "is required: a measurements file, or MODEL with --measured-* figures");
  const gpuplan::profile p = gpuplan::calibrate_profile(data, c.name);
  if (!c.out_file.empty()) {
    try {
      io::save_profile_file(p, c.out_file, c.force);
    } catch (const config_error& e) {
      throw config_error("--out", e.what(), e.kind());
    }
  }
  if (make_style(out).format == io::report_format::json) {
    print_json(io::write_profile(p));
  } else {
    gpuplan::run shown(data.front().model, data.front().run);
    shown.calibrate_with(std::make_shared<const gpuplan::profile>(p));
    print(io::calibration_text(shown) + "\n");
    if (!c.out_file.empty())
      print("Saved to " + io::printable(c.out_file) + ": add --profile " + io::printable(c.out_file) +
            " to fit, time, estimate, search and recommend.\n");
  }
  return kExitOk;
}

int cmd_explain(run_args& a, const output_args& out) {
  load_extra_gpus(a);
  const io::style st = make_style(out);
  const io::resolved_run r = build_run(a, nullptr);
  if (st.format != io::report_format::json) {
    print(io::explain_report(r, st));
    return kExitOk;
  }
  const json e = io::estimate_json(r);
  json terms = json::array();
  auto lookup = [&](const std::string& k) -> json {
    if (e["memory"].contains(k)) return e["memory"][k];
    if (e["time"].contains(k)) return e["time"][k];
    if (e["time"]["breakdown"].contains(k)) return e["time"]["breakdown"][k];
    return json();
  };
  for (const auto* list : {&io::memory_terms(), &io::time_terms()})
    for (const auto& t : *list) {
      const std::string key(t.key);
      const bool present = e["memory"].contains(key) || e["time"].contains(key) || e["time"]["breakdown"].contains(key);
      if (!present) continue;
      terms.push_back({{"key", key}, {"label", t.label}, {"value", lookup(key)}, {"formula", t.formula}, {"source", t.source}});
    }
  json rules = json::array();
  for (const gpuplan::framework_rule& x : gpuplan::framework_rules(r.model(), r.settings()))
    rules.push_back({{"terms", x.terms}, {"rule", x.rule}, {"effect", x.effect}, {"source", x.source}});
  const gpuplan::framework_profile& fp = gpuplan::profile_of(r.settings().fw);
  json framework = {{"id", gpuplan::to_string(fp.id)}, {"summary", fp.summary}, {"rules", std::move(rules)}};
  print_json({{"model", e["model"]}, {"scenario", e["scenario"]}, {"framework", std::move(framework)}, {"terms", std::move(terms)}});
  return kExitOk;
}

// ------------------------------------------------------------------- completion

std::string bash_completion(CLI::App& app) {
  using gpuplan::join_names;
  using gpuplan::name_list;
  std::string models;
  for (const auto& m : io::model_names()) models += (models.empty() ? "" : " ") + m;
  std::string gpus;
  for (const auto& g : io::gpu_ids()) gpus += (gpus.empty() ? "" : " ") + g;
  auto words = [](const std::string& list) { return "$(compgen -W \"" + list + "\" -- \"$cur\")"; };

  std::string cmds;
  std::string per_command;
  for (const CLI::App* sub : app.get_subcommands({})) {
    cmds += (cmds.empty() ? "" : " ") + sub->get_name();
    std::string flags = "--help";
    for (const CLI::Option* o : sub->get_options()) {
      for (const auto& l : o->get_lnames()) flags += " --" + l;
      for (const auto& s : o->get_snames()) flags += " -" + s;
    }
    per_command += "    " + sub->get_name() + ") opts=\"" + flags + "\" ;;\n";
  }
  std::string s;
  s += "# bash completion for gpuplan " + std::string(gpuplan::version_string) + " — generated by 'gpuplan completion bash'.\n";
  s += "# Install: gpuplan completion bash > ~/.local/share/bash-completion/completions/gpuplan\n";
  s += "_gpuplan() {\n";
  s += "  local cur prev cmd opts\n";
  s += "  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n";
  s += "  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n";
  s += "  local models=\"" + models + "\"\n";
  s += "  local gpus=\"" + gpus + "\"\n";
  s += "  local cmds=\"" + cmds + "\"\n";
  s += "  if [[ $COMP_CWORD -eq 1 ]]; then\n";
  s += "    COMPREPLY=( $(compgen -W \"$cmds --help --version\" -- \"$cur\") ); return 0\n";
  s += "  fi\n";
  s += "  case \"$prev\" in\n";
  s += "    --gpu|-g) COMPREPLY=( $(compgen -W \"$gpus\" -- \"$cur\") $(compgen -f -X '!*.json' -- \"$cur\") ); return 0 ;;\n";
  // Enum values from their name tables; --method also offers the usual comparison list.
  const std::string comparison = join_names(std::span(gpuplan::kMethodNames).first(3), ",");  // full,lora,qlora
  s += "    --method|-m) COMPREPLY=( " + words(name_list<gpuplan::method>(" ") + " " + comparison) + " ); return 0 ;;\n";
  s += "    --precision) COMPREPLY=( " + words(name_list<gpuplan::precision>(" ")) + " ); return 0 ;;\n";
  s += "    --optimizer) COMPREPLY=( " + words(name_list<gpuplan::optimizer>(" ")) + " ); return 0 ;;\n";
  s += "    --checkpointing) COMPREPLY=( " + words(name_list<gpuplan::checkpointing>(" ")) + " ); return 0 ;;\n";
  s += "    --framework) COMPREPLY=( " + words(name_list<gpuplan::framework>(" ")) + " ); return 0 ;;\n";
  s += "    --attention) COMPREPLY=( " + words(name_list<gpuplan::attention>(" ")) + " ); return 0 ;;\n";
  s += "    --offload-optimizer|--offload-params) COMPREPLY=( " + words(name_list<gpuplan::offload>(" ")) + " ); return 0 ;;\n";
  s += "    --lora-targets) COMPREPLY=( " + words(join_names(gpuplan::kLoraTargetNames, " ")) + " ); return 0 ;;\n";
  s += "    --quant) COMPREPLY=( " + words(join_names(gpuplan::kWeightDtypeNames, " ")) + " ); return 0 ;;\n";
  s += "    --kv-dtype) COMPREPLY=( " + words(join_names(gpuplan::kKvCacheDtypeNames, " ")) + " ); return 0 ;;\n";
  s += "    --objective) COMPREPLY=( " + words(name_list<gpuplan::search_objective>(" ")) + " ); return 0 ;;\n";
  s += "    --rank) COMPREPLY=( " + words(name_list<gpuplan::recommend_rank>(" ")) + " ); return 0 ;;\n";
  s += "    --export) COMPREPLY=( " + words(name_list<io::export_target>(" ")) + " ); return 0 ;;\n";
  s += "    --format) COMPREPLY=( " + words(join_names(io::kReportFormatNames, " ")) + " ); return 0 ;;\n";
  s += "    --scenario|-s|--gpu-file|--export-file) COMPREPLY=( $(compgen -f -- \"$cur\") ); return 0 ;;\n";
  s += "  esac\n";
  s += "  cmd=\"${COMP_WORDS[1]}\"\n";
  s += "  opts=\"--help\"\n";
  s += "  case \"$cmd\" in\n" + per_command + "  esac\n";
  s += "  if [[ \"$cur\" == -* ]]; then\n";
  s += "    COMPREPLY=( $(compgen -W \"$opts\" -- \"$cur\") )\n";
  s += "  else\n";
  s += "    case \"$cmd\" in\n";
  s += "      describe|fit|time|estimate|explain|search|plan|recommend) COMPREPLY=( $(compgen -W \"$models\" -- \"$cur\") $(compgen -f -- \"$cur\") ) ;;\n";
  s += "      completion) COMPREPLY=( $(compgen -W \"bash\" -- \"$cur\") ) ;;\n";
  s += "    esac\n";
  s += "  fi\n";
  s += "  return 0\n";
  s += "}\n";
  s += "complete -F _gpuplan gpuplan\n";
  return s;
}

// ------------------------------------------------------------------------- main

int run(int argc, char** argv) {
  CLI::App app{"gpuplan " + std::string(gpuplan::version_string) +
                   " — GPU memory, time and plans for training and serving transformers",
               "gpuplan"};
  app.set_version_flag("--version,-V", std::string("gpuplan ") + gpuplan::version_string);
  app.require_subcommand(1);
  app.footer(std::string("Examples:\n"
                         "  gpuplan fit llama-2-13b --gpu rtx-4090 --method full,lora,qlora\n"
                         "  gpuplan time llama-2-7b --gpu a100-80gb --gpus 64 --tokens 1T --price 2.0\n"
                         "  gpuplan estimate --scenario run.json --json\n"
                         "  gpuplan explain llama-3-8b --gpu h100-sxm --method lora\n"
                         "  gpuplan describe mixtral-8x7b --json\n"
                         "  gpuplan search llama-2-70b --gpu h100-sxm --gpus 64 --global-batch 512\n"
                         "  gpuplan recommend llama-2-13b --method qlora --tokens 2B --deadline 24h\n") +
             kExitCodes + "\nColour only when stdout is a terminal and NO_COLOR is unset.");

  output_args out;
  run_args args;

  auto* describe = app.add_subcommand("describe", "Architecture and exact parameter breakdown of a model");
  std::string describe_model;
  describe->add_option("MODEL", describe_model, "Catalog name, Hub id, config.json or checkpoint dir")->required();
  add_output_options(describe, out);
  describe->footer(std::string("Examples:\n  gpuplan describe llama-2-13b\n  gpuplan describe meta-llama/Llama-2-13b-hf --json\n"
                               "  gpuplan describe ./my-model/config.json --format markdown\n") + kExitCodes);

  auto* models = app.add_subcommand("models", "List the built-in model catalog");
  add_output_options(models, out);
  models->footer(std::string("Examples:\n  gpuplan models\n  gpuplan models --json\n") + kExitCodes);

  auto* gpus = app.add_subcommand("gpus", "List the GPU catalog (dense tensor rates)");
  gpus->add_option("--gpu-file", args.gpu_file, "JSON file of extra GPUs (an array) added to the catalog");
  add_output_options(gpus, out);
  gpus->footer(std::string("Examples:\n  gpuplan gpus\n  gpuplan gpus --format markdown\n") + kExitCodes);

  auto* fit = app.add_subcommand("fit", "Will it fit? Per-GPU memory breakdown, verdict, headroom, binding term");
  add_run_options(fit, args, true, true);
  gpuplan::cli::margin_request fit_margin, search_margin, rec_margin;
  add_margin_options(fit, fit_margin);
  add_output_options(fit, out);
  fit->footer(std::string("Examples:\n"
                          "  gpuplan fit llama-2-13b --gpu rtx-4090 --method full,lora,qlora\n"
                          "  gpuplan fit llama-3-8b --gpu a100-80gb --seq 8192 --batch 2 --checkpointing full\n"
                          "  gpuplan fit llama-2-70b --gpu h100-sxm --gpus 8 --zero 3 --json\n"
                          "With several methods, exit 1 when any of them does not fit, else 3 when any is tight.\n") +
              kExitCodes);

  auto* time = app.add_subcommand("time", "Step time, tokens/s, MFU/HFU, time to train, GPU-hours, cost, energy");
  add_run_options(time, args, true, false);
  add_output_options(time, out);
  time->footer(std::string("Examples:\n"
                           "  gpuplan time llama-2-7b --gpu a100-80gb --gpus 64 --tokens 1T --price 2.0\n"
                           "  gpuplan time llama-3-70b --gpu h100-sxm --gpus 512 --tp 8 --pp 4 --tokens 300B\n"
                           "  gpuplan time llama-2-7b --gpu rtx-4090 --infer --infer-batch 8\n") +
               kExitCodes);

  auto* estimate = app.add_subcommand("estimate", "The whole estimate (memory and time) of a scenario");
  add_run_options(estimate, args, true, false);
  add_output_options(estimate, out);
  estimate->footer(std::string("Examples:\n  gpuplan estimate --scenario run.json --json\n"
                               "  gpuplan estimate llama-2-13b --gpu a100-80gb --method lora\n") +
                   kExitCodes);

  auto* explain = app.add_subcommand("explain", "Each term of the estimate with its formula and source");
  add_run_options(explain, args, true, false);
  add_output_options(explain, out);
  explain->footer(std::string("Examples:\n  gpuplan explain llama-2-13b --gpu rtx-4090 --method qlora\n"
                              "  gpuplan explain --scenario run.json --format markdown\n") +
                  kExitCodes);

  // The planner: search (alias plan) and recommend. Each gets its own run_args:
  // the flags build the template run exactly as for fit/time.
  const std::set<std::string> search_skip{"--global-batch"};
  const std::set<std::string> recommend_skip{"--price", "--gpus", "--global-batch"};
  gpuplan::cli::search_request search_req;
  std::optional<std::int64_t> search_gb;
  run_args search_args;
  std::vector<CLI::App*> search_cmds;
  for (const char* name : {"search", "plan"}) {
    auto* sub = app.add_subcommand(name, std::string_view(name) == "plan"
                                             ? "Alias of 'search': fastest parallel layouts on N GPUs"
                                             : "Fastest (or cheapest) parallel layouts for a model on N GPUs");
    add_run_options(sub, search_args, true, false, search_skip);
    sub->add_option("--global-batch", search_gb, "Sequences per optimizer step (default: the run's micro-batch × grad_accum × GPUs)")
        ->group("Search");
    sub->add_option("--top,-k", search_req.top_k, "Layouts to show (default 10)")->group("Search");
    sub->add_option("--threads,-j", search_req.threads, "Search threads (results do not depend on it; default 1)")
        ->group("Search");
    sub->add_option("--objective", search_req.objective, "time (step time on N GPUs) or cost (GPU-seconds, any count dividing N)")
        ->group("Search");
    sub->add_option("--export", search_req.export_target,
                    "Write the launch config of the first layout: deepspeed, accelerate-fsdp, torchtune, axolotl, torchrun, vllm")
        ->group("Search");
    sub->add_option("--export-file", search_req.export_file, "Write the --export config to FILE (default: stdout after the table)")
        ->group("Search");
    add_margin_options(sub, search_margin);
    add_output_options(sub, out);
    sub->footer(std::string("Examples:\n"
                            "  gpuplan search llama-2-70b --gpu h100-sxm --gpus 64 --global-batch 512\n"
                            "  gpuplan search gpt3-175b --gpu a100-80gb --gpus 1024 --global-batch 1536 --threads 2 --top 5\n"
                            "  gpuplan plan llama-2-13b --gpu a100-80gb --gpus 8 --objective cost --json\n"
                            "  gpuplan plan llama-3.1-8b --gpu a100-80gb --gpus 8 --global-batch 64 --export deepspeed --export-file ds.json\n"
                            "Exhaustive over tp, pp, virtual stages, dp, micro-batch/grad-accum, checkpointing, ZeRO, sp "
                            "and offload; the footer says how many configurations were evaluated and how long it took.\n") +
                kExitCodes);
    search_cmds.push_back(sub);
  }
  gpuplan::cli::recommend_request rec_req;
  run_args rec_args;
  auto* recommend_cmd = app.add_subcommand("recommend", "Rank GPU types × counts for a workload, a deadline and a budget");
  add_run_options(recommend_cmd, rec_args, true, false, recommend_skip);
  recommend_cmd->add_option("--epochs", rec_req.epochs, "Epochs over --dataset-tokens")->group("Recommend");
  recommend_cmd->add_option("--dataset-tokens", rec_req.dataset_tokens, "Dataset size in tokens: 500M, 2B")->group("Recommend");
  recommend_cmd->add_option("--deadline", rec_req.deadline, "Wall-clock deadline: 3600, 90m, 24h, 2d (default 24h)")
      ->group("Recommend");
  recommend_cmd->add_option("--budget", rec_req.budget, "Budget in the prices' currency")->group("Recommend");
  recommend_cmd->add_option("--price", rec_req.prices, "Your prices per GPU-hour (override the catalog's): rtx-4090=0.4,a100-80gb=1.8")
      ->group("Recommend");
  recommend_cmd->add_option("--prices", rec_req.prices_file, "Your prices: a CSV or JSON file (src/data/PRICES.md)")->group("Recommend");
  recommend_cmd->add_flag("--spot", rec_req.spot, "Spot prices where the catalog has them (default on-demand)")->group("Recommend");
  recommend_cmd->add_option("--kwh-price", rec_req.kwh_price, "Electricity per kWh for rent vs buy (default 0.1648, US 2024 average)")
      ->group("Recommend");
  recommend_cmd->add_option("--global-batch", rec_req.global_batch,
                            "Sequences per optimizer step (default: what practitioners use, stated in the output)")
      ->group("Recommend");
  recommend_cmd->add_option("--gpus-list", rec_req.gpus_list, "Candidate GPU ids (default: every GPU with a price)")
      ->group("Recommend");
  recommend_cmd->add_option("--max-gpus", rec_req.max_gpus, "Counts 1, 2, 4, ... up to this (default 64; 8 for image and diffusion models)")
      ->group("Recommend");
  recommend_cmd->add_option("--rank", rec_req.rank, "cost (default) or time")->group("Recommend");
  recommend_cmd->add_option("--top,-k", rec_req.top_k, "Rows to show (default 10)")->group("Recommend");
  add_margin_options(recommend_cmd, rec_margin);
  // Image and diffusion models (MODEL a vision or diffusion catalog name, or --graph): io/graph_plan.hpp.
  io::graph_recommend_query rec_graph;
  recommend_cmd->add_option("--images", rec_graph.images,
                            "Image/diffusion models: dataset size in images, 1.28M (default ImageNet-1k; diffusion: the recipe's 60,000)")
      ->group("Image and diffusion models");
  recommend_cmd->add_option("--graph", rec_graph.graph_file, "A layer graph file (JSON, docs/trace.md) instead of MODEL")
      ->group("Image and diffusion models");
  recommend_cmd->add_option("--image", rec_graph.image, "Image models: image side in pixels (default the weights' crop)")
      ->group("Image and diffusion models");
  recommend_cmd->add_option("--resolution", rec_graph.resolution, "Diffusion: training resolution (default the pipeline's)")
      ->group("Image and diffusion models");
  recommend_cmd->add_option("--ema", rec_graph.ema, "Diffusion full fine-tuning: keep the EMA copy of the UNet (default: the recipe's, true for full, false for LoRA)")
      ->group("Image and diffusion models");
  // recommend --serve: a serving workload (plan/serve_recommend.hpp, src/cli/hooks.cpp).
  recommend_cmd->add_flag("--serve", rec_req.serve, "Serve the model instead of training it (default engine vllm)")->group("Serve");
  recommend_cmd->add_option("--requests-per-second", rec_req.requests_per_second, "--serve: requests per second to sustain")
      ->group("Serve");
  recommend_cmd->add_option("--itl-target", rec_req.itl_target, "--serve: inter-token latency target (default 50ms)")->group("Serve");
  recommend_cmd->add_option_function<std::int64_t>(
      "--output-len", [&rec_args](const std::int64_t& v) { rec_args.overrides.emplace_back("inference.gen_len", json(v)); },
      "--serve: output tokens per request (same as --gen-len)")
      ->group("Serve");
  add_output_options(recommend_cmd, out);
  recommend_cmd->footer(std::string("Examples:\n"
                                    "  gpuplan recommend llama-3.1-8b --method lora --tokens 2B --deadline 24h\n"
                                    "  gpuplan recommend llama-2-7b --method qlora --tokens 500M --gpus-list rtx-4090,a100-80gb --spot\n"
                                    "  gpuplan recommend llama-2-13b --method qlora --epochs 3 --dataset-tokens 500M "
                                    "--deadline 12h --budget 500 --price rtx-4090=0.4,a100-80gb=1.8\n"
                                    "  gpuplan recommend llama-2-13b --method full --tokens 1B --gpus-list a100-80gb,h100-sxm --json\n"
                                    "  gpuplan recommend llama-3.1-8b --serve --requests-per-second 5 --prompt-len 1024 --output-len 256 "
                                    "--itl-target 50ms\n"
                                    "  gpuplan recommend resnet-50 --images 1.28M --epochs 90 --gpus-list rtx-4090,a100-80gb\n"
                                    "  gpuplan recommend sd-2.1 --method full --gpus-list rtx-4090,a100-80gb --rank time\n"
                                    "Each row is the fastest layout search finds for that GPU and count; rows that "
                                    "meet the deadline (and budget) come first.\n") +
                        kExitCodes);

  // gpuplan vision: image models as layer graphs (src/cli/vision.cpp).
  gpuplan::io::vision_query vision_req;
  output_args vision_out;
  auto* vision_cmd = gpuplan::cli::add_vision_command(app, vision_req);
  add_output_options(vision_cmd, vision_out);

  // gpuplan diffusion: Stable Diffusion pipelines as layer graphs (src/cli/diffusion.cpp).
  gpuplan::io::diffusion_query diffusion_req;
  bool diffusion_no_guidance = false;
  output_args diffusion_out;
  auto* diffusion_cmd = gpuplan::cli::add_diffusion_command(app, diffusion_req, diffusion_no_guidance);
  add_output_options(diffusion_cmd, diffusion_out);

  // gpuplan serve: the engine's KV pool, concurrency and throughput–latency curve (src/cli/serve.cpp).
  run_args serve_args;
  auto* serve_cmd = app.add_subcommand("serve", "Serving: KV pool, max concurrency, TTFT/ITL curve of an inference engine");
  add_run_options(serve_cmd, serve_args, true, false, {"--infer", "--infer-batch"});
  std::optional<std::string> serve_latency;
  std::optional<std::int64_t> serve_concurrency;
  serve_cmd->add_option("--latency-target", serve_latency, "Inter-token latency target (50ms, 0.05s): the concurrency that meets it");
  serve_cmd->add_option("--concurrency", serve_concurrency, "Also report one request at this many concurrent requests");
  add_output_options(serve_cmd, out);
  serve_cmd->footer(std::string("Examples:\n  gpuplan serve llama-3.1-8b --gpu a100-80gb --engine vllm --prompt-len 1024 --output-len 256\n"
                                "  gpuplan serve llama-3.1-8b --gpu rtx-4090 --engine llama.cpp --gguf Q4_K_M --latency-target 50ms\n") +
                    kExitCodes);
  serve_args.overrides.emplace_back("workload", json("infer"));
  serve_cmd->add_option_function<std::int64_t>(
      "--output-len", [&serve_args](const std::int64_t& v) { serve_args.overrides.emplace_back("inference.gen_len", json(v)); },
      "Output tokens per request (same as --gen-len)");
  run_args cal_args;
  calibrate_args cal_req;
  auto* calibrate_cmd = app.add_subcommand("calibrate", "Fit the model's constants to your own measured run; save a --profile");
  add_run_options(calibrate_cmd, cal_args, true, false);
  calibrate_cmd->add_option("--measurements", cal_req.measurements_file, "JSON file of measured runs (docs/calibration.md)")
      ->group("Calibrate");
  calibrate_cmd->add_option("--name", cal_req.name, "Profile name (default my-run)")->group("Calibrate");
  calibrate_cmd->add_option("--out,-o", cal_req.out_file, "Write the profile to this file (not over an existing one)")
      ->group("Calibrate");
  calibrate_cmd->add_flag("--force", cal_req.force, "Replace an existing --out file")->group("Calibrate");
  calibrate_cmd->add_option("--measured-allocated", cal_req.allocated, "torch.cuda.max_memory_allocated() with a unit: 18.2GiB")
      ->group("Calibrate");
  calibrate_cmd->add_option("--measured-reserved", cal_req.reserved, "torch.cuda.max_memory_reserved() with a unit: 20.1GiB")
      ->group("Calibrate");
  calibrate_cmd->add_option("--measured-device", cal_req.device, "nvidia-smi memory used, with a unit: 21500MiB")->group("Calibrate");
  calibrate_cmd->add_option("--measured-step", cal_req.step,
                            "Seconds per optimizer step: 1.2 (bare: seconds), 1.2s, 90m; 0.0001 to 10^7 s")
      ->group("Calibrate");
  calibrate_cmd->add_option("--measured-tokens-per-second", cal_req.tokens_per_second, "Tokens/s per GPU")->group("Calibrate");
  add_output_options(calibrate_cmd, out);
  calibrate_cmd->footer(std::string("Examples:\n"
                                    "  gpuplan calibrate llama-2-7b --gpu a100-80gb --method lora --seq 2048 "
                                    "--measured-reserved 21.3GiB --measured-step 1.9 --out my-a100.json\n"
                                    "  gpuplan calibrate --measurements runs.json --name qwen-lora --out qwen.json\n"
                                    "  gpuplan fit llama-2-13b --gpu a100-80gb --method lora --profile my-a100.json\n"
                                    "Fits the allocator factor, CUDA context and the scales of model states and working "
                                    "memory to the memory figures, and the GEMM, bandwidth and network efficiencies to the "
                                    "times (docs/calibration.md).\n") +
                        kExitCodes);

  auto* completion = app.add_subcommand("completion", "Print a shell completion script (bash)");
  std::string shell;
  completion->add_option("SHELL", shell, "Shell: bash")->required()->check(CLI::IsMember({"bash"}));
  completion->footer(std::string("Examples:\n  source <(gpuplan completion bash)\n"
                                 "  gpuplan completion bash > ~/.local/share/bash-completion/completions/gpuplan\n") +
                     kExitCodes);

  // CLI11 reports a mistyped command as "a subcommand is required"; name it instead.
  if (argc >= 2 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      found = found || sub->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::fprintf(stderr, "gpuplan: usage: unknown command '%s' (commands: %s)\n", argv[1], known.c_str());
      return kExitUsage;
    }
  }
  gpuplan::cli::guard_numeric_options(app);  // integers overflow-checked, floats finite
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Name the subcommand being parsed, if any, so the line says where to look.
    std::string where = "usage";
    for (const CLI::App* sub : app.get_subcommands()) where = sub->get_name();
    std::fprintf(stderr, "gpuplan: %s: %s (see 'gpuplan%s --help')\n", where.c_str(), one_line(e.what()).c_str(),
                 where == "usage" ? "" : (" " + where).c_str());
    return kExitUsage;
  }

  if (describe->parsed()) return cmd_describe(describe_model, out);
  if (models->parsed()) return cmd_models(out);
  if (gpus->parsed()) return cmd_gpus(args, out);
  if (fit->parsed()) return cmd_fit(args, out, fit_margin);
  if (time->parsed()) return cmd_time(args, out);
  if (estimate->parsed()) return cmd_estimate(args, out);
  if (explain->parsed()) return cmd_explain(args, out);
  if (serve_cmd->parsed()) {
    load_extra_gpus(serve_args);
    return gpuplan::cli::run_serve(build_run(serve_args, nullptr), serve_latency, serve_concurrency, make_style(out));
  }
  if (vision_cmd->parsed()) return gpuplan::cli::run_vision(vision_req, make_style(vision_out));
  if (diffusion_cmd->parsed())
    return gpuplan::cli::run_diffusion(diffusion_req, diffusion_no_guidance, make_style(diffusion_out));
  if (calibrate_cmd->parsed()) return cmd_calibrate(cal_args, cal_req, out);
  if (completion->parsed()) {
    print(bash_completion(app));
    return kExitOk;
  }
  for (CLI::App* sub : search_cmds) {
    if (!sub->parsed()) continue;
    load_extra_gpus(search_args);
    search_req.global_batch = search_gb;
    search_req.margin = gpuplan::cli::parse_margin(search_margin);
    return gpuplan::cli::run_search(build_run(search_args, nullptr), search_req, make_style(out));
  }
  if (recommend_cmd->parsed()) {
    load_extra_gpus(rec_args);
    rec_req.margin = gpuplan::cli::parse_margin(rec_margin);
    if (!rec_graph.graph_file.empty() || io::is_graph_model(rec_args.model))
      return gpuplan::cli::run_recommend_graph(graph_query_of(rec_args, rec_graph), rec_req, make_style(out));
    if (rec_graph.images || rec_graph.image || rec_graph.resolution || rec_graph.ema)
      throw config_error(rec_graph.images ? "--images" : rec_graph.image ? "--image" : rec_graph.resolution ? "--resolution" : "--ema",
                         "applies to image and diffusion models only (got model '" + rec_args.model + "')");
    // A named card is the candidate (its owner asks about it), not a template for others.
    if (!rec_args.gpu.empty()) {
      if (!rec_req.gpus_list.empty())
        throw config_error("--gpu", "recommend ranks --gpus-list; give one of --gpu or --gpus-list (got '" + rec_args.gpu + "' and '" +
                                        rec_req.gpus_list + "')");
      rec_req.gpus_list = rec_args.gpu;
    }
    if (rec_req.serve) {  // workload infer, engine vllm unless --engine (later overrides win)
      rec_args.overrides.insert(rec_args.overrides.begin(), {{"workload", json("infer")}, {"engine", json("vllm")}});
    }
    return gpuplan::cli::run_recommend(build_run(rec_args, nullptr), rec_req, make_style(out));
  }
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const config_error& e) {
    std::fprintf(stderr, "gpuplan: %s\n", one_line(e.what()).c_str());
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "gpuplan: json: %s\n", one_line(e.what()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuplan: error: %s\n", one_line(e.what()).c_str());
  } catch (...) {
    std::fprintf(stderr, "gpuplan: error: unknown exception\n");
  }
  return kExitUsage;
}
