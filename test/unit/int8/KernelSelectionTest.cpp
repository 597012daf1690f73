//===- KernelSelectionTest.cpp - CPU targets, the GEMM provider rule, autotune ===//
//
// - CpuFeatures targets: names, aliases, what one lacks on another.
// - decideGemmChoice with injected timings (deterministic): the rule's
//   provider unless beaten beyond the noise, never a candidate another beats
//   beyond the noise (also over random timings).
// - resolveGemmChoice's rule for each target (plans for other CPUs are built
//   here, never run), and autotune on this host (timings cached per shape).
// - The qlinear step: a provider per M bucket, a compile-time packed weight
//   used in place (changing its bytes after the build changes the result),
//   AMX where usable (skipped, saying why, elsewhere).
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelSelection.h"
#include "compiler/codegen/PackedWeights.h"
#include "compiler/codegen/x86/AmxSupport.h"
#include "compiler/codegen/x86/Int8GemmAvx2.h"
#include "compiler/codegen/x86/Int8GemmDriver.h"
#include "test/unit/PlanTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {
using namespace octet::rt;
using octet::x86::CpuFeatures;
using octet::x86::Isa;

CpuFeatures target(const std::string &name) {
  CpuFeatures f;
  std::string error;
  EXPECT_TRUE(CpuFeatures::forTarget(name, f, error)) << error;
  return f;
}

KernelOptions optionsFor(const std::string &name) {
  KernelOptions o;
  std::string error;
  EXPECT_TRUE(o.setTarget(name, error)) << error;
  return o;
}

GemmChoice all(GemmProvider p) { return {p, p, p}; }

TEST(CpuFeaturesTarget, NamesAliasesAndWhatIsMissing) {
  EXPECT_TRUE(target("amx").supports(Isa::AmxInt8));
  EXPECT_TRUE(target("sapphirerapids") == target("amx"));
  EXPECT_TRUE(target("zen4") == target("avx512-bf16"));
  EXPECT_TRUE(target("avx512-bf16").supports(Isa::Avx512Bf16));
  EXPECT_FALSE(target("avx512-vnni").supports(Isa::Avx512Bf16));
  EXPECT_TRUE(target("avx512-vnni").supports(Isa::Avx512Vnni));
  EXPECT_FALSE(target("avx512").supports(Isa::Avx512Vnni));
  EXPECT_FALSE(target("avx2").supports(Isa::Avx512));
  EXPECT_TRUE(target("avx-vnni").supports(Isa::AvxVnni));
  EXPECT_TRUE(target("host") == CpuFeatures::host());
  EXPECT_EQ(target("avx2").missingOn(target("amx")), "");
  EXPECT_EQ(target("amx").missingOn(target("avx512-vnni")),
            "avx512_bf16 avx_vnni amx_tile amx_int8 amx_bf16");
  CpuFeatures f;
  std::string error;
  EXPECT_FALSE(CpuFeatures::forTarget("pentium", f, error));
  EXPECT_NE(error.find("unknown target CPU 'pentium'; known: host avx2"), std::string::npos)
      << error;

  KernelOptions o;
  EXPECT_FALSE(o.setTarget("pentium", error));
  EXPECT_EQ(o.target, "host");
  EXPECT_EQ(o.whyNotRunnableHere(), "");
  ASSERT_TRUE(o.setTarget("amx", error));
  const std::string missing = target("amx").missingOn(CpuFeatures::host());
  EXPECT_EQ(o.whyNotRunnableHere(),
            missing.empty() ? "" : "compiled for amx, this CPU lacks " + missing);
}

// ---- The decision, with injected timings ---------------------------------------

BucketTiming t(double median, double spread = 0) {
  return {true, median, median * (1 - spread / 2), median * (1 + spread / 2)};
}

TEST(GemmDecision, NoiseMargin) {
  EXPECT_TRUE(fasterBeyondNoise(t(1.0), t(1.06)));
  EXPECT_FALSE(fasterBeyondNoise(t(1.0), t(1.04)));     // under kMinTimingNoise
  EXPECT_FALSE(fasterBeyondNoise(t(1.0, 0.3), t(1.2))); // its own runs spread 30 %
  EXPECT_FALSE(fasterBeyondNoise(t(1.0), t(1.2, 0.3)));
  EXPECT_TRUE(fasterBeyondNoise(t(1.0, 0.3), t(1.4)));
  EXPECT_FALSE(fasterBeyondNoise(BucketTiming{}, t(9.0)));
}

TEST(GemmDecision, RuleUnlessBeatenBeyondNoise) {
  // VNNI: 1.0 / 1.0 / 10.0 ms; oneDNN: 1.03 (noise) / 0.5 (faster) / 10.1.
  std::vector<GemmCandidate> c = {{GemmProvider::JitVnni, "", {t(1.0), t(1.0), t(10.0)}},
                                  {GemmProvider::OneDnn, "", {t(1.03), t(0.5), t(10.1)}}};
  std::array<std::string, kGemmBuckets> why;
  why.fill("rule");
  GemmChoice got = decideGemmChoice(all(GemmProvider::JitVnni), c, why);
  EXPECT_EQ(got[0], GemmProvider::JitVnni) << why[0];
  EXPECT_EQ(got[1], GemmProvider::OneDnn) << why[1];
  EXPECT_EQ(got[2], GemmProvider::JitVnni) << why[2];
  EXPECT_NE(why[0].find("measured fastest"), std::string::npos) << why[0];
  EXPECT_NE(why[1].find("autotune: onednn 0.500 ms beats the rule's jit_vnni 1.000 ms"),
            std::string::npos)
      << why[1];

  // The rule loses in every bucket; in the last, oneDNN (chosen for a smaller
  // M) is within noise of the fastest AMX: one provider built, not two.
  c = {{GemmProvider::JitVnni, "", {t(2.0), t(2.0), t(2.0)}},
       {GemmProvider::OneDnn, "", {t(1.0), t(1.0), t(1.03)}},
       {GemmProvider::JitAmx, "", {t(1.5), t(1.5), t(1.0)}}};
  why.fill("rule");
  got = decideGemmChoice(all(GemmProvider::JitVnni), c, why);
  EXPECT_EQ(got, all(GemmProvider::OneDnn));
  EXPECT_NE(why[2].find("(provider of a smaller M)"), std::string::npos) << why[2];

  // A rule's provider that could not be timed (AMX on a CPU without it) stays.
  c = {{GemmProvider::JitAmx, "this CPU lacks amx", {}},
       {GemmProvider::JitVnni, "", {t(1.0), t(1.0), t(1.0)}}};
  why.fill("rule");
  got = decideGemmChoice(all(GemmProvider::JitAmx), c, why);
  EXPECT_EQ(got, all(GemmProvider::JitAmx));
  EXPECT_NE(why[0].find("not timed: this CPU lacks amx"), std::string::npos) << why[0];
}

TEST(GemmDecision, NeverAProviderBeatenBeyondNoise) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> ms(0.1, 3.0), spread(0, 0.4);
  const GemmProvider providers[] = {GemmProvider::JitVnni, GemmProvider::JitAmx,
                                    GemmProvider::OneDnn};
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<GemmCandidate> c;
    for (GemmProvider p : providers) {
      GemmCandidate cand{p, "", {}};
      for (auto &b : cand.times)
        b = t(ms(gen), spread(gen));
      c.push_back(cand);
    }
    std::array<std::string, kGemmBuckets> why;
    const GemmChoice got = decideGemmChoice(all(providers[trial % 3]), c, why);
    for (int b = 0; b < kGemmBuckets; ++b) {
      const GemmCandidate *chosen = nullptr;
      for (const GemmCandidate &cand : c)
        if (cand.provider == got[b])
          chosen = &cand;
      ASSERT_TRUE(chosen);
      for (const GemmCandidate &other : c)
        ASSERT_FALSE(fasterBeyondNoise(other.times[b], chosen->times[b]))
            << "trial " << trial << " bucket " << b << ": " << why[b];
    }
  }
}

// ---- The rule per target, and autotune ------------------------------------------

/// A small qlinear on a hand-bound plan: u8 [M, K] x s8 [K, N] -> f32 with bias.
struct QCase {
  int64_t m, k, n;
  std::vector<uint8_t> x;
  std::vector<int8_t> w;
  std::vector<float> ws, bias, out;
  float xs = 0.02f;
  uint8_t xzp = 128;
  test::BoundPlan plan;
  QLinearSpec spec;
  QCase(int64_t m, int64_t k, int64_t n)
      : m(m), k(k), n(n), x(m * k), w(k * n), ws(n), bias(n), out(m * n) {
    std::mt19937 gen(unsigned(m * 131 + k * 7 + n));
    std::uniform_int_distribution<int> u8(0, 255), s8(-127, 127);
    for (auto &v : x)
      v = uint8_t(u8(gen));
    for (auto &v : w)
      v = int8_t(s8(gen));
    for (int64_t j = 0; j < n; ++j)
      ws[j] = 0.001f * float(1 + j % 5), bias[j] = 0.25f * float(j % 3);
    spec.input = plan.tensor("x", {m, k}, x.data(), Storage::Input, DType::U8);
    spec.output = plan.tensor("y", {m, n}, out.data(), Storage::Output, DType::F32);
    spec.xScale = plan.tensor("xs", {}, &xs, Storage::Constant, DType::F32);
    spec.xScaleConst = &xs;
    spec.xZeroPoint = plan.tensor("xzp", {}, &xzp, Storage::Constant, DType::U8);
    spec.xZeroPointConst = &xzp;
    spec.weight = w.data(), spec.k = k, spec.n = n;
    spec.wScale = ws.data(), spec.wScaleCount = n;
    spec.bias = bias.data();
  }
  /// The formula, exactly.
  float want(int64_t i, int64_t j) const {
    int32_t sum = 0;
    for (int64_t kk = 0; kk < k; ++kk)
      sum += (int32_t(x[i * k + kk]) - xzp) * int32_t(w[kk * n + j]);
    return float(xs * ws[j]) * float(sum) + bias[j];
  }
  /// Bit for bit, or for oneDNN within its bias-quotient rounding (MatMulU8S8.h).
  void expectFormula(const std::string &what) const {
    const bool exact = what.find("onednn") == std::string::npos;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const float y = want(i, j);
        if (exact)
          ASSERT_EQ(out[i * n + j], y) << what << " [" << i << ", " << j << "]";
        else
          ASSERT_NEAR(out[i * n + j], y, 4e-6f * (1 + std::fabs(y))) << what;
      }
  }
};

TEST(GemmRule, QLinearProviderPerTarget) {
  QCase q(4, 64, 48);
  auto rule = [&](const KernelOptions &o, QLinearSpec spec = QLinearSpec()) {
    if (spec.k == 0)
      spec = q.spec;
    std::string error;
    GemmChoiceRecord r = resolveGemmChoice(spec, DType::F32, o, error);
    EXPECT_EQ(error, "");
    EXPECT_EQ(spec.provider, r.choice);
    EXPECT_FALSE(r.autotuned);
    return r.choice;
  };
  EXPECT_EQ(rule(optionsFor("amx")), all(GemmProvider::JitAmx));
  EXPECT_EQ(rule(optionsFor("icelake-server")), all(GemmProvider::JitVnni));
  // Without VNNI: the exact AVX2 GEMM, for per-tensor and per-row scales alike.
  EXPECT_EQ(rule(optionsFor("avx512")), all(GemmProvider::JitAvx2));
  EXPECT_EQ(rule(optionsFor("avx2")), all(GemmProvider::JitAvx2));
  KernelOptions noAvx512 = optionsFor("amx");
  noAvx512.allowAvx512 = false;
  EXPECT_EQ(rule(noAvx512), all(GemmProvider::JitAvx2));
  QLinearSpec perRow = q.spec;
  perRow.xScalePerRow = true, perRow.xScaleConst = nullptr;
  EXPECT_EQ(rule(optionsFor("avx2"), perRow), all(GemmProvider::JitAvx2));
  EXPECT_EQ(rule(optionsFor("avx512-vnni"), perRow), all(GemmProvider::JitVnni));
  // An entry already resolved is kept.
  QLinearSpec given = q.spec;
  given.provider = {GemmProvider::OneDnn, GemmProvider::Auto, GemmProvider::Reference};
  std::string error;
  resolveGemmChoice(given, DType::F32, optionsFor("avx512-vnni"), error);
  EXPECT_EQ(given.provider,
            (GemmChoice{GemmProvider::OneDnn, GemmProvider::JitVnni, GemmProvider::Reference}));
  // --gemm onednn with what oneDNN cannot express: an error naming it.
  KernelOptions forced = optionsFor("avx512-vnni");
  forced.gemm = KernelOptions::Gemm::OneDnn;
  resolveGemmChoice(perRow, DType::F32, forced, error);
  EXPECT_NE(error.find("cannot express per-row"), std::string::npos) << error;
}

TEST(GemmRule, LinearProviderPerTarget) {
  std::vector<float> w(3072 * 8, 0.5f);
  LinearSpec spec;
  spec.input = 0, spec.output = 1, spec.weight = w.data(), spec.k = 768, spec.n = 32;
  auto rule = [&](LinearSpec s, const KernelOptions &o) {
    std::string error;
    GemmChoiceRecord r = resolveGemmChoice(s, o, error);
    EXPECT_EQ(error, "");
    return r.choice;
  };
  EXPECT_EQ(rule(spec, optionsFor("avx512")), all(GemmProvider::JitF32));
  EXPECT_EQ(rule(spec, optionsFor("avx2")), all(GemmProvider::OneDnn));
  LinearSpec longK = spec;
  longK.k = 3072, longK.n = 8;
  EXPECT_EQ(rule(longK, optionsFor("avx512")), all(GemmProvider::OneDnn));
  longK.epilogue.numInputs = 1;
  longK.epilogue.instrs = {{ElementwiseProgram::Op::Input, 0},
                           {ElementwiseProgram::Op::GeluErf, 0}};
  EXPECT_EQ(rule(longK, optionsFor("avx512")), all(GemmProvider::JitF32));
  KernelOptions jit = optionsFor("avx2");
  jit.gemm = KernelOptions::Gemm::Jit;
  std::string error;
  resolveGemmChoice(spec, jit, error);
  EXPECT_NE(error.find("the JIT GEMM was asked for, but the target CPU (avx2) has no AVX-512"),
            std::string::npos)
      << error;
}

TEST(GemmAutotune, TimesWhatRunsHereAndCachesPerShape) {
  QCase q(4, 96, 40);
  GemmChoiceLog log;
  KernelOptions o;
  o.autotune = true;
  o.choices = &log;
  std::string error;
  StepPtr step = makeQLinear(q.spec, DType::F32, o, error);
  ASSERT_TRUE(step) << error;
  ASSERT_EQ(log.records.size(), 1u);
  // A copy: the second makeQLinear below appends to log.records, which may
  // move the first record (a reference would dangle).
  const GemmChoiceRecord r = log.records[0];
  EXPECT_TRUE(r.autotuned);
  EXPECT_EQ(r.step, step.get());
  ASSERT_GE(r.candidates.size(), 2u); // oneDNN and a JIT GEMM here (AMX, VNNI or AVX2)
  for (const GemmCandidate &c : r.candidates) {
    const bool runnable =
        c.provider == GemmProvider::OneDnn ||
        (c.provider == GemmProvider::JitVnni && octet::x86::Int8GemmDriver::hostSupported()) ||
        (c.provider == GemmProvider::JitAvx2 && octet::x86::Int8GemmAvx2::hostSupported()) ||
        (c.provider == GemmProvider::JitAmx && octet::x86::amxUsable());
    for (int b = 0; b < kGemmBuckets; ++b)
      EXPECT_EQ(c.times[b].timed, runnable) << gemmProviderName(c.provider) << " " << c.note;
  }
  for (int b = 0; b < kGemmBuckets; ++b)
    for (const GemmCandidate &c : r.candidates)
      for (const GemmCandidate &chosen : r.candidates)
        if (chosen.provider == r.choice[b]) {
          EXPECT_FALSE(fasterBeyondNoise(c.times[b], chosen.times[b])) << r.reason[b];
        }
  // The same shape again: the timings are reused, not measured again.
  QCase again(4, 96, 40);
  ASSERT_TRUE(makeQLinear(again.spec, DType::F32, o, error)) << error;
  ASSERT_EQ(log.records.size(), 2u);
  for (size_t i = 0; i < r.candidates.size(); ++i)
    EXPECT_EQ(log.records[1].candidates[i].times[1].medianMs, r.candidates[i].times[1].medianMs);
  // The step computes the formula with the chosen providers.
  ASSERT_TRUE(q.plan.run(*step).ok());
  q.expectFormula(step->kind());
  // The table names every bucket.
  nameGemmChoices(log, Plan());
  const std::string table = formatGemmChoices(log, o);
  EXPECT_NE(table.find("qlinear    96    40 <=32"), std::string::npos) << table;
  EXPECT_NE(table.find(">256"), std::string::npos) << table;
}

// ---- The qlinear step ----------------------------------------------------------------

TEST(QLinearProviders, OneProviderPerBucket) {
  if (!octet::x86::Int8GemmDriver::hostSupported())
    GTEST_SKIP() << "host lacks AVX-512 VNNI";
  for (int64_t m : {5, 100, 300}) {
    QCase q(m, 70, 33);
    q.spec.provider = {GemmProvider::JitVnni, GemmProvider::OneDnn, GemmProvider::Reference};
    std::string error;
    StepPtr step = makeQLinear(q.spec, DType::F32, KernelOptions(), error);
    ASSERT_TRUE(step) << error;
    EXPECT_EQ(step->kind(), "m<=32:qgemm.jit_vnni m<=256:qgemm.onednn m>256:qgemm.reference");
    ASSERT_TRUE(q.plan.run(*step).ok());
    q.expectFormula(std::string(m == 100 ? "onednn" : "jit or reference") +
                    ", m = " + std::to_string(m));
  }
}

/// Packs q's weight for `isa` as octet-pack-weights does and runs `provider`
/// on it; then zeroes the packed bytes: a provider using them in place now
/// computes bias only, one that copied them still the formula.
void checkPackedInPlace(octet::PackIsa isa, GemmProvider provider, bool inPlace) {
  QCase q(9, 130, 50);
  const octet::PackedWeightLayout layout = octet::packedWeightLayout(
      isa, q.k, q.n, octet::x86::int8GemmPanelWidth(octet::PackIsa::Avx512Vnni, q.n));
  std::vector<int8_t> packed(size_t(layout.bytes()));
  std::vector<int32_t> colsum(size_t(q.n));
  octet::packWeight(layout, q.w.data(), octet::WeightLayout::KN, packed.data(), colsum.data());
  q.spec.weight = packed.data();
  q.spec.packed = layout;
  q.spec.colsum = colsum.data();
  q.spec.provider = all(provider);
  std::string error;
  StepPtr step = makeQLinear(q.spec, DType::F32, KernelOptions(), error);
  ASSERT_TRUE(step) << error;
  colsum.assign(colsum.size(), 12345); // read at build time only
  ASSERT_TRUE(q.plan.run(*step).ok());
  q.expectFormula(step->kind());
  std::fill(packed.begin(), packed.end(), 0);
  ASSERT_TRUE(q.plan.run(*step).ok());
  if (!inPlace)
    return q.expectFormula(step->kind() + " after the packed bytes changed");
  // Zero weights: sum = 0, compensation xzp * colsum (the original colsum, read at build).
  for (int64_t j = 0; j < q.n; ++j) {
    int32_t sum = 0;
    for (int64_t kk = 0; kk < q.k; ++kk)
      sum -= int32_t(q.xzp) * int32_t(q.w[kk * q.n + j]);
    const float expect = float(q.xs * q.ws[j]) * float(sum) + q.bias[j];
    ASSERT_EQ(q.out[j], expect) << step->kind() << " column " << j;
  }
}

TEST(QLinearProviders, CompileTimePackedWeightUsedInPlace) {
  if (!octet::x86::Int8GemmDriver::hostSupported())
    GTEST_SKIP() << "host lacks AVX-512 VNNI";
  checkPackedInPlace(octet::PackIsa::Avx512Vnni, GemmProvider::JitVnni, true);
  // Another kernel's layout is repacked (a copy); the reference keeps its own.
  checkPackedInPlace(octet::PackIsa::Amx, GemmProvider::JitVnni, false);
  checkPackedInPlace(octet::PackIsa::Avx512Vnni, GemmProvider::Reference, false);
  checkPackedInPlace(octet::PackIsa::Avx512Vnni, GemmProvider::OneDnn, false);
  std::string why;
  if (!octet::x86::amxUsable(&why))
    GTEST_SKIP() << "AMX not usable (" << why << "): the AMX cases did not run";
  checkPackedInPlace(octet::PackIsa::Amx, GemmProvider::JitAmx, true);
  checkPackedInPlace(octet::PackIsa::Avx512Vnni, GemmProvider::JitAmx, false);
}

// A plan for the AMX target is built on any CPU (its code generated); running
// it where AMX is not usable is an error that says why, never SIGILL.
TEST(QLinearProviders, AmxTargetBuildsAnywhereRunsOnlyWithAmx) {
  if (!CpuFeatures::host().supports(Isa::Avx512))
    GTEST_SKIP() << "the AMX kernel's epilogue is AVX-512: generating it needs no AVX-512, "
                    "but this test's reference runs need the host to have it";
  QCase q(20, 100, 40);
  std::string error;
  StepPtr step = makeQLinear(q.spec, DType::F32, optionsFor("amx"), error);
  ASSERT_TRUE(step) << error;
  EXPECT_EQ(step->kind(), "qgemm.jit_amx");
  Status s = q.plan.run(*step);
  std::string why;
  if (octet::x86::amxUsable(&why)) {
    ASSERT_TRUE(s.ok()) << s.message();
    q.expectFormula("amx");
  } else {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("cannot run on this host"), std::string::npos) << s.message();
  }
}

} // namespace
