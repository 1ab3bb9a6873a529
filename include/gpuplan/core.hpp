// core.hpp — the estimating core alone: models, GPUs, scenarios and runs, validation, and
// the memory and time estimators. No planner (no threads), no calibration (no Eigen), no
// I/O: what a tool that only asks "how much memory, how long" includes. gpuplan.hpp adds
// the planner.
#pragma once

#include "gpuplan/dtype.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/flops.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/validate.hpp"
#include "gpuplan/version.hpp"
#include "gpuplan/warnings.hpp"
