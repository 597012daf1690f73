//===- LinearPerRunTest.cpp - KernelOptions::packWeightsPerRun ------------===//
//
// Calibration's instrumented Plan builds each linear's kernel and packed
// weight at each run instead of holding a packed copy of every weight. Its
// statistics must be those of the ordinary Plan, so the per-run step must
// give the same bits as the step built once, on every provider and epilogue
// form; and it must read the caller's weight at run time (it keeps no copy).
//
//===----------------------------------------------------------------------===//
#include "runtime/Steps.h"
#include "test/unit/PlanTestUtil.h"
#include "test/unit/TestData.h"

#include <gtest/gtest.h>

#include <cstring>

namespace {
using namespace octet::rt;
using Op = ElementwiseProgram::Op;
using octet::WeightLayout;

struct Case {
  KernelOptions::Gemm gemm;
  WeightLayout layout;
  int64_t k, n;
  bool residual, gelu;
};

/// Runs the linear of `c` built with and without packWeightsPerRun and
/// compares every output bit; then changes the weight and checks that only
/// the per-run step sees it.
void checkPerRun(const Case &c) {
  SCOPED_TRACE("K " + std::to_string(c.k) + " N " + std::to_string(c.n) +
               (c.gemm == KernelOptions::Gemm::Jit ? " jit" : " onednn") +
               (c.residual ? " residual" : "") + (c.gelu ? " gelu" : ""));
  const int64_t m = 37;
  std::vector<float> a = octet::test::randomFloats(m * c.k, 1),
                     w = octet::test::randomFloats(c.k * c.n, 2),
                     b = octet::test::randomFloats(c.n, 3),
                     residual = octet::test::randomFloats(m * c.n, 4);
  std::vector<float> once(size_t(m * c.n), -7.0f), perRun(size_t(m * c.n), -9.0f);
  test::BoundPlan h;
  LinearSpec spec;
  spec.input = h.tensor("a", {m, c.k}, a.data());
  spec.output = h.tensor("c", {m, c.n}, once.data(), Storage::Arena);
  TensorId perRunOut = h.tensor("c2", {m, c.n}, perRun.data(), Storage::Arena);
  spec.weight = w.data();
  spec.layout = c.layout;
  spec.k = c.k, spec.n = c.n;
  spec.bias = b.data();
  spec.epilogue.numInputs = c.residual ? 2 : 1;
  spec.epilogue.instrs = {{Op::Input, 0}};
  if (c.gelu)
    spec.epilogue.instrs.push_back({Op::GeluErf, 0});
  if (c.residual) {
    spec.extras.push_back(h.tensor("r", {m, c.n}, residual.data()));
    const int32_t acc = int32_t(spec.epilogue.instrs.size()) - 1;
    spec.epilogue.instrs.push_back({Op::Input, 1});
    spec.epilogue.instrs.push_back({Op::Add, acc, acc + 1});
  }
  KernelOptions options;
  options.gemm = c.gemm;
  std::string error;
  StepPtr built = makeLinear(spec, options, error);
  ASSERT_NE(built, nullptr) << error;
  options.packWeightsPerRun = true;
  LinearSpec second = spec;
  second.output = perRunOut;
  StepPtr lazy = makeLinear(second, options, error);
  ASSERT_NE(lazy, nullptr) << error;
  EXPECT_EQ(lazy->kind(), built->kind());
  EXPECT_EQ(lazy->inputs, built->inputs);
  ASSERT_TRUE(h.run(*built).ok());
  for (int repeat = 0; repeat < 2; ++repeat) {
    std::fill(perRun.begin(), perRun.end(), -9.0f);
    Status s = h.run(*lazy);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(std::memcmp(once.data(), perRun.data(), once.size() * sizeof(float)), 0)
        << "run " << repeat << ": the per-run step differs from the step built once";
  }
  // The weight is read at each run: a new weight changes the per-run step's
  // result, not that of the step that packed its own copy.
  for (float &v : w)
    v = -v;
  std::vector<float> before = once;
  ASSERT_TRUE(h.run(*built).ok());
  ASSERT_TRUE(h.run(*lazy).ok());
  EXPECT_EQ(std::memcmp(once.data(), before.data(), once.size() * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(perRun.data(), before.data(), once.size() * sizeof(float)), 0);
}

TEST(LinearPerRun, SameBitsAsBuiltOnceJit) {
  if (!KernelOptions().cpu.avx512f)
    GTEST_SKIP() << "host lacks AVX-512";
  for (Case c : {Case{KernelOptions::Gemm::Jit, WeightLayout::KN, 64, 96, false, false},
                 Case{KernelOptions::Gemm::Jit, WeightLayout::NK, 48, 100, true, false},
                 Case{KernelOptions::Gemm::Jit, WeightLayout::KN, 40, 64, false, true}})
    checkPerRun(c);
}

TEST(LinearPerRun, SameBitsAsBuiltOnceOneDnn) {
  for (Case c : {Case{KernelOptions::Gemm::OneDnn, WeightLayout::KN, 64, 96, false, false},
                 Case{KernelOptions::Gemm::OneDnn, WeightLayout::KN, 80, 48, true, false}})
    checkPerRun(c);
}

TEST(LinearPerRun, ProviderErrorsAtPlanTime) {
  // A provider that cannot build fails when the Plan is built, not at its
  // first run: the JIT GEMM chosen for every bucket where AVX-512 is not allowed.
  std::vector<float> w(16, 1.0f);
  LinearSpec spec;
  spec.input = 0, spec.output = 1, spec.weight = w.data(), spec.k = 4, spec.n = 4;
  spec.epilogue.numInputs = 1;
  spec.epilogue.instrs = {{Op::Input, 0}};
  spec.provider.fill(GemmProvider::JitF32);
  KernelOptions options;
  options.allowAvx512 = false;
  options.packWeightsPerRun = true;
  std::string error;
  EXPECT_EQ(makeLinear(spec, options, error), nullptr);
  EXPECT_NE(error.find("jit_avx512"), std::string::npos) << error;
}

} // namespace
