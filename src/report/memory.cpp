// report/memory.cpp — the memory table and the verdict line of `fit`, `estimate` and
// `time`, and the answer (verdict, P50 headroom) every output prints beside them.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "gpuplan/io/report.hpp"

namespace gpuplan::io {

namespace {

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

// "; headroom at P50 …" / "; short by … at P50" / the engine that cannot start: the answer's figure.
std::string headroom_text(const fit_answer& a) {
  if (a.cannot_start) return "; the serving engine's KV cache pool holds no whole request";
  if (a.fits) return "; headroom at P50 " + format_bytes(a.headroom);
  return "; short by " + format_bytes(bytes(-in_bytes(a.headroom))) + " at P50";
}

}  // namespace

std::string binding_component(const memory_breakdown& m) {
  return std::string(name_of(kComponentLabels, largest_component(m)));
}

std::string verdict_line(const memory_breakdown& m, const style& s) {
  std::string line = report_detail::fits_word(m.fits, s) + ": needs " + format_bytes(m.device) + " of " +
                     format_bytes(m.capacity) + " usable; " + report_detail::room_text(m.fits, m.headroom);
  const double dev = in_bytes(m.device);
  const memory_component bind = largest_component(m);
  line += "; largest term: " + std::string(name_of(kComponentLabels, bind));
  if (dev > 0) line += " (" + report_detail::pct(in_bytes(component_bytes(m, bind)) / dev) + " of device)";
  return line;
}

fit_answer answer_of(const memory_breakdown& m, const memory_bands& b, const plan_margin& g) {
  fit_answer a;
  a.state = verdict_of(m, b, g);
  a.fits = a.state != verdict::does_not_fit;
  a.p50_device = bytes(detail::firm_device(m) * b.source.factors.q50);
  a.headroom = m.capacity - a.p50_device;
  a.cannot_start = !a.fits && in_bytes(a.headroom) >= 0;
  return a;
}

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

}  // namespace gpuplan::io
