// gpuplan.hpp — umbrella header for the header-only core.
#pragma once
#include "gpuplan/dtype.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/version.hpp"
#include "gpuplan/warnings.hpp"
