// models.cpp — `gpuplan models`: the built-in model catalog as a table or JSON.
#include "command.hpp"

#include "gpuplan/io/catalog.hpp"

namespace gpuplan::cli {
using nlohmann::json;

namespace {

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

}  // namespace

command register_models(CLI::App& app, context& ctx) {
  auto* sub = app.add_subcommand("models", "List the built-in model catalog");
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n  gpuplan models\n  gpuplan models --json\n") + kExitCodes);
  return {sub, [&ctx] { return cmd_models(ctx.out); }};
}

}  // namespace gpuplan::cli
