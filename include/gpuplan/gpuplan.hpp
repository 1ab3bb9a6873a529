// gpuplan.hpp — umbrella header for the header-only core: models, GPUs,
// scenarios and runs, the memory and time estimators, and the planner.
// Calibration (fitting the time model to measurements, Eigen) is not included:
// include "gpuplan/calibrate.hpp" where it is used.
#pragma once
#include "gpuplan/core.hpp"
#include "gpuplan/plan.hpp"
