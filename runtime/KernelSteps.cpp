//===- KernelSteps.cpp - GEMM, LayerNorm and fused elementwise steps ------===//
//
// makeLinear, makeLayerNorm and makeFusedElementwise (makeAttention lives in
// AttentionStep.cpp). Every JIT kernel is generated when the step is built,
// so run() is const, generates nothing and is safe to call concurrently.
// Provider selection (KernelOptions::Gemm::Auto): docs/kernel-selection.md.
//
//===----------------------------------------------------------------------===//
#include "runtime/Steps.h"
#include "runtime/EpilogueSplit.h"

#include "compiler/codegen/onednn/MatMulF32.h"
#include "compiler/codegen/x86/ElementwiseKernel.h"
#include "compiler/codegen/x86/FusedKernels.h"
#include "compiler/codegen/x86/GemmF32.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace octet::rt {

namespace {

using Op = ElementwiseProgram::Op;

std::string where(const Step &step) {
  return step.kind() + (step.location.empty() ? "" : " (" + step.location + ")");
}

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
  Status run(const ExecContext &ctx) const override { return applier_.apply(ctx, where(*this)); }
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

enum class Provider { Jit, OneDnn };

class LinearStep : public Step {
public:
  LinearStep(const LinearSpec &spec) : spec_(spec) {
    inputs = {spec.input};
    inputs.insert(inputs.end(), spec.extras.begin(), spec.extras.end());
    outputs = {spec.output};
  }
  std::string kind() const override {
    std::string k = provider_ == Provider::Jit ? "gemm.jit_avx512" : "gemm.onednn";
    if (residual_ >= 0)
      k += "+residual";
    if (fusedEpilogue_)
      k += "+epilogue";
    if (post_)
      k += post_->hasJit() ? "+post.jit" : "+post.interpreter";
    return k;
  }
  Status run(const ExecContext &ctx) const override;
  /// 2·M·N·K ops (the epilogue's are not counted); bytes: A, the weights, C,
  /// the bias and every extra (residual included) once.
  Work work(const ExecContext &ctx) const override {
    Work w;
    const int64_t m = spec_.k ? ctx.numElements(spec_.input) / spec_.k : 0;
    const double k = double(spec_.k), n = double(spec_.n);
    w.ops = 2.0 * double(m) * n * k;
    w.bytes = 4.0 * (double(m) * k + k * n + double(m) * n) + (spec_.bias ? 4.0 * n : 0.0);
    for (TensorId t : spec_.extras)
      w.bytes += tensorBytes(ctx, t);
    w.shapes = "[" + std::to_string(m) + ", " + std::to_string(spec_.k) + "] x [" +
               std::to_string(spec_.k) + ", " + std::to_string(spec_.n) + "]";
    return w;
  }

  LinearSpec spec_;
  Provider provider_ = Provider::Jit;
  int residual_ = -1; ///< index into spec_.extras added by the GEMM
  x86::PackedWeights packed_;
  std::unique_ptr<x86::ProgramEpilogue> fusedEpilogue_;
  std::unique_ptr<x86::GemmF32> jit_;
  std::unique_ptr<onednn::MatMulF32> onednn_;
  std::unique_ptr<ElementwiseApplier> post_; ///< program over C after the GEMM
};

Status LinearStep::run(const ExecContext &ctx) const {
  const std::string at = where(*this);
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
    jit_->run(a.data, m, a.ld, c.data, c.ld, residual, ldr);
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

/// From this K on, Auto picks oneDNN for a GEMM with no epilogue program
/// (docs/kernel-selection.md: BERT-base's K = 3072 projection).
constexpr int64_t kOneDnnMinK = 2048;

StepPtr makeLinear(const LinearSpec &spec, const KernelOptions &options, std::string &error) {
  const std::string at = "linear";
  if (!spec.weight || spec.k <= 0 || spec.n <= 0) {
    error = at + ": needs a weight and K, N > 0 (K = " + std::to_string(spec.k) +
            ", N = " + std::to_string(spec.n) + ")";
    return nullptr;
  }
  if (spec.input < 0 || spec.output < 0) {
    error = at + ": input or output tensor id missing";
    return nullptr;
  }
  const ElementwiseProgram &program = spec.epilogue;
  if (std::string e = program.verify(); !e.empty()) {
    error = at + ": malformed epilogue: " + e + "\n" + program.str();
    return nullptr;
  }
  if (program.numInputs > int(spec.extras.size()) + 1) {
    error = at + ": the epilogue reads " + std::to_string(program.numInputs) +
            " inputs but there are " + std::to_string(spec.extras.size()) +
            " extras (+ the accumulator)";
    return nullptr;
  }
  auto step = std::make_unique<LinearStep>(spec);
  const bool avx512 = hostHasAvx512(options);
  if (options.gemm == KernelOptions::Gemm::Jit && !avx512) {
    error = at + ": the JIT GEMM was asked for, but " +
            (options.allowAvx512 ? "this host has no AVX-512" : "AVX-512 is not allowed");
    return nullptr;
  }
  EpilogueSplit split = splitEpilogue(program);
  // Auto (docs/kernel-selection.md): the JIT GEMM wherever AVX-512 is, except
  // for long K (the FFN down-projection) without an epilogue program to fuse,
  // where oneDNN's blocking measured faster.
  const bool longKPlain = spec.k >= kOneDnnMinK && isIdentity(split.rest);
  step->provider_ = options.gemm == KernelOptions::Gemm::OneDnn || !avx512 ||
                            (options.gemm == KernelOptions::Gemm::Auto && longKPlain)
                        ? Provider::OneDnn
                        : Provider::Jit;

  step->residual_ = split.residual - 1 >= 0 ? split.residual - 1 : -1;
  const std::vector<bool> read = inputsRead(split.rest);
  const bool onlyAcc = std::count(read.begin() + 1, read.end(), true) == 0;

  if (step->provider_ == Provider::Jit && onlyAcc && !isIdentity(split.rest)) {
    std::string why;
    step->fusedEpilogue_ = x86::ProgramEpilogue::create(split.rest, why);
    // Otherwise (pressure, no vector form) the post-pass below applies it.
  }
  if (!isIdentity(split.rest) && !step->fusedEpilogue_) {
    // Input 0 of the post-pass is C itself (in place), then the extras.
    std::vector<TensorId> postInputs = {spec.output};
    postInputs.insert(postInputs.end(), spec.extras.begin(), spec.extras.end());
    step->post_ = std::make_unique<ElementwiseApplier>(split.rest, postInputs, spec.output);
    step->post_->buildJit(options, std::vector<bool>(postInputs.size(), false));
  }

  if (step->provider_ == Provider::Jit) {
    step->packed_ = x86::packB(spec.weight, spec.k, spec.n, spec.layout);
    x86::GemmF32Epilogue epilogue;
    epilogue.residual = step->residual_ >= 0;
    epilogue.elementwise = step->fusedEpilogue_.get();
    step->jit_ =
        std::make_unique<x86::GemmF32>(spec.n, spec.k, step->packed_.data(), epilogue, spec.bias);
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

// ---- makeLayerNorm ---------------------------------------------------------------

namespace {

/// Sum for the mean; subtract, square-accumulate for the variance; subtract,
/// scale by 1/σ, multiply by gamma, add beta.
constexpr double kLayerNormOpsPerElement = 7;

class LayerNormStep : public Step {
public:
  explicit LayerNormStep(const LayerNormSpec &spec) : spec_(spec) {
    inputs = {spec.x};
    if (spec.residual >= 0)
      inputs.push_back(spec.residual);
    outputs = {spec.output};
    if (spec.sum >= 0)
      outputs.push_back(spec.sum);
  }
  std::string kind() const override { return jit_ ? "layernorm.jit_avx512" : "layernorm.compiled"; }
  Status run(const ExecContext &ctx) const override;
  /// kOpsPerElement per element (+1 for the residual add); bytes: x, residual,
  /// y, sum, gamma and beta once.
  Work work(const ExecContext &ctx) const override {
    Work w;
    const double elements = double(ctx.numElements(spec_.output)), n = double(spec_.n);
    const bool residual = spec_.residual >= 0, sum = spec_.sum >= 0;
    w.ops = elements * (kLayerNormOpsPerElement + (residual ? 1 : 0));
    w.bytes = 4.0 * (elements * (2 + residual + sum) + 2 * n);
    w.shapes = shapeString(ctx.shape(spec_.output));
    return w;
  }

  LayerNormSpec spec_;
  std::unique_ptr<x86::LayerNormKernel> jit_; // generated at build time
};

/// Contiguous [rows, n] rows of `t` (a copy when its rows are not dense).
Status denseRows(const ExecContext &ctx, TensorId t, int64_t rows, int64_t n, const std::string &at,
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

Status LayerNormStep::run(const ExecContext &ctx) const {
  const std::string at = where(*this);
  const int64_t n = spec_.n;
  const std::vector<int64_t> outShape = ctx.shape(spec_.output);
  if (ctx.dtype(spec_.output) != DType::F32 || outShape.empty() || outShape.back() != n)
    return Status::error(at + ": output of shape " + shapeString(outShape) +
                         " must be f32 with a last dim of " + std::to_string(n));
  const int64_t rows = ctx.numElements(spec_.output) / n;
  if (ctx.shape(spec_.x) != outShape)
    return Status::error(at + ": x of shape " + shapeString(ctx.shape(spec_.x)) +
                         " differs from the output " + shapeString(outShape));
  if (rows == 0)
    return Status();
  RowView yv, sv;
  if (!rowView(ctx, spec_.output, yv) || (yv.ld != n && yv.rows > 1))
    return Status::error(at + ": the output must be contiguous");
  float *sum = nullptr;
  if (spec_.sum >= 0) {
    if (ctx.shape(spec_.sum) != outShape || ctx.dtype(spec_.sum) != DType::F32 ||
        !rowView(ctx, spec_.sum, sv) || (sv.ld != n && sv.rows > 1))
      return Status::error(at + ": the sum output must be f32, contiguous and of shape " +
                           shapeString(outShape));
    sum = sv.data;
  }
  const float *x = nullptr, *res = nullptr;
  std::vector<float> xCopy, rCopy;
  if (Status s = denseRows(ctx, spec_.x, rows, n, at, "x", x, xCopy); !s.ok())
    return s;
  if (spec_.residual >= 0) {
    if (ctx.shape(spec_.residual) != outShape)
      return Status::error(at + ": residual of shape " + shapeString(ctx.shape(spec_.residual)) +
                           " differs from the output " + shapeString(outShape));
    if (Status s = denseRows(ctx, spec_.residual, rows, n, at, "residual", res, rCopy); !s.ok())
      return s;
  }
  if (jit_) {
    x86::LayerNormArgs args;
    args.src[0] = x;
    args.src[1] = res;
    args.sum = sum;
    args.y = yv.data;
    args.gamma = spec_.gamma;
    args.beta = spec_.beta;
    args.rows = rows;
    jit_->run(args);
    return Status();
  }
  float *y = yv.data;
  const float *gamma = spec_.gamma, *beta = spec_.beta;
  const float eps = spec_.epsilon;
#pragma omp parallel for schedule(static) if (rows * n > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> row(n);
    const float *xr = x + r * n;
    for (int64_t j = 0; j < n; ++j)
      row[j] = res ? xr[j] + res[r * n + j] : xr[j];
    if (sum)
      std::copy(row.begin(), row.end(), sum + r * n);
    double mean = 0;
    for (int64_t j = 0; j < n; ++j)
      mean += row[j];
    mean /= double(n);
    double var = 0;
    for (int64_t j = 0; j < n; ++j)
      var += (row[j] - mean) * (row[j] - mean);
    var /= double(n);
    const float rstd = float(1.0 / std::sqrt(var + eps)), meanF = float(mean);
    for (int64_t j = 0; j < n; ++j)
      y[r * n + j] = (row[j] - meanF) * rstd * gamma[j] + beta[j];
  }
  return Status();
}

} // namespace

StepPtr makeLayerNorm(const LayerNormSpec &spec, const KernelOptions &options, std::string &error) {
  if (spec.n <= 0 || !spec.gamma || !spec.beta) {
    error = "layernorm: needs n > 0 (n = " + std::to_string(spec.n) + ") and gamma, beta";
    return nullptr;
  }
  if (spec.x < 0 || spec.output < 0) {
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
  auto step = std::make_unique<LayerNormStep>(spec);
  if (hostHasAvx512(options)) {
    std::vector<x86::RowSource> sources(spec.residual >= 0 ? 2 : 1, x86::RowSource::Dense);
    step->jit_ =
        std::make_unique<x86::LayerNormKernel>(spec.n, sources, spec.sum >= 0, spec.epsilon);
    (void)step->jit_->codeSize(); // generate now, never during run()
  }
  return step;
}

} // namespace octet::rt
