// safetensors.cpp — parameter counts and dtypes of a checkpoint from its
// safetensors headers only (never the tensor data).
//
// Format (huggingface/safetensors README, "Format"): 8 bytes little-endian u64
// N, then N bytes of UTF-8 JSON: {"<tensor>": {"dtype": "BF16", "shape": [..],
// "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then the data
// buffer; offsets are relative to the buffer. The reference implementation
// rejects headers above 100 MB (MAX_HEADER_SIZE = 100_000_000).
#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/io/hf_config.hpp"
#include "json_text.hpp"
#include "json_fields.hpp"

namespace gpuplan::io {
namespace {

using json = nlohmann::json;
// A rejection here is a malformed checkpoint unless it says a file could not be read.
[[noreturn]] void fail_file(const std::string& file, const std::string& reason, error_kind kind = error_kind::parse_error) {
  detail::fail(file, reason, kind);
}
namespace fs = std::filesystem;

constexpr std::uint64_t kMaxHeader = 100'000'000;  // safetensors MAX_HEADER_SIZE

// Element sizes in bits (safetensors Dtype::bitsize).
struct dtype_bits {
  std::string_view name;
  int bits;
};
constexpr std::array<dtype_bits, 21> kDtypes{{
    {"BOOL", 8},    {"U8", 8},       {"I8", 8},       {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"I16", 16},
    {"U16", 16},    {"F16", 16},     {"BF16", 16},    {"I32", 32},    {"U32", 32},    {"F32", 32},    {"F64", 64},
    {"I64", 64},    {"U64", 64},     {"F4", 4},       {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"C64", 64},    {"F8_E4M3FNUZ", 8},
}};

std::string known_dtypes() {
  std::string s;
  for (const auto& d : kDtypes) {
    if (!s.empty()) s += ", ";
    s += std::string(d.name);
  }
  return s;
}

using json_fields::show;

std::string qstr(std::string_view s) { return show(json(std::string(s))); }

struct header {
  json j;
  std::uint64_t data_size = 0;  // bytes after the header
};

header read_header(const std::string& file) {
  std::error_code ec;
  require_regular_file(file, file);  // the data may be GBs: only the header is read, bounded by kMaxHeader
  const std::uintmax_t size = fs::file_size(file, ec);
  if (ec) fail_file(file, "cannot determine the file size (" + ec.message() + ")", error_kind::io_error);
  std::ifstream in(file, std::ios::binary);
  if (!in) fail_file(file, "cannot open the file", error_kind::io_error);
  if (size < 8) fail_file(file, "truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  if (!in) fail_file(file, "truncated: cannot read the 8-byte header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];  // little-endian
  if (n > kMaxHeader)
    fail_file(file, "header length " + std::to_string(n) + " exceeds the safetensors limit of 100000000 bytes");
  if (n > size - 8)
    fail_file(file, "header length " + std::to_string(n) + " exceeds the file size (" + std::to_string(size) + " bytes)");
  if (n < 2) fail_file(file, "header length " + std::to_string(n) + " is too short for a JSON object");
  std::string text(static_cast<std::size_t>(n), '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (static_cast<std::uint64_t>(in.gcount()) != n) fail_file(file, "truncated: the JSON header ends early");
  header h;
  h.j = detail::parse_json_text(text, file, "malformed JSON header");
  if (!h.j.is_object()) fail_file(file, "header must be a JSON object (got " + show(h.j) + ")");
  h.data_size = size - 8 - n;
  return h;
}

std::int64_t checked_add(std::int64_t a, std::int64_t b, const std::string& file) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) fail_file(file, "parameter count overflows 64-bit arithmetic");
  return r;
}

// A tensor's place in the data buffer.
struct tensor_span {
  std::uint64_t begin, end;
  std::string name;
};

// Checks one tensor entry of a header and adds it to `info`; returns its span.
tensor_span add_tensor(const std::string& file, const std::string& name, const json& t, std::uint64_t data_size,
                       checkpoint_info& info) {
  const std::string where = "tensor " + qstr(name);
  if (!t.is_object()) fail_file(file, where + ": must be an object (got " + show(t) + ")");
  auto dt = t.find("dtype");
  if (dt == t.end() || !dt->is_string()) fail_file(file, where + ": missing or non-string dtype");
  const std::string dtype = dt->get<std::string>();
  const dtype_bits* d = nullptr;
  for (const auto& k : kDtypes)
    if (k.name == dtype) d = &k;
  if (!d) fail_file(file, where + ": unknown dtype " + qstr(dtype) + " (known: " + known_dtypes() + ")");
  auto sh = t.find("shape");
  if (sh == t.end() || !sh->is_array()) fail_file(file, where + ": shape must be an array of non-negative integers");
  std::int64_t numel = 1;
  for (const auto& dim : *sh) {
    if (!dim.is_number_integer() || (dim.is_number_integer() && !dim.is_number_unsigned() && dim.get<std::int64_t>() < 0))
      fail_file(file, where + ": shape must be an array of non-negative integers (got " + show(*sh) + ")");
    if (dim.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX) ||
        __builtin_mul_overflow(numel, dim.get<std::int64_t>(), &numel))
      fail_file(file, where + ": shape " + show(*sh) + " has more elements than a 64-bit count holds");
  }
  // Data bytes implied by the shape (sub-byte dtypes pack; round up).
  std::int64_t bits = 0;
  if (__builtin_mul_overflow(numel, static_cast<std::int64_t>(d->bits), &bits))
    fail_file(file, where + ": shape " + show(*sh) + " has more bytes than a 64-bit count holds");
  const std::int64_t nbytes = bits / 8 + (bits % 8 ? 1 : 0);
  auto off = t.find("data_offsets");
  if (off == t.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    fail_file(file, where + ": data_offsets must be [begin, end] non-negative integers");
  const auto begin = (*off)[0].get<std::uint64_t>(), end = (*off)[1].get<std::uint64_t>();
  if (begin > end) fail_file(file, where + ": data_offsets begin > end (got " + show(*off) + ")");
  if (end - begin != static_cast<std::uint64_t>(nbytes))
    fail_file(file, where + ": data_offsets span " + std::to_string(end - begin) + " bytes but shape " + show(*sh) + " of " +
                   dtype + " needs " + std::to_string(nbytes));
  if (end > data_size)
    fail_file(file, "truncated: " + where + " ends at data byte " + std::to_string(end) + " but the file holds " +
                   std::to_string(data_size) + " data bytes");
  info.parameters = checked_add(info.parameters, numel, file);
  info.parameters_by_dtype[dtype] = checked_add(info.parameters_by_dtype[dtype], numel, file);
  info.bytes = checked_add(info.bytes, nbytes, file);
  info.tensors += 1;
  return {begin, end, name};
}

void check_tiling(const std::string& file, std::vector<tensor_span>& spans, std::uint64_t data_size) {
  // The reference reader (safetensors Metadata::validate, after sorting by
  // data_offsets) requires the tensors to tile the data buffer: the first
  // begins at 0, each begins where the previous ends, the last ends at the
  // buffer's end. Overlaps would count bytes twice; gaps hide unknown data.
  std::sort(spans.begin(), spans.end(),
            [](const tensor_span& x, const tensor_span& y) { return std::tie(x.begin, x.end, x.name) < std::tie(y.begin, y.end, y.name); });
  std::uint64_t at = 0;
  const tensor_span* prev = nullptr;
  for (const auto& sp : spans) {
    if (sp.begin < at)
      fail_file(file, "tensor " + qstr(sp.name) + ": data_offsets [" + std::to_string(sp.begin) + "," + std::to_string(sp.end) +
                     "] overlap tensor " + qstr(prev->name) + " [" + std::to_string(prev->begin) + "," +
                     std::to_string(prev->end) + "]");
    if (sp.begin > at)
      fail_file(file, "tensor " + qstr(sp.name) + ": data_offsets begin at byte " + std::to_string(sp.begin) + " but " +
                     (prev ? "tensor " + qstr(prev->name) + " ends at byte " + std::to_string(at)
                           : std::string("the data buffer starts at byte 0")) +
                     " (tensors must cover the data contiguously)");
    at = sp.end;
    prev = &sp;
  }
  if (at != data_size)
    fail_file(file, "tensors cover " + std::to_string(at) + " data bytes but the file holds " + std::to_string(data_size) +
                   " data bytes (the data buffer must be covered exactly)");
}

// Adds one file's tensors to `info`; returns its tensor names.
std::vector<std::string> add_file(const std::string& file, checkpoint_info& info) {
  const header h = read_header(file);
  std::vector<std::string> names;
  std::vector<tensor_span> spans;
  for (const auto& [name, t] : h.j.items()) {
    if (name == "__metadata__") {
      if (!t.is_object() && !t.is_null()) fail_file(file, "__metadata__ must be an object (got " + show(t) + ")");
      continue;
    }
    spans.push_back(add_tensor(file, name, t, h.data_size, info));
    names.push_back(name);
  }
  check_tiling(file, spans, h.data_size);
  return names;
}

json read_json_file(const std::string& file) { return detail::parse_json_text(read_text_file(file, file), file); }

checkpoint_info read_index(const fs::path& index_file) {
  const std::string idx = index_file.string();
  const json j = read_json_file(idx);
  if (!j.is_object()) fail_file(idx, "must be a JSON object (got " + show(j) + ")");
  auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object() || wm->empty()) fail_file(idx, "weight_map must be a non-empty object of tensor -> shard file");
  std::map<std::string, std::set<std::string>> shards;  // shard file -> tensors it must hold
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string()) fail_file(idx, "weight_map[" + qstr(tensor) + "] must be a file name (got " + show(shard) + ")");
    const std::string s = shard.get<std::string>();
    const fs::path sp(s);
    if (s.empty() || sp.is_absolute() || s.find("..") != std::string::npos)
      fail_file(idx, "weight_map[" + qstr(tensor) + "]: shard must be a file name inside the checkpoint directory (got " +
                    qstr(s) + ")");
    shards[s].insert(tensor);
  }
  checkpoint_info info;
  for (const auto& [shard, tensors] : shards) {  // each shard's header read once
    const std::string file = (index_file.parent_path() / shard).string();
    const auto names = add_file(file, info);
    const std::set<std::string> present(names.begin(), names.end());
    for (const auto& t : tensors)
      if (!present.count(t)) fail_file(idx, "weight_map puts tensor " + qstr(t) + " in " + qstr(shard) + ", which does not hold it");
  }
  return info;
}

}  // namespace

checkpoint_info read_safetensors_header(const std::string& file) {
  checkpoint_info info;
  (void)add_file(file, info);
  return info;
}

checkpoint_info read_checkpoint_dir(const std::string& dir) {
  std::error_code ec;
  const fs::path p(dir);
  if (fs::is_regular_file(p, ec)) {
    if (p.filename().string().size() > 11 && p.string().ends_with(".index.json")) return read_index(p);
    return read_safetensors_header(dir);
  }
  if (!fs::is_directory(p, ec)) fail_file(dir, "no such checkpoint directory", error_kind::io_error);
  const fs::path index = p / "model.safetensors.index.json";
  if (fs::is_regular_file(index, ec)) return read_index(index);
  std::vector<std::string> files;
  fs::directory_iterator dit(p, ec), end;
  for (; !ec && dit != end; dit.increment(ec)) {
    std::error_code fec;
    if (dit->is_regular_file(fec) && dit->path().extension() == ".safetensors") files.push_back(dit->path().string());
  }
  if (ec) fail_file(dir, "cannot list the directory (" + ec.message() + ")", error_kind::io_error);
  if (files.empty()) fail_file(dir, "no model.safetensors.index.json and no *.safetensors files", error_kind::io_error);
  std::sort(files.begin(), files.end());
  checkpoint_info info;
  std::map<std::string, std::string> seen;  // tensor -> file
  for (const auto& f : files) {
    for (const auto& name : add_file(f, info)) {
      auto [it, inserted] = seen.emplace(name, f);
      if (!inserted)
        fail_file(dir, "tensor " + qstr(name) + " appears in both " + qstr(fs::path(it->second).filename().string()) +
                      " and " + qstr(fs::path(f).filename().string()) + " (add a model.safetensors.index.json)");
    }
  }
  return info;
}

}  // namespace gpuplan::io
