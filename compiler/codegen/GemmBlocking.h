//===- GemmBlocking.h - cache blocking shared by the packed GEMMs -*- C++ -*-===//
//
// The blocking rule of GemmF32, GemmBf16 and the INT8 driver (Inductor's
// cpp_gemm_template with our kernels' registers), for a B element of
// `elementBytes` bytes:
//  - NR (panel width) is 48 unless 32 pads N to fewer columns (N = 100: 128
//    rather than 144). 48 loads fewer A broadcasts per multiply.
//  - Kc (a multiple of 4): a Kc x NR block of a B panel takes at most
//    kPanelSliceL1s times L1d (the first row tile of an M block brings it
//    in, the others read it from L1 and L2); K is cut into equal blocks.
//  - Mc (a multiple of MR): the Mc x K block of A fits in half of L2, so it is
//    reused from L2 for every panel a thread computes after it; M is cut into
//    equal blocks, enough of them that every thread gets a (block, panel) pair
//    if M allows.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_GEMMBLOCKING_H
#define OCTET_COMPILER_CODEGEN_X86_GEMMBLOCKING_H

#include <cstdint>
#include <utility>

namespace octet::x86::gemm_blocking {

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// The packed GEMMs (INT8, bf16, f32): a K block's slice of a B panel (Kc x NR
/// elements) may take this many times L1d. The row tiles after the first read
/// it from L2, which feeds one zmm of B per MR multiply instructions with room
/// to spare, while every K block past the first costs each row tile a round
/// trip of its sums through memory and a kernel call. On Zen 4 (32 KiB L1d)
/// BERT-base's INT8 GEMMs ran 1-3 points of the vpdpbusd peak faster (K = 768
/// one block instead of two, 3072 two instead of five), its bf16 GEMMs 2-3
/// points (K = 768 one block instead of three), its f32 ones 3 points (two
/// instead of five; bench/RESULTS.md, session 22).
inline constexpr int kPanelSliceL1s = 4;

/// NR for N columns: 32 or 48.
int panelWidth(int64_t n);

/// Kc for a K of `k` and panels of `nr` elements of `elementBytes` bytes: K
/// cut into the fewest equal blocks (multiples of 4) whose Kc x NR slice of a
/// panel takes at most kPanelSliceL1s times L1d, and of at most `maxBlock`
/// elements where that is > 0 (the drivers' maxKBlock: tests run K blocks on
/// small shapes).
int64_t kBlock(int64_t k, int nr, int elementBytes, int64_t maxBlock = 0);

/// Mc for M rows of A (K elements of `elementBytes` bytes each), tiles of `mr`
/// rows and `panels` N panels, with the current OpenMP team size.
int64_t mBlock(int64_t m, int64_t k, int mr, int64_t panels, int elementBytes);

/// How many B panels of `panelBytes` each fit in half of L2 (at least 1): the
/// panels an M block passes over before the next M block reuses them from L2.
int64_t panelsPerL2Half(int64_t panelBytes);

/// A team laid over panels x M blocks: thread t takes panel range
/// t % panelThreads and M-block range t / panelThreads (threads past
/// panelThreads * rowThreads idle).
struct ThreadGrid {
  int64_t panelThreads = 1, rowThreads = 1;
  /// Thread t's panels [begin, end) of `panels` and M blocks [begin, end) of
  /// `mBlocks`: even ranges; empty blocks for a thread past the grid.
  std::pair<int64_t, int64_t> panelRange(int64_t t, int64_t panels) const;
  std::pair<int64_t, int64_t> blockRange(int64_t t, int64_t mBlocks) const;
};
/// The split of `threads` over `panels` B panels of `panelBytes` and
/// `mBlocks` A blocks of `blockBytes`: the least work (panel x block pairs)
/// on the busiest thread, then the fewest A and B bytes a thread reads
/// (measured on BERT's shapes: splitting N wins where B dominates, M = 128;
/// splitting M where N is small and M large).
ThreadGrid threadGrid(int64_t threads, int64_t panels, int64_t mBlocks, int64_t panelBytes,
                      int64_t blockBytes);

} // namespace octet::x86::gemm_blocking

#endif
