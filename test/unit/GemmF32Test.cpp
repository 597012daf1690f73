//===- GemmF32Test.cpp - AVX-512 FP32 GEMM against a scalar reference -----===//
//
// Tolerance: blocked FMA summation of K products has |error| <= gamma_K *
// sum|a*b| with gamma_K ~ K * 2^-24 (Higham, recursive summation); we allow
// 2^-23 * (K + 2) * (sum|a*b| + |bias| + |residual|), i.e. twice that bound
// with two more additions for the epilogue.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/GemmF32.h"
#include "compiler/codegen/x86/KernelGenerator.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"

#include "test/unit/GemmVariants.h"
#include "test/unit/TestData.h"
#include "test/unit/ThreadCount.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <tuple>
#include <type_traits>

using namespace octet::x86;

namespace {

#define SKIP_WITHOUT_AVX512()                                                                      \
  if (!CpuFeatures::host().supports(Isa::Avx512))                                                  \
  GTEST_SKIP() << "host lacks AVX-512 F/BW/VL/DQ"

// Padding between rows must never be read (NaN would poison a sum) nor written.
const float kPad = std::numeric_limits<float>::quiet_NaN();
const uint32_t kCanary = 0x7fc0dead;

/// A [rows x cols] matrix with row stride ld; the padding holds `pad`.
std::vector<float> padded(int64_t rows, int64_t cols, int64_t ld, unsigned seed, float pad) {
  std::vector<float> dense = octet::test::randomFloats(rows * cols, seed), m(rows * ld, pad);
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(dense.data() + r * cols, cols, m.data() + r * ld);
  return m;
}

float canary() {
  float f;
  std::memcpy(&f, &kCanary, sizeof f);
  return f;
}

struct Problem {
  int64_t m, n, k, lda, ldc, ldr;
  std::vector<float> a, bKN, bNK, bias, residual;
  std::vector<double> product, absProduct; // [m][n]

  Problem(int64_t m, int64_t n, int64_t k)
      : m(m), n(n), k(k), lda(k + 3), ldc(n + 5), ldr(n + 2), a(padded(m, k, lda, 1, kPad)),
        bKN(octet::test::randomFloats(k * n, 2)), bNK(k * n), bias(octet::test::randomFloats(n, 3)),
        residual(padded(m, n, ldr, 4, kPad)), product(m * n), absProduct(m * n) {
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j)
        bNK[j * k + kk] = bKN[kk * n + j];
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t kk = 0; kk < k; ++kk) {
          double p = double(a[i * lda + kk]) * bKN[kk * n + j];
          product[i * n + j] += p;
          absProduct[i * n + j] += std::fabs(p);
        }
  }

  /// Runs `gemm` into a fresh C (canaries in its padding and past its end) and
  /// checks every element against the reference passed through `f` (f(ref),
  /// or f(ref, column) for a program with per-column inputs `columns`; one
  /// more rounding of the result is allowed for it).
  template <typename F>
  void check(const GemmF32 &gemm, bool withBias, bool withResidual, F f, const std::string &what,
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
        float got = c[i * ldc + j];
        if (!(std::fabs(got - want) <= tol) && failures++ < 5)
          ADD_FAILURE() << what << ": C[" << i << "][" << j << "] = " << got << ", want " << want
                        << " +- " << tol;
      }
      int64_t padEnd = i + 1 < m ? ldc : ldc + guard;
      for (int64_t j = n; j < padEnd; ++j)
        if (std::memcmp(&c[i * ldc + j], &kCanary, 4) != 0 && failures++ < 5)
          ADD_FAILURE() << what << ": wrote padding C[" << i << "][" << j << "]";
    }
  }
};

using octet::test::ThreadCount;

double identity(double x) { return x; }

class GemmF32Shapes : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(GemmF32Shapes, MatchesReference) {
  SKIP_WITHOUT_AVX512();
  auto [m, n, k] = GetParam();
  Problem p(m, n, k);
  // K blocks: the blocking rule's (768 in two on a 32 KiB L1d), and 64 at most.
  octet::test::forEachGemmVariant(
      k, 64,
      [&](WeightLayout layout) {
        return packB(layout == WeightLayout::KN ? p.bKN.data() : p.bNK.data(), k, n, layout);
      },
      [&](const PackedWeights &packed, GemmF32Epilogue epilogue, bool withBias, int64_t maxKBlock) {
        return GemmF32(n, k, packed.data(), epilogue, withBias ? p.bias.data() : nullptr,
                       maxKBlock);
      },
      [&](const GemmF32 &gemm, bool withBias, bool withResidual, const std::string &what) {
        p.check(gemm, withBias, withResidual, identity, what);
      });
}

INSTANTIATE_TEST_SUITE_P(OddShapes, GemmF32Shapes,
                         ::testing::Combine(::testing::Values(1, 2, 7, 13, 31, 64, 129),
                                            ::testing::Values(1, 5, 16, 17, 33, 48, 100, 768),
                                            ::testing::Values(1, 3, 16, 17, 64, 100, 768)),
                         octet::test::MnkName());

TEST(GemmF32, PanelWidthPadsLeast) {
  EXPECT_EQ(gemmF32PanelWidth(768), 48);
  EXPECT_EQ(gemmF32PanelWidth(100), 32); // 128 columns, not 144
  EXPECT_EQ(gemmF32PanelWidth(33), 48);  // 48, not 64
  EXPECT_EQ(gemmF32PanelWidth(1), 32);
}

// Packing is plain C++: checked on every host. Element (k, col) of panel p is at
// [p][k][col % NR]; columns past N are zero; storage is cache-line aligned.
TEST(GemmF32, PackBLayoutBothWeightOrders) {
  const int64_t k = 5, n = 37;
  const int64_t nr = gemmF32PanelWidth(n), panels = (n + nr - 1) / nr;
  std::vector<float> bKN(k * n), bNK(n * k);
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t col = 0; col < n; ++col)
      bKN[kk * n + col] = bNK[col * k + kk] = static_cast<float>(1 + kk * 100 + col);
  for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK}) {
    PackedWeights packed =
        packB(layout == WeightLayout::KN ? bKN.data() : bNK.data(), k, n, layout);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(packed.data()) % 64, 0u);
    ASSERT_EQ(static_cast<int64_t>(packed.size()), panels * k * nr);
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < nr; ++j) {
          int64_t col = p * nr + j;
          float expected = col < n ? bKN[kk * n + col] : 0.0f;
          ASSERT_EQ(packed[(p * k + kk) * nr + j], expected)
              << "panel " << p << " k " << kk << " j " << j;
        }
  }
}

// The kernels prefetch the next B slice, two lines per unrolled K step, into
// L2 (names ending _pf2) or into L1 and L2 (_pf2l1, AMD hosts' set); an image
// holds both sets, a JIT driver this host's only. A prefetch address that is
// null, unmapped or a page without access is never loaded: the results match.
TEST(GemmF32, KernelsPrefetchTheNextSliceInTwoSets) {
  GemmF32Avx512Config config{3, 48, 20, true, false, nullptr, 0};
  EXPECT_EQ(GemmF32Avx512(config).name(), "gemm_f32_avx512_m3n48c20_bias");
  config.bPrefetchLines = 2;
  EXPECT_EQ(GemmF32Avx512(config).name(), "gemm_f32_avx512_m3n48c20_bias_pf2");
  config.bPrefetchToL1 = true;
  EXPECT_EQ(GemmF32Avx512(config).name(), "gemm_f32_avx512_m3n48c20_bias_pf2l1");

  const int64_t n = 100, k = 40;
  const std::vector<float> b = octet::test::randomFloats(k * n, 3);
  PackedWeights packed = packB(b.data(), k, n, WeightLayout::KN);
  {
    KernelCodeCapture capture;
    GemmF32 image(n, k, packed.data());
    ASSERT_EQ(capture.kernels().size(), size_t(2 * image.mr() * 2));
    // The prefetcht1 set first, then the prefetcht0 one: each name ends so.
    for (size_t i = 0; i < capture.kernels().size(); ++i) {
      const std::string &name = capture.kernels()[i].name;
      const std::string end = i < capture.kernels().size() / 2 ? "_pf2" : "_pf2l1";
      EXPECT_EQ(name.substr(name.size() - std::min(name.size(), end.size())), end) << name;
    }
  }
  SKIP_WITHOUT_AVX512();
  GemmF32 jit(n, k, packed.data());
  EXPECT_NE(jit.kernelCode(1, false).first, nullptr); // the host's set, generated

  const int rows = 3;
  const std::vector<float> a = octet::test::randomFloats(rows * k, 4),
                           b48 = octet::test::randomFloats(k * 48, 5);
  PackedWeights panel = packB(b48.data(), k, 48, WeightLayout::KN); // one panel of 48
  ASSERT_EQ(GemmF32(48, k, panel.data()).nr(), 48);
  const long page = sysconf(_SC_PAGESIZE);
  void *guard = mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(guard, MAP_FAILED);
  for (bool toL1 : {false, true})
    for (const void *target : {static_cast<const void *>(nullptr), static_cast<const void *>(guard),
                               reinterpret_cast<const void *>(uintptr_t(0xdead0000))}) {
      GemmF32Avx512Config c{rows, 48, 48, false, false, nullptr, 0, 2, toL1};
      GemmF32Avx512 kernel(c);
      std::vector<float> got(rows * 48, -1.0f), want(rows * 48, -1.0f);
      // A call moves its block's row fields on (GemmF32Args::tiles): one each.
      GemmF32Args args{a.data(), panel.data(), got.data(), nullptr, nullptr, k, 48, 0, k, 0, 1,
                       nullptr, target};
      kernel.entry<GemmF32KernelFn>()(&args);
      c.bPrefetchLines = 0;
      GemmF32Avx512 plain(c);
      GemmF32Args plainArgs{a.data(), panel.data(), want.data(), nullptr, nullptr, k, 48, 0, k,
                            0,        1,            nullptr};
      plain.entry<GemmF32KernelFn>()(&plainArgs);
      EXPECT_EQ(got, want) << "prefetch target " << target << (toL1 ? ", into L1" : "");
    }
  munmap(guard, page);
}

// The slice after K block kb of panel p: the panel's next block (the last one
// shorter), else the next panel's first block, panel 0 after the last.
// One call runs a run of row tiles: the kernel moves A, C, the residual and
// the prefetch on from tile to tile in the caller's block.
TEST(GemmF32, OneCallRunsSeveralRowTiles) {
  SKIP_WITHOUT_AVX512();
  const int rows = 3, tiles = 4, m = rows * tiles;
  const int64_t k = 10, n = 20, lda = 12, ldc = 24, ldr = 28; // 10: 2 unrolled steps, 2 more
  std::vector<float> a(m * lda), b(k * n), bias(32, 0.0f), residual(m * ldr);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(int(i % 7) - 3); // small integers: every sum is exact
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i % 5) - 2);
  for (int64_t j = 0; j < n; ++j)
    bias[j] = float(j);
  for (size_t i = 0; i < residual.size(); ++i)
    residual[i] = float(int(i % 11));
  PackedWeights panel = packB(b.data(), k, n, WeightLayout::KN); // one panel of 32
  GemmF32Avx512 kernel(GemmF32Avx512Config{rows, 32, int(n), true, true, nullptr, 0, 2, true});
  std::vector<float> c(m * ldc, -1.0f);
  const float *next = panel.data() + 1024;
  GemmF32Args args{a.data(), panel.data(), c.data(), bias.data(), residual.data(), lda, ldc, ldr,
                   k,        0,            1,        nullptr,     next};
  args.tiles = tiles, args.prefetchLeft = 100, args.prefetchStep = 64;
  kernel.entry<GemmF32KernelFn>()(&args);
  for (int i = 0; i < m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      float want = -1.0f; // past N: untouched
      if (j < n) {
        want = bias[j] + residual[i * ldr + j];
        for (int64_t kk = 0; kk < k; ++kk)
          want += a[i * lda + kk] * b[kk * n + j];
      }
      ASSERT_EQ(c[i * ldc + j], want) << "C[" << i << "][" << j << "]";
    }
  EXPECT_EQ(args.a, a.data() + m * lda);
  EXPECT_EQ(args.c, c.data() + m * ldc);
  EXPECT_EQ(args.residual, residual.data() + m * ldr);
  EXPECT_EQ(args.prefetchLeft, 100 - tiles * 64);
  EXPECT_EQ(args.bPrefetch, panel.data()) << "past the next slice: the own one";
  EXPECT_LE(args.tiles, 0);

  // While bytes of the next slice are left, each tile's prefetch starts where
  // the tile before stopped.
  args.a = a.data(), args.c = c.data(), args.residual = residual.data();
  args.bPrefetch = next, args.prefetchLeft = 200, args.tiles = 2;
  kernel.entry<GemmF32KernelFn>()(&args);
  EXPECT_EQ(args.bPrefetch, reinterpret_cast<const char *>(next) + 128);
  EXPECT_EQ(args.prefetchLeft, 72);
}

TEST(GemmF32, NextPanelSlice) {
  alignas(64) static char packed[4096];
  // 3 panels of 1000 bytes, K blocks of 300 (the last 100).
  const PanelGeometry g{1000, 300, 100};
  NextSlice s = nextPanelSlice(packed, 1, 3, 0, 4, g);
  EXPECT_EQ(s.data, packed + 1300);
  EXPECT_EQ(s.bytes, 300);
  s = nextPanelSlice(packed, 1, 3, 2, 4, g);
  EXPECT_EQ(s.data, packed + 1900);
  EXPECT_EQ(s.bytes, 100);
  s = nextPanelSlice(packed, 1, 3, 3, 4, g);
  EXPECT_EQ(s.data, packed + 2000);
  EXPECT_EQ(s.bytes, 300);
  s = nextPanelSlice(packed, 2, 3, 3, 4, g);
  EXPECT_EQ(s.data, packed);
  EXPECT_EQ(s.bytes, 300);
  s = nextPanelSlice(packed, 0, 3, 0, 1, {1000, 1000, 1000}); // one K block
  EXPECT_EQ(s.data, packed + 1000);
  EXPECT_EQ(s.bytes, 1000);
}

// f32: K elements of 4 bytes; bf16: pairs in 4 bytes, an odd K's last pair half padding.
TEST(GemmF32, PanelGeometry) {
  PanelGeometry f32 = PanelGeometry::of(1000, 384, 16, 1);
  EXPECT_EQ(f32.panelBytes, 1000 * 64);
  EXPECT_EQ(f32.kcBytes, 384 * 64);
  EXPECT_EQ(f32.lastKBytes, (1000 - 768) * 64);
  PanelGeometry bf16 = PanelGeometry::of(1001, 384, 16, 2);
  EXPECT_EQ(bf16.panelBytes, 501 * 64);
  EXPECT_EQ(bf16.kcBytes, 192 * 64);
  EXPECT_EQ(bf16.lastKBytes, 117 * 64); // 233 elements: 117 pairs
  PanelGeometry one = PanelGeometry::of(45, 45, 32, 1);
  EXPECT_EQ(one.lastKBytes, one.panelBytes);
}

TEST(GemmF32, FirstReadsAreTheFirstRowTilesKernels) {
  SKIP_WITHOUT_AVX512();
  const int64_t n = 100, k = 64; // a tail panel
  const std::vector<float> b = octet::test::randomFloats(k * n, 8);
  PackedWeights packed = packB(b.data(), k, n, WeightLayout::KN);
  GemmF32 gemm(n, k, packed.data());
  octet::test::checkFirstReads(gemm, n, k, 4, {nullptr, 0});
}

TEST(GemmF32, TightStrides) {
  SKIP_WITHOUT_AVX512();
  const int64_t m = 37, n = 70, k = 45;
  std::vector<float> a = octet::test::randomFloats(m * k, 5),
                     b = octet::test::randomFloats(k * n, 6), c(m * n);
  PackedWeights packed = packB(b.data(), k, n, WeightLayout::KN);
  GemmF32 gemm(n, k, packed.data());
  gemm.run(a.data(), m, k, c.data(), n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        ref += double(a[i * k + kk]) * b[kk * n + j],
            mag += std::fabs(a[i * k + kk] * b[kk * n + j]);
      EXPECT_NEAR(c[i * n + j], ref, std::ldexp(1.0, -23) * (k + 2) * mag) << i << "," << j;
    }
}

/// x * 0.5 + 1.25 from rip-relative constants, after filling every scratch
/// register, so an MR that ignored the scratch request would corrupt sums.
class AffineEmitter : public EpilogueEmitter {
public:
  explicit AffineEmitter(int scratch) : scratch_(scratch) {}
  int scratchZmmCount() const override { return scratch_; }
  std::vector<float> constants() const override { return {0.5f, 1.25f}; }
  void emit(Xbyak::CodeGenerator &gen, const Xbyak::Zmm &acc,
            const std::vector<Xbyak::Zmm> &scratch, const Xbyak::Label &constants,
            const ColumnInput &) const override {
    for (const Xbyak::Zmm &s : scratch)
      gen.vbroadcastss(s, gen.ptr[gen.rip + constants]);
    gen.vfmadd213ps(acc, scratch.back(), gen.ptr_b[gen.rip + constants + 4]);
  }

private:
  int scratch_;
};

TEST(GemmF32, ElementwiseEpilogueGetsItsScratch) {
  SKIP_WITHOUT_AVX512();
  for (int scratch : {1, 6}) {
    AffineEmitter affine(scratch);
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{31, 768, 64}, {13, 100, 17}}) {
      Problem p(m, n, k);
      PackedWeights packed = packB(p.bNK.data(), k, n, WeightLayout::NK);
      GemmF32Epilogue epilogue;
      epilogue.residual = true;
      epilogue.elementwise = &affine;
      GemmF32 gemm(n, k, packed.data(), epilogue, p.bias.data());
      EXPECT_EQ(gemm.mr(), GemmF32Avx512::maxRows(gemm.nr(), scratch));
      EXPECT_LE(gemm.mr() * gemm.nr() / 16 + scratch, 32);
      p.check(
          gemm, true, true, [](double x) { return x * 0.5 + 1.25; },
          "affine scratch " + std::to_string(scratch));
    }
  }
}

// Per-column program inputs (`acc * in1 + in2`, [N] each): loaded per
// accumulator from the panel's first column, like the bias, over N tails
// (100 = 2 x 48 + 4; 17) and every row count.
TEST(GemmF32, ElementwiseEpilogueReadsColumnInputs) {
  SKIP_WITHOUT_AVX512();
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
      in1[j] = std::ldexp(1.0f, -int(j % 3)); // exact products: the reference's error bound holds
    const float *columns[] = {in1.data(), in2.data()};
    PackedWeights packed = packB(p.bNK.data(), k, n, WeightLayout::NK);
    GemmF32Epilogue e;
    e.residual = true;
    e.elementwise = epilogue.get();
    GemmF32 gemm(n, k, packed.data(), e, p.bias.data());
    ThreadCount scope(2);
    p.check(
        gemm, true, true, [&](double x, int64_t j) { return x * in1[j] + in2[j]; },
        "columns M " + std::to_string(m) + " N " + std::to_string(n), columns);
    EXPECT_THROW(p.check(gemm, true, true, identity, "no columns"), std::invalid_argument);
  }
}

TEST(GemmF32, CodeIsNotWritableAndExecutable) {
  SKIP_WITHOUT_AVX512();
  GemmF32Avx512 kernel(GemmF32Avx512Config{});
  auto code = reinterpret_cast<uintptr_t>(kernel.entry<GemmF32KernelFn>());
  std::ifstream maps("/proc/self/maps");
  std::string line;
  bool found = false;
  while (std::getline(maps, line)) {
    uintptr_t begin, end;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &begin, &end, perms) != 3 || code < begin ||
        code >= end)
      continue;
    found = true;
    EXPECT_STREQ(perms, "r-xp") << line;
  }
  EXPECT_TRUE(found);
}

} // namespace
