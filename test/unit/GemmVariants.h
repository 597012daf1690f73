//===- GemmVariants.h - the variants the packed f32-output GEMM tests run -*- C++ -*-===//
#ifndef OCTET_TEST_UNIT_GEMMVARIANTS_H
#define OCTET_TEST_UNIT_GEMMVARIANTS_H

#include "test/unit/TestData.h"
#include "test/unit/ThreadCount.h"

#include "compiler/codegen/GemmBlocking.h"
#include "compiler/codegen/StealingSchedule.h"
#include "compiler/codegen/WeightLayout.h"
#include "compiler/codegen/x86/GemmF32.h"
#include "compiler/codegen/x86/NextStepPrefetch.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace octet::test {
/// Runs check(gemm, withBias, withResidual, what) over every variant of one
/// shape that GemmF32's and GemmBf16's tests cover: both weight layouts
/// (pack(layout) packs the weight once per layout), with and without bias and
/// residual, K blocks by the blocking rule and of at most `smallKBlock` (where
/// K is longer), 1 and 2 threads. make(packed, epilogue, withBias, maxKBlock)
/// builds the GEMM.
template <typename Pack, typename Make, typename Check>
void forEachGemmVariant(int64_t k, int64_t smallKBlock, Pack pack, Make make, Check check) {
  for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK}) {
    auto packed = pack(layout);
    for (bool withBias : {false, true})
      for (bool withResidual : {false, true}) {
        x86::GemmF32Epilogue epilogue;
        epilogue.residual = withResidual;
        for (int64_t maxKBlock : {int64_t(0), smallKBlock}) {
          if (maxKBlock && k <= maxKBlock)
            continue;
          auto gemm = make(packed, epilogue, withBias, maxKBlock);
          for (int threads : {1, 2}) {
            ThreadCount scope(threads);
            std::ostringstream what;
            what << (layout == WeightLayout::KN ? "B[K,N]" : "B[N,K]") << (withBias ? " +bias" : "")
                 << (withResidual ? " +residual" : "") << " " << threads << " thread(s), MR "
                 << gemm.mr() << " NR " << gemm.nr() << " Kc " << gemm.kc();
            check(gemm, withBias, withResidual, what.str());
          }
        }
      }
  }
}
/// What gemm (GemmF32 or GemmBf16, N x K, `elementBytes` per weight element)
/// says each thread runs first (NextStepPrefetch.h), over team sizes 1-3 and
/// M from none to several blocks: for a thread with items, `convert` (A's
/// conversion, when the GEMM has one and the thread rows to convert) then its
/// first item's first row-tile kernel and, where that block ends in a shorter
/// tile, that one; nothing for a thread without items. A run while reads are
/// published (the threads prefetch them) gives the same bits.
template <typename Gemm>
void checkFirstReads(const Gemm &gemm, int64_t n, int64_t k, int elementBytes,
                     std::pair<const void *, size_t> convert) {
  const int64_t panels = (n + gemm.nr() - 1) / gemm.nr();
  for (int threads : {1, 2, 3}) {
    ThreadCount team(threads);
    for (int64_t m : {0, 1, 9, 37, 300}) {
      std::vector<x86::ThreadReads> reads;
      gemm.firstReads(m, threads, reads);
      ASSERT_EQ(reads.size(), size_t(threads));
      const int64_t block =
          m > 0 ? x86::gemm_blocking::mBlock(m, k, gemm.mr(), panels, elementBytes) : 1;
      const int64_t items = (m + block - 1) / block * panels;
      for (int64_t t = 0; t < threads; ++t) {
        const std::string what = "M " + std::to_string(m) + ", thread " + std::to_string(t) +
                                 " of " + std::to_string(threads);
        const auto [first, end] = x86::StealingSchedule::range(items, threads, t);
        std::vector<std::pair<const void *, size_t>> want;
        if (convert.first && m * (t + 1) / threads > m * t / threads)
          want.push_back(convert);
        if (first < end) {
          const int64_t mb = first / panels, p = first % panels;
          const int64_t rows = std::min(m, (mb + 1) * block) - mb * block;
          const bool tail = n - p * gemm.nr() < gemm.nr();
          want.push_back(gemm.kernelCode(int(std::min<int64_t>(gemm.mr(), rows)), tail));
          if (rows % gemm.mr() && rows > gemm.mr())
            want.push_back(gemm.kernelCode(int(rows % gemm.mr()), tail));
        }
        ASSERT_EQ(reads[t].count, int(want.size())) << what;
        for (size_t i = 0; i < want.size(); ++i)
          EXPECT_EQ(reads[t].ranges[i], want[i]) << what << ", range " << i;
      }
    }
  }
  const int64_t m = 37;
  const std::vector<float> a = randomFloats(m * k, 9);
  auto run = [&] {
    std::vector<float> c(m * n);
    gemm.run(a.data(), m, k, c.data(), n);
    return c;
  };
  x86::NextStepReads next;
  gemm.firstReads(m, omp_get_max_threads(), next.perThread);
  const std::vector<float> plain = run();
  const x86::NextStepReads::Scope published(&next);
  EXPECT_EQ(run(), plain);
}

} // namespace octet::test

#endif
