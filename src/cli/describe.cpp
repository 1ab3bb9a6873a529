// describe.cpp — `gpuplan describe MODEL`: the architecture and exact parameter breakdown
// of a model (io/report.hpp describe_json, describe_report).
#include "command.hpp"

#include <memory>
#include <string>
#include <string_view>

#include "gpuplan/io/catalog.hpp"

namespace gpuplan::cli {
using nlohmann::json;

namespace {

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

}  // namespace

command register_describe(CLI::App& app, context& ctx) {
  auto model = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("describe", "Architecture and exact parameter breakdown of a model");
  sub->add_option("MODEL", *model, "Catalog name, Hub id, config.json or checkpoint dir")->required();
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n  gpuplan describe llama-2-13b\n  gpuplan describe meta-llama/Llama-2-13b-hf --json\n"
                          "  gpuplan describe ./my-model/config.json --format markdown\n") + kExitCodes);
  return {sub, [model, &ctx] { return cmd_describe(*model, ctx.out); }};
}

}  // namespace gpuplan::cli
