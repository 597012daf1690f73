//===- StepRecipe.h - a step as the factory call that builds it --*- C++ -*-===//
//
// A recipe is one step factory of Steps.h together with its arguments, as
// plain data. The compiler's PlanBuilder makes every step through buildStep,
// which keeps the recipe on the step; an AOT model stores the recipes
// (runtime/PlanImage.h) and opening it calls buildStep again on each, so JIT
// and AOT build their steps with the same code. Pointers in the specs point
// at constant bytes that the Plan keeps alive (Plan::constants).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_STEPRECIPE_H
#define OCTET_RUNTIME_STEPRECIPE_H

#include "runtime/Steps.h"

#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace octet::rt {

namespace recipe {
struct Binary {
  BinaryKind kind;
  TensorId a, b, out;
};
struct Unary {
  UnaryKind kind;
  TensorId in, out;
};
struct Cast {
  TensorId in, out;
};
struct Where {
  TensorId condition, a, b, out;
};
struct Gather {
  TensorId data, indices;
  int axis;
  TensorId out;
};
struct Copy {
  TensorId in, out;
};
struct Concat {
  std::vector<TensorId> ins;
  int axis;
  TensorId out;
};
struct Reduce {
  ReduceKind kind;
  TensorId in;
  std::vector<int> axes;
  TensorId out;
};
struct CumSum {
  TensorId in;
  int axis;
  bool exclusive, reverse;
  TensorId out;
};
struct Softmax {
  TensorId in;
  int axis;
  TensorId out;
};
struct Range {
  ScalarId start, delta;
  TensorId out;
};
struct FromElements {
  std::vector<ScalarId> elements;
  TensorId out;
};
struct MatMul {
  TensorId a, b, out;
};
struct Linear {
  LinearSpec spec;
  /// Keeps spec.bf16Weight alive when buildStep packed it (the step's recipe
  /// holds it; an AOT image stores its bytes as a constant range).
  std::shared_ptr<const void> bf16Packed;
  size_t bf16PackedBytes = 0;
};
struct LayerNorm {
  LayerNormSpec spec;
};
struct Attention {
  AttentionSpec spec;
};
struct FusedElementwise {
  ElementwiseProgram program;
  std::vector<TensorId> inputs;
  TensorId output;
};
struct Quantize {
  TensorId in, scale, zeroPoint;
  int axis;
  TensorId out;
};
struct Dequantize {
  TensorId in, scale, zeroPoint;
  int axis;
  TensorId out;
};
struct QuantizePerRow {
  TensorId in, out, scaleOut;
};
struct QLinear {
  QLinearSpec spec;
  DType outType;
};
struct GatherND {
  TensorId data, indices;
  int batchDims;
  TensorId out;
};
struct GatherElements {
  TensorId data, indices;
  int axis;
  TensorId out;
};
struct TokenLayout {
  std::vector<TensorId> masks;
  ScalarId batch, seq;
  TensorId out;
};
struct PackTokens {
  TensorId in, layout, out;
};
struct UnpackTokens {
  TensorId in, layout, out;
};
struct EmbeddingSum {
  std::vector<TensorId> tables, indices;
  TensorId layout; ///< -1: none
  TensorId out;
};
} // namespace recipe

struct StepRecipe {
  /// The alternatives' order is part of the AOT format (PlanImage.cpp writes
  /// the index): append new ones at the end and bump kPlanFormatVersion.
  using Call =
      std::variant<recipe::Binary, recipe::Unary, recipe::Cast, recipe::Where, recipe::Gather,
                   recipe::Copy, recipe::Concat, recipe::Reduce, recipe::CumSum, recipe::Softmax,
                   recipe::Range, recipe::FromElements, recipe::MatMul, recipe::Linear,
                   recipe::LayerNorm, recipe::Attention, recipe::FusedElementwise,
                   recipe::Quantize, recipe::Dequantize, recipe::QuantizePerRow, recipe::QLinear,
                   recipe::GatherND, recipe::GatherElements, recipe::TokenLayout,
                   recipe::PackTokens, recipe::UnpackTokens, recipe::EmbeddingSum>;
  Call call;
};

/// Calls the recipe's factory; the step keeps a copy of the recipe
/// (Step::recipe). Null with `error` set when the factory fails or throws.
StepPtr buildStep(const StepRecipe &recipe, const KernelOptions &options, std::string &error);

} // namespace octet::rt

#endif
