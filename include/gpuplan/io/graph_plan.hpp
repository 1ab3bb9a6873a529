// io/graph_plan.hpp — `gpuplan recommend` and gp.recommend for image and diffusion models:
// the run a query names (a catalog model or a graph, the published recipe's defaults,
// the user's overrides) and the ranked rows as a table and JSON (plan/graph_recommend.hpp,
// docs/planner.md "Image and diffusion models").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/io/graph_query.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/layers.hpp"
#include "gpuplan/plan/graph_recommend.hpp"

namespace gpuplan::io {

struct graph_plan {
  graph_workload workload;
  std::string summary;      // one line: the model, samples, batch and recipe
  nlohmann::json settings;  // the same, as JSON
};

// The run of a typed query (graph/query.hpp): validate(q), then the workload from the model's
// published recipe and q's overrides. Without images: ImageNet-1k for classifiers, the
// recipe's steps × global batch for diffusion; without epochs: the recipe's (classifiers), 1
// (diffusion). Throws config_error naming the field for settings that do not apply to the
// model and out-of-range numbers.
graph_plan graph_plan_of(const graph_query& q);
// The same from what the user typed: graph_plan_of(parse_graph_query(q)) (io/graph_query.hpp),
// which also names the field of an unknown name or an amount that does not parse.
graph_plan graph_plan_of(const graph_recommend_query& q);

nlohmann::json graph_recommend_json(const std::vector<graph_recommendation>& rows);
// The whole answer as `gpuplan recommend --json` prints it and gp.recommend's to_dict() returns
// it: the plan's settings and summary, the options that ranked the rows, and the rows
// (`rows` may be the first `--top` of `total_rows`).
nlohmann::json graph_recommend_document(const graph_plan& plan, const std::vector<graph_recommendation>& rows,
                                        const recommend_options& o, std::size_t total_rows, bool spot);
// `zero`: the ZeRO stage the rows shard the model states with (the plan's settings["zero"]).
table graph_recommend_table(const std::vector<graph_recommendation>& rows, Seconds deadline, int zero = 0);

}  // namespace gpuplan::io
