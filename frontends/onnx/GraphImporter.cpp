//===- GraphImporter.cpp - values, shape values and dims during import ----===//
//
// Symbolic dims: the size of a `?` dim is derived from how the tensor was
// computed (a reshape's size operand, the matching dim of an elementwise
// operand, …) before falling back to `octet.dim`. Equal sizes thus become the
// same SSA value, which lets Reshape's -1 cancel (B·S·768 / (B·12) = S·64).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/GraphImporter.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace octet;
using namespace octet::onnx_import;

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

OpBuilder &NodeContext::builder() const { return graph.builder; }

std::string octet::onnx_import::describeNode(StringRef opType, StringRef domain, int64_t opset,
                                             StringRef nodeName) {
  return ("ONNX op '" + opType + "' (domain '" + domain + "', opset " + Twine(opset) +
          ") at node '" + nodeName + "'")
      .str();
}

LogicalResult NodeContext::fail(const Twine &reason) const {
  return emitError(loc) << describeNode(node.op_type(), domain, opset, nodeName) << ": " << reason;
}

bool NodeContext::hasInput(unsigned i) const {
  return static_cast<int>(i) < node.input_size() && !node.input(i).empty();
}

const OnnxValue &NodeContext::inputInfo(unsigned i) const {
  return graph.values.find(node.input(i))->second;
}

Value NodeContext::input(unsigned i) const {
  if (!hasInput(i))
    return {};
  return graph.materialize(graph.values.find(node.input(i))->second, loc);
}

RankedTensorType NodeContext::inputType(unsigned i) const { return inputInfo(i).type; }

std::optional<ShapeValue> NodeContext::shapeInput(unsigned i) const {
  if (!hasInput(i))
    return std::nullopt;
  return graph.shapeValueOf(inputInfo(i));
}

std::optional<SmallVector<int64_t>> NodeContext::constantInts(unsigned i) const {
  auto entries = shapeInput(i);
  if (!entries)
    return std::nullopt;
  auto values = getConstantIntValues(*entries);
  if (!values)
    return std::nullopt;
  return SmallVector<int64_t>(*values);
}

DenseElementsAttr NodeContext::constantInput(unsigned i) const {
  if (!hasInput(i))
    return {};
  const OnnxValue &value = inputInfo(i);
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(value.constant))
    return dense;
  if (value.tensor)
    if (auto constant = value.tensor.getDefiningOp<ConstantOp>())
      return dyn_cast<DenseElementsAttr>(constant.getValue());
  return {};
}

const onnx::AttributeProto *NodeContext::attribute(StringRef name) const {
  for (const auto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t NodeContext::intAttr(StringRef name, int64_t defaultValue) const {
  const auto *attr = attribute(name);
  return attr && attr->type() == onnx::AttributeProto::INT ? attr->i() : defaultValue;
}

float NodeContext::floatAttr(StringRef name, float defaultValue) const {
  const auto *attr = attribute(name);
  return attr && attr->type() == onnx::AttributeProto::FLOAT ? attr->f() : defaultValue;
}

std::optional<SmallVector<int64_t>> NodeContext::intsAttr(StringRef name) const {
  const auto *attr = attribute(name);
  if (!attr || attr->type() != onnx::AttributeProto::INTS)
    return std::nullopt;
  return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

std::string NodeContext::stringAttr(StringRef name, StringRef defaultValue) const {
  const auto *attr = attribute(name);
  return attr && attr->type() == onnx::AttributeProto::STRING ? attr->s()
                                                              : std::string(defaultValue);
}

FailureOr<int64_t> NodeContext::normalizeAxis(int64_t axis, int64_t rank, StringRef what) const {
  if (auto normalized = octet::normalizeAxis(axis, rank))
    return *normalized;
  return fail(Twine(what) + " " + Twine(axis) + " is out of range for rank " + Twine(rank));
}

void NodeContext::setOutput(unsigned i, OnnxValue value) {
  if (static_cast<int>(i) < node.output_size() && !node.output(i).empty())
    graph.values[node.output(i)] = std::move(value);
}

void NodeContext::setOutput(unsigned i, Value value) {
  OnnxValue entry;
  entry.type = cast<RankedTensorType>(value.getType());
  entry.tensor = value;
  setOutput(i, std::move(entry));
}

void NodeContext::setShapeOutput(unsigned i, ShapeValue entries, RankedTensorType type) {
  OnnxValue entry;
  entry.type = type;
  entry.shape = std::move(entries);
  setOutput(i, std::move(entry));
}

OpFoldResult NodeContext::indexConst(int64_t v) const { return builder().getIndexAttr(v); }

Value NodeContext::indexValue(OpFoldResult v) const { return graph.indexValue(v, loc); }

OpFoldResult NodeContext::dim(Value tensor, int64_t d) const { return graph.dim(tensor, d, loc); }

SmallVector<OpFoldResult> NodeContext::dims(Value tensor) const {
  SmallVector<OpFoldResult> result;
  for (int64_t d = 0, e = cast<RankedTensorType>(tensor.getType()).getRank(); d < e; ++d)
    result.push_back(dim(tensor, d));
  return result;
}

/// Builds a reshape or expand of `input` to `sizes`; the identity is elided.
template <typename OpT>
static Value resize(const NodeContext &node, Value input, ArrayRef<OpFoldResult> sizes) {
  auto inputType = cast<RankedTensorType>(input.getType());
  if (static_cast<int64_t>(sizes.size()) == inputType.getRank() &&
      llvm::all_of(llvm::enumerate(sizes),
                   [&](auto size) { return size.value() == node.dim(input, size.index()); }))
    return input;
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamicSizes;
  for (OpFoldResult size : sizes) {
    if (auto c = getConstantIntValue(size)) {
      shape.push_back(*c);
    } else {
      shape.push_back(ShapedType::kDynamic);
      dynamicSizes.push_back(node.indexValue(size));
    }
  }
  auto type = RankedTensorType::get(shape, inputType.getElementType());
  return OpT::create(node.builder(), node.loc, type, input, dynamicSizes);
}

Value NodeContext::reshapeTo(Value input, ArrayRef<OpFoldResult> sizes) const {
  return resize<ReshapeOp>(*this, input, sizes);
}

Value NodeContext::expandTo(Value input, ArrayRef<OpFoldResult> sizes) const {
  return resize<ExpandOp>(*this, input, sizes);
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

Value GraphImporter::materialize(OnnxValue &value, Location loc) {
  if (value.tensor)
    return value.tensor;
  if (value.constant) {
    value.tensor = ConstantOp::create(builder, loc, value.constant);
    return value.tensor;
  }
  const ShapeValue &entries = *value.shape;
  auto type = value.type;
  auto elementType = cast<IntegerType>(type.getElementType());
  if (auto constants = getConstantIntValues(entries)) {
    SmallVector<APInt> values;
    for (int64_t c : *constants)
      values.push_back(APInt(elementType.getWidth(), c, /*isSigned=*/true,
                             /*implicitTrunc=*/true));
    value.tensor = ConstantOp::create(builder, loc, DenseElementsAttr::get(type, values));
    return value.tensor;
  }
  // from_elements makes i64/i32 vectors; other types and scalars go through
  // a cast and a reshape.
  SmallVector<Value> elements;
  for (OpFoldResult entry : entries) {
    Value v = indexValue(entry, loc);
    if (!v.getType().isIndex())
      v = arith::IndexCastUIOp::create(builder, loc, builder.getIndexType(), v);
    elements.push_back(v);
  }
  int64_t n = entries.size();
  Type vectorElement = elementType.isSignlessInteger(32) ? elementType : Type(builder.getI64Type());
  Value tensor =
      FromElementsOp::create(builder, loc, RankedTensorType::get({n}, vectorElement), elements);
  if (vectorElement != elementType)
    tensor = CastOp::create(builder, loc, RankedTensorType::get({n}, elementType), tensor);
  if (type.getRank() == 0)
    tensor = ReshapeOp::create(builder, loc, type, tensor, ValueRange{});
  value.tensor = tensor;
  return tensor;
}

std::optional<ShapeValue> GraphImporter::shapeValueOf(const OnnxValue &value) const {
  if (value.shape)
    return value.shape;
  auto elementType = dyn_cast<IntegerType>(value.type.getElementType());
  if (!elementType || value.type.getRank() > 1)
    return std::nullopt;
  auto dense = dyn_cast_or_null<DenseElementsAttr>(value.constant);
  if (!dense && value.tensor)
    if (auto constant = value.tensor.getDefiningOp<ConstantOp>())
      dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || dense.getNumElements() > kSmallTensorLimit)
    return std::nullopt;
  ShapeValue entries;
  for (const APInt &v : dense.getValues<APInt>())
    entries.push_back(builder.getIndexAttr(elementType.isUnsigned() || elementType.getWidth() == 1
                                               ? v.getZExtValue()
                                               : v.getSExtValue()));
  return entries;
}

Value GraphImporter::indexValue(OpFoldResult v, Location loc) {
  if (auto value = dyn_cast<Value>(v))
    return value;
  int64_t constant = *getConstantIntValue(v);
  Value &cached = indexConstants[constant];
  if (!cached) {
    // At the top of the body, where it dominates every use.
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(builder.getInsertionBlock());
    cached = arith::ConstantIndexOp::create(builder, loc, constant);
  }
  return cached;
}

IndexProduct GraphImporter::productOf(OpFoldResult v) {
  if (auto c = getConstantIntValue(v))
    return IndexProduct{*c, {}};
  Value value = cast<Value>(v);
  if (auto known = products.find(value); known != products.end())
    return known->second;
  atomOrder.try_emplace(value, atomOrder.size());
  return IndexProduct{1, {value}};
}

OpFoldResult GraphImporter::buildProduct(IndexProduct product, Location loc) {
  if (product.coefficient == 0 || product.atoms.empty())
    return builder.getIndexAttr(product.coefficient);
  llvm::sort(product.atoms, [&](Value a, Value b) { return atomOrder[a] < atomOrder[b]; });
  if (product.coefficient == 1 && product.atoms.size() == 1)
    return product.atoms.front();
  std::pair<int64_t, std::vector<unsigned>> key{product.coefficient, {}};
  for (Value atom : product.atoms)
    key.second.push_back(atomOrder[atom]);
  Value &cached = productValues[key];
  if (cached)
    return cached;
  Value result = product.atoms.front();
  for (Value atom : ArrayRef(product.atoms).drop_front())
    result = arith::MulIOp::create(builder, loc, result, atom);
  if (product.coefficient != 1)
    result = arith::MulIOp::create(builder, loc, result,
                                   indexValue(builder.getIndexAttr(product.coefficient), loc));
  products[result] = product;
  cached = result;
  return result;
}

/// Removes `divisor`'s atoms from `dividend`'s; false when one is missing.
static bool cancelAtoms(SmallVectorImpl<Value> &dividend, ArrayRef<Value> divisor) {
  for (Value atom : divisor) {
    auto match = llvm::find(dividend, atom);
    if (match == dividend.end())
      return false;
    dividend.erase(match);
  }
  return true;
}

OpFoldResult GraphImporter::indexOp(IndexOp op, OpFoldResult lhs, OpFoldResult rhs, Location loc) {
  auto a = getConstantIntValue(lhs), b = getConstantIntValue(rhs);
  // Constants fold unless the result overflows or divides by zero (a hostile
  // model's sizes): those stay run-time arithmetic, which the runtime checks.
  int64_t folded = 0;
  if (a && b) {
    bool ok = true;
    switch (op) {
    case IndexOp::Add:
      ok = !__builtin_add_overflow(*a, *b, &folded);
      break;
    case IndexOp::Sub:
      ok = !__builtin_sub_overflow(*a, *b, &folded);
      break;
    case IndexOp::Mul:
      ok = !__builtin_mul_overflow(*a, *b, &folded);
      break;
    case IndexOp::Div: // ONNX integer Div truncates, as C++ does
      ok = *b != 0 && !(*a == INT64_MIN && *b == -1);
      folded = ok ? *a / *b : 0;
      break;
    case IndexOp::Max:
      folded = std::max(*a, *b);
      break;
    case IndexOp::Min:
      folded = std::min(*a, *b);
      break;
    }
    if (ok)
      return builder.getIndexAttr(folded);
  }
  if (op == IndexOp::Mul) {
    IndexProduct x = productOf(lhs), y = productOf(rhs);
    if (!__builtin_mul_overflow(x.coefficient, y.coefficient, &x.coefficient)) {
      llvm::append_range(x.atoms, y.atoms);
      return buildProduct(std::move(x), loc);
    }
  }
  if (op == IndexOp::Div) {
    // c·X / (d·Y) is exactly (c/d)·(X/Y) when d divides c and Y's atoms are
    // among X's: both sides are the same product of the same run-time sizes.
    IndexProduct x = productOf(lhs), y = productOf(rhs);
    if (y.coefficient != 0 && !(x.coefficient == INT64_MIN && y.coefficient == -1) &&
        x.coefficient % y.coefficient == 0 && cancelAtoms(x.atoms, y.atoms)) {
      x.coefficient /= y.coefficient;
      return buildProduct(std::move(x), loc);
    }
  }
  bool lhsIs0 = a && *a == 0, rhsIs0 = b && *b == 0;
  if (op == IndexOp::Add && lhsIs0)
    return rhs;
  if (((op == IndexOp::Add || op == IndexOp::Sub) && rhsIs0) ||
      ((op == IndexOp::Max || op == IndexOp::Min) && lhs == rhs))
    return lhs;
  if (op == IndexOp::Sub && lhs == rhs)
    return builder.getIndexAttr(0);
  Value x = indexValue(lhs, loc), y = indexValue(rhs, loc);
  switch (op) {
  case IndexOp::Add:
    return arith::AddIOp::create(builder, loc, x, y).getResult();
  case IndexOp::Sub:
    return arith::SubIOp::create(builder, loc, x, y).getResult();
  case IndexOp::Mul: // only when the product's coefficient would overflow
    return arith::MulIOp::create(builder, loc, x, y).getResult();
  case IndexOp::Div:
    return arith::DivSIOp::create(builder, loc, x, y).getResult();
  case IndexOp::Max:
    return arith::MaxSIOp::create(builder, loc, x, y).getResult();
  case IndexOp::Min:
    return arith::MinSIOp::create(builder, loc, x, y).getResult();
  }
  llvm_unreachable("every IndexOp is handled above");
}

OpFoldResult GraphImporter::dim(Value tensor, int64_t d, Location loc) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(d))
    return builder.getIndexAttr(type.getDimSize(d));
  std::pair<Value, int64_t> key(tensor, d);
  if (auto cached = dimCache.find(key); cached != dimCache.end())
    return cached->second;
  OpFoldResult size;
  if (auto alias = sameSymbol.find(key); alias != sameSymbol.end())
    size = dim(alias->second.first, alias->second.second, loc);
  else
    size = deriveDim(tensor, d, loc);
  if (!size)
    size = DimOp::create(builder, loc, tensor, d).getResult();
  dimCache[key] = size;
  return size;
}

/// True if `size` is min(other, …).
static bool isMinOf(OpFoldResult size, OpFoldResult other) {
  auto sizeValue = dyn_cast<Value>(size), otherValue = dyn_cast<Value>(other);
  auto min = sizeValue ? sizeValue.getDefiningOp<arith::MinSIOp>() : arith::MinSIOp();
  return min && otherValue && (min.getLhs() == otherValue || min.getRhs() == otherValue);
}

OpFoldResult GraphImporter::knownBroadcast(OpFoldResult a, OpFoldResult b) {
  auto ca = getConstantIntValue(a), cb = getConstantIntValue(b);
  if (a == b || (cb && *cb == 1))
    return a;
  if ((ca && *ca == 1) || cb)
    return b;
  if (ca)
    return a;
  if (isMinOf(a, b))
    return b;
  if (isMinOf(b, a))
    return a;
  return {};
}

bool GraphImporter::isSize(OpFoldResult v) const {
  if (auto c = getConstantIntValue(v))
    return *c >= 0;
  Value value = cast<Value>(v);
  if (value.getDefiningOp<DimOp>())
    return true;
  auto known = products.find(value);
  return known != products.end() && known->second.coefficient >= 0 &&
         llvm::all_of(known->second.atoms, [&](Value atom) { return isSize(atom); });
}

/// The size operand of dim `d` of a reshape/expand result.
static Value sizeOperand(RankedTensorType type, ValueRange dynamicSizes, int64_t d) {
  return dynamicSizes[llvm::count_if(type.getShape().take_front(d), ShapedType::isDynamic)];
}

/// The distinct sizes that `size` is the max of (itself unless arith.maxsi).
static void collectMaxOperands(Value size, SmallVectorImpl<Value> &operands) {
  if (auto max = size.getDefiningOp<arith::MaxSIOp>()) {
    collectMaxOperands(max.getLhs(), operands);
    collectMaxOperands(max.getRhs(), operands);
  } else if (!llvm::is_contained(operands, size)) {
    operands.push_back(size);
  }
}

OpFoldResult GraphImporter::broadcastDim(ArrayRef<std::pair<Value, int64_t>> operands,
                                         int64_t resultRank, int64_t d, Location loc) {
  SmallVector<Value> dynamicSizes;
  for (auto [operand, rank] : operands) {
    int64_t operandDim = d - (resultRank - rank);
    if (operandDim < 0)
      continue;
    OpFoldResult size = dim(operand, operandDim, loc);
    if (auto c = getConstantIntValue(size)) {
      if (*c != 1)
        return size;
      continue;
    }
    if (!llvm::is_contained(dynamicSizes, cast<Value>(size)))
      dynamicSizes.push_back(cast<Value>(size));
  }
  if (dynamicSizes.empty())
    return builder.getIndexAttr(1);
  // A size that broadcasts to another one known to the importer drops out.
  for (size_t i = 0; i < dynamicSizes.size();) {
    bool absorbed = llvm::any_of(dynamicSizes, [&](Value other) {
      return other != dynamicSizes[i] && knownBroadcast(dynamicSizes[i], other) == OpFoldResult(other);
    });
    if (absorbed)
      dynamicSizes.erase(dynamicSizes.begin() + i);
    else
      ++i;
  }
  // Run-time sizes that differ broadcast: all but one of them are 1, so the
  // result is their max. Reuse a max that already covers every size.
  SmallVector<Value> all;
  for (Value size : dynamicSizes)
    collectMaxOperands(size, all);
  for (Value size : dynamicSizes) {
    SmallVector<Value> covered;
    collectMaxOperands(size, covered);
    if (covered.size() == all.size())
      return size;
  }
  OpFoldResult result = all.front();
  for (Value size : ArrayRef(all).drop_front())
    result = indexOp(IndexOp::Max, result, size, loc);
  return result;
}

OpFoldResult GraphImporter::deriveDim(Value tensor, int64_t d, Location loc) {
  Operation *def = tensor.getDefiningOp();
  if (!def)
    return {};
  auto type = cast<RankedTensorType>(tensor.getType());
  int64_t rank = type.getRank();
  auto rankOf = [](Value v) { return cast<RankedTensorType>(v.getType()).getRank(); };

  if (auto reshape = dyn_cast<ReshapeOp>(def))
    return sizeOperand(type, reshape.getDynamicDims(), d);
  if (auto expand = dyn_cast<ExpandOp>(def))
    return sizeOperand(type, expand.getDynamicDims(), d);
  if (auto transpose = dyn_cast<TransposeOp>(def))
    return dim(transpose.getInput(), transpose.getPermutation()[d], loc);
  if (auto gather = dyn_cast<GatherOp>(def)) {
    int64_t axis = gather.getAxis(), indicesRank = rankOf(gather.getIndices());
    if (d < axis)
      return dim(gather.getData(), d, loc);
    if (d < axis + indicesRank)
      return dim(gather.getIndices(), d - axis, loc);
    return dim(gather.getData(), d - indicesRank + 1, loc);
  }
  if (isa<MatMulOp, MatMulIntegerOp>(def)) {
    Value lhs = def->getOperand(0), rhs = def->getOperand(1);
    int64_t lhsRank = rankOf(lhs), rhsRank = rankOf(rhs);
    if (lhsRank < 2 || rhsRank < 2)
      return {};
    if (d == rank - 1)
      return dim(rhs, rhsRank - 1, loc);
    if (d == rank - 2)
      return dim(lhs, lhsRank - 2, loc);
    return broadcastDim({{lhs, lhsRank - 2}, {rhs, rhsRank - 2}}, rank - 2, d, loc);
  }
  if (isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, EqualOp, LessOp, GreaterOp, AndOp, OrOp,
          WhereOp>(def)) {
    SmallVector<std::pair<Value, int64_t>> operands;
    for (Value operand : def->getOperands())
      operands.emplace_back(operand, rankOf(operand));
    return broadcastDim(operands, rank, d, loc);
  }
  if (auto concat = dyn_cast<ConcatOp>(def)) {
    if (d != static_cast<int64_t>(concat.getAxis()))
      return dim(concat.getInputs().front(), d, loc);
    OpFoldResult total = builder.getIndexAttr(0);
    for (Value input : concat.getInputs())
      total = indexOp(IndexOp::Add, total, dim(input, d, loc), loc);
    return total;
  }
  if (isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp, ReduceMinOp>(def)) {
    ArrayRef<int64_t> axes = def->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    bool keepdims = def->hasAttr("keepdims");
    for (int64_t inputDim = 0, resultDim = 0; inputDim < rankOf(def->getOperand(0)); ++inputDim) {
      bool reduced = llvm::is_contained(axes, inputDim);
      if (reduced && !keepdims)
        continue;
      if (resultDim++ == d)
        return reduced ? OpFoldResult() : dim(def->getOperand(0), inputDim, loc);
    }
    return {};
  }
  if (auto slice = dyn_cast<SliceOp>(def))
    return llvm::is_contained(slice.getAxes(), d) ? OpFoldResult() : dim(slice.getInput(), d, loc);
  bool shapePreserving =
      def->hasTrait<OpTrait::SameOperandsAndResultShape>() ||
      def->hasTrait<OpTrait::SameOperandsAndResultType>() ||
      isa<LayerNormOp, AddLayerNormOp, QuantizeOp, DequantizeOp, DynamicQuantizeOp>(def);
  if (shapePreserving && def->getNumOperands() > 0 && rankOf(def->getOperand(0)) == rank)
    return dim(def->getOperand(0), d, loc);
  return {};
}
