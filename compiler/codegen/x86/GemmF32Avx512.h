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

#include <cstdint>
#include <utility>

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
  /// Row tiles this call runs (>= 1), each MR rows below the one before: the
  /// kernel moves a, c and the residual on from tile to tile in this block,
  /// and the prefetch: each tile takes prefetchStep bytes of the prefetchLeft
  /// left of the next slice, then (covered) its own slice at b.
  int64_t tiles = 1;
  int64_t prefetchLeft = 0, prefetchStep = 0;
};
/// Not const: a run of tiles moves the block's row fields (GemmF32Args::tiles).
using GemmF32KernelFn = void (*)(GemmF32Args *);

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

/// Runs the row tiles of [row0, rowEnd), `mr` rows each (the last fewer), with
/// `args` set for row0: one call kernelFor(mr) for the full tiles and one
/// kernelFor(rows) for the short last one, the kernel moving A, C and the
/// residual from tile to tile (GemmF32Args::tiles), so that the second call
/// starts where the first ended. Each tile prefetches the
/// kPanelPrefetchLines lines per unrolled step of its args.k K steps of
/// `next`, after the tiles before it; once that is covered, its own
/// (L1-resident) slice.
template <typename KernelFor>
void runRowTiles(GemmF32Args args, int64_t row0, int64_t rowEnd, int mr, KernelFor kernelFor,
                 const NextSlice &next = {}) {
  const int64_t rows = rowEnd - row0;
  args.bPrefetch = next.bytes > 0 ? next.data : static_cast<const void *>(args.b);
  args.prefetchLeft = next.bytes;
  args.prefetchStep = args.k / GemmTileAvx512::kUnroll * kPanelPrefetchLines * 64;
  for (const auto &[tileRows, count] :
       {std::pair<int64_t, int64_t>{mr, rows / mr}, std::pair<int64_t, int64_t>{rows % mr, 1}}) {
    if (tileRows <= 0 || count <= 0)
      continue;
    args.tiles = count;
    kernelFor(int(tileRows))(&args);
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
