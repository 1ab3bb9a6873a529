// Hostile files and values a careless user gives: a directory, a FIFO or /dev/zero where a
// file is expected (each reader used to block, loop or grow to GBs), files past the 16 MiB
// cap, names with terminal escapes, GPU figures too small to be real, NaN where an integer
// belongs, and serving and duration figures past any physical meaning. Each case runs in a
// forked child with an alarm (tests/support/isolated.hpp): a hang is a failed check.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/diffusers_config.hpp"
#include "gpuplan/io/file_text.hpp"
#include "gpuplan/io/graph_json.hpp"
#include "gpuplan/io/hf_config.hpp"
#include "gpuplan/io/prices.hpp"
#include "gpuplan/io/profile.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/io/serve_report.hpp"

#include "support/isolated.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_hostile_files {

using namespace gpuplan;
using json = nlohmann::json;
using test::check_rejected;
using test::isolated;
namespace fs = std::filesystem;

namespace {

constexpr unsigned kHang = 10;  // seconds: every reader answers a bad file at once

// A scratch directory holding a FIFO, a directory named like a file and a sparse 17 MiB file.
struct scratch {
  fs::path dir = fs::temp_directory_path() / ("gpuplan-hostile-files-" + std::to_string(getpid()));
  std::string fifo, folder, big, tiny;
  scratch() {
    fs::create_directories(dir / "folder.json");
    fifo = (dir / "fifo.json").string();
    folder = (dir / "folder.json").string();
    big = (dir / "big.json").string();
    tiny = (dir / "tiny.json").string();
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    { std::ofstream(big, std::ios::binary) << "{"; }
    fs::resize_file(big, io::kMaxFileBytes + 1);  // sparse: no disk used
    { std::ofstream(tiny) << "{}"; }
  }
  ~scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// Every reader of a user-named file, by the field its errors name.
struct reader {
  const char* name;
  std::string path;  // the field prefix of its messages ("" = the file name itself)
  std::function<void(const std::string&)> read;
};
std::vector<reader> readers() {
  return {
      {"text file", "x", [](const std::string& f) { (void)io::read_text_file(f, "x"); }},
      {"scenario", "scenario", [](const std::string& f) { (void)io::read_scenario_file(f); }},
      {"profile", "profile", [](const std::string& f) { (void)io::read_profile_file(f); }},
      {"measurements", "measurements", [](const std::string& f) { (void)io::read_measurements_file(f); }},
      {"config.json", "model", [](const std::string& f) { (void)io::read_hf_config_file(f, "model"); }},
      {"model spec", "model", [](const std::string& f) { (void)io::load_model(f, "model"); }},
      {"graph", "graph", [](const std::string& f) { (void)io::read_graph_file(f); }},
      {"GPU file", "", [](const std::string& f) { io::load_gpu_file(f); }},
      {"prices", "", [](const std::string& f) { (void)io::read_prices_file(f); }},
      {"safetensors", "", [](const std::string& f) { (void)io::read_safetensors_header(f); }},
  };
}

std::string rejected_as(const reader& r, const std::string& file) {
  return isolated([&] { r.read(file); }, kHang);
}

}  // namespace

TEST_CASE("hostile files: a directory, a FIFO and /dev/zero are one-line errors naming the field and the file") {
  const scratch s;
  for (const auto& r : readers()) {
    CAPTURE(r.name);
    for (const auto& [file, what] : {std::pair{s.folder, "a directory"}, std::pair{s.fifo, "a FIFO (named pipe)"},
                                     std::pair{std::string("/dev/zero"), "a character device"}}) {
      if (std::string(r.name) == "model spec" && file == s.folder) continue;  // a directory is a checkpoint: below
      const std::string outcome = rejected_as(r, file);
      check_rejected(outcome, r.path.empty() ? file : r.path);
      CHECK(outcome.find("'" + file + "' is " + what + ", not a regular file") != std::string::npos);
    }
  }
  // Exact, for the readers whose wording users see most.
  CHECK(isolated([] { (void)io::read_scenario_file("/dev/zero"); }, kHang) ==
        "error: scenario: file '/dev/zero' is a character device, not a regular file");
  CHECK(isolated([&] { (void)io::read_profile_file(s.folder); }, kHang) ==
        "error: profile: file '" + s.folder + "' is a directory, not a regular file");
  CHECK(isolated([&] { (void)io::read_hf_config_file(s.fifo, "model"); }, kHang) ==
        "error: model: config file '" + s.fifo + "' is a FIFO (named pipe), not a regular file");
}

TEST_CASE("hostile files: a file past 16 MiB is refused before it is read; missing files keep their message") {
  const scratch s;
  for (const auto& r : readers()) {
    if (std::string(r.name) == "safetensors") continue;  // reads only its header (bounded by its own 100 MB cap)
    CAPTURE(r.name);
    const std::string outcome = rejected_as(r, s.big);
    check_rejected(outcome, r.path.empty() ? s.big : r.path);
    CHECK(outcome.find("is larger than 16 MiB (got 16777217 bytes)") != std::string::npos);
  }
  CHECK(isolated([] { (void)io::read_scenario_file("/nonexistent/run.json"); }) ==
        "error: scenario: cannot open file '/nonexistent/run.json'");
  CHECK(isolated([] { (void)io::read_prices_file("/nonexistent/p.csv"); }) ==
        "error: /nonexistent/p.csv: cannot open prices file '/nonexistent/p.csv'");
  CHECK(isolated([] { (void)io::read_text_file("", "x"); }) == "error: x: cannot open file ''");
  // A regular file at the cap reads; a symlink to /dev/zero is the device it names.
  CHECK(isolated([&] { (void)io::read_text_file(s.tiny, "x"); }) == "accepted");
  const std::string link = (s.dir / "zero.json").string();
  fs::create_symlink("/dev/zero", link);
  CHECK(isolated([&] { (void)io::read_text_file(link, "x"); }, kHang) ==
        "error: x: file '" + link + "' is a character device, not a regular file");
}

TEST_CASE("hostile files: a checkpoint or pipeline directory whose config is not a file") {
  const scratch s;
  const fs::path ckpt = s.dir / "ckpt";
  fs::create_directories(ckpt / "config.json");  // config.json is a directory
  CHECK(isolated([&] { (void)io::load_model(ckpt.string(), "model"); }, kHang) ==
        "error: model: config file '" + (ckpt / "config.json").string() + "' is a directory, not a regular file");
  const fs::path pipe = s.dir / "pipe";
  fs::create_directories(pipe);
  REQUIRE(mkfifo((pipe / "model_index.json").c_str(), 0600) == 0);
  const std::string outcome = isolated([&] { (void)io::read_diffusers_pipeline(pipe.string()); }, kHang);
  check_rejected(outcome, "model_index.json");
  CHECK(outcome.find("is a FIFO (named pipe), not a regular file") != std::string::npos);
}

TEST_CASE("hostile values: GPU figures below any real part are refused, the bounds themselves accepted") {
  auto gpu = [](const char* key, double v) {
    return isolated([&] { (void)io::read_scenario(json{{"model", "gpt2"}, {"seq_len", 1024}, {"gpu", {{"base", "a100-80gb"}, {key, v}}}}); });
  };
  // bf16 at 1e-300 TFLOP/s printed an MFU of 697%.
  CHECK(gpu("bf16_tflops", 1e-300) == "error: scenario.gpu.bf16_tflops: must be at least 0.01 (got 1e-300)");
  CHECK(gpu("memory_gb", 0.1) == "error: scenario.gpu.memory_gb: must be at least 0.25 (got 0.1)");
  CHECK(gpu("usable_gib", 0.1) == "error: scenario.gpu.usable_gib: must be at least 0.25 (got 0.1)");
  CHECK(gpu("bandwidth_gb_s", 0.5) == "error: scenario.gpu.bandwidth_gb_s: must be at least 1 (got 0.5)");
  CHECK(gpu("gpu_link_gb_s_bidir", 0.5) == "error: scenario.gpu.gpu_link_gb_s_bidir: must be at least 1 (got 0.5)");
  CHECK(gpu("tdp_w", 0.5) == "error: scenario.gpu.tdp_w: must be at least 1 (got 0.5)");
  CHECK(gpu("fp64_tflops", 1e-4) == "error: scenario.gpu.fp64_tflops: must be at least 0.001 (got 0.0001)");
  for (const char* rate : {"fp32_tflops", "tf32_tflops", "fp16_acc16_tflops", "fp8_tflops", "int8_tops"})
    CHECK(gpu(rate, 1e-3) == std::string("error: scenario.gpu.") + rate + ": must be at least 0.01 (got 0.001)");
  CHECK(gpu("bf16_tflops", 0.01) == "accepted");
  CHECK(gpu("fp64_tflops", 0.001) == "accepted");
  CHECK(gpu("bandwidth_gb_s", 1) == "accepted");
}

TEST_CASE("hostile values: NaN and infinity where an integer belongs are named, not 'too large (got null)'") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  auto with = [](const char* key, double v) {
    json j = {{"model", "gpt2"}, {"seq_len", 1024}};
    j[key] = v;  // replaces seq_len (an initializer list keeps the first of two equal keys)
    return isolated([&] { (void)io::read_scenario(j); });
  };
  CHECK(with("seq_len", nan) == "error: scenario.seq_len: must be a finite number (got nan)");
  CHECK(with("micro_batch", inf) == "error: scenario.micro_batch: must be a finite number (got inf)");
  CHECK(with("grad_accum", -inf) == "error: scenario.grad_accum: must be a finite number (got -inf)");
  CHECK(with("tokens", nan) == "error: scenario.tokens: must be a finite number (got nan)");
}

TEST_CASE("hostile values: LoRA alpha and the price per GPU-hour have physical bounds in the reader") {
  auto run = [](const json& extra) {
    json j = {{"model", "gpt2"}, {"seq_len", 1024}};
    j.update(extra);
    return isolated([&] { (void)io::read_scenario(j); });
  };
  CHECK(run({{"method", "lora"}, {"lora", {{"alpha", 1e300}}}}) == "error: scenario.lora.alpha: must be between 0.001 and 1e6 (got 1e+300)");
  CHECK(run({{"method", "lora"}, {"lora", {{"alpha", 1e-9}}}}) == "error: scenario.lora.alpha: must be between 0.001 and 1e6 (got 1e-09)");
  CHECK(run({{"method", "lora"}, {"lora", {{"alpha", 16}}}}) == "accepted");
  CHECK(run({{"price_per_gpu_hour", 1e-300}}) == "error: scenario.price_per_gpu_hour: must be 0 or at least 0.0001 per GPU-hour (got 1e-300)");
  CHECK(run({{"price_per_gpu_hour", 0}}) == "accepted");
}

TEST_CASE("hostile values: durations, latency targets, request rates and serving concurrency are bounded") {
  CHECK(isolated([] { (void)io::parse_duration("1e300", "--deadline"); }) == "error: --deadline: must be between 1e-6 s and 100 years (got '1e300')");
  CHECK(isolated([] { (void)io::parse_duration("1e-9", "--deadline"); }) == "error: --deadline: must be between 1e-6 s and 100 years (got '1e-9')");
  CHECK(isolated([] { (void)io::checked_seconds(std::nan(""), "deadline"); }) == "error: deadline: must be a finite number (got nan)");
  CHECK(io::parse_duration("24h", "--deadline") == 86400);
  CHECK(isolated([] { (void)io::parse_latency("1e-300ms"); }) == "error: --latency-target: must be between 0.01ms and 3600s (got '1e-300ms')");
  CHECK(isolated([] { (void)io::parse_latency("2h"); }) == "error: --latency-target: must be between 0.01ms and 3600s (got '2h')");
  CHECK(io::parse_latency("50ms") == doctest::Approx(0.05));
  CHECK(isolated([] { (void)io::checked_request_rate(1e-300, "--requests-per-second"); }) ==
        "error: --requests-per-second: must be at least one request a week, 1.65e-6 per second (got 1e-300)");
  // Past the requests the KV pool holds, serve_at printed a TTFT of 1.3e11 ms and more than the curve's peak.
  const io::resolved_run r = io::read_scenario(json{{"model", "llama-2-7b"}, {"workload", "infer"}, {"gpu", "a100-80gb"}});
  const serve_result s = serve(r.run);
  REQUIRE(s.max_concurrency > 1);
  const std::string most = std::to_string(s.max_concurrency);
  CHECK(isolated([&] { (void)io::serve_at_checked(r.run, s, 1000000000000, "--concurrency"); }) ==
        "error: --concurrency: must be at most " + most + ", the requests the KV cache pool holds at once (got 1000000000000)");
  CHECK(isolated([&] { (void)io::serve_at_checked(r.run, s, 0, "--concurrency"); }) == "error: --concurrency: must be at least 1 (got 0)");
  const serve_point top = io::serve_at_checked(r.run, s, s.max_concurrency, "--concurrency");
  CHECK(top.tokens_per_second <= s.curve.back().tokens_per_second * (1 + 1e-12));
}

TEST_CASE("hostile names: control characters are dropped wherever a user-supplied name is printed") {
  CHECK(io::printable("evil\x1b[2J\x1b[31mRED") == "evil[2J[31mRED");                // ESC: clear screen, colour
  CHECK(io::printable("a\rb\tc\nd\a\x7f") == "abcd");                                 // CR, TAB, LF, BEL, DEL
  CHECK(io::printable("a\nb", true) == "a\nb");                                        // tables keep their lines
  CHECK(io::printable("x\xc2\x9b" "2Jy") == "x2Jy");                                   // C1 CSI (U+009B)
  CHECK(io::printable("\xe2\x80\xae" "gnp.exe") == "gnp.exe");                         // U+202E right-to-left override
  CHECK(io::printable("1 \xc3\x97 A100 \xe2\x80\x94 ok") == "1 \xc3\x97 A100 \xe2\x80\x94 ok");  // text is kept
  CHECK(io::printable("bad\xff\xc0\xaf") == "bad\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");         // invalid UTF-8: U+FFFD
  CHECK(io::printable("\xe0\x80\x9b") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // an overlong ESC is no escape
  // A GPU object's id and name reach the summary and every table cell without the escape.
  const io::resolved_run r = io::read_scenario(
      json{{"model", "gpt2"}, {"seq_len", 1024}, {"gpu", {{"base", "a100-80gb"}, {"id", "evil\x1b[2J"}, {"name", "E\x1b]0;t\x07"}}}});
  const std::string summary = io::run_summary(r.settings());
  CHECK(summary.find('\x1b') == std::string::npos);
  CHECK(summary.find("evil[2J") != std::string::npos);
  io::table t;
  t.title = "T\x1b[2J";
  t.header = {"GPU", "Name"};
  t.rows = {{r.settings().gpu.id, r.settings().gpu.name}};
  t.notes = {"note \x1b[1m"};
  for (const auto f : {io::report_format::text, io::report_format::markdown}) {
    const std::string out = io::render(t, io::style{f, false});
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.find('\x07') == std::string::npos);
  }
  // Colour stays where the renderer adds it itself.
  CHECK(io::render(t, io::style{io::report_format::text, true}).find("\x1b[1m") != std::string::npos);
}

}  // namespace unit_hostile_files
