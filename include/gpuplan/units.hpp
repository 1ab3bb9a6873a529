// units.hpp — physical quantities used by gpuplan: Bytes, FlopCount, Seconds,
// FlopRate, ByteRate. Boost.Units makes `Bytes + Seconds` a compile error.
// The only way into or out of a quantity is a named unit (bytes(x), in_gib(q)).
#pragma once

#include <boost/units/base_dimension.hpp>
#include <boost/units/base_unit.hpp>
#include <boost/units/base_units/information/byte.hpp>
#include <boost/units/base_units/si/second.hpp>
#include <boost/units/derived_dimension.hpp>
#include <boost/units/make_system.hpp>
#include <boost/units/physical_dimensions/information.hpp>
#include <boost/units/physical_dimensions/time.hpp>
#include <boost/units/quantity.hpp>
#include <boost/units/unit.hpp>

namespace gpuplan {
namespace detail {
namespace bu = boost::units;
// FLOP (a floating-point operation) is its own base dimension so that a FLOP
// count never mixes with bytes or seconds.
struct flop_base_dimension : bu::base_dimension<flop_base_dimension, 731> {};
using flop_dimension = flop_base_dimension::dimension_type;
struct flop_base_unit : bu::base_unit<flop_base_unit, flop_dimension, 731> {
  static const char* name() { return "FLOP"; }
  static const char* symbol() { return "FLOP"; }
};
using unit_system = bu::make_system<bu::information::byte_base_unit,
                                    bu::si::second_base_unit, flop_base_unit>::type;
using byte_unit = bu::unit<bu::information_dimension, unit_system>;
using second_unit = bu::unit<bu::time_dimension, unit_system>;
using flop_unit = bu::unit<flop_dimension, unit_system>;
using flop_rate_unit = bu::divide_typeof_helper<flop_unit, second_unit>::type;
using byte_rate_unit = bu::divide_typeof_helper<byte_unit, second_unit>::type;
}  // namespace detail

using Bytes = boost::units::quantity<detail::byte_unit, double>;
using Seconds = boost::units::quantity<detail::second_unit, double>;
using FlopCount = boost::units::quantity<detail::flop_unit, double>;
using FlopRate = boost::units::quantity<detail::flop_rate_unit, double>;
using ByteRate = boost::units::quantity<detail::byte_rate_unit, double>;

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;

// Construction: name the unit.
constexpr Bytes bytes(double v) { return Bytes::from_value(v); }
constexpr Bytes gib(double v) { return Bytes::from_value(v * kGiB); }
constexpr Bytes mib(double v) { return Bytes::from_value(v * kMiB); }
constexpr Bytes gb(double v) { return Bytes::from_value(v * kGB); }
constexpr Seconds seconds(double v) { return Seconds::from_value(v); }
constexpr FlopCount flops(double v) { return FlopCount::from_value(v); }
constexpr FlopRate flop_per_s(double v) { return FlopRate::from_value(v); }
constexpr FlopRate tflop_per_s(double v) { return FlopRate::from_value(v * 1e12); }
constexpr ByteRate byte_per_s(double v) { return ByteRate::from_value(v); }
constexpr ByteRate gb_per_s(double v) { return ByteRate::from_value(v * 1e9); }

// Extraction: name the unit.
constexpr double in_bytes(Bytes q) { return q.value(); }
constexpr double in_gib(Bytes q) { return q.value() / kGiB; }
constexpr double in_mib(Bytes q) { return q.value() / kMiB; }
constexpr double in_gb(Bytes q) { return q.value() / kGB; }
constexpr double in_seconds(Seconds q) { return q.value(); }
constexpr double in_hours(Seconds q) { return q.value() / 3600.0; }
constexpr double in_flops(FlopCount q) { return q.value(); }
constexpr double in_flop_per_s(FlopRate q) { return q.value(); }
constexpr double in_tflop_per_s(FlopRate q) { return q.value() / 1e12; }
constexpr double in_byte_per_s(ByteRate q) { return q.value(); }
constexpr double in_gb_per_s(ByteRate q) { return q.value() / 1e9; }

}  // namespace gpuplan
