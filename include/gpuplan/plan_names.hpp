// plan_names.hpp — the name tables of the planner's options (plan.hpp): how
// `gpuplan search --objective`, `gpuplan recommend --rank`, their JSON and Python
// (gp.search(objective=), gp.recommend(rank=)) spell them.
#pragma once

#include <array>
#include <span>

#include "gpuplan/names.hpp"
#include "gpuplan/plan.hpp"

namespace gpuplan {

inline constexpr std::array<enum_name<search_objective>, 2> kSearchObjectiveNames{{
    {search_objective::time, "time"}, {search_objective::cost, "cost"}}};
inline constexpr std::array<enum_name<recommend_rank>, 2> kRecommendRankNames{{
    {recommend_rank::cost, "cost"}, {recommend_rank::time, "time"}}};

template <> inline constexpr std::span<const enum_name<search_objective>> name_table<search_objective>{kSearchObjectiveNames};
template <> inline constexpr std::span<const enum_name<recommend_rank>> name_table<recommend_rank>{kRecommendRankNames};

static_assert(names_are_unique(kSearchObjectiveNames) && names_cover(kSearchObjectiveNames, search_objective::cost));
static_assert(names_are_unique(kRecommendRankNames) && names_cover(kRecommendRankNames, recommend_rank::time));

}  // namespace gpuplan
