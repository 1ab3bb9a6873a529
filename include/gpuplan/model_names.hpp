// model_names.hpp — the name tables of the architecture's enums (model.hpp), as
// `gpuplan describe`, its JSON and Python's Architecture print them.
#pragma once

#include <array>
#include <span>

#include "gpuplan/model.hpp"
#include "gpuplan/names.hpp"

namespace gpuplan {

inline constexpr std::array<enum_name<model_kind>, 3> kModelKindNames{{
    {model_kind::decoder, "decoder"}, {model_kind::encoder, "encoder"}, {model_kind::encoder_decoder, "encoder-decoder"}}};
inline constexpr std::array<enum_name<norm_kind>, 2> kNormKindNames{{{norm_kind::layernorm, "layernorm"}, {norm_kind::rmsnorm, "rmsnorm"}}};
inline constexpr std::array<enum_name<position_kind>, 5> kPositionKindNames{{
    {position_kind::learned, "learned"}, {position_kind::rotary, "rotary"}, {position_kind::alibi, "alibi"},
    {position_kind::relative, "relative"}, {position_kind::none, "none"}}};
inline constexpr std::array<enum_name<mlp_kind>, 2> kMlpKindNames{{{mlp_kind::plain, "plain"}, {mlp_kind::gated, "gated"}}};
inline constexpr std::array<enum_name<activation_kind>, 3> kActivationKindNames{{
    {activation_kind::gelu, "gelu"}, {activation_kind::silu, "silu"}, {activation_kind::relu, "relu"}}};
inline constexpr std::array<enum_name<head_kind>, 4> kHeadKindNames{{
    {head_kind::lm, "lm"}, {head_kind::classifier, "classifier"}, {head_kind::pooler, "pooler"}, {head_kind::none, "none"}}};

template <> inline constexpr std::span<const enum_name<model_kind>> name_table<model_kind>{kModelKindNames};
template <> inline constexpr std::span<const enum_name<norm_kind>> name_table<norm_kind>{kNormKindNames};
template <> inline constexpr std::span<const enum_name<position_kind>> name_table<position_kind>{kPositionKindNames};
template <> inline constexpr std::span<const enum_name<mlp_kind>> name_table<mlp_kind>{kMlpKindNames};
template <> inline constexpr std::span<const enum_name<activation_kind>> name_table<activation_kind>{kActivationKindNames};
template <> inline constexpr std::span<const enum_name<head_kind>> name_table<head_kind>{kHeadKindNames};

static_assert(names_are_unique(kModelKindNames) && names_cover(kModelKindNames, model_kind::encoder_decoder));
static_assert(names_are_unique(kNormKindNames) && names_cover(kNormKindNames, norm_kind::rmsnorm));
static_assert(names_are_unique(kPositionKindNames) && names_cover(kPositionKindNames, position_kind::none));
static_assert(names_are_unique(kMlpKindNames) && names_cover(kMlpKindNames, mlp_kind::gated));
static_assert(names_are_unique(kActivationKindNames) && names_cover(kActivationKindNames, activation_kind::relu));
static_assert(names_are_unique(kHeadKindNames) && names_cover(kHeadKindNames, head_kind::none));

}  // namespace gpuplan
