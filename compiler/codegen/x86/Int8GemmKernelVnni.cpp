//===- Int8GemmKernelVnni.cpp ---------------------------------------------===//
#include "compiler/codegen/x86/Int8GemmKernelVnni.h"
#include "compiler/codegen/GemmBlocking.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>

namespace octet::x86 {
using namespace Xbyak;

namespace {
// The names are part of an AOT image's kernel table: keep them.
std::string kernelName(const Int8GemmKernelConfig &c) {
  std::string name = "gemm_u8s8_vnni_m" + std::to_string(c.rows) + "n" + std::to_string(c.nr) +
                     "c" + std::to_string(c.columns);
  if (c.kTailBytes)
    name += "_ktail" + std::to_string(c.kTailBytes);
  if (c.bPrefetchLines != 1)
    name += "_pf" + std::to_string(c.bPrefetchLines);
  if (c.bPrefetchToL1)
    name += "_pfl1";
  return name + int8EpilogueSuffix(c.epilogue);
}

std::string whyNotVnni() {
  if (CpuFeatures::host().supports(Isa::Avx512Vnni))
    return "";
  return "it lacks AVX-512 VNNI (host has: " + CpuFeatures::host().describe() + ")";
}
} // namespace

const Int8GemmKernelFamily &Int8GemmKernelVnni::family() {
  static const Int8GemmKernelFamily vnni{
      "jit_vnni",
      PackIsa::Avx512Vnni,
      Int8GemmSchedule::RegisterTile,
      4,
      gemm_blocking::panelWidth,
      GemmTileAvx512::maxRows,
      whyNotVnni,
      [](const Int8GemmKernelConfig &config) -> std::unique_ptr<Int8GemmKernel> {
        return std::make_unique<Int8GemmKernelVnni>(config);
      }};
  return vnni;
}

/// Where Int8GemmVnniArgs holds the pointer to `array`.
size_t Int8GemmKernelVnni::argsOffset(ColumnArray array) {
  switch (array) {
  case ColumnArray::Comp:
    return offsetof(Int8GemmVnniArgs, comp);
  case ColumnArray::Scale:
    return offsetof(Int8GemmVnniArgs, scale);
  case ColumnArray::Bias:
    return offsetof(Int8GemmVnniArgs, bias);
  case ColumnArray::RowScales:
    return offsetof(Int8GemmVnniArgs, xScale);
  case ColumnArray::Inputs:
    break;
  }
  return offsetof(Int8GemmVnniArgs, columns);
}

Int8GemmKernelVnni::Int8GemmKernelVnni(const Int8GemmKernelConfig &config)
    : Int8GemmKernel(kernelName(config), Isa::Avx512Vnni, 48 * 1024, config.rows, config.nr,
                     config.columns, config) {
  const int scratch =
      config.epilogue.elementwise ? config.epilogue.elementwise->scratchZmmCount() : 0;
  auto reject = [&](const std::string &why) {
    throw std::invalid_argument("Int8GemmKernelVnni " + name() + ": " + why);
  };
  if (config.nr != 16 && config.nr != 32 && config.nr != 48 && config.nr != 64)
    reject("panel width must be 16, 32, 48 or 64, got " + std::to_string(config.nr));
  if (config.columns < 1 || config.columns > config.nr)
    reject("valid columns must be in 1.." + std::to_string(config.nr));
  if (config.rows < 1 || config.rows > maxRows(config.nr, scratch))
    reject("rows must be in 1.." + std::to_string(maxRows(config.nr, scratch)) +
           " for this panel width and " + std::to_string(scratch) + " epilogue scratch zmm");
  if (config.kTailBytes < 0 || config.kTailBytes > 3)
    reject("K tail bytes must be K % 4");
  if (config.bPrefetchLines != 1 && config.bPrefetchLines != 2 && config.bPrefetchLines != 4)
    reject("B prefetch lines per K step must be 1, 2 or 4, got " +
           std::to_string(config.bPrefetchLines));
  if (std::string why = checkInt8Epilogue(config.epilogue); !why.empty())
    reject(why);
}

void Int8GemmKernelVnni::dotGroup(int step, bool tailGroup) {
  // Padded panel columns and K bytes are zero, so the B group loads unmasked.
  for (int j = 0; j < vectors(); ++j)
    vmovdqu32(zB(j), zword[regB_ + (step * nr_ + 16 * j) * 4]);
  const Xmm xA(zA_.getIdx());
  for (int i = 0; i < mr_; ++i) {
    if (tailGroup) {
      // Only the row's last K % 4 bytes: the bytes past them may be unmapped.
      vmovdqu8(xA | kKTail_ | T_z, aRow(i, step));
      vpbroadcastd(zA_, xA);
    } else {
      vpbroadcastd(zA_, aRow(i, step));
    }
    for (int j = 0; j < vectors(); ++j)
      vpdpbusd(acc(i, j), zA_, zB(j));
  }
}

void Int8GemmKernelVnni::afterUnrolledSteps() {
  // A model's weights come from L3 or DRAM (each was last read a layer ago),
  // and the hardware prefetchers follow the current B slice, not the next:
  // without this the first row tile of each slice waits on memory (BERT-base
  // GEMMs at M = 128: bench/gemm_u8s8_vnni's cold column).
  prefetchLines(regPrefetch_, config_.bPrefetchLines, config_.bPrefetchToL1);
  // In the last K block, one output row per unrolled step: its C lines for
  // writing and its residual lines, so that the epilogue neither waits on them
  // nor on a store's read for ownership (large M: C and the residual are
  // beyond L2, last touched a layer ago).
  Label rowsDone;
  test(regOutRowsLeft_, regOutRowsLeft_);
  jz(rowsDone, T_NEAR);
  const int cBytes = columns_ * outputBytes();
  auto rowLines = [&](const Reg64 &row, int bytes, bool forWrite) {
    for (int at = 0; at < bytes; at += 64)
      forWrite ? prefetchw(ptr[row + at]) : prefetcht0(ptr[row + at]);
    if (bytes % 64) // the row's end may lie in one more line
      forWrite ? prefetchw(ptr[row + bytes - 1]) : prefetcht0(ptr[row + bytes - 1]);
  };
  rowLines(regRow_, cBytes, true);
  add(regRow_, regLd_);
  if (config_.epilogue.residual) {
    rowLines(regOutResidual_, columns_ * 4, false);
    add(regOutResidual_, regOutLdr_);
  }
  dec(regOutRowsLeft_);
  L(rowsDone);
}

void Int8GemmKernelVnni::generate() {
  const int partialRow = nr_ * 4; // bytes
  preamble();
  Label tileTop;
  L(tileTop);
  loadTile(offsetof(Int8GemmVnniArgs, kGroups), offsetof(Int8GemmVnniArgs, b),
           offsetof(Int8GemmVnniArgs, a), offsetof(Int8GemmVnniArgs, lda), sizeof(uint8_t));
  mov(regPrefetch_, ptr[regArgs_ + offsetof(Int8GemmVnniArgs, bPrefetch)]);
  if (config_.epilogue.compensation) {
    // The first K block starts its sums from comp[n] (the compensation,
    // negated): loads in place of a subtraction per accumulator at the end.
    Label started;
    cmp(qword[regArgs_ + offsetof(Int8GemmVnniArgs, accumulate)], 0);
    jne(started, T_NEAR);
    mov(regVec_, ptr[regArgs_ + offsetof(Int8GemmVnniArgs, comp)]);
    for (int i = 0; i < mr_; ++i)
      for (int j = 0; j < vectors(); ++j)
        vmovdqa32(acc(i, j), zword[regVec_ + j * 64]);
    L(started);
  }
  // The output rows the K loop prefetches (afterUnrolledSteps): the last K
  // block's only.
  Label noOutputRows;
  xor_(regOutRowsLeft_, regOutRowsLeft_);
  cmp(qword[regArgs_ + offsetof(Int8GemmVnniArgs, last)], 0);
  je(noOutputRows, T_NEAR);
  mov(regOutRowsLeft_, mr_);
  loadRows(offsetof(Int8GemmVnniArgs, c), offsetof(Int8GemmVnniArgs, ldc), outputBytes());
  if (config_.epilogue.residual)
    loadRows(offsetof(Int8GemmVnniArgs, residual), offsetof(Int8GemmVnniArgs, ldr), sizeof(float),
             regOutResidual_, regOutLdr_);
  L(noOutputRows);
  // K loop over 4-byte groups, then the masked K tail group.
  kLoop();
  if (config_.kTailBytes) {
    Label noTail;
    cmp(qword[regArgs_ + offsetof(Int8GemmVnniArgs, kTail)], 0);
    je(noTail, T_NEAR);
    mov(regRow_.cvt32(), (1u << config_.kTailBytes) - 1);
    kmovw(kKTail_, regRow_.cvt32());
    dotGroup(0, true);
    L(noTail);
  }

  // Earlier K blocks left their s32 sums in `partial`.
  Label noAccumulate, lastBlock, done;
  cmp(qword[regArgs_ + offsetof(Int8GemmVnniArgs, accumulate)], 0);
  je(noAccumulate, T_NEAR);
  mov(regRow_, ptr[regArgs_ + offsetof(Int8GemmVnniArgs, partial)]);
  for (int i = 0; i < mr_; ++i)
    for (int j = 0; j < vectors(); ++j)
      vpaddd(acc(i, j), acc(i, j), zword[regRow_ + i * partialRow + j * 64]);
  L(noAccumulate);
  cmp(qword[regArgs_ + offsetof(Int8GemmVnniArgs, last)], 0);
  jne(lastBlock, T_NEAR);
  mov(regRow_, ptr[regArgs_ + offsetof(Int8GemmVnniArgs, partial)]);
  for (int i = 0; i < mr_; ++i)
    for (int j = 0; j < vectors(); ++j)
      vmovdqa32(zword[regRow_ + i * partialRow + j * 64], acc(i, j));
  jmp(done, T_NEAR);
  L(lastBlock);
  emitU8S8Epilogue(
      [&](ColumnArray array) {
        // comp (before the K loop), scale and bias share r12: each is used
        // up before the next.
        const Reg64 reg = array == ColumnArray::RowScales ? regXs_
                          : array == ColumnArray::Inputs  ? regColumns_
                                                          : regVec_;
        mov(reg, ptr[regArgs_ + argsOffset(array)]);
        return reg;
      },
      [&] {
        loadRows(offsetof(Int8GemmVnniArgs, residual), offsetof(Int8GemmVnniArgs, ldr),
                 sizeof(float));
      },
      /*sumsHoldComp=*/true);
  emitU8S8Store([&] {
    loadRows(offsetof(Int8GemmVnniArgs, c), offsetof(Int8GemmVnniArgs, ldc), outputBytes());
  });
  L(done);
  // On to the next row tile: the fields move in the caller's block.
  TileRun run;
  run.rows = {{offsetof(Int8GemmVnniArgs, a), offsetof(Int8GemmVnniArgs, lda), sizeof(uint8_t)},
              {offsetof(Int8GemmVnniArgs, c), offsetof(Int8GemmVnniArgs, ldc), outputBytes()}};
  if (config_.epilogue.residual)
    run.rows.push_back(
        {offsetof(Int8GemmVnniArgs, residual), offsetof(Int8GemmVnniArgs, ldr), sizeof(float)});
  run.blocks = {{offsetof(Int8GemmVnniArgs, xScale), mr_ * 4},
                {offsetof(Int8GemmVnniArgs, partial), mr_ * partialRow}};
  run.b = offsetof(Int8GemmVnniArgs, b), run.bPrefetch = offsetof(Int8GemmVnniArgs, bPrefetch);
  run.prefetchLeft = offsetof(Int8GemmVnniArgs, prefetchLeft);
  run.prefetchStep = offsetof(Int8GemmVnniArgs, prefetchStep);
  run.tiles = offsetof(Int8GemmVnniArgs, tiles);
  nextTile(run, tileTop);
  postamble();

  emitU8S8Constants();
}

} // namespace octet::x86
