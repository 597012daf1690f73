//===- PackedWeights.cpp --------------------------------------------------===//
#include "compiler/codegen/PackedWeights.h"

#include <cstring>
#include <vector>

namespace octet {

namespace {
constexpr int64_t kAmxPanel = 32, kAmxKChunk = 64, kAmxTileBytes = 1024;
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
} // namespace

const char *packIsaName(PackIsa isa) {
  return isa == PackIsa::Amx ? "amx" : "avx512_vnni";
}

std::optional<PackIsa> parsePackIsa(std::string_view name) {
  if (name == "avx512_vnni")
    return PackIsa::Avx512Vnni;
  if (name == "amx")
    return PackIsa::Amx;
  return std::nullopt;
}

std::string PackedWeightLayout::check() const {
  if (k < 1 || n < 1)
    return "K and N must be >= 1, got K = " + std::to_string(k) + ", N = " + std::to_string(n);
  if (isa == PackIsa::Amx && nr != kAmxPanel)
    return "amx panels are 32 columns wide, got nr = " + std::to_string(nr);
  if (isa == PackIsa::Avx512Vnni && nr != 32 && nr != 48)
    return "avx512_vnni panels are 32 or 48 columns wide, got nr = " + std::to_string(nr);
  return "";
}

int64_t PackedWeightLayout::bytes() const {
  if (isa == PackIsa::Amx)
    return ceilDiv(n, kAmxPanel) * ceilDiv(k, kAmxKChunk) * 2 * kAmxTileBytes;
  return ceilDiv(n, nr) * nr * ceilDiv(k, 4) * 4;
}

// avx512_vnni: ((p * K4 + k / 4) * NR + n % NR) * 4 + k % 4
//   = (k / 4) * NR * 4 + k % 4  +  p * K4 * NR * 4 + (n % NR) * 4.
// amx: ((p * K64 + k / 64) * 2 + (n % 32) / 16) * 1024 + (k % 64) / 4 * 64 + (n % 16) * 4 + k % 4
//   = (k / 64) * 2048 + (k % 64) / 4 * 64 + k % 4  +  p * K64 * 2048 + (n % 32) / 16 * 1024 + (n % 16) * 4.
int64_t PackedWeightLayout::kOffset(int64_t kk) const {
  if (isa == PackIsa::Amx)
    return kk / kAmxKChunk * 2 * kAmxTileBytes + kk % kAmxKChunk / 4 * 64 + kk % 4;
  return kk / 4 * nr * 4 + kk % 4;
}

int64_t PackedWeightLayout::nOffset(int64_t col) const {
  if (isa == PackIsa::Amx)
    return col / kAmxPanel * ceilDiv(k, kAmxKChunk) * 2 * kAmxTileBytes +
           col % kAmxPanel / 16 * kAmxTileBytes + col % 16 * 4;
  return col / nr * ceilDiv(k, 4) * nr * 4 + col % nr * 4;
}

PackedWeightLayout packedWeightLayout(PackIsa isa, int64_t k, int64_t n, int vnniPanelWidth) {
  return {isa, k, n, isa == PackIsa::Amx ? int(kAmxPanel) : vnniPanelWidth};
}

void packWeight(const PackedWeightLayout &layout, const int8_t *b, WeightLayout from, int8_t *out,
                int32_t *colsum) {
  const int64_t k = layout.k, n = layout.n;
  std::memset(out, 0, size_t(layout.bytes()));
  std::memset(colsum, 0, size_t(n) * sizeof(int32_t));
  // Walk B in its stored order with the column parts of the offsets computed
  // once (compile time packs ~85 MB for BERT-base).
  std::vector<int64_t> nOffsets(static_cast<size_t>(n));
  for (int64_t col = 0; col < n; ++col)
    nOffsets[col] = layout.nOffset(col);
  if (from == WeightLayout::KN) {
    for (int64_t kk = 0; kk < k; ++kk) {
      int8_t *row = out + layout.kOffset(kk);
      const int8_t *src = b + kk * n;
      for (int64_t col = 0; col < n; ++col) {
        row[nOffsets[col]] = src[col];
        colsum[col] += src[col];
      }
    }
    return;
  }
  for (int64_t col = 0; col < n; ++col) {
    int8_t *column = out + nOffsets[col];
    const int8_t *src = b + col * k;
    int32_t sum = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      column[layout.kOffset(kk)] = src[kk];
      sum += src[kk];
    }
    colsum[col] = sum;
  }
}

void unpackWeight(const PackedWeightLayout &layout, const int8_t *packed, WeightLayout to,
                  int8_t *out) {
  const int64_t k = layout.k, n = layout.n;
  std::vector<int64_t> nOffsets(static_cast<size_t>(n));
  for (int64_t col = 0; col < n; ++col)
    nOffsets[col] = layout.nOffset(col);
  for (int64_t kk = 0; kk < k; ++kk) {
    const int8_t *row = packed + layout.kOffset(kk);
    for (int64_t col = 0; col < n; ++col)
      out[to == WeightLayout::KN ? kk * n + col : col * k + kk] = row[nOffsets[col]];
  }
}

} // namespace octet
