// io/file_text.hpp — the one reader of files a user names: the scenario, profile and
// measurements files, GPU JSON (--gpu, --gpu-file), config.json, the safetensors index,
// graph and diffusers files, price lists; the CLI's --scenario and --gpu; Python's
// Graph.load and Scenario.from_json. Regular files only (a directory, a FIFO, /dev/zero
// would block, loop or grow without end) and at most kMaxFileBytes, each refusal one
// line "<path>: <what> '<file>' ..." (docs/robustness.md, "Files").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuplan::io {

// The largest file a user names: 16 MiB, far above any real one (a 405B checkpoint's
// safetensors index is ~0.1 MiB, a price list or config.json well under 1 MiB).
inline constexpr std::size_t kMaxFileBytes = std::size_t{16} << 20;

// Throws config_error(path, ..., io_error) unless `file` names a regular file (after
// symlinks): missing ("cannot open <what> '<file>'"), a directory, a FIFO, a device
// or a socket ("<what> '<file>' is a directory, not a regular file").
void require_regular_file(const std::string& file, const std::string& path, std::string_view what = "file");

// The whole of `file` (require_regular_file, then read), or config_error naming `path`:
// larger than kMaxFileBytes ("<what> '<file>' is larger than 16 MiB (got N bytes)")
// or unreadable.
std::string read_text_file(const std::string& file, const std::string& path, std::string_view what = "file");

}  // namespace gpuplan::io
