// json_fields.hpp — typed reads of JSON members for the readers in src/
// (scenario_json.cpp, profile.cpp): each rejects a wrong type, a non-finite or
// out-of-range number and an unknown key with a one-line config_error naming the
// path and quoting the value (json_text.hpp).
#pragma once

#include <cmath>
#include <fstream>
#include <sstream>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/file_text.hpp"
#include "gpuplan/names.hpp"
#include "json_text.hpp"

namespace gpuplan::io::json_fields {

using json = nlohmann::json;
using gpuplan::detail::fail;

inline std::string show(const json& v) { return detail::quote_json(v); }
inline std::string clean(std::string_view s) { return detail::quote_text(s); }

inline const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::string: return "string";
    case json::value_t::boolean: return "boolean";
    case json::value_t::binary: return "binary";
    case json::value_t::discarded: return "discarded";
    default: return "number";
  }
}

inline void require_object(const json& v, const std::string& path) {
  if (!v.is_object()) fail(path, std::string("must be a JSON object (got ") + type_name(v) + " " + show(v) + ")");
}

inline void check_keys(const json& obj, const std::string& path, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : obj.items()) {
    bool ok = false;
    for (auto a : allowed) ok = ok || key == a;
    if (!ok) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail(path + "." + detail::quote_text(key), "unknown key (expected one of: " + list + ")", error_kind::unknown_name);
    }
  }
}

inline std::int64_t get_int(const json& v, const std::string& path) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      fail(path, "too large (got " + show(v) + ")");
    return v.get<std::int64_t>();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // NaN and infinity reach here from C++ and Python callers (JSON text cannot hold them).
    if (!std::isfinite(d)) fail(path, "must be a finite number (got " + show(v) + ")");
    if (std::fabs(d) > 9.0e18) fail(path, "too large (got " + show(v) + ")");
    if (d != std::trunc(d)) fail(path, "must be an integer (got " + show(v) + ")");
    return static_cast<std::int64_t>(d);
  }
  fail(path, std::string("must be an integer (got ") + type_name(v) + " " + show(v) + ")");
}

inline int get_small_int(const json& v, const std::string& path) {
  const std::int64_t i = get_int(v, path);
  if (i < -(1LL << 30) || i > (1LL << 30)) fail(path, "out of range (got " + show(v) + ")");
  return static_cast<int>(i);
}

inline double get_number(const json& v, const std::string& path) {
  if (!v.is_number()) fail(path, std::string("must be a number (got ") + type_name(v) + " " + show(v) + ")");
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(path, "must be a finite number (got " + show(v) + ")");
  return d;
}

// Numbers may be written with suffixes in strings for convenience: "1T", "300B", "2e9".
inline double get_amount(const json& v, const std::string& path) {
  if (!v.is_string()) return get_number(v, path);
  if (const auto d = parse_count(v.get<std::string>())) return *d;
  fail(path, "must be a number such as 2e9, \"300B\" or \"1T\" (got " + show(v) + ")");
}

inline bool get_bool(const json& v, const std::string& path) {
  if (!v.is_boolean()) fail(path, std::string("must be true or false (got ") + type_name(v) + " " + show(v) + ")");
  return v.get<bool>();
}

// A name from `table` (an enum's name table, scenario.hpp); a string not in it is an
// unknown name, any other JSON value invalid input.
template <class Table>
inline table_enum_t<Table> get_enum(const json& v, const std::string& path, const Table& table) {
  if (v.is_string())
    if (const auto e = value_of(table, v.get_ref<const std::string&>())) return *e;
  fail(path, "must be one of " + join_names(table) + " (got " + show(v) + ")",
       v.is_string() ? error_kind::unknown_name : error_kind::invalid_input);
}

// The whole of a file the user named: the one shared reader (io/file_text.hpp).
using io::read_text_file;

}  // namespace gpuplan::io::json_fields
