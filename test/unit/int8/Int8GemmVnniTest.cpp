//===- Int8GemmVnniTest.cpp - the INT8 driver on VNNI against an integer reference -===//
//
// Reference: s32 sums in int64 (exact), then the epilogue formula in double.
//  - s32: with unit scales and an f32 output, C must equal float(sum - zp *
//    colsum) bit for bit (int -> float rounds the same way everywhere).
//  - f32: the kernel rounds four times (int -> float, * scale, + bias,
//    + residual): |error| <= 2^-22 * (|scaled sum| + |bias| + |residual|);
//    GELU adds its own 2^-22 max(1, |x|) and passes the input error on
//    (|GELU'| < 1.13).
//  - u8/s8: exact, except within that error of a rounding tie (then +-1).
//    Their GELU is the fast one (GeluAccuracy::ForRequantize, as QLinearStep
//    asks): it adds 8e-5 max(1, |x|), and the requantize multiplies by
//    1 / out_scale (2^-22 relative more), so a code may differ by exactly 1
//    where the true value lies within that bound of a rounding boundary.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/CpuFeatures.h"
#include "compiler/codegen/GemmBlocking.h"
#include "compiler/codegen/x86/Int8GemmDriver.h"
#include "compiler/codegen/x86/Int8GemmKernelVnni.h"
#include "compiler/codegen/x86/KernelGenerator.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"
#include "test/unit/Int8Epilogues.h"
#include "test/unit/Int8GemmReference.h"
#include "test/unit/TestData.h"
#include "test/unit/ThreadCount.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <tuple>

using namespace octet::x86;
using octet::WeightLayout;

namespace {

#define SKIP_WITHOUT_VNNI()                                                                        \
  if (!Int8GemmDriver::hostSupported())                                                            \
  GTEST_SKIP() << "host lacks AVX-512 VNNI (F/BW/VL/DQ + avx512_vnni)"

using octet::test::ThreadCount;

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

/// The bound of VectorMath::geluErfFast (VectorMath.h).
constexpr double kFastGeluError = 8e-5;

/// (x * 0.5) * (erf(x * scale) + 1): GELU (erf) for scale 2^-1/2, as a fused
/// region spells it out.
octet::rt::ElementwiseProgram spelledOutGelu(float scale) {
  using Op = octet::rt::ElementwiseProgram::Op;
  octet::rt::ElementwiseProgram program;
  program.numInputs = 1;
  program.instrs = {{Op::Input, 0, -1, 0},
                    {Op::Constant, -1, -1, scale},
                    {Op::Mul, 0, 1, 0},
                    {Op::Erf, 2, -1, 0},
                    {Op::Constant, -1, -1, 1},
                    {Op::Add, 3, 4, 0},
                    {Op::Constant, -1, -1, 0.5f},
                    {Op::Mul, 0, 6, 0},
                    {Op::Mul, 7, 5, 0}};
  return program;
}

/// GELU (erf) as one op, or `spelledOut`.
std::unique_ptr<ProgramEpilogue> geluEpilogue(GeluAccuracy accuracy = GeluAccuracy::Full,
                                              bool spelledOut = false) {
  if (!spelledOut)
    return octet::test::geluEpilogue(accuracy);
  std::string error;
  auto e = ProgramEpilogue::create(spelledOutGelu(0.70710677f), error, {}, accuracy);
  EXPECT_TRUE(e) << error;
  return e;
}

/// Calls fn() from one thread of a two-thread parallel region with nested
/// regions inactive: a parallel region inside fn gets a team of one.
template <typename Fn> void inTeamOfOne(Fn fn) {
  const int savedLevels = omp_get_max_active_levels();
  omp_set_max_active_levels(1);
#pragma omp parallel num_threads(2)
#pragma omp single
  fn();
  omp_set_max_active_levels(savedLevels);
}

struct Options {
  WeightLayout layout = WeightLayout::KN;
  int32_t aZeroPoint = 0;
  bool bias = false, residual = false, gelu = false;
  QuantOutput output = QuantOutput::F32;
  bool unitScales = false; // scales 1: the f32 output is the s32 sum, exactly
  int threads = 2;
  bool nested = false;   // run from one thread of a parallel region (a team of one)
  int64_t maxKBlock = 0; // Int8GemmParams::maxKBlock: K blocks on small shapes

  std::string str() const {
    std::ostringstream s;
    s << (layout == WeightLayout::KN ? "B[K,N]" : "B[N,K]") << " a_zp " << aZeroPoint
      << (bias ? " +bias" : "") << (residual ? " +residual" : "") << (gelu ? " +gelu" : "")
      << " out " << quantOutputName(output) << (unitScales ? " unit scales" : "") << " " << threads
      << " thread(s)" << (nested ? " nested" : "")
      << (maxKBlock ? " K blocks <= " + std::to_string(maxKBlock) : "");
    return s.str();
  }
};

struct Problem : octet::test::Int8GemmProblem {
  using Int8GemmProblem::Int8GemmProblem;

  void run(const Options &o) const {
    const PackedInt8 packed =
        packInt8(octet::PackIsa::Avx512Vnni, o.layout == WeightLayout::KN ? bKN.data() : bNK.data(),
                 k, n, o.layout);
    // s8 outputs take GELU spelled out: the fast lowering must recognize it.
    const bool fastGelu = o.gelu && o.output != QuantOutput::F32;
    std::unique_ptr<ProgramEpilogue> program =
        o.gelu ? geluEpilogue(fastGelu ? GeluAccuracy::ForRequantize : GeluAccuracy::Full,
                              o.output == QuantOutput::S8)
               : nullptr;
    Int8GemmParams params;
    params.aZeroPoint = o.aZeroPoint;
    params.xScale = o.unitScales ? 1.0f : xScale;
    params.wScale = o.unitScales ? std::vector<float>{1.0f} : wScale;
    params.bias = o.bias ? bias.data() : nullptr;
    params.residual = o.residual;
    params.elementwise = program.get();
    params.output = o.output;
    params.outScale = 0.015625f * 1.37f; // not a power of two: vdivps
    params.outZeroPoint = o.output == QuantOutput::U8 ? 37 : -5;
    params.maxKBlock = o.maxKBlock;
    Int8GemmDriver gemm(packed, params);
    ThreadCount scope(o.threads);
    const std::string what = o.str() + ", MR " + std::to_string(gemm.mr()) + " NR " +
                             std::to_string(gemm.nr()) + " Kc " + std::to_string(gemm.kc());

    const int bytes = o.output == QuantOutput::F32 ? 4 : 1;
    octet::test::Int8OutputCheck check;
    check.output = octet::test::Int8Output(int(o.output)); // the same order: f32, u8, s8
    check.outScale = params.outScale, check.outZeroPoint = params.outZeroPoint;
    check.aZeroPoint = o.aZeroPoint, check.exactSums = o.unitScales;
    check.ldc = n + 5, check.guard = 64, check.what = what;
    std::vector<uint8_t> c((m * check.ldc + check.guard) * bytes, octet::test::kInt8Canary);
    const float *res = o.residual ? residual.data() : nullptr;
    auto run = [&] { gemm.run(a.data(), m, lda, c.data(), check.ldc, res, ldr); };
    if (o.nested)
      inTeamOfOne(run);
    else
      run();
    octet::test::checkInt8Output(*this, m, c, check, [&](int64_t i, int64_t j, int64_t s32) {
      octet::test::Int8Reference r = octet::test::int8Linear(
          *this, i, j, double(xScale) * wScale[j], s32, o.bias, o.residual, std::ldexp(1.0, -22));
      if (o.gelu) {
        const double geluError =
            fastGelu ? kFastGeluError + std::ldexp(1.0, -22) : std::ldexp(1.0, -22);
        r.tolerance = 1.13 * r.tolerance + geluError * std::max(1.0, std::fabs(r.value));
        r.value = gelu(r.value);
      }
      return r;
    });
  }
};

class Int8GemmVnniShapes : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {
};

TEST_P(Int8GemmVnniShapes, MatchesIntegerReference) {
  SKIP_WITHOUT_VNNI();
  auto [m, n, k] = GetParam();
  Problem p(m, n, k);
  // Every shape: both layouts x three activation zero points, the s32 sums
  // exactly, and one epilogue combination each (the 24 combinations rotate
  // with the shape, so every one is covered many times over the suite).
  int combo = int(m * 7 + n * 3 + k);
  for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK})
    for (int32_t zp : {0, 128, 37}) {
      Options exact;
      exact.layout = layout, exact.aZeroPoint = zp, exact.unitScales = true;
      exact.threads = zp == 37 ? 1 : 2;
      exact.maxKBlock = zp == 128 ? 96 : 0; // K 768: 8 blocks, 770: 9 (the K tail in the last)
      p.run(exact);
      Options o;
      o.layout = layout, o.aZeroPoint = zp;
      const int c = combo++ % 24;
      o.bias = c & 1, o.residual = c & 2, o.gelu = c & 4;
      o.output = QuantOutput(c / 8);
      p.run(o);
    }
}

INSTANTIATE_TEST_SUITE_P(OddShapes, Int8GemmVnniShapes,
                         ::testing::Combine(::testing::Values(1, 7, 129),
                                            ::testing::Values(1, 15, 16, 17, 48, 100, 768),
                                            ::testing::Values(1, 3, 4, 5, 64, 768, 770)),
                         octet::test::MnkName());

// Two threads split the rows where each gets at least NR / 8 row tiles (6 at
// NR 48: its B prefetch keeps up) and the weight is small (2 MiB; on AMD
// hosts 4 MiB, on the second kernel set), the panels otherwise; at a long K
// each thread takes whole L2-sized blocks. The results match the reference on
// both sides of the threshold.
/// A K x N weight of ones packed for the VNNI kernels, and parameters with a
/// unit scale: for the tests of the schedule, which look at blocking, not values.
PackedInt8 packedOnes(int64_t k, int64_t n) {
  const std::vector<int8_t> b(size_t(k * n), 1);
  return packInt8(octet::PackIsa::Avx512Vnni, b.data(), k, n, WeightLayout::KN);
}
Int8GemmParams unitScale() {
  Int8GemmParams params;
  params.wScale = {1.0f};
  return params;
}

TEST(Int8GemmVnni, RowsSplitOverTheTeamOnlyWhereEachThreadHasEnoughTiles) {
  SKIP_WITHOUT_VNNI();
  struct Case {
    int64_t m, n, k;
    bool enoughTiles;
  };
  for (const Case c : {Case{128, 768, 768, true}, Case{96, 768, 768, true}, // 48 rows: 6 tiles
                       Case{90, 768, 768, false},                           // 45 rows: 5 tiles
                       Case{129, 100, 770, true}, Case{1024, 100, 3072, true},
                       Case{128, 768, 3072, true}}) { // BERT's FFN-out: 2.25 MiB of weight
    const bool small = c.k * c.n <= Int8GemmDriver::kRowSplitWeightBytes;
    const bool rowSplit =
        c.enoughTiles &&
        (small || (c.k * c.n <= Int8GemmDriver::kRowSplitBigWeightBytesAmd && hostIsAmd()));
    const PackedInt8 packed = packedOnes(c.k, c.n);
    Int8GemmDriver gemm(packed, unitScale());
    const std::string what = std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                             std::to_string(c.k) + " MR " + std::to_string(gemm.mr());
    EXPECT_EQ(gemm.kernel(gemm.mr(), false).config().bPrefetchLines, small ? 2 : 1) << what;
    const int64_t panels = (c.n + gemm.nr() - 1) / gemm.nr();
    {
      ThreadCount one(1); // the L2 rule alone
      EXPECT_EQ(gemm.registerTileMBlock(c.m), gemm_blocking::mBlock(c.m, c.k, gemm.mr(), panels, 1))
          << what;
    }
    ThreadCount two(2);
    EXPECT_EQ(gemm.rowSplitLines(c.m), rowSplit ? 2 : 0) << what;
    const int64_t block = gemm.registerTileMBlock(c.m);
    const int64_t blocks = (c.m + block - 1) / block;
    if (rowSplit) {
      EXPECT_EQ(blocks % 2, 0) << what << ": block " << block;
      EXPECT_LE(block, gemm_blocking::mBlock(c.m, c.k, gemm.mr(), 2, 1))
          << what << ": beyond the L2 rule";
    } else {
      EXPECT_EQ(block, gemm_blocking::mBlock(c.m, c.k, gemm.mr(), panels, 1)) << what;
    }
  }
  for (int64_t m : {96, 90}) {
    Problem p(m, 768, 768, 3);
    Options o;
    o.aZeroPoint = 128, o.bias = true, o.residual = true;
    p.run(o);
    o.residual = false, o.gelu = true, o.output = QuantOutput::U8;
    p.run(o);
  }
}

/// The parameters of a plain biased GEMM on `p`'s data (a_zp 128, its scales).
Int8GemmParams biasParams(const Problem &p) {
  Int8GemmParams params;
  params.aZeroPoint = 128, params.xScale = p.xScale, params.wScale = p.wScale;
  params.bias = p.bias.data();
  return params;
}

// A GEMM called from inside a parallel region (nested regions inactive) gets
// a team of one: the schedule still has a range per thread of the current
// team size, so that thread runs its own and then takes the other's whole
// from the back (the stolen pairs' prefetch path). Results match the
// reference, and the stolen pairs are exactly the second range.
TEST(Int8GemmVnni, TeamOfOneTakesTheOtherRangeFromTheBack) {
  SKIP_WITHOUT_VNNI();
  ThreadCount two(2);
  for (int64_t n : {768, 3072}) { // rows split (small weight), panels split (unless AMD)
    Problem p(113, n, 768, 11);
    const PackedInt8 packed =
        packInt8(octet::PackIsa::Avx512Vnni, p.bKN.data(), p.k, p.n, WeightLayout::KN);
    Int8GemmDriver gemm(packed, biasParams(p));
    const int64_t pairs = (p.m + gemm.registerTileMBlock(p.m) - 1) / gemm.registerTileMBlock(p.m) *
                          ((n + gemm.nr() - 1) / gemm.nr());
    std::vector<float> nested(p.m * n), alone(p.m * n);
    Int8GemmRunStats stats;
    inTeamOfOne([&] { stats = gemm.runCounted(p.a.data(), p.m, p.lda, nested.data(), n); });
    EXPECT_EQ(stats.stolenPairs, pairs / 2) << n << ": " << pairs << " pairs";
    const Int8GemmRunStats team = gemm.runCounted(p.a.data(), p.m, p.lda, alone.data(), n);
    EXPECT_EQ(team.calls, stats.calls) << n;
    EXPECT_EQ(nested, alone) << n << ": a pair's result does not depend on its thread";
  }
  Options o;
  o.aZeroPoint = 128, o.bias = true, o.residual = true, o.nested = true;
  Problem(113, 768, 768, 12).run(o);
  o.residual = false, o.gelu = true, o.output = QuantOutput::U8;
  Problem(113, 3072, 768, 13).run(o);
}

// Column groups (a merged Q/K/V that an attention splits by heads): the
// panels split, never the rows; thread t's static range is its share of every
// group's panels; the result is the ungrouped run's bit for bit at any team
// size, and groups the panels do not divide keep the row-major order.
TEST(Int8GemmVnni, ColumnGroupsSplitEachGroupsPanelsOverTheTeam) {
  SKIP_WITHOUT_VNNI();
  Problem p(113, 3 * 96, 200, 21); // 3 groups of two 48-column panels
  const PackedInt8 packed =
      packInt8(octet::PackIsa::Avx512Vnni, p.bKN.data(), p.k, p.n, WeightLayout::KN);
  Int8GemmParams params = biasParams(p);
  Int8GemmDriver plain(packed, params);
  params.columnGroups = 3;
  Int8GemmDriver grouped(packed, params);
  ASSERT_EQ(grouped.nr(), 48);
  using Order = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(grouped.pairOrder(1, 2), (Order{{0, 0}, {0, 2}, {0, 4}, {0, 1}, {0, 3}, {0, 5}}));
  EXPECT_EQ(grouped.pairOrder(2, 2), (Order{{0, 0},
                                            {0, 2},
                                            {0, 4},
                                            {1, 0},
                                            {1, 2},
                                            {1, 4},
                                            {0, 1},
                                            {0, 3},
                                            {0, 5},
                                            {1, 1},
                                            {1, 3},
                                            {1, 5}}));
  // More threads than a group's panels: the threads whose share is empty
  // (0 and 2 of 4; 0 of 3) take no part; the rest take the same pairs.
  for (int threads : {3, 4})
    EXPECT_EQ(grouped.pairOrder(2, threads), grouped.pairOrder(2, 2)) << threads << " threads";
  EXPECT_EQ(grouped.pairOrder(1, 1), plain.pairOrder(1, 1));
  EXPECT_EQ(plain.pairOrder(1, 2), (Order{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}}));
  for (int threads : {1, 2, 3, 4}) {
    ThreadCount team(threads);
    EXPECT_EQ(grouped.rowSplitLines(p.m), 0) << threads;
    std::vector<float> want(p.m * p.n), got(p.m * p.n, -1.0f);
    plain.run(p.a.data(), p.m, p.lda, want.data(), p.n);
    grouped.run(p.a.data(), p.m, p.lda, got.data(), p.n);
    EXPECT_EQ(got, want) << threads << " threads";
  }
  // 3 groups of 100 columns: no whole panels per group, the plain order.
  Problem q(37, 300, 64, 22);
  const PackedInt8 odd =
      packInt8(octet::PackIsa::Avx512Vnni, q.bKN.data(), q.k, q.n, WeightLayout::KN);
  Int8GemmParams oddParams;
  oddParams.wScale = q.wScale, oddParams.columnGroups = 3;
  Int8GemmDriver oddGrouped(odd, oddParams);
  oddParams.columnGroups = 1;
  Int8GemmDriver oddPlain(odd, oddParams);
  EXPECT_EQ(oddGrouped.pairOrder(1, 2), oddPlain.pairOrder(1, 2));
  // Groups must divide N.
  oddParams.columnGroups = 7;
  EXPECT_THROW(Int8GemmDriver(odd, oddParams), std::invalid_argument);
}

TEST(Int8GemmVnni, FewRowTilesPrefetchFaster) {
  SKIP_WITHOUT_VNNI();
  // BERT's FFN-in (2.25 MiB of weight): its kernels prefetch one line of B
  // per K step, which 12 row tiles need to bring in a whole 768 x 48 slice;
  // faster sets at two and four lines for fewer tiles.
  std::vector<int8_t> big(768 * 3072, 1), small(768 * 768, 1);
  Int8GemmParams params;
  params.wScale = {1.0f};
  const PackedInt8 bigPacked =
      packInt8(octet::PackIsa::Avx512Vnni, big.data(), 768, 3072, WeightLayout::KN);
  // The same paces again, into L1 and L2 (prefetcht0): AMD hosts' sets. For
  // a model.so (kernels captured) both halves; JIT, this host's only.
  std::optional<Int8GemmDriver> captured;
  {
    KernelCodeCapture capture;
    captured.emplace(bigPacked, params);
    EXPECT_EQ(capture.kernels().size(), size_t(6 * captured->mr() * 2));
  }
  ASSERT_EQ(captured->prefetchPaces(), (std::vector<int>{1, 2, 4, 1, 2, 4}));
  for (int set = 0; set < 6; ++set)
    for (int rows = 1; rows <= captured->mr(); ++rows)
      for (bool tail : {false, true}) {
        const Int8GemmKernelConfig &config = captured->kernel(rows, tail, set).config();
        EXPECT_EQ(config.bPrefetchLines, 1 << set % 3) << rows << " " << tail;
        EXPECT_EQ(config.bPrefetchToL1, set >= 3) << rows << " " << tail;
      }
  EXPECT_THROW(captured->kernel(1, false, 6), std::out_of_range);
  Int8GemmDriver gemm(bigPacked, params);
  ASSERT_EQ(gemm.prefetchPaces(), (std::vector<int>{1, 2, 4, 1, 2, 4}));
  for (int set = 0; set < 6; ++set) {
    const bool hosts = (set >= 3) == hostIsAmd();
    if (hosts)
      EXPECT_EQ(gemm.kernel(1, false, set).config().bPrefetchToL1, set >= 3) << set;
    else
      EXPECT_THROW(gemm.kernel(1, false, set), std::out_of_range) << set;
  }
  // A slice of kc x 48 bytes is 3/4 kc lines, a call prefetches kc / 16 (4
  // K groups per unrolled step) per line: 12 tiles cover it at one line, 6
  // at two, 3 at four, whatever kc this L1 gives; fewer still take four.
  const int64_t kc = gemm.kc();
  EXPECT_EQ(gemm.prefetchSet(15, kc), 0); // 128 rows at MR 9
  EXPECT_EQ(gemm.prefetchSet(12, kc), 0);
  EXPECT_EQ(gemm.prefetchSet(11, kc), 1);
  EXPECT_EQ(gemm.prefetchSet(6, kc), 1);
  EXPECT_EQ(gemm.prefetchSet(5, kc), 2);
  EXPECT_EQ(gemm.prefetchSet(1, kc), 2);
  EXPECT_EQ(gemm.prefetchSet(15, kc, 2), 1); // rows split on AMD: two lines at least
  // The L1 twin of each: the same pace, three sets on.
  for (int64_t tiles : {15, 12, 11, 6, 5, 1})
    EXPECT_EQ(gemm.prefetchSet(tiles, kc, 0, true), gemm.prefetchSet(tiles, kc) + 3) << tiles;
  EXPECT_EQ(gemm.prefetchSet(15, kc, 2, true), 4);
  // A small weight's kernels prefetch two lines already: one faster set.
  const PackedInt8 smallPacked =
      packInt8(octet::PackIsa::Avx512Vnni, small.data(), 768, 768, WeightLayout::KN);
  Int8GemmDriver smallGemm(smallPacked, params);
  EXPECT_EQ(smallGemm.prefetchPaces(), (std::vector<int>{2, 4, 2, 4}));
  EXPECT_EQ(smallGemm.prefetchSet(6, smallGemm.kc()), 0);
  EXPECT_EQ(smallGemm.prefetchSet(5, smallGemm.kc()), 1);
  EXPECT_EQ(smallGemm.prefetchSet(5, smallGemm.kc(), 0, true), 3);
  EXPECT_THROW(smallGemm.kernel(1, false, 4), std::out_of_range);
  // The runs call a faster set exactly for blocks of few tiles (M 32: one
  // block of 4 tiles, four lines; M 128: 15) or rows split over two threads
  // on AMD (64 rows each: 8 tiles, two lines), and all agree with the
  // reference.
  std::vector<uint8_t> a(128 * 768, 1);
  std::vector<float> c(128 * 3072);
  for (int threads : {1, 2}) {
    ThreadCount team(threads);
    const bool rowsSplit = threads == 2 && hostIsAmd();
    EXPECT_EQ(gemm.rowSplitLines(128), rowsSplit ? 2 : 0) << threads;
    for (int64_t m : {32, 128}) {
      const Int8GemmRunStats stats = gemm.runCounted(a.data(), m, 768, c.data(), 3072);
      EXPECT_GT(stats.calls, 0) << m;
      EXPECT_EQ(stats.fewTilesCalls, m == 32 || rowsSplit ? stats.calls : 0)
          << m << " rows, " << threads << " threads";
    }
  }
  for (int64_t m : {5, 32, 64, 128}) {
    Problem p(m, 3072, 768, 4);
    Options o;
    o.aZeroPoint = 128, o.bias = true, o.gelu = true, o.output = QuantOutput::U8;
    p.run(o);
  }
}

// What each thread runs first, for the step before to prefetch
// (NextStepPrefetch.h): the code of its schedule range's first block's row
// tiles (tall, then short: one kernel where they are alike) in this host's
// set for the block, on that block's panel; nothing for a thread without
// items or for no rows. And a run during which reads are published (its
// threads prefetch them) computes the same bits.
TEST(Int8GemmVnni, FirstReadsAreTheFirstBlocksKernels) {
  SKIP_WITHOUT_VNNI();
  struct Case {
    int64_t m, n, k;
  };
  for (const Case c : {Case{108, 768, 768}, Case{108, 3072, 768}, Case{113, 100, 770},
                       Case{1, 768, 768}, Case{7, 40, 64}, Case{300, 96, 128}}) {
    const PackedInt8 packed = packedOnes(c.k, c.n);
    Int8GemmDriver gemm(packed, unitScale());
    const int64_t panels = (c.n + gemm.nr() - 1) / gemm.nr();
    for (int threads : {1, 2, 3}) {
      ThreadCount team(threads);
      const std::string what = std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                               std::to_string(c.k) + " on " + std::to_string(threads);
      std::vector<ThreadReads> reads;
      gemm.firstReads(0, threads, reads);
      ASSERT_EQ(reads.size(), size_t(threads)) << what;
      for (const ThreadReads &r : reads)
        EXPECT_EQ(r.count, 0) << what << ": no rows";
      gemm.firstReads(c.m, threads, reads);
      ASSERT_EQ(reads.size(), size_t(threads)) << what;
      const int64_t block = gemm.registerTileMBlock(c.m), blocks = (c.m + block - 1) / block;
      const auto order = gemm.pairOrder(blocks, threads);
      const int64_t items = blocks * panels;
      for (int64_t t = 0, first = 0; t < threads; ++t) {
        const int64_t count = items / threads + (t < items % threads);
        if (count == 0) {
          EXPECT_EQ(reads[t].count, 0) << what << ": thread " << t << " has no items";
          continue;
        }
        const auto [mb, p] = order[size_t(first)];
        const int64_t rows = std::min(c.m, (mb + 1) * block) - mb * block;
        const int64_t tiles = (rows + gemm.mr() - 1) / gemm.mr();
        const int set =
            gemm.prefetchSet(tiles, std::min(gemm.kc(), c.k), gemm.rowSplitLines(c.m), hostIsAmd());
        const bool tail = c.n - p * gemm.nr() < gemm.nr();
        const int64_t tall = (rows + tiles - 1) / tiles, shortRows = rows / tiles;
        ASSERT_EQ(reads[t].count, tall == shortRows ? 1 : 2) << what << ": thread " << t;
        EXPECT_EQ(reads[t].ranges[0], gemm.kernel(int(tall), tail, set).generatedCode())
            << what << ": thread " << t;
        if (tall != shortRows) {
          EXPECT_EQ(reads[t].ranges[1], gemm.kernel(int(shortRows), tail, set).generatedCode())
              << what << ": thread " << t;
        }
        first += count;
      }
    }
  }
  Problem p(113, 768, 768, 21);
  const PackedInt8 packed =
      packInt8(octet::PackIsa::Avx512Vnni, p.bKN.data(), p.k, p.n, WeightLayout::KN);
  Int8GemmDriver gemm(packed, biasParams(p));
  std::vector<float> plain(p.m * p.n), prefetching(p.m * p.n);
  gemm.run(p.a.data(), p.m, p.lda, plain.data(), p.n);
  NextStepReads next;
  gemm.firstReads(p.m, omp_get_max_threads(), next.perThread);
  next.perThread[0].add({p.bKN.data(), p.bKN.size()});
  {
    const NextStepReads::Scope published(&next);
    gemm.run(p.a.data(), p.m, p.lda, prefetching.data(), p.n);
  }
  EXPECT_EQ(plain, prefetching);
}

// K is cut into the fewest equal blocks (multiples of 4) within the bound: the
// blocking rule's lets a panel slice take several L1s, so BERT's K = 768 is
// one block wherever L1d has 32 KiB or more; a set bound wins.
TEST(Int8GemmVnni, KBlocksWithinTheBound) {
  std::vector<int8_t> b(3072 * 768, 1);
  Int8GemmParams params;
  params.wScale = {1.0f};
  const PackedInt8 k768 =
      packInt8(octet::PackIsa::Avx512Vnni, b.data(), 768, 3072, WeightLayout::KN);
  EXPECT_EQ(Int8GemmDriver(k768, params).kc(), 768);
  const PackedInt8 k3072 =
      packInt8(octet::PackIsa::Avx512Vnni, b.data(), 3072, 768, WeightLayout::KN);
  const int64_t kc = Int8GemmDriver(k3072, params).kc();
  EXPECT_EQ(kc % 4, 0);
  EXPECT_EQ(3072 % kc, 0) << kc << ": equal blocks";
  EXPECT_GE(kc * 48, octet::x86::gemm_blocking::kPanelSliceL1s * 32768 / 2) << kc;
  params.maxKBlock = 100;
  EXPECT_EQ(Int8GemmDriver(k768, params).kc(), 96); // 8 blocks of 96
  params.maxKBlock = 1;
  EXPECT_EQ(Int8GemmDriver(k768, params).kc(), 4);
}

// Every epilogue combination on one shape with a K tail, K blocks and an N tail.
TEST(Int8GemmVnni, AllEpilogueCombinations) {
  SKIP_WITHOUT_VNNI();
  Problem p(37, 100, 770, 7);
  for (int c = 0; c < 24; ++c)
    for (int32_t zp : {0, 128, 37}) {
      Options o;
      o.maxKBlock = 256; // 4 blocks of 196 bytes (the last 182, K tail 2)
      o.layout = c % 2 ? WeightLayout::NK : WeightLayout::KN;
      o.aZeroPoint = zp;
      o.bias = c & 1, o.residual = c & 2, o.gelu = c & 4;
      o.output = QuantOutput(c / 8);
      p.run(o);
    }
}

// A program's scratch registers come out of the accumulator rows.
TEST(Int8GemmVnni, ProgramScratchShrinksRows) {
  SKIP_WITHOUT_VNNI();
  std::unique_ptr<ProgramEpilogue> program = geluEpilogue();
  std::vector<int8_t> b(64 * 768, 1);
  PackedInt8 packed = packInt8(octet::PackIsa::Avx512Vnni, b.data(), 64, 768, WeightLayout::KN);
  Int8GemmParams params;
  params.wScale = {1.0f};
  EXPECT_EQ(Int8GemmDriver(packed, params).mr(), 9);
  params.elementwise = program.get();
  Int8GemmDriver gemm(packed, params);
  EXPECT_EQ(gemm.mr(), Int8GemmKernelVnni::maxRows(48, program->scratchZmmCount()));
  EXPECT_LE(gemm.mr() * 3 + program->scratchZmmCount(), 32);
  EXPECT_EQ(gemm.mr(), 8) << "GELU (erf) scratch " << program->scratchZmmCount();
}

// A rows are read for exactly K bytes: the last row ends where an unreadable
// page starts, so reading the K tail's dword unmasked would fault.
TEST(Int8GemmVnni, KTailNeverReadsPastTheRow) {
  SKIP_WITHOUT_VNNI();
  const long page = sysconf(_SC_PAGESIZE);
  for (int64_t k : {1, 2, 3, 5, 7, 770}) {
    const int64_t m = 9, n = 17;
    void *mem = mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    auto *end = static_cast<uint8_t *>(mem) + 3 * page;
    ASSERT_EQ(mprotect(end, page, PROT_NONE), 0);
    uint8_t *a = end - m * k; // tight rows, lda = K
    std::mt19937 gen{static_cast<unsigned>(k)};
    std::vector<int8_t> b(k * n);
    for (int64_t i = 0; i < m * k; ++i)
      a[i] = uint8_t(gen());
    for (int8_t &x : b)
      x = int8_t(gen());
    PackedInt8 packed = packInt8(octet::PackIsa::Avx512Vnni, b.data(), k, n, WeightLayout::KN);
    Int8GemmParams params;
    params.aZeroPoint = 3;
    params.wScale = {1.0f};
    Int8GemmDriver gemm(packed, params);
    std::vector<float> c(m * n);
    gemm.run(a, m, k, c.data(), n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t ref = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          ref += (int64_t(a[i * k + kk]) - 3) * b[kk * n + j]; // a_zp 3
        ASSERT_EQ(c[i * n + j], float(ref)) << "K " << k << " C[" << i << "][" << j << "]";
      }
    munmap(mem, 4 * page);
  }
}

/// Random u8 A (m x k) and s8 B (k x n), B packed for VNNI, and a kernel
/// config for `rows`-row tiles of it with the unit epilogue arrays.
struct DirectKernelCase {
  std::vector<uint8_t> a;
  std::vector<int8_t> b;
  PackedInt8 packed;
  Int8GemmKernelConfig config;
  std::vector<int32_t> comp;
  std::vector<float> scale, bias;
  DirectKernelCase(int rows, int64_t m, int64_t k, int64_t n, unsigned seed)
      : a(size_t(m * k)), b(size_t(k * n)) {
    std::mt19937 gen{seed};
    for (uint8_t &x : a)
      x = uint8_t(gen());
    for (int8_t &x : b)
      x = int8_t(gen());
    packed = packInt8(octet::PackIsa::Avx512Vnni, b.data(), k, n, WeightLayout::KN);
    config.rows = rows, config.nr = packed.nr, config.columns = int(n);
    comp.assign(size_t(packed.nr), 0);
    scale.assign(size_t(packed.nr), 1.0f), bias.assign(size_t(packed.nr), 0.0f);
  }
};

// Int8GemmVnniArgs::bPrefetch is only ever a prefetch's address (the driver
// points it at the next B slice, which may lie past the weight): null, an
// unreadable page or garbage must neither fault nor change C (prefetcht1 and
// prefetcht0 alike).
TEST(Int8GemmVnni, BPrefetchAddressIsNeverLoaded) {
  SKIP_WITHOUT_VNNI();
  const int rows = 4;
  const int64_t k = 64, n = 16; // 16 K groups: 4 unrolled iterations, 4 prefetches
  DirectKernelCase x(rows, rows, k, n, 11);
  const auto &a = x.a;
  const auto &b = x.b;
  const PackedInt8 &packed = x.packed;
  Int8GemmKernelConfig config = x.config;
  const std::vector<int32_t> &comp = x.comp;
  const std::vector<float> &scale = x.scale, &bias = x.bias;
  const long page = sysconf(_SC_PAGESIZE);
  void *guard = mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(guard, MAP_FAILED);
  const int8_t *targets[] = {packed.data.data(), nullptr, static_cast<const int8_t *>(guard),
                             reinterpret_cast<const int8_t *>(uintptr_t(0xdead0000))};
  for (int lines : {1, 2, -1})
    for (const int8_t *target : targets) {
      config.bPrefetchLines = lines < 0 ? 4 : lines;
      config.bPrefetchToL1 = lines < 0; // prefetcht0
      Int8GemmKernelVnni kernel(config);
      auto fn = kernel.entry<Int8GemmVnniFn>();
      std::vector<float> c(rows * n, -1.0f);
      Int8GemmVnniArgs args{};
      args.a = a.data(), args.b = packed.data.data(), args.c = c.data();
      args.comp = comp.data(), args.scale = scale.data(), args.bias = bias.data();
      args.lda = k, args.ldc = n;
      args.kGroups = k / 4, args.last = 1;
      args.bPrefetch = target;
      fn(&args);
      for (int i = 0; i < rows; ++i)
        for (int64_t j = 0; j < n; ++j) {
          int64_t ref = 0;
          for (int64_t kk = 0; kk < k; ++kk)
            ref += int64_t(a[i * k + kk]) * b[kk * n + j];
          ASSERT_EQ(c[i * n + j], float(ref))
              << "prefetch target " << static_cast<const void *>(target) << ", " << lines
              << " line(s) per step";
        }
    }
  munmap(guard, page);
}

// One call runs `tiles` row tiles one below the other (the driver's tall
// tiles, then its short ones) and leaves the row fields and the prefetch at
// the tile after them (Int8GemmVnniArgs::tiles).
TEST(Int8GemmVnni, OneCallRunsSeveralRowTiles) {
  SKIP_WITHOUT_VNNI();
  const int rows = 3, tiles = 4, m = rows * tiles;
  const int64_t k = 40, n = 20, ldc = 24; // 10 K groups: 2 unrolled steps and 2 more
  DirectKernelCase x(rows, m, k, n, 5);
  const auto &a = x.a;
  const auto &b = x.b;
  const PackedInt8 &packed = x.packed;
  x.config.epilogue.xScalePerRow = true;
  Int8GemmKernelVnni kernel(x.config);
  const std::vector<int32_t> &comp = x.comp;
  const std::vector<float> &scale = x.scale, &bias = x.bias;
  std::vector<float> xScale(m);
  for (int i = 0; i < m; ++i)
    xScale[i] = 0.5f + 0.25f * float(i % 5);
  std::vector<float> c(m * ldc, -1.0f);
  Int8GemmVnniArgs args{};
  args.a = a.data(), args.b = packed.data.data(), args.c = c.data();
  args.comp = comp.data(), args.scale = scale.data(), args.bias = bias.data();
  args.lda = k, args.ldc = ldc, args.xScale = xScale.data();
  args.kGroups = k / 4, args.last = 1;
  const int8_t *next = packed.data.data() + 4096;
  args.bPrefetch = next, args.prefetchLeft = 100, args.prefetchStep = 64, args.tiles = tiles;
  kernel.entry<Int8GemmVnniFn>()(&args);
  for (int i = 0; i < m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      int64_t ref = 0;
      for (int64_t kk = 0; kk < k && j < n; ++kk)
        ref += int64_t(a[i * k + kk]) * b[kk * n + j];
      const float want = j < n ? float(ref) * xScale[i] : -1.0f; // past N: untouched
      ASSERT_EQ(c[i * ldc + j], want) << "C[" << i << "][" << j << "]";
    }
  EXPECT_EQ(args.a, a.data() + m * k);
  EXPECT_EQ(args.c, static_cast<void *>(c.data() + m * ldc));
  EXPECT_EQ(args.xScale, xScale.data() + m);
  EXPECT_EQ(args.partial, nullptr) << "a null field moved";
  EXPECT_EQ(args.prefetchLeft, 100 - tiles * 64);
  EXPECT_EQ(args.bPrefetch, packed.data.data()) << "past the next slice: the own one";
  EXPECT_LE(args.tiles, 0);

  // While bytes of the next slice are left, each tile's prefetch starts where
  // the tile before stopped.
  args.a = a.data(), args.c = c.data(), args.xScale = xScale.data();
  args.bPrefetch = next, args.prefetchLeft = 200, args.tiles = 2;
  kernel.entry<Int8GemmVnniFn>()(&args);
  EXPECT_EQ(args.bPrefetch, next + 128);
  EXPECT_EQ(args.prefetchLeft, 72);
}

// Packing is plain C++: checked on every host.
TEST(Int8GemmVnni, PackLayoutAndColumnSums) {
  const int64_t k = 7, n = 37;
  const int nr = int8GemmPanelWidth(octet::PackIsa::Avx512Vnni, n);
  const int64_t k4 = 2, panels = (n + nr - 1) / nr;
  std::vector<int8_t> bKN(k * n), bNK(n * k);
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t col = 0; col < n; ++col)
      bKN[kk * n + col] = bNK[col * k + kk] = int8_t((kk * 37 + col * 11) % 256 - 128);
  for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK}) {
    PackedInt8 packed =
        packInt8(octet::PackIsa::Avx512Vnni, layout == WeightLayout::KN ? bKN.data() : bNK.data(),
                 k, n, layout);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(packed.data.data()) % 64, 0u);
    ASSERT_EQ(int64_t(packed.data.size()), panels * k4 * nr * 4);
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t kk = 0; kk < k4 * 4; ++kk)
        for (int64_t j = 0; j < nr; ++j) {
          const int64_t col = p * nr + j;
          const int8_t want = col < n && kk < k ? bKN[kk * n + col] : 0;
          ASSERT_EQ(packed.data[((p * k4 + kk / 4) * nr + j) * 4 + kk % 4], want)
              << "panel " << p << " k " << kk << " j " << j;
        }
    for (int64_t col = 0; col < n; ++col) {
      int32_t sum = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        sum += bKN[kk * n + col];
      EXPECT_EQ(packed.colsum[col], sum);
    }
  }
  EXPECT_EQ(int8GemmPanelWidth(octet::PackIsa::Avx512Vnni, 768), 48);
  EXPECT_EQ(int8GemmPanelWidth(octet::PackIsa::Avx512Vnni, 100), 32);
}

template <typename F> std::string errorOf(F f) {
  try {
    f();
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "";
}

// The driver as the qlinear step sees it (octet::Int8Gemm), its kernel table
// and what is not its schedule's.
TEST(Int8GemmVnni, OneDriverBehindTheInterface) {
  SKIP_WITHOUT_VNNI();
  const int64_t m = 20, k = 70, n = 100;
  std::vector<int8_t> b(k * n);
  std::vector<uint8_t> a(m * k);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = int8_t(int(i * 37 % 255) - 127);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = uint8_t(i * 91 % 256);
  const PackedInt8 packed = packInt8(octet::PackIsa::Avx512Vnni, b.data(), k, n, WeightLayout::KN);
  Int8GemmParams params;
  params.aZeroPoint = 128;
  params.wScale = {0.5f};
  const Int8GemmDriver driver(packed, params);
  EXPECT_STREQ(driver.name(), "jit_vnni");
  EXPECT_EQ(&driver.family(), &Int8GemmKernelVnni::family());
  EXPECT_EQ(driver.nr(), 32);
  EXPECT_EQ(driver.mr(), Int8GemmKernelVnni::maxRows(32, 0));

  std::vector<float> viaInterface(m * n), direct(m * n);
  const octet::Int8Gemm &gemm = driver;
  gemm.run(a.data(), m, k, viaInterface.data(), n);
  const Int8GemmRunStats stats = driver.runCounted(a.data(), m, k, direct.data(), n);
  EXPECT_EQ(viaInterface, direct);
  // Every (row group, panel) pair once per K block; 4 panels of 32 for N 100.
  EXPECT_GE(stats.calls, 4 * ((m + driver.mr() - 1) / driver.mr()));
  EXPECT_EQ(stats.configLoads, 0);

  // Kernels for rows 1..MR on the full and the tail panel (N % 32 = 4 columns).
  EXPECT_EQ(driver.kernel(1, false).config().columns, 32);
  EXPECT_EQ(driver.kernel(driver.mr(), true).config().columns, 4);
  // This host's own set: prefetching into L1 on AMD (the name's _pfl1).
  const std::string prefix =
      std::string("gemm_u8s8_vnni_m1n32c4_ktail2_pf2") + (hostIsAmd() ? "_pfl1" : "") + "_comp";
  EXPECT_EQ(driver.kernel(1, true).name().rfind(prefix, 0), 0u) << driver.kernel(1, true).name();
  EXPECT_THROW(driver.kernel(driver.mr() + 1, false), std::out_of_range);
  EXPECT_THROW(driver.runEmulated(a.data(), m, k, direct.data(), n), std::logic_error);

  // A weight packed for the other ISA's kernels is refused, naming the layout.
  PackedInt8View wrong = packed;
  wrong.isa = octet::PackIsa::Amx;
  std::string error;
  try {
    Int8GemmDriver g(wrong, params);
  } catch (const std::invalid_argument &e) {
    error = e.what();
  }
  EXPECT_NE(error.find("not the amx layout"), std::string::npos) << error;
}

TEST(Int8GemmVnni, RejectsBadShapesAndParameters) {
  std::vector<int8_t> b(64 * 16, 1);
  EXPECT_NE(errorOf([&] {
              packInt8(octet::PackIsa::Avx512Vnni, b.data(), 0, 16, WeightLayout::KN);
            }).find("K must be"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              packInt8(octet::PackIsa::Avx512Vnni, b.data(), kMaxU8S8K + 1, 16, WeightLayout::KN);
            }).find("overflow"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              packInt8(octet::PackIsa::Avx512Vnni, b.data(), 64, 0, WeightLayout::KN);
            }).find("N must be"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              packInt8(octet::PackIsa::Avx512Vnni, nullptr, 64, 16, WeightLayout::KN);
            }).find("null"),
            std::string::npos);
  if (!Int8GemmDriver::hostSupported()) {
    PackedInt8 packed = packInt8(octet::PackIsa::Avx512Vnni, b.data(), 64, 16, WeightLayout::KN);
    Int8GemmParams params;
    params.wScale = {1.0f};
    const Int8GemmDriver g(packed, params); // generating needs no VNNI; running does
    std::vector<uint8_t> a(64);
    std::vector<float> c(16);
    std::string why;
    try {
      g.run(a.data(), 1, 64, c.data(), 16);
    } catch (const std::runtime_error &e) {
      why = e.what();
    }
    EXPECT_NE(why.find("cannot run on this host: it lacks AVX-512 VNNI"), std::string::npos) << why;
    GTEST_SKIP() << "host lacks AVX-512 VNNI: only the packing checks ran";
  }
  PackedInt8 packed = packInt8(octet::PackIsa::Avx512Vnni, b.data(), 64, 16, WeightLayout::KN);
  auto make = [&](auto edit) {
    Int8GemmParams params;
    params.wScale = {1.0f};
    edit(params);
    return errorOf([&] { Int8GemmDriver g(packed, params); });
  };
  EXPECT_NE(make([](Int8GemmParams &p) { p.aZeroPoint = 256; }).find("zero point"),
            std::string::npos);
  EXPECT_NE(make([](Int8GemmParams &p) { p.wScale = {1, 2, 3}; }).find("weight scales"),
            std::string::npos);
  EXPECT_NE(make([](Int8GemmParams &p) {
              p.output = QuantOutput::U8;
              p.outZeroPoint = -1;
            }).find("zero point"),
            std::string::npos);
  EXPECT_NE(make([](Int8GemmParams &p) {
              p.output = QuantOutput::S8;
              p.outScale = 0;
            }).find("scale"),
            std::string::npos);
  EXPECT_NE(make([](Int8GemmParams &p) { p.maxKBlock = -4; }).find("K block bound"),
            std::string::npos);
  EXPECT_EQ(make([](Int8GemmParams &) {}), "");

  Int8GemmParams params;
  params.wScale = {1.0f};
  params.residual = true;
  Int8GemmDriver gemm(packed, params);
  std::vector<uint8_t> a(4 * 64);
  std::vector<float> c(4 * 16), r(4 * 16);
  EXPECT_NE(errorOf([&] { gemm.run(a.data(), 4, 63, c.data(), 16, r.data(), 16); }).find("lda"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { gemm.run(a.data(), 4, 64, c.data(), 15, r.data(), 16); }).find("ldc"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { gemm.run(a.data(), 4, 64, c.data(), 16); }).find("residual"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { gemm.run(a.data(), -1, 64, c.data(), 16, r.data(), 16); }).find("M"),
            std::string::npos);
  EXPECT_EQ(errorOf([&] { gemm.run(a.data(), 4, 64, c.data(), 16, r.data(), 16); }), "");
}

// The fast GELU is a property of the epilogue, so of the kernel: its name
// says so, and an f32 output (nothing rounds its error away) is refused.
TEST(Int8GemmVnni, FastGeluOnlyForRequantizedOutputs) {
  std::unique_ptr<ProgramEpilogue> fast = geluEpilogue(GeluAccuracy::ForRequantize);
  std::unique_ptr<ProgramEpilogue> full = geluEpilogue();
  EXPECT_TRUE(fast->requantizedOutputOnly());
  EXPECT_FALSE(full->requantizedOutputOnly());
  EXPECT_LT(fast->scratchZmmCount(), full->scratchZmmCount());
  Int8EpilogueConfig config;
  config.elementwise = fast.get();
  config.output = QuantOutput::U8;
  EXPECT_EQ(checkInt8Epilogue(config), "");
  EXPECT_EQ(int8EpilogueSuffix(config), "_elementwise_fastgelu_u8");
  config.output = QuantOutput::F32;
  EXPECT_NE(checkInt8Epilogue(config).find("fast GELU"), std::string::npos);
  config.elementwise = full.get();
  EXPECT_EQ(checkInt8Epilogue(config), "");
  EXPECT_EQ(int8EpilogueSuffix(config), "_elementwise_f32");

  // Without a GELU the accuracy asked for changes nothing.
  octet::rt::ElementwiseProgram relu;
  relu.numInputs = 1;
  relu.instrs = {{octet::rt::ElementwiseProgram::Op::Input, 0, -1, 0},
                 {octet::rt::ElementwiseProgram::Op::Relu, 0, -1, 0}};
  std::string error;
  auto reluFast = ProgramEpilogue::create(relu, error, {}, GeluAccuracy::ForRequantize);
  ASSERT_TRUE(reluFast) << error;
  EXPECT_FALSE(reluFast->requantizedOutputOnly());

  // GELU spelled out becomes the fast one only when asked for; the erf it
  // replaces is not computed (the scratch of the fast GELU alone).
  EXPECT_TRUE(geluEpilogue(GeluAccuracy::ForRequantize, true)->requantizedOutputOnly());
  EXPECT_EQ(geluEpilogue(GeluAccuracy::ForRequantize, true)->scratchZmmCount(),
            fast->scratchZmmCount());
  EXPECT_FALSE(geluEpilogue(GeluAccuracy::Full, true)->requantizedOutputOnly());
  // erf(x * 0.7) is not GELU's.
  const octet::rt::ElementwiseProgram notGelu = spelledOutGelu(0.7f);
  auto notGeluFast = ProgramEpilogue::create(notGelu, error, {}, GeluAccuracy::ForRequantize);
  ASSERT_TRUE(notGeluFast) << error;
  EXPECT_FALSE(notGeluFast->requantizedOutputOnly());

  std::vector<int8_t> b(64 * 16, 1);
  PackedInt8 packed = packInt8(octet::PackIsa::Avx512Vnni, b.data(), 64, 16, WeightLayout::KN);
  Int8GemmParams params;
  params.wScale = {1.0f};
  params.elementwise = fast.get();
  EXPECT_NE(errorOf([&] { Int8GemmDriver g(packed, params); }).find("fast GELU"),
            std::string::npos);
  params.output = QuantOutput::S8;
  EXPECT_EQ(errorOf([&] { Int8GemmDriver g(packed, params); }), "");
}

// A per-column input whose N fills whole panels is read in place, unless the
// output overwrites it: here it lies in C's first rows, which the first row
// tile writes before the others read the column.
TEST(Int8GemmVnni, ColumnInputInsideTheOutputIsCopiedFirst) {
  SKIP_WITHOUT_VNNI();
  auto program = octet::test::geluTimesColumnEpilogue();
  ASSERT_TRUE(program);
  const int64_t m = 40, n = 48, k = 8;
  Problem p(m, n, k, 77);
  std::vector<float> column(n);
  for (int64_t j = 0; j < n; ++j)
    column[j] = 0.5f + float(j % 7) / 7.0f;
  const PackedInt8 packed =
      packInt8(octet::PackIsa::Avx512Vnni, p.bKN.data(), k, n, WeightLayout::KN);
  Int8GemmParams params = biasParams(p);
  params.elementwise = program.get();
  params.output = QuantOutput::U8;
  params.outScale = 0.05f;
  params.outZeroPoint = 3;
  Int8GemmDriver gemm(packed, params);
  std::vector<uint8_t> want(m * n);
  const float *apart[] = {column.data()};
  gemm.run(p.a.data(), m, p.lda, want.data(), n, nullptr, 0, nullptr, apart);
  std::vector<float> buffer(m * n / 4 + 16); // C's bytes, the column in its first 192
  std::copy(column.begin(), column.end(), buffer.begin());
  const float *inside[] = {buffer.data()};
  gemm.run(p.a.data(), m, p.lda, buffer.data(), n, nullptr, 0, nullptr, inside);
  const uint8_t *got = reinterpret_cast<const uint8_t *>(buffer.data());
  for (int64_t i = 0; i < m * n; ++i)
    ASSERT_EQ(int(got[i]), int(want[i])) << "row " << i / n << " column " << i % n;
}

// After a fast GELU the requantize is fma(v, 1/out_scale, out_zp), clamped to
// the type's range in f32 and rounded once: NaN takes the low bound and
// infinities and huge values saturate, as on the other requantize path, and a
// code is RNE of the exact value (away from ties), zero point included.
TEST(Int8GemmVnni, FastGeluRequantizeClampsNaNAndInfinities) {
  SKIP_WITHOUT_VNNI();
  auto program = octet::test::geluTimesColumnEpilogue();
  ASSERT_TRUE(program);
  ASSERT_TRUE(program->requantizedOutputOnly());
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // x = 4 * 1 * 0.5 = 2 in every column; GELU(2) = 1.9544997.
  const std::vector<float> column = {nan,  inf,  -inf,  1e30f, -1e30f, 1.0f, 0.0f,  -1.0f,
                                     0.3f, 2.0f, 10.0f, -0.5f, 0.01f,  5.0f, -3.0f, 0.7f};
  const int64_t k = 4, n = int64_t(column.size());
  std::vector<int8_t> b(k * n, 1);
  std::vector<uint8_t> a(k, 1);
  PackedInt8 packed = packInt8(octet::PackIsa::Avx512Vnni, b.data(), k, n, WeightLayout::KN);
  const double gelu2 = 2.0 * 0.5 * (1.0 + std::erf(2.0 / std::sqrt(2.0)));
  for (QuantOutput out : {QuantOutput::U8, QuantOutput::S8}) {
    Int8GemmParams params;
    params.xScale = 0.5f;
    params.wScale = {1.0f};
    params.elementwise = program.get();
    params.output = out;
    params.outScale = 0.05f;
    params.outZeroPoint = out == QuantOutput::U8 ? 3 : -5;
    const int lo = out == QuantOutput::U8 ? 0 : -128, hi = lo + 255;
    Int8GemmDriver gemm(packed, params);
    std::vector<uint8_t> c(n);
    const float *columns[] = {column.data()};
    gemm.run(a.data(), 1, k, c.data(), n, nullptr, 0, nullptr, columns);
    for (int64_t j = 0; j < n; ++j) {
      const int got = out == QuantOutput::U8 ? int(c[j]) : int(int8_t(c[j]));
      int want;
      if (std::isnan(column[j]))
        want = lo;
      else {
        const double v = gelu2 * double(column[j]) / 0.05 + params.outZeroPoint;
        want = int(std::clamp(std::nearbyint(std::clamp(v, -1e9, 1e9)), double(lo), double(hi)));
      }
      EXPECT_EQ(got, want) << quantOutputName(out) << " column " << j << " (" << column[j] << ")";
    }
  }
}

// A fast GELU whose value reaches the result through multiplications only
// is computed doubled (one instruction fewer) and the requantize halves its
// 1/out_scale; anything else after it keeps the plain GELU. Either way the
// codes are the formula's: x = 2 in every column, y = f(GELU(2), column).
TEST(Int8GemmVnni, FastGeluDoubledOnlyBeforeMultiplications) {
  using Op = octet::rt::ElementwiseProgram::Op;
  // gelu = %1, column = %2; `tail` combines them into the result.
  auto program = [](std::vector<octet::rt::ElementwiseProgram::Instr> tail) {
    octet::rt::ElementwiseProgram p;
    p.numInputs = 2;
    p.instrs = {{Op::Input, 0, -1, 0}, {Op::GeluErf, 0, -1, 0}, {Op::Input, 1, -1, 0}};
    p.instrs.insert(p.instrs.end(), tail.begin(), tail.end());
    return p;
  };
  struct Case {
    const char *name;
    octet::rt::ElementwiseProgram program;
    float resultScale;
    double (*formula)(double gelu, double column);
  };
  const std::vector<Case> cases = {
      {"gelu * column", program({{Op::Mul, 1, 2, 0}}), 2.0f,
       [](double g, double c) { return g * c; }},
      {"column * gelu / column", program({{Op::Mul, 2, 1, 0}, {Op::Div, 3, 2, 0}}), 2.0f,
       [](double g, double c) { return c * g / c; }},
      {"gelu + column", program({{Op::Add, 1, 2, 0}}), 1.0f,
       [](double g, double c) { return g + c; }},
      {"column / gelu", program({{Op::Div, 2, 1, 0}}), 1.0f,
       [](double g, double c) { return c / g; }},
      {"gelu * gelu", program({{Op::Mul, 1, 1, 0}}), 1.0f, [](double g, double) { return g * g; }},
      {"gelu * column + column", program({{Op::Mul, 1, 2, 0}, {Op::Add, 3, 2, 0}}), 1.0f,
       [](double g, double c) { return g * c + c; }},
  };
  const std::vector<float> column = {1.0f, 0.0f,  -1.0f, 0.3f,  2.0f, 1.7f, -0.5f, 0.01f,
                                     5.0f, -3.0f, 0.7f,  -0.2f, 0.9f, 1.1f, 3.3f,  -2.2f};
  const int64_t k = 4, n = int64_t(column.size());
  std::vector<int8_t> b(k * n, 1);
  std::vector<uint8_t> a(k, 1);
  PackedInt8 packed = packInt8(octet::PackIsa::Avx512Vnni, b.data(), k, n, WeightLayout::KN);
  const double gelu2 = 2.0 * 0.5 * (1.0 + std::erf(2.0 / std::sqrt(2.0)));
  for (const Case &c : cases) {
    std::string error;
    auto full = ProgramEpilogue::create(c.program, error, {false, true});
    auto fast =
        ProgramEpilogue::create(c.program, error, {false, true}, GeluAccuracy::ForRequantize);
    ASSERT_TRUE(full && fast) << c.name << ": " << error;
    EXPECT_EQ(full->resultScale(), 1.0f) << c.name;
    EXPECT_EQ(fast->resultScale(), c.resultScale) << c.name;
    if (!CpuFeatures::host().supports(Isa::Avx512Vnni))
      continue;
    Int8GemmParams params;
    params.xScale = 0.5f;
    params.wScale = {1.0f};
    params.elementwise = fast.get();
    params.output = QuantOutput::S8;
    params.outScale = 0.05f;
    params.outZeroPoint = 7;
    Int8GemmDriver gemm(packed, params);
    std::vector<uint8_t> out(n);
    const float *columns[] = {column.data()};
    gemm.run(a.data(), 1, k, out.data(), n, nullptr, 0, nullptr, columns);
    for (int64_t j = 0; j < n; ++j) {
      const double v = c.formula(gelu2, column[j]) / 0.05 + 7;
      const int want = std::isnan(v) ? -128 : int(std::clamp(std::nearbyint(v), -128.0, 127.0));
      EXPECT_NEAR(int(int8_t(out[j])), want, std::fabs(v - std::floor(v) - 0.5) < 0.01 ? 1 : 0)
          << c.name << ", column " << j << " (" << column[j] << "): v = " << v;
    }
  }
  // A result left doubled must be requantized after the fast GELU.
  auto doubled = octet::test::geluTimesColumnEpilogue();
  ASSERT_TRUE(doubled);
  EXPECT_EQ(doubled->resultScale(), 2.0f);
}

// Saturation: huge positive and negative sums clamp to the type's range.
TEST(Int8GemmVnni, RequantizationSaturates) {
  SKIP_WITHOUT_VNNI();
  const int64_t k = 64, n = 32;
  std::vector<int8_t> b(k * n);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t kk = 0; kk < k; ++kk)
      b[kk * n + j] = j % 2 ? 127 : -128;
  std::vector<uint8_t> a(k, 255);
  PackedInt8 packed = packInt8(octet::PackIsa::Avx512Vnni, b.data(), k, n, WeightLayout::KN);
  for (QuantOutput out : {QuantOutput::U8, QuantOutput::S8}) {
    Int8GemmParams params;
    params.wScale = {1.0f};
    params.output = out;
    params.outScale = 1e-3f;
    Int8GemmDriver gemm(packed, params);
    std::vector<uint8_t> c(n);
    gemm.run(a.data(), 1, k, c.data(), n);
    for (int64_t j = 0; j < n; ++j) {
      int got = out == QuantOutput::U8 ? int(c[j]) : int(int8_t(c[j]));
      int want = j % 2 ? (out == QuantOutput::U8 ? 255 : 127) : (out == QuantOutput::U8 ? 0 : -128);
      EXPECT_EQ(got, want) << quantOutputName(out) << " column " << j;
    }
  }
}

} // namespace

namespace {
/// C (row stride ldc, params.output) against `formula(i, j)`, the f32 value
/// before the output: f32 bit for bit, u8/s8 exactly (RNE, saturated).
template <typename Formula>
void expectFormulaExactly(const std::vector<uint8_t> &c, int64_t m, int64_t n, int64_t ldc,
                          const Int8GemmParams &params, Formula formula, const std::string &what) {
  const QuantOutput out = params.output;
  int failures = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float v = formula(i, j);
      bool ok;
      std::string got;
      if (out == QuantOutput::F32) {
        float f;
        std::memcpy(&f, &c[(i * ldc + j) * 4], 4);
        ok = std::memcmp(&f, &v, 4) == 0, got = std::to_string(f);
      } else {
        const double lo = out == QuantOutput::U8 ? 0 : -128;
        const int want = int(std::clamp(
            double(std::nearbyint(v / params.outScale)) + params.outZeroPoint, lo, lo + 255));
        const int q = out == QuantOutput::U8 ? int(c[i * ldc + j]) : int(int8_t(c[i * ldc + j]));
        ok = q == want, got = std::to_string(q) + " (want " + std::to_string(want) + ")";
      }
      if (!ok && failures++ < 5)
        ADD_FAILURE() << what << ": C[" << i << "][" << j << "] = " << got << ", formula " << v;
    }
}

// Per-row activation scales (dynamic per-token quantization, a_zp 128) and
// per-column program inputs (SmoothQuant's 1/s, a per-channel affine: the
// kernel loads them per column like the bias). The kernel forms
// f32(x_scale[m] * w_scale[n]) itself and `acc * in1 + in2` has no math
// function, so every f32 result equals the reference formula bit for bit and
// u8/s8 results exactly, over panel tails (N % NR) and every row count.
TEST(Int8GemmVnni, PerRowScaleAndColumnInputsMatchTheFormulaBitForBit) {
  SKIP_WITHOUT_VNNI();
  using Op = octet::rt::ElementwiseProgram::Op;
  octet::rt::ElementwiseProgram program;
  program.numInputs = 4; // acc, a residual-like input it does not read, in1, in2
  program.instrs = {{Op::Input, 0, -1, 0},
                    {Op::Input, 2, -1, 0},
                    {Op::Mul, 0, 1, 0},
                    {Op::Input, 3, -1, 0},
                    {Op::Add, 2, 3, 0}};
  std::string error;
  ASSERT_FALSE(ProgramEpilogue::create(program, error)) << "inputs 2, 3 are not the accumulator";
  EXPECT_NE(error.find("per-column"), std::string::npos) << error;
  auto columnProgram = ProgramEpilogue::create(program, error, {false, false, true, true});
  ASSERT_TRUE(columnProgram) << error;
  EXPECT_EQ(columnProgram->columnInputCount(), 2);
  enum Extras { None, BiasResidual, BiasColumns };
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> shapes = {
      {1, 1, 1}, {7, 17, 5}, {29, 100, 770}, {13, 48, 64}, {20, 3072 / 16 + 5, 33}};
  for (const auto &[m, n, k] : shapes) {
    Problem p(m, n, k, unsigned(m + n + k));
    std::mt19937 gen{static_cast<unsigned>(k)};
    std::uniform_real_distribution<float> around(0.5f, 1.5f), unit(-1, 1);
    std::vector<float> xs(m), in1(n), in2(n);
    for (float &v : xs)
      v = p.xScale * around(gen);
    for (int64_t j = 0; j < n; ++j)
      in1[j] = around(gen), in2[j] = unit(gen);
    const float *columns[] = {in1.data(), in2.data()};
    const PackedInt8 packed =
        packInt8(octet::PackIsa::Avx512Vnni, p.bKN.data(), k, n, WeightLayout::KN);
    for (QuantOutput out : {QuantOutput::F32, QuantOutput::U8, QuantOutput::S8})
      for (bool perRow : {true, false})
        for (Extras extras : {None, BiasResidual, BiasColumns}) {
          if (!perRow && extras != BiasColumns) // per tensor: the shape tests cover it
            continue;
          Int8GemmParams params;
          params.aZeroPoint = 128;
          params.xScalePerRow = perRow;
          params.xScale = perRow ? std::numeric_limits<float>::quiet_NaN() : p.xScale;
          params.wScale = p.wScale;
          params.bias = extras != None ? p.bias.data() : nullptr;
          params.residual = extras == BiasResidual;
          params.elementwise = extras == BiasColumns ? columnProgram.get() : nullptr;
          params.output = out;
          params.outScale = 0.0213f;
          params.outZeroPoint = out == QuantOutput::U8 ? 37 : -5;
          Int8GemmDriver gemm(packed, params);
          ThreadCount scope(2);
          const int bytes = out == QuantOutput::F32 ? 4 : 1;
          const int64_t ldc = n + 3;
          std::vector<uint8_t> c(m * ldc * bytes, octet::test::kInt8Canary);
          gemm.run(p.a.data(), m, p.lda, c.data(), ldc,
                   params.residual ? p.residual.data() : nullptr, p.ldr,
                   perRow ? xs.data() : nullptr, columns);
          expectFormulaExactly(
              c, m, n, ldc, params,
              [&](int64_t i, int64_t j) {
                const int32_t s32 = int32_t(p.dot[i * n + j] - 128 * p.colsum[j]);
                const float scale = (perRow ? xs[i] : p.xScale) * p.wScale[j];
                float v = scale * float(s32);
                if (extras != None)
                  v += p.bias[j];
                if (extras == BiasResidual)
                  v += p.residual[i * p.ldr + j];
                if (extras == BiasColumns) {
                  v = v * in1[j];
                  v = v + in2[j];
                }
                return v;
              },
              std::string(quantOutputName(out)) + (perRow ? " per-row" : "") +
                  (extras == BiasResidual ? " +bias+residual" : "") +
                  (extras == BiasColumns ? " +bias+columns" : "") + " M " + std::to_string(m) +
                  " N " + std::to_string(n) + " K " + std::to_string(k));
          for (int64_t i = 0; i + 1 < m; ++i) // columns past N stay untouched
            for (int64_t j = n * bytes; j < ldc * bytes; ++j)
              ASSERT_EQ(c[i * ldc * bytes + j], octet::test::kInt8Canary)
                  << "padding byte " << j << " of row " << i;
        }
    Int8GemmParams params;
    params.aZeroPoint = 128;
    params.xScalePerRow = true;
    params.wScale = p.wScale;
    std::vector<float> c(m * n);
    EXPECT_THROW(Int8GemmDriver(packed, params).run(p.a.data(), m, p.lda, c.data(), n),
                 std::invalid_argument);
    params.xScalePerRow = false;
    params.elementwise = columnProgram.get();
    Int8GemmDriver gemm(packed, params);
    const float *missing[] = {in1.data(), nullptr};
    EXPECT_NE(errorOf([&] { gemm.run(p.a.data(), m, p.lda, c.data(), n); }).find("per-column"),
              std::string::npos);
    EXPECT_NE(errorOf([&] {
                gemm.run(p.a.data(), m, p.lda, c.data(), n, nullptr, 0, nullptr, missing);
              }).find("input 1 is missing"),
              std::string::npos);
  }
}
} // namespace
