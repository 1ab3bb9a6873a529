// module.cpp — gpuplan._core: the thin compiled layer under the gpuplan package.
// Everything Pythonic (keywords, repr, pandas, plots) lives in python/gpuplan/.
#include "common.hpp"

#include "gpuplan/version.hpp"

PYBIND11_MODULE(_core, m) {
  using namespace gpuplan::python;
  m.doc() = "gpuplan's compiled core (pybind11). Use the `gpuplan` package, not this module.";
  register_errors(m);  // first: every other binding may raise ConfigError
  register_units(m);
  register_model(m);
  register_hardware(m);
  register_scenario(m);
  register_memory(m);
  register_timing(m);
  register_report(m);
  register_sweep(m);
  register_plan(m);
  register_long_context(m);
  register_serve(m);
  register_rl(m);
  register_calibrate(m);
  register_vision(m);
  register_diffusion(m);
}
