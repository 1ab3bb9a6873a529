// prices.cpp — the dated, sourced price catalogs (src/data/prices.csv,
// instances.csv, purchase.csv; described in src/data/PRICES.md), the reader of
// a user's prices (CSV or JSON) and rent-vs-buy arithmetic.
#include "gpuplan/io/prices.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "embedded.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/file_text.hpp"
#include "gpuplan/plan_names.hpp"
#include "csv_text.hpp"
#include "json_text.hpp"

namespace gpuplan::io {
namespace {

using json = nlohmann::json;
using detail::fail;

constexpr int kMaxGpus = 1024;
constexpr int kMaxVcpus = 100000;
constexpr double kMaxRamGib = 1e6;

constexpr std::array<std::string_view, 4> kPriceKinds = {"on-demand", "spot", "reserved-1y", "reserved-3y"};
constexpr std::array<std::string_view, 2> kPurchaseKinds = {"msrp", "street"};
constexpr std::array<std::string_view, 4> kInterconnects = {"nvswitch", "nvlink", "pcie", "none"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <std::size_t N>
std::string join(const std::array<std::string_view, N>& words) {
  std::string out;
  for (const auto w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

// ------------------------------------------------------------------ values

// A value as it appears in an error message: CSV text that reads as a number
// bare (-1, nan), other text in quotes ("abc"), JSON as compact JSON.
struct shown {
  std::string text;
};
shown csv_value(std::string_view raw, bool numeric) {
  return {numeric ? detail::quote_text(raw) : "\"" + detail::quote_text(raw) + "\""};
}
shown json_value(const json& v) {
  if (v.is_number_float()) return {detail::num(v.get<double>())};
  return {detail::quote_json(v)};
}

// Strict decimal number (or nan / inf, which are then rejected by range
// checks with their own spelling). nullopt: not a number at all.
std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.size() > 64) return std::nullopt;
  std::string_view body = s;
  if (body.front() == '+' || body.front() == '-') body.remove_prefix(1);
  const std::string low = lower(body);
  if (low == "nan" || low == "inf" || low == "infinity") {
    const double v = low == "nan" ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    return s.front() == '-' ? -v : v;
  }
  // digits [. digits] [e [sign] digits], at least one mantissa digit
  std::size_t i = 0, mantissa = 0;
  while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++mantissa;
  if (i < body.size() && body[i] == '.') {
    ++i;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++mantissa;
  }
  if (mantissa == 0) return std::nullopt;
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  const std::string text(s);
  return std::strtod(text.c_str(), nullptr);  // overflow gives +-inf, rejected by the range checks
}

bool valid_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (const std::size_t i : {0u, 1u, 2u, 3u, 5u, 6u, 8u, 9u})
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  const int y = std::stoi(std::string(s.substr(0, 4)));
  const int m = std::stoi(std::string(s.substr(5, 2)));
  const int d = std::stoi(std::string(s.substr(8, 2)));
  if (y < 1990 || y > 2100 || m < 1 || m > 12 || d < 1) return false;
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

// Checks shared by the CSV and JSON readers. `v` is the parsed number (nullopt:
// not a number), `show` its spelling for the message.
double check_price(std::optional<double> v, const shown& show, const std::string& path) {
  if (!v || !std::isfinite(*v) || *v <= 0) fail(path, "must be a positive number (got " + show.text + ")");
  if (*v > kMaxPricePerGpuHour)
    fail(path, "must be at most " + detail::num(kMaxPricePerGpuHour) + " dollars per GPU-hour (got " + show.text + ")");
  return *v;
}

double check_positive(std::optional<double> v, double max, const shown& show, const std::string& path) {
  if (!v || !std::isfinite(*v) || *v <= 0) fail(path, "must be a positive number (got " + show.text + ")");
  if (*v > max) fail(path, "must be at most " + detail::num(max) + " (got " + show.text + ")");
  return *v;
}

int check_integer(std::optional<double> v, int lo, int hi, const shown& show, const std::string& path) {
  if (!v || !std::isfinite(*v) || *v != std::trunc(*v) || *v < lo || *v > hi)
    fail(path, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " + show.text + ")");
  return static_cast<int>(*v);
}

template <std::size_t N>
std::string check_word(std::string_view s, const std::array<std::string_view, N>& words, const shown& show,
                       const std::string& path) {
  const std::string w = lower(trim(s));
  for (const auto k : words)
    if (k == w) return w;
  fail(path, "must be one of " + join(words) + " (got " + show.text + ")");
}

std::string check_date(std::string_view s, bool required, const shown& show, const std::string& path) {
  const std::string_view t = trim(s);
  if (t.empty()) {
    if (required) fail(path, "missing required field (a date YYYY-MM-DD)");
    return {};
  }
  if (!valid_date(t)) fail(path, "must be a date YYYY-MM-DD (got " + show.text + ")");
  return std::string(t);
}

std::string check_gpu(std::string_view s, const std::string& path) {
  const std::string_view t = trim(s);
  if (t.empty()) fail(path, "missing required field (a GPU id)");
  return find_gpu(t, path).id;  // unknown ids: "unknown GPU 'x' (did you mean: ...?)"
}

std::string check_text(std::string_view s, bool required, const std::string& path) {
  const std::string_view t = trim(s);
  if (required && t.empty()) fail(path, "missing required field");
  return std::string(t);
}

// ------------------------------------------------------------------ CSV

struct csv_line {
  std::size_t number = 0;  // 1-based line number in the file
  std::vector<std::string> fields;
};


std::vector<csv_line> read_lines(std::string_view text, const std::string& name) {
  std::vector<csv_line> rows;
  std::size_t pos = 0, number = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") pos = 3;  // UTF-8 byte order mark
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    ++number;
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty() || trim(line).front() == '#') continue;
    rows.push_back({number, detail::split_csv_line(line, name + ":" + std::to_string(number))});
  }
  return rows;
}

// A parsed CSV table: the header's column index by name, then the rows.
class csv_table {
 public:
  // `known`: accepted columns; `required`: columns the header must name.
  csv_table(std::string_view text, const std::string& name, std::span<const std::string_view> known,
            std::span<const std::string_view> required)
      : name_(name) {
    lines_ = read_lines(text, name);
    if (lines_.empty()) fail(name, "empty file (expected a CSV header line, or JSON)");
    const csv_line& header = lines_.front();
    const std::string hpath = name + ":" + std::to_string(header.number);
    std::string known_list;
    for (const auto k : known) known_list += (known_list.empty() ? "" : ", ") + std::string(k);
    for (std::size_t i = 0; i < header.fields.size(); ++i) {
      const std::string col = lower(trim(header.fields[i]));
      if (std::find(known.begin(), known.end(), col) == known.end())
        fail(hpath, "unknown column '" + detail::quote_text(trim(header.fields[i])) + "' (known: " + known_list + ")");
      if (std::find(columns_.begin(), columns_.end(), col) != columns_.end())
        fail(hpath, "duplicate column '" + col + "'");
      columns_.push_back(col);
    }
    for (const auto r : required)
      if (std::find(columns_.begin(), columns_.end(), r) == columns_.end())
        fail(hpath, "missing column '" + std::string(r) + "'");
    for (std::size_t i = 1; i < lines_.size(); ++i)
      if (lines_[i].fields.size() != columns_.size())
        fail(name + ":" + std::to_string(lines_[i].number), "expected " + std::to_string(columns_.size()) +
                                                                " comma-separated fields (got " +
                                                                std::to_string(lines_[i].fields.size()) + ")");
  }

  std::size_t rows() const { return lines_.size() - 1; }
  bool has(std::string_view col) const { return std::find(columns_.begin(), columns_.end(), col) != columns_.end(); }
  // Field `col` of data row r (0-based); empty when the column is absent.
  std::string_view get(std::size_t r, std::string_view col) const {
    for (std::size_t i = 0; i < columns_.size(); ++i)
      if (columns_[i] == col) return lines_[r + 1].fields[i];
    return {};
  }
  std::string path(std::size_t r, std::string_view col) const {
    return name_ + ":" + std::to_string(lines_[r + 1].number) + "." + std::string(col);
  }
  // Parsed number and its spelling for messages.
  std::pair<std::optional<double>, shown> number(std::size_t r, std::string_view col) const {
    const std::string_view raw = trim(get(r, col));
    const auto v = parse_number(raw);
    return {v, csv_value(raw, v.has_value())};
  }
  shown text(std::size_t r, std::string_view col) const { return csv_value(trim(get(r, col)), false); }

 private:
  std::string name_;
  std::vector<csv_line> lines_;
  std::vector<std::string> columns_;
};

constexpr std::string_view kPriceColumns[] = {"provider", "instance", "gpu_id", "gpus", "price_per_gpu_hour_usd",
                                              "kind",     "region",   "date",   "source"};
constexpr std::string_view kPriceRequiredUser[] = {"gpu_id", "price_per_gpu_hour_usd"};
constexpr std::string_view kInstanceColumns[] = {"provider", "instance", "gpu_id", "gpus", "interconnect",
                                                 "vcpus",    "ram_gib",  "date",   "source"};
constexpr std::string_view kPurchaseColumns[] = {"gpu_id", "price_usd", "kind", "date", "source"};

// `strict`: a catalog file — every column present, date and source required.
std::vector<price_row> prices_from_csv(std::string_view text, const std::string& name, bool strict) {
  const csv_table t(text, name, kPriceColumns,
                    strict ? std::span<const std::string_view>(kPriceColumns) : std::span<const std::string_view>(kPriceRequiredUser));
  if (t.rows() == 0) fail(name, "no price rows after the header");
  std::vector<price_row> out;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    price_row p;
    p.provider = check_text(t.get(r, "provider"), strict, t.path(r, "provider"));
    if (p.provider.empty()) p.provider = "user";
    p.instance = check_text(t.get(r, "instance"), strict, t.path(r, "instance"));
    if (p.instance.empty()) p.instance = "per-gpu";
    p.gpu_id = check_gpu(t.get(r, "gpu_id"), t.path(r, "gpu_id"));
    if (t.has("gpus") && !trim(t.get(r, "gpus")).empty()) {
      const auto [v, s] = t.number(r, "gpus");
      p.gpus = check_integer(v, 1, kMaxGpus, s, t.path(r, "gpus"));
    } else if (strict) {
      fail(t.path(r, "gpus"), "missing required field");
    }
    const auto [price, ps] = t.number(r, "price_per_gpu_hour_usd");
    p.price_per_gpu_hour_usd = check_price(price, ps, t.path(r, "price_per_gpu_hour_usd"));
    if (t.has("kind") && !trim(t.get(r, "kind")).empty())
      p.kind = check_word(t.get(r, "kind"), kPriceKinds, t.text(r, "kind"), t.path(r, "kind"));
    else if (strict)
      fail(t.path(r, "kind"), "missing required field");
    p.region = check_text(t.get(r, "region"), false, t.path(r, "region"));
    p.date = check_date(t.get(r, "date"), strict, t.text(r, "date"), t.path(r, "date"));
    p.source = check_text(t.get(r, "source"), strict, t.path(r, "source"));
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<instance_row> instances_from_csv(std::string_view text, const std::string& name) {
  const csv_table t(text, name, kInstanceColumns, kInstanceColumns);
  std::vector<instance_row> out;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    instance_row i;
    i.provider = check_text(t.get(r, "provider"), true, t.path(r, "provider"));
    i.instance = check_text(t.get(r, "instance"), true, t.path(r, "instance"));
    i.gpu_id = check_gpu(t.get(r, "gpu_id"), t.path(r, "gpu_id"));
    {
      const auto [v, s] = t.number(r, "gpus");
      i.gpus = check_integer(v, 1, kMaxGpus, s, t.path(r, "gpus"));
    }
    i.interconnect = check_word(t.get(r, "interconnect"), kInterconnects, t.text(r, "interconnect"),
                                t.path(r, "interconnect"));
    {
      const auto [v, s] = t.number(r, "vcpus");
      i.vcpus = check_integer(v, 1, kMaxVcpus, s, t.path(r, "vcpus"));
    }
    {
      const auto [v, s] = t.number(r, "ram_gib");
      i.ram_gib = check_positive(v, kMaxRamGib, s, t.path(r, "ram_gib"));
    }
    i.date = check_date(t.get(r, "date"), true, t.text(r, "date"), t.path(r, "date"));
    i.source = check_text(t.get(r, "source"), true, t.path(r, "source"));
    out.push_back(std::move(i));
  }
  return out;
}

std::vector<purchase_row> purchases_from_csv(std::string_view text, const std::string& name) {
  const csv_table t(text, name, kPurchaseColumns, kPurchaseColumns);
  std::vector<purchase_row> out;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    purchase_row p;
    p.gpu_id = check_gpu(t.get(r, "gpu_id"), t.path(r, "gpu_id"));
    const auto [v, s] = t.number(r, "price_usd");
    p.price_usd = check_positive(v, kMaxPurchaseUsd, s, t.path(r, "price_usd"));
    p.kind = check_word(t.get(r, "kind"), kPurchaseKinds, t.text(r, "kind"), t.path(r, "kind"));
    p.date = check_date(t.get(r, "date"), true, t.text(r, "date"), t.path(r, "date"));
    p.source = check_text(t.get(r, "source"), true, t.path(r, "source"));
    out.push_back(std::move(p));
  }
  return out;
}

// ------------------------------------------------------------------ JSON

std::optional<double> json_number(const json& v) {
  if (v.is_number() && !v.is_boolean()) return v.get<double>();
  return std::nullopt;
}

std::string json_text(const json& obj, std::string_view key, const std::string& path) {
  const auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return {};
  if (!it->is_string()) fail(path, "must be a string (got " + detail::quote_json(*it) + ")");
  return it->get<std::string>();
}

price_row price_from_object(const json& obj, const std::string& path) {
  if (!obj.is_object()) fail(path, "must be an object of price fields (got " + detail::quote_json(obj) + ")");
  auto at = [&](std::string_view k) { return path + "." + std::string(k); };
  for (const auto& [key, value] : obj.items()) {
    (void)value;
    if (std::find(std::begin(kPriceColumns), std::end(kPriceColumns), key) == std::end(kPriceColumns)) {
      std::string known;
      for (const auto k : kPriceColumns) known += (known.empty() ? "" : ", ") + std::string(k);
      fail(path + "." + detail::quote_text(key), "unknown key (known: " + known + ")");
    }
  }
  price_row p;
  p.provider = check_text(json_text(obj, "provider", at("provider")), false, at("provider"));
  if (p.provider.empty()) p.provider = "user";
  p.instance = check_text(json_text(obj, "instance", at("instance")), false, at("instance"));
  if (p.instance.empty()) p.instance = "per-gpu";
  p.gpu_id = check_gpu(json_text(obj, "gpu_id", at("gpu_id")), at("gpu_id"));
  if (const auto it = obj.find("gpus"); it != obj.end() && !it->is_null()) {
    std::optional<double> v = it->is_number_integer() || it->is_number_unsigned() || it->is_number_float()
                                  ? json_number(*it)
                                  : std::nullopt;
    p.gpus = check_integer(v, 1, kMaxGpus, json_value(*it), at("gpus"));
  }
  const auto it = obj.find("price_per_gpu_hour_usd");
  if (it == obj.end() || it->is_null()) fail(at("price_per_gpu_hour_usd"), "missing required field");
  p.price_per_gpu_hour_usd = check_price(json_number(*it), json_value(*it), at("price_per_gpu_hour_usd"));
  if (const std::string k = json_text(obj, "kind", at("kind")); !k.empty())
    p.kind = check_word(k, kPriceKinds, json_value(obj.at("kind")), at("kind"));
  p.region = check_text(json_text(obj, "region", at("region")), false, at("region"));
  const std::string d = json_text(obj, "date", at("date"));
  p.date = check_date(d, false, json_value(json(d)), at("date"));
  p.source = check_text(json_text(obj, "source", at("source")), false, at("source"));
  return p;
}

std::vector<price_row> prices_from_json(std::string_view text, const std::string& name) {
  const json j = detail::parse_json_text(text, name);
  std::vector<price_row> out;
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      const std::string path = name + "." + detail::quote_text(key);
      price_row p;
      p.provider = "user";
      p.gpu_id = check_gpu(key, path);
      p.price_per_gpu_hour_usd = check_price(json_number(value), json_value(value), path);
      out.push_back(std::move(p));
    }
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) out.push_back(price_from_object(j[i], name + "[" + std::to_string(i) + "]"));
  } else {
    fail(name, "must be an object {\"<gpu_id>\": <price per GPU-hour>} or an array of price rows (got " +
                   detail::quote_json(j) + ")");
  }
  if (out.empty()) fail(name, "no prices (the JSON " + std::string(j.is_object() ? "object" : "array") + " is empty)");
  return out;
}

// Embedded catalog file `file`, parsed by `parse`; a broken catalog is a build bug.
std::string_view embedded(const char* file) {
  const std::string_view text = detail::embedded_file(file);
  if (text.empty()) fail(std::string("catalog.") + file, "embedded catalog file is missing");
  return text;
}

}  // namespace

// ------------------------------------------------------------------ public

const std::vector<price_row>& price_catalog() {
  static const std::vector<price_row> rows = prices_from_csv(embedded("prices.csv"), "prices.csv", true);
  return rows;
}

const std::vector<instance_row>& instance_catalog() {
  static const std::vector<instance_row> rows = instances_from_csv(embedded("instances.csv"), "instances.csv");
  return rows;
}

const std::vector<purchase_row>& purchase_catalog() {
  static const std::vector<purchase_row> rows = purchases_from_csv(embedded("purchase.csv"), "purchase.csv");
  return rows;
}

std::vector<price_row> read_prices_text(std::string_view text, const std::string& name) {
  if (text.size() > kMaxFileBytes)
    fail(name, "file larger than " + std::to_string(kMaxFileBytes >> 20) + " MiB (got " + std::to_string(text.size()) +
                   " bytes)");
  std::size_t i = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i == text.size()) fail(name, "empty file (expected a CSV header line, or JSON)");
  if (text[i] == '{' || text[i] == '[') return prices_from_json(text.substr(i), name);
  return prices_from_csv(text, name, false);
}

std::vector<price_row> read_prices_file(const std::string& path) {
  return read_prices_text(read_text_file(path, detail::quote_text(path), "prices file"), detail::quote_text(path));
}

std::vector<price_row> override_prices(std::span<const price_row> base, std::span<const price_row> user) {
  auto priced_by_user = [&](const price_row& b) {
    return std::any_of(user.begin(), user.end(),
                       [&](const price_row& u) { return lower(u.gpu_id) == lower(b.gpu_id) && u.kind == b.kind; });
  };
  std::vector<price_row> out;
  for (const auto& b : base)
    if (!priced_by_user(b)) out.push_back(b);
  out.insert(out.end(), user.begin(), user.end());
  return out;
}

std::optional<double> cheapest_price(std::span<const price_row> rows, std::string_view gpu_id, std::string_view kind) {
  std::optional<double> best;
  const std::string id = lower(gpu_id);
  for (const auto& r : rows)
    if (lower(r.gpu_id) == id && r.kind == kind && (!best || r.price_per_gpu_hour_usd < *best))
      best = r.price_per_gpu_hour_usd;
  return best;
}

double require_price(std::span<const price_row> rows, std::string_view gpu_id, std::string_view kind,
                     const std::string& path) {
  if (const auto p = cheapest_price(rows, gpu_id, kind)) return *p;
  fail(path, "no " + detail::quote_text(kind) + " price for GPU '" + detail::quote_text(gpu_id) +
                 "' in the price catalog; give one with --price <dollars per GPU-hour> or --prices FILE");
}

double break_even_hours(double purchase_usd, double rent_per_hour, double tdp_watts, double kwh_price) {
  auto check = [](double v, const char* name, bool positive) {
    if (!std::isfinite(v) || v < 0 || (positive && v == 0))
      fail(std::string("break_even.") + name,
           std::string(positive ? "must be a positive number" : "must be a non-negative number") + " (got " +
               detail::num(v) + ")");
  };
  check(purchase_usd, "purchase_usd", true);
  check(rent_per_hour, "rent_per_hour", false);
  check(tdp_watts, "tdp_watts", false);
  check(kwh_price, "kwh_price", false);
  const double saved_per_hour = rent_per_hour - tdp_watts * kwh_price / 1000.0;
  if (!(saved_per_hour > 0)) return std::numeric_limits<double>::infinity();
  return purchase_usd / saved_per_hour;
}

std::map<std::string, std::vector<rental_offer>, std::less<>> rental_offers(const std::string& prices_file, bool spot) {
  std::vector<price_row> rows = price_catalog();
  if (!prices_file.empty()) rows = override_prices(rows, read_prices_file(prices_file));
  std::map<std::string, std::vector<rental_offer>, std::less<>> on_demand, spot_offers;
  for (const price_row& r : rows) {
    const std::string id = find_gpu(r.gpu_id, "prices").id;
    rental_offer f{r.provider, r.instance, r.gpus, r.price_per_gpu_hour_usd, r.kind, r.date};
    if (r.kind == "on-demand") on_demand[id].push_back(f);
    else if (r.kind == "spot") spot_offers[id].push_back(f);
  }
  if (spot)
    for (auto& [id, offers] : spot_offers) on_demand[id] = std::move(offers);
  return on_demand;
}

void apply_market(recommend_options& o, const std::string& prices_file, bool spot) {
  o.rentals = rental_offers(prices_file, spot);
  for (const instance_row& i : instance_catalog())
    o.instances[i.provider + "/" + i.instance] = instance_shape{i.vcpus, i.ram_gib, i.interconnect};
  for (const purchase_row& p : purchase_catalog()) {
    const std::string id = find_gpu(p.gpu_id).id;
    if (auto it = o.purchase_usd.find(id); it == o.purchase_usd.end() || p.price_usd < it->second) o.purchase_usd[id] = p.price_usd;
  }
}

recommend_options market_options(const std::optional<std::vector<std::string>>& gpus,
                                 const std::map<std::string, double, std::less<>>& prices,
                                 const std::string& prices_file, bool spot, const std::string& rank,
                                 const market_names& names) {
  recommend_options o;
  apply_market(o, prices_file, spot);
  for (const auto& [id, p] : prices) {
    if (!(p >= 0) || !std::isfinite(p) || p > kMaxPricePerGpuHour)
      throw config_error(names.prices, "must be a price per GPU-hour between 0 and " + detail::num(kMaxPricePerGpuHour) +
                                           " (got " + detail::num(p) + " for " + id + ")");
    o.price_per_gpu_hour[find_gpu(id, names.prices).id] = p;
  }
  if (gpus) {
    for (const auto& id : *gpus) o.gpus.push_back(find_gpu(id, names.gpus));
  } else {
    for (const auto& id : gpu_ids())
      if (const gpu_spec g = find_gpu(id); o.rentals.contains(g.id) || o.price_per_gpu_hour.contains(g.id)) o.gpus.push_back(g);
  }
  if (o.gpus.empty()) throw config_error(names.gpus, "no candidate GPU has a price; " + names.remedy);
  if (const auto r = from_string<recommend_rank>(rank)) o.rank = *r;
  else throw config_error(names.rank, "must be " + name_list<recommend_rank>(" or ") + " (got '" + rank + "')",
                          error_kind::unknown_name);
  return o;
}

std::map<std::string, double, std::less<>> hourly_prices(const recommend_options& market) {
  std::map<std::string, double, std::less<>> out;
  for (const auto& [id, offers] : market.rentals)
    for (const rental_offer& f : offers)
      if (auto it = out.find(id); it == out.end() || f.price_per_gpu_hour < it->second) out[id] = f.price_per_gpu_hour;
  for (const auto& [id, p] : market.price_per_gpu_hour) out[id] = p;
  return out;
}

}  // namespace gpuplan::io
