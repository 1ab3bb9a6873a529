// catalog.cpp — the built-in GPU catalog (src/data/gpus.csv and gpu_usable_memory.csv,
// embedded at build time; see src/data/SOURCES.md), GPU objects and files read onto it,
// and MIG slices. The model catalog and the model-spec resolver: catalog_models.cpp.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog_common.hpp"
#include "embedded.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/file_text.hpp"
#include "gpuplan/mig.hpp"
#include "csv_text.hpp"
#include "json_text.hpp"
#include "json_fields.hpp"

namespace gpuplan::io {
namespace {

using json = nlohmann::json;
using detail::fail;
using json_fields::clean;
using json_fields::show;

std::vector<std::vector<std::string>> read_csv(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty() && line.front() != '#') rows.push_back(detail::split_csv_line(line, "gpus.csv"));
    pos = end + 1;
  }
  return rows;
}

// GPU fields, named like src/data/gpus.csv's columns, plus usable_gib and
// link_group (overrides of the derived values) and base (JSON only).
enum class field_kind { text, number, integer, mig };
struct gpu_field {
  std::string_view name;
  field_kind kind;
  double max = 0;  // numbers: the largest accepted value (documented in docs/robustness.md)
  double min = 0;  // numbers: the smallest accepted value (ditto); 0: any positive value
};

// Upper bounds on GPU figures: finite inputs whose unit conversion would not be
// (memory_gb = 1e308 -> 1e308 * 2^30 bytes = inf, "fits with inf headroom"),
// set ~500x above the largest part in the catalog (H200 141 GB, 4.8 TB/s; B200
// dense FP8 ~4.5 PFLOPS; 1 kW boards), far below double overflow.
constexpr double kMaxMemoryGB = 1e5;      // memory_gb, usable_gib
constexpr double kMaxBandwidthGBs = 1e6;  // bandwidth_gb_s, gpu_link_gb_s_bidir
constexpr double kMaxRate = 1e6;          // *_tflops, int8_tops
constexpr double kMaxTdpW = 1e5;          // tdp_w
// Lower bounds: a figure below these is a typo or a unit slip (1e-300 TFLOP/s printed an
// MFU of 697%), set ~10-100x below the smallest CUDA parts ever sold (GT 710: 1 GB,
// 14.4 GB/s, 0.37 TFLOP/s FP32, 0.015 FP64, 19 W; Jetson Nano: 4 GB, 25.6 GB/s, 5 W).
constexpr double kMinMemoryGB = 0.25;      // memory_gb, usable_gib: 256 MiB, less than a CUDA context alone
constexpr double kMinBandwidthGBs = 1;     // bandwidth_gb_s, gpu_link_gb_s_bidir: PCIe 1.0 x4 is 2 GB/s
constexpr double kMinRate = 0.01;          // *_tflops but FP64, int8_tops: 10 GFLOP/s
constexpr double kMinFp64Rate = 0.001;     // fp64_tflops: consumer parts run FP64 at 1/32-1/64 of FP32
constexpr double kMinTdpW = 1;             // tdp_w: 1 W, below any board with GPU memory
constexpr gpu_field kGpuFields[] = {
    {"id", field_kind::text},
    {"name", field_kind::text},
    {"arch", field_kind::text},
    {"compute_capability", field_kind::text},
    {"memory_gb", field_kind::number, kMaxMemoryGB, kMinMemoryGB},
    {"memory_type", field_kind::text},
    {"bandwidth_gb_s", field_kind::number, kMaxBandwidthGBs, kMinBandwidthGBs},
    {"fp64_tflops", field_kind::number, kMaxRate, kMinFp64Rate},
    {"fp32_tflops", field_kind::number, kMaxRate, kMinRate},
    {"tf32_tflops", field_kind::number, kMaxRate, kMinRate},
    {"bf16_tflops", field_kind::number, kMaxRate, kMinRate},
    {"fp16_acc16_tflops", field_kind::number, kMaxRate, kMinRate},
    {"fp8_tflops", field_kind::number, kMaxRate, kMinRate},
    {"int8_tops", field_kind::number, kMaxRate, kMinRate},
    {"gpu_link", field_kind::text},
    {"gpu_link_gb_s_bidir", field_kind::number, kMaxBandwidthGBs, kMinBandwidthGBs},
    {"pcie_gen", field_kind::integer},
    {"pcie_lanes", field_kind::integer},
    {"tdp_w", field_kind::number, kMaxTdpW, kMinTdpW},
    {"ecc", field_kind::text},
    {"mig", field_kind::mig},
    {"year", field_kind::integer},
    {"confidence", field_kind::text},
    {"p2p", field_kind::mig},  // yes | no (a boolean in JSON), read like mig
    {"sm_count", field_kind::integer},
    {"usable_gib", field_kind::number, kMaxMemoryGB, kMinMemoryGB},
    {"link_group", field_kind::integer},
};

const gpu_field& gpu_field_named(std::string_view name) {
  for (const auto& f : kGpuFields)
    if (f.name == name) return f;
  throw std::logic_error("gpuplan: no GPU field named " + std::string(name));
}

// Values of the ecc column of src/data/gpus.csv: on, off, switchable by the user, not published.
constexpr std::string_view kEccValues[] = {"yes", "no", "soft-toggle", "unverified"};

std::string known_gpu_keys() {
  std::string s;
  for (const auto& f : kGpuFields) {
    if (!s.empty()) s += ", ";
    s += std::string(f.name);
  }
  return s + ", base";
}

// Rules for usable memory (src/data/SOURCES.md): the per-GPU figure of
// gpu_usable_memory.csv where one is published, else 98% of nominal (below every
// published non-ECC ratio: RTX 5090 31.4/32 = 0.981 is the lowest).
constexpr double kUsableFraction = 0.98;

struct usable_row {
  double mib = 0;
  double nominal_gb = 0;
};

// Link topology: NVLink bridges join two cards; NVSwitch (SXM/HGX) and
// Infinity Fabric platforms join eight; NVLink-C2C is a CPU link (no GPU peer).
int link_group_of(const std::string& link) {
  if (link.empty() || link == "none") return 1;
  if (link.find("bridge") != std::string::npos) return 2;
  if (link.find("c2c") != std::string::npos) return 1;
  if (link.rfind("nvlink", 0) == 0 || link == "infinity-fabric") return 8;
  return 1;
}

struct gpu_registry {
  std::shared_mutex mutex;
  std::vector<std::unique_ptr<gpu_spec>> storage;  // never shrinks: references stay valid
  std::vector<std::string> order;
  std::unordered_map<std::string, const gpu_spec*> by_id;  // lower-case id
  std::unordered_map<std::string, usable_row> usable;      // lower-case id
};

// A positive finite figure within its field's [min, max] (kMin*, kMax* above).
void check_range(const gpu_field& f, double v, const std::string& where) {
  if (v > f.max) fail(where, "must be at most " + detail::num(f.max) + " (got " + detail::num(v) + ")");
  if (v < f.min) fail(where, "must be at least " + detail::num(f.min) + " (got " + detail::num(v) + ")");
}

// One GPU object's fields, each read with its checks; every error names path.key.
struct gpu_object_reader {
  const json& obj;
  const std::string& path;

  std::string at(std::string_view k) const { return path + "." + std::string(k); }
  std::optional<std::string> text(std::string_view k) const {
    auto it = obj.find(std::string(k));
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) fail(at(k), "must be a string (got " + show(*it) + ")");
    return it->get<std::string>();
  }
  // nullopt: absent; optional<optional<double>> inner nullopt: explicit null (no such rate).
  std::optional<std::optional<double>> number(std::string_view k) const {
    auto it = obj.find(std::string(k));
    if (it == obj.end()) return std::nullopt;
    if (it->is_null()) return std::optional<double>{};
    if (!it->is_number() || it->is_boolean()) fail(at(k), "must be a positive finite number (got " + show(*it) + ")");
    const double v = it->get<double>();
    if (!std::isfinite(v) || v <= 0) fail(at(k), "must be a positive finite number (got " + show(*it) + ")");
    check_range(gpu_field_named(k), v, at(k));
    return std::optional<double>{v};
  }
  std::optional<std::optional<int>> integer(std::string_view k, std::int64_t lo, std::int64_t hi) const {
    auto it = obj.find(std::string(k));
    if (it == obj.end()) return std::nullopt;
    if (it->is_null()) return std::optional<int>{};
    if (!it->is_number_integer() || it->get<std::int64_t>() < lo || it->get<std::int64_t>() > hi)
      fail(at(k), "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " + show(*it) + ")");
    return std::optional<int>{static_cast<int>(it->get<std::int64_t>())};
  }
  void required_rate(std::string_view k, FlopRate& out) const {
    if (auto v = number(k)) {
      if (!*v) fail(at(k), "must be a positive finite number (got null)");
      out = tflop_per_s(**v);
    }
  }
  void optional_rate(std::string_view k, std::optional<FlopRate>& out) const {
    if (auto v = number(k)) out = *v ? std::optional<FlopRate>(tflop_per_s(**v)) : std::nullopt;
  }
};

void check_gpu_keys(const json& obj, const std::string& path) {
  for (const auto& [key, value] : obj.items()) {
    if (key == "base") continue;
    const gpu_field* fd = nullptr;
    for (const auto& f : kGpuFields)
      if (f.name == key) fd = &f;
    if (!fd) fail(path + "." + clean(key), "unknown key (known: " + known_gpu_keys() + ")", error_kind::unknown_name);
  }
}

// "8.9" (NVIDIA) or "gfx942" (AMD): the vendor and the compute capability.
void apply_compute_capability(gpu_spec& g, const std::string& v, const gpu_object_reader& in) {
  g.compute_capability = v;
  if (v.rfind("gfx", 0) == 0) {
    g.vendor = gpu_vendor::amd;
    g.cc_major = g.cc_minor = 0;
    return;
  }
  const auto dot = v.find('.');
  char* end = nullptr;
  const long major = std::strtol(v.c_str(), &end, 10);
  const bool ok_major = end == v.c_str() + (dot == std::string::npos ? v.size() : dot) && end != v.c_str();
  long minor = 0;
  bool ok_minor = true;
  if (dot != std::string::npos) {
    const char* s = v.c_str() + dot + 1;
    minor = std::strtol(s, &end, 10);
    ok_minor = end != s && *end == '\0';
  }
  if (dot == std::string::npos || !ok_major || !ok_minor || major < 1 || major > 99 || minor < 0 || minor > 9)
    fail(in.at("compute_capability"), "must look like \"8.9\" (NVIDIA) or \"gfx942\" (AMD) (got \"" + clean(v) + "\")");
  g.vendor = gpu_vendor::nvidia;
  g.cc_major = static_cast<int>(major);
  g.cc_minor = static_cast<int>(minor);
}

// id, name, arch, compute_capability, memory_type.
void apply_identity(gpu_spec& g, const gpu_object_reader& in, bool fresh) {
  if (auto v = in.text("id")) {
    if (v->empty()) fail(in.at("id"), "must be a non-empty string");
    g.id = *v;
  } else if (fresh) {
    fail(in.at("id"), "missing required field");
  }
  if (auto v = in.text("name")) g.name = *v;
  if (fresh && g.name.empty()) g.name = g.id;
  if (auto v = in.text("arch")) g.arch = *v;
  if (auto v = in.text("compute_capability")) apply_compute_capability(g, *v, in);
  (void)in.text("memory_type");
}

// Memory, bandwidth and the tensor rates; whether memory_gb was given.
bool apply_figures(gpu_spec& g, const gpu_object_reader& in, bool fresh) {
  bool memory_set = false;
  if (auto v = in.number("memory_gb")) {
    if (!*v) fail(in.at("memory_gb"), "must be a positive finite number (got null)");
    g.memory = gib(**v);  // datasheet "GB" of GPU memory is binary (src/data/gpus.md)
    memory_set = true;
  } else if (fresh) {
    fail(in.at("memory_gb"), "missing required field");
  }
  if (auto v = in.number("bandwidth_gb_s")) {
    if (!*v) fail(in.at("bandwidth_gb_s"), "must be a positive finite number (got null)");
    g.bandwidth = gb_per_s(**v);  // decimal GB/s
  } else if (fresh) {
    fail(in.at("bandwidth_gb_s"), "missing required field");
  }
  if (auto v = in.number("fp64_tflops")) g.fp64 = tflop_per_s(v->value_or(0.0));
  in.required_rate("fp32_tflops", g.fp32);
  in.optional_rate("tf32_tflops", g.tf32);
  in.optional_rate("bf16_tflops", g.bf16);
  in.optional_rate("fp16_acc16_tflops", g.fp16_acc16);
  in.optional_rate("fp8_tflops", g.fp8);
  in.optional_rate("int8_tops", g.int8);  // TOPS stored as operations per second
  if (fresh && !g.bf16 && !g.fp16_acc16 && g.fp32.value() <= 0)
    fail(in.path, "needs at least one of bf16_tflops, fp16_acc16_tflops, fp32_tflops");
  return memory_set;
}

// Links, PCIe, power, ECC, MIG, P2P, year, SMs and confidence.
void apply_platform(gpu_spec& g, const gpu_object_reader& in) {
  bool link_set = false;
  if (auto v = in.text("gpu_link")) {
    g.link = *v;
    link_set = true;
  }
  if (auto v = in.number("gpu_link_gb_s_bidir")) {
    g.link_per_direction = gb_per_s(v->value_or(0.0) / 2.0);  // the column counts both directions
  }
  if (link_set) g.link_group = link_group_of(g.link);
  if (auto v = in.integer("link_group", 1, 1024)) g.link_group = v->value_or(1);
  if (auto v = in.integer("pcie_gen", 1, 7)) g.pcie_gen = v->value_or(4);
  if (auto v = in.integer("pcie_lanes", 0, 32)) g.pcie_lanes = v->value_or(0);  // empty: no PCIe (Jetson SoC)
  if (auto v = in.number("tdp_w")) g.tdp_watts = v->value_or(0.0);
  if (auto v = in.text("ecc")) {
    if (std::find(std::begin(kEccValues), std::end(kEccValues), *v) == std::end(kEccValues)) {
      std::string list;
      for (const auto e : kEccValues) list += (list.empty() ? "" : ", ") + std::string(e);
      fail(in.at("ecc"), "must be one of " + list + " (got \"" + clean(*v) + "\")", error_kind::unknown_name);
    }
    g.ecc = *v;
  }
  if (auto it = in.obj.find("mig"); it != in.obj.end() && !it->is_null()) {
    if (it->is_boolean()) g.mig = it->get<bool>();
    else if (it->is_number_integer() && it->get<std::int64_t>() >= 0) g.mig = it->get<std::int64_t>() > 0;
    else if (it->is_string() && (*it == "no" || *it == "yes")) g.mig = *it == "yes";
    else fail(in.at("mig"), "must be true/false, \"yes\"/\"no\" or a number of instances (got " + show(*it) + ")");
  }
  if (auto it = in.obj.find("p2p"); it != in.obj.end() && !it->is_null()) {
    if (it->is_boolean()) g.p2p = it->get<bool>();
    else if (it->is_string() && (*it == "no" || *it == "yes")) g.p2p = *it == "yes";
    else fail(in.at("p2p"), "must be true/false or \"yes\"/\"no\" (got " + show(*it) + ")");
  }
  if (auto v = in.integer("year", 1990, 2100)) g.year = v->value_or(0);
  if (auto v = in.integer("sm_count", 1, 4096)) g.sm_count = v->value_or(0);
  if (auto v = in.text("confidence")) g.confidence = *v;
}

// Usable memory: explicit usable_gib, else the published figure for this id
// when the nominal capacity is the catalog's, else the documented fraction.
void apply_usable_memory(gpu_spec& g, const gpu_object_reader& in, const gpu_registry& reg, bool memory_set, bool fresh) {
  if (auto v = in.number("usable_gib")) {
    if (!*v) fail(in.at("usable_gib"), "must be a positive finite number (got null)");
    g.usable_memory = gib(**v);
  } else if (memory_set || fresh) {
    auto it = reg.usable.find(catalog_detail::lower_case(g.id));
    if (it != reg.usable.end() && std::fabs(it->second.nominal_gb - in_gib(g.memory)) < 1e-9)
      g.usable_memory = mib(it->second.mib);
    else
      g.usable_memory = g.memory * kUsableFraction;
  }
  if (g.usable_memory > g.memory)
    fail(in.at("usable_gib"), "must not exceed memory_gb=" + detail::num(in_gib(g.memory)) + " (got " +
                                  detail::num(in_gib(g.usable_memory)) + ")");
}

// Applies one GPU object's fields onto `g`. `fresh` = no base (a new GPU).
void apply_gpu(gpu_spec& g, const json& obj, const std::string& path, const gpu_registry& reg, bool fresh) {
  check_gpu_keys(obj, path);
  const gpu_object_reader in{obj, path};
  apply_identity(g, in, fresh);
  const bool memory_set = apply_figures(g, in, fresh);
  apply_platform(g, in);
  apply_usable_memory(g, in, reg, memory_set, fresh);
}

// A CSV cell as the JSON value the GPU reader takes.
json cell_value(const std::string& cell, field_kind kind, const std::string& where) {
  if (cell.empty()) return nullptr;
  if (kind == field_kind::text) return cell;
  if (kind == field_kind::mig) {
    if (cell == "no" || cell == "yes") return cell;
  }
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  if (end != cell.c_str() + cell.size()) fail(where, "not a number (got \"" + cell + "\")");
  if (kind == field_kind::integer || kind == field_kind::mig) {
    if (v != std::trunc(v)) fail(where, "not an integer (got \"" + cell + "\")");
    return static_cast<std::int64_t>(v);
  }
  return v;
}

void build_gpu_catalog(gpu_registry& reg) {
  // Usable memory table first (apply_gpu reads it).
  {
    const auto rows = read_csv(detail::embedded_file("gpu_usable_memory.csv"));
    if (rows.empty()) fail("catalog.gpu_usable_memory.csv", "missing");
    for (std::size_t r = 1; r < rows.size(); ++r) {
      const auto& row = rows[r];
      const std::string where = "catalog.gpu_usable_memory.csv:" + std::to_string(r + 1);
      if (row.size() < 3) fail(where, "expected id,memory_gb,usable_mib,...");
      usable_row u;
      u.nominal_gb = cell_value(row[1], field_kind::number, where).get<double>();
      u.mib = cell_value(row[2], field_kind::number, where).get<double>();
      reg.usable[catalog_detail::lower_case(row[0])] = u;
    }
  }
  const auto rows = read_csv(detail::embedded_file("gpus.csv"));
  if (rows.empty()) fail("catalog.gpus.csv", "missing");
  const auto& header = rows[0];
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    const std::string where = "catalog.gpus.csv:" + std::to_string(r + 1);
    if (row.size() != header.size())
      fail(where, "expected " + std::to_string(header.size()) + " columns (got " + std::to_string(row.size()) + ")");
    json obj = json::object();
    for (std::size_t c = 0; c < header.size(); ++c) {
      const gpu_field* fd = nullptr;
      for (const auto& f : kGpuFields)
        if (f.name == header[c]) fd = &f;
      if (!fd) fail(where, "unknown column '" + header[c] + "'");
      obj[header[c]] = cell_value(row[c], fd->kind, where + "." + header[c]);
    }
    auto g = std::make_unique<gpu_spec>();
    // Catalog rows: empty non-tensor cells mean "not published" (Jetson fp64).
    if (obj["fp64_tflops"].is_null()) obj.erase("fp64_tflops");
    if (obj["tdp_w"].is_null()) obj.erase("tdp_w");
    if (obj["gpu_link"].is_null()) obj["gpu_link"] = "none";
    apply_gpu(*g, obj, where, reg, true);
    const std::string key = catalog_detail::lower_case(g->id);
    if (reg.by_id.count(key)) fail(where, "duplicate GPU id '" + g->id + "'");
    reg.by_id[key] = g.get();
    reg.order.push_back(g->id);
    reg.storage.push_back(std::move(g));
  }
  // MIG slices of the parents the table holds (gpuplan/mig.hpp): found by id, not listed.
  for (const mig_parent& parent : kMigParents) {
    const auto it = reg.by_id.find(std::string(parent.id));
    if (it == reg.by_id.end()) continue;
    for (const mig_profile& p : kMigProfiles) {
      if (p.family != parent.family) continue;
      auto g = std::make_unique<gpu_spec>(mig_slice(*it->second, p));
      reg.by_id[catalog_detail::lower_case(g->id)] = g.get();
      reg.storage.push_back(std::move(g));
    }
  }
}

gpu_registry& gpus() {
  static gpu_registry* reg = [] {
    auto* r = new gpu_registry();  // intentionally immortal: references handed out stay valid at exit
    build_gpu_catalog(*r);
    return r;
  }();
  return *reg;
}

[[noreturn]] void unknown_gpu(std::string_view id, const std::string& path, const gpu_registry& reg) {
  std::vector<std::string> names = reg.order;
  if (catalog_detail::lower_case(id).find("-mig-") != std::string::npos)  // suggest among the MIG slices too (mig.hpp)
    for (const mig_parent& parent : kMigParents)
      for (const mig_profile& p : kMigProfiles)
        if (p.family == parent.family) names.push_back(mig_id(parent.id, p));
  fail(path, "unknown GPU '" + clean(id) + "' (did you mean: " + catalog_detail::nearest_names(id, names) + "?)", error_kind::unknown_name);
}

const gpu_spec& find_gpu_locked(std::string_view id, const std::string& path, const gpu_registry& reg) {
  auto it = reg.by_id.find(catalog_detail::lower_case(id));
  if (it == reg.by_id.end()) unknown_gpu(id, path, reg);
  return *it->second;
}

void insert_gpu(gpu_registry& reg, gpu_spec g) {
  const std::string key = catalog_detail::lower_case(g.id);
  auto owned = std::make_unique<gpu_spec>(std::move(g));
  auto it = reg.by_id.find(key);
  if (it == reg.by_id.end()) {
    reg.order.push_back(owned->id);
  } else {
    for (auto& o : reg.order)
      if (catalog_detail::lower_case(o) == key) o = owned->id;
  }
  reg.by_id[key] = owned.get();
  reg.storage.push_back(std::move(owned));
}

}  // namespace

// ---------------------------------------------------------------- public API

const gpu_spec& find_gpu(std::string_view id, const std::string& path) {
  auto& reg = gpus();
  std::shared_lock lock(reg.mutex);
  return find_gpu_locked(id, path, reg);
}

std::vector<std::string> gpu_ids() {
  auto& reg = gpus();
  std::shared_lock lock(reg.mutex);
  return reg.order;
}

gpu_spec read_gpu(const nlohmann::json& value, const std::string& path) {
  if (value.is_string()) return find_gpu(value.get_ref<const std::string&>(), path);
  if (!value.is_object()) fail(path, "must be a GPU id or an object of GPU fields (got " + show(value) + ")");
  auto& reg = gpus();
  std::shared_lock lock(reg.mutex);
  gpu_spec g;
  bool fresh = true;
  if (auto it = value.find("base"); it != value.end()) {
    if (!it->is_string()) fail(path + ".base", "must be a catalog GPU id (got " + show(*it) + ")");
    g = find_gpu_locked(it->get_ref<const std::string&>(), path + ".base", reg);
    fresh = false;
  }
  apply_gpu(g, value, path, reg, fresh);
  return g;
}

namespace {
// The value v whose scaled reading fl(v * scale) is exactly x: x / scale, nudged
// by an ulp or two where the division and the multiplication round differently.
double unscale(double x, double scale) {
  double v = x / scale;
  for (int i = 0; i < 8 && v * scale != x; ++i) v = std::nextafter(v, v * scale < x ? INFINITY : -INFINITY);
  return v;
}
}  // namespace

json write_gpu(const gpu_spec& g) {
  json j;
  auto text = [&](const char* k, const std::string& v) {
    if (!v.empty()) j[k] = v;
  };
  auto rate = [&](const char* k, const std::optional<FlopRate>& r) {
    j[k] = r && r->value() > 0 ? json(unscale(in_flop_per_s(*r), 1e12)) : json(nullptr);
  };
  // fp64/fp32 are plain figures (0 = not given): write them only when set.
  auto plain_rate = [&](const char* k, FlopRate r) {
    if (r.value() > 0) j[k] = unscale(in_flop_per_s(r), 1e12);
  };
  text("id", g.id);
  text("name", g.name);
  text("arch", g.arch);
  text("compute_capability", g.compute_capability);
  j["memory_gb"] = unscale(in_bytes(g.memory), kGiB);
  j["usable_gib"] = unscale(in_bytes(g.usable_memory), kGiB);
  j["bandwidth_gb_s"] = unscale(in_byte_per_s(g.bandwidth), 1e9);
  plain_rate("fp64_tflops", g.fp64);
  plain_rate("fp32_tflops", g.fp32);
  rate("tf32_tflops", g.tf32);
  rate("bf16_tflops", g.bf16);
  rate("fp16_acc16_tflops", g.fp16_acc16);
  rate("fp8_tflops", g.fp8);
  rate("int8_tops", g.int8);
  text("gpu_link", g.link);
  const double per_direction = in_byte_per_s(g.link_per_direction);
  j["gpu_link_gb_s_bidir"] = per_direction > 0 ? json(2.0 * unscale(per_direction, 1e9)) : json(nullptr);
  j["link_group"] = g.link_group;
  j["pcie_gen"] = g.pcie_gen;
  j["pcie_lanes"] = g.pcie_lanes;
  j["tdp_w"] = g.tdp_watts > 0 ? json(g.tdp_watts) : json(nullptr);
  text("ecc", g.ecc);
  j["mig"] = g.mig;
  j["p2p"] = g.p2p;
  if (g.year > 0) j["year"] = g.year;
  if (g.sm_count > 0) j["sm_count"] = g.sm_count;
  text("confidence", g.confidence);
  return j;
}

void load_gpu_file(const std::string& file) {
  const std::string text = read_text_file(file, file);
  const json j = detail::parse_json_text(text, file);
  std::vector<gpu_spec> parsed;
  if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) parsed.push_back(read_gpu(j[i], file + "[" + std::to_string(i) + "]"));
  } else if (j.is_object()) {
    parsed.push_back(read_gpu(j, file));
  } else {
    fail(file, "must hold a GPU object or an array of GPU objects (got " + show(j) + ")");
  }
  auto& reg = gpus();
  std::unique_lock lock(reg.mutex);
  for (auto& g : parsed) insert_gpu(reg, std::move(g));
}

}  // namespace gpuplan::io