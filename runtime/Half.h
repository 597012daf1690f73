//===- Half.h - IEEE binary16 storage with float arithmetic -----*- C++ -*-===//
//
// The runtime's f16 element. Arithmetic on it happens in float: a Half converts
// to float implicitly, and a float (or double) stored into one rounds to the
// nearest half, ties to even (what ONNX Runtime and numpy compute for float16
// element-wise ops). NaN stays NaN (quiet, sign and top payload bits kept),
// overflow gives infinity, tiny values become subnormals or signed zero.
//
// Plain C++ rather than _Float16: clang 14 rejects _Float16 on x86-64 and
// neither compiler counts it as std::is_floating_point in C++17; f16 tensors
// are rare (ONNX node tests, no encoder the runtime targets), so the portable
// scalar conversions are fast enough.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_HALF_H
#define OCTET_RUNTIME_HALF_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace octet::rt {

/// The binary16 bits nearest to `x` (ties to even). Rounding straight from double
/// matters for Cast from f64: going through float would round twice.
inline uint16_t halfBitsFromDouble(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint16_t sign = uint16_t((bits >> 48) & 0x8000);
  if (std::isnan(x)) // quiet, with the top payload bits
    return uint16_t(sign | 0x7e00 | ((bits >> 42) & 0x3ff));
  const double a = std::fabs(x);
  if (a >= 65520.0) // 65504 is the largest half; from halfway to the next binade up it is inf
    return uint16_t(sign | 0x7c00);
  if (a < 0x1p-14) // subnormal (or zero) in units of 2^-24; 1024 units is the smallest normal
    return uint16_t(sign | uint16_t(std::nearbyint(a * 0x1p24)));
  int exponent;
  std::frexp(a, &exponent); // a = f * 2^exponent, f in [0.5, 1)
  // 11 significant bits in [1024, 2048]; 2048 (a carry) moves into the exponent field.
  const uint32_t significand = uint32_t(std::nearbyint(std::ldexp(a, 11 - exponent)));
  return uint16_t(sign | ((uint32_t(exponent - 1 + 15) << 10) + (significand - 1024)));
}

/// The exact float value of binary16 bits.
inline float floatFromHalfBits(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f,
                 mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | (mantissa << 13); // inf, or NaN with its payload
  } else if (exponent == 0) {
    float value = std::ldexp(float(mantissa), -24); // zero or subnormal: exact in float
    return sign ? -value : value;
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// An f16 element: 2 bytes of storage, float arithmetic.
struct Half {
  uint16_t bits = 0;

  Half() = default;
  /// From any arithmetic value, rounded once to the nearest half (integers via double,
  /// exact up to 2^53, far past half's range).
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  Half(T value) : bits(halfBitsFromDouble(double(value))) {}

  static constexpr Half fromBits(uint16_t bits) { return Half(bits, RawBits{}); }
  operator float() const { return floatFromHalfBits(bits); }

private:
  struct RawBits {};
  constexpr Half(uint16_t raw, RawBits) : bits(raw) {}
};
static_assert(sizeof(Half) == 2, "an f16 element is two bytes");

/// Element types that compute as floating point (float, double and Half).
template <class T>
constexpr bool isFloatElement = std::is_floating_point_v<T> || std::is_same_v<T, Half>;

} // namespace octet::rt

/// numeric_limits for Half, so that generic code (infinity for reductions and IsInf,
/// lowest / max) works on it.
template <> struct std::numeric_limits<octet::rt::Half> {
  using Half = octet::rt::Half;
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = 11;
  static constexpr Half infinity() { return Half::fromBits(0x7c00); }
  static constexpr Half quiet_NaN() { return Half::fromBits(0x7e00); }
  static constexpr Half max() { return Half::fromBits(0x7bff); }
  static constexpr Half lowest() { return Half::fromBits(0xfbff); }
  static constexpr Half min() { return Half::fromBits(0x0400); }
  static constexpr Half denorm_min() { return Half::fromBits(0x0001); }
  static constexpr Half epsilon() { return Half::fromBits(0x1400); }
};

#endif
