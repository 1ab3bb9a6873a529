// catalog_models.cpp — the built-in model catalog (src/data/models/, embedded at build
// time; see src/data/SOURCES.md), the model-spec resolver, and the name suggestions of
// both catalogs (catalog_common.hpp). The GPU catalog: catalog.cpp.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog_common.hpp"
#include "embedded.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/hf_config.hpp"
#include "json_fields.hpp"
#include "json_text.hpp"

namespace gpuplan::io {

namespace catalog_detail {

std::string lower_case(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {

// Levenshtein distance (case-insensitive callers lower-case first).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string nearest_names(std::string_view query, const std::vector<std::string>& names) {
  const std::string q = lower_case(query);
  std::vector<std::pair<std::size_t, std::size_t>> scored;  // (score, index)
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string n = lower_case(names[i]);
    const std::size_t score = q.empty() ? 1 + n.size()
                              : n.rfind(q, 0) == 0 ? 0
                              : n.find(q) != std::string::npos ? 1
                                                               : 1 + edit_distance(q, n);
    scored.emplace_back(score, i);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::string out;
  for (std::size_t k = 0; k < std::min<std::size_t>(3, scored.size()); ++k) {
    if (k) out += ", ";
    out += names[scored[k].second];
  }
  return out;
}

}  // namespace catalog_detail

namespace {

using json = nlohmann::json;
using detail::fail;
using json_fields::clean;
using json_fields::show;

// Catalog order: families together, small to large. Files not
// listed here follow in name order.
constexpr std::string_view kModelOrder[] = {
    "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "bert-base-uncased", "bert-large-uncased", "t5-small", "t5-base",
    "t5-3b", "t0-3b", "mt0-xxl", "opt-1.3b", "opt-6.7b", "bloomz-7b1", "falcon-7b", "tinyllama-1.1b", "mpt-7b",
    "llama-7b", "llama-13b", "llama-30b", "llama-65b", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b",
    "llama-3-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b", "mistral-7b",
    "mixtral-8x7b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-72b", "gemma-2b", "gemma-7b", "phi-2", "phi-3-mini",
    "chatglm3-6b", "vit-base-patch16-224", "vit-large-patch16-224",
};

struct model_entry {
  std::string name;
  architecture arch;
  std::int64_t official = 0;
  std::vector<std::string> aliases;
};

struct model_catalog {
  std::vector<model_entry> entries;
  std::vector<std::string> names;
  std::unordered_map<std::string, std::size_t> index;  // lower-case name or alias -> entry
};

model_catalog build_model_catalog() {
  model_catalog c;
  std::vector<std::string> files;
  for (std::size_t i = 0; i < detail::embedded_file_count(); ++i) {
    const std::string f(detail::embedded_file_name(i));
    if (f.rfind("models/", 0) == 0 && f.size() > 12 && f.compare(f.size() - 5, 5, ".json") == 0) files.push_back(f);
  }
  auto rank = [](const std::string& file) {
    const std::string stem = file.substr(7, file.size() - 12);
    for (std::size_t i = 0; i < std::size(kModelOrder); ++i)
      if (kModelOrder[i] == stem) return i;
    return std::size(kModelOrder);
  };
  std::stable_sort(files.begin(), files.end(), [&](const std::string& x, const std::string& y) {
    const auto rx = rank(x), ry = rank(y);
    return rx != ry ? rx < ry : x < y;
  });
  for (const auto& f : files) {
    model_entry e;
    e.name = f.substr(7, f.size() - 12);
    const std::string where = "catalog." + e.name;
    const json j = detail::parse_json_text(detail::embedded_file(f), where);
    if (!j.is_object()) fail(where, "embedded model file is not a JSON object");
    e.arch = read_hf_config(j, where);
    e.arch.name = e.name;
    if (auto it = j.find("_official_parameters"); it != j.end() && !it->is_null()) {
      if (!it->is_number_integer()) fail(where + "._official_parameters", "must be an integer or null");
      e.official = it->get<std::int64_t>();
    }
    if (auto it = j.find("_hub_id"); it != j.end()) {
      if (!it->is_array()) fail(where + "._hub_id", "must be an array of strings");
      for (const auto& s : *it) {
        if (!s.is_string()) fail(where + "._hub_id", "must be an array of strings");
        e.aliases.push_back(s.get<std::string>());
      }
    }
    const std::size_t idx = c.entries.size();
    auto add = [&](const std::string& key) {
      const auto [it, inserted] = c.index.emplace(catalog_detail::lower_case(key), idx);
      if (!inserted && it->second != idx) fail(where, "name or alias '" + key + "' is used by two catalog models");
    };
    add(e.name);
    for (const auto& al : e.aliases) add(al);
    c.names.push_back(e.name);
    c.entries.push_back(std::move(e));
  }
  return c;
}

const model_catalog& models() {
  static const model_catalog c = build_model_catalog();  // thread-safe one-time init
  return c;
}

const model_entry* lookup_model(std::string_view name) {
  const auto& c = models();
  auto it = c.index.find(catalog_detail::lower_case(name));
  return it == c.index.end() ? nullptr : &c.entries[it->second];
}

[[noreturn]] void unknown_model(std::string_view name, const std::string& path) {
  fail(path, "unknown model '" + clean(name) + "' (did you mean: " + catalog_detail::nearest_names(name, models().names) + "?)",
       error_kind::unknown_name);
}

bool looks_like_path(std::string_view s) {
  return s.find('/') == 0 || s.rfind("./", 0) == 0 || s.rfind("../", 0) == 0 || s.rfind("~/", 0) == 0 ||
         (s.size() > 5 && s.substr(s.size() - 5) == ".json");
}

}  // namespace

const architecture& find_model(std::string_view name, const std::string& path) {
  if (const model_entry* e = lookup_model(name)) return e->arch;
  unknown_model(name, path);
}

std::vector<std::string> model_names() { return models().names; }

std::int64_t official_parameters(std::string_view name) {
  const model_entry* e = lookup_model(name);
  return e ? e->official : 0;
}

std::vector<std::string> model_hub_ids(std::string_view name) {
  const model_entry* e = lookup_model(name);
  return e ? e->aliases : std::vector<std::string>{};
}

architecture load_model(std::string_view spec, const std::string& path) {
  if (spec.empty()) fail(path, "must name a catalog model, a config.json or a checkpoint directory (got \"\")");
  if (const model_entry* e = lookup_model(spec)) return e->arch;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p{std::string(spec)};
  if (fs::is_directory(p, ec)) {
    const fs::path cfg = p / "config.json";
    if (!fs::exists(cfg, ec))
      fail(path, "checkpoint directory '" + clean(spec) + "' has no config.json", error_kind::io_error);
    // The architecture comes from config.json; safetensors headers (if any)
    // are read separately by read_checkpoint_dir.
    return read_hf_config_file(cfg.string(), path);
  }
  // Anything else that exists (a FIFO, /dev/zero) is refused by the file reader, naming what it is.
  if (fs::exists(p, ec)) return read_hf_config_file(p.string(), path);
  if (looks_like_path(spec)) fail(path, "no such file or directory '" + clean(spec) + "'", error_kind::io_error);
  unknown_model(spec, path);
}

architecture load_model(const std::string& spec, const std::string& path) { return load_model(std::string_view(spec), path); }
architecture load_model(const char* spec, const std::string& path) { return load_model(std::string_view(spec), path); }

architecture load_model(const nlohmann::json& value, const std::string& path) {
  if (value.is_string()) return load_model(std::string_view(value.get_ref<const std::string&>()), path);
  if (value.is_object()) return read_hf_config(value, path);
  fail(path, "must be a model name, a path, or an object of config.json fields (got " + show(value) + ")");
}

}  // namespace gpuplan::io
