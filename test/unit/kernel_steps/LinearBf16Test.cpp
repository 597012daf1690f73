//===- LinearBf16Test.cpp - the linear step with --precision bf16 ---------===//
//
// makeLinear / buildStep with KernelOptions::linearBf16: the provider rule
// (every bucket JitBf16, or an error saying why not), the step's results
// against a double reference of the bf16-rounded operands, the fused and
// post-pass epilogues, and the recipe that buildStep leaves for an AOT image
// (bf16 panels, no f32 weight). Tolerance: 2^-22 (K + 2) sum|a w| for the f32
// sums plus 1e-5 (1 + |ref|) for the epilogue's own math; a step that ignored
// the precision (f32 products) is off by ~2^-9 sum|a w|, far outside it.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/AttentionBf16Kernels.h"
#include "compiler/codegen/x86/GemmBf16.h"
#include "runtime/StepRecipe.h"
#include "runtime/Steps.h"
#include "test/unit/PlanTestUtil.h"
#include "test/unit/TestData.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace {
using namespace octet::rt;
using Op = ElementwiseProgram::Op;
using octet::WeightLayout;

#define SKIP_WITHOUT_AVX512_BF16()                                                           \
  if (!octet::x86::GemmBf16::hostSupported())                                                \
  GTEST_SKIP() << "host lacks AVX512-BF16"

double bf16(float f) { return octet::x86::fromBf16(octet::x86::toBf16(f)); }

KernelOptions bf16Options() {
  KernelOptions o;
  o.linearBf16 = true;
  return o;
}

enum class Epilogue { None, Gelu, Residual, RowVector };

ElementwiseProgram program(Epilogue e) {
  ElementwiseProgram p;
  p.numInputs = 1;
  if (e == Epilogue::Gelu)
    p.instrs = {{Op::Input, 0}, {Op::GeluErf, 0}};
  if (e == Epilogue::Residual)
    p.numInputs = 2, p.instrs = {{Op::Input, 1}, {Op::Input, 0}, {Op::Add, 1, 0}};
  if (e == Epilogue::RowVector) // (acc + residual) * v: a post-pass reading a [N] vector
    p.numInputs = 3, p.instrs = {{Op::Input, 0}, {Op::Input, 1}, {Op::Add, 0, 1},
                                 {Op::Input, 2}, {Op::Mul, 2, 3}};
  return p;
}

/// Builds the linear through buildStep (as PlanBuilder does), runs it on a
/// [lead0, lead1, K] input with `rowPad` floats between rows and checks it.
void checkBf16Linear(WeightLayout layout, bool withBias, Epilogue e, int64_t lead0, int64_t lead1,
                     int64_t k, int64_t n, int64_t rowPad, const char *kindPrefix) {
  SCOPED_TRACE("K " + std::to_string(k) + " N " + std::to_string(n) + " epilogue " +
               std::to_string(int(e)) + (layout == WeightLayout::KN ? " KN" : " NK"));
  const int64_t m = lead0 * lead1, lda = k + rowPad;
  std::vector<float> a = octet::test::randomFloats(m * lda, 1), w = octet::test::randomFloats(k * n, 2),
                     b = octet::test::randomFloats(n, 3), residual = octet::test::randomFloats(m * n, 4),
                     row = octet::test::randomFloats(n, 5), c(m * n, -7.0f);
  test::BoundPlan h;
  LinearSpec spec;
  spec.input = rowPad ? h.view("a", h.tensor("base", {m * lda}, a.data()), {lead0, lead1, k},
                               {lead1 * lda, lda, 1}, 0, a.data())
                      : h.tensor("a", {lead0, lead1, k}, a.data());
  spec.output = h.tensor("c", {lead0, lead1, n}, c.data(), Storage::Arena);
  spec.weight = w.data();
  spec.layout = layout;
  spec.k = k, spec.n = n;
  spec.bias = withBias ? b.data() : nullptr;
  spec.epilogue = program(e);
  if (spec.epilogue.numInputs >= 2)
    spec.extras.push_back(h.tensor("r", {lead0, lead1, n}, residual.data()));
  if (spec.epilogue.numInputs >= 3) {
    spec.extras.push_back(h.tensor("v", {n}, row.data()));
    spec.extraPerColumn = {false, true};
  }
  std::string error;
  StepPtr step = buildStep(StepRecipe{recipe::Linear{spec}}, bf16Options(), error);
  ASSERT_NE(step, nullptr) << error;
  EXPECT_EQ(step->kind().rfind(kindPrefix, 0), 0u) << step->kind();
  // The recipe an AOT image stores: bf16 panels, no f32 weight.
  const auto &r = std::get<recipe::Linear>(step->recipe->call);
  EXPECT_EQ(r.spec.weight, nullptr);
  ASSERT_NE(r.spec.bf16Weight, nullptr);
  EXPECT_EQ(r.bf16PackedBytes, size_t(octet::x86::packedBf16Elements(k, n)) * 2);
  for (GemmProvider p : r.spec.provider)
    EXPECT_EQ(p, GemmProvider::JitBf16);
  Status s = h.run(*step);
  ASSERT_TRUE(s.ok()) << s.message();
  int bad = 0;
  for (int64_t i = 0; i < m && bad < 5; ++i)
    for (int64_t j = 0; j < n && bad < 5; ++j) {
      double acc = withBias ? b[j] : 0.0, mag = withBias ? std::fabs(b[j]) : 0.0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double p = bf16(a[i * lda + kk]) *
                         bf16(layout == WeightLayout::KN ? w[kk * n + j] : w[j * k + kk]);
        acc += p, mag += std::fabs(p);
      }
      float in[3] = {float(acc), residual[i * n + j], row[j]};
      const double ref = spec.epilogue.evaluate(in);
      double tol = std::ldexp(1.0, -22) * (k + 2) * (mag + 2) + 1e-5 * (1 + std::fabs(ref));
      // A bf16 linear's GELU is the fast one (GeluAccuracy::ForBf16): its
      // bound, 8e-5 max(1, |x|), on top (VectorMath.GeluErfFast asserts it).
      if (e == Epilogue::Gelu)
        tol += 8e-5 * std::max(1.0, std::fabs(acc));
      if (!(std::fabs(c[i * n + j] - ref) <= tol) && bad++ < 5)
        ADD_FAILURE() << step->kind() << " at " << i << "," << j << ": " << c[i * n + j]
                      << " vs " << ref << " +- " << tol;
    }
}

TEST(LinearBf16, LayoutsBiasEpilogues) {
  SKIP_WITHOUT_AVX512_BF16();
  for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK})
    for (bool withBias : {false, true}) {
      checkBf16Linear(layout, withBias, Epilogue::None, 3, 7, 37, 53, 0, "gemm.jit_bf16");
      checkBf16Linear(layout, withBias, Epilogue::Gelu, 3, 7, 37, 53, 0,
                      "gemm.jit_bf16+epilogue");
      checkBf16Linear(layout, withBias, Epilogue::Residual, 2, 40, 100, 17, 0,
                      "gemm.jit_bf16+residual");
      checkBf16Linear(layout, withBias, Epilogue::RowVector, 2, 19, 64, 100, 31,
                      "gemm.jit_bf16+residual+epilogue.columns");
    }
  checkBf16Linear(WeightLayout::KN, true, Epilogue::Gelu, 1, 1, 1, 1, 0, "gemm.jit_bf16");
  checkBf16Linear(WeightLayout::NK, true, Epilogue::Residual, 5, 3, 3073, 50, 5, "gemm.jit_bf16");
}

LinearSpec smallSpec(test::BoundPlan &h, std::vector<float> &w, std::vector<float> &a,
                     std::vector<float> &c) {
  LinearSpec spec;
  spec.input = h.tensor("a", {2, 4}, a.data());
  spec.output = h.tensor("c", {2, 3}, c.data());
  spec.weight = w.data();
  spec.k = 4, spec.n = 3;
  return spec;
}

// bf16 never falls back to f32 silently: a target without AVX512-BF16, or
// --gemm onednn, is an error that says so.
TEST(LinearBf16, RefusedWhereItCannotRun) {
  std::vector<float> w(12), a(8), c(6);
  test::BoundPlan h;
  LinearSpec spec = smallSpec(h, w, a, c);
  std::string error;
  KernelOptions vnni = bf16Options();
  ASSERT_TRUE(vnni.setTarget("avx512-vnni", error)) << error;
  EXPECT_EQ(makeLinear(spec, vnni, error), nullptr);
  EXPECT_NE(error.find("lacks AVX512-BF16"), std::string::npos) << error;
  error.clear();
  KernelOptions onednn = bf16Options();
  onednn.gemm = KernelOptions::Gemm::OneDnn;
  EXPECT_EQ(makeLinear(spec, onednn, error), nullptr);
  EXPECT_NE(error.find("--gemm onednn"), std::string::npos) << error;
  error.clear();
  KernelOptions avx2 = bf16Options();
  avx2.allowAvx512 = false;
  EXPECT_EQ(makeLinear(spec, avx2, error), nullptr);
  EXPECT_NE(error.find("AVX-512 is not allowed"), std::string::npos) << error;
}

// A spec holding only the bf16 panels (an AOT model's) cannot be run by an f32
// provider: a build error, not a null dereference.
TEST(LinearBf16, PanelsOnlySpecNeedsTheBf16Provider) {
  std::vector<float> w(12), a(8), c(6);
  test::BoundPlan h;
  LinearSpec spec = smallSpec(h, w, a, c);
  octet::x86::PackedBf16Weights panels = octet::x86::packBf16(w.data(), 4, 3, WeightLayout::KN);
  spec.weight = nullptr;
  spec.bf16Weight = panels.data();
  spec.provider = {GemmProvider::OneDnn, GemmProvider::OneDnn, GemmProvider::OneDnn};
  std::string error;
  EXPECT_EQ(makeLinear(spec, KernelOptions{}, error), nullptr);
  EXPECT_NE(error.find("only its bf16 panels"), std::string::npos) << error;
}

} // namespace
