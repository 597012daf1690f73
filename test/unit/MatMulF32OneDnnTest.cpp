//===- MatMulF32OneDnnTest.cpp - oneDNN FP32 GEMM provider vs a double reference -===//
//
// Runs on any x86-64 host (oneDNN dispatches to the host's ISA, AVX2 included).
//
// Tolerance: |C - ref| <= (K + 2) * FLT_EPSILON * (sum_k |A_ik B_kj| + |bias_j|
// + |res_ij|) per element, ref computed in double. That is the standard
// worst-case bound for a float sum of K + 2 terms in ANY order (gamma_n), so it
// holds whatever blocking or FMA use oneDNN picks, yet a dropped or doubled
// term (about sum/K) is far outside it.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/onednn/MatMulF32.h"

#include "test/unit/TestData.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <thread>
#include <vector>

using octet::onednn::MatMulF32;
using octet::onednn::Status;
using octet::onednn::WeightLayout;

namespace {

constexpr float kSentinel = -12345.5f;

/// B[k][n] (KN) stored in `layout`.
std::vector<float> store(const std::vector<float> &bKN, int64_t k, int64_t n,
                         WeightLayout layout) {
  if (layout == WeightLayout::KN)
    return bKN;
  std::vector<float> out(size_t(k * n));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j)
      out[size_t(j * k + i)] = bKN[size_t(i * n + j)];
  return out;
}

/// Padded A [m, lda] whose padding is NaN: reading past K would poison C.
std::vector<float> paddedA(const std::vector<float> &a, int64_t m, int64_t k, int64_t lda) {
  std::vector<float> out(size_t(m * lda), std::numeric_limits<float>::quiet_NaN());
  for (int64_t i = 0; i < m; ++i)
    std::memcpy(&out[size_t(i * lda)], &a[size_t(i * k)], size_t(k) * sizeof(float));
  return out;
}

struct Reference {
  std::vector<double> product, absSum; // [m, n]
};

Reference reference(const std::vector<float> &a, const std::vector<float> &bKN, int64_t m,
                    int64_t n, int64_t k) {
  Reference r{std::vector<double>(size_t(m * n)), std::vector<double>(size_t(m * n))};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const double av = a[size_t(i * k + p)];
      for (int64_t j = 0; j < n; ++j) {
        const double t = av * bKN[size_t(p * n + j)];
        r.product[size_t(i * n + j)] += t;
        r.absSum[size_t(i * n + j)] += std::fabs(t);
      }
    }
  return r;
}

/// Checks C [m, ldc] against the reference (+ bias, + residual [m, n] dense)
/// and that C's padding columns still hold the sentinel. Returns the worst
/// error / tolerance ratio.
double check(const std::vector<float> &c, int64_t m, int64_t n, int64_t k, int64_t ldc,
             const Reference &ref, const float *bias, const float *res, const char *what) {
  double worst = 0;
  int failures = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = ref.product[size_t(i * n + j)], mag = ref.absSum[size_t(i * n + j)];
      if (bias) {
        want += bias[j];
        mag += std::fabs(bias[j]);
      }
      if (res) {
        want += res[size_t(i * n + j)];
        mag += std::fabs(res[size_t(i * n + j)]);
      }
      const double tol = double(k + 2) * FLT_EPSILON * mag + 1e-30;
      const double got = c[size_t(i * ldc + j)];
      const double err = std::fabs(got - want);
      if (!(err <= tol) && failures++ < 5)
        ADD_FAILURE() << what << ": C[" << i << "][" << j << "] = " << got << ", want " << want
                      << " (tolerance " << tol << ")";
      worst = std::max(worst, std::isnan(err) ? INFINITY : err / tol);
    }
    for (int64_t j = n; j < ldc; ++j)
      if (std::memcmp(&c[size_t(i * ldc + j)], &kSentinel, sizeof(float)) != 0 && failures++ < 5)
        ADD_FAILURE() << what << ": padding C[" << i << "][" << j << "] was written";
  }
  return worst;
}

std::unique_ptr<MatMulF32> make(int64_t n, int64_t k, const float *w, WeightLayout layout,
                                const float *bias, bool residual) {
  std::unique_ptr<MatMulF32> mm;
  Status s = MatMulF32::create(n, k, w, layout, bias, residual, mm);
  EXPECT_TRUE(s.ok()) << s.message();
  return mm;
}

TEST(MatMulF32OneDnn, OddShapesAgainstDoubleReference) {
  const int64_t ms[] = {1, 7, 31, 129}, ns[] = {1, 17, 100, 768}, ks[] = {1, 3, 64, 768};
  const int64_t maxM = 129;
  double worst = 0;
  bool printed = false;
  for (int64_t n : ns)
    for (int64_t k : ks) {
      const std::vector<float> aAll = octet::test::randomFloats(size_t(maxM * k), uint32_t(n * 1000 + k));
      const std::vector<float> bKN = octet::test::randomFloats(size_t(k * n), uint32_t(n * 7 + k * 13 + 1));
      const std::vector<float> bias = octet::test::randomFloats(size_t(n), uint32_t(n + 5));
      const std::vector<float> resAll = octet::test::randomFloats(size_t(maxM * n), uint32_t(n * 31 + k));
      for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK}) {
        const std::vector<float> w = store(bKN, k, n, layout);
        for (bool withBias : {false, true})
          for (bool withRes : {false, true}) {
            // One primitive per (N, K, layout, epilogue), reused for every M.
            auto mm = make(n, k, w.data(), layout, withBias ? bias.data() : nullptr, withRes);
            ASSERT_TRUE(mm);
            if (!printed && n == 768 && k == 768 && layout == WeightLayout::NK) {
              std::cout << "[ oneDNN  ] implementation " << mm->implementation()
                        << ", weights " << mm->weightsFormat() << "\n";
              printed = true;
            }
            for (int64_t m : ms) {
              const int64_t lda = k + 3, ldc = n + 5, ldr = n + 2;
              std::vector<float> a(aAll.begin(), aAll.begin() + m * k);
              const std::vector<float> aPad = paddedA(a, m, k, lda);
              std::vector<float> res(resAll.begin(), resAll.begin() + m * n);
              std::vector<float> resPad(size_t(m * ldr), 0.f);
              for (int64_t i = 0; i < m; ++i)
                std::memcpy(&resPad[size_t(i * ldr)], &res[size_t(i * n)], size_t(n) * 4);
              std::vector<float> c(size_t(m * ldc), kSentinel);
              Status s = mm->run(aPad.data(), m, lda, c.data(), ldc,
                                 withRes ? resPad.data() : nullptr, withRes ? ldr : 0);
              ASSERT_TRUE(s.ok()) << s.message();
              const Reference ref = reference(a, bKN, m, n, k);
              std::string what = "M=" + std::to_string(m) + " N=" + std::to_string(n) +
                                 " K=" + std::to_string(k) +
                                 (layout == WeightLayout::KN ? " KN" : " NK") +
                                 (withBias ? " bias" : "") + (withRes ? " residual" : "");
              worst = std::max(worst, check(c, m, n, k, ldc, ref,
                                            withBias ? bias.data() : nullptr,
                                            withRes ? res.data() : nullptr, what.c_str()));
            }
          }
      }
    }
  std::cout << "[ oneDNN  ] worst |error| / tolerance: " << worst << "\n";
}

TEST(MatMulF32OneDnn, InPlaceResidual) {
  // residual == C (same pointer and stride): the sum post-op primitive.
  const int64_t m = 31, n = 100, k = 64, ldc = n + 3;
  const auto a = octet::test::randomFloats(size_t(m * k), 1), bKN = octet::test::randomFloats(size_t(k * n), 2),
             bias = octet::test::randomFloats(size_t(n), 3), res = octet::test::randomFloats(size_t(m * n), 4);
  for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK}) {
    const auto w = store(bKN, k, n, layout);
    auto mm = make(n, k, w.data(), layout, bias.data(), true);
    ASSERT_TRUE(mm);
    std::vector<float> c(size_t(m * ldc), kSentinel);
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(&c[size_t(i * ldc)], &res[size_t(i * n)], size_t(n) * 4);
    Status s = mm->run(a.data(), m, k, c.data(), ldc, c.data(), ldc);
    ASSERT_TRUE(s.ok()) << s.message();
    check(c, m, n, k, ldc, reference(a, bKN, m, n, k), bias.data(), res.data(), "in place");
    // The same object, then a distinct residual (binary post-op path).
    std::vector<float> c2(size_t(m * ldc), kSentinel);
    s = mm->run(a.data(), m, k, c2.data(), ldc, res.data(), n);
    ASSERT_TRUE(s.ok()) << s.message();
    check(c2, m, n, k, ldc, reference(a, bKN, m, n, k), bias.data(), res.data(), "distinct");
  }
}

TEST(MatMulF32OneDnn, ConcurrentRunsOnOneObject) {
  const int64_t n = 768, k = 768;
  const auto bKN = octet::test::randomFloats(size_t(k * n), 11), bias = octet::test::randomFloats(size_t(n), 12);
  const auto w = store(bKN, k, n, WeightLayout::NK);
  auto mm = make(n, k, w.data(), WeightLayout::NK, bias.data(), true);
  ASSERT_TRUE(mm);
  const int kThreads = 4;
  const int64_t ms[kThreads] = {1, 31, 129, 200};
  std::vector<std::vector<float>> as, ress, expected(kThreads), got(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    as.push_back(octet::test::randomFloats(size_t(ms[t] * k), 100 + t));
    ress.push_back(octet::test::randomFloats(size_t(ms[t] * n), 200 + t));
    expected[t].assign(size_t(ms[t] * n), kSentinel);
    Status s = mm->run(as[t].data(), ms[t], k, expected[t].data(), n, ress[t].data(), n);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  std::vector<std::string> errors(kThreads);
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        std::vector<float> c(size_t(ms[t] * n), kSentinel);
        Status s = mm->run(as[t].data(), ms[t], k, c.data(), n, ress[t].data(), n);
        if (!s.ok()) {
          errors[t] = s.message();
          return;
        }
        if (std::memcmp(c.data(), expected[t].data(), c.size() * sizeof(float)) != 0)
          ++mismatches[t];
      }
    });
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_EQ(mismatches[t], 0) << "thread " << t << " (M = " << ms[t]
                                << ") differed bitwise from the serial run";
    check(expected[t], ms[t], n, k, n, reference(as[t], bKN, ms[t], n, k), bias.data(),
          ress[t].data(), "serial");
  }
}

TEST(MatMulF32OneDnn, ErrorsAreStatusesNotExceptions) {
  std::unique_ptr<MatMulF32> mm;
  const float w[4] = {1, 2, 3, 4};
  Status s = MatMulF32::create(0, 2, w, WeightLayout::KN, nullptr, false, mm);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("positive"), std::string::npos) << s.message();
  EXPECT_FALSE(mm);
  EXPECT_FALSE(MatMulF32::create(2, 2, nullptr, WeightLayout::KN, nullptr, false, mm).ok());

  ASSERT_TRUE(MatMulF32::create(2, 2, w, WeightLayout::KN, nullptr, true, mm).ok());
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, c[8] = {}, r[8] = {};
  s = mm->run(a, 2, 2, c, 2); // residual missing
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("residual"), std::string::npos) << s.message();
  EXPECT_FALSE(mm->run(a, 2, 1, c, 2, r, 2).ok()); // lda < K
  EXPECT_FALSE(mm->run(a, 2, 2, c, 1, r, 2).ok()); // ldc < N
  EXPECT_FALSE(mm->run(a, 2, 2, c, 2, r, 1).ok()); // ldr < N
  EXPECT_FALSE(mm->run(a, 2, 2, c, 2, c + 1, 2).ok()); // residual overlaps C, not C
  EXPECT_FALSE(mm->run(a, 2, 2, a + 2, 2, r, 2).ok()); // A overlaps C
  EXPECT_FALSE(mm->run(a, -1, 2, c, 2, r, 2).ok());
  EXPECT_TRUE(mm->run(a, 0, 2, c, 2, r, 2).ok()); // M = 0: nothing to do
  s = mm->run(a, 2, 2, c, 2, r, 2);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_FLOAT_EQ(c[0], 1 * 1 + 2 * 3);
  EXPECT_FLOAT_EQ(c[3], 3 * 2 + 4 * 4);
}

} // namespace
