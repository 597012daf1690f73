//===- PlanIO.cpp - Plan builder: inputs, outputs, token layouts ----------===//
//
// The Plan's inputs (dtype, dims as scalars shared by name, the token-id range
// check), its outputs (a returned value's tensor, or a copy where the value is
// an input, a constant or another output), and the padding-free token layout
// ops that read the inputs' attention mask (docs/padding-free.md).
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanWalker.h"

using namespace mlir;
using namespace octet::plan_builder;
namespace rt = octet::rt;
using octet::joinNodeNames;

LogicalResult PlanWalker::visitTokenOp(Operation *op) {
  using K = Scalar::Kind;
  if (auto pack = dyn_cast<octet::PackTokensOp>(op))
    if (Operation *sum = pack->getOperand(0).getDefiningOp())
      if (auto it = embeddingSums_.find(sum); it != embeddingSums_.end() && it->second.pack == pack)
        return buildEmbeddingSum(sum);
  FailureOr<std::vector<TensorId>> insOr = tensorOperands(op);
  if (failed(insOr))
    return failure();
  std::vector<TensorId> ins = std::move(*insOr);
  Value result = op->getResult(0);
  if (auto layout = dyn_cast<octet::TokenLayoutOp>(op)) {
    ScalarId batch = scalarFor(layout.getBatch()), seq = scalarFor(layout.getSeq());
    ScalarId size = arith(K::Add, constant(5), arith(K::Add, batch, arith(K::Mul, batch, seq)));
    FailureOr<TensorId> out = resultTensor(op, result, {size});
    if (failed(out))
      return failure();
    Scalar packed;
    packed.kind = K::PackedDim;
    packed.a = batch, packed.dim = 0;
    ScalarId packedBatch = addScalar(packed);
    packed.a = seq, packed.dim = 1;
    packedDims_[result] = {packedBatch, addScalar(packed)};
    return addStep(op, rt::recipe::TokenLayout{ins, batch, seq, *out}, "token_layout");
  }
  Value layout = op->getOperand(1);
  FailureOr<TensorId> in = ensureContiguous(op, ins[0]);
  if (failed(in))
    return failure();
  std::vector<ScalarId> shape = plan_->tensors[*in].shape;
  if (shape.size() < 2)
    return op->emitError() << "needs [batch, seq, ...] rows", failure();
  if (isa<octet::PackTokensOp>(op)) {
    auto dims = packedDims_.find(layout);
    if (dims == packedDims_.end())
      return op->emitError() << "its layout is not an octet.token_layout", failure();
    shape[0] = dims->second.first, shape[1] = dims->second.second;
  } else {
    auto unpack = cast<octet::UnpackTokensOp>(op);
    shape[0] = scalarFor(unpack.getBatch()), shape[1] = scalarFor(unpack.getSeq());
  }
  FailureOr<TensorId> out = resultTensor(op, result, shape);
  if (failed(out))
    return failure();
  if (isa<octet::PackTokensOp>(op))
    return addStep(op, rt::recipe::PackTokens{*in, ins[1], *out}, "pack_tokens");
  return addStep(op, rt::recipe::UnpackTokens{*in, ins[1], *out}, "unpack_tokens");
}

LogicalResult PlanWalker::setUpInputs() {
  Block &block = func_.front();
  std::map<std::string, std::pair<ScalarId, std::string>> namedDims; // name → (scalar, where)
  for (BlockArgument arg : block.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return func_.emitError() << "argument " << i << " is not a ranked tensor", failure();
    std::optional<DType> dtype = dtypeOf(type.getElementType());
    if (!dtype)
      return func_.emitError() << "input " << i << " has element type " << type.getElementType()
                               << ", which the FP32 runtime does not support",
             failure();
    rt::IoInfo io;
    auto name = func_.getArgAttrOfType<StringAttr>(i, octet::attr::kName);
    io.name = name ? name.getValue().str() : "input" + std::to_string(i);
    io.dtype = *dtype;
    auto dimParams = func_.getArgAttrOfType<ArrayAttr>(i, octet::attr::kDimParams);
    std::vector<ScalarId> shape;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      std::string dimName;
      if (dimParams && d < int64_t(dimParams.size()))
        if (auto s = dyn_cast<StringAttr>(dimParams[d]))
          dimName = s.getValue().str();
      io.dims.push_back(type.isDynamicDim(d) ? -1 : type.getDimSize(d));
      io.dimNames.push_back(dimName);
      if (!type.isDynamicDim(d)) {
        shape.push_back(constant(type.getDimSize(d)));
        continue;
      }
      Scalar s;
      s.kind = Scalar::Kind::InputDim;
      s.input = int32_t(i);
      s.dim = int32_t(d);
      ScalarId dim = addScalar(s);
      std::string where = "input '" + io.name + "' dim " + std::to_string(d);
      if (!dimName.empty()) {
        auto [it, inserted] = namedDims.try_emplace(dimName, dim, where);
        if (!inserted)
          dim = arith(Scalar::Kind::Equal, dim, it->second.first,
                      where + " ('" + dimName + "') must equal " + it->second.second);
      }
      shape.push_back(dim);
    }
    TensorId t = newTensor(io.name, *dtype, shape, Storage::Input, int32_t(i));
    io.tensor = t;
    tensors_[arg] = t;

    // Token ids: every use a gather on axis 0 of one constant table size.
    if (*dtype == DType::I64 || *dtype == DType::I32) {
      int64_t rows = -1;
      std::string table;
      bool all = true;
      for (Operation *user : arg.getUsers()) {
        if (isa<octet::DimOp>(user))
          continue; // reads the shape, not the values
        auto gather = dyn_cast<octet::GatherOp>(user);
        if (!gather || gather.getIndices() != arg || gather.getAxis() != 0 ||
            !gather.getData().getDefiningOp<octet::ConstantOp>()) {
          all = false;
          break;
        }
        int64_t size = gather.getData().getType().getDimSize(0);
        if (rows >= 0 && rows != size) {
          all = false;
          break;
        }
        rows = size;
        auto constantOp = gather.getData().getDefiningOp<octet::ConstantOp>();
        if (StringRef key = octet::resourceKey(constantOp.getValue()); !key.empty())
          table = key.str();
        if (table.empty())
          table = joinNodeNames(user->getLoc(), "+");
      }
      if (all && rows >= 0) {
        io.checkRange = true;
        io.rangeBegin = 0;
        io.rangeEnd = rows;
        io.rangeWhy = "it indexes the " + std::to_string(rows) + "-row table '" + table + "'";
      }
    }
    plan_->inputs.push_back(std::move(io));
  }
  return success();
}

LogicalResult PlanWalker::finishOutputs() {
  auto ret = cast<func::ReturnOp>(func_.front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto type = cast<RankedTensorType>(v.getType());
    rt::IoInfo io;
    auto name = func_.getResultAttrOfType<StringAttr>(i, octet::attr::kName);
    io.name = name ? name.getValue().str() : "output" + std::to_string(i);
    std::optional<DType> dtype = dtypeOf(type.getElementType());
    if (!dtype)
      return ret.emitError() << "output '" << io.name << "' has element type "
                             << type.getElementType() << ", unsupported by the FP32 runtime",
             failure();
    io.dtype = *dtype;
    auto dimParams = func_.getResultAttrOfType<ArrayAttr>(i, octet::attr::kDimParams);
    for (int64_t d = 0; d < type.getRank(); ++d) {
      io.dims.push_back(type.isDynamicDim(d) ? -1 : type.getDimSize(d));
      std::string dimName;
      if (dimParams && d < int64_t(dimParams.size()))
        if (auto s = dyn_cast<StringAttr>(dimParams[d]))
          dimName = s.getValue().str();
      io.dimNames.push_back(dimName);
    }
    FailureOr<TensorId> t = tensorFor(ret, v);
    if (failed(t))
      return failure();
    const rt::TensorInfo &info = plan_->tensors[*t];
    if (info.storage == Storage::Output && info.index == int32_t(i)) {
      io.tensor = *t;
    } else {
      // An input, a constant, a view or a value returned twice: copy it out.
      std::vector<ScalarId> shape = info.shape;
      TensorId out = newTensor(io.name, *dtype, shape, Storage::Output, int32_t(i));
      if (failed(addStep(ret, rt::recipe::Copy{*t, out}, "copy")))
        return failure();
      plan_->steps.back()->location = io.name;
      io.tensor = out;
    }
    plan_->outputs.push_back(std::move(io));
  }
  return success();
}
