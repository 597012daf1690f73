//===- GemmF32Avx512.cpp --------------------------------------------------===//
#include "compiler/codegen/x86/GemmF32Avx512.h"

#include <cassert>
#include <cstddef>
#include <utility>

namespace octet::x86 {
using namespace Xbyak;

namespace {
std::string kernelName(const GemmF32Avx512Config &c) {
  return "gemm_f32_avx512" + gemmF32KernelSuffix(c);
}

[[maybe_unused]] int scratchNeeded(const EpilogueEmitter *e) {
  return e ? e->scratchZmmCount() : 0;
}
} // namespace

GemmF32Avx512::GemmF32Avx512(const GemmF32Avx512Config &config)
    : GemmF32Avx512(config, kernelName(config), Isa::Avx512) {}

GemmF32Avx512::GemmF32Avx512(const GemmF32Avx512Config &config, std::string name, Isa isa)
    : GemmTileAvx512(std::move(name), isa, 32 * 1024, config.mr, config.nr, config.columns),
      config_(config) {
  assert((config.nr == 32 || config.nr == 48) && "panel width is 32 or 48");
  assert(config.columns >= 1 && config.columns <= config.nr);
  assert(config.mr >= 1 && config.mr <= maxRows(config.nr, scratchNeeded(config.elementwise)));
}

std::string gemmF32KernelSuffix(const GemmF32Avx512Config &c) {
  std::string suffix = "_m" + std::to_string(c.mr) + "n" + std::to_string(c.nr) + "c" +
                       std::to_string(c.columns) +
                       gemmEpilogueSuffix(c.bias, c.residual, c.elementwise);
  if (c.elementwise && c.elementwise->columnInputCount())
    suffix += "_columns" + std::to_string(c.elementwise->columnInputCount());
  if (c.elementwise && c.elementwise->fastGelu())
    suffix += "_fastgelu";
  if (c.bPrefetchLines)
    suffix += "_pf" + std::to_string(c.bPrefetchLines) + (c.bPrefetchToL1 ? "l1" : "");
  return suffix;
}

void GemmF32Avx512::afterUnrolledSteps() {
  prefetchLines(regPrefetch_, config_.bPrefetchLines, config_.bPrefetchToL1);
}

void GemmF32Avx512::kStep(int step) {
  // Padded panel columns are zero, so the B row is loaded unmasked.
  for (int j = 0; j < vectors(); ++j)
    vmovups(zB(j), zword[regB_ + (step * nr_ + 16 * j) * 4]);
  for (int i = 0; i < mr_; ++i) {
    vbroadcastss(zA_, aRow(i, step));
    for (int j = 0; j < vectors(); ++j)
      vfmadd231ps(acc(i, j), zB(j), zA_);
  }
}

void GemmF32Avx512::generate() {
  preamble();
  Label tileTop;
  L(tileTop);
  loadTile(offsetof(GemmF32Args, k), offsetof(GemmF32Args, b), offsetof(GemmF32Args, a),
           offsetof(GemmF32Args, lda), sizeof(float));
  if (config_.bPrefetchLines)
    mov(regPrefetch_, ptr[regArgs_ + offsetof(GemmF32Args, bPrefetch)]);
  kLoop();

  // Earlier K blocks left their partial sums in C.
  Label noAccumulate, noEpilogue;
  cmp(qword[regArgs_ + offsetof(GemmF32Args, accumulate)], 0);
  je(noAccumulate, T_NEAR);
  loadRows(offsetof(GemmF32Args, c), offsetof(GemmF32Args, ldc), sizeof(float));
  addRows();
  L(noAccumulate);

  // Epilogue, in oneDNN post-op order: bias, residual (binary), elementwise.
  if (config_.bias || config_.residual || config_.elementwise) {
    cmp(qword[regArgs_ + offsetof(GemmF32Args, last)], 0);
    je(noEpilogue, T_NEAR);
  }
  if (config_.bias) {
    mov(regBias_, ptr[regArgs_ + offsetof(GemmF32Args, bias)]);
    for (int i = 0; i < mr_; ++i)
      for (int j = 0; j < vectors(); ++j)
        vaddps(masked(acc(i, j), j), acc(i, j), zword[regBias_ + j * 64]);
  }
  if (config_.residual) {
    loadRows(offsetof(GemmF32Args, residual), offsetof(GemmF32Args, ldr), sizeof(float));
    addRows();
  }
  if (config_.elementwise && config_.elementwise->columnInputCount() > 0) {
    mov(regColumns_, ptr[regArgs_ + offsetof(GemmF32Args, columns)]);
    emitElementwise(*config_.elementwise, &regColumns_, config_.columnStride);
  } else if (config_.elementwise) {
    emitElementwise(*config_.elementwise);
  }
  L(noEpilogue);
  loadRows(offsetof(GemmF32Args, c), offsetof(GemmF32Args, ldc), sizeof(float));
  forEachRow([&](int i) {
    for (int j = 0; j < vectors(); ++j) {
      Address dst = zword[regRow_ + j * 64];
      if (isTail(j))
        vmovups(dst | kTail_, acc(i, j));
      else
        vmovups(dst, acc(i, j));
    }
  });
  // On to the next row tile: the fields move in the caller's block.
  TileRun run;
  run.rows = {{offsetof(GemmF32Args, a), offsetof(GemmF32Args, lda), sizeof(float)},
              {offsetof(GemmF32Args, c), offsetof(GemmF32Args, ldc), sizeof(float)}};
  if (config_.residual)
    run.rows.push_back(
        {offsetof(GemmF32Args, residual), offsetof(GemmF32Args, ldr), sizeof(float)});
  run.b = offsetof(GemmF32Args, b), run.bPrefetch = offsetof(GemmF32Args, bPrefetch);
  run.prefetchLeft = offsetof(GemmF32Args, prefetchLeft);
  run.prefetchStep = offsetof(GemmF32Args, prefetchStep);
  run.tiles = offsetof(GemmF32Args, tiles);
  nextTile(run, tileTop);
  postamble();

  if (config_.elementwise)
    emitElementwiseConstants(*config_.elementwise);
}

} // namespace octet::x86
