//===- ProfileTest.cpp - Step::work(), the roofline, the ceilings ----------===//
//
// work() of each kernel class against the formulas of docs/profiling.md on odd
// shapes; the roofline bound and profile JSON on synthetic ceilings; the
// measured ceilings' sanity (positive, ordered) and their cache file.
//
//===----------------------------------------------------------------------===//
#include "runtime/Profile.h"
#include "compiler/codegen/x86/AmxSupport.h"
#include "compiler/codegen/x86/KernelGenerator.h"
#include "runtime/Ceilings.h"
#include "runtime/Steps.h"
#include "test/unit/PlanTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace {
using namespace octet::rt;
using Op = ElementwiseProgram::Op;

struct Harness : test::BoundPlan {
  std::vector<std::vector<float>> buffers;
  TensorId tensor(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    buffers.emplace_back(size_t(std::max<int64_t>(n, 1)), 0.5f);
    return BoundPlan::tensor("t" + std::to_string(plan.tensors.size()), shape,
                             buffers.back().data(), Storage::Arena);
  }
};

// ---- Step::work() per kernel class ----------------------------------------------

TEST(Work, LinearIsTwoMNKAndReadsAWeightsCBiasExtras) {
  const int64_t k = 13, n = 10;
  std::vector<float> weight(k * n, 0.25f), bias(n, 1.0f);
  for (bool withBias : {false, true}) {
    Harness h;
    h.buffers.reserve(8);
    TensorId in = h.tensor({2, 3, k}), out = h.tensor({2, 3, n}), res = h.tensor({2, 3, n});
    LinearSpec spec;
    spec.input = in, spec.output = out, spec.k = k, spec.n = n;
    spec.weight = weight.data();
    spec.bias = withBias ? bias.data() : nullptr;
    spec.extras = {res};
    spec.epilogue.numInputs = 2; // acc + residual
    spec.epilogue.instrs = {{Op::Input, 0}, {Op::Input, 1}, {Op::Add, 0, 1}};
    std::string error;
    StepPtr step = makeLinear(spec, KernelOptions(), error);
    ASSERT_TRUE(step) << error;
    ExecContext ctx = h.context();
    ASSERT_TRUE(step->run(ctx).ok());
    const Work w = step->work(ctx);
    const double m = 6;
    EXPECT_DOUBLE_EQ(w.ops, 2 * m * n * k);
    EXPECT_DOUBLE_EQ(w.bytes, 4 * (m * k + k * n + m * n) + (withBias ? 4 * n : 0) + 4 * m * n);
    EXPECT_EQ(w.shapes, "[6, 13] x [13, 10]");
  }
}

TEST(Work, LayerNormCountsSevenOpsPerElementPlusTheResidualAdd) {
  const int64_t rows = 5, n = 11;
  std::vector<float> gamma(n, 1.0f), beta(n, 0.0f);
  for (bool residual : {false, true}) {
    Harness h;
    h.buffers.reserve(8);
    LayerNormSpec spec;
    spec.x = h.tensor({rows, n});
    spec.output = h.tensor({rows, n});
    if (residual) {
      spec.residual = h.tensor({rows, n});
      spec.sum = h.tensor({rows, n});
    }
    spec.gamma = gamma.data(), spec.beta = beta.data(), spec.n = n;
    std::string error;
    StepPtr step = makeLayerNorm(spec, KernelOptions(), error);
    ASSERT_TRUE(step) << error;
    ExecContext ctx = h.context();
    ASSERT_TRUE(step->run(ctx).ok());
    const Work w = step->work(ctx);
    const double e = rows * n;
    EXPECT_DOUBLE_EQ(w.ops, e * (7 + (residual ? 1 : 0)));
    // x, y (+ residual, sum) and gamma, beta.
    EXPECT_DOUBLE_EQ(w.bytes, 4 * (e * (residual ? 4 : 2) + 2 * n));
    EXPECT_EQ(w.shapes, "[5, 11]");
  }
}

TEST(Work, AttentionIsFourBHS2DPlusSoftmax) {
  const int64_t b = 2, s = 9, heads = 3, d = 4, width = heads * d;
  for (bool masked : {false, true}) {
    Harness h;
    h.buffers.reserve(8);
    AttentionSpec spec;
    spec.q = h.tensor({b, s, width});
    spec.k = h.tensor({b, s, width});
    spec.v = h.tensor({b, s, width});
    if (masked)
      spec.mask = h.tensor({b, 1, 1, s});
    spec.output = h.tensor({b, s, width});
    spec.numHeads = heads;
    spec.scale = 0.5f;
    std::string error;
    StepPtr step = makeAttention(spec, KernelOptions(), error);
    ASSERT_TRUE(step) << error;
    ExecContext ctx = h.context();
    ASSERT_TRUE(step->run(ctx).ok());
    const Work w = step->work(ctx);
    const double scores = double(b * heads * s * s);
    EXPECT_DOUBLE_EQ(w.ops, 4 * scores * d + scores * (masked ? 7 : 6));
    EXPECT_DOUBLE_EQ(w.bytes, 4.0 * (4 * b * s * width + (masked ? b * s : 0)));
    EXPECT_EQ(w.shapes, "[2, 9, 12] heads 3");
  }
}

TEST(Work, FusedElementwiseCountsLiveInstructions) {
  Harness h;
  h.buffers.reserve(8);
  TensorId x = h.tensor({3, 7}), y = h.tensor({7}), out = h.tensor({3, 7});
  ElementwiseProgram p; // (x + y) * 2, plus a dead Exp
  p.numInputs = 2;
  p.instrs = {
      {Op::Input, 0}, {Op::Input, 1}, {Op::Exp, 0}, {Op::Add, 0, 1}, {Op::Constant, -1, -1, 2.0f},
      {Op::Mul, 3, 4}};
  std::string error;
  StepPtr step = makeFusedElementwise(p, {x, y}, out, KernelOptions(), error);
  ASSERT_TRUE(step) << error;
  ExecContext ctx = h.context();
  ASSERT_TRUE(step->run(ctx).ok());
  const Work w = step->work(ctx);
  EXPECT_DOUBLE_EQ(w.ops, 21 * 2);
  EXPECT_DOUBLE_EQ(w.bytes, 4.0 * (21 + 7 + 21)); // y at its own size
  EXPECT_EQ(w.shapes, "[3, 7] [7] -> [3, 7]");
}

TEST(Work, QuantizePerRowReadsF32WritesU8AndScales) {
  const int64_t rows = 6, k = 13;
  std::vector<float> x(rows * k, 0.5f), scales(rows);
  std::vector<uint8_t> q(rows * k);
  for (bool jit : {true, false}) {
    Harness h;
    TensorId in = h.BoundPlan::tensor("x", {2, 3, k}, x.data(), Storage::Arena);
    TensorId out = h.BoundPlan::tensor("q", {2, 3, k}, q.data(), Storage::Arena, DType::U8);
    TensorId sc = h.BoundPlan::tensor("s", {2, 3, 1}, scales.data(), Storage::Arena);
    KernelOptions options;
    options.allowAvx512 = jit;
    std::string error;
    StepPtr step = makeQuantizePerRow(in, out, sc, options, error);
    ASSERT_TRUE(step) << error;
    ExecContext ctx = h.context();
    ASSERT_TRUE(step->run(ctx).ok());
    const Work w = step->work(ctx);
    const double e = rows * k;
    EXPECT_DOUBLE_EQ(w.ops, e);
    EXPECT_DOUBLE_EQ(w.bytes, 4 * e + e + 4 * rows);
    EXPECT_EQ(w.shapes, "[2, 3, 13]");
  }
}

TEST(Work, QuantizeIsOneOpPerElementAndEveryOperandOnce) {
  const int64_t e = 37;
  std::vector<float> x(e, 0.5f);
  float scale = 0.1f;
  uint8_t zp = 128;
  std::vector<uint8_t> q(e);
  Harness h;
  TensorId in = h.BoundPlan::tensor("x", {e}, x.data(), Storage::Arena);
  TensorId s = h.BoundPlan::tensor("s", {}, &scale, Storage::Arena);
  TensorId z = h.BoundPlan::tensor("z", {}, &zp, Storage::Arena, DType::U8);
  TensorId out = h.BoundPlan::tensor("q", {e}, q.data(), Storage::Arena, DType::U8);
  StepPtr step = makeQuantize(in, s, z, 1, out);
  ExecContext ctx = h.context();
  ASSERT_TRUE(step->run(ctx).ok());
  const Work w = step->work(ctx);
  EXPECT_DOUBLE_EQ(w.ops, e);
  EXPECT_DOUBLE_EQ(w.bytes, 4 * e + 4 + 1 + e);
}

TEST(Work, QLinearIsTwoMNKAndReadsU8AS8WeightsResultExtras) {
  const int64_t k = 13, n = 10, m = 6;
  std::vector<int8_t> weight(k * n, 3);
  std::vector<float> ws(n, 0.01f), residual(m * n, 1.0f);
  std::vector<uint8_t> x(m * k, 130), q(m * n);
  std::vector<float> y(m * n);
  float xs = 0.02f, ys = 0.5f;
  uint8_t xzp = 128, yzp = 128;
  for (DType outType : {DType::F32, DType::U8})
    for (bool vnni : {true, false}) {
      Harness h;
      QLinearSpec spec;
      spec.input = h.BoundPlan::tensor("x", {2, 3, k}, x.data(), Storage::Arena, DType::U8);
      spec.output = h.BoundPlan::tensor("y", {2, 3, n},
                                        outType == DType::F32 ? static_cast<void *>(y.data())
                                                              : static_cast<void *>(q.data()),
                                        Storage::Arena, outType);
      spec.weight = weight.data(), spec.k = k, spec.n = n;
      spec.wScale = ws.data(), spec.wScaleCount = n;
      spec.xScale = h.BoundPlan::tensor("xs", {}, &xs, Storage::Arena);
      spec.xScaleConst = &xs;
      spec.xZeroPoint = h.BoundPlan::tensor("xzp", {}, &xzp, Storage::Arena, DType::U8);
      spec.xZeroPointConst = &xzp;
      if (outType == DType::U8) {
        spec.outScale = h.BoundPlan::tensor("ys", {}, &ys, Storage::Arena);
        spec.outScaleConst = &ys;
        spec.outZeroPoint = h.BoundPlan::tensor("yzp", {}, &yzp, Storage::Arena, DType::U8);
        spec.outZeroPointConst = &yzp;
      }
      spec.extras = {h.BoundPlan::tensor("r", {2, 3, n}, residual.data(), Storage::Arena)};
      spec.epilogue.numInputs = 2; // acc + residual
      spec.epilogue.instrs = {{Op::Input, 0}, {Op::Input, 1}, {Op::Add, 0, 1}};
      KernelOptions options;
      options.allowAvx512 = vnni;
      std::string error;
      StepPtr step = makeQLinear(spec, outType, options, error);
      ASSERT_TRUE(step) << error;
      ExecContext ctx = h.context();
      ASSERT_TRUE(step->run(ctx).ok());
      const Work w = step->work(ctx);
      EXPECT_DOUBLE_EQ(w.ops, 2.0 * m * n * k);
      const double outBytes = outType == DType::F32 ? 4 : 1;
      EXPECT_DOUBLE_EQ(w.bytes, m * k + k * n + m * n * outBytes + 4.0 * m * n);
      EXPECT_EQ(w.shapes, "[6, 13] x [13, 10] u8s8");
    }
}

TEST(Work, GenericStepsUseTheDefault) {
  Harness h;
  h.buffers.reserve(8);
  TensorId a = h.tensor({4, 5}), b = h.tensor({1, 5}), out = h.tensor({4, 5});
  StepPtr step = makeBinary(BinaryKind::Add, a, b, out);
  ExecContext ctx = h.context();
  ASSERT_TRUE(step->run(ctx).ok());
  const Work w = step->work(ctx);
  EXPECT_DOUBLE_EQ(w.ops, 20);
  EXPECT_DOUBLE_EQ(w.bytes, 4.0 * (20 + 5 + 20));
  EXPECT_EQ(w.shapes, "[4, 5] [1, 5] -> [4, 5]");
}

// ---- Roofline and profile -------------------------------------------------------

Ceilings syntheticCeilings() {
  Ceilings c;
  c.threads = 2, c.host = "h", c.cpu = "cpu \"quoted\"", c.fp32Isa = "avx512";
  c.fp32Gflops = 100, c.int8Isa = "avx512_vnni", c.int8Gops = 400, c.bf16Gflops = 150;
  c.l2GBs = 200, c.l3GBs = 80, c.dramGBs = 20;
  c.l3CacheBytes = 1 << 20;
  c.l2BufferBytes = 1 << 18, c.l3BufferBytes = 1 << 19, c.dramBufferBytes = 1 << 28;
  return c;
}

TEST(Roofline, BoundIsMinOfPeakAndIntensityTimesBandwidth) {
  const Ceilings c = syntheticCeilings();
  std::string memory, compute;
  // 1 op/byte, fits L3: 80 GOP/s.
  EXPECT_DOUBLE_EQ(rooflineBound(c, "add", 1000, 1000, &memory, &compute), 80);
  EXPECT_EQ(memory, "L3");
  EXPECT_EQ(compute, "fp32");
  // 1 op/byte, beyond L3: DRAM's 20.
  EXPECT_DOUBLE_EQ(rooflineBound(c, "add", 2e6, 2e6, &memory), 20);
  EXPECT_EQ(memory, "DRAM");
  // 100 op/byte: compute bound, int8 kinds by the int8 peak.
  EXPECT_DOUBLE_EQ(rooflineBound(c, "gemm.jit_avx512", 1e5, 1e3), 100);
  EXPECT_DOUBLE_EQ(rooflineBound(c, "gemm.int8_vnni", 1e7, 1e3, nullptr, &compute), 400);
  EXPECT_EQ(compute, "int8");
  EXPECT_DOUBLE_EQ(rooflineBound(c, "gemm.u8s8_vnni+epilogue", 1e7, 1e3), 400);
  // bf16 on AMX: not the int8 peak (no tdpbf16ps peak is measured): the FP32 one.
  EXPECT_DOUBLE_EQ(rooflineBound(c, "attention.amx_bf16", 1e7, 1e3, nullptr, &compute), 100);
  EXPECT_EQ(compute, "fp32");
  // bf16 on vdpbf16ps: its own peak, where measured (else the FP32 one).
  EXPECT_DOUBLE_EQ(rooflineBound(c, "gemm.jit_bf16+epilogue", 1e7, 1e3, nullptr, &compute), 150);
  EXPECT_EQ(compute, "bf16");
  Ceilings noBf16 = c;
  noBf16.bf16Gflops = 0;
  EXPECT_DOUBLE_EQ(rooflineBound(noBf16, "gemm.jit_bf16", 1e7, 1e3, nullptr, &compute), 100);
  EXPECT_EQ(compute, "fp32");
  // The classes octetc run --profile samples peaks for.
  EXPECT_EQ(peakKindOf("qgemm.jit_vnni+epilogue.columns"), PeakKind::Int8);
  EXPECT_EQ(peakKindOf("attention.vnni_int8+quantize"), PeakKind::Int8);
  EXPECT_EQ(peakKindOf("gemm.jit_bf16"), PeakKind::Bf16);
  EXPECT_EQ(peakKindOf("attention.amx_bf16"), PeakKind::Fp32);
  EXPECT_EQ(peakKindOf("layernorm.jit_avx512"), PeakKind::Fp32);
}

TEST(Roofline, AnalyzeTakesMediansSharesAndFractions) {
  Plan plan;
  plan.steps.push_back(makeCopy(0, 1));
  plan.steps.push_back(makeCopy(0, 1));
  plan.steps[1]->location = "node \"b\"";
  std::vector<std::vector<double>> seconds = {{3e-3, 1e-3, 2e-3}, {4e-3, 2e-3, 6e-3, 8e-3}};
  std::vector<Work> work = {{2e6, 1e6, "[a]"}, {1e5, 1e6, "[b]"}};
  const Ceilings c = syntheticCeilings();
  ProfileReport r = analyzeProfile(plan, seconds, work, {0.01, 0.012, 0.008}, 2, &c);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(r.steps[0].medianSeconds, 2e-3);
  EXPECT_DOUBLE_EQ(r.steps[1].medianSeconds, 5e-3);
  EXPECT_DOUBLE_EQ(r.sumSeconds, 7e-3);
  EXPECT_DOUBLE_EQ(r.endToEndSeconds, 0.01);
  EXPECT_NEAR(r.sumMeanSeconds, 2e-3 + 5e-3, 1e-15);
  EXPECT_NEAR(r.endToEndMeanSeconds, 0.01, 1e-15);
  EXPECT_NEAR(r.steps[1].share, 5.0 / 7, 1e-12);
  EXPECT_EQ(r.repeats, 4);
  EXPECT_NEAR(r.steps[0].gops, 1.0, 1e-12); // 2e6 ops / 2 ms
  EXPECT_NEAR(r.steps[0].gbs, 0.5, 1e-12);  // 1e6 B / 2 ms
  EXPECT_NEAR(r.steps[0].intensity, 2.0, 1e-12);
  EXPECT_EQ(r.steps[0].memory, "L3"); // 1e6 bytes fit the 1 MiB L3
  EXPECT_NEAR(r.steps[0].boundGops, std::min(100.0, 2.0 * 80), 1e-9);
  EXPECT_NEAR(r.steps[0].rooflineFraction, 1.0 / 100, 1e-12);

  const std::string table = profileTable(r);
  EXPECT_NE(table.find("2 steps"), std::string::npos) << table;
  EXPECT_LT(table.find("\n     1 "), table.find("\n     0 ")) << "slowest first:\n" << table;
  const std::string json = profileJson(r);
  for (const char *key : {"\"steps\"", "\"roofline_fraction\"", "\"bound_gops\"",
                          "\"fp32_gflops\": 100", "\"node \\\"b\\\"\"", "\"cpu \\\"quoted\\\"\""})
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;

  ProfileReport bare = analyzeProfile(plan, seconds, work, {0.01}, 2, nullptr);
  EXPECT_NE(profileJson(bare).find("\"ceilings\": null"), std::string::npos);
  EXPECT_EQ(profileJson(bare).find("roofline_fraction"), std::string::npos);
}

TEST(Roofline, StepsOfOneKindAndShapesSumIntoClasses) {
  Plan plan;
  for (int i = 0; i < 3; ++i)
    plan.steps.push_back(makeCopy(0, 1));
  // Steps 0 and 2: one class ([a]); step 1 its own ([b]), slower in sum.
  std::vector<std::vector<double>> seconds = {{1e-3}, {5e-3}, {3e-3}};
  std::vector<Work> work = {{2e6, 1e3, "[a]"}, {1e6, 1e3, "[b]"}, {2e6, 1e3, "[a]"}};
  const Ceilings c = syntheticCeilings();
  ProfileReport r = analyzeProfile(plan, seconds, work, {0.01}, 2, &c);
  ASSERT_EQ(r.classes.size(), 2u);
  EXPECT_EQ(r.classes[0].shapes, "[b]") << "slowest first";
  const StepClassProfile &a = r.classes[1];
  EXPECT_EQ(a.steps, 2u);
  EXPECT_DOUBLE_EQ(a.medianSeconds, 4e-3);
  EXPECT_NEAR(a.share, 4.0 / 9, 1e-12);
  EXPECT_NEAR(a.gops, 1.0, 1e-12); // 4e6 ops in 4 ms
  // Compute bound (2000 op/B) under the 100 GFLOP/s FP32 peak.
  EXPECT_NEAR(a.rooflineFraction, 0.01, 1e-12);
  const std::string table = profileTable(r);
  EXPECT_NE(table.find("by class"), std::string::npos) << table;
  EXPECT_LT(table.find("[b]"), table.find("by step")) << table;
  EXPECT_NE(profileJson(r).find("\"classes\": ["), std::string::npos);
}

TEST(Roofline, PeaksSampledInTheRunReplaceTheCachedOnes) {
  Plan plan;
  plan.steps.push_back(makeCopy(0, 1));
  std::vector<std::vector<double>> seconds = {{1e-3}};
  std::vector<Work> work = {{1e8, 1e3, "[q]"}};
  const Ceilings c = syntheticCeilings();
  // The machine was slower in the run than when its ceilings were cached.
  const SampledPeaks peaks{4, 50, 200, 70, 160};
  ProfileReport r = analyzeProfile(plan, seconds, work, {0.001}, 2, &c, &peaks);
  EXPECT_EQ(r.peakSamples, 4);
  EXPECT_DOUBLE_EQ(r.cachedFp32Gflops, 100);
  EXPECT_DOUBLE_EQ(r.cachedInt8Gops, 400);
  EXPECT_DOUBLE_EQ(r.cachedBf16Gflops, 150);
  EXPECT_DOUBLE_EQ(r.ceilings.fp32Gflops, 50);
  EXPECT_DOUBLE_EQ(r.ceilings.int8Gops, 200);
  EXPECT_DOUBLE_EQ(r.ceilings.bf16Gflops, 70);
  EXPECT_DOUBLE_EQ(r.ceilings.l3GBs, 80) << "bandwidths stay the cached ones";
  EXPECT_NEAR(r.steps[0].rooflineFraction, 100.0 / 50, 1e-12); // 100 GFLOP/s of 50
  const std::string table = profileTable(r);
  EXPECT_NE(table.find("measured in this run"), std::string::npos) << table;
  EXPECT_NE(table.find("cached: fp32 100.0, int8 400.0, bf16 150.0"), std::string::npos) << table;
  EXPECT_NE(profileJson(r).find("\"peak_samples\": 4"), std::string::npos);
  // A handoff past kFarHandoffNs: the table says the threads run far apart.
  EXPECT_NE(table.find("hand a cache line over in 160.0 ns (median of the samples): far apart"),
            std::string::npos)
      << table;
  EXPECT_NE(profileJson(r).find("\"handoff_ns\": 160"), std::string::npos);
  SampledPeaks close = peaks;
  close.handoffNs = 30;
  const std::string closeTable =
      profileTable(analyzeProfile(plan, seconds, work, {0.001}, 2, &c, &close));
  EXPECT_NE(closeTable.find("over in 30.0 ns (median of the samples)\n"), std::string::npos)
      << closeTable;
  // No samples: the cached ceilings, said so.
  const SampledPeaks none;
  ProfileReport cached = analyzeProfile(plan, seconds, work, {0.001}, 2, &c, &none);
  EXPECT_EQ(cached.peakSamples, 0);
  EXPECT_DOUBLE_EQ(cached.ceilings.int8Gops, 400);
  EXPECT_EQ(profileTable(cached).find("measured in this run"), std::string::npos);
}

TEST(Roofline, MissingTimesOrWorkAreZeroNotACrash) {
  Plan plan;
  plan.steps.push_back(makeCopy(0, 1));
  ProfileReport r = analyzeProfile(plan, {}, {}, {}, 1, nullptr);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].gops, 0);
  EXPECT_FALSE(profileTable(r).empty());
}

// ---- Ceilings ----------------------------------------------------------------------

// The slow-bf16 note on any CPU (whether this one's check fires depends on
// its vdpbf16ps): the peaks it names, and nothing where bf16 is not slower.
TEST(Ceilings, Bf16SlowNoteNamesBothPeaksOnlyWhereBf16IsSlower) {
  const std::string note = bf16SlowNote(91.4, 177.2);
  EXPECT_NE(note.find("peaks at 91 GFLOP/s per thread against 177 for FP32 FMA"), std::string::npos)
      << note;
  EXPECT_NE(note.find("slower here than the default f32"), std::string::npos) << note;
  EXPECT_EQ(bf16SlowNote(350.0, 177.0), "");
  EXPECT_EQ(bf16SlowNote(177.0, 177.0), "");
  EXPECT_EQ(bf16SlowNote(0.0, 177.0), "");
  EXPECT_EQ(bf16SlowNote(std::nan(""), 177.0), "");
  EXPECT_EQ(bf16SlowNote(91.0, std::nan("")), "");
}

TEST(Ceilings, JsonRoundTripsAndRejectsGarbage) {
  const Ceilings c = syntheticCeilings();
  Ceilings back;
  std::string error;
  ASSERT_TRUE(Ceilings::fromJson(c.toJson(), back, error)) << error;
  EXPECT_EQ(back.cpu, c.cpu);
  EXPECT_EQ(back.threads, 2);
  EXPECT_DOUBLE_EQ(back.dramGBs, 20);
  EXPECT_EQ(back.l3CacheBytes, 1 << 20);
  EXPECT_DOUBLE_EQ(back.bf16Gflops, c.bf16Gflops);
  Ceilings noAmx = c;
  noAmx.amxNote = "host lacks \"AMX\"";
  ASSERT_TRUE(Ceilings::fromJson(noAmx.toJson(), back, error)) << error;
  EXPECT_EQ(back.amxNote, noAmx.amxNote);
  // Older caches (1: before amx_note, 2: before bf16_gflops, 3: no int8 peak
  // without VNNI) are measured again, not half read.
  for (const char *older : {"\"version\": 1", "\"version\": 2", "\"version\": 3"}) {
    std::string old = c.toJson();
    old.replace(old.find("\"version\": 4"), 12, older);
    EXPECT_FALSE(Ceilings::fromJson(old, back, error)) << older;
  }
  EXPECT_FALSE(Ceilings::fromJson("", back, error));
  EXPECT_FALSE(Ceilings::fromJson("{\"version\": 99}", back, error));
  EXPECT_NE(error.find("version"), std::string::npos) << error;
  std::string bad = c.toJson();
  bad.replace(bad.find("\"dram_gbs\": 20"), 14, "\"dram_gbs\": x");
  EXPECT_FALSE(Ceilings::fromJson(bad, back, error));
  EXPECT_NE(error.find("dram_gbs"), std::string::npos) << error;
}

TEST(Ceilings, SampledPeaksArePositiveMediansOfTheSamples) {
  ComputePeakSampler sampler(1);
  EXPECT_EQ(sampler.peaks().samples, 0);
  sampler.sample();
  sampler.sample();
  sampler.sample();
  const SampledPeaks p = sampler.peaks();
  EXPECT_EQ(p.samples, 3);
  EXPECT_GT(p.fp32Gflops, 0);
  // vpdpbusd: 4 products per lane against 1 FMA; AVX2's vpmaddwd: 2.
  if (octet::x86::CpuFeatures::host().supports(octet::x86::Isa::Avx2))
    EXPECT_GT(p.int8Gops, p.fp32Gflops);
  else
    EXPECT_EQ(p.int8Gops, 0);
  // vdpbf16ps where the CPU has it (at half the FMA's rate on some Xeons: no order).
  if (octet::x86::CpuFeatures::host().supports(octet::x86::Isa::Avx512Bf16))
    EXPECT_GT(p.bf16Gflops, 0);
  else
    EXPECT_EQ(p.bf16Gflops, 0);
  EXPECT_EQ(p.handoffNs, 0) << "one thread hands nothing over";
  // A plan without INT8 or bf16 steps asks for the FMA loop only.
  ComputePeakSampler fmaOnly(1, false, false);
  fmaOnly.sample();
  const SampledPeaks f = fmaOnly.peaks();
  EXPECT_GT(f.fp32Gflops, 0);
  EXPECT_EQ(f.int8Gops, 0);
  EXPECT_EQ(f.bf16Gflops, 0);
}

TEST(Ceilings, HandoffBetweenTwoThreadsIsPositive) {
  EXPECT_EQ(handoffNanoseconds(1), 0);
  // Two threads even on a one-core host (they then hand over at context
  // switches, slowly but within the polls' limit or not counted).
  const double ns = handoffNanoseconds(2);
  EXPECT_GE(ns, 0);
  if (std::thread::hardware_concurrency() >= 2) {
    EXPECT_GT(ns, 1) << "a cache line between cores takes more than a nanosecond";
    EXPECT_LT(ns, 1e6);
  }
  // The sampler records it with the peaks (the median of its samples).
  ComputePeakSampler sampler(2, false, false);
  sampler.sample();
  if (std::thread::hardware_concurrency() >= 2) {
    EXPECT_GT(sampler.peaks().handoffNs, 1);
  }
  EXPECT_EQ(handoffNote(kFarHandoffNs), "");
  EXPECT_NE(handoffNote(2 * kFarHandoffNs).find("far apart"), std::string::npos);
}

TEST(Ceilings, MeasuredOnThisHostArePositiveAndCached) {
  char dir[] = "/tmp/octet-ceilings-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  const char *old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  setenv("XDG_CACHE_HOME", dir, 1);

  Ceilings c;
  bool cached = true;
  std::string note;
  ASSERT_TRUE(loadOrMeasureCeilings(1, false, c, &cached, &note, 1).ok());
  EXPECT_FALSE(cached);
  EXPECT_EQ(c.threads, 1);
  EXPECT_GT(c.fp32Gflops, 1);
  EXPECT_GT(c.l2GBs, 0.5);
  EXPECT_GT(c.l3GBs, 0.5);
  EXPECT_GT(c.dramGBs, 0.5);
  // Caches are faster than DRAM (a loose bound: the host may be busy).
  EXPECT_GT(c.l2GBs, 0.8 * c.dramGBs);
  // Peak FP32 per thread below a generous physical bound: 2 FMA pipes x 16 lanes x 2 x 6 GHz.
  EXPECT_LT(c.fp32Gflops, 2 * 16 * 2 * 6.0);
  if (octet::x86::CpuFeatures::host().avx512vnni) {
    EXPECT_GT(c.int8Gops, c.fp32Gflops); // 4 products per lane per instruction
  }
  // vdpbf16ps where the CPU has it (its rate varies: half the FMA's on some Xeons).
  if (octet::x86::CpuFeatures::host().supports(octet::x86::Isa::Avx512Bf16))
    EXPECT_GT(c.bf16Gflops, 1);
  else
    EXPECT_EQ(c.bf16Gflops, 0);
  // tdpbusd runs only where AMX is usable; elsewhere 0 and the reason.
  std::string amxWhy;
  if (octet::x86::amxUsable(&amxWhy)) {
    EXPECT_GT(c.amxInt8Gops, c.int8Gops); // 16x16x64 products per tdpbusd
    EXPECT_EQ(c.amxNote, "");
  } else {
    EXPECT_EQ(c.amxInt8Gops, 0);
    EXPECT_EQ(c.amxNote, amxWhy);
    EXPECT_FALSE(c.amxNote.empty());
  }
  const std::string path = ceilingsCachePath(1);
  EXPECT_EQ(path.rfind(std::string(dir) + "/octet/ceilings-", 0), 0u) << path;
  EXPECT_NE(path.find("-1.json"), std::string::npos) << path;

  Ceilings again;
  ASSERT_TRUE(loadOrMeasureCeilings(1, false, again, &cached).ok());
  EXPECT_TRUE(cached);
  EXPECT_NEAR(again.fp32Gflops, c.fp32Gflops, 1e-9 * c.fp32Gflops);

  {
    std::ofstream(path) << "not json";
  }
  ASSERT_TRUE(loadOrMeasureCeilings(1, false, again, &cached, &note, 1).ok());
  EXPECT_FALSE(cached);
  EXPECT_NE(note.find("unreadable"), std::string::npos) << note;

  std::remove(path.c_str());
  if (old)
    setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else
    unsetenv("XDG_CACHE_HOME");
  std::string sub = std::string(dir) + "/octet";
  rmdir(sub.c_str());
  rmdir(dir);
}

} // namespace
