// calibrate.hpp — fit the models' free constants to a user's own measurements by
// least squares (Eigen). Time: robust (Huber) Levenberg–Marquardt on log step times over
// matmul_scale, bandwidth_fraction, comm_fraction (efficiency_params); everything
// else keeps the value of `start`. Memory: the allocator's reserved/allocated
// factor, the CUDA context, and the scales of model states and of working memory
// (memory_params). calibrate_profile() fits both into a profile (profile.hpp) with
// the bands of the fit.
//
// The umbrella of the calibration headers:
//   graph/calibrate_time.hpp     measurement, calibrate (time), the bounds of the constants
//   graph/calibrate_memory.hpp   calibrate_memory, check_measurement
//   graph/calibrate_profile.hpp  calibrate_profile: both fits, their bands and consistency checks
#pragma once

#include "gpuplan/graph/calibrate_memory.hpp"
#include "gpuplan/graph/calibrate_profile.hpp"
#include "gpuplan/graph/calibrate_time.hpp"
