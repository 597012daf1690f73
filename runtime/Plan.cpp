//===- Plan.cpp - dtypes, the Plan listing, ExecContext shapes ------------===//
#include "runtime/Plan.h"

#include <atomic>
#include <sstream>

namespace octet::rt {

size_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return 1;
  case DType::I16:
  case DType::U16:
  case DType::F16:
    return 2;
  case DType::U32:
    return 4;
  case DType::U64:
    return 8;
  }
  return 0;
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I8:
    return "i8";
  case DType::U8:
    return "u8";
  case DType::Bool:
    return "bool";
  case DType::I16:
    return "i16";
  case DType::U16:
    return "u16";
  case DType::U32:
    return "u32";
  case DType::U64:
    return "u64";
  case DType::F16:
    return "f16";
  }
  return "?";
}

uint64_t newPlanSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

namespace {

const char *storageName(Storage storage) {
  switch (storage) {
  case Storage::Input:
    return "input";
  case Storage::Output:
    return "output";
  case Storage::Constant:
    return "constant";
  case Storage::Arena:
    return "arena";
  case Storage::View:
    return "view";
  }
  return "?";
}

const char *predicateName(Scalar::Predicate predicate) {
  switch (predicate) {
  case Scalar::Predicate::Eq:
    return "eq";
  case Scalar::Predicate::Ne:
    return "ne";
  case Scalar::Predicate::Lt:
    return "lt";
  case Scalar::Predicate::Le:
    return "le";
  case Scalar::Predicate::Gt:
    return "gt";
  case Scalar::Predicate::Ge:
    return "ge";
  }
  return "?";
}

/// A scalar as an operand: its value when it is a constant, else "sN".
std::string scalarRef(const Plan &plan, ScalarId id) {
  if (id >= 0 && size_t(id) < plan.scalars.size() &&
      plan.scalars[id].kind == Scalar::Kind::Constant)
    return std::to_string(plan.scalars[id].value);
  return "s" + std::to_string(id);
}

std::string scalarList(const Plan &plan, const std::vector<ScalarId> &ids) {
  std::string text = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    text += (i ? ", " : "") + scalarRef(plan, ids[i]);
  return text + "]";
}

std::string tensorList(const std::vector<TensorId> &ids) {
  std::string text = "(";
  for (size_t i = 0; i < ids.size(); ++i)
    text += (i ? ", t" : "t") + std::to_string(ids[i]);
  return text + ")";
}

void describeScalar(std::ostream &os, const Plan &plan, const Scalar &s) {
  auto a = scalarRef(plan, s.a), b = scalarRef(plan, s.b), c = scalarRef(plan, s.c);
  switch (s.kind) {
  case Scalar::Kind::Constant:
    os << s.value;
    break;
  case Scalar::Kind::InputDim:
    os << "input" << s.input << ".dim" << s.dim;
    break;
  case Scalar::Kind::InputElement:
    os << "input" << s.input << "[" << s.dim << "]";
    break;
  case Scalar::Kind::Add:
    os << a << " + " << b;
    break;
  case Scalar::Kind::Sub:
    os << a << " - " << b;
    break;
  case Scalar::Kind::Mul:
    os << a << " * " << b;
    break;
  case Scalar::Kind::DivS:
    os << a << " / " << b;
    break;
  case Scalar::Kind::FloorDivS:
    os << "floordiv(" << a << ", " << b << ")";
    break;
  case Scalar::Kind::CeilDivS:
    os << "ceildiv(" << a << ", " << b << ")";
    break;
  case Scalar::Kind::RemS:
    os << a << " % " << b;
    break;
  case Scalar::Kind::MinS:
    os << "min(" << a << ", " << b << ")";
    break;
  case Scalar::Kind::MaxS:
    os << "max(" << a << ", " << b << ")";
    break;
  case Scalar::Kind::Cmp:
    os << "cmp." << predicateName(s.predicate) << "(" << a << ", " << b << ")";
    break;
  case Scalar::Kind::Select:
    os << "select(" << a << ", " << b << ", " << c << ")";
    break;
  case Scalar::Kind::Broadcast:
    os << "broadcast(" << a << ", " << b << ")";
    break;
  case Scalar::Kind::Equal:
    os << "equal(" << a << ", " << b << ")";
    break;
  case Scalar::Kind::PackedDim: // `a` until the token layout packs the batch
    os << "packed.dim" << s.dim << "(" << a << ")";
    break;
  }
  if (!s.what.empty())
    os << "  // " << s.what;
}

void describeIo(std::ostream &os, const Plan &plan, const IoInfo &io, size_t index) {
  os << "  " << index << " '" << io.name << "' " << dtypeName(io.dtype) << " [";
  for (size_t d = 0; d < io.dims.size(); ++d) {
    os << (d ? ", " : "");
    bool named = d < io.dimNames.size() && !io.dimNames[d].empty();
    if (io.dims[d] >= 0)
      os << io.dims[d];
    else
      os << (named ? io.dimNames[d] : std::string("?"));
  }
  os << "] -> t" << io.tensor;
  if (io.checkRange)
    os << "  range [" << io.rangeBegin << ", " << io.rangeEnd << ") " << io.rangeWhy;
  os << "\n";
}

} // namespace

std::string Plan::describe() const {
  std::ostringstream os;
  os << "plan: " << scalars.size() << " scalars, " << tensors.size() << " tensors, "
     << arenaSlots.size() << " arena slots, " << steps.size() << " steps\n";
  os << "inputs:\n";
  for (size_t i = 0; i < inputs.size(); ++i)
    describeIo(os, *this, inputs[i], i);
  os << "outputs:\n";
  for (size_t i = 0; i < outputs.size(); ++i)
    describeIo(os, *this, outputs[i], i);
  os << "scalars:\n";
  for (size_t i = 0; i < scalars.size(); ++i) {
    os << "  s" << i << " = ";
    describeScalar(os, *this, scalars[i]);
    os << "\n";
  }
  os << "tensors:\n";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo &t = tensors[i];
    os << "  t" << i << " '" << t.name << "' " << dtypeName(t.dtype) << " "
       << scalarList(*this, t.shape) << " " << storageName(t.storage);
    switch (t.storage) {
    case Storage::Input:
    case Storage::Output:
      os << " " << t.index;
      break;
    case Storage::Arena:
      os << " slot " << t.index;
      break;
    case Storage::View:
      os << " of t" << t.index << " offset " << scalarRef(*this, t.viewOffset);
      if (!t.viewStrides.empty())
        os << " strides " << scalarList(*this, t.viewStrides);
      break;
    case Storage::Constant:
      break;
    }
    os << "\n";
  }
  os << "arena:\n";
  for (size_t i = 0; i < arenaSlots.size(); ++i)
    os << "  slot " << i << ": " << scalarRef(*this, arenaSlots[i]) << " bytes\n";
  os << "steps:\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step &step = *steps[i];
    os << "  " << i << " " << step.kind();
    if (!step.location.empty())
      os << " @ " << step.location;
    os << ": " << tensorList(step.inputs) << " -> " << tensorList(step.outputs) << "\n";
  }
  return os.str();
}

Work Step::work(const ExecContext &ctx) const {
  Work w;
  auto bytesOf = [&](TensorId t) { return double(ctx.numElements(t)) * dtypeBytes(ctx.dtype(t)); };
  for (TensorId t : inputs) {
    w.bytes += bytesOf(t);
    w.shapes += (w.shapes.empty() ? "" : " ") + shapeString(ctx.shape(t));
  }
  w.shapes += " ->";
  for (TensorId t : outputs) {
    w.bytes += bytesOf(t);
    w.ops += double(ctx.numElements(t));
    w.shapes += " " + shapeString(ctx.shape(t));
  }
  return w;
}

std::string StepWhere::str() const {
  return step_.kind() + (step_.location.empty() ? "" : " (" + step_.location + ")");
}

std::vector<int64_t> ExecContext::shape(TensorId t) const {
  const auto &ids = plan_.tensors[t].shape;
  std::vector<int64_t> dims(ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    dims[i] = scalars_[ids[i]];
  return dims;
}

int64_t ExecContext::numElements(TensorId t) const {
  int64_t count = 1;
  for (ScalarId id : plan_.tensors[t].shape)
    count *= scalars_[id];
  return count;
}

std::vector<int64_t> ExecContext::strides(TensorId t) const {
  const TensorInfo &info = plan_.tensors[t];
  std::vector<int64_t> result(info.shape.size());
  if (info.storage == Storage::View && !info.viewStrides.empty()) {
    for (size_t i = 0; i < result.size(); ++i)
      result[i] = scalars_[info.viewStrides[i]];
    return result;
  }
  int64_t stride = 1;
  for (size_t i = result.size(); i-- > 0;) {
    result[i] = stride;
    stride *= scalars_[info.shape[i]];
  }
  return result;
}

bool ExecContext::isContiguous(TensorId t) const {
  const TensorInfo &info = plan_.tensors[t];
  if (info.storage != Storage::View || info.viewStrides.empty())
    return true;
  // Row-major strides; a dim of size 1 may have any stride (it is never stepped).
  int64_t expected = 1;
  for (size_t i = info.shape.size(); i-- > 0;) {
    int64_t size = scalars_[info.shape[i]];
    if (size == 0)
      return true;
    if (size != 1 && scalars_[info.viewStrides[i]] != expected)
      return false;
    expected *= size;
  }
  return true;
}

} // namespace octet::rt
