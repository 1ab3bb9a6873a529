// core.hpp is the estimating core alone: it compiles against gpuplan::gpuplan without Eigen
// (not on this target's include path) and brings in neither the planner nor <thread>.
#include <gpuplan/core.hpp>

#if defined(_GLIBCXX_THREAD) || defined(_LIBCPP_THREAD)
#error "gpuplan/core.hpp includes <thread>"
#endif
#if defined(EIGEN_CORE_H) || defined(EIGEN_WORLD_VERSION)
#error "gpuplan/core.hpp includes Eigen"
#endif

int gpuplan_core_lean_parameters() {
  return static_cast<int>(gpuplan::count_parameters(gpuplan::architecture{}).total);
}
