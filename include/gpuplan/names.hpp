// names.hpp — one name table per enum: how each enumerator is spelled in scenario
// files, on the command line, in reports and in Python. A table is an array of
// {value, name} declared next to its enum and registered as name_table<E>; the
// functions below are the only readers of names (to_string, from_string, the lists
// shown in error messages, help and completions).
#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gpuplan {

template <class E>
struct enum_name {
  E value;
  std::string_view name;
};

// The table of E (empty: E has none). Specialised next to each enum:
//   template <> inline constexpr std::span<const enum_name<method>> name_table<method>{kMethodNames};
template <class E>
inline constexpr std::span<const enum_name<E>> name_table{};

template <class E>
concept named_enum = std::is_enum_v<E> && !name_table<E>.empty();

// The enum type of a table (an array or span of enum_name<E>).
template <class Table>
using table_enum_t = std::remove_cvref_t<decltype(std::declval<const Table&>()[0].value)>;

// The name of `value` in `table`; "?" when the table does not list it.
template <class Table>
constexpr std::string_view name_of(const Table& table, table_enum_t<Table> value) {
  for (const auto& entry : table)
    if (entry.value == value) return entry.name;
  return "?";
}

// The value named `name` in `table` (exact, case-sensitive); nullopt when absent.
template <class Table>
constexpr std::optional<table_enum_t<Table>> value_of(const Table& table, std::string_view name) {
  for (const auto& entry : table)
    if (entry.name == name) return entry.value;
  return std::nullopt;
}

// "a, b, c": the names in table order, as error messages and help list them.
template <class Table>
std::string join_names(const Table& table, std::string_view separator = ", ") {
  std::string out;
  for (const auto& entry : table) {
    if (!out.empty()) out += separator;
    out += entry.name;
  }
  return out;
}

template <class Table>
std::vector<std::string> names_of(const Table& table) {
  std::vector<std::string> out;
  out.reserve(std::size(table));
  for (const auto& entry : table) out.emplace_back(entry.name);
  return out;
}

// No two entries share a name or a value (checked by static_assert next to each table).
template <class Table>
constexpr bool names_are_unique(const Table& table) {
  const std::size_t n = std::size(table);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j)
      if (table[i].name == table[j].name || table[i].value == table[j].value) return false;
  return true;
}

// Every enumerator 0..last of a contiguous enum is in the table.
template <class Table>
constexpr bool names_cover(const Table& table, table_enum_t<Table> last) {
  using E = table_enum_t<Table>;
  for (std::size_t i = 0; i <= static_cast<std::size_t>(last); ++i)
    if (name_of(table, static_cast<E>(i)) == "?") return false;
  return true;
}

template <named_enum E>
constexpr std::string_view to_string(E value) {
  return name_of(name_table<E>, value);
}

template <named_enum E>
constexpr std::optional<E> from_string(std::string_view name) {
  return value_of(name_table<E>, name);
}

template <named_enum E>
std::string name_list(std::string_view separator = ", ") {
  return join_names(name_table<E>, separator);
}

}  // namespace gpuplan
