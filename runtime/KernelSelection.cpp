//===- KernelSelection.cpp - the GEMM provider rule and autotune -----------===//
#include "runtime/KernelSelection.h"
#include "runtime/Ceilings.h"
#include "runtime/EpilogueSplit.h"

#include "compiler/codegen/onednn/MatMulU8S8.h"
#include "compiler/codegen/x86/AmxSupport.h"
#include "compiler/codegen/x86/GemmBf16.h"
#include "compiler/codegen/x86/Int8GemmAvx2.h"
#include "compiler/codegen/x86/Int8GemmDriver.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

namespace octet::rt {

const char *gemmProviderName(GemmProvider provider) {
  switch (provider) {
  case GemmProvider::Auto:
    return "auto";
  case GemmProvider::JitF32:
    return "jit_avx512";
  case GemmProvider::JitVnni:
    return "jit_vnni";
  case GemmProvider::JitAmx:
    return "jit_amx";
  case GemmProvider::OneDnn:
    return "onednn";
  case GemmProvider::Reference:
    return "reference";
  case GemmProvider::JitBf16:
    return "jit_bf16";
  case GemmProvider::JitAvx2:
    return "jit_avx2";
  }
  return "unknown";
}

bool KernelOptions::setTarget(const std::string &name, std::string &error) {
  x86::CpuFeatures features;
  if (!x86::CpuFeatures::forTarget(name, features, error))
    return false;
  cpu = features;
  target = name;
  return true;
}

std::string KernelOptions::whyNotRunnableHere() const {
  const std::string missing = cpu.missingOn(x86::CpuFeatures::host());
  return missing.empty() ? "" : "compiled for " + target + ", this CPU lacks " + missing;
}

// ---- The decision --------------------------------------------------------------

bool fasterBeyondNoise(const BucketTiming &a, const BucketTiming &b) {
  if (!a.timed || !b.timed || !(a.medianMs > 0) || !(b.medianMs > 0))
    return false;
  const double margin = std::max(
      {kMinTimingNoise, (a.highMs - a.lowMs) / a.medianMs, (b.highMs - b.lowMs) / b.medianMs});
  return a.medianMs * (1 + margin) < b.medianMs;
}

namespace {

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

const GemmCandidate *findCandidate(const std::vector<GemmCandidate> &candidates, GemmProvider p) {
  for (const GemmCandidate &c : candidates)
    if (c.provider == p)
      return &c;
  return nullptr;
}

} // namespace

GemmChoice decideGemmChoice(const GemmChoice &rule, const std::vector<GemmCandidate> &candidates,
                            std::array<std::string, kGemmBuckets> &reason) {
  GemmChoice choice = rule;
  for (int b = 0; b < kGemmBuckets; ++b) {
    const GemmCandidate *ruled = findCandidate(candidates, rule[b]);
    if (!ruled || !ruled->times[b].timed) {
      reason[b] += " (not timed" + (ruled && !ruled->note.empty() ? ": " + ruled->note : "") + ")";
      continue;
    }
    // Candidates that no other candidate beats beyond the noise.
    auto acceptable = [&](const GemmCandidate &c) {
      if (!c.times[b].timed)
        return false;
      for (const GemmCandidate &other : candidates)
        if (fasterBeyondNoise(other.times[b], c.times[b]))
          return false;
      return true;
    };
    const GemmCandidate *fastest = nullptr;
    for (const GemmCandidate &c : candidates)
      if (c.times[b].timed && (!fastest || c.times[b].medianMs < fastest->times[b].medianMs))
        fastest = &c;
    if (acceptable(*ruled)) {
      reason[b] += fastest == ruled ? "; measured fastest"
                                    : "; measured within noise of " +
                                          std::string(gemmProviderName(fastest->provider));
      continue;
    }
    const GemmCandidate *pick = fastest;
    for (int earlier = 0; earlier < b; ++earlier) {
      const GemmCandidate *c = findCandidate(candidates, choice[earlier]);
      if (c && c != ruled && acceptable(*c)) {
        pick = c;
        break;
      }
    }
    choice[b] = pick->provider;
    reason[b] = std::string("autotune: ") + gemmProviderName(pick->provider) + " " +
                ms(pick->times[b].medianMs) + " ms beats the rule's " + gemmProviderName(rule[b]) +
                " " + ms(ruled->times[b].medianMs) + " ms beyond the noise" +
                (pick == fastest ? "" : " (provider of a smaller M)");
  }
  return choice;
}

// ---- What each provider can take -------------------------------------------------

namespace {

/// The JIT INT8 GEMMs take the activation zero point and (u8/i8) the
/// output's scale and zero point at construction.
std::string whyNotJitForm(const QLinearSpec &spec, DType outType) {
  const bool outConst = outType == DType::F32 ||
                        (spec.outScaleConst && (spec.outZeroPoint < 0 || spec.outZeroPointConst));
  if (!spec.xZeroPointConst || !outConst)
    return "a run-time zero point or output scale";
  if (spec.k > x86::kMaxU8S8K)
    return "K above " + std::to_string(x86::kMaxU8S8K);
  return "";
}

/// What oneDNN 2.6's int8 matmul cannot express in this qlinear, or "".
std::string whyNotOneDnn(const QLinearSpec &spec, DType outType) {
  const bool outConst = outType == DType::F32 ||
                        (spec.outScaleConst && (spec.outZeroPoint < 0 || spec.outZeroPointConst));
  if (spec.xScalePerRow)
    return "per-row (dynamic, per-token) activation scales";
  if (!spec.xScaleConst)
    return "a run-time activation scale";
  if (!spec.xZeroPointConst || !outConst)
    return "a run-time zero point or output scale";
  if (spec.k > onednn::MatMulU8S8::kMaxK)
    return "K above " + std::to_string(onednn::MatMulU8S8::kMaxK);
  return "";
}

/// Why this host cannot run `provider` (for timing), or "".
std::string whyNotRunnableHere(GemmProvider provider) {
  const x86::CpuFeatures &host = x86::CpuFeatures::host();
  switch (provider) {
  case GemmProvider::JitF32:
    return host.supports(x86::Isa::Avx512) ? "" : "this CPU lacks AVX-512";
  case GemmProvider::JitVnni:
    return x86::Int8GemmDriver::hostSupported(PackIsa::Avx512Vnni) ? ""
                                                                   : "this CPU lacks AVX-512 VNNI";
  case GemmProvider::JitAmx: {
    std::string why;
    return x86::amxUsable(&why) ? "" : why;
  }
  case GemmProvider::JitBf16:
    return x86::GemmBf16::hostSupported() ? "" : "this CPU lacks AVX512-BF16";
  case GemmProvider::JitAvx2:
    return x86::Int8GemmAvx2::hostSupported() ? "" : "this CPU lacks AVX2";
  default:
    return "";
  }
}

} // namespace

std::string whyNotProvider(const QLinearSpec &spec, DType outType, const KernelOptions &options,
                           GemmProvider provider) {
  switch (provider) {
  case GemmProvider::JitVnni:
  case GemmProvider::JitAmx: {
    const x86::Isa isa =
        provider == GemmProvider::JitAmx ? x86::Isa::AmxInt8 : x86::Isa::Avx512Vnni;
    if (!options.allowAvx512)
      return "AVX-512 is not allowed (isa=avx2)";
    if (!options.cpu.supports(isa))
      return "the target CPU (" + options.target + ") lacks " + x86::isaName(isa);
    if (std::string why = whyNotJitForm(spec, outType); !why.empty())
      return "the JIT GEMM cannot take " + why;
    return "";
  }
  case GemmProvider::JitAvx2:
    if (!options.cpu.supports(x86::Isa::Avx2))
      return "the target CPU (" + options.target + ") lacks " + x86::isaName(x86::Isa::Avx2);
    if (std::string why = whyNotJitForm(spec, outType); !why.empty())
      return "the JIT GEMM cannot take " + why;
    return "";
  case GemmProvider::OneDnn:
    if (std::string why = whyNotOneDnn(spec, outType); !why.empty())
      return "oneDNN 2.6's int8 matmul cannot express " + why;
    return "";
  case GemmProvider::Reference:
    return "";
  default:
    return std::string("'") + gemmProviderName(provider) + "' is not an INT8 GEMM provider";
  }
}

std::string whyNotProvider(const LinearSpec &, const KernelOptions &options,
                           GemmProvider provider) {
  switch (provider) {
  case GemmProvider::JitF32:
    if (!options.allowAvx512)
      return "AVX-512 is not allowed";
    if (!targetHasAvx512(options))
      return "the target CPU (" + options.target + ") has no AVX-512";
    return "";
  case GemmProvider::JitBf16:
    if (!options.allowAvx512)
      return "AVX-512 is not allowed";
    if (!options.cpu.supports(x86::Isa::Avx512Bf16))
      return "the target CPU (" + options.target +
             ") lacks AVX512-BF16 (vdpbf16ps; it has: " + options.cpu.describe() + ")";
    return "";
  case GemmProvider::OneDnn:
    return "";
  default:
    return std::string("'") + gemmProviderName(provider) + "' is not an f32 GEMM provider";
  }
}

// ---- Timing ------------------------------------------------------------------------

namespace {

/// A tensor of the timing plan: its type, shape and bytes.
struct BenchTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

BenchTensor benchTensor(DType dtype, std::vector<int64_t> shape, std::mt19937 &rng, float value = 0,
                        bool random = true) {
  BenchTensor t{dtype, std::move(shape), {}};
  int64_t count = 1;
  for (int64_t d : t.shape)
    count *= d;
  t.bytes.resize(size_t(count) * dtypeBytes(dtype) + 64);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DType::F32) {
      const float v = random ? float(byte(rng) - 128) / 128.0f : value;
      std::memcpy(t.bytes.data() + 4 * i, &v, 4);
    } else {
      t.bytes[i] = random ? uint8_t(byte(rng)) : uint8_t(int(value));
    }
  }
  return t;
}

/// The GEMM's extra operands: f32 per column ([N]) or full ([M, N]).
void addExtras(std::vector<BenchTensor> &t, size_t count, const std::vector<bool> &perColumn,
               int64_t m, int64_t n, std::mt19937 &rng) {
  for (size_t i = 0; i < count; ++i)
    t.push_back(i < perColumn.size() && perColumn[i] ? benchTensor(DType::F32, {n}, rng)
                                                     : benchTensor(DType::F32, {m, n}, rng));
}

/// Runs `step` (built on tensor ids 0..n-1) on `tensors`: one warm-up, then
/// `reps` timed runs. Untimed with `note` when a run fails.
BucketTiming timeStep(const Step &step, std::vector<BenchTensor> &tensors, int reps,
                      std::string &note) {
  Plan plan;
  std::vector<int64_t> scalarValues;
  for (BenchTensor &t : tensors) {
    TensorInfo info;
    info.dtype = t.dtype;
    for (int64_t d : t.shape) {
      Scalar s;
      s.value = d;
      plan.scalars.push_back(s);
      scalarValues.push_back(d);
      info.shape.push_back(ScalarId(plan.scalars.size() - 1));
    }
    plan.tensors.push_back(info);
  }
  ExecContext ctx(plan);
  ctx.scalars_ = scalarValues;
  for (BenchTensor &t : tensors)
    ctx.addresses_.push_back(t.bytes.data());
  BucketTiming timing;
  std::vector<double> runs;
  for (int r = 0; r <= reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    Status s;
    try {
      s = step.run(ctx);
    } catch (const std::exception &e) {
      s = Status::error(e.what());
    }
    const double elapsed =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!s.ok()) {
      note = "failed: " + s.message();
      return timing;
    }
    if (r > 0) // the first run warms caches and pages
      runs.push_back(elapsed);
  }
  std::sort(runs.begin(), runs.end());
  const size_t n = runs.size();
  timing.timed = true;
  timing.medianMs = median(runs);
  timing.lowMs = runs[n / 4];
  timing.highMs = runs[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1];
  return timing;
}

/// Runs per bucket; M = 1024 GEMMs take long enough to be steady with fewer.
constexpr int kTimedRuns[kGemmBuckets] = {7, 7, 5};

/// The timings of an earlier record of the same shape, or null.
const GemmChoiceRecord *cached(const KernelOptions &options, const std::string &key) {
  if (!options.choices)
    return nullptr;
  for (const GemmChoiceRecord &r : options.choices->records)
    if (r.autotuned && r.shapeKey == key)
      return &r;
  return nullptr;
}

/// Options for building candidate steps: no log (they are not the plan's).
KernelOptions candidateOptions(const KernelOptions &options) {
  KernelOptions o = options;
  o.choices = nullptr;
  o.autotune = false;
  return o;
}

/// Times every candidate on every bucket: `build(provider)` makes the step,
/// `tensors(m)` its operands.
template <typename Build, typename Tensors>
void timeCandidates(std::vector<GemmCandidate> &candidates, Build build, Tensors tensors) {
  for (GemmCandidate &c : candidates) {
    if (!(c.note = whyNotRunnableHere(c.provider)).empty())
      continue;
    std::string error;
    StepPtr step = build(c.provider, error);
    if (!step) {
      c.note = "cannot build: " + error;
      continue;
    }
    for (int b = 0; b < kGemmBuckets && c.note.empty(); ++b) {
      std::vector<BenchTensor> operands = tensors(kGemmBucketTimedM[b]);
      c.times[b] = timeStep(*step, operands, kTimedRuns[b], c.note);
    }
  }
}

GemmChoice uniform(GemmProvider p) { return {p, p, p}; }

/// The record's rule part, and autotune when asked; `candidates` are the
/// providers KernelOptions::gemm allows that can take the GEMM.
template <typename Build, typename Tensors>
void finishRecord(GemmChoiceRecord &record, const GemmChoice &rule, const std::string &ruleWhy,
                  std::vector<GemmCandidate> candidates, const KernelOptions &options, Build build,
                  Tensors tensors) {
  record.reason.fill(ruleWhy);
  record.choice = rule;
  if (options.autotune && candidates.size() > 1) {
    if (const GemmChoiceRecord *earlier = cached(options, record.shapeKey)) {
      candidates = earlier->candidates;
    } else {
      timeCandidates(candidates, build, tensors);
    }
    record.autotuned = true;
    record.choice = decideGemmChoice(rule, candidates, record.reason);
  }
  record.candidates = std::move(candidates);
}

/// Keeps the spec's resolved entries and fills the Auto ones.
void fillAuto(GemmChoice &spec, const GemmChoiceRecord &record) {
  for (int b = 0; b < kGemmBuckets; ++b)
    if (spec[b] == GemmProvider::Auto)
      spec[b] = record.choice[b];
}

std::string keyOf(const ElementwiseProgram &p, const std::vector<bool> &perColumn) {
  std::string key = p.str() + "|";
  for (bool c : perColumn)
    key += c ? 'c' : 'f';
  return key;
}

} // namespace

GemmChoiceRecord resolveGemmChoice(QLinearSpec &spec, DType outType, const KernelOptions &options,
                                   std::string &error) {
  GemmChoiceRecord record;
  record.op = "qlinear";
  record.k = spec.k, record.n = spec.n;
  record.shapeKey = "qlinear " + std::to_string(spec.k) + "x" + std::to_string(spec.n) + " " +
                    dtypeName(outType) + (spec.xScalePerRow ? " rowscale" : "") +
                    (spec.xScaleConst ? " xs" : "") + (spec.bias ? " bias" : "") + " " +
                    keyOf(spec.epilogue, spec.extraPerColumn);
  auto valid = [&](GemmProvider p) { return whyNotProvider(spec, outType, options, p).empty(); };
  GemmChoice rule;
  std::string why;
  std::vector<GemmCandidate> candidates;
  using Gemm = KernelOptions::Gemm;
  if (options.gemm == Gemm::OneDnn) {
    if (std::string no = whyNotProvider(spec, outType, options, GemmProvider::OneDnn);
        !no.empty()) {
      error = "qlinear: " + no + " (--gemm onednn); use --gemm auto or jit";
      return record;
    }
    rule = uniform(GemmProvider::OneDnn);
    why = "forced: --gemm onednn";
  } else {
    // AMX where the target has it, unless this host is the target and the OS
    // refuses the tile state (then VNNI, saying so).
    std::string amxRefused;
    const bool amx = valid(GemmProvider::JitAmx) &&
                     !(options.cpu == x86::CpuFeatures::host() && !x86::amxUsable(&amxRefused));
    if (amx) {
      rule = uniform(GemmProvider::JitAmx);
      why = "rule: AMX-INT8 on the target";
    } else if (valid(GemmProvider::JitVnni)) {
      rule = uniform(GemmProvider::JitVnni);
      why = amxRefused.empty() ? "rule: AVX-512 VNNI JIT (fused epilogue)"
                               : "rule: AVX-512 VNNI JIT; AMX refused here: " + amxRefused;
    } else if (valid(GemmProvider::JitAvx2)) {
      // Before oneDNN: its AVX2 kernels (vpmaddubsw) saturate on full-range
      // weights, and it fuses less; this GEMM is exact.
      rule = uniform(GemmProvider::JitAvx2);
      why = "rule: AVX2 JIT, exact s16 products (no VNNI on the target)";
    } else if (options.gemm == Gemm::Auto && valid(GemmProvider::OneDnn)) {
      rule = uniform(GemmProvider::OneDnn);
      why = "rule: no JIT INT8 GEMM on the target";
    } else {
      rule = uniform(GemmProvider::Reference);
      why = "rule: no fast provider can take it";
    }
    // The AVX2 GEMM is a candidate only where no VNNI one is (it would not win).
    const bool vnniOrAmx = valid(GemmProvider::JitAmx) || valid(GemmProvider::JitVnni);
    for (GemmProvider p :
         {GemmProvider::JitAmx, GemmProvider::JitVnni, GemmProvider::JitAvx2, GemmProvider::OneDnn})
      if (valid(p) && (options.gemm == Gemm::Auto || p != GemmProvider::OneDnn) &&
          (p != GemmProvider::JitAvx2 || !vnniOrAmx))
        candidates.push_back({p, "", {}});
  }
  const KernelOptions built = candidateOptions(options);
  const int64_t k = spec.k, n = spec.n;
  auto build = [&](GemmProvider p, std::string &err) {
    // The candidate on tensor ids 0..: input, output, x scale, x zero point,
    // out scale, out zero point, extras.
    QLinearSpec s = spec;
    s.provider = uniform(p);
    s.input = 0, s.output = 1, s.xScale = 2, s.xZeroPoint = 3;
    s.outScale = spec.outScale >= 0 ? 4 : -1;
    s.outZeroPoint = spec.outZeroPoint >= 0 ? 5 : -1;
    for (size_t i = 0; i < s.extras.size(); ++i)
      s.extras[i] = TensorId(6 + i);
    return makeQLinear(s, outType, built, err);
  };
  auto tensors = [&](int64_t m) {
    std::mt19937 rng(42);
    std::vector<BenchTensor> t;
    t.push_back(benchTensor(DType::U8, {m, k}, rng));
    t.push_back(benchTensor(outType, {m, n}, rng, 0, false));
    t.push_back(spec.xScalePerRow
                    ? benchTensor(DType::F32, {m, 1}, rng, 0.02f, false)
                    : benchTensor(DType::F32, {}, rng, spec.xScaleConst ? *spec.xScaleConst : 0.02f,
                                  false));
    t.push_back(
        benchTensor(DType::U8, {}, rng, spec.xZeroPointConst ? *spec.xZeroPointConst : 128, false));
    t.push_back(
        benchTensor(DType::F32, {}, rng, spec.outScaleConst ? *spec.outScaleConst : 0.05f, false));
    t.push_back(benchTensor(outType == DType::F32 ? DType::U8 : outType, {}, rng, 0, false));
    addExtras(t, spec.extras.size(), spec.extraPerColumn, m, n, rng);
    return t;
  };
  finishRecord(record, rule, why, std::move(candidates), options, build, tensors);
  fillAuto(spec.provider, record);
  return record;
}

/// From this K on, the rule picks oneDNN for a linear with no epilogue
/// program (docs/kernel-selection.md: BERT-base's K = 3072 projection).
constexpr int64_t kOneDnnMinK = 2048;

GemmChoiceRecord resolveGemmChoice(LinearSpec &spec, const KernelOptions &options,
                                   std::string &error) {
  GemmChoiceRecord record;
  record.op = "linear";
  record.k = spec.k, record.n = spec.n;
  record.shapeKey = "linear " + std::to_string(spec.k) + "x" + std::to_string(spec.n) +
                    (spec.bias ? " bias" : "") + (options.linearBf16 ? " bf16" : "") + " " +
                    keyOf(spec.epilogue, spec.extraPerColumn);
  using Gemm = KernelOptions::Gemm;
  if (options.linearBf16) {
    // --precision bf16 is the user's choice of arithmetic, not a speed
    // heuristic: every bucket runs the bf16 GEMM (nothing to autotune), or the
    // compile fails saying why; it never falls back to f32 silently.
    if (options.gemm == Gemm::OneDnn) {
      error = "linear: --precision bf16 runs the linears on the bf16 JIT GEMM; --gemm onednn "
              "cannot (give --gemm auto or jit)";
      return record;
    }
    if (std::string why = whyNotProvider(spec, options, GemmProvider::JitBf16); !why.empty()) {
      error = "linear: --precision bf16 needs the bf16 GEMM, but " + why;
      return record;
    }
    record.choice = uniform(GemmProvider::JitBf16);
    record.reason.fill("rule: --precision bf16 (vdpbf16ps JIT)");
    record.candidates = {{GemmProvider::JitBf16, "", {}}};
    fillAuto(spec.provider, record);
    return record;
  }
  const bool jit = whyNotProvider(spec, options, GemmProvider::JitF32).empty();
  GemmChoice rule;
  std::string why;
  std::vector<GemmCandidate> candidates;
  if (options.gemm == Gemm::Jit && !jit) {
    error = "linear: the JIT GEMM was asked for, but " +
            (options.allowAvx512 ? "the target CPU (" + options.target + ") has no AVX-512"
                                 : std::string("AVX-512 is not allowed"));
    return record;
  }
  if (options.gemm != Gemm::Auto) {
    rule = uniform(options.gemm == Gemm::Jit ? GemmProvider::JitF32 : GemmProvider::OneDnn);
    why = options.gemm == Gemm::Jit ? "forced: --gemm jit" : "forced: --gemm onednn";
  } else if (!jit) {
    rule = uniform(GemmProvider::OneDnn);
    why = "rule: no AVX-512 on the target";
  } else if (spec.k >= kOneDnnMinK && isIdentity(splitEpilogue(spec.epilogue).rest)) {
    rule = uniform(GemmProvider::OneDnn);
    why = "rule: K >= " + std::to_string(kOneDnnMinK) + " and no program to fuse";
  } else {
    rule = uniform(GemmProvider::JitF32);
    why = "rule: AVX-512 JIT (fused epilogue)";
  }
  if (options.gemm == Gemm::Auto && jit)
    candidates = {{GemmProvider::JitF32, "", {}}, {GemmProvider::OneDnn, "", {}}};
  const KernelOptions built = candidateOptions(options);
  const int64_t k = spec.k, n = spec.n;
  auto build = [&](GemmProvider p, std::string &err) {
    LinearSpec s = spec;
    s.provider = uniform(p);
    s.input = 0, s.output = 1;
    for (size_t i = 0; i < s.extras.size(); ++i)
      s.extras[i] = TensorId(2 + i);
    return makeLinear(s, built, err);
  };
  auto tensors = [&](int64_t m) {
    std::mt19937 rng(42);
    std::vector<BenchTensor> t;
    t.push_back(benchTensor(DType::F32, {m, k}, rng));
    t.push_back(benchTensor(DType::F32, {m, n}, rng, 0, false));
    addExtras(t, spec.extras.size(), spec.extraPerColumn, m, n, rng);
    return t;
  };
  finishRecord(record, rule, why, std::move(candidates), options, build, tensors);
  fillAuto(spec.provider, record);
  return record;
}

// ---- A provider per bucket -------------------------------------------------------

namespace {

class BucketedGemmStep final : public Step {
public:
  BucketedGemmStep(std::vector<StepPtr> parts, std::array<int, kGemmBuckets> partOf, int64_t k)
      : parts_(std::move(parts)), partOf_(partOf), k_(k) {
    inputs = parts_[0]->inputs;
    outputs = parts_[0]->outputs;
  }
  std::string kind() const override {
    static const char *const bucketNames[kGemmBuckets] = {"m<=32", "m<=256", "m>256"};
    std::string k;
    for (int b = 0; b < kGemmBuckets; ++b)
      k += (b ? " " : "") + std::string(bucketNames[b]) + ":" + parts_[partOf_[b]]->kind();
    return k;
  }
  Status run(const ExecContext &ctx) const override { return part(ctx).run(ctx); }
  Work work(const ExecContext &ctx) const override { return part(ctx).work(ctx); }

private:
  const Step &part(const ExecContext &ctx) const {
    const int64_t m = k_ ? ctx.numElements(inputs[0]) / k_ : 0;
    return *parts_[partOf_[gemmBucket(m)]];
  }
  std::vector<StepPtr> parts_;
  std::array<int, kGemmBuckets> partOf_;
  int64_t k_;
};

} // namespace

StepPtr buildGemmStep(const GemmChoice &choice, int64_t k, std::optional<GemmChoiceRecord> record,
                      const KernelOptions &options,
                      const std::function<StepPtr(GemmProvider, std::string &)> &build,
                      std::string &error) {
  std::vector<StepPtr> parts;
  std::vector<GemmProvider> providers;
  std::array<int, kGemmBuckets> partOf{};
  for (int b = 0; b < kGemmBuckets; ++b) {
    auto known = std::find(providers.begin(), providers.end(), choice[b]);
    if (known != providers.end()) {
      partOf[b] = int(known - providers.begin());
      continue;
    }
    StepPtr part = build(choice[b], error);
    if (!part)
      return nullptr;
    partOf[b] = int(parts.size());
    providers.push_back(choice[b]);
    parts.push_back(std::move(part));
  }
  StepPtr step = parts.size() == 1
                     ? std::move(parts[0])
                     : std::make_unique<BucketedGemmStep>(std::move(parts), partOf, k);
  if (record && options.choices) {
    record->step = step.get();
    options.choices->records.push_back(std::move(*record));
  }
  return step;
}

// ---- The table ---------------------------------------------------------------------

void nameGemmChoices(GemmChoiceLog &log, const Plan &plan) {
  for (GemmChoiceRecord &r : log.records)
    for (const auto &step : plan.steps)
      if (step.get() == r.step)
        r.location = step->location;
}

std::string formatGemmChoices(const GemmChoiceLog &log, const KernelOptions &options) {
  std::string out =
      "kernel choices: target " + options.target + " (" + options.cpu.describe() + "), " +
      (options.autotune ? "autotune" : "rule only") +
      "; times: median ms of the runs at M = " + std::to_string(kGemmBucketTimedM[0]) + ", " +
      std::to_string(kGemmBucketTimedM[1]) + ", " + std::to_string(kGemmBucketTimedM[2]) + "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-40s %-7s %5s %5s %-6s %-34s %-10s %s\n", "location", "op",
                "K", "N", "M", "candidates (ms)", "choice", "reason");
  out += line;
  static const char *const bucketNames[kGemmBuckets] = {"<=32", "<=256", ">256"};
  for (const GemmChoiceRecord &r : log.records) {
    std::string location = r.location.empty() ? "<unnamed>" : r.location;
    if (location.size() > 40)
      location = "..." + location.substr(location.size() - 37);
    for (int b = 0; b < kGemmBuckets; ++b) {
      std::string times;
      for (const GemmCandidate &c : r.candidates) {
        times += (times.empty() ? "" : " ") + std::string(gemmProviderName(c.provider)) + "=";
        times += c.times[b].timed ? ms(c.times[b].medianMs) : "-";
      }
      if (times.empty())
        times = "-";
      std::snprintf(line, sizeof line, "%-40s %-7s %5lld %5lld %-6s %-34s %-10s %s\n",
                    location.c_str(), r.op.c_str(), (long long)r.k, (long long)r.n, bucketNames[b],
                    times.c_str(), gemmProviderName(r.choice[b]), r.reason[b].c_str());
      out += line;
    }
    for (const GemmCandidate &c : r.candidates)
      if (!c.note.empty())
        out +=
            std::string(40, ' ') + " note: " + gemmProviderName(c.provider) + " " + c.note + "\n";
  }
  return out;
}

} // namespace octet::rt
