//===- AttentionBf16Kernels.cpp -------------------------------------------===//
#include "compiler/codegen/x86/AttentionBf16Kernels.h"
#include "compiler/codegen/x86/AttentionKernels.h"
#include "compiler/codegen/x86/Transpose16.h"

#include <cstddef>
#include <cstring>
#include <string>

namespace octet::x86 {

using Xbyak::Tmm;
using Xbyak::Zmm;

uint16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7f800000u) == 0) // zero or denormal: signed zero
    return uint16_t((bits >> 16) & 0x8000u);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: quiet, sign kept
    return uint16_t((bits >> 16) | 0x40u);
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

float fromBf16(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

//===----------------------------------------------------------------------===//
// Packing
//===----------------------------------------------------------------------===//

namespace {
const char *packName(Bf16Pack mode) {
  switch (mode) {
  case Bf16Pack::Rows:
    return "attention_bf16_rows";
  case Bf16Pack::Keys:
    return "attention_bf16_keys";
  case Bf16Pack::Values:
    return "attention_bf16_values";
  }
  return "attention_bf16_pack";
}

/// Source element (r, c), zero outside the valid rows and columns.
float source(const AttentionBf16PackArgs &a, int64_t r, int64_t c) {
  return r < a.rows && c < a.cols ? a.src[r * a.lds + c] : 0.0f;
}
} // namespace

AttentionBf16PackKernel::AttentionBf16PackKernel(Bf16Pack mode)
    : KernelGenerator(packName(mode), Isa::Avx512, 8 * 1024), mode_(mode) {}

void AttentionBf16PackKernel::chunkMasks(const Xbyak::Reg64 &chunk) {
  // k1 / k2 (the chunk's two 16-lane halves): all lanes before the last full
  // chunk, the tail masks k5 / k6 at it, none after.
  Xbyak::Label notFull, done;
  cmp(chunk, rFull);
  jge(notFull);
  kxnorw(k1, k1, k1);
  kxnorw(k2, k2, k2);
  jmp(done);
  L(notFull);
  kmovw(k1, k5);
  kmovw(k2, k6);
  je(done);
  kxorw(k1, k1, k1);
  kxorw(k2, k2, k2);
  L(done);
}

void AttentionBf16PackKernel::rowsBody() {
  // Per valid row: the full 32-column chunks unmasked, the tail under k5/k6,
  // zeros up to padCols; rows past `rows` are zeros.
  Xbyak::Label rowLoop, zeroLoop, rowDone, done, fullLoop, fullDone;
  vpxord(zmm3, zmm3, zmm3);
  xor_(rRow, rRow);
  L(rowLoop);
  cmp(rRow, rPadRows);
  jge(done, T_NEAR);
  mov(rTmp, rSrc);
  mov(rOut, rDst);
  xor_(rCol, rCol);
  cmp(rRow, rRows);
  jge(zeroLoop, T_NEAR);
  // Rows lie a head-row stride apart (3 H D floats for a merged QKV): every
  // row is a new page, so the hardware prefetchers miss them; 8 rows ahead.
  lea(rSrc2, ptr[rSrc + rLds * 8]);
  emitPrefetchRows(*this, rSrc2, rLds, 1, 4);
  L(fullLoop);
  cmp(rCol, rFull);
  jge(fullDone);
  vmovups(zmm0, ptr[rTmp]);
  vmovups(zmm1, ptr[rTmp + 64]);
  vcvtne2ps2bf16(zmm2, zmm1, zmm0);
  vmovdqu16(ptr[rOut], zmm2);
  add(rTmp, 128);
  add(rOut, 64);
  inc(rCol);
  jmp(fullLoop);
  L(fullDone);
  cmp(rCol, rChunks);
  jge(rowDone);
  vmovups(zmm0 | k5 | T_z, ptr[rTmp]); // the tail (all zero when there is none)
  vmovups(zmm1 | k6 | T_z, ptr[rTmp + 64]);
  vcvtne2ps2bf16(zmm2, zmm1, zmm0);
  vmovdqu16(ptr[rOut], zmm2);
  add(rOut, 64);
  inc(rCol);
  L(zeroLoop);
  cmp(rCol, rChunks);
  jge(rowDone);
  vmovdqu16(ptr[rOut], zmm3);
  add(rOut, 64);
  inc(rCol);
  jmp(zeroLoop);
  L(rowDone);
  add(rSrc, rLds);
  add(rDst, rLdd);
  inc(rRow);
  jmp(rowLoop, T_NEAR);
  L(done);
}

void AttentionBf16PackKernel::keysBody() {
  // 16 keys x one 32-column chunk at a time: each key's chunk converted to
  // 16 dwords (one register per key), the 16x16 dwords transposed, stored as
  // one whole tile (rows = column pairs, columns = keys). Tiles are written
  // in order (key group, chunk), so rOut just advances by 1 KiB.
  Xbyak::Label groupLoop, chunkLoop, chunkDone, done;
  mov(rOut, rDst);
  xor_(rRow, rRow);
  L(groupLoop);
  cmp(rRow, rPadRows);
  jge(done, T_NEAR);
  emitRemaining(*this, rValid, rRows, rRow, 16); // the group's valid keys
  // The next group's 16 rows (a page each) while this one is converted.
  mov(rTmp, rLds);
  shl(rTmp, 4);
  add(rTmp, rSrc);
  emitPrefetchRows(*this, rTmp, rLds, 16, 4);
  mov(rSrc2, rSrc); // the group's chunk column 0
  xor_(rCol, rCol);
  L(chunkLoop);
  cmp(rCol, rChunks);
  jge(chunkDone, T_NEAR);
  chunkMasks(rCol);
  mov(rTmp, rSrc2);
  emitLoadRows16(*this, rTmp, rLds, rValid, [&](int i) {
    vmovups(zmm16 | k1 | T_z, ptr[rTmp]);
    vmovups(zmm17 | k2 | T_z, ptr[rTmp + 64]);
    vcvtne2ps2bf16(Zmm(i), zmm17, zmm16);
  });
  // Column j of the block (dim pair j of the 16 keys) is tile row j.
  emitTranspose16x16(*this, [&](int j, const Zmm &z) { vmovdqu32(ptr[rOut + j * 64], z); });
  add(rOut, int(kBf16TileBytes));
  add(rSrc2, 128);
  inc(rCol);
  jmp(chunkLoop, T_NEAR);
  L(chunkDone);
  mov(rTmp, rLds);
  shl(rTmp, 4);
  add(rSrc, rTmp);
  add(rRow, 16);
  jmp(groupLoop, T_NEAR);
  L(done);
}

void AttentionBf16PackKernel::valuesBody() {
  // Key pair p (rows 2p, 2p + 1), 16 columns d at a time: both rows
  // converted into one register (row 2p in words 0-15, 2p + 1 in 16-31),
  // interleaved by vpermw into dwords (V[2p][d], V[2p+1][d]), stored as row
  // p % 16 of tile (d / 16, p / 16): dst + (d / 16) * padRows * 32 + p * 64.
  // k3 / k4: the two rows' validity; k1 the chunk's columns (chunkMasks' low half).
  Xbyak::Label pairLoop, chunkLoop, chunkDone, done;
  mov(rLdd, rPadRows);
  shl(rLdd, 5);
  vmovdqu16(zmm30, ptr[rip + interleave_]);
  xor_(rRow, rRow); // 2p
  L(pairLoop);
  cmp(rRow, rPadRows);
  jge(done, T_NEAR);
  // k3 / k4 = all lanes while row 2p / 2p + 1 exists: the pair's valid rows
  // (0..2) as a 32-bit mask, its halves.
  emitRemaining(*this, rValid, rRows, rRow, 2);
  shl(rValid, 4);
  mov(rTmp.cvt32(), 0xffffffff);
  bzhi(rTmp.cvt32(), rTmp.cvt32(), rValid.cvt32());
  kmovw(k3, rTmp.cvt32());
  shr(rTmp.cvt32(), 16);
  kmovw(k4, rTmp.cvt32());
  lea(rSrc2, ptr[rSrc + rLds]);
  // Rows 2p + 8 and 2p + 9 (a page each, see rowsBody).
  lea(rTmp, ptr[rSrc + rLds * 8]);
  emitPrefetchRows(*this, rTmp, rLds, 2, 4);
  mov(rTmp, rSrc);
  mov(rOut, rRow); // dst + p * 64 = dst + 2p * 32
  shl(rOut, 5);
  add(rOut, rDst);
  xor_(rCol, rCol);
  L(chunkLoop);
  cmp(rCol, rChunks);
  jge(chunkDone, T_NEAR);
  chunkMasks(rCol);
  kandw(k2, k1, k4);
  kandw(k1, k1, k3);
  // A padding row (past S) is zeros, not a load.
  emitLoadUnlessMasked(*this, k1, zmm0, [&] { vmovups(zmm0 | k1 | T_z, ptr[rTmp]); });
  emitLoadUnlessMasked(*this, k2, zmm1, [&] { vmovups(zmm1 | k2 | T_z, ptr[rSrc2]); });
  vcvtne2ps2bf16(zmm2, zmm1, zmm0);
  vpermw(zmm2, zmm30, zmm2);
  vmovdqu16(ptr[rOut], zmm2);
  add(rTmp, 64);
  add(rSrc2, 64);
  add(rOut, rLdd);
  inc(rCol);
  jmp(chunkLoop, T_NEAR);
  L(chunkDone);
  lea(rSrc, ptr[rSrc + rLds * 2]);
  add(rRow, 2);
  jmp(pairLoop, T_NEAR);
  L(done);
}

void AttentionBf16PackKernel::generate() {
  auto field = [&](size_t offset) { return qword[rArgs + int(offset)]; };
  preamble();
  mov(rSrc, field(offsetof(AttentionBf16PackArgs, src)));
  mov(rLds, field(offsetof(AttentionBf16PackArgs, lds)));
  shl(rLds, 2);
  mov(rRows, field(offsetof(AttentionBf16PackArgs, rows)));
  mov(rDst, field(offsetof(AttentionBf16PackArgs, dst)));
  mov(rLdd, field(offsetof(AttentionBf16PackArgs, ldd)));
  shl(rLdd, 1);
  mov(rPadRows, field(offsetof(AttentionBf16PackArgs, padRows)));
  // Chunks of 32 columns (Values: 16): rFull whole ones, the tail's lanes in
  // k5 (columns 0-15 of the chunk) and k6 (16-31), rChunks up to padCols.
  const int width = mode_ == Bf16Pack::Values ? 16 : 32;
  const int shift = mode_ == Bf16Pack::Values ? 4 : 5;
  mov(rChunks, field(offsetof(AttentionBf16PackArgs, padCols)));
  shr(rChunks, shift);
  mov(rFull, field(offsetof(AttentionBf16PackArgs, cols)));
  mov(rTmp, rFull);
  and_(rTmp, width - 1);
  shr(rFull, shift);
  mov(rOut.cvt32(), width == 32 ? 0xffffffff : 0xffff);
  bzhi(rTmp.cvt32(), rOut.cvt32(), rTmp.cvt32());
  kmovw(k5, rTmp.cvt32());
  shr(rTmp.cvt32(), 16);
  kmovw(k6, rTmp.cvt32());
  switch (mode_) {
  case Bf16Pack::Rows:
    rowsBody();
    break;
  case Bf16Pack::Keys:
    keysBody();
    break;
  case Bf16Pack::Values:
    valuesBody();
    break;
  }
  postamble();
  align(64);
  L(interleave_);
  for (int i = 0; i < 16; ++i) {
    dw(uint16_t(i));
    dw(uint16_t(16 + i));
  }
}

void attentionBf16PackReference(Bf16Pack mode, const AttentionBf16PackArgs &a) {
  switch (mode) {
  case Bf16Pack::Rows:
    for (int64_t r = 0; r < a.padRows; ++r)
      for (int64_t c = 0; c < a.padCols; ++c)
        a.dst[r * a.ldd + c] = toBf16(source(a, r, c));
    return;
  case Bf16Pack::Keys: {
    const int64_t chunks = a.padCols / kBf16Chunk;
    for (int64_t j = 0; j < a.padRows; ++j)
      for (int64_t kc = 0; kc < chunks; ++kc)
        for (int64_t r = 0; r < 16; ++r) {
          uint16_t *pair = a.dst + (((j / 16) * chunks + kc) * 16 + r) * 32 + (j % 16) * 2;
          const int64_t d = 2 * (16 * kc + r);
          pair[0] = toBf16(source(a, j, d));
          pair[1] = toBf16(source(a, j, d + 1));
        }
    return;
  }
  case Bf16Pack::Values: {
    const int64_t chunks = a.padRows / kBf16Chunk;
    for (int64_t d = 0; d < a.padCols; ++d)
      for (int64_t p = 0; p < a.padRows / 2; ++p) {
        uint16_t *pair = a.dst + (((d / 16) * chunks + p / 16) * 16 + p % 16) * 32 + (d % 16) * 2;
        pair[0] = toBf16(source(a, 2 * p, d));
        pair[1] = toBf16(source(a, 2 * p + 1, d));
      }
    return;
  }
  }
}

//===----------------------------------------------------------------------===//
// Tile GEMM
//===----------------------------------------------------------------------===//

AttentionTileBf16Kernel::AttentionTileBf16Kernel()
    : KernelGenerator("attention_tile_bf16", Isa::AmxBf16, 4 * 1024) {}

AmxTileConfig AttentionTileBf16Kernel::config() {
  AmxTileConfig c;
  for (int t = 0; t < 8; ++t)
    c.rows[t] = 16, c.colsb[t] = 64;
  return c;
}

void AttentionTileBf16Kernel::generate() {
  auto field = [&](size_t offset) { return qword[rArgs + int(offset)]; };
  Xbyak::Label configured, pairLoop, kLoop, done, kept;
  preamble();
  cmp(field(offsetof(AttentionTileBf16Args, configure)), 0);
  je(configured);
  ldtilecfg(ptr[rip + tileConfig_]);
  L(configured);
  mov(rPairs, field(offsetof(AttentionTileBf16Args, colPairs)));
  test(rPairs, rPairs);
  jle(done, T_NEAR);
  mov(rBPair, field(offsetof(AttentionTileBf16Args, b)));
  mov(rC, field(offsetof(AttentionTileBf16Args, c)));
  mov(rLdc, field(offsetof(AttentionTileBf16Args, ldc)));
  mov(rC1, rLdc);
  shl(rC1, 4);
  add(rC1, rC);
  mov(rLda, field(offsetof(AttentionTileBf16Args, lda)));
  mov(rPairBytes, field(offsetof(AttentionTileBf16Args, kChunks)));
  shl(rPairBytes, 11); // two column tiles of kChunks KiB
  mov(rStride64.cvt32(), 64);
  L(pairLoop);
  for (int t = 0; t < 4; ++t)
    tilezero(Tmm(t));
  mov(rA, field(offsetof(AttentionTileBf16Args, a)));
  mov(rA1, rLda);
  shl(rA1, 4);
  add(rA1, rA);
  mov(rB0, rBPair);
  mov(rB1, rPairBytes);
  shr(rB1, 1);
  add(rB1, rBPair);
  mov(rK, field(offsetof(AttentionTileBf16Args, kChunks)));
  L(kLoop);
  tileloadd(Tmm(4), ptr[rA + rLda]);
  tileloadd(Tmm(6), ptr[rB0 + rStride64]);
  tileloadd(Tmm(7), ptr[rB1 + rStride64]);
  tdpbf16ps(Tmm(0), Tmm(4), Tmm(6));
  tdpbf16ps(Tmm(1), Tmm(4), Tmm(7));
  tileloadd(Tmm(5), ptr[rA1 + rLda]);
  tdpbf16ps(Tmm(2), Tmm(5), Tmm(6));
  tdpbf16ps(Tmm(3), Tmm(5), Tmm(7));
  add(rA, 64);
  add(rA1, 64);
  add(rB0, int(kBf16TileBytes));
  add(rB1, int(kBf16TileBytes));
  dec(rK);
  jnz(kLoop);
  tilestored(ptr[rC + rLdc], Tmm(0));
  tilestored(ptr[rC + rLdc + 64], Tmm(1));
  tilestored(ptr[rC1 + rLdc], Tmm(2));
  tilestored(ptr[rC1 + rLdc + 64], Tmm(3));
  add(rC, 128);
  add(rC1, 128);
  add(rBPair, rPairBytes);
  dec(rPairs);
  jnz(pairLoop, T_NEAR);
  L(done);
  cmp(field(offsetof(AttentionTileBf16Args, release)), 0);
  je(kept);
  tilerelease();
  L(kept);
  postamble();
  align(64);
  L(tileConfig_);
  for (uint8_t byte : config().bytes())
    db(byte);
}

//===----------------------------------------------------------------------===//
// The same GEMM on AVX512-BF16 (no AMX)
//===----------------------------------------------------------------------===//

AttentionDotBf16Kernel::AttentionDotBf16Kernel()
    : KernelGenerator("attention_dot_bf16", Isa::Avx512Bf16, 8 * 1024) {}

void AttentionDotBf16Kernel::generate() {
  preamble();
  PackedDotFields fields = packedDotFields<AttentionTileBf16Args>();
  fields.rowGroups = offsetof(AttentionTileBf16Args, rowGroups);
  emitPackedDot(
      *this, fields, [&](const Zmm &acc, const Zmm &a, const Zmm &b) { vdpbf16ps(acc, a, b); },
      [](int) {}, [](const Zmm &, int, int) {});
  postamble();
}

void attentionTileBf16Reference(const AttentionTileBf16Args &args) {
  const auto *a = reinterpret_cast<const uint8_t *>(args.a);
  const auto *b = reinterpret_cast<const uint8_t *>(args.b);
  auto *c = reinterpret_cast<uint8_t *>(args.c);
  const int64_t k = args.kChunks * kBf16Chunk;
  const int64_t rows = args.rowGroups > 0 && args.rowGroups < 4 ? 8 * args.rowGroups : 32;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < 32 * args.colPairs; ++n) {
      float sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        uint16_t x, y;
        std::memcpy(&x, a + m * args.lda + kk * 2, 2);
        const int64_t tile = n / 16, chunk = kk / kBf16Chunk, row = (kk % kBf16Chunk) / 2;
        std::memcpy(&y,
                    b + (tile * args.kChunks + chunk) * kBf16TileBytes + row * 64 + (n % 16) * 4 +
                        (kk % 2) * 2,
                    2);
        sum += fromBf16(x) * fromBf16(y);
      }
      std::memcpy(c + m * args.ldc + n * 4, &sum, 4);
    }
}

} // namespace octet::x86
