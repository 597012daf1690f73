//===- LayerNormQuantizeTest.cpp - LayerNormKernel with a quantized output --===//
//
// octet.layer_norm_quantize's kernel against the unfused pair it replaces: y
// bit for bit equal to the plain LayerNormKernel's, q equal to the scalar
// quantize formulas (quantizeScalar / quantizeRowScalar, the definitions the
// unfused QuantizeKernel / QuantizePerRowKernel match) applied to that y; and,
// independently of any kernel, q within one quantization step of a double
// LayerNorm. Odd widths, tails (n % 16), 1 and 2 sources, with and without
// the f32 y, saturation, NaN and constant rows. Buffers end against a
// PROT_NONE page (see FusedKernelsTest.cpp), so a bad tail mask faults.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/FusedKernels.h"
#include "compiler/codegen/x86/QuantizeKernels.h"

#include "GuardedBuffer.h"
#include "test/unit/ThreadCount.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace octet::x86;
using octet::test::Guarded;

namespace {

#define REQUIRE_AVX512()                                                                           \
  if (!CpuFeatures::host().supports(Isa::Avx512))                                                  \
  GTEST_SKIP() << "host lacks AVX-512 F/BW/VL/DQ: JIT code cannot run here"

using Mode = LayerNormQuantize::Mode;

struct Case {
  int64_t n, m;
  int sources;
  bool writeY;
  LayerNormQuantize quant;
};

std::string describe(const Case &c) {
  return "n=" + std::to_string(c.n) + " m=" + std::to_string(c.m) +
         " sources=" + std::to_string(c.sources) + " writeY=" + std::to_string(c.writeY) +
         " mode=" + std::to_string(int(c.quant.mode)) +
         " s8=" + std::to_string(c.quant.signedOutput);
}

void check(const Case &c, std::mt19937 &rng) {
  SCOPED_TRACE(describe(c));
  const int64_t n = c.n, m = c.m;
  Guarded<float> x(m * n), res(m * n), y(m * n), yRef(m * n), gamma(n), beta(n), rowScale(m);
  Guarded<uint8_t> q(m * n);
  std::uniform_real_distribution<float> d(-3, 5), g(0.5f, 1.5f), b(-1, 1);
  for (int64_t i = 0; i < m * n; ++i)
    x[i] = d(rng), res[i] = d(rng) + 10; // an offset mean for the two-pass variance
  for (int64_t j = 0; j < n; ++j)
    gamma[j] = g(rng), beta[j] = b(rng);
  if (m > 2) {
    for (int64_t j = 0; j < n; ++j)
      x[n + j] = 1.0f, res[n + j] = 2.0f; // a constant row: y = beta
    x[2 * n + n / 2] = NAN;               // a NaN row: every y is NaN, q is the zero point
  }
  std::vector<RowSource> sources(c.sources, RowSource::Dense);

  LayerNormArgs a;
  a.src[0] = x.data();
  a.src[1] = c.sources > 1 ? res.data() : nullptr;
  a.gamma = gamma.data(), a.beta = beta.data(), a.rows = m;
  a.y = yRef.data();
  LayerNormKernel(n, sources, false, 1e-5f).run(a);

  std::memset(q.data(), 0xAB, m * n);
  a.y = c.writeY ? y.data() : nullptr;
  a.q = q.data();
  a.rowScale = c.quant.mode == Mode::PerRow ? rowScale.data() : nullptr;
  LayerNormQuantize quant = c.quant;
  quant.writeY = c.writeY;
  LayerNormKernel(n, sources, false, 1e-5f, quant).run(a);

  const int32_t lo = quant.signedOutput ? -128 : 0;
  std::vector<uint8_t> qRef(n);
  for (int64_t r = 0; r < m; ++r) {
    const float *yr = yRef.data() + r * n;
    if (c.writeY) {
      ASSERT_EQ(std::memcmp(y.data() + r * n, yr, n * sizeof(float)), 0) << "y of row " << r;
    }
    float scale = quant.scale;
    int32_t zp = quant.zeroPoint;
    if (quant.mode == Mode::PerRow) {
      scale = quantizeRowScalar(yr, n, qRef.data());
      zp = 128;
      ASSERT_EQ(rowScale[r], scale) << "scale of row " << r;
    } else {
      for (int64_t j = 0; j < n; ++j)
        qRef[j] = uint8_t(quantizeScalar(yr[j], scale, zp, lo, lo + 255));
    }
    for (int64_t j = 0; j < n; ++j)
      ASSERT_EQ(q[r * n + j], qRef[j]) << "row " << r << " col " << j << " y " << yr[j];

    // Kernel-independent: one step of a double LayerNorm (clamped to the grid).
    std::vector<double> row(n);
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j)
      row[j] = double(float(x[r * n + j] + (c.sources > 1 ? res[r * n + j] : 0.0f))),
      mean += row[j];
    mean /= n;
    for (int64_t j = 0; j < n; ++j)
      var += (row[j] - mean) * (row[j] - mean);
    var /= n;
    if (std::isnan(mean))
      continue;
    for (int64_t j = 0; j < n; ++j) {
      double ref = (row[j] - mean) / std::sqrt(var + 1e-5) * gamma[j] + beta[j];
      int32_t v = quant.signedOutput ? int32_t(int8_t(q[r * n + j])) : int32_t(q[r * n + j]);
      double lowest = quant.mode == Mode::PerRow ? -127 : lo,
             highest = quant.mode == Mode::PerRow ? 127 : lo + 255;
      double clamped = std::clamp(ref / scale + zp, lowest + (quant.mode == Mode::PerRow ? 128 : 0),
                                  highest + (quant.mode == Mode::PerRow ? 128 : 0));
      ASSERT_NEAR(v, clamped, 0.51) << "row " << r << " col " << j;
    }
  }
  if (m > 2) {
    const int32_t zp = quant.mode == Mode::PerRow ? 128 : quant.zeroPoint;
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_EQ(int32_t(quant.signedOutput ? int8_t(q[2 * n + j]) : q[2 * n + j]), zp);
    }
    if (quant.mode == Mode::PerRow) {
      EXPECT_EQ(rowScale[2], 1.0f); // a NaN row's absmax is 0
    }
  }
}

TEST(LayerNormQuantize, MatchesUnfusedKernels) {
  REQUIRE_AVX512();
  std::mt19937 rng(11);
  LayerNormQuantize u8;
  u8.mode = Mode::PerTensor, u8.scale = 0.03f, u8.zeroPoint = 120; // saturates the tails
  LayerNormQuantize s8;
  s8.mode = Mode::PerTensor, s8.signedOutput = true, s8.scale = 0.05f, s8.zeroPoint = -3;
  LayerNormQuantize perRow;
  perRow.mode = Mode::PerRow;
  for (int64_t n : {1, 7, 16, 17, 64, 100, 768, 777})
    for (int64_t m : {1, 3, 37})
      for (int sources : {1, 2})
        for (bool writeY : {true, false})
          for (const LayerNormQuantize &quant : {u8, s8, perRow})
            check(Case{n, m, sources, writeY, quant}, rng);
}

// octet-plan-memory lets y take the buffer of x or of the residual when the
// LayerNorm reads it for the last time: the kernel reads each element before it
// writes it and no later pass reads the sources, so y in place of either
// source is bit for bit y elsewhere, with and without a quantized output.
TEST(LayerNormQuantize, YInPlaceOfEitherSourceIsTheSame) {
  REQUIRE_AVX512();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-3, 5);
  LayerNormQuantize u8;
  u8.mode = Mode::PerTensor, u8.scale = 0.03f, u8.zeroPoint = 120, u8.writeY = true;
  LayerNormQuantize perRow;
  perRow.mode = Mode::PerRow, perRow.writeY = true;
  for (int64_t n : {7, 17, 768, 777})
    for (int sources : {1, 2})
      for (const LayerNormQuantize &quant : {LayerNormQuantize(), u8, perRow}) {
        const int64_t m = 5;
        std::vector<float> x(m * n), res(m * n), gamma(n, 1.25f), beta(n, -0.5f), y(m * n);
        std::vector<float> scales(m), scalesInPlace(m);
        std::vector<uint8_t> q(m * n), qInPlace(m * n);
        for (int64_t i = 0; i < m * n; ++i)
          x[i] = d(rng), res[i] = d(rng) + 10;
        const std::vector<RowSource> rowSources(sources, RowSource::Dense);
        LayerNormKernel kernel(n, rowSources, false, 1e-5f, quant);
        const bool quantized = quant.mode != Mode::None;
        LayerNormArgs a;
        a.src[0] = x.data(), a.src[1] = sources > 1 ? res.data() : nullptr;
        a.gamma = gamma.data(), a.beta = beta.data(), a.rows = m, a.y = y.data();
        a.q = quantized ? q.data() : nullptr;
        a.rowScale = quant.mode == Mode::PerRow ? scales.data() : nullptr;
        kernel.run(a);
        for (int over = 0; over < sources; ++over) {
          SCOPED_TRACE("n " + std::to_string(n) + " sources " + std::to_string(sources) + " mode " +
                       std::to_string(int(quant.mode)) + " y over source " + std::to_string(over));
          std::vector<float> x2 = x, res2 = res;
          LayerNormArgs b = a;
          b.src[0] = x2.data(), b.src[1] = sources > 1 ? res2.data() : nullptr;
          b.y = over == 0 ? x2.data() : res2.data();
          b.q = quantized ? qInPlace.data() : nullptr;
          b.rowScale = quant.mode == Mode::PerRow ? scalesInPlace.data() : nullptr;
          kernel.run(b);
          EXPECT_EQ(std::memcmp(b.y, y.data(), y.size() * sizeof(float)), 0);
          if (quantized) {
            EXPECT_EQ(qInPlace, q);
          }
          EXPECT_EQ(scalesInPlace, scales);
        }
      }
}

// The rows are split over the team in chunks that an idle thread steals
// (LayerNormKernel::run): at any team size and row count each row is
// normalized exactly once — y over x, so a row done twice would come out
// normalized twice — and q equals the one-thread run's.
TEST(LayerNormQuantize, EveryRowOnceAtAnyTeamSize) {
  REQUIRE_AVX512();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-3, 5);
  LayerNormQuantize u8;
  u8.mode = Mode::PerTensor, u8.scale = 0.03f, u8.zeroPoint = 120, u8.writeY = true;
  const int64_t n = 96;
  LayerNormKernel kernel(n, {RowSource::Dense, RowSource::Dense}, false, 1e-5f, u8);
  for (int64_t m : {1, 7, 8, 9, 17, 57, 113, 250}) {
    std::vector<float> x(m * n), res(m * n), gamma(n, 1.25f), beta(n, -0.5f);
    for (int64_t i = 0; i < m * n; ++i)
      x[i] = d(rng), res[i] = d(rng);
    auto run = [&](int threads, std::vector<float> &y, std::vector<uint8_t> &q) {
      octet::test::ThreadCount team(threads);
      y = x;
      q.assign(size_t(m * n), 0);
      LayerNormArgs a;
      a.src[0] = y.data(), a.src[1] = res.data(), a.y = y.data(), a.q = q.data();
      a.gamma = gamma.data(), a.beta = beta.data(), a.rows = m;
      kernel.run(a);
    };
    std::vector<float> yOne, y;
    std::vector<uint8_t> qOne, q;
    run(1, yOne, qOne);
    for (int threads : {2, 3, 4, 7}) {
      SCOPED_TRACE("rows " + std::to_string(m) + " threads " + std::to_string(threads));
      for (int repeat = 0; repeat < 5; ++repeat) { // stealing differs from run to run
        run(threads, y, q);
        ASSERT_EQ(std::memcmp(y.data(), yOne.data(), y.size() * sizeof(float)), 0);
        ASSERT_EQ(q, qOne);
      }
    }
  }
}

// ownAffine (octet.layer_norm_quantize's quant_affine, the SmoothQuant copy
// merged into the original): y bit for bit the plain LayerNorm's with gamma /
// beta, q bit for bit the separate quantizing LayerNorm's with its own affine
// -- the pair the merge replaces, so merging changes no output.
TEST(LayerNormQuantize, OwnAffineEqualsTheTwoKernelsItMerges) {
  REQUIRE_AVX512();
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> d(-3, 5), g(0.5f, 1.5f), b(-1, 1), inv(0.2f, 4.0f);
  for (int64_t n : {1, 7, 17, 64, 768, 777})
    for (int64_t m : {1, 5, 37})
      for (int sources : {1, 2})
        for (bool writeY : {true, false})
          for (bool s8 : {false, true}) {
            SCOPED_TRACE("n=" + std::to_string(n) + " m=" + std::to_string(m) +
                         " sources=" + std::to_string(sources) +
                         " writeY=" + std::to_string(writeY) + " s8=" + std::to_string(s8));
            Guarded<float> x(m * n), res(m * n), y(m * n), yRef(m * n);
            Guarded<float> gamma(n), beta(n), gamma2(n), beta2(n);
            Guarded<uint8_t> q(m * n), qRef(m * n);
            for (int64_t i = 0; i < m * n; ++i)
              x[i] = d(rng), res[i] = d(rng);
            for (int64_t j = 0; j < n; ++j) {
              gamma[j] = g(rng), beta[j] = b(rng);
              const float s = inv(rng); // SmoothQuant's 1/s per channel
              gamma2[j] = gamma[j] * s, beta2[j] = beta[j] * s;
            }
            std::vector<RowSource> src(sources, RowSource::Dense);
            LayerNormQuantize quant;
            quant.mode = Mode::PerTensor, quant.signedOutput = s8;
            quant.scale = 0.04f, quant.zeroPoint = s8 ? -5 : 128;
            LayerNormArgs a;
            a.src[0] = x.data();
            a.src[1] = sources > 1 ? res.data() : nullptr;
            a.rows = m;
            // The pair: y with gamma / beta, q (y unwritten) with gamma2 / beta2.
            a.gamma = gamma.data(), a.beta = beta.data(), a.y = yRef.data();
            LayerNormKernel(n, src, false, 1e-12f).run(a);
            LayerNormQuantize copy = quant;
            copy.writeY = false;
            a.gamma = gamma2.data(), a.beta = beta2.data(), a.y = nullptr, a.q = qRef.data();
            LayerNormKernel(n, src, false, 1e-12f, copy).run(a);
            // Merged.
            LayerNormQuantize merged = quant;
            merged.writeY = writeY, merged.ownAffine = true;
            a.gamma = gamma.data(), a.beta = beta.data(), a.y = writeY ? y.data() : nullptr;
            a.qGamma = gamma2.data(), a.qBeta = beta2.data(), a.q = q.data();
            LayerNormKernel(n, src, false, 1e-12f, merged).run(a);
            ASSERT_EQ(std::memcmp(q.data(), qRef.data(), m * n), 0);
            if (writeY) {
              ASSERT_EQ(std::memcmp(y.data(), yRef.data(), m * n * sizeof(float)), 0);
            }
          }
}

TEST(LayerNormQuantize, RejectsBadConfigurations) {
  LayerNormQuantize bad;
  bad.mode = Mode::PerTensor, bad.scale = 0.0f;
  EXPECT_THROW(LayerNormKernel(8, {RowSource::Dense}, false, 1e-5f, bad), std::invalid_argument);
  bad.scale = 1.0f, bad.zeroPoint = 300;
  EXPECT_THROW(LayerNormKernel(8, {RowSource::Dense}, false, 1e-5f, bad), std::invalid_argument);
  LayerNormQuantize perRow;
  perRow.mode = Mode::PerRow;
  EXPECT_THROW(LayerNormKernel(8, {RowSource::Gathered}, false, 1e-5f, perRow),
               std::invalid_argument);
  perRow.signedOutput = true;
  EXPECT_THROW(LayerNormKernel(8, {RowSource::Dense}, false, 1e-5f, perRow), std::invalid_argument);
  LayerNormQuantize perRowAffine;
  perRowAffine.mode = Mode::PerRow, perRowAffine.ownAffine = true;
  EXPECT_THROW(LayerNormKernel(8, {RowSource::Dense}, false, 1e-5f, perRowAffine),
               std::invalid_argument);
  LayerNormQuantize none;
  none.writeY = false;
  EXPECT_THROW(LayerNormKernel(8, {RowSource::Dense}, false, 1e-5f, none), std::invalid_argument);
}

} // namespace
