//===- QuantSteps.cpp - quantize, dequantize and the INT8 linear ----------===//
//
// makeQuantize / makeDequantize (ONNX QuantizeLinear / DequantizeLinear, per
// tensor or per axis), makeQuantizePerRow (dynamic per-token u8) and
// makeQLinear (octet.qlinear: one Int8Gemm provider, the JIT Int8GemmDriver
// over the AVX-512 VNNI or AMX micro-kernels or oneDNN's int8 matmul, per M
// bucket as runtime/KernelSelection.h resolves it, else a compiled C++ loop
// with exact int32 sums that evaluates the epilogue per element).
// Per-tensor quantize and quantize_per_row run the AVX-512 kernels of
// x86/QuantizeKernels.h, with the same formulas in C++ elsewhere.
// docs/int8-gemm.md describes the qlinear step's epilogue split.
//
//===----------------------------------------------------------------------===//
#include "runtime/EpilogueSplit.h"
#include "runtime/KernelSelection.h"
#include "runtime/Steps.h"

#include "compiler/codegen/onednn/MatMulU8S8.h"
#include "compiler/codegen/x86/Int8GemmAvx2.h"
#include "compiler/codegen/x86/Int8GemmDriver.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"
#include "compiler/codegen/x86/QuantizeKernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>

namespace octet::rt {

namespace {

/// The GELU oneDNN fuses as an eltwise post-op when `p` is gelu(input 0)
/// and nothing else; None otherwise.
onednn::U8S8Gelu geluOnly(const ElementwiseProgram &p) {
  using Op = ElementwiseProgram::Op;
  const ElementwiseProgram live = withoutDeadCode(p);
  if (live.instrs.size() != 2 || live.instrs[0].op != Op::Input || live.instrs[0].a != 0 ||
      live.instrs[1].a != 0)
    return onednn::U8S8Gelu::None;
  return live.instrs[1].op == Op::GeluErf    ? onednn::U8S8Gelu::Erf
         : live.instrs[1].op == Op::GeluTanh ? onednn::U8S8Gelu::Tanh
                                             : onednn::U8S8Gelu::None;
}

/// A zero point tensor's element i (u8, i8 or i32) as int32; 0 without one.
int32_t zeroPointAt(const ExecContext &ctx, TensorId t, int64_t i) {
  if (t < 0)
    return 0;
  switch (ctx.dtype(t)) {
  case DType::U8:
    return ctx.data<uint8_t>(t)[i];
  case DType::I8:
    return ctx.data<int8_t>(t)[i];
  case DType::I32:
    return ctx.data<int32_t>(t)[i];
  default:
    return 0;
  }
}

/// Dense (row-major) strides of `shape`.
bool isDense(const ExecContext &ctx, TensorId t) {
  const std::vector<int64_t> shape = ctx.shape(t), strides = ctx.strides(t);
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expected)
      return false;
    expected *= shape[d];
  }
  return true;
}

/// Elements per OpenMP task of the streaming quantize loops.
constexpr int64_t kChunk = 16384;

/// The per-axis parameter count and the element → parameter index map.
struct AxisMap {
  int64_t inner = 1, dim = 1; ///< element i uses parameter (i / inner) % dim
  bool perAxis = false;
};

Status axisMap(const ExecContext &ctx, const Step &step, TensorId in, TensorId scale, int axis,
               AxisMap &map) {
  const int64_t count = ctx.numElements(scale);
  if (ctx.rank(scale) == 0 || (count == 1 && axis < 0))
    return Status();
  const int rank = ctx.rank(in);
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return Status::error(StepWhere(step) + ": axis " + std::to_string(axis) + " is out of range");
  map.perAxis = true;
  map.dim = ctx.dim(in, a);
  for (int d = a + 1; d < rank; ++d)
    map.inner *= ctx.dim(in, d);
  if (count != map.dim)
    return Status::error(StepWhere(step) + ": " + std::to_string(count) + " scales for axis " +
                         std::to_string(a) + " of " + std::to_string(map.dim));
  return Status();
}

/// What quantize and dequantize share: operands (input, scale, optional zero
/// point) and the checks that map an element to its scale.
class ScaledStep : public Step {
public:
  ScaledStep(TensorId in, TensorId scale, TensorId zp, int axis, TensorId out)
      : scale_(scale), zp_(zp), axis_(axis) {
    inputs = {in, scale};
    if (zp >= 0)
      inputs.push_back(zp);
    outputs = {out};
  }

protected:
  Status prepare(const ExecContext &ctx, AxisMap &map) const {
    if (Status s = axisMap(ctx, *this, inputs[0], scale_, axis_, map); !s.ok())
      return s;
    if (ctx.numElements(outputs[0]) != ctx.numElements(inputs[0]))
      return Status::error(StepWhere(*this) + ": output size differs from the input's");
    return Status();
  }
  TensorId scale_, zp_;
  int axis_;
};

class QuantizeStep final : public ScaledStep {
public:
  QuantizeStep(TensorId in, TensorId scale, TensorId zp, int axis, TensorId out,
               const KernelOptions &options)
      : ScaledStep(in, scale, zp, axis, out) {
    if (targetHasAvx512(options)) {
      jitU8_ = std::make_unique<x86::QuantizeKernel>(x86::QuantOutput::U8);
      jitS8_ = std::make_unique<x86::QuantizeKernel>(x86::QuantOutput::S8);
    }
  }
  /// The JIT kernel (or, without AVX-512, x86::quantizeRowCompiled) takes
  /// per-tensor scales of dense f32 tensors; per-axis scales and other
  /// layouts run the C++ loop (same formula).
  std::string kind() const override { return jitU8_ ? "quantize.jit_avx512" : "quantize"; }
  Status run(const ExecContext &ctx) const override {
    TensorId in = inputs[0], out = outputs[0];
    AxisMap map;
    if (Status s = prepare(ctx, map); !s.ok())
      return s;
    const DType outType = ctx.dtype(out);
    if (ctx.dtype(in) != DType::F32 || (outType != DType::U8 && outType != DType::I8))
      return Status::error(StepWhere(*this) + ": needs an f32 input and a u8 or i8 output, not " +
                           dtypeName(ctx.dtype(in)) + " -> " + dtypeName(outType));
    const int64_t total = ctx.numElements(in);
    const float *x = ctx.data<float>(in), *scale = ctx.data<float>(scale_);
    const bool u8 = outType == DType::U8;
    const int32_t lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
    void *y = ctx.data(out);
    const x86::QuantizeKernel *jit = u8 ? jitU8_.get() : jitS8_.get();
    if (!map.perAxis && isDense(ctx, in)) {
      const int32_t zp = zeroPointAt(ctx, zp_, 0);
      if (zp >= lo && zp <= hi) {
        const float s = scale[0];
        const int64_t chunks = (total + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 4)
        for (int64_t c = 0; c < chunks; ++c) {
          const int64_t begin = c * kChunk, count = std::min(kChunk, total - begin);
          auto *bytes = static_cast<uint8_t *>(y) + begin;
          if (jit)
            jit->run(x + begin, bytes, count, s, zp);
          else
            x86::quantizeRowCompiled(x + begin, bytes, count, s, zp, lo, hi);
        }
        return Status();
      }
    }
#pragma omp parallel for schedule(static) if (total > 65536)
    for (int64_t i = 0; i < total; ++i) {
      const int64_t p = map.perAxis ? (i / map.inner) % map.dim : 0;
      const int32_t q = x86::quantizeScalar(x[i], scale[p], zeroPointAt(ctx, zp_, p), lo, hi);
      if (u8)
        static_cast<uint8_t *>(y)[i] = uint8_t(q);
      else
        static_cast<int8_t *>(y)[i] = int8_t(q);
    }
    return Status();
  }

private:
  std::unique_ptr<x86::QuantizeKernel> jitU8_, jitS8_;
};

class DequantizeStep final : public ScaledStep {
public:
  using ScaledStep::ScaledStep;
  std::string kind() const override { return "dequantize"; }
  Status run(const ExecContext &ctx) const override {
    TensorId in = inputs[0], out = outputs[0];
    AxisMap map;
    if (Status s = prepare(ctx, map); !s.ok())
      return s;
    const int64_t total = ctx.numElements(in);
    const float *scale = ctx.data<float>(scale_);
    float *y = ctx.data<float>(out);
    const DType type = ctx.dtype(in);
    const void *x = ctx.data(in);
#pragma omp parallel for schedule(static) if (total > 65536)
    for (int64_t i = 0; i < total; ++i) {
      const int64_t p = map.perAxis ? (i / map.inner) % map.dim : 0;
      int32_t v = type == DType::U8   ? int32_t(static_cast<const uint8_t *>(x)[i])
                  : type == DType::I8 ? int32_t(static_cast<const int8_t *>(x)[i])
                                      : static_cast<const int32_t *>(x)[i];
      y[i] = float(v - zeroPointAt(ctx, zp_, p)) * scale[p];
    }
    return Status();
  }
};

// ---- makeQuantizePerRow --------------------------------------------------------

class QuantizePerRowStep final : public Step {
public:
  QuantizePerRowStep(TensorId in, TensorId out, TensorId scaleOut, const KernelOptions &options) {
    inputs = {in};
    outputs = {out, scaleOut};
    if (targetHasAvx512(options))
      jit_ = std::make_unique<x86::QuantizePerRowKernel>();
  }
  std::string kind() const override {
    return jit_ ? "quantize_per_row.jit_avx512" : "quantize_per_row.compiled";
  }
  /// One op per element; bytes: the f32 input, the u8 output and the f32 scales.
  Work work(const ExecContext &ctx) const override {
    Work w;
    const double elements = double(ctx.numElements(inputs[0]));
    w.ops = elements;
    w.bytes = 4 * elements + elements + 4 * double(ctx.numElements(outputs[1]));
    w.shapes = shapeString(ctx.shape(inputs[0]));
    return w;
  }
  Status run(const ExecContext &ctx) const override;

private:
  std::unique_ptr<x86::QuantizePerRowKernel> jit_;
};

Status QuantizePerRowStep::run(const ExecContext &ctx) const {
  const StepWhere at(*this);
  const TensorId in = inputs[0], out = outputs[0], scaleOut = outputs[1];
  if (ctx.dtype(in) != DType::F32 || ctx.dtype(out) != DType::U8 ||
      ctx.dtype(scaleOut) != DType::F32)
    return Status::error(at + ": needs f32 -> u8 and f32 scales, not " + dtypeName(ctx.dtype(in)) +
                         " -> " + dtypeName(ctx.dtype(out)) + ", " +
                         dtypeName(ctx.dtype(scaleOut)));
  const std::vector<int64_t> shape = ctx.shape(in), scaleShape = ctx.shape(scaleOut);
  if (shape.empty())
    return Status::error(at + ": the input must have rank >= 1");
  std::vector<int64_t> expected = shape;
  expected.back() = 1;
  if (ctx.shape(out) != shape || scaleShape != expected)
    return Status::error(at + ": input " + shapeString(shape) +
                         " needs a result of the same shape " + "and scales " +
                         shapeString(expected) + ", got " + shapeString(ctx.shape(out)) + " and " +
                         shapeString(scaleShape));
  RowView xv, qv, sv;
  if (!rowView(ctx, in, xv) || !asRows(ctx.shape(out), ctx.strides(out), qv) ||
      !asRows(scaleShape, ctx.strides(scaleOut), sv) || (sv.ld != 1 && sv.rows > 1))
    return Status::error(at + ": input, result and scales need unit column strides and one row "
                              "stride (the scales contiguous)");
  const int64_t rows = xv.rows, cols = xv.cols;
  const float *x = xv.data;
  auto *q = ctx.data<uint8_t>(out);
  float *scale = ctx.data<float>(scaleOut);
  if (rows == 0)
    return Status();
  if (cols == 0) { // an empty row has absmax 0: scale 1
    std::fill(scale, scale + rows, 1.0f);
    return Status();
  }
  const int64_t rowsPerTask = std::max<int64_t>(1, kChunk / cols);
  const int64_t tasks = (rows + rowsPerTask - 1) / rowsPerTask;
#pragma omp parallel for schedule(static) if (tasks > 1 && rows * cols > 32768)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t r0 = t * rowsPerTask, count = std::min(rowsPerTask, rows - r0);
    if (jit_) {
      x86::QuantizePerRowArgs args{};
      args.x = x + r0 * xv.ld, args.q = q + r0 * qv.ld, args.scale = scale + r0;
      args.rows = count, args.cols = cols, args.ldx = xv.ld, args.ldq = qv.ld;
      jit_->run(args);
    } else {
      for (int64_t r = r0; r < r0 + count; ++r)
        scale[r] = x86::quantizeRowScalar(x + r * xv.ld, cols, q + r * qv.ld);
    }
  }
  return Status();
}

// ---- makeQLinear -------------------------------------------------------------

class QLinearStep final : public Step {
public:
  QLinearStep(const QLinearSpec &spec, DType outType) : spec_(spec), outType_(outType) {
    inputs = {spec.input, spec.xScale, spec.xZeroPoint};
    if (spec.outScale >= 0)
      inputs.push_back(spec.outScale);
    if (spec.outZeroPoint >= 0)
      inputs.push_back(spec.outZeroPoint);
    inputs.insert(inputs.end(), spec.extras.begin(), spec.extras.end());
    outputs = {spec.output};
    wScale_.resize(size_t(spec.n));
    for (int64_t nn = 0; nn < spec.n; ++nn)
      wScale_[nn] = spec.wScale[spec.wScaleCount == 1 ? 0 : nn];
    if (spec.bias)
      bias_.assign(spec.bias, spec.bias + spec.n);
    epilogue_ = withoutDeadCode(spec.epilogue);
    extrasRead_ = inputsRead(epilogue_);
  }

  enum class Provider { Jit, OneDnn, Avx2 };

  /// The epilogue split shared by the providers: the residual add in the
  /// GEMM; the rest fused into it where the provider can (VNNI and AMX: any
  /// program on the accumulator and per-column vectors; oneDNN: GELU alone), else
  /// applied after it. Returns the GEMM's output: the result's type, or f32
  /// into a scratch that is requantized after the post-pass (or after the
  /// residual add, which oneDNN cannot do in u8/s8; the AVX2 GEMM writes f32
  /// only).
  x86::QuantOutput splitEpilogueFor(Provider provider, const KernelOptions &options) {
    const EpilogueSplit split = splitEpilogue(spec_.epilogue);
    residual_ = split.residual - 1 >= 0 ? split.residual - 1 : -1;
    const bool identity = isIdentity(split.rest);
    if (provider == Provider::Jit && !identity) {
      // Inputs besides the accumulator fuse when they are per-column vectors.
      const ColumnExtras columns = columnExtras(split.rest, spec_.extraPerColumn);
      std::string why;
      // A fused program's result is requantized in the GEMM (no post-pass):
      // its GELU need not be more accurate than an output step.
      const x86::GeluAccuracy gelu =
          outType_ == DType::F32 ? x86::GeluAccuracy::Full : x86::GeluAccuracy::ForRequantize;
      if (columns.fusable)
        fused_ = x86::ProgramEpilogue::create(split.rest, why, columns.perColumn, gelu);
      // Otherwise (pressure, no vector form) the post-pass below applies it.
      if (fused_)
        columnExtras_ = columns.extras;
    }
    if (provider == Provider::OneDnn && !identity)
      gelu_ = geluOnly(split.rest);
    if (!identity && !fused_ && gelu_ == onednn::U8S8Gelu::None) {
      std::vector<TensorId> postInputs = {spec_.output};
      postInputs.insert(postInputs.end(), spec_.extras.begin(), spec_.extras.end());
      post_ = std::make_unique<ElementwiseApplier>(split.rest, postInputs, spec_.output);
      post_->buildJit(options, std::vector<bool>(postInputs.size(), false));
      // Requantized after the post-pass: its GELU, like a fused one, need
      // not be more accurate than an output step.
      if (outType_ != DType::F32)
        post_->setInterpreterGelu(x86::GeluAccuracy::ForRequantize);
    }
    const bool scratch =
        outType_ != DType::F32 &&
        (post_ || provider == Provider::Avx2 || (provider == Provider::OneDnn && residual_ >= 0));
    if (outType_ == DType::F32 || scratch)
      return x86::QuantOutput::F32;
    return outType_ == DType::U8 ? x86::QuantOutput::U8 : x86::QuantOutput::S8;
  }

  /// Sets up the requantize of the f32 scratch when the GEMM writes one.
  void requantizeAfter(x86::QuantOutput gemmOutput, const KernelOptions &options, float outScale,
                       int32_t outZp) {
    if (gemmOutput != x86::QuantOutput::F32 || outType_ == DType::F32)
      return;
    scratch_ = true;
    outScale_ = outScale, outZp_ = outZp;
    if (targetHasAvx512(options))
      requant_ = std::make_unique<x86::QuantizeKernel>(
          outType_ == DType::U8 ? x86::QuantOutput::U8 : x86::QuantOutput::S8);
  }

  /// What the JIT GEMMs take alike: the activation's zero point and scale, the
  /// weight scales, the bias and whether a residual comes. A run-time
  /// per-tensor scale takes the per-row path (the same formula, one value
  /// repeated: run() passes it per row): the GEMM cannot know it at construction.
  template <typename Params> void setScales(Params &p, int32_t xZp) const {
    p.aZeroPoint = xZp;
    p.xScalePerRow = spec_.xScalePerRow || !spec_.xScaleConst;
    p.xScale = p.xScalePerRow ? 1.0f : *spec_.xScaleConst;
    p.wScale = wScale_;
    p.bias = bias_.empty() ? nullptr : bias_.data();
    p.residual = residual_ >= 0;
  }

  /// The JIT driver's parameters, with the split above applied.
  x86::Int8GemmParams jitParams(const KernelOptions &options, int32_t xZp, float outScale,
                                int32_t outZp) {
    const x86::QuantOutput output = splitEpilogueFor(Provider::Jit, options);
    requantizeAfter(output, options, outScale, outZp);
    x86::Int8GemmParams p;
    setScales(p, xZp);
    p.elementwise = fused_.get();
    p.output = output;
    p.outScale = output == x86::QuantOutput::F32 ? 1.0f : outScale;
    p.outZeroPoint = output == x86::QuantOutput::F32 ? 0 : outZp;
    p.columnGroups = spec_.columnGroups;
    return p;
  }

  /// The JIT driver over `isa`'s micro-kernels (AVX-512 VNNI or AMX-INT8): a
  /// weight octet-pack-weights packed for them is used in place; any other is
  /// packed here. The code is generated here on any CPU; it runs only where
  /// the host supports it (the driver's run() says why not).
  void useJit(PackIsa isa, const KernelOptions &options, int32_t xZp, float outScale,
              int32_t outZp) {
    const int nr = x86::int8GemmPanelWidth(isa, spec_.n);
    const PackedWeightLayout layout = packedWeightLayout(isa, spec_.k, spec_.n, nr);
    const std::optional<PackedWeightLayout> &p = spec_.packed;
    x86::PackedInt8View view;
    if (p && p->isa == layout.isa && p->nr == layout.nr) {
      view = {isa, spec_.n, spec_.k, nr, spec_.weight, layout.bytes(), spec_.colsum};
    } else {
      std::vector<int8_t> plain;
      WeightLayout from;
      const int8_t *w = plainWeight(plain, from);
      owned_ = x86::packInt8(isa, w, spec_.k, spec_.n, from);
      view = owned_;
    }
    gemm_ = std::make_unique<x86::Int8GemmDriver>(view, jitParams(options, xZp, outScale, outZp));
  }

  /// The AVX2 GEMM (exact s16 products): bias and residual in its epilogue,
  /// the rest of the program and the requantize after it.
  void useJitAvx2(const KernelOptions &options, int32_t xZp, float outScale, int32_t outZp) {
    const x86::QuantOutput output = splitEpilogueFor(Provider::Avx2, options);
    requantizeAfter(output, options, outScale, outZp);
    x86::Int8GemmAvx2Params p;
    setScales(p, xZp);
    std::vector<int8_t> plain;
    WeightLayout from;
    const int8_t *w = plainWeight(plain, from);
    gemm_ = std::make_unique<x86::Int8GemmAvx2>(w, from, spec_.k, spec_.n, p);
  }

  /// The exact loop: it keeps its own [N, K] copy of the weight.
  void useReference() {
    weightNK_.resize(size_t(spec_.k * spec_.n));
    if (spec_.packed) {
      unpackWeight(*spec_.packed, spec_.weight, WeightLayout::NK, weightNK_.data());
      return;
    }
    for (int64_t kk = 0; kk < spec_.k; ++kk)
      for (int64_t nn = 0; nn < spec_.n; ++nn)
        weightNK_[nn * spec_.k + kk] = spec_.layout == WeightLayout::KN
                                           ? spec_.weight[kk * spec_.n + nn]
                                           : spec_.weight[nn * spec_.k + kk];
  }

  /// oneDNN's int8 matmul (per-tensor constant x scale only) with the split
  /// above; "" or why oneDNN cannot run this qlinear.
  std::string useOneDnn(const KernelOptions &options, int32_t xZp, float outScale, int32_t outZp) {
    const x86::QuantOutput output = splitEpilogueFor(Provider::OneDnn, options);
    onednn::MatMulU8S8Params p;
    p.aZeroPoint = xZp;
    p.xScale = *spec_.xScaleConst;
    p.wScale = wScale_;
    p.bias = bias_.empty() ? nullptr : bias_.data();
    p.residual = residual_ >= 0;
    p.gelu = gelu_;
    p.output = output == x86::QuantOutput::F32  ? onednn::U8S8Output::F32
               : output == x86::QuantOutput::U8 ? onednn::U8S8Output::U8
                                                : onednn::U8S8Output::S8;
    p.outScale = output == x86::QuantOutput::F32 ? 1.0f : outScale;
    p.outZeroPoint = output == x86::QuantOutput::F32 ? 0 : outZp;
    std::vector<int8_t> plain; // oneDNN reorders the weight into its own copy
    WeightLayout from;
    const int8_t *w = plainWeight(plain, from);
    std::unique_ptr<onednn::MatMulU8S8> matmul;
    onednn::Status s = onednn::MatMulU8S8::create(spec_.n, spec_.k, w, from, p, matmul);
    if (!s.ok())
      return s.message();
    gemm_ = std::make_unique<onednn::Int8GemmOneDnn>(std::move(matmul));
    requantizeAfter(output, options, outScale, outZp);
    return "";
  }

  std::string kind() const override {
    std::string k = std::string("qgemm.") + (gemm_ ? gemm_->name() : "reference");
    if (spec_.xScalePerRow)
      k += "+rowscale";
    if (!gemm_)
      return isIdentity(epilogue_) ? k : k + "+epilogue";
    if (residual_ >= 0)
      k += "+residual";
    if (fused_)
      k += columnExtras_.empty() ? "+epilogue" : "+epilogue.columns";
    if (gelu_ != onednn::U8S8Gelu::None)
      k += "+gelu";
    if (post_)
      k += post_->hasJit() ? "+post.jit" : "+post.interpreter";
    if (scratch_)
      k += "+requant";
    return k;
  }

  /// 2·M·N·K ops (the epilogue's are not counted); bytes: A (u8), the s8
  /// weights, the result at its type's size and every extra once.
  Work work(const ExecContext &ctx) const override {
    Work w;
    const int64_t m = spec_.k ? ctx.numElements(spec_.input) / spec_.k : 0;
    w.ops = 2.0 * double(m) * double(spec_.n) * double(spec_.k);
    w.bytes = double(m) * double(spec_.k) + double(spec_.k) * double(spec_.n) +
              double(m) * double(spec_.n) * double(dtypeBytes(outType_));
    for (TensorId t : spec_.extras)
      w.bytes += tensorBytes(ctx, t);
    w.shapes = "[" + std::to_string(m) + ", " + std::to_string(spec_.k) + "] x [" +
               std::to_string(spec_.k) + ", " + std::to_string(spec_.n) + "] u8s8";
    return w;
  }

  Status run(const ExecContext &ctx) const override;

  void firstReads(const ExecContext &ctx, int64_t threads,
                  x86::NextStepReads &reads) const override {
    if (const auto *jit = dynamic_cast<const x86::Int8GemmDriver *>(gemm_.get()); jit && spec_.k)
      jit->firstReads(ctx.numElements(spec_.input) / spec_.k, threads, reads.perThread);
  }

private:
  Status runReference(const ExecContext &ctx, const uint8_t *a, int64_t lda, int64_t m,
                      const float *xScale, void *out, int64_t ldc) const;
  /// The spec's weight as plain [K, N] / [N, K] (`layout`): its own bytes,
  /// or unpacked into `copy` when they are packed.
  const int8_t *plainWeight(std::vector<int8_t> &copy, WeightLayout &layout) const {
    if (!spec_.packed) {
      layout = spec_.layout;
      return spec_.weight;
    }
    copy.resize(size_t(spec_.k * spec_.n));
    layout = WeightLayout::NK;
    unpackWeight(*spec_.packed, spec_.weight, WeightLayout::NK, copy.data());
    return copy.data();
  }

  QLinearSpec spec_;
  DType outType_;
  ElementwiseProgram epilogue_; ///< the spec's, without dead code
  std::vector<bool> extrasRead_;
  std::vector<int8_t> weightNK_; ///< the reference loop's copy (only when it is the provider)
  std::vector<float> wScale_, bias_;
  int residual_ = -1; ///< index into spec_.extras added by the GEMM
  std::unique_ptr<x86::ProgramEpilogue> fused_;
  std::vector<int> columnExtras_; ///< extras fused_ reads per column, in its input order
  onednn::U8S8Gelu gelu_ = onednn::U8S8Gelu::None; ///< oneDNN's eltwise post-op
  std::unique_ptr<ElementwiseApplier> post_;
  bool scratch_ = false; ///< the GEMM writes f32 into a scratch, requantized after
  std::unique_ptr<x86::QuantizeKernel> requant_; ///< the scratch's requantize (AVX-512)
  float outScale_ = 1;
  int32_t outZp_ = 0;
  x86::PackedInt8 owned_; ///< the JIT driver's weight packed here (empty when used in place)
  std::unique_ptr<Int8Gemm> gemm_; ///< the provider; null: the reference loop
};

Status QLinearStep::run(const ExecContext &ctx) const {
  const StepWhere at(*this);
  const int64_t k = spec_.k, n = spec_.n;
  const TensorId in = spec_.input, out = spec_.output;
  if (ctx.dtype(in) != DType::U8 || ctx.dtype(out) != outType_)
    return Status::error(at + ": needs a u8 input and a " + dtypeName(outType_) + " result, not " +
                         dtypeName(ctx.dtype(in)) + " -> " + dtypeName(ctx.dtype(out)));
  const std::vector<int64_t> inShape = ctx.shape(in), outShape = ctx.shape(out);
  if (inShape.empty() || inShape.back() != k)
    return Status::error(at + ": input of shape " + shapeString(inShape) +
                         " must have a last dim of K = " + std::to_string(k));
  if (outShape.size() != inShape.size() || outShape.back() != n ||
      !std::equal(inShape.begin(), inShape.end() - 1, outShape.begin()))
    return Status::error(at + ": result of shape " + shapeString(outShape) +
                         " does not match input " + shapeString(inShape) +
                         " with N = " + std::to_string(n));
  RowView av, cv;
  if (!asRows(inShape, ctx.strides(in), av) || !asRows(outShape, ctx.strides(out), cv))
    return Status::error(at + ": input and result need unit column strides and one row stride");
  const int64_t m = av.rows;
  if (m == 0)
    return Status();
  const uint8_t *a = ctx.data<uint8_t>(in);
  void *c = ctx.data(out);

  // x scales: one (per tensor) or one per row, dense.
  const float *xScale = ctx.data<float>(spec_.xScale);
  if (spec_.xScalePerRow) {
    std::vector<int64_t> expected = inShape;
    expected.back() = 1;
    RowView sv;
    if (ctx.shape(spec_.xScale) != expected || !asRows(expected, ctx.strides(spec_.xScale), sv) ||
        (sv.ld != 1 && sv.rows > 1))
      return Status::error(at + ": per-row input scales must be a dense " + shapeString(expected) +
                           ", got " + shapeString(ctx.shape(spec_.xScale)));
  } else if (ctx.numElements(spec_.xScale) != 1) {
    return Status::error(at + ": the input scale must have one element, got " +
                         shapeString(ctx.shape(spec_.xScale)));
  }
  if (!gemm_)
    return runReference(ctx, a, av.ld, m, xScale, c, cv.ld);

  std::vector<float> rowScales;
  if (!spec_.xScalePerRow && !spec_.xScaleConst) { // run-time per-tensor scale
    rowScales.assign(size_t(m), xScale[0]);
    xScale = rowScales.data();
  }
  const float *residual = nullptr;
  int64_t ldr = 0;
  std::vector<float> residualCopy;
  if (residual_ >= 0)
    if (Status s =
            residualRows(ctx, spec_.extras[residual_], outShape, at, residual, ldr, residualCopy);
        !s.ok())
      return s;
  std::vector<const float *> columns;
  if (Status s = columnPointers(ctx, spec_.extras, columnExtras_, n, at, columns); !s.ok())
    return s;
  // Not value-initialized: the GEMM writes every element (zeroing 1.5 MB a
  // run at BERT-base 1 x 128 cost a memset and fresh pages).
  std::unique_ptr<float[]> scratch(scratch_ ? new float[size_t(m * n)] : nullptr);
  void *gemmOut = scratch_ ? scratch.get() : c;
  const int64_t gemmLd = scratch_ ? n : cv.ld;
  // Every provider throws, never faults, where this CPU cannot run it (a plan
  // built for another target) or it fails.
  try {
    gemm_->run(a, m, av.ld, gemmOut, gemmLd, residual, ldr, xScale, columns.data());
  } catch (const std::exception &e) {
    return Status::error(at + ": " + e.what());
  }
  if (post_)
    if (Status s = post_->apply(ctx, at, scratch.get()); !s.ok())
      return s;
  if (!scratch_)
    return Status();
  auto *bytes = static_cast<uint8_t *>(c);
  const int32_t lo = outType_ == DType::U8 ? 0 : -128, hi = lo + 255;
#pragma omp parallel for schedule(static) if (m * n > 65536)
  for (int64_t r = 0; r < m; ++r) {
    if (requant_)
      requant_->run(scratch.get() + r * n, bytes + r * cv.ld, n, outScale_, outZp_);
    else
      x86::quantizeRowCompiled(scratch.get() + r * n, bytes + r * cv.ld, n, outScale_, outZp_, lo,
                               hi);
  }
  return Status();
}

/// Every form, exactly as docs/int8-quantization.md defines it: the exact
/// int32 sum, f32(f32(xs·ws)·f32(sum)) + bias, the whole epilogue program by
/// ElementwiseProgram::evaluate per element, then the division requantize.
Status QLinearStep::runReference(const ExecContext &ctx, const uint8_t *a, int64_t lda, int64_t m,
                                 const float *xScale, void *out, int64_t ldc) const {
  const StepWhere at(*this);
  const int64_t k = spec_.k, n = spec_.n;
  const int32_t xZp = zeroPointAt(ctx, spec_.xZeroPoint, 0);
  float outScale = 1;
  int32_t outZp = 0;
  if (outType_ != DType::F32) {
    outScale = ctx.data<float>(spec_.outScale)[0];
    outZp = zeroPointAt(ctx, spec_.outZeroPoint, 0);
  }
  const int32_t lo = outType_ == DType::U8 ? 0 : -128, hi = outType_ == DType::U8 ? 255 : 127;
  // Extras the program reads, broadcast to the result's shape (contiguous).
  const std::vector<int64_t> outShape = ctx.shape(spec_.output);
  const int numExtras = int(spec_.extras.size());
  std::vector<std::vector<float>> extras(numExtras);
  for (int e = 0; e < numExtras; ++e) {
    if (size_t(e + 1) >= extrasRead_.size() || !extrasRead_[e + 1])
      continue;
    const TensorId t = spec_.extras[e];
    const std::vector<int64_t> shape = ctx.shape(t);
    const int shift = int(outShape.size()) - int(shape.size());
    bool fits = ctx.dtype(t) == DType::F32 && shift >= 0;
    for (size_t d = 0; fits && d < shape.size(); ++d)
      fits = shape[d] == 1 || shape[d] == outShape[d + shift];
    if (!fits)
      return Status::error(at + ": extra operand " + std::to_string(e) + " " +
                           dtypeName(ctx.dtype(t)) + shapeString(shape) +
                           " is not f32 or does not broadcast to the result " +
                           shapeString(outShape));
    gatherBroadcast(ctx, t, outShape, extras[e]);
  }
  const bool identity = isIdentity(epilogue_);
#pragma omp parallel for schedule(static) if (m * n * k > 65536)
  for (int64_t i = 0; i < m; ++i) {
    const uint8_t *row = a + i * lda;
    const float xs = xScale[spec_.xScalePerRow ? i : 0];
    std::vector<float> values(size_t(numExtras) + 1, 0.0f);
    for (int64_t j = 0; j < n; ++j) {
      const int8_t *w = weightNK_.data() + j * k;
      int32_t sum = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        sum += (int32_t(row[kk]) - xZp) * int32_t(w[kk]);
      float acc = float(xs * wScale_[j]) * float(sum);
      if (!bias_.empty())
        acc += bias_[j];
      float y = acc;
      if (!identity) {
        values[0] = acc;
        for (int e = 0; e < numExtras; ++e)
          if (!extras[e].empty())
            values[e + 1] = extras[e][i * n + j];
        y = epilogue_.evaluate(values.data());
      }
      if (outType_ == DType::F32)
        static_cast<float *>(out)[i * ldc + j] = y;
      else if (outType_ == DType::U8)
        static_cast<uint8_t *>(out)[i * ldc + j] =
            uint8_t(x86::quantizeScalar(y, outScale, outZp, lo, hi));
      else
        static_cast<int8_t *>(out)[i * ldc + j] =
            int8_t(x86::quantizeScalar(y, outScale, outZp, lo, hi));
    }
  }
  return Status();
}

} // namespace

StepPtr makeQuantize(TensorId in, TensorId scale, TensorId zeroPoint, int axis, TensorId out,
                     const KernelOptions &options) {
  return std::make_unique<QuantizeStep>(in, scale, zeroPoint, axis, out, options);
}

StepPtr makeDequantize(TensorId in, TensorId scale, TensorId zeroPoint, int axis, TensorId out) {
  return std::make_unique<DequantizeStep>(in, scale, zeroPoint, axis, out);
}

StepPtr makeQuantizePerRow(TensorId in, TensorId out, TensorId scaleOut,
                           const KernelOptions &options, std::string &error) {
  if (in < 0 || out < 0 || scaleOut < 0) {
    error = "quantize_per_row: input, result or scale tensor id missing";
    return nullptr;
  }
  return std::make_unique<QuantizePerRowStep>(in, out, scaleOut, options);
}

/// A weight packed at compile time: "" when this runtime can use it, else why.
static std::string checkPackedWeight(const QLinearSpec &spec) {
  if (!spec.packed)
    return "";
  const PackedWeightLayout &p = *spec.packed;
  if (std::string why = p.check(); !why.empty())
    return "malformed packed weight: " + why;
  if (p.k != spec.k || p.n != spec.n || !spec.colsum)
    return "packed weight for K = " + std::to_string(p.k) + ", N = " + std::to_string(p.n) +
           " does not match K = " + std::to_string(spec.k) + ", N = " + std::to_string(spec.n) +
           (spec.colsum ? "" : " or has no column sums");
  // Any other layout than the chosen provider's is unpacked and repacked.
  return "";
}

/// The qlinear step on one provider (whyNotProvider said it can take it).
static StepPtr buildQLinear(const QLinearSpec &spec, DType outType, GemmProvider provider,
                            const KernelOptions &options, std::string &error) {
  const std::string at = "qlinear";
  auto step = std::make_unique<QLinearStep>(spec, outType);
  // The JIT driver and oneDNN take the activation's zero point (column-sum
  // compensation) and the output's scale and zero point at construction
  // (plan-time constants: whyNotProvider checked). The JIT driver also takes a
  // run-time activation scale (per row, or per tensor through the per-row
  // path); oneDNN 2.6 takes only a constant per-tensor one (MatMulU8S8.h).
  int32_t outZp = 0;
  if (outType == DType::U8 && spec.outZeroPointConst)
    outZp = *static_cast<const uint8_t *>(spec.outZeroPointConst);
  else if (outType == DType::I8 && spec.outZeroPointConst)
    outZp = *static_cast<const int8_t *>(spec.outZeroPointConst);
  const float outScale = spec.outScaleConst ? *spec.outScaleConst : 1.0f;
  try {
    switch (provider) {
    case GemmProvider::JitVnni:
      step->useJit(PackIsa::Avx512Vnni, options, *spec.xZeroPointConst, outScale, outZp);
      break;
    case GemmProvider::JitAmx:
      step->useJit(PackIsa::Amx, options, *spec.xZeroPointConst, outScale, outZp);
      break;
    case GemmProvider::JitAvx2:
      step->useJitAvx2(options, *spec.xZeroPointConst, outScale, outZp);
      break;
    case GemmProvider::OneDnn:
      if (std::string why = step->useOneDnn(options, *spec.xZeroPointConst, outScale, outZp);
          !why.empty()) {
        // Forced: oneDNN's refusal is the answer. Chosen: the exact reference loop.
        if (options.gemm == KernelOptions::Gemm::OneDnn) {
          error = at + ": oneDNN (--gemm onednn) cannot run it: " + why;
          return nullptr;
        }
        step = std::make_unique<QLinearStep>(spec, outType);
        step->useReference();
      }
      break;
    default:
      step->useReference();
      break;
    }
  } catch (const std::exception &e) {
    error = at + ": " + e.what();
    return nullptr;
  }
  return step;
}

StepPtr makeQLinear(const QLinearSpec &spec, DType outType, const KernelOptions &options,
                    std::string &error) {
  const std::string at = "qlinear";
  if (!spec.weight || !spec.wScale || spec.k <= 0 || spec.n <= 0 ||
      (spec.wScaleCount != 1 && spec.wScaleCount != spec.n)) {
    error = at + ": needs a constant s8 weight, K, N > 0 and 1 or N weight scales (K = " +
            std::to_string(spec.k) + ", N = " + std::to_string(spec.n) + ", " +
            std::to_string(spec.wScaleCount) + " scales)";
    return nullptr;
  }
  if (spec.input < 0 || spec.output < 0 || spec.xScale < 0 || spec.xZeroPoint < 0) {
    error = at + ": input, result, input scale or input zero point tensor id missing";
    return nullptr;
  }
  if (std::string why = checkPackedWeight(spec); !why.empty()) {
    error = at + ": " + why;
    return nullptr;
  }
  if (outType != DType::F32 && outType != DType::U8 && outType != DType::I8) {
    error = at + ": the result must be f32, u8 or i8, not " + dtypeName(outType);
    return nullptr;
  }
  if (outType != DType::F32 && spec.outScale < 0) {
    error = at + ": a u8/i8 result needs an output scale";
    return nullptr;
  }
  const ElementwiseProgram &program = spec.epilogue;
  if (error = checkEpilogue(program, spec.extras.size(), at); !error.empty())
    return nullptr;
  for (TensorId t : spec.extras)
    if (t < 0) {
      error = at + ": an extra operand's tensor id is negative";
      return nullptr;
    }
  // Auto entries resolved here (rule or autotune) unless the caller did.
  QLinearSpec resolved = spec;
  std::optional<GemmChoiceRecord> record;
  if (std::count(spec.provider.begin(), spec.provider.end(), GemmProvider::Auto)) {
    record = resolveGemmChoice(resolved, outType, options, error);
    if (!error.empty())
      return nullptr;
  }
  // One step per distinct provider; a bucketed step when they differ.
  return buildGemmStep(
      resolved.provider, spec.k, std::move(record), options,
      [&](GemmProvider p, std::string &error) -> StepPtr {
        if (std::string why = whyNotProvider(resolved, outType, options, p); !why.empty()) {
          error = at + ": provider " + gemmProviderName(p) + ": " + why;
          return nullptr;
        }
        return buildQLinear(resolved, outType, p, options, error);
      },
      error);
}

} // namespace octet::rt
