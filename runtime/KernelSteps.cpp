//===- KernelSteps.cpp - GEMM, LayerNorm and fused elementwise steps ------===//
//
// makeLinear, makeLayerNorm and makeFusedElementwise (makeAttention lives in
// AttentionStep.cpp). Every JIT kernel is generated when the step is built,
// so run() is const, generates nothing and is safe to call concurrently.
// GEMM providers per M bucket: runtime/KernelSelection.h, docs/kernel-selection.md.
//
//===----------------------------------------------------------------------===//
#include "runtime/Steps.h"
#include "runtime/EpilogueSplit.h"
#include "runtime/KernelSelection.h"

#include "compiler/codegen/onednn/MatMulF32.h"
#include "compiler/codegen/x86/ElementwiseKernel.h"
#include "compiler/codegen/x86/FusedKernels.h"
#include "compiler/codegen/x86/NextStepPrefetch.h"
#include "compiler/codegen/x86/GemmBf16.h"
#include "compiler/codegen/x86/GemmF32.h"
#include "compiler/codegen/x86/LayerNormAvx2.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"
#include "compiler/codegen/x86/QuantizeKernels.h"
#include "compiler/codegen/x86/VectorMathAvx2.h"

#include <malloc.h>
#include <omp.h>

#include <algorithm>
#include <optional>
#include <cmath>
#include <cstring>

namespace octet::rt {

namespace {

using Op = ElementwiseProgram::Op;

// ---- makeFusedElementwise ----------------------------------------------------

class FusedElementwiseStep : public Step {
public:
  FusedElementwiseStep(const ElementwiseProgram &program, std::vector<TensorId> ins, TensorId out,
                       const KernelOptions &options)
      : program_(program), applier_(program, ins, out) {
    inputs = ins;
    outputs = {out};
  }
  std::string kind() const override {
    return applier_.hasJit() ? "elementwise.jit_avx512" : "elementwise.interpreter";
  }
  Status run(const ExecContext &ctx) const override { return applier_.apply(ctx, StepWhere(*this)); }
  /// The program's ops per output element; every input (at its own size) and the output once.
  Work work(const ExecContext &ctx) const override {
    Work w = Step::work(ctx);
    w.ops = double(ctx.numElements(outputs[0])) * std::max(1.0, programOps(program_));
    return w;
  }

  ElementwiseProgram program_;
  ElementwiseApplier applier_;
};

} // namespace

StepPtr makeFusedElementwise(const ElementwiseProgram &program, std::vector<TensorId> inputs,
                             TensorId output, const KernelOptions &options, std::string &error) {
  if (std::string e = program.verify(); !e.empty()) {
    error = "fused elementwise: malformed program: " + e + "\n" + program.str();
    return nullptr;
  }
  if (program.numInputs > int(inputs.size()) || (program.instrs.empty() && inputs.empty())) {
    error = "fused elementwise: the program reads " + std::to_string(program.numInputs) +
            " inputs but the step has " + std::to_string(inputs.size());
    return nullptr;
  }
  if (output < 0) {
    error = "fused elementwise: no output tensor";
    return nullptr;
  }
  for (TensorId t : inputs)
    if (t < 0) {
      error = "fused elementwise: an input tensor id is negative";
      return nullptr;
    }
  auto step = std::make_unique<FusedElementwiseStep>(program, inputs, output, options);
  // The factory cannot see shapes: the kernel takes every input as contiguous
  // along the row (a vector repeated on every row included); scalars are
  // expanded to one row at run time; inputs with a column stride of 0 that
  // are not scalars ([B, S, 1] against [B, S, H]) run in the interpreter.
  step->applier_.buildJit(options, std::vector<bool>(inputs.size(), false));
  return step;
}

// ---- makeLinear ----------------------------------------------------------------

namespace {

enum class Provider { Jit, JitBf16, OneDnn };

class LinearStep : public Step {
public:
  LinearStep(const LinearSpec &spec) : spec_(spec) {
    inputs = {spec.input};
    inputs.insert(inputs.end(), spec.extras.begin(), spec.extras.end());
    outputs = {spec.output};
  }
  std::string kind() const override {
    std::string k = provider_ == Provider::Jit       ? "gemm.jit_avx512"
                    : provider_ == Provider::JitBf16 ? "gemm.jit_bf16"
                                                     : "gemm.onednn";
    if (residual_ >= 0)
      k += "+residual";
    if (fusedEpilogue_)
      k += columnExtras_.empty() ? "+epilogue" : "+epilogue.columns";
    if (post_)
      k += post_->hasJit() ? "+post.jit" : "+post.interpreter";
    return k;
  }
  Status run(const ExecContext &ctx) const override;
  /// 2·M·N·K ops (the epilogue's are not counted); bytes: A, the weights (2
  /// bytes each in bf16), C, the bias and every extra (residual included) once.
  Work work(const ExecContext &ctx) const override {
    Work w;
    const int64_t m = spec_.k ? ctx.numElements(spec_.input) / spec_.k : 0;
    const double k = double(spec_.k), n = double(spec_.n);
    w.ops = 2.0 * double(m) * n * k;
    const double weightBytes = provider_ == Provider::JitBf16 ? 2.0 : 4.0;
    w.bytes = 4.0 * (double(m) * k + double(m) * n) + weightBytes * k * n +
              (spec_.bias ? 4.0 * n : 0.0);
    for (TensorId t : spec_.extras)
      w.bytes += tensorBytes(ctx, t);
    w.shapes = "[" + std::to_string(m) + ", " + std::to_string(spec_.k) + "] x [" +
               std::to_string(spec_.k) + ", " + std::to_string(spec_.n) + "]";
    return w;
  }

  /// Its JIT GEMM's first kernels' code, for the step before to prefetch.
  void firstReads(const ExecContext &ctx, int64_t threads,
                  x86::NextStepReads &reads) const override {
    const int64_t m = spec_.k ? ctx.numElements(spec_.input) / spec_.k : 0;
    if (jit_)
      jit_->firstReads(m, threads, reads.perThread);
    else if (bf16_)
      bf16_->firstReads(m, threads, reads.perThread);
  }

  LinearSpec spec_;
  Provider provider_ = Provider::Jit;
  int residual_ = -1; ///< index into spec_.extras added by the GEMM
  x86::PackedWeights packed_;
  x86::PackedBf16Weights packedBf16_; ///< when the spec brought no bf16 panels
  std::unique_ptr<x86::ProgramEpilogue> fusedEpilogue_;
  std::vector<int> columnExtras_; ///< extras fusedEpilogue_ reads per column, in input order
  std::unique_ptr<x86::GemmF32> jit_;
  std::unique_ptr<x86::GemmBf16> bf16_;
  std::unique_ptr<onednn::MatMulF32> onednn_;
  std::unique_ptr<ElementwiseApplier> post_; ///< program over C after the GEMM
};

Status LinearStep::run(const ExecContext &ctx) const {
  const StepWhere at(*this);
  const TensorId in = spec_.input, out = spec_.output;
  if (ctx.dtype(in) != DType::F32 || ctx.dtype(out) != DType::F32)
    return Status::error(at + ": input and output must be f32");
  const std::vector<int64_t> inShape = ctx.shape(in), outShape = ctx.shape(out);
  if (inShape.empty() || inShape.back() != spec_.k)
    return Status::error(at + ": input of shape " + shapeString(inShape) +
                         " must have a last dim of K = " + std::to_string(spec_.k));
  if (outShape.size() != inShape.size() || outShape.back() != spec_.n ||
      !std::equal(inShape.begin(), inShape.end() - 1, outShape.begin()))
    return Status::error(at + ": output of shape " + shapeString(outShape) +
                         " does not match input " + shapeString(inShape) +
                         " with N = " + std::to_string(spec_.n));
  RowView a, c;
  std::vector<float> aCopy, residualCopy;
  if (!rowView(ctx, in, a)) { // rows that do not share one stride: copy
    gatherBroadcast(ctx, in, inShape, aCopy);
    a.data = aCopy.data(), a.ld = spec_.k;
  }
  if (!rowView(ctx, out, c))
    return Status::error(at + ": the output view of shape " + shapeString(outShape) +
                         " has no unit column stride and single row stride");
  const int64_t m = a.rows;
  if (m == 0)
    return Status();
  const float *residual = nullptr;
  int64_t ldr = 0;
  if (residual_ >= 0)
    if (Status s = residualRows(ctx, spec_.extras[residual_], outShape, at, residual, ldr,
                                residualCopy);
        !s.ok())
      return s;
  if (jit_) {
    std::vector<const float *> columns;
    if (Status s = columnPointers(ctx, spec_.extras, columnExtras_, spec_.n, at, columns);
        !s.ok())
      return s;
    jit_->run(a.data, m, a.ld, c.data, c.ld, residual, ldr, columns.data());
  } else if (bf16_) {
    std::vector<const float *> columns;
    if (Status s = columnPointers(ctx, spec_.extras, columnExtras_, spec_.n, at, columns);
        !s.ok())
      return s;
    bf16_->run(a.data, m, a.ld, c.data, c.ld, residual, ldr, columns.data());
  } else {
    onednn::Status s = onednn_->run(a.data, m, a.ld, c.data, c.ld, residual, ldr);
    if (!s.ok())
      return Status::error(at + ": " + s.message());
  }
  if (post_)
    return post_->apply(ctx, at);
  return Status();
}

} // namespace

/// The linear step on one provider (JitF32, JitBf16 or OneDnn).
static StepPtr buildLinear(const LinearSpec &spec, GemmProvider provider,
                           const KernelOptions &options, std::string &error) {
  const std::string at = "linear";
  auto step = std::make_unique<LinearStep>(spec);
  const ElementwiseProgram &program = spec.epilogue;
  EpilogueSplit split = splitEpilogue(program);
  step->provider_ = provider == GemmProvider::JitF32    ? Provider::Jit
                    : provider == GemmProvider::JitBf16 ? Provider::JitBf16
                                                        : Provider::OneDnn;
  const bool jit = step->provider_ != Provider::OneDnn;
  if (step->provider_ != Provider::JitBf16 && !spec.weight) {
    error = at + ": provider " + gemmProviderName(provider) +
            " needs the f32 weight, but the plan holds only its bf16 panels";
    return nullptr;
  }
  step->residual_ = split.residual - 1 >= 0 ? split.residual - 1 : -1;
  // The accumulator and per-column extras fuse into the JIT kernel.
  const ColumnExtras columns = columnExtras(split.rest, spec.extraPerColumn);
  if (jit && columns.fusable && !isIdentity(split.rest)) {
    std::string why;
    // A bf16 linear's GELU need not be more accurate than the bf16 rounding of
    // the operands of the GEMM after it (GeluAccuracy::ForBf16).
    step->fusedEpilogue_ = x86::ProgramEpilogue::create(
        split.rest, why, columns.perColumn,
        step->provider_ == Provider::JitBf16 ? x86::GeluAccuracy::ForBf16
                                             : x86::GeluAccuracy::Full);
    // Otherwise (pressure, no vector form) the post-pass below applies it.
    if (step->fusedEpilogue_)
      step->columnExtras_ = columns.extras;
  }
  if (!isIdentity(split.rest) && !step->fusedEpilogue_) {
    // Input 0 of the post-pass is C itself (in place), then the extras.
    std::vector<TensorId> postInputs = {spec.output};
    postInputs.insert(postInputs.end(), spec.extras.begin(), spec.extras.end());
    step->post_ = std::make_unique<ElementwiseApplier>(split.rest, postInputs, spec.output);
    step->post_->buildJit(options, std::vector<bool>(postInputs.size(), false));
  }

  x86::GemmF32Epilogue epilogue;
  epilogue.residual = step->residual_ >= 0;
  epilogue.elementwise = step->fusedEpilogue_.get();
  if (step->provider_ == Provider::Jit) {
    step->packed_ = x86::packB(spec.weight, spec.k, spec.n, spec.layout);
    step->jit_ =
        std::make_unique<x86::GemmF32>(spec.n, spec.k, step->packed_.data(), epilogue, spec.bias);
  } else if (step->provider_ == Provider::JitBf16) {
    const uint16_t *panels = spec.bf16Weight;
    if (!panels) { // a spec not made by buildStep (tests): pack a copy
      step->packedBf16_ = x86::packBf16(spec.weight, spec.k, spec.n, spec.layout);
      panels = step->packedBf16_.data();
    }
    step->bf16_ = std::make_unique<x86::GemmBf16>(spec.n, spec.k, panels, epilogue, spec.bias);
  } else {
    onednn::Status s = onednn::MatMulF32::create(spec.n, spec.k, spec.weight, spec.layout,
                                                 spec.bias, step->residual_ >= 0, step->onednn_);
    if (!s.ok()) {
      error = at + ": oneDNN matmul: " + s.message();
      return nullptr;
    }
  }
  return step;
}

/// The linear step of a spec whose providers are resolved.
static StepPtr buildResolvedLinear(const LinearSpec &resolved, std::optional<GemmChoiceRecord> record,
                                   const KernelOptions &options, std::string &error) {
  const std::string at = "linear";
  return buildGemmStep(resolved.provider, resolved.k, std::move(record), options,
                       [&](GemmProvider p, std::string &error) -> StepPtr {
                         if (std::string why = whyNotProvider(resolved, options, p); !why.empty()) {
                           error = at + ": provider " + gemmProviderName(p) + ": " + why;
                           return nullptr;
                         }
                         return buildLinear(resolved, p, options, error);
                       },
                       error);
}

/// Hands the heap's free pages back to the system. glibc raises its mmap
/// threshold to the size of the largest block freed so far, so after the
/// first transient packed weight the others come from the heap, and the
/// holes they leave stay resident (BERT-base calibration: +160 MiB).
static void releaseFreedHeap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

namespace {

/// KernelOptions::packWeightsPerRun: the linear step is built (kernel code,
/// packed weight) at each run and dropped after it, its memory handed back
/// (without that, BERT-base calibration peaks 24 MiB higher, for 5% less
/// time). Each run builds its own, so concurrent runs stay safe.
class PerRunLinearStep : public Step {
public:
  PerRunLinearStep(const LinearSpec &spec, const KernelOptions &options, std::string kind)
      : spec_(spec), options_(options), kind_(std::move(kind)) {
    inputs = {spec.input};
    inputs.insert(inputs.end(), spec.extras.begin(), spec.extras.end());
    outputs = {spec.output};
  }
  std::string kind() const override { return kind_; }
  Status run(const ExecContext &ctx) const override {
    std::string error;
    StepPtr step = buildResolvedLinear(spec_, std::nullopt, options_, error);
    if (!step)
      return Status::error(StepWhere(*this) + ": " + error);
    step->location = location;
    Status status = step->run(ctx);
    step.reset();
    releaseFreedHeap();
    return status;
  }
  Work work(const ExecContext &ctx) const override {
    std::string error;
    StepPtr step = buildResolvedLinear(spec_, std::nullopt, options_, error);
    return step ? step->work(ctx) : Step::work(ctx);
  }

private:
  LinearSpec spec_;
  KernelOptions options_; ///< packWeightsPerRun off, no choice log
  std::string kind_;
};

} // namespace

StepPtr makeLinear(const LinearSpec &spec, const KernelOptions &options, std::string &error) {
  const std::string at = "linear";
  if ((!spec.weight && !spec.bf16Weight) || spec.k <= 0 || spec.n <= 0) {
    error = at + ": needs a weight and K, N > 0 (K = " + std::to_string(spec.k) +
            ", N = " + std::to_string(spec.n) + ")";
    return nullptr;
  }
  if (spec.input < 0 || spec.output < 0) {
    error = at + ": input or output tensor id missing";
    return nullptr;
  }
  if (error = checkEpilogue(spec.epilogue, spec.extras.size(), at); !error.empty())
    return nullptr;
  // Auto entries resolved here (the rule of docs/kernel-selection.md, or
  // autotune) unless the caller did.
  LinearSpec resolved = spec;
  std::optional<GemmChoiceRecord> record;
  if (std::count(spec.provider.begin(), spec.provider.end(), GemmProvider::Auto)) {
    record = resolveGemmChoice(resolved, options, error);
    if (!error.empty())
      return nullptr;
  }
  if (!options.packWeightsPerRun)
    return buildResolvedLinear(resolved, std::move(record), options, error);
  // Built once here, so that errors are the factory's and kind() is known.
  KernelOptions perRun = options;
  perRun.packWeightsPerRun = false;
  perRun.choices = nullptr;
  StepPtr once = buildResolvedLinear(resolved, std::nullopt, perRun, error);
  if (!once)
    return nullptr;
  auto step = std::make_unique<PerRunLinearStep>(resolved, perRun, once->kind());
  once.reset();
  releaseFreedHeap();
  if (record && options.choices) {
    record->step = step.get();
    options.choices->records.push_back(std::move(*record));
  }
  return step;
}

// ---- makeLayerNorm ---------------------------------------------------------------

namespace {

/// Sum for the mean; subtract, square-accumulate for the variance; subtract,
/// scale by 1/σ, multiply by gamma, add beta.
/// The LayerNorm row's formulas (x86::layerNormRowAvx2 is their AVX2 form):
/// row = x (+ residual); mean and variance in double; y = (row - mean) rstd
/// gamma + beta, and own with qGamma, qBeta. `y` may be `row`.
void layerNormRowScalar(const float *x, const float *residual, int64_t n, float eps,
                        const float *gamma, const float *beta, const float *qGamma,
                        const float *qBeta, float *row, float *y, float *own) {
  for (int64_t j = 0; j < n; ++j)
    row[j] = residual ? x[j] + residual[j] : x[j];
  double mean = 0;
  for (int64_t j = 0; j < n; ++j)
    mean += row[j];
  mean /= double(n);
  double var = 0;
  for (int64_t j = 0; j < n; ++j)
    var += (row[j] - mean) * (row[j] - mean);
  var /= double(n);
  const float rstd = float(1.0 / std::sqrt(var + eps)), meanF = float(mean);
  for (int64_t j = 0; j < n; ++j) {
    const float norm = (row[j] - meanF) * rstd;
    if (qGamma)
      own[j] = norm * qGamma[j] + qBeta[j];
    y[j] = norm * gamma[j] + beta[j];
  }
}

constexpr double kLayerNormOpsPerElement = 7;

class LayerNormStep : public Step {
public:
  explicit LayerNormStep(const LayerNormSpec &spec) : spec_(spec) {
    inputs = {spec.x};
    if (spec.residual >= 0)
      inputs.push_back(spec.residual);
    for (TensorId t : {spec.output, spec.sum, spec.quantized, spec.rowScale})
      if (t >= 0)
        outputs.push_back(t);
  }
  std::string kind() const override {
    const char *what = spec_.quantized < 0 ? "layernorm" : "layernorm_quantize";
    return std::string(what) + (jit_                         ? ".jit_avx512"
                                : x86::avx2::hostSupported() ? ".avx2"
                                                             : ".compiled");
  }
  Status run(const ExecContext &ctx) const override;
  /// kOpsPerElement per element (+1 for the residual add, +1 to quantize, +2
  /// more per row: absmax and the second normalization); bytes: x, residual,
  /// y, sum, q, gamma and beta once.
  Work work(const ExecContext &ctx) const override {
    Work w;
    const double elements = double(ctx.numElements(spec_.x)), n = double(spec_.n);
    const bool residual = spec_.residual >= 0, sum = spec_.sum >= 0, y = spec_.output >= 0;
    const double quantOps = spec_.quantized < 0 ? 0 : spec_.rowScale < 0 ? 1 : 7;
    w.ops = elements * (kLayerNormOpsPerElement + (residual ? 1 : 0) + quantOps);
    w.bytes = 4.0 * (elements * (1 + residual + sum + y) + 2 * n) +
              (spec_.quantized < 0 ? 0.0 : elements);
    w.shapes = shapeString(ctx.shape(spec_.x));
    return w;
  }

  /// Its kernel's code, for the step before to prefetch.
  void firstReads(const ExecContext &, int64_t threads, x86::NextStepReads &reads) const override {
    if (jit_)
      reads.sameForAll(threads, {jit_->generatedCode()});
  }

  LayerNormSpec spec_;
  std::unique_ptr<x86::LayerNormKernel> jit_; // generated at build time
};

/// Contiguous [rows, n] rows of `t` (a copy when its rows are not dense).
Status denseRows(const ExecContext &ctx, TensorId t, int64_t rows, int64_t n, const StepWhere &at,
                 const char *what, const float *&data, std::vector<float> &copy) {
  if (ctx.dtype(t) != DType::F32)
    return Status::error(at + ": " + what + " must be f32");
  std::vector<int64_t> shape = ctx.shape(t);
  RowView v;
  if (shape.empty() || shape.back() != n || ctx.numElements(t) != rows * n)
    return Status::error(at + ": " + what + " of shape " + shapeString(shape) +
                         " does not hold rows of " + std::to_string(n) + " matching the output");
  if (rowView(ctx, t, v) && (v.ld == n || v.rows <= 1)) {
    data = v.data;
    return Status();
  }
  gatherBroadcast(ctx, t, shape, copy);
  data = copy.data();
  return Status();
}

/// The dense data of an output of `shape` and type `dtype`, or an error.
Status denseOutput(const ExecContext &ctx, TensorId t, const std::vector<int64_t> &shape,
                   DType dtype, const StepWhere &at, const char *what, void *&data) {
  if (ctx.shape(t) != shape || ctx.dtype(t) != dtype)
    return Status::error(at + ": " + what + " must be " + dtypeName(dtype) + " of shape " +
                         shapeString(shape) + ", got " + dtypeName(ctx.dtype(t)) + " " +
                         shapeString(ctx.shape(t)));
  data = ctx.data(t);
  if (!ctx.isContiguous(t))
    return Status::error(at + ": the " + what + " output must be contiguous");
  return Status();
}

Status LayerNormStep::run(const ExecContext &ctx) const {
  const StepWhere at(*this);
  const int64_t n = spec_.n;
  const std::vector<int64_t> shape = ctx.shape(spec_.x);
  if (shape.empty() || shape.back() != n)
    return Status::error(at + ": x of shape " + shapeString(shape) + " needs a last dim of " +
                         std::to_string(n));
  const int64_t rows = ctx.numElements(spec_.x) / n;
  void *y = nullptr, *sum = nullptr, *q = nullptr, *rowScale = nullptr;
  if (spec_.output >= 0 && ctx.shape(spec_.output) != shape)
    return Status::error(at + ": x of shape " + shapeString(shape) + " differs from the output " +
                         shapeString(ctx.shape(spec_.output)));
  if (spec_.output >= 0)
    if (Status s = denseOutput(ctx, spec_.output, shape, DType::F32, at, "output", y); !s.ok())
      return s;
  if (spec_.sum >= 0)
    if (Status s = denseOutput(ctx, spec_.sum, shape, DType::F32, at, "sum", sum); !s.ok())
      return s;
  if (spec_.quantized >= 0)
    if (Status s = denseOutput(ctx, spec_.quantized, shape, spec_.quantizedType, at, "quantized", q);
        !s.ok())
      return s;
  if (spec_.rowScale >= 0) {
    std::vector<int64_t> scaleShape = shape;
    scaleShape.back() = 1;
    if (Status s = denseOutput(ctx, spec_.rowScale, scaleShape, DType::F32, at, "row scale",
                               rowScale);
        !s.ok())
      return s;
  }
  if (rows == 0)
    return Status();
  const float *x = nullptr, *res = nullptr;
  std::vector<float> xCopy, rCopy;
  if (Status s = denseRows(ctx, spec_.x, rows, n, at, "x", x, xCopy); !s.ok())
    return s;
  if (spec_.residual >= 0) {
    if (ctx.shape(spec_.residual) != shape)
      return Status::error(at + ": residual of shape " + shapeString(ctx.shape(spec_.residual)) +
                           " differs from x " + shapeString(shape));
    if (Status s = denseRows(ctx, spec_.residual, rows, n, at, "residual", res, rCopy); !s.ok())
      return s;
  }
  if (jit_) {
    x86::LayerNormArgs args;
    args.src[0] = x;
    args.src[1] = res;
    args.sum = static_cast<float *>(sum);
    args.y = static_cast<float *>(y);
    args.gamma = spec_.gamma;
    args.beta = spec_.beta;
    args.qGamma = spec_.qGamma;
    args.qBeta = spec_.qBeta;
    args.rows = rows;
    args.q = q;
    args.rowScale = static_cast<float *>(rowScale);
    jit_->run(args);
    return Status();
  }
  const float *gamma = spec_.gamma, *beta = spec_.beta;
  const float eps = spec_.epsilon;
  const bool signedQ = spec_.quantizedType == DType::I8;
  const int32_t lo = signedQ ? -128 : 0;
  const bool avx2 = x86::avx2::hostSupported();
#pragma omp parallel if (rows * n > 32768)
  {
    std::vector<float> rowBuffer(n), yBuffer(n), own(spec_.qGamma ? n : 0);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = x + r * n, *rr = res ? res + r * n : nullptr;
      float *row = sum ? static_cast<float *>(sum) + r * n : rowBuffer.data();
      float *yr = y ? static_cast<float *>(y) + r * n : yBuffer.data();
      if (avx2)
        x86::layerNormRowAvx2(xr, rr, n, eps, gamma, beta, spec_.qGamma, spec_.qBeta, row, yr,
                              own.data());
      else
        layerNormRowScalar(xr, rr, n, eps, gamma, beta, spec_.qGamma, spec_.qBeta, row, yr,
                           own.data());
      if (rowScale) {
        static_cast<float *>(rowScale)[r] =
            x86::quantizeRowScalar(yr, n, static_cast<uint8_t *>(q) + r * n);
      } else if (q) {
        x86::quantizeRowCompiled(spec_.qGamma ? own.data() : yr, static_cast<uint8_t *>(q) + r * n,
                                 n, spec_.qScale, spec_.qZeroPoint, lo, lo + 255);
      }
    }
  }
  return Status();
}

} // namespace

StepPtr makeLayerNorm(const LayerNormSpec &spec, const KernelOptions &options, std::string &error) {
  if (spec.n <= 0 || !spec.gamma || !spec.beta) {
    error = "layernorm: needs n > 0 (n = " + std::to_string(spec.n) + ") and gamma, beta";
    return nullptr;
  }
  if (spec.x < 0 || (spec.output < 0 && spec.quantized < 0)) {
    error = "layernorm: x or output tensor id missing";
    return nullptr;
  }
  if (!(spec.epsilon >= 0) || !std::isfinite(spec.epsilon)) {
    error = "layernorm: epsilon must be finite and >= 0, not " + std::to_string(spec.epsilon);
    return nullptr;
  }
  if (spec.sum >= 0 && spec.residual < 0) {
    error = "layernorm: a `sum` output needs a residual";
    return nullptr;
  }
  x86::LayerNormQuantize quant;
  quant.writeY = spec.output >= 0;
  if (spec.quantized >= 0) {
    const bool u8 = spec.quantizedType == DType::U8, i8 = spec.quantizedType == DType::I8;
    const int32_t lo = i8 ? -128 : 0;
    if (spec.rowScale >= 0 ? !u8 : !(u8 || i8)) {
      error = std::string("layernorm: the quantized output must be u8") +
              (spec.rowScale >= 0 ? " (per row)" : " or i8") + ", not " +
              dtypeName(spec.quantizedType);
      return nullptr;
    }
    if (spec.rowScale < 0 && (!(spec.qScale > 0) || !std::isfinite(spec.qScale) ||
                              spec.qZeroPoint < lo || spec.qZeroPoint > lo + 255)) {
      error = "layernorm: quantization scale " + std::to_string(spec.qScale) +
              " must be finite and > 0 and zero point " + std::to_string(spec.qZeroPoint) +
              " in the range of " + dtypeName(spec.quantizedType);
      return nullptr;
    }
    quant.mode = spec.rowScale >= 0 ? x86::LayerNormQuantize::Mode::PerRow
                                    : x86::LayerNormQuantize::Mode::PerTensor;
    quant.signedOutput = i8;
    quant.scale = spec.qScale;
    quant.zeroPoint = spec.qZeroPoint;
    if (bool(spec.qGamma) != bool(spec.qBeta) || (spec.qGamma && spec.rowScale >= 0)) {
      error = "layernorm: a quantized affine needs both gamma and beta, per tensor only";
      return nullptr;
    }
    quant.ownAffine = spec.qGamma != nullptr;
  } else if (spec.rowScale >= 0) {
    error = "layernorm: a row scale output needs a quantized output";
    return nullptr;
  }
  auto step = std::make_unique<LayerNormStep>(spec);
  if (targetHasAvx512(options)) {
    std::vector<x86::RowSource> sources(spec.residual >= 0 ? 2 : 1, x86::RowSource::Dense);
    step->jit_ = std::make_unique<x86::LayerNormKernel>(spec.n, sources, spec.sum >= 0,
                                                        spec.epsilon, quant);
    (void)step->jit_->codeSize(); // generate now, never during run()
  }
  return step;
}

} // namespace octet::rt
