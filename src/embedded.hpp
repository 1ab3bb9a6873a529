// embedded.hpp — catalog data compiled into gpuplan::io (see cmake/embed.cmake).
#pragma once
#include <cstddef>
#include <string_view>

namespace gpuplan::detail {
// Contents of src/data/<name> (e.g. "gpus.csv", "models/llama-2-13b.json"); empty if absent.
std::string_view embedded_file(std::string_view name);
std::size_t embedded_file_count();
std::string_view embedded_file_name(std::size_t i);
}  // namespace gpuplan::detail
