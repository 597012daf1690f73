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

#include "compiler/codegen/x86/KernelGenerator.h"

#include <cstdint>
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
/// emit() is called once per accumulator and per generated kernel, so it must
/// be stateless; labels it needs are its own, local to one call.
class EpilogueEmitter {
public:
  virtual ~EpilogueEmitter() = default;
  virtual int scratchZmmCount() const = 0;
  virtual std::vector<float> constants() const { return {}; }
  virtual void emit(Xbyak::CodeGenerator &gen, const Xbyak::Zmm &acc,
                    const std::vector<Xbyak::Zmm> &scratch,
                    const Xbyak::Label &constants) const = 0;
};

/// What one generated kernel computes (its cache key).
struct GemmF32Avx512Config {
  int mr = 1;       ///< rows of A and C, 1..maxRows(nr, scratch)
  int nr = 48;      ///< panel width: 32 or 48
  int columns = 48; ///< valid columns of the panel (< nr only for the last one)
  bool bias = false;
  bool residual = false;
  const EpilogueEmitter *elementwise = nullptr;
};

/// Run-time arguments, passed by pointer (System V: rdi). Strides in floats.
struct GemmF32Args {
  const float *a;        ///< first row of the tile, at the K block's start
  const float *b;        ///< packed panel, at the K block's start
  float *c;              ///< tile's top-left element
  const float *bias;     ///< panel's first column (epilogue only)
  const float *residual; ///< tile's top-left element (epilogue only)
  int64_t lda, ldc, ldr;
  int64_t k;          ///< K block length, >= 0
  int64_t accumulate; ///< nonzero: add the C already stored (K blocks > 0)
  int64_t last;       ///< nonzero: last K block, apply the epilogue
};
using GemmF32KernelFn = void (*)(const GemmF32Args *);

class GemmF32Avx512 : public KernelGenerator {
public:
  explicit GemmF32Avx512(const GemmF32Avx512Config &config);

  /// Largest MR whose accumulators leave room for the B row, the A broadcast
  /// and the epilogue's scratch registers (at most 14 rows).
  static int maxRows(int nr, int epilogueScratch);

protected:
  void generate() override;

private:
  static constexpr int kUnroll = 4;
  int vectors() const { return (config_.columns + 15) / 16; }
  Xbyak::Zmm acc(int row, int vec) const { return Xbyak::Zmm(row * vectors() + vec); }
  Xbyak::Zmm zB(int vec) const { return Xbyak::Zmm(accCount_ + 1 + vec); }
  bool isTail(int vec) const { return vec == vectors() - 1 && config_.columns % 16; }
  /// `z` write-masked to the valid lanes when vector `vec` is the N tail.
  Xbyak::Zmm masked(const Xbyak::Zmm &z, int vec) const;
  Xbyak::Address aRow(int row, int kStep) const;
  void kStep(int kStep);
  void addRows(const Xbyak::Reg64 &base, const Xbyak::Reg64 &ld);
  void storeRows();

  GemmF32Avx512Config config_;
  int accCount_;  // accumulators are zmm0 .. accCount_ - 1
  Xbyak::Zmm zA_; // A broadcast, then the B row in zB(0 .. vectors() - 1)
  Xbyak::Label constants_;

  const Xbyak::Reg64 regArgs_ = rdi;
  const Xbyak::Reg64 regB_ = rsi;
  const Xbyak::Reg64 regK_ = rdx;
  const Xbyak::Reg64 regLda_ = rcx, regLda3_ = r8;
  // One pointer per group of 4 A rows: row 4g+r is regAGroup_[g] + r * lda.
  const Xbyak::Reg64 regAGroup_[4] = {r9, r10, r11, rax};
  const Xbyak::Reg64 regRow_ = rbx, regLd_ = rbp; // C/residual row walk
  const Xbyak::Reg64 regBias_ = r12;
  const Xbyak::Opmask kTail_ = k1;
};

} // namespace octet::x86

#endif
