// fuzz_safetensors — a .safetensors file as raw bytes: 8-byte little-endian
// header length, JSON header, tensor data. Only the header is read. Uses the
// in-memory entry point when src/ provides it, else a temp file in /dev/shm.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz_common.hpp"
#include "gpuplan/io/hf_config.hpp"

namespace {
gpuplan::io::checkpoint_info read(const std::uint8_t* data, std::size_t size) {
#ifdef GPUPLAN_HAVE_SAFETENSORS_BYTES
  return gpuplan::io::read_safetensors_header_bytes(std::string_view(reinterpret_cast<const char*>(data), size));
#else
  static const std::string file = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/gpuplan-fuzz-" + std::to_string(getpid()) + ".safetensors";
  }();
  std::FILE* f = std::fopen(file.c_str(), "wb");
  if (!f) gpuplan::fuzz::die("cannot write the temp file", file);
  if (size > 0 && std::fwrite(data, 1, size, f) != size) gpuplan::fuzz::die("short write", file);
  std::fclose(f);
  return gpuplan::io::read_safetensors_header(file);
#endif
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gpuplan::io::checkpoint_info info;
  try {
    info = read(data, size);
  } catch (const gpuplan::config_error& e) {
    gpuplan::fuzz::check_error(e);
    return 0;
  }
  std::int64_t sum = 0;
  for (const auto& [dtype, n] : info.parameters_by_dtype) {
    gpuplan::fuzz::expect(n >= 0, "negative per-dtype count", dtype);
    gpuplan::fuzz::expect(!__builtin_add_overflow(sum, n, &sum), "per-dtype counts overflow");
  }
  gpuplan::fuzz::expect(info.parameters >= 0 && info.tensors >= 0 && info.bytes >= 0, "negative checkpoint totals");
  gpuplan::fuzz::expect(sum == info.parameters, "per-dtype counts do not add up to parameters");
#ifndef GPUPLAN_HAVE_SAFETENSORS_BYTES
  // The data bytes a header declares cannot exceed what the file holds (a
  // truncated file or a lying header is an error, not a count).
  gpuplan::fuzz::expect(static_cast<std::uint64_t>(info.bytes) <= size, "header declares more data than the file has",
                        std::to_string(info.bytes) + " > " + std::to_string(size));
#endif
  return 0;
}
