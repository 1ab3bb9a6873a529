// file_text.cpp — io/file_text.hpp: regular files only, at most kMaxFileBytes, refusals
// on one line naming the field and the file (quoted as every message quotes user text).
#include "gpuplan/io/file_text.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "gpuplan/error.hpp"
#include "json_text.hpp"

namespace gpuplan::io {
namespace {

namespace fs = std::filesystem;

std::string quoted_file(std::string_view what, const std::string& file) {
  return std::string(what) + " '" + detail::quote_text(file) + "'";
}

// What a non-regular file is, for the message.
const char* kind_of(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory: return "a directory";
    case fs::file_type::fifo: return "a FIFO (named pipe)";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::socket: return "a socket";
    default: return "not a regular file";
  }
}

}  // namespace

void require_regular_file(const std::string& file, const std::string& path, std::string_view what) {
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);  // follows symlinks: a link to /dev/zero is a device
  if (file.empty() || ec || !fs::exists(st)) detail::fail(path, "cannot open " + quoted_file(what, file), error_kind::io_error);
  if (st.type() == fs::file_type::regular) return;
  const std::string kind = kind_of(st.type());
  detail::fail(path, quoted_file(what, file) + " is " + kind + (kind.rfind("not ", 0) == 0 ? "" : ", not a regular file"),
               error_kind::io_error);
}

std::string read_text_file(const std::string& file, const std::string& path, std::string_view what) {
  require_regular_file(file, path, what);
  const auto too_large = [&](const std::string& got) {
    detail::fail(path, quoted_file(what, file) + " is larger than " + std::to_string(kMaxFileBytes >> 20) + " MiB (got " + got + " bytes)",
                 error_kind::io_error);
  };
  std::error_code ec;
  if (const std::uintmax_t size = fs::file_size(file, ec); !ec && size > kMaxFileBytes) too_large(std::to_string(size));
  std::ifstream in(file, std::ios::binary);
  if (!in) detail::fail(path, "cannot open " + quoted_file(what, file), error_kind::io_error);
  // Read in chunks, never past the cap: a file that grows while read (or a /proc file
  // whose size reads 0) cannot make the reader grow without bound.
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) too_large("more than " + std::to_string(kMaxFileBytes));
  }
  if (in.bad()) detail::fail(path, "cannot read " + quoted_file(what, file), error_kind::io_error);
  return text;
}

}  // namespace gpuplan::io
