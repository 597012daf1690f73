//===- AttentionKernels.cpp -----------------------------------------------===//
#include "compiler/codegen/x86/AttentionKernels.h"
#include "compiler/codegen/x86/Transpose16.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace octet::x86 {

using Xbyak::Zmm;

namespace {
constexpr int kLanes = 16;
constexpr int kVecBytes = kLanes * sizeof(float);
constexpr uint8_t kCmpEqOq = 0x00;
} // namespace

//===----------------------------------------------------------------------===//
// GEMM tile
//===----------------------------------------------------------------------===//

void AttentionGemmArgs::setColumns(int64_t n) {
  columns = n;
  for (int v = 0; v < AttentionGemmKernel::kMaxVectors; ++v) {
    int64_t lanes = std::clamp<int64_t>(n - int64_t(v) * kLanes, 0, kLanes);
    columnMask[v] = uint16_t((uint32_t(1) << lanes) - 1);
  }
}

AttentionGemmKernel::AttentionGemmKernel(int mr, int nv)
    : KernelGenerator("attention_gemm_m" + std::to_string(mr) + "_v" + std::to_string(nv),
                      Isa::Avx512, 16 * 1024),
      mr_(mr), nv_(nv) {
  if (nv < 1 || nv > kMaxVectors || mr < 1 || mr > maxRows(nv))
    throw std::invalid_argument(name() + ": tile shape out of range");
}

Xbyak::Address rowDword(const Xbyak::Reg64 &base, const Xbyak::Reg64 &base4,
                        const Xbyak::Reg64 &ld, const Xbyak::Reg64 &ld3, int row) {
  const Xbyak::Reg64 &b = row < 4 ? base : base4;
  switch (row % 4) {
  case 0:
    return Xbyak::util::dword[b];
  case 1:
    return Xbyak::util::dword[b + ld];
  case 2:
    return Xbyak::util::dword[b + ld * 2];
  default:
    return Xbyak::util::dword[b + ld3];
  }
}

void emitPackedDot(Xbyak::CodeGenerator &g, const PackedDotFields &fields,
                   const std::function<void(const Zmm &acc, const Zmm &a, const Zmm &b)> &dot,
                   const std::function<void(int group)> &beforeStores,
                   const std::function<void(const Zmm &acc, int row, int tile)> &finish) {
  using Xbyak::Reg64;
  constexpr int kRows = 8, kGroups = 32 / kRows;
  const Reg64 rArgs = g.rdi, rA = g.rsi, rA4 = g.rdx, rLda = g.rcx, rLda3 = g.r8, rB0 = g.r9,
              rB1 = g.r10, rC = g.r11, rLdc = g.rax, rK = g.rbx, rPairs = g.rbp, rBPair = g.r12,
              rPairBytes = g.r13, rABase = g.r14, rCBase = g.r15;
  auto field = [&](size_t offset) { return g.qword[rArgs + int(offset)]; };
  auto acc = [](int row, int tile) { return Zmm(row * 2 + tile); };
  const Zmm zB0(16), zB1(17);
  auto zA = [](int row) { return Zmm(18 + row); };
  Xbyak::Label pairLoop, pairEnd, done;
  g.mov(rPairs, field(fields.colPairs));
  g.test(rPairs, rPairs);
  g.jle(done, g.T_NEAR);
  g.mov(rBPair, field(fields.b));
  g.mov(rCBase, field(fields.c));
  g.mov(rLdc, field(fields.ldc));
  g.mov(rLda, field(fields.lda));
  g.lea(rLda3, g.ptr[rLda + rLda * 2]);
  g.mov(rPairBytes, field(fields.kChunks));
  g.shl(rPairBytes, 11); // two column tiles of kChunks KiB
  g.L(pairLoop);
  g.mov(rABase, field(fields.a));
  g.mov(rC, rCBase);
  for (int group = 0; group < kGroups; ++group) {
    Xbyak::Label kLoop;
    for (int r = 0; r < kRows; ++r)
      for (int t = 0; t < 2; ++t)
        g.vxorps(acc(r, t), acc(r, t), acc(r, t));
    g.mov(rA, rABase);
    g.lea(rA4, g.ptr[rA + rLda * 4]);
    g.mov(rB0, rBPair);
    g.mov(rB1, rPairBytes);
    g.shr(rB1, 1);
    g.add(rB1, rBPair);
    g.mov(rK, field(fields.kChunks));
    g.shl(rK, 4); // 16 k steps per chunk
    // One k step per iteration: the step's row of both column tiles, then per
    // row one broadcast A group and two dot products.
    g.L(kLoop);
    g.vmovups(zB0, g.ptr[rB0]);
    g.vmovups(zB1, g.ptr[rB1]);
    for (int r = 0; r < kRows; ++r) {
      g.vpbroadcastd(zA(r), rowDword(rA, rA4, rLda, rLda3, r));
      dot(acc(r, 0), zA(r), zB0);
      dot(acc(r, 1), zA(r), zB1);
    }
    g.add(rA, 4);
    g.add(rA4, 4);
    g.add(rB0, 64);
    g.add(rB1, 64);
    g.dec(rK);
    g.jnz(kLoop, g.T_NEAR);
    beforeStores(group);
    for (int r = 0; r < kRows; ++r) {
      for (int t = 0; t < 2; ++t) {
        finish(acc(r, t), group * kRows + r, t);
        g.vmovups(g.ptr[rC + 64 * t], acc(r, t));
      }
      g.add(rC, rLdc);
    }
    if (group + 1 < kGroups) {
      if (fields.rowGroups != PackedDotFields::kAllRows) {
        g.cmp(field(fields.rowGroups), group + 1);
        g.je(pairEnd, g.T_NEAR);
      }
      g.lea(rABase, g.ptr[rABase + rLda * 8]);
    }
  }
  g.L(pairEnd);
  g.add(rCBase, 128);
  g.add(rBPair, rPairBytes);
  g.dec(rPairs);
  g.jnz(pairLoop, g.T_NEAR);
  g.L(done);
}

Xbyak::Address AttentionGemmKernel::aRow(int row) const { return rowDword(rA, rA4, rLda, rLda3, row); }

void AttentionGemmKernel::generate() {
  auto field = [&](size_t offset) { return qword[rArgs + int(offset)]; };
  Xbyak::Label loop, store;
  preamble();
  mov(rA, field(offsetof(AttentionGemmArgs, a)));
  mov(rB, field(offsetof(AttentionGemmArgs, b)));
  mov(rLda, field(offsetof(AttentionGemmArgs, lda)));
  shl(rLda, 2);
  lea(rLda3, ptr[rLda + rLda * 2]);
  lea(rA4, ptr[rA + rLda * 4]);
  mov(rLdb, field(offsetof(AttentionGemmArgs, ldb)));
  shl(rLdb, 2);
  mov(rK, field(offsetof(AttentionGemmArgs, k)));
  for (int v = 0; v < nv_; ++v)
    kmovw(Xbyak::Opmask(1 + v), word[rArgs + int(offsetof(AttentionGemmArgs, columnMask) + 2 * v)]);
  for (int r = 0; r < mr_; ++r)
    for (int v = 0; v < nv_; ++v)
      vxorps(acc(r, v), acc(r, v), acc(r, v));
  test(rK, rK);
  jle(store, T_NEAR);

  // One k per iteration: nv masked B loads, then per row one broadcast and nv FMAs.
  L(loop);
  for (int v = 0; v < nv_; ++v)
    vmovups(zB(v) | Xbyak::Opmask(1 + v) | T_z, ptr[rB + v * kVecBytes]);
  for (int r = 0; r < mr_; ++r) {
    vbroadcastss(zA, aRow(r));
    for (int v = 0; v < nv_; ++v)
      vfmadd231ps(acc(r, v), zB(v), zA);
  }
  add(rA, 4);
  add(rA4, 4);
  add(rB, rLdb);
  dec(rK);
  jnz(loop, T_NEAR);

  L(store);
  mov(rC, field(offsetof(AttentionGemmArgs, c)));
  mov(rLdc, field(offsetof(AttentionGemmArgs, ldc)));
  shl(rLdc, 2);
  for (int r = 0; r < mr_; ++r) {
    for (int v = 0; v < nv_; ++v)
      vmovups(ptr[rC + v * kVecBytes] | Xbyak::Opmask(1 + v), acc(r, v));
    if (r + 1 < mr_)
      add(rC, rLdc);
  }
  postamble();
}

void attentionGemmReference(const AttentionGemmArgs &args, int mr) {
  const int64_t columns = args.columns;
  for (int r = 0; r < mr; ++r) {
    float acc[AttentionGemmKernel::kMaxVectors * kLanes] = {};
    const float *a = args.a + r * args.lda;
    for (int64_t k = 0; k < args.k; ++k) {
      const float ak = a[k];
      const float *b = args.b + k * args.ldb;
      for (int64_t j = 0; j < columns; ++j)
        acc[j] += ak * b[j];
    }
    std::copy(acc, acc + columns, args.c + r * args.ldc);
  }
}

//===----------------------------------------------------------------------===//
// Softmax rows
//===----------------------------------------------------------------------===//

AttentionSoftmaxKernel::AttentionSoftmaxKernel(bool hasMask, bool weighted)
    : KernelGenerator(std::string(weighted ? "attention_softmax_weighted" : "attention_softmax") +
                          (hasMask ? "_mask" : ""),
                      Isa::Avx512, 16 * 1024),
      hasMask_(hasMask), weighted_(weighted),
      math_(*this, constants_, {zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23}, {k2, k3}) {
}

template <typename Body> void AttentionSoftmaxKernel::forEachVector(Body body) {
  Xbyak::Label loop, tail, done;
  xor_(rCol, rCol);
  mov(rI, rFull);
  test(rI, rI);
  jz(tail, T_NEAR);
  L(loop);
  body(false);
  add(rCol, kVecBytes);
  dec(rI);
  jnz(loop, T_NEAR);
  L(tail);
  test(rTail, rTail);
  jz(done, T_NEAR);
  body(true);
  L(done);
}

void AttentionSoftmaxKernel::generate() {
  auto field = [&](size_t offset) { return qword[rArgs + int(offset)]; };
  Xbyak::Label pairLoop, single, done;
  preamble();
  mov(rRows, field(offsetof(AttentionSoftmaxArgs, rows)));
  test(rRows, rRows);
  jle(done, T_NEAR);
  mov(rX, field(offsetof(AttentionSoftmaxArgs, x)));
  mov(rLdx, field(offsetof(AttentionSoftmaxArgs, ldx)));
  shl(rLdx, 2);
  if (hasMask_) {
    mov(rMask, field(offsetof(AttentionSoftmaxArgs, mask)));
    mov(rLdMask, field(offsetof(AttentionSoftmaxArgs, ldMask)));
    shl(rLdMask, 2);
  }
  vbroadcastss(zScale, dword[rArgs + int(offsetof(AttentionSoftmaxArgs, scale))]);
  if (weighted_) {
    mov(rWeights, field(offsetof(AttentionSoftmaxArgs, weights)));
    mov(rRowMax, field(offsetof(AttentionSoftmaxArgs, rowMax)));
  }
  // n = 16 · full + tail; kTail = (1 << tail) - 1.
  mov(rFull, field(offsetof(AttentionSoftmaxArgs, n)));
  mov(rTail, rFull);
  shr(rFull, 4);
  and_(rTail, kLanes - 1);
  mov(ecx, r12d);
  mov(eax, 1);
  shl(eax, cl);
  dec(eax);
  kmovw(kTail, eax);
  if (weighted_) // rcx is free once the tail mask is made
    mov(rRowInverse, field(offsetof(AttentionSoftmaxArgs, rowInverse)));

  // Rows two at a time: each row is a chain of reductions (max, sum, 1/sum)
  // that leaves the vector units idle; two rows' chains interleaved fill them.
  cmp(rRows, 2);
  jl(single, T_NEAR);
  L(pairLoop);
  emitRows(2);
  lea(rX, ptr[rX + rLdx * 2]);
  if (hasMask_)
    lea(rMask, ptr[rMask + rLdMask * 2]);
  if (weighted_) {
    add(rRowMax, 8);
    add(rRowInverse, 8);
  }
  sub(rRows, 2);
  cmp(rRows, 2);
  jge(pairLoop, T_NEAR);
  L(single);
  test(rRows, rRows);
  jz(done, T_NEAR);
  emitRows(1);
  L(done);
  postamble();
  constants_.emit();
}

void AttentionSoftmaxKernel::emitRows(int count) {
  // Row i at rowX[i] (+ rCol), its mask row at rowMask[i]; its own registers.
  const Xbyak::Reg64 rowX[2] = {rX, rX1}, rowMask[2] = {rMask, rMask1};
  if (count == 2) {
    lea(rX1, ptr[rX + rLdx]);
    if (hasMask_)
      lea(rMask1, ptr[rMask + rLdMask]);
  }
  auto load = [&](const Zmm &z, const Xbyak::Address &a, bool tail) {
    tail ? vmovups(z | kTail | T_z, a) : vmovups(z, a);
  };
  auto store = [&](const Xbyak::Address &a, const Zmm &z, bool tail) {
    vmovups(tail ? a | kTail : a, z);
  };
  auto accumulate = [&](const RowRegisters &r, bool tail, bool isMax) {
    Zmm dst = tail ? Zmm(r.acc.getIdx()) | kTail : r.acc;
    isMax ? vmaxps(dst, r.acc, r.val) : vaddps(dst, r.acc, r.val);
  };
  auto forRows = [&](const std::function<void(int, const RowRegisters &)> &body) {
    for (int i = 0; i < count; ++i)
      body(i, rows_[i]);
  };

  // Pass 1: z = scale x + mask, in place, and the row max.
  forRows([&](int, const RowRegisters &r) { math_.broadcast(r.acc, -INFINITY); });
  forEachVector([&](bool tail) {
    forRows([&](int i, const RowRegisters &r) {
      load(r.val, ptr[rowX[i] + rCol], tail);
      if (hasMask_) {
        load(r.tmp, ptr[rowMask[i] + rCol], tail);
        vfmadd213ps(r.val, zScale, r.tmp);
      } else {
        vmulps(r.val, r.val, zScale);
      }
      store(ptr[rowX[i] + rCol], r.val, tail);
      accumulate(r, tail, true);
    });
  });
  forRows([&](int, const RowRegisters &r) {
    math_.reduceMax(r.max, r.acc);
    // An all -inf row: exp(-inf - (-FLT_MAX)) = 0 instead of NaN.
    vmaxps(r.max, r.max, constants_.f32(-FLT_MAX));
  });

  // Pass 2: e = exp(z - max) and its sum; in place e, or (weighted) e times
  // the key's weight and the largest of those.
  forRows([&](int, const RowRegisters &r) {
    vxorps(r.acc, r.acc, r.acc);
    if (weighted_)
      vpxord(r.weightedMax, r.weightedMax, r.weightedMax);
  });
  forEachVector([&](bool tail) {
    forRows([&](int i, const RowRegisters &r) {
      load(r.val, ptr[rowX[i] + rCol], tail);
      vsubps(r.val, r.val, r.max);
      // Weighted (the int8 path): the row is quantized to 8 bits of its
      // largest weighted value, so expFast's 1e-5 moves a code only near a tie.
      if (weighted_)
        math_.expFast(r.val, r.val);
      else
        math_.exp(r.val, r.val);
      accumulate(r, tail, false);
      if (weighted_) {
        load(r.tmp, ptr[rWeights + rCol], tail);
        vmulps(r.val, r.val, r.tmp);
        // Under kTail: the masked lanes may hold inf · 0.
        vpmaxud(tail ? r.weightedMax | kTail : r.weightedMax, r.weightedMax, r.val);
      }
      store(ptr[rowX[i] + rCol], r.val, tail);
    });
  });
  forRows([&](int i, const RowRegisters &r) {
    math_.reduceSum(r.inv, r.acc);
    vcmpps(r.zero, r.inv, constants_.f32(0.0f), kCmpEqOq);
    math_.reciprocalOfUniform(r.inv, r.inv);
    vxorps(r.inv | r.zero, r.inv, r.inv); // sum 0 (all -inf): zeros, not 0 · inf
    if (weighted_) {
      math_.reduceMaxBits(r.weightedMax, r.weightedMax);
      vmovss(dword[rRowMax + 4 * i], Xbyak::Xmm(r.weightedMax.getIdx()));
      vmovss(dword[rRowInverse + 4 * i], Xbyak::Xmm(r.inv.getIdx()));
    }
  });
  if (weighted_)
    return; // the quantizing pack applies 1/sum (to the row's scale)

  // Pass 3: normalize.
  forEachVector([&](bool tail) {
    forRows([&](int i, const RowRegisters &r) {
      load(r.val, ptr[rowX[i] + rCol], tail);
      vmulps(r.val, r.val, r.inv);
      store(ptr[rowX[i] + rCol], r.val, tail);
    });
  });
}

void attentionSoftmaxReference(const AttentionSoftmaxArgs &args) {
  for (int64_t r = 0; r < args.rows; ++r) {
    float *x = args.x + r * args.ldx;
    const float *mask = args.mask ? args.mask + r * args.ldMask : nullptr;
    float max = -FLT_MAX; // an all -inf row: exp(-inf + FLT_MAX) = 0, not NaN
    for (int64_t j = 0; j < args.n; ++j) {
      x[j] = args.scale * x[j] + (mask ? mask[j] : 0.0f);
      max = std::max(max, x[j]);
    }
    float sum = 0;
    for (int64_t j = 0; j < args.n; ++j) {
      x[j] = std::exp(x[j] - max);
      sum += x[j];
    }
    // As the kernel: a NaN sum gives a NaN 1/sum.
    const float inv = sum == 0 ? 0.0f : 1.0f / sum;
    if (args.weights) {
      uint32_t maxBits = 0;
      for (int64_t j = 0; j < args.n; ++j) {
        x[j] *= args.weights[j];
        uint32_t bits;
        std::memcpy(&bits, &x[j], 4);
        maxBits = std::max(maxBits, bits);
      }
      std::memcpy(&args.rowMax[r], &maxBits, 4);
      args.rowInverse[r] = inv;
      continue;
    }
    for (int64_t j = 0; j < args.n; ++j)
      x[j] *= inv;
  }
}

//===----------------------------------------------------------------------===//
// Kᵀ packing
//===----------------------------------------------------------------------===//

AttentionKeysKernel::AttentionKeysKernel() : KernelGenerator("attention_keys", Isa::Avx512, 4 * 1024) {}

void AttentionKeysKernel::generate() {
  auto field = [&](size_t offset) { return qword[rArgs + int(offset)]; };
  Xbyak::Label groupLoop, dimLoop, dimDone, done;
  preamble();
  mov(rSrc, field(offsetof(AttentionKeysArgs, src)));
  mov(rLds, field(offsetof(AttentionKeysArgs, lds)));
  shl(rLds, 2);
  mov(rRows, field(offsetof(AttentionKeysArgs, rows)));
  mov(rCols, field(offsetof(AttentionKeysArgs, cols)));
  mov(rDst, field(offsetof(AttentionKeysArgs, dst)));
  // rPanel = bytes of one 64-key panel (64 cols floats).
  mov(rPanel, rCols);
  shl(rPanel, 8);
  xor_(rRow, rRow);
  L(groupLoop);
  // Groups of 16 keys up to the last panel's end (keys past rows are zeros).
  mov(rTmp, rRows);
  add(rTmp, 63);
  and_(rTmp, ~int64_t(63));
  cmp(rRow, rTmp);
  jge(done, T_NEAR);
  emitRemaining(*this, rValid, rRows, rRow, 16);
  // The next group's rows, a page apart, while this group is transposed.
  mov(rTmp, rLds);
  shl(rTmp, 4);
  add(rTmp, rSrc);
  emitPrefetchRows(*this, rTmp, rLds, 16, 4);
  // rOut = dst + (j0 / 64) panel + (j0 % 64) floats: column d of the group
  // goes to rOut + d · 256.
  mov(rOut, rRow);
  shr(rOut, 6);
  imul(rOut, rPanel);
  add(rOut, rDst);
  mov(rTmp, rRow);
  and_(rTmp, 63);
  lea(rOut, ptr[rOut + rTmp * 4]);
  xor_(rCol, rCol);
  L(dimLoop);
  cmp(rCol, rCols);
  jge(dimDone, T_NEAR);
  {
    // rLanes = min(cols - d0, 16); k1 = its lanes.
    Xbyak::Label full;
    mov(rLanes, rCols);
    sub(rLanes, rCol);
    cmp(rLanes, 16);
    jle(full);
    mov(rLanes, 16);
    L(full);
    mov(rTmp.cvt32(), 0xffff);
    bzhi(rTmp.cvt32(), rTmp.cvt32(), rLanes.cvt32());
    kmovw(k1, rTmp.cvt32());
  }
  lea(rTmp, ptr[rSrc + rCol * 4]);
  emitLoadRows16(*this, rTmp, rLds, rValid,
                 [&](int i) { vmovups(Zmm(i) | k1 | T_z, ptr[rTmp]); });
  // Dim d0 + j (only those below cols) to rOut + (d0 + j) · 256.
  mov(rTmp, rCol);
  shl(rTmp, 8);
  add(rTmp, rOut);
  emitTranspose16x16(*this, [&](int j, const Zmm &z) {
    Xbyak::Label skip;
    cmp(rLanes, j);
    jle(skip);
    vmovups(ptr[rTmp + j * 256], z);
    L(skip);
  });
  add(rCol, 16);
  jmp(dimLoop, T_NEAR);
  L(dimDone);
  mov(rTmp, rLds);
  shl(rTmp, 4);
  add(rSrc, rTmp);
  add(rRow, 16);
  jmp(groupLoop, T_NEAR);
  L(done);
  postamble();
}

void attentionKeysReference(const AttentionKeysArgs &a) {
  const int64_t panels = (a.rows + 63) / 64;
  for (int64_t j = 0; j < panels * 64; ++j) {
    float *panel = a.dst + (j / 64) * 64 * a.cols + j % 64;
    for (int64_t d = 0; d < a.cols; ++d)
      panel[d * 64] = j < a.rows ? a.src[j * a.lds + d] : 0.0f;
  }
}

} // namespace octet::x86
