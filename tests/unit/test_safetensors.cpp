// safetensors header reader: the test writes every file it reads (format per
// huggingface/safetensors: u64 little-endian header length, JSON header, data).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/hf_config.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_safetensors {

using namespace gpuplan;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test case, removed afterwards.
struct temp_dir {
  fs::path path;
  temp_dir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("gpuplan_st_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  [[nodiscard]] std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_u64(std::ofstream& out, std::uint64_t n) {
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
}

// Writes a safetensors file: header text, then `data_bytes` zero bytes. A
// `declared_length` other than ~0 replaces the true header length.
void write_st(const std::string& file, const std::string& header, std::uint64_t data_bytes,
              std::uint64_t declared_length = ~std::uint64_t{0}) {
  std::ofstream out(file, std::ios::binary);
  write_u64(out, declared_length == ~std::uint64_t{0} ? header.size() : declared_length);
  out << header;
  out << std::string(static_cast<std::size_t>(data_bytes), '\0');
}

const std::string kTwoTensors =
    R"({"__metadata__": {"format": "pt"},
        "a.weight": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]},
        "b.bias": {"dtype": "F32", "shape": [4], "data_offsets": [12, 28]}})";

}  // namespace

TEST_CASE("safetensors: a valid file gives counts by dtype without reading data") {
  temp_dir d;
  write_st(d.file("model.safetensors"), kTwoTensors, 28);
  const auto info = io::read_safetensors_header(d.file("model.safetensors"));
  CHECK(info.parameters == 10);  // 2*3 + 4
  CHECK(info.tensors == 2);
  CHECK(info.bytes == 28);  // 6 x 2 B + 4 x 4 B
  REQUIRE(info.parameters_by_dtype.size() == 2);
  CHECK(info.parameters_by_dtype.at("BF16") == 6);
  CHECK(info.parameters_by_dtype.at("F32") == 4);
}

TEST_CASE("safetensors: a header length that lies is an error naming the file") {
  temp_dir d;
  const std::string f = d.file("lie.safetensors");
  write_st(f, kTwoTensors, 28, 100000);
  const auto size = fs::file_size(f);
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f),
                       (f + ": header length 100000 exceeds the file size (" + std::to_string(size) + " bytes)").c_str(),
                       config_error);
  write_st(f, kTwoTensors, 28, 200'000'000);
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f),
                       (f + ": header length 200000000 exceeds the safetensors limit of 100000000 bytes").c_str(),
                       config_error);
}

TEST_CASE("safetensors: truncated files") {
  temp_dir d;
  const std::string f = d.file("short.safetensors");
  {
    std::ofstream out(f, std::ios::binary);
    out << "abc";
  }
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f),
                       (f + ": truncated: 3 bytes, shorter than the 8-byte header length").c_str(), config_error);
  write_st(f, kTwoTensors, 20);  // b.bias needs data bytes 12..28
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f),
                       (f + ": truncated: tensor \"b.bias\" ends at data byte 28 but the file holds 20 data bytes").c_str(),
                       config_error);
}

TEST_CASE("safetensors: malformed headers") {
  temp_dir d;
  const std::string f = d.file("bad.safetensors");
  write_st(f, R"({"w": {"dtype": "F17", "shape": [2], "data_offsets": [0, 4]}})", 4);
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f),
                       (f + ": tensor \"w\": unknown dtype \"F17\" (known: BOOL, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, I16, U16, "
                            "F16, BF16, I32, U32, F32, F64, I64, U64, F4, F6_E2M3, F6_E3M2, C64, F8_E4M3FNUZ)")
                           .c_str(),
                       config_error);

  write_st(f, "[1,2]", 0);
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f), (f + ": header must be a JSON object (got [1,2])").c_str(),
                       config_error);

  write_st(f, std::string("{\"w\xff\": 1}"), 0);  // invalid UTF-8 in a key
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f), (f + ": malformed JSON header: parse error at line 1, column 4: syntax error while parsing object key - invalid "
                              "string: ill-formed UTF-8 byte; last read: '\"w\\xFF'; expected string literal").c_str(), config_error);

  write_st(f, R"({"w": {"dtype": "F16", "shape": [-1, 2], "data_offsets": [0, 4]}})", 4);
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f),
                       (f + ": tensor \"w\": shape must be an array of non-negative integers (got [-1,2])").c_str(),
                       config_error);

  write_st(f, R"({"w": {"dtype": "F16", "shape": [3], "data_offsets": [0, 4]}})", 4);
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f),
                       (f + ": tensor \"w\": data_offsets span 4 bytes but shape [3] of F16 needs 6").c_str(), config_error);

  // 2^32 x 2^32 elements do not fit a signed 64-bit count.
  write_st(f, R"({"w": {"dtype": "U8", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", 0);
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f),
                       (f + ": tensor \"w\": shape [4294967296,4294967296] has more elements than a 64-bit count holds")
                           .c_str(),
                       config_error);
}

TEST_CASE("safetensors: tensors must tile the data buffer exactly (reference Metadata::validate)") {
  // The reference reader sorts tensors by data_offsets and requires the first to
  // begin at 0, each to begin where the previous ends, and the last to end at the
  // end of the buffer. Header order is free (a JSON object has none).
  temp_dir d;
  const std::string f = d.file("t.safetensors");
  // Key order b, a; offset order a ([0,4]) then b ([4,12]): accepted, 2 + 4 = 6 parameters.
  write_st(f, R"({"b": {"dtype": "F16", "shape": [4], "data_offsets": [4, 12]},
                  "a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}})", 12);
  CHECK(io::read_safetensors_header(f).parameters == 6);
  // Zero-element tensors occupy [s, s] anywhere in the sequence.
  write_st(f, R"({"a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
                  "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}})", 4);
  CHECK(io::read_safetensors_header(f).tensors == 2);
  // No tensors, no data: accepted.
  write_st(f, R"({"__metadata__": {}})", 0);
  CHECK(io::read_safetensors_header(f).tensors == 0);

  // Two tensors on the same bytes would count them twice.
  write_st(f, R"({"a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
                  "b": {"dtype": "F16", "shape": [1], "data_offsets": [2, 4]}})", 4);
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f), (f + ": tensor \"b\": data_offsets [2,4] overlap tensor \"a\" [0,4]").c_str(),
                       config_error);
  // A gap between tensors.
  write_st(f, R"({"a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
                  "b": {"dtype": "F16", "shape": [2], "data_offsets": [6, 10]}})", 10);
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f),
                       (f + ": tensor \"b\": data_offsets begin at byte 6 but tensor \"a\" ends at byte 4 (tensors must cover "
                            "the data contiguously)").c_str(),
                       config_error);
  // The first tensor does not start the buffer.
  write_st(f, R"({"a": {"dtype": "F16", "shape": [2], "data_offsets": [2, 6]}})", 6);
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f),
                       (f + ": tensor \"a\": data_offsets begin at byte 2 but the data buffer starts at byte 0 (tensors must "
                            "cover the data contiguously)").c_str(),
                       config_error);
  // Trailing bytes after the last tensor.
  write_st(f, R"({"a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}})", 8);
  CHECK_THROWS_WITH_AS(io::read_safetensors_header(f),
                       (f + ": tensors cover 4 data bytes but the file holds 8 data bytes (the data buffer must be covered "
                            "exactly)").c_str(),
                       config_error);
}

TEST_CASE("safetensors: 10^12 elements count exactly (sparse data file)") {
  temp_dir d;
  const std::string f = d.file("huge.safetensors");
  const std::string header = R"({"w": {"dtype": "U8", "shape": [1000000, 1000000], "data_offsets": [0, 1000000000000]}})";
  write_st(f, header, 0);
  std::error_code ec;
  fs::resize_file(f, 8 + header.size() + 1'000'000'000'000ULL, ec);  // sparse: no data is written or read
  if (ec) {
    MESSAGE("filesystem cannot hold a sparse 1 TB file; skipped: " << ec.message());
    return;
  }
  const auto info = io::read_safetensors_header(f);
  CHECK(info.parameters == 1'000'000'000'000LL);
  CHECK(info.bytes == 1'000'000'000'000LL);
}

TEST_CASE("safetensors: model.safetensors.index.json with two shards") {
  temp_dir d;
  write_st(d.file("model-00001-of-00002.safetensors"),
           R"({"embed.weight": {"dtype": "BF16", "shape": [10, 4], "data_offsets": [0, 80]}})", 80);
  write_st(d.file("model-00002-of-00002.safetensors"),
           R"({"head.weight": {"dtype": "BF16", "shape": [10, 4], "data_offsets": [0, 80]},
               "norm.weight": {"dtype": "F32", "shape": [4], "data_offsets": [80, 96]}})",
           96);
  std::ofstream(d.file("model.safetensors.index.json"))
      << R"({"metadata": {"total_size": 176}, "weight_map": {
              "embed.weight": "model-00001-of-00002.safetensors",
              "head.weight": "model-00002-of-00002.safetensors",
              "norm.weight": "model-00002-of-00002.safetensors"}})";
  // A stray file not in the index must not be counted.
  write_st(d.file("consolidated.safetensors"),
           R"({"x": {"dtype": "BF16", "shape": [1000], "data_offsets": [0, 2000]}})", 2000);
  const auto info = io::read_checkpoint_dir(d.path.string());
  CHECK(info.parameters == 84);  // 40 + 40 + 4
  CHECK(info.tensors == 3);
  CHECK(info.bytes == 176);      // equals the index's metadata.total_size
  CHECK(info.parameters_by_dtype.at("BF16") == 80);
  CHECK(info.parameters_by_dtype.at("F32") == 4);

  // An index that points a tensor at the wrong shard.
  std::ofstream(d.file("model.safetensors.index.json"))
      << R"({"weight_map": {"embed.weight": "model-00002-of-00002.safetensors"}})";
  CHECK_THROWS_WITH_AS(io::read_checkpoint_dir(d.path.string()),
                       (d.file("model.safetensors.index.json") +
                        ": weight_map puts tensor \"embed.weight\" in \"model-00002-of-00002.safetensors\", which does not hold it")
                           .c_str(),
                       config_error);
  // A shard outside the directory.
  std::ofstream(d.file("model.safetensors.index.json")) << R"({"weight_map": {"w": "../x.safetensors"}})";
  CHECK_THROWS_WITH_AS(io::read_checkpoint_dir(d.path.string()),
                       (d.file("model.safetensors.index.json") +
                        ": weight_map[\"w\"]: shard must be a file name inside the checkpoint directory (got \"../x.safetensors\")")
                           .c_str(),
                       config_error);
}

TEST_CASE("safetensors: a directory without an index reads every *.safetensors once") {
  temp_dir d;
  write_st(d.file("a.safetensors"), R"({"x": {"dtype": "F16", "shape": [3], "data_offsets": [0, 6]}})", 6);
  write_st(d.file("b.safetensors"), R"({"y": {"dtype": "F16", "shape": [5], "data_offsets": [0, 10]}})", 10);
  CHECK(io::read_checkpoint_dir(d.path.string()).parameters == 8);
  write_st(d.file("c.safetensors"), R"({"y": {"dtype": "F16", "shape": [5], "data_offsets": [0, 10]}})", 10);
  CHECK_THROWS_WITH_AS(io::read_checkpoint_dir(d.path.string()),
                       (d.path.string() +
                        ": tensor \"y\" appears in both \"b.safetensors\" and \"c.safetensors\" (add a model.safetensors.index.json)")
                           .c_str(),
                       config_error);
  temp_dir empty;
  CHECK_THROWS_WITH_AS(io::read_checkpoint_dir(empty.path.string()),
                       (empty.path.string() + ": no model.safetensors.index.json and no *.safetensors files").c_str(),
                       config_error);
}

TEST_CASE("safetensors: a checkpoint directory with config.json is a model argument") {
  temp_dir d;
  std::ofstream(d.file("config.json"))
      << R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 32})";
  write_st(d.file("model.safetensors"), R"({"wte.weight": {"dtype": "F32", "shape": [100, 64], "data_offsets": [0, 25600]}})",
           25600);
  const architecture a = io::load_model(d.path.string());
  CHECK(a.family == "gpt2");
  CHECK(a.hidden == 64);
  CHECK(a.ffn == 256);  // n_inner None -> 4 * n_embd
  // Same through the JSON overload (a string value is a spec).
  CHECK(count_parameters(io::load_model(nlohmann::json(d.path.string()))).total == count_parameters(a).total);
  CHECK(io::load_model(nlohmann::json(d.file("config.json"))).hidden == 64);

  temp_dir no_config;
  CHECK_THROWS_WITH_AS(io::load_model(no_config.path.string()),
                       ("model: checkpoint directory '" + no_config.path.string() + "' has no config.json").c_str(),
                       config_error);
}

}  // namespace unit_safetensors
