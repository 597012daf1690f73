// x86::Int8GemmAvx2 (the exact u8 x s8 GEMM of CPUs without VNNI) against a
// scalar reference of its formula, bit for bit: odd M, N and K (row tails of
// the 6-row kernel, column tails of the 16-column panel, odd K), both weight
// layouts, bias and residual, per-tensor and per-row scales, strides past the
// minimum with nothing written past a row's N columns, and operands at the
// extremes that saturate vpmaddubsw's s16 pair sums.
#include "compiler/codegen/x86/Int8GemmAvx2.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
using namespace octet::x86;
using octet::WeightLayout;

struct Shape {
  int64_t m, k, n;
};

struct Variant {
  WeightLayout layout = WeightLayout::KN;
  bool bias = false, residual = false, perRow = false;
  int32_t zp = 128;
  bool extremes = false; ///< A all 255 (or 0), W all 127 / -128: |pair sums| past s16
};

std::string describe(const Shape &s, const Variant &v) {
  return "M " + std::to_string(s.m) + " K " + std::to_string(s.k) + " N " + std::to_string(s.n) +
         (v.layout == WeightLayout::NK ? " NK" : " KN") + (v.bias ? " bias" : "") +
         (v.residual ? " residual" : "") + (v.perRow ? " per-row" : " per-tensor") + " zp " +
         std::to_string(v.zp) + (v.extremes ? " extremes" : "");
}

void check(const Shape &s, const Variant &v, unsigned seed) {
  SCOPED_TRACE(describe(s, v));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255), weight(-128, 127);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const int64_t lda = s.k + 3, ldc = s.n + 5, ldr = s.n + 2;
  std::vector<uint8_t> a(size_t(s.m * lda));
  for (auto &x : a)
    x = v.extremes ? uint8_t(v.zp >= 128 ? 0 : 255) : uint8_t(byte(rng));
  std::vector<int8_t> w(size_t(s.k * s.n));
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = v.extremes ? int8_t(i % 2 ? -128 : 127) : int8_t(weight(rng));
  if (v.extremes) // every pair of one column the same sign: |a·w + a·w| up to 2·255·128
    for (int64_t kk = 0; kk < s.k; ++kk)
      for (int64_t nn = 0; nn < s.n; ++nn) {
        const int8_t x = nn % 2 ? int8_t(-128) : int8_t(127);
        (v.layout == WeightLayout::KN ? w[kk * s.n + nn] : w[nn * s.k + kk]) = x;
      }
  std::vector<float> ws(size_t(s.n)), bias(size_t(s.n)), xsRow(size_t(s.m));
  for (auto &x : ws)
    x = 0.001f + 0.01f * std::abs(unit(rng));
  for (auto &x : bias)
    x = unit(rng);
  for (auto &x : xsRow)
    x = 0.002f + 0.02f * std::abs(unit(rng));
  std::vector<float> residual(size_t(s.m * ldr));
  for (auto &x : residual)
    x = unit(rng);

  Int8GemmAvx2Params params;
  params.aZeroPoint = v.zp;
  params.xScalePerRow = v.perRow;
  params.xScale = 0.0173f;
  params.wScale = ws;
  params.bias = v.bias ? bias.data() : nullptr;
  params.residual = v.residual;
  Int8GemmAvx2 gemm(w.data(), v.layout, s.k, s.n, params);
  const float sentinel = -12345.0f;
  std::vector<float> c(size_t(s.m * ldc), sentinel);
  gemm.run(a.data(), s.m, lda, c.data(), ldc, v.residual ? residual.data() : nullptr, ldr,
           v.perRow ? xsRow.data() : nullptr);

  int failures = 0;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[size_t(i * ldc + j)];
      if (j >= s.n) {
        if (std::memcmp(&got, &sentinel, 4) != 0 && failures++ < 5)
          ADD_FAILURE() << "[" << i << ", " << j << "] past N written: " << got;
        continue;
      }
      int64_t sum = 0;
      for (int64_t kk = 0; kk < s.k; ++kk) {
        const int8_t x = v.layout == WeightLayout::KN ? w[kk * s.n + j] : w[j * s.k + kk];
        sum += (int64_t(a[i * lda + kk]) - v.zp) * x;
      }
      const float xs = v.perRow ? xsRow[i] : params.xScale;
      float want = float(xs * ws[j]) * float(int32_t(sum));
      if (v.bias)
        want += bias[j];
      if (v.residual)
        want += residual[i * ldr + j];
      if (std::memcmp(&got, &want, 4) != 0 && failures++ < 5)
        ADD_FAILURE() << "[" << i << ", " << j << "] = " << got << ", want " << want << " (sum "
                      << sum << ")";
    }
}

#define SKIP_WITHOUT_AVX2()                                                                        \
  if (!Int8GemmAvx2::hostSupported())                                                              \
  GTEST_SKIP() << "host lacks AVX2"

TEST(Int8GemmAvx2, OddShapesMatchTheFormula) {
  SKIP_WITHOUT_AVX2();
  unsigned seed = 1;
  for (Shape s : std::vector<Shape>{{1, 1, 1},
                                    {1, 2, 16},
                                    {5, 3, 8},
                                    {6, 17, 9},
                                    {7, 64, 17},
                                    {13, 33, 33},
                                    {20, 770, 70},
                                    {200, 96, 48}})
    for (bool bias : {false, true})
      for (bool residual : {false, true})
        for (bool perRow : {false, true}) {
          Variant v;
          v.bias = bias, v.residual = residual, v.perRow = perRow;
          v.layout = seed % 2 ? WeightLayout::NK : WeightLayout::KN;
          v.zp = int32_t(seed * 37 % 256);
          check(s, v, seed++);
        }
}

// Pair sums past s16 (2·255·128 = 65280): vpmaddubsw would saturate them.
TEST(Int8GemmAvx2, ExtremeOperandsStayExact) {
  SKIP_WITHOUT_AVX2();
  for (int32_t zp : {0, 255})
    for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK}) {
      Variant v;
      v.extremes = true, v.zp = zp, v.layout = layout, v.bias = true;
      check({9, 3072, 19}, v, 7);
    }
}

TEST(Int8GemmAvx2, RejectsBadParametersAndArguments) {
  auto errorOf = [](auto f) -> std::string {
    try {
      f();
    } catch (const std::exception &e) {
      return e.what();
    }
    return "";
  };
  std::vector<int8_t> w(8 * 4, 1);
  std::vector<float> ws(4, 1.0f);
  Int8GemmAvx2Params p;
  p.wScale = ws;
  EXPECT_NE(errorOf([&] { Int8GemmAvx2 g(nullptr, WeightLayout::KN, 8, 4, p); }).find("weight"),
            std::string::npos);
  p.wScale = {1.0f, 2.0f};
  EXPECT_NE(errorOf([&] { Int8GemmAvx2 g(w.data(), WeightLayout::KN, 8, 4, p); }).find("scales"),
            std::string::npos);
  p.wScale = ws;
  p.aZeroPoint = 256;
  EXPECT_NE(
      errorOf([&] { Int8GemmAvx2 g(w.data(), WeightLayout::KN, 8, 4, p); }).find("zero point"),
      std::string::npos);
  p.aZeroPoint = 0;
  Int8GemmKernelAvx2Config config;
  config.rows = 7;
  EXPECT_NE(errorOf([&] { Int8GemmKernelAvx2 k(config); }).find("rows must be"), std::string::npos);
  p.residual = true;
  Int8GemmAvx2 gemm(w.data(), WeightLayout::KN, 8, 4, p);
  std::vector<uint8_t> a(2 * 8);
  std::vector<float> c(2 * 4);
  const std::string lacks = Int8GemmAvx2::hostSupported() ? "" : "lacks AVX2";
  EXPECT_NE(
      errorOf([&] { gemm.run(a.data(), 2, 7, c.data(), 4); }).find(lacks.empty() ? "lda" : lacks),
      std::string::npos);
  EXPECT_NE(errorOf([&] {
              gemm.run(a.data(), 2, 8, c.data(), 4);
            }).find(lacks.empty() ? "residual" : lacks),
            std::string::npos);
}

} // namespace
