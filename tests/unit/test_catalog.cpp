// Catalog tests: every verified model's exact parameter count against the
// literal published figures in tests/data/official_parameters.json, aliases,
// unknown-name suggestions, and GPU catalog spot checks.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/hf_config.hpp"

using namespace gpuplan;
using nlohmann::json;

namespace {
json read_json(const std::string& file) {
  std::ifstream in(file);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}
}  // namespace

TEST_CASE("catalog: every verified model equals its published parameter count exactly") {
  const json official = read_json(std::string(GPUPLAN_TEST_DATA_DIR) + "/official_parameters.json");
  int checked = 0;
  for (const auto& [name, value] : official.items()) {
    if (name.front() == '_') continue;
    CAPTURE(name);
    const std::int64_t expected = value.get<std::int64_t>();
    CHECK(count_parameters(io::find_model(name)).total == expected);
    CHECK(io::official_parameters(name) == expected);
    ++checked;
  }
  CHECK(checked == 40);
}
