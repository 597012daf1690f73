//===- AttentionInt8Kernels.cpp -------------------------------------------===//
#include "compiler/codegen/x86/AttentionInt8Kernels.h"
#include "compiler/codegen/x86/AttentionKernels.h"
#include "compiler/codegen/x86/Transpose16.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

namespace octet::x86 {

using Xbyak::Opmask;
using Xbyak::Zmm;

namespace {

const char *packName(Int8Pack mode) {
  switch (mode) {
  case Int8Pack::SignedRows:
    return "attention_int8_signed_rows";
  case Int8Pack::WeightedRows:
    return "attention_int8_weighted_rows";
  case Int8Pack::Keys:
    return "attention_int8_keys";
  case Int8Pack::Values:
    return "attention_int8_values";
  }
  return "attention_int8_pack";
}

float levelsOf(Int8Pack mode) { return mode == Int8Pack::WeightedRows ? 255.0f : 127.0f; }

} // namespace

AttentionInt8PackKernel::AttentionInt8PackKernel(Int8Pack mode)
    : KernelGenerator(packName(mode), Isa::Avx512, 16 * 1024), mode_(mode) {}

void AttentionInt8PackKernel::loadConstants() {
  mov(rTmp.cvt32(), 0x7fffffff);
  vpbroadcastd(zAbs, rTmp.cvt32());
  mov(rTmp.cvt32(), bitsOf(kInt8MinRange));
  vpbroadcastd(zMinRange, rTmp.cvt32());
  mov(rTmp.cvt32(), bitsOf(levelsOf(mode_)));
  vpbroadcastd(zLevels, rTmp.cvt32());
  if (mode_ == Int8Pack::Values) {
    vmovdqu8(zOrder, ptr[rip + quadTranspose_]);
  } else {
    vmovdqu32(zOrder, ptr[rip + dwordOrder_]);
    mov(rTmp.cvt32(), 0x80808080);
    vpbroadcastd(zOffset, rTmp.cvt32());
  }
}

void AttentionInt8PackKernel::chunkMasks(const Xbyak::Reg64 &chunk) {
  // All lanes before the last full chunk, the tail's (k5) at it, none after.
  // Values' chunks are one 16-column vector (k1), the others' four (k1-k4).
  const int vectors = mode_ == Int8Pack::Values ? 1 : 4;
  Xbyak::Label notFull, done;
  cmp(chunk, rFull);
  jge(notFull);
  for (int v = 1; v <= vectors; ++v)
    kxnorw(Opmask(v), Opmask(v), Opmask(v));
  jmp(done);
  L(notFull);
  for (int v = 1; v <= vectors; ++v)
    kxorw(Opmask(v), Opmask(v), Opmask(v));
  jne(done); // past the tail (flags from the cmp: kxorw leaves them)
  kmovq(k1, k5);
  for (int v = 2; v <= vectors; ++v)
    kshiftrq(Opmask(v), k5, 16 * (v - 1));
  L(done);
}

void AttentionInt8PackKernel::rowRange(const Xbyak::Reg64 &row) {
  // The largest |x| as unsigned bits: for non-negative floats the integer
  // order is the float order, with inf and NaN above every finite value.
  Xbyak::Label loop, done;
  const int vectors = mode_ == Int8Pack::Values ? 1 : 4;
  vpxord(zmm0, zmm0, zmm0);
  mov(rTmp, row);
  xor_(rCol, rCol);
  L(loop);
  cmp(rCol, rChunks);
  jge(done, T_NEAR);
  chunkMasks(rCol);
  for (int v = 0; v < vectors; ++v) {
    vpandd(zmm1 | Opmask(1 + v) | T_z, zAbs, ptr[rTmp + 64 * v]);
    vpmaxud(zmm0, zmm0, zmm1);
  }
  add(rTmp, 64 * vectors);
  inc(rCol);
  jmp(loop, T_NEAR);
  L(done);
  vextracti64x4(ymm1, zmm0, 1);
  vpmaxud(ymm0, ymm0, ymm1);
  vextracti128(xmm1, ymm0, 1);
  vpmaxud(xmm0, xmm0, xmm1);
  vpshufd(xmm1, xmm0, 0x4e);
  vpmaxud(xmm0, xmm0, xmm1);
  vpshufd(xmm1, xmm0, 0xb1);
  vpmaxud(xmm0, xmm0, xmm1);
  scaleOfRange();
}

void AttentionInt8PackKernel::scaleOfRange() {
  // m = max(floor, amax): maxss returns its second operand when either is NaN.
  vmaxss(xmm0, Xbyak::Xmm(zMinRange.getIdx()), xmm0);
  vdivss(xmm1, xmm0, Xbyak::Xmm(zLevels.getIdx()));
  vdivss(xmm2, Xbyak::Xmm(zLevels.getIdx()), xmm0);
}

void AttentionInt8PackKernel::quantizeChunk(const Zmm &dst, const Zmm &mult,
                                            const Xbyak::Reg64 &src) {
  // Four vectors of 16 columns -> dwords -> one register of 64 bytes. The packs
  // work per 128-bit lane, leaving dword 4L + i = columns 16 i + 4L ..; zOrder
  // puts columns 4m .. 4m + 3 at dword m.
  for (int v = 0; v < 4; ++v)
    vmulps(Zmm(16 + v) | Opmask(1 + v) | T_z, mult, ptr[src + 64 * v]);
  for (int v = 0; v < 4; ++v)
    vcvtps2dq(Zmm(16 + v), Zmm(16 + v));
  vpackssdw(zmm20, zmm16, zmm17);
  vpackssdw(zmm21, zmm18, zmm19);
  if (mode_ == Int8Pack::WeightedRows)
    vpackuswb(zmm20, zmm20, zmm21);
  else
    vpacksswb(zmm20, zmm20, zmm21);
  vpermd(dst, zOrder, zmm20);
  if (mode_ == Int8Pack::SignedRows)
    vpxord(dst, dst, zOffset); // q + 128 as u8
}

void AttentionInt8PackKernel::rowsBody() {
  Xbyak::Label rowLoop, zeroRow, chunkLoop, rowDone, zeroLoop, done;
  const bool weighted = mode_ == Int8Pack::WeightedRows;
  loadConstants();
  xor_(rRow, rRow);
  L(rowLoop);
  cmp(rRow, qword[rArgs + int(offsetof(AttentionInt8PackArgs, padRows))]);
  jge(done, T_NEAR);
  mov(rOut, rDst);
  cmp(rRow, rRows);
  jge(zeroRow, T_NEAR);
  if (weighted) { // the range is given; the scale also takes the row's 1/Σe
    mov(rTmp, qword[rArgs + int(offsetof(AttentionInt8PackArgs, rowMax))]);
    vmovss(xmm0, dword[rTmp + rRow * 4]);
    scaleOfRange();
    mov(rTmp, qword[rArgs + int(offsetof(AttentionInt8PackArgs, rowInverse))]);
    vmulss(xmm1, xmm1, dword[rTmp + rRow * 4]);
  } else { // Q rows lie a head-row stride apart (a page each): 8 rows ahead
    lea(rSrc2, ptr[rSrc + rLds * 8]);
    emitPrefetchRows(*this, rSrc2, rLds, 1, 4);
    rowRange(rSrc);
  }
  vmovss(dword[rScales + rRow * 4], xmm1);
  vbroadcastss(zmm22, xmm2);
  mov(rSrc2, rSrc);
  xor_(rCol, rCol);
  L(chunkLoop);
  cmp(rCol, rChunks);
  jge(rowDone, T_NEAR);
  chunkMasks(rCol);
  quantizeChunk(zmm23, zmm22, rSrc2);
  vmovdqu8(ptr[rOut], zmm23);
  add(rSrc2, 256);
  add(rOut, 64);
  inc(rCol);
  jmp(chunkLoop, T_NEAR);
  L(zeroRow);
  vxorps(xmm1, xmm1, xmm1);
  vmovss(dword[rScales + rRow * 4], xmm1);
  vpxord(zmm23, zmm23, zmm23);
  xor_(rCol, rCol);
  L(zeroLoop);
  cmp(rCol, rChunks);
  jge(rowDone);
  vmovdqu8(ptr[rOut], zmm23);
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

void AttentionInt8PackKernel::keysBody() {
  // Per group of 16 keys: each key's scale (one pass over its row), then per
  // 64-column chunk the 16 keys quantized into one register each (16 dwords),
  // transposed, stored as one tile (rows = dim quads, columns = keys), and its
  // bytes summed per key (vpdpbusd with ones) into sums. rLdd holds `work`
  // (the group's multipliers), rDst `sums`.
  Xbyak::Label groupLoop, chunkLoop, chunkDone, done;
  mov(rLdd, qword[rArgs + int(offsetof(AttentionInt8PackArgs, work))]);
  mov(rOut, rDst);
  mov(rDst, qword[rArgs + int(offsetof(AttentionInt8PackArgs, sums))]);
  loadConstants();
  xor_(rRow, rRow);
  L(groupLoop);
  cmp(rRow, qword[rArgs + int(offsetof(AttentionInt8PackArgs, padRows))]);
  jge(done, T_NEAR);
  emitRemaining(*this, rValid, rRows, rRow, 16);
  mov(rSrc2, rSrc);
  for (int i = 0; i < 16; ++i) {
    Xbyak::Label padding, next;
    cmp(rValid, i);
    jle(padding, T_NEAR);
    rowRange(rSrc2);
    jmp(next, T_NEAR);
    L(padding);
    vxorps(xmm1, xmm1, xmm1);
    vxorps(xmm2, xmm2, xmm2);
    L(next);
    vmovss(dword[rScales + rRow * 4 + 4 * i], xmm1);
    vmovss(dword[rLdd + 4 * i], xmm2);
    if (i + 1 < 16)
      add(rSrc2, rLds);
  }
  // The next group's 16 rows (a page each) while this one is converted.
  mov(rTmp, rLds);
  shl(rTmp, 4);
  add(rTmp, rSrc);
  emitPrefetchRows(*this, rTmp, rLds, 16, 4);
  vpxord(zmm0, zmm0, zmm0);
  vmovdqu32(ptr[rDst + rRow * 4], zmm0);
  mov(rSrc2, rSrc); // the group's chunk column 0
  xor_(rCol, rCol);
  L(chunkLoop);
  cmp(rCol, rChunks);
  jge(chunkDone, T_NEAR);
  chunkMasks(rCol);
  mov(rTmp, rSrc2);
  emitLoadRows16(*this, rTmp, rLds, rValid, [&](int i) {
    vbroadcastss(zmm22, dword[rLdd + 4 * i]);
    quantizeChunk(Zmm(i), zmm22, rTmp);
  });
  // Column j of the block (dim quad j of the 16 keys) is tile row j.
  emitTranspose16x16(*this, [&](int j, const Zmm &z) { vmovdqu32(ptr[rOut + j * 64], z); });
  vmovdqu32(zmm0, ptr[rDst + rRow * 4]);
  mov(rTmp.cvt32(), 0x01010101);
  vpbroadcastd(zmm1, rTmp.cvt32());
  for (int j = 0; j < 16; ++j)
    vpdpbusd(zmm0, zmm1, ptr[rOut + j * 64]);
  vmovdqu32(ptr[rDst + rRow * 4], zmm0);
  loadConstants(); // the transpose took every register
  add(rOut, int(kInt8TileBytes));
  add(rSrc2, 256);
  inc(rCol);
  jmp(chunkLoop, T_NEAR);
  L(chunkDone);
  vmovdqu32(zmm0, ptr[rDst + rRow * 4]);
  vpslld(zmm0, zmm0, 7); // 128 · Σ q
  vmovdqu32(ptr[rDst + rRow * 4], zmm0);
  mov(rTmp, rLds);
  shl(rTmp, 4);
  add(rSrc, rTmp);
  add(rRow, 16);
  jmp(groupLoop, T_NEAR);
  L(done);
}

void AttentionInt8PackKernel::valuesBody() {
  // Per key quad p (rows 4p .. 4p + 3): each key's scale (one pass over its
  // row), then 16 dims d at a time the four rows quantized, packed to bytes
  // and each lane's 4 x 4 bytes transposed (zOrder) so that dword d holds the
  // quad's bytes of dim d: row p % 16 of tile (d / 16, p / 16), at
  // dst + (d / 16) · padRows · 16 + p · 64. rFull / k5: whole 16-column
  // vectors and the tail's lanes; rLdd: the tile-column stride; the quad's
  // multipliers in zmm22-25, its rows' validity in k2-k4, k6.
  Xbyak::Label quadLoop, quadDone, vecLoop, vecDone;
  mov(rLdd, qword[rArgs + int(offsetof(AttentionInt8PackArgs, padRows))]);
  shl(rLdd, 4); // bytes from one 16-dim tile column to the next
  loadConstants();
  xor_(rRow, rRow); // 4p
  L(quadLoop);
  cmp(rRow, qword[rArgs + int(offsetof(AttentionInt8PackArgs, padRows))]);
  jge(quadDone, T_NEAR);
  emitRemaining(*this, rValid, rRows, rRow, 4);
  // Rows 8 ahead (a page each) while this quad is converted.
  lea(rTmp, ptr[rSrc + rLds * 8]);
  emitPrefetchRows(*this, rTmp, rLds, 4, 4);
  const Xbyak::Opmask rowValid[4] = {k2, k3, k4, k6};
  mov(rOut, rSrc);
  for (int i = 0; i < 4; ++i) {
    Xbyak::Label padding, next;
    cmp(rValid, i);
    jle(padding, T_NEAR);
    rowRange(rOut);
    kxnorw(rowValid[i], rowValid[i], rowValid[i]);
    jmp(next, T_NEAR);
    L(padding);
    vxorps(xmm1, xmm1, xmm1);
    vxorps(xmm2, xmm2, xmm2);
    kxorw(rowValid[i], rowValid[i], rowValid[i]);
    L(next);
    vmovss(dword[rScales + rRow * 4 + 4 * i], xmm1);
    vbroadcastss(Zmm(22 + i), xmm2);
    if (i + 1 < 4)
      add(rOut, rLds);
  }
  mov(rTmp, rSrc);               // row 4p, then 4p + 2 at rTmp + 2 lds
  lea(rValid, ptr[rSrc + rLds]); // row 4p + 1, then 4p + 3
  mov(rOut, rRow);
  shl(rOut, 4); // p · 64
  add(rOut, rDst);
  xor_(rCol, rCol);
  L(vecLoop);
  cmp(rCol, rChunks);
  jge(vecDone, T_NEAR);
  chunkMasks(rCol);
  const Xbyak::Address rowAt[4] = {ptr[rTmp], ptr[rValid], ptr[rTmp + rLds * 2],
                                   ptr[rValid + rLds * 2]};
  for (int i = 0; i < 4; ++i) { // padding rows (past S) are zeros, not loads
    kandw(k7, k1, rowValid[i]);
    emitLoadUnlessMasked(*this, k7, Zmm(16 + i),
                         [&] { vmulps(Zmm(16 + i) | k7 | T_z, Zmm(22 + i), rowAt[i]); });
    vcvtps2dq(Zmm(16 + i), Zmm(16 + i));
  }
  vpackssdw(zmm20, zmm16, zmm17);
  vpackssdw(zmm21, zmm18, zmm19);
  vpacksswb(zmm20, zmm20, zmm21);
  vpshufb(zmm20, zmm20, zOrder);
  vmovdqu8(ptr[rOut], zmm20);
  add(rTmp, 64);
  add(rValid, 64);
  add(rOut, rLdd);
  inc(rCol);
  jmp(vecLoop, T_NEAR);
  L(vecDone);
  lea(rSrc, ptr[rSrc + rLds * 4]);
  add(rRow, 4);
  jmp(quadLoop, T_NEAR);
  L(quadDone);
}

void AttentionInt8PackKernel::generate() {
  auto field = [&](size_t offset) { return qword[rArgs + int(offset)]; };
  preamble();
  mov(rSrc, field(offsetof(AttentionInt8PackArgs, src)));
  mov(rLds, field(offsetof(AttentionInt8PackArgs, lds)));
  shl(rLds, 2);
  mov(rRows, field(offsetof(AttentionInt8PackArgs, rows)));
  mov(rDst, field(offsetof(AttentionInt8PackArgs, dst)));
  mov(rLdd, field(offsetof(AttentionInt8PackArgs, ldd)));
  mov(rScales, field(offsetof(AttentionInt8PackArgs, scales)));
  // Chunks of 64 columns (Values: vectors of 16): rFull whole ones, the
  // tail's lanes in k5, rChunks up to padCols.
  const int width = mode_ == Int8Pack::Values ? 16 : 64;
  const int shift = mode_ == Int8Pack::Values ? 4 : 6;
  mov(rChunks, field(offsetof(AttentionInt8PackArgs, padCols)));
  shr(rChunks, shift);
  mov(rFull, field(offsetof(AttentionInt8PackArgs, cols)));
  mov(rTmp, rFull);
  and_(rTmp, width - 1);
  shr(rFull, shift);
  mov(rOut, -1);
  bzhi(rTmp, rOut, rTmp);
  kmovq(k5, rTmp);
  switch (mode_) {
  case Int8Pack::SignedRows:
  case Int8Pack::WeightedRows:
    rowsBody();
    break;
  case Int8Pack::Keys:
    keysBody();
    break;
  case Int8Pack::Values:
    valuesBody();
    break;
  }
  vzeroupper();
  postamble();
  align(64);
  L(dwordOrder_);
  for (int m = 0; m < 16; ++m)
    dd(uint32_t(4 * (m % 4) + m / 4));
  align(64);
  L(quadTranspose_);
  for (int lane = 0; lane < 4; ++lane)
    for (int i = 0; i < 16; ++i)
      db(uint8_t(4 * (i % 4) + i / 4));
}

//===----------------------------------------------------------------------===//
// The C++ twin of the packing
//===----------------------------------------------------------------------===//

namespace {

/// vcvtps2dq: round to nearest even; out of range or NaN gives INT32_MIN.
int32_t convert(float f) {
  if (!(f >= -2147483648.0f && f < 2147483648.0f))
    return INT32_MIN;
  return int32_t(std::nearbyint(f));
}

/// m, scale and multiplier of values whose largest |x| has these bits.
struct Range {
  float scale, mult;
};
Range rangeOf(uint32_t absMaxBits, float levels) {
  float amax;
  std::memcpy(&amax, &absMaxBits, 4);
  const float m = std::isnan(amax) ? amax : std::max(amax, kInt8MinRange);
  return {m / levels, levels / m};
}

uint32_t absBits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b & 0x7fffffffu;
}

int8_t signedByte(float x, float mult) {
  return int8_t(std::clamp<int32_t>(convert(x * mult), -128, 127));
}

} // namespace

void attentionInt8PackReference(Int8Pack mode, const AttentionInt8PackArgs &a) {
  auto source = [&](int64_t r, int64_t c) {
    return r < a.rows && c < a.cols ? a.src[r * a.lds + c] : 0.0f;
  };
  auto rowRange = [&](int64_t r) {
    uint32_t bits = 0;
    if (mode == Int8Pack::WeightedRows) { // given; the scale takes 1/Σe
      std::memcpy(&bits, &a.rowMax[r], 4);
      Range range = rangeOf(bits, levelsOf(mode));
      range.scale *= a.rowInverse[r];
      return range;
    }
    for (int64_t c = 0; c < a.cols; ++c)
      bits = std::max(bits, absBits(source(r, c)));
    return rangeOf(bits, levelsOf(mode));
  };
  switch (mode) {
  case Int8Pack::SignedRows:
  case Int8Pack::WeightedRows:
    for (int64_t r = 0; r < a.padRows; ++r) {
      const Range range = r < a.rows ? rowRange(r) : Range{0, 0};
      a.scales[r] = range.scale;
      for (int64_t c = 0; c < a.padCols; ++c) {
        uint8_t &q = a.dst[r * a.ldd + c];
        if (r >= a.rows)
          q = 0;
        else if (mode == Int8Pack::SignedRows)
          q = uint8_t(signedByte(source(r, c), range.mult)) ^ 0x80u;
        else
          q = uint8_t(std::clamp<int32_t>(convert(source(r, c) * range.mult), 0, 255));
      }
    }
    return;
  case Int8Pack::Keys: {
    const int64_t chunks = a.padCols / kInt8Chunk;
    for (int64_t j = 0; j < a.padRows; ++j) {
      const Range range = j < a.rows ? rowRange(j) : Range{0, 0};
      a.scales[j] = range.scale;
      int32_t sum = 0;
      for (int64_t d = 0; d < a.padCols; ++d) {
        const int8_t q = signedByte(source(j, d), range.mult);
        sum += q;
        const int64_t kc = d / kInt8Chunk, r = (d % kInt8Chunk) / 4;
        a.dst[(((j / 16) * chunks + kc) * 16 + r) * 64 + (j % 16) * 4 + d % 4] = uint8_t(q);
      }
      a.sums[j] = 128 * sum;
    }
    return;
  }
  case Int8Pack::Values: {
    const int64_t chunks = a.padRows / kInt8Chunk;
    for (int64_t t = 0; t < a.padRows; ++t) {
      const Range range = t < a.rows ? rowRange(t) : Range{0, 0};
      a.scales[t] = range.scale;
      const int64_t p = t / 4;
      for (int64_t d = 0; d < a.padCols; ++d)
        a.dst[(((d / 16) * chunks + p / 16) * 16 + p % 16) * 64 + (d % 16) * 4 + t % 4] =
            uint8_t(signedByte(source(t, d), range.mult));
    }
    return;
  }
  }
}

//===----------------------------------------------------------------------===//
// Dot kernel
//===----------------------------------------------------------------------===//

AttentionDotInt8Kernel::AttentionDotInt8Kernel(bool columnTerms)
    : KernelGenerator(columnTerms ? "attention_dot_int8_columns" : "attention_dot_int8",
                      Isa::Avx512Vnni, 8 * 1024),
      columnTerms_(columnTerms) {}

void AttentionDotInt8Kernel::generate() {
  auto field = [&](size_t offset) { return qword[rArgs + int(offset)]; };
  const Zmm zSums[2] = {zmm26, zmm27}, zScales[2] = {zmm28, zmm29};
  preamble();
  PackedDotFields fields = packedDotFields<AttentionDotInt8Args>();
  fields.rowGroups = offsetof(AttentionDotInt8Args, rowGroups);
  emitPackedDot(
      *this, fields, [&](const Zmm &acc, const Zmm &a, const Zmm &b) { vpdpbusd(acc, a, b); },
      [&](int) {
        mov(rA, field(offsetof(AttentionDotInt8Args, rowScale)));
        if (!columnTerms_)
          return;
        // The pair's column vectors (r15 − c: its byte offset).
        mov(rB0, rCBase);
        sub(rB0, field(offsetof(AttentionDotInt8Args, c)));
        mov(rB1, field(offsetof(AttentionDotInt8Args, colSums)));
        vmovdqu32(zSums[0], ptr[rB1 + rB0]);
        vmovdqu32(zSums[1], ptr[rB1 + rB0 + 64]);
        mov(rB1, field(offsetof(AttentionDotInt8Args, colScale)));
        vmovups(zScales[0], ptr[rB1 + rB0]);
        vmovups(zScales[1], ptr[rB1 + rB0 + 64]);
      },
      [&](const Zmm &acc, int row, int tile) {
        if (columnTerms_)
          vpsubd(acc, acc, zSums[tile]);
        vcvtdq2ps(acc, acc);
        if (columnTerms_)
          vmulps(acc, acc, zScales[tile]);
        vmulps(acc, acc, ptr_b[rA + 4 * row]);
      });
  vzeroupper();
  postamble();
}

void attentionDotInt8Reference(const AttentionDotInt8Args &args) {
  const auto *c = reinterpret_cast<uint8_t *>(args.c);
  const int64_t k = args.kChunks * kInt8Chunk;
  const int64_t rows = args.rowGroups > 0 && args.rowGroups < 4 ? 8 * args.rowGroups : 32;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < 32 * args.colPairs; ++n) {
      int32_t sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const int64_t tile = n / 16, chunk = kk / kInt8Chunk, row = (kk % kInt8Chunk) / 4;
        const int8_t b = args.b[(tile * args.kChunks + chunk) * kInt8TileBytes + row * 64 +
                                (n % 16) * 4 + kk % 4];
        sum += int32_t(args.a[m * args.lda + kk]) * int32_t(b);
      }
      const float value = args.colSums
                              ? float(sum - args.colSums[n]) * args.colScale[n] * args.rowScale[m]
                              : float(sum) * args.rowScale[m];
      std::memcpy(const_cast<uint8_t *>(c) + m * args.ldc + n * 4, &value, 4);
    }
}

} // namespace octet::x86
