//===- AttentionBf16Test.cpp - the bf16 attention kernels vs their twins ---===//
//
// Packing (AVX512-BF16): bit-identical to the C++ layouts over odd row and
// column counts, padding zeros included. The tile GEMMs (AMX-BF16 and
// vdpbf16ps, each skipped where the host lacks it, with the reason): against
// f32 sums of the same bf16 products.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/AttentionBf16Kernels.h"
#include "compiler/codegen/CpuFeatures.h"
#include "test/unit/GuardedBuffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace octet::x86 {
namespace {

bool canPack(std::string &why) {
  const CpuFeatures &f = CpuFeatures::host();
  if (f.avx512f && f.avx512bw && f.avx512bf16)
    return true;
  why = "host lacks AVX512-BF16 (has: " + f.describe() + ")";
  return false;
}

bool canTile(std::string &why) {
  if (!canPack(why))
    return false;
  if (!CpuFeatures::host().supports(Isa::AmxBf16)) {
    why = "host lacks AMX-BF16 (has: " + CpuFeatures::host().describe() + ")";
    return false;
  }
  if (const std::string &denied = requestAmxPermission(); !denied.empty()) {
    why = "AMX state not granted: " + denied;
    return false;
  }
  return true;
}

TEST(AttentionBf16, RoundsAsVcvtne2ps2bf16) {
  EXPECT_EQ(toBf16(1.0f), 0x3f80);
  EXPECT_EQ(toBf16(-2.5f), 0xc020);
  // Ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7.
  EXPECT_EQ(toBf16(1.0f + 1.0f / 256), 0x3f80);
  EXPECT_EQ(toBf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_EQ(toBf16(1e-40f), 0x0000);  // denormal: zero
  EXPECT_EQ(toBf16(-1e-40f), 0x8000); // sign kept
  EXPECT_EQ(toBf16(INFINITY), 0x7f80);
  EXPECT_EQ(toBf16(NAN) & 0x7fc0, 0x7fc0);
  EXPECT_EQ(fromBf16(0x3f80), 1.0f);
}

struct PackShape {
  Bf16Pack mode;
  int64_t rows, cols;
};

std::string modeName(Bf16Pack m) {
  return m == Bf16Pack::Rows ? "rows" : m == Bf16Pack::Keys ? "keys" : "values";
}

TEST(AttentionBf16, PackKernelsMatchTheLayouts) {
  std::string why;
  if (!canPack(why))
    GTEST_SKIP() << why;
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0, 3);
  for (Bf16Pack mode : {Bf16Pack::Rows, Bf16Pack::Keys, Bf16Pack::Values}) {
    AttentionBf16PackKernel kernel(mode);
    auto fn = kernel.entry<AttentionBf16PackKernel::Fn>();
    for (int64_t rows : {1, 2, 7, 16, 31, 33, 128})
      for (int64_t cols : {1, 15, 16, 17, 32, 64, 80}) {
        const int64_t lds = cols + 5;
        std::vector<float> src(rows * lds + 32);
        for (float &x : src)
          x = normal(gen);
        src[0] = 1.0f + 1.0f / 256; // a tie
        AttentionBf16PackArgs args;
        args.src = src.data(), args.lds = lds, args.rows = rows, args.cols = cols;
        args.padCols = bf16Padded(cols);
        args.padRows = mode == Bf16Pack::Rows ? rows + 3 : bf16Padded(rows);
        args.ldd = args.padCols + (mode == Bf16Pack::Rows ? 32 : 0);
        const int64_t elements = mode == Bf16Pack::Rows ? args.padRows * args.ldd
                                                        : args.padRows * args.padCols;
        std::vector<uint16_t> got(elements, 0xdead), want(elements, 0xdead);
        args.dst = got.data();
        fn(&args);
        args.dst = want.data();
        attentionBf16PackReference(mode, args);
        ASSERT_EQ(got, want) << modeName(mode) << " rows " << rows << " cols " << cols;
      }
  }
}

/// One tile-GEMM kernel (AMX or vdpbf16ps: same arguments) against f32 sums of
/// the same bf16 products, over K and column-pair counts; C past the tiles
/// untouched. `rowGroups` (the vdpbf16ps kernel): 0 and 4 all 32 rows, 1-3
/// the first 8, 16, 24 (a sequence's last block), the rest neither read (A's
/// rows past them end at a guard page) nor written.
void checkTileGemm(AttentionTileBf16Kernel::Fn fn, bool rowGroups) {
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0, 1);
  for (int64_t kChunks : {1, 2, 5})
    for (int64_t colPairs : {1, 3}) {
      const int64_t k = kChunks * kBf16Chunk, n = 32 * colPairs;
      std::vector<uint16_t> a(32 * (k + 32)), b(2 * colPairs * kChunks * 512);
      for (uint16_t &x : a)
        x = toBf16(normal(gen));
      for (uint16_t &x : b)
        x = toBf16(normal(gen));
      AttentionTileBf16Args args;
      args.lda = (k + 32) * 2;
      args.b = b.data();
      args.ldc = (n + 8) * 4;
      args.kChunks = kChunks, args.colPairs = colPairs;
      args.configure = 1, args.release = 1;
      for (int64_t groups : rowGroups ? std::vector<int64_t>{0, 1, 2, 3, 4}
                                      : std::vector<int64_t>{0}) {
        const int64_t rows = groups == 0 ? 32 : 8 * groups;
        test::Guarded<uint16_t> aRows{size_t(rows * (k + 32))};
        std::copy(a.begin(), a.begin() + aRows.size(), aRows.data());
        args.a = aRows.data(), args.rowGroups = groups;
        std::vector<float> got(32 * (n + 8), -7.0f), want(32 * (n + 8), -7.0f);
        args.c = got.data();
        fn(&args);
        args.c = want.data();
        attentionTileBf16Reference(args);
        for (int64_t m = 0; m < 32; ++m)
          for (int64_t j = 0; j < n + 8; ++j) {
            const float w = want[m * (n + 8) + j], g = got[m * (n + 8) + j];
            if (j >= n || m >= rows) { // past the tiles or the groups: untouched
              ASSERT_EQ(g, -7.0f) << "C[" << m << "][" << j << "] written, rowGroups " << groups;
              continue;
            }
            ASSERT_NEAR(g, w, 1e-5f * std::sqrt(float(k)) * 4)
                << "kChunks " << kChunks << " colPairs " << colPairs << " rowGroups " << groups
                << " C[" << m << "][" << j << "]";
          }
      }
    }
  // colPairs 0: no tile math (the AMX kernel's release-only call).
  AttentionTileBf16Args none;
  none.configure = 1, none.release = 1;
  fn(&none);
}

TEST(AttentionBf16, TileGemmMatchesF32SumsOfBf16Products) {
  std::string why;
  if (!canTile(why))
    GTEST_SKIP() << "AMX-BF16 tile kernel not run: " << why;
  AttentionTileBf16Kernel kernel;
  checkTileGemm(kernel.entry<AttentionTileBf16Kernel::Fn>(), /*rowGroups=*/false);
}

TEST(AttentionBf16, DotGemmMatchesF32SumsOfBf16Products) {
  std::string why;
  if (!canPack(why))
    GTEST_SKIP() << "vdpbf16ps kernel not run: " << why;
  AttentionDotBf16Kernel kernel;
  checkTileGemm(kernel.entry<AttentionDotBf16Kernel::Fn>(), /*rowGroups=*/true);
}

} // namespace
} // namespace octet::x86
