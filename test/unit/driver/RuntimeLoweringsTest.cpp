//===- RuntimeLoweringsTest.cpp - the runtime's lowerings, end to end -----===//
//
// octet-lower-runtime-linear turns a linear whose weight and bias are function
// arguments into transpose + matmul + add; octet-lower-gelu turns a lone gelu
// into an octet.fused of one octet.scalar_gelu. The FP32 pipeline runs both,
// the Plan builder gives the results steps, and the runs must compute x·Wᵀ + b
// and GELU. The Plan builder itself refuses a linear of run-time values and an
// octet.gelu when the passes did not run, naming them.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanBuilder.h"
#include "compiler/passes/Passes.h"
#include "runtime/Executor.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace mlir;
namespace rt = octet::rt;

namespace {

constexpr const char *kModule = R"mlir(
func.func @main(%x: tensor<?x3xf32>, %w: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<?x2xf32> {
  %y = octet.linear %x, %w, %b transpose_weight : tensor<?x3xf32>, tensor<2x3xf32>, tensor<2xf32>
  return %y : tensor<?x2xf32>
}
)mlir";

/// The octet dialect and the upstream ones its IR uses, for the context.
DialectRegistry octetDialects() {
  DialectRegistry registry;
  octet::registerOctetDialects(registry);
  return registry;
}

class RuntimeLinear : public ::testing::Test {
protected:
  RuntimeLinear() { options.setTarget("host", error); }
  MLIRContext ctx{octetDialects()};
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &ctx);
  rt::KernelOptions options;
  std::string error;

  /// The Plan builder on @main as parsed (no pass): it must fail; its diagnostics.
  std::string planWithoutPasses() {
    auto main = module->lookupSymbol<func::FuncOp>("main");
    std::string diagnostics;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      diagnostics += d.str();
      return success();
    });
    EXPECT_TRUE(failed(octet::buildPlan(main, options, octet::PlanConstants::Take)));
    return diagnostics;
  }
};

rt::RunTensor tensor(std::vector<float> &data, std::vector<int64_t> dims) {
  rt::RunTensor t;
  t.data = data.data();
  t.rank = int32_t(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    t.dims[i] = dims[i];
  return t;
}

TEST_F(RuntimeLinear, ThePipelineLowersItAndThePlanComputesXWtPlusB) {
  ASSERT_TRUE(module);
  PassManager pm(&ctx);
  octet::buildFp32Pipeline(pm);
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto main = module->lookupSymbol<func::FuncOp>("main");
  FailureOr<std::unique_ptr<rt::Plan>> plan =
      octet::buildPlan(main, options, octet::PlanConstants::Take);
  ASSERT_TRUE(succeeded(plan));
  ASSERT_TRUE(rt::validatePlan(**plan).ok());

  // x: 4 rows of 3, W: [2, 3] (transposed: x·Wᵀ), b: [2].
  std::vector<float> x = {1, 2, 3, -1, 0, 1, 0.5f, 0.25f, -2, 0, 0, 0};
  std::vector<float> w = {1, 0, -1, 2, 1, 0.5f};
  std::vector<float> b = {0.5f, -1};
  std::vector<float> y(8, -7);
  std::vector<rt::RunTensor> inputs = {tensor(x, {4, 3}), tensor(w, {2, 3}), tensor(b, {2})};
  std::vector<rt::RunTensor> outputs = {tensor(y, {4, 2})};
  outputs[0].bytes = y.size() * sizeof(float);
  rt::Status status = rt::execute(**plan, inputs, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  for (int r = 0; r < 4; ++r)
    for (int n = 0; n < 2; ++n) {
      float expected = b[n];
      for (int k = 0; k < 3; ++k)
        expected += x[r * 3 + k] * w[n * 3 + k];
      EXPECT_FLOAT_EQ(y[r * 2 + n], expected) << "row " << r << ", column " << n;
    }
}

TEST_F(RuntimeLinear, WithoutThePassThePlanBuilderSaysWhichPassMakesIt) {
  ASSERT_TRUE(module);
  std::string diagnostics = planWithoutPasses();
  EXPECT_NE(diagnostics.find("octet-lower-runtime-linear"), std::string::npos) << diagnostics;
}

constexpr const char *kGeluModule = R"mlir(
func.func @main(%x: tensor<?x5xf32>) -> (tensor<?x5xf32>, tensor<?x5xf32>) {
  %erf = octet.gelu %x : tensor<?x5xf32>
  %tanh = octet.gelu %x approximate = "tanh" : tensor<?x5xf32>
  return %erf, %tanh : tensor<?x5xf32>, tensor<?x5xf32>
}
)mlir";

/// The same fixture on the gelu module.
class LoneGelu : public RuntimeLinear {
protected:
  LoneGelu() { module = parseSourceString<ModuleOp>(kGeluModule, &ctx); }
};

TEST_F(LoneGelu, ThePipelineLowersItAndThePlanComputesGelu) {
  ASSERT_TRUE(module);
  PassManager pm(&ctx);
  octet::buildFp32Pipeline(pm);
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto main = module->lookupSymbol<func::FuncOp>("main");
  int geluOps = 0;
  main.walk([&](octet::GeluOp) { ++geluOps; });
  EXPECT_EQ(geluOps, 0);
  FailureOr<std::unique_ptr<rt::Plan>> plan =
      octet::buildPlan(main, options, octet::PlanConstants::Take);
  ASSERT_TRUE(succeeded(plan));
  ASSERT_TRUE(rt::validatePlan(**plan).ok());

  // 3 rows of 5: a row of a vector's width is not one, so the kernels' tails run.
  std::vector<float> x = {-8, -3.5f, -1, -0.25f, 0,    1e-20f, 0.125f, 0.5f,
                          1,  1.5f,  2,  3,      4.5f, 6,      20};
  std::vector<float> erf(x.size(), -7), tanh(x.size(), -7);
  std::vector<rt::RunTensor> inputs = {tensor(x, {3, 5})};
  std::vector<rt::RunTensor> outputs = {tensor(erf, {3, 5}), tensor(tanh, {3, 5})};
  outputs[0].bytes = outputs[1].bytes = x.size() * sizeof(float);
  rt::Status status = rt::execute(**plan, inputs, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i];
    double exact = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    double approx = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    // The accurate kernel GELU: a few ulp.
    EXPECT_NEAR(erf[i], exact, 1e-6 * std::max(1.0, std::fabs(exact))) << "x = " << v;
    EXPECT_NEAR(tanh[i], approx, 1e-6 * std::max(1.0, std::fabs(approx))) << "x = " << v;
  }
}

TEST_F(LoneGelu, WithoutThePassThePlanBuilderSaysWhichPassLowersIt) {
  ASSERT_TRUE(module);
  std::string diagnostics = planWithoutPasses();
  EXPECT_NE(diagnostics.find("octet-lower-gelu"), std::string::npos) << diagnostics;
}

} // namespace

// An attention whose only user is a per-tensor quantize is one step with it
// (foldOutputQuantize): the step writes the quantized output while it reads
// Q, K and V. octet-plan-memory keeps those apart; slots that do not (the
// quantize given %qkv's slot, as the pass did before it knew of the fold) are
// refused with a message rather than computed wrongly.
constexpr const char *kAttentionQuantize = R"mlir(
func.func @main(%x: tensor<1x4x192xf32>) -> tensor<1x4x64xf32> attributes {octet.arena = ["3072", "1024"]} {
  %s = octet.constant dense<0.5> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  %qkv = octet.relu %x {octet.slot = 0 : i64} : tensor<1x4x192xf32>
  %q = octet.slice %qkv axes = [2] starts = [0] ends = [64] steps = [1] : tensor<1x4x192xf32> -> tensor<1x4x64xf32>
  %k = octet.slice %qkv axes = [2] starts = [64] ends = [128] steps = [1] : tensor<1x4x192xf32> -> tensor<1x4x64xf32>
  %v = octet.slice %qkv axes = [2] starts = [128] ends = [192] steps = [1] : tensor<1x4x192xf32> -> tensor<1x4x64xf32>
  %a = octet.attention %q, %k, %v num_heads = 2 scale = 0.125 {octet.slot = 1 : i64} : tensor<1x4x64xf32>
  %aq = octet.quantize %a, %s, %zp {octet.slot = SLOT : i64} : tensor<1x4x64xf32>, tensor<f32>, tensor<ui8> -> tensor<1x4x64xui8>
  %d = octet.dequantize %aq, %s, %zp : tensor<1x4x64xui8>, tensor<f32>, tensor<ui8> -> tensor<1x4x64xf32>
  return %d : tensor<1x4x64xf32>
}
)mlir";

TEST(AttentionQuantizeFold, RefusesAnOutputSlotThatAnInputUses) {
  MLIRContext ctx{octetDialects()};
  rt::KernelOptions options;
  std::string error;
  options.setTarget("host", error);
  for (const char *slot : {"0", "2"}) {
    std::string text = kAttentionQuantize;
    text.replace(text.find("SLOT"), 4, slot);
    if (std::string(slot) == "2")
      text.replace(text.find(R"(["3072", "1024"])"), 16, R"(["3072", "1024", "256"])");
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
    ASSERT_TRUE(module) << slot;
    std::string diagnostics;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      diagnostics += d.str();
      return success();
    });
    FailureOr<std::unique_ptr<rt::Plan>> plan = octet::buildPlan(
        module->lookupSymbol<func::FuncOp>("main"), options, octet::PlanConstants::Take);
    if (std::string(slot) == "0") {
      EXPECT_TRUE(failed(plan));
      EXPECT_NE(diagnostics.find("shares arena slot 0 with an input it reads"), std::string::npos)
          << diagnostics;
      continue;
    }
    ASSERT_TRUE(succeeded(plan)) << diagnostics;
    // Folded: no quantize step of its own.
    bool quantizeStep = false;
    for (const auto &step : (*plan)->steps)
      quantizeStep |= step->kind().rfind("quantize", 0) == 0;
    EXPECT_FALSE(quantizeStep);
  }
}
