// register_errors.cpp — ConfigError (a ValueError subclass), its subclasses by
// error kind, and JSON <-> Python.
#include <array>
#include <cmath>
#include <exception>
#include <utility>

#include "common.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/report.hpp"
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
  // ConfigError (a ValueError) for every config_error; one subclass per error_kind
  // (error.hpp) so callers can catch a kind; `path` and `kind` on every instance.
  static py::exception<config_error> exc(m, "ConfigError", PyExc_ValueError);
  exc.attr("__doc__") =
      "Invalid input: the message names the field path, the rule and the offending value,\n"
      "identical to the C++ gpuplan::config_error and the CLI's one-line error.\n"
      "`path` holds the field path alone (e.g. 'scenario.parallel.tp'); `kind` the error\n"
      "kind ('invalid_input', 'unknown_name', 'parse_error', 'io_error', 'does_not_fit').";
  exc.attr("path") = py::str("");
  exc.attr("kind") = py::str(to_string(error_kind::invalid_input));
  // The table below owns one reference to each class, never released: nothing is
  // freed after interpreter shutdown.
  auto subclass = [&m](const char* name, py::handle bases, error_kind kind, const char* doc) -> PyObject* {
    const std::string qualified = "gpuplan._core." + std::string(name);
    PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
    if (type == nullptr) throw py::error_already_set();
    py::object cls = py::reinterpret_steal<py::object>(type);
    cls.attr("kind") = py::str(to_string(kind));
    m.attr(name) = cls;
    return cls.release().ptr();
  };
  static const std::array<std::pair<error_kind, PyObject*>, 4> kinds{{
      {error_kind::invalid_input, subclass("InvalidInputError", exc, error_kind::invalid_input,
                                           "A value out of range or of the wrong type, or an impossible layout.")},
      {error_kind::unknown_name, subclass("UnknownNameError", exc, error_kind::unknown_name,
                                          "A model, GPU, enum value or key that does not exist.")},
      {error_kind::parse_error, subclass("ParseError", exc, error_kind::parse_error,
                                         "Malformed JSON, config.json or safetensors header.")},
      {error_kind::io_error, subclass("FileError", py::make_tuple(exc, py::handle(PyExc_OSError)), error_kind::io_error,
                                      "A file that cannot be opened or read (also an OSError).")},
  }};
  py::register_exception_translator([](std::exception_ptr p) {
    auto raise = [](const std::string& what, const std::string& path, error_kind kind) {
      py::handle cls = exc;  // does_not_fit: the base class
      for (const auto& [k, c] : kinds)
        if (k == kind) cls = c;
      // As the CLI prints them: names quoted from the user's files lose their control
      // characters, so a message shown in a terminal or notebook cannot move the cursor.
      py::object inst = py::reinterpret_borrow<py::object>(cls)(io::printable(what));
      inst.attr("path") = io::printable(path);
      inst.attr("kind") = std::string(to_string(kind));
      PyErr_SetObject(cls.ptr(), inst.ptr());
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const config_error& e) {
      raise(e.what(), e.path(), e.kind());
    } catch (const nlohmann::json::exception& e) {
      // A reader should wrap these; if one escapes it is still bad input, not a crash.
      raise(std::string("json: ") + e.what(), "json", error_kind::parse_error);
    }
  });
  m.def("warning_messages", [](unsigned w) { return warning_messages(w); }, py::arg("bits"),
        "Messages of the warning bits set in `bits` (gpuplan/warnings.hpp), in bit order.");
}

}  // namespace gpuplan::python
