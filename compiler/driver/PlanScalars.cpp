//===- PlanScalars.cpp - Plan builder: symbolic dims and scalar folding ---===//
//
// The Plan's scalars (runtime/Plan.h: Scalar): constants, input dims and the
// index arithmetic between them, folded and deduplicated while they are built
// (compiler/codegen/ScalarArithmetic.h, the semantics the run uses); the shape
// rule of every op as scalars; octet.dim and arith on index.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanWalker.h"

using namespace mlir;
using namespace octet::plan_builder;
namespace rt = octet::rt;
using octet::joinNodeNames;

ScalarId PlanWalker::addScalar(Scalar s) {
  auto key = std::make_tuple(int(s.kind), s.value, s.input, s.dim, s.a, s.b, s.c, int(s.predicate),
                             s.what);
  auto it = scalarIndex_.find(key);
  if (it != scalarIndex_.end())
    return it->second;
  ScalarId id = ScalarId(plan_->scalars.size());
  plan_->scalars.push_back(std::move(s));
  scalarIndex_.emplace(key, id);
  return id;
}

ScalarId PlanWalker::addOperation(Scalar::Kind kind, ScalarId a, ScalarId b, ScalarId c,
                                  Scalar::Predicate predicate, std::string what) {
  Scalar s;
  s.kind = kind;
  s.a = a;
  s.b = b;
  s.c = c;
  s.predicate = predicate;
  s.what = std::move(what);
  return addScalar(std::move(s));
}

ScalarId PlanWalker::arith(Scalar::Kind kind, ScalarId a, ScalarId b, std::string what) {
  using K = Scalar::Kind;
  std::optional<int64_t> x = constantOf(a), y = constantOf(b);
  // Identities first (they hold for unknown operands too), then constant
  // folding with the runtime's own semantics (compiler/codegen/ScalarArithmetic.h);
  // never a division by zero or an overflow: those stay for the run to report.
  switch (kind) {
  case K::Add:
    if (x == 0)
      return b;
    if (y == 0)
      return a;
    break;
  case K::Sub:
    if (y == 0)
      return a;
    break;
  case K::Mul:
    if (x == 1)
      return b;
    if (y == 1)
      return a;
    if (x == 0 || y == 0)
      return constant(0);
    break;
  case K::DivS:
  case K::FloorDivS:
  case K::CeilDivS:
    if (y == 1)
      return a;
    break;
  case K::MinS:
  case K::MaxS:
    if (a == b)
      return a;
    break;
  case K::Broadcast:
    if (a == b || y == 1)
      return a;
    if (x == 1)
      return b;
    break;
  case K::Equal:
    if (a == b || (x && y && *x == *y))
      return a;
    break;
  default:
    break;
  }
  if (std::optional<octet::IntBinaryOp> op = rt::intBinaryOpOf(kind); op && x && y) {
    int64_t r;
    if (octet::applyIntBinary(*op, *x, *y, r) == octet::ArithStatus::Ok)
      return constant(r);
  }
  // Only the checking kinds (and divisions, for division by zero) keep `what`.
  bool checks = kind == K::Broadcast || kind == K::Equal || kind == K::DivS ||
                kind == K::FloorDivS || kind == K::CeilDivS || kind == K::RemS;
  return addOperation(kind, a, b, -1, Scalar::Predicate::Eq, checks ? std::move(what) : "");
}

ScalarId PlanWalker::cmp(Scalar::Predicate predicate, ScalarId a, ScalarId b) {
  std::optional<int64_t> x = constantOf(a), y = constantOf(b);
  if (x && y)
    return constant(octet::compareInt(rt::intPredicateOf(predicate), *x, *y));
  return addOperation(Scalar::Kind::Cmp, a, b, -1, predicate);
}

ScalarId PlanWalker::select(ScalarId condition, ScalarId a, ScalarId b) {
  if (std::optional<int64_t> c = constantOf(condition))
    return *c ? a : b;
  if (a == b)
    return a;
  return addOperation(Scalar::Kind::Select, condition, a, b);
}

ScalarId PlanWalker::product(ArrayRef<ScalarId> dims) {
  ScalarId result = constant(1);
  for (ScalarId d : dims)
    result = arith(Scalar::Kind::Mul, result, d);
  return result;
}

std::vector<ScalarId> PlanWalker::contiguousStrides(ArrayRef<ScalarId> shape) {
  std::vector<ScalarId> strides(shape.size());
  ScalarId stride = constant(1);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride = arith(Scalar::Kind::Mul, stride, shape[i]);
  }
  return strides;
}

std::vector<ScalarId> PlanWalker::broadcastShape(ArrayRef<TensorId> operands, int64_t rank,
                                                 const std::string &where) {
  std::vector<ScalarId> shape(rank);
  for (int64_t d = 0; d < rank; ++d) {
    ScalarId dim = -1;
    for (TensorId t : operands) {
      const std::vector<ScalarId> &s = plan_->tensors[t].shape;
      int64_t od = d - (rank - int64_t(s.size()));
      if (od < 0 || isConstant(s[od], 1))
        continue;
      dim = dim < 0 ? s[od]
                    : arith(Scalar::Kind::Broadcast, dim, s[od],
                            where + ": dim " + std::to_string(d) + " of the operands");
    }
    shape[d] = dim < 0 ? constant(1) : dim;
  }
  return shape;
}

FailureOr<std::vector<PlanWalker::SliceAxis>> PlanWalker::sliceAxes(octet::SliceOp slice,
                                                                    TensorId input) {
  std::vector<SliceAxis> axes;
  const std::vector<ScalarId> shape = plan_->tensors[input].shape;
  auto starts = slice.getStarts(), ends = slice.getEnds();
  size_t nextStart = 0, nextEnd = 0;
  using K = Scalar::Kind;
  using P = Scalar::Predicate;
  for (auto [axis, staticStart, staticEnd, step] : llvm::zip_equal(
           slice.getAxes(), slice.getStaticStarts(), slice.getStaticEnds(), slice.getSteps())) {
    if (axis >= int64_t(shape.size()) || step == 0)
      return slice.emitError() << "slice axis " << axis << " or step " << step
                               << " is out of range",
             failure();
    ScalarId n = shape[axis];
    ScalarId s =
        ShapedType::isDynamic(staticStart) ? scalarFor(starts[nextStart++]) : constant(staticStart);
    ScalarId e =
        ShapedType::isDynamic(staticEnd) ? scalarFor(ends[nextEnd++]) : constant(staticEnd);
    // ONNX: a negative bound counts from the end, then bounds clamp to the axis.
    auto normalize = [&](ScalarId bound) {
      if (std::optional<int64_t> c = constantOf(bound))
        return *c >= 0 ? bound : arith(K::Add, bound, n);
      return select(cmp(P::Lt, bound, constant(0)), arith(K::Add, bound, n), bound);
    };
    ScalarId start = normalize(s), end = normalize(e), length;
    if (step > 0) {
      start = arith(K::MinS, arith(K::MaxS, start, constant(0)), n);
      end = arith(K::MinS, arith(K::MaxS, end, constant(0)), n);
      length = arith(K::MaxS, arith(K::CeilDivS, arith(K::Sub, end, start), constant(step)),
                     constant(0));
    } else {
      ScalarId last = arith(K::Sub, n, constant(1));
      start = arith(K::MinS, arith(K::MaxS, start, constant(0)), last);
      end = arith(K::MinS, arith(K::MaxS, end, constant(-1)), last);
      length = arith(K::MaxS, arith(K::CeilDivS, arith(K::Sub, start, end), constant(-step)),
                     constant(0));
    }
    axes.push_back({axis, start, length, step});
  }
  return axes;
}

FailureOr<std::vector<ScalarId>> PlanWalker::resultShape(Operation *op, Value result) {
  using K = Scalar::Kind;
  auto type = cast<RankedTensorType>(result.getType());
  int64_t rank = type.getRank();
  // An f32 linear's shape is its input's: its weight, which the step packs or
  // reorders, gets no tensor (the Plan would keep an unused copy).
  FailureOr<std::vector<TensorId>> operandsOr = failure();
  if (isa<octet::LinearOp, octet::FusedLinearOp>(op)) {
    if (FailureOr<TensorId> input = tensorFor(op, op->getOperand(0)); succeeded(input))
      operandsOr = std::vector<TensorId>{*input};
  } else {
    operandsOr = tensorOperands(op);
  }
  if (failed(operandsOr))
    return failure();
  const std::vector<TensorId> &operands = *operandsOr;
  auto shapeOf = [&](size_t i) { return plan_->tensors[operands.at(i)].shape; };
  std::vector<ScalarId> rule;
  StringRef name = op->getName().getStringRef();
  bool broadcasting =
      isa<octet::AddOp, octet::SubOp, octet::MulOp, octet::DivOp, octet::PowOp, octet::MaxOp,
          octet::MinOp, octet::EqualOp, octet::LessOp, octet::GreaterOp, octet::AndOp, octet::OrOp,
          octet::XorOp, octet::ModOp, octet::WhereOp, octet::FusedOp>(op);
  if (broadcasting) {
    std::string where = joinNodeNames(op->getLoc(), "+");
    rule =
        broadcastShape(operands, rank, (where.empty() ? "" : where + " ") + "(" + name.str() + ")");
  } else if (isa<octet::ReshapeOp, octet::ExpandOp>(op)) {
    auto dynamic = op->getOperands().drop_front();
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d)
      rule.push_back(type.isDynamicDim(d) ? scalarFor(dynamic[next++])
                                          : constant(type.getDimSize(d)));
  } else if (auto slice = dyn_cast<octet::SliceOp>(op)) {
    rule = shapeOf(0);
    FailureOr<std::vector<SliceAxis>> axes = sliceAxes(slice, operands[0]);
    if (failed(axes))
      return failure();
    for (const SliceAxis &axis : *axes)
      rule[axis.axis] = axis.length;
  } else if (auto transpose = dyn_cast<octet::TransposeOp>(op)) {
    std::vector<ScalarId> in = shapeOf(0);
    for (int64_t p : transpose.getPermutation())
      rule.push_back(in.at(p));
  } else if (isa<octet::MatMulOp>(op)) {
    std::vector<ScalarId> a = shapeOf(0), b = shapeOf(1);
    if (a.empty() || b.empty())
      return op->emitError() << "matmul of a 0-D operand", failure();
    ScalarId ka = a.back(), kb = b.size() == 1 ? b[0] : b[b.size() - 2];
    arith(K::Equal, ka, kb, "matmul inner dims (lhs columns vs rhs rows)");
    std::vector<ScalarId> batchA(a.begin(), a.end() - std::min<size_t>(a.size(), 2));
    std::vector<ScalarId> batchB(b.begin(), b.end() - std::min<size_t>(b.size(), 2));
    size_t batchRank = std::max(batchA.size(), batchB.size());
    for (size_t d = 0; d < batchRank; ++d) {
      ScalarId dim = -1;
      for (const std::vector<ScalarId> *s : {&batchA, &batchB}) {
        int64_t od = int64_t(d) - int64_t(batchRank - s->size());
        if (od < 0 || isConstant((*s)[od], 1))
          continue;
        dim = dim < 0 ? (*s)[od] : arith(K::Broadcast, dim, (*s)[od], "matmul batch dims");
      }
      rule.push_back(dim < 0 ? constant(1) : dim);
    }
    if (a.size() >= 2)
      rule.push_back(a[a.size() - 2]);
    if (b.size() >= 2)
      rule.push_back(b.back());
  } else if (isa<octet::LinearOp, octet::FusedLinearOp, octet::QLinearOp>(op)) {
    rule = shapeOf(0);
    if (!rule.empty())
      rule.back() = constant(type.getShape().back());
  } else if (auto gather = dyn_cast<octet::GatherOp>(op)) {
    std::vector<ScalarId> data = shapeOf(0), indices = shapeOf(1);
    int64_t axis = gather.getAxis();
    rule.assign(data.begin(), data.begin() + axis);
    rule.insert(rule.end(), indices.begin(), indices.end());
    rule.insert(rule.end(), data.begin() + axis + 1, data.end());
  } else if (auto gather = dyn_cast<octet::GatherNDOp>(op)) {
    std::vector<ScalarId> data = shapeOf(0), indices = shapeOf(1);
    int64_t batchDims = gather.getBatchDims();
    int64_t tuple = gather.getIndices().getType().getShape().back();
    for (int64_t d = 0; d < batchDims; ++d)
      arith(K::Equal, indices[d], data[d], "gather_nd batch dims (indices vs data)");
    rule.assign(indices.begin(), indices.end() - 1);
    rule.insert(rule.end(), data.begin() + batchDims + tuple, data.end());
  } else if (isa<octet::GatherElementsOp>(op)) {
    rule = shapeOf(1);
  } else if (auto concat = dyn_cast<octet::ConcatOp>(op)) {
    rule = shapeOf(0);
    int64_t axis = concat.getAxis();
    ScalarId sum = constant(0);
    for (size_t i = 0; i < operands.size(); ++i)
      sum = arith(K::Add, sum, shapeOf(i).at(axis));
    rule.at(axis) = sum;
  } else if (isa<octet::ReduceMeanOp, octet::ReduceSumOp, octet::ReduceMaxOp, octet::ReduceMinOp>(
                 op)) {
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    bool keep = op->hasAttr("keepdims");
    std::vector<ScalarId> in = shapeOf(0);
    for (int64_t d = 0; d < int64_t(in.size()); ++d) {
      if (!llvm::is_contained(axes, d))
        rule.push_back(in[d]);
      else if (keep)
        rule.push_back(constant(1));
    }
  } else if (auto range = dyn_cast<octet::RangeOp>(op)) {
    ScalarId start = scalarFor(range.getStart()), limit = scalarFor(range.getLimit()),
             delta = scalarFor(range.getDelta());
    rule.push_back(
        arith(K::MaxS,
              arith(K::CeilDivS, arith(K::Sub, limit, start), delta, "range length (delta is 0)"),
              constant(0)));
  } else if (isa<octet::FromElementsOp>(op)) {
    rule.push_back(constant(type.getDimSize(0)));
  } else if (!operands.empty()) {
    rule = shapeOf(0); // shape-preserving ops
  }
  if (int64_t(rule.size()) != rank)
    return op->emitError() << "the plan builder's shape rule gives rank " << rule.size()
                           << " for a result of type " << type,
           failure();
  // Static dims are constants; a dynamic dim whose traced source is already in
  // the plan reuses that scalar (provably the same size, fewer checks).
  for (int64_t d = 0; d < rank; ++d) {
    if (!type.isDynamicDim(d)) {
      rule[d] = constant(type.getDimSize(d));
      continue;
    }
    octet::ValueDim source = octet::traceDimSource(result, d);
    if (source.value == result)
      continue;
    if (source.dim < 0) {
      auto it = scalars_.find(source.value);
      if (it != scalars_.end())
        rule[d] = it->second;
    } else {
      auto it = tensors_.find(source.value);
      if (it != tensors_.end() && source.dim < int64_t(plan_->tensors[it->second].shape.size()))
        rule[d] = plan_->tensors[it->second].shape[source.dim];
    }
  }
  return rule;
}

LogicalResult PlanWalker::visitIndexOp(Operation *op) {
  using K = Scalar::Kind;
  using P = Scalar::Predicate;
  Value result = op->getResult(0);
  auto operand = [&](unsigned i) { return scalarFor(op->getOperand(i)); };
  for (Value v : op->getOperands())
    if (!isa<RankedTensorType>(v.getType()) && !scalars_.count(v))
      return op->emitError() << "index operand has no scalar in the plan", failure();
  std::string what = joinNodeNames(op->getLoc(), "+");
  if (what.empty())
    what = op->getName().getStringRef().str();
  ScalarId id = -1;
  if (auto dim = dyn_cast<octet::DimOp>(op)) {
    FailureOr<TensorId> t = tensorFor(op, dim.getSource());
    if (failed(t))
      return failure();
    id = plan_->tensors[*t].shape.at(dim.getIndex());
  } else if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    auto value = dyn_cast<IntegerAttr>(c.getValue());
    if (!value)
      return op->emitError() << "non-integer scalar constant is not supported by the plan builder",
             failure();
    id = constant(value.getType().isInteger(1) ? int64_t(value.getValue().getBoolValue())
                                               : value.getInt());
  } else if (isa<arith::AddIOp>(op)) {
    id = arith(K::Add, operand(0), operand(1));
  } else if (isa<arith::SubIOp>(op)) {
    id = arith(K::Sub, operand(0), operand(1));
  } else if (isa<arith::MulIOp>(op)) {
    id = arith(K::Mul, operand(0), operand(1));
  } else if (isa<arith::DivSIOp>(op)) {
    id = arith(K::DivS, operand(0), operand(1), what);
  } else if (isa<arith::FloorDivSIOp>(op)) {
    id = arith(K::FloorDivS, operand(0), operand(1), what);
  } else if (isa<arith::CeilDivSIOp>(op)) {
    id = arith(K::CeilDivS, operand(0), operand(1), what);
  } else if (isa<arith::RemSIOp>(op)) {
    id = arith(K::RemS, operand(0), operand(1), what);
  } else if (isa<arith::MinSIOp>(op)) {
    id = arith(K::MinS, operand(0), operand(1));
  } else if (isa<arith::MaxSIOp>(op)) {
    id = arith(K::MaxS, operand(0), operand(1));
  } else if (auto c = dyn_cast<arith::CmpIOp>(op)) {
    using IP = arith::CmpIPredicate;
    static constexpr std::pair<IP, P> kSigned[] = {{IP::eq, P::Eq},  {IP::ne, P::Ne},
                                                   {IP::slt, P::Lt}, {IP::sle, P::Le},
                                                   {IP::sgt, P::Gt}, {IP::sge, P::Ge}};
    const auto *found =
        llvm::find_if(kSigned, [&](auto entry) { return entry.first == c.getPredicate(); });
    if (found == std::end(kSigned))
      return op->emitError() << "unsigned index comparisons are not supported by the plan builder",
             failure();
    P predicate = found->second;
    id = cmp(predicate, operand(0), operand(1));
  } else if (isa<arith::SelectOp>(op)) {
    id = select(operand(0), operand(1), operand(2));
  } else if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp>(op)) {
    id = operand(0);
  } else if (auto element = dyn_cast<octet::ElementIndexOp>(op)) {
    // The runtime evaluates every size once per run, before any step: it can
    // read a graph input's elements then, never a tensor the model computes.
    auto arg = dyn_cast<BlockArgument>(element.getInput());
    if (!arg || arg.getOwner() != &func_.front())
      return op->emitError() << "a size is read from the elements of a tensor the model "
                                "computes; sizes may come from graph inputs' elements only "
                                "(the runtime evaluates them before any step)",
             failure();
    Scalar s;
    s.kind = K::InputElement;
    s.input = int32_t(arg.getArgNumber());
    s.dim = int32_t(element.getPosition());
    s.what = what;
    id = addScalar(s);
  } else {
    return op->emitError() << "index op " << op->getName()
                           << " is not supported by the plan builder",
           failure();
  }
  scalars_[result] = id;
  return success();
}
