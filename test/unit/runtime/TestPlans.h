//===- TestPlans.h - hand-built Plans and tiny steps for runtime tests ----===//
//
// The executor and C API tests do not depend on the generic or kernel steps:
// they use the small steps below, which read any strided f32 view.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_TEST_UNIT_RUNTIME_TESTPLANS_H
#define OCTET_TEST_UNIT_RUNTIME_TESTPLANS_H

#include "runtime/Executor.h"
#include "runtime/Plan.h"

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace octet::rt::test {

/// Visits every element of tensor `t` in row-major order with its element offset.
inline void forEachElement(const ExecContext &ctx, TensorId t,
                           const std::function<void(int64_t flat, int64_t offset)> &visit) {
  std::vector<int64_t> dims = ctx.shape(t), strides = ctx.strides(t);
  int64_t count = ctx.numElements(t);
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t offset = 0;
    for (size_t d = 0; d < dims.size(); ++d)
      offset += index[d] * strides[d];
    visit(n, offset);
    for (size_t d = dims.size(); d-- > 0;)
      if (++index[d] < dims[d])
        break;
      else
        index[d] = 0;
  }
}

/// out = in + addend (f32; `in` any view, out contiguous with in's element count).
class AddConstantStep : public Step {
public:
  explicit AddConstantStep(float addend) : addend_(addend) {}
  std::string kind() const override { return "test.add_constant"; }
  Status run(const ExecContext &ctx) const override {
    if (ctx.numElements(inputs[0]) != ctx.numElements(outputs[0]))
      return Status::error("element counts differ");
    const float *in = ctx.data<float>(inputs[0]);
    float *out = ctx.data<float>(outputs[0]);
    forEachElement(ctx, inputs[0],
                   [&](int64_t flat, int64_t offset) { out[flat] = in[offset] + addend_; });
    return Status();
  }

private:
  float addend_;
};

/// out = a + float(ids) elementwise (a: f32, ids: i64, same element count).
class AddIdsStep : public Step {
public:
  std::string kind() const override { return "test.add_ids"; }
  Status run(const ExecContext &ctx) const override {
    const float *a = ctx.data<float>(inputs[0]);
    const int64_t *ids = ctx.data<int64_t>(inputs[1]);
    float *out = ctx.data<float>(outputs[0]);
    for (int64_t i = 0, n = ctx.numElements(outputs[0]); i < n; ++i)
      out[i] = a[i] + float(ids[i]);
    return Status();
  }
};

class FailStep : public Step {
public:
  std::string kind() const override { return "test.fail"; }
  Status run(const ExecContext &) const override { return Status::error("boom"); }
};

class ThrowStep : public Step {
public:
  std::string kind() const override { return "test.throw"; }
  Status run(const ExecContext &) const override { throw std::runtime_error("thrown inside"); }
};

/// Copies the run's scalars and tensor addresses out (single-threaded tests only).
class RecordStep : public Step {
public:
  RecordStep(std::vector<int64_t> *scalars, std::vector<void *> *addresses)
      : scalars_(scalars), addresses_(addresses) {}
  std::string kind() const override { return "test.record"; }
  Status run(const ExecContext &ctx) const override {
    if (scalars_)
      *scalars_ = ctx.scalars_;
    if (addresses_)
      *addresses_ = ctx.addresses_;
    return Status();
  }

private:
  std::vector<int64_t> *scalars_;
  std::vector<void *> *addresses_;
};

/// Builds Plans tersely.
struct PlanBuilder {
  std::unique_ptr<Plan> plan = std::make_unique<Plan>();

  ScalarId add(Scalar s) {
    plan->scalars.push_back(std::move(s));
    return ScalarId(plan->scalars.size() - 1);
  }
  ScalarId constant(int64_t value) {
    Scalar s;
    s.kind = Scalar::Kind::Constant;
    s.value = value;
    return add(s);
  }
  ScalarId inputDim(int input, int dim) {
    Scalar s;
    s.kind = Scalar::Kind::InputDim;
    s.input = input;
    s.dim = dim;
    return add(s);
  }
  ScalarId op(Scalar::Kind kind, ScalarId a, ScalarId b, std::string what = "") {
    Scalar s;
    s.kind = kind;
    s.a = a;
    s.b = b;
    s.what = std::move(what);
    return add(s);
  }
  ScalarId cmp(Scalar::Predicate predicate, ScalarId a, ScalarId b) {
    Scalar s;
    s.kind = Scalar::Kind::Cmp;
    s.predicate = predicate;
    s.a = a;
    s.b = b;
    return add(s);
  }
  ScalarId select(ScalarId a, ScalarId b, ScalarId c) {
    Scalar s;
    s.kind = Scalar::Kind::Select;
    s.a = a;
    s.b = b;
    s.c = c;
    return add(s);
  }

  TensorId tensor(std::string name, DType dtype, std::vector<ScalarId> shape, Storage storage,
                  int32_t index = -1) {
    TensorInfo t;
    t.name = std::move(name);
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.storage = storage;
    t.index = index;
    plan->tensors.push_back(std::move(t));
    return TensorId(plan->tensors.size() - 1);
  }
  TensorId view(std::string name, TensorId base, std::vector<ScalarId> shape, ScalarId offset,
                std::vector<ScalarId> strides = {}) {
    TensorId t =
        tensor(std::move(name), plan->tensors[base].dtype, std::move(shape), Storage::View, base);
    plan->tensors[t].viewOffset = offset;
    plan->tensors[t].viewStrides = std::move(strides);
    return t;
  }
  /// An input tensor and its IoInfo; dims -1 where `names` gives a symbol.
  TensorId input(std::string name, DType dtype, std::vector<int64_t> dims,
                 std::vector<std::string> names = {}) {
    int index = int(plan->inputs.size());
    std::vector<ScalarId> shape;
    for (size_t d = 0; d < dims.size(); ++d)
      shape.push_back(dims[d] >= 0 ? constant(dims[d]) : inputDim(index, int(d)));
    TensorId t = tensor(name, dtype, shape, Storage::Input, index);
    IoInfo io;
    io.name = std::move(name);
    io.dtype = dtype;
    io.dims = std::move(dims);
    io.dimNames = std::move(names);
    io.dimNames.resize(io.dims.size());
    io.tensor = t;
    plan->inputs.push_back(std::move(io));
    return t;
  }
  TensorId output(std::string name, DType dtype, std::vector<ScalarId> shape,
                  std::vector<std::string> names = {}) {
    int index = int(plan->outputs.size());
    TensorId t = tensor(name, dtype, shape, Storage::Output, index);
    bindOutput(std::move(name), t, std::move(names));
    return t;
  }
  /// Lists tensor `t` (of any storage) as the next output.
  void bindOutput(std::string name, TensorId t, std::vector<std::string> names = {}) {
    IoInfo io;
    io.name = std::move(name);
    io.dtype = plan->tensors[t].dtype;
    for (ScalarId id : plan->tensors[t].shape) {
      const Scalar &s = plan->scalars[id];
      io.dims.push_back(s.kind == Scalar::Kind::Constant ? s.value : -1);
    }
    io.dimNames = std::move(names);
    io.dimNames.resize(io.dims.size());
    io.tensor = t;
    plan->outputs.push_back(std::move(io));
  }
  /// An arena slot of `bytes` (a scalar) bytes.
  int32_t slot(ScalarId bytes) {
    plan->arenaSlots.push_back(bytes);
    return int32_t(plan->arenaSlots.size() - 1);
  }
  template <typename StepT>
  StepT &step(std::unique_ptr<StepT> step, std::vector<TensorId> ins, std::vector<TensorId> outs,
              std::string location = "") {
    step->inputs = std::move(ins);
    step->outputs = std::move(outs);
    step->location = location.empty() ? "node" + std::to_string(plan->steps.size()) : location;
    StepT &ref = *step;
    plan->steps.push_back(std::move(step));
    return ref;
  }
};

/// A RunTensor over caller data.
template <typename T>
RunTensor tensorOf(std::vector<T> &values, DType dtype, std::vector<int64_t> dims) {
  RunTensor t;
  t.data = values.data();
  t.bytes = values.size() * sizeof(T);
  t.dtype = dtype;
  t.rank = int32_t(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    t.dims[i] = dims[i];
  return t;
}

/// y = x + 2 + float(ids): x f32 [batch, sequence], ids i64 [batch, sequence] in
/// [0, 10); the intermediate x + 1 lives in the arena. Output y [batch, sequence].
inline std::unique_ptr<Plan> makeAddModel() {
  PlanBuilder b;
  TensorId x = b.input("x", DType::F32, {-1, -1}, {"batch", "sequence"});
  TensorId ids = b.input("ids", DType::I64, {-1, -1}, {"batch", "sequence"});
  b.plan->inputs[1].checkRange = true;
  b.plan->inputs[1].rangeBegin = 0;
  b.plan->inputs[1].rangeEnd = 10;
  b.plan->inputs[1].rangeWhy = "rows of the test table";
  ScalarId batch = b.plan->tensors[x].shape[0], sequence = b.plan->tensors[x].shape[1];
  ScalarId count = b.op(Scalar::Kind::Mul, batch, sequence);
  ScalarId bytes = b.op(Scalar::Kind::Mul, count, b.constant(4));
  TensorId tmp = b.tensor("x_plus_1", DType::F32, {batch, sequence}, Storage::Arena, b.slot(bytes));
  TensorId tmp2 =
      b.tensor("x_plus_2", DType::F32, {batch, sequence}, Storage::Arena, b.slot(bytes));
  TensorId y = b.output("y", DType::F32, {batch, sequence}, {"batch", "sequence"});
  b.step(std::make_unique<AddConstantStep>(1.0f), {x}, {tmp}, "add_one");
  b.step(std::make_unique<AddConstantStep>(1.0f), {tmp}, {tmp2}, "add_two");
  b.step(std::make_unique<AddIdsStep>(), {tmp2, ids}, {y}, "add_ids");
  return std::move(b.plan);
}

} // namespace octet::rt::test

#endif
