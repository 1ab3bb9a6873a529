// io/report.hpp — one formatter for every interface: JSON, text tables, markdown.
// The CLI and Python's __repr__ both print through these functions, so a number
// reads the same everywhere ("26.03 GB (24.24 GiB)": GB = 10^9, GiB = 2^30).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpuplan/bands.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/plan.hpp"
#include "gpuplan/timing.hpp"

namespace gpuplan {
struct allocator_replay;  // replay.hpp
}  // namespace gpuplan

namespace gpuplan::io {

// The whole estimate of a run, as `gpuplan estimate --scenario FILE --json` prints it:
// {"model": {"name", "parameters", "trainable_parameters"}, "memory": {...}, "time": {...},
//  "warnings": [...]}. Keys documented in docs/scenario.md and docs/cli.md.
nlohmann::json estimate_json(const resolved_run& r);
nlohmann::json memory_json(const memory_breakdown& m);
nlohmann::json time_json(const time_estimate& t);

// ---------------------------------------------------------------------------
// Additions (CLI / formatter). Everything below is presentation only.

// Serving keys (kv_cache_bytes, max_concurrent_sequences; time_to_first_token_seconds,
// decode_tokens_per_second, ...) are added when `work` is workload::infer.
nlohmann::json memory_json(const memory_breakdown& m, workload work);
nlohmann::json time_json(const time_estimate& t, workload work);

// `gpuplan describe --json`: {"name", "family", "kind", "parameters", "components":
// {embeddings, attention, mlp, norms, head}, "largest_layer_parameters",
// "layers": [{"name", "parameters"}...], "architecture": {...}}.
nlohmann::json describe_json(const architecture& a);
// Warning bits -> their messages (warnings.hpp), in bit order.
std::vector<std::string> warning_messages(warning_set w);

enum class report_format : std::uint8_t { text, markdown, json };
inline constexpr std::array<enum_name<report_format>, 3> kReportFormatNames{{
    {report_format::text, "text"}, {report_format::markdown, "markdown"}, {report_format::json, "json"}}};
inline constexpr std::array<enum_name<report_format>, 1> kReportFormatAliases{{{report_format::markdown, "md"}}};
// A name or alias above; throws config_error("--format", ...) otherwise.
report_format parse_report_format(std::string_view s);

struct style {
  report_format format = report_format::text;
  bool color = false;  // ANSI colour (text only); the CLI sets it for a TTY without NO_COLOR
};

// A user-supplied name (model, GPU, profile, graph, --name, a file name) made safe to
// print on a terminal: control characters (C0 but '\n' when keep_newlines, DEL, C1 such
// as the 8-bit CSI) and bidirectional overrides dropped, invalid UTF-8 replaced by U+FFFD,
// so "evil\x1b[2J" prints as "evil[2J" instead of clearing the screen. JSON output needs
// none of this (it escapes them). render() applies it to every cell, title and note.
std::string printable(std::string_view s, bool keep_newlines = false);

// Number formatting shared by every table.
std::string format_bytes(Bytes b);          // "26.03 GB (24.24 GiB)"; negative keeps its sign
std::string format_bytes_short(Bytes b);    // "26.03 GB"
std::string format_count(std::int64_t n);   // "13,015,864,320"
std::string format_params(std::int64_t n);  // "13.02 B"
std::string format_tokens(std::int64_t n);  // "32,768 tokens (32K)", "210,000 tokens (205.1K)": K = 1,024 tokens
std::string format_seconds(Seconds s);      // "412 ms", "3.21 s", "5.4 h", "12.3 days"
std::string format_number(double v, int significant = 3);  // "1.23e+15" style only when huge
std::string format_rate(double per_second, std::string_view unit);  // "12.3 k tokens/s"

// A table: a header row, body rows, an optional title and notes under it.
// Text output aligns columns (numbers right-aligned); markdown emits a pipe table.
struct table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // printed after the table, one per line
  std::vector<bool> right_align;   // per column; default: all but the first
};
std::string render(const table& t, const style& s);

// Readable reports (text or markdown; json callers use the *_json functions).
std::string describe_report(const architecture& a, const style& s);
// What every output prints beside a verdict (plan/margin.hpp verdict_of, docs/planner.md
// "Safety margin"): fits = (verdict != does_not_fit), and the headroom of the P50 device figure
// (resident device memory × the band's P50; negative: short by), the figure that decides
// does_not_fit. cannot_start: does_not_fit with that figure within capacity (a paged
// serving engine whose KV pool holds no whole request).
struct fit_answer {
  verdict state = verdict::does_not_fit;
  bool fits = false;
  Bytes p50_device = bytes(0);
  Bytes headroom = bytes(0);
  bool cannot_start = false;
};
fit_answer answer_of(const memory_breakdown& m, const memory_bands& b, const plan_margin& g = {});

// One column per labelled breakdown (e.g. full / lora / qlora) — the `fit` table. With an
// answer, its Verdict and Headroom rows print the answer's (the verdict line's) figures.
struct labelled_memory {
  std::string label;
  memory_breakdown memory;
  std::optional<fit_answer> answer{};
};
table memory_table(const std::vector<labelled_memory>& columns, workload work = workload::train);
std::string memory_report(const memory_breakdown& m, const style& s, workload work = workload::train);
table time_table(const time_estimate& t, const scenario& run);
std::string time_report(const time_estimate& t, const scenario& run, const style& s);
// The component with the most bytes (weights, optimizer, activations, ...): what binds.
std::string binding_component(const memory_breakdown& m);
// "FITS with 3.20 GB (2.98 GiB) headroom" / "DOES NOT FIT: short by ...".
std::string verdict_line(const memory_breakdown& m, const style& s);
// The three-state verdict under a planning margin (plan/margin.hpp) with the device
// band: "TIGHT: needs 21.3 GB [20.1–23.0] of ...".
std::string verdict_line(const memory_breakdown& m, const memory_bands& b, const style& s, const plan_margin& g = {});
// "P90 plus 5% or 1 GiB, the larger,": the margin in words.
std::string margin_text(const plan_margin& g);
// "Framework profile: hf (...)" and, for each memory/time term a profile rule or a shared
// framework mechanism changes in the run, the rule and its source (framework_rules.hpp).
std::string framework_text(const architecture& model, const scenario& run);
// The run's calibration profile (profile.hpp) in one line: its name, what it measured
// and the fitted constants; empty for an uncalibrated run.
std::string calibration_text(const gpuplan::run& r);
nlohmann::json calibration_json(const gpuplan::run& r);
// {"p10": ..., "p50": ..., "p90": ...}
nlohmann::json band_json(const band& b);
// The caching allocator replayed (replay.hpp) beside the estimate `m`'s own reserved/allocated
// ratio: `memory.allocator_replay` of estimate_json and Python's Estimate.allocator_replay().
nlohmann::json replay_json(const allocator_replay& rp, const memory_breakdown& m);
// Bands of the three memory peaks and the regime they come from.
nlohmann::json memory_bands_json(const memory_bands& b);
nlohmann::json time_bands_json(const time_bands& b);
// One line describing a run: "train, lora r=8, bf16-mixed, adamw, micro-batch 1 × seq 2048; 1 × rtx-4090".
// With `with_method = false` the method is left out (a table with one column per method).
std::string run_summary(const scenario& run, bool with_method = true);
// A whole estimate (model line, memory table, time table, warnings) as text/markdown.
std::string estimate_report(const resolved_run& r, const style& s);

// `gpuplan explain`: each term with its value, formula and source.
struct term_info {
  std::string_view key;      // JSON key, e.g. "optimizer_bytes"
  std::string_view label;    // "Optimizer state"
  std::string_view formula;  // "Ψ_trainable × bytes/state × states / zero-shard"
  std::string_view source;   // "Rajbhandari et al. 2020 (ZeRO) §3; torch.optim.AdamW"
};
const std::vector<term_info>& memory_terms();
const std::vector<term_info>& time_terms();
std::string explain_report(const resolved_run& r, const style& s);

// ---------------------------------------------------------------------------
// The planner (plan.hpp): fit limits, "what would make it fit", search, recommend.
// Each has a JSON form (the CLI's --json, Python's to_dict()) and a table (the CLI's
// text/markdown, Python's __repr__ and _repr_html_). Keys are listed in docs/cli.md.

// {"max_micro_batch", "max_seq_len", "seq_step", "seq_limit",
//  "min_gpus": [{"zero", "applicable", "gpus", "searched_up_to"} x 4]}; null = none fits.
nlohmann::json fit_limits_json(const fit_report& f);
// Rows: largest micro-batch, longest sequence, min GPUs with ZeRO-0..3.
table fit_limits_table(const fit_report& f, const scenario& run);
// The largest trainable context (plan/max_context.hpp): {"tokens", "tokens_text", "planned_tokens",
// "micro_batch", "step", "limit", "max_positions", "beyond_max_positions", "context_parallel",
// "memory": memory_json at that length, "p50_device_bytes", "ladder": [{"num_gpus", "cp", "dp", "tokens",
// "tokens_text", "step", "device_bytes", "p50_device_bytes", "capacity_bytes"}...]}; null tokens = not even one step fits.
nlohmann::json max_context_json(const max_context_report& r);
// The answer in words, one line each: the largest context, the one under the margin (with
// planned_tokens), and a note when it passes max_position_embeddings.
std::string max_context_summary(const max_context_report& r, const plan_margin& g = {});
// Columns GPUs, cp, dp, largest context, device memory at P50 and as estimated, capacity; one row per rung.
table context_ladder_table(const max_context_report& r);
// One object per suggestion: {"rank", "changes", "description", "fits", "scope", "effect",
// "device_bytes", "device_quantile_bytes", "capacity_bytes", "headroom_bytes", "headroom_kept_bytes",
// "step_seconds", "time_cost", "time_change", "price_per_gpu_hour", "run_cost", "num_gpus", "gpu", "scenario"}.
nlohmann::json suggestions_json(const std::vector<suggestion>& s, const architecture& a, const std::string& model_spec);
table suggestions_table(const std::vector<suggestion>& s);
// The layout of a row as JSON: {"gpus","tp","pp","virtual_stages","dp","micro_batch",
// "grad_accum","checkpointing","zero","sp","offload_optimizer","offload_params"}.
nlohmann::json layout_json(const layout& l);
// {"rows": [{"rank", "layout", "score", "device_bytes", "headroom_bytes", "step_seconds",
//  "tokens_per_second", "tokens_per_second_per_gpu", "mfu", "scenario"}...],
//  "evaluated", "fitting", "infeasible", "pruned_time", "rejected", "memory_calls",
//  "time_calls", "seconds", "threads", "global_batch", "objective"}.
nlohmann::json search_json(const search_result& r, const architecture& a, const std::string& model_spec,
                           search_objective objective = search_objective::time);
// Columns tp, pp, v, dp, mb, ga, ckpt, zero, sp, offload, device memory, step, tokens/s, MFU;
// the note "evaluated N configurations in X s".
table search_table(const search_result& r, search_objective objective = search_objective::time);
// One object per row: {"rank", "gpu", "count", "layout", "wall_seconds", "gpu_hours",
// "cost", "meets_deadline", "within_budget", "device_bytes", "step_seconds", "mfu",
// "system": {"nodes", "cpu_cores_min", "cpu_cores", "host_ram_bytes", "psu_watts",
// "psu_watts_per_node", "cuda_min", "nvlink_present", "nvlink_needed", "ecc", "notes"}}.
nlohmann::json recommend_json(const std::vector<recommendation>& r);
table recommend_table(const std::vector<recommendation>& r, Seconds deadline);
// "12.0" / "-" (cuda_floor).
std::string format_cuda(const std::optional<cuda_version>& v);

}  // namespace gpuplan::io
