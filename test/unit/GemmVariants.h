//===- GemmVariants.h - the variants the packed f32-output GEMM tests run -*- C++ -*-===//
#ifndef OCTET_TEST_UNIT_GEMMVARIANTS_H
#define OCTET_TEST_UNIT_GEMMVARIANTS_H

#include "test/unit/ThreadCount.h"

#include "compiler/codegen/WeightLayout.h"
#include "compiler/codegen/x86/GemmF32.h"

#include <sstream>
#include <string>

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
} // namespace octet::test

#endif
