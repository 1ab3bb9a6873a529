// gpuplan.hpp — umbrella header for the header-only core: models, GPUs,
// scenarios and runs, the memory and time estimators, and the planner.
// Calibration (fitting the time model to measurements, Eigen) is not included:
// include "gpuplan/calibrate.hpp" where it is used.
#pragma once
#include "gpuplan/dtype.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/flops.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/plan.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/validate.hpp"
#include "gpuplan/version.hpp"
#include "gpuplan/warnings.hpp"
