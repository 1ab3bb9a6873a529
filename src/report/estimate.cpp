// report/estimate.cpp — an estimate as text or markdown: the one-line run summary, the
// time table, the calibration line and the whole report of `gpuplan estimate`.
#include <string>
#include <utility>

#include "common.hpp"
#include "gpuplan/io/profile.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/peft.hpp"
#include "gpuplan/replay.hpp"

namespace gpuplan::io {

std::string run_summary(const scenario& run, bool with_method) {
  std::string s = std::string(to_string(run.work));
  if (with_method) {
    s += ", " + std::string(to_string(run.meth));
    if (has_low_rank_path(run.meth)) s += " r=" + std::to_string(run.lora.rank);
    if (traits_of(run.meth).quantized_base || run.quant)
      s += " (" + std::string(to_string(base_quantization(run).weights)) + " base)";
  }
  if (run.work == workload::train) {
    s += ", " + std::string(to_string(precision_of(run))) + ", " + std::string(to_string(run.opt));
    s += ", micro-batch " + std::to_string(run.micro_batch) + " × seq " + std::to_string(run.seq_len);
    if (run.grad_accum > 1) s += " × accum " + std::to_string(run.grad_accum);
    if (run.ckpt && *run.ckpt != checkpointing::none) s += ", " + std::string(to_string(*run.ckpt)) + " checkpointing";
  } else {
    s += ", batch " + std::to_string(run.inference.batch) + ", prompt " + std::to_string(run.inference.prompt_len) +
         " + gen " + std::to_string(run.inference.gen_len);
  }
  const auto& par = run.parallel;
  if (par.tp_size() > 1) s += ", tp " + std::to_string(par.tp_size());
  if (par.pp > 1) s += ", pp " + std::to_string(par.pp);
  if (par.cp > 1) s += ", cp " + std::to_string(par.cp);
  if (par.zero > 0) s += ", ZeRO-" + std::to_string(par.zero);
  if (par.offload_optimizer != offload::none) s += ", optimizer offload " + std::string(to_string(par.offload_optimizer));
  if (par.offload_params != offload::none) s += ", param offload " + std::string(to_string(par.offload_params));
  s += "; " + std::to_string(run.num_gpus) + " × " + (run.gpu.id.empty() ? std::string("gpu") : printable(run.gpu.id));
  return s;
}

table time_table(const time_estimate& t, const scenario& run) {
  table tab;
  tab.header = {"Time", "Value", "Share of step"};
  const double step = in_seconds(t.step);
  auto share = [&](Seconds x) { return step > 0 ? report_detail::pct(in_seconds(x) / step) : std::string(""); };
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
    add("MFU", report_detail::pct(t.mfu));
    add("HFU", report_detail::pct(t.hfu));
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

}  // namespace gpuplan::io
