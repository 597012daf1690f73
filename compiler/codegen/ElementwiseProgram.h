//===- ElementwiseProgram.h - a scalar f32 expression, MLIR-free -*- C++ -*-===//
//
// The body of a fused region (`octet.fused_linear`'s epilogue, `octet.fused`)
// once it has left MLIR: straight-line SSA over f32 with numbered inputs. The
// compiler builds it from the region's arith/math ops; the x86 code generator
// lowers it with VectorMath (ProgramEpilogue), and evaluate() is its scalar
// meaning (tests, and hosts without AVX-512).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_ELEMENTWISEPROGRAM_H
#define OCTET_RUNTIME_ELEMENTWISEPROGRAM_H

#include <cstdint>
#include <string>
#include <vector>

namespace octet::rt {

struct ElementwiseProgram {
  enum class Op : uint8_t {
    Input,    ///< inputs[a]
    Constant, ///< value
    // One line per group of ops:
    // clang-format off
    // binary: instrs[a] (op) instrs[b]
    Add, Sub, Mul, Div, Max, Min, Pow,
    // unary: op(instrs[a])
    Neg, Abs, Exp, Log, Erf, Tanh, Sigmoid, Sqrt, Rsqrt, Reciprocal, Relu,
    GeluErf, GeluTanh, ///< x·Φ(x) as one op (what octet.gelu lowers to)
    // clang-format on
  };
  struct Instr {
    Op op = Op::Constant;
    int32_t a = -1, b = -1; ///< instruction ids (Input: the input index)
    float value = 0;        ///< Constant
  };
  /// SSA: each instruction reads only earlier ones; the last is the result.
  std::vector<Instr> instrs;
  int32_t numInputs = 0;

  /// The result for one element, computed in float (double for the math functions).
  float evaluate(const float *inputs) const;
  /// One instruction (not Input) of evaluate() on its operands' values (b is
  /// ignored by unary ops): the block interpreter's per-element path.
  static float evaluateOp(const Instr &in, float a, float b);
  /// Empty when well formed, else what is wrong (out-of-order operand, ...).
  std::string verify() const;
  /// One line per instruction, for dumps and error messages.
  std::string str() const;
};

} // namespace octet::rt

#endif
