//===- LayerNormAvx2.cpp --------------------------------------------------===//
#include "compiler/codegen/x86/LayerNormAvx2.h"

#include "compiler/codegen/x86/VectorMathAvx2.h"

#include <cmath>

namespace octet::x86 {

namespace {
/// The 4 doubles' sum.
OCTET_TARGET_AVX2 double reduceSum(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
} // namespace

OCTET_TARGET_AVX2 void layerNormRowAvx2(const float *x, const float *residual, int64_t n,
                                        float epsilon, const float *gamma, const float *beta,
                                        const float *qGamma, const float *qBeta, float *row,
                                        float *y, float *own) {
  const int64_t full = n / 8 * 8;
  // The row and its sum in double.
  __m256d sum0 = _mm256_setzero_pd(), sum1 = _mm256_setzero_pd();
  double sum = 0;
  for (int64_t j = 0; j < full; j += 8) {
    __m256 v = _mm256_loadu_ps(x + j);
    if (residual)
      v = _mm256_add_ps(v, _mm256_loadu_ps(residual + j));
    _mm256_storeu_ps(row + j, v);
    sum0 = _mm256_add_pd(sum0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    sum1 = _mm256_add_pd(sum1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  for (int64_t j = full; j < n; ++j) {
    row[j] = residual ? x[j] + residual[j] : x[j];
    sum += row[j];
  }
  const double mean = (reduceSum(_mm256_add_pd(sum0, sum1)) + sum) / double(n);
  // The variance, from the deviations in double.
  const __m256d meanD = _mm256_set1_pd(mean);
  __m256d var0 = _mm256_setzero_pd(), var1 = _mm256_setzero_pd();
  double var = 0;
  for (int64_t j = 0; j < full; j += 8) {
    const __m256 v = _mm256_loadu_ps(row + j);
    const __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), meanD);
    const __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), meanD);
    var0 = _mm256_add_pd(var0, _mm256_mul_pd(d0, d0));
    var1 = _mm256_add_pd(var1, _mm256_mul_pd(d1, d1));
  }
  for (int64_t j = full; j < n; ++j)
    var += (row[j] - mean) * (row[j] - mean);
  var = (reduceSum(_mm256_add_pd(var0, var1)) + var) / double(n);
  const float rstd = float(1.0 / std::sqrt(var + epsilon)), meanF = float(mean);
  // y = (row - mean) rstd gamma + beta (and own with qGamma, qBeta).
  const __m256 rstdV = _mm256_set1_ps(rstd), meanV = _mm256_set1_ps(meanF);
  for (int64_t j = 0; j < full; j += 8) {
    const __m256 norm = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(row + j), meanV), rstdV);
    if (qGamma)
      _mm256_storeu_ps(own + j, _mm256_add_ps(_mm256_mul_ps(norm, _mm256_loadu_ps(qGamma + j)),
                                              _mm256_loadu_ps(qBeta + j)));
    _mm256_storeu_ps(y + j, _mm256_add_ps(_mm256_mul_ps(norm, _mm256_loadu_ps(gamma + j)),
                                          _mm256_loadu_ps(beta + j)));
  }
  for (int64_t j = full; j < n; ++j) {
    const float norm = (row[j] - meanF) * rstd;
    if (qGamma)
      own[j] = norm * qGamma[j] + qBeta[j];
    y[j] = norm * gamma[j] + beta[j];
  }
}

} // namespace octet::x86
