//===- GemmTileAvx512.cpp -------------------------------------------------===//
#include "compiler/codegen/x86/GemmTileAvx512.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace octet::x86 {
using namespace Xbyak;

std::string gemmEpilogueSuffix(bool bias, bool residual, bool elementwise) {
  std::string suffix;
  if (bias)
    suffix += "_bias";
  if (residual)
    suffix += "_residual";
  if (elementwise)
    suffix += "_elementwise";
  return suffix;
}

int GemmTileAvx512::maxRows(int nr, int epilogueScratch) {
  int vecs = std::max(1, nr / 16);
  int reserved = std::max(vecs + 1, epilogueScratch);
  return std::max(0, std::min(14, (32 - reserved) / vecs));
}

GemmTileAvx512::GemmTileAvx512(std::string name, Isa isa, size_t maxCodeBytes, int mr, int nr,
                               int columns)
    : KernelGenerator(std::move(name), isa, maxCodeBytes), mr_(mr), nr_(nr), columns_(columns),
      accCount_(mr * vectors()), zA_(accCount_) {}

Zmm GemmTileAvx512::masked(const Zmm &z, int vec) const { return isTail(vec) ? z | kTail_ : z; }

Address GemmTileAvx512::aRow(int row, int step) const {
  const Reg64 &group = regAGroup_[row / 4];
  int disp = step * 4;
  switch (row % 4) {
  case 0:
    return ptr[group + disp];
  case 1:
    return ptr[group + regLda_ + disp];
  case 2:
    return ptr[group + regLda_ * 2 + disp];
  default:
    return ptr[group + regLda3_ + disp];
  }
}

void GemmTileAvx512::scaleToBytes(const Reg64 &stride, int elementBytes) {
  if (elementBytes == 4)
    shl(stride, 2);
}

void GemmTileAvx512::loadTile(size_t kOffset, size_t bOffset, size_t aOffset, size_t ldaOffset,
                              int aElementBytes) {
  mov(regK_, ptr[regArgs_ + kOffset]);
  mov(regB_, ptr[regArgs_ + bOffset]);
  mov(regLda_, ptr[regArgs_ + ldaOffset]);
  scaleToBytes(regLda_, aElementBytes);
  lea(regLda3_, ptr[regLda_ + regLda_ * 2]);
  mov(regAGroup_[0], ptr[regArgs_ + aOffset]);
  for (int g = 1; g < (mr_ + 3) / 4; ++g)
    lea(regAGroup_[g], ptr[regAGroup_[g - 1] + regLda_ * 4]);
  if (columns_ % 16) {
    mov(regRow_.cvt32(), (1u << (columns_ % 16)) - 1);
    kmovw(kTail_, regRow_.cvt32());
  }
  for (int r = 0; r < accCount_; ++r)
    vpxord(Zmm(r), Zmm(r), Zmm(r));
}

void GemmTileAvx512::nextTile(const TileRun &run, const Label &tileTop) {
  const auto field = [&](size_t offset) { return qword[regArgs_ + offset]; };
  for (const TileRun::Rows &rows : run.rows) {
    mov(rcx, field(rows.ld));
    if (mr_ * rows.elementBytes != 1)
      imul(rcx, rcx, mr_ * rows.elementBytes);
    add(field(rows.pointer), rcx);
  }
  for (const auto &[pointer, bytes] : run.blocks) {
    Label isNull;
    cmp(field(pointer), 0);
    je(isNull);
    add(field(pointer), bytes);
    L(isNull);
  }
  Label ownSlice;
  mov(rax, field(run.prefetchLeft));
  mov(rdx, field(run.prefetchStep));
  sub(rax, rdx);
  mov(field(run.prefetchLeft), rax);
  mov(rcx, field(run.b));
  test(rax, rax);
  jle(ownSlice);
  mov(rcx, field(run.bPrefetch));
  add(rcx, rdx);
  L(ownSlice);
  mov(field(run.bPrefetch), rcx);
  dec(field(run.tiles));
  jg(tileTop, T_NEAR);
}

void GemmTileAvx512::kLoop() {
  Label unrolled, remainder, remainderLoop, kDone;
  cmp(regK_, kUnroll);
  jl(remainder, T_NEAR);
  align(16);
  L(unrolled);
  for (int u = 0; u < kUnroll; ++u)
    kStep(u);
  afterUnrolledSteps();
  advance(kUnroll);
  sub(regK_, kUnroll);
  cmp(regK_, kUnroll);
  jge(unrolled, T_NEAR);
  L(remainder);
  test(regK_, regK_);
  jz(kDone, T_NEAR);
  L(remainderLoop);
  kStep(0);
  advance(1);
  dec(regK_);
  jnz(remainderLoop, T_NEAR);
  L(kDone);
}

void GemmTileAvx512::prefetchLines(const Xbyak::Reg64 &at, int lines, bool toL1) {
  for (int line = 0; line < lines; ++line) {
    if (toL1)
      prefetcht0(ptr[at + 64 * line]);
    else
      prefetcht1(ptr[at + 64 * line]);
  }
  if (lines > 0)
    add(at, 64 * lines);
}

void GemmTileAvx512::advance(int steps) {
  add(regB_, steps * nr_ * 4);
  for (int g = 0; g < (mr_ + 3) / 4; ++g)
    add(regAGroup_[g], steps * 4);
}

void GemmTileAvx512::loadRows(size_t rowsOffset, size_t ldOffset, int elementBytes,
                              const Reg64 &row, const Reg64 &ld) {
  mov(row, ptr[regArgs_ + rowsOffset]);
  mov(ld, ptr[regArgs_ + ldOffset]);
  scaleToBytes(ld, elementBytes);
}

void GemmTileAvx512::addRows() {
  forEachRow([&](int i) {
    for (int j = 0; j < vectors(); ++j)
      vaddps(masked(acc(i, j), j), acc(i, j), zword[regRow_ + j * 64]);
  });
}

void GemmTileAvx512::emitElementwise(const EpilogueEmitter &e, const Reg64 *columns,
                                     int64_t columnStride) {
  if (e.columnInputCount() > 0 && !columns)
    throw std::logic_error(name() + ": the epilogue reads per-column inputs the GEMM lacks");
  std::vector<Zmm> scratch;
  for (int r = accCount_; r < accCount_ + e.scratchZmmCount(); ++r)
    scratch.push_back(Zmm(r));
  for (int r = 0; r < accCount_; ++r) {
    const int vec = r % vectors(); // accumulators are row-major
    e.emit(*this, Zmm(r), scratch, constants_,
           [&](int c) { return zword[*columns + int(c * columnStride + vec * 64)]; });
  }
}

void GemmTileAvx512::emitElementwiseConstants(const EpilogueEmitter &e) {
  align(64);
  L(constants_);
  for (float f : e.constants()) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    dd(bits);
  }
}

} // namespace octet::x86
