// register_units.cpp — unit constants and the version. Quantities cross the
// boundary as floats in canonical units (bytes, seconds, FLOP, FLOP/s); the
// Python layer names the unit in every attribute (`device_bytes`, `step_seconds`).
#include "common.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/version.hpp"

namespace gpuplan::python {

void register_units(py::module_& m) {
  m.attr("__version__") = version_string;
  m.attr("KiB") = kKiB;
  m.attr("MiB") = kMiB;
  m.attr("GiB") = kGiB;
  m.attr("GB") = kGB;
}

}  // namespace gpuplan::python
