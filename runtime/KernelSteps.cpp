//===- KernelSteps.cpp - GEMM, LayerNorm and fused elementwise steps ------===//
//
// makeLinear, makeLayerNorm and makeFusedElementwise (makeAttention lives in
// AttentionStep.cpp). Every JIT kernel is generated when the step is built,
// so run() is const, generates nothing and is safe to call concurrently.
// Provider selection (KernelOptions::Gemm::Auto): docs/kernel-selection.md.
//
//===----------------------------------------------------------------------===//
#include "runtime/Steps.h"

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

bool hostHasAvx512(const KernelOptions &options) {
  const x86::CpuFeatures &cpu = x86::CpuFeatures::host();
  return options.allowAvx512 && cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl;
}

std::string where(const Step &step) {
  return step.kind() + (step.location.empty() ? "" : " (" + step.location + ")");
}

// ---- Row views -------------------------------------------------------------

/// A tensor seen as [rows, cols] (cols = its last dim) with unit column
/// stride and one row stride, when its strides allow it.
struct RowView {
  float *data = nullptr;
  int64_t rows = 1, cols = 1, ld = 1;
};

bool asRows(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides, RowView &v) {
  const int rank = int(shape.size());
  v.cols = rank ? shape[rank - 1] : 1;
  v.rows = 1;
  for (int d = 0; d + 1 < rank; ++d)
    v.rows *= shape[d];
  if (rank && v.cols > 1 && strides[rank - 1] != 1)
    return false;
  v.ld = v.cols;
  bool first = true;
  int64_t expected = 0;
  for (int d = rank - 2; d >= 0; --d) {
    if (shape[d] == 1)
      continue;
    if (first)
      v.ld = strides[d], first = false;
    else if (strides[d] != expected)
      return false;
    expected = strides[d] * shape[d];
  }
  return true;
}

bool rowView(const ExecContext &ctx, TensorId t, RowView &v) {
  v.data = ctx.data<float>(t);
  return asRows(ctx.shape(t), ctx.strides(t), v);
}

/// Copies any strided view of `t`, broadcast to `shape` (right-aligned, size-1
/// dims stretch), into the contiguous `out`.
void gatherBroadcast(const ExecContext &ctx, TensorId t, const std::vector<int64_t> &shape,
                     std::vector<float> &out) {
  const std::vector<int64_t> inShape = ctx.shape(t), inStrides = ctx.strides(t);
  const int rank = int(shape.size()), shift = rank - int(inShape.size());
  std::vector<int64_t> strides(rank, 0);
  for (int d = 0; d < int(inShape.size()); ++d)
    strides[d + shift] = inShape[d] == 1 ? 0 : inStrides[d];
  int64_t total = 1;
  for (int64_t s : shape)
    total *= s;
  out.resize(total);
  const float *src = ctx.data<float>(t);
#pragma omp parallel for schedule(static) if (total > 65536)
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i, offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      offset += (rest % shape[d]) * strides[d];
      rest /= shape[d];
    }
    out[i] = src[offset];
  }
}

// ---- Program helpers -------------------------------------------------------

/// Dead-code elimination; `live[i]`: instruction i contributes to the result.
std::vector<bool> liveInstrs(const ElementwiseProgram &p) {
  std::vector<bool> live(p.instrs.size(), false);
  if (p.instrs.empty())
    return live;
  live.back() = true;
  for (size_t i = p.instrs.size(); i-- > 0;) {
    if (!live[i] || p.instrs[i].op == Op::Input || p.instrs[i].op == Op::Constant)
      continue;
    if (p.instrs[i].a >= 0)
      live[p.instrs[i].a] = true;
    if (p.instrs[i].b >= 0)
      live[p.instrs[i].b] = true;
  }
  return live;
}

/// Inputs the program's result depends on (the empty program reads input 0).
std::vector<bool> inputsRead(const ElementwiseProgram &p) {
  std::vector<bool> read(std::max(p.numInputs, 1), false);
  if (p.instrs.empty()) {
    read[0] = true;
    return read;
  }
  std::vector<bool> live = liveInstrs(p);
  for (size_t i = 0; i < p.instrs.size(); ++i)
    if (live[i] && p.instrs[i].op == Op::Input)
      read[p.instrs[i].a] = true;
  return read;
}

/// The program without its dead instructions (ids renumbered).
ElementwiseProgram withoutDeadCode(const ElementwiseProgram &p) {
  if (p.instrs.empty())
    return p;
  const std::vector<bool> live = liveInstrs(p);
  ElementwiseProgram out;
  out.numInputs = p.numInputs;
  std::vector<int32_t> newId(p.instrs.size(), -1);
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    if (!live[i])
      continue;
    ElementwiseProgram::Instr in = p.instrs[i];
    if (in.op != Op::Input && in.op != Op::Constant) {
      in.a = in.a >= 0 ? newId[in.a] : -1;
      in.b = in.b >= 0 ? newId[in.b] : -1;
    }
    newId[i] = int32_t(out.instrs.size());
    out.instrs.push_back(in);
  }
  return out;
}

/// Arithmetic instructions the result depends on: the ops per element of a
/// program in a profile (a transcendental function counts one).
double programOps(const ElementwiseProgram &p) {
  const std::vector<bool> live = liveInstrs(p);
  double ops = 0;
  for (size_t i = 0; i < p.instrs.size(); ++i)
    ops += live[i] && p.instrs[i].op != Op::Input && p.instrs[i].op != Op::Constant;
  return ops;
}

double tensorBytes(const ExecContext &ctx, TensorId t) {
  return double(ctx.numElements(t)) * double(dtypeBytes(ctx.dtype(t)));
}

bool isIdentity(const ElementwiseProgram &p) {
  return p.instrs.empty() || (p.instrs.back().op == Op::Input && p.instrs.back().a == 0);
}

/// One op of ElementwiseProgram::evaluate (the same formulas) over a block.
void blockOp(const ElementwiseProgram::Instr &in, const float *a, const float *b, float *r,
             int count) {
  switch (in.op) {
  case Op::Add:
    for (int i = 0; i < count; ++i)
      r[i] = a[i] + b[i];
    return;
  case Op::Sub:
    for (int i = 0; i < count; ++i)
      r[i] = a[i] - b[i];
    return;
  case Op::Mul:
    for (int i = 0; i < count; ++i)
      r[i] = a[i] * b[i];
    return;
  case Op::Div:
    for (int i = 0; i < count; ++i)
      r[i] = a[i] / b[i];
    return;
  case Op::Neg:
    for (int i = 0; i < count; ++i)
      r[i] = -a[i];
    return;
  case Op::Abs:
    for (int i = 0; i < count; ++i)
      r[i] = std::fabs(a[i]);
    return;
  case Op::Relu:
    for (int i = 0; i < count; ++i)
      r[i] = std::isnan(a[i]) ? a[i] : std::max(a[i], 0.0f);
    return;
  default: {
    // Everything else through the scalar definition, one element at a time.
    ElementwiseProgram one;
    one.numInputs = 2;
    one.instrs = {{Op::Input, 0}, {Op::Input, 1}, {in.op, 0, 1, in.value}};
    if (in.op == Op::Constant)
      one.instrs = {{Op::Constant, -1, -1, in.value}};
    else if (in.op >= Op::Neg)
      one.instrs[2].b = -1;
    for (int i = 0; i < count; ++i) {
      float x[2] = {a ? a[i] : 0.0f, b ? b[i] : 0.0f};
      r[i] = one.evaluate(x);
    }
  }
  }
}

// ---- Elementwise application (fused regions, GEMM post-passes) --------------

/// Applies a program to tensors broadcast to the output's shape: the JIT
/// ElementwiseKernel where the run-time strides fit the column modes it was
/// generated for, else a block interpreter over rows.
class ElementwiseApplier {
public:
  ElementwiseApplier(ElementwiseProgram program, std::vector<TensorId> inputs, TensorId output)
      : program_(std::move(program)), inputs_(std::move(inputs)), output_(output),
        read_(inputsRead(program_)) {}

  /// Generates the JIT kernel when the host and options allow it and the
  /// program lowers; `broadcastColumns[i]`: input i is one value per row.
  void buildJit(const KernelOptions &options, std::vector<bool> broadcastColumns) {
    if (!hostHasAvx512(options))
      return;
    broadcastColumns_ = broadcastColumns;
    std::string error;
    jit_ = x86::ElementwiseKernel::create(program_, broadcastColumns, error);
    jitError_ = error;
  }
  bool hasJit() const { return jit_ != nullptr; }
  const std::string &jitError() const { return jitError_; }

  Status apply(const ExecContext &ctx, const std::string &where) const;

private:
  ElementwiseProgram program_;
  std::vector<TensorId> inputs_;
  TensorId output_;
  std::vector<bool> read_, broadcastColumns_;
  std::unique_ptr<x86::ElementwiseKernel> jit_;
  std::string jitError_;
};

Status ElementwiseApplier::apply(const ExecContext &ctx, const std::string &where) const {
  const std::vector<int64_t> shape = ctx.shape(output_);
  const int rank = int(shape.size());
  if (ctx.dtype(output_) != DType::F32)
    return Status::error(where + ": output must be f32, not " + dtypeName(ctx.dtype(output_)));
  const int numInputs = int(inputs_.size());
  // Every tensor's strides over the output's shape (0 where broadcast).
  std::vector<std::vector<int64_t>> strides(numInputs + 1);
  std::vector<const float *> base(numInputs + 1);
  strides[numInputs] = ctx.strides(output_);
  base[numInputs] = ctx.data<float>(output_);
  for (int i = 0; i < numInputs; ++i) {
    if (!read_[i])
      continue;
    TensorId t = inputs_[i];
    if (ctx.dtype(t) != DType::F32)
      return Status::error(where + ": input " + std::to_string(i) + " must be f32, not " +
                           dtypeName(ctx.dtype(t)));
    const std::vector<int64_t> inShape = ctx.shape(t), inStrides = ctx.strides(t);
    const int shift = rank - int(inShape.size());
    if (shift < 0)
      return Status::error(where + ": input " + std::to_string(i) + " of shape " +
                           shapeString(inShape) + " has a higher rank than the output " +
                           shapeString(shape));
    strides[i].assign(rank, 0);
    for (int d = 0; d < int(inShape.size()); ++d) {
      if (inShape[d] != 1 && inShape[d] != shape[d + shift])
        return Status::error(where + ": input " + std::to_string(i) + " of shape " +
                             shapeString(inShape) + " does not broadcast to the output " +
                             shapeString(shape));
      strides[i][d + shift] = inShape[d] == 1 ? 0 : inStrides[d];
    }
    base[i] = ctx.data<float>(t);
  }
  int64_t total = 1;
  for (int64_t s : shape)
    total *= s;
  if (total == 0)
    return Status();
  const int64_t cols = rank ? shape[rank - 1] : 1;
  const int lead = std::max(rank - 1, 0);
  auto tensorsLive = [&](int i) { return i == numInputs || read_[i]; };

  // JIT: column modes must match; then collapse the innermost leading dims
  // that share one row stride in every tensor, loop over the rest.
  // A scalar (every stride 0) becomes one expanded row, so the kernel reads
  // it as a contiguous vector repeated on every row.
  std::vector<std::vector<float>> expanded(numInputs);
  for (int i = 0; jit_ && i < numInputs; ++i) {
    if (!read_[i] || broadcastColumns_[i] || cols == 1)
      continue;
    if (std::all_of(strides[i].begin(), strides[i].end(), [](int64_t s) { return s == 0; })) {
      expanded[i].assign(cols, *base[i]);
      base[i] = expanded[i].data();
      strides[i][rank - 1] = 1;
    }
  }
  bool jitFits = jit_ != nullptr;
  for (int i = 0; jitFits && i <= numInputs; ++i) {
    if (!tensorsLive(i) || cols == 1)
      continue;
    const int64_t cs = strides[i][rank - 1];
    const bool bc = i < numInputs && broadcastColumns_[i];
    jitFits = bc ? cs == 0 : cs == 1;
  }
  if (jitFits) {
    int split = lead; // dims [split, lead) collapse into rows
    int64_t innerRows = 1;
    std::vector<int64_t> rowStride(numInputs + 1, 0), expected(numInputs + 1, 0);
    std::vector<bool> started(numInputs + 1, false);
    while (split > 0) {
      const int d = split - 1;
      bool ok = true;
      if (shape[d] != 1)
        for (int i = 0; i <= numInputs && ok; ++i)
          if (tensorsLive(i) && started[i] && strides[i][d] != expected[i])
            ok = false;
      if (!ok)
        break;
      if (shape[d] != 1) {
        for (int i = 0; i <= numInputs; ++i) {
          if (!tensorsLive(i))
            continue;
          if (!started[i])
            rowStride[i] = strides[i][d], started[i] = true;
          expected[i] = strides[i][d] * shape[d];
        }
      }
      innerRows *= shape[d];
      --split;
    }
    const int64_t outerCount = total / (innerRows * cols);
    // Chunks of about 16K elements per task.
    const int64_t chunkRows = std::max<int64_t>(1, (16384 + cols - 1) / cols);
    const int64_t chunks = (innerRows + chunkRows - 1) / chunkRows;
    const int64_t tasks = outerCount * chunks;
#pragma omp parallel for schedule(static) if (tasks > 1 && total > 32768)
    for (int64_t task = 0; task < tasks; ++task) {
      int64_t outer = task / chunks, chunk = task % chunks;
      x86::ElementwiseKernelArgs args;
      std::vector<int64_t> offset(numInputs + 1, 0);
      for (int d = split - 1; d >= 0; --d) {
        const int64_t idx = outer % shape[d];
        outer /= shape[d];
        for (int i = 0; i <= numInputs; ++i)
          if (tensorsLive(i))
            offset[i] += idx * strides[i][d];
      }
      const int64_t firstRow = chunk * chunkRows;
      for (int i = 0; i <= numInputs; ++i) {
        if (!tensorsLive(i))
          continue;
        const float *p = base[i] + offset[i] + firstRow * rowStride[i];
        if (i == numInputs) {
          args.out = const_cast<float *>(p);
          args.outRowStride = rowStride[i];
        } else {
          args.in[i] = p;
          args.inRowStride[i] = rowStride[i];
        }
      }
      args.rows = std::min(chunkRows, innerRows - firstRow);
      args.cols = cols;
      jit_->run(args);
    }
    return Status();
  }

  // Interpreter: per row, blocks of kBlock elements, one op at a time.
  constexpr int kBlock = 64;
  const int64_t rows = total / cols;
  const ElementwiseProgram &p = program_;
#pragma omp parallel for schedule(static) if (total > 32768)
  for (int64_t row = 0; row < rows; ++row) {
    std::vector<int64_t> offset(numInputs + 1, 0);
    int64_t rest = row;
    for (int d = lead - 1; d >= 0; --d) {
      const int64_t idx = rest % shape[d];
      rest /= shape[d];
      for (int i = 0; i <= numInputs; ++i)
        if (tensorsLive(i))
          offset[i] += idx * strides[i][d];
    }
    std::vector<float> in(size_t(std::max(numInputs, 1)) * kBlock);
    std::vector<float> values((p.instrs.size() + 1) * kBlock);
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int count = int(std::min<int64_t>(kBlock, cols - c0));
      for (int i = 0; i < numInputs; ++i) {
        if (!read_[i])
          continue;
        const int64_t cs = rank ? strides[i][rank - 1] : 0;
        const float *src = base[i] + offset[i] + c0 * cs;
        for (int e = 0; e < count; ++e)
          in[i * kBlock + e] = src[e * cs];
      }
      const float *result = in.data();
      for (size_t k = 0; k < p.instrs.size(); ++k) {
        const auto &instr = p.instrs[k];
        float *r = values.data() + k * kBlock;
        if (instr.op == Op::Input)
          std::memcpy(r, in.data() + instr.a * kBlock, count * sizeof(float));
        else if (instr.op == Op::Constant)
          std::fill(r, r + count, instr.value);
        else
          blockOp(instr, values.data() + instr.a * kBlock,
                  instr.b >= 0 ? values.data() + instr.b * kBlock : nullptr, r, count);
        result = r;
      }
      float *dst = const_cast<float *>(base[numInputs]) + offset[numInputs];
      const int64_t cs = rank ? strides[numInputs][rank - 1] : 0;
      for (int e = 0; e < count; ++e)
        dst[(c0 + e) * cs] = result[e];
    }
  }
  return Status();
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

/// The GEMM-side split of a linear epilogue: `residual` (an extra index, or
/// -1) is added by the GEMM; `rest` is what remains, input 0 = acc (+ residual).
struct EpilogueSplit {
  int residual = -1;
  ElementwiseProgram rest;
};

EpilogueSplit splitEpilogue(const ElementwiseProgram &p) {
  EpilogueSplit split;
  split.rest = withoutDeadCode(p);
  if (p.instrs.empty())
    return split;
  const std::vector<bool> live = liveInstrs(p);
  // Uses of input 0 among live instructions.
  auto isInput = [&](int32_t id, int index) {
    return p.instrs[id].op == Op::Input && p.instrs[id].a == index;
  };
  int candidate = -1, uses = 0;
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const auto &in = p.instrs[i];
    if (!live[i] || in.op == Op::Input || in.op == Op::Constant)
      continue;
    const bool a0 = in.a >= 0 && isInput(in.a, 0), b0 = in.b >= 0 && isInput(in.b, 0);
    uses += a0 + b0;
    if (in.op == Op::Add && (a0 != b0)) {
      const int32_t other = a0 ? in.b : in.a;
      if (p.instrs[other].op == Op::Input && p.instrs[other].a > 0 && candidate < 0)
        candidate = int(i);
    }
  }
  if (candidate < 0 || uses != 1)
    return split;
  const auto &add = p.instrs[candidate];
  const int32_t other = isInput(add.a, 0) ? add.b : add.a;
  split.residual = p.instrs[other].a;
  split.rest.instrs[candidate] = {Op::Input, 0, -1, 0};
  split.rest = withoutDeadCode(split.rest);
  return split;
}

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
  if (residual_ >= 0) {
    const TensorId r = spec_.extras[residual_];
    RowView rv;
    if (ctx.dtype(r) != DType::F32)
      return Status::error(at + ": residual must be f32");
    if (ctx.shape(r) == outShape && rowView(ctx, r, rv)) {
      residual = rv.data, ldr = rv.ld;
    } else { // broadcast or oddly strided: materialize it at the output's shape
      const std::vector<int64_t> rShape = ctx.shape(r);
      const int shift = int(outShape.size()) - int(rShape.size());
      if (shift < 0)
        return Status::error(at + ": residual " + shapeString(rShape) + " does not broadcast to " +
                             shapeString(outShape));
      for (size_t d = 0; d < rShape.size(); ++d)
        if (rShape[d] != 1 && rShape[d] != outShape[d + shift])
          return Status::error(at + ": residual " + shapeString(rShape) +
                               " does not broadcast to " + shapeString(outShape));
      gatherBroadcast(ctx, r, outShape, residualCopy);
      residual = residualCopy.data(), ldr = spec_.n;
    }
  }
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
