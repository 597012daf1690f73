//===- KernelStepsTest.cpp - makeLinear, makeLayerNorm, makeFusedElementwise --===//
//
// Hand-built Plans (no executor): every tensor's shape is made of Constant
// scalars, views carry explicit strides, and the ExecContext's scalars_ and
// addresses_ are filled directly. References are double (GEMM, LayerNorm) or
// ElementwiseProgram::evaluate (epilogues, fused regions). Tolerances:
//  - GEMM:       |got - ref| <= 1e-4 (1 + |ref|)  (K <= 100, |a|, |w| <= 1)
//  - LayerNorm:  |got - ref| <= 1e-4 (1 + |ref|)
//  - elementwise, exact ops: bitwise equal to evaluate; transcendental ops:
//    |got - ref| <= 4e-6 (1 + |ref|) (VectorMath's few-ulp bounds).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/KernelGenerator.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"
#include "compiler/codegen/x86/QuantizeKernels.h"
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

bool hasAvx512() {
  const auto &cpu = octet::x86::CpuFeatures::host();
  return cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl;
}

/// Tensors named t0, t1, ... over test buffers; non-empty `strides` make a strided view.
struct Harness : test::BoundPlan {
  TensorId tensor(const std::vector<int64_t> &shape, void *data,
                  const std::vector<int64_t> &strides = {}) {
    TensorId t = BoundPlan::tensor("t" + std::to_string(plan.tensors.size()), shape, data,
                                   strides.empty() ? Storage::Arena : Storage::View);
    for (int64_t s : strides)
      plan.tensors[t].viewStrides.push_back(constant(s));
    return t;
  }
};

ElementwiseProgram unaryProgram(Op op) {
  ElementwiseProgram p;
  p.numInputs = 1;
  p.instrs = {{Op::Input, 0}, {op, 0}};
  return p;
}

// ---- ElementwiseProgram -------------------------------------------------------

TEST(ElementwiseProgram, EvaluateMatchesFormulas) {
  for (float x : {-3.5f, -1.0f, -0.0f, 0.25f, 2.0f}) {
    EXPECT_FLOAT_EQ(unaryProgram(Op::GeluErf).evaluate(&x),
                    float(x * 0.5 * (1 + std::erf(x / std::sqrt(2.0)))));
    const double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
    EXPECT_FLOAT_EQ(unaryProgram(Op::GeluTanh).evaluate(&x), float(0.5 * x * (1 + std::tanh(u))));
    EXPECT_EQ(unaryProgram(Op::Relu).evaluate(&x), std::max(x, 0.0f));
    if (x > 0) {
      EXPECT_FLOAT_EQ(unaryProgram(Op::Rsqrt).evaluate(&x), float(1 / std::sqrt(double(x))));
    }
  }
  float nan = NAN;
  EXPECT_TRUE(std::isnan(unaryProgram(Op::Relu).evaluate(&nan)));
  ElementwiseProgram pow;
  pow.numInputs = 2;
  pow.instrs = {{Op::Input, 0},
                {Op::Input, 1},
                {Op::Pow, 0, 1},
                {Op::Constant, -1, -1, 2.0f},
                {Op::Max, 2, 3}};
  float in[2] = {1.5f, 3.0f};
  EXPECT_EQ(pow.evaluate(in), std::pow(1.5f, 3.0f));
  in[0] = 0.5f;
  EXPECT_EQ(pow.evaluate(in), 2.0f);
  ElementwiseProgram identity;
  identity.numInputs = 1;
  EXPECT_EQ(identity.evaluate(in), 0.5f);
}

TEST(ElementwiseProgram, VerifyAndStr) {
  ElementwiseProgram p = unaryProgram(Op::Exp);
  EXPECT_EQ(p.verify(), "");
  EXPECT_NE(p.str().find("%1 = exp %0"), std::string::npos) << p.str();
  p.instrs.push_back({Op::Add, 1, 5});
  EXPECT_NE(p.verify().find("operand b = 5 is not an earlier instruction"), std::string::npos)
      << p.verify();
  ElementwiseProgram q;
  q.numInputs = 1;
  q.instrs = {{Op::Input, 3}};
  EXPECT_NE(q.verify().find("input index 3"), std::string::npos) << q.verify();
  // Slots an op does not use hold -1 (a plan image's unary op with a stray b
  // once sent dead-code elimination past the program's end).
  ElementwiseProgram stray = unaryProgram(Op::Exp);
  stray.instrs.back().b = 123456;
  EXPECT_NE(stray.verify().find("unused operand b = 123456"), std::string::npos) << stray.verify();
  ElementwiseProgram constant;
  constant.instrs = {{Op::Constant, 7, -1, 1.0f}};
  EXPECT_NE(constant.verify().find("unused operand a = 7"), std::string::npos) << constant.verify();
  ElementwiseProgram empty; // identity
  EXPECT_EQ(empty.verify(), "");
}

// ---- ProgramEpilogue ------------------------------------------------------------

TEST(ProgramEpilogue, RejectsRegisterPressure) {
  // 20 products of the accumulator all live until they are summed.
  ElementwiseProgram p;
  p.numInputs = 1;
  p.instrs.push_back({Op::Input, 0});
  std::vector<int32_t> products;
  for (int i = 0; i < 20; ++i) {
    p.instrs.push_back({Op::Constant, -1, -1, float(i + 2)});
    p.instrs.push_back({Op::Mul, 0, int32_t(p.instrs.size() - 1)});
    p.instrs.push_back({Op::Exp, int32_t(p.instrs.size() - 1)});
    products.push_back(int32_t(p.instrs.size() - 1));
  }
  int32_t acc = products[0];
  for (size_t i = 1; i < products.size(); ++i) {
    p.instrs.push_back({Op::Add, acc, products[i]});
    acc = int32_t(p.instrs.size() - 1);
  }
  std::string error;
  EXPECT_EQ(octet::x86::ProgramEpilogue::create(p, error), nullptr);
  EXPECT_NE(error.find("more than the"), std::string::npos) << error;
  // The same program summed as it goes needs few registers.
  ElementwiseProgram q;
  q.numInputs = 1;
  q.instrs.push_back({Op::Input, 0});
  int32_t sum = -1;
  for (int i = 0; i < 20; ++i) {
    q.instrs.push_back({Op::Constant, -1, -1, float(i + 2)});
    q.instrs.push_back({Op::Mul, 0, int32_t(q.instrs.size() - 1)});
    q.instrs.push_back({Op::Exp, int32_t(q.instrs.size() - 1)});
    int32_t e = int32_t(q.instrs.size() - 1);
    if (sum >= 0) {
      q.instrs.push_back({Op::Add, sum, e});
      e = int32_t(q.instrs.size() - 1);
    }
    sum = e;
  }
  auto ok = octet::x86::ProgramEpilogue::create(q, error);
  ASSERT_NE(ok, nullptr) << error;
  EXPECT_LE(ok->scratchZmmCount(), 4);
}

TEST(ProgramEpilogue, RejectsOtherInputsAndLog) {
  ElementwiseProgram p;
  p.numInputs = 2;
  p.instrs = {{Op::Input, 0}, {Op::Input, 1}, {Op::Add, 0, 1}};
  std::string error;
  EXPECT_EQ(octet::x86::ProgramEpilogue::create(p, error), nullptr);
  EXPECT_NE(error.find("reads input 1"), std::string::npos) << error;
  EXPECT_EQ(octet::x86::ProgramEpilogue::create(unaryProgram(Op::Log), error), nullptr);
  EXPECT_NE(error.find("log"), std::string::npos) << error;
}

// ---- makeLinear -------------------------------------------------------------------

struct LinearCase {
  std::string name;
  KernelOptions options;
};

std::vector<LinearCase> linearProviders() {
  std::vector<LinearCase> cases;
  KernelOptions onednn;
  onednn.gemm = KernelOptions::Gemm::OneDnn;
  cases.push_back({"onednn", onednn});
  KernelOptions noAvx512;
  noAvx512.allowAvx512 = false;
  cases.push_back({"auto_no_avx512", noAvx512});
  if (hasAvx512()) {
    KernelOptions jit;
    jit.gemm = KernelOptions::Gemm::Jit;
    cases.push_back({"jit", jit});
    cases.push_back({"auto", KernelOptions{}});
  }
  return cases;
}

enum class Epilogue { None, Gelu, Residual, ReluResidual, RowVector, Pressure };

/// The epilogue program and how many extras it reads ([M..., N] residual,
/// then a [N] row vector).
ElementwiseProgram epilogueProgram(Epilogue e) {
  ElementwiseProgram p;
  switch (e) {
  case Epilogue::None:
    p.numInputs = 1;
    break;
  case Epilogue::Gelu:
    p = unaryProgram(Op::GeluErf);
    break;
  case Epilogue::Residual:
    p.numInputs = 2;
    p.instrs = {{Op::Input, 1}, {Op::Input, 0}, {Op::Add, 1, 0}};
    break;
  case Epilogue::ReluResidual:
    p.numInputs = 2;
    p.instrs = {{Op::Input, 0}, {Op::Input, 1}, {Op::Add, 0, 1}, {Op::Relu, 2}};
    break;
  case Epilogue::RowVector: // tanh(acc + residual) * v + 0.5
    p.numInputs = 3;
    p.instrs = {{Op::Input, 0},
                {Op::Input, 1},
                {Op::Add, 0, 1},
                {Op::Tanh, 2},
                {Op::Input, 2},
                {Op::Mul, 3, 4},
                {Op::Constant, -1, -1, 0.5f},
                {Op::Add, 5, 6}};
    break;
  case Epilogue::Pressure: { // too many live values to fuse: applied after the GEMM
    p.numInputs = 1;
    p.instrs.push_back({Op::Input, 0});
    std::vector<int32_t> terms;
    for (int i = 0; i < 20; ++i) {
      p.instrs.push_back({Op::Constant, -1, -1, 0.1f * (i + 1)});
      p.instrs.push_back({Op::Mul, 0, int32_t(p.instrs.size() - 1)});
      terms.push_back(int32_t(p.instrs.size() - 1));
    }
    int32_t acc = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) {
      p.instrs.push_back({Op::Add, acc, terms[i]});
      acc = int32_t(p.instrs.size() - 1);
    }
    break;
  }
  }
  return p;
}

void checkLinear(const KernelOptions &options, WeightLayout layout, bool bias, Epilogue e,
                 int64_t lead0, int64_t lead1, int64_t k, int64_t n, int64_t rowPad,
                 const std::string &what) {
  SCOPED_TRACE(what);
  const int64_t m = lead0 * lead1, lda = k + rowPad;
  std::vector<float> a = octet::test::randomFloats(m * lda, 1);
  std::vector<float> w = octet::test::randomFloats(k * n, 2);
  std::vector<float> b = octet::test::randomFloats(n, 3);
  std::vector<float> residual = octet::test::randomFloats(m * n, 4);
  std::vector<float> row = octet::test::randomFloats(n, 5);
  std::vector<float> c(m * n, -7.0f);
  Harness h;
  LinearSpec spec;
  spec.input = rowPad ? h.tensor({lead0, lead1, k}, a.data(), {lead1 * lda, lda, 1})
                      : h.tensor({lead0, lead1, k}, a.data());
  spec.output = h.tensor({lead0, lead1, n}, c.data());
  spec.weight = w.data();
  spec.layout = layout;
  spec.k = k, spec.n = n;
  spec.bias = bias ? b.data() : nullptr;
  spec.epilogue = epilogueProgram(e);
  if (spec.epilogue.numInputs >= 2)
    spec.extras.push_back(h.tensor({lead0, lead1, n}, residual.data()));
  if (spec.epilogue.numInputs >= 3)
    spec.extras.push_back(h.tensor({n}, row.data()));
  std::string error;
  StepPtr step = makeLinear(spec, options, error);
  ASSERT_NE(step, nullptr) << error;
  Status s = h.run(*step);
  ASSERT_TRUE(s.ok()) << s.message();
  // The JIT GEMM fuses what it can: the residual add, accumulator-only programs.
  if (options.gemm == KernelOptions::Gemm::Jit) {
    const std::string kind = step->kind();
    EXPECT_EQ(kind.rfind("gemm.jit_avx512", 0), 0u) << kind;
    const bool residualFused =
        e == Epilogue::Residual || e == Epilogue::ReluResidual || e == Epilogue::RowVector;
    EXPECT_EQ(kind.find("+residual") != std::string::npos, residualFused) << kind;
    EXPECT_EQ(kind.find("+epilogue") != std::string::npos,
              e == Epilogue::Gelu || e == Epilogue::ReluResidual)
        << kind;
    EXPECT_EQ(kind.find("+post") != std::string::npos,
              e == Epilogue::RowVector || e == Epilogue::Pressure)
        << kind;
  }
  int bad = 0;
  for (int64_t i = 0; i < m && bad < 5; ++i)
    for (int64_t j = 0; j < n && bad < 5; ++j) {
      double acc = bias ? b[j] : 0.0;
      for (int64_t kk = 0; kk < k; ++kk)
        acc +=
            double(a[i * lda + kk]) * (layout == WeightLayout::KN ? w[kk * n + j] : w[j * k + kk]);
      float in[3] = {float(acc), residual[i * n + j], row[j]};
      const double ref = spec.epilogue.evaluate(in);
      if (!(std::fabs(c[i * n + j] - ref) <= 1e-4 * (1 + std::fabs(ref)))) {
        ADD_FAILURE() << step->kind() << " at " << i << "," << j << ": " << c[i * n + j] << " vs "
                      << ref;
        ++bad;
      }
    }
}

TEST(Linear, ProvidersLayoutsBiasEpilogues) {
  for (const LinearCase &pc : linearProviders())
    for (WeightLayout layout : {WeightLayout::KN, WeightLayout::NK})
      for (bool bias : {false, true})
        for (Epilogue e : {Epilogue::None, Epilogue::Gelu, Epilogue::Residual,
                           Epilogue::ReluResidual, Epilogue::RowVector, Epilogue::Pressure})
          checkLinear(pc.options, layout, bias, e, 3, 7, 37, 53, 0,
                      pc.name + (layout == WeightLayout::KN ? " KN" : " NK") +
                          (bias ? " bias" : "") + " epilogue " + std::to_string(int(e)));
}

TEST(Linear, OddShapesAndStridedRows) {
  for (const LinearCase &pc : linearProviders()) {
    checkLinear(pc.options, WeightLayout::KN, true, Epilogue::Gelu, 1, 1, 1, 1, 0,
                pc.name + " 1x1x1");
    checkLinear(pc.options, WeightLayout::NK, true, Epilogue::ReluResidual, 5, 3, 99, 17, 5,
                pc.name + " strided rows");
    checkLinear(pc.options, WeightLayout::KN, false, Epilogue::RowVector, 2, 19, 64, 100, 31,
                pc.name + " strided rows, row vector");
  }
}

TEST(Linear, Errors) {
  std::vector<float> w(12), a(8), c(6);
  Harness h;
  LinearSpec spec;
  spec.input = h.tensor({2, 4}, a.data());
  spec.output = h.tensor({2, 3}, c.data());
  spec.weight = w.data();
  spec.k = 3, spec.n = 3; // the input's last dim is 4
  std::string error;
  StepPtr step = makeLinear(spec, KernelOptions{}, error);
  ASSERT_NE(step, nullptr) << error;
  Status s = h.run(*step);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("last dim of K = 3"), std::string::npos) << s.message();

  spec.epilogue.numInputs = 2;
  spec.epilogue.instrs = {{Op::Input, 0}, {Op::Input, 1}, {Op::Add, 0, 1}};
  EXPECT_EQ(makeLinear(spec, KernelOptions{}, error), nullptr);
  EXPECT_NE(error.find("extras"), std::string::npos) << error;
  spec.epilogue.instrs = {{Op::Add, 0, 1}};
  EXPECT_EQ(makeLinear(spec, KernelOptions{}, error), nullptr);
  EXPECT_NE(error.find("malformed"), std::string::npos) << error;
  spec.epilogue = {};
  spec.weight = nullptr;
  EXPECT_EQ(makeLinear(spec, KernelOptions{}, error), nullptr);
  KernelOptions jitOnly;
  jitOnly.gemm = KernelOptions::Gemm::Jit;
  jitOnly.allowAvx512 = false;
  spec.weight = w.data();
  EXPECT_EQ(makeLinear(spec, jitOnly, error), nullptr);
  EXPECT_NE(error.find("AVX-512 is not allowed"), std::string::npos) << error;
}

// ---- makeLayerNorm ------------------------------------------------------------------

void checkLayerNorm(bool allowAvx512, bool residual, bool sum, int64_t rows, int64_t n,
                    int64_t rowPad) {
  SCOPED_TRACE("avx512 " + std::to_string(allowAvx512) + " residual " + std::to_string(residual) +
               " sum " + std::to_string(sum) + " n " + std::to_string(n) + " pad " +
               std::to_string(rowPad));
  const int64_t ldx = n + rowPad;
  std::vector<float> x = octet::test::randomFloats(rows * ldx, 7);
  for (float &v : x)
    v = v * 3 + 10; // a large mean: catches E[x^2] - mean^2 cancellation
  std::vector<float> r = octet::test::randomFloats(rows * n, 8);
  std::vector<float> gamma = octet::test::randomFloats(n, 9),
                     beta = octet::test::randomFloats(n, 10);
  std::vector<float> y(rows * n), s(rows * n);
  Harness h;
  LayerNormSpec spec;
  spec.x = rowPad ? h.tensor({rows, n}, x.data(), {ldx, 1}) : h.tensor({rows, n}, x.data());
  if (residual)
    spec.residual = h.tensor({rows, n}, r.data());
  spec.output = h.tensor({rows, n}, y.data());
  if (sum)
    spec.sum = h.tensor({rows, n}, s.data());
  spec.gamma = gamma.data(), spec.beta = beta.data(), spec.n = n, spec.epsilon = 1e-5f;
  KernelOptions options;
  options.allowAvx512 = allowAvx512;
  std::string error;
  StepPtr step = makeLayerNorm(spec, options, error);
  ASSERT_NE(step, nullptr) << error;
  Status st = h.run(*step);
  ASSERT_TRUE(st.ok()) << st.message();
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<double> v(n);
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) {
      float f = residual ? x[i * ldx + j] + r[i * n + j] : x[i * ldx + j];
      v[j] = f, mean += f;
      if (sum) {
        ASSERT_EQ(s[i * n + j], f) << i << "," << j;
      }
    }
    mean /= n;
    for (double e : v)
      var += (e - mean) * (e - mean);
    var /= n;
    for (int64_t j = 0; j < n; ++j) {
      double ref = (v[j] - mean) / std::sqrt(var + 1e-5) * gamma[j] + beta[j];
      ASSERT_NEAR(y[i * n + j], ref, 1e-4 * (1 + std::fabs(ref)))
          << step->kind() << " " << i << "," << j;
    }
  }
}

TEST(LayerNorm, PlainResidualSumStrided) {
  for (bool avx512 : {false, true}) {
    if (avx512 && !hasAvx512())
      continue;
    checkLayerNorm(avx512, false, false, 13, 77, 0);
    checkLayerNorm(avx512, true, true, 9, 768, 0);
    checkLayerNorm(avx512, true, false, 5, 33, 7);
    checkLayerNorm(avx512, false, false, 1, 1, 3);
  }
}

// layer_norm_quantize on every path this host runs (the JIT; the compiled
// rows, AVX2 where the host has it): per tensor u8 and s8 (saturating), the
// quantized copy's own affine, per row; q is the quantize formula applied to
// the step's own y (or, for the own affine, within one step of the double
// LayerNorm), odd widths for the tails.
TEST(LayerNorm, QuantizedOutputsAreTheQuantizeFormulasOfY) {
  for (bool avx512 : {false, true}) {
    if (avx512 && !hasAvx512())
      continue;
    for (int64_t n : {1, 13, 768})
      for (int mode = 0; mode < 4; ++mode) { // u8, s8, own affine (u8), per row
        SCOPED_TRACE("avx512 " + std::to_string(avx512) + " n " + std::to_string(n) + " mode " +
                     std::to_string(mode));
        const int64_t rows = 5;
        std::vector<float> x = octet::test::randomFloats(rows * n, 21);
        std::vector<float> r = octet::test::randomFloats(rows * n, 22);
        std::vector<float> gamma = octet::test::randomFloats(n, 23),
                           beta = octet::test::randomFloats(n, 24);
        std::vector<float> qGamma = octet::test::randomFloats(n, 25),
                           qBeta = octet::test::randomFloats(n, 26);
        std::vector<float> y(static_cast<size_t>(rows * n)), scales(static_cast<size_t>(rows));
        std::vector<uint8_t> q(static_cast<size_t>(rows * n));
        Harness h;
        LayerNormSpec spec;
        spec.x = h.tensor({rows, n}, x.data());
        spec.residual = h.tensor({rows, n}, r.data());
        spec.output = h.tensor({rows, n}, y.data());
        spec.quantized = h.tensor({rows, n}, q.data());
        spec.quantizedType = mode == 1 ? DType::I8 : DType::U8;
        spec.gamma = gamma.data(), spec.beta = beta.data(), spec.n = n;
        spec.qScale = 0.01f, spec.qZeroPoint = mode == 1 ? -3 : 120; // saturates some
        if (mode == 2)
          spec.qGamma = qGamma.data(), spec.qBeta = qBeta.data();
        if (mode == 3)
          spec.rowScale = h.tensor({rows, 1}, scales.data());
        h.plan.tensors[spec.quantized].dtype = spec.quantizedType;
        KernelOptions options;
        options.allowAvx512 = avx512;
        std::string error;
        StepPtr step = makeLayerNorm(spec, options, error);
        ASSERT_NE(step, nullptr) << error;
        Status st = h.run(*step);
        ASSERT_TRUE(st.ok()) << st.message();
        const int32_t lo = mode == 1 ? -128 : 0;
        for (int64_t i = 0; i < rows; ++i) {
          std::vector<uint8_t> want(static_cast<size_t>(n));
          if (mode == 3) {
            const float scale = octet::x86::quantizeRowScalar(&y[size_t(i * n)], n, want.data());
            ASSERT_EQ(scales[size_t(i)], scale) << step->kind() << " row " << i;
          }
          double mean = 0, var = 0;
          for (int64_t j = 0; j < n; ++j)
            mean += double(x[size_t(i * n + j)] + r[size_t(i * n + j)]);
          mean /= double(n);
          for (int64_t j = 0; j < n; ++j) {
            const double d = double(x[size_t(i * n + j)] + r[size_t(i * n + j)]) - mean;
            var += d * d;
          }
          var /= double(n);
          for (int64_t j = 0; j < n; ++j) {
            const size_t e = size_t(i * n + j);
            if (mode == 2) { // within one step of the double own affine
              const double norm = (double(x[e] + r[e]) - mean) / std::sqrt(var + 1e-5);
              const double ref = std::clamp(
                  std::nearbyint((norm * qGamma[size_t(j)] + qBeta[size_t(j)]) / 0.01) + 120, 0.0,
                  255.0);
              ASSERT_LE(std::fabs(double(q[e]) - ref), 1.0) << step->kind() << " " << i << "," << j;
            } else if (mode != 3) {
              want[size_t(j)] =
                  uint8_t(octet::x86::quantizeScalar(y[e], 0.01f, spec.qZeroPoint, lo, lo + 255));
            }
            if (mode != 2)
              ASSERT_EQ(q[e], want[size_t(j)]) << step->kind() << " " << i << "," << j;
          }
        }
      }
  }
}

TEST(LayerNorm, Errors) {
  std::string error;
  LayerNormSpec spec;
  spec.x = 0, spec.output = 1, spec.n = 0;
  EXPECT_EQ(makeLayerNorm(spec, KernelOptions{}, error), nullptr);
  EXPECT_NE(error.find("n > 0"), std::string::npos);
  std::vector<float> g(4), x(8), y(12);
  Harness h;
  spec.x = h.tensor({2, 4}, x.data());
  spec.output = h.tensor({3, 4}, y.data());
  spec.gamma = spec.beta = g.data(), spec.n = 4;
  StepPtr step = makeLayerNorm(spec, KernelOptions{}, error);
  ASSERT_NE(step, nullptr) << error;
  Status s = h.run(*step);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("differs from the output"), std::string::npos) << s.message();
}

// ---- makeFusedElementwise ------------------------------------------------------------

/// out[2, 3, 37] = gelu(full * rowvec + scalar) - perRow / mask, every broadcast kind;
/// `transposed`: `full` is a transposed view.
void checkFused(bool allowAvx512, bool transposed, bool expectJit) {
  const int64_t B = 2, S = 3, N = 37;
  std::vector<float> full = octet::test::randomFloats(B * S * N, 11);
  std::vector<float> rowvec = octet::test::randomFloats(N, 12);
  std::vector<float> perRow = octet::test::randomFloats(B * S, 13);
  std::vector<float> mask = octet::test::randomFloats(B * N, 14);
  for (float &m : mask)
    m += 2; // no division by ~0
  float scalar = 0.375f;
  std::vector<float> out(B * S * N);
  Harness h;
  std::vector<TensorId> ins;
  ins.push_back(transposed ? h.tensor({B, S, N}, full.data(), {S * N, 1, S})
                           : h.tensor({B, S, N}, full.data()));
  ins.push_back(h.tensor({N}, rowvec.data()));
  ins.push_back(h.tensor({}, &scalar));
  ins.push_back(h.tensor({B, S, 1}, perRow.data()));
  ins.push_back(h.tensor({B, 1, N}, mask.data()));
  TensorId o = h.tensor({B, S, N}, out.data());
  ElementwiseProgram p;
  p.numInputs = 5;
  p.instrs = {{Op::Input, 0},   {Op::Input, 1}, {Op::Mul, 0, 1}, {Op::Input, 2},  {Op::Add, 2, 3},
              {Op::GeluErf, 4}, {Op::Input, 3}, {Op::Input, 4},  {Op::Div, 6, 7}, {Op::Sub, 5, 8}};
  KernelOptions options;
  options.allowAvx512 = allowAvx512;
  std::string error;
  StepPtr step = makeFusedElementwise(p, ins, o, options, error);
  ASSERT_NE(step, nullptr) << error;
  EXPECT_EQ(step->kind(), expectJit ? "elementwise.jit_avx512" : "elementwise.interpreter");
  Status s = h.run(*step);
  ASSERT_TRUE(s.ok()) << s.message();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float in[5] = {transposed ? full[b * S * N + j * S + i] : full[(b * S + i) * N + j],
                       rowvec[j], scalar, perRow[b * S + i], mask[b * N + j]};
        const float ref = p.evaluate(in), got = out[(b * S + i) * N + j];
        ASSERT_NEAR(got, ref, 4e-6 * (1 + std::fabs(ref))) << b << "," << i << "," << j;
      }
}

TEST(FusedElementwise, Broadcasts) {
  checkFused(false, false, false);
  checkFused(false, true, false);
  if (hasAvx512()) {
    checkFused(true, false, true);
    checkFused(true, true, true); // a transposed input: the interpreter at run time
  }
}

TEST(FusedElementwise, JitCommonCasesAreExact) {
  // full + row vector + scalar, exact ops only: the JIT kernel must equal evaluate bitwise.
  if (!hasAvx512())
    GTEST_SKIP() << "host has no AVX-512";
  for (int64_t n : {1, 15, 16, 17, 100}) {
    const int64_t rows = 5;
    std::vector<float> x = octet::test::randomFloats(rows * n, 20),
                       v = octet::test::randomFloats(n, 21);
    float c = -1.25f;
    std::vector<float> out(rows * n);
    Harness h;
    std::vector<TensorId> ins = {h.tensor({rows, n}, x.data()), h.tensor({n}, v.data()),
                                 h.tensor({1, 1}, &c)};
    TensorId o = h.tensor({rows, n}, out.data());
    ElementwiseProgram p;
    p.numInputs = 3;
    p.instrs = {{Op::Input, 0},  {Op::Input, 1}, {Op::Max, 0, 1},           {Op::Input, 2},
                {Op::Mul, 2, 3}, {Op::Relu, 4},  {Op::Constant, -1, -1, 2}, {Op::Pow, 5, 6}};
    std::string error;
    StepPtr step = makeFusedElementwise(p, ins, o, KernelOptions{}, error);
    ASSERT_NE(step, nullptr) << error;
    ASSERT_TRUE(h.run(*step).ok());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float in[3] = {x[i * n + j], v[j], c};
        ASSERT_EQ(out[i * n + j], p.evaluate(in)) << n << ": " << i << "," << j;
      }
  }
}

TEST(FusedElementwise, GeluOneInstruction) {
  for (bool avx512 : {false, true}) {
    if (avx512 && !hasAvx512())
      continue;
    for (Op op : {Op::GeluErf, Op::GeluTanh}) {
      const int64_t count = 1000;
      std::vector<float> x = octet::test::randomFloats(count, 30), y(count);
      for (float &v : x)
        v *= 6;
      Harness h;
      TensorId in = h.tensor({8, 125}, x.data()), out = h.tensor({8, 125}, y.data());
      KernelOptions options;
      options.allowAvx512 = avx512;
      std::string error;
      StepPtr step = makeFusedElementwise(unaryProgram(op), {in}, out, options, error);
      ASSERT_NE(step, nullptr) << error;
      ASSERT_TRUE(h.run(*step).ok());
      for (int64_t i = 0; i < count; ++i) {
        float ref = unaryProgram(op).evaluate(&x[i]);
        ASSERT_NEAR(y[i], ref, 4e-6 * (1 + std::fabs(ref))) << x[i];
      }
    }
  }
}

TEST(FusedElementwise, Errors) {
  std::vector<float> a(6), b(4), out(6);
  Harness h;
  TensorId ta = h.tensor({2, 3}, a.data()), tb = h.tensor({4}, b.data()),
           to = h.tensor({2, 3}, out.data());
  ElementwiseProgram p;
  p.numInputs = 2;
  p.instrs = {{Op::Input, 0}, {Op::Input, 1}, {Op::Add, 0, 1}};
  std::string error;
  StepPtr step = makeFusedElementwise(p, {ta, tb}, to, KernelOptions{}, error);
  ASSERT_NE(step, nullptr) << error;
  Status s = h.run(*step);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("does not broadcast"), std::string::npos) << s.message();
  EXPECT_EQ(makeFusedElementwise(p, {ta}, to, KernelOptions{}, error), nullptr);
  EXPECT_NE(error.find("reads 2 inputs"), std::string::npos) << error;
}

} // namespace
