// web_api.cpp — the entry point of the WebAssembly build (`make web`, src/web/): the
// scenario reader and the estimators behind one exported function, JSON text in and out.
// Each answer is what the CLI prints with --json for the same scenario, built by the same
// functions: estimate (io::estimate_json, `gpuplan estimate --scenario F --json`), serve
// (io::serve_json, `gpuplan serve --scenario F --json`), suggest (suggest() and
// io::suggestions_json, the "suggestions" of `gpuplan fit --scenario F --json`), and the
// catalogs. A config_error becomes {"error": "<the CLI's one-line message>"}.
#include <emscripten/emscripten.h>

#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/prices.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/io/serve_report.hpp"
#include "gpuplan/plan.hpp"
#include "gpuplan/plan_names.hpp"
#include "gpuplan/serve.hpp"
#include "gpuplan/version.hpp"
#include "json_text.hpp"

namespace gpuplan::web {
using nlohmann::json;

namespace {

// The CLI's error line without its "gpuplan: " prefix (src/cli/output.cpp one_line):
// control characters as spaces, then io::printable, no trailing blanks.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  s = io::printable(s);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// The scenario text as the CLI reads `--scenario FILE` (src/cli/run_options.cpp build_run):
// a JSON object with a "model" key, then io::read_scenario.
io::resolved_run read_run(std::string_view text) {
  const json j = gpuplan::detail::parse_json_text(text, "--scenario", "malformed JSON in the scenario");
  if (!j.is_object()) throw config_error("--scenario", "must contain a JSON object (got " + std::string(j.type_name()) + ")");
  if (!j.contains("model")) throw config_error("model", "is required: give MODEL or --scenario FILE with a \"model\" key");
  return io::read_scenario(j);
}

// `gpuplan serve --scenario F --json`: the curve of the run's serving engine (no latency target).
json serve_of(const io::resolved_run& r) {
  if (r.settings().work != workload::infer)
    throw config_error("scenario.workload", "serve needs workload infer (got " + std::string(to_string(r.settings().work)) + ")");
  return io::serve_json(r, serve(r.run), std::nullopt);
}

// What would make the run fit, as `gpuplan fit --json` prints it (src/cli/hooks.cpp
// what_would_make_it_fit: the whole GPU catalog, each at its cheapest catalog price, the
// default planning margin); null when the run fits with that margin, as fit's "suggestions".
json suggestions_of(const io::resolved_run& r) {
  const plan_margin margin{};
  const memory_breakdown mem = estimate_memory(r.run);
  if (verdict_of(mem, bands_of(r.run, mem), margin) == verdict::fits) return nullptr;
  suggest_options o;
  o.margin = margin;
  const std::vector<io::price_row>& prices = io::price_catalog();
  for (const auto& id : io::gpu_ids()) {
    o.gpus.push_back(io::find_gpu(id));
    if (const auto p = io::cheapest_price(prices, id)) o.price_per_gpu_hour.emplace(id, *p);
  }
  return io::suggestions_json(suggest(r.run, o), r.model(), r.model_spec);
}

// The CLI's text: the verdict line (`gpuplan fit`, the default margin) and the report of
// `gpuplan estimate --scenario F`.
json report_of(const io::resolved_run& r) {
  const memory_breakdown mem = estimate_memory(r.run);
  return {{"verdict", io::verdict_line(mem, bands_of(r.run, mem), io::style{})},
          {"text", io::estimate_report(r, io::style{})}};
}

// The model catalog: the columns of `gpuplan models --json` the page needs.
json models() {
  json out = json::array();
  for (const auto& name : io::model_names()) {
    const architecture& a = io::find_model(name);
    out.push_back({{"name", name},
                   {"family", a.family},
                   {"parameters", count_parameters(a).total},
                   {"max_position_embeddings", a.max_positions}});
  }
  return out;
}

// `gpuplan gpus --json`: every catalog GPU as a GPU object.
json gpus() {
  json out = json::array();
  for (const auto& id : io::gpu_ids()) out.push_back(io::write_gpu(io::find_gpu(id)));
  return out;
}

// The names each enum key of the form takes (scenario.hpp's tables, docs/scenario.md).
json names() {
  return {{"workload", names_of(kWorkloadNames)},   {"method", names_of(kMethodNames)},
          {"precision", names_of(kPrecisionNames)}, {"optimizer", names_of(kOptimizerNames)},
          {"framework", names_of(kFrameworkNames)}, {"checkpointing", names_of(kCheckpointingNames)},
          {"engine", names_of(kEngineNames)},       {"version", version_string}};
}

json dispatch(std::string_view command, std::string_view text) {
  if (command == "estimate") return io::estimate_json(read_run(text));
  if (command == "serve") return serve_of(read_run(text));
  if (command == "suggest") return suggestions_of(read_run(text));
  if (command == "report") return report_of(read_run(text));
  if (command == "check") return {{"value", gpuplan::detail::parse_json_text(text, "model", "malformed JSON in the pasted config.json")}};
  if (command == "models") return models();
  if (command == "gpus") return gpus();
  if (command == "names") return names();
  throw config_error("command", "unknown command '" + std::string(command) + "'", error_kind::unknown_name);
}

}  // namespace

// The answer as JSON text, the CLI's error line as {"error": ...}: the messages of main()
// in src/cli/main.cpp, without the program's name.
std::string call(std::string_view command, std::string_view text) {
  try {
    return dispatch(command, text).dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const config_error& e) {
    return json{{"error", one_line(e.what())}}.dump();
  } catch (const json::exception& e) {
    return json{{"error", "json: " + one_line(e.what())}}.dump();
  } catch (const std::exception& e) {
    return json{{"error", "error: " + one_line(e.what())}}.dump();
  }
}

}  // namespace gpuplan::web

extern "C" {
// The text stays valid until the next call (the page copies it at once).
EMSCRIPTEN_KEEPALIVE const char* gpuplan_call(const char* command, const char* text) {
  static std::string answer;
  answer = gpuplan::web::call(command, text);
  return answer.c_str();
}
}
