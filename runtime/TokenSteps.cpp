//===- TokenSteps.cpp - padding-free batches: layout, pack, unpack --------===//
//
// octet.token_layout, octet.pack_tokens and octet.unpack_tokens
// (docs/padding-free.md), and the embedding sum that packs its own rows. The
// layout step decides, from the run's masks, whether padding is dropped; the
// executor then re-evaluates the packed dims (Scalar::Kind::PackedDim) so
// that every step between pack and unpack sees [1, rows, …] tensors. Pack
// and unpack move whole rows (bytes of the trailing dims) and need
// contiguous tensors.
//
//===----------------------------------------------------------------------===//
#include "runtime/Steps.h"
#include "runtime/StridedIter.h"
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

// out[row] = table_0[index_0[b, s]] + table_1[index_1[b, s]] + ... in f32,
// summed in the order given (the additions it replaces round the same way),
// one row per token; with one table, that table's row. With a token layout
// (docs/padding-free.md) the rows of a Packed batch go straight to their
// packed rows, padding positions computing nothing; other modes keep every
// position, as pack_tokens does. The plan builder folds BERT-family
// embeddings (word, token type and position gathers, their sum and its
// pack_tokens; or each gather and its pack_tokens, where the packing comes
// first) into it (compiler/driver/PlanEmbedding.cpp): separate, the gathers
// wrote three [batch, seq, N] tensors, the sum read them back and the pack
// copied the real rows again (0.5 ms of BERT-base at 32 sentences of 38
// tokens).
//
/// How far ahead the rows are prefetched, in tokens.
constexpr int64_t kTokensAhead = 2;

class EmbeddingSumStep final : public Step {
public:
  EmbeddingSumStep(std::vector<TensorId> tables, std::vector<TensorId> indices, TensorId layout,
                   TensorId out)
      : sources_(int(tables.size())), layout_(layout) {
    inputs = std::move(tables);
    inputs.insert(inputs.end(), indices.begin(), indices.end());
    if (layout >= 0)
      inputs.push_back(layout);
    outputs = {out};
  }
  std::string kind() const override {
    return std::string(sources_ > 1 ? "embedding_sum" : "gather") +
           (layout_ >= 0 ? "+pack_tokens" : "");
  }

  Work work(const ExecContext &ctx) const override {
    Work w = Step::work(ctx);
    const TensorId out = outputs[0];
    const double elements = double(ctx.numElements(out));
    // Each output row reads one row of every table, not the tables.
    w.ops = elements * double(sources_ - 1);
    w.bytes = elements * 4.0 * double(sources_ + 1);
    return w;
  }

  Status run(const ExecContext &ctx) const override {
    const TensorId out = outputs[0];
    if (ctx.dtype(out) != DType::F32 || ctx.rank(out) != 3 || !ctx.isContiguous(out))
      return fail("the output " + describe(ctx, out) + " is not a contiguous f32 [batch, seq, N]");
    const int64_t n = ctx.dim(out, 2);
    int64_t batch = ctx.dim(out, 0), seq = ctx.dim(out, 1);
    const int64_t *rowOf = nullptr;
    if (layout_ >= 0) {
      TokenLayoutView layout(nullptr);
      if (Status s = readLayout(*this, ctx, layout_, layout); !s.ok())
        return s;
      const int64_t rows = layout.mode() == TokenMode::Packed ? layout.rows()
                                                               : layout.batch() * layout.seq();
      if (ctx.dim(out, 0) * ctx.dim(out, 1) != rows)
        return fail("the output " + describe(ctx, out) + " does not hold the layout's " +
                    std::to_string(rows) + " rows");
      batch = layout.batch(), seq = layout.seq();
      if (layout.mode() == TokenMode::Packed)
        rowOf = layout.rowOf();
    }
    std::vector<Source> sources(static_cast<size_t>(sources_));
    for (int i = 0; i < sources_; ++i)
      if (Status s = readSource(ctx, i, batch, seq, n, sources[size_t(i)]); !s.ok())
        return s;
    const int64_t positions = batch * seq;
    if (positions == 0 || n == 0)
      return Status();
    float *dst = ctx.data<float>(out);
#pragma omp parallel for schedule(static) if (positions * n * 4 >= kParallelBytes)
    for (int64_t p = 0; p < positions; ++p) {
      const int64_t row = rowOf ? rowOf[p] : p;
      if (row < 0)
        continue; // padding: no row
      const int64_t b = p / seq, s = p % seq;
      // The rows two tokens ahead while this one's are summed: a word's row
      // is anywhere in a table of tens of MB (BERT-base: 94 MB), from DRAM.
      // A row this token reads too (a token type's, broadcast ids) is in L1.
      if (const int64_t ahead = p + kTokensAhead; ahead < positions)
        for (const Source &source : sources) {
          const float *next = source.row(ahead / seq, ahead % seq);
          if (next == source.row(b, s))
            continue;
          for (int64_t at = 0; at < n * 4; at += 64)
            __builtin_prefetch(reinterpret_cast<const char *>(next) + at);
        }
      sumRows(sources, b, s, n, dst + row * n);
    }
    return Status();
  }

private:
  /// One table and its checked row ids, [1 or batch, 1 or seq].
  struct Source {
    const float *table = nullptr;
    int64_t rowStride = 0;
    std::vector<int64_t> ids; ///< [idBatch, idSeq], negative ones wrapped
    int64_t idBatch = 1, idSeq = 1;
    const float *row(int64_t b, int64_t s) const {
      return table + ids[size_t((idBatch == 1 ? 0 : b) * idSeq + (idSeq == 1 ? 0 : s))] * rowStride;
    }
  };

  /// o = ((row_0 + row_1) + row_2) + ...: one pass, each sum rounded to f32
  /// in that order (the fused additions' rounding).
  static void sumRows(const std::vector<Source> &sources, int64_t b, int64_t s, int64_t n,
                      float *__restrict o) {
    const float *__restrict r0 = sources[0].row(b, s);
    if (sources.size() == 1) {
      std::memcpy(o, r0, size_t(n) * sizeof(float));
      return;
    }
    const float *__restrict r1 = sources[1].row(b, s);
    if (sources.size() == 2) {
      for (int64_t j = 0; j < n; ++j)
        o[j] = r0[j] + r1[j];
      return;
    }
    const float *__restrict r2 = sources[2].row(b, s);
    for (int64_t j = 0; j < n; ++j)
      o[j] = (r0[j] + r1[j]) + r2[j];
    for (size_t i = 3; i < sources.size(); ++i) {
      const float *__restrict ri = sources[i].row(b, s);
      for (int64_t j = 0; j < n; ++j)
        o[j] += ri[j];
    }
  }

  Status fail(const std::string &what) const { return octet::rt::fail(*this, what); }
  static std::string describe(const ExecContext &ctx, TensorId t) {
    return std::string(dtypeName(ctx.dtype(t))) + " " + shapeString(ctx.shape(t));
  }

  /// Source i's table ([V, n] f32, rows contiguous) and ids ([1 or batch, 1 or
  /// seq] i64/i32, any strides), every id checked against [-V, V) as Gather does.
  Status readSource(const ExecContext &ctx, int i, int64_t batch, int64_t seq, int64_t n,
                    Source &source) const {
    const TensorId table = inputs[size_t(i)], ids = inputs[size_t(sources_ + i)];
    if (ctx.dtype(table) != DType::F32 || ctx.rank(table) != 2 || ctx.dim(table, 1) != n ||
        ctx.strides(table)[1] != 1)
      return fail("table " + std::to_string(i) + " " + describe(ctx, table) +
                  " is not f32 [rows, " + std::to_string(n) + "] with contiguous rows");
    const DType idType = ctx.dtype(ids);
    if ((idType != DType::I64 && idType != DType::I32) || ctx.rank(ids) != 2)
      return fail("the indices " + describe(ctx, ids) + " of table " + std::to_string(i) +
                  " are not i64 or i32 [batch, seq]");
    // As the sum they replace: the position ids of a model for shorter
    // sequences stop short of a long batch.
    if ((ctx.dim(ids, 1) != 1 && ctx.dim(ids, 1) != seq) ||
        (ctx.dim(ids, 0) != 1 && ctx.dim(ids, 0) != batch))
      return fail("the indices " + describe(ctx, ids) + " of table " + std::to_string(i) +
                  " and the " + std::to_string(batch) + " x " + std::to_string(seq) +
                  " tokens do not broadcast");
    const int64_t rows = ctx.dim(table, 0);
    source.table = ctx.data<float>(table);
    source.rowStride = ctx.strides(table)[0];
    source.idBatch = ctx.dim(ids, 0), source.idSeq = ctx.dim(ids, 1);
    const strided::BadIndex bad = strided::readIndices(ctx, ids, rows, source.ids);
    if (bad.position >= 0)
      return fail("index " + std::to_string(bad.value) + " at position " +
                  strided::indexString(ctx.shape(ids), bad.position) + " of the indices " +
                  describe(ctx, ids) + " is out of range [" + std::to_string(-rows) + ", " +
                  std::to_string(rows) + ") for table " + std::to_string(i) + " " +
                  describe(ctx, table));
    return Status();
  }

  int sources_;
  TensorId layout_;
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
StepPtr makeEmbeddingSum(std::vector<TensorId> tables, std::vector<TensorId> indices,
                         TensorId layout, TensorId out) {
  if (tables.empty() || tables.size() != indices.size())
    return nullptr;
  return std::make_unique<EmbeddingSumStep>(std::move(tables), std::move(indices), layout, out);
}


} // namespace octet::rt
