// plan.hpp — the planner: the questions users ask, answered from the memory and
// time models. One header per question; this one includes them all.
//   plan/fit.hpp        will it fit? headroom, binding term, max micro-batch / seq, min GPUs per ZeRO stage
//   plan/max_context.hpp the largest trainable context of a run, and per GPU count with context parallelism
//   plan/margin.hpp     when a run is a plan: the memory quantile (P50/P90/P99) plus a headroom fits
//   plan/suggest.hpp    what would make it fit: own card first, then more cards, then other GPUs by price
//   plan/layout.hpp     a parallel layout and how it is written into a scenario
//   plan/search.hpp     the fastest parallel layout on N GPUs, exhaustive, with exact pruning
//   plan/recommend.hpp  which GPU and how many for a workload, a deadline and a budget
//   plan/system.hpp     the system around a run: CPU, host RAM, power, CUDA floor, NVLink, ECC
// Every function takes a validated run (run.hpp), with a convenience overload
// taking (architecture, scenario); see docs/planner.md for the rules, orders and
// tie-breaks, and docs/performance.md for the measured speed.
#pragma once

#include "gpuplan/plan/fit.hpp"
#include "gpuplan/plan/layout.hpp"
#include "gpuplan/plan/margin.hpp"
#include "gpuplan/plan/max_context.hpp"
#include "gpuplan/plan/recommend.hpp"
#include "gpuplan/plan/search.hpp"
#include "gpuplan/plan/serve_recommend.hpp"
#include "gpuplan/plan/suggest.hpp"
#include "gpuplan/plan/system.hpp"
