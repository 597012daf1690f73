//===- StridedIter.h - loops over strided, broadcast tensor views -*- C++ -*-===//
//
// The iteration core of the generic steps: N operands that share one logical
// shape, each with its own element strides (0 = broadcast). Dims are
// coalesced first (size-1 dims dropped, dims merged where every operand's
// strides are row-major across them), so a contiguous operand becomes one
// long inner run whatever its rank. The loop hands out inner runs
// (count elements, one stride per operand), which the caller's kernel turns
// into auto-vectorized loops for the stride 1 / stride 0 cases.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_STRIDEDITER_H
#define OCTET_RUNTIME_STRIDEDITER_H

#include "runtime/Plan.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace octet::rt::strided {

/// Elements below which a loop runs on the calling thread.
constexpr int64_t kParallelThreshold = int64_t(1) << 15;
/// Elements per parallel work item.
constexpr int64_t kChunk = int64_t(1) << 14;

/// Row-major strides of `shape`.
inline std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

inline int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The multi-index of flat row-major position `flat` in `shape`, as "[i, j, k]".
inline std::string indexString(const std::vector<int64_t> &shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    int64_t d = std::max<int64_t>(shape[i], 1);
    index[i] = flat % d;
    flat /= d;
  }
  return shapeString(index);
}

/// Strides that read an operand of `shape`/`strides` at every position of
/// `target` (numpy broadcasting: align at the right, a dim of 1 stretches).
/// False if the shapes do not broadcast.
inline bool broadcastStrides(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
                             const std::vector<int64_t> &target, std::vector<int64_t> &result) {
  if (shape.size() > target.size())
    return false;
  size_t lead = target.size() - shape.size();
  result.assign(target.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t size = shape[i], want = target[lead + i];
    if (size == want)
      result[lead + i] = size == 1 ? 0 : strides[i];
    else if (size != 1)
      return false;
  }
  return true;
}

/// A coalesced loop nest over N operands. Rank >= 1; the last dim is the inner run.
template <int N> struct Loop {
  std::vector<int64_t> shape;
  std::vector<std::array<int64_t, N>> strides; ///< per dim, per operand
  int64_t total = 0;
};

template <int N>
Loop<N> makeLoop(const std::vector<int64_t> &shape,
                 const std::array<const std::vector<int64_t> *, N> &strides) {
  Loop<N> loop;
  loop.total = product(shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    std::array<int64_t, N> s;
    for (int k = 0; k < N; ++k)
      s[k] = (*strides[k])[d];
    if (!loop.shape.empty()) {
      bool merge = true;
      for (int k = 0; k < N; ++k)
        merge &= loop.strides.back()[k] == s[k] * shape[d];
      if (merge) {
        loop.shape.back() *= shape[d];
        loop.strides.back() = s;
        continue;
      }
    }
    loop.shape.push_back(shape[d]);
    loop.strides.push_back(s);
  }
  if (loop.shape.empty()) {
    loop.shape.push_back(1);
    loop.strides.push_back({});
  }
  return loop;
}

/// Calls inner(position, count, offsets, innerStrides) for the runs covering
/// flat positions [begin, end); offsets are each operand's element offset.
template <int N, class Inner>
void runRange(const Loop<N> &loop, int64_t begin, int64_t end, Inner &&inner) {
  if (begin >= end)
    return;
  int rank = int(loop.shape.size());
  int last = rank - 1;
  std::vector<int64_t> index(rank);
  std::array<int64_t, N> offsets{};
  int64_t rest = begin;
  for (int d = last; d >= 0; --d) {
    index[d] = rest % loop.shape[d];
    rest /= loop.shape[d];
    for (int k = 0; k < N; ++k)
      offsets[k] += index[d] * loop.strides[d][k];
  }
  const std::array<int64_t, N> &innerStrides = loop.strides[last];
  int64_t length = loop.shape[last];
  for (int64_t position = begin; position < end;) {
    int64_t count = std::min(length - index[last], end - position);
    inner(position, count, offsets, innerStrides);
    position += count;
    if (position >= end)
      break;
    // The run ended at the end of the inner dim: step the outer dims.
    for (int k = 0; k < N; ++k)
      offsets[k] -= index[last] * innerStrides[k];
    index[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      ++index[d];
      for (int k = 0; k < N; ++k)
        offsets[k] += loop.strides[d][k];
      if (index[d] < loop.shape[d])
        break;
      for (int k = 0; k < N; ++k)
        offsets[k] -= index[d] * loop.strides[d][k];
      index[d] = 0;
    }
  }
}

/// runRange over the whole loop, split over OpenMP threads when it is big.
/// `cost` scales the element count for the threshold (work per element).
template <int N, class Inner>
void forEachRun(const Loop<N> &loop, Inner &&inner, int64_t cost = 1) {
  int64_t total = loop.total;
  if (total == 0)
    return;
  int64_t chunk = std::max<int64_t>(1, kChunk / std::max<int64_t>(cost, 1));
  int64_t chunks = (total + chunk - 1) / chunk;
  if (total * cost <= kParallelThreshold || chunks < 2) {
    runRange(loop, 0, total, inner);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c)
    runRange(loop, c * chunk, std::min(total, (c + 1) * chunk), inner);
}

/// The first index out of range that readIndices found: its flat row-major
/// position in the indices (-1: none) and its value.
struct BadIndex {
  int64_t position = -1;
  int64_t value = 0;
};

/// Every index of the i64 or i32 tensor `indices` (any strides) into `out`,
/// row-major, each in [-dim, dim) and wrapped to [0, dim) as numpy.take does:
/// Gather and the embedding sum read and check them all before writing
/// anything. The caller has checked the dtype.
inline BadIndex readIndices(const ExecContext &ctx, TensorId indices, int64_t dim,
                            std::vector<int64_t> &out) {
  const std::vector<int64_t> shape = ctx.shape(indices), strides = ctx.strides(indices),
                             flat = contiguousStrides(shape);
  const int64_t count = product(shape);
  out.resize(size_t(count));
  BadIndex bad;
  auto read = [&](const auto *src) {
    runRange(makeLoop<2>(shape, {&flat, &strides}), 0, count,
             [&](int64_t position, int64_t n, const std::array<int64_t, 2> &off,
                 const std::array<int64_t, 2> &st) {
               for (int64_t i = 0; i < n; ++i) {
                 const int64_t v = int64_t(src[off[1] + i * st[1]]);
                 if ((v < -dim || v >= dim) && bad.position < 0)
                   bad = {position + i, v};
                 out[size_t(position + i)] = v < 0 ? v + dim : v;
               }
             });
  };
  if (ctx.dtype(indices) == DType::I64)
    read(ctx.data<int64_t>(indices));
  else
    read(ctx.data<int32_t>(indices));
  return bad;
}

} // namespace octet::rt::strided

#endif
