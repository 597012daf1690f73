//===- TokenLayout.cpp - which tokens of a padded batch are real ----------===//
#include "runtime/TokenLayout.h"

#include <cmath>

namespace octet::rt {

namespace {

float at(const MaskView &m, int64_t b, int64_t h, int64_t i, int64_t j) {
  return m.data[b * m.strideBatch + h * m.strideHead + i * m.strideQuery + j * m.strideKey];
}

/// Row i of (b, h) masks exactly the padding keys (≤ kMaskedKeyAtMost; NaN
/// never passes); `zeroAtReal` is cleared when a real key's value is not 0
/// (a bias, e.g. MPNet's relative positions: then rows cannot be packed).
bool rowMasksPadding(const MaskView &m, int64_t b, int64_t h, int64_t i, const int64_t *real,
                     int64_t seq, bool &zeroAtReal) {
  for (int64_t j = 0; j < seq; ++j) {
    float v = at(m, b, h, i, j);
    if (real[j] >= 0) {
      if (!(v > kMaskedKeyAtMost))
        return false;
      zeroAtReal &= v == 0.0f;
    } else if (!(v <= kMaskedKeyAtMost)) {
      return false;
    }
  }
  return true;
}

void fillUnpacked(int64_t *layout, int64_t batch, int64_t seq, TokenMode mode,
                  const std::vector<int64_t> &real) {
  layout[0] = int64_t(mode);
  layout[1] = batch * seq;
  for (int64_t b = 0; b <= batch; ++b)
    layout[4 + b] = b * seq;
  int64_t *rowOf = layout + 5 + batch;
  for (int64_t p = 0; p < batch * seq; ++p)
    rowOf[p] = mode == TokenMode::Padded || real[p] >= 0 ? p : -1;
}

} // namespace

void computeTokenLayout(const std::vector<MaskView> &masks, int64_t batch, int64_t seq,
                        int64_t *layout) {
  layout[2] = batch;
  layout[3] = seq;
  const int64_t positions = batch * seq;
  std::vector<int64_t> real(positions, -1); // real: its packed row; padding: -1
  if (masks.empty() || positions == 0) {
    fillUnpacked(layout, batch, seq, TokenMode::Padded, real);
    return;
  }
  int64_t rows = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s)
      if (at(masks[0], b, 0, s, s) > kMaskedKeyAtMost)
        real[b * seq + s] = rows++;
  bool zeroAtReal = true;
  for (const MaskView &m : masks)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < m.heads; ++h)
        for (int64_t i = 0, checked = 0; i < seq; ++i) {
          // A mask broadcast over queries has one row to check.
          if (real[b * seq + i] < 0 || (m.strideQuery == 0 && checked))
            continue;
          if (!rowMasksPadding(m, b, h, i, real.data() + b * seq, seq, zeroAtReal)) {
            fillUnpacked(layout, batch, seq, TokenMode::Padded, real);
            return;
          }
          checked = 1;
        }
  if (!zeroAtReal || rows == positions || rows == 0) {
    fillUnpacked(layout, batch, seq, TokenMode::KeyPadding, real);
    return;
  }
  layout[0] = int64_t(TokenMode::Packed);
  layout[1] = rows;
  int64_t *offsets = layout + 4, *rowOf = layout + 5 + batch;
  offsets[0] = 0;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t count = 0;
    for (int64_t s = 0; s < seq; ++s)
      count += real[b * seq + s] >= 0;
    offsets[b + 1] = offsets[b] + count;
  }
  for (int64_t p = 0; p < positions; ++p)
    rowOf[p] = real[p];
}

} // namespace octet::rt
