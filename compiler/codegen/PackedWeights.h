//===- PackedWeights.h - the INT8 GEMM kernels' packed weight layouts -*- C++ -*-===//
//
// Where each byte of a constant s8 weight B[K, N] lives once it is packed for
// a u8 x s8 GEMM kernel, and the u8 x s8 compensation colsum[n] = sum_k B[k, n].
// Plain C++ (no Xbyak, no MLIR): shared by the INT8 driver's packer
// (x86::packInt8), octet-pack-weights, the qlinear verifier, the interpreter and
// the runtime, so there is one definition of each layout.
//
//  - avx512_vnni (x86/Int8GemmKernelVnni.h): ceil(N / NR) panels of [ceil(K / 4)][NR][4],
//    (k, n) at ((p * K4 + k / 4) * NR + n % NR) * 4 + k % 4, p = n / NR,
//    NR = 32 or 48 (gemm_blocking::panelWidth).
//  - amx (x86/Int8GemmKernelAmx.h): ceil(N / 32) panels of ceil(K / 64) chunks of two
//    1 KiB B tiles (columns 0-15, 16-31), (k, n) at
//    ((p * K64 + k / 64) * 2 + (n % 32) / 16) * 1024 + (k % 64) / 4 * 64 + (n % 16) * 4 + k % 4.
// Bytes for columns past N and K past K are zero.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_PACKEDWEIGHTS_H
#define OCTET_COMPILER_CODEGEN_PACKEDWEIGHTS_H

#include "compiler/codegen/WeightLayout.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace octet {

/// Largest K whose s32 sums cannot overflow: K * 255 * 128 < 2^31.
constexpr int64_t kMaxU8S8K = (int64_t(1) << 31) / (255 * 128) - 1;

/// The kernel family a weight is packed for.
enum class PackIsa { Avx512Vnni, Amx };

/// "avx512_vnni" / "amx" (octet-pack-weights's isa option, octet.packed's isa).
const char *packIsaName(PackIsa isa);
std::optional<PackIsa> parsePackIsa(std::string_view name);

struct PackedWeightLayout {
  PackIsa isa = PackIsa::Avx512Vnni;
  int64_t k = 0, n = 0;
  int nr = 0; ///< columns per panel: 32 or 48 (avx512_vnni), 32 (amx)

  /// "" when the layout is well formed, else what is wrong.
  std::string check() const;
  /// Size of the packed weight in bytes (whole panels, K padded).
  int64_t bytes() const;
  /// Byte offset of B[kk, col]; depends on K and NR, not on N. Both layouts
  /// separate into a row part and a column part: offset = kOffset + nOffset.
  int64_t offset(int64_t kk, int64_t col) const { return kOffset(kk) + nOffset(col); }
  int64_t kOffset(int64_t kk) const;
  int64_t nOffset(int64_t col) const;
};

/// The layout `isa`'s kernel uses for a [K, N] weight; `vnniPanelWidth` is
/// the VNNI kernels' NR for N (the rule lives with their blocking, GemmBlocking.h).
PackedWeightLayout packedWeightLayout(PackIsa isa, int64_t k, int64_t n, int vnniPanelWidth);

/// Packs `b` ([K, N] or [N, K] s8, `from`) into `out` (layout.bytes(), every
/// byte written: padding is zero) and writes colsum[N] = sum_k B[k, n].
void packWeight(const PackedWeightLayout &layout, const int8_t *b, WeightLayout from, int8_t *out,
                int32_t *colsum);

/// The inverse: `packed` back into `out` as [K, N] or [N, K] (`to`).
void unpackWeight(const PackedWeightLayout &layout, const int8_t *packed, WeightLayout to,
                  int8_t *out);

} // namespace octet

#endif
