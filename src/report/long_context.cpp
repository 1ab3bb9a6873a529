// report/long_context.cpp — the largest trainable context (plan/max_context.hpp) as JSON,
// as the lines of its answer and as the table of its GPU-count ladder (docs/long-context.md).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/io/report.hpp"

namespace gpuplan::io {
using nlohmann::json;

namespace long_context_detail {

json tokens_or_null(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }
json tokens_text_or_null(const std::optional<std::int64_t>& v) { return v ? json(format_tokens(*v)) : json(nullptr); }
bool beyond_positions(const max_context_report& r) {
  return r.tokens && r.max_positions > 0 && *r.tokens > r.max_positions;
}

}  // namespace long_context_detail

json max_context_json(const max_context_report& r) {
  using namespace long_context_detail;
  json ladder = json::array();
  for (const context_rung& g : r.ladder)
    ladder.push_back({{"num_gpus", g.num_gpus},
                      {"cp", g.cp},
                      {"dp", g.dp},
                      {"tokens", tokens_or_null(g.tokens)},
                      {"tokens_text", tokens_text_or_null(g.tokens)},
                      {"step", g.step},
                      {"device_bytes", in_bytes(g.memory.device)},
                      {"p50_device_bytes", in_bytes(g.p50_device)},
                      {"capacity_bytes", in_bytes(g.memory.capacity)}});
  return {{"tokens", tokens_or_null(r.tokens)},
          {"tokens_text", tokens_text_or_null(r.tokens)},
          {"planned_tokens", tokens_or_null(r.planned_tokens)},
          {"micro_batch", r.micro_batch},
          {"step", r.step},
          {"limit", r.limit},
          {"max_positions", r.max_positions},
          {"beyond_max_positions", beyond_positions(r)},
          {"context_parallel", r.context_parallel},
          {"memory", memory_json(r.memory, workload::train)},
          {"p50_device_bytes", in_bytes(r.p50_device)},
          {"ladder", std::move(ladder)}};
}

std::string max_context_summary(const max_context_report& r, const plan_margin& g) {
  using namespace long_context_detail;
  const std::string batch = "micro-batch " + std::to_string(r.micro_batch);
  std::string out = "Largest trainable context: ";
  if (r.tokens) out += format_tokens(*r.tokens) + " at " + batch + " (fits: its P50 within capacity; searched in steps of " +
                       std::to_string(r.step) + " up to " + format_count(r.limit) + ")\n";
  else out += "none: " + format_tokens(r.step) + " at " + batch + " does not fit\n";
  if (r.tokens) {
    out += "With the planning margin (" + margin_text(g) + " free): ";
    out += r.planned_tokens ? format_tokens(*r.planned_tokens) + "\n" : "none is a plan\n";
  }
  if (beyond_positions(r))
    out += "note: past the model's max_position_embeddings (" + format_count(r.max_positions) +
           "): memory allows it; the model needs RoPE scaling (or long-context training) to use it\n";
  return out;
}

table context_ladder_table(const max_context_report& r) {
  table t;
  t.title = r.context_parallel ? "Largest context per GPU count: context parallelism over the GPUs (cp = GPUs / (tp·pp))"
                               : "Largest context per GPU count: data parallelism (the framework runs no context parallelism)";
  t.header = {"GPUs", "cp", "dp", "Largest context", "Device (P50)", "Device (estimate)", "Capacity"};
  for (const context_rung& g : r.ladder)
    t.rows.push_back({std::to_string(g.num_gpus), std::to_string(g.cp), std::to_string(g.dp),
                      g.tokens ? format_tokens(*g.tokens) : "none", format_bytes_short(g.p50_device),
                      format_bytes_short(g.memory.device), format_bytes_short(g.memory.capacity)});
  t.notes.push_back("Each row: the longest sequence at the run's micro-batch that fits (the device memory at the P50 of "
                    "its error band within capacity); ZeRO, offload and checkpointing as the run says (docs/long-context.md).");
  return t;
}

}  // namespace gpuplan::io
