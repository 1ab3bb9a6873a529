// dtype.hpp — element types, including quantized formats, and their storage
// cost in bits per element *including* block-scale overhead.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "gpuplan/names.hpp"

namespace gpuplan {

enum class dtype : std::uint8_t { fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8, int4, nf4, fp4 };

// How a weight tensor is stored. group_size is used by int4 (GPTQ/AWQ) and
// overrides the default block of nf4/fp4 when set.
struct quantization {
  dtype weights = dtype::bf16;
  bool double_quant = false;
  int group_size = 0;  // 0 = the format's default (nf4/fp4: 64, int4: 128)

  friend bool operator==(const quantization&, const quantization&) = default;
};

// Canonical names (reports and messages). Scenario keys accept their own
// subsets of these types: kWeightDtypeNames and kKvCacheDtypeNames (scenario.hpp).
inline constexpr std::array<enum_name<dtype>, 10> kDtypeNames{{
    {dtype::fp32, "fp32"}, {dtype::tf32, "tf32"}, {dtype::fp16, "fp16"}, {dtype::bf16, "bf16"},
    {dtype::fp8_e4m3, "fp8_e4m3"}, {dtype::fp8_e5m2, "fp8_e5m2"}, {dtype::int8, "int8"}, {dtype::int4, "int4"},
    {dtype::nf4, "nf4"}, {dtype::fp4, "fp4"},
}};
template <>
inline constexpr std::span<const enum_name<dtype>> name_table<dtype>{kDtypeNames};
static_assert(names_are_unique(kDtypeNames) && names_cover(kDtypeNames, dtype::fp4));

// Other spellings of the same types: PyTorch / Hugging Face torch_dtype names and
// the short "fp8" (= e4m3, the format used for weights and activations in training).
inline constexpr std::array<enum_name<dtype>, 10> kDtypeAliases{{
    {dtype::fp32, "float32"}, {dtype::fp32, "float"}, {dtype::fp16, "float16"}, {dtype::fp16, "half"},
    {dtype::bf16, "bfloat16"}, {dtype::fp8_e4m3, "fp8"}, {dtype::fp8_e4m3, "e4m3"},
    {dtype::fp8_e4m3, "float8_e4m3fn"}, {dtype::fp8_e5m2, "e5m2"}, {dtype::fp8_e5m2, "float8_e5m2"},
}};

// Accepts the canonical names plus the aliases above.
constexpr std::optional<dtype> parse_dtype(std::string_view s) {
  if (const auto d = from_string<dtype>(s)) return d;
  return value_of(kDtypeAliases, s);
}

// Raw storage bits of one element, without any scale overhead.
constexpr double storage_bits(dtype d) {
  switch (d) {
    case dtype::fp32:
    case dtype::tf32: return 32;  // tf32 is a compute mode; tensors are stored as fp32
    case dtype::fp16:
    case dtype::bf16: return 16;
    case dtype::fp8_e4m3:
    case dtype::fp8_e5m2:
    case dtype::int8: return 8;
    case dtype::int4:
    case dtype::nf4:
    case dtype::fp4: return 4;
  }
  return 32;
}

constexpr bool is_quantized(dtype d) {
  return d == dtype::int8 || d == dtype::int4 || d == dtype::nf4 || d == dtype::fp4;
}
// Formats bitsandbytes stores (NF4/FP4 Linear4bit, LLM.int8 Linear8bitLt); int4 is GPTQ/AWQ.
constexpr bool is_bitsandbytes(dtype d) { return d == dtype::int8 || d == dtype::nf4 || d == dtype::fp4; }

// Bits per stored weight element including scales. `row_length` is the input
// width of the matrix (only LLM.int8 needs it: one scale per output row).
constexpr double bits_per_element(const quantization& q, double row_length = 4096) {
  switch (q.weights) {
    case dtype::nf4:
    case dtype::fp4: {
      // bitsandbytes 4-bit: blocks of 64 with an fp32 absmax = 4 + 32/64 = 4.5 bits.
      // Double quantization (Dettmers et al. 2023, QLoRA §3): absmax in 8 bit per
      // block of 64, one fp32 constant per 256 blocks: 4 + 8/64 + 32/(64*256) = 4.127.
      const double block = q.group_size > 0 ? q.group_size : 64.0;
      if (q.double_quant) return 4.0 + 8.0 / block + 32.0 / (block * 256.0);
      return 4.0 + 32.0 / block;
    }
    case dtype::int4: {
      // GPTQ / AWQ: per group of g an fp16 scale and a 4-bit zero point
      // (AutoGPTQ qzeros packed in int32): 4 + (16 + 4)/g bits; g = 128 by default.
      const double g = q.group_size > 0 ? q.group_size : 128.0;
      return 4.0 + 20.0 / g;
    }
    case dtype::int8:
      // LLM.int8 (Dettmers et al. 2022; bitsandbytes Int8Params.SCB): int8 weights
      // plus one fp32 absmax scale per output row: 8 + 32/in_features bits.
      return 8.0 + 32.0 / (row_length > 0 ? row_length : 4096.0);
    default:
      return storage_bits(q.weights);
  }
}

constexpr double bytes_per_element(dtype d) { return storage_bits(d) / 8.0; }

}  // namespace gpuplan
