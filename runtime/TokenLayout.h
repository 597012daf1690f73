//===- TokenLayout.h - which tokens of a padded batch are real --*- C++ -*-===//
//
// Padding-free batches (docs/padding-free.md): octet.token_layout's
// semantics, shared by the runtime's step and the reference interpreter. No
// MLIR.
//
// A layout is int64 [mode, rows, batch, seq, offsets[batch + 1], rowOf[batch·seq]]:
//  - Padded (0): the masks are not pure key-padding masks; nothing changes.
//  - Packed (1): sequence b is rows [offsets[b], offsets[b+1]) of a
//    [1, rows, …] tensor; position p = b·seq + s is row rowOf[p], -1 if padding.
//  - KeyPadding (2): the masks say which keys are padding but nothing is
//    dropped (no padding, no real token, or a bias on the real keys such as
//    MPNet's relative positions, which attention must read by position): rows
//    stay where they are (rowOf[p] = p, or -1 for padding, offsets[b] = b·seq)
//    and unpacking zeroes padding.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_TOKENLAYOUT_H
#define OCTET_RUNTIME_TOKENLAYOUT_H

#include <cstdint>
#include <vector>

namespace octet::rt {

enum class TokenMode : int64_t { Padded = 0, Packed = 1, KeyPadding = 2 };

/// A masked key's additive value is at most this (or -inf): BERT's original
/// (1 - mask) · -10000 and every finfo.min / -inf fill. After the softmax's
/// max subtraction its weight is exactly 0 unless that key's score beats the
/// row's best real key by more than 1e4 - 104.
constexpr float kMaskedKeyAtMost = -1e4f;

/// An additive f32 mask broadcast to [batch, heads, seq, seq] by element
/// strides (0 where it broadcasts); `heads` is its own head extent (1 if it
/// broadcasts over heads).
struct MaskView {
  const float *data = nullptr;
  int64_t heads = 1;
  int64_t strideBatch = 0, strideHead = 0, strideQuery = 0, strideKey = 0;
};

inline int64_t tokenLayoutSize(int64_t batch, int64_t seq) { return 5 + batch + batch * seq; }

/// Fills `layout` (tokenLayoutSize elements). A token is real when the first
/// mask does not mask it on the diagonal (its key is visible to itself); every
/// mask must then, on every head and every real token's row, mask exactly the
/// other keys (≤ kMaskedKeyAtMost), else the mode is Padded. Packed needs 0
/// at every real key as well (a key-padding mask and nothing else).
void computeTokenLayout(const std::vector<MaskView> &masks, int64_t batch, int64_t seq,
                        int64_t *layout);

/// Views of a layout's parts.
struct TokenLayoutView {
  explicit TokenLayoutView(const int64_t *layout) : data(layout) {}
  TokenMode mode() const { return TokenMode(data[0]); }
  int64_t rows() const { return data[1]; }
  int64_t batch() const { return data[2]; }
  int64_t seq() const { return data[3]; }
  const int64_t *offsets() const { return data + 4; }
  const int64_t *rowOf() const { return data + 5 + batch(); }
  const int64_t *data;
};

} // namespace octet::rt

#endif
