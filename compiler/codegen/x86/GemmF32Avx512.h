//===- GemmF32Avx512.h - AVX-512 FP32 GEMM micro-kernel --------*- C++ -*-===//
//
// One MR x NR tile of C = A * B (+ epilogue), B packed into NR-column panels
// ([K][NR] per panel, see GemmF32.h). A row element is broadcast and multiplied
// with the NR/16 zmm of a packed B row; the MR * NR/16 accumulators stay in
// registers for the whole K block.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_GEMMF32AVX512_H
#define OCTET_COMPILER_CODEGEN_X86_GEMMF32AVX512_H

#include "compiler/codegen/x86/GemmTileAvx512.h"

#include <algorithm>
#include <cstdint>

namespace octet::x86 {

/// What one generated kernel computes (its cache key).
struct GemmF32Avx512Config {
  int mr = 1;       ///< rows of A and C, 1..maxRows(nr, scratch)
  int nr = 48;      ///< panel width: 32 or 48
  int columns = 48; ///< valid columns of the panel (< nr only for the last one)
  bool bias = false;
  bool residual = false;
  const EpilogueEmitter *elementwise = nullptr;
  /// Bytes between the program's per-column inputs (NR-padded rows of floats).
  int64_t columnStride = 0;
  /// Lines of the next B slice prefetched per unrolled K step from
  /// GemmF32Args::bPrefetch (0: none), into L1 and L2 (prefetcht0) or L2
  /// (prefetcht1): the drivers' rule is Int8GemmDriver's (AMD: L1).
  int bPrefetchLines = 0;
  bool bPrefetchToL1 = false;
};

/// A kernel's name after its family ("gemm_f32_avx512", "gemm_bf16_avx512"):
/// tile, epilogue, column inputs, fast GELU, B prefetch.
std::string gemmF32KernelSuffix(const GemmF32Avx512Config &config);

/// Run-time arguments, passed by pointer (System V: rdi). Strides in floats.
struct GemmF32Args {
  const float *a;        ///< first row of the tile, at the K block's start
  const float *b;        ///< packed panel, at the K block's start
  float *c;              ///< tile's top-left element
  const float *bias;     ///< panel's first column (epilogue only)
  const float *residual; ///< tile's top-left element (epilogue only)
  int64_t lda, ldc, ldr;
  int64_t k;            ///< K block length, >= 0
  int64_t accumulate;   ///< nonzero: add the C already stored (K blocks > 0)
  int64_t last;         ///< nonzero: last K block, apply the epilogue
  const float *columns; ///< the program's per-column inputs at the panel's first column
  /// Where the kernel prefetches bPrefetchLines lines per unrolled K step,
  /// moving on (a prefetch never faults: any address is safe).
  const void *bPrefetch = nullptr;
};
using GemmF32KernelFn = void (*)(const GemmF32Args *);

/// The B bytes a driver reads after the current slice (the next K block's,
/// or the next panel's first), which its kernels prefetch.
struct NextSlice {
  const void *data = nullptr;
  int64_t bytes = 0;
};

/// Lines of the next B slice the FP32 and bf16 kernels prefetch per unrolled
/// K step (GemmF32Avx512Config::bPrefetchLines). A K step reads NR x 4 bytes of
/// B (3 lines at NR 48, kUnroll steps per unrolled one): two lines cover the
/// next slice in the first 6 row tiles of a block.
constexpr int kPanelPrefetchLines = 2;

/// Calls kernelFor(rows)(&args) on the row tiles of [row0, rowEnd), `mr` rows
/// each (the last fewer), `args` set for row0 and moved down between calls
/// (A, C and, where present, the residual): the drivers reuse one argument
/// block per slice rather than fill one per call. Each call prefetches the
/// kPanelPrefetchLines lines per unrolled step of its args.k K steps of
/// `next`, after the calls before it.
template <typename KernelFor>
void runRowTiles(GemmF32Args args, int64_t row0, int64_t rowEnd, int mr, KernelFor kernelFor,
                 const NextSlice &next = {}) {
  const int64_t prefetchBytesPerCall = args.k / GemmTileAvx512::kUnroll * kPanelPrefetchLines * 64;
  int64_t prefetched = 0;
  for (int64_t row = row0; row < rowEnd; row += mr) {
    if (row > row0) {
      args.a += mr * args.lda;
      args.c += mr * args.ldc;
      if (args.residual)
        args.residual += mr * args.ldr;
    }
    // The next slice a part per call; once it is covered, the call's own
    // (L1-resident) slice.
    args.bPrefetch = prefetched < next.bytes ? static_cast<const char *>(next.data) + prefetched
                                             : static_cast<const void *>(args.b);
    prefetched += prefetchBytesPerCall;
    kernelFor(int(std::min<int64_t>(mr, rowEnd - row)))(&args);
  }
}

class GemmF32Avx512 : public GemmTileAvx512 {
public:
  explicit GemmF32Avx512(const GemmF32Avx512Config &config);

protected:
  /// For a kernel that differs only in its K step (GemmBf16Avx512): the same
  /// tile walk, accumulate, epilogue and store, under its own name and ISA.
  GemmF32Avx512(const GemmF32Avx512Config &config, std::string name, Isa isa);
  void generate() override;

private:
  void kStep(int step) override;
  void afterUnrolledSteps() override;

  GemmF32Avx512Config config_;
  const Xbyak::Reg64 regBias_ = r12;
  const Xbyak::Reg64 regColumns_ = r13;
  const Xbyak::Reg64 regPrefetch_ = r15; // GemmF32Args::bPrefetch, moving on
};

} // namespace octet::x86

#endif
