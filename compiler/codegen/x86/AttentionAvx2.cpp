//===- AttentionAvx2.cpp --------------------------------------------------===//
#include "compiler/codegen/x86/AttentionAvx2.h"

#include "compiler/codegen/x86/VectorMathAvx2.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <stdexcept>

namespace octet::x86 {
using namespace avx2;

namespace {

constexpr int kStripColumns = 16, kStripRows = 6;

/// Lanes [0, count) of a vector of 8 (count clamped to 0..8).
OCTET_TARGET_AVX2 __m256i lanesBelow(int64_t count) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(std::clamp<int64_t>(count, 0, 8))), index);
}

/// Rows x 16 columns of C from A (rows x k) and B (k x 16 at b): `width` < 16
/// reads and writes only the first `width` columns.
template <int Rows, bool Partial>
OCTET_TARGET_AVX2 void strip(const AttentionGemmArgs &args, const float *a, const float *b,
                             float *c, int64_t width) {
  // Locals, not args' fields: stores through C could alias them, which keeps
  // GCC from holding the accumulators in registers.
  const int64_t k = args.k, lda = args.lda, ldb = args.ldb, ldc = args.ldc;
  __m256 acc[Rows][2];
#pragma GCC unroll 8
  for (int r = 0; r < Rows; ++r)
    acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const __m256i lo = lanesBelow(width), hi = lanesBelow(width - 8);
  for (int64_t kk = 0; kk < k; ++kk, b += ldb) {
    const __m256 b0 = Partial ? _mm256_maskload_ps(b, lo) : _mm256_loadu_ps(b);
    const __m256 b1 = Partial ? _mm256_maskload_ps(b + 8, hi) : _mm256_loadu_ps(b + 8);
#pragma GCC unroll 8
    for (int r = 0; r < Rows; ++r) {
      const __m256 ak = _mm256_broadcast_ss(a + r * lda + kk);
      acc[r][0] = _mm256_fmadd_ps(ak, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ak, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < Rows; ++r, c += ldc) {
    if (Partial) {
      _mm256_maskstore_ps(c, lo, acc[r][0]);
      _mm256_maskstore_ps(c + 8, hi, acc[r][1]);
    } else {
      _mm256_storeu_ps(c, acc[r][0]);
      _mm256_storeu_ps(c + 8, acc[r][1]);
    }
  }
}

template <bool Partial>
void stripOfRows(const AttentionGemmArgs &args, int rows, const float *a, const float *b, float *c,
                 int64_t width) {
  switch (rows) {
  case 1:
    return strip<1, Partial>(args, a, b, c, width);
  case 2:
    return strip<2, Partial>(args, a, b, c, width);
  case 3:
    return strip<3, Partial>(args, a, b, c, width);
  case 4:
    return strip<4, Partial>(args, a, b, c, width);
  case 5:
    return strip<5, Partial>(args, a, b, c, width);
  default:
    return strip<6, Partial>(args, a, b, c, width);
  }
}

OCTET_TARGET_AVX2 __m256 load(const float *p, __m256i lanes, bool tail) {
  return tail ? _mm256_maskload_ps(p, lanes) : _mm256_loadu_ps(p);
}
OCTET_TARGET_AVX2 void store(float *p, __m256i lanes, bool tail, __m256 v) {
  tail ? _mm256_maskstore_ps(p, lanes, v) : _mm256_storeu_ps(p, v);
}

/// Horizontal max / sum of 8 lanes.
OCTET_TARGET_AVX2 float reduceMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
OCTET_TARGET_AVX2 float reduceSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

} // namespace

OCTET_TARGET_AVX2 void attentionGemmAvx2(const AttentionGemmArgs &args, int mr) {
  for (int64_t c0 = 0; c0 < args.columns; c0 += kStripColumns) {
    const int64_t width = std::min<int64_t>(kStripColumns, args.columns - c0);
    for (int r0 = 0; r0 < mr; r0 += kStripRows) {
      const int rows = std::min(kStripRows, mr - r0);
      const float *a = args.a + r0 * args.lda;
      float *c = args.c + r0 * args.ldc + c0;
      if (width == kStripColumns)
        stripOfRows<false>(args, rows, a, args.b + c0, c, width);
      else
        stripOfRows<true>(args, rows, a, args.b + c0, c, width);
    }
  }
}

// Each pass walks the row 8 floats at a time, the last n % 8 under `lanes`
// (no lambdas: they would not inherit the target attribute).
OCTET_TARGET_AVX2 void attentionSoftmaxAvx2(const AttentionSoftmaxArgs &args) {
  if (args.weights)
    throw std::invalid_argument("attentionSoftmaxAvx2: the weighted softmax (int8 attention) has "
                                "no AVX2 form");
  const __m256 scale = splat(args.scale);
  const __m256i all = _mm256_set1_epi32(-1);
  const int64_t n = args.n;
  for (int64_t r = 0; r < args.rows; ++r) {
    float *x = args.x + r * args.ldx;
    const float *mask = args.mask ? args.mask + r * args.ldMask : nullptr;
    // Pass 1: z = scale x + mask in place, and the row max (-inf past n).
    __m256 max = splat(-INFINITY);
    for (int64_t j = 0; j < n; j += 8) {
      const bool tail = j + 8 > n;
      const __m256i lanes = tail ? lanesBelow(n - j) : all;
      __m256 z = load(x + j, lanes, tail);
      z = mask ? _mm256_fmadd_ps(z, scale, load(mask + j, lanes, tail)) : _mm256_mul_ps(z, scale);
      store(x + j, lanes, tail, z);
      if (tail)
        z = _mm256_blendv_ps(splat(-INFINITY), z, _mm256_castsi256_ps(lanes));
      max = _mm256_max_ps(z, max); // a NaN z is passed over (its exp makes the sum NaN)
    }
    // An all -inf row: exp(-inf - (-FLT_MAX)) = 0 instead of NaN.
    const __m256 rowMax = splat(std::max(reduceMax(max), -FLT_MAX));
    // Pass 2: e = exp(z - max) in place, and its sum (0 past n).
    __m256 sum = _mm256_setzero_ps();
    for (int64_t j = 0; j < n; j += 8) {
      const bool tail = j + 8 > n;
      const __m256i lanes = tail ? lanesBelow(n - j) : all;
      __m256 e = exp(_mm256_sub_ps(load(x + j, lanes, tail), rowMax));
      if (tail)
        e = _mm256_and_ps(e, _mm256_castsi256_ps(lanes));
      sum = _mm256_add_ps(sum, e);
      store(x + j, lanes, tail, e);
    }
    const float total = reduceSum(sum);
    // Sum 0 (all -inf): zeros, not 0 · inf; a NaN sum gives NaN.
    const __m256 inverse = splat(total == 0 ? 0.0f : 1.0f / total);
    // Pass 3: normalize.
    for (int64_t j = 0; j < n; j += 8) {
      const bool tail = j + 8 > n;
      const __m256i lanes = tail ? lanesBelow(n - j) : all;
      store(x + j, lanes, tail, _mm256_mul_ps(load(x + j, lanes, tail), inverse));
    }
  }
}

} // namespace octet::x86
