//===- PlanFp32.cpp - Plan builder: the FP32 op visitors ------------------===//
//
// Each op of the FP32 pipeline's output becomes a step (runtime/Steps.h):
// linear / fused_linear through makeLinear (the epilogue region an
// ElementwiseProgram), layer norms, attention and octet.fused as kernel
// steps, the rest generic steps, with copies in front of steps that need
// contiguous operands.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanWalker.h"

using namespace mlir;
using namespace octet::plan_builder;
namespace rt = octet::rt;
using octet::joinNodeNames;

LogicalResult PlanWalker::addStep(Operation *op, const rt::StepRecipe::Call &call,
                                  const std::string &kind) {
  std::string error;
  rt::StepPtr step = rt::buildStep(rt::StepRecipe{call}, options_, error);
  if (!step)
    return op->emitError() << "cannot build the " << kind << " step"
                           << (error.empty() ? std::string() : ": " + error),
           failure();
  std::string name = joinNodeNames(op->getLoc(), "+");
  step->location = name.empty() ? op->getName().getStringRef().str() : name;
  plan_->steps.push_back(std::move(step));
  return success();
}

LogicalResult PlanWalker::visitLinear(Operation *op) {
  bool fused = isa<octet::FusedLinearOp>(op);
  Value input = op->getOperand(0), weight = op->getOperand(1), bias;
  bool transposeWeight = op->hasAttr("transpose_weight");
  std::vector<Value> extras;
  if (auto linear = dyn_cast<octet::LinearOp>(op)) {
    bias = linear.getBias();
  } else {
    auto fusedLinear = cast<octet::FusedLinearOp>(op);
    bias = fusedLinear.getBias();
    extras.assign(fusedLinear.getExtra().begin(), fusedLinear.getExtra().end());
  }
  auto weightType = cast<RankedTensorType>(weight.getType());
  if (!weightType.getElementType().isF32() ||
      !cast<RankedTensorType>(input.getType()).getElementType().isF32())
    return op->emitError() << "the FP32 runtime's linear needs f32 operands", failure();
  FailureOr<TensorId> in = tensorFor(op, input);
  FailureOr<std::vector<ScalarId>> shape = resultShape(op, op->getResult(0));
  if (failed(in) || failed(shape))
    return failure();

  // The linear step packs or reorders its weight (and copies the bias) once;
  // octet-lower-runtime-linear turned a linear of run-time values into matmul
  // and add, and no epilogue has a generic form for fused_linear.
  if (!weight.getDefiningOp<octet::ConstantOp>() ||
      (bias && !bias.getDefiningOp<octet::ConstantOp>()))
    return op->emitError() << op->getName()
                           << " with a run-time weight or bias is not supported by the FP32 "
                              "runtime"
                           << (fused ? "" : " (octet-lower-runtime-linear makes it matmul + add)"),
           failure();

  rt::LinearSpec spec;
  FailureOr<TensorId> rowInput = ensureRowContiguous(op, *in);
  if (failed(rowInput))
    return failure();
  spec.input = *rowInput;
  // makeLinear packs (JIT) or reorders (oneDNN) the weight: no Plan copy of it.
  FailureOr<const void *> w = transientConstantBytes(op, weight);
  if (failed(w))
    return failure();
  spec.weight = static_cast<const float *>(*w);
  spec.layout = transposeWeight ? octet::WeightLayout::NK : octet::WeightLayout::KN;
  spec.k = weightType.getDimSize(transposeWeight ? 1 : 0);
  spec.n = weightType.getDimSize(transposeWeight ? 0 : 1);
  if (bias) {
    FailureOr<const void *> b = constantBytes(op, bias);
    if (failed(b))
      return failure();
    spec.bias = static_cast<const float *>(*b);
  }
  for (Value extra : extras) {
    FailureOr<TensorId> t = tensorFor(op, extra);
    if (failed(t))
      return failure();
    FailureOr<TensorId> contiguous = ensureContiguous(op, *t);
    if (failed(contiguous))
      return failure();
    spec.extras.push_back(*contiguous);
    spec.extraPerColumn.push_back(isPerColumnVector(extra.getType(), spec.n));
  }
  if (fused) {
    FailureOr<rt::ElementwiseProgram> program = octet::programFromRegion(op->getRegion(0));
    if (failed(program))
      return failure();
    spec.epilogue = std::move(*program);
  }
  FailureOr<TensorId> out = resultTensor(op, op->getResult(0), *shape);
  if (failed(out))
    return failure();
  spec.output = *out;
  return addStep(op, rt::recipe::Linear{spec}, "linear");
}

LogicalResult PlanWalker::visitLayerNorm(Operation *op) {
  Value input, residual, gamma, beta;
  int64_t axis;
  float epsilon;
  if (auto ln = dyn_cast<octet::LayerNormOp>(op)) {
    input = ln.getInput(), gamma = ln.getGamma(), beta = ln.getBeta();
    axis = ln.getAxis();
    epsilon = ln.getEpsilon().convertToFloat();
  } else if (auto aln = dyn_cast<octet::AddLayerNormOp>(op)) {
    input = aln.getInput(), residual = aln.getResidual(), gamma = aln.getGamma(),
    beta = aln.getBeta();
    axis = aln.getAxis();
    epsilon = aln.getEpsilon().convertToFloat();
  } else {
    auto lnq = cast<octet::LayerNormQuantizeOp>(op);
    input = lnq.getInput(), residual = lnq.getResidual(), gamma = lnq.getGamma(),
    beta = lnq.getBeta();
    axis = lnq.getAxis();
    epsilon = lnq.getEpsilon().convertToFloat();
  }
  auto type = cast<RankedTensorType>(input.getType());
  if (axis != type.getRank() - 1)
    return op->emitError() << "layer normalization over dims " << axis << ".." << type.getRank() - 1
                           << ": the FP32 runtime normalizes over the last dim only",
           failure();
  auto gammaType = cast<RankedTensorType>(gamma.getType());
  if (!type.getElementType().isF32() || !gammaType.getElementType().isF32() ||
      gammaType.getRank() != 1 || type.isDynamicDim(axis) ||
      gammaType.getDimSize(0) != type.getDimSize(axis))
    return op->emitError() << "layer normalization needs f32 and a 1-D gamma the size of the "
                              "(static) last dim",
           failure();
  rt::LayerNormSpec spec;
  spec.n = gammaType.getDimSize(0);
  spec.epsilon = epsilon;
  FailureOr<const void *> g = constantBytes(op, gamma);
  if (failed(g))
    return failure();
  spec.gamma = static_cast<const float *>(*g);
  if (beta) {
    FailureOr<const void *> b = constantBytes(op, beta);
    if (failed(b))
      return failure();
    spec.beta = static_cast<const float *>(*b);
  } else {
    std::shared_ptr<void> zeros = allocateAligned(spec.n * sizeof(float));
    plan_->keepAlive.push_back(zeros);
    plan_->constants.push_back({zeros.get(), size_t(spec.n) * sizeof(float)});
    spec.beta = static_cast<const float *>(zeros.get());
  }
  FailureOr<TensorId> x = tensorFor(op, input);
  if (failed(x) || failed(x = ensureContiguous(op, *x)))
    return failure();
  spec.x = *x;
  if (residual) {
    FailureOr<TensorId> r = tensorFor(op, residual);
    if (failed(r) || failed(r = ensureContiguous(op, *r)))
      return failure();
    spec.residual = *r;
  }
  // octet.layer_norm_quantize: y only where something reads it; the
  // per-tensor scale and zero point are plan-time constants (the kernel's).
  auto lnq = dyn_cast<octet::LayerNormQuantizeOp>(op);
  if (lnq) {
    auto qType = cast<RankedTensorType>(lnq.getQuantized().getType());
    spec.quantizedType = qType.getElementType().isUnsignedInteger(8) ? DType::U8 : DType::I8;
    if (Value scale = lnq.getScale()) {
      FailureOr<const void *> s = constantBytes(op, scale);
      FailureOr<const void *> z = constantBytes(op, lnq.getZeroPoint());
      if (failed(s) || failed(z))
        return failure();
      spec.qScale = *static_cast<const float *>(*s);
      spec.qZeroPoint = spec.quantizedType == DType::U8 ? *static_cast<const uint8_t *>(*z)
                                                        : *static_cast<const int8_t *>(*z);
    }
    if (Value quantGamma = lnq.getQuantGamma()) {
      FailureOr<const void *> g2 = constantBytes(op, quantGamma);
      FailureOr<const void *> b2 = constantBytes(op, lnq.getQuantBeta());
      if (failed(g2) || failed(b2))
        return failure();
      spec.qGamma = static_cast<const float *>(*g2);
      spec.qBeta = static_cast<const float *>(*b2);
    }
  }
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    if (i == 0 && lnq && result.use_empty())
      continue;
    FailureOr<TensorId> out = shapedResultTensor(op, result);
    if (failed(out))
      return failure();
    (i == 0 ? spec.output : i == 1 ? spec.quantized : spec.rowScale) = *out;
  }
  return addStep(op, rt::recipe::LayerNorm{spec}, lnq ? "layer_norm_quantize" : "layer_norm");
}

LogicalResult PlanWalker::visit(Operation *op) {
  if (isa<octet::ConstantOp, func::ReturnOp>(op))
    return success(); // constants become tensors when used; returns at the end
  if (foldedGathers_.contains(op))
    return visitFoldedGather(cast<octet::GatherOp>(op));
  if (auto it = embeddingSums_.find(op); it != embeddingSums_.end())
    return it->second.pack ? success() : buildEmbeddingSum(op); // else at its pack_tokens
  if (op->getNumResults() == 1 && !isa<RankedTensorType>(op->getResult(0).getType()))
    return visitIndexOp(op);
  if (isa<octet::QuantizeOp, octet::DequantizeOp>(op))
    return visitQuant(op);
  if (isa<octet::QLinearOp>(op))
    return visitQLinear(cast<octet::QLinearOp>(op));
  if (auto perRow = dyn_cast<octet::QuantizePerRowOp>(op))
    return visitQuantizePerRow(perRow);
  if (isa<octet::TokenLayoutOp, octet::PackTokensOp, octet::UnpackTokensOp>(op))
    return visitTokenOp(op);
  if (isa<octet::LayerNormQuantizeOp>(op))
    return visitLayerNorm(op);
  if (isa<octet::DynamicQuantizeOp, octet::MatMulIntegerOp>(op))
    return op->emitError() << op->getName()
                           << " is not supported by the runtime yet (dynamically quantized "
                              "models need the INT8 pipeline)",
           failure();
  if (op->getNumResults() != 1)
    return op->emitError() << op->getName() << " is not supported by the FP32 runtime", failure();
  if (isa<octet::ReshapeOp, octet::SliceOp, octet::ExpandOp, octet::TransposeOp>(op))
    return visitViewOp(op);
  if (isa<octet::LinearOp, octet::FusedLinearOp>(op))
    return visitLinear(op);
  if (isa<octet::LayerNormOp, octet::AddLayerNormOp>(op))
    return visitLayerNorm(op);

  Value result = op->getResult(0);
  FailureOr<std::vector<TensorId>> insOr = tensorOperands(op);
  if (failed(insOr))
    return failure();
  std::vector<TensorId> ins = std::move(*insOr);
  FailureOr<std::vector<ScalarId>> shape = resultShape(op, result);
  if (failed(shape))
    return failure();
  StringRef opName = op->getName().getStringRef();
  bool kernel = isa<octet::AttentionOp, octet::FusedOp>(op);
  if (kernel) {
    // Kernel steps read plain (or row-strided) buffers: copy other views first.
    for (size_t i = 0; i < ins.size(); ++i) {
      bool rowView = isa<octet::AttentionOp>(op) && i < 3;
      FailureOr<TensorId> t =
          rowView ? ensureRowContiguous(op, ins[i]) : ensureContiguous(op, ins[i]);
      if (failed(t))
        return failure();
      ins[i] = *t;
    }
  }
  FailureOr<TensorId> outOr = resultTensor(op, result, *shape);
  if (failed(outOr))
    return failure();
  TensorId out = *outOr;
  std::string error;
  using BK = rt::BinaryKind;
  using UK = rt::UnaryKind;
  auto binary = [&](BK kind) {
    return addStep(op, rt::recipe::Binary{kind, ins[0], ins[1], out}, opName.str());
  };
  auto unary = [&](UK kind) {
    return addStep(op, rt::recipe::Unary{kind, ins[0], out}, opName.str());
  };
  auto reduce = [&](rt::ReduceKind kind) {
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    return addStep(
        op, rt::recipe::Reduce{kind, ins[0], std::vector<int>(axes.begin(), axes.end()), out},
        opName.str());
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](octet::AddOp) { return binary(BK::Add); })
      .Case([&](octet::SubOp) { return binary(BK::Sub); })
      .Case([&](octet::MulOp) { return binary(BK::Mul); })
      .Case([&](octet::DivOp) { return binary(BK::Div); })
      .Case([&](octet::PowOp) { return binary(BK::Pow); })
      .Case([&](octet::MaxOp) { return binary(BK::Max); })
      .Case([&](octet::MinOp) { return binary(BK::Min); })
      .Case([&](octet::EqualOp) { return binary(BK::Equal); })
      .Case([&](octet::LessOp) { return binary(BK::Less); })
      .Case([&](octet::GreaterOp) { return binary(BK::Greater); })
      .Case([&](octet::AndOp) { return binary(BK::And); })
      .Case([&](octet::OrOp) { return binary(BK::Or); })
      .Case([&](octet::XorOp) { return binary(BK::Xor); })
      .Case([&](octet::ModOp m) { return binary(m.getFmod() ? BK::FMod : BK::Mod); })
      .Case([&](octet::NegOp) { return unary(UK::Neg); })
      .Case([&](octet::AbsOp) { return unary(UK::Abs); })
      .Case([&](octet::ExpOp) { return unary(UK::Exp); })
      .Case([&](octet::LogOp) { return unary(UK::Log); })
      .Case([&](octet::ErfOp) { return unary(UK::Erf); })
      .Case([&](octet::TanhOp) { return unary(UK::Tanh); })
      .Case([&](octet::SqrtOp) { return unary(UK::Sqrt); })
      .Case([&](octet::RsqrtOp) { return unary(UK::Rsqrt); })
      .Case([&](octet::ReciprocalOp) { return unary(UK::Reciprocal); })
      .Case([&](octet::ReluOp) { return unary(UK::Relu); })
      .Case([&](octet::SigmoidOp) { return unary(UK::Sigmoid); })
      .Case([&](octet::NotOp) { return unary(UK::Not); })
      .Case([&](octet::CeilOp) { return unary(UK::Ceil); })
      .Case([&](octet::FloorOp) { return unary(UK::Floor); })
      .Case([&](octet::SignOp) { return unary(UK::Sign); })
      .Case([&](octet::IsNanOp) { return unary(UK::IsNaN); })
      .Case([&](octet::IsInfOp t) {
        bool negative = t.getDetectNegative(), positive = t.getDetectPositive();
        if (!negative && !positive) // nothing to detect: x < x is false for every x, NaN too
          return addStep(op, rt::recipe::Binary{BK::Less, ins[0], ins[0], out}, opName.str());
        return unary(negative && positive ? UK::IsInf : positive ? UK::IsPosInf : UK::IsNegInf);
      })
      .Case([&](octet::CastOp) { return addStep(op, rt::recipe::Cast{ins[0], out}, "cast"); })
      .Case([&](octet::WhereOp) {
        return addStep(op, rt::recipe::Where{ins[0], ins[1], ins[2], out}, "where");
      })
      .Case([&](octet::GatherOp g) {
        return addStep(op, rt::recipe::Gather{ins[0], ins[1], int(g.getAxis()), out}, "gather");
      })
      .Case([&](octet::GatherNDOp g) {
        return addStep(op, rt::recipe::GatherND{ins[0], ins[1], int(g.getBatchDims()), out},
                       "gather_nd");
      })
      .Case([&](octet::GatherElementsOp g) {
        return addStep(op, rt::recipe::GatherElements{ins[0], ins[1], int(g.getAxis()), out},
                       "gather_elements");
      })
      .Case([&](octet::ConcatOp c) {
        return addStep(op, rt::recipe::Concat{ins, int(c.getAxis()), out}, "concat");
      })
      .Case([&](octet::ReduceMeanOp) { return reduce(rt::ReduceKind::Mean); })
      .Case([&](octet::ReduceSumOp) { return reduce(rt::ReduceKind::Sum); })
      .Case([&](octet::ReduceMaxOp) { return reduce(rt::ReduceKind::Max); })
      .Case([&](octet::ReduceMinOp) { return reduce(rt::ReduceKind::Min); })
      .Case([&](octet::CumSumOp c) {
        return addStep(
            op, rt::recipe::CumSum{ins[0], int(c.getAxis()), c.getExclusive(), c.getReverse(), out},
            "cumsum");
      })
      .Case([&](octet::SoftmaxOp s) {
        return addStep(op, rt::recipe::Softmax{ins[0], int(s.getAxis()), out}, "softmax");
      })
      .Case([&](octet::RangeOp r) {
        return addStep(op, rt::recipe::Range{scalarFor(r.getStart()), scalarFor(r.getDelta()), out},
                       "range");
      })
      .Case([&](octet::FromElementsOp f) {
        std::vector<ScalarId> elements;
        for (Value e : f.getElements())
          elements.push_back(scalarFor(e));
        return addStep(op, rt::recipe::FromElements{elements, out}, "from_elements");
      })
      .Case([&](octet::MatMulOp) {
        return addStep(op, rt::recipe::MatMul{ins[0], ins[1], out}, "matmul");
      })
      .Case([&](octet::GeluOp g) -> LogicalResult {
        // octet-lower-gelu makes each f32 gelu an octet.fused of one octet.scalar_gelu.
        if (g.getType().getElementType().isF32())
          return op->emitError() << "octet.gelu reached the Plan builder: the pipeline must run "
                                    "octet-lower-gelu, which makes it an octet.fused",
                 failure();
        return op->emitError() << "octet.gelu of " << g.getType()
                               << " is not supported by the FP32 runtime (GELU runs in f32)",
               failure();
      })
      .Case([&](octet::AttentionOp a) {
        rt::AttentionSpec spec;
        spec.q = ins[0], spec.k = ins[1], spec.v = ins[2];
        spec.mask = a.getMask() ? ins[3] : -1;
        spec.tokenLayout = a.getTokenLayout() ? ins.back() : -1;
        spec.output = out;
        spec.numHeads = a.getNumHeads();
        spec.scale = a.getScale().convertToFloat();
        spec.precision = options_.attention;
        spec.zeroMaskedRows = a.getZeroMaskedRows();
        if (failed(foldOutputQuantize(a, spec)))
          return failure();
        return addStep(op, rt::recipe::Attention{spec}, "attention");
      })
      .Case([&](octet::FusedOp fused) -> LogicalResult {
        FailureOr<rt::ElementwiseProgram> program = octet::programFromRegion(fused.getBody());
        if (failed(program))
          return failure();
        return addStep(op, rt::recipe::FusedElementwise{*program, ins, out}, "fused elementwise");
      })
      .Default([&](Operation *) -> LogicalResult {
        return op->emitError() << op->getName() << " is not supported by the FP32 runtime",
               failure();
      });
}

FailureOr<rt::ElementwiseProgram> octet::programFromRegion(Region &region) {
  using Op = rt::ElementwiseProgram::Op;
  rt::ElementwiseProgram program;
  if (!region.hasOneBlock())
    return emitError(region.getLoc()) << "a fused region must have one block", failure();
  Block &block = region.front();
  DenseMap<Value, int32_t> ids;
  auto emit = [&](Op op, int32_t a = -1, int32_t b = -1, float value = 0) {
    program.instrs.push_back({op, a, b, value});
    return int32_t(program.instrs.size() - 1);
  };
  for (BlockArgument arg : block.getArguments()) {
    if (!arg.getType().isF32())
      return emitError(arg.getLoc()) << "fused region argument " << arg.getArgNumber() << " is "
                                     << arg.getType() << ", not f32",
             failure();
    ids[arg] = emit(Op::Input, int32_t(arg.getArgNumber()));
  }
  program.numInputs = int32_t(block.getNumArguments());
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      if (op.getNumOperands() != 1 || !ids.count(op.getOperand(0)))
        return op.emitError() << "a fused region must yield one f32 computed in it", failure();
      int32_t result = ids.lookup(op.getOperand(0));
      if (result != int32_t(program.instrs.size()) - 1) {
        // The result must be the last instruction: x · 1 is x exactly.
        int32_t one = emit(Op::Constant, -1, -1, 1.0f);
        emit(Op::Mul, result, one);
      }
      std::string problem = program.verify();
      if (!problem.empty())
        return op.emitError() << "malformed elementwise program: " << problem, failure();
      return program;
    }
    for (Value operand : op.getOperands())
      if (!ids.count(operand))
        return op.emitError() << "operand of " << op.getName()
                              << " is not computed in the fused region",
               failure();
    // The ops the verifiers admit (compiler/ir/ElementwiseOps.h); a region built
    // without verification may still hold others.
    std::optional<Op> code = octet::elementwiseProgramOpcode(&op);
    if (!code)
      return op.emitError() << op.getName()
                            << " in a fused region is not supported by the FP32 runtime",
             failure();
    int32_t id;
    if (*code == Op::Constant)
      id =
          emit(Op::Constant, -1, -1,
               cast<FloatAttr>(cast<arith::ConstantOp>(op).getValue()).getValue().convertToFloat());
    else
      id = emit(*code, ids.lookup(op.getOperand(0)),
                op.getNumOperands() > 1 ? ids.lookup(op.getOperand(1)) : -1);
    ids[op.getResult(0)] = id;
  }
  return emitError(region.getLoc()) << "a fused region must end in octet.yield", failure();
}
