// fuzz_values.hpp — hostile JSON values for the structured fuzzers: boundary
// integers around every limit the validators use (2^24, 2^30, 2^31, 2^53,
// 2^62, INT64_MAX, UINT64_MAX), huge/tiny/negative-zero doubles, NaN/inf
// (reachable through the C++ and Python APIs, not through JSON text),
// wrong types, long multi-byte strings (message truncation) and invalid UTF-8.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <fuzzer/FuzzedDataProvider.h>
#include <nlohmann/json.hpp>

namespace gpuplan::fuzz {

inline nlohmann::json hostile_value(FuzzedDataProvider& in) {
  using json = nlohmann::json;
  switch (in.ConsumeIntegralInRange<int>(0, 44)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return -1;
    case 3: return 2;
    case 4: return 3;
    case 5: return 7;
    case 6: return 64;
    case 7: return 4096;
    case 8: return std::int64_t{1} << 24;
    case 9: return (std::int64_t{1} << 24) + 1;
    case 10: return std::int64_t{1} << 30;
    case 11: return std::int64_t{2147483647};
    case 12: return std::int64_t{2147483648};
    case 13: return std::int64_t{4294967296};
    case 14: return std::int64_t{9007199254740993};
    case 15: return std::int64_t{1} << 62;
    case 16: return std::numeric_limits<std::int64_t>::max();
    case 17: return std::numeric_limits<std::int64_t>::min();
    case 18: return std::numeric_limits<std::uint64_t>::max();
    case 19: return 1e15;
    case 20: return 1e308;
    case 21: return -1e308;
    case 22: return -0.0;
    case 23: return 0.5;
    case 24: return 4.0;
    case 25: return 1e-308;
    case 26: return std::numeric_limits<double>::quiet_NaN();
    case 27: return std::numeric_limits<double>::infinity();
    case 28: return "";
    case 29: return std::string(40, '\xc3') + "";  // lone lead bytes: invalid UTF-8
    case 30: {                                     // 40 x "é": valid UTF-8, cut at byte 57 splits one
      std::string s;
      for (int i = 0; i < 40; ++i) s += "\xc3\xa9";
      return s;
    }
    case 31: return "\xff\xfe";
    case 32: return true;
    case 33: return false;
    case 34: return nullptr;
    case 35: return json::array();
    case 36: return json::object();
    case 37: return json::array({1, 2});
    case 38: return json{{"a", 1}};
    case 39: return in.ConsumeIntegral<std::int64_t>();
    case 40: return in.ConsumeIntegralInRange<std::int64_t>(-4, 70000);
    case 41: return in.ConsumeFloatingPoint<double>();
    case 42: return in.ConsumeRandomLengthString(64);
    case 43: return std::string("gelu");
    default: {  // a moderately deep array
      json v = 1;
      const int depth = in.ConsumeIntegralInRange<int>(1, 300);
      for (int i = 0; i < depth; ++i) v = json::array({v});
      return v;
    }
  }
}

}  // namespace gpuplan::fuzz
