//===- PlanTestUtil.h - hand-bound Plans for step tests ---------*- C++ -*-===//
//
// The step tests run one step on a Plan built by hand, without the executor:
// every scalar is a constant and every tensor is bound to the test's own
// memory, so the ExecContext is filled directly from the values kept here.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_TEST_UNIT_PLANTESTUTIL_H
#define OCTET_TEST_UNIT_PLANTESTUTIL_H

#include "runtime/Plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace octet::rt::test {

/// A Plan under construction, with each scalar's value and tensor's address alongside.
struct BoundPlan {
  Plan plan;
  std::vector<int64_t> scalarValues;
  std::vector<void *> addresses;

  ScalarId constant(int64_t value) {
    Scalar s;
    s.kind = Scalar::Kind::Constant;
    s.value = value;
    plan.scalars.push_back(s);
    scalarValues.push_back(value);
    return ScalarId(plan.scalars.size() - 1);
  }

  /// A tensor of constant `shape` whose elements start at `data`.
  TensorId tensor(std::string name, const std::vector<int64_t> &shape, void *data,
                  Storage storage = Storage::Input, DType dtype = DType::F32, int32_t index = 0) {
    TensorInfo t;
    t.name = std::move(name);
    t.dtype = dtype;
    for (int64_t d : shape)
      t.shape.push_back(constant(d));
    t.storage = storage;
    t.index = index;
    plan.tensors.push_back(std::move(t));
    addresses.push_back(data);
    return TensorId(plan.tensors.size() - 1);
  }

  /// A view of `base` with element `strides`, `offset` elements in; `data` is its first element.
  TensorId view(std::string name, TensorId base, const std::vector<int64_t> &shape,
                const std::vector<int64_t> &strides, int64_t offset, void *data) {
    TensorId t =
        tensor(std::move(name), shape, data, Storage::View, plan.tensors[base].dtype, base);
    plan.tensors[t].viewOffset = constant(offset);
    for (int64_t s : strides)
      plan.tensors[t].viewStrides.push_back(constant(s));
    return t;
  }

  ExecContext context() const {
    ExecContext ctx(plan);
    ctx.scalars_ = scalarValues;
    ctx.addresses_ = addresses;
    return ctx;
  }

  Status run(const Step &step) const {
    ExecContext ctx = context();
    return step.run(ctx);
  }
};

} // namespace octet::rt::test

#endif
