//===- ExecutorTest.cpp - Plan, scalars, arena, views, validation, outputs ===//
#include "TestPlans.h"
#include "compiler/codegen/HugePages.h"
#include "test/unit/HugePageProbe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <numeric>
#include <thread>

using namespace octet::rt;
using namespace octet::rt::test;
using ::testing::HasSubstr;

namespace {

using Kind = Scalar::Kind;
using Pred = Scalar::Predicate;

std::vector<float> iota(size_t n, float start = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

/// Frees runtime-owned outputs at scope exit.
struct Outputs {
  std::vector<RunTensor> tensors;
  explicit Outputs(size_t n) : tensors(n) {}
  ~Outputs() {
    for (RunTensor &t : tensors)
      if (t.allocated)
        std::free(t.data);
  }
  RunTensor &operator[](size_t i) { return tensors[i]; }
};

// ---- dtypes, describe, ExecContext ------------------------------------------------

TEST(Plan, DTypes) {
  EXPECT_EQ(dtypeBytes(DType::F32), 4u);
  EXPECT_EQ(dtypeBytes(DType::F64), 8u);
  EXPECT_EQ(dtypeBytes(DType::I64), 8u);
  EXPECT_EQ(dtypeBytes(DType::I32), 4u);
  EXPECT_EQ(dtypeBytes(DType::I8), 1u);
  EXPECT_EQ(dtypeBytes(DType::U8), 1u);
  EXPECT_EQ(dtypeBytes(DType::Bool), 1u);
  EXPECT_STREQ(dtypeName(DType::F32), "f32");
  EXPECT_STREQ(dtypeName(DType::I64), "i64");
  EXPECT_STREQ(dtypeName(DType::Bool), "bool");
}

TEST(Plan, DescribeListsEverything) {
  auto plan = makeAddModel();
  std::string text = plan->describe();
  EXPECT_THAT(text, HasSubstr("0 'x' f32 [batch, sequence] -> t0"));
  EXPECT_THAT(text, HasSubstr("range [0, 10) rows of the test table"));
  EXPECT_THAT(text, HasSubstr("s0 = input0.dim0"));
  EXPECT_THAT(text, HasSubstr("= s0 * s1"));
  EXPECT_THAT(text, HasSubstr("'x_plus_1' f32 [s0, s1] arena slot 0"));
  EXPECT_THAT(text, HasSubstr("'y' f32 [s0, s1] output 0"));
  EXPECT_THAT(text, HasSubstr("slot 1: s"));
  EXPECT_THAT(text, HasSubstr("0 test.add_constant @ add_one: (t0) -> (t2)"));
  EXPECT_THAT(text, HasSubstr("2 test.add_ids @ add_ids: (t3, t1) -> (t4)"));

  PlanBuilder b;
  TensorId x = b.input("x", DType::F32, {2, 3});
  b.view("xt", x, {b.constant(3), b.constant(2)}, b.constant(0), {b.constant(1), b.constant(3)});
  b.op(Kind::Broadcast, 2, 3, "Add_7 operands");
  b.cmp(Pred::Le, 0, 1);
  EXPECT_THAT(b.plan->describe(), HasSubstr("view of t0 offset 0 strides [1, 3]"));
  EXPECT_THAT(b.plan->describe(), HasSubstr("s7 = broadcast(1, 3)  // Add_7 operands"));
  EXPECT_THAT(b.plan->describe(), HasSubstr("s8 = cmp.le(2, 3)"));
  Scalar packed;
  packed.kind = Kind::PackedDim, packed.a = 1, packed.dim = 1;
  b.plan->scalars.push_back(packed);
  EXPECT_THAT(b.plan->describe(), HasSubstr("s9 = packed.dim1(3)"));
}

TEST(Plan, ExecContextShapesAndStrides) {
  PlanBuilder b;
  ScalarId two = b.constant(2), three = b.constant(3), one = b.constant(1), zero = b.constant(0);
  TensorId dense = b.tensor("dense", DType::F32, {two, three}, Storage::Arena, 0);
  TensorId transposed = b.view("t", dense, {three, two}, zero, {one, three});
  TensorId contiguousView = b.view("r", dense, {three, two}, zero);
  TensorId unitDim = b.view("u", dense, {one, three}, zero, {zero, one}); // a dim of 1: any stride
  ExecContext ctx(*b.plan);
  for (const Scalar &s : b.plan->scalars)
    ctx.scalars_.push_back(s.value);
  EXPECT_EQ(ctx.shape(dense), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ctx.numElements(dense), 6);
  EXPECT_EQ(ctx.strides(dense), (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(ctx.isContiguous(dense));
  EXPECT_EQ(ctx.strides(transposed), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(ctx.isContiguous(transposed));
  EXPECT_EQ(ctx.strides(contiguousView), (std::vector<int64_t>{2, 1}));
  EXPECT_TRUE(ctx.isContiguous(contiguousView));
  EXPECT_TRUE(ctx.isContiguous(unitDim));
  EXPECT_EQ(ctx.rank(transposed), 2);
  EXPECT_EQ(ctx.dim(transposed, 0), 3);
}

// ---- Scalars ----------------------------------------------------------------------

/// A plan whose one input is x f32 [a, b] (both symbolic) and that records its scalars.
struct ScalarPlan {
  PlanBuilder b;
  ScalarId a, bDim;
  std::vector<int64_t> values;
  ScalarPlan() {
    TensorId x = b.input("x", DType::F32, {-1, -1}, {"a", "b"});
    a = b.plan->tensors[x].shape[0];
    bDim = b.plan->tensors[x].shape[1];
  }
  Status run(int64_t aValue, int64_t bValue) {
    if (b.plan->steps.empty())
      b.step(std::make_unique<RecordStep>(&values, nullptr), {}, {});
    std::vector<float> data(size_t(aValue * bValue));
    std::vector<RunTensor> inputs{tensorOf(data, DType::F32, {aValue, bValue})};
    std::vector<RunTensor> outputs;
    EXPECT_TRUE(validatePlan(*b.plan).ok()) << validatePlan(*b.plan).message();
    return execute(*b.plan, inputs, outputs);
  }
};

TEST(Scalars, EveryKind) {
  ScalarPlan p;
  auto &b = p.b;
  ScalarId seven = b.constant(7), minus7 = b.constant(-7), two = b.constant(2),
           minus2 = b.constant(-2), one = b.constant(1);
  struct Expect {
    ScalarId id;
    int64_t value;
  };
  std::vector<Expect> expected = {
      {seven, 7},
      {p.a, 5},
      {p.bDim, 1},
      {b.op(Kind::Add, p.a, seven), 12},
      {b.op(Kind::Sub, p.a, seven), -2},
      {b.op(Kind::Mul, p.a, minus2), -10},
      {b.op(Kind::DivS, minus7, two), -3},
      {b.op(Kind::DivS, seven, minus2), -3},
      {b.op(Kind::FloorDivS, minus7, two), -4},
      {b.op(Kind::FloorDivS, seven, two), 3},
      {b.op(Kind::FloorDivS, seven, minus2), -4},
      {b.op(Kind::CeilDivS, seven, two), 4},
      {b.op(Kind::CeilDivS, minus7, two), -3},
      {b.op(Kind::CeilDivS, minus7, minus2), 4},
      {b.op(Kind::RemS, minus7, two), -1},
      {b.op(Kind::RemS, seven, minus2), 1},
      {b.op(Kind::MinS, p.a, seven), 5},
      {b.op(Kind::MaxS, p.a, seven), 7},
      {b.cmp(Pred::Eq, p.a, p.a), 1},
      {b.cmp(Pred::Ne, p.a, p.a), 0},
      {b.cmp(Pred::Lt, p.a, seven), 1},
      {b.cmp(Pred::Le, seven, p.a), 0},
      {b.cmp(Pred::Gt, seven, p.a), 1},
      {b.cmp(Pred::Ge, p.a, p.a), 1},
      {b.select(one, p.a, seven), 5},
      {b.select(b.constant(0), p.a, seven), 7},
      {b.op(Kind::Broadcast, p.a, p.bDim), 5},
      {b.op(Kind::Broadcast, p.bDim, p.a), 5},
      {b.op(Kind::Broadcast, p.a, p.a), 5},
      {b.op(Kind::Equal, p.a, p.a), 5},
  };
  Status status = p.run(5, 1);
  ASSERT_TRUE(status.ok()) << status.message();
  for (const Expect &e : expected)
    EXPECT_EQ(p.values[e.id], e.value) << "s" << e.id << " = " << b.plan->describe();
}

TEST(Scalars, BroadcastMismatchNamesWhat) {
  ScalarPlan p;
  p.b.op(Kind::Broadcast, p.a, p.bDim, "Add_3 (x + bias) broadcast");
  EXPECT_TRUE(p.run(3, 3).ok());
  EXPECT_TRUE(p.run(1, 4).ok());
  Status status = p.run(3, 4);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              HasSubstr("Add_3 (x + bias) broadcast: sizes 3 and 4 do not broadcast"));
}

TEST(Scalars, EqualMismatchNamesWhat) {
  ScalarPlan p;
  p.b.op(Kind::Equal, p.a, p.bDim, "MatMul_9 inner dims");
  EXPECT_TRUE(p.run(6, 6).ok());
  RunError error = RunError::None;
  std::vector<float> data(12);
  std::vector<RunTensor> inputs{tensorOf(data, DType::F32, {3, 4})}, outputs;
  Status status = execute(*p.b.plan, inputs, outputs, &error);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(error, RunError::InvalidInput);
  EXPECT_THAT(status.message(), HasSubstr("MatMul_9 inner dims: 3 and 4 must be equal"));
}

TEST(Scalars, DivisionByZero) {
  for (Kind kind : {Kind::DivS, Kind::FloorDivS, Kind::CeilDivS, Kind::RemS}) {
    ScalarPlan p;
    ScalarId denominator = p.b.op(Kind::Sub, p.bDim, p.b.constant(1));
    p.b.op(kind, p.a, denominator, "Reshape_4 (-1 dim)");
    EXPECT_TRUE(p.run(6, 3).ok());
    Status status = p.run(6, 1);
    ASSERT_FALSE(status.ok());
    EXPECT_THAT(status.message(), HasSubstr("Reshape_4 (-1 dim): division by zero"));
  }
  // Without `what`, the scalar is named.
  ScalarPlan p;
  p.b.op(Kind::DivS, p.a, p.b.op(Kind::Sub, p.bDim, p.bDim));
  Status status = p.run(2, 2);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("scalar s3: division by zero"));
}

TEST(Scalars, Overflow) {
  ScalarPlan p;
  ScalarId big = p.b.constant(int64_t(1) << 62);
  p.b.op(Kind::Mul, big, p.a, "size of t9");
  EXPECT_TRUE(p.run(1, 1).ok());
  Status status = p.run(4, 1);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("size of t9: integer overflow"));

  ScalarPlan q;
  q.b.op(Kind::DivS, q.b.constant(std::numeric_limits<int64_t>::min()), q.b.constant(-1));
  EXPECT_THAT(q.run(1, 1).message(), HasSubstr("integer overflow"));
}

/// A plan whose output is [repeats[1]] (element 1 of an integer input read as a size).
struct InputElementPlan {
  PlanBuilder b;
  ScalarId size;
  explicit InputElementPlan(DType dtype) {
    b.input("repeats", dtype, {2});
    Scalar s;
    s.kind = Kind::InputElement;
    s.input = 0;
    s.dim = 1;
    s.what = "Tile_2 repeats";
    size = b.add(s);
    b.output("y", DType::F32, {size});
  }
  template <class T> Status run(std::vector<T> repeats, DType dtype, int64_t &dim) {
    std::vector<RunTensor> inputs{tensorOf(repeats, dtype, {2})};
    Outputs outputs(1);
    Status status = execute(*b.plan, inputs, outputs.tensors);
    dim = outputs[0].dims[0];
    return status;
  }
};

TEST(Scalars, InputElementIsASizeReadBeforeAnyStep) {
  int64_t dim = -1;
  InputElementPlan p64(DType::I64);
  Status status = p64.run(std::vector<int64_t>{3, 7}, DType::I64, dim);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(dim, 7);
  EXPECT_THAT(p64.b.plan->describe(), HasSubstr("input0[1]  // Tile_2 repeats"));
  ASSERT_TRUE(p64.run(std::vector<int64_t>{3, 0}, DType::I64, dim).ok());
  EXPECT_EQ(dim, 0);
  EXPECT_THAT(p64.run(std::vector<int64_t>{3, -2}, DType::I64, dim).message(),
              HasSubstr("Tile_2 repeats: element 1 of input 'repeats' is -2, not a size in "
                        "[0, 2147483647]"));
  EXPECT_THAT(p64.run(std::vector<int64_t>{3, int64_t(1) << 40}, DType::I64, dim).message(),
              HasSubstr("is 1099511627776, not a size"));
  InputElementPlan p32(DType::I32);
  ASSERT_TRUE(p32.run(std::vector<int32_t>{1, 5}, DType::I32, dim).ok());
  EXPECT_EQ(dim, 5);
  InputElementPlan p8(DType::U8);
  ASSERT_TRUE(p8.run(std::vector<uint8_t>{1, 200}, DType::U8, dim).ok());
  EXPECT_EQ(dim, 200);
}

TEST(Scalars, InputElementOfAMatrixIsAMalformedPlan) {
  PlanBuilder b;
  b.input("m", DType::I64, {2, 2});
  Scalar s;
  s.kind = Kind::InputElement;
  s.input = 0;
  s.dim = 0;
  ScalarId size = b.add(s);
  b.output("y", DType::F32, {size});
  EXPECT_THAT(validatePlan(*b.plan).message(),
              HasSubstr("reads element 0 of input 0, which is not a 0-D or 1-D input"));
}

// ---- Arena and views ---------------------------------------------------------------
// ---- Arena and views ---------------------------------------------------------------

TEST(Arena, TwoTensorsShareASlotAndSizesVaryPerRun) {
  // in -> a (slot 0) -> c (slot 1) -> b (slot 0, a is dead) -> out: out = in + 4.
  PlanBuilder b;
  TensorId in = b.input("in", DType::F32, {-1}, {"n"});
  ScalarId n = b.plan->tensors[in].shape[0];
  ScalarId bytes = b.op(Kind::Mul, n, b.constant(4));
  int32_t slot0 = b.slot(bytes), slot1 = b.slot(bytes);
  TensorId ta = b.tensor("a", DType::F32, {n}, Storage::Arena, slot0);
  TensorId tc = b.tensor("c", DType::F32, {n}, Storage::Arena, slot1);
  TensorId tb = b.tensor("b", DType::F32, {n}, Storage::Arena, slot0);
  TensorId out = b.output("out", DType::F32, {n});
  std::vector<void *> addresses;
  b.step(std::make_unique<AddConstantStep>(1.0f), {in}, {ta});
  b.step(std::make_unique<AddConstantStep>(1.0f), {ta}, {tc});
  b.step(std::make_unique<AddConstantStep>(1.0f), {tc}, {tb});
  b.step(std::make_unique<RecordStep>(nullptr, &addresses), {}, {});
  b.step(std::make_unique<AddConstantStep>(1.0f), {tb}, {out});
  ASSERT_TRUE(validatePlan(*b.plan).ok());

  for (int64_t size : {5, 1000, 3, 0, 17, 4097}) {
    std::vector<float> x = iota(size_t(size), -2.5f);
    std::vector<float> y(size_t(size), -1);
    std::vector<RunTensor> inputs{tensorOf(x, DType::F32, {size})};
    std::vector<RunTensor> outputs{tensorOf(y, DType::F32, {})};
    Status status = execute(*b.plan, inputs, outputs);
    ASSERT_TRUE(status.ok()) << status.message();
    if (outputs[0].allocated) // size 0: y.data() is null, so the runtime allocated it
      std::free(outputs[0].data);
    EXPECT_EQ(outputs[0].rank, 1);
    EXPECT_EQ(outputs[0].dims[0], size);
    for (int64_t i = 0; i < size; ++i)
      ASSERT_EQ(y[i], x[i] + 4) << "size " << size << " at " << i;
    if (size == 0)
      continue;
    auto address = [&](TensorId t) { return reinterpret_cast<uintptr_t>(addresses[t]); };
    EXPECT_EQ(address(ta), address(tb));
    EXPECT_NE(address(ta), address(tc));
    EXPECT_EQ(address(ta) % 64, 0u);
    EXPECT_EQ(address(tc) % 64, 0u);
    uintptr_t lo = std::min(address(ta), address(tc)), hi = std::max(address(ta), address(tc));
    EXPECT_GE(hi - lo, uintptr_t(size) * 4) << "slots overlap";
  }
}

TEST(Arena, LargeArenaIsHugePageAlignedAndAdvised) {
  // A 3 MiB slot: the arena starts on a 2 MiB boundary and is madvised for
  // huge pages (a packed batch's attention reads rows a page apart).
  PlanBuilder b;
  TensorId in = b.input("in", DType::F32, {-1}, {"n"});
  ScalarId n = b.plan->tensors[in].shape[0];
  TensorId big =
      b.tensor("big", DType::F32, {n}, Storage::Arena, b.slot(b.op(Kind::Mul, n, b.constant(4))));
  TensorId out = b.output("out", DType::F32, {n});
  std::vector<void *> addresses;
  b.step(std::make_unique<AddConstantStep>(1.0f), {in}, {big});
  b.step(std::make_unique<RecordStep>(nullptr, &addresses), {}, {});
  b.step(std::make_unique<AddConstantStep>(1.0f), {big}, {out});
  ASSERT_TRUE(validatePlan(*b.plan).ok());
  const int64_t size = 3 << 18; // 3 MiB of floats
  std::vector<float> x = iota(size_t(size), 0.0f), y(size_t(size), -1);
  std::vector<RunTensor> inputs{tensorOf(x, DType::F32, {size})};
  std::vector<RunTensor> outputs{tensorOf(y, DType::F32, {})};
  Status status = execute(*b.plan, inputs, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(y[size - 1], x[size - 1] + 2);
  const uintptr_t address = reinterpret_cast<uintptr_t>(addresses[big]);
  EXPECT_EQ(address % octet::kHugePageBytes, 0u);
  if (octet::hugePagesAvailable()) {
    EXPECT_EQ(octet::test::hugePageEligible(address), 1);
  } else {
    std::printf("no transparent huge pages on this host: eligibility not checked\n");
  }
}

TEST(Views, TransposeSliceAndViewOutputs) {
  // x [2, 3]; out0 = transpose(x) + 1 ([3, 2]); out1 = x[:, 1:] (a view output, copied);
  // out2 = reshape of an arena tensor (contiguous view) [6].
  PlanBuilder b;
  TensorId x = b.input("x", DType::F32, {2, 3});
  ScalarId c0 = b.constant(0), c1 = b.constant(1), c2 = b.constant(2), c3 = b.constant(3),
           c6 = b.constant(6), c24 = b.constant(24);
  TensorId transposed = b.view("xT", x, {c3, c2}, c0, {c1, c3});
  TensorId sliced = b.view("x[:,1:]", x, {c2, c2}, c1, {c3, c1});
  TensorId out0 = b.output("out0", DType::F32, {c3, c2});
  b.bindOutput("out1", sliced);
  TensorId arena = b.tensor("x_plus_1", DType::F32, {c2, c3}, Storage::Arena, b.slot(c24));
  TensorId flat = b.view("flat", arena, {c6}, c0);
  b.bindOutput("out2", flat);
  b.step(std::make_unique<AddConstantStep>(1.0f), {transposed}, {out0});
  b.step(std::make_unique<AddConstantStep>(1.0f), {x}, {arena});
  ASSERT_TRUE(validatePlan(*b.plan).ok()) << validatePlan(*b.plan).message();

  std::vector<float> xs = {1, 2, 3, 4, 5, 6};
  std::vector<RunTensor> inputs{tensorOf(xs, DType::F32, {2, 3})};
  Outputs outputs(3);
  Status status = execute(*b.plan, inputs, outputs.tensors);
  ASSERT_TRUE(status.ok()) << status.message();
  auto values = [&](int i) {
    const float *p = static_cast<const float *>(outputs[i].data);
    return std::vector<float>(p, p + outputs[i].numElements());
  };
  EXPECT_EQ(values(0), (std::vector<float>{2, 5, 3, 6, 4, 7}));
  EXPECT_EQ(values(1), (std::vector<float>{2, 3, 5, 6}));
  EXPECT_EQ(values(2), (std::vector<float>{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(outputs[1].rank, 2);
  EXPECT_EQ(outputs[2].dims[0], 6);
}

TEST(Views, OutOfBoundsViewIsAnError) {
  PlanBuilder b;
  TensorId x = b.input("x", DType::F32, {-1}, {"n"});
  ScalarId n = b.plan->tensors[x].shape[0];
  // x[1:] with length n: one element past the end.
  TensorId shifted = b.view("shifted", x, {n}, b.constant(1));
  TensorId out = b.output("out", DType::F32, {n});
  b.step(std::make_unique<AddConstantStep>(1.0f), {shifted}, {out});
  ASSERT_TRUE(validatePlan(*b.plan).ok());
  std::vector<float> xs(4), ys(4);
  std::vector<RunTensor> inputs{tensorOf(xs, DType::F32, {4})},
      outputs{tensorOf(ys, DType::F32, {})};
  RunError error;
  Status status = execute(*b.plan, inputs, outputs, &error);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(error, RunError::Runtime);
  EXPECT_THAT(status.message(), HasSubstr("view tensor t"));
  EXPECT_THAT(status.message(), HasSubstr("reaches bytes [4, 20)"));
}

TEST(Arena, TensorLargerThanItsSlotIsAnError) {
  PlanBuilder b;
  TensorId x = b.input("x", DType::F32, {-1}, {"n"});
  ScalarId n = b.plan->tensors[x].shape[0];
  TensorId tmp = b.tensor("tmp", DType::F32, {n}, Storage::Arena, b.slot(b.constant(16)));
  b.step(std::make_unique<AddConstantStep>(1.0f), {x}, {tmp});
  std::vector<float> xs(5);
  std::vector<RunTensor> inputs{tensorOf(xs, DType::F32, {4})}, outputs;
  EXPECT_TRUE(execute(*b.plan, inputs, outputs).ok());
  inputs[0].dims[0] = 5;
  EXPECT_THAT(execute(*b.plan, inputs, outputs).message(),
              HasSubstr("'tmp' needs 20 bytes but arena slot 0 holds 16"));
}

// ---- Input validation ---------------------------------------------------------------

struct AddModelRun {
  std::unique_ptr<Plan> plan = makeAddModel();
  std::vector<float> x;
  std::vector<int64_t> ids;
  std::vector<float> y;
  std::vector<RunTensor> inputs, outputs;
  RunError error = RunError::None;

  explicit AddModelRun(int64_t batch = 2, int64_t sequence = 3) {
    x = iota(size_t(batch * sequence), 0.5f);
    ids.resize(x.size());
    for (size_t i = 0; i < ids.size(); ++i)
      ids[i] = int64_t(i % 10);
    y.assign(x.size(), 0);
    inputs = {tensorOf(x, DType::F32, {batch, sequence}),
              tensorOf(ids, DType::I64, {batch, sequence})};
    outputs = {tensorOf(y, DType::F32, {})};
  }
  Status run() { return execute(*plan, inputs, outputs, &error); }
};

TEST(Validation, GoodRun) {
  AddModelRun r(3, 7);
  ASSERT_TRUE(validatePlan(*r.plan).ok());
  Status status = r.run();
  ASSERT_TRUE(status.ok()) << status.message();
  for (size_t i = 0; i < r.y.size(); ++i)
    EXPECT_EQ(r.y[i], r.x[i] + 2 + float(r.ids[i]));
  EXPECT_EQ(r.outputs[0].rank, 2);
  EXPECT_EQ(r.outputs[0].dims[0], 3);
  EXPECT_EQ(r.outputs[0].dims[1], 7);
  EXPECT_EQ(r.outputs[0].dtype, DType::F32);
}

TEST(Validation, InputCount) {
  AddModelRun r;
  r.inputs.pop_back();
  EXPECT_THAT(r.run().message(), HasSubstr("expected 2 inputs, got 1"));
  EXPECT_EQ(r.error, RunError::InvalidArgument);
  AddModelRun s;
  s.outputs.clear();
  EXPECT_THAT(s.run().message(), HasSubstr("expected 1 outputs, got 0"));
  EXPECT_EQ(s.error, RunError::InvalidArgument);
}

TEST(Validation, NullData) {
  AddModelRun r;
  r.inputs[1].data = nullptr;
  EXPECT_THAT(r.run().message(),
              HasSubstr("input 1 'ids' has shape [2, 3] but its data pointer is null"));
  EXPECT_EQ(r.error, RunError::InvalidArgument);
  // Null data with no elements is fine.
  AddModelRun empty(0, 3);
  empty.inputs[0].data = nullptr;
  empty.inputs[1].data = nullptr;
  empty.outputs[0].data = nullptr; // runtime-owned, zero bytes
  Status status = empty.run();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_NE(empty.outputs[0].data, nullptr);
  EXPECT_EQ(empty.outputs[0].bytes, 0u);
  std::free(empty.outputs[0].data);
}

TEST(Validation, DType) {
  AddModelRun r;
  r.inputs[1].dtype = DType::I32;
  EXPECT_THAT(r.run().message(), HasSubstr("input 1 'ids' has dtype i32, expected i64"));
  EXPECT_EQ(r.error, RunError::InvalidInput);
}

TEST(Validation, Rank) {
  AddModelRun r;
  r.inputs[0].rank = 3;
  r.inputs[0].dims[2] = 1;
  EXPECT_THAT(r.run().message(), HasSubstr("input 0 'x' has rank 3, expected 2 [batch, sequence]"));
  EXPECT_EQ(r.error, RunError::InvalidInput);
}

TEST(Validation, StaticDim) {
  PlanBuilder b;
  TensorId x = b.input("x", DType::F32, {-1, 4}, {"batch", ""});
  b.output("y", DType::F32, {b.plan->tensors[x].shape[0], b.plan->tensors[x].shape[1]});
  b.step(std::make_unique<AddConstantStep>(1.0f), {x}, {b.plan->outputs[0].tensor});
  std::vector<float> xs(10), ys(10);
  std::vector<RunTensor> inputs{tensorOf(xs, DType::F32, {2, 5})},
      outputs{tensorOf(ys, DType::F32, {})};
  RunError error;
  Status status = execute(*b.plan, inputs, outputs, &error);
  EXPECT_THAT(status.message(),
              HasSubstr("input 0 'x' has shape [2, 5], expected [batch, 4]: dim 1 must be 4"));
  EXPECT_EQ(error, RunError::InvalidInput);
  inputs[0].dims[0] = 2;
  inputs[0].dims[1] = 4;
  EXPECT_TRUE(execute(*b.plan, inputs, outputs).ok());
}

TEST(Validation, NegativeDim) {
  AddModelRun r;
  r.inputs[0].dims[0] = -2;
  EXPECT_THAT(r.run().message(), HasSubstr("input 0 'x' has a negative dim 0"));
  EXPECT_EQ(r.error, RunError::InvalidInput);
}

TEST(Validation, SharedSymbolsAgree) {
  AddModelRun r(2, 3);
  r.inputs[1].dims[1] = 2; // ids [2, 2] against x [2, 3]
  EXPECT_THAT(r.run().message(),
              HasSubstr("inputs disagree on 'sequence': input 0 'x' dim 1 is 3 but input 1 "
                        "'ids' dim 1 is 2"));
  EXPECT_EQ(r.error, RunError::InvalidInput);
}

TEST(Validation, TokenIdRange) {
  AddModelRun r(2, 3);
  r.ids = {0, 9, 3, 4, 5, 6}; // both ends of the range are fine
  EXPECT_TRUE(r.run().ok());
  r.ids[5] = 10;
  EXPECT_THAT(r.run().message(),
              HasSubstr("input 1 'ids' element [1, 2] is 10, outside the valid range [0, 10) "
                        "(rows of the test table)"));
  EXPECT_EQ(r.error, RunError::InvalidInput);
  r.ids[5] = 1;
  r.ids[1] = -1;
  EXPECT_THAT(r.run().message(), HasSubstr("element [0, 1] is -1, outside"));
  r.ids[1] = std::numeric_limits<int64_t>::min();
  EXPECT_THAT(r.run().message(), HasSubstr("element [0, 1] is -9223372036854775808"));
}

TEST(Validation, TokenIdRangeI32AndLongInputs) {
  PlanBuilder b;
  b.input("ids", DType::I32, {-1}, {"n"});
  b.plan->inputs[0].checkRange = true;
  b.plan->inputs[0].rangeBegin = 5;
  b.plan->inputs[0].rangeEnd = 1000;
  ASSERT_TRUE(validatePlan(*b.plan).ok());
  std::vector<int32_t> ids(10007, 5);
  ids[9999] = 999;
  std::vector<RunTensor> inputs{tensorOf(ids, DType::I32, {10007})}, outputs;
  EXPECT_TRUE(execute(*b.plan, inputs, outputs).ok());
  ids[10003] = 4;
  ids[10005] = 1000;
  EXPECT_THAT(execute(*b.plan, inputs, outputs).message(),
              HasSubstr("element [10003] is 4, outside the valid range [5, 1000)"));
}

TEST(Validation, CheckRangeOnFloatIsAMalformedPlan) {
  PlanBuilder b;
  b.input("x", DType::F32, {3});
  b.plan->inputs[0].checkRange = true;
  EXPECT_THAT(validatePlan(*b.plan).message(), HasSubstr("not an integer tensor"));
}

TEST(Validation, MalformedPlans) {
  {
    PlanBuilder b;
    b.op(Kind::Add, 0, 1);
    EXPECT_THAT(validatePlan(*b.plan).message(), HasSubstr("scalar s0 uses s0 and s1"));
  }
  {
    PlanBuilder b;
    b.inputDim(0, 0);
    EXPECT_THAT(validatePlan(*b.plan).message(), HasSubstr("reads dim 0 of input 0"));
  }
  {
    PlanBuilder b;
    b.tensor("t", DType::F32, {b.constant(2)}, Storage::Arena, 3);
    EXPECT_THAT(validatePlan(*b.plan).message(), HasSubstr("arena slot 3, which does not exist"));
  }
  {
    PlanBuilder b;
    ScalarId two = b.constant(2);
    TensorId base = b.tensor("base", DType::F32, {two}, Storage::Arena, b.slot(b.constant(8)));
    TensorId v = b.view("v", base, {two}, two);
    b.view("vv", v, {two}, two);
    EXPECT_THAT(validatePlan(*b.plan).message(), HasSubstr("itself a view"));
  }
  {
    PlanBuilder b;
    b.step(std::make_unique<FailStep>(), {7}, {});
    EXPECT_THAT(validatePlan(*b.plan).message(), HasSubstr("uses t7, which does not exist"));
  }
  {
    PlanBuilder b;
    b.tensor("c", DType::F32, {b.constant(2)}, Storage::Constant);
    EXPECT_THAT(validatePlan(*b.plan).message(), HasSubstr("constant without data"));
  }
}

// ---- Outputs and step errors ------------------------------------------------------------

TEST(Outputs, RuntimeOwned) {
  AddModelRun r(3, 5);
  r.outputs[0] = RunTensor();
  Status status = r.run();
  ASSERT_TRUE(status.ok()) << status.message();
  RunTensor &out = r.outputs[0];
  EXPECT_TRUE(out.allocated);
  EXPECT_EQ(out.bytes, 60u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(out.data) % 64, 0u);
  const float *y = static_cast<const float *>(out.data);
  for (size_t i = 0; i < r.x.size(); ++i)
    EXPECT_EQ(y[i], r.x[i] + 2 + float(r.ids[i]));
  std::free(out.data);
}

TEST(Outputs, CallerOwnedTooSmall) {
  AddModelRun r(3, 5);
  r.outputs[0].bytes = 59;
  Status status = r.run();
  EXPECT_EQ(r.error, RunError::OutputTooSmall);
  EXPECT_THAT(status.message(),
              HasSubstr("output 0 'y' needs 60 bytes (f32 [3, 5]) but its buffer holds 59"));
  EXPECT_EQ(r.outputs[0].rank, 2);
  EXPECT_EQ(r.outputs[0].dims[0], 3);
  EXPECT_EQ(r.outputs[0].dims[1], 5);
  r.outputs[0].bytes = 60; // exactly enough
  EXPECT_TRUE(r.run().ok());
}

TEST(Outputs, StepErrorNamesStepAndFreesOutputs) {
  PlanBuilder b;
  TensorId x = b.input("x", DType::F32, {-1}, {"n"});
  ScalarId n = b.plan->tensors[x].shape[0];
  TensorId y = b.output("y", DType::F32, {n});
  b.step(std::make_unique<AddConstantStep>(1.0f), {x}, {y}, "Add_1");
  b.step(std::make_unique<FailStep>(), {y}, {}, "Broken_2");
  std::vector<float> xs(4);
  std::vector<RunTensor> inputs{tensorOf(xs, DType::F32, {4})};
  std::vector<RunTensor> outputs(1);
  RunError error;
  Status status = execute(*b.plan, inputs, outputs, &error);
  EXPECT_EQ(error, RunError::Runtime);
  EXPECT_THAT(status.message(), HasSubstr("step 1 (test.fail) for Broken_2: boom"));
  EXPECT_EQ(outputs[0].data, nullptr);
  EXPECT_FALSE(outputs[0].allocated);

  b.plan->steps[1] = std::make_unique<ThrowStep>();
  b.plan->steps[1]->location = "Throws_2";
  status = execute(*b.plan, inputs, outputs, &error);
  EXPECT_THAT(status.message(), HasSubstr("step 1 (test.throw) for Throws_2: thrown inside"));
  EXPECT_EQ(outputs[0].data, nullptr);
}

// ---- Concurrency ---------------------------------------------------------------------------

TEST(Concurrency, ManyThreadsOneModel) {
  auto plan = makeAddModel();
  ASSERT_TRUE(validatePlan(*plan).ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 50; ++r) {
        int64_t batch = 1 + (t + r) % 4, sequence = 1 + (t * 7 + r * 3) % 37;
        std::vector<float> x(size_t(batch * sequence));
        std::vector<int64_t> ids(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          x[i] = float(t * 1000 + r) + float(i) * 0.5f;
          ids[i] = int64_t((i + size_t(r)) % 10);
        }
        std::vector<RunTensor> inputs{tensorOf(x, DType::F32, {batch, sequence}),
                                      tensorOf(ids, DType::I64, {batch, sequence})};
        std::vector<RunTensor> outputs(1); // runtime-owned
        Status status = execute(*plan, inputs, outputs);
        bool good = status.ok() && outputs[0].dims[0] == batch && outputs[0].dims[1] == sequence;
        const float *y = static_cast<const float *>(outputs[0].data);
        for (size_t i = 0; good && i < x.size(); ++i)
          good = y[i] == x[i] + 2 + float(ids[i]);
        std::free(outputs[0].data);
        if (!good)
          ++failures;
      }
    });
  for (auto &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
}

} // namespace
