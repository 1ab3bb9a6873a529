// report/common.hpp — helpers the report files share (src/report/*.cpp; not installed).
// Named, not anonymous: the io library is a unity build, and these files share batches.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::io {
struct style;
}

namespace gpuplan::io::report_detail {

// "FITS" / "DOES NOT FIT" in the style (bold in markdown, green / red on a colour terminal).
std::string fits_word(bool fits, const style& s);
// "headroom X" when it fits, "short by X" when it does not (X the absolute headroom).
std::string room_text(bool fits, Bytes headroom);

// "12.3 %" of a fraction; "n/a" when not finite.
std::string pct(double fraction);
// {"embeddings", "attention", "mlp", "norms", "head"} of a parameter count.
nlohmann::json components_json(const parameter_breakdown& p);
// "opt:cpu+params:nvme"; "-" without offload.
std::string offload_text(offload opt, offload params);
// "tp 2 · pp 1 · dp 4 · mb 1 × ga 8 · full ckpt · ZeRO-1"
std::string layout_text(const scenario& s);

}  // namespace gpuplan::io::report_detail
