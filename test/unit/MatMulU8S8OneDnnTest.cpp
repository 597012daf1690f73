//===- MatMulU8S8OneDnnTest.cpp - oneDNN INT8 GEMM provider vs an integer reference -===//
//
// Reference: s32 sums in int64 (exact), then the INT8 GEMM's formula in double with
// scale[n] = f32(x_scale * w_scale[n]) (both providers round it once).
//  - unit scales, f32 output, no bias: C == float(sum - zp * colsum) exactly.
//  - f32: |error| <= 2^-21 * (|scaled sum| + |bias| + |residual|). oneDNN
//    rounds five times (s32 -> f32, bias / scale, + bias, * scale,
//    + residual), each <= 2^-24 of at most that magnitude; 2^-21 leaves 8
//    units. A dropped or doubled term is far outside it.
//  - GELU: oneDNN's erf / tanh forms are approximations: the input error
//    passes on (|GELU'| < 1.13) plus 2^-20 * max(1, |x|) of its own
//    (measured worst: printed by AllEpilogueCombinations).
//  - u8/s8: exact, except within that error of a rounding tie (then +-1).
// Runs on any x86-64 host with VNNI in oneDNN's effective ISA; the ctest
// `onednn-novnni` reruns the NoVnni test with ONEDNN_MAX_CPU_ISA=AVX2.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/onednn/MatMulU8S8.h"

#include "test/unit/Int8GemmReference.h"
#include "test/unit/TestData.h"
#include "test/unit/ThreadCount.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

using octet::onednn::MatMulU8S8;
using octet::onednn::MatMulU8S8Params;
using octet::onednn::Status;
using octet::onednn::U8S8Gelu;
using octet::onednn::U8S8Output;
using octet::onednn::WeightLayout;

namespace {

#define SKIP_WITHOUT_VNNI()                                                                        \
  if (!octet::onednn::oneDnnHasInt8Vnni())                                                         \
  GTEST_SKIP() << "oneDNN's effective ISA lacks VNNI: only [-64, 63] weights are exact "          \
                  "(NoVnni covers that)"

double worstGeluRatio = 0; // worst GELU error / 2^-20 max(1, |x|), for the log

double geluRef(double x, U8S8Gelu form) {
  if (form == U8S8Gelu::Erf)
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

struct Options {
  WeightLayout layout = WeightLayout::KN;
  int32_t aZeroPoint = 0;
  bool bias = false, residual = false, perChannel = true;
  U8S8Gelu gelu = U8S8Gelu::None;
  U8S8Output output = U8S8Output::F32;
  bool unitScales = false; // scales 1, no bias: the f32 output is the s32 sum, exactly
  int threads = 2;

  std::string str() const {
    std::ostringstream s;
    s << (layout == WeightLayout::KN ? "B[K,N]" : "B[N,K]") << " a_zp " << aZeroPoint
      << (perChannel ? " per-channel" : " per-tensor") << (bias ? " +bias" : "")
      << (residual ? " +residual" : "")
      << (gelu == U8S8Gelu::Erf ? " +gelu_erf" : gelu == U8S8Gelu::Tanh ? " +gelu_tanh" : "")
      << " out " << octet::onednn::u8s8OutputName(output) << (unitScales ? " unit scales" : "")
      << " " << threads << " thread(s)";
    return s.str();
  }
};

struct Problem : octet::test::Int8GemmProblem {
  using Int8GemmProblem::Int8GemmProblem;

  MatMulU8S8Params params(const Options &o) const {
    MatMulU8S8Params p;
    p.aZeroPoint = o.aZeroPoint;
    p.xScale = o.unitScales ? 1.0f : xScale;
    p.wScale = o.unitScales ? std::vector<float>{1.0f}
               : o.perChannel ? wScale
                              : std::vector<float>{wScale[0]};
    p.bias = o.bias ? bias.data() : nullptr;
    p.residual = o.residual;
    p.gelu = o.gelu;
    p.output = o.output;
    p.outScale = 0.015625f * 1.37f; // not a power of two
    p.outZeroPoint = o.output == U8S8Output::U8 ? 37 : o.output == U8S8Output::S8 ? -5 : 0;
    return p;
  }

  std::unique_ptr<MatMulU8S8> create(const Options &o) const {
    std::unique_ptr<MatMulU8S8> mm;
    Status s = MatMulU8S8::create(n, k, o.layout == WeightLayout::KN ? bKN.data() : bNK.data(),
                                  o.layout, params(o), mm);
    EXPECT_TRUE(s.ok()) << o.str() << ": " << s.message();
    return mm;
  }

  /// Runs the first `rows` rows of A through `mm` and checks C.
  void run(const MatMulU8S8 &mm, const Options &o, int64_t rows) const {
    const MatMulU8S8Params p = params(o);
    octet::test::ThreadCount scope(o.threads);
    const std::string what = "M=" + std::to_string(rows) + " N=" + std::to_string(n) +
                             " K=" + std::to_string(k) + " " + o.str() + " (" +
                             mm.implementation() + ")";
    const int bytes = o.output == U8S8Output::F32 ? 4 : 1;
    octet::test::Int8OutputCheck check;
    check.output = octet::test::Int8Output(int(o.output)); // the same order: f32, u8, s8
    check.outScale = p.outScale, check.outZeroPoint = p.outZeroPoint;
    check.aZeroPoint = o.aZeroPoint;
    check.exactSums = o.unitScales && o.output == U8S8Output::F32 && !o.bias && !o.residual &&
                      o.gelu == U8S8Gelu::None;
    check.ldc = n + 5, check.guard = 64, check.what = what;
    std::vector<uint8_t> c((rows * check.ldc + check.guard) * bytes, octet::test::kInt8Canary);
    Status s = mm.run(a.data(), rows, lda, c.data(), check.ldc,
                      o.residual ? residual.data() : nullptr, ldr);
    ASSERT_TRUE(s.ok()) << what << ": " << s.message();
    double geluOwn = 0; // oneDNN's own GELU error bound of the element just referenced
    octet::test::checkInt8Output(
        *this, rows, c, check,
        [&](int64_t i, int64_t j, int64_t s32) {
          const float scale = p.xScale * p.wScale[p.wScale.size() == 1 ? 0 : j];
          octet::test::Int8Reference r = octet::test::int8Linear(
              *this, i, j, double(scale), s32, o.bias, o.residual, std::ldexp(1.0, -21));
          geluOwn = 0;
          if (o.gelu != U8S8Gelu::None) {
            geluOwn = std::ldexp(1.0, -20) * std::max(1.0, std::fabs(r.value));
            r.tolerance = 1.13 * r.tolerance + geluOwn;
            r.value = geluRef(r.value, o.gelu);
          }
          return r;
        },
        [&](float got, const octet::test::Int8Reference &r) {
          if (geluOwn > 0)
            worstGeluRatio = std::max(worstGeluRatio, std::fabs(got - r.value) / geluOwn);
        });
  }
};

/// The 24 valid epilogues: f32 with bias x residual x {none, erf, tanh}, and
/// u8 / s8 with bias x {none, erf, tanh} (a quantized output takes no residual).
Options epilogue(int c) {
  Options o;
  const int gelu = c % 3;
  o.gelu = gelu == 0 ? U8S8Gelu::None : gelu == 1 ? U8S8Gelu::Erf : U8S8Gelu::Tanh;
  o.bias = (c / 3) & 1;
  if (c < 12) {
    o.residual = (c / 6) & 1;
  } else {
    o.output = c < 18 ? U8S8Output::U8 : U8S8Output::S8;
  }
  o.perChannel = (c / 2) % 2 == 0;
  return o;
}

class MatMulU8S8Shapes : public ::testing::TestWithParam<std::tuple<int64_t, int64_t>> {};

TEST_P(MatMulU8S8Shapes, MatchesIntegerReference) {
  SKIP_WITHOUT_VNNI();
  auto [n, k] = GetParam();
  const int64_t ms[] = {1, 7, 33};
  Problem p(33, n, k, unsigned(n * 1000 + k));
  // Per shape: both layouts x three zero points; each object serves M = 1, 7,
  // 33 (M is a run-time dim). The s32 sums exactly, then one epilogue each,
  // rotating so the suite covers all 24 many times.
  int combo = int(n * 3 + k);
  for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK})
    for (int32_t zp : {0, 128, 37}) {
      Options exact;
      exact.layout = layout, exact.aZeroPoint = zp, exact.unitScales = true;
      exact.threads = zp == 37 ? 1 : 2;
      auto mm = p.create(exact);
      ASSERT_TRUE(mm);
      for (int64_t m : ms)
        p.run(*mm, exact, m);
      Options o = epilogue(combo++ % 24);
      o.layout = layout, o.aZeroPoint = zp;
      mm = p.create(o);
      ASSERT_TRUE(mm);
      for (int64_t m : ms)
        p.run(*mm, o, m);
    }
}

INSTANTIATE_TEST_SUITE_P(OddShapes, MatMulU8S8Shapes,
                         ::testing::Combine(::testing::Values(1, 15, 17, 100, 768),
                                            ::testing::Values(1, 3, 4, 5, 67, 300)),
                         [](const auto &info) {
                           return "N" + std::to_string(std::get<0>(info.param)) + "_K" +
                                  std::to_string(std::get<1>(info.param));
                         });

// Every epilogue, both layouts, on one shape with a K tail and an N tail.
TEST(MatMulU8S8OneDnn, AllEpilogueCombinations) {
  SKIP_WITHOUT_VNNI();
  Problem p(33, 100, 299, 7);
  for (int c = 0; c < 24; ++c)
    for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK}) {
      Options o = epilogue(c);
      o.layout = layout;
      o.aZeroPoint = c % 2 ? 128 : 37;
      auto mm = p.create(o);
      ASSERT_TRUE(mm);
      for (int64_t m : {1, 7, 33})
        p.run(*mm, o, m);
    }
  std::unique_ptr<MatMulU8S8> mm = p.create(Options{});
  std::cout << "[ oneDNN  ] implementation " << mm->implementation() << ", weights "
            << mm->weightsFormat() << "; worst GELU error / (2^-20 max(1, |x|)): "
            << worstGeluRatio << "\n";
}

TEST(MatMulU8S8OneDnn, InPlaceResidual) {
  SKIP_WITHOUT_VNNI();
  Problem p(31, 100, 64, 3);
  Options o;
  o.bias = o.residual = true, o.aZeroPoint = 128;
  auto mm = p.create(o);
  ASSERT_TRUE(mm);
  const int64_t ldc = p.ldr; // C is the residual buffer itself
  std::vector<float> c(p.residual);
  Status s = mm->run(p.a.data(), p.m, p.lda, c.data(), ldc, c.data(), ldc);
  ASSERT_TRUE(s.ok()) << s.message();
  // Against the distinct-residual path of the same object (checked by the reference there).
  std::vector<float> c2(size_t(p.m * ldc), 0.f);
  s = mm->run(p.a.data(), p.m, p.lda, c2.data(), ldc, p.residual.data(), p.ldr);
  ASSERT_TRUE(s.ok()) << s.message();
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j)
      ASSERT_EQ(c[i * ldc + j], c2[i * ldc + j]) << "C[" << i << "][" << j << "]";
  p.run(*mm, o, p.m);
}

TEST(MatMulU8S8OneDnn, ConcurrentRunsOnOneObject) {
  SKIP_WITHOUT_VNNI();
  Problem p(200, 768, 768, 5);
  Options o;
  o.bias = true, o.aZeroPoint = 128, o.gelu = U8S8Gelu::Erf, o.output = U8S8Output::U8;
  auto mm = p.create(o);
  ASSERT_TRUE(mm);
  const int kThreads = 4;
  const int64_t ms[kThreads] = {1, 31, 129, 200};
  std::vector<std::vector<uint8_t>> expected(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    expected[t].assign(size_t(ms[t] * p.n), 0);
    Status s = mm->run(p.a.data(), ms[t], p.lda, expected[t].data(), p.n);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  std::vector<std::string> errors(kThreads);
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 10; ++rep) {
        std::vector<uint8_t> c(size_t(ms[t] * p.n), 0);
        Status s = mm->run(p.a.data(), ms[t], p.lda, c.data(), p.n);
        if (!s.ok()) {
          errors[t] = s.message();
          return;
        }
        mismatches[t] += c != expected[t];
      }
    });
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_EQ(mismatches[t], 0) << "thread " << t << " (M = " << ms[t]
                                << ") differed from the serial run";
  }
  p.run(*mm, o, 200);
}

// With ONEDNN_MAX_CPU_ISA=AVX2 (ctest onednn-novnni): full-range weights are
// refused (oneDNN's s16 pair sums would saturate), 7-bit ones are exact.
TEST(MatMulU8S8OneDnn, NoVnni) {
  if (octet::onednn::oneDnnHasInt8Vnni())
    GTEST_SKIP() << "oneDNN's ISA has VNNI here; ctest onednn-novnni runs this with "
                    "ONEDNN_MAX_CPU_ISA=AVX2";
  Problem full(7, 17, 64, 9);
  Options o;
  o.aZeroPoint = 128;
  std::unique_ptr<MatMulU8S8> mm;
  Status s = MatMulU8S8::create(full.n, full.k, full.bKN.data(), WeightLayout::KN,
                                full.params(o), mm);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("VNNI"), std::string::npos) << s.message();
  EXPECT_FALSE(mm);

  Problem narrow(33, 100, 299, 9, 63);
  for (int c : {0, 4, 11, 13, 20}) {
    Options e = epilogue(c);
    e.aZeroPoint = 128;
    auto made = narrow.create(e);
    ASSERT_TRUE(made);
    narrow.run(*made, e, 33);
  }
  // And with K = 3: the worst pair (255 * -64 * 2) stays inside s16.
  std::vector<int8_t> w(3 * 4, -64);
  std::vector<uint8_t> a(3, 255);
  MatMulU8S8Params params;
  params.wScale = {1.0f};
  ASSERT_TRUE(MatMulU8S8::create(4, 3, w.data(), WeightLayout::KN, params, mm).ok());
  float c4[4];
  ASSERT_TRUE(mm->run(a.data(), 1, 3, c4, 4).ok());
  EXPECT_EQ(c4[0], 255.f * -64 * 3);
}

TEST(MatMulU8S8OneDnn, ErrorsAreStatusesNotExceptions) {
  const int8_t w[6] = {1, 2, 3, 4, 5, 6};
  MatMulU8S8Params p;
  p.wScale = {1.0f};
  std::unique_ptr<MatMulU8S8> mm;
  auto expectError = [&](int64_t n, int64_t k, const int8_t *weights, const MatMulU8S8Params &q,
                         const char *needle) {
    Status s = MatMulU8S8::create(n, k, weights, WeightLayout::KN, q, mm);
    EXPECT_FALSE(s.ok()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    EXPECT_FALSE(mm);
  };
  expectError(0, 2, w, p, "positive");
  expectError(2, MatMulU8S8::kMaxK + 1, w, p, "overflow");
  expectError(2, 3, nullptr, p, "null weights");
  MatMulU8S8Params q = p;
  q.aZeroPoint = 256;
  expectError(2, 3, w, q, "a_zero_point");
  q = p, q.wScale = {1, 2, 3};
  expectError(2, 3, w, q, "weight scales");
  q = p, q.wScale = {std::numeric_limits<float>::infinity()};
  expectError(2, 3, w, q, "not finite");
  const float bias[2] = {1, 2};
  q = p, q.wScale = {0.0f}, q.bias = bias;
  expectError(2, 3, w, q, "bias");
  q = p, q.output = U8S8Output::U8, q.outScale = 0;
  expectError(2, 3, w, q, "out_scale");
  q = p, q.output = U8S8Output::S8, q.outZeroPoint = 128;
  expectError(2, 3, w, q, "out_zero_point");
  q = p, q.output = U8S8Output::U8, q.residual = true;
  expectError(2, 3, w, q, "residual");

  if (!octet::onednn::oneDnnHasInt8Vnni())
    return; // w fits in 7 bits, but keep the run checks to the normal host
  q = p, q.residual = true;
  ASSERT_TRUE(MatMulU8S8::create(2, 3, w, WeightLayout::KN, q, mm).ok());
  uint8_t a[6] = {1, 2, 3, 4, 5, 6};
  float c[4] = {}, r[4] = {10, 20, 30, 40};
  Status s = mm->run(a, 2, 3, c, 2); // residual missing
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("residual"), std::string::npos) << s.message();
  EXPECT_FALSE(mm->run(a, 2, 2, c, 2, r, 2).ok());     // lda < K
  EXPECT_FALSE(mm->run(a, 2, 3, c, 1, r, 2).ok());     // ldc < N
  EXPECT_FALSE(mm->run(a, 2, 3, c, 2, r, 1).ok());     // ldr < N
  EXPECT_FALSE(mm->run(a, 2, 3, c, 2, c + 1, 2).ok()); // residual overlaps C, not C
  EXPECT_FALSE(mm->run(a, 2, 3, a + 2, 2, r, 2).ok()); // A overlaps C
  EXPECT_FALSE(mm->run(a, -1, 3, c, 2, r, 2).ok());
  EXPECT_TRUE(mm->run(a, 0, 3, c, 2, r, 2).ok()); // M = 0: nothing to do
  s = mm->run(a, 2, 3, c, 2, r, 2);
  ASSERT_TRUE(s.ok()) << s.message();
  // B [3, 2] = {{1, 2}, {3, 4}, {5, 6}}.
  EXPECT_EQ(c[0], 1 * 1 + 2 * 3 + 3 * 5 + 10);
  EXPECT_EQ(c[3], 4 * 2 + 5 * 4 + 6 * 6 + 40);
}

// Behind the qlinear step's interface (Int8Gemm): the same results as the
// matmul itself, and its failures as exceptions carrying oneDNN's message.
TEST(MatMulU8S8OneDnn, Int8GemmAdapter) {
  if (!octet::onednn::oneDnnHasInt8Vnni())
    GTEST_SKIP() << "oneDNN's effective ISA lacks VNNI (NoVnni covers that)";
  const int8_t w[6] = {1, 2, 3, 4, 5, 6};
  MatMulU8S8Params p;
  p.wScale = {1.0f};
  p.residual = true;
  std::unique_ptr<MatMulU8S8> mm;
  ASSERT_TRUE(MatMulU8S8::create(2, 3, w, WeightLayout::KN, p, mm).ok());
  const MatMulU8S8 *raw = mm.get();
  const octet::onednn::Int8GemmOneDnn adapter(std::move(mm));
  const octet::Int8Gemm &gemm = adapter;
  EXPECT_STREQ(gemm.name(), "onednn");
  EXPECT_EQ(&adapter.matmul(), raw);
  uint8_t a[6] = {1, 2, 3, 4, 5, 6};
  float c[4] = {}, r[4] = {10, 20, 30, 40};
  gemm.run(a, 2, 3, c, 2, r, 2);
  EXPECT_EQ(c[0], 1 * 1 + 2 * 3 + 3 * 5 + 10); // B [3, 2] = {{1, 2}, {3, 4}, {5, 6}}
  EXPECT_EQ(c[3], 4 * 2 + 5 * 4 + 6 * 6 + 40);
  std::string error;
  try {
    gemm.run(a, 2, 3, c, 2); // residual missing
  } catch (const std::runtime_error &e) {
    error = e.what();
  }
  EXPECT_NE(error.find("residual"), std::string::npos) << error;
  EXPECT_NE(error.find("oneDNN"), std::string::npos) << error;
}

// The selection rule (docs/kernel-selection.md, INT8): the JIT whenever it runs;
// oneDNN otherwise, never for a per-row x_scale it cannot express.
TEST(MatMulU8S8OneDnn, SelectionRule) {
  EXPECT_FALSE(octet::onednn::preferOneDnnU8S8(true));
  EXPECT_FALSE(octet::onednn::preferOneDnnU8S8(true, true));
  EXPECT_TRUE(octet::onednn::preferOneDnnU8S8(false));
  EXPECT_FALSE(octet::onednn::preferOneDnnU8S8(false, true));
}

} // namespace
