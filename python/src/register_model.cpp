// register_model.cpp — architecture, its parameter count, and the model catalog.
#include "common.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/model_names.hpp"

namespace gpuplan::python {

namespace {
py::dict breakdown_dict(const parameter_breakdown& p) {
  py::dict d;
  d["embeddings"] = p.embeddings;
  d["attention"] = p.attention;
  d["mlp"] = p.mlp;
  d["norms"] = p.norms;
  d["head"] = p.head;
  d["total"] = p.total;
  d["largest_layer"] = p.largest_layer;
  d["per_layer"] = p.per_layer;
  d["per_decoder_layer"] = p.per_decoder_layer;
  return d;
}
}  // namespace

void register_model(py::module_& m) {
  using A = architecture;
  py::class_<A>(m, "Architecture", "A transformer architecture (gpuplan/model.hpp), read-only.")
      .def_readonly("name", &A::name, "Catalog or config name.")
      .def_readonly("family", &A::family, "Hugging Face model_type.")
      .def_property_readonly("kind", [](const A& a) { return std::string(to_string(a.kind)); },
                             "'decoder', 'encoder' or 'encoder-decoder'.")
      .def_readonly("hidden", &A::hidden, "Hidden size.")
      .def_readonly("layers", &A::layers, "Decoder (or encoder) layers.")
      .def_readonly("decoder_layers", &A::decoder_layers, "Decoder layers of an encoder-decoder (else 0).")
      .def_readonly("heads", &A::heads, "Attention heads.")
      .def_property_readonly("kv_heads", &A::n_kv_heads, "Key/value heads (= heads for MHA).")
      .def_property_readonly("head_dim", &A::d_head, "Per-head dimension.")
      .def_readonly("ffn", &A::ffn, "MLP intermediate size.")
      .def_readonly("vocab", &A::vocab, "Vocabulary size.")
      .def_readonly("max_positions", &A::max_positions, "max_position_embeddings.")
      .def_readonly("experts", &A::experts, "Experts per MoE layer (0 or 1: dense).")
      .def_readonly("experts_per_token", &A::experts_per_token, "Experts routed per token.")
      .def_readonly("tied_embeddings", &A::tied_embeddings, "LM head shares the token embedding.")
      .def_property_readonly("gated_mlp", [](const A& a) { return a.mlp == mlp_kind::gated; },
                             "Gated (SwiGLU/GeGLU) MLP.")
      .def_property_readonly("is_moe", &A::is_moe, "Mixture of experts.")
      .def_property_readonly("parameters", [](const A& a) { return count_parameters(a).total; },
                             "Exact parameter count (tied embeddings once).")
      .def("parameter_breakdown", [](const A& a) { return breakdown_dict(count_parameters(a)); },
           "Parameters by component: embeddings, attention, mlp, norms, head, total, ...");

  m.def("load_model",
        [](py::handle spec, const std::string& path) { return io::load_model(to_json(spec, path), path); },
        py::arg("spec"), py::arg("path") = "model",
        "A model from a catalog name, a config.json path, a checkpoint directory, or an\n"
        "inline config.json dict. Errors name `path`.");
  m.def("model_names", &io::model_names, "Names in the built-in model catalog.");
  m.def("official_parameters", [](const std::string& name) { return io::official_parameters(name); },
        py::arg("name"), "Officially published parameter count of a catalog model (0 when not verified).");
}

}  // namespace gpuplan::python
