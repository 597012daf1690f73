//===- GemmBf16Test.cpp - f32 x bf16 GEMM (vdpbf16ps) against a reference -===//
//
// Reference: double sums of the bf16-rounded operands (toBf16: round to
// nearest even), i.e. what the kernel must compute up to f32 summation. The
// products of two bf16 values are exact in f32, so the kernel's only error is
// its f32 additions: |error| <= 2^-23 * (K + 2) * (sum|a*b| + |bias| +
// |residual|), as GemmF32Test allows. An input that was not rounded to bf16
// (or rounded differently) is off by up to 2^-9 relative: far outside it.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/GemmBf16.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"

#include "test/unit/GemmVariants.h"
#include "test/unit/TestData.h"
#include "test/unit/ThreadCount.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <tuple>
#include <type_traits>

using namespace octet::x86;

namespace {

#define SKIP_WITHOUT_AVX512_BF16()                                                                 \
  if (!GemmBf16::hostSupported())                                                                  \
  GTEST_SKIP() << "host lacks AVX512-BF16 (has: " << CpuFeatures::host().describe() << ")"

const uint32_t kCanary = 0x7fc0dead;
float canary() {
  float f;
  std::memcpy(&f, &kCanary, sizeof f);
  return f;
}
double bf16(float f) { return fromBf16(toBf16(f)); }

struct Problem {
  int64_t m, n, k, lda, ldc, ldr;
  std::vector<float> a, bKN, bNK, bias, residual;
  std::vector<double> product, absProduct; // [m][n], of the bf16-rounded operands

  Problem(int64_t m, int64_t n, int64_t k)
      : m(m), n(n), k(k), lda(k + 3), ldc(n + 5), ldr(n + 2), a(m * lda),
        bKN(octet::test::randomFloats(k * n, 2)), bNK(k * n), bias(octet::test::randomFloats(n, 3)),
        residual(m * ldr), product(m * n), absProduct(m * n) {
    // Padding past K in A's rows is NaN: reading it would poison the sums.
    std::vector<float> dense = octet::test::randomFloats(m * k, 1);
    std::vector<float> res = octet::test::randomFloats(m * n, 4);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t kk = 0; kk < lda; ++kk)
        a[i * lda + kk] = kk < k ? dense[i * k + kk] : std::numeric_limits<float>::quiet_NaN();
      for (int64_t j = 0; j < ldr; ++j)
        residual[i * ldr + j] = j < n ? res[i * n + j] : std::numeric_limits<float>::quiet_NaN();
    }
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j)
        bNK[j * k + kk] = bKN[kk * n + j];
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk) {
        const double ai = bf16(a[i * lda + kk]);
        for (int64_t j = 0; j < n; ++j) {
          const double p = ai * bf16(bKN[kk * n + j]);
          product[i * n + j] += p;
          absProduct[i * n + j] += std::fabs(p);
        }
      }
  }

  /// Runs `gemm` into a fresh C (canaries in its padding and past its end) and
  /// checks every element against f(reference) (or f(reference, column)).
  template <typename F>
  void check(const GemmBf16 &gemm, bool withBias, bool withResidual, F f, const std::string &what,
             const float *const *columns = nullptr) const {
    const int64_t guard = 64;
    std::vector<float> c(m * ldc + guard, canary());
    gemm.run(a.data(), m, lda, c.data(), ldc, withResidual ? residual.data() : nullptr, ldr,
             columns);
    int failures = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double ref = product[i * n + j], mag = absProduct[i * n + j];
        if (withBias)
          ref += bias[j], mag += std::fabs(bias[j]);
        if (withResidual)
          ref += residual[i * ldr + j], mag += std::fabs(residual[i * ldr + j]);
        double want, tol = std::ldexp(1.0, -23) * (k + 2) * mag + 1e-30;
        if constexpr (std::is_invocable_v<F, double, int64_t>)
          want = f(ref, j), tol += std::ldexp(1.0, -23) * std::fabs(want);
        else
          want = f(ref);
        const float got = c[i * ldc + j];
        if (!(std::fabs(got - want) <= tol) && failures++ < 5)
          ADD_FAILURE() << what << ": C[" << i << "][" << j << "] = " << got << ", want " << want
                        << " +- " << tol;
      }
      const int64_t padEnd = i + 1 < m ? ldc : ldc + guard;
      for (int64_t j = n; j < padEnd; ++j)
        if (std::memcmp(&c[i * ldc + j], &kCanary, 4) != 0 && failures++ < 5)
          ADD_FAILURE() << what << ": wrote padding C[" << i << "][" << j << "]";
    }
  }
};

double identity(double x) { return x; }

class GemmBf16Shapes : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

// Tails in M (rows past a multiple of MR), N (past a multiple of NR = 32/48)
// and K (odd: the last pair half zero; 769 also in four K blocks of at most 196,
// the last of odd length), both weight orders, every epilogue, 1 and 2 threads.
TEST_P(GemmBf16Shapes, MatchesBf16Reference) {
  SKIP_WITHOUT_AVX512_BF16();
  auto [m, n, k] = GetParam();
  Problem p(m, n, k);
  // K blocks: the blocking rule's (one up to K = 1365 on a 32 KiB L1d), and 256 at most.
  octet::test::forEachGemmVariant(
      k, 256,
      [&](WeightLayout layout) {
        return packBf16(layout == WeightLayout::KN ? p.bKN.data() : p.bNK.data(), k, n, layout);
      },
      [&](const PackedBf16Weights &packed, GemmF32Epilogue epilogue, bool withBias,
          int64_t maxKBlock) {
        return GemmBf16(n, k, packed.data(), epilogue, withBias ? p.bias.data() : nullptr,
                        maxKBlock);
      },
      [&](const GemmBf16 &gemm, bool withBias, bool withResidual, const std::string &what) {
        p.check(gemm, withBias, withResidual, identity, what);
      });
}

INSTANTIATE_TEST_SUITE_P(OddShapes, GemmBf16Shapes,
                         ::testing::Combine(::testing::Values(1, 7, 13, 31, 129),
                                            ::testing::Values(1, 17, 48, 100, 768),
                                            ::testing::Values(1, 3, 17, 64, 769)),
                         octet::test::MnkName());

// Packing is plain C++: checked on every host. Element (k, col) lies in panel
// col / NR at pair k / 2, lane col % NR, half k % 2; the odd K's last pair
// and the columns past N are zero; values are rounded to nearest even.
TEST(GemmBf16, PackLayoutBothWeightOrders) {
  const int64_t k = 5, n = 37;
  const int64_t nr = gemmF32PanelWidth(n), panels = (n + nr - 1) / nr, pairs = (k + 1) / 2;
  std::vector<float> bKN(k * n), bNK(n * k);
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t col = 0; col < n; ++col)
      bKN[kk * n + col] = bNK[col * k + kk] = 1.0f + float(kk * 100 + col) / 1024.0f;
  for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK}) {
    PackedBf16Weights packed =
        packBf16(layout == WeightLayout::KN ? bKN.data() : bNK.data(), k, n, layout);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(packed.data()) % 64, 0u);
    ASSERT_EQ(int64_t(packed.size()), packedBf16Elements(k, n));
    ASSERT_EQ(int64_t(packed.size()), panels * pairs * nr * 2);
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t pair = 0; pair < pairs; ++pair)
        for (int64_t j = 0; j < nr; ++j)
          for (int64_t half = 0; half < 2; ++half) {
            const int64_t col = p * nr + j, kk = pair * 2 + half;
            const uint16_t want = col < n && kk < k ? toBf16(bKN[kk * n + col]) : 0;
            ASSERT_EQ(packed[((p * pairs + pair) * nr + j) * 2 + half], want)
                << "panel " << p << " k " << kk << " col " << col;
          }
  }
}

// The activations are rounded to nearest even, not truncated: 1 + 3·2^-8 lies
// halfway between 1 + 2^-7 and 1 + 2^-6 and must become the even 1 + 2^-6;
// 1 + 2^-8 + 2^-12 is above halfway and must round up to 1 + 2^-7 (truncation
// gives 1 for it); f32 arithmetic would give both exactly.
TEST(GemmBf16, ActivationsRoundToNearestEven) {
  SKIP_WITHOUT_AVX512_BF16();
  const float a[2] = {1.0f + 3.0f / 256.0f, 1.0f + 1.0f / 256.0f + 1.0f / 4096.0f};
  const float b = 1.0f;
  PackedBf16Weights packed = packBf16(&b, 1, 1, WeightLayout::KN);
  GemmBf16 gemm(1, 1, packed.data());
  float c[2] = {0, 0};
  gemm.run(a, 2, 1, c, 1);
  EXPECT_EQ(c[0], 1.0f + 1.0f / 64.0f);
  EXPECT_EQ(c[1], 1.0f + 1.0f / 128.0f);
}

// A fused program with per-column inputs (acc * in1 + in2) after bias and
// residual: the f32 GEMM's epilogue code on the bf16 tiles.
TEST(GemmBf16, ProgramEpilogueWithColumnInputs) {
  SKIP_WITHOUT_AVX512_BF16();
  using Op = octet::rt::ElementwiseProgram::Op;
  octet::rt::ElementwiseProgram program;
  program.numInputs = 3;
  program.instrs = {{Op::Input, 0, -1, 0},
                    {Op::Input, 1, -1, 0},
                    {Op::Mul, 0, 1, 0},
                    {Op::Input, 2, -1, 0},
                    {Op::Add, 2, 3, 0}};
  std::string error;
  auto epilogue = ProgramEpilogue::create(program, error, {false, true, true});
  ASSERT_TRUE(epilogue) << error;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{31, 100, 64}, {13, 17, 9}}) {
    Problem p(m, n, k);
    std::vector<float> in1(n), in2 = octet::test::randomFloats(n, 7);
    for (int64_t j = 0; j < n; ++j)
      in1[j] = std::ldexp(1.0f, -int(j % 3)); // exact products: the error bound holds
    const float *columns[] = {in1.data(), in2.data()};
    PackedBf16Weights packed = packBf16(p.bNK.data(), k, n, WeightLayout::NK);
    GemmF32Epilogue e;
    e.residual = true;
    e.elementwise = epilogue.get();
    GemmBf16 gemm(n, k, packed.data(), e, p.bias.data());
    EXPECT_EQ(gemm.mr(), GemmF32Avx512::maxRows(gemm.nr(), epilogue->scratchZmmCount()));
    octet::test::ThreadCount scope(2);
    p.check(
        gemm, true, true, [&](double x, int64_t j) { return x * in1[j] + in2[j]; },
        "columns M " + std::to_string(m) + " N " + std::to_string(n), columns);
    EXPECT_THROW(p.check(gemm, true, true, identity, "no columns"), std::invalid_argument);
  }
}

TEST(GemmBf16, FirstReadsAreTheConversionAndTheFirstRowTilesKernels) {
  SKIP_WITHOUT_AVX512_BF16();
  const int64_t n = 100, k = 64; // a tail panel
  const std::vector<float> b = octet::test::randomFloats(k * n, 8);
  PackedBf16Weights packed = packBf16(b.data(), k, n, WeightLayout::KN);
  GemmBf16 gemm(n, k, packed.data());
  octet::test::checkFirstReads(gemm, n, k, 2, gemm.convertCode());
}

// A bf16 linear's GELU (GeluAccuracy::ForBf16) is the fast one at the
// result's own scale: never doubled (ForRequantize doubles a lone GELU, the
// requantize dividing it out; an f32 result has none), not marked for a
// requantized output only, and named in the kernel.
TEST(GemmBf16, FastGeluForBf16LinearsIsNeverDoubled) {
  using Op = octet::rt::ElementwiseProgram::Op;
  octet::rt::ElementwiseProgram gelu;
  gelu.numInputs = 1;
  gelu.instrs = {{Op::Input, 0, -1, 0}, {Op::GeluErf, 0, -1, 0}};
  std::string error;
  auto requant = ProgramEpilogue::create(gelu, error, {}, octet::x86::GeluAccuracy::ForRequantize);
  auto bf16 = ProgramEpilogue::create(gelu, error, {}, octet::x86::GeluAccuracy::ForBf16);
  auto full = ProgramEpilogue::create(gelu, error, {});
  ASSERT_TRUE(requant && bf16 && full) << error;
  EXPECT_EQ(requant->resultScale(), 2.0f);
  EXPECT_TRUE(requant->requantizedOutputOnly());
  EXPECT_EQ(bf16->resultScale(), 1.0f);
  EXPECT_FALSE(bf16->requantizedOutputOnly());
  EXPECT_TRUE(bf16->fastGelu());
  EXPECT_FALSE(full->fastGelu());
  GemmF32Avx512Config config{3, 48, 48, true, false, bf16.get(), 0};
  EXPECT_EQ(GemmBf16Avx512(config).name(), "gemm_bf16_avx512_m3n48c48_bias_elementwise_fastgelu");
  config.elementwise = full.get();
  EXPECT_EQ(GemmBf16Avx512(config).name(), "gemm_bf16_avx512_m3n48c48_bias_elementwise");
}

// The kernels are named for AOT replay and disassembly, and tagged with the
// ISA they need.
TEST(GemmBf16, KernelNamesAndIsa) {
  GemmF32Avx512Config config{3, 48, 20, true, true, nullptr, 0};
  GemmBf16Avx512 kernel(config);
  EXPECT_EQ(kernel.name(), "gemm_bf16_avx512_m3n48c20_bias_residual");
  EXPECT_EQ(kernel.isa(), Isa::Avx512Bf16);
  EXPECT_GT(kernel.codeSize(), 0u); // generating needs no AVX512-BF16
}

} // namespace
