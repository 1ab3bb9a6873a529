// catalog_common.hpp — what the model catalog (catalog_models.cpp) and the GPU catalog
// (catalog.cpp) share. Named, not anonymous: the io library is a unity build.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuplan::io::catalog_detail {

// ASCII lower case (names and ids are matched case-insensitively).
std::string lower_case(std::string_view s);
// The three nearest names: names that start with the query first, then names
// that contain it, then by edit distance; ties keep catalog order. "a, b, c".
std::string nearest_names(std::string_view query, const std::vector<std::string>& names);

}  // namespace gpuplan::io::catalog_detail
