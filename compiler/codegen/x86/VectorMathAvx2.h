//===- VectorMathAvx2.h - VectorMath's functions on 8 AVX2 lanes -*- C++ -*-===//
//
// The compiled twins of VectorMath (VectorMath.h) for hosts without AVX-512:
// the same algorithms and coefficients (VectorMathConstants.h), operation for
// operation, as inline AVX2 + FMA intrinsics on __m256. The block interpreter
// (runtime/EpilogueSplit.cpp) and the attention's compiled twins
// (AttentionKernels.h) call them where the host has AVX2 and FMA; elsewhere
// they keep their scalar loops.
//
// Where AVX-512 has an instruction AVX2 lacks:
//  - vscalefps (p 2^floor(t)) is p 2^n1 2^n2 with n = floor(t) clamped to
//    [-252, 254] and split in two halves that are normal powers of two: the
//    first product is exact, the second rounds once, so the result is
//    vscalefps' for every t (denormals included; NaN t gives NaN);
//  - opmask selects are vblendvps, vpternlogd bit selects and/andnot/or;
//  - rsqrt is 1 / sqrt(x) (two roundings, <= 1 ulp) where the zmm code starts
//    from vrsqrt14ps.
// So exp, erf, tanh, sigmoid and the GELUs give the zmm code's results bit for
// bit, and the same error bounds hold (VectorMath.h; VectorMathTest's Avx2
// cases). That needs -ffp-contract=off where the inline functions are
// compiled (GCC would fuse a multiply into a following add): OctetX86Kernels
// is built so; code elsewhere calls unaryBlock or a kernel built there.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_VECTORMATHAVX2_H
#define OCTET_COMPILER_CODEGEN_X86_VECTORMATHAVX2_H

#include "compiler/codegen/x86/VectorMath.h" // UnaryOp
#include "compiler/codegen/x86/VectorMathConstants.h"

#include <immintrin.h>

#include <cstdint>

#define OCTET_TARGET_AVX2 __attribute__((target("avx2,fma")))

namespace octet::x86::avx2 {

/// AVX2 and FMA on this host (what the functions below need).
bool hostSupported();

/// r[i] = op(a[i]) for i < count, op computed as the inline functions below
/// compute it; `r` may be `a`. Needs hostSupported().
void unaryBlock(UnaryOp op, const float *a, float *r, int64_t count);

OCTET_TARGET_AVX2 inline __m256 splat(float value) { return _mm256_set1_ps(value); }
OCTET_TARGET_AVX2 inline __m256 splatBits(uint32_t bits) {
  return _mm256_castsi256_ps(_mm256_set1_epi32(int32_t(bits)));
}

/// acc = c[n-1]; acc = acc * x + c[i] for i = n-2 .. 0, each c[i] times `scale`.
OCTET_TARGET_AVX2 inline __m256 horner(__m256 x, const float *c, int n, float scale = 1.0f) {
  __m256 acc = splat(c[n - 1] * scale);
  for (int i = n - 2; i >= 0; --i)
    acc = _mm256_fmadd_ps(acc, x, splat(c[i] * scale));
  return acc;
}

/// |magnitude| with the sign bit of `sign`.
OCTET_TARGET_AVX2 inline __m256 copySign(__m256 magnitude, __m256 sign) {
  const __m256 signBit = splatBits(vector_math::kSignBit);
  return _mm256_or_ps(_mm256_andnot_ps(signBit, magnitude), _mm256_and_ps(signBit, sign));
}

/// vscalefps: p 2^floor(t), for a finite p in [1, 2) (an exp polynomial's).
OCTET_TARGET_AVX2 inline __m256 scaleByFloorPow2(__m256 p, __m256 t) {
  // max/min return their second operand for a NaN first: a NaN t clamps to
  // -252 here and is put back at the end.
  const __m256 n = _mm256_min_ps(_mm256_max_ps(_mm256_floor_ps(t), splat(-252.0f)), splat(254.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  const __m256 r = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  return _mm256_blendv_ps(r, t, _mm256_cmp_ps(t, t, _CMP_UNORD_Q));
}

/// VectorMath::exp: Cody-Waite floor reduction, degree-6 polynomial.
OCTET_TARGET_AVX2 inline __m256 exp(__m256 x) {
  using namespace vector_math;
  const __m256 t = _mm256_mul_ps(x, splat(kLog2e));
  const __m256 n = _mm256_floor_ps(t);
  __m256 r = _mm256_fnmadd_ps(n, splat(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, splat(kLn2Lo), r);
  r = _mm256_min_ps(_mm256_max_ps(r, splat(-1.0f)), splat(1.0f)); // a NaN r becomes -1
  __m256 p = horner(r, kExpQ, size(kExpQ));
  p = _mm256_fmadd_ps(p, r, splat(1.0f));
  return scaleByFloorPow2(p, t);
}

/// VectorMath::erf: x + x P(x^2) below |x| = 1, else 1 - exp(Q(min(|x|, 4))).
OCTET_TARGET_AVX2 inline __m256 erf(__m256 x) {
  using namespace vector_math;
  const __m256 small =
      _mm256_fmadd_ps(horner(_mm256_mul_ps(x, x), kErfSmall, size(kErfSmall)), x, x);
  __m256 u = _mm256_and_ps(x, splatBits(kAbsMask));
  const __m256 useSmall = _mm256_cmp_ps(u, splat(kErfLargeFrom), _CMP_NGE_UQ);
  u = _mm256_min_ps(u, splat(kErfClamp));
  __m256 large = exp(horner(u, kErfcLogQ, size(kErfcLogQ))); // erfc(|x|)
  large = copySign(_mm256_sub_ps(large, splat(1.0f)), x);    // its magnitude is erf(|x|)
  return _mm256_blendv_ps(large, small, useSmall);
}

/// VectorMath::tanh: x + x s P(s) below |x| = 0.625, else (1 - e) / (1 + e), e = exp(-2|x|).
OCTET_TARGET_AVX2 inline __m256 tanh(__m256 x) {
  using namespace vector_math;
  __m256 u = _mm256_mul_ps(x, x);
  __m256 small = _mm256_mul_ps(horner(u, kTanhSmall, size(kTanhSmall)), u);
  small = _mm256_fmadd_ps(small, x, x);
  u = _mm256_and_ps(x, splatBits(kAbsMask));
  const __m256 useSmall = _mm256_cmp_ps(u, splat(kTanhLargeFrom), _CMP_NGE_UQ);
  const __m256 e = exp(_mm256_mul_ps(u, splat(-2.0f)));
  __m256 large = _mm256_div_ps(_mm256_sub_ps(e, splat(1.0f)), _mm256_add_ps(e, splat(1.0f)));
  large = copySign(large, x);
  return _mm256_blendv_ps(large, small, useSmall);
}

/// VectorMath::sigmoid: e = exp(-|x|), 1 / (1 + e) or e / (1 + e).
OCTET_TARGET_AVX2 inline __m256 sigmoid(__m256 x) {
  const __m256 e = exp(_mm256_or_ps(x, splatBits(vector_math::kSignBit)));
  const __m256 den = _mm256_add_ps(e, splat(1.0f));
  const __m256 num = _mm256_blendv_ps(splat(1.0f), e, _mm256_cmp_ps(x, splat(0.0f), _CMP_LT_OQ));
  return _mm256_div_ps(num, den);
}

OCTET_TARGET_AVX2 inline __m256 rsqrt(__m256 x) {
  return _mm256_div_ps(splat(1.0f), _mm256_sqrt_ps(x));
}

/// 0.5 x (1 + erf(x / sqrt 2)).
OCTET_TARGET_AVX2 inline __m256 geluErf(__m256 x) {
  const __m256 e = erf(_mm256_mul_ps(x, splat(0.70710678118654752f)));
  const __m256 half = _mm256_mul_ps(x, splat(0.5f));
  return _mm256_fmadd_ps(e, half, half);
}

/// x sigmoid(2u), 2u = x (k0 + k1 x^2).
OCTET_TARGET_AVX2 inline __m256 geluTanh(__m256 x) {
  constexpr float k0 = 1.5957691216057308f; // 2 sqrt(2/pi)
  constexpr float k1 = k0 * 0.044715f;
  __m256 u = _mm256_mul_ps(_mm256_mul_ps(x, x), splat(k1));
  u = _mm256_mul_ps(_mm256_add_ps(u, splat(k0)), x);
  return _mm256_mul_ps(sigmoid(u), x);
}

/// VectorMath::geluFast: x/2 + |x| min(P(min(|x|, 3.95)), 1/2).
OCTET_TARGET_AVX2 inline __m256 geluFast(__m256 x, const float *oddPhi, bool timesTwo) {
  using namespace vector_math;
  const float factor = timesTwo ? 2.0f : 1.0f;
  const __m256 a = _mm256_and_ps(x, splatBits(kAbsMask));
  __m256 p = horner(_mm256_min_ps(a, splat(kGeluFastClamp)), oddPhi, size(kGeluErfFastPhi), factor);
  p = _mm256_min_ps(p, splat(0.5f * factor));
  return _mm256_fmadd_ps(p, a, timesTwo ? x : _mm256_mul_ps(x, splat(0.5f)));
}

OCTET_TARGET_AVX2 inline __m256 unary(UnaryOp op, __m256 x) {
  using namespace vector_math;
  switch (op) {
  case UnaryOp::Neg:
    return _mm256_xor_ps(x, splatBits(kSignBit));
  case UnaryOp::Abs:
    return _mm256_and_ps(x, splatBits(kAbsMask));
  case UnaryOp::Exp:
    return exp(x);
  case UnaryOp::Erf:
    return erf(x);
  case UnaryOp::Tanh:
    return tanh(x);
  case UnaryOp::Sigmoid:
    return sigmoid(x);
  case UnaryOp::Rsqrt:
    return rsqrt(x);
  case UnaryOp::Reciprocal:
    return _mm256_div_ps(splat(1.0f), x);
  case UnaryOp::GeluErf:
    return geluErf(x);
  case UnaryOp::GeluTanh:
    return geluTanh(x);
  case UnaryOp::GeluErfFast:
    return geluFast(x, kGeluErfFastPhi, false);
  case UnaryOp::GeluTanhFast:
    return geluFast(x, kGeluTanhFastPhi, false);
  }
  return x;
}

} // namespace octet::x86::avx2

#endif
