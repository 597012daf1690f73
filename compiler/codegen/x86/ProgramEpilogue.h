//===- ProgramEpilogue.h - ElementwiseProgram lowered to zmm code -*- C++ -*-===//
//
// Lowers an rt::ElementwiseProgram (straight-line f32 SSA) to AVX-512 code on
// 16 lanes with VectorMath:
//
//  - ProgramLowering: the register plan (shared by the GEMM epilogue and the
//    elementwise kernel). Inputs and constants are deduplicated; a constant
//    that is the second operand of a binary op stays a {1to16} memory
//    operand; values get registers by linear scan in instruction order, a
//    register is reused as soon as its value's last use has passed. Math
//    functions get a separate pool of temporaries (the most any op needs) and
//    one opmask. A program that needs more registers than allowed, or an op
//    without a vector form (log, pow with an exponent other than
//    -1, -0.5, 0.5, 1, 2, 3), is rejected with a message: callers then run
//    ElementwiseProgram::evaluate instead.
//  - ProgramEpilogue: an EpilogueEmitter for the GEMMs (GemmF32Avx512.h,
//    Int8GemmKernel.h): input 0 is the accumulator; the program may read
//    other inputs only where they are per-column vectors (one value per
//    column, loaded per accumulator like the bias). At most
//    kMaxEpilogueScratch scratch zmm, so that the GEMM keeps at least 5 rows
//    (NR = 48) of accumulators.
//
// Semantics follow ElementwiseProgram::evaluate: Max/Min/Relu propagate NaN;
// math functions carry VectorMath's error bounds (a few ulp; the GELUs of a
// program planned with GeluAccuracy::ForRequantize: 8e-5 max(1, |x|)).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_PROGRAMEPILOGUE_H
#define OCTET_COMPILER_CODEGEN_X86_PROGRAMEPILOGUE_H

#include "compiler/codegen/ElementwiseProgram.h"
#include "compiler/codegen/x86/GemmF32Avx512.h"
#include "compiler/codegen/x86/VectorMath.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace octet::x86 {

/// The VectorMath function of a unary program op (GELUs: `gelu`'s form), or
/// false where VectorMath has none (log, sqrt, relu, binary ops).
bool toUnaryOp(rt::ElementwiseProgram::Op op, GeluAccuracy gelu, UnaryOp &out);

/// `program` with each GELU (erf) that a fused region spells out, (x * 0.5) *
/// (erf(x * 2^-1/2 or x / 2^1/2) + 1), as one GeluErf instruction: the same
/// function, whose fast form a requantized result may take. The erf and the
/// rest it replaces are left dead; instruction ids do not change.
rt::ElementwiseProgram withGeluOps(rt::ElementwiseProgram program);

class ProgramLowering {
public:
  /// Plans `program`. `input0InResult`: input 0 is already in the result
  /// register when the code starts (a GEMM accumulator); other inputs are
  /// loaded by emit()'s callback. `maxZmm` bounds value + temporary registers.
  /// `gelu`: which GELU GeluErf / GeluTanh become (VectorMath.h).
  /// ForRequantize also lowers GELU (erf) spelled out as a fused region has
  /// it, (x * 0.5) * (erf(x * 2^-1/2) + 1), to the fast one.
  /// Returns "" or why the program cannot be lowered.
  std::string plan(const rt::ElementwiseProgram &program, bool input0InResult, int maxZmm,
                   GeluAccuracy gelu = GeluAccuracy::Full);
  /// The plan uses a GELU accurate only for a requantized result.
  bool usesFastGelu() const { return fastGelu_; }
  /// emit() leaves the result times this (1 or 2): a fast GELU whose value
  /// reaches the result through multiplications only is computed doubled
  /// (VectorMath::geluFast), one instruction fewer; the requantize divides it out.
  float resultScale() const { return resultScale_; }

  /// Value registers besides the result register, and math temporaries.
  int extraValueRegisters() const { return slots_ - 1; }
  int tempRegisters() const { return temps_; }
  int maskRegisters() const { return masks_; }
  int totalZmm() const { return slots_ + temps_; }
  /// Which inputs the program reads.
  const std::vector<bool> &inputsRead() const { return inputsRead_; }

  /// Emits the program. `result` is register slot 0 (and holds input 0 on
  /// entry when planned so); `values` the extraValueRegisters() others,
  /// `temps` tempRegisters() temporaries, `masks` maskRegisters() opmasks.
  /// loadInput(i, dst) emits the load of input i into dst.
  void emit(Xbyak::CodeGenerator &gen, ConstantTable &constants, const Xbyak::Zmm &result,
            const std::vector<Xbyak::Zmm> &values, const std::vector<Xbyak::Zmm> &temps,
            const std::vector<Xbyak::Opmask> &masks,
            const std::function<void(int, const Xbyak::Zmm &)> &loadInput) const;

private:
  struct Step {
    rt::ElementwiseProgram::Op op;
    int dst = -1;       // slot
    int a = -1, b = -1; // slots, or -1
    int input = -1;     // Input: index
    float value = 0;    // Constant (broadcast) / folded constant operand b
    bool bConstant = false;
    bool timesTwo = false; // a fast GELU computed doubled (resultScale())
  };
  std::vector<Step> steps_;
  std::vector<bool> inputsRead_;
  int slots_ = 1, temps_ = 0, masks_ = 0;
  GeluAccuracy gelu_ = GeluAccuracy::Full;
  bool fastGelu_ = false;
  float resultScale_ = 1.0f;
};

/// Scratch zmm a program epilogue may ask of the GEMM.
constexpr int kMaxEpilogueScratch = 16;

/// `gelu(acc) * column[n]` (input 1 per column): the shape of BERT's INT8
/// FFN-in epilogue (GELU times the next GEMM's SmoothQuant factors), for
/// octet-jit-dump and the GEMM tests.
rt::ElementwiseProgram geluTimesColumnProgram();

class ProgramEpilogue : public EpilogueEmitter {
public:
  /// `perColumn[i]` (i >= 1): program input i is a per-column vector; they
  /// become the emitter's column inputs 0, 1, ... in input order. Null with
  /// `error` set when the program reads another input besides 0, does not fit
  /// kMaxEpilogueScratch scratch registers or has an op without a vector form.
  /// GeluAccuracy::ForRequantize: only for a GEMM that requantizes its result
  /// (checkInt8Epilogue rejects it with an f32 output); ForBf16: for a bf16
  /// linear's f32 result (never doubled).
  static std::unique_ptr<ProgramEpilogue> create(const rt::ElementwiseProgram &program,
                                                 std::string &error,
                                                 const std::vector<bool> &perColumn = {},
                                                 GeluAccuracy gelu = GeluAccuracy::Full);
  bool requantizedOutputOnly() const override { return lowering_.usesFastGelu() && !forBf16_; }
  bool fastGelu() const override { return lowering_.usesFastGelu(); }
  float resultScale() const override { return lowering_.resultScale(); }

  int scratchZmmCount() const override { return scratch_; }
  int columnInputCount() const override { return columnInputs_; }
  std::vector<float> constants() const override { return constants_; }
  void emit(Xbyak::CodeGenerator &gen, const Xbyak::Zmm &acc,
            const std::vector<Xbyak::Zmm> &scratch, const Xbyak::Label &constants,
            const ColumnInput &column) const override;

private:
  ProgramEpilogue() = default;
  /// Emits into `gen` with the table at `label`; returns the table's values.
  std::vector<uint32_t> emitWith(Xbyak::CodeGenerator &gen, const Xbyak::Zmm &acc,
                                 const std::vector<Xbyak::Zmm> &scratch, const Xbyak::Label &label,
                                 const ColumnInput &column) const;
  ProgramLowering lowering_;
  bool forBf16_ = false; ///< planned with GeluAccuracy::ForBf16
  int scratch_ = 0;
  int columnInputs_ = 0;
  std::vector<int> columnOf_; ///< per program input: its column input, or -1
  std::vector<float> constants_;
};

} // namespace octet::x86

#endif
