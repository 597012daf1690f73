//===- QuantStepsTest.cpp - quantize kernels and the INT8 runtime steps ---===//
//
// References are written here from the formulas (docs/int8-quantization.md,
// docs/int8-gemm.md), not taken from the code under test:
//  - quantize_per_row / quantize: bit for bit (the formulas are exact f32
//    divisions, round-half-even and saturation);
//  - qlinear: exact int32 sums, acc = f32(f32(xs·ws)·f32(sum)) + bias, the
//    epilogue by ElementwiseProgram::evaluate, requantize by division. Forms
//    whose program is exact arithmetic must match bit for bit (f32) and
//    exactly (u8/s8); transcendental programs (GELU) within VectorMath's
//    few-ulp bound (f32) or one step (u8/s8).
// Each case runs the VNNI GEMM (when the host has it) and the reference loop
// (KernelOptions::allowAvx512 = false).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/onednn/MatMulU8S8.h"
#include "compiler/codegen/x86/AmxSupport.h"
#include "compiler/codegen/x86/Int8GemmAvx2.h"
#include "compiler/codegen/x86/Int8GemmDriver.h"
#include "compiler/codegen/x86/QuantizeKernels.h"
#include "runtime/Steps.h"
#include "test/unit/PlanTestUtil.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace {
using namespace octet::rt;
using Op = ElementwiseProgram::Op;
using octet::WeightLayout;

#define SKIP_WITHOUT_AVX512()                                                                      \
  if (!octet::x86::quantizeKernelsSupported())                                                     \
  GTEST_SKIP() << "host lacks AVX-512 F/BW/DQ/VL"

// ---- references -------------------------------------------------------------

int32_t refQuantize(float x, float scale, int32_t zp, int32_t lo, int32_t hi) {
  const float v = std::nearbyint(x / scale);
  if (std::isnan(v))
    return zp;
  const double q = double(v) + zp;
  return int32_t(std::min<double>(std::max<double>(q, lo), hi));
}

float refRowScale(const float *x, int64_t k) {
  float m = 0;
  for (int64_t j = 0; j < k; ++j)
    if (!std::isnan(x[j]) && std::fabs(x[j]) > m)
      m = std::fabs(x[j]);
  return m == 0 ? 1.0f : m / 127.0f;
}

uint8_t refRowQ(float x, float s) {
  const float v = std::nearbyint(x / s);
  if (std::isnan(v))
    return 128;
  return uint8_t(int(std::min(std::max(v, -127.0f), 127.0f)) + 128);
}

/// Rows with ties, zeros, NaN, infinities, huge and tiny values.
std::vector<float> awkwardRows(int64_t rows, int64_t cols, int64_t ld, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-3, 3);
  std::vector<float> x(rows * ld, 7.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float v = u(gen);
      switch ((r * 31 + j * 7) % 23) {
      case 0:
        v = std::nearbyint(v * 4) / 4 + 0.5f;
        break; // halves: ties after / s = 1
      case 1:
        v = 0;
        break;
      case 2:
        v = -0.0f;
        break;
      case 3:
        v = std::numeric_limits<float>::quiet_NaN();
        break;
      default:
        break;
      }
      x[r * ld + j] = v;
    }
  if (rows > 1) // an all-zero row: scale 1
    for (int64_t j = 0; j < cols; ++j)
      x[1 * ld + j] = 0;
  if (rows > 2) // an infinity: scale inf, inf / inf = NaN -> 128
    x[2 * ld + cols / 2] = std::numeric_limits<float>::infinity();
  if (rows > 3) // integers 0..127 with absmax 127: scale 1, every x / s exact
    for (int64_t j = 0; j < cols; ++j)
      x[3 * ld + j] = float((j * 37) % 255) - 127.0f;
  if (rows > 4) // subnormal absmax
    for (int64_t j = 0; j < cols; ++j)
      x[4 * ld + j] = j % 3 ? 1e-40f : -3e-39f;
  return x;
}

// ---- QuantizePerRowKernel / QuantizeKernel --------------------------------------

// The requantize of hosts without AVX-512 (8 AVX2 lanes, then a scalar tail):
// the formula bit for bit, ties, NaN, infinities and values past the range
// included, u8 and s8, every tail length.
TEST(QuantizeKernels, CompiledRowMatchesTheFormula) {
  std::vector<float> x;
  for (int i = -300; i <= 300; ++i)
    x.push_back(float(i) * 0.5f); // ties at every other value
  for (float v : {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, -0.0f, 0.49999997f})
    x.push_back(v);
  for (int32_t lo : {0, -128})
    for (int32_t zp : {lo, lo + 7, lo + 255})
      for (float scale : {1.0f, 0.37f, 3.0f})
        for (int64_t count :
             {int64_t(0), int64_t(1), int64_t(7), int64_t(8), int64_t(13), int64_t(x.size())}) {
          std::vector<uint8_t> q(size_t(count) + 1, 0xa5);
          octet::x86::quantizeRowCompiled(x.data(), q.data(), count, scale, zp, lo, lo + 255);
          for (int64_t i = 0; i < count; ++i)
            ASSERT_EQ(q[i], uint8_t(octet::x86::quantizeScalar(x[i], scale, zp, lo, lo + 255)))
                << "x " << x[i] << " scale " << scale << " zp " << zp << " lo " << lo;
          ASSERT_EQ(q[count], 0xa5) << "wrote past the row";
        }
}

TEST(QuantizeKernels, PerRowMatchesTheFormulaBitForBit) {
  SKIP_WITHOUT_AVX512();
  octet::x86::QuantizePerRowKernel kernel;
  for (int64_t cols : {1, 3, 15, 16, 17, 63, 64, 65, 100, 768, 1001})
    for (int64_t rows : {1, 6, 9}) {
      const int64_t ldx = cols + 5, ldq = cols + 3;
      std::vector<float> x = awkwardRows(rows, cols, ldx, unsigned(cols * 10 + rows));
      std::vector<uint8_t> q(rows * ldq + 64, 0xa5), qScalar(rows * cols);
      std::vector<float> s(rows + 1, -1.0f);
      octet::x86::QuantizePerRowArgs args{};
      args.x = x.data(), args.q = q.data(), args.scale = s.data();
      args.rows = rows, args.cols = cols, args.ldx = ldx, args.ldq = ldq;
      kernel.run(args);
      for (int64_t r = 0; r < rows; ++r) {
        const float want = refRowScale(&x[r * ldx], cols);
        ASSERT_EQ(std::memcmp(&s[r], &want, 4), 0)
            << "cols " << cols << " row " << r << ": scale " << s[r] << ", want " << want;
        EXPECT_EQ(octet::x86::quantizeRowScalar(&x[r * ldx], cols, &qScalar[r * cols]), want);
        for (int64_t j = 0; j < cols; ++j) {
          ASSERT_EQ(int(q[r * ldq + j]), int(refRowQ(x[r * ldx + j], want)))
              << "cols " << cols << " row " << r << " col " << j << " x " << x[r * ldx + j];
          ASSERT_EQ(int(qScalar[r * cols + j]), int(refRowQ(x[r * ldx + j], want)));
        }
        for (int64_t j = cols; j < (r + 1 < rows ? ldq : ldq + 64); ++j)
          ASSERT_EQ(q[r * ldq + j], 0xa5) << "padding byte written: row " << r << " col " << j;
      }
      EXPECT_EQ(s[rows], -1.0f) << "a scale past the rows was written";
    }
}

TEST(QuantizeKernels, PerRowNeverReadsPastTheRow) {
  SKIP_WITHOUT_AVX512();
  const long page = sysconf(_SC_PAGESIZE);
  for (int64_t cols : {1, 17, 33}) {
    // The row ends exactly at a PROT_NONE page.
    char *mem = static_cast<char *>(
        mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(mem, MAP_FAILED);
    ASSERT_EQ(mprotect(mem + page, page, PROT_NONE), 0);
    float *x = reinterpret_cast<float *>(mem + page) - cols;
    for (int64_t j = 0; j < cols; ++j)
      x[j] = float(j) - 5.5f;
    std::vector<uint8_t> q(cols);
    float s = 0;
    octet::x86::QuantizePerRowKernel kernel;
    octet::x86::QuantizePerRowArgs args{};
    args.x = x, args.q = q.data(), args.scale = &s, args.rows = 1, args.cols = cols;
    args.ldx = cols, args.ldq = cols;
    kernel.run(args);
    EXPECT_EQ(s, refRowScale(x, cols));
    munmap(mem, 2 * page);
  }
}

TEST(QuantizeKernels, PerTensorMatchesTheFormulaBitForBit) {
  SKIP_WITHOUT_AVX512();
  using octet::x86::QuantOutput;
  for (QuantOutput out : {QuantOutput::U8, QuantOutput::S8}) {
    octet::x86::QuantizeKernel kernel(out);
    const int32_t lo = out == QuantOutput::U8 ? 0 : -128, hi = lo + 255;
    for (int64_t count : {1, 15, 16, 17, 100, 1000})
      for (float scale : {0.25f, 0.0173f, 3.0f})
        for (int32_t zp : {lo, lo + 128, hi, lo + 3}) {
          std::vector<float> x = awkwardRows(1, count, count, unsigned(count + zp));
          x[0] = 1e30f;
          if (count > 1)
            x[1] = -1e30f;
          std::vector<uint8_t> q(count + 32, 0xa5);
          kernel.run(x.data(), q.data(), count, scale, zp);
          for (int64_t i = 0; i < count; ++i) {
            const int got = out == QuantOutput::U8 ? int(q[i]) : int(int8_t(q[i]));
            ASSERT_EQ(got, refQuantize(x[i], scale, zp, lo, hi))
                << "x " << x[i] << " scale " << scale << " zp " << zp;
            ASSERT_EQ(got, octet::x86::quantizeScalar(x[i], scale, zp, lo, hi));
          }
          for (int64_t i = count; i < count + 32; ++i)
            ASSERT_EQ(q[i], 0xa5) << "byte past the tensor written";
        }
    EXPECT_THROW(kernel.run(nullptr, nullptr, 1, 1.0f, lo - 1), std::invalid_argument);
  }
  EXPECT_THROW(octet::x86::QuantizeKernel(QuantOutput::F32), std::invalid_argument);
}

// The reciprocal form: RNE(x * f32(1 / scale)) + zp, saturated, NaN to zp,
// bit for bit; its own kernel name (an AOT image never mixes the two).
TEST(QuantizeKernels, PerTensorReciprocalMatchesItsFormulaBitForBit) {
  SKIP_WITHOUT_AVX512();
  using octet::x86::QuantizeDivision;
  using octet::x86::QuantOutput;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (QuantOutput out : {QuantOutput::U8, QuantOutput::S8}) {
    octet::x86::QuantizeKernel kernel(out, QuantizeDivision::Reciprocal);
    EXPECT_NE(kernel.name(), octet::x86::QuantizeKernel(out).name());
    const int32_t lo = out == QuantOutput::U8 ? 0 : -128, hi = lo + 255;
    int differences = 0;
    for (int64_t count : {1, 15, 16, 17, 100, 1000})
      for (float scale : {0.25f, 0.0173f, 3.0f, 1e-3f})
        for (int32_t zp : {lo, lo + 128, hi, lo + 3}) {
          std::vector<float> x = awkwardRows(1, count, count, unsigned(count + zp));
          const float specials[] = {1e30f, -1e30f, nan, inf, -inf};
          for (int64_t i = 0; i < std::min<int64_t>(count, 5); ++i)
            x[i] = specials[i];
          std::vector<uint8_t> q(count + 32, 0xa5);
          kernel.run(x.data(), q.data(), count, scale, zp);
          for (int64_t i = 0; i < count; ++i) {
            const int got = out == QuantOutput::U8 ? int(q[i]) : int(int8_t(q[i]));
            ASSERT_EQ(got, refQuantize(x[i] * (1.0f / scale), 1.0f, zp, lo, hi))
                << "x " << x[i] << " scale " << scale << " zp " << zp;
            // Against the division: at most one code, at a tie.
            const int exact = refQuantize(x[i], scale, zp, lo, hi);
            ASSERT_LE(std::abs(got - exact), 1) << "x " << x[i] << " scale " << scale;
            differences += got != exact;
          }
          for (int64_t i = count; i < count + 32; ++i)
            ASSERT_EQ(q[i], 0xa5) << "byte past the tensor written";
        }
    EXPECT_LT(differences, 20) << "the reciprocal should move a code only near ties";
    // One case where the two differ: f32(2.25 / 0.3f) lies just below 7.5
    // (code 7), f32(2.25 * f32(1 / 0.3f)) is the tie 7.5 itself (RNE: 8).
    const float x = 2.25f;
    uint8_t q = 0;
    kernel.run(&x, &q, 1, 0.3f, 0);
    const int got = out == QuantOutput::U8 ? int(q) : int(int8_t(q));
    EXPECT_EQ(refQuantize(x, 0.3f, 0, lo, hi), 7);
    EXPECT_EQ(got, 8) << "the kernel divides";
  }
}

// ---- Step harness -------------------------------------------------------------

struct Harness : test::BoundPlan {
  TensorId tensor(const std::vector<int64_t> &shape, void *data, DType dtype,
                  const std::vector<int64_t> &strides = {}) {
    TensorId t = BoundPlan::tensor("t" + std::to_string(plan.tensors.size()), shape, data,
                                   strides.empty() ? Storage::Arena : Storage::View, dtype);
    for (int64_t s : strides)
      plan.tensors[t].viewStrides.push_back(constant(s));
    return t;
  }
};

KernelOptions noAvx512() {
  KernelOptions o;
  o.allowAvx512 = false;
  return o;
}

TEST(QuantizePerRowStep, JitAndCompiledMatchTheFormula) {
  for (bool jit : {true, false}) {
    if (jit && !octet::x86::quantizeKernelsSupported())
      continue;
    const int64_t b = 3, s = 7, k = 77;
    std::vector<float> x = awkwardRows(b * s, k, k, 5);
    std::vector<uint8_t> q(b * s * k, 0);
    std::vector<float> scales(b * s, 0);
    Harness h;
    TensorId in = h.tensor({b, s, k}, x.data(), DType::F32);
    TensorId out = h.tensor({b, s, k}, q.data(), DType::U8);
    TensorId sc = h.tensor({b, s, 1}, scales.data(), DType::F32);
    std::string error;
    StepPtr step = makeQuantizePerRow(in, out, sc, jit ? KernelOptions() : noAvx512(), error);
    ASSERT_TRUE(step) << error;
    EXPECT_EQ(step->kind(), jit ? "quantize_per_row.jit_avx512" : "quantize_per_row.compiled");
    ASSERT_TRUE(h.run(*step).ok());
    for (int64_t r = 0; r < b * s; ++r) {
      const float want = refRowScale(&x[r * k], k);
      ASSERT_EQ(scales[r], want) << "row " << r;
      for (int64_t j = 0; j < k; ++j)
        ASSERT_EQ(int(q[r * k + j]), int(refRowQ(x[r * k + j], want))) << r << ", " << j;
    }
  }
}

TEST(QuantizePerRowStep, RejectsBadShapesAndTypes) {
  std::vector<float> x(12), scales(4);
  std::vector<uint8_t> q(12);
  Harness h;
  TensorId in = h.tensor({4, 3}, x.data(), DType::F32);
  TensorId out = h.tensor({4, 3}, q.data(), DType::U8);
  TensorId badScale = h.tensor({4}, scales.data(), DType::F32);
  TensorId badOut = h.tensor({4, 3}, x.data(), DType::F32);
  TensorId sc = h.tensor({4, 1}, scales.data(), DType::F32);
  std::string error;
  StepPtr step = makeQuantizePerRow(in, out, badScale, KernelOptions(), error);
  ASSERT_TRUE(step) << error;
  Status st = h.run(*step);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("scales [4, 1]"), std::string::npos) << st.message();
  step = makeQuantizePerRow(in, badOut, sc, KernelOptions(), error);
  st = h.run(*step);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("f32 -> u8"), std::string::npos) << st.message();
  EXPECT_FALSE(makeQuantizePerRow(in, -1, sc, KernelOptions(), error));
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
}

TEST(QuantizeStep, PerTensorJitAndPerAxisLoopMatchTheFormula) {
  const int64_t rows = 5, cols = 37;
  std::vector<float> x = awkwardRows(rows, cols, cols, 9);
  for (bool perAxis : {false, true})
    for (DType type : {DType::U8, DType::I8})
      for (bool jit : {true, false}) {
        std::vector<float> scale = perAxis ? std::vector<float>(cols) : std::vector<float>{0.0371f};
        for (size_t i = 0; i < scale.size(); ++i)
          scale[i] = 0.01f + 0.003f * float(i);
        std::vector<uint8_t> zp(scale.size(), type == DType::U8 ? 131 : uint8_t(int8_t(-7)));
        std::vector<uint8_t> q(rows * cols);
        Harness h;
        TensorId in = h.tensor({rows, cols}, x.data(), DType::F32);
        TensorId s = perAxis ? h.tensor({cols}, scale.data(), DType::F32)
                             : h.tensor({}, scale.data(), DType::F32);
        TensorId z = perAxis ? h.tensor({cols}, zp.data(), type) : h.tensor({}, zp.data(), type);
        TensorId out = h.tensor({rows, cols}, q.data(), type);
        StepPtr step = makeQuantize(in, s, z, 1, out, jit ? KernelOptions() : noAvx512());
        if (jit && octet::x86::quantizeKernelsSupported()) {
          EXPECT_EQ(step->kind(), "quantize.jit_avx512");
        }
        ASSERT_TRUE(h.run(*step).ok());
        const int32_t lo = type == DType::U8 ? 0 : -128;
        for (int64_t i = 0; i < rows * cols; ++i) {
          const int64_t p = perAxis ? i % cols : 0;
          const int32_t z0 = type == DType::U8 ? int32_t(zp[p]) : int32_t(int8_t(zp[p]));
          const int got = type == DType::U8 ? int(q[i]) : int(int8_t(q[i]));
          ASSERT_EQ(got, refQuantize(x[i], scale[p], z0, lo, lo + 255)) << i;
        }
      }
}

// ---- makeQLinear ----------------------------------------------------------------

/// One qlinear problem: u8 activations, s8 weights, scales; the expected
/// results computed from the formula.
struct QProblem {
  int64_t b, s, k, n;
  std::vector<uint8_t> x;
  std::vector<int8_t> w; // [K, N]
  std::vector<float> ws, bias, xsRow, residual, rowExtra, colExtra;
  float xs = 0.0123f;
  uint8_t xzp = 128;
  float ys = 0.0371f;
  uint8_t yzpU8 = 121;

  QProblem(int64_t b, int64_t s, int64_t k, int64_t n, unsigned seed)
      : b(b), s(s), k(k), n(n), x(b * s * k), w(k * n), ws(n), bias(n), xsRow(b * s),
        residual(b * s * n), rowExtra(b * s), colExtra(n) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> u8(0, 255), s8(-127, 127);
    std::uniform_real_distribution<float> unit(-1, 1), pos(0.5f, 1.5f);
    for (auto &v : x)
      v = uint8_t(u8(gen));
    for (auto &v : w)
      v = int8_t(s8(gen));
    const float norm = 1.0f / (60.0f * std::sqrt(float(k)));
    for (int64_t j = 0; j < n; ++j)
      ws[j] = pos(gen) * norm * 0.03f, bias[j] = unit(gen) * 0.5f;
    for (auto &v : xsRow)
      v = pos(gen) * 0.0123f;
    for (auto &v : residual)
      v = unit(gen);
    for (auto &v : rowExtra)
      v = pos(gen);
    for (auto &v : colExtra)
      v = pos(gen);
  }

  /// acc (bias added) of element (i, j), as the formula defines it.
  float acc(int64_t i, int64_t j, bool perRow) const {
    int32_t sum = 0;
    for (int64_t kk = 0; kk < k; ++kk)
      sum += (int32_t(x[i * k + kk]) - xzp) * int32_t(w[kk * n + j]);
    const float scale = (perRow ? xsRow[i] : xs) * ws[j];
    return scale * float(sum) + bias[j];
  }
};

struct Form {
  std::string name;
  ElementwiseProgram program; ///< inputs: acc, residual [b,s,n], rowExtra [b,s,1], colExtra [n]
  bool exact;                 ///< only exact arithmetic
  std::string vnniKind;       ///< what the VNNI step's kind() must contain (f32 result)
};

std::vector<Form> forms() {
  std::vector<Form> f;
  auto add = [&](std::string name, std::vector<ElementwiseProgram::Instr> instrs, bool exact,
                 std::string kind) {
    ElementwiseProgram p;
    p.numInputs = 4;
    p.instrs = std::move(instrs);
    f.push_back({std::move(name), p, exact, std::move(kind)});
  };
  add("identity", {}, true, "qgemm.jit_vnni");
  add("residual", {{Op::Input, 0}, {Op::Input, 1}, {Op::Add, 0, 1}}, true, "+residual");
  add("gelu", {{Op::Input, 0}, {Op::GeluErf, 0}}, false, "+epilogue");
  add("residual+gelu", {{Op::Input, 1}, {Op::Input, 0}, {Op::Add, 1, 0}, {Op::GeluErf, 2}}, false,
      "+residual+epilogue");
  add("scale*2+1",
      {{Op::Input, 0},
       {Op::Constant, -1, -1, 2},
       {Op::Mul, 0, 1},
       {Op::Constant, -1, -1, 1},
       {Op::Add, 2, 3}},
      true, "+epilogue");
  // Reads a [b, s, 1] extra: not the residual form, applied after the GEMM.
  add("acc*row+residual",
      {{Op::Input, 0}, {Op::Input, 2}, {Op::Mul, 0, 1}, {Op::Input, 1}, {Op::Add, 2, 3}}, true,
      "+post.");
  // Per-column extras (SmoothQuant's 1/s after GELU in the FFN-in): fused.
  add("gelu*col", {{Op::Input, 0}, {Op::GeluErf, 0}, {Op::Input, 3}, {Op::Mul, 1, 2}}, false,
      "+epilogue.columns");
  // The same as a fused region spells GELU out: folded back into one GELU
  // (fast, for a u8/s8 result) by the zmm lowering and the block interpreter.
  add("spelled gelu*col",
      {{Op::Input, 0},
       {Op::Constant, -1, -1, 0.5f},
       {Op::Mul, 0, 1},
       {Op::Constant, -1, -1, 0.70710677f},
       {Op::Mul, 0, 3},
       {Op::Erf, 4},
       {Op::Constant, -1, -1, 1.0f},
       {Op::Add, 5, 6},
       {Op::Mul, 2, 7},
       {Op::Input, 3},
       {Op::Mul, 8, 9}},
      false, "+epilogue.columns");
  add("(acc+residual)*col-col",
      {{Op::Input, 0},
       {Op::Input, 1},
       {Op::Add, 0, 1},
       {Op::Input, 3},
       {Op::Mul, 2, 3},
       {Op::Sub, 4, 3}},
      true, "+residual+epilogue.columns");
  // acc used twice: no residual split, the whole program after the GEMM.
  add("acc*acc-residual", {{Op::Input, 0}, {Op::Mul, 0, 0}, {Op::Input, 1}, {Op::Sub, 1, 2}}, true,
      "+post.");
  return f;
}

enum class Provider { Reference, Vnni, Amx, OneDnn, Avx2 };

KernelOptions optionsFor(Provider provider) {
  KernelOptions o;
  if (provider == Provider::OneDnn)
    o.gemm = KernelOptions::Gemm::OneDnn;
  return o;
}

void runQLinear(const QProblem &p, const Form &form, DType outType, bool perRow, bool constScale,
                Provider provider) {
  // The JIT GEMMs share one epilogue: the AMX step must match as the VNNI one.
  const bool vnni = provider == Provider::Vnni || provider == Provider::Amx;
  const int64_t m = p.b * p.s;
  const std::string what = form.name + " " + dtypeName(outType) + (perRow ? " per-row" : "") +
                           (constScale ? " const-scale" : " runtime-scale") +
                           (provider == Provider::Vnni     ? " vnni"
                            : provider == Provider::Amx    ? " amx"
                            : provider == Provider::OneDnn ? " onednn"
                            : provider == Provider::Avx2   ? " avx2"
                                                           : " reference");
  Harness h;
  std::vector<uint8_t> x = p.x;
  float xs = p.xs, ys = p.ys;
  uint8_t xzp = p.xzp, yzpU8 = p.yzpU8;
  int8_t yzpS8 = -9;
  std::vector<float> xsRow = p.xsRow, residual = p.residual, rowExtra = p.rowExtra,
                     colExtra = p.colExtra;
  const int bytes = outType == DType::F32 ? 4 : 1;
  std::vector<uint8_t> out(m * p.n * bytes + 64, 0xa5);
  QLinearSpec spec;
  spec.input = h.tensor({p.b, p.s, p.k}, x.data(), DType::U8);
  spec.output = h.tensor({p.b, p.s, p.n}, out.data(), outType);
  spec.weight = p.w.data(), spec.k = p.k, spec.n = p.n;
  spec.bias = p.bias.data();
  spec.wScale = p.ws.data(), spec.wScaleCount = p.n;
  spec.xScalePerRow = perRow;
  spec.xScale =
      perRow ? h.tensor({p.b, p.s, 1}, xsRow.data(), DType::F32) : h.tensor({}, &xs, DType::F32);
  spec.xScaleConst = !perRow && constScale ? &xs : nullptr;
  spec.xZeroPoint = h.tensor({}, &xzp, DType::U8);
  spec.xZeroPointConst = &xzp;
  if (outType != DType::F32) {
    spec.outScale = h.tensor({}, &ys, DType::F32);
    spec.outScaleConst = &ys;
    void *zp = outType == DType::U8 ? static_cast<void *>(&yzpU8) : static_cast<void *>(&yzpS8);
    spec.outZeroPoint = h.tensor({}, zp, outType);
    spec.outZeroPointConst = zp;
  }
  spec.extras = {h.tensor({p.b, p.s, p.n}, residual.data(), DType::F32),
                 h.tensor({p.b, p.s, 1}, rowExtra.data(), DType::F32),
                 h.tensor({1, p.n}, colExtra.data(), DType::F32)};
  spec.extraPerColumn = {false, false, true};
  spec.epilogue = form.program;
  // Where the rule would pick AMX (an AMX host), the VNNI case asks for VNNI.
  if (vnni)
    spec.provider.fill(provider == Provider::Amx ? GemmProvider::JitAmx : GemmProvider::JitVnni);
  if (provider == Provider::Avx2)
    spec.provider.fill(GemmProvider::JitAvx2);
  if (provider == Provider::Reference)
    spec.provider.fill(GemmProvider::Reference);
  std::string error;
  StepPtr step = makeQLinear(spec, outType, optionsFor(provider), error);
  ASSERT_TRUE(step) << what << ": " << error;
  std::string vnniKind = form.vnniKind;
  if (provider == Provider::Amx && vnniKind == "qgemm.jit_vnni")
    vnniKind = "qgemm.jit_amx";
  if (provider == Provider::OneDnn) {
    EXPECT_EQ(step->kind().rfind("qgemm.onednn", 0), 0u) << what << ": " << step->kind();
  }
  if (vnni && outType == DType::F32) {
    EXPECT_NE(step->kind().find(vnniKind), std::string::npos) << what << ": " << step->kind();
  }
  if (vnni && outType != DType::F32 && form.vnniKind == "+post.") {
    EXPECT_NE(step->kind().find("+requant"), std::string::npos) << what << ": " << step->kind();
  }
  if (provider == Provider::Reference) {
    EXPECT_EQ(step->kind().rfind("qgemm.reference", 0), 0u) << step->kind();
  }
  if (provider == Provider::Avx2) {
    EXPECT_EQ(step->kind().rfind("qgemm.jit_avx2", 0), 0u) << what << ": " << step->kind();
  }
  Status st = h.run(*step);
  ASSERT_TRUE(st.ok()) << what << ": " << st.message();

  const int32_t lo = outType == DType::U8 ? 0 : -128, hi = lo + 255;
  const int32_t yzp = outType == DType::U8 ? yzpU8 : yzpS8;
  int failures = 0;
  for (int64_t i = 0; i < m && failures < 5; ++i)
    for (int64_t j = 0; j < p.n && failures < 5; ++j) {
      float in[4] = {p.acc(i, j, perRow), p.residual[i * p.n + j], p.rowExtra[i], p.colExtra[j]};
      const float y = form.program.instrs.empty() ? in[0] : form.program.evaluate(in);
      // Reference loop: exactly the formula. VNNI: exact for exact programs.
      // oneDNN: within its bias-quotient rounding (MatMulU8S8.h).
      // AVX2: its epilogue is the formula's; the post-pass exact where the form is.
      const bool exact =
          provider == Provider::Reference || ((vnni || provider == Provider::Avx2) && form.exact);
      if (outType == DType::F32) {
        float got;
        std::memcpy(&got, &out[(i * p.n + j) * 4], 4);
        const bool ok = exact ? std::memcmp(&got, &y, 4) == 0
                              : std::fabs(got - y) <= 4e-6f * (1 + std::fabs(y));
        if (!ok && failures++ < 5)
          ADD_FAILURE() << what << ": [" << i << ", " << j << "] = " << got << ", want " << y;
      } else {
        const int got =
            outType == DType::U8 ? int(out[i * p.n + j]) : int(int8_t(out[i * p.n + j]));
        const int want = refQuantize(y, ys, yzp, lo, hi);
        if ((exact ? got != want : std::abs(got - want) > 1) && failures++ < 5)
          ADD_FAILURE() << what << ": [" << i << ", " << j << "] = " << got << ", want " << want
                        << " (y " << y << ")";
      }
    }
  for (size_t e = m * p.n * bytes; e < out.size(); ++e)
    ASSERT_EQ(out[e], 0xa5) << what << ": byte past the result written";
}

TEST(QLinearStep, EveryEpilogueFormMatchesTheFormula) {
  const bool vnniHost = octet::x86::Int8GemmDriver::hostSupported();
  std::string amxWhy;
  const bool amxHost = octet::x86::amxUsable(&amxWhy);
  // Odd shapes: M tails (M = 2·9 = 18 > MR), an N tail, a K tail and K blocks.
  const std::vector<std::array<int64_t, 4>> shapes = {
      {1, 1, 1, 1}, {2, 9, 37, 53}, {1, 5, 770, 17}};
  for (const auto &shape : shapes) {
    QProblem p(shape[0], shape[1], shape[2], shape[3], unsigned(shape[2] + shape[3]));
    for (const Form &form : forms())
      for (DType outType : {DType::F32, DType::U8, DType::I8})
        for (Provider provider :
             {Provider::Reference, Provider::Vnni, Provider::Amx, Provider::Avx2}) {
          if ((provider == Provider::Vnni && !vnniHost) ||
              (provider == Provider::Amx && !amxHost) ||
              (provider == Provider::Avx2 && !octet::x86::Int8GemmAvx2::hostSupported()))
            continue;
          runQLinear(p, form, outType, false, true, provider);
        }
  }
  if (!vnniHost)
    GTEST_SKIP() << "host lacks AVX-512 VNNI: the reference loop and the AVX2 GEMM ran";
  if (!amxHost)
    GTEST_SKIP() << "AMX not usable (" << amxWhy << "): the reference loop and VNNI ran";
}

TEST(QLinearStep, PerRowAndRunTimeScales) {
  const bool vnniHost = octet::x86::Int8GemmDriver::hostSupported();
  const bool amxHost = octet::x86::amxUsable();
  QProblem p(2, 11, 45, 70, 3);
  const std::vector<Form> all = forms();
  for (const Form &form : {all[0], all[1], all[2], all[5]})
    for (DType outType : {DType::F32, DType::U8})
      for (Provider provider :
           {Provider::Reference, Provider::Vnni, Provider::Amx, Provider::Avx2}) {
        if ((provider == Provider::Vnni && !vnniHost) || (provider == Provider::Amx && !amxHost) ||
            (provider == Provider::Avx2 && !octet::x86::Int8GemmAvx2::hostSupported()))
          continue;
        runQLinear(p, form, outType, true, false, provider);  // per row
        runQLinear(p, form, outType, false, false, provider); // per tensor, known at run time
      }
  if (!vnniHost)
    GTEST_SKIP() << "host lacks AVX-512 VNNI: the reference loop and the AVX2 GEMM ran";
}

/// A [1, 3, 16] x [16, 8] f32 qlinear with a_zp 128; the x scale is the test's.
struct SmallQLinear {
  QProblem p{1, 3, 16, 8, 5};
  Harness h;
  std::vector<uint8_t> x = p.x;
  std::vector<float> out = std::vector<float>(3 * 8);
  uint8_t xzp = 128;
  QLinearSpec spec;
  SmallQLinear() {
    spec.input = h.tensor({1, 3, 16}, x.data(), DType::U8);
    spec.output = h.tensor({1, 3, 8}, out.data(), DType::F32);
    spec.weight = p.w.data(), spec.k = 16, spec.n = 8;
    spec.wScale = p.ws.data(), spec.wScaleCount = 8;
    spec.xZeroPoint = h.tensor({}, &xzp, DType::U8);
    spec.xZeroPointConst = &xzp;
  }
};

// --gemm onednn: oneDNN's int8 matmul runs every form it can be given (bias,
// residual and GELU fused, the rest after it, u8/s8 with a residual through
// an f32 scratch) and refuses, saying why, what oneDNN 2.6 cannot express.
TEST(QLinearStep, ForcedOneDnnMatchesTheFormulaOrRefuses) {
  const std::vector<Form> all = forms();
  for (const auto &shape : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 1}, {2, 9, 37, 53}})
    for (const Form &form : all)
      for (DType outType : {DType::F32, DType::U8, DType::I8}) {
        QProblem p(shape[0], shape[1], shape[2], shape[3], unsigned(shape[2] * 7 + shape[3]));
        if (!octet::onednn::oneDnnHasInt8Vnni()) // 7-bit weights only (MatMulU8S8.h)
          for (auto &w : p.w)
            w = int8_t(w / 2);
        runQLinear(p, form, outType, false, true, Provider::OneDnn);
      }
  SmallQLinear q;
  Harness &h = q.h;
  QLinearSpec &spec = q.spec;
  std::vector<float> xsRow = q.p.xsRow;
  spec.xScale = h.tensor({1, 3, 1}, xsRow.data(), DType::F32);
  spec.xScalePerRow = true;
  std::string error;
  EXPECT_FALSE(makeQLinear(spec, DType::F32, optionsFor(Provider::OneDnn), error));
  EXPECT_NE(error.find("cannot express per-row"), std::string::npos) << error;
  // Auto never picks oneDNN for a per-row scale (preferOneDnnU8S8).
  StepPtr step = makeQLinear(spec, DType::F32, KernelOptions(), error);
  ASSERT_TRUE(step) << error;
  EXPECT_EQ(step->kind().find("onednn"), std::string::npos) << step->kind();
  float xs = 0.01f;
  spec.xScalePerRow = false;
  spec.xScale = h.tensor({}, &xs, DType::F32); // run-time: no xScaleConst
  EXPECT_FALSE(makeQLinear(spec, DType::F32, optionsFor(Provider::OneDnn), error));
  EXPECT_NE(error.find("run-time activation scale"), std::string::npos) << error;
  // Auto without AVX-512: the AVX2 GEMM (before oneDNN, whose AVX2 kernels
  // saturate on full-range weights).
  spec.xScaleConst = &xs;
  step = makeQLinear(spec, DType::F32, noAvx512(), error);
  ASSERT_TRUE(step) << error;
  EXPECT_EQ(step->kind().rfind("qgemm.jit_avx2", 0), 0u) << step->kind();
}

// A per-column extra that is not what the plan declared is an error at run time.
TEST(QLinearStep, PerColumnExtraOfTheWrongShapeIsAnError) {
  if (!octet::x86::Int8GemmDriver::hostSupported())
    GTEST_SKIP() << "host lacks AVX-512 VNNI: the fused per-column path does not exist";
  SmallQLinear q;
  Harness &h = q.h;
  QLinearSpec &spec = q.spec;
  std::vector<float> col(16, 1.0f);
  float xs = 0.01f;
  spec.xScale = h.tensor({}, &xs, DType::F32);
  spec.xScaleConst = &xs;
  spec.extras = {h.tensor({2, 8}, col.data(), DType::F32)}; // 16 values, declared [N]
  spec.extraPerColumn = {true};
  spec.epilogue.numInputs = 2;
  spec.epilogue.instrs = {{Op::Input, 0}, {Op::Input, 1}, {Op::Mul, 0, 1}};
  std::string error;
  StepPtr step = makeQLinear(spec, DType::F32, KernelOptions(), error);
  ASSERT_TRUE(step) << error;
  EXPECT_NE(step->kind().find("+epilogue.columns"), std::string::npos) << step->kind();
  Status st = h.run(*step);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("planned as a per-column f32 vector of N = 8"), std::string::npos)
      << st.message();
}

TEST(QLinearStep, RejectsBadSpecsAndShapes) {
  QProblem p(1, 2, 8, 4, 1);
  Harness h;
  std::vector<uint8_t> x = p.x;
  std::vector<float> out(2 * 4), scales(3);
  float xs = 0.5f;
  uint8_t xzp = 128;
  QLinearSpec spec;
  spec.input = h.tensor({1, 2, 8}, x.data(), DType::U8);
  spec.output = h.tensor({1, 2, 4}, out.data(), DType::F32);
  spec.weight = p.w.data(), spec.k = 8, spec.n = 4;
  spec.wScale = p.ws.data(), spec.wScaleCount = 4;
  spec.xScale = h.tensor({1, 3, 1}, scales.data(), DType::F32); // wrong rows
  spec.xScalePerRow = true;
  spec.xZeroPoint = h.tensor({}, &xzp, DType::U8);
  spec.xZeroPointConst = &xzp;
  std::string error;
  for (bool vnni : {false, true}) {
    StepPtr step = makeQLinear(spec, DType::F32, vnni ? KernelOptions() : noAvx512(), error);
    ASSERT_TRUE(step) << error;
    step->location = "MatMul_7";
    Status st = h.run(*step);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("per-row input scales must be a dense [1, 2, 1]"),
              std::string::npos)
        << st.message();
    // Where: the step's kind and node, spelled out for the message (StepWhere).
    EXPECT_EQ(st.message().rfind(step->kind() + " (MatMul_7): ", 0), 0u) << st.message();
  }
  QLinearSpec bad = spec;
  bad.epilogue.numInputs = 3; // two extras read, none given
  bad.epilogue.instrs = {{Op::Input, 0}, {Op::Input, 2}, {Op::Add, 0, 1}};
  EXPECT_FALSE(makeQLinear(bad, DType::F32, KernelOptions(), error));
  EXPECT_NE(error.find("reads 3 inputs but there are 0 extras"), std::string::npos) << error;
  bad = spec;
  bad.epilogue.numInputs = 1;
  bad.epilogue.instrs = {{Op::Input, 0}, {Op::Add, 0, 7}};
  EXPECT_FALSE(makeQLinear(bad, DType::F32, KernelOptions(), error));
  EXPECT_NE(error.find("malformed epilogue"), std::string::npos) << error;
  EXPECT_FALSE(makeQLinear(spec, DType::U8, KernelOptions(), error));
  EXPECT_NE(error.find("needs an output scale"), std::string::npos) << error;
  (void)xs;
}

} // namespace
