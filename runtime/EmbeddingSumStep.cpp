//===- EmbeddingSumStep.cpp - an encoder's embedding sum, packed ----------===//
//
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
//===----------------------------------------------------------------------===//
#include "runtime/Steps.h"
#include "runtime/TokenLayout.h"

#include <cstring>

namespace octet::rt {

namespace {

/// Below this many output bytes the rows stay on one thread.
constexpr int64_t kParallelBytes = 128 * 1024;
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
      if (ctx.dtype(layout_) != DType::I64 || ctx.rank(layout_) != 1 || ctx.dim(layout_, 0) < 5)
        return fail("the token layout " + describe(ctx, layout_) + " is not an i64 layout");
      TokenLayoutView layout(ctx.data<int64_t>(layout_));
      if (ctx.dim(layout_, 0) != tokenLayoutSize(layout.batch(), layout.seq()))
        return fail("the token layout's header does not match its size");
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
      // The rows two tokens ahead while this one's are summed: a word's row
      // is anywhere in a table of tens of MB (BERT-base: 94 MB), from DRAM.
      if (const int64_t ahead = p + kTokensAhead; ahead < positions)
        for (const Source &source : sources) {
          const char *next = reinterpret_cast<const char *>(source.row(ahead / seq, ahead % seq));
          for (int64_t at = 0; at < n * 4; at += 64)
            __builtin_prefetch(next + at);
        }
      const int64_t b = p / seq, s = p % seq;
      sumRows(sources, b, s, n, dst + row * n);
    }
    return Status();
  }

private:
  /// One table and its checked row ids, [1 or batch, seq].
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

  Status fail(const std::string &what) const {
    return Status::error(kind() + (location.empty() ? "" : " '" + location + "'") + ": " + what);
  }
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
    source.ids.resize(size_t(source.idBatch * source.idSeq));
    const std::vector<int64_t> strides = ctx.strides(ids);
    const void *base = idType == DType::I64 ? static_cast<const void *>(ctx.data<int64_t>(ids))
                                            : static_cast<const void *>(ctx.data<int32_t>(ids));
    for (int64_t b = 0; b < source.idBatch; ++b)
      for (int64_t s = 0; s < source.idSeq; ++s) {
        const int64_t at = b * strides[0] + s * strides[1];
        const int64_t v = idType == DType::I64 ? static_cast<const int64_t *>(base)[at]
                                               : int64_t(static_cast<const int32_t *>(base)[at]);
        if (v < -rows || v >= rows)
          return fail("index " + std::to_string(v) + " at position [" + std::to_string(b) + ", " +
                      std::to_string(s) + "] of the indices " + describe(ctx, ids) +
                      " is out of range [" + std::to_string(-rows) + ", " +
                      std::to_string(rows) + ") for table " + std::to_string(i) + " " +
                      describe(ctx, table));
        source.ids[size_t(b * source.idSeq + s)] = v < 0 ? v + rows : v;
      }
    return Status();
  }

  int sources_;
  TensorId layout_;
};

} // namespace

StepPtr makeEmbeddingSum(std::vector<TensorId> tables, std::vector<TensorId> indices,
                         TensorId layout, TensorId out) {
  if (tables.empty() || tables.size() != indices.size())
    return nullptr;
  return std::make_unique<EmbeddingSumStep>(std::move(tables), std::move(indices), layout, out);
}

} // namespace octet::rt
