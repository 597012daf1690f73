//===- QuantizationUtils.h - what the INT8 passes share ---------*- C++ -*-===//
//
// Reading f32 constants and octet.calib, per-tensor quantization
// parameters, and folding a quantize of a qlinear's result into it: used by
// octet-smoothquant, octet-quantize and octet-eliminate-qdq.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_PASSES_QUANTIZATIONUTILS_H
#define OCTET_COMPILER_PASSES_QUANTIZATIONUTILS_H

#include "compiler/ir/AttrNames.h"
#include "compiler/ir/OctetOps.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>
#include <vector>

namespace octet {

/// octet.linear or octet.fused_linear seen as one GEMM X·W (+ b): the weight
/// is operand 1 and the bias, when present, operand 2 in both.
struct LinearView {
  mlir::Operation *op;
  mlir::Value input, weight, bias;
  mlir::ValueRange extra; ///< fused_linear's extra operands (none for linear)
  bool transposed;
  int64_t kDim = 0, nDim = 0; ///< set by of()

  static std::optional<LinearView> of(mlir::Operation *op);
  mlir::RankedTensorType weightType() const {
    return mlir::cast<mlir::RankedTensorType>(weight.getType());
  }
  /// K (input features) and N (output features).
  int64_t k() const { return kDim; }
  int64_t n() const { return nDim; }
  /// Flat index of W[input channel j, output channel c] in the stored layout.
  int64_t index(int64_t j, int64_t c) const { return transposed ? c * kDim + j : j * nDim + c; }
  mlir::OpOperand &weightOperand() const { return op->getOpOperand(1); }
  mlir::OpOperand &biasOperand() const { return op->getOpOperand(2); }
};


/// The elements of an f32 constant of static shape (dense, splat or
/// resource blob), or nothing (not a constant, not f32, an elided blob).
std::optional<std::vector<float>> readF32Constant(mlir::Value v);
/// Whether readF32Constant would succeed, without copying the values.
bool isF32Constant(mlir::Value v);

/// The calibration of one linear's input X, as the calibration step writes
/// it (docs/int8.md).
struct Calibration {
  mlir::DictionaryAttr dict;
  std::vector<float> absMax;     // per input channel: max |X[..., j]|
  std::optional<float> min, max; // the per-tensor range
  // Optional signed extremes per input channel: with them the range of X/s
  // after smoothing is exact instead of a bound from absMax.
  std::optional<std::vector<float>> channelMin, channelMax;
};
inline constexpr llvm::StringLiteral kCalibAttr = attr::kCalib;

/// Parses `op`'s octet.calib for a K-channel input. A malformed one is an
/// error on `op` that starts with `passName` (the calibration step writes
/// it, so it is a bug there).
mlir::FailureOr<Calibration> parseCalibration(mlir::Operation *op, int64_t k,
                                              llvm::StringRef passName);

/// Whether a quantization parameter is one value for the whole tensor: 0-D,
/// or a one-element 1-D tensor without an axis.
bool isPerTensor(mlir::Value scale, std::optional<uint64_t> axis);

/// A 0-D view of a per-tensor parameter: the value itself, or a 0-D reshape
/// of a one-element 1-D tensor.
mlir::Value scalarOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);

/// A 0-D zero constant of `element` (an absent zero point).
mlir::Value zeroScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Type element);

/// When `qlinear` has an f32 result whose only use is a per-tensor
/// octet.quantize, replaces both by one qlinear with that quantize as its
/// requantize (a ui8/i8 result; the same values, see docs/int8-quantization.md)
/// and returns it; otherwise returns null and changes nothing.
QLinearOp foldRequantize(mlir::RewriterBase &rewriter, QLinearOp qlinear);

} // namespace octet

#endif
