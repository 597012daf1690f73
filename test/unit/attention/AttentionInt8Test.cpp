//===- AttentionInt8Test.cpp - the int8 attention kernels vs their twins ---===//
//
// Packing (AVX-512): bit-identical to the C++ layouts, scales and sums over odd
// row and column counts, padding included, with ties, zero rows, NaN and inf.
// The dot kernel (AVX-512 VNNI): bit-identical to exact int32 sums scaled in
// the documented order. Each skips where the host lacks the ISA, saying why.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/CpuFeatures.h"
#include "compiler/codegen/x86/AttentionInt8Kernels.h"
#include "compiler/codegen/x86/Transpose16.h"
#include "test/unit/GuardedBuffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace octet::x86 {
namespace {

bool hostHas(Isa isa, std::string &why) {
  if (CpuFeatures::host().supports(isa))
    return true;
  why =
      std::string("host lacks ") + isaName(isa) + " (has: " + CpuFeatures::host().describe() + ")";
  return false;
}

std::string modeName(Int8Pack m) {
  switch (m) {
  case Int8Pack::SignedRows:
    return "signed rows";
  case Int8Pack::WeightedRows:
    return "weighted rows";
  case Int8Pack::Keys:
    return "keys";
  case Int8Pack::Values:
    return "values";
  }
  return "?";
}

/// Floats compared by bits (NaN == NaN of the same payload).
std::vector<uint32_t> bitsOfAll(const std::vector<float> &v) {
  std::vector<uint32_t> bits(v.size());
  std::memcpy(bits.data(), v.data(), v.size() * 4);
  return bits;
}

/// WeightedRows' given terms for args' rows: the largest |x| by bits, and
/// seeded multipliers in [0.01, 1).
void weightedRowTerms(AttentionInt8PackArgs &args, std::vector<float> &rowMax,
                      std::vector<float> &rowInverse) {
  rowMax.assign(size_t(args.rows), 0.0f);
  rowInverse.assign(size_t(args.rows), 0.0f);
  std::mt19937 gen(unsigned(args.rows * 131 + args.cols));
  for (int64_t r = 0; r < args.rows; ++r) {
    uint32_t largest = 0;
    for (int64_t c = 0; c < args.cols; ++c) {
      uint32_t bits;
      std::memcpy(&bits, &args.src[r * args.lds + c], 4);
      largest = std::max(largest, bits & 0x7fffffffu);
    }
    std::memcpy(&rowMax[r], &largest, 4);
    rowInverse[r] = std::uniform_real_distribution<float>(0.01f, 1.0f)(gen);
  }
  args.rowMax = rowMax.data(), args.rowInverse = rowInverse.data();
}

struct PackResult {
  std::vector<uint8_t> dst;
  std::vector<float> scales;
  std::vector<int32_t> sums;
};

PackResult pack(Int8Pack mode, AttentionInt8PackArgs args, bool jit,
                AttentionInt8PackKernel::Fn fn) {
  const bool rows = mode == Int8Pack::SignedRows || mode == Int8Pack::WeightedRows;
  PackResult r;
  r.dst.assign(rows ? args.padRows * args.ldd : args.padRows * args.padCols, 0xab);
  r.scales.assign(args.padRows, -3.0f);
  r.sums.assign(args.padRows, -5);
  std::vector<float> work(16, -9.0f);
  // WeightedRows: each row's largest |x| by bits (what the weighted softmax
  // finds) and a 1/Σe.
  std::vector<float> rowMax, rowInverse;
  weightedRowTerms(args, rowMax, rowInverse);
  args.dst = r.dst.data(), args.scales = r.scales.data(), args.sums = r.sums.data();
  args.work = work.data();
  if (jit)
    fn(&args);
  else
    attentionInt8PackReference(mode, args);
  return r;
}

/// load(mask, address, out): out = 16 floats at `address` (an unmasked load)
/// where `mask` is not empty, else zeros, through emitLoadUnlessMasked.
struct LoadUnlessMasked : Xbyak::CodeGenerator {
  using Fn = void (*)(const float *, uint32_t, float *);
  LoadUnlessMasked() : Xbyak::CodeGenerator(4096) {
    kmovw(k1, esi);
    emitLoadUnlessMasked(*this, k1, zmm0, [&] { vmovups(zmm0, ptr[rdi]); });
    vmovups(ptr[rdx], zmm0);
    vzeroupper();
    ret();
  }
};

TEST(AttentionInt8, EmptyMaskIssuesNoLoad) {
  // The Values packs' padding rows (past S) may lie past the tensor's last
  // page: with an empty mask the helper must not touch the address at all
  // (the callback's unmasked load faults on the guard page if it runs).
  std::string why;
  if (!hostHas(Isa::Avx512, why))
    GTEST_SKIP() << why;
  LoadUnlessMasked code;
  auto load = code.getCode<LoadUnlessMasked::Fn>();
  test::Guarded<float> row(16);
  for (int i = 0; i < 16; ++i)
    row[size_t(i)] = float(i + 1);
  std::vector<float> out(16, -1.0f);
  load(row.data() + 16, 0, out.data()); // the guard page
  EXPECT_EQ(out, std::vector<float>(16, 0.0f));
  load(row.data(), 1, out.data());
  EXPECT_EQ(out, std::vector<float>(row.data(), row.data() + 16));
}

TEST(AttentionInt8, PackKernelsMatchTheLayouts) {
  std::string why;
  if (!hostHas(Isa::Avx512, why))
    GTEST_SKIP() << why;
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0, 3);
  for (Int8Pack mode :
       {Int8Pack::SignedRows, Int8Pack::WeightedRows, Int8Pack::Keys, Int8Pack::Values}) {
    AttentionInt8PackKernel kernel(mode);
    auto fn = kernel.entry<AttentionInt8PackKernel::Fn>();
    const bool rowsMode = mode == Int8Pack::SignedRows || mode == Int8Pack::WeightedRows;
    for (int64_t rows : {1, 2, 7, 16, 31, 33, 64, 65, 128})
      for (int64_t cols : {1, 15, 16, 17, 32, 63, 64, 65, 80, 128}) {
        const int64_t lds = cols + 5;
        std::vector<float> src(rows * lds + 32);
        for (float &x : src)
          x = mode == Int8Pack::WeightedRows ? std::abs(normal(gen)) : normal(gen);
        if (cols > 1 && rows > 2) {
          // A zero row, and the largest magnitude negative (its q is -127).
          for (int64_t c = 0; c < cols; ++c)
            src[lds + c] = 0.0f;
          if (mode != Int8Pack::WeightedRows)
            src[2 * lds] = -100.0f;
        }
        AttentionInt8PackArgs args;
        args.src = src.data(), args.lds = lds, args.rows = rows, args.cols = cols;
        args.padCols = int8Padded(cols);
        args.padRows = rowsMode ? rows + 3 : int8Padded(rows);
        args.ldd = rowsMode ? args.padCols + 64 : 0;
        const PackResult got = pack(mode, args, true, fn), want = pack(mode, args, false, fn);
        const std::string where =
            modeName(mode) + " rows " + std::to_string(rows) + " cols " + std::to_string(cols);
        ASSERT_EQ(got.dst.size(), want.dst.size());
        for (size_t i = 0; i < got.dst.size(); ++i) {
          // Rows' stride padding past padCols is not written.
          if (rowsMode && int64_t(i % args.ldd) >= args.padCols)
            continue;
          ASSERT_EQ(int(got.dst[i]), int(want.dst[i])) << where << " byte " << i;
        }
        ASSERT_EQ(bitsOfAll(got.scales), bitsOfAll(want.scales)) << where;
        if (mode == Int8Pack::Keys) {
          ASSERT_EQ(got.sums, want.sums) << where;
        }
      }
  }
}

TEST(AttentionInt8, ScalesAndRounding) {
  // One row through the reference: the documented scale and ties to even.
  std::vector<float> src = {127.0f, -63.5f, 0.5f, 1.5f, -127.0f};
  std::vector<uint8_t> dst(64 * 4);
  std::vector<float> scales(4);
  AttentionInt8PackArgs args;
  args.src = src.data(), args.lds = 5, args.rows = 1, args.cols = 5;
  args.dst = dst.data(), args.ldd = 64, args.padRows = 2, args.padCols = 64;
  args.scales = scales.data();
  attentionInt8PackReference(Int8Pack::SignedRows, args);
  EXPECT_EQ(scales[0], 1.0f);
  EXPECT_EQ(scales[1], 0.0f); // padding row
  EXPECT_EQ(int(dst[0]), 127 + 128);
  EXPECT_EQ(int(dst[1]), -64 + 128); // -63.5: to even
  EXPECT_EQ(int(dst[2]), 0 + 128);   // 0.5: to even
  EXPECT_EQ(int(dst[3]), 2 + 128);   // 1.5: to even
  EXPECT_EQ(int(dst[4]), -127 + 128);
  EXPECT_EQ(int(dst[5]), 128); // padding column: q = 0
  EXPECT_EQ(int(dst[64]), 0);  // padding row
  // A NaN makes the scale NaN.
  src[3] = NAN;
  attentionInt8PackReference(Int8Pack::SignedRows, args);
  EXPECT_TRUE(std::isnan(scales[0]));
}

TEST(AttentionInt8, NonFiniteInputsGiveNaNScales) {
  std::string why;
  if (!hostHas(Isa::Avx512, why))
    GTEST_SKIP() << why;
  for (Int8Pack mode :
       {Int8Pack::SignedRows, Int8Pack::WeightedRows, Int8Pack::Keys, Int8Pack::Values}) {
    AttentionInt8PackKernel kernel(mode);
    auto fn = kernel.entry<AttentionInt8PackKernel::Fn>();
    for (float bad : {NAN, INFINITY, -INFINITY}) {
      std::vector<float> src(8 * 70, 0.25f);
      src[3 * 70 + 5] = bad;
      AttentionInt8PackArgs args;
      args.src = src.data(), args.lds = 70, args.rows = 8, args.cols = 70;
      args.padCols = 128;
      const bool rowsMode = mode == Int8Pack::SignedRows || mode == Int8Pack::WeightedRows;
      args.padRows = rowsMode ? 8 : 64;
      args.ldd = rowsMode ? 128 : 0;
      const PackResult got = pack(mode, args, true, fn), want = pack(mode, args, false, fn);
      ASSERT_EQ(bitsOfAll(got.scales), bitsOfAll(want.scales)) << modeName(mode) << " " << bad;
      const float scale = got.scales[3];
      EXPECT_TRUE(std::isnan(scale) || std::isinf(scale)) << modeName(mode) << " " << scale;
    }
  }
}

// Every buffer ends right before an unreadable page (its last valid source
// element, or the last byte of what the kernel may write): a read or write past
// the documented sizes faults. Results against the C++ twins as above.
TEST(AttentionInt8, KernelsStayInsideTheirBuffers) {
  std::string why;
  if (!hostHas(Isa::Avx512Vnni, why))
    GTEST_SKIP() << why;
  using test::Guarded;
  std::mt19937 gen(9);
  std::normal_distribution<float> normal(0, 2);
  for (Int8Pack mode :
       {Int8Pack::SignedRows, Int8Pack::WeightedRows, Int8Pack::Keys, Int8Pack::Values}) {
    AttentionInt8PackKernel kernel(mode);
    auto fn = kernel.entry<AttentionInt8PackKernel::Fn>();
    const bool rowsMode = mode == Int8Pack::SignedRows || mode == Int8Pack::WeightedRows;
    for (int64_t rows : {1, 17, 64, 70})
      for (int64_t cols : {1, 20, 64, 100}) {
        const int64_t lds = cols + 3;
        Guarded<float> src{size_t((rows - 1) * lds + cols)};
        for (size_t i = 0; i < src.size(); ++i)
          src[i] = std::abs(normal(gen));
        AttentionInt8PackArgs args;
        args.src = src.data(), args.lds = lds, args.rows = rows, args.cols = cols;
        args.padCols = int8Padded(cols);
        args.padRows = rowsMode ? rows : int8Padded(rows);
        args.ldd = rowsMode ? args.padCols : 0;
        Guarded<uint8_t> dst{size_t(args.padRows * args.padCols)};
        Guarded<float> scales{size_t(args.padRows)}, work{16};
        Guarded<float> rowMax{size_t(rows)}, rowInverse{size_t(rows)};
        Guarded<int32_t> sums{size_t(args.padRows)};
        args.dst = dst.data(), args.scales = scales.data(), args.work = work.data();
        args.sums = mode == Int8Pack::Keys ? sums.data() : nullptr;
        if (mode == Int8Pack::WeightedRows) {
          std::vector<float> max, inverse;
          weightedRowTerms(args, max, inverse);
          std::copy(max.begin(), max.end(), rowMax.data());
          std::copy(inverse.begin(), inverse.end(), rowInverse.data());
          args.rowMax = rowMax.data(), args.rowInverse = rowInverse.data();
        }
        fn(&args);
        std::vector<uint8_t> want(dst.size());
        std::vector<float> wantScales(scales.size());
        std::vector<int32_t> wantSums(sums.size());
        AttentionInt8PackArgs ref = args;
        ref.dst = want.data(), ref.scales = wantScales.data(), ref.sums = wantSums.data();
        attentionInt8PackReference(mode, ref);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(int(dst[i]), int(want[i]))
              << modeName(mode) << " rows " << rows << " cols " << cols << " byte " << i;
      }
  }
  AttentionDotInt8Kernel dot(true);
  auto dotFn = dot.entry<AttentionDotInt8Kernel::Fn>();
  for (int64_t kChunks : {1, 3})
    for (int64_t colPairs : {1, 2}) {
      const int64_t k = kChunks * kInt8Chunk, n = 32 * colPairs;
      Guarded<uint8_t> a{size_t(32 * k)};
      Guarded<int8_t> b{size_t(2 * colPairs * kChunks * kInt8TileBytes)};
      Guarded<float> c{size_t(32 * n)}, rowScale{32}, colScale{size_t(n)};
      Guarded<int32_t> colSums{size_t(n)};
      for (size_t i = 0; i < a.size(); ++i)
        a[i] = uint8_t(i * 7);
      for (size_t i = 0; i < b.size(); ++i)
        b[i] = int8_t(i * 13);
      for (size_t i = 0; i < 32; ++i)
        rowScale[i] = 0.5f;
      for (size_t i = 0; i < size_t(n); ++i)
        colScale[i] = 0.25f, colSums[i] = int32_t(i);
      AttentionDotInt8Args args;
      args.a = a.data(), args.lda = k, args.b = b.data(), args.c = c.data(), args.ldc = n * 4;
      args.kChunks = kChunks, args.colPairs = colPairs;
      args.rowScale = rowScale.data(), args.colScale = colScale.data();
      args.colSums = colSums.data();
      dotFn(&args);
      std::vector<float> want(c.size());
      AttentionDotInt8Args ref = args;
      ref.c = want.data();
      attentionDotInt8Reference(ref);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(c[i], want[i]) << "kChunks " << kChunks << " colPairs " << colPairs;
    }
}

TEST(AttentionInt8, DotKernelMatchesExactSums) {
  std::string why;
  if (!hostHas(Isa::Avx512Vnni, why))
    GTEST_SKIP() << why;
  for (bool columnTerms : {true, false}) {
    SCOPED_TRACE(columnTerms ? "with column terms" : "without column terms");
    AttentionDotInt8Kernel kernel(columnTerms);
    auto fn = kernel.entry<AttentionDotInt8Kernel::Fn>();
    std::mt19937 gen(5);
    std::uniform_int_distribution<int> byte(0, 255);
    std::normal_distribution<float> normal(0, 1);
    for (int64_t kChunks : {1, 2, 5})
      for (int64_t colPairs : {1, 3}) {
        const int64_t k = kChunks * kInt8Chunk, n = 32 * colPairs;
        std::vector<uint8_t> a(32 * (k + 16));
        std::vector<int8_t> b(2 * colPairs * kChunks * kInt8TileBytes);
        for (uint8_t &x : a)
          x = uint8_t(byte(gen));
        for (int8_t &x : b)
          x = int8_t(byte(gen) - 128);
        a[0] = 255, b[0] = -128; // the extremes
        std::vector<float> rowScale(32), colScale(n);
        std::vector<int32_t> colSums(n);
        for (float &s : rowScale)
          s = std::abs(normal(gen)) / 100;
        for (float &s : colScale)
          s = std::abs(normal(gen)) / 100;
        for (int32_t &s : colSums)
          s = byte(gen) * 300 - 40000;
        AttentionDotInt8Args args;
        args.a = a.data(), args.lda = k + 16;
        args.b = b.data();
        args.ldc = (n + 8) * 4;
        args.kChunks = kChunks, args.colPairs = colPairs;
        args.rowScale = rowScale.data();
        if (columnTerms) // else null: the kernel must not read them
          args.colScale = colScale.data(), args.colSums = colSums.data();
        // rowGroups 0 and 4: all 32 rows; 1-3: the first 8, 16, 24 (a
        // sequence's last block), the rest neither read (rows past them may
        // end the buffer: the scale's too) nor written.
        for (int64_t rowGroups : {0, 1, 2, 3, 4}) {
          const int64_t rows = rowGroups == 0 ? 32 : 8 * rowGroups;
          test::Guarded<uint8_t> aRows{size_t(rows * (k + 16))};
          std::copy(a.begin(), a.begin() + aRows.size(), aRows.data());
          test::Guarded<float> scales{size_t(rows)};
          std::copy(rowScale.begin(), rowScale.begin() + rows, scales.data());
          args.a = aRows.data(), args.rowScale = scales.data(), args.rowGroups = rowGroups;
          std::vector<float> got(32 * (n + 8), -7.0f), want(32 * (n + 8), -7.0f);
          args.c = got.data();
          fn(&args);
          args.c = want.data();
          attentionDotInt8Reference(args);
          for (int64_t m = 0; m < 32; ++m)
            for (int64_t j = 0; j < n + 8; ++j) {
              const float w = want[m * (n + 8) + j], g = got[m * (n + 8) + j];
              if (j >= n || m >= rows) {
                ASSERT_EQ(g, -7.0f)
                    << "C[" << m << "][" << j << "] written, rowGroups " << rowGroups;
                continue;
              }
              ASSERT_EQ(g, w) << "kChunks " << kChunks << " colPairs " << colPairs << " rowGroups "
                              << rowGroups << " C[" << m << "][" << j << "]";
            }
        }
      }
    AttentionDotInt8Args none; // colPairs 0: nothing
    fn(&none);
  }
}

} // namespace
} // namespace octet::x86
