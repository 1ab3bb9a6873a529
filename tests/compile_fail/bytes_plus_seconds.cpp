// Must not compile: adding a byte count to a duration is a dimension error.
#include "gpuplan/units.hpp"

int main() {
  const gpuplan::Bytes b = gpuplan::bytes(1);
  const gpuplan::Seconds s = gpuplan::seconds(1);
#ifndef GPUPLAN_COMPILE_FAIL_CONTROL
  auto nonsense = b + s;
  (void)nonsense;
#endif
  return static_cast<int>(gpuplan::in_bytes(b) + gpuplan::in_seconds(s)) - 2;
}
