// register_errors.cpp — ConfigError (a ValueError subclass) and JSON <-> Python.
#include <cmath>
#include <exception>

#include "common.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/warnings.hpp"

namespace gpuplan::python {

namespace {
std::string type_name(py::handle o) { return py::str(py::type::handle_of(o).attr("__name__")); }
}  // namespace

nlohmann::json to_json(py::handle o, const std::string& path) {
  PyObject* p = o.ptr();
  if (o.is_none()) return nullptr;
  if (PyBool_Check(p)) return p == Py_True;
  if (PyLong_Check(p)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow == 0) return static_cast<std::int64_t>(v);
    // As nlohmann::json::parse does: above int64 -> uint64, above that -> double.
    if (overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(p);
      if (!PyErr_Occurred()) return static_cast<std::uint64_t>(u);
      PyErr_Clear();
    }
    const double d = PyLong_AsDouble(p);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      detail::fail(path, "integer out of range (got " + std::string(py::str(o)).substr(0, 40) + ")");
    }
    return d;
  }
  if (PyFloat_Check(p)) return PyFloat_AS_DOUBLE(p);
  if (PyUnicode_Check(p)) return o.cast<std::string>();
  if (PyDict_Check(p)) {
    nlohmann::json j = nlohmann::json::object();
    for (auto item : py::reinterpret_borrow<py::dict>(o)) {
      if (!PyUnicode_Check(item.first.ptr()))
        detail::fail(path, "keys must be strings (got " + std::string(py::repr(item.first)) + ")");
      const auto key = item.first.cast<std::string>();
      j[key] = to_json(item.second, path + "." + key);
    }
    return j;
  }
  if (PyList_Check(p) || PyTuple_Check(p)) {
    nlohmann::json j = nlohmann::json::array();
    std::size_t i = 0;
    for (auto v : o) j.push_back(to_json(v, path + "[" + std::to_string(i++) + "]"));
    return j;
  }
  // numpy scalars and arrays, pathlib paths.
  const std::string tname = type_name(o);
  if (tname == "bool_") return PyObject_IsTrue(p) == 1;
  if (py::hasattr(o, "__fspath__")) return to_json(o.attr("__fspath__")(), path);
  if (PyIndex_Check(p)) return to_json(py::reinterpret_steal<py::object>(PyNumber_Index(p)), path);
  if (py::hasattr(o, "tolist")) return to_json(o.attr("tolist")(), path);
  if (py::hasattr(o, "__float__")) return to_json(py::reinterpret_steal<py::object>(PyNumber_Float(p)), path);
  detail::fail(path, "unsupported value of type " + tname + " (got " + std::string(py::repr(o)) + ")");
}

py::object from_json(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(j.get<double>());
    case nlohmann::json::value_t::string: return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list l;
      for (const auto& v : j) l.append(from_json(v));
      return l;
    }
    case nlohmann::json::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = from_json(v);
      return d;
    }
    default: return py::none();
  }
}

void register_errors(py::module_& m) {
  static py::exception<config_error> exc(m, "ConfigError", PyExc_ValueError);
  exc.attr("__doc__") =
      "Invalid input: the message names the field path, the rule and the offending value,\n"
      "identical to the C++ gpuplan::config_error and the CLI's one-line error.\n"
      "`path` holds the field path alone (e.g. 'scenario.parallel.tp').";
  exc.attr("path") = py::str("");
  py::register_exception_translator([](std::exception_ptr p) {
    auto raise = [](const std::string& what, const std::string& path) {
      py::object inst = py::reinterpret_borrow<py::object>(exc)(what);
      inst.attr("path") = path;
      PyErr_SetObject(exc.ptr(), inst.ptr());
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const config_error& e) {
      raise(e.what(), e.path());
    } catch (const nlohmann::json::exception& e) {
      // A reader should wrap these; if one escapes it is still bad input, not a crash.
      raise(std::string("json: ") + e.what(), "json");
    }
  });
  m.def("warning_messages", [](unsigned w) { return warning_messages(w); }, py::arg("bits"),
        "Messages of the warning bits set in `bits` (gpuplan/warnings.hpp), in bit order.");
}

}  // namespace gpuplan::python
