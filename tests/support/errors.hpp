// support/errors.hpp — the kind of the config_error a call throws (test helper).
#pragma once

#include <doctest/doctest.h>

#include "gpuplan/error.hpp"

namespace gpuplan::test {

// The kind of the config_error `f` throws; fails the test when it throws none.
template <class F>
error_kind kind_thrown(F f) {
  try {
    f();
  } catch (const config_error& e) {
    return e.kind();
  }
  FAIL("no config_error");
  return error_kind::invalid_input;
}

}  // namespace gpuplan::test
