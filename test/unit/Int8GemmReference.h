//===- Int8GemmReference.h - INT8 GEMM test problems and the output check -*- C++ -*-===//
//
// What the INT8 GEMM providers' tests share (the JIT driver's Int8GemmVnniTest and
// oneDNN's MatMulU8S8OneDnnTest): seeded operands with exact int64 sums, and the check of
// an output C, element by element, against the reference value and tolerance each test
// derives from its provider's rounding (the value before the output step; u8/s8 outputs
// are then requantized here with a tie allowed to round either way).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_TEST_UNIT_INT8GEMMREFERENCE_H
#define OCTET_TEST_UNIT_INT8GEMMREFERENCE_H

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace octet::test {

/// C is filled with this before a run: bytes past N must keep it.
constexpr uint8_t kInt8Canary = 0xa5;

/// A and B for (M, N, K), B in both layouts ([K, N] and [N, K]), the exact sums,
/// scales, bias and residual. A rows have 3 bytes of 0xff past K (lda = K + 3),
/// residual rows 2 NaN past N (ldr = N + 2). `wMax` bounds |B| (127: the full s8
/// range; 63: what oneDNN computes exactly without VNNI).
struct Int8GemmProblem {
  int64_t m, n, k, lda, ldr;
  std::vector<uint8_t> a;
  std::vector<int8_t> bKN, bNK;
  std::vector<int64_t> dot;    ///< [m][n] sum_k A * B
  std::vector<int64_t> colsum; ///< [n] sum_k B
  std::vector<float> wScale, bias, residual;
  float xScale;

  Int8GemmProblem(int64_t m, int64_t n, int64_t k, unsigned seed = 1, int wMax = 127)
      : m(m), n(n), k(k), lda(k + 3), ldr(n + 2), a(m * lda, 0xff), bKN(k * n), bNK(k * n),
        dot(m * n, 0), colsum(n, 0), wScale(n), bias(n),
        residual(m * ldr, std::numeric_limits<float>::quiet_NaN()) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> u8(0, 255), s8(-wMax - 1, wMax);
    std::uniform_real_distribution<float> unit(-1, 1), half(0.5f, 1.5f);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk)
        a[i * lda + kk] = uint8_t(u8(gen));
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j)
        bKN[kk * n + j] = bNK[j * k + kk] = int8_t(s8(gen));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk)
        colsum[j] += bKN[kk * n + j];
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk) {
        const int64_t av = a[i * lda + kk];
        for (int64_t j = 0; j < n; ++j)
          dot[i * n + j] += av * bKN[kk * n + j];
      }
    // Scaled sums of order 1: the u8/s8 outputs cover their range and saturate.
    xScale = 1.0f / (64.0f * 64.0f * std::sqrt(float(k)));
    for (int64_t j = 0; j < n; ++j)
      wScale[j] = half(gen), bias[j] = unit(gen);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        residual[i * ldr + j] = unit(gen);
  }

  /// The exact s32 sum at (i, j): sum_k (A[i, k] - a_zp) * B[k, j].
  int64_t s32(int64_t i, int64_t j, int32_t aZeroPoint) const {
    return dot[i * n + j] - int64_t(aZeroPoint) * colsum[j];
  }
};

/// One element's reference before the output step.
struct Int8Reference {
  double value = 0, tolerance = 0;
};

/// scale * s32 (+ bias[j]) (+ residual[i, j]), tolerance `relError` times the
/// sum of their magnitudes.
inline Int8Reference int8Linear(const Int8GemmProblem &p, int64_t i, int64_t j, double scale,
                                int64_t s32, bool bias, bool residual, double relError) {
  const double scaled = scale * double(s32);
  double v = scaled, mag = std::fabs(scaled);
  if (bias)
    v += p.bias[j], mag += std::fabs(p.bias[j]);
  if (residual)
    v += p.residual[i * p.ldr + j], mag += std::fabs(p.residual[i * p.ldr + j]);
  return {v, relError * mag};
}

enum class Int8Output { F32, U8, S8 };

/// How to read C and what it must hold.
struct Int8OutputCheck {
  Int8Output output = Int8Output::F32;
  float outScale = 1.0f;    ///< u8/s8
  int32_t outZeroPoint = 0; ///< u8/s8
  int32_t aZeroPoint = 0;
  /// C must be float(s32) bit for bit (unit scales, no epilogue).
  bool exactSums = false;
  int64_t ldc = 0;   ///< elements
  int64_t guard = 0; ///< elements after the last row that must keep the canary
  std::string what;  ///< the case, for failure messages
};

/// Checks the first `rows` rows of C (filled with kInt8Canary before the run)
/// against `reference`; `onF32` sees each f32 element with its reference (a
/// test's own statistics). Reports at most 5 failing elements.
inline void
checkInt8Output(const Int8GemmProblem &p, int64_t rows, const std::vector<uint8_t> &c,
                const Int8OutputCheck &check,
                const std::function<Int8Reference(int64_t i, int64_t j, int64_t s32)> &reference,
                const std::function<void(float got, const Int8Reference &ref)> &onF32 = {}) {
  const int bytes = check.output == Int8Output::F32 ? 4 : 1;
  const int64_t n = p.n, ldc = check.ldc;
  int failures = 0;
  auto fail = [&](int64_t i, int64_t j, const std::string &msg) {
    if (failures++ < 5)
      ADD_FAILURE() << check.what << ": C[" << i << "][" << j << "] " << msg;
  };
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t s32 = p.s32(i, j, check.aZeroPoint);
      float got = 0;
      if (check.output == Int8Output::F32)
        std::memcpy(&got, &c[(i * ldc + j) * 4], 4);
      if (check.exactSums) {
        if (got != static_cast<float>(int32_t(s32)))
          fail(i, j, "= " + std::to_string(got) + ", want exactly " + std::to_string(s32));
        continue;
      }
      const Int8Reference ref = reference(i, j, s32);
      if (check.output == Int8Output::F32) {
        if (!(std::fabs(got - ref.value) <= ref.tolerance + 1e-30))
          fail(i, j,
               "= " + std::to_string(got) + ", want " + std::to_string(ref.value) + " +- " +
                   std::to_string(ref.tolerance));
        if (onF32)
          onF32(got, ref);
        continue;
      }
      const double q = ref.value / check.outScale, qTol = ref.tolerance / check.outScale + 1e-6;
      const double lo = check.output == Int8Output::U8 ? 0 : -128, hi = lo + 255;
      auto quantize = [&](double x) {
        return std::clamp(std::nearbyint(x) + check.outZeroPoint, lo, hi);
      };
      const int code =
          check.output == Int8Output::U8 ? int(c[i * ldc + j]) : int(int8_t(c[i * ldc + j]));
      // Near a tie the f32 pipeline may round either way.
      if (code < quantize(q - qTol) || code > quantize(q + qTol))
        fail(i, j,
             "= " + std::to_string(code) + ", want " + std::to_string(quantize(q)) +
                 " (v / out_scale = " + std::to_string(q) + ")");
    }
    const int64_t padEnd = i + 1 < rows ? ldc : ldc + check.guard;
    for (int64_t j = n * bytes; j < padEnd * bytes; ++j)
      if (c[i * ldc * bytes + j] != kInt8Canary)
        fail(i, j / bytes, "padding byte " + std::to_string(j) + " was written");
  }
}

} // namespace octet::test

#endif
