//===- VectorMath.h - f32 math on zmm registers for Xbyak kernels -*- C++ -*-===//
//
// The one vector-expression emitter shared by GEMM epilogues and the fused
// kernels: each call emits straight-line AVX-512 code on 16 f32 lanes. Math
// functions are inline polynomials and their constants live in a per-kernel
// table addressed RIP-relative, so kernel code is position independent and
// calls nothing.
//
// Register contract (no allocator): the caller hands a VectorMath the zmm and
// opmask registers it may clobber (its pool); operands and results are other
// registers. `dst` may equal `src`; `src` is otherwise preserved.
//
// Accuracy: bound asserted by test/unit/VectorMathTest.cpp against double
// references (ulp of the f32 result; denormal results: ulp = 2^-149), and in
// brackets the max measured by an instruction-exact scalar model of these
// sequences (fmaf for vfmadd, y0 = rsqrt * (1 +- 2^-14) for vrsqrt14ps):
//   exp        <= 2 ulp [1.48]  Cody-Waite floor reduction, degree-6 minimax, vscalefps
//   expFast    |rel err| <= 1e-5 [6.42e-6, the kernel itself over its test's sweep]
//              for x >= -87.3: 2^t, t = x log2e rounded once, degree-4 minimax of 2^f
//              on [0, 1); only for results rounded to 8 bits (the int8 attention's
//              weighted softmax: P' codes of 1/255 of the row's largest). 0 below the
//              f32 range, NaN kept, exp(-inf) = 0; +inf gives NaN (a softmax's
//              x = z - max is never +inf).
//   erf        <= 2 ulp [1.12]  |x| < 1: x + x P6(x^2); else 1 - exp(Q8(min(|x|, 4)))
//   tanh       <= 2 ulp [1.49]  |x| < 0.625: x + x s P5(s); else (1-e)/(1+e), e = exp(-2|x|)
//   sigmoid    <= 3 ulp [2.58]  e = exp(-|x|): 1/(1+e) or e/(1+e), one division
//   rsqrt      <= 2 ulp [1.08]  vrsqrt14ps + one Newton step
//   reciprocal 0.5 ulp          vdivps
//   geluErf, geluTanh: |err| <= 2^-22 max(1, |x|) [0.32, 0.59 of it]; for x < -3
//              GELU's condition number (~|x u'|) makes ulp bounds meaningless.
//              geluTanh = x sigmoid(2u) also holds <= 3 ulp [2.20] for x >= 0.
//   geluErfFast, geluTanhFast: |err| <= 8e-5 max(1, |x|) [7.53e-5, 7.38e-5] against
//              the exact erf / tanh form. Only for results requantized to 8 bits
//              (GeluAccuracy::ForRequantize): one output step is ~0.01-0.05 there,
//              so the error moves a code only where the value lies within 8e-5
//              max(1, |x|) of a rounding boundary. x/2 + |x| min(P6(min(|x|, 3.95)), 1/2),
//              P6 a minimax fit of Phi(a) - 1/2 on [0, 3.95] (scripts/fit-fast-gelu)
//              with P6(3.95) >= 1/2, so the tails are exact (x, or 0 for x <= -3.95);
//              11 instructions, ~1/4 of geluErf's.
// These bounds are the ones the tests assert.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_VECTORMATH_H
#define OCTET_COMPILER_CODEGEN_X86_VECTORMATH_H

#include <xbyak/xbyak.h>

#include <cstdint>
#include <vector>

namespace octet::x86 {

/// The per-kernel table of 32-bit constants, emitted once after the code and
/// read with {1to16} broadcasts relative to RIP.
class ConstantTable {
public:
  explicit ConstantTable(Xbyak::CodeGenerator &gen) : gen_(gen) {}
  /// A table laid out by someone else at `external` (a GEMM epilogue's
  /// constants, EpilogueEmitter): operands address it, emit() must not be
  /// called, and values() lists what the owner has to place there, in order.
  ConstantTable(Xbyak::CodeGenerator &gen, const Xbyak::Label &external)
      : gen_(gen), external_(&external) {}
  const std::vector<uint32_t> &values() const { return values_; }
  /// Broadcast memory operand for `value` (deduplicated by bit pattern).
  Xbyak::Address f32(float value);
  Xbyak::Address bits(uint32_t value);
  /// Plain 32-bit operand for `value` (vbroadcastss takes no {1to16} form).
  Xbyak::Address scalar(float value);
  /// Emits the table; call once, after the kernel's last instruction.
  void emit();

private:
  size_t offsetOf(uint32_t value);
  const Xbyak::Label &label() const { return external_ ? *external_ : label_; }
  Xbyak::CodeGenerator &gen_;
  Xbyak::Label label_;
  const Xbyak::Label *external_ = nullptr;
  std::vector<uint32_t> values_;
};

/// Unary functions a fused region or elementwise kernel can apply.
enum class UnaryOp {
  Neg,
  Abs,
  Exp,
  Erf,
  Tanh,
  Sigmoid,
  Rsqrt,
  Reciprocal,
  GeluErf,
  GeluTanh,
  GeluErfFast,
  GeluTanhFast
};
/// Which GELUs a lowered program uses: Full, the few-ulp geluErf / geluTanh;
/// ForRequantize, geluErfFast / geluTanhFast, for a result rounded to u8/s8
/// (and computed doubled where that saves an instruction); ForBf16, the same
/// fast GELUs at the result's own scale, for an f32 result of a --precision
/// bf16 linear (its consumers' operands are rounded to bf16, 2^-9 relative,
/// far beyond the fast GELU's 8e-5 max(1, |x|)).
enum class GeluAccuracy { Full, ForRequantize, ForBf16 };
/// Pool registers `op` needs (zmm, opmask).
int zmmScratchFor(UnaryOp op);
int maskScratchFor(UnaryOp op);

class VectorMath {
public:
  using Zmm = Xbyak::Zmm;
  using Opmask = Xbyak::Opmask;
  using Operand = Xbyak::Operand;

  VectorMath(Xbyak::CodeGenerator &gen, ConstantTable &constants, std::vector<Zmm> zmmPool,
             std::vector<Opmask> maskPool);

  /// Broadcast operand for a constant, usable as `b` below.
  Xbyak::Address constant(float value) { return constants_.f32(value); }
  /// dst = value in every lane.
  void broadcast(const Zmm &dst, float value);

  // Binary ops; `b` is a zmm or constant().
  void add(const Zmm &dst, const Zmm &a, const Operand &b);
  void sub(const Zmm &dst, const Zmm &a, const Operand &b);
  void mul(const Zmm &dst, const Zmm &a, const Operand &b);
  void div(const Zmm &dst, const Zmm &a, const Operand &b);
  void max(const Zmm &dst, const Zmm &a, const Operand &b);
  void min(const Zmm &dst, const Zmm &a, const Operand &b);
  /// dst = a * b + c with one rounding; at most one of `b`, `c` is memory.
  void fma(const Zmm &dst, const Zmm &a, const Operand &b, const Operand &c);

  void neg(const Zmm &dst, const Zmm &src);
  void abs(const Zmm &dst, const Zmm &src);
  /// exp(-inf) = 0, overflow to +inf, denormal results rounded, NaN kept. 2 zmm.
  void exp(const Zmm &dst, const Zmm &src);
  /// exp to 1e-5 relative (see above): 5 instructions on the FMA pipes
  /// (vmulps, 4 FMAs) and 4 on the add pipes, against exp's 9 and 4. 2 zmm.
  void expFast(const Zmm &dst, const Zmm &src);
  /// 4 zmm, 1 opmask.
  void erf(const Zmm &dst, const Zmm &src);
  /// 4 zmm, 1 opmask.
  void tanh(const Zmm &dst, const Zmm &src);
  /// 3 zmm, 1 opmask.
  void sigmoid(const Zmm &dst, const Zmm &src);
  /// rsqrt(+-0) = +-inf, rsqrt(inf) = 0, negative -> NaN. 2 zmm, 1 opmask.
  void rsqrt(const Zmm &dst, const Zmm &src);
  /// 1 zmm.
  void reciprocal(const Zmm &dst, const Zmm &src);
  /// 1 / src where every lane of src holds the same value (a reduction's
  /// result): one vdivss (a third of vdivps' cost, the same rounding),
  /// broadcast to every lane of dst.
  void reciprocalOfUniform(const Zmm &dst, const Zmm &src);
  /// 0.5 x (1 + erf(x / sqrt 2)). 6 zmm, 1 opmask.
  void geluErf(const Zmm &dst, const Zmm &src);
  /// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) = x sigmoid(2 u). 4 zmm, 1 opmask.
  void geluTanh(const Zmm &dst, const Zmm &src);
  /// geluErf / geluTanh to |err| <= 8e-5 max(1, |x|), for requantized results. 3 zmm.
  /// `timesTwo`: 2 GELU(x), bit for bit twice the plain one (every constant
  /// doubled, so each rounding scales exactly), one instruction fewer: for a
  /// requantize that folds the 1/2 into its 1/out_scale.
  void geluErfFast(const Zmm &dst, const Zmm &src, bool timesTwo = false);
  void geluTanhFast(const Zmm &dst, const Zmm &src, bool timesTwo = false);
  void unary(UnaryOp op, const Zmm &dst, const Zmm &src);

  /// Horizontal sum / max of the 16 lanes, broadcast to every lane of dst. 1 zmm.
  void reduceSum(const Zmm &dst, const Zmm &src);
  void reduceMax(const Zmm &dst, const Zmm &src);
  /// The largest lane as unsigned bits (vpmaxud): for floats >= +0 their
  /// order, with inf and any NaN above every finite value. 1 zmm.
  void reduceMaxBits(const Zmm &dst, const Zmm &src);

private:
  // The cores take their temporaries explicitly so that composite functions
  // can nest them without overlapping registers.
  void expCore(const Zmm &dst, const Zmm &src, const Zmm &t0, const Zmm &t1);
  void erfCore(const Zmm &dst, const Zmm &src, const Zmm *t, const Opmask &k);
  void sigmoidCore(const Zmm &dst, const Zmm &src, const Zmm *t, const Opmask &k);
  /// x/2 + |x| min(P(min(|x|, clamp)), 1/2) with P's 7 coefficients, lowest
  /// first; `timesTwo`: x + |x| min(2 P(...), 1).
  void geluFast(const Zmm &dst, const Zmm &src, const float *oddPhi, bool timesTwo);
  /// acc = c[n-1]; acc = acc * x + c[i] for i = n-2 .. 0, each c[i] times `scale`.
  void horner(const Zmm &acc, const Zmm &x, const float *c, int n, float scale = 1.0f);
  /// dst = |magnitude| with the sign of `sign` (bitwise select).
  void copySign(const Zmm &magnitude, const Zmm &sign);
  enum class Reduction { Sum, Max, MaxBits };
  void reduce(const Zmm &dst, const Zmm &src, Reduction op);
  const Zmm &zmm(size_t i) const;
  const Opmask &mask(size_t i) const;

  Xbyak::CodeGenerator &gen_;
  ConstantTable &constants_;
  std::vector<Zmm> zmmPool_;
  std::vector<Opmask> maskPool_;
};

} // namespace octet::x86

#endif
