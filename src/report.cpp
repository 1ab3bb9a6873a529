// report.cpp — JSON and readable reports of an estimate. One formatter for the
// CLI (`gpuplan estimate|fit|time|explain|describe`) and Python's __repr__.
// JSON keys are a contract with scripts and the Python package (docs/cli.md lists them).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "gpuplan/dtype.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/framework_rules.hpp"
#include "gpuplan/io/graph_plan.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/profile.hpp"
#include "gpuplan/model_names.hpp"
#include "gpuplan/plan_names.hpp"
#include "gpuplan/replay.hpp"

namespace gpuplan::io {
using nlohmann::json;

namespace {

std::string_view attention_layout(const architecture& a) {
  const std::int64_t kv = a.n_kv_heads();
  if (kv == a.heads) return "MHA";
  if (kv == 1) return "MQA";
  return "GQA";
}

std::string pct(double fraction) {
  if (!std::isfinite(fraction)) return "n/a";
  return format_number(fraction * 100.0) + " %";
}

json components_json(const parameter_breakdown& p) {
  return {{"embeddings", p.embeddings}, {"attention", p.attention}, {"mlp", p.mlp},
          {"norms", p.norms},           {"head", p.head}};
}

std::string_view phase_name(memory_breakdown::phase p) {
  switch (p) {
    case memory_breakdown::phase::forward_loss: return "forward_loss";
    case memory_breakdown::phase::loss_backward: return "loss_backward";
    case memory_breakdown::phase::backward_start: return "backward_start";
    case memory_breakdown::phase::backward_end: return "backward_end";
    case memory_breakdown::phase::optimizer_step: return "optimizer_step";
    case memory_breakdown::phase::inference: return "inference";
  }
  return "?";
}

// Seconds as JSON; null when the figure was not computed (tokens unset).
json seconds_or_null(Seconds s, bool known) { return known ? json(in_seconds(s)) : json(nullptr); }

}  // namespace

std::vector<std::string> warning_messages(warning_set w) {
  std::vector<std::string> out;
  for (std::uint32_t bit = 1; bit != 0; bit <<= 1) {
    if ((w & bit) == 0) continue;
    const std::string_view msg = warning_message(static_cast<warning>(bit));
    out.emplace_back(msg.empty() ? "warning bit " + std::to_string(bit) : std::string(msg));
  }
  return out;
}

// --------------------------------------------------------------------------- JSON

json memory_json(const memory_breakdown& m) { return memory_json(m, workload::train); }

json memory_json(const memory_breakdown& m, workload work) {
  json j = {
      {"weights_bytes", in_bytes(m.weights)},
      {"master_weights_bytes", in_bytes(m.master_weights)},
      {"gradients_bytes", in_bytes(m.gradients)},
      {"optimizer_bytes", in_bytes(m.optimizer)},
      {"activations_bytes", in_bytes(m.activations)},
      {"transient_bytes", in_bytes(m.transient)},
      {"overhead_bytes", in_bytes(m.overhead)},
      {"peak_allocated_bytes", in_bytes(m.peak_allocated)},
      {"peak_reserved_bytes", in_bytes(m.peak_reserved)},
      {"device_bytes", in_bytes(m.device)},
      {"capacity_bytes", in_bytes(m.capacity)},
      {"headroom_bytes", in_bytes(m.headroom)},
      {"fits", m.fits},
      {"host_bytes", in_bytes(m.host)},
      {"stage", m.stage},
      {"peak_phase", phase_name(m.peak_phase)},
  };
  if (work == workload::infer) {
    j["kv_cache_bytes"] = in_bytes(m.kv_cache);
    j["max_concurrent_sequences"] = m.max_concurrent_sequences;
  }
  return j;
}

json time_json(const time_estimate& t) { return time_json(t, workload::train); }

json time_json(const time_estimate& t, workload work) {
  // total_seconds is 0 exactly when no token count was given (timing.hpp): then the
  // time-to-train figures do not exist and print as null rather than as 0.
  const bool trained = in_seconds(t.total) > 0;
  json j = {
      {"step_seconds", in_seconds(t.step)},
      {"tokens_per_second_per_gpu", t.tokens_per_second_per_gpu},
      {"tokens_per_second", t.tokens_per_second},
      {"model_flops_per_step", in_flops(t.model_flops_per_step)},
      {"hardware_flops_per_step", in_flops(t.hardware_flops_per_step)},
      {"mfu", t.mfu},
      {"hfu", t.hfu},
      {"total_seconds", seconds_or_null(t.total, trained)},
      {"gpu_hours", trained ? json(t.gpu_hours) : json(nullptr)},
      {"cost", t.cost ? json(*t.cost) : json(nullptr)},
      {"energy_kwh", trained ? json(t.energy_kwh) : json(nullptr)},
      {"breakdown",
       {{"compute_seconds", in_seconds(t.breakdown.compute)},
        {"communication_seconds", in_seconds(t.breakdown.communication)},
        {"bubble_seconds", in_seconds(t.breakdown.bubble)},
        {"optimizer_seconds", in_seconds(t.breakdown.optimizer)},
        {"offload_seconds", in_seconds(t.breakdown.offload)}}},
      {"total_communication_seconds", in_seconds(t.total_communication)},
      {"peak_flops_per_second", t.peak_flop_per_s},
  };
  if (work == workload::infer) {
    j["time_to_first_token_seconds"] = in_seconds(t.time_to_first_token);
    j["decode_tokens_per_second_per_sequence"] = t.decode_tokens_per_second_per_sequence;
    j["decode_tokens_per_second"] = t.decode_tokens_per_second;
    j["decode_compute_bound_batch"] = t.decode_compute_bound_batch;
  }
  return j;
}

json describe_json(const architecture& a) {
  const parameter_breakdown p = count_parameters(a);
  json layers = json::array();
  const std::vector<std::int64_t> units = layer_parameters(a);
  for (std::size_t i = 0; i < units.size(); ++i) {
    std::string name;
    if (i == 0) name = "embeddings";
    else if (i + 1 == units.size()) name = "head";
    else if (static_cast<std::int64_t>(i) <= a.layers)
      name = (a.kind == model_kind::encoder_decoder ? "encoder." : "layer.") + std::to_string(i - 1);
    else name = "decoder." + std::to_string(static_cast<std::int64_t>(i) - 1 - a.layers);
    layers.push_back({{"name", name}, {"parameters", units[i]}});
  }
  json arch = {
      {"kind", to_string(a.kind)},
      {"hidden_size", a.hidden},
      {"num_layers", a.layers},
      {"num_decoder_layers", a.decoder_layers},
      {"num_attention_heads", a.heads},
      {"num_key_value_heads", a.n_kv_heads()},
      {"head_dim", a.d_head()},
      {"intermediate_size", a.ffn},
      {"vocab_size", a.vocab},
      {"max_position_embeddings", a.max_positions},
      {"mlp", to_string(a.mlp)},
      {"activation", to_string(a.activation)},
      {"norm", to_string(a.norm)},
      {"positions", to_string(a.positions)},
      {"tied_embeddings", a.tied_embeddings},
      {"head", to_string(a.head)},
  };
  if (a.is_moe()) {
    arch["num_experts"] = a.experts;
    arch["experts_per_token"] = a.experts_per_token;
    arch["shared_experts"] = a.shared_experts;
    arch["expert_intermediate_size"] = a.d_expert();
  }
  if (a.is_vit()) {
    arch["image_size"] = a.image_size;
    arch["patch_size"] = a.patch_size;
  }
  return {{"name", a.name},
          {"family", a.family},
          {"parameters", p.total},
          {"components", components_json(p)},
          {"largest_layer_parameters", p.largest_layer},
          {"layers", std::move(layers)},
          {"architecture", std::move(arch)}};
}

json replay_json(const allocator_replay& rp, const memory_breakdown& m) {
  return {{"peak_allocated_bytes", rp.peak_allocated},
          {"peak_reserved_bytes", rp.peak_reserved},
          {"reserved_over_allocated", rp.ratio},
          {"fast_path_reserved_over_allocated", fast_path_ratio(m)},
          {"tensors", rp.tensors},
          {"segments", rp.segments}};
}

json estimate_json(const resolved_run& r) {
  const architecture& a = r.model();
  const scenario& run = r.settings();
  const parameter_breakdown p = count_parameters(a);
  const std::vector<memory_breakdown> stages = estimate_memory_stages(r.run);
  const memory_breakdown mem = estimate_memory(r.run);
  const time_estimate t = estimate_time(r.run);

  json j;
  j["model"] = {{"name", a.name},
                {"spec", r.model_spec},
                {"family", a.family},
                {"parameters", p.total},
                {"trainable_parameters", trainable_parameters(r.run)},
                {"components", components_json(p)},
                {"largest_layer_parameters", p.largest_layer}};
  j["scenario"] = write_scenario(r);
  if (r.run.calibration() != nullptr) j["profile"] = calibration_json(r.run);
  j["memory"] = memory_json(mem, run.work);
  json st = json::array();
  warning_set w = mem.warnings | t.warnings;
  for (const auto& s : stages) {
    st.push_back(memory_json(s, run.work));
    w |= s.warnings;
  }
  j["memory"]["stages"] = std::move(st);
  const memory_bands mb = bands_of(r.run, mem);
  j["memory"]["bands"] = memory_bands_json(mb);
  // The default planning margin (plan/margin.hpp); fits is the verdict's, here and per stage.
  const fit_answer answer = answer_of(mem, mb);
  j["memory"]["verdict"] = to_string(answer.state);
  j["memory"]["fits"] = answer.fits;
  for (std::size_t i = 0; i < stages.size(); ++i)
    j["memory"]["stages"][i]["fits"] = answer_of(stages[i], bands_of(r.run, stages[i])).fits;
  if (const allocator_replay rp = replay_allocator(r.run); rp.replayed) j["memory"]["allocator_replay"] = replay_json(rp, mem);
  j["time"] = time_json(t, run.work);
  j["time"]["bands"] = time_bands_json(bands_of(r.run, t));
  j["warnings"] = warning_messages(w);
  return j;
}

json band_json(const band& b) { return {{"p10", b.p10}, {"p50", b.p50}, {"p90", b.p90}}; }

namespace {
json band_source_json(const band_source& s) {
  auto any = [](int v) { return v < 0 ? json(nullptr) : json(v == 1); };
  return {{"peft", any(s.peft)}, {"multi_gpu", any(s.multi_gpu)}, {"cases", s.cases}, {"validated", s.validated},
          {"calibrated", s.calibrated}, {"covered", s.covered}};
}
}  // namespace

json memory_bands_json(const memory_bands& b) {
  return {{"peak_allocated_bytes", band_json(b.peak_allocated)},
          {"peak_reserved_bytes", band_json(b.peak_reserved)},
          {"device_bytes", band_json(b.device)},
          {"regime", band_source_json(b.source)}};
}

json time_bands_json(const time_bands& b) {
  return {{"step_seconds", band_json(b.step_seconds)},
          {"tokens_per_second_per_gpu", band_json(b.tokens_per_second_per_gpu)},
          {"regime", band_source_json(b.source)}};
}

// ---------------------------------------------------------------------- reports

std::string run_summary(const scenario& run, bool with_method) {
  std::string s = std::string(to_string(run.work));
  if (with_method) {
    s += ", " + std::string(to_string(run.meth));
    if (run.meth == method::lora || run.meth == method::qlora) s += " r=" + std::to_string(run.lora.rank);
    if (run.meth == method::qlora || run.quant)
      s += " (" + std::string(to_string(base_quantization(run).weights)) + " base)";
  }
  if (run.work == workload::train) {
    s += ", " + std::string(to_string(run.prec)) + ", " + std::string(to_string(run.opt));
    s += ", micro-batch " + std::to_string(run.micro_batch) + " × seq " + std::to_string(run.seq_len);
    if (run.grad_accum > 1) s += " × accum " + std::to_string(run.grad_accum);
    if (run.ckpt && *run.ckpt != checkpointing::none) s += ", " + std::string(to_string(*run.ckpt)) + " checkpointing";
  } else {
    s += ", batch " + std::to_string(run.inference.batch) + ", prompt " + std::to_string(run.inference.prompt_len) +
         " + gen " + std::to_string(run.inference.gen_len);
  }
  const auto& par = run.parallel;
  if (par.tp > 1) s += ", tp " + std::to_string(par.tp);
  if (par.pp > 1) s += ", pp " + std::to_string(par.pp);
  if (par.cp > 1) s += ", cp " + std::to_string(par.cp);
  if (par.zero > 0) s += ", ZeRO-" + std::to_string(par.zero);
  if (par.offload_optimizer != offload::none) s += ", optimizer offload " + std::string(to_string(par.offload_optimizer));
  if (par.offload_params != offload::none) s += ", param offload " + std::string(to_string(par.offload_params));
  s += "; " + std::to_string(run.num_gpus) + " × " + (run.gpu.id.empty() ? std::string("gpu") : printable(run.gpu.id));
  return s;
}

// Readable labels of the memory components (the verdict line, the "Largest term" row).
constexpr std::array<enum_name<memory_component>, 8> kComponentLabels{{
    {memory_component::weights, "weights"},
    {memory_component::master_weights, "master weights"},
    {memory_component::gradients, "gradients"},
    {memory_component::optimizer, "optimizer state"},
    {memory_component::activations, "activations"},
    {memory_component::transient, "transient buffers"},
    {memory_component::overhead, "framework overhead"},
    {memory_component::kv_cache, "KV cache"},
}};
static_assert(names_are_unique(kComponentLabels) && names_cover(kComponentLabels, memory_component::kv_cache));

std::string binding_component(const memory_breakdown& m) {
  return std::string(name_of(kComponentLabels, largest_component(m)));
}

std::string verdict_line(const memory_breakdown& m, const style& s) {
  const bool md = s.format == report_format::markdown;
  const char* on = "";
  const char* off = "";
  if (s.color && s.format == report_format::text) {
    on = m.fits ? "\033[1;32m" : "\033[1;31m";
    off = "\033[0m";
  }
  std::string v = md ? (m.fits ? "**FITS**" : "**DOES NOT FIT**") : (m.fits ? "FITS" : "DOES NOT FIT");
  std::string line = std::string(on) + v + off + ": needs " + format_bytes(m.device) + " of " +
                     format_bytes(m.capacity) + " usable; ";
  if (m.fits) line += "headroom " + format_bytes(m.headroom);
  else line += "short by " + format_bytes(bytes(-in_bytes(m.headroom)));
  const double dev = in_bytes(m.device);
  const memory_component bind = largest_component(m);
  line += "; largest term: " + std::string(name_of(kComponentLabels, bind));
  if (dev > 0) line += " (" + pct(in_bytes(component_bytes(m, bind)) / dev) + " of device)";
  return line;
}

fit_answer answer_of(const memory_breakdown& m, const memory_bands& b, const plan_margin& g) {
  fit_answer a;
  a.state = verdict_of(m, b, g);
  a.fits = a.state != verdict::does_not_fit;
  a.p50_device = bytes(detail::resident_device(m) * b.source.factors.q50);
  a.headroom = m.capacity - a.p50_device;
  a.cannot_start = !a.fits && in_bytes(a.headroom) >= 0;
  return a;
}

namespace {
// "; headroom at P50 …" / "; short by … at P50" / the engine that cannot start: the answer's figure.
std::string headroom_text(const fit_answer& a) {
  if (a.cannot_start) return "; the serving engine's KV cache pool holds no whole request";
  if (a.fits) return "; headroom at P50 " + format_bytes(a.headroom);
  return "; short by " + format_bytes(bytes(-in_bytes(a.headroom))) + " at P50";
}
}  // namespace

std::string verdict_line(const memory_breakdown& m, const memory_bands& b, const style& s, const plan_margin& g) {
  const fit_answer a = answer_of(m, b, g);
  const verdict v = a.state;
  const bool md = s.format == report_format::markdown;
  const char* on = "";
  const char* off = "";
  if (s.color && s.format == report_format::text) {
    on = v == verdict::fits ? "\033[1;32m" : v == verdict::tight ? "\033[1;33m" : "\033[1;31m";
    off = "\033[0m";
  }
  const char* word = v == verdict::fits ? "FITS" : v == verdict::tight ? "TIGHT" : "DOES NOT FIT";
  std::string line = std::string(on) + (md ? "**" + std::string(word) + "**" : std::string(word)) + off + ": needs " +
                     format_bytes(m.device) + " [P10–P90 " + format_number(b.device.p10 / 1e9, 3) + "–" +
                     format_number(b.device.p90 / 1e9, 3) + " GB] of " + format_bytes(m.capacity) + " usable";
  line += headroom_text(a);
  if (v == verdict::tight)
    line += "; likely fits, but not with the margin (" + margin_text(g) + " of " +
            format_bytes_short(margin_headroom(g, m.capacity)) + " free): leave headroom or try it";
  if (!b.source.validated) line += "; no measured run like this one: widest band";
  else if (!b.source.covered) line += "; no measured run of this framework, method, GPU class and scale: band widened";
  const memory_component bind = largest_component(m);
  line += "; largest term: " + std::string(name_of(kComponentLabels, bind));
  return line;
}

table memory_table(const std::vector<labelled_memory>& columns, workload work) {
  table t;
  t.header.push_back("Memory per GPU");
  for (const auto& c : columns) t.header.push_back(c.label);
  auto row = [&](std::string label, auto getter) {
    std::vector<std::string> r{std::move(label)};
    for (const auto& c : columns) r.push_back(getter(c.memory));
    t.rows.push_back(std::move(r));
  };
  auto bytes_row = [&](std::string label, Bytes memory_breakdown::*field) {
    row(std::move(label), [field](const memory_breakdown& m) { return format_bytes(m.*field); });
  };
  bytes_row("Weights", &memory_breakdown::weights);
  if (work == workload::train) {
    bytes_row("Master weights", &memory_breakdown::master_weights);
    bytes_row("Gradients", &memory_breakdown::gradients);
    bytes_row("Optimizer state", &memory_breakdown::optimizer);
  } else {
    bytes_row("KV cache", &memory_breakdown::kv_cache);
  }
  bytes_row("Activations", &memory_breakdown::activations);
  bytes_row("Transient buffers", &memory_breakdown::transient);
  bytes_row("Framework overhead", &memory_breakdown::overhead);
  bytes_row("Peak allocated", &memory_breakdown::peak_allocated);
  bytes_row("Peak reserved", &memory_breakdown::peak_reserved);
  bytes_row("Device (nvidia-smi)", &memory_breakdown::device);
  bytes_row("Usable capacity", &memory_breakdown::capacity);
  // With answers (a verdict beside the table), the answer's figures: never a second opinion.
  const bool answered = std::any_of(columns.begin(), columns.end(), [](const labelled_memory& c) { return c.answer.has_value(); });
  const auto answer_row = [&](std::string label, auto with_answer, auto without) {
    std::vector<std::string> r{std::move(label)};
    for (const auto& c : columns) r.push_back(c.answer ? with_answer(*c.answer) : without(c.memory));
    t.rows.push_back(std::move(r));
  };
  answer_row(answered ? "Headroom at P50" : "Headroom", [](const fit_answer& a) { return format_bytes(a.headroom); },
             [](const memory_breakdown& m) { return format_bytes(m.headroom); });
  answer_row("Verdict", [](const fit_answer& a) { return std::string(a.state == verdict::tight ? "tight" : a.fits ? "fits" : "does not fit"); },
             [](const memory_breakdown& m) { return std::string(m.fits ? "fits" : "does not fit"); });
  row("Largest term", [](const memory_breakdown& m) { return binding_component(m); });
  if (work == workload::infer)
    row("Max concurrent sequences",
        [](const memory_breakdown& m) { return format_count(m.max_concurrent_sequences); });
  const bool any_host = std::any_of(columns.begin(), columns.end(),
                                    [](const labelled_memory& c) { return in_bytes(c.memory.host) > 0; });
  if (any_host) bytes_row("Host RAM (per node)", &memory_breakdown::host);
  t.right_align.assign(t.header.size(), true);
  t.right_align[0] = false;
  t.notes.push_back("GB = 10^9 bytes, GiB = 2^30 bytes. Device = peak reserved + CUDA context and library workspaces.");
  return t;
}

std::string memory_report(const memory_breakdown& m, const style& s, workload work) {
  std::string out = render(memory_table({{"per GPU", m}}, work), s);
  return out + verdict_line(m, s) + "\n";
}

table time_table(const time_estimate& t, const scenario& run) {
  table tab;
  tab.header = {"Time", "Value", "Share of step"};
  const double step = in_seconds(t.step);
  auto share = [&](Seconds x) { return step > 0 ? pct(in_seconds(x) / step) : std::string(""); };
  auto add = [&](std::string a, std::string b, std::string c = "") {
    tab.rows.push_back({std::move(a), std::move(b), std::move(c)});
  };
  if (run.work == workload::train) {
    add("Compute", format_seconds(t.breakdown.compute), share(t.breakdown.compute));
    add("Communication (exposed)", format_seconds(t.breakdown.communication), share(t.breakdown.communication));
    add("Pipeline bubble", format_seconds(t.breakdown.bubble), share(t.breakdown.bubble));
    add("Optimizer step", format_seconds(t.breakdown.optimizer), share(t.breakdown.optimizer));
    add("Offload traffic", format_seconds(t.breakdown.offload), share(t.breakdown.offload));
    add("Step time", format_seconds(t.step), step > 0 ? "100 %" : "");
    add("Tokens/s per GPU", format_rate(t.tokens_per_second_per_gpu, "tokens"));
    add("Tokens/s (" + std::to_string(run.num_gpus) + (run.num_gpus == 1 ? " GPU)" : " GPUs)"), format_rate(t.tokens_per_second, "tokens"));
    add("Model FLOPs per step", format_number(in_flops(t.model_flops_per_step)));
    add("Hardware FLOPs per step", format_number(in_flops(t.hardware_flops_per_step)));
    add("MFU", pct(t.mfu));
    add("HFU", pct(t.hfu));
    if (run.tokens) {
      add("Tokens to train", format_number(*run.tokens));
      add("Time to train", format_seconds(t.total));
      add("GPU-hours", format_number(t.gpu_hours));
      // Prices are US dollars, as the price catalog's (src/data/PRICES.md).
      add("Cost", t.cost ? "$" + format_number(*t.cost) + " (at $" + format_number(run.price_per_gpu_hour.value_or(0)) +
                               " per GPU-hour)"
                         : std::string(run.price_per_gpu_hour ? "n/a" : "(set --price)"));
      add("Energy", format_number(t.energy_kwh) + " kWh");
    }
  } else {
    tab.header = {"Serving", "Value"};
    add("Time to first token", format_seconds(t.time_to_first_token));
    add("Decode per sequence", format_rate(t.decode_tokens_per_second_per_sequence, "tokens"));
    add("Decode aggregate", format_rate(t.decode_tokens_per_second, "tokens"));
    add("Compute-bound from batch", format_count(t.decode_compute_bound_batch));
  }
  tab.right_align = {false, true, true};
  if (tab.header.size() == 2)
    for (auto& r : tab.rows) r.resize(2);
  return tab;
}

std::string time_report(const time_estimate& t, const scenario& run, const style& s) {
  return render(time_table(t, run), s);
}

std::string describe_report(const architecture& a, const style& s) {
  const parameter_breakdown p = count_parameters(a);
  const bool md = s.format == report_format::markdown;
  std::string out;
  out += (md ? "### " : "") + printable(a.name) + " (" + a.family + ", " + std::string(to_string(a.kind)) + ")\n";
  if (md) out += "\n";
  std::string shape = "layers " + std::to_string(a.layers);
  if (a.decoder_layers > 0) shape += " + " + std::to_string(a.decoder_layers) + " decoder";
  shape += " · hidden " + std::to_string(a.hidden) + " · heads " + std::to_string(a.heads) + " (" +
           std::string(attention_layout(a)) + ", kv " + std::to_string(a.n_kv_heads()) + ", head_dim " +
           std::to_string(a.d_head()) + ")";
  shape += " · ffn " + std::to_string(a.ffn) + " (" + std::string(to_string(a.mlp)) + ", " +
           std::string(to_string(a.activation)) + ")";
  if (a.is_moe())
    shape += " · experts " + std::to_string(a.experts) + " (top-" + std::to_string(a.experts_per_token) + ")";
  if (!a.is_vit()) shape += " · vocab " + std::to_string(a.vocab);
  else shape += " · image " + std::to_string(a.image_size) + " / patch " + std::to_string(a.patch_size);
  if (a.max_positions > 0) shape += " · context " + std::to_string(a.max_positions);
  out += shape + "\n";
  out += std::string(to_string(a.norm)) + " · " + std::string(to_string(a.positions)) + " positions · " +
         (a.tied_embeddings ? "tied" : "untied") + " embeddings · head " + std::string(to_string(a.head)) + "\n\n";

  table t;
  t.header = {"Component", "Parameters", "Share"};
  const double total = static_cast<double>(p.total);
  auto add = [&](const char* name, std::int64_t n) {
    t.rows.push_back({name, format_count(n), total > 0 ? pct(static_cast<double>(n) / total) : ""});
  };
  add("embeddings", p.embeddings);
  add("attention", p.attention);
  add(a.is_moe() ? "mlp (experts + routers)" : "mlp", p.mlp);
  add("norms", p.norms);
  add("head", p.head);
  t.rows.push_back({"total", format_count(p.total) + " (" + format_params(p.total) + ")", "100 %"});
  t.rows.push_back({"per layer", format_count(p.per_layer), ""});
  t.rows.push_back({"largest layer", format_count(p.largest_layer), ""});
  t.right_align = {false, true, true};
  out += render(t, s) + "\n";

  // Weight memory of the whole model per storage format (bits include block scales, dtype.hpp).
  table w;
  w.header = {"Weights as", "Bits/param", "Memory"};
  const std::array<std::pair<const char*, quantization>, 6> formats = {{
      {"fp32", {.weights = dtype::fp32, .double_quant = false, .group_size = 0}},
      {"bf16 / fp16", {.weights = dtype::bf16, .double_quant = false, .group_size = 0}},
      {"int8 (LLM.int8)", {.weights = dtype::int8, .double_quant = false, .group_size = 0}},
      {"int4 (GPTQ g128)", {.weights = dtype::int4, .double_quant = false, .group_size = 0}},
      {"nf4", {.weights = dtype::nf4, .double_quant = false, .group_size = 0}},
      {"nf4 + double quant", {.weights = dtype::nf4, .double_quant = true, .group_size = 0}},
  }};
  for (const auto& [name, q] : formats) {
    const double bits = bits_per_element(q, static_cast<double>(a.hidden));
    w.rows.push_back({name, format_number(bits, 4), format_bytes(bytes(total * bits / 8.0))});
  }
  w.right_align = {false, true, true};
  w.notes.push_back("All parameters in the format (no layers kept in higher precision). GB = 10^9 bytes, GiB = 2^30 bytes.");
  out += render(w, s);
  return out;
}

std::string estimate_report(const resolved_run& r, const style& s) {
  const architecture& a = r.model();
  const scenario& run = r.settings();
  const memory_breakdown mem = estimate_memory(r.run);
  const time_estimate t = estimate_time(r.run);
  const std::int64_t params = count_parameters(a).total;
  const bool md = s.format == report_format::markdown;
  std::string out;
  out += std::string(md ? "### " : "") + printable(a.name) + ": " + format_params(params) + " parameters, " +
         format_params(trainable_parameters(r.run)) + " trainable\n";
  out += run_summary(run) + "\n";
  if (r.run.calibration() != nullptr) out += calibration_text(r.run) + "\n";
  // The verdict under the default margin, as estimate_json reports it (fits = not does_not_fit).
  const memory_bands mb = bands_of(r.run, mem);
  out += "\n" + render(memory_table({{"per GPU", mem, answer_of(mem, mb)}}, run.work), s);
  out += verdict_line(mem, mb, s) + "\n";
  if (const allocator_replay rp = replay_allocator(r.run); rp.replayed)
    out += "Allocator replay: reserved " + format_bytes(bytes(rp.peak_reserved)) + " (" + format_number(rp.ratio, 3) +
           " x its allocated; the estimate uses " + format_number(fast_path_ratio(mem), 3) + " x)\n";
  out += "\n" + render(time_table(t, run), s);
  const auto warnings = warning_messages(mem.warnings | t.warnings);
  if (!warnings.empty()) {
    out += "\n";
    for (const auto& w : warnings) out += (md ? "- warning: " : "warning: ") + w + "\n";
  }
  return out;
}

// ----------------------------------------------------------------------- explain
// Formula and source of each term. Wording follows docs/memory-model.md and
// docs/time-model.md (owned by the memory and time authors); keep them in step.

const std::vector<term_info>& memory_terms() {
  // Symbols as in docs/memory-model.md: Ψ parameters per GPU, Ψ_t trainable, N the
  // ZeRO/FSDP sharding degree, T tokens per GPU per micro-batch, e activation bytes.
  static const std::vector<term_info> terms = {
      {"weights_bytes", "Weights",
       "Ψ_linear·bits(q)/8 + Ψ_other·w_e + Ψ_adapters·w_e (+1 B/param fp8 copy); ÷ tp, ep, pp stage; "
       "ZeRO-3/FSDP: W/N + w_e·largest_layer",
       "dtype.hpp bits_per_element (QLoRA §3, LLM.int8, GPTQ); Megatron-LM; DeepSpeed estimate_zero3"},
      {"master_weights_bytes", "Master weights",
       "4·Ψ_t for fp16/bf16/fp8-mixed, none for fp32 and bf16-pure; under ZeRO ≥ 1 reported in optimizer",
       "Micikevicius et al. 2018; Rajbhandari et al. 2020 (ZeRO)"},
      {"gradients_bytes", "Gradients",
       "g_e·Ψ_t; ZeRO-1/2 + 4Ψ_t/N fp32 partition; ZeRO-3 g_e·largest_layer + 4Ψ_t/N; "
       "optimizer-in-backward: largest tensor only",
       "DeepSpeed stage_1_and_2.py / stage3.py estimators; torchtune optimizer_in_bwd"},
      {"optimizer_bytes", "Optimizer state",
       "Ψ_t × bytes/param (AdamW 2·s_e, 8-bit AdamW 2.031, SGD-momentum and Lion s_e, Adafactor factored) "
       "÷ N under ZeRO ≥ 1; paged state outside the allocator",
       "torch.optim; Dettmers et al. 2022 (8-bit); Shazeer & Stern 2018; Chen et al. 2023 (Lion)"},
      {"activations_bytes", "Activations",
       "Σ blocks T × bytes saved per token (norms, q/k/v/o, MLP intermediates, masks; eager adds the s² "
       "softmax terms); checkpointing, tp/sp, cp, 1F1B in-flight micro-batches",
       "Korthikanti et al. 2022 §4 and Table 2; Narayanan et al. 2021 §2.2; measured with saved_tensors_hooks"},
      {"transient_bytes", "Transient buffers",
       "largest working set at the peak phase: loss (e+8)·V·T forward / 12·V·T backward, one block's "
       "backward, ZeRO-3 gathered + prefetched block, reduce bucket, optimizer temporaries",
       "PyTorch cross_entropy; torchtune chunked CE; DeepSpeed stage-3 prefetch and reduce bucket"},
      {"overhead_bytes", "Framework overhead",
       "CUDA context 1343 MiB + NCCL 512 MiB when num_gpus > 1 + cuBLAS workspace",
       "Hugging Face model-memory anatomy; NCCL_BUFFSIZE × channels × peers"},
      {"kv_cache_bytes", "KV cache",
       "2 · L_dec · max(1, kv_heads/tp) · d_head · kv dtype bytes × (prompt + gen) × batch",
       "Pope et al. 2022 (Efficiently Scaling Transformer Inference)"},
      {"peak_allocated_bytes", "Peak allocated",
       "max over forward/loss, loss backward, backward start/end and optimizer step of live bytes "
       "(a maximum, not a sum of maxima)",
       "torch.cuda.max_memory_allocated"},
      {"peak_reserved_bytes", "Peak reserved", "1.10 · peak allocated + 32 MiB cuBLAS workspace",
       "PyTorch CUDACachingAllocator block rounding and fragmentation"},
      {"device_bytes", "Device",
       "peak reserved + CUDA context + NCCL buffers + paged optimizer state", "nvidia-smi"},
      {"capacity_bytes", "Usable capacity", "the GPU's usable memory", "GPU catalog (src/data/gpus.csv, SOURCES)"},
      {"headroom_bytes", "Headroom", "capacity − device (negative: it does not fit)", "definition"},
      {"host_bytes", "Host RAM",
       "offloaded optimizer state, fp32 gradients and master, parameters and activations × GPUs per node",
       "Ren et al. 2021 (ZeRO-Offload); torchtune OffloadActivations"},
  };
  return terms;
}

const std::vector<term_info>& time_terms() {
  static const std::vector<term_info> terms = {
      {"compute_seconds", "Compute",
       "Σ GEMMs max(FLOPs / (peak · ceiling · shape), bytes / bandwidth), shape = output tiles in waves of the "
       "GPU's SMs × k/(k+64); + flash attention at its fraction of peak + element-wise traffic (eager ops "
       "counted one by one, fused kernels one pass) / bandwidth, at least the kernel-launch floor",
       "dense peaks, best-shape fractions and SM counts: src/data/gpus.md; NVIDIA DL Performance Guide (tile "
       "and wave quantization); FA2/FA3 papers; docs/time-model.md"},
      {"communication_seconds", "Communication (exposed)",
       "ring all-reduce 2(n−1)/n·S, reduce-scatter/all-gather (n−1)/n·S over link × 0.8 + latency, "
       "for DP, ZeRO/FSDP, TP, PP, EP, CP; minus what overlaps",
       "NCCL bus bandwidth; Li et al. 2020 (DDP buckets); Megatron-LM"},
      {"bubble_seconds", "Pipeline bubble", "(p−1)/v × one micro-batch's stage time: (p−1)/m of compute (1F1B), "
       "(p−1)/(m·v) interleaved", "Narayanan et al. 2021 §2.2"},
      {"optimizer_seconds", "Optimizer step",
       "bytes per trainable parameter read and written over HBM (weights, gradient, states), ÷ dp under ZeRO",
       "torch.optim fused/foreach kernels; bitsandbytes"},
      {"offload_seconds", "Offload traffic",
       "gradients and 16-bit parameters over PCIe × 0.8 + CPU Adam at 1e9 params/s per node; NVMe 6 GB/s",
       "Ren et al. 2021 (ZeRO-Offload); Rajbhandari et al. 2021 (ZeRO-Infinity)"},
      {"step_seconds", "Step time", "compute + exposed communication + bubble + optimizer + offload",
       "definition"},
      {"tokens_per_second", "Tokens/s", "global batch × seq_len ÷ step time", "definition"},
      {"model_flops_per_step", "Model FLOPs per step",
       "2·m·k·n per matmul (GQA, gated MLP, MoE top-k, LoRA, logits) + attention 4·b·s²·q (causal flash: ½); "
       "backward 2× forward; no recompute",
       "Narayanan et al. 2021 eq. 3; Korthikanti et al. 2022; Dao 2023 (FA2)"},
      {"hardware_flops_per_step", "Hardware FLOPs per step",
       "model FLOPs + recompute (selective: attention core; full: block forward) + flash in-kernel recompute",
       "Korthikanti et al. 2022 §5"},
      {"mfu", "MFU", "model FLOPs ÷ (step × GPUs × dense peak)", "Chowdhery et al. 2022 (PaLM) App. B"},
      {"hfu", "HFU", "hardware FLOPs ÷ (step × GPUs × dense peak)", "Chowdhery et al. 2022 (PaLM) App. B"},
      {"total_seconds", "Time to train", "tokens ÷ tokens/s", "definition"},
      {"gpu_hours", "GPU-hours", "time to train × GPUs ÷ 3600", "definition"},
      {"cost", "Cost", "GPU-hours × price per GPU-hour", "definition"},
      {"energy_kwh", "Energy",
       "GPU-hours × TDP × (0.3 + 0.7 × (compute + optimizer)/step) ÷ 1000",
       "assumption (idle ≈ 30% of TDP), docs/time-model.md"},
      {"time_to_first_token_seconds", "Time to first token", "prefill of the prompt batch through the compute model",
       "docs/time-model.md (Serving)"},
      {"decode_tokens_per_second", "Decode tokens/s",
       "batch ÷ max(bytes read per token / (bandwidth · 0.8), FLOPs / (peak · ceiling)) at prompt + gen/2",
       "memory-bandwidth roofline (Williams et al. 2009)"},
  };
  return terms;
}

// The framework profile and, for each memory and time term it (or a mechanism every
// framework shares) changes in this run, the rule and its source (framework_rules.hpp).
std::string framework_text(const architecture& a, const scenario& r) {
  const framework_profile& p = profile_of(r.fw);
  std::string out = "Framework profile: " + std::string(to_string(r.fw)) + " (" + std::string(p.summary) +
                    "; include/gpuplan/framework.hpp)\n";
  auto term = [&](const std::string& text) { out += "  - " + text + "\n"; };
  const bool peft = r.meth == method::lora || r.meth == method::qlora;
  term("activation checkpointing: " + std::string(to_string(r.ckpt.value_or(checkpointing::none))) +
       " (recipe default for " + (peft ? "LoRA/QLoRA" : "full training") + ": " +
       std::string(to_string(peft ? p.peft_checkpointing : p.full_checkpointing)) + ")");
  if (r.parallel.tp > 1) term(std::string("sequence parallelism with tensor parallelism: ") + (r.parallel.sp ? "on" : "off"));
  if (base_quantization(r).weights == dtype::int8)
    term("LLM.int8 matmuls x" + format_number(detail::kLlmInt8GemmFactor) + " of 16-bit (bitsandbytes)");
  for (const framework_rule& x : framework_rules(a, r))
    out += "  - " + x.terms + ": " + x.effect + "\n      rule: " + x.rule + " [" + x.source + "]\n";
  return out;
}

std::string explain_report(const resolved_run& r, const style& s) {
  const json j = estimate_json(r);
  const json& mem = j["memory"];
  const json& tim = j["time"];
  auto value_of = [&](std::string_view key) -> std::string {
    const std::string k(key);
    const json* v = nullptr;
    if (mem.contains(k)) v = &mem[k];
    else if (tim.contains(k)) v = &tim[k];
    else if (tim["breakdown"].contains(k)) v = &tim["breakdown"][k];
    if (v == nullptr) return "";
    if (v->is_null()) return "n/a";
    if (!v->is_number()) return v->dump();
    const double x = v->get<double>();
    if (k.ends_with("_bytes")) return format_bytes(bytes(x));
    if (k.ends_with("_seconds")) return format_seconds(seconds(x));
    if (k == "mfu" || k == "hfu") return pct(x);
    if (k == "tokens_per_second" || k == "decode_tokens_per_second") return format_rate(x, "tokens");
    if (k == "energy_kwh") return format_number(x) + " kWh";
    return format_number(x);
  };
  std::vector<const term_info*> terms;
  for (const auto& t : memory_terms())
    if (!value_of(t.key).empty()) terms.push_back(&t);
  for (const auto& t : time_terms())
    if (!value_of(t.key).empty()) terms.push_back(&t);

  std::string out = (s.format == report_format::markdown ? "### " : "") + printable(r.model().name) + ": " +
                    run_summary(r.settings()) + "\n\n" + framework_text(r.model(), r.settings()) + "\n";
  if (r.run.calibration() != nullptr) out += calibration_text(r.run) + "\n";
  if (s.format == report_format::markdown) {
    table t;
    t.header = {"Term", "Value", "Formula", "Source"};
    for (const auto* term : terms)
      t.rows.push_back({std::string(term->label), value_of(term->key), std::string(term->formula),
                        std::string(term->source)});
    t.right_align = {false, true, false, false};
    return out + render(t, s);
  }
  const char* bold = s.color ? "\033[1m" : "";
  const char* reset = s.color ? "\033[0m" : "";
  for (const auto* term : terms) {
    out += std::string(bold) + std::string(term->label) + reset + " = " + value_of(term->key) + "  [" +
           std::string(term->key) + "]\n";
    out += "  formula: " + std::string(term->formula) + "\n";
    out += "  source:  " + std::string(term->source) + "\n";
  }
  return out;
}

}  // namespace gpuplan::io

// ---------------------------------------------------------------------- planner

namespace gpuplan::io {
namespace {

json opt_int(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

std::string offload_text(offload opt, offload params) {
  if (opt == offload::none && params == offload::none) return "-";
  std::string s;
  if (opt != offload::none) s = "opt:" + std::string(to_string(opt));
  if (params != offload::none) s += (s.empty() ? "" : "+") + std::string("params:") + std::string(to_string(params));
  return s;
}

// "×1.23" (relative step-time / GPU-seconds cost); "n/a" without a time model.

// "tp 2 · pp 1 · dp 4 · mb 1 × ga 8 · full ckpt · ZeRO-1"
std::string layout_text(const scenario& s) {
  std::string t = "tp " + std::to_string(s.parallel.tp) + " · pp " + std::to_string(s.parallel.pp);
  if (s.parallel.virtual_stages > 1) t += " (v " + std::to_string(s.parallel.virtual_stages) + ")";
  t += " · dp " + std::to_string(s.dp()) + " · mb " + std::to_string(s.micro_batch) + " × ga " +
       std::to_string(s.grad_accum);
  if (s.parallel.sp) t += " · sp";
  if (s.ckpt && *s.ckpt != checkpointing::none) t += " · " + std::string(to_string(*s.ckpt)) + " ckpt";
  if (s.parallel.zero > 0) t += " · ZeRO-" + std::to_string(s.parallel.zero);
  if (s.parallel.offload_optimizer != offload::none || s.parallel.offload_params != offload::none)
    t += " · offload " + offload_text(s.parallel.offload_optimizer, s.parallel.offload_params);
  return t;
}

json scenario_of(const architecture& a, const scenario& s, const std::string& spec) {
  return write_scenario(resolved_run{run(a, s), spec});
}

}  // namespace

std::string format_cuda(const std::optional<cuda_version>& v) {
  if (!v) return "-";
  return std::to_string(v->major) + "." + std::to_string(v->minor);
}

json fit_limits_json(const fit_report& f) {
  json mg = json::array();
  for (const auto& g : f.min_gpus)
    mg.push_back({{"zero", g.zero},
                  {"applicable", g.applicable},
                  {"gpus", g.gpus ? json(*g.gpus) : json(nullptr)},
                  {"searched_up_to", g.searched_up_to}});
  return {{"max_micro_batch", opt_int(f.max_micro_batch)},
          {"max_seq_len", opt_int(f.max_seq_len)},
          {"seq_step", f.seq_step},
          {"seq_limit", f.seq_limit},
          {"min_gpus", std::move(mg)}};
}

table fit_limits_table(const fit_report& f, const scenario& run) {
  table t;
  t.title = "Limits on " + run.gpu.id;
  t.header = {"Limit", "Value"};
  const bool infer = run.work == workload::infer;
  t.rows.push_back({infer ? "Largest serving batch" : "Largest micro-batch",
                    f.max_micro_batch ? std::to_string(*f.max_micro_batch) : std::string("none (1 does not fit)")});
  std::string seq = f.max_seq_len ? std::to_string(*f.max_seq_len) : std::string("none");
  if (f.max_seq_len && *f.max_seq_len + f.seq_step > f.seq_limit) seq += " (limit " + std::to_string(f.seq_limit) + ")";
  t.rows.push_back({infer ? "Longest prompt" : "Longest sequence", seq});
  for (const auto& g : f.min_gpus) {
    std::string v;
    if (!g.applicable) v = "n/a";
    else if (g.gpus) v = std::to_string(*g.gpus) + " × " + run.gpu.id;
    else v = "none up to " + std::to_string(g.searched_up_to);
    t.rows.push_back({"Min GPUs, ZeRO-" + std::to_string(g.zero), v});
  }
  t.right_align = {false, true};
  if (!infer)
    t.notes.push_back("Min GPUs keep the micro-batch, grad_accum and model parallelism (tp×pp×cp) of the run.");
  return t;
}

std::string margin_text(const plan_margin& g) {
  return std::string(g.confidence <= 0.5 ? "P50" : g.confidence <= 0.9 ? "P90" : "P99") + " plus " +
         (g.headroom_fraction > 0 ? pct(g.headroom_fraction) + " or " : std::string()) +
         format_number(in_gib(g.headroom_min)) + " GiB, the larger,";
}

namespace {
std::string time_change_text(double r) {
  if (!std::isfinite(r)) return "n/a";
  const double d = (r - 1) * 100;
  if (std::fabs(d) < 0.5) return "same";
  return (d > 0 ? "+" : "−") + format_number(std::fabs(d), 2) + "% time";
}
std::string where_text(const suggestion& g) {
  switch (g.scope) {
    case suggestion_scope::own_card: return "your card";
    case suggestion_scope::more_cards: return std::to_string(g.run.num_gpus) + " × " + g.run.gpu.id;
    case suggestion_scope::other_gpu: return "rent or buy";
  }
  return "?";
}
std::string price_text(const suggestion& g) {
  if (!g.price_per_gpu_hour) return g.scope == suggestion_scope::other_gpu ? "no price" : "-";
  std::string out = "$" + format_number(*g.price_per_gpu_hour) + "/GPU-h";
  if (g.run_cost) out += "; run $" + format_number(*g.run_cost, 4);
  return out;
}
json opt_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
}  // namespace

json suggestions_json(const std::vector<suggestion>& s, const architecture& a, const std::string& model_spec) {
  json arr = json::array();
  int rank = 1;
  for (const auto& g : s) {
    json changes = json::array();
    for (const auto k : g.changes) changes.push_back(to_string(k));
    arr.push_back({{"rank", rank++},
                   {"changes", std::move(changes)},
                   {"description", g.description},
                   {"fits", g.fits},
                   {"scope", to_string(g.scope)},
                   {"effect", to_string(g.effect)},
                   {"device_bytes", in_bytes(g.memory.device)},
                   {"device_quantile_bytes", g.device_quantile},
                   {"capacity_bytes", in_bytes(g.memory.capacity)},
                   {"headroom_bytes", in_bytes(g.memory.headroom)},
                   {"headroom_kept_bytes", in_bytes(g.headroom_kept)},
                   {"step_seconds", in_seconds(g.time.step)},
                   {"time_cost", finite_or_null(g.time_cost)},
                   {"time_change", finite_or_null(g.time_change)},
                   {"price_per_gpu_hour", opt_number(g.price_per_gpu_hour)},
                   {"run_cost", opt_number(g.run_cost)},
                   {"num_gpus", g.run.num_gpus},
                   {"gpu", g.run.gpu.id},
                   {"scenario", scenario_of(a, g.run, model_spec)}});
  }
  return arr;
}

table suggestions_table(const std::vector<suggestion>& s) {
  table t;
  t.title = "What would make it fit";
  t.header = {"#", "Where", "Change", "Peak", "Free at margin", "Time", "Price"};
  int rank = 1;
  for (const auto& g : s)
    t.rows.push_back({std::to_string(rank++), where_text(g), g.description,
                      format_number(in_gib(g.memory.device)) + " GiB of " + format_number(in_gib(g.memory.capacity)) + " GiB",
                      format_number((in_bytes(g.memory.capacity) - g.device_quantile) / (1024.0 * 1024.0 * 1024.0)) + " GiB",
                      time_change_text(g.time_change), price_text(g)});
  t.right_align = {true, false, false, true, true, true, false};
  if (s.empty()) t.notes.push_back("No single change, pair of changes or catalog GPU fits with the margin.");
  t.notes.push_back("Only changes that fit with the margin. Your card first (the same result before approximate "
                    "optimizer state, adapters and shorter sequences; then by time), then more of your cards, then "
                    "other GPUs by price (catalog on-demand $/GPU-hour; run cost when --tokens is given).");
  t.notes.push_back("Peak = estimated device memory; Free at margin = capacity − the band's quantile (P90 by "
                    "default); Time = wall-clock time per trained sample relative to the run.");
  return t;
}

json layout_json(const layout& l) {
  return {{"gpus", l.gpus},
          {"tp", l.tp},
          {"pp", l.pp},
          {"virtual_stages", l.virtual_stages},
          {"dp", l.dp()},
          {"micro_batch", l.micro_batch},
          {"grad_accum", l.grad_accum},
          {"checkpointing", to_string(l.ckpt)},
          {"zero", l.zero},
          {"sp", l.sp},
          {"offload_optimizer", to_string(l.offload_optimizer)},
          {"offload_params", to_string(l.offload_params)}};
}

json search_json(const search_result& r, const architecture& a, const std::string& model_spec,
                 search_objective objective) {
  json rows = json::array();
  int rank = 1;
  for (const auto& row : r.rows)
    rows.push_back({{"rank", rank++},
                    {"layout", layout_json(row.config)},
                    {"score", row.score},
                    {"device_bytes", in_bytes(row.memory.device)},
                    {"headroom_bytes", in_bytes(row.memory.headroom)},
                    {"step_seconds", in_seconds(row.time.step)},
                    {"tokens_per_second", row.time.tokens_per_second},
                    {"tokens_per_second_per_gpu", row.time.tokens_per_second_per_gpu},
                    {"mfu", row.time.mfu},
                    {"scenario", scenario_of(a, row.run, model_spec)}});
  return {{"rows", std::move(rows)},
          {"objective", to_string(objective)},
          {"global_batch", r.global_batch},
          {"evaluated", r.evaluated},
          {"fitting", r.fitting},
          {"infeasible", r.infeasible},
          {"pruned_time", r.pruned_time},
          {"rejected", r.rejected},
          {"memory_calls", r.memory_calls},
          {"time_calls", r.time_calls},
          {"threads", r.threads},
          {"seconds", r.seconds}};
}

table search_table(const search_result& r, search_objective objective) {
  table t;
  const bool cost = objective == search_objective::cost;
  t.title = std::string(cost ? "Cheapest" : "Fastest") + " layouts (global batch " + std::to_string(r.global_batch) + ")";
  t.header = {"#"};
  if (cost) t.header.push_back("GPUs");
  for (const char* h : {"tp", "pp", "v", "dp", "mb", "ga", "ckpt", "zero", "sp", "offload", "Device memory",
                        "Step time", "Tokens/s", "MFU"})
    t.header.emplace_back(h);
  if (cost) t.header.emplace_back("GPU-s/step");
  int rank = 1;
  for (const auto& row : r.rows) {
    const layout& l = row.config;
    std::vector<std::string> cells{std::to_string(rank++)};
    if (cost) cells.push_back(std::to_string(l.gpus));
    for (std::string c : {std::to_string(l.tp), std::to_string(l.pp), std::to_string(l.virtual_stages),
                          std::to_string(l.dp()), std::to_string(l.micro_batch), std::to_string(l.grad_accum),
                          std::string(to_string(l.ckpt)), std::to_string(l.zero), std::string(l.sp ? "on" : "off"),
                          offload_text(l.offload_optimizer, l.offload_params), format_bytes(row.memory.device),
                          format_seconds(row.time.step), format_rate(row.time.tokens_per_second, "tokens"),
                          pct(row.time.mfu)})
      cells.push_back(std::move(c));
    if (cost) cells.push_back(format_number(row.score));
    t.rows.push_back(std::move(cells));
  }
  t.right_align.assign(t.header.size(), true);
  const std::size_t ck = cost ? 8 : 7;  // ckpt, zero, sp, offload: left
  t.right_align[ck] = false;
  t.right_align[ck + 2] = false;
  t.right_align[ck + 3] = false;
  if (r.rows.empty()) t.notes.push_back("No layout fits.");
  t.notes.push_back("evaluated " + format_count(r.evaluated) + " configurations in " + format_number(r.seconds) +
                    " s (" + format_count(r.fitting) + " fit and were timed, " + format_count(r.infeasible) +
                    " do not fit, " + format_count(r.pruned_time) + " pruned by a time bound; " +
                    std::to_string(r.threads) + (r.threads == 1 ? " thread)" : " threads)"));
  return t;
}

namespace {

// RAM sizes (binary, as DIMMs are sold) in GiB below 1 TiB, else TiB; at most 4 significant digits.
std::string human_size(Bytes b) {
  const double g = in_gib(b);
  return g < 1024 ? format_number(g) + " GiB" : format_number(g / 1024) + " TiB";
}
std::string human_watts(double w) { return w < 1000 ? format_number(w) + " W" : format_number(w / 1000) + " kW"; }
// Three significant digits, thousands grouped: 52,509 -> "52,500".
std::string three_digits(double v) {
  if (!(std::fabs(v) >= 1000) || !std::isfinite(v)) return format_number(v);
  const double scale = std::pow(10.0, std::floor(std::log10(std::fabs(v))) - 2);
  return format_number(std::round(v / scale) * scale);
}
std::string human_money(double usd) { return "$" + three_digits(usd); }
std::string human_hours(double h) {
  if (!std::isfinite(h)) return "never";
  return three_digits(h) + " h";
}

// How recommend's rows are ranked, the first note under its tables.
const char* const kRecommendRankNote =
    "Ranked: meets the deadline, within budget, cheapest run (rented rows first, then cards to buy), fastest, fewer GPUs, id. "
    "Cost = wall-clock × the rented instances' $/h; for cards with no rental price, their purchase + this run's electricity (buy).";

json rent_json(const std::optional<rental_choice>& rent) {
  if (!rent) return nullptr;
  const rental_choice& c = *rent;
  return {{"provider", c.offer.provider},
          {"instance", c.offer.instance},
          {"gpus_per_instance", c.offer.gpus_per_instance},
          {"instances", c.instances},
          {"price_per_gpu_hour", c.offer.price_per_gpu_hour},
          {"price_per_hour", c.price_per_hour},
          {"kind", c.offer.kind},
          {"date", c.offer.date}};
}

std::string rent_text(const std::optional<rental_choice>& rent) {
  if (!rent) return "-";
  const rental_choice& c = *rent;
  if (c.offer.instance == "per-gpu") return c.offer.provider + " (per GPU)";
  return c.offer.provider + " " + c.offer.instance + (c.instances > 1 ? " × " + std::to_string(c.instances) : "");
}

}  // namespace

json recommend_json(const std::vector<recommendation>& r) {
  json arr = json::array();
  int rank = 1;
  for (const auto& x : r) {
    const system_sizing& z = x.system;
    const auto opt = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); };
    arr.push_back({{"rank", rank++},
                   {"gpu", x.gpu.id},
                   {"count", x.count},
                   {"layout", layout_json(layout_of(x.run))},
                   {"global_batch", x.run.global_batch()},
                   {"wall_seconds", in_seconds(x.wall)},
                   {"gpu_hours", x.gpu_hours},
                   {"cost", x.cost ? json(*x.cost) : json(nullptr)},
                   {"rent", rent_json(x.rent)},
                   {"purchase", opt(x.purchase)},
                   // null with a purchase price: renting costs no more than the electricity (never pays off).
                   {"break_even_hours", opt(x.break_even_hours)},
                   {"own_electricity", opt(x.own_electricity)},
                   {"own_cost", opt(x.own_cost)},
                   {"meets_deadline", x.meets_deadline},
                   {"within_budget", x.within_budget},
                   {"device_bytes", in_bytes(x.memory.device)},
                   {"step_seconds", in_seconds(x.time.step)},
                   {"mfu", x.time.mfu},
                   {"system",
                    {{"platform", to_string(z.platform)},
                     {"nodes", z.nodes},
                     {"gpus_per_node", z.gpus_per_node},
                     {"cpu_cores_min", z.cpu_cores_min},
                     {"cpu_cores", z.cpu_cores},
                     {"host_ram_bytes", in_bytes(z.host_ram)},
                     {"gpu_watts", z.gpu_watts},
                     {"cpu_watts", z.cpu_watts},
                     {"psu_watts", z.psu_watts},
                     {"psu_watts_per_node", z.psu_watts_per_node},
                     {"wall_watts", z.wall_watts},
                     {"pcie_lanes_per_gpu", z.pcie_lanes_per_gpu},
                     {"cuda_min", z.cuda_min ? json(format_cuda(z.cuda_min)) : json(nullptr)},
                     {"driver_min", z.driver_min.empty() ? json(nullptr) : json(z.driver_min)},
                     {"nvlink_present", z.nvlink_present},
                     {"nvlink_needed", z.nvlink_needed},
                     {"ecc", z.ecc},
                     {"notes", z.notes}}}});
  }
  return arr;
}

table recommend_table(const std::vector<recommendation>& r, Seconds deadline) {
  table t;
  t.title = "GPU recommendation (deadline " + format_seconds(deadline) + ")";
  t.header = {"#", "GPU", "Count", "Wall-clock", "Cost", "$/h", "Deadline", "Rent", "Buy: break-even", "Layout",
              "Machine (per node)", "CUDA ≥ / driver ≥"};
  int rank = 1;
  bool any_buy = false;
  for (const auto& x : r) {
    const system_sizing& z = x.system;
    const std::string id = std::to_string(rank);
    std::string buy = "-";
    if (x.purchase) {
      any_buy = true;
      buy = human_money(*x.purchase) + (x.break_even_hours ? ", " + human_hours(*x.break_even_hours) : "");
    }
    std::string machine = std::string(to_string(z.platform)) + (z.nodes > 1 ? " × " + std::to_string(z.nodes) : "");
    if (z.platform != platform_class::cloud)
      machine += ": " + std::to_string(z.cpu_cores_min) + "-" + std::to_string(z.cpu_cores) + " cores, " +
                 human_size(z.host_ram) + " RAM, " + human_watts(z.psu_watts) + " PSU";
    else
      machine += ": " + std::to_string(z.cpu_cores) + " vCPUs, " + human_size(z.host_ram) + " RAM";
    t.rows.push_back({id, x.gpu.id, std::to_string(x.count), format_seconds(x.wall),
                      x.cost ? human_money(*x.cost) : x.own_cost ? human_money(*x.own_cost) + " (buy)" : std::string("-"),
                      x.rent ? human_money(x.rent->price_per_hour) : std::string("-"),
                      std::string(x.meets_deadline ? "met" : "late") + (x.within_budget ? "" : ", over budget"),
                      rent_text(x.rent), buy, layout_text(x.run), machine,
                      format_cuda(z.cuda_min) + (z.driver_min.empty() ? "" : " / " + z.driver_min)});
    for (const auto& n : z.notes) t.notes.push_back("#" + id + " " + x.gpu.id + " × " + std::to_string(x.count) + ": " + n);
    ++rank;
  }
  t.right_align = {true, false, true, true, true, true, false, false, false, false, false, false};
  if (r.empty()) t.notes.insert(t.notes.begin(), "No GPU type and count in the list fits this run.");
  if (any_buy)
    t.notes.insert(t.notes.begin(),
                   "Buy: the cards' purchase price and the hours of use after which owning one costs less than "
                   "renting it, its electricity included (--kwh-price).");
  t.notes.insert(t.notes.begin(), kRecommendRankNote);
  return t;
}

// The link DDP all-reduces over inside a node (detail/timing_comm.hpp collective_link).
std::string gpu_link_text(const gpu_spec& g) { return g.has_nvlink() ? g.link : g.p2p ? "PCIe" : "PCIe, no P2P"; }

json graph_recommend_json(const std::vector<graph_recommendation>& r) {
  json arr = json::array();
  int rank = 1;
  for (const auto& x : r)
    arr.push_back({{"rank", rank++},
                   {"gpu", x.gpu.id},
                   {"count", x.count},
                   {"link", gpu_link_text(x.gpu)},
                   {"micro_batch", x.micro_batch},
                   {"grad_accum", x.grad_accum},
                   {"global_batch", x.global_batch},
                   {"device_bytes", in_bytes(x.step.device)},
                   {"usable_bytes", in_bytes(x.gpu.usable_memory)},
                   {"micro_step_seconds", in_seconds(x.step.micro)},
                   {"optimizer_step_seconds", in_seconds(x.optimizer_step)},
                   {"exposed_all_reduce_seconds", in_seconds(x.step.exposed_all_reduce)},
                   {"samples_per_second", x.samples_per_s},
                   {"scaling", x.scaling ? json(*x.scaling) : json(nullptr)},
                   {"wall_seconds", in_seconds(x.wall)},
                   {"gpu_hours", x.gpu_hours},
                   {"cost", x.cost ? json(*x.cost) : json(nullptr)},
                   {"rent", rent_json(x.rent)},
                   {"meets_deadline", x.meets_deadline},
                   {"within_budget", x.within_budget}});
  return arr;
}

table graph_recommend_table(const std::vector<graph_recommendation>& r, Seconds deadline, int zero) {
  table t;
  t.title = "GPU recommendation (deadline " + format_seconds(deadline) + ")";
  t.header = {"#", "GPU", "Count", "Link", "Batch/GPU", "Memory/GPU", "Images/s", "Scaling", "Wall-clock", "Cost", "$/h",
              "Deadline", "Rent"};
  int rank = 1;
  for (const auto& x : r) {
    t.rows.push_back({std::to_string(rank++), x.gpu.id, std::to_string(x.count),
                      x.count > 1 ? gpu_link_text(x.gpu) : std::string("-"),
                      std::to_string(x.micro_batch) + (x.grad_accum > 1 ? " × " + std::to_string(x.grad_accum) : ""),
                      format_bytes_short(x.step.device) + " / " + format_bytes_short(x.gpu.usable_memory),
                      format_number(x.samples_per_s, 3), x.scaling ? format_number(100 * *x.scaling, 3) + "%" : std::string("-"),
                      format_seconds(x.wall), x.cost ? human_money(*x.cost) : std::string("-"),
                      x.rent ? human_money(x.rent->price_per_hour) : std::string("-"),
                      std::string(x.meets_deadline ? "met" : "late") + (x.within_budget ? "" : ", over budget"),
                      rent_text(x.rent)});
  }
  t.right_align = {true, false, true, false, true, true, true, true, true, true, true, false, false};
  if (r.empty()) t.notes.push_back("No GPU type and count in the list fits this run, even at one sample per GPU.");
  t.notes.insert(t.notes.begin(),
                 std::string(zero >= 3 ? "ZeRO-3 (FSDP FULL_SHARD): each GPU runs micro-batch × accumulation of the global "
                                         "batch, gathering the weights and reduce-scattering the gradients every micro-batch"
                             : zero >= 1 ? "ZeRO-" + std::to_string(zero) + ": each GPU runs micro-batch × accumulation of the "
                                           "global batch; the gradients are reduce-scattered once per optimizer step"
                                         : "PyTorch DDP: each GPU runs micro-batch × accumulation of the global batch; the "
                                           "gradients are all-reduced once per optimizer step") +
                     " over the GPUs' link. Scaling: images/s per GPU against one GPU of the type. "
                     "Memory: nvidia-smi peak (reserved + CUDA context), planned with the headroom kept free.");
  t.notes.insert(t.notes.begin(), kRecommendRankNote);
  return t;
}

std::string calibration_text(const run& r) {
  const profile* p = r.calibration();
  if (p == nullptr) return {};
  const bool bands = detail::profile_band_applies(r);
  std::string out = "Calibrated: profile '" + printable(p->name) + "' (" + printable(p->model) + " on " + printable(p->gpu) +
                    ", " + printable(p->framework) + "; " +
                    std::to_string(p->memory_points) + " memory and " + std::to_string(p->time_points) + " time points)";
  if (p->memory_points > 0)
    out += "; memory: states x" + format_number(p->memory.states_scale, 3) + ", working x" +
           format_number(p->memory.activation_scale, 3) + ", reserved/allocated " + format_number(p->memory.reserved_factor, 3) +
           ", context " + format_bytes(bytes(p->memory.cuda_context));
  if (p->time_points > 0)
    out += "; time: GEMM x" + format_number(p->time.matmul_scale, 3) + ", bandwidth " +
           format_number(p->time.bandwidth_fraction, 3) + ", network " + format_number(p->time.comm_fraction, 3);
  out += bands ? "; bands from the profile" : "; bands from the validation table (the profile measured another model, GPU or framework)";
  return out;
}

json calibration_json(const run& r) {
  const profile* p = r.calibration();
  if (p == nullptr) return nullptr;
  json j = write_profile(*p);
  j.erase("gpuplan_profile");
  return j;
}

}  // namespace gpuplan::io

