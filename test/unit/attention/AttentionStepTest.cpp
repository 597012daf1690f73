//===- AttentionStepTest.cpp - makeAttention against a double reference ---===//
//
// Builds small Plans by hand (scalars for B and S, q/k/v as views of one
// merged [B, S, 3·H·D] buffer or as plain inputs, masks of every broadcast
// shape) and fills the ExecContext directly. Every case runs with the JIT
// kernels (skipped without AVX-512) and with the compiled C++ fallback.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/AmxSupport.h"
#include "compiler/codegen/x86/AttentionAvx2.h"
#include "compiler/codegen/x86/AttentionKernels.h"
#include "compiler/codegen/x86/QuantizeKernels.h"
#include "compiler/codegen/x86/VectorMathAvx2.h"
#include "runtime/Steps.h"
#include "runtime/TokenLayout.h"
#include "test/unit/PlanTestUtil.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

namespace octet::rt {
namespace {

bool hostHasAvx512() { return x86::CpuFeatures::host().supports(x86::Isa::Avx512); }

/// The kind of the bf16 path on this host: on AMX-BF16 tiles where granted,
/// else on vdpbf16ps with AVX512-BF16; "" (the f32 kernels) without either.
std::string hostBf16Kind(std::string *why = nullptr) {
  const x86::CpuFeatures &f = x86::CpuFeatures::host();
  if (f.supports(x86::Isa::AmxBf16) && x86::requestAmxPermission().empty())
    return "attention.amx_bf16";
  if (f.supports(x86::Isa::Avx512Bf16))
    return "attention.avx512_bf16";
  if (why)
    *why = "host lacks AVX512-BF16 (has: " + f.describe() + ")";
  return "";
}

bool hostRunsBf16(std::string *why = nullptr) { return !hostBf16Kind(why).empty(); }

bool hostRunsInt8(std::string *why = nullptr) {
  const x86::CpuFeatures &f = x86::CpuFeatures::host();
  if (f.supports(x86::Isa::Avx512Vnni))
    return true;
  if (why)
    *why = "host lacks AVX-512 VNNI (has: " + f.describe() + ")";
  return false;
}

using PlanBuilder = test::BoundPlan;

enum class MaskShape { None, B11S, B1SS, One11S, BHSS, SS, B1S1 };
enum class Masked { None, NegInf, FltMax };

const char *maskName(MaskShape m) {
  switch (m) {
  case MaskShape::None:
    return "none";
  case MaskShape::B11S:
    return "[B,1,1,S]";
  case MaskShape::B1SS:
    return "[B,1,S,S]";
  case MaskShape::One11S:
    return "[1,1,1,S]";
  case MaskShape::BHSS:
    return "[B,H,S,S]";
  case MaskShape::SS:
    return "[S,S]";
  case MaskShape::B1S1:
    return "[B,1,S,1] (expanded along keys)";
  }
  return "?";
}

struct Case {
  int64_t batch = 1, seq = 7, heads = 2, dim = 16;
  MaskShape mask = MaskShape::None;
  Masked masked = Masked::None;
  bool merged = true; ///< q/k/v are column slices of one [B, S, 3HD] buffer
  bool allowAvx512 = true;
  float scale = 0.25f;
  /// bf16: AMX-BF16 or AVX512-BF16 where the host has it; int8: AVX-512 VNNI.
  AttentionPrecision precision = AttentionPrecision::F32;
  std::string describe() const {
    std::ostringstream os;
    os << "B=" << batch << " S=" << seq << " H=" << heads << " D=" << dim
       << " mask=" << maskName(mask) << " masked=" << int(masked) << " merged=" << merged
       << " avx512=" << allowAvx512 << " precision=" << attentionPrecisionName(precision);
    return os.str();
  }
};

/// Runs one case and compares with a double-precision reference.
void runCase(const Case &c) {
  SCOPED_TRACE(c.describe());
  const int64_t B = c.batch, S = c.seq, H = c.heads, D = c.dim, W = H * D;
  std::mt19937 rng(unsigned(B * 1000003 + S * 1009 + H * 31 + D + int(c.mask) * 7));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);

  // q, k, v: merged [B, S, 3W] buffer (row stride 3W) or three [B, S, W] buffers.
  const int64_t rowStride = c.merged ? 3 * W : W;
  std::vector<float> merged(size_t(B * S * 3 * W));
  for (float &x : merged)
    x = uniform(rng);
  PlanBuilder pb;
  TensorId base = pb.tensor("qkv", {B, S, 3 * W}, merged.data());
  auto operand = [&](int i, const char *name) {
    float *data = merged.data() + (c.merged ? i * W : i * B * S * W);
    if (c.merged)
      return pb.view(name, base, {B, S, W}, {S * 3 * W, 3 * W, 1}, i * W, data);
    return pb.view(name, base, {B, S, W}, {S * W, W, 1}, i * B * S * W, data);
  };
  TensorId q = operand(0, "q"), k = operand(1, "k"), v = operand(2, "v");
  auto at = [&](int which, int64_t b, int64_t s, int64_t col) -> double {
    int64_t offset = c.merged ? which * W : which * B * S * W;
    return merged[size_t(offset + b * S * rowStride + s * rowStride + col)];
  };

  // The mask, with its broadcast strides over [B, H, S, S].
  std::vector<float> maskData;
  int64_t mB = 0, mH = 0, mQ = 0, mK = 0;
  TensorId mask = -1;
  const float masked = c.masked == Masked::FltMax ? -FLT_MAX : -INFINITY;
  auto maskValue = [&](size_t i) {
    if (c.masked != Masked::None && (i % 5 == 1 || i % 7 == 3))
      return masked;
    return float(std::uniform_real_distribution<float>(-2.0f, 0.0f)(rng));
  };
  auto fill = [&](size_t n) {
    maskData.resize(n);
    for (size_t i = 0; i < n; ++i)
      maskData[i] = maskValue(i);
  };
  switch (c.mask) {
  case MaskShape::None:
    break;
  case MaskShape::B11S:
    fill(B * S);
    if (c.masked != Masked::None) // the last batch entirely masked
      for (int64_t t = 0; t < S; ++t)
        maskData[(B - 1) * S + t] = masked;
    mask = pb.tensor("mask", {B, 1, 1, S}, maskData.data());
    mB = S, mK = 1;
    break;
  case MaskShape::One11S:
    fill(S);
    mask = pb.tensor("mask", {1, 1, 1, S}, maskData.data());
    mK = 1;
    break;
  case MaskShape::B1SS:
  case MaskShape::SS:
  case MaskShape::BHSS: {
    const int64_t mb = c.mask == MaskShape::SS ? 1 : B, mh = c.mask == MaskShape::BHSS ? H : 1;
    fill(mb * mh * S * S);
    if (c.masked != Masked::None) // row 0 of every (b, h) fully masked
      for (int64_t i = 0; i < mb * mh; ++i)
        for (int64_t t = 0; t < S; ++t)
          maskData[i * S * S + t] = masked;
    if (c.mask == MaskShape::SS)
      mask = pb.tensor("mask", {S, S}, maskData.data());
    else
      mask = pb.tensor("mask", {mb, mh, S, S}, maskData.data());
    mB = mb > 1 ? mh * S * S : 0, mH = mh > 1 ? S * S : 0, mQ = S, mK = 1;
    break;
  }
  case MaskShape::B1S1: {
    // [B, 1, S] values expanded to [B, 1, S, S] by a 0 stride along the keys.
    fill(B * S);
    TensorId maskBase = pb.tensor("mask_base", {B, 1, S, 1}, maskData.data());
    mask = pb.view("mask", maskBase, {B, 1, S, S}, {S, S, 1, 0}, 0, maskData.data());
    mB = S, mQ = 1, mK = 0;
    break;
  }
  }

  std::vector<float> out(size_t(B * S * W), std::numeric_limits<float>::quiet_NaN());
  TensorId o = pb.tensor("out", {B, S, W}, out.data(), Storage::Output);

  AttentionSpec spec;
  spec.q = q, spec.k = k, spec.v = v, spec.mask = mask, spec.output = o;
  spec.numHeads = H;
  spec.scale = c.scale;
  spec.precision = c.precision;
  KernelOptions options;
  options.allowAvx512 = c.allowAvx512;
  std::string error;
  StepPtr step = makeAttention(spec, options, error);
  ASSERT_TRUE(step) << error;
  const bool bf16 = c.precision == AttentionPrecision::Bf16 && c.allowAvx512 && hostRunsBf16();
  const bool int8 = c.precision == AttentionPrecision::Int8 && c.allowAvx512 && hostRunsInt8();
  const char *f32Kind = c.allowAvx512 && hostHasAvx512() ? "attention.jit_avx512"
                        : x86::avx2::hostSupported()     ? "attention.avx2"
                                                         : "attention.cpp";
  EXPECT_EQ(step->kind(), bf16 ? hostBf16Kind() : int8 ? "attention.vnni_int8" : f32Kind);
  Status status = pb.run(*step);
  ASSERT_TRUE(status.ok()) << status.message();

  std::vector<double> scores(static_cast<size_t>(S));
  double worst = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) {
        double max = -INFINITY;
        for (int64_t t = 0; t < S; ++t) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += at(0, b, s, h * D + d) * at(1, b, t, h * D + d);
          double m = mask >= 0 ? maskData[size_t(b * mB + h * mH + s * mQ + t * mK)] : 0.0;
          scores[t] = double(c.scale) * dot + m;
          max = std::max(max, scores[t]);
        }
        double sum = 0;
        for (int64_t t = 0; t < S; ++t) {
          scores[t] = max == -INFINITY ? 0.0 : std::exp(scores[t] - max);
          sum += scores[t];
        }
        for (int64_t d = 0; d < D; ++d) {
          double expected = 0;
          for (int64_t t = 0; t < S; ++t)
            expected += (sum > 0 ? scores[t] / sum : 0.0) * at(2, b, t, h * D + d);
          double got = out[size_t(b * S * W + s * W + h * D + d)];
          ASSERT_FALSE(std::isnan(got)) << "b=" << b << " h=" << h << " s=" << s << " d=" << d;
          double err = std::abs(got - expected);
          worst = std::max(worst, err);
          // bf16 operands (8 significant bits) with f32 sums: ~1e-3 here;
          // int8 operands (scales per row, key, dim): up to 5.1e-3 measured;
          // a layout or padding fault moves outputs by O(0.1).
          const double tolerance = bf16 || int8 ? 1e-2 : 2e-6 + 2e-6 * std::abs(expected);
          ASSERT_LE(err, tolerance)
              << "b=" << b << " h=" << h << " s=" << s << " d=" << d << " expected " << expected;
        }
      }
  ::testing::Test::RecordProperty("max_abs_error", std::to_string(worst));
}

std::vector<bool> isas() {
  if (hostHasAvx512())
    return {true, false};
  return {false};
}

TEST(Attention, ShapesWithoutMask) {
  for (bool avx512 : isas())
    for (int64_t seq : {1, 7, 33, 128})
      for (int64_t batch : {1, 3})
        for (auto [heads, dim] : {std::pair<int64_t, int64_t>{1, 16}, {2, 32}, {12, 64}, {2, 64}}) {
          if (heads == 12 && seq == 128 && batch == 3)
            continue; // covered below with a mask; keeps the test quick
          Case c;
          c.batch = batch, c.seq = seq, c.heads = heads, c.dim = dim, c.allowAvx512 = avx512;
          c.merged = (seq + batch) % 2 == 0;
          runCase(c);
        }
}

TEST(Attention, EveryMaskShape) {
  for (bool avx512 : isas())
    for (MaskShape m : {MaskShape::B11S, MaskShape::B1SS, MaskShape::One11S, MaskShape::BHSS,
                        MaskShape::SS, MaskShape::B1S1})
      for (int64_t seq : {1, 7, 33})
        for (Masked masked : {Masked::None, Masked::NegInf, Masked::FltMax}) {
          Case c;
          c.batch = 3, c.seq = seq, c.heads = 2, c.dim = 32, c.mask = m, c.masked = masked;
          c.allowAvx512 = avx512;
          runCase(c);
        }
}

TEST(Attention, BertBase) {
  for (bool avx512 : isas()) {
    Case c;
    c.batch = 3, c.seq = 128, c.heads = 12, c.dim = 64, c.mask = MaskShape::B11S;
    c.masked = Masked::FltMax, c.scale = 0.125f, c.allowAvx512 = avx512;
    runCase(c);
    c.seq = 77, c.masked = Masked::NegInf, c.merged = false;
    runCase(c);
  }
}

TEST(Attention, OddHeadDims) {
  // D not a multiple of 16 and D > 64 (two column panels in P·V).
  for (bool avx512 : isas())
    for (int64_t dim : {3, 24, 80, 136}) {
      Case c;
      c.batch = 2, c.seq = 70, c.heads = 2, c.dim = dim, c.mask = MaskShape::B1SS;
      c.masked = Masked::NegInf, c.allowAvx512 = avx512;
      runCase(c);
    }
}

TEST(Attention, SingleThreadAndRowBlocks) {
  // Fewer heads than threads splits the query rows into blocks; one thread does not.
  int saved = omp_get_max_threads();
  for (int threads : {1, 5}) {
    omp_set_num_threads(threads);
    for (bool avx512 : isas()) {
      Case c;
      c.batch = 1, c.seq = 97, c.heads = 1, c.dim = 64, c.mask = MaskShape::B1SS;
      c.masked = Masked::FltMax, c.allowAvx512 = avx512;
      runCase(c);
    }
  }
  omp_set_num_threads(saved);
}

/// A lower-precision path's cases: shapes, every mask, odd head dims, row
/// blocks and one thread, against the same double reference within the
/// precision's error.
void runPrecisionCases(AttentionPrecision precision) {
  auto run = [&](Case c) {
    c.precision = precision;
    runCase(c);
  };
  for (int64_t seq : {1, 7, 33, 128})
    for (auto [heads, dim] : {std::pair<int64_t, int64_t>{1, 16}, {2, 32}, {12, 64}, {2, 80}}) {
      Case c;
      c.batch = 2, c.seq = seq, c.heads = heads, c.dim = dim, c.merged = seq % 2 == 0;
      run(c);
    }
  for (MaskShape m : {MaskShape::B11S, MaskShape::B1SS, MaskShape::One11S, MaskShape::BHSS,
                      MaskShape::SS, MaskShape::B1S1})
    for (Masked masked : {Masked::None, Masked::NegInf, Masked::FltMax}) {
      Case c;
      c.batch = 3, c.seq = 37, c.heads = 2, c.dim = 64, c.mask = m, c.masked = masked;
      run(c);
    }
  Case bert;
  bert.batch = 2, bert.seq = 128, bert.heads = 12, bert.dim = 64, bert.mask = MaskShape::B11S;
  bert.masked = Masked::FltMax, bert.scale = 0.125f;
  run(bert);
  const int saved = omp_get_max_threads();
  for (int threads : {1, 5}) {
    omp_set_num_threads(threads);
    Case c;
    c.batch = 1, c.seq = 97, c.heads = 1, c.dim = 64, c.mask = MaskShape::B1SS;
    c.masked = Masked::NegInf;
    run(c);
  }
  omp_set_num_threads(saved);
}

// The bf16 path: on AMX-BF16 tiles or, without AMX, on vdpbf16ps, whichever
// this host has. Elsewhere the step falls back to f32, which the kind check
// confirms.
TEST(Attention, Bf16) {
  std::string why;
  if (!hostRunsBf16(&why)) {
    Case c;
    c.precision = AttentionPrecision::Bf16;
    runCase(c); // the f32 kernels, kind checked
    GTEST_SKIP() << "bf16 attention not run: " << why;
  }
  runPrecisionCases(AttentionPrecision::Bf16);
}

// The int8 path (vpdpbusd); also keys past one 64-key chunk of P·V and head
// dims past one 64-dim chunk of Q·Kᵀ (S 200, D 136).
TEST(Attention, Int8) {
  std::string why;
  if (!hostRunsInt8(&why)) {
    Case c;
    c.precision = AttentionPrecision::Int8;
    runCase(c);
    GTEST_SKIP() << "int8 attention not run: " << why;
  }
  runPrecisionCases(AttentionPrecision::Int8);
  Case c;
  c.batch = 2, c.seq = 200, c.heads = 2, c.dim = 136, c.mask = MaskShape::B11S;
  c.masked = Masked::NegInf, c.precision = AttentionPrecision::Int8;
  runCase(c);
}

// The AVX2 twins (hosts without AVX-512) against the scalar references:
// every row count to 8 (strips of 6 plus the rest), column tails of both
// ymm halves, K 0 (zeros) to past 128, padded strides; nothing past the
// columns is written. FMA against mul + add: a few ulp of sum |a b|.
TEST(AttentionKernels, Avx2GemmMatchesReference) {
  if (!x86::avx2::hostSupported())
    GTEST_SKIP() << "host lacks AVX2 + FMA";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (int mr = 1; mr <= 8; ++mr)
    for (int64_t columns : {1, 7, 8, 9, 15, 16, 17, 31, 40, 63, 64})
      for (int64_t k : {0, 1, 5, 64, 131}) {
        const int64_t lda = k + 3, ldb = 64 + 5, ldc = columns + 2;
        std::vector<float> a(size_t(mr * lda + 1)), b(size_t((k + 1) * ldb));
        for (float &v : a)
          v = value(rng);
        for (float &v : b)
          v = value(rng);
        std::vector<float> got(size_t(mr * ldc), -7.0f), want(got);
        x86::AttentionGemmArgs args;
        args.a = a.data(), args.b = b.data(), args.lda = lda, args.ldb = ldb, args.ldc = ldc;
        args.k = k;
        args.setColumns(columns);
        args.c = want.data();
        x86::attentionGemmReference(args, mr);
        args.c = got.data();
        x86::attentionGemmAvx2(args, mr);
        for (int r = 0; r < mr; ++r)
          for (int64_t j = 0; j < ldc; ++j) {
            const size_t i = size_t(r * ldc + j);
            SCOPED_TRACE("mr=" + std::to_string(mr) + " columns=" + std::to_string(columns) +
                         " k=" + std::to_string(k) + " at " + std::to_string(r) + "," +
                         std::to_string(j));
            if (j >= columns) {
              ASSERT_EQ(got[i], -7.0f); // untouched
              continue;
            }
            double magnitude = 0;
            for (int64_t kk = 0; kk < k; ++kk)
              magnitude += std::fabs(double(a[size_t(r * lda + kk)]) * b[size_t(kk * ldb + j)]);
            ASSERT_NEAR(got[i], want[i], 1e-6 * magnitude + 1e-30);
          }
      }
}

TEST(AttentionKernels, Avx2SoftmaxMatchesReference) {
  // Row counts, tails of every length, no mask / one shared / per row (with
  // -inf entries), strided rows; fully masked rows give zeros; columns past n
  // and rows past `rows` stay untouched. The weighted form has no AVX2 twin.
  if (!x86::avx2::hostSupported())
    GTEST_SKIP() << "host lacks AVX2 + FMA";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-6.0f, 6.0f);
  for (int64_t rows : {1, 2, 3, 5})
    for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 50, 128, 131})
      for (int maskMode = 0; maskMode < 3; ++maskMode) {
        const int64_t ldx = n + 3, ldMask = maskMode == 2 ? n : 0;
        std::vector<float> x(size_t((rows + 1) * ldx)), mask(size_t((rows + 1) * n));
        for (float &v : x)
          v = value(rng);
        for (float &v : mask)
          v = value(rng) < -4.0f ? -INFINITY : value(rng);
        if (maskMode == 2) // the last row fully masked
          std::fill(mask.begin() + (rows - 1) * n, mask.begin() + rows * n, -INFINITY);
        std::vector<float> want = x;
        x86::AttentionSoftmaxArgs args;
        args.ldx = ldx, args.rows = rows, args.n = n, args.scale = 0.125f;
        args.mask = maskMode ? mask.data() : nullptr, args.ldMask = ldMask;
        args.x = want.data();
        x86::attentionSoftmaxReference(args);
        args.x = x.data();
        x86::attentionSoftmaxAvx2(args);
        for (size_t i = 0; i < x.size(); ++i) {
          const int64_t r = int64_t(i) / ldx, c = int64_t(i) % ldx;
          SCOPED_TRACE("rows=" + std::to_string(rows) + " n=" + std::to_string(n) +
                       " mask=" + std::to_string(maskMode) + " at " + std::to_string(r) + "," +
                       std::to_string(c));
          if (r >= rows || c >= n)
            ASSERT_EQ(x[i], want[i]);
          else if (maskMode == 2 && r == rows - 1)
            ASSERT_EQ(x[i], 0.0f);
          else
            ASSERT_NEAR(x[i], want[i], 2e-6f + 2e-6f * std::fabs(want[i]));
        }
      }
  std::vector<float> x(4, 1.0f), weights(4, 1.0f), inverse(1), largest(1);
  x86::AttentionSoftmaxArgs args;
  args.x = x.data(), args.ldx = 4, args.rows = 1, args.n = 4, args.weights = weights.data();
  args.rowInverse = inverse.data(), args.rowMax = largest.data();
  EXPECT_THROW(x86::attentionSoftmaxAvx2(args), std::invalid_argument);
}

TEST(AttentionKernels, KeysPackingMatchesReference) {
  if (!hostHasAvx512())
    GTEST_SKIP() << "no AVX-512: the JIT kernel cannot run here";
  x86::AttentionKeysKernel kernel;
  auto fn = kernel.entry<x86::AttentionKeysKernel::Fn>();
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int64_t rows : {1, 15, 16, 17, 63, 64, 65, 130})
    for (int64_t cols : {1, 3, 16, 24, 64, 80, 136}) {
      const int64_t lds = 3 * cols + 7, panels = (rows + 63) / 64, size = panels * 64 * cols;
      std::vector<float> src(rows * lds);
      for (float &x : src)
        x = u(rng);
      std::vector<float> got(size + 64, -9.0f), want(size + 64, -9.0f);
      x86::AttentionKeysArgs a;
      a.src = src.data(), a.lds = lds, a.rows = rows, a.cols = cols;
      a.dst = got.data();
      fn(&a);
      a.dst = want.data();
      x86::attentionKeysReference(a);
      ASSERT_EQ(got, want) << "rows " << rows << " cols " << cols;
    }
}

// A target without AMX-BF16 keeps f32 attention although the plan allows bf16.
TEST(Attention, Bf16NeedsAvx512Bf16OnTheTarget) {
  if (!hostHasAvx512())
    GTEST_SKIP() << "no AVX-512: the f32 fallback is the C++ twin either way";
  AttentionSpec spec;
  spec.q = 0, spec.k = 1, spec.v = 2, spec.output = 3, spec.numHeads = 2,
  spec.precision = AttentionPrecision::Bf16;
  KernelOptions options;
  options.cpu.amxBf16 = false; // a target without AMX: vdpbf16ps where it has AVX512-BF16
  std::string error;
  StepPtr step = makeAttention(spec, options, error);
  ASSERT_TRUE(step) << error;
  EXPECT_EQ(step->kind(),
            options.cpu.avx512bf16 ? "attention.avx512_bf16" : "attention.jit_avx512");
  options = KernelOptions();
  options.cpu.avx512bf16 = false;
  step = makeAttention(spec, options, error);
  ASSERT_TRUE(step) << error;
  EXPECT_EQ(step->kind(), "attention.jit_avx512");
}

// A target without AVX-512 VNNI keeps f32 attention although the plan asks for int8.
TEST(Attention, Int8NeedsVnniOnTheTarget) {
  if (!hostHasAvx512())
    GTEST_SKIP() << "no AVX-512: the f32 fallback is the C++ twin either way";
  AttentionSpec spec;
  spec.q = 0, spec.k = 1, spec.v = 2, spec.output = 3, spec.numHeads = 2;
  spec.precision = AttentionPrecision::Int8;
  KernelOptions options;
  std::string error;
  StepPtr step = makeAttention(spec, options, error);
  ASSERT_TRUE(step) << error;
  EXPECT_EQ(step->kind(), hostRunsInt8() ? "attention.vnni_int8" : "attention.jit_avx512");
  options.cpu.avx512vnni = false;
  step = makeAttention(spec, options, error);
  ASSERT_TRUE(step) << error;
  EXPECT_EQ(step->kind(), "attention.jit_avx512");
}

// A quantized output (the octet.quantize the Plan builder folds into the step)
// is, bit for bit, the f32 output quantized as makeQuantize does: u8 and i8, on
// the f32 JIT, int8, bf16 (where the host has it) and C++ paths.
/// Every path this host runs (allowAvx512, precision): the C++ twins, then the
/// JIT f32, int8 and bf16 paths where the host has them.
std::vector<std::pair<bool, AttentionPrecision>> hostPaths() {
  std::vector<std::pair<bool, AttentionPrecision>> paths = {{false, AttentionPrecision::F32}};
  if (hostHasAvx512())
    paths.push_back({true, AttentionPrecision::F32});
  if (hostRunsInt8())
    paths.push_back({true, AttentionPrecision::Int8});
  if (hostRunsBf16())
    paths.push_back({true, AttentionPrecision::Bf16});
  return paths;
}

/// A merged [B, S, 3W] QKV buffer of values uniform in [-1, 1] from `seed`.
std::vector<float> randomQkv(int64_t B, int64_t S, int64_t W, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> qkv(size_t(B * S * 3 * W));
  for (float &x : qkv)
    x = uniform(rng);
  return qkv;
}

/// spec's q, k and v: column slices of one [B, S, 3W] buffer, as a merged QKV
/// linear writes them.
void mergedOperands(PlanBuilder &pb, std::vector<float> &qkv, int64_t B, int64_t S, int64_t W,
                    AttentionSpec &spec) {
  TensorId base = pb.tensor("qkv", {B, S, 3 * W}, qkv.data());
  const std::vector<int64_t> strides = {S * 3 * W, 3 * W, 1};
  spec.q = pb.view("q", base, {B, S, W}, strides, 0, qkv.data());
  spec.k = pb.view("k", base, {B, S, W}, strides, W, qkv.data() + W);
  spec.v = pb.view("v", base, {B, S, W}, strides, 2 * W, qkv.data() + 2 * W);
}

// (The int8 path's quantize multiplies by the reciprocal; the others divide.)
// Head dims 32, 64 and 128 take the copy-out's inline row copies, 40 memcpy.
TEST(Attention, QuantizedOutputIsTheQuantizedF32Output) {
  for (const int64_t D : {40, 32, 64, 128}) {
    const int64_t B = 2, S = 45, H = 3, W = H * D;
    std::vector<float> qkv = randomQkv(B, S, W, 11), mask(size_t(B * S), 0.0f);
    for (int64_t t = S - 7; t < S; ++t)
      mask[size_t(S + t)] = -INFINITY; // the second sequence's last keys masked
    for (const auto &[allowAvx512, precision] : hostPaths())
      for (DType type : {DType::U8, DType::I8}) {
        SCOPED_TRACE(std::string(allowAvx512 ? "jit " : "cpp ") +
                     attentionPrecisionName(precision) + " " + dtypeName(type) + " D " +
                     std::to_string(D));
        const float scale = 0.013f;
        const int32_t zp = type == DType::U8 ? 131 : -3;
        std::vector<float> f32(size_t(B * S * W));
        std::vector<uint8_t> got(size_t(B * S * W), 0xee);
        auto run = [&](DType outputType, void *out) {
          PlanBuilder pb;
          AttentionSpec spec;
          mergedOperands(pb, qkv, B, S, W, spec);
          spec.mask = pb.tensor("mask", {B, 1, 1, S}, mask.data());
          spec.output = pb.tensor("out", {B, S, W}, out, Storage::Output, outputType);
          spec.numHeads = H, spec.scale = 0.2f, spec.precision = precision;
          spec.outputType = outputType, spec.outputScale = scale, spec.outputZeroPoint = zp;
          KernelOptions options;
          options.allowAvx512 = allowAvx512;
          std::string error;
          StepPtr step = makeAttention(spec, options, error);
          ASSERT_TRUE(step) << error;
          if (outputType != DType::F32) {
            EXPECT_NE(step->kind().find("+quantize"), std::string::npos) << step->kind();
          }
          Status status = pb.run(*step);
          ASSERT_TRUE(status.ok()) << status.message();
        };
        run(DType::F32, f32.data());
        run(type, got.data());
        const int32_t lo = type == DType::U8 ? 0 : -128, hi = type == DType::U8 ? 255 : 127;
        int distinct = 0;
        // The int8 path multiplies by f32(1 / scale) (QuantizeDivision::Reciprocal).
        const bool reciprocal = precision == AttentionPrecision::Int8;
        for (size_t i = 0; i < f32.size(); ++i) {
          const int32_t want = reciprocal
                                   ? x86::quantizeScalar(f32[i] * (1.0f / scale), 1.0f, zp, lo, hi)
                                   : x86::quantizeScalar(f32[i], scale, zp, lo, hi);
          const int32_t value = type == DType::U8 ? int32_t(got[i]) : int32_t(int8_t(got[i]));
          ASSERT_EQ(value, want) << "element " << i << " (f32 " << f32[i] << ")";
          distinct += value != zp;
        }
        EXPECT_GT(distinct, int(f32.size() / 2)); // the outputs are not all one value
      }
  }
}

// zero_masked_rows (sdpa's Where(IsNaN(p), 0, p)) on every path: a query row
// whose every key is masked to -inf and a query row with a NaN give zeros
// (the int8 path: through the weighted softmax's 1/sum and the row's scale),
// the other rows stay finite and equal to the step without it.
TEST(Attention, ZeroMaskedRowsOnEveryPath) {
  const int64_t B = 1, S = 37, H = 2, D = 24, W = H * D;
  std::vector<float> qkv = randomQkv(B, S, W, 5), mask(size_t(S * S), 0.0f);
  const int64_t maskedRow = 4, nanRow = 9;
  for (int64_t t = 0; t < S; ++t)
    mask[size_t(maskedRow * S + t)] = -INFINITY;
  qkv[size_t(nanRow * 3 * W + 3)] = NAN; // head 0's query of row nanRow
  for (const auto &[allowAvx512, precision] : hostPaths()) {
    SCOPED_TRACE(std::string(allowAvx512 ? "jit " : "cpp ") + attentionPrecisionName(precision));
    auto run = [&](bool zeroMaskedRows) {
      std::vector<float> out(size_t(B * S * W), -7.0f);
      PlanBuilder pb;
      AttentionSpec spec;
      mergedOperands(pb, qkv, B, S, W, spec);
      spec.mask = pb.tensor("mask", {S, S}, mask.data());
      spec.output = pb.tensor("out", {B, S, W}, out.data(), Storage::Output);
      spec.numHeads = H, spec.scale = 0.2f, spec.precision = precision;
      spec.zeroMaskedRows = zeroMaskedRows;
      KernelOptions options;
      options.allowAvx512 = allowAvx512;
      std::string error;
      StepPtr step = makeAttention(spec, options, error);
      EXPECT_TRUE(step) << error;
      if (step) {
        Status status = pb.run(*step);
        EXPECT_TRUE(status.ok()) << status.message();
      }
      return out;
    };
    const std::vector<float> zeroed = run(true), plain = run(false);
    for (int64_t s = 0; s < S; ++s)
      for (int64_t c = 0; c < W; ++c) {
        const float got = zeroed[size_t(s * W + c)];
        const bool head0 = c < D;
        if (s == maskedRow || (s == nanRow && head0)) {
          ASSERT_EQ(got, 0.0f) << "row " << s << " column " << c;
        } else {
          ASSERT_TRUE(std::isfinite(got)) << "row " << s << " column " << c;
          ASSERT_EQ(got, plain[size_t(s * W + c)]) << "row " << s << " column " << c;
        }
      }
    // Without it the NaN row stays NaN, as the exported graph computes it.
    EXPECT_TRUE(std::isnan(plain[size_t(nanRow * W)]));
  }
}

TEST(Attention, PackedSequencesOnAnyTeam) {
  // A packed batch (token layout, docs/padding-free.md) of lengths 1, S, 0
  // (an all-padding row) and odd ones, on teams of 1 to 8 threads (fewer and
  // more than the heads): against a double reference per sequence, and bit
  // for bit the one-thread result (a row's result does not depend on who
  // computes it).
  const std::vector<int64_t> lengths = {37, 1, 0, 64, 5, 3};
  const int64_t H = 3, D = 32, W = H * D, S = 64, batch = int64_t(lengths.size());
  int64_t rows = 0;
  for (int64_t l : lengths)
    rows += l;
  std::vector<int64_t> layout(size_t(tokenLayoutSize(batch, S)), -1);
  layout[0] = int64_t(TokenMode::Packed), layout[1] = rows, layout[2] = batch, layout[3] = S;
  for (int64_t b = 0, first = 0; b < batch; first += lengths[b], ++b) {
    layout[size_t(4 + b)] = first, layout[size_t(5 + b)] = first + lengths[b];
    for (int64_t s = 0; s < lengths[b]; ++s)
      layout[size_t(5 + batch + b * S + s)] = first + s;
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> qkv(size_t(rows * 3 * W));
  for (float &x : qkv)
    x = uniform(rng);
  const bool int8Host = hostRunsInt8(), bf16Host = hostRunsBf16();
  const int saved = omp_get_max_threads();
  for (bool avx512 : isas())
    for (AttentionPrecision precision :
         {AttentionPrecision::F32, AttentionPrecision::Bf16, AttentionPrecision::Int8}) {
      const bool lowPrecision = avx512 && ((precision == AttentionPrecision::Bf16 && bf16Host) ||
                                           (precision == AttentionPrecision::Int8 && int8Host));
      SCOPED_TRACE(std::string(avx512 ? "avx512 " : "c++ ") + attentionPrecisionName(precision));
      PlanBuilder pb;
      TensorId base = pb.tensor("qkv", {1, rows, 3 * W}, qkv.data());
      TensorId q = pb.view("q", base, {1, rows, W}, {rows * 3 * W, 3 * W, 1}, 0, qkv.data());
      TensorId k = pb.view("k", base, {1, rows, W}, {rows * 3 * W, 3 * W, 1}, W, qkv.data() + W);
      TensorId v =
          pb.view("v", base, {1, rows, W}, {rows * 3 * W, 3 * W, 1}, 2 * W, qkv.data() + 2 * W);
      std::vector<float> out(size_t(rows * W));
      TensorId o = pb.tensor("out", {1, rows, W}, out.data(), Storage::Output);
      TensorId t =
          pb.tensor("layout", {int64_t(layout.size())}, layout.data(), Storage::Input, DType::I64);
      AttentionSpec spec;
      spec.q = q, spec.k = k, spec.v = v, spec.output = o, spec.numHeads = H;
      spec.scale = 0.25f, spec.precision = precision, spec.tokenLayout = t;
      KernelOptions options;
      options.allowAvx512 = avx512;
      std::string error;
      StepPtr step = makeAttention(spec, options, error);
      ASSERT_TRUE(step) << error;
      std::vector<float> oneThread;
      for (int threads : {1, 2, 3, 5, 8}) {
        SCOPED_TRACE(threads);
        omp_set_num_threads(threads);
        std::fill(out.begin(), out.end(), NAN);
        Status status = pb.run(*step);
        ASSERT_TRUE(status.ok()) << status.message();
        if (threads == 1) {
          oneThread = out;
          continue;
        }
        ASSERT_EQ(std::memcmp(out.data(), oneThread.data(), out.size() * sizeof(float)), 0);
      }
      std::vector<double> p(static_cast<size_t>(S));
      for (int64_t b = 0, first = 0; b < batch; first += lengths[b], ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t r = first; r < first + lengths[b]; ++r) {
            double max = -INFINITY, sum = 0;
            for (int64_t j = 0; j < lengths[b]; ++j) {
              double dot = 0;
              for (int64_t d = 0; d < D; ++d)
                dot += double(qkv[size_t(r * 3 * W + h * D + d)]) *
                       qkv[size_t((first + j) * 3 * W + W + h * D + d)];
              p[size_t(j)] = 0.25 * dot;
              max = std::max(max, p[size_t(j)]);
            }
            for (int64_t j = 0; j < lengths[b]; ++j)
              sum += p[size_t(j)] = std::exp(p[size_t(j)] - max);
            for (int64_t d = 0; d < D; ++d) {
              double expected = 0;
              for (int64_t j = 0; j < lengths[b]; ++j)
                expected +=
                    p[size_t(j)] / sum * qkv[size_t((first + j) * 3 * W + 2 * W + h * D + d)];
              const double got = oneThread[size_t(r * W + h * D + d)];
              ASSERT_LE(std::abs(got - expected),
                        lowPrecision ? 1e-2 : 2e-6 + 2e-6 * std::abs(expected))
                  << "sequence " << b << " row " << r << " head " << h << " dim " << d;
            }
          }
    }
  omp_set_num_threads(saved);
}

TEST(Attention, OneStepServesEveryShape) {
  // The same step (kernels built once) over different B and S in one Plan each run.
  for (bool avx512 : isas()) {
    PlanBuilder pb;
    const int64_t H = 2, D = 16, W = H * D, maxB = 3, maxS = 40;
    std::vector<float> qkv(size_t(maxB * maxS * 3 * W), 0.5f), out(size_t(maxB * maxS * W));
    ScalarId b = pb.constant(1), s = pb.constant(1), w = pb.constant(W), w3 = pb.constant(3 * W),
             one = pb.constant(1), sw3 = pb.constant(3 * W);
    auto addTensor = [&](const std::string &name, Storage storage, std::vector<ScalarId> shape,
                         std::vector<ScalarId> strides, void *data) {
      TensorInfo t;
      t.name = name, t.shape = shape, t.storage = storage, t.index = 0;
      if (!strides.empty()) {
        t.index = 0;
        t.viewOffset = pb.constant(0);
        t.viewStrides = strides;
      }
      pb.plan.tensors.push_back(t);
      pb.addresses.push_back(data);
      return TensorId(pb.plan.tensors.size() - 1);
    };
    TensorId base = addTensor("qkv", Storage::Input, {b, s, w3}, {}, qkv.data());
    (void)base;
    TensorId q = addTensor("q", Storage::View, {b, s, w}, {sw3, w3, one}, qkv.data());
    TensorId k = addTensor("k", Storage::View, {b, s, w}, {sw3, w3, one}, qkv.data() + W);
    TensorId v = addTensor("v", Storage::View, {b, s, w}, {sw3, w3, one}, qkv.data() + 2 * W);
    TensorId o = addTensor("out", Storage::Output, {b, s, w}, {}, out.data());
    AttentionSpec spec;
    spec.q = q, spec.k = k, spec.v = v, spec.output = o, spec.numHeads = H, spec.scale = 0.5f;
    KernelOptions options;
    options.allowAvx512 = avx512;
    std::string error;
    StepPtr step = makeAttention(spec, options, error);
    ASSERT_TRUE(step) << error;
    for (auto [batch, seq] : {std::pair<int64_t, int64_t>{1, 1}, {3, 40}, {2, 17}, {1, 33}}) {
      ExecContext ctx = pb.context();
      ctx.scalars_[b] = batch, ctx.scalars_[s] = seq, ctx.scalars_[sw3] = seq * 3 * W;
      for (int64_t i = 0; i < batch * seq * 3 * W; ++i)
        qkv[size_t(i)] = float((i * 7919) % 13) / 13.0f - 0.5f;
      std::fill(out.begin(), out.end(), NAN);
      ASSERT_TRUE(step->run(ctx).ok());
      // Spot check: with a uniform value per key the output is the mean of V.
      for (int64_t i = 0; i < batch * seq * W; ++i)
        ASSERT_FALSE(std::isnan(out[size_t(i)])) << "B=" << batch << " S=" << seq << " i=" << i;
    }
  }
}

TEST(Attention, FactoryErrors) {
  KernelOptions options;
  std::string error;
  AttentionSpec spec;
  EXPECT_FALSE(makeAttention(spec, options, error));
  EXPECT_NE(error.find("required"), std::string::npos) << error;
  spec.q = 0, spec.k = 1, spec.v = 2, spec.output = 3, spec.numHeads = 0;
  EXPECT_FALSE(makeAttention(spec, options, error));
  EXPECT_NE(error.find("num_heads"), std::string::npos) << error;
  spec.numHeads = 2, spec.scale = NAN;
  EXPECT_FALSE(makeAttention(spec, options, error));
  EXPECT_NE(error.find("scale"), std::string::npos) << error;
  // A quantized output (what a model.so's bytes may claim): its type, scale and zero point.
  spec.scale = 1, spec.outputType = DType::F64;
  EXPECT_FALSE(makeAttention(spec, options, error));
  EXPECT_NE(error.find("output type f64"), std::string::npos) << error;
  spec.outputType = DType(200);
  EXPECT_FALSE(makeAttention(spec, options, error));
  EXPECT_NE(error.find("output type ?"), std::string::npos) << error;
  spec.outputType = DType::U8, spec.outputScale = 0;
  EXPECT_FALSE(makeAttention(spec, options, error));
  EXPECT_NE(error.find("output scale"), std::string::npos) << error;
  spec.outputScale = 0.5f, spec.outputZeroPoint = 256;
  EXPECT_FALSE(makeAttention(spec, options, error));
  EXPECT_NE(error.find("output zero point 256 is outside u8"), std::string::npos) << error;
  spec.outputType = DType::I8, spec.outputZeroPoint = -128;
  EXPECT_TRUE(makeAttention(spec, options, error)) << error;
}

/// Runs a step over hand-made tensors and returns its error message ("" on success).
std::string runError(const std::vector<int64_t> &qShape, const std::vector<int64_t> &kShape,
                     const std::vector<int64_t> *maskShape, int64_t heads,
                     DType maskType = DType::F32) {
  PlanBuilder pb;
  std::vector<float> buffer(4096, 0.0f);
  TensorId q = pb.tensor("q", qShape, buffer.data());
  TensorId k = pb.tensor("k", kShape, buffer.data());
  TensorId v = pb.tensor("v", qShape, buffer.data());
  TensorId o = pb.tensor("o", qShape, buffer.data(), Storage::Output);
  TensorId m = maskShape ? pb.tensor("m", *maskShape, buffer.data(), Storage::Input, maskType) : -1;
  AttentionSpec spec;
  spec.q = q, spec.k = k, spec.v = v, spec.output = o, spec.mask = m, spec.numHeads = heads;
  std::string error;
  StepPtr step = makeAttention(spec, KernelOptions(), error);
  if (!step)
    return error;
  step->location = "layer0/attn";
  Status s = pb.run(*step);
  return s.ok() ? "" : s.message();
}

TEST(Attention, RunTimeErrors) {
  std::vector<int64_t> ok = {2, 5, 8};
  EXPECT_EQ(runError(ok, ok, nullptr, 2), "");
  std::string e = runError(ok, {2, 6, 8}, nullptr, 2);
  EXPECT_NE(e.find("key has shape [2, 6, 8]"), std::string::npos) << e;
  EXPECT_NE(e.find("layer0/attn"), std::string::npos) << e;
  e = runError(ok, ok, nullptr, 3);
  EXPECT_NE(e.find("not a multiple of 3 heads"), std::string::npos) << e;
  e = runError({2, 5}, {2, 5}, nullptr, 1);
  EXPECT_NE(e.find("not [batch, sequence"), std::string::npos) << e;
  std::vector<int64_t> badMask = {2, 1, 1, 4};
  e = runError(ok, ok, &badMask, 2);
  EXPECT_NE(e.find("does not broadcast to [2, 2, 5, 5]"), std::string::npos) << e;
  std::vector<int64_t> bigMask = {1, 2, 1, 1, 5};
  e = runError(ok, ok, &bigMask, 2);
  EXPECT_NE(e.find("more than 4 dims"), std::string::npos) << e;
  std::vector<int64_t> goodMask = {2, 1, 1, 5};
  EXPECT_EQ(runError(ok, ok, &goodMask, 2), "");
  e = runError(ok, ok, &goodMask, 2, DType::I64);
  EXPECT_NE(e.find("mask is i64"), std::string::npos) << e;
  // Empty batch or sequence: nothing to do.
  EXPECT_EQ(runError({0, 5, 8}, {0, 5, 8}, nullptr, 2), "");
  std::vector<int64_t> emptyMask = {2, 1, 1, 0};
  EXPECT_EQ(runError({2, 0, 8}, {2, 0, 8}, &emptyMask, 2), "");
}

TEST(AttentionKernels, SoftmaxFullyMaskedRows) {
  // The kernels themselves on rows of every tail length: all -inf rows give 0.
  std::vector<bool> modes = isas();
  for (bool jit : modes) {
    std::unique_ptr<x86::AttentionSoftmaxKernel> kernel;
    x86::AttentionSoftmaxKernel::Fn fn = nullptr;
    if (jit) {
      kernel = std::make_unique<x86::AttentionSoftmaxKernel>(true);
      fn = kernel->entry<x86::AttentionSoftmaxKernel::Fn>();
    }
    for (int64_t n : {1, 15, 16, 17, 50}) {
      std::vector<float> x(size_t(2 * n), 1.0f), mask(size_t(n), -INFINITY);
      x86::AttentionSoftmaxArgs args;
      args.x = x.data(), args.ldx = n, args.rows = 2, args.n = n, args.mask = mask.data();
      args.ldMask = 0, args.scale = 3;
      jit ? fn(&args) : x86::attentionSoftmaxReference(args);
      for (float y : x)
        ASSERT_EQ(y, 0.0f) << "n=" << n << " jit=" << jit;
      std::fill(mask.begin(), mask.end(), -FLT_MAX);
      std::fill(x.begin(), x.end(), 1.0f);
      jit ? fn(&args) : x86::attentionSoftmaxReference(args);
      for (float y : x)
        ASSERT_NEAR(y, 1.0f / float(n), 1e-6f) << "n=" << n << " jit=" << jit;
    }
  }
}

TEST(AttentionKernels, SoftmaxRowsMatchReference) {
  // Every row count (the kernel takes rows in pairs, then an odd one alone),
  // tail lengths, with and without a mask (shared or per row), strided rows,
  // plain and weighted (e times the keys' weights, per row 1/Σe and the
  // largest value; one weight 0); the columns past n and the rows past `rows`
  // stay untouched.
  if (!hostHasAvx512())
    GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-6.0f, 6.0f), weight(0.001f, 0.05f);
  auto near = [](float got, float want) {
    ASSERT_NEAR(got, want, 2e-6f + 2e-6f * std::fabs(want));
  };
  for (bool weighted : {false, true})
    for (bool hasMask : {false, true}) {
      x86::AttentionSoftmaxKernel kernel(hasMask, weighted);
      auto fn = kernel.entry<x86::AttentionSoftmaxKernel::Fn>();
      for (int64_t rows : {1, 2, 3, 4, 5})
        for (int64_t n : {1, 15, 16, 17, 50, 128, 131})
          for (int64_t ldMask : {int64_t(0), n}) {
            const int64_t ldx = n + 3;
            std::vector<float> x(size_t((rows + 1) * ldx)), mask(size_t((rows + 1) * n));
            std::vector<float> weights(static_cast<size_t>(n));
            for (float &v : x)
              v = value(rng);
            for (float &v : mask)
              v = value(rng) < -4.0f ? -INFINITY : value(rng);
            for (float &w : weights)
              w = weight(rng);
            weights[size_t(n / 2)] = 0.0f;
            std::vector<float> want = x;
            // One past `rows` each: the kernel writes only the rows it has.
            std::vector<float> inverse(size_t(rows + 1), -7.0f), largest(inverse);
            std::vector<float> wantInverse(inverse), wantLargest(inverse);
            x86::AttentionSoftmaxArgs args;
            args.ldx = ldx, args.rows = rows, args.n = n, args.scale = 0.125f;
            args.mask = hasMask ? mask.data() : nullptr, args.ldMask = ldMask;
            args.weights = weighted ? weights.data() : nullptr;
            args.x = want.data();
            args.rowInverse = wantInverse.data(), args.rowMax = wantLargest.data();
            x86::attentionSoftmaxReference(args);
            args.x = x.data();
            args.rowInverse = inverse.data(), args.rowMax = largest.data();
            fn(&args);
            const std::string where = "weighted=" + std::to_string(weighted) +
                                      " mask=" + std::to_string(hasMask) +
                                      " rows=" + std::to_string(rows) + " n=" + std::to_string(n) +
                                      " ldMask=" + std::to_string(ldMask);
            for (size_t i = 0; i < x.size(); ++i) {
              const int64_t r = int64_t(i) / ldx, c = int64_t(i) % ldx;
              SCOPED_TRACE(where + " at " + std::to_string(r) + "," + std::to_string(c));
              if (r >= rows || c >= n)
                ASSERT_EQ(x[i], want[i]); // untouched (the reference leaves them too)
              else
                near(x[i], want[i]);
            }
            for (int64_t r = 0; r <= rows; ++r) {
              SCOPED_TRACE(where + " row " + std::to_string(r));
              near(inverse[size_t(r)], wantInverse[size_t(r)]);
              near(largest[size_t(r)], wantLargest[size_t(r)]);
            }
          }
    }
}

TEST(AttentionKernels, WeightedSoftmaxOfMaskedAndNaNRows) {
  // A row whose every score is masked to -inf: 1/Σe = 0 and values 0 (so its
  // scale and output are 0); a NaN score: 1/Σe and the largest value NaN.
  if (!hostHasAvx512())
    GTEST_SKIP() << "no AVX-512";
  for (bool jit : {false, true}) {
    x86::AttentionSoftmaxKernel kernel(true, true);
    for (int64_t n : {1, 17, 50}) {
      std::vector<float> x(size_t(2 * n), 1.0f), mask(size_t(2 * n), 0.0f);
      std::vector<float> weights(size_t(n), 0.5f), inverse(2), largest(2);
      std::fill(mask.begin(), mask.begin() + n, -INFINITY);
      x[size_t(n + n / 2)] = NAN;
      x86::AttentionSoftmaxArgs args;
      args.x = x.data(), args.ldx = n, args.rows = 2, args.n = n;
      args.mask = mask.data(), args.ldMask = n, args.weights = weights.data();
      args.rowInverse = inverse.data(), args.rowMax = largest.data();
      jit ? kernel.entry<x86::AttentionSoftmaxKernel::Fn>()(&args)
          : x86::attentionSoftmaxReference(args);
      const std::string where = "n=" + std::to_string(n) + " jit=" + std::to_string(jit);
      EXPECT_EQ(inverse[0], 0.0f) << where;
      EXPECT_EQ(largest[0], 0.0f) << where;
      for (int64_t c = 0; c < n; ++c)
        ASSERT_EQ(x[size_t(c)], 0.0f) << where;
      EXPECT_TRUE(std::isnan(inverse[1])) << where << " " << inverse[1];
      EXPECT_TRUE(std::isnan(largest[1])) << where << " " << largest[1];
    }
  }
}

} // namespace
} // namespace octet::rt
