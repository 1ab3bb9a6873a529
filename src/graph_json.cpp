// graph_json.cpp — io/graph_json.hpp: a layer graph as JSON (docs/trace.md).
//
// Two tables drive both directions: kKinds names each layer kind and the fields
// that apply to it (a new kind is one line there); kFields reads and writes each
// field of layers::layer (a new field is one line there).
#include "gpuplan/io/graph_json.hpp"

#include <array>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/names.hpp"
#include "json_fields.hpp"
#include "json_text.hpp"

namespace gpuplan::io {
namespace {

using json = nlohmann::json;
using detail::fail;
using layers::kind;
using layers::layer;
using namespace json_fields;

// ---- the fields of a layer ----------------------------------------------------------------
enum field : std::uint32_t {
  f_out = 1u << 0, f_bias = 1u << 1, f_dims = 1u << 2, f_kernel = 1u << 3, f_stride = 1u << 4,
  f_padding = 1u << 5, f_dilation = 1u << 6, f_groups = 1u << 7, f_norm = 1u << 8, f_affine = 1u << 9,
  f_pool = 1u << 10, f_out_size = 1u << 11, f_act = 1u << 12, f_inplace = 1u << 13, f_heads = 1u << 14,
  f_flash = 1u << 15, f_kv_len = 1u << 16, f_kv_dim = 1u << 17, f_factor = 1u << 18, f_vocab = 1u << 19,
  f_p = 1u << 20, f_skip = 1u << 21, f_qkv_bias = 1u << 22, f_source = 1u << 23,
  f_host_ops = 1u << 24,  // every kind (layers::layer::host_ops)
};

struct kind_entry {
  kind k;
  std::string_view name;
  std::uint32_t fields;   // the fields that apply (layers.hpp, analyze)
  std::uint32_t required;  // of those, the ones without a usable default
};

// One line per layer kind.
constexpr kind_entry kKinds[] = {
    {kind::linear, "linear", f_out | f_bias | f_host_ops, f_out},
    {kind::conv, "conv", f_dims | f_out | f_kernel | f_stride | f_padding | f_dilation | f_groups | f_bias | f_host_ops, f_out},
    {kind::norm, "norm", f_norm | f_groups | f_affine | f_host_ops, 0},
    {kind::pool, "pool", f_pool | f_dims | f_kernel | f_stride | f_padding | f_out_size | f_host_ops, 0},
    {kind::activation, "activation", f_act | f_inplace | f_host_ops, 0},
    {kind::attention, "attention", f_heads | f_flash | f_kv_len | f_kv_dim | f_qkv_bias | f_host_ops, 0},
    {kind::upsample, "upsample", f_factor | f_dims | f_host_ops, 0},
    {kind::embedding, "embedding", f_vocab | f_out | f_host_ops, f_vocab | f_out},
    {kind::add, "add", f_skip | f_inplace | f_host_ops, f_skip},
    {kind::dropout, "dropout", f_p | f_host_ops, 0},
    {kind::flatten, "flatten", f_host_ops, 0},
    {kind::class_token, "class_token", f_host_ops, 0},
    {kind::position_embedding, "position_embedding", f_host_ops, 0},
    {kind::take_token, "take_token", f_host_ops, 0},
    {kind::layer_scale, "layer_scale", f_host_ops, 0},
    {kind::mul, "mul", f_skip | f_host_ops, f_skip},
    {kind::concat, "concat", f_skip | f_host_ops, f_skip},
    {kind::input, "input", f_source | f_host_ops, f_source},
};

constexpr std::array<enum_name<layers::norm_kind>, 4> kNormNames{{
    {layers::norm_kind::batch, "batch"}, {layers::norm_kind::group, "group"},
    {layers::norm_kind::layer, "layer"}, {layers::norm_kind::rms, "rms"}}};
constexpr std::array<enum_name<layers::pool_kind>, 4> kPoolNames{{
    {layers::pool_kind::max, "max"}, {layers::pool_kind::avg, "avg"},
    {layers::pool_kind::adaptive_avg, "adaptive_avg"}, {layers::pool_kind::adaptive_max, "adaptive_max"}}};
constexpr std::array<enum_name<layers::act_kind>, 5> kActNames{{
    {layers::act_kind::relu, "relu"}, {layers::act_kind::gelu, "gelu"},
    {layers::act_kind::silu, "silu"}, {layers::act_kind::sigmoid, "sigmoid"}, {layers::act_kind::relu6, "relu6"}}};
static_assert(names_are_unique(kNormNames) && names_are_unique(kPoolNames) && names_are_unique(kActNames));

const kind_entry* entry_of(kind k) {
  for (const auto& e : kKinds)
    if (e.k == k) return &e;
  return nullptr;
}

std::string kind_list() {
  std::string s;
  for (const auto& e : kKinds) s += (s.empty() ? "" : ", ") + std::string(e.name);
  return s;
}

// While reading layer `index`: the layers read so far (for `from`/`skip` by name).
struct context {
  const layers::graph& g;
  std::size_t index;
};

constexpr std::int64_t kMax = layers::detail::kMaxDim;

std::int64_t read_size(const json& v, const std::string& path, std::int64_t lo) {
  const std::int64_t x = get_int(v, path);
  if (x < lo || x > kMax)
    fail(path, "must be in [" + std::to_string(lo) + ", " + std::to_string(kMax) + "] (got " + show(v) + ")");
  return x;
}

// A spatial field: one number for every used axis, `dims` numbers (PyTorch's order), or [d, h, w].
using triple = std::array<std::int64_t, 3>;
triple fill(int dims, std::int64_t v, bool zero_unused) {
  return zero_unused ? layers::make::zero_pad(dims, v) : layers::make::sq(dims, v);
}

triple read_spatial(const json& v, const std::string& path, int dims, std::int64_t lo, bool zero_unused) {
  if (!v.is_array()) return fill(dims, read_size(v, path, lo), zero_unused);
  const auto n = v.size();
  if (n != 3 && n != static_cast<std::size_t>(dims))
    fail(path, "must be a number, " + std::to_string(dims) + " numbers or [d, h, w] (got " + show(v) + ")");
  triple t = fill(dims, zero_unused ? 0 : 1, zero_unused);
  const std::size_t first = 3 - n;
  for (std::size_t a = 0; a < n; ++a) t[first + a] = read_size(v[a], path + "[" + std::to_string(a) + "]", lo);
  return t;
}

json write_spatial(const triple& t, int dims, bool zero_unused) {
  if (t == fill(dims, t[2], zero_unused)) return t[2];
  const auto used = static_cast<std::size_t>(dims < 1 || dims > 3 ? 3 : dims);
  triple canon = fill(dims, zero_unused ? 0 : 1, zero_unused);
  bool unused_canonical = true;
  for (std::size_t a = 0; a < 3 - used; ++a) unused_canonical = unused_canonical && t[a] == canon[a];
  json arr = json::array();
  for (std::size_t a = unused_canonical ? 3 - used : 0; a < 3; ++a) arr.push_back(t[a]);
  return arr;
}

// `from` / `skip`: an index of an earlier layer, -2 (the graph input), -1 (from only: the
// previous layer), or the name of an earlier layer ("input": the graph input).
int read_ref(const json& v, const std::string& path, const context& c, bool allow_previous) {
  const int here = static_cast<int>(c.index);
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "input") return -2;
    int found = -1, count = 0;
    for (int i = 0; i < here; ++i)
      if (c.g.layers[static_cast<std::size_t>(i)].name == s) {
        found = i;
        ++count;
      }
    if (count == 0) fail(path, "names no earlier layer (got " + show(v) + ")", error_kind::unknown_name);
    if (count > 1) fail(path, "names " + std::to_string(count) + " earlier layers; use an index (got " + show(v) + ")");
    return found;
  }
  const std::int64_t x = get_int(v, path);
  if (x == -2 || (allow_previous && x == -1) || (x >= 0 && x < here)) return static_cast<int>(x);
  const std::string earlier = here > 0 ? "an earlier layer's index in [0, " + std::to_string(here - 1) + "], " : "";
  fail(path, "must be " + earlier + "-2 (the input)" + (allow_previous ? ", -1 (the previous layer)" : "") +
                 (here > 0 ? " or a layer name" : "") + " (got " + show(v) + ")");
}

// A shape object {"c": …, "d": …, "h": …, "w": …}; c is required, the others default to 1.
layers::shape read_shape(const json& v, const std::string& path) {
  require_object(v, path);
  check_keys(v, path, {"c", "d", "h", "w"});
  if (!v.contains("c")) fail(path + ".c", "is required (channels or features per position)");
  layers::shape s;
  s.c = read_size(v.at("c"), path + ".c", 1);
  if (v.contains("d")) s.d = read_size(v.at("d"), path + ".d", 1);
  if (v.contains("h")) s.h = read_size(v.at("h"), path + ".h", 1);
  if (v.contains("w")) s.w = read_size(v.at("w"), path + ".w", 1);
  return s;
}

json write_shape(const layers::shape& s) {
  json o = {{"c", s.c}};
  if (s.d != 1) o["d"] = s.d;
  if (s.h != 1) o["h"] = s.h;
  if (s.w != 1) o["w"] = s.w;
  return o;
}

struct field_entry {
  std::string_view key;
  std::uint32_t bit;
  void (*read)(layer&, const json&, const std::string&, const context&);
  json (*write)(const layer&);  // null: the field is at its default and not written
};

// One line per field. dims comes before the spatial fields, which read it.
const field_entry kFields[] = {
    {"dims", f_dims,
     [](layer& l, const json& v, const std::string& p, const context&) {
       const std::int64_t d = get_int(v, p);
       if (d < 1 || d > 3) fail(p, "must be 1, 2 or 3 (got " + show(v) + ")");
       l.dims = static_cast<int>(d);
     },
     [](const layer& l) { return json(l.dims); }},
    {"out", f_out, [](layer& l, const json& v, const std::string& p, const context&) { l.out = read_size(v, p, 1); },
     [](const layer& l) { return json(l.out); }},
    {"bias", f_bias, [](layer& l, const json& v, const std::string& p, const context&) { l.bias = get_bool(v, p); },
     [](const layer& l) { return json(l.bias); }},
    {"kernel", f_kernel,
     [](layer& l, const json& v, const std::string& p, const context&) { l.kernel = read_spatial(v, p, l.dims, 1, false); },
     [](const layer& l) { return write_spatial(l.kernel, l.dims, false); }},
    {"stride", f_stride,
     [](layer& l, const json& v, const std::string& p, const context&) { l.stride = read_spatial(v, p, l.dims, 1, false); },
     [](const layer& l) { return write_spatial(l.stride, l.dims, false); }},
    {"padding", f_padding,
     [](layer& l, const json& v, const std::string& p, const context&) { l.padding = read_spatial(v, p, l.dims, 0, true); },
     [](const layer& l) { return write_spatial(l.padding, l.dims, true); }},
    {"dilation", f_dilation,
     [](layer& l, const json& v, const std::string& p, const context&) { l.dilation = read_spatial(v, p, l.dims, 1, false); },
     [](const layer& l) { return write_spatial(l.dilation, l.dims, false); }},
    {"groups", f_groups, [](layer& l, const json& v, const std::string& p, const context&) { l.groups = read_size(v, p, 1); },
     [](const layer& l) { return json(l.groups); }},
    {"norm", f_norm, [](layer& l, const json& v, const std::string& p, const context&) { l.norm = get_enum(v, p, kNormNames); },
     [](const layer& l) { return json(std::string(name_of(kNormNames, l.norm))); }},
    {"affine", f_affine, [](layer& l, const json& v, const std::string& p, const context&) { l.affine = get_bool(v, p); },
     [](const layer& l) { return json(l.affine); }},
    {"pool", f_pool, [](layer& l, const json& v, const std::string& p, const context&) { l.pool = get_enum(v, p, kPoolNames); },
     [](const layer& l) { return json(std::string(name_of(kPoolNames, l.pool))); }},
    {"out_size", f_out_size,
     [](layer& l, const json& v, const std::string& p, const context&) { l.out_size = read_spatial(v, p, l.dims, 1, false); },
     [](const layer& l) { return write_spatial(l.out_size, l.dims, false); }},
    {"act", f_act, [](layer& l, const json& v, const std::string& p, const context&) { l.act = get_enum(v, p, kActNames); },
     [](const layer& l) { return json(std::string(name_of(kActNames, l.act))); }},
    {"inplace", f_inplace, [](layer& l, const json& v, const std::string& p, const context&) { l.inplace = get_bool(v, p); },
     [](const layer& l) { return json(l.inplace); }},
    {"heads", f_heads, [](layer& l, const json& v, const std::string& p, const context&) { l.heads = read_size(v, p, 1); },
     [](const layer& l) { return json(l.heads); }},
    {"flash", f_flash, [](layer& l, const json& v, const std::string& p, const context&) { l.flash = get_bool(v, p); },
     [](const layer& l) { return json(l.flash); }},
    {"kv_len", f_kv_len, [](layer& l, const json& v, const std::string& p, const context&) { l.kv_len = read_size(v, p, 0); },
     [](const layer& l) { return json(l.kv_len); }},
    {"kv_dim", f_kv_dim, [](layer& l, const json& v, const std::string& p, const context&) { l.kv_dim = read_size(v, p, 0); },
     [](const layer& l) { return json(l.kv_dim); }},
    {"factor", f_factor, [](layer& l, const json& v, const std::string& p, const context&) { l.factor = read_size(v, p, 1); },
     [](const layer& l) { return json(l.factor); }},
    {"vocab", f_vocab, [](layer& l, const json& v, const std::string& p, const context&) { l.vocab = read_size(v, p, 1); },
     [](const layer& l) { return json(l.vocab); }},
    {"p", f_p,
     [](layer& l, const json& v, const std::string& p, const context&) {
       const double x = get_number(v, p);
       if (!(x >= 0 && x < 1)) fail(p, "must be in [0, 1) (got " + show(v) + ")");
       l.p = x;
     },
     [](const layer& l) { return json(l.p); }},
    {"skip", f_skip, [](layer& l, const json& v, const std::string& p, const context& c) { l.skip = read_ref(v, p, c, false); },
     [](const layer& l) { return json(l.skip); }},
    {"qkv_bias", f_qkv_bias, [](layer& l, const json& v, const std::string& p, const context&) { l.qkv_bias = get_bool(v, p); },
     [](const layer& l) { return json(l.qkv_bias); }},
    {"source", f_source, [](layer& l, const json& v, const std::string& p, const context&) { l.source = read_shape(v, p); },
     [](const layer& l) { return write_shape(l.source); }},
    {"host_ops", f_host_ops,
     [](layer& l, const json& v, const std::string& p, const context&) {
       const std::int64_t x = get_int(v, p);
       if (x < 0 || x > layers::detail::kMaxHostOps)
         fail(p, "must be in [0, " + std::to_string(layers::detail::kMaxHostOps) + "] (got " + show(v) + ")");
       l.host_ops = x;
     },
     [](const layer& l) { return json(l.host_ops); }},
};

// Whether field `f` of `l` differs from a default-constructed layer's (written only then).
bool differs(const field_entry& f, const layer& l) {
  static const layer def{};
  return f.write(l) != f.write(def);
}

// A name: printed inside one-line messages (layers::analyze quotes layer names as they are).
std::string read_name(const json& n, const std::string& path) {
  bool ok = n.is_string() && n.get_ref<const std::string&>().size() <= 256;
  if (ok)
    for (const char ch : n.get_ref<const std::string&>()) ok = ok && static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7F;
  if (!ok) fail(path, "must be a string of at most 256 characters without control characters (got " + show(n) + ")");
  return n.get<std::string>();
}

const std::string_view kCommonKeys[] = {"kind", "name", "from"};

layer read_layer(const json& v, const context& c) {
  const std::string base = "layers[" + std::to_string(c.index) + "]";
  require_object(v, base);
  if (!v.contains("kind")) fail(base + ".kind", "is required (one of " + kind_list() + ")");
  layer l;
  std::string path = base;
  if (v.contains("name")) {
    l.name = read_name(v.at("name"), base + ".name");
    if (!l.name.empty()) path += " (" + detail::quote_text(l.name) + ")";
  }
  const json& kv = v.at("kind");
  const kind_entry* ke = nullptr;
  if (kv.is_string())
    for (const auto& e : kKinds)
      if (e.name == kv.get_ref<const std::string&>()) ke = &e;
  if (!ke)
    fail(path + ".kind", "must be one of " + kind_list() + " (got " + show(kv) + ")",
         kv.is_string() ? error_kind::unknown_name : error_kind::invalid_input);
  l.k = ke->k;
  for (const auto& [key, value] : v.items()) {
    bool known = false;
    for (auto k : kCommonKeys) known = known || key == k;
    for (const auto& f : kFields) {
      if (f.key != key) continue;
      known = true;
      if ((ke->fields & f.bit) == 0) {
        std::string list;
        for (const auto& g : kFields)
          if (ke->fields & g.bit) list += (list.empty() ? "" : ", ") + std::string(g.key);
        fail(path + "." + detail::quote_text(key), "does not apply to a " + std::string(ke->name) + " layer (its fields: " +
                                                      (list.empty() ? "none" : list) + ")");
      }
    }
    if (!known) {
      std::string list = "kind, name, from";
      for (const auto& f : kFields) list += ", " + std::string(f.key);
      fail(path + "." + detail::quote_text(key), "unknown key (expected one of: " + list + ")", error_kind::unknown_name);
    }
  }
  for (const auto& f : kFields) {
    if ((ke->fields & f.bit) == 0) continue;
    const std::string p = path + "." + std::string(f.key);
    if (v.contains(f.key)) f.read(l, v.at(f.key), p, c);
    else if (ke->required & f.bit) fail(p, "is required for a " + std::string(ke->name) + " layer");
  }
  if (v.contains("from")) l.from = read_ref(v.at("from"), path + ".from", c, true);
  return l;
}


}  // namespace

json write_graph(const layers::graph& g) {
  json j;
  j["name"] = g.name;
  j["input"] = write_shape(g.input);
  json ls = json::array();
  for (std::size_t i = 0; i < g.layers.size(); ++i) {
    const layer& l = g.layers[i];
    const kind_entry* ke = entry_of(l.k);
    if (!ke)
      fail("layers[" + std::to_string(i) + "].kind", "has no name in the graph file's kind table (got kind " +
                                                          std::to_string(static_cast<int>(l.k)) + ")");
    json o;
    o["kind"] = std::string(ke->name);
    for (const auto& f : kFields)
      if ((ke->fields & f.bit) && ((ke->required & f.bit) || differs(f, l))) o[std::string(f.key)] = f.write(l);
    if (l.from != -1) o["from"] = l.from;
    if (!l.name.empty()) o["name"] = l.name;
    ls.push_back(std::move(o));
  }
  j["layers"] = std::move(ls);
  if (!g.segments.empty()) j["segments"] = g.segments;
  return j;
}

layers::graph read_graph(const json& j) {
  require_object(j, "graph");
  check_keys(j, "graph", {"name", "input", "layers", "segments"});
  layers::graph g;
  if (j.contains("name")) {
    g.name = read_name(j.at("name"), "graph.name");
  }
  if (!j.contains("input")) fail("graph.input", "is required, e.g. {\"c\": 3, \"h\": 224, \"w\": 224}");
  g.input = read_shape(j.at("input"), "graph.input");
  if (!j.contains("layers")) fail("graph.layers", "is required (an array of layers)");
  const json& ls = j.at("layers");
  if (!ls.is_array() || ls.empty())
    fail("graph.layers", std::string("must be a non-empty array of layers (got ") + type_name(ls) + " " + show(ls) + ")");
  if (ls.size() > kMaxGraphLayers)
    fail("graph.layers", "more than " + std::to_string(kMaxGraphLayers) + " layers (got " + std::to_string(ls.size()) + ")");
  g.layers.reserve(ls.size());
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const context c{g, i};
    g.layers.push_back(read_layer(ls[i], c));
  }
  if (j.contains("segments")) {
    // Checkpointed layer ranges [first, last] (layers::graph::segments).
    const json& ss = j.at("segments");
    if (!ss.is_array()) fail("graph.segments", "must be an array of [first, last] layer ranges (got " + show(ss) + ")");
    const auto n = static_cast<std::int64_t>(g.layers.size());
    for (std::size_t i = 0; i < ss.size(); ++i) {
      const std::string p = "graph.segments[" + std::to_string(i) + "]";
      if (!ss[i].is_array() || ss[i].size() != 2) fail(p, "must be [first, last] (got " + show(ss[i]) + ")");
      const std::int64_t a = get_int(ss[i][0], p + "[0]"), b = get_int(ss[i][1], p + "[1]");
      if (a < 0 || b < a || b >= n)
        fail(p, "must be layer indices 0 <= first <= last < " + std::to_string(n) + " (got " + show(ss[i]) + ")");
      g.segments.push_back({static_cast<int>(a), static_cast<int>(b)});
    }
  }
  (void)layers::analyze(g);  // shapes, groups, skip edges: layers.hpp's checks
  return g;
}

layers::graph read_graph_text(const std::string& text) { return read_graph(detail::parse_json_text(text, "graph")); }

layers::graph read_graph_file(const std::string& file) { return read_graph_text(read_text_file(file, "graph")); }

void save_graph_file(const layers::graph& g, const std::string& file) {
  const std::string text = write_graph(g).dump(1) + "\n";
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) fail("graph", "cannot write file '" + detail::quote_text(file) + "'", error_kind::io_error);
  out << text;
  if (!out) fail("graph", "cannot write file '" + detail::quote_text(file) + "'", error_kind::io_error);
}

std::vector<std::string> graph_layer_kinds() {
  std::vector<std::string> out;
  for (const auto& e : kKinds) out.emplace_back(e.name);
  return out;
}

bool same_graph(const layers::graph& a, const layers::graph& b) {
  if (a.name != b.name || !(a.input == b.input) || a.layers.size() != b.layers.size() || a.segments != b.segments)
    return false;
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    const layer &x = a.layers[i], &y = b.layers[i];
    if (x.k != y.k || x.name != y.name || x.from != y.from) return false;
    for (const auto& f : kFields)
      if (f.write(x) != f.write(y)) return false;
  }
  return true;
}

}  // namespace gpuplan::io
