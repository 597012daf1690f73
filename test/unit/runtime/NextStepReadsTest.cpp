//===- NextStepReadsTest.cpp - execute() publishes the next step's first reads -===//
//
// While a step runs, the executor publishes on its thread what the next step
// says it reads first (Step::firstReads, for the step's threads to prefetch:
// compiler/codegen/x86/NextStepPrefetch.h): the next step's ranges, one entry
// per thread of the team; nothing while the last step runs, nothing after the
// run; a step whose firstReads throws costs the step before its hint, not the
// run. Each thread keeps the answers for the next runs of the same Plan and
// shapes (runtime/NextReadsCache.h): asked again for new shapes, another
// Plan, or where the last ask failed.
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
  void firstReads(const ExecContext &ctx, int64_t threads, NextStepReads &reads) const override {
    ++asked;
    // The size says which shapes it was asked for.
    reads.sameForAll(threads, {{code_, bytes_ + size_t(ctx.numElements(inputs[0]))}});
    if (failReads)
      throw std::bad_alloc();
  }
  bool failReads = false;
  mutable int asked = 0;
  mutable std::optional<NextStepReads> seen;

private:
  const char *code_;
  size_t bytes_;
};

/// x + 1 three times: each step a RecordingStep.
struct RecordingPlan {
  static inline const char code[3][256] = {};
  std::unique_ptr<Plan> plan;
  std::vector<RecordingStep *> steps;
  RecordingPlan() {
    PlanBuilder b;
    TensorId x = b.input("x", DType::F32, {-1}, {"n"});
    ScalarId n = b.plan->tensors[x].shape[0];
    ScalarId bytes = b.op(Scalar::Kind::Mul, n, b.constant(4));
    TensorId t1 = b.tensor("t1", DType::F32, {n}, Storage::Arena, b.slot(bytes));
    TensorId t2 = b.tensor("t2", DType::F32, {n}, Storage::Arena, b.slot(bytes));
    TensorId y = b.output("y", DType::F32, {n}, {"n"});
    TensorId from = x;
    for (int i = 0; i < 3; ++i) {
      auto step = std::make_unique<RecordingStep>(code[i], 100 + i);
      steps.push_back(step.get());
      const TensorId to = i == 0 ? t1 : i == 1 ? t2 : y;
      b.step(std::move(step), {from}, {to}, "step" + std::to_string(i));
      from = to;
    }
    plan = std::move(b.plan);
  }
  /// Runs it on n elements 1..n; checks the output.
  void run(int64_t n) {
    std::vector<float> in, out(size_t(n), 0.0f), want;
    for (int64_t i = 0; i < n; ++i)
      in.push_back(float(i + 1)), want.push_back(float(i + 4));
    std::vector<RunTensor> inputs{tensorOf(in, DType::F32, {n})};
    std::vector<RunTensor> outputs{tensorOf(out, DType::F32, {})};
    Status status = execute(*plan, inputs, outputs);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(out, want);
  }
  /// Step `i` saw step i + 1's range for n elements on every thread.
  void expectSeen(int i, int64_t n) const {
    ASSERT_TRUE(steps[size_t(i)]->seen) << "step " << i << " saw nothing published";
    const NextStepReads &seen = *steps[size_t(i)]->seen;
    ASSERT_EQ(seen.perThread.size(), size_t(omp_get_max_threads())) << "step " << i;
    for (const auto &thread : seen.perThread) {
      ASSERT_EQ(thread.count, 1) << "step " << i;
      EXPECT_EQ(thread.ranges[0].first, code[i + 1]) << "step " << i;
      EXPECT_EQ(thread.ranges[0].second, size_t(101 + i + n)) << "step " << i;
    }
  }
};

TEST(NextStepReads, EachStepSeesTheNextStepsFirstReads) {
  RecordingPlan p;
  ASSERT_TRUE(validatePlan(*p.plan).ok());
  p.run(3);
  p.expectSeen(0, 3);
  p.expectSeen(1, 3);
  EXPECT_FALSE(p.steps[2]->seen) << "the last step has no next step";
  EXPECT_EQ(NextStepReads::published(), nullptr) << "published after the run";
  EXPECT_EQ(p.steps[0]->asked, 0) << "the first step has no step before it";

  // A failed ask costs the step before its hint, not the run.
  p.steps[1]->failReads = true;
  p.run(4);
  EXPECT_FALSE(p.steps[0]->seen) << "a failed firstReads published something";
  p.expectSeen(1, 4);
}

TEST(NextStepReads, KeptForTheSameShapesAskedAgainForNewOnes) {
  RecordingPlan p;
  p.run(3);
  p.run(3);
  p.expectSeen(0, 3);
  p.expectSeen(1, 3);
  EXPECT_EQ(p.steps[1]->asked, 1) << "asked again for the same shapes";
  EXPECT_EQ(p.steps[2]->asked, 1);
  p.run(5);
  p.expectSeen(0, 5);
  p.expectSeen(1, 5);
  EXPECT_EQ(p.steps[1]->asked, 2) << "new shapes, the old answer";
  p.run(3);
  p.expectSeen(0, 3);
  EXPECT_EQ(p.steps[1]->asked, 3);

  // A failed ask is not kept.
  p.steps[1]->failReads = true;
  p.run(6);
  EXPECT_EQ(p.steps[1]->asked, 4);
  EXPECT_FALSE(p.steps[0]->seen);
  p.steps[1]->failReads = false;
  p.run(6);
  EXPECT_EQ(p.steps[1]->asked, 5) << "a failed ask was kept";
  p.expectSeen(0, 6);

  // Another Plan on this thread: its own answers (its steps' code), and the
  // first Plan's are asked again after it.
  RecordingPlan other;
  other.run(3);
  EXPECT_EQ(other.steps[1]->asked, 1);
  other.expectSeen(0, 3);
  p.run(3);
  EXPECT_EQ(p.steps[1]->asked, 6);
  p.expectSeen(0, 3);
}

/// Runs `inner` (a Plan) within its own run, as a step that runs a Plan
/// itself would: the inner run must not take or drop the outer run's answers.
class NestedRunStep final : public AddConstantStep {
public:
  explicit NestedRunStep(RecordingPlan &inner) : AddConstantStep(1.0f), inner_(inner) {}
  Status run(const ExecContext &ctx) const override {
    inner_.run(3);
    return AddConstantStep::run(ctx);
  }

private:
  RecordingPlan &inner_;
};

TEST(NextStepReads, ARunInsideAStepKeepsItsOwn) {
  RecordingPlan outer, inner;
  // The outer plan's first step becomes one that runs `inner` itself.
  auto nested = std::make_unique<NestedRunStep>(inner);
  nested->inputs = outer.plan->steps[0]->inputs;
  nested->outputs = outer.plan->steps[0]->outputs;
  outer.plan->steps[0] = std::move(nested);
  outer.run(3);
  outer.run(3);
  EXPECT_EQ(outer.steps[1]->asked, 1) << "the inner run dropped the outer run's answers";
  EXPECT_EQ(outer.steps[2]->asked, 1);
  outer.expectSeen(1, 3);
  EXPECT_EQ(inner.steps[1]->asked, 2) << "an inner run on a busy thread keeps nothing";
  inner.expectSeen(0, 3);
}

} // namespace
