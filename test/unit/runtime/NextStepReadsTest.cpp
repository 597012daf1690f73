//===- NextStepReadsTest.cpp - execute() publishes the next step's first reads -===//
//
// While a step runs, the executor publishes on its thread what the next step
// says it reads first (Step::firstReads, for the step's threads to prefetch:
// compiler/codegen/x86/NextStepPrefetch.h): the next step's ranges, one entry
// per thread of the team; nothing while the last step runs, nothing after the
// run; a step whose firstReads throws costs the step before its hint, not the
// run.
//
//===----------------------------------------------------------------------===//
#include "test/unit/runtime/TestPlans.h"

#include "compiler/codegen/x86/NextStepPrefetch.h"

#include <gtest/gtest.h>

#include <omp.h>

#include <new>
#include <optional>

namespace {
using namespace octet::rt;
using namespace octet::rt::test;
using octet::x86::NextStepReads;

/// x + 1, recording what was published while it ran; it says it reads
/// `bytes` bytes of `code` first, on every thread.
class RecordingStep final : public AddConstantStep {
public:
  RecordingStep(const char *code, size_t bytes) : AddConstantStep(1.0f), code_(code), bytes_(bytes) {}
  Status run(const ExecContext &ctx) const override {
    const NextStepReads *published = NextStepReads::published();
    seen = published ? std::optional<NextStepReads>(*published) : std::nullopt;
    return AddConstantStep::run(ctx);
  }
  void firstReads(const ExecContext &, int64_t threads, NextStepReads &reads) const override {
    reads.sameForAll(threads, {{code_, bytes_}});
    if (failReads)
      throw std::bad_alloc();
  }
  bool failReads = false;
  mutable std::optional<NextStepReads> seen;

private:
  const char *code_;
  size_t bytes_;
};

TEST(NextStepReads, EachStepSeesTheNextStepsFirstReads) {
  static const char code[3][256] = {};
  PlanBuilder b;
  TensorId x = b.input("x", DType::F32, {-1}, {"n"});
  ScalarId n = b.plan->tensors[x].shape[0];
  ScalarId bytes = b.op(Scalar::Kind::Mul, n, b.constant(4));
  TensorId t1 = b.tensor("t1", DType::F32, {n}, Storage::Arena, b.slot(bytes));
  TensorId t2 = b.tensor("t2", DType::F32, {n}, Storage::Arena, b.slot(bytes));
  TensorId y = b.output("y", DType::F32, {n}, {"n"});
  std::vector<RecordingStep *> steps;
  TensorId from = x;
  for (int i = 0; i < 3; ++i) {
    auto step = std::make_unique<RecordingStep>(code[i], 100 + i);
    steps.push_back(step.get());
    const TensorId to = i == 0 ? t1 : i == 1 ? t2 : y;
    b.step(std::move(step), {from}, {to}, "step" + std::to_string(i));
    from = to;
  }
  std::unique_ptr<Plan> plan = std::move(b.plan);
  ASSERT_TRUE(validatePlan(*plan).ok());

  std::vector<float> in{1, 2, 3}, out(3, 0.0f);
  std::vector<RunTensor> inputs{tensorOf(in, DType::F32, {3})};
  std::vector<RunTensor> outputs{tensorOf(out, DType::F32, {})};
  Status status = execute(*plan, inputs, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(out, (std::vector<float>{4, 5, 6}));

  const size_t team = size_t(omp_get_max_threads());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(steps[i]->seen) << "step " << i << " saw nothing published";
    const NextStepReads &seen = *steps[i]->seen;
    ASSERT_EQ(seen.perThread.size(), team) << "step " << i;
    for (const auto &thread : seen.perThread) {
      ASSERT_EQ(thread.count, 1) << "step " << i;
      EXPECT_EQ(thread.ranges[0].first, code[i + 1]) << "step " << i;
      EXPECT_EQ(thread.ranges[0].second, size_t(101 + i)) << "step " << i;
    }
  }
  EXPECT_FALSE(steps[2]->seen) << "the last step has no next step";
  EXPECT_EQ(NextStepReads::published(), nullptr) << "published after the run";

  steps[1]->failReads = true;
  out.assign(3, 0.0f);
  status = execute(*plan, inputs, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(out, (std::vector<float>{4, 5, 6}));
  EXPECT_FALSE(steps[0]->seen) << "a failed firstReads published something";
  EXPECT_TRUE(steps[1]->seen) << "the step after the failed one lost its hint";
}

} // namespace
