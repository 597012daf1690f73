//===- VectorMathTest.cpp - VectorMath functions against double references ===//
//
// Each function is mapped over dense sweeps - by the JIT's UnaryKernel and by
// the AVX2 twins (VectorMathAvx2.h), each where the host runs it - and
// compared with the double-precision libm value; the bounds are the ones
// VectorMath.h states, for both.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/FusedKernels.h"
#include "compiler/codegen/x86/VectorMath.h"
#include "compiler/codegen/x86/VectorMathAvx2.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

using namespace octet::x86;

namespace {

#define REQUIRE_AVX512()                                                                       \
  if (!CpuFeatures::host().supports(Isa::Avx512))                                              \
  GTEST_SKIP() << "host lacks AVX-512 F/BW/VL/DQ: JIT code cannot run here"

/// Who maps a function over a vector: the zmm code or its AVX2 twin.
enum class Backend { Jit, Avx2 };
Backend gBackend = Backend::Jit; // set by VectorMathOps' SetUp

class VectorMathOps : public ::testing::TestWithParam<Backend> {
protected:
  void SetUp() override {
    gBackend = GetParam();
    if (gBackend == Backend::Jit && !CpuFeatures::host().supports(Isa::Avx512))
      GTEST_SKIP() << "host lacks AVX-512 F/BW/VL/DQ: JIT code cannot run here";
    if (gBackend == Backend::Avx2 && !avx2::hostSupported())
      GTEST_SKIP() << "host lacks AVX2 + FMA";
  }
};

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

double ulpOf(double ref) {
  double a = std::fabs(ref);
  if (a < FLT_MIN)
    return std::ldexp(1.0, -149);
  int e;
  std::frexp(std::min(a, double(FLT_MAX)), &e);
  return std::ldexp(1.0, e - 24);
}

/// Error of `got` against `ref` in ulps of the f32 result; 0 when they round alike.
double ulpError(float got, double ref) {
  if (std::isnan(ref) || std::isnan(got))
    return std::isnan(ref) == std::isnan(got) ? 0 : INFINITY;
  if (float(ref) == got)
    return 0;
  return std::fabs(double(got) - ref) / ulpOf(ref);
}

std::vector<float> mapThrough(UnaryOp op, const std::vector<float> &x) {
  std::vector<float> y(x.size());
  if (gBackend == Backend::Avx2) {
    avx2::unaryBlock(op, x.data(), y.data(), int64_t(x.size()));
    return y;
  }
  UnaryKernel kernel(op);
  kernel.run(x.data(), y.data(), int64_t(x.size()));
  return y;
}

std::vector<float> linspace(double lo, double hi, int n) {
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = float(lo + (hi - lo) * i / (n - 1));
  return x;
}

/// Positive values spread over many binades (log-uniform).
std::vector<float> logspace(double lo, double hi, int n) {
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = float(std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * i / (n - 1)));
  return x;
}

const std::vector<float> kSpecials = {0.0f,     -0.0f,     kInf,     -kInf,       kNaN,
                                      1e-45f,   -1e-45f,   1e-40f,   -1e-40f,     FLT_MIN,
                                      -FLT_MIN, FLT_MAX,   -FLT_MAX, 1.0f,        -1.0f,
                                      0.5f,     88.72f,    -87.3f,   -103.9f,     1e-20f};

/// Max ulp error of `op` over x (the sweep plus the special values).
double maxUlp(UnaryOp op, std::vector<float> x, const std::function<double(double)> &ref) {
  x.insert(x.end(), kSpecials.begin(), kSpecials.end());
  std::vector<float> y = mapThrough(op, x);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double e = ulpError(y[i], ref(x[i]));
    EXPECT_LT(e, 1e9) << "x=" << x[i] << " got " << y[i] << " want " << ref(x[i]);
    worst = std::max(worst, e);
  }
  return worst;
}

double sigmoidRef(double x) { return 1 / (1 + std::exp(-x)); }
double geluErfRef(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double geluTanhRef(double x) {
  return x / (1 + std::exp(-2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(VectorMath, GeneratesEveryOp) {
  for (UnaryOp op : {UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Exp, UnaryOp::Erf, UnaryOp::Tanh,
                     UnaryOp::Sigmoid, UnaryOp::Rsqrt, UnaryOp::Reciprocal, UnaryOp::GeluErf,
                     UnaryOp::GeluTanh, UnaryOp::GeluErfFast, UnaryOp::GeluTanhFast}) {
    UnaryKernel kernel(op);
    EXPECT_FALSE(kernel.bytes().empty());
  }
}

TEST_P(VectorMathOps, NegAbs) {
  std::vector<float> x = linspace(-5, 5, 1001);
  x.insert(x.end(), kSpecials.begin(), kSpecials.end());
  std::vector<float> n = mapThrough(UnaryOp::Neg, x), a = mapThrough(UnaryOp::Abs, x);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(std::signbit(n[i]), !std::signbit(x[i]));
    EXPECT_TRUE(std::isnan(x[i]) ? std::isnan(a[i]) : a[i] == std::fabs(x[i]));
    EXPECT_FALSE(std::signbit(a[i]));
  }
}

TEST_P(VectorMathOps, Exp) {
  auto ref = [](double x) { return std::exp(x); };
  EXPECT_LE(maxUlp(UnaryOp::Exp, linspace(-20, 20, 1000000), ref), 2.0);
  EXPECT_LE(maxUlp(UnaryOp::Exp, linspace(-104, 89, 1000000), ref), 2.0); // denormals, overflow
  std::vector<float> y = mapThrough(UnaryOp::Exp, {-kInf, kInf, kNaN, 0.0f, -0.0f, 100.0f, -200.0f});
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], kInf);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 1.0f);
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_EQ(y[5], kInf);
  EXPECT_EQ(y[6], 0.0f);
}

TEST_P(VectorMathOps, Erf) {
  auto ref = [](double x) { return std::erf(x); };
  EXPECT_LE(maxUlp(UnaryOp::Erf, linspace(-20, 20, 1000000), ref), 2.0);
  EXPECT_LE(maxUlp(UnaryOp::Erf, linspace(-1.5, 1.5, 1000000), ref), 2.0);
  EXPECT_LE(maxUlp(UnaryOp::Erf, logspace(1e-38, 1, 100000), ref), 2.0);
}

TEST_P(VectorMathOps, Tanh) {
  auto ref = [](double x) { return std::tanh(x); };
  EXPECT_LE(maxUlp(UnaryOp::Tanh, linspace(-20, 20, 1000000), ref), 2.0);
  EXPECT_LE(maxUlp(UnaryOp::Tanh, linspace(-1, 1, 1000000), ref), 2.0);
  EXPECT_LE(maxUlp(UnaryOp::Tanh, logspace(1e-38, 1, 100000), ref), 2.0);
}

TEST_P(VectorMathOps, Sigmoid) {
  EXPECT_LE(maxUlp(UnaryOp::Sigmoid, linspace(-20, 20, 1000000), sigmoidRef), 3.0);
  EXPECT_LE(maxUlp(UnaryOp::Sigmoid, linspace(-110, 40, 1000000), sigmoidRef), 3.0);
}

TEST_P(VectorMathOps, Rsqrt) {
  auto ref = [](double x) { return 1 / std::sqrt(x); };
  EXPECT_LE(maxUlp(UnaryOp::Rsqrt, logspace(1e-44, 3e38, 1000000), ref), 2.0);
  std::vector<float> y = mapThrough(UnaryOp::Rsqrt, {0.0f, -0.0f, kInf, -1.0f, kNaN});
  EXPECT_EQ(y[0], kInf);
  EXPECT_EQ(y[1], -kInf);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_TRUE(std::isnan(y[4]));
}

TEST_P(VectorMathOps, Reciprocal) {
  auto ref = [](double x) { return 1 / x; };
  EXPECT_LE(maxUlp(UnaryOp::Reciprocal, logspace(1e-37, 1e37, 1000000), ref), 0.5);
}

/// Max of |err| / max(1, |x|) over x.
double maxGeluError(UnaryOp op, const std::vector<float> &x,
                    const std::function<double(double)> &ref) {
  std::vector<float> y = mapThrough(op, x);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::fabs(y[i] - ref(x[i])) / std::max(1.0, std::fabs(double(x[i]))));
  return worst;
}

/// GELU: |err| <= bound max(1, |x|) everywhere (accurate: 2^-22; fast: 8e-5);
/// inf, -inf, NaN, +-0 like x·Φ(x).
void checkGelu(UnaryOp op, const std::function<double(double)> &ref, double bound) {
  EXPECT_LE(maxGeluError(op, linspace(-20, 20, 1000000), ref), bound);
  EXPECT_LE(maxGeluError(op, linspace(-1e4, 1e4, 100000), ref), bound);
  std::vector<float> s = mapThrough(op, {kInf, -kInf, kNaN, 0.0f, -0.0f, FLT_MAX, -FLT_MAX});
  EXPECT_EQ(s[0], kInf);
  // x·Φ(x) evaluated as written, as ONNX Runtime does: -inf · 0 is NaN.
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_TRUE(std::isnan(s[2]));
  EXPECT_EQ(s[3], 0.0f);
  EXPECT_EQ(s[4], 0.0f);
  EXPECT_EQ(s[5], FLT_MAX);
  EXPECT_EQ(s[6], 0.0f);
}

TEST_P(VectorMathOps, GeluErf) {
  checkGelu(UnaryOp::GeluErf, geluErfRef, std::ldexp(1.0, -22));
}

TEST_P(VectorMathOps, GeluTanh) {
  checkGelu(UnaryOp::GeluTanh, geluTanhRef, std::ldexp(1.0, -22));
  EXPECT_LE(maxUlp(UnaryOp::GeluTanh, linspace(0, 20, 1000000), geluTanhRef), 3.0);
}

// The fast forms: the sweeps above, every float with 3 <= |x| <= 5 (the
// fit's errors near 3.4-3.8, Phi's tail and the clamp at 3.95), and exact
// tails from the clamp on.
void checkFastGelu(UnaryOp op, const std::function<double(double)> &ref) {
  constexpr double kBound = 8e-5; // VectorMath.h
  checkGelu(op, ref, kBound);
  std::vector<float> x;
  for (float v = 3.0f; v <= 5.0f; v = std::nextafter(v, 6.0f))
    x.push_back(v), x.push_back(-v);
  const double worst = maxGeluError(op, x, ref);
  EXPECT_LE(worst, kBound);
  EXPECT_GT(worst, kBound / 4) << "the bound is loose: measure and tighten it";
  const std::vector<float> from = {3.95f, 4.0f, 4.5f, 17.0f};
  std::vector<float> in = from;
  for (float v : from)
    in.push_back(-v);
  std::vector<float> tails = mapThrough(op, in);
  for (size_t i = 0; i < from.size(); ++i) {
    EXPECT_EQ(tails[i], from[i]) << "GELU(" << from[i] << ")";
    EXPECT_EQ(tails[from.size() + i], 0.0f) << "GELU(" << -from[i] << ")";
  }
}

TEST_P(VectorMathOps, GeluErfFast) {
  checkFastGelu(UnaryOp::GeluErfFast, geluErfRef);
}

TEST_P(VectorMathOps, GeluTanhFast) {
  checkFastGelu(UnaryOp::GeluTanhFast, geluTanhRef);
}

INSTANTIATE_TEST_SUITE_P(Backends, VectorMathOps, ::testing::Values(Backend::Jit, Backend::Avx2),
                         [](const ::testing::TestParamInfo<Backend> &info) {
                           return info.param == Backend::Jit ? "Jit" : "Avx2";
                         });

// The AVX2 twins compute what the zmm code computes, operation for operation
// (VectorMathAvx2.h): the same bits, but for rsqrt (1 / sqrt there).
TEST(VectorMathAvx2, MatchesTheZmmCodeBitForBit) {
  if (!CpuFeatures::host().supports(Isa::Avx512) || !avx2::hostSupported())
    GTEST_SKIP() << "needs both AVX-512 and AVX2 + FMA on the host";
  std::vector<float> x = linspace(-110, 110, 400001);
  for (float v : logspace(1e-44, 3e38, 100000))
    x.push_back(v), x.push_back(-v);
  x.insert(x.end(), kSpecials.begin(), kSpecials.end());
  for (UnaryOp op : {UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Exp, UnaryOp::Erf, UnaryOp::Tanh,
                     UnaryOp::Sigmoid, UnaryOp::Reciprocal, UnaryOp::GeluErf, UnaryOp::GeluTanh,
                     UnaryOp::GeluErfFast, UnaryOp::GeluTanhFast}) {
    gBackend = Backend::Jit;
    const std::vector<float> jit = mapThrough(op, x);
    gBackend = Backend::Avx2;
    const std::vector<float> twin = mapThrough(op, x);
    int mismatches = 0;
    for (size_t i = 0; i < x.size(); ++i)
      if (std::memcmp(&jit[i], &twin[i], sizeof(float)) != 0 &&
          !(std::isnan(jit[i]) && std::isnan(twin[i])) && ++mismatches <= 3)
        ADD_FAILURE() << "op " << int(op) << ", x = " << x[i] << ": zmm " << jit[i] << ", AVX2 "
                      << twin[i];
    EXPECT_EQ(mismatches, 0) << "op " << int(op);
  }
}

/// n floats (a multiple of 16) through expFast.
class ExpFastKernel : public KernelGenerator {
public:
  ExpFastKernel() : KernelGenerator("exp_fast", Isa::Avx512) {}

protected:
  void generate() override {
    VectorMath math(*this, constants_, {zmm2, zmm3}, {});
    Xbyak::Label loop;
    L(loop);
    vmovups(zmm0, ptr[rdi]);
    math.expFast(zmm1, zmm0);
    vmovups(ptr[rsi], zmm1);
    add(rdi, 64);
    add(rsi, 64);
    sub(rdx, 16);
    jnz(loop);
    vzeroupper();
    ret();
    constants_.emit();
  }

private:
  ConstantTable constants_{*this};
};

std::vector<float> expFast(std::vector<float> x) {
  x.resize((x.size() + 15) / 16 * 16, 0.0f);
  std::vector<float> y(x.size());
  ExpFastKernel kernel;
  kernel.entry<void (*)(const float *, float *, int64_t)>()(x.data(), y.data(),
                                                            int64_t(x.size()));
  return y;
}

// The bound VectorMath.h states, over the softmax's arguments (x <= 0) and
// positive ones within range; the special values; the underflow to 0.
TEST(VectorMath, ExpFast) {
  REQUIRE_AVX512();
  std::vector<float> x = linspace(-87.3, 0, 1000000);
  for (float v : linspace(0, 88, 100000))
    x.push_back(v);
  std::vector<float> y = expFast(x);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::fabs(double(y[i]) / std::exp(double(x[i])) - 1.0));
  EXPECT_LE(worst, 1e-5);
  EXPECT_GT(worst, 1e-6) << "the bound is loose: measure and tighten it";
  y = expFast({-kInf, kNaN, 0.0f, -0.0f, -104.0f, -200.0f, -1e30f, -FLT_MAX});
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_NEAR(y[2], 1.0f, 1e-5f);
  EXPECT_NEAR(y[3], 1.0f, 1e-5f);
  EXPECT_LT(y[4], 1e-44f); // a denormal at most
  for (int i = 5; i < 8; ++i)
    EXPECT_EQ(y[i], 0.0f) << i;
}

/// Loads 16 floats, reduces, stores the broadcast result.
class ReduceKernel : public KernelGenerator {
public:
  explicit ReduceKernel(bool isMax) : KernelGenerator("reduce", Isa::Avx512), isMax_(isMax) {}

protected:
  void generate() override {
    VectorMath math(*this, constants_, {zmm2}, {});
    vmovups(zmm0, ptr[rdi]);
    isMax_ ? math.reduceMax(zmm1, zmm0) : math.reduceSum(zmm1, zmm0);
    vmovups(ptr[rsi], zmm1);
    vzeroupper();
    ret();
    constants_.emit();
  }

private:
  bool isMax_;
  ConstantTable constants_{*this};
};

TEST(VectorMath, Reductions) {
  REQUIRE_AVX512();
  for (bool isMax : {false, true}) {
    ReduceKernel kernel(isMax);
    auto fn = kernel.entry<void (*)(const float *, float *)>();
    float x[16], y[16];
    double sum = 0, mx = -INFINITY;
    for (int i = 0; i < 16; ++i) {
      x[i] = float((i * 7919) % 23) - 11.5f; // exact in f32, any order
      sum += x[i];
      mx = std::max(mx, double(x[i]));
    }
    fn(x, y);
    for (int i = 0; i < 16; ++i)
      EXPECT_EQ(y[i], float(isMax ? mx : sum)) << "lane " << i;
  }
}

/// 16 floats through geluErfFast / geluTanhFast, doubled or not, in place
/// (dst == src) or not.
class FastGeluKernel : public KernelGenerator {
public:
  FastGeluKernel(bool tanhForm, bool timesTwo, bool inPlace)
      : KernelGenerator("fast_gelu", Isa::Avx512), tanh_(tanhForm), timesTwo_(timesTwo),
        inPlace_(inPlace) {}

protected:
  void generate() override {
    VectorMath math(*this, constants_, {zmm2, zmm3, zmm4}, {});
    vmovups(zmm0, ptr[rdi]);
    const Xbyak::Zmm &dst = inPlace_ ? zmm0 : zmm1;
    tanh_ ? math.geluTanhFast(dst, zmm0, timesTwo_) : math.geluErfFast(dst, zmm0, timesTwo_);
    vmovups(ptr[rsi], dst);
    vzeroupper();
    ret();
    constants_.emit();
  }

private:
  bool tanh_, timesTwo_, inPlace_;
  ConstantTable constants_{*this};
};

// The doubled fast GELU is bit for bit twice the plain one (away from the
// subnormals), so a requantize by 1 / (2 out_scale) gives the same codes
// (ProgramLowering::resultScale).
TEST(VectorMath, FastGeluTimesTwoIsExactlyTwiceThePlainOne) {
  REQUIRE_AVX512();
  std::vector<float> x = linspace(-20, 20, 160000);
  x.insert(x.end(), kSpecials.begin(), kSpecials.end());
  for (float v = 3.0f; v <= 5.0f; v = std::nextafter(v, 6.0f))
    x.push_back(v), x.push_back(-v);
  x.resize((x.size() + 15) / 16 * 16, 1.0f);
  for (bool tanhForm : {false, true})
    for (bool inPlace : {false, true}) {
      FastGeluKernel plain(tanhForm, false, inPlace), doubled(tanhForm, true, inPlace);
      auto f = plain.entry<void (*)(const float *, float *)>();
      auto g = doubled.entry<void (*)(const float *, float *)>();
      int mismatches = 0;
      for (size_t i = 0; i < x.size(); i += 16) {
        float y[16], z[16];
        f(&x[i], y), g(&x[i], z);
        for (int l = 0; l < 16; ++l) {
          const float want = 2.0f * y[l];
          // Near the subnormals halving is not exact: the two differ by
          // less than FLT_MIN there, which no requantize can see.
          const bool tiny = std::fabs(x[i + l]) < 0x1p-100f;
          const bool same = std::isnan(want) ? std::isnan(z[l])
                                             : z[l] == want || (tiny && std::fabs(z[l] - want) < FLT_MIN);
          if (!same && ++mismatches <= 5)
            ADD_FAILURE() << (tanhForm ? "tanh" : "erf") << (inPlace ? " in place" : "")
                          << ": x = " << x[i + l] << ": doubled " << z[l] << ", 2 x plain "
                          << want;
        }
      }
      EXPECT_EQ(mismatches, 0);
    }
}

} // namespace
