//===- GemmTileAvx512.h - register walk shared by the GEMM kernels -*- C++ -*-===//
//
// What the FP32 (GemmF32Avx512) and u8 x s8 (Int8GemmKernelVnni) micro-kernels share:
// one MR x NR tile whose MR * NR/16 accumulators (zmm0 ..) stay in registers
// for a K block. Each K step loads the NR/16 zmm of a packed B row (or 4-byte
// group) into zB, then broadcasts 4 bytes of each A row into zA and multiplies.
// A rows are walked as groups of 4 (row 4g+r at regAGroup_[g] + r * lda), C-like
// rows (C, residual) by one pointer and a byte stride; the N tail is
// write-masked with k1.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_GEMMTILEAVX512_H
#define OCTET_COMPILER_CODEGEN_X86_GEMMTILEAVX512_H

#include "compiler/codegen/x86/KernelGenerator.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace octet::x86 {

/// An elementwise function fused into a GEMM epilogue; the vector-expression
/// emitter implements it. Contract for emit():
///  - `acc` holds 16 f32 lanes of one C row (bias and residual already added).
///    Lanes past N hold sums of 0·A (NaN if A holds inf or NaN) and are never
///    stored, so they only need to stay harmless (MXCSR exceptions are masked).
///    The N-tail adds of C, bias and residual read whole vectors under the
///    tail mask: AVX-512 suppresses faults on masked-off lanes.
///  - it may clobber `acc` and the `scratchZmmCount()` registers in `scratch`,
///    nothing else: no general-purpose or opmask register, no other zmm, no
///    stack, no memory writes, no calls (kernels are position independent).
///    Exception: opmask registers k2..k7 are free for it (the kernel only uses k1).
///  - it may read its constants, which the GEMM lays out 64-byte aligned after
///    the kernel's code, as `ptr[rip + constants + 4 * i]` (`ptr_b` for a
///    {1to16} broadcast of one float, `zword` for a 16-float vector).
///  - it may read its `columnInputCount()` per-column inputs (f32 vectors of
///    N, one value per column and the same for every row, like the bias):
///    `column(c)` addresses the 16 floats of input c for `acc`'s columns; the
///    GEMM pads them to whole panels, so whole-vector loads never fault.
/// emit() is called once per accumulator and per generated kernel, so it must
/// be stateless; labels it needs are its own, local to one call.
class EpilogueEmitter {
public:
  /// The 16 floats of per-column input c for the accumulator being emitted.
  using ColumnInput = std::function<Xbyak::Address(int c)>;

  virtual ~EpilogueEmitter() = default;
  virtual int scratchZmmCount() const = 0;
  virtual int columnInputCount() const { return 0; }
  virtual std::vector<float> constants() const { return {}; }
  /// Its math is accurate enough only for a result requantized to u8/s8.
  virtual bool requantizedOutputOnly() const { return false; }
  /// Computes a fast GELU (VectorMath::geluErfFast / geluTanhFast): part of a
  /// kernel's name.
  virtual bool fastGelu() const { return false; }
  /// emit() leaves the result times this power of two, which the GEMM's
  /// requantize divides out (only where requantizedOutputOnly()).
  virtual float resultScale() const { return 1.0f; }
  virtual void emit(Xbyak::CodeGenerator &gen, const Xbyak::Zmm &acc,
                    const std::vector<Xbyak::Zmm> &scratch, const Xbyak::Label &constants,
                    const ColumnInput &column) const = 0;
};

/// The kernel-name suffix of a GEMM epilogue: "_bias", "_residual", "_elementwise".
std::string gemmEpilogueSuffix(bool bias, bool residual, bool elementwise);

class GemmTileAvx512 : public KernelGenerator {
public:
  /// Largest MR whose accumulators leave room for the B row, the A broadcast
  /// and the epilogue's scratch registers (at most 14 rows; 0 if none fit).
  static int maxRows(int nr, int epilogueScratch);
  /// K steps per iteration of kLoop's unrolled part (afterUnrolledSteps runs
  /// once per iteration).
  static constexpr int kUnroll = 4;

protected:
  GemmTileAvx512(std::string name, Isa isa, size_t maxCodeBytes, int mr, int nr, int columns);

  int vectors() const { return (columns_ + 15) / 16; }
  Xbyak::Zmm acc(int row, int vec) const { return Xbyak::Zmm(row * vectors() + vec); }
  Xbyak::Zmm zB(int vec) const { return Xbyak::Zmm(accCount_ + 1 + vec); }
  bool isTail(int vec) const { return vec == vectors() - 1 && columns_ % 16; }
  /// `z` write-masked to the valid lanes when vector `vec` is the N tail.
  Xbyak::Zmm masked(const Xbyak::Zmm &z, int vec) const;
  /// The 4 bytes of A row `row` at K step `step` of the unrolled loop.
  Xbyak::Address aRow(int row, int step) const;

  /// Turns a stride in elements of `elementBytes` (1 or 4) into bytes.
  void scaleToBytes(const Xbyak::Reg64 &stride, int elementBytes);
  /// Loads the step count, B, lda (in bytes) and the A group pointers from the
  /// arguments at these offsets, sets the N-tail mask and zeroes the accumulators.
  void loadTile(size_t kOffset, size_t bOffset, size_t aOffset, size_t ldaOffset,
                int aElementBytes);
  /// The K loop over the loaded step count: kStep() unrolled by kUnroll, then
  /// one step at a time for the rest.
  void kLoop();
  /// One K step at `step` steps past regB_ / the A group pointers.
  virtual void kStep(int step) = 0;
  /// Emitted once per unrolled iteration of kLoop, after its kUnroll steps
  /// (a kernel's prefetches); nothing by default.
  virtual void afterUnrolledSteps() {}
  /// Moves B and the A group pointers `steps` K steps on.
  void advance(int steps);
  /// `lines` cache lines at `at` prefetched into L1 and L2 (prefetcht0) or L2
  /// (prefetcht1), and `at` moved past them: the next B slice, a part per
  /// unrolled K step (the weights come from L3 or DRAM, and the hardware
  /// prefetchers follow the current slice, not the next).
  void prefetchLines(const Xbyak::Reg64 &at, int lines, bool toL1);

  /// Points regRow_ / regLd_ (or `row` / `ld`) at the rows and the byte
  /// stride at these offsets.
  void loadRows(size_t rowsOffset, size_t ldOffset, int elementBytes) {
    loadRows(rowsOffset, ldOffset, elementBytes, regRow_, regLd_);
  }
  void loadRows(size_t rowsOffset, size_t ldOffset, int elementBytes, const Xbyak::Reg64 &row,
                const Xbyak::Reg64 &ld);
  /// Calls `body(row)` for each tile row, moving regRow_ on between rows.
  template <typename Body> void forEachRow(Body body) {
    for (int i = 0; i < mr_; ++i) {
      body(i);
      if (i + 1 < mr_)
        add(regRow_, regLd_);
    }
  }
  /// Adds the f32 rows at regRow_ to the accumulators (masked on the N tail).
  void addRows();

  /// The fields of a kernel's argument block that a call's run of row tiles
  /// moves on from tile to tile (byte offsets into the block): the drivers
  /// fill one block per (M block, panel, K block) slice and call once per
  /// run of equal tiles, so that the C++ around the calls is per slice.
  struct TileRun {
    struct Rows {
      size_t pointer, ld; ///< a row pointer and its stride in elements
      int elementBytes;
    };
    std::vector<Rows> rows; ///< moved MR rows down
    /// Moved by a fixed byte count (the next tile's part of a per-tile
    /// buffer), where not null.
    std::vector<std::pair<size_t, int>> blocks;
    /// The B prefetch: the tile at bPrefetch takes prefetchStep bytes of the
    /// prefetchLeft left of the next slice; once they are covered, the tiles
    /// prefetch their own slice at b (L1 hits).
    size_t b, bPrefetch, prefetchLeft, prefetchStep;
    size_t tiles; ///< tiles left, >= 1 on entry
  };
  /// After a tile: moves `run`'s fields on and jumps back to `tileTop` while
  /// tiles are left (rax, rcx and rdx are free by then).
  void nextTile(const TileRun &run, const Xbyak::Label &tileTop);
  /// Applies `e` to every accumulator, with the zmm past them as scratch.
  /// Its per-column inputs (if any) are NR-padded rows of floats `columnStride`
  /// bytes apart from `columns`, which points at the tile's first column.
  void emitElementwise(const EpilogueEmitter &e, const Xbyak::Reg64 *columns = nullptr,
                       int64_t columnStride = 0);
  /// Lays out `e`'s constants after the code, 64-byte aligned, at constants_.
  void emitElementwiseConstants(const EpilogueEmitter &e);

  const int mr_, nr_, columns_;
  const int accCount_;  // accumulators are zmm0 .. accCount_ - 1
  const Xbyak::Zmm zA_; // A broadcast, then the B row in zB(0 .. vectors() - 1)
  Xbyak::Label constants_;

  const Xbyak::Reg64 regArgs_ = rdi;
  const Xbyak::Reg64 regB_ = rsi;
  const Xbyak::Reg64 regK_ = rdx;
  const Xbyak::Reg64 regLda_ = rcx, regLda3_ = r8;
  // One pointer per group of 4 A rows: row 4g+r is regAGroup_[g] + r * lda.
  const Xbyak::Reg64 regAGroup_[4] = {r9, r10, r11, rax};
  const Xbyak::Reg64 regRow_ = rbx, regLd_ = rbp; // C-like row walk
  const Xbyak::Opmask kTail_ = k1;                // N tail lanes
};

} // namespace octet::x86

#endif
