// serve.cpp — `gpuplan serve`: the KV pool, maximum concurrency, largest context and the
// throughput–latency curve of a serving engine (include/gpuplan/serve.hpp), printed
// through io/serve_report.hpp (the formatter Python's gp.serve shares).
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/io/report.hpp"
#include "gpuplan/io/serve_report.hpp"
#include "gpuplan/serve.hpp"

namespace gpuplan::cli {

int run_serve(const io::resolved_run& r, const std::optional<std::string>& latency, std::optional<std::int64_t> concurrency,
              const io::style& st) {
  std::optional<Seconds> target;
  if (latency) target = seconds(io::parse_latency(*latency));
  const serve_result s = serve(r.run, target);
  std::optional<serve_point> at;
  if (concurrency) at = io::serve_at_checked(r.run, s, *concurrency, "--concurrency");
  if (st.format == io::report_format::json) {
    std::printf("%s\n", io::serve_json(r, s, at).dump(2).c_str());
    return s.memory.fits ? 0 : 1;
  }
  const std::string summary = io::serve_summary(r, s);
  std::string out = st.format == io::report_format::markdown ? "```\n" + summary + "```\n\n" : summary + "\n";
  out += io::render(io::serve_table(s, at), st);
  std::fputs(out.c_str(), stdout);
  return s.memory.fits ? 0 : 1;
}

}  // namespace gpuplan::cli
