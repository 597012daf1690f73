//===- EpilogueSplit.cpp - what the GEMM steps share ----------------------===//
#include "runtime/EpilogueSplit.h"

#include "compiler/codegen/x86/ProgramEpilogue.h"
#include "compiler/codegen/x86/VectorMathAvx2.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace octet::rt {

using Op = ElementwiseProgram::Op;

bool targetHasAvx512(const KernelOptions &options) {
  return options.allowAvx512 && options.cpu.supports(x86::Isa::Avx512);
}

// ---- Row views -------------------------------------------------------------

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
std::string checkEpilogue(const ElementwiseProgram &program, size_t extras, const std::string &at) {
  if (std::string e = program.verify(); !e.empty())
    return at + ": malformed epilogue: " + e + "\n" + program.str();
  if (program.numInputs > int(extras) + 1)
    return at + ": the epilogue reads " + std::to_string(program.numInputs) +
           " inputs but there are " + std::to_string(extras) + " extras (+ the accumulator)";
  return "";
}

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

namespace {
/// One op of ElementwiseProgram::evaluate (the same formulas) over a block;
/// on AVX2 hosts the math functions as VectorMath's, GELUs of `gelu`'s form.
void blockOp(const ElementwiseProgram::Instr &in, const float *a, const float *b, float *r,
             int count, x86::GeluAccuracy gelu) {
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
  default:
    break;
  }
  // VectorMath's functions on 8 AVX2 lanes where the host has them (the
  // zmm code's algorithms: its bounds, not libm's double results).
  x86::UnaryOp unary;
  if (x86::toUnaryOp(in.op, gelu, unary) && x86::avx2::hostSupported()) {
    x86::avx2::unaryBlock(unary, a, r, count);
    return;
  }
  // Everything else through the scalar definition, one element at a time.
  for (int i = 0; i < count; ++i)
    r[i] = ElementwiseProgram::evaluateOp(in, a ? a[i] : 0.0f, b ? b[i] : 0.0f);
}

} // namespace

// ---- Elementwise application (fused regions, GEMM post-passes) --------------

ElementwiseApplier::ElementwiseApplier(ElementwiseProgram program, std::vector<TensorId> inputs,
                                       TensorId output)
    : program_(std::move(program)), inputs_(std::move(inputs)), output_(output),
      read_(inputsRead(program_)) {
  // Inputs past the program's numInputs are never read.
  read_.resize(std::max(read_.size(), inputs_.size()), false);
}

void ElementwiseApplier::buildJit(const KernelOptions &options,
                                  std::vector<bool> broadcastColumns) {
  if (!targetHasAvx512(options))
    return;
  broadcastColumns_ = broadcastColumns;
  std::string error;
  jit_ = x86::ElementwiseKernel::create(program_, broadcastColumns, error);
  jitError_ = error;
}

void ElementwiseApplier::setInterpreterGelu(x86::GeluAccuracy gelu) {
  interpreterGelu_ = gelu;
  if (gelu != x86::GeluAccuracy::Full && !jit_) {
    program_ = withoutDeadCode(x86::withGeluOps(program_));
    read_ = inputsRead(program_);
  }
}

Status ElementwiseApplier::apply(const ExecContext &ctx, const StepWhere &where,
                                 float *outData) const {
  const std::vector<int64_t> shape = ctx.shape(output_);
  const int rank = int(shape.size());
  if (!outData && ctx.dtype(output_) != DType::F32)
    return Status::error(where + ": output must be f32, not " + dtypeName(ctx.dtype(output_)));
  const int numInputs = int(inputs_.size());
  // The scratch buffer's strides: dense over the output's shape.
  std::vector<int64_t> dense(rank, 1);
  for (int d = rank - 2; d >= 0; --d)
    dense[d] = dense[d + 1] * shape[d + 1];
  // Every tensor's strides over the output's shape (0 where broadcast).
  std::vector<std::vector<int64_t>> strides(numInputs + 1);
  std::vector<const float *> base(numInputs + 1);
  strides[numInputs] = outData ? dense : ctx.strides(output_);
  base[numInputs] = outData ? outData : ctx.data<float>(output_);
  for (int i = 0; i < numInputs; ++i) {
    if (!read_[i])
      continue;
    TensorId t = inputs_[i];
    const bool scratch = outData && t == output_;
    if (!scratch && ctx.dtype(t) != DType::F32)
      return Status::error(where + ": input " + std::to_string(i) + " must be f32, not " +
                           dtypeName(ctx.dtype(t)));
    const std::vector<int64_t> inShape = ctx.shape(t);
    const std::vector<int64_t> inStrides = scratch ? dense : ctx.strides(t);
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
    base[i] = scratch ? outData : ctx.data<float>(t);
  }
  int64_t total = 1;
  for (int64_t s : shape)
    total *= s;
  if (total == 0)
    return Status();
  const int64_t cols = rank ? shape[rank - 1] : 1;
  const int lead = std::max(rank - 1, 0);
  auto tensorsLive = [&](int i) { return i == numInputs || read_[i]; };
  // offset[i] += the element offset of tensor i at flat `index` over dims [0, dims).
  auto addOffsets = [&](int64_t index, int dims, std::vector<int64_t> &offset) {
    for (int d = dims - 1; d >= 0; --d) {
      const int64_t idx = index % shape[d];
      index /= shape[d];
      for (int i = 0; i <= numInputs; ++i)
        if (tensorsLive(i))
          offset[i] += idx * strides[i][d];
    }
  };

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
      const int64_t outer = task / chunks, chunk = task % chunks;
      x86::ElementwiseKernelArgs args;
      std::vector<int64_t> offset(numInputs + 1, 0);
      addOffsets(outer, split, offset);
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

  // Interpreter: per row, blocks of kBlock elements, one op at a time. Each
  // instruction's block is a pointer: inputs with a unit column stride are
  // read where they lie (others gathered), constants filled once per thread.
  constexpr int kBlock = 64;
  const int64_t rows = total / cols;
  const ElementwiseProgram &p = program_;
  const size_t numInstrs = p.instrs.size();
  auto columnStride = [&](int i) { return rank ? strides[i][rank - 1] : int64_t(0); };
#pragma omp parallel if (total > 32768)
  {
    std::vector<float> gathered(size_t(std::max(numInputs, 1)) * kBlock);
    std::vector<float> values((numInstrs + 1) * kBlock);
    std::vector<const float *> block(numInstrs);
    for (size_t k = 0; k < numInstrs; ++k)
      if (p.instrs[k].op == Op::Constant)
        std::fill_n(values.begin() + k * kBlock, kBlock, p.instrs[k].value);
    std::vector<int64_t> offset(numInputs + 1);
#pragma omp for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
      std::fill(offset.begin(), offset.end(), 0);
      addOffsets(row, lead, offset);
      for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
        const int count = int(std::min<int64_t>(kBlock, cols - c0));
        const float *result = nullptr;
        for (size_t k = 0; k < numInstrs; ++k) {
          const auto &instr = p.instrs[k];
          float *own = values.data() + k * kBlock;
          if (instr.op == Op::Input && !read_[size_t(instr.a)]) {
            block[k] = own; // a dead read: any values
          } else if (instr.op == Op::Input) {
            const int i = instr.a;
            const int64_t cs = columnStride(i);
            const float *src = base[i] + offset[i] + c0 * cs;
            if (cs == 1) {
              block[k] = src;
            } else {
              float *dst = gathered.data() + size_t(i) * kBlock;
              for (int e = 0; e < count; ++e)
                dst[e] = src[e * cs];
              block[k] = dst;
            }
          } else if (instr.op == Op::Constant) {
            block[k] = own;
          } else {
            blockOp(instr, block[size_t(instr.a)], instr.b >= 0 ? block[size_t(instr.b)] : nullptr,
                    own, count, interpreterGelu_);
            block[k] = own;
          }
          result = block[k];
        }
        if (!result) { // no instructions: input 0
          const int64_t cs = columnStride(0);
          const float *src = base[0] + offset[0] + c0 * cs;
          float *dst = gathered.data();
          for (int e = 0; e < count; ++e)
            dst[e] = src[e * cs];
          result = dst;
        }
        float *dst = const_cast<float *>(base[numInputs]) + offset[numInputs];
        const int64_t cs = columnStride(numInputs);
        if (cs == 1)
          std::memmove(dst + c0, result, size_t(count) * sizeof(float));
        else
          for (int e = 0; e < count; ++e)
            dst[(c0 + e) * cs] = result[e];
      }
    }
  }
  return Status();
}

Status residualRows(const ExecContext &ctx, TensorId r, const std::vector<int64_t> &outShape,
                    const StepWhere &at, const float *&data, int64_t &ld,
                    std::vector<float> &copy) {
  RowView rv;
  if (ctx.dtype(r) != DType::F32)
    return Status::error(at + ": residual must be f32");
  if (ctx.shape(r) == outShape && rowView(ctx, r, rv)) {
    data = rv.data, ld = rv.ld;
    return Status();
  }
  // Broadcast or oddly strided: materialize it at the output's shape.
  const std::vector<int64_t> rShape = ctx.shape(r);
  const int shift = int(outShape.size()) - int(rShape.size());
  if (shift < 0)
    return Status::error(at + ": residual " + shapeString(rShape) + " does not broadcast to " +
                         shapeString(outShape));
  for (size_t d = 0; d < rShape.size(); ++d)
    if (rShape[d] != 1 && rShape[d] != outShape[d + shift])
      return Status::error(at + ": residual " + shapeString(rShape) + " does not broadcast to " +
                           shapeString(outShape));
  gatherBroadcast(ctx, r, outShape, copy);
  data = copy.data(), ld = outShape.empty() ? 1 : outShape.back();
  return Status();
}

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

ColumnExtras columnExtras(const ElementwiseProgram &rest, const std::vector<bool> &extraPerColumn) {
  ColumnExtras c;
  const std::vector<bool> read = inputsRead(rest);
  c.perColumn.assign(read.size(), false);
  c.fusable = true;
  for (size_t i = 1; i < read.size(); ++i) {
    if (!read[i])
      continue;
    c.perColumn[i] = i - 1 < extraPerColumn.size() && extraPerColumn[i - 1];
    c.fusable = c.fusable && c.perColumn[i];
    if (c.perColumn[i])
      c.extras.push_back(int(i - 1));
  }
  return c;
}

Status columnPointers(const ExecContext &ctx, const std::vector<TensorId> &extras,
                      const std::vector<int> &columns, int64_t n, const StepWhere &at,
                      std::vector<const float *> &out) {
  out.clear();
  for (int e : columns) {
    const TensorId t = extras[e];
    const std::vector<int64_t> shape = ctx.shape(t);
    if (ctx.dtype(t) != DType::F32 || shape.empty() || shape.back() != n ||
        ctx.numElements(t) != n || (n > 1 && ctx.strides(t).back() != 1))
      return Status::error(at + ": extra operand " + std::to_string(e) + " " +
                           dtypeName(ctx.dtype(t)) + shapeString(shape) +
                           " was planned as a per-column f32 vector of N = " + std::to_string(n));
    out.push_back(ctx.data<float>(t));
  }
  return Status();
}

} // namespace octet::rt
