//===- StepObserverTest.cpp - execute()'s StepObserver --------------------===//
//
// The observer is called before each step with the step's index, its inputs
// computed (calibration reads GEMM inputs there, compiler/driver/Calibrate.cpp);
// an error it returns stops the run with its message unchanged, frees what
// the run allocated and runs no further step; without one, runs are as
// before.
//
//===----------------------------------------------------------------------===//
#include "test/unit/runtime/TestPlans.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace {
using namespace octet::rt;
using namespace octet::rt::test;

struct Seen {
  size_t step;
  std::vector<float> input; ///< the step's input 0 as the observer read it
  float output0;            ///< the first element of y at that moment
};

struct AddModelRun {
  std::unique_ptr<Plan> plan = makeAddModel();
  std::vector<float> x{0.5f, -1.0f, 2.0f, 3.25f, -4.0f, 0.0f};
  std::vector<int64_t> ids{1, 2, 3, 4, 5, 6};
  std::vector<float> y = std::vector<float>(6, -100.0f);
  std::vector<RunTensor> inputs{tensorOf(x, DType::F32, {2, 3}), tensorOf(ids, DType::I64, {2, 3})};
  std::vector<RunTensor> outputs{tensorOf(y, DType::F32, {})};
};

TEST(StepObserver, SeesEachStepsInputsBeforeItRuns) {
  AddModelRun r;
  ASSERT_TRUE(validatePlan(*r.plan).ok());
  std::vector<Seen> seen;
  const StepObserver observer = [&](size_t step, const ExecContext &ctx) {
    const TensorId in = r.plan->steps[step]->inputs.at(0);
    const float *data = ctx.data<float>(in);
    seen.push_back({step, std::vector<float>(data, data + ctx.numElements(in)), r.y[0]});
    return Status();
  };
  Status status = execute(*r.plan, r.inputs, r.outputs, nullptr, nullptr, &observer);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(seen.size(), r.plan->steps.size());
  for (size_t s = 0; s < seen.size(); ++s) {
    EXPECT_EQ(seen[s].step, s);
    // x, x + 1, x + 2: what the previous steps wrote, read from the arena.
    for (size_t i = 0; i < r.x.size(); ++i)
      EXPECT_EQ(seen[s].input[i], r.x[i] + float(s)) << "step " << s << " element " << i;
    EXPECT_EQ(seen[s].output0, -100.0f) << "step " << s << ": observed after its step ran";
  }
  for (size_t i = 0; i < r.x.size(); ++i)
    EXPECT_EQ(r.y[i], r.x[i] + 2 + float(r.ids[i]));
}

TEST(StepObserver, ErrorStopsTheRunWithItsMessage) {
  AddModelRun r;
  r.outputs[0] = RunTensor(); // runtime-owned: must be freed again on failure
  int calls = 0;
  const StepObserver observer = [&](size_t step, const ExecContext &) {
    ++calls;
    return step == 1 ? Status::error("calibration: linear #1 holds NaN") : Status();
  };
  RunError kind = RunError::None;
  Status status = execute(*r.plan, r.inputs, r.outputs, &kind, nullptr, &observer);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "calibration: linear #1 holds NaN");
  EXPECT_EQ(kind, RunError::Runtime);
  EXPECT_EQ(calls, 2) << "no step after the failing observation";
  EXPECT_EQ(r.outputs[0].data, nullptr);
  EXPECT_FALSE(r.outputs[0].allocated);
}

TEST(StepObserver, NoneOrEmptyRunsAsBefore) {
  AddModelRun plain, empty;
  ASSERT_TRUE(execute(*plain.plan, plain.inputs, plain.outputs).ok());
  const StepObserver nothing; // an empty std::function is no observer
  ASSERT_TRUE(execute(*empty.plan, empty.inputs, empty.outputs, nullptr, nullptr, &nothing).ok());
  EXPECT_EQ(plain.y, empty.y);
}

TEST(StepObserver, NotCountedInTheProfile) {
  AddModelRun r;
  RunProfile profile;
  const StepObserver slow = [&](size_t, const ExecContext &) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return Status();
  };
  ASSERT_TRUE(execute(*r.plan, r.inputs, r.outputs, nullptr, &profile, &slow).ok());
  ASSERT_EQ(profile.stepSeconds.size(), r.plan->steps.size());
  for (double seconds : profile.stepSeconds)
    EXPECT_LT(seconds, 0.1); // the steps take microseconds; the observer 0.2 s
}

} // namespace
