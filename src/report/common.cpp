// report/common.cpp — the helpers of report/common.hpp.
#include "common.hpp"

#include <cmath>

#include "gpuplan/io/report.hpp"
#include "gpuplan/names.hpp"

namespace gpuplan::io::report_detail {
using nlohmann::json;

std::string pct(double fraction) {
  if (!std::isfinite(fraction)) return "n/a";
  return format_number(fraction * 100.0) + " %";
}

json components_json(const parameter_breakdown& p) {
  return {{"embeddings", p.embeddings}, {"attention", p.attention}, {"mlp", p.mlp},
          {"norms", p.norms},           {"head", p.head}};
}

std::string offload_text(offload opt, offload params) {
  if (opt == offload::none && params == offload::none) return "-";
  std::string s;
  if (opt != offload::none) s = "opt:" + std::string(to_string(opt));
  if (params != offload::none) s += (s.empty() ? "" : "+") + std::string("params:") + std::string(to_string(params));
  return s;
}

std::string fits_word(bool fits, const style& s) {
  const bool md = s.format == report_format::markdown;
  const std::string word = md ? (fits ? "**FITS**" : "**DOES NOT FIT**") : (fits ? "FITS" : "DOES NOT FIT");
  if (!s.color || s.format != report_format::text) return word;
  return std::string(fits ? "\033[1;32m" : "\033[1;31m") + word + "\033[0m";
}

std::string room_text(bool fits, Bytes headroom) {
  return fits ? "headroom " + format_bytes(headroom) : "short by " + format_bytes(bytes(-in_bytes(headroom)));
}

// "tp 2 · pp 1 · dp 4 · mb 1 × ga 8 · full ckpt · ZeRO-1"
std::string layout_text(const scenario& s) {
  std::string t = "tp " + std::to_string(s.parallel.tp_size()) + " · pp " + std::to_string(s.parallel.pp);
  if (s.parallel.virtual_stages > 1) t += " (v " + std::to_string(s.parallel.virtual_stages) + ")";
  t += " · dp " + std::to_string(s.dp()) + " · mb " + std::to_string(s.micro_batch) + " × ga " +
       std::to_string(s.grad_accum);
  if (s.parallel.sp_enabled()) t += " · sp";
  if (s.ckpt && *s.ckpt != checkpointing::none) t += " · " + std::string(to_string(*s.ckpt)) + " ckpt";
  if (s.parallel.zero > 0) t += " · ZeRO-" + std::to_string(s.parallel.zero);
  if (s.parallel.offload_optimizer != offload::none || s.parallel.offload_params != offload::none)
    t += " · offload " + offload_text(s.parallel.offload_optimizer, s.parallel.offload_params);
  return t;
}

}  // namespace gpuplan::io::report_detail
