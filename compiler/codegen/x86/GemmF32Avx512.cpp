//===- GemmF32Avx512.cpp --------------------------------------------------===//
#include "compiler/codegen/x86/GemmF32Avx512.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstring>

namespace octet::x86 {
using namespace Xbyak;

namespace {
std::string kernelName(const GemmF32Avx512Config &c) {
  std::string name = "gemm_f32_avx512_m" + std::to_string(c.mr) + "n" +
                     std::to_string(c.nr) + "c" + std::to_string(c.columns);
  if (c.bias)
    name += "_bias";
  if (c.residual)
    name += "_residual";
  if (c.elementwise)
    name += "_elementwise";
  return name;
}

[[maybe_unused]] int scratchNeeded(const EpilogueEmitter *e) { return e ? e->scratchZmmCount() : 0; }
} // namespace

int GemmF32Avx512::maxRows(int nr, int epilogueScratch) {
  int vecs = nr / 16;
  int reserved = std::max(vecs + 1, epilogueScratch);
  return std::min(14, (32 - reserved) / vecs);
}

GemmF32Avx512::GemmF32Avx512(const GemmF32Avx512Config &config)
    : KernelGenerator(kernelName(config), Isa::Avx512, 32 * 1024), config_(config),
      accCount_(config.mr * vectors()), zA_(accCount_) {
  assert((config.nr == 32 || config.nr == 48) && "panel width is 32 or 48");
  assert(config.columns >= 1 && config.columns <= config.nr);
  assert(config.mr >= 1 &&
         config.mr <= maxRows(config.nr, scratchNeeded(config.elementwise)));
}

Zmm GemmF32Avx512::masked(const Zmm &z, int vec) const {
  return isTail(vec) ? z | kTail_ : z;
}

Address GemmF32Avx512::aRow(int row, int step) const {
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

void GemmF32Avx512::kStep(int step) {
  // Padded panel columns are zero, so the B row is loaded unmasked.
  for (int j = 0; j < vectors(); ++j)
    vmovups(zB(j), zword[regB_ + (step * config_.nr + 16 * j) * 4]);
  for (int i = 0; i < config_.mr; ++i) {
    vbroadcastss(zA_, aRow(i, step));
    for (int j = 0; j < vectors(); ++j)
      vfmadd231ps(acc(i, j), zB(j), zA_);
  }
}

void GemmF32Avx512::addRows(const Reg64 &base, const Reg64 &ld) {
  for (int i = 0; i < config_.mr; ++i) {
    for (int j = 0; j < vectors(); ++j)
      vaddps(masked(acc(i, j), j), acc(i, j), zword[base + j * 64]);
    if (i + 1 < config_.mr)
      add(base, ld);
  }
}

void GemmF32Avx512::storeRows() {
  mov(regRow_, ptr[regArgs_ + offsetof(GemmF32Args, c)]);
  mov(regLd_, ptr[regArgs_ + offsetof(GemmF32Args, ldc)]);
  shl(regLd_, 2);
  for (int i = 0; i < config_.mr; ++i) {
    for (int j = 0; j < vectors(); ++j) {
      Address dst = zword[regRow_ + j * 64];
      if (isTail(j))
        vmovups(dst | kTail_, acc(i, j));
      else
        vmovups(dst, acc(i, j));
    }
    if (i + 1 < config_.mr)
      add(regRow_, regLd_);
  }
}

void GemmF32Avx512::generate() {
  const int groups = (config_.mr + 3) / 4;
  preamble();
  mov(regK_, ptr[regArgs_ + offsetof(GemmF32Args, k)]);
  mov(regB_, ptr[regArgs_ + offsetof(GemmF32Args, b)]);
  mov(regLda_, ptr[regArgs_ + offsetof(GemmF32Args, lda)]);
  shl(regLda_, 2);
  lea(regLda3_, ptr[regLda_ + regLda_ * 2]);
  mov(regAGroup_[0], ptr[regArgs_ + offsetof(GemmF32Args, a)]);
  for (int g = 1; g < groups; ++g)
    lea(regAGroup_[g], ptr[regAGroup_[g - 1] + regLda_ * 4]);
  if (config_.columns % 16) {
    mov(regRow_.cvt32(), (1u << (config_.columns % 16)) - 1);
    kmovw(kTail_, regRow_.cvt32());
  }
  for (int r = 0; r < accCount_; ++r)
    vpxord(Zmm(r), Zmm(r), Zmm(r));

  // K loop: unrolled by kUnroll, then one step at a time for the rest.
  Label unrolled, remainder, remainderLoop, kDone;
  cmp(regK_, kUnroll);
  jl(remainder, T_NEAR);
  align(16);
  L(unrolled);
  for (int u = 0; u < kUnroll; ++u)
    kStep(u);
  add(regB_, kUnroll * config_.nr * 4);
  for (int g = 0; g < groups; ++g)
    add(regAGroup_[g], kUnroll * 4);
  sub(regK_, kUnroll);
  cmp(regK_, kUnroll);
  jge(unrolled, T_NEAR);
  L(remainder);
  test(regK_, regK_);
  jz(kDone, T_NEAR);
  L(remainderLoop);
  kStep(0);
  add(regB_, config_.nr * 4);
  for (int g = 0; g < groups; ++g)
    add(regAGroup_[g], 4);
  dec(regK_);
  jnz(remainderLoop, T_NEAR);
  L(kDone);

  // Earlier K blocks left their partial sums in C.
  Label noAccumulate, noEpilogue;
  cmp(qword[regArgs_ + offsetof(GemmF32Args, accumulate)], 0);
  je(noAccumulate, T_NEAR);
  mov(regRow_, ptr[regArgs_ + offsetof(GemmF32Args, c)]);
  mov(regLd_, ptr[regArgs_ + offsetof(GemmF32Args, ldc)]);
  shl(regLd_, 2);
  addRows(regRow_, regLd_);
  L(noAccumulate);

  // Epilogue, in oneDNN post-op order: bias, residual (binary), elementwise.
  if (config_.bias || config_.residual || config_.elementwise) {
    cmp(qword[regArgs_ + offsetof(GemmF32Args, last)], 0);
    je(noEpilogue, T_NEAR);
  }
  if (config_.bias) {
    mov(regBias_, ptr[regArgs_ + offsetof(GemmF32Args, bias)]);
    for (int i = 0; i < config_.mr; ++i)
      for (int j = 0; j < vectors(); ++j)
        vaddps(masked(acc(i, j), j), acc(i, j), zword[regBias_ + j * 64]);
  }
  if (config_.residual) {
    mov(regRow_, ptr[regArgs_ + offsetof(GemmF32Args, residual)]);
    mov(regLd_, ptr[regArgs_ + offsetof(GemmF32Args, ldr)]);
    shl(regLd_, 2);
    addRows(regRow_, regLd_);
  }
  if (const EpilogueEmitter *e = config_.elementwise) {
    std::vector<Zmm> scratch;
    for (int r = accCount_; r < accCount_ + e->scratchZmmCount(); ++r)
      scratch.push_back(Zmm(r));
    for (int r = 0; r < accCount_; ++r)
      e->emit(*this, Zmm(r), scratch, constants_);
  }
  L(noEpilogue);
  storeRows();
  postamble();

  if (config_.elementwise) {
    align(64);
    L(constants_);
    for (float f : config_.elementwise->constants()) {
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      dd(bits);
    }
  }
}

} // namespace octet::x86
