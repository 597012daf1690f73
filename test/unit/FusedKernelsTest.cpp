//===- FusedKernelsTest.cpp - fused kernels against double references ----===//
//
// Every buffer ends flush against a PROT_NONE page, so a read or write past a
// row's last element (a wrong tail mask) faults instead of passing silently.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/FusedKernels.h"

#include "GuardedBuffer.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

using namespace octet::x86;
using octet::test::Guarded;

namespace {

#define REQUIRE_AVX512()                                                                       \
  if (!CpuFeatures::host().supports(Isa::Avx512))                                              \
  GTEST_SKIP() << "host lacks AVX-512 F/BW/VL/DQ: JIT code cannot run here"

const int64_t kNs[] = {1, 7, 16, 17, 64, 100, 768};
const int64_t kMs[] = {1, 3, 37};


void fill(Guarded<float> &b, std::mt19937 &rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = d(rng);
}

/// Double-precision LayerNorm of one row.
std::vector<double> layerNormRef(const std::vector<double> &x, const float *gamma,
                                 const float *beta, double eps) {
  double mean = 0, var = 0;
  for (double v : x)
    mean += v;
  mean /= x.size();
  for (double v : x)
    var += (v - mean) * (v - mean);
  var /= x.size();
  std::vector<double> y(x.size());
  for (size_t j = 0; j < x.size(); ++j)
    y[j] = (x[j] - mean) / std::sqrt(var + eps) * gamma[j] + beta[j];
  return y;
}

// LayerNorm: |y - ref| <= 1e-5 (1 + |ref|).
constexpr double kLnTol = 1e-5;

/// Whether the n = row.size() values at `y` are row's LayerNorm within kLnTol.
::testing::AssertionResult matchesLayerNormRef(const float *y, const std::vector<double> &row,
                                               const float *gamma, const float *beta, double eps) {
  std::vector<double> ref = layerNormRef(row, gamma, beta, eps);
  for (size_t j = 0; j < row.size(); ++j)
    if (!(std::fabs(y[j] - ref[j]) <= kLnTol * (1 + std::fabs(ref[j]))))
      return ::testing::AssertionFailure() << "col " << j << ": " << y[j] << ", reference " << ref[j];
  return ::testing::AssertionSuccess();
}

TEST(FusedKernels, GeneratesEveryShape) {
  for (int64_t n : kNs) {
    EXPECT_FALSE(LayerNormKernel(n, {RowSource::Dense}, false, 1e-12f).bytes().empty());
    EXPECT_FALSE(LayerNormKernel(n, {RowSource::Dense, RowSource::Dense}, true, 1e-12f)
                     .bytes()
                     .empty());
    EXPECT_FALSE(LayerNormKernel(n, {RowSource::Gathered, RowSource::Gathered,
                                     RowSource::Gathered},
                                 false, 1e-12f)
                     .bytes()
                     .empty());
    EXPECT_FALSE(SoftmaxKernel(n, 0.125f, true).bytes().empty());
    EXPECT_FALSE(SoftmaxKernel(n, 1.0f, false).bytes().empty());
  }
}

TEST(FusedKernels, LayerNorm) {
  REQUIRE_AVX512();
  std::mt19937 rng(1);
  for (int64_t n : kNs)
    for (int64_t m : kMs) {
      Guarded<float> x(m * n), y(m * n), gamma(n), beta(n);
      fill(x, rng, -3, 5);
      fill(gamma, rng, 0.5, 1.5);
      fill(beta, rng, -1, 1);
      LayerNormKernel kernel(n, {RowSource::Dense}, false, 1e-5f);
      LayerNormArgs a;
      a.src[0] = x.data();
      a.y = y.data();
      a.gamma = gamma.data();
      a.beta = beta.data();
      a.rows = m;
      kernel.run(a);
      for (int64_t r = 0; r < m; ++r) {
        std::vector<double> row(x.data() + r * n, x.data() + (r + 1) * n);
        std::vector<double> ref = layerNormRef(row, gamma.data(), beta.data(), 1e-5);
        for (int64_t j = 0; j < n; ++j)
          ASSERT_NEAR(y[r * n + j], ref[j], kLnTol * (1 + std::fabs(ref[j])))
              << "n=" << n << " m=" << m << " row " << r << " col " << j;
      }
    }
}

TEST(FusedKernels, ResidualLayerNormWritesSum) {
  REQUIRE_AVX512();
  std::mt19937 rng(2);
  for (int64_t n : kNs)
    for (int64_t m : kMs) {
      Guarded<float> x(m * n), res(m * n), sum(m * n), y(m * n), gamma(n), beta(n);
      fill(x, rng, -2, 2);
      fill(res, rng, 10, 20); // offset mean: the two-pass variance must not cancel
      fill(gamma, rng, 0.5, 1.5);
      fill(beta, rng, -1, 1);
      LayerNormKernel kernel(n, {RowSource::Dense, RowSource::Dense}, true, 1e-12f);
      LayerNormArgs a;
      a.src[0] = x.data();
      a.src[1] = res.data();
      a.sum = sum.data();
      a.y = y.data();
      a.gamma = gamma.data();
      a.beta = beta.data();
      a.rows = m;
      kernel.run(a);
      for (int64_t r = 0; r < m; ++r) {
        std::vector<double> row(n);
        for (int64_t j = 0; j < n; ++j) {
          row[j] = float(x[r * n + j] + res[r * n + j]);
          ASSERT_EQ(sum[r * n + j], float(row[j]));
        }
        std::vector<double> ref = layerNormRef(row, gamma.data(), beta.data(), 1e-12);
        for (int64_t j = 0; j < n; ++j)
          ASSERT_NEAR(y[r * n + j], ref[j], kLnTol * (1 + std::fabs(ref[j])))
              << "n=" << n << " m=" << m;
      }
    }
}

// Rows of f32 values whose squares overflow (weights of ~1e22..3e38 give
// such activations): the kernel rescales by the largest deviation and must
// match the exact result, which is finite and scale-invariant; before, the
// variance became +inf and 1/sqrt(inf) zeroed the row (docs/security.md).
TEST(FusedKernels, LayerNormOverflowingVariance) {
  REQUIRE_AVX512();
  std::mt19937 rng(5);
  const float scales[] = {1.0f, 1e20f, 1e30f, 1e37f};
  const int64_t m = 5;
  for (int64_t n : kNs)
    for (bool residual : {false, true}) {
      Guarded<float> x(m * n), res(m * n), sum(m * n), y(m * n), gamma(n), beta(n);
      fill(x, rng, -1, 1);
      fill(res, rng, -1, 1);
      fill(gamma, rng, 0.5, 1.5);
      fill(beta, rng, -1, 1);
      for (int64_t r = 0; r < 4; ++r)
        for (int64_t j = 0; j < n; ++j)
          x[r * n + j] *= scales[r], res[r * n + j] *= residual ? scales[r] : 0.0f;
      // The last row: ±FLT_MAX / 2n, the largest deviations whose f32 sum for
      // the mean stays finite in any order (each square overflows).
      for (int64_t j = 0; j < n; ++j)
        x[4 * n + j] = (j % 2 ? -FLT_MAX : FLT_MAX) / float(2 * n), res[4 * n + j] = 0;
      std::vector<RowSource> sources = {RowSource::Dense};
      if (residual)
        sources.push_back(RowSource::Dense);
      LayerNormKernel kernel(n, sources, residual, 1e-12f);
      LayerNormArgs a;
      a.src[0] = x.data();
      a.src[1] = res.data();
      a.sum = residual ? sum.data() : nullptr;
      a.y = y.data();
      a.gamma = gamma.data();
      a.beta = beta.data();
      a.rows = m;
      kernel.run(a);
      for (int64_t r = 0; r < m; ++r) {
        std::vector<double> row(x.data() + r * n, x.data() + (r + 1) * n);
        for (int64_t j = 0; j < n; ++j)
          row[j] = float(row[j] + res[r * n + j]);
        ASSERT_TRUE(matchesLayerNormRef(y.data() + r * n, row, gamma.data(), beta.data(), 1e-12))
            << "n=" << n << " residual=" << residual << " row " << r;
      }
    }
}

// A row whose mean overflows f32 (every element FLT_MAX) has no f32 answer:
// NaN, as ONNX Runtime gives, never a finite value.
TEST(FusedKernels, LayerNormOverflowingMeanIsNaN) {
  REQUIRE_AVX512();
  for (int64_t n : kNs) {
    if (n < 2)
      continue; // one element: mean = x, deviation 0
    Guarded<float> x(n), y(n), gamma(n), beta(n);
    for (int64_t j = 0; j < n; ++j)
      x[j] = FLT_MAX, gamma[j] = 1, beta[j] = 0;
    LayerNormKernel kernel(n, {RowSource::Dense}, false, 1e-12f);
    LayerNormArgs a;
    a.src[0] = x.data();
    a.y = y.data();
    a.gamma = gamma.data();
    a.beta = beta.data();
    a.rows = 1;
    kernel.run(a);
    for (int64_t j = 0; j < n; ++j)
      ASSERT_TRUE(std::isnan(y[j])) << "n=" << n << " col " << j << ": " << y[j];
  }
}

TEST(FusedKernels, EmbeddingLayerNorm) {
  REQUIRE_AVX512();
  std::mt19937 rng(3);
  const int64_t vocab = 50, positions = 40, types = 2;
  for (int64_t n : kNs)
    for (int64_t m : kMs) {
      Guarded<float> word(vocab * n), pos(positions * n), type(types * n), y(m * n), gamma(n),
          beta(n);
      Guarded<int64_t> wordIds(m), posIds(m), typeIds(m);
      fill(word, rng, -1, 1);
      fill(pos, rng, -0.5, 0.5);
      fill(type, rng, -0.2, 0.2);
      fill(gamma, rng, 0.5, 1.5);
      fill(beta, rng, -1, 1);
      for (int64_t r = 0; r < m; ++r) {
        wordIds[r] = int64_t(rng() % vocab);
        posIds[r] = r % positions;
        typeIds[r] = int64_t(rng() % types);
      }
      LayerNormKernel kernel(
          n, {RowSource::Gathered, RowSource::Gathered, RowSource::Gathered}, false, 1e-12f);
      LayerNormArgs a;
      a.src[0] = word.data();
      a.src[1] = pos.data();
      a.src[2] = type.data();
      a.index[0] = wordIds.data();
      a.index[1] = posIds.data();
      a.index[2] = typeIds.data();
      a.y = y.data();
      a.gamma = gamma.data();
      a.beta = beta.data();
      a.rows = m;
      kernel.run(a);
      for (int64_t r = 0; r < m; ++r) {
        std::vector<double> row(n);
        for (int64_t j = 0; j < n; ++j)
          row[j] = double(word[wordIds[r] * n + j]) + pos[posIds[r] * n + j] +
                   type[typeIds[r] * n + j];
        std::vector<double> ref = layerNormRef(row, gamma.data(), beta.data(), 1e-12);
        for (int64_t j = 0; j < n; ++j)
          ASSERT_NEAR(y[r * n + j], ref[j], kLnTol * (1 + std::fabs(ref[j])))
              << "n=" << n << " m=" << m;
      }
    }
}

/// Softmax of row r as the kernel defines it: z = f32(f32(scale x) + mask),
/// then exp(z - max) / sum in double. Returns all zeros for an all -inf row.
std::vector<double> softmaxRef(const float *x, const float *mask, float scale, int64_t n) {
  std::vector<double> z(n), y(n);
  double mx = -INFINITY, sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    float v = x[j] * scale;
    z[j] = mask ? double(v + mask[j]) : double(v);
    mx = std::max(mx, z[j]);
  }
  if (mx == -INFINITY)
    return y;
  for (int64_t j = 0; j < n; ++j)
    sum += (y[j] = std::exp(z[j] - mx));
  for (double &v : y)
    v /= sum;
  return y;
}

// Softmax: |y - ref| <= 1e-7 + 2e-5 ref (exp <= 2 ulp; z - max rounds once).
void checkSoftmax(int64_t n, int64_t m, float scale, bool masked, int64_t rowsPerMask,
                  std::mt19937 &rng, float magnitude) {
  int64_t maskRows = masked ? (m + rowsPerMask - 1) / rowsPerMask : 0;
  Guarded<float> x(m * n), y(m * n), mask(std::max<int64_t>(maskRows * n, 1));
  fill(x, rng, -magnitude, magnitude);
  for (int64_t i = 0; i < maskRows * n; ++i) {
    uint32_t pick = rng() % 4;
    mask[i] = pick == 0 ? -INFINITY : pick == 1 ? -FLT_MAX : 0.0f;
  }
  if (maskRows > 1) // one fully -inf and one fully -FLT_MAX mask row
    for (int64_t j = 0; j < n; ++j) {
      mask[j] = -INFINITY;
      mask[n + j] = -FLT_MAX;
    }
  SoftmaxKernel kernel(n, scale, masked);
  SoftmaxArgs a;
  a.x = x.data();
  a.y = y.data();
  a.mask = masked ? mask.data() : nullptr;
  a.rows = m;
  a.rowsPerMask = rowsPerMask;
  kernel.run(a);
  for (int64_t r = 0; r < m; ++r) {
    const float *maskRow = masked ? mask.data() + (r / rowsPerMask) * n : nullptr;
    std::vector<double> ref = softmaxRef(x.data() + r * n, maskRow, scale, n);
    for (int64_t j = 0; j < n; ++j)
      ASSERT_NEAR(y[r * n + j], ref[j], 1e-7 + 2e-5 * ref[j])
          << "n=" << n << " m=" << m << " row " << r << " col " << j;
  }
}

TEST(FusedKernels, Softmax) {
  REQUIRE_AVX512();
  std::mt19937 rng(4);
  for (int64_t n : kNs)
    for (int64_t m : kMs) {
      checkSoftmax(n, m, 1.0f, false, 1, rng, 5.0f);
      checkSoftmax(n, m, 0.125f, false, 1, rng, 3e4f); // stability: exp would overflow
    }
}

TEST(FusedKernels, MaskedSoftmax) {
  REQUIRE_AVX512();
  std::mt19937 rng(5);
  for (int64_t n : kNs)
    for (int64_t m : kMs)
      for (int64_t rowsPerMask : {int64_t(1), int64_t(5), m}) // [M,S], [B,1,1,S]-like, [1,S]
        checkSoftmax(n, m, 0.125f, true, rowsPerMask, rng, 50.0f);
}

TEST(FusedKernels, FullyMaskedRows) {
  REQUIRE_AVX512();
  const int64_t n = 17;
  Guarded<float> x(2 * n), y(2 * n), mask(2 * n);
  for (int64_t j = 0; j < n; ++j) {
    x[j] = x[n + j] = float(j);
    mask[j] = -INFINITY; // row 0: every entry -inf -> zeros
    mask[n + j] = -FLT_MAX; // row 1: every entry -FLT_MAX -> uniform
  }
  SoftmaxKernel kernel(n, 1.0f, true);
  SoftmaxArgs a;
  a.x = x.data();
  a.y = y.data();
  a.mask = mask.data();
  a.rows = 2;
  a.rowsPerMask = 1;
  kernel.run(a);
  for (int64_t j = 0; j < n; ++j) {
    EXPECT_EQ(y[j], 0.0f);
    EXPECT_FLOAT_EQ(y[n + j], 1.0f / n);
  }
}

TEST(FusedKernels, GeluOverBuffers) {
  REQUIRE_AVX512();
  std::mt19937 rng(6);
  for (UnaryOp op : {UnaryOp::GeluErf, UnaryOp::GeluTanh})
    for (int64_t count : {1, 7, 16, 17, 100, 768 * 37, 4096 * 3 + 5}) {
      Guarded<float> x(count), y(count);
      fill(x, rng, -8, 8);
      UnaryKernel(op).run(x.data(), y.data(), count);
      for (int64_t i = 0; i < count; ++i) {
        double v = x[i];
        double ref = op == UnaryOp::GeluErf
                         ? 0.5 * v * std::erfc(-v / std::sqrt(2.0))
                         : v / (1 + std::exp(-2 * std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        // VectorMath.h's GELU bound.
        ASSERT_NEAR(y[i], ref, std::ldexp(1.0, -22) * std::max(1.0, std::fabs(v)))
            << "count=" << count << " x=" << v;
      }
    }
}

} // namespace
