//===- TokenSteps.cpp - padding-free batches: layout, pack, unpack --------===//
//
// octet.token_layout, octet.pack_tokens and octet.unpack_tokens
// (docs/padding-free.md). The layout step decides, from the run's masks,
// whether padding is dropped; the executor then re-evaluates the packed dims
// (Scalar::Kind::PackedDim) so that every step between pack and unpack sees
// [1, rows, …] tensors. Pack and unpack move whole rows (bytes of the
// trailing dims) and need contiguous tensors.
//
//===----------------------------------------------------------------------===//
#include "runtime/Steps.h"
#include "runtime/TokenLayout.h"

#include <cstring>

namespace octet::rt {

namespace {

Status fail(const Step &step, const std::string &what) {
  return Status::error(step.kind() + (step.location.empty() ? "" : " '" + step.location + "'") +
                       ": " + what);
}

/// The layout tensor of `ctx`, checked against its header.
Status readLayout(const Step &step, const ExecContext &ctx, TensorId t, TokenLayoutView &view) {
  if (ctx.dtype(t) != DType::I64 || ctx.rank(t) != 1 || ctx.dim(t, 0) < 5)
    return fail(step, "the token layout is " + std::string(dtypeName(ctx.dtype(t))) + " " +
                          shapeString(ctx.shape(t)) + ", not an i64 layout");
  view = TokenLayoutView(ctx.data<int64_t>(t));
  if (ctx.dim(t, 0) != tokenLayoutSize(view.batch(), view.seq()))
    return fail(step, "the token layout's header does not match its size");
  return {};
}

class TokenLayoutStep final : public Step {
public:
  TokenLayoutStep(std::vector<TensorId> masks, ScalarId batch, ScalarId seq, TensorId out)
      : batch_(batch), seq_(seq) {
    inputs = std::move(masks);
    outputs = {out};
  }
  std::string kind() const override { return "token_layout"; }
  bool definesTokenLayout() const override { return true; }

  Status run(const ExecContext &ctx) const override {
    const int64_t batch = ctx.scalar(batch_), seq = ctx.scalar(seq_);
    TensorId out = outputs[0];
    if (ctx.dtype(out) != DType::I64 || ctx.rank(out) != 1 ||
        ctx.dim(out, 0) != tokenLayoutSize(batch, seq))
      return fail(*this, "the layout tensor is " + shapeString(ctx.shape(out)) + ", not [" +
                             std::to_string(tokenLayoutSize(batch, seq)) + "]");
    std::vector<MaskView> masks;
    for (TensorId m : inputs) {
      if (ctx.dtype(m) != DType::F32)
        return fail(*this, std::string("mask is ") + dtypeName(ctx.dtype(m)) + ", not f32");
      std::vector<int64_t> shape = ctx.shape(m), strides = ctx.strides(m);
      const int rank = int(shape.size());
      if (rank > 4)
        return fail(*this, "mask " + shapeString(shape) + " has more than 4 dims");
      MaskView view;
      view.data = ctx.data<float>(m);
      int64_t *stride[4] = {&view.strideBatch, &view.strideHead, &view.strideQuery,
                            &view.strideKey};
      const int64_t target[4] = {batch, -1, seq, seq};
      for (int i = 0; i < rank; ++i) {
        const int axis = 4 - rank + i;
        if (shape[i] != 1 && target[axis] >= 0 && shape[i] != target[axis])
          return fail(*this, "mask " + shapeString(shape) + " does not broadcast to [" +
                                 std::to_string(batch) + ", heads, " + std::to_string(seq) +
                                 ", " + std::to_string(seq) + "]");
        *stride[axis] = shape[i] == 1 ? 0 : strides[i];
        if (axis == 1)
          view.heads = shape[i];
      }
      if (!view.data && batch * seq > 0)
        return fail(*this, "mask has no address");
      masks.push_back(view);
    }
    computeTokenLayout(masks, batch, seq, ctx.data<int64_t>(out));
    return {};
  }

private:
  ScalarId batch_, seq_;
};

/// Shared checks of pack and unpack: same dtype and trailing dims, both
/// contiguous; `rowBytes` is the bytes of one [batch, seq] position.
Status checkRows(const Step &step, const ExecContext &ctx, TensorId in, TensorId out,
                 size_t &rowBytes) {
  if (ctx.dtype(in) != ctx.dtype(out) || ctx.rank(in) != ctx.rank(out) || ctx.rank(in) < 2)
    return fail(step, "input " + shapeString(ctx.shape(in)) + " and output " +
                          shapeString(ctx.shape(out)) + " are not rows of one type");
  int64_t row = 1;
  for (int d = 2; d < ctx.rank(in); ++d) {
    if (ctx.dim(in, d) != ctx.dim(out, d))
      return fail(step, "input " + shapeString(ctx.shape(in)) + " and output " +
                            shapeString(ctx.shape(out)) + " differ in their rows");
    row *= ctx.dim(in, d);
  }
  if (!ctx.isContiguous(in) || !ctx.isContiguous(out))
    return fail(step, "needs contiguous tensors");
  rowBytes = size_t(row) * dtypeBytes(ctx.dtype(in));
  return {};
}

/// Below this many bytes a row move stays on one thread (a fork costs more).
constexpr int64_t kParallelBytes = 128 * 1024;

/// pack_tokens (padded [batch, seq, …] → rows) and unpack_tokens (rows →
/// padded, 0 at padding): one row move, in either direction.
class TokenRowsStep final : public Step {
public:
  TokenRowsStep(bool unpack, TensorId in, TensorId layout, TensorId out) : unpack_(unpack) {
    inputs = {in, layout};
    outputs = {out};
  }
  std::string kind() const override { return unpack_ ? "unpack_tokens" : "pack_tokens"; }

  Status run(const ExecContext &ctx) const override {
    TokenLayoutView layout(nullptr);
    size_t rowBytes = 0;
    TensorId in = inputs[0], out = outputs[0];
    if (Status s = readLayout(*this, ctx, inputs[1], layout); !s.ok())
      return s;
    if (Status s = checkRows(*this, ctx, in, out, rowBytes); !s.ok())
      return s;
    const TensorId padded = unpack_ ? out : in, packed = unpack_ ? in : out;
    const int64_t positions = layout.batch() * layout.seq();
    if (ctx.dim(padded, 0) != layout.batch() || ctx.dim(padded, 1) != layout.seq())
      return fail(*this, shapeString(ctx.shape(padded)) + " is not the layout's [" +
                             std::to_string(layout.batch()) + ", " + std::to_string(layout.seq()) +
                             ", ...]");
    const int64_t rows = layout.mode() == TokenMode::Packed ? layout.rows() : positions;
    if (ctx.dim(packed, 0) * ctx.dim(packed, 1) != rows)
      return fail(*this, shapeString(ctx.shape(packed)) + " does not hold the layout's " +
                             std::to_string(rows) + " rows");
    const char *src = ctx.data<char>(in);
    char *dst = ctx.data<char>(out);
    // Rows stay in place unless packed, or unpacked with padding to zero.
    if (layout.mode() == TokenMode::Padded || (!unpack_ && layout.mode() != TokenMode::Packed)) {
      if (positions)
        std::memcpy(dst, src, size_t(positions) * rowBytes);
      return {};
    }
    const int64_t *rowOf = layout.rowOf();
    // Both threads move rows: at 32 sentences of BERT-base (3.7 MB padded)
    // one thread took 0.17 ms. A static split of the positions splits the
    // rows in the order the row-wise steps around it split theirs.
#pragma omp parallel for schedule(static) if (positions * int64_t(rowBytes) >= kParallelBytes)
    for (int64_t p = 0; p < positions; ++p) {
      const int64_t r = rowOf[p];
      if (r >= 0 && r < rows)
        std::memcpy(dst + (unpack_ ? p : r) * rowBytes, src + (unpack_ ? r : p) * rowBytes,
                    rowBytes);
      else if (unpack_)
        std::memset(dst + p * rowBytes, 0, rowBytes);
    }
    return {};
  }

private:
  bool unpack_;
};

} // namespace

StepPtr makeTokenLayout(std::vector<TensorId> masks, ScalarId batch, ScalarId seq,
                        TensorId out) {
  return std::make_unique<TokenLayoutStep>(std::move(masks), batch, seq, out);
}
StepPtr makePackTokens(TensorId in, TensorId layout, TensorId out) {
  return std::make_unique<TokenRowsStep>(/*unpack=*/false, in, layout, out);
}
StepPtr makeUnpackTokens(TensorId in, TensorId layout, TensorId out) {
  return std::make_unique<TokenRowsStep>(/*unpack=*/true, in, layout, out);
}

} // namespace octet::rt
