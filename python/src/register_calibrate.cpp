// register_calibrate.cpp — calibration profiles (profile.hpp, io/profile.hpp) and
// calibrate_profile (calibrate.hpp): gp.calibrate, gp.load_profile, Scenario(profile=).
#include <memory>

#include "common.hpp"
#include "gpuplan/calibrate.hpp"
#include "gpuplan/io/profile.hpp"

namespace gpuplan::python {

void register_calibrate(py::module_& m) {
  py::class_<profile, std::shared_ptr<profile>>(m, "Profile", "A calibration profile: fitted constants and bands.")
      .def_readonly("name", &profile::name, "The profile's name.")
      .def_readonly("model", &profile::model, "The measured model ('mixed' when the points differ).")
      .def_readonly("gpu", &profile::gpu, "The measured GPU id ('mixed' when the points differ).")
      .def_readonly("framework", &profile::framework, "The measured framework ('mixed' when the points differ).")
      .def_readonly("memory_points", &profile::memory_points, "Measurements with a memory figure.")
      .def_readonly("time_points", &profile::time_points, "Measurements with a step time or tokens/s.")
      .def("to_dict", [](const profile& p) { return from_json(io::write_profile(p)); },
           "The profile file's content (docs/calibration.md).")
      .def("__eq__", [](const profile& a, const profile& b) { return a == b; });
  m.def("read_profile", [](py::handle obj) { return std::make_shared<profile>(io::read_profile(to_json(obj, "profile"))); },
        py::arg("data"), "A profile from a dict in the profile file's schema.");
  m.def("read_profile_file", [](const std::string& f) { return std::make_shared<profile>(io::read_profile_file(f)); },
        py::arg("file"), "Reads and checks a profile file.");
  m.def("save_profile_file", &io::save_profile_file, py::arg("profile"), py::arg("file"), py::arg("replace") = false,
        "Writes a profile file if it reads back unchanged; not over an existing file unless replace.");
  m.def(
      "calibrate",
      [](py::handle measurements, const std::string& name) {
        const std::vector<measurement> data = io::read_measurements(to_json(measurements, "measurements"));
        return std::make_shared<profile>(calibrate_profile(data, name));
      },
      py::arg("measurements"), py::arg("name"),
      "Fits a profile to measured runs (a list of dicts: scenario + step_seconds / tokens_per_second_per_gpu / "
      "peak_allocated_bytes / peak_reserved_bytes / device_bytes).");
  m.def(
      "with_profile",
      [](const io::resolved_run& r, std::shared_ptr<const profile> p) {
        io::resolved_run out = r;
        out.run.calibrate_with(std::move(p));
        return out;
      },
      py::arg("run"), py::arg("profile").none(true), "A copy of the run that uses the profile's constants and bands.");
  m.def(
      "run_profile",
      [](const io::resolved_run& r) -> py::object {
        if (r.run.calibration() == nullptr) return py::none();
        return py::cast(std::make_shared<profile>(*r.run.calibration()));
      },
      py::arg("run"), "The run's profile, or None.");
}

}  // namespace gpuplan::python
