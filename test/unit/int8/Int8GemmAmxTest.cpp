//===- Int8GemmAmxTest.cpp - the INT8 driver on AMX: layout, emulated tiles, real runs -===//
//
// What runs where:
//  - packing, the tile emulator's rules, CpuFeatures targets: any host;
//  - the driver with tiles emulated in C++ and the generated AVX-512 epilogue
//    (runEmulated): AVX-512 hosts. Exact against an int64 reference with unit
//    scales; bit-identical to the driver on VNNI kernels (same epilogue code and
//    formula, exact s32 sums) for every epilogue, where VNNI exists;
//  - the real AMX kernel: only where amxUsable() (CPU + arch_prctl
//    permission); elsewhere skipped with the reason.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/GemmBlocking.h"
#include "compiler/codegen/x86/Int8GemmDriver.h"
#include "compiler/codegen/x86/Int8GemmKernelAmx.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"
#include "test/unit/Int8Epilogues.h"
#include "test/unit/TestData.h"
#include "test/unit/ThreadCount.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <tuple>

using namespace octet::x86;
using octet::WeightLayout;
using octet::test::geluEpilogue;
using octet::test::ThreadCount;

namespace {

#define SKIP_WITHOUT_AVX512()                                                                      \
  if (!CpuFeatures::host().supports(Isa::Avx512))                                                  \
  GTEST_SKIP() << "the emulated run executes the AVX-512 epilogue; host has: "                     \
               << CpuFeatures::host().describe()

template <typename F> std::string errorOf(F f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

struct Data {
  int64_t m, n, k, lda;
  std::vector<uint8_t> a;
  std::vector<int8_t> b; // [K, N]
  Data(int64_t m, int64_t n, int64_t k, unsigned seed = 1)
      : m(m), n(n), k(k), lda(k + 5), a(m * lda, 0xff), b(k * n) {
    std::mt19937 gen(seed);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk)
        a[i * lda + kk] = uint8_t(gen());
    for (int8_t &x : b)
      x = int8_t(gen());
  }
  int64_t dot(int64_t i, int64_t j) const {
    int64_t s = 0;
    for (int64_t kk = 0; kk < k; ++kk)
      s += int64_t(a[i * lda + kk]) * b[kk * n + j];
    return s;
  }
};

// Packing, checked by walking the packed bytes in storage order and naming
// each one's (k, n) from the nesting [panel][K chunk][column tile][K group]
// [column][byte], independently of amxPackedOffset.
TEST(Int8GemmAmx, PackLayoutPaddingAndColumnSums) {
  for (int64_t k : {1, 5, 63, 64, 65, 130})
    for (int64_t n : {1, 17, 32, 33, 70}) {
      Data d(1, n, k, unsigned(k * 100 + n));
      std::vector<int8_t> bNK(n * k);
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < n; ++j)
          bNK[j * k + kk] = d.b[kk * n + j];
      for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK}) {
        PackedInt8 p = packInt8(octet::PackIsa::Amx,
                                layout == WeightLayout::KN ? d.b.data() : bNK.data(), k, n, layout);
        ASSERT_EQ(reinterpret_cast<uintptr_t>(p.data.data()) % 64, 0u);
        const int64_t panels = (n + 31) / 32, chunks = (k + 63) / 64;
        ASSERT_EQ(int64_t(p.data.size()), panels * chunks * 2048);
        int64_t at = 0;
        for (int64_t panel = 0; panel < panels; ++panel)
          for (int64_t chunk = 0; chunk < chunks; ++chunk)
            for (int tile = 0; tile < 2; ++tile)
              for (int group = 0; group < 16; ++group)
                for (int col = 0; col < 16; ++col)
                  for (int byte = 0; byte < 4; ++byte, ++at) {
                    const int64_t kk = chunk * 64 + group * 4 + byte;
                    const int64_t j = panel * 32 + tile * 16 + col;
                    const int8_t want = kk < k && j < n ? d.b[kk * n + j] : 0;
                    ASSERT_EQ(p.data[at], want)
                        << "K " << k << " N " << n << " k " << kk << " n " << j;
                    if (kk < k && j < n) {
                      ASSERT_EQ(amxPackedOffset(kk, j, k), at);
                    }
                  }
        for (int64_t j = 0; j < n; ++j) {
          int32_t sum = 0;
          for (int64_t kk = 0; kk < k; ++kk)
            sum += d.b[kk * n + j];
          ASSERT_EQ(p.colsum[j], sum) << "column " << j;
        }
      }
    }
}

TEST(Int8GemmAmx, EmulatedTdpbusdMatchesScalarDot) {
  AmxGemmTiles tiles(16, 32);
  AmxTileEmulator amx;
  amx.ldtilecfg(tiles.config().bytes());
  std::mt19937 gen(3);
  uint8_t a[16][64];
  int8_t b[16][64];
  for (auto &row : a)
    for (uint8_t &x : row)
      x = uint8_t(gen());
  for (auto &row : b)
    for (int8_t &x : row)
      x = int8_t(gen());
  amx.tilezero(0);
  amx.tileloadd(4, a, 64);
  amx.tileloadd(6, b, 64);
  amx.tdpbusd(0, 4, 6);
  amx.tdpbusd(0, 4, 6); // accumulates
  int32_t c[16][16];
  amx.tilestored(c, 64, 0);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      int32_t want = 0;
      for (int kk = 0; kk < 64; ++kk)
        want += int32_t(a[m][kk]) * int32_t(b[kk / 4][n * 4 + kk % 4]);
      ASSERT_EQ(c[m][n], 2 * want) << m << " " << n;
    }
}

// The emulator raises what the CPU raises (#UD), so a kernel call with a
// stale or wrong configuration fails the tests instead of passing by luck.
TEST(Int8GemmAmx, EmulatorRejectsWhatTheCpuRejects) {
  AmxTileEmulator amx;
  EXPECT_NE(errorOf([&] { amx.tilezero(0); }).find("no tile configuration"), std::string::npos);
  AmxTileConfig bad;
  bad.rows[0] = 17, bad.colsb[0] = 64;
  EXPECT_NE(errorOf([&] { amx.ldtilecfg(bad.bytes()); }).find("17 rows"), std::string::npos);
  amx.ldtilecfg(AmxGemmTiles(20, 32).config().bytes()); // tiles 2, 3, 5: 4 rows
  EXPECT_NE(errorOf([&] { amx.tdpbusd(0, 5, 6); }).find("C rows 16 != A rows 4"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { amx.tdpbusd(0, 0, 6); }).find("differ"), std::string::npos);
  EXPECT_EQ(errorOf([&] { amx.tdpbusd(2, 5, 7); }), "");
  amx.tilerelease();
  EXPECT_NE(errorOf([&] { amx.tdpbusd(2, 5, 7); }).find("no tile configuration"),
            std::string::npos);
  EXPECT_EQ(AmxGemmTiles(20, 32).config(), AmxGemmTiles(20, 5).config())
      << "the configuration depends on the rows only";
  EXPECT_FALSE(AmxGemmTiles(20, 32).config() == AmxGemmTiles(32, 32).config());
}

Int8GemmParams unitParams(int32_t zp) {
  Int8GemmParams p;
  p.aZeroPoint = zp;
  p.wScale = {1.0f};
  return p;
}

// The blocking (M blocks, panels, K chunks, staged K tail, M-tail configs)
// against the exact integer reference: unit scales, f32 out = s32 sum.
class Int8GemmAmxShapes : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(Int8GemmAmxShapes, EmulatedMatchesIntegerReference) {
  SKIP_WITHOUT_AVX512();
  auto [m, n, k] = GetParam();
  Data d(m, n, k, unsigned(m * 7 + n * 3 + k));
  PackedInt8 packed = packInt8(octet::PackIsa::Amx, d.b.data(), k, n, WeightLayout::KN);
  for (int32_t zp : {0, 128}) {
    Int8GemmDriver gemm(packed, unitParams(zp));
    const int64_t ldc = n + 3;
    std::vector<float> c(m * ldc + 16, -7.5f);
    // 3 and 5 threads: threadGrid's 2-D splits and idle threads.
    for (int threads : {1, 2, 3, 5}) {
      ThreadCount scope(threads);
      gemm.runEmulated(d.a.data(), m, d.lda, c.data(), ldc);
      int failures = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          int64_t colsum = 0;
          for (int64_t kk = 0; kk < k; ++kk)
            colsum += d.b[kk * n + j];
          const float want = float(int32_t(d.dot(i, j) - zp * colsum));
          if (c[i * ldc + j] != want && failures++ < 5)
            ADD_FAILURE() << "zp " << zp << " threads " << threads << " C[" << i << "][" << j
                          << "] = " << c[i * ldc + j] << ", want " << want;
        }
        for (int64_t j = n; j < (i + 1 < m ? ldc : ldc + 16); ++j)
          if (c[i * ldc + j] != -7.5f && failures++ < 5)
            ADD_FAILURE() << "padding C[" << i << "][" << j << "] written";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OddShapes, Int8GemmAmxShapes,
                         ::testing::Combine(::testing::Values(1, 7, 16, 17, 33, 70),
                                            ::testing::Values(1, 15, 16, 17, 32, 33, 100),
                                            ::testing::Values(1, 3, 4, 63, 64, 65, 130, 770)),
                         octet::test::MnkName());

// Every epilogue: the driver's output on AMX kernels equals that on VNNI bit for
// bit (the same epilogue code on exact s32 sums; VNNI is tested against the
// reference formula in Int8GemmVnniTest).
TEST(Int8GemmAmx, EmulatedEqualsVnniForEveryEpilogue) {
  if (!Int8GemmDriver::hostSupported())
    GTEST_SKIP() << "the VNNI Int8GemmDriver to compare with needs AVX-512 VNNI; host has: "
                 << CpuFeatures::host().describe();
  const int64_t m = 45, n = 70, k = 197, ldr = n + 2;
  Data d(m, n, k, 11);
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> unit(-1, 1), half(0.5f, 1.5f);
  std::vector<float> wScale(n), bias(n), residual(m * ldr);
  for (int64_t j = 0; j < n; ++j)
    wScale[j] = half(gen), bias[j] = unit(gen);
  for (float &r : residual)
    r = unit(gen);
  // u8/s8 outputs take the fast GELU, as QLinearStep asks.
  std::unique_ptr<ProgramEpilogue> gelu = geluEpilogue(),
                                   fastGelu = geluEpilogue(GeluAccuracy::ForRequantize);
  PackedInt8 amxPacked = packInt8(octet::PackIsa::Amx, d.b.data(), k, n, WeightLayout::KN);
  PackedInt8 vnniPacked = packInt8(octet::PackIsa::Avx512Vnni, d.b.data(), k, n, WeightLayout::KN);
  for (int combo = 0; combo < 24; ++combo) {
    Int8GemmParams p;
    p.aZeroPoint = combo % 3 == 0 ? 0 : combo % 3 == 1 ? 128 : 37;
    p.xScale = 1.0f / (64.0f * 64.0f * 14.0f);
    p.wScale = wScale;
    p.bias = combo & 1 ? bias.data() : nullptr;
    p.residual = combo & 2;
    p.output = QuantOutput(combo / 8);
    p.elementwise =
        combo & 4 ? (p.output == QuantOutput::F32 ? gelu.get() : fastGelu.get()) : nullptr;
    p.outScale = combo % 2 ? 0.015625f * 1.37f : 0.0078125f; // vdivps and the exact reciprocal
    p.outZeroPoint = p.output == QuantOutput::U8 ? 37 : -5;
    const int bytes = p.output == QuantOutput::F32 ? 4 : 1;
    const int64_t ldc = n + 1;
    std::vector<uint8_t> amxC(m * ldc * bytes, 0xa5), vnniC(m * ldc * bytes, 0xa5);
    ThreadCount scope(2);
    Int8GemmDriver(amxPacked, p)
        .runEmulated(d.a.data(), m, d.lda, amxC.data(), ldc, residual.data(), ldr);
    Int8GemmDriver(vnniPacked, p)
        .run(d.a.data(), m, d.lda, vnniC.data(), ldc, residual.data(), ldr);
    ASSERT_EQ(amxC, vnniC) << "combination " << combo << ": zp " << p.aZeroPoint
                           << (p.bias ? " +bias" : "") << (p.residual ? " +residual" : "")
                           << (p.elementwise ? " +gelu" : "") << " out "
                           << quantOutputName(p.output);
  }
}

// Per-row x scales and per-column program inputs (gelu(acc) * in1, u8 out as
// in the INT8 FFN-in): the shared epilogue gives the same bytes on both kernels.
TEST(Int8GemmAmx, EmulatedEqualsVnniWithRowScalesAndColumnInputs) {
  if (!Int8GemmDriver::hostSupported())
    GTEST_SKIP() << "the VNNI Int8GemmDriver to compare with needs AVX-512 VNNI; host has: "
                 << CpuFeatures::host().describe();
  const int64_t m = 37, n = 83, k = 130;
  Data d(m, n, k, 13);
  std::mt19937 gen(9);
  std::uniform_real_distribution<float> half(0.5f, 1.5f);
  std::vector<float> wScale(n), inv(n), xs(m);
  for (int64_t j = 0; j < n; ++j)
    wScale[j] = half(gen), inv[j] = half(gen);
  for (float &v : xs)
    v = half(gen) / (64.0f * 64.0f * 12.0f);
  auto epilogue = octet::test::geluTimesColumnEpilogue();
  ASSERT_TRUE(epilogue);
  const float *columns[] = {inv.data()};
  PackedInt8 amxPacked = packInt8(octet::PackIsa::Amx, d.b.data(), k, n, WeightLayout::KN);
  PackedInt8 vnniPacked = packInt8(octet::PackIsa::Avx512Vnni, d.b.data(), k, n, WeightLayout::KN);
  for (int combo = 0; combo < 4; ++combo) {
    Int8GemmParams p;
    p.aZeroPoint = 128;
    p.xScalePerRow = combo & 1;
    p.xScale = xs[0];
    p.wScale = wScale;
    p.elementwise = combo & 2 ? epilogue.get() : nullptr;
    p.output = QuantOutput::U8;
    p.outScale = 0.0213f;
    p.outZeroPoint = 3;
    const int64_t ldc = n + 1;
    std::vector<uint8_t> amxC(m * ldc, 0xa5), vnniC(m * ldc, 0xa5);
    ThreadCount scope(2);
    Int8GemmDriver(amxPacked, p)
        .runEmulated(d.a.data(), m, d.lda, amxC.data(), ldc, nullptr, 0, xs.data(), columns);
    Int8GemmDriver(vnniPacked, p)
        .run(d.a.data(), m, d.lda, vnniC.data(), ldc, nullptr, 0, xs.data(), columns);
    ASSERT_EQ(amxC, vnniC) << "combination " << combo;
    if (combo & 1) {
      EXPECT_NE(errorOf([&] {
                  Int8GemmDriver(amxPacked, p)
                      .runEmulated(d.a.data(), m, d.lda, amxC.data(), ldc, nullptr, 0, nullptr,
                                   columns);
                }).find("per-row"),
                std::string::npos);
    }
  }
}

// The team split: every thread busy where the work allows, the least work
// on the busiest thread, then the fewest bytes read per thread.
TEST(Int8GemmAmx, ThreadGridSplitsByWorkThenBytes) {
  // panels x blocks per thread of a K = 768 GEMM with `threads` threads.
  auto grid = [](int64_t threads, int64_t panels, int64_t blocks) {
    auto g = octet::x86::gemm_blocking::threadGrid(threads, panels, blocks, 12 * 2048, 32 * 768);
    return std::pair(g.panelThreads, g.rowThreads);
  };
  using Grid = std::pair<int64_t, int64_t>;
  // BERT QKV at M = 128: N split (B, 72 panels of 24 KiB, dominates).
  EXPECT_EQ(grid(2, 72, 4), Grid(2, 1));
  // Attention out at M = 1024 (24 panels, 32 blocks): M split reads less.
  EXPECT_EQ(grid(2, 24, 32), Grid(1, 2));
  // One panel: the team goes over M; one block: over N.
  EXPECT_EQ(grid(4, 1, 10), Grid(1, 4));
  EXPECT_EQ(grid(4, 10, 1), Grid(4, 1));
  // 5 threads on 4 panels x 4 blocks: 1 x 4, 2 x 2 and 4 x 1 all give 4
  // pairs per thread; 2 x 2 reads 2 panels + 2 blocks, the others 5 (one idle).
  EXPECT_EQ(grid(5, 4, 4), Grid(2, 2));
  // More threads than work: never more than one thread per pair.
  EXPECT_EQ(grid(8, 1, 1), Grid(1, 1));
}

// Called from inside a parallel region (nesting off: a team of one while
// omp_get_max_threads() still says 2), the driver still computes every block.
TEST(Int8GemmAmx, NestedRegionComputesEverything) {
  SKIP_WITHOUT_AVX512();
  const int64_t m = 70, n = 100, k = 130;
  Data d(m, n, k, 3);
  PackedInt8 packed = packInt8(octet::PackIsa::Amx, d.b.data(), k, n, WeightLayout::KN);
  Int8GemmDriver gemm(packed, unitParams(0));
  ThreadCount scope(2);
  const int savedLevels = omp_get_max_active_levels();
  omp_set_max_active_levels(1);
  std::vector<std::vector<float>> c(2, std::vector<float>(m * n, -1.0f));
#pragma omp parallel num_threads(2)
  gemm.runEmulated(d.a.data(), m, d.lda, c[omp_get_thread_num()].data(), n);
  omp_set_max_active_levels(savedLevels);
  for (const std::vector<float> &out : c)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        ASSERT_EQ(out[i * n + j], float(d.dot(i, j))) << "C[" << i << "][" << j << "]";
}

// Whatever the team and shape, the grid's ranges cover every (panel, M
// block) pair exactly once.
TEST(Int8GemmAmx, ThreadGridCoversEveryPairOnce) {
  for (int64_t threads = 1; threads <= 9; ++threads)
    for (int64_t panels : {1, 2, 3, 7, 24, 72, 97})
      for (int64_t blocks : {1, 2, 4, 5, 32, 33})
        for (int64_t panelBytes : {1024, 24576}) {
          auto grid =
              octet::x86::gemm_blocking::threadGrid(threads, panels, blocks, panelBytes, 24576);
          ASSERT_LE(grid.panelThreads * grid.rowThreads, threads);
          std::vector<int> seen(panels * blocks, 0);
          for (int64_t t = 0; t < threads; ++t) {
            auto [p0, p1] = grid.panelRange(t, panels);
            auto [b0, b1] = grid.blockRange(t, blocks);
            for (int64_t p = p0; p < p1; ++p)
              for (int64_t b = b0; b < b1; ++b)
                seen[p * blocks + b] += 1;
          }
          for (int count : seen)
            ASSERT_EQ(count, 1) << threads << " threads, " << panels << " panels, " << blocks
                                << " blocks";
        }
}

// ldtilecfg only when a thread's configuration changes; one tilerelease per
// thread. M = 70: row blocks 32, 32, 6 (a second configuration); N = 100:
// 4 panels (the last 4 columns wide, same configuration), one L2 chunk.
TEST(Int8GemmAmx, ConfigurationReissuedOnlyWhenItChanges) {
  SKIP_WITHOUT_AVX512();
  Data d(70, 100, 100);
  PackedInt8 packed = packInt8(octet::PackIsa::Amx, d.b.data(), 100, 100, WeightLayout::KN);
  Int8GemmDriver gemm(packed, unitParams(0));
  std::vector<float> c(70 * 100);
  {
    ThreadCount scope(1); // block 0 x panels 0-3, block 1 x 0-3, block 2 (6 rows) x 0-3
    Int8GemmRunStats s = gemm.runEmulated(d.a.data(), 70, d.lda, c.data(), 100);
    EXPECT_EQ(s.calls, 12);
    EXPECT_EQ(s.configLoads, 2);
    EXPECT_EQ(s.releases, 1);
    // A second run starts from released tiles: it configures again.
    s = gemm.runEmulated(d.a.data(), 70, d.lda, c.data(), 100);
    EXPECT_EQ(s.configLoads, 2);
  }
  {
    // threadGrid: 2 panels x 3 blocks per thread (panels split: A is read by
    // both, B halved), each thread loads both configurations.
    ThreadCount scope(2);
    Int8GemmRunStats s = gemm.runEmulated(d.a.data(), 70, d.lda, c.data(), 100);
    EXPECT_EQ(s.calls, 12);
    EXPECT_EQ(s.configLoads, 4);
    EXPECT_EQ(s.releases, 2);
  }
}

// A rows are read for exactly K bytes (the K tail is staged): the last row
// ends where an unreadable page starts.
TEST(Int8GemmAmx, KTailNeverReadsPastTheRow) {
  SKIP_WITHOUT_AVX512();
  const long page = sysconf(_SC_PAGESIZE);
  for (int64_t k : {1, 5, 63, 65, 130}) {
    const int64_t m = 19, n = 17;
    void *mem = mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    auto *end = static_cast<uint8_t *>(mem) + 3 * page;
    ASSERT_EQ(mprotect(end, page, PROT_NONE), 0);
    Data d(m, n, k, unsigned(k));
    uint8_t *a = end - m * k;
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(a + i * k, &d.a[i * d.lda], k);
    PackedInt8 packed = packInt8(octet::PackIsa::Amx, d.b.data(), k, n, WeightLayout::KN);
    Int8GemmDriver gemm(packed, unitParams(0));
    std::vector<float> c(m * n);
    gemm.runEmulated(a, m, k, c.data(), n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        ASSERT_EQ(c[i * n + j], float(d.dot(i, j))) << "K " << k << " C[" << i << "][" << j << "]";
    munmap(mem, 4 * page);
  }
}

// The real kernel, where the CPU has AMX and Linux grants the tile state:
// bit-identical to the emulated run (which the tests above tie to the
// reference), on shapes with every tail.
TEST(Int8GemmAmx, RealKernelEqualsEmulation) {
  std::string why;
  if (!amxUsable(&why))
    GTEST_SKIP() << "AMX kernel not run: " << why;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                         {17, 33, 65},
                         {70, 100, 770},
                         {128, 768, 768},
                         {33, 16, 3072}}) {
    Data d(m, n, k, unsigned(m + n + k));
    PackedInt8 packed = packInt8(octet::PackIsa::Amx, d.b.data(), k, n, WeightLayout::KN);
    std::unique_ptr<ProgramEpilogue> gelu = geluEpilogue(),
                                     fastGelu = geluEpilogue(GeluAccuracy::ForRequantize);
    std::vector<float> bias(n, 0.25f), residual(m * n, -0.5f);
    for (int combo = 0; combo < 5; ++combo) {
      Int8GemmParams p = unitParams(combo % 2 ? 128 : 0);
      p.xScale = 1e-4f;
      p.bias = combo & 2 ? bias.data() : nullptr;
      p.residual = combo & 2;
      p.elementwise = combo == 3 ? gelu.get() : combo == 4 ? fastGelu.get() : nullptr;
      p.output = combo == 1 || combo == 4 ? QuantOutput::U8 : QuantOutput::F32;
      p.outScale = 0.05f, p.outZeroPoint = combo == 1 || combo == 4 ? 10 : 0;
      Int8GemmDriver gemm(packed, p);
      const int bytes = p.output == QuantOutput::F32 ? 4 : 1;
      std::vector<uint8_t> real(m * n * bytes), emulated(m * n * bytes);
      for (int threads : {1, 2}) {
        ThreadCount scope(threads);
        gemm.run(d.a.data(), m, d.lda, real.data(), n, residual.data(), n);
        gemm.runEmulated(d.a.data(), m, d.lda, emulated.data(), n, residual.data(), n);
        ASSERT_EQ(real, emulated) << "M " << m << " N " << n << " K " << k << " combination "
                                  << combo << " threads " << threads;
      }
    }
  }
}

TEST(Int8GemmAmx, RejectsBadShapesAndParameters) {
  std::vector<int8_t> b(64 * 16, 1);
  EXPECT_NE(errorOf([&] {
              packInt8(octet::PackIsa::Amx, b.data(), 0, 16, WeightLayout::KN);
            }).find("K must be"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              packInt8(octet::PackIsa::Amx, nullptr, 64, 16, WeightLayout::KN);
            }).find("null"),
            std::string::npos);
  PackedInt8 packed = packInt8(octet::PackIsa::Amx, b.data(), 64, 16, WeightLayout::KN);
  PackedInt8 truncated = packed;
  truncated.data.resize(100);
  EXPECT_NE(errorOf([&] { Int8GemmDriver g(truncated, unitParams(0)); }).find("not the amx layout"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { Int8GemmDriver g(packed, unitParams(256)); }).find("zero point"),
            std::string::npos);
  Int8GemmParams threeScales = unitParams(0);
  threeScales.wScale = {1, 2, 3};
  EXPECT_NE(errorOf([&] { Int8GemmDriver g(packed, threeScales); }).find("weight scales"),
            std::string::npos);
  Int8GemmParams badOut = unitParams(0);
  badOut.output = QuantOutput::U8, badOut.outZeroPoint = -1;
  EXPECT_NE(errorOf([&] { Int8GemmDriver g(packed, badOut); }).find("zero point"),
            std::string::npos);
  Int8GemmKernelConfig config;
  config.rows = 0;
  EXPECT_NE(errorOf([&] { Int8GemmKernelAmx g(config); }).find("rows must be"), std::string::npos);
  config.rows = 4, config.columns = 33;
  EXPECT_NE(errorOf([&] { Int8GemmKernelAmx g(config); }).find("columns"), std::string::npos);

  Int8GemmParams withResidual = unitParams(0);
  withResidual.residual = true;
  Int8GemmDriver gemm(packed, withResidual);
  std::vector<uint8_t> a(4 * 64);
  std::vector<float> c(4 * 16), r(4 * 16);
  // The emulator runs the AVX-512 epilogue: without AVX-512 it refuses first.
  const bool avx512 = CpuFeatures::host().supports(Isa::Avx512);
  EXPECT_NE(errorOf([&] {
              gemm.runEmulated(a.data(), 4, 63, c.data(), 16, r.data(), 16);
            }).find(avx512 ? "lda" : "lacks AVX-512"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              gemm.runEmulated(a.data(), 4, 64, c.data(), 16);
            }).find(avx512 ? "residual" : "lacks AVX-512"),
            std::string::npos);
  std::string why;
  if (!amxUsable(&why)) {
    EXPECT_NE(errorOf([&] {
                gemm.run(a.data(), 4, 64, c.data(), 16, r.data(), 16);
              }).find("cannot run on this host: " + why),
              std::string::npos);
  }
}

TEST(AmxSupport, PermissionAnswerIsStableAndExplained) {
  const std::string &first = requestAmxPermission();
  EXPECT_EQ(&first, &requestAmxPermission());
  const CpuFeatures &cpu = CpuFeatures::host();
  if (!cpu.amxTile || !cpu.amxInt8) {
    EXPECT_NE(first.find("lacks AMX"), std::string::npos) << first;
  }
  std::string why;
  const bool usable = amxUsable(&why);
  EXPECT_EQ(usable, why.empty()) << why;
  if (!cpu.supports(Isa::AmxInt8)) {
    EXPECT_FALSE(usable);
  }
}

TEST(CpuFeatures, TargetsDistinguishTheInt8Isas) {
  struct Case {
    const char *name;
    Isa best;
    bool avx512;
  };
  for (const Case &c :
       {Case{"haswell", Isa::Avx2, false}, Case{"alderlake", Isa::AvxVnni, false},
        Case{"skylake-avx512", Isa::Avx2, true}, Case{"icelake-server", Isa::Avx512Vnni, true},
        Case{"zen4", Isa::Avx512Vnni, true}, Case{"sapphirerapids", Isa::AmxInt8, true}}) {
    CpuFeatures f;
    std::string error;
    ASSERT_TRUE(CpuFeatures::forTarget(c.name, f, error)) << error;
    Isa best;
    ASSERT_TRUE(f.bestInt8Isa(best));
    EXPECT_EQ(best, c.best) << c.name << ": " << isaName(best);
    EXPECT_EQ(f.supports(Isa::Avx512), c.avx512) << c.name;
  }
  CpuFeatures f;
  std::string error;
  EXPECT_FALSE(CpuFeatures::forTarget("pentium4", f, error));
  EXPECT_NE(error.find("unknown target CPU 'pentium4'"), std::string::npos) << error;
  EXPECT_NE(error.find("sapphirerapids"), std::string::npos) << error;
  ASSERT_TRUE(CpuFeatures::forTarget("host", f, error));
  EXPECT_EQ(f.describe(), CpuFeatures::host().describe());
  Isa none;
  EXPECT_FALSE(CpuFeatures().bestInt8Isa(none));
}

} // namespace
