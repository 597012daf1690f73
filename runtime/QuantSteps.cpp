//===- QuantSteps.cpp - quantize, dequantize and the INT8 linear ----------===//
//
// makeQuantize / makeDequantize (ONNX QuantizeLinear / DequantizeLinear,
// per tensor or per axis; compiled C++) and makeQLinear (octet.qlinear:
// GemmU8S8 on AVX-512 VNNI hosts when the activation's and the output's
// scale and zero point are constants, else a compiled C++ loop with exact
// int32 sums). Inputs and outputs are contiguous (the PlanBuilder copies views).
//
//===----------------------------------------------------------------------===//
#include "runtime/Steps.h"

#include "compiler/codegen/x86/GemmU8S8.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace octet::rt {

namespace {

std::string where(const Step &step) {
  return step.kind() + (step.location.empty() ? "" : " (" + step.location + ")");
}

/// A zero point tensor's element i (u8, i8 or i32) as int32; 0 without one.
int32_t zeroPointAt(const ExecContext &ctx, TensorId t, int64_t i) {
  if (t < 0)
    return 0;
  switch (ctx.dtype(t)) {
  case DType::U8: return ctx.data<uint8_t>(t)[i];
  case DType::I8: return ctx.data<int8_t>(t)[i];
  case DType::I32: return ctx.data<int32_t>(t)[i];
  default: return 0;
  }
}

/// saturate(round_half_even(v) + zp) to the range of `dtype` (U8 or I8).
inline int32_t quantizeValue(float scaled, int32_t zp, int32_t lo, int32_t hi) {
  float r = std::nearbyint(scaled); // default rounding mode: to nearest even
  float v = r + float(zp);
  if (!(v >= float(lo)))
    return std::isnan(v) ? zp : lo;
  if (v > float(hi))
    return hi;
  return int32_t(v);
}

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
    return Status::error(where(step) + ": axis " + std::to_string(axis) + " is out of range");
  map.perAxis = true;
  map.dim = ctx.dim(in, a);
  for (int d = a + 1; d < rank; ++d)
    map.inner *= ctx.dim(in, d);
  if (count != map.dim)
    return Status::error(where(step) + ": " + std::to_string(count) + " scales for axis " +
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
      return Status::error(where(*this) + ": output size differs from the input's");
    return Status();
  }
  TensorId scale_, zp_;
  int axis_;
};

class QuantizeStep final : public ScaledStep {
public:
  using ScaledStep::ScaledStep;
  std::string kind() const override { return "quantize"; }
  Status run(const ExecContext &ctx) const override {
    TensorId in = inputs[0], out = outputs[0];
    AxisMap map;
    if (Status s = prepare(ctx, map); !s.ok())
      return s;
    const int64_t total = ctx.numElements(in);
    const float *x = ctx.data<float>(in), *scale = ctx.data<float>(scale_);
    const bool u8 = ctx.dtype(out) == DType::U8;
    const int32_t lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
    void *y = ctx.data(out);
#pragma omp parallel for schedule(static) if (total > 65536)
    for (int64_t i = 0; i < total; ++i) {
      const int64_t p = map.perAxis ? (i / map.inner) % map.dim : 0;
      const int32_t q = quantizeValue(x[i] / scale[p], zeroPointAt(ctx, zp_, p), lo, hi);
      if (u8)
        static_cast<uint8_t *>(y)[i] = uint8_t(q);
      else
        static_cast<int8_t *>(y)[i] = int8_t(q);
    }
    return Status();
  }
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

// ---- makeQLinear -------------------------------------------------------------

class QLinearStep final : public Step {
public:
  QLinearStep(const QLinearSpec &spec, DType outType) : spec_(spec), outType_(outType) {
    inputs = {spec.input, spec.xScale, spec.xZeroPoint};
    if (spec.outScale >= 0)
      inputs.push_back(spec.outScale);
    if (spec.outZeroPoint >= 0)
      inputs.push_back(spec.outZeroPoint);
    outputs = {spec.output};
    // [N, K] s8 for the reference loop, whatever the given layout.
    weightNK_.resize(size_t(spec.k * spec.n));
    for (int64_t kk = 0; kk < spec.k; ++kk)
      for (int64_t nn = 0; nn < spec.n; ++nn)
        weightNK_[nn * spec.k + kk] = spec.layout == WeightLayout::KN
                                          ? spec.weight[kk * spec.n + nn]
                                          : spec.weight[nn * spec.k + kk];
    wScale_.resize(size_t(spec.n));
    for (int64_t nn = 0; nn < spec.n; ++nn)
      wScale_[nn] = spec.wScale[spec.wScaleCount == 1 ? 0 : nn];
    if (spec.bias)
      bias_.assign(spec.bias, spec.bias + spec.n);
  }

  /// Builds the VNNI GEMM (constant activation/output parameters only).
  void useVnni(float xScale, int32_t xZp, float outScale, int32_t outZp) {
    packed_ = std::make_unique<x86::PackedU8S8>(
        x86::packU8S8(spec_.weight, spec_.k, spec_.n, spec_.layout));
    x86::GemmU8S8Params p;
    p.aZeroPoint = xZp;
    p.xScale = xScale;
    p.wScale = wScale_;
    p.bias = bias_.empty() ? nullptr : bias_.data();
    p.output = outType_ == DType::F32  ? x86::QuantOutput::F32
               : outType_ == DType::U8 ? x86::QuantOutput::U8
                                       : x86::QuantOutput::S8;
    p.outScale = outScale;
    p.outZeroPoint = outZp;
    gemm_ = std::make_unique<x86::GemmU8S8>(*packed_, std::move(p));
  }

  std::string kind() const override { return gemm_ ? "qgemm.jit_vnni" : "qgemm.reference"; }

  Work work(const ExecContext &ctx) const override {
    Work w;
    const int64_t m = spec_.k ? ctx.numElements(spec_.input) / spec_.k : 0;
    w.ops = 2.0 * double(m) * double(spec_.n) * double(spec_.k);
    w.bytes = double(m) * double(spec_.k) + double(spec_.k) * double(spec_.n) +
              double(m) * double(spec_.n) * double(dtypeBytes(outType_));
    w.shapes = "[" + std::to_string(m) + ", " + std::to_string(spec_.k) + "] x [" +
               std::to_string(spec_.k) + ", " + std::to_string(spec_.n) + "] u8s8";
    return w;
  }

  Status run(const ExecContext &ctx) const override {
    const int64_t k = spec_.k, n = spec_.n;
    const int rank = ctx.rank(spec_.input);
    if (rank < 1 || ctx.dim(spec_.input, rank - 1) != k)
      return Status::error(where(*this) + ": input's last dim is not K = " + std::to_string(k));
    const int64_t m = ctx.numElements(spec_.input) / std::max<int64_t>(k, 1);
    if (ctx.numElements(spec_.output) != m * n)
      return Status::error(where(*this) + ": output has " +
                           std::to_string(ctx.numElements(spec_.output)) + " elements, expected " +
                           std::to_string(m * n));
    const uint8_t *a = ctx.data<uint8_t>(spec_.input);
    if (gemm_) {
      try {
        gemm_->run(a, m, k, ctx.data(spec_.output), n);
      } catch (const std::exception &e) {
        return Status::error(where(*this) + ": " + e.what());
      }
      return Status();
    }
    const float xScale = ctx.data<float>(spec_.xScale)[0];
    const int32_t xZp = zeroPointAt(ctx, spec_.xZeroPoint, 0);
    float outScale = 1;
    int32_t outZp = 0;
    if (outType_ != DType::F32) {
      outScale = ctx.data<float>(spec_.outScale)[0];
      outZp = zeroPointAt(ctx, spec_.outZeroPoint, 0);
    }
    const int32_t lo = outType_ == DType::U8 ? 0 : -128, hi = outType_ == DType::U8 ? 255 : 127;
    void *out = ctx.data(spec_.output);
#pragma omp parallel for schedule(static) if (m * n * k > 65536)
    for (int64_t i = 0; i < m; ++i) {
      const uint8_t *row = a + i * k;
      for (int64_t j = 0; j < n; ++j) {
        const int8_t *w = weightNK_.data() + j * k;
        int32_t sum = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          sum += (int32_t(row[kk]) - xZp) * int32_t(w[kk]);
        float acc = float(xScale * wScale_[j]) * float(sum);
        if (!bias_.empty())
          acc += bias_[j];
        if (outType_ == DType::F32)
          static_cast<float *>(out)[i * n + j] = acc;
        else if (outType_ == DType::U8)
          static_cast<uint8_t *>(out)[i * n + j] = uint8_t(quantizeValue(acc / outScale, outZp, lo, hi));
        else
          static_cast<int8_t *>(out)[i * n + j] = int8_t(quantizeValue(acc / outScale, outZp, lo, hi));
      }
    }
    return Status();
  }

private:
  QLinearSpec spec_;
  DType outType_;
  std::vector<int8_t> weightNK_;
  std::vector<float> wScale_, bias_;
  std::unique_ptr<x86::PackedU8S8> packed_;
  std::unique_ptr<x86::GemmU8S8> gemm_;
};

} // namespace

StepPtr makeQuantize(TensorId in, TensorId scale, TensorId zeroPoint, int axis, TensorId out) {
  return std::make_unique<QuantizeStep>(in, scale, zeroPoint, axis, out);
}

StepPtr makeDequantize(TensorId in, TensorId scale, TensorId zeroPoint, int axis, TensorId out) {
  return std::make_unique<DequantizeStep>(in, scale, zeroPoint, axis, out);
}

StepPtr makeQLinear(const QLinearSpec &spec, DType outType, const KernelOptions &options,
                    std::string &error) {
  if (!spec.epilogue.instrs.empty() || !spec.extras.empty()) {
    error = "a qlinear epilogue or extra operand is not supported by the runtime yet (only the "
            "identity epilogue)";
    return nullptr;
  }
  if (!spec.weight || !spec.wScale || spec.k <= 0 || spec.n <= 0 ||
      (spec.wScaleCount != 1 && spec.wScaleCount != spec.n)) {
    error = "qlinear needs a constant s8 weight and 1 or N weight scales";
    return nullptr;
  }
  if (outType != DType::F32 && outType != DType::U8 && outType != DType::I8) {
    error = "qlinear's result must be f32, u8 or i8";
    return nullptr;
  }
  if (outType != DType::F32 && spec.outScale < 0) {
    error = "a u8/i8 qlinear result needs an output scale";
    return nullptr;
  }
  auto step = std::make_unique<QLinearStep>(spec, outType);
  // GemmU8S8 takes the activation's (and output's) parameters at construction:
  // it is used only when they are plan-time constants; run-time scales
  // (dynamic quantization) take the reference loop.
  const bool constants = spec.xScaleConst && spec.xZeroPointConst &&
                         (outType == DType::F32 || (spec.outScaleConst != nullptr));
  if (constants && options.allowAvx512 && options.gemm != KernelOptions::Gemm::OneDnn &&
      x86::GemmU8S8::hostSupported() && spec.k <= x86::kMaxU8S8K) {
    int32_t outZp = 0;
    if (outType == DType::U8 && spec.outZeroPointConst)
      outZp = *static_cast<const uint8_t *>(spec.outZeroPointConst);
    else if (outType == DType::I8 && spec.outZeroPointConst)
      outZp = *static_cast<const int8_t *>(spec.outZeroPointConst);
    try {
      step->useVnni(*spec.xScaleConst, *spec.xZeroPointConst,
                    spec.outScaleConst ? *spec.outScaleConst : 1.0f, outZp);
    } catch (const std::exception &e) {
      error = std::string("qlinear: ") + e.what();
      return nullptr;
    }
  }
  return step;
}

} // namespace octet::rt
