//===- Int8GemmKernelAmx.cpp ----------------------------------------------===//
#include "compiler/codegen/x86/Int8GemmKernelAmx.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>

namespace octet::x86 {
using namespace Xbyak;

namespace {
constexpr int64_t kChunkBBytes = kAmxChunkBytes;
constexpr int kRowTileSumsBytes = 16 * kAmxSumsStride;
constexpr int kRowTileStageBytes = 16 * kAmxKChunk;
} // namespace

// ---------------------------------------------------------------------------
// Packing

int64_t amxPackedOffset(int64_t k, int64_t n, int64_t kTotal) {
  // The offset does not depend on the total N.
  return packedWeightLayout(PackIsa::Amx, kTotal, n + 1, kAmxPanel).offset(k, n);
}

// ---------------------------------------------------------------------------
// Tiles

AmxGemmTiles::AmxGemmTiles(int rows, int columns)
    : rowTiles((rows + 15) / 16), colTiles((columns + 15) / 16), rows_(rows) {}

AmxTileConfig AmxGemmTiles::config() const {
  // Both column tiles always: the configuration then depends on the rows
  // only, and a thread moving to the narrow last panel need not reload it.
  AmxTileConfig c;
  for (int r = 0; r < rowTiles; ++r) {
    c.rows[a(r)] = uint8_t(tileRows(r)), c.colsb[a(r)] = kAmxKChunk;
    for (int col = 0; col < 2; ++col)
      c.rows[acc(r, col)] = uint8_t(tileRows(r)), c.colsb[acc(r, col)] = 64;
  }
  for (int col = 0; col < 2; ++col)
    c.rows[b(col)] = kAmxKChunk / 4, c.colsb[b(col)] = 64;
  return c;
}

// ---------------------------------------------------------------------------
// Micro-kernel

namespace {
// The names are part of an AOT image's kernel table: keep them.
std::string kernelName(const Int8GemmKernelConfig &c) {
  std::string name = "gemm_u8s8_amx_m" + std::to_string(c.rows) + "c" + std::to_string(c.columns);
  if (c.kTailBytes)
    name += "_ktail" + std::to_string(c.kTailBytes);
  return name + int8EpilogueSuffix(c.epilogue);
}

int amxPanelWidth(int64_t) { return kAmxPanel; }
int amxRows(int, int) { return kAmxBlockRows; }
std::string whyNotAmx() {
  std::string why;
  return amxUsable(&why) ? "" : why;
}
} // namespace

const Int8GemmKernelFamily &Int8GemmKernelAmx::family() {
  static const Int8GemmKernelFamily amx{
      "jit_amx",
      PackIsa::Amx,
      Int8GemmSchedule::AmxTiles,
      kAmxKChunk,
      amxPanelWidth,
      amxRows,
      whyNotAmx,
      [](const Int8GemmKernelConfig &config) -> std::unique_ptr<Int8GemmKernel> {
        return std::make_unique<Int8GemmKernelAmx>(config);
      }};
  return amx;
}

// The epilogue walks one row at a time (GemmTileAvx512 with MR = 1 over a
// 32-column panel): the sums of up to 32 rows are in memory, not registers.
Int8GemmKernelAmx::Int8GemmKernelAmx(const Int8GemmKernelConfig &config)
    : Int8GemmKernel(kernelName(config), Isa::AmxInt8, 16 * 1024, 1, kAmxPanel,
                     std::clamp(config.columns, 1, kAmxPanel), config),
      tiles_(config.rows, config.columns) {
  auto fail = [&](const std::string &why) {
    throw std::invalid_argument("Int8GemmKernelAmx " + name() + ": " + why);
  };
  if (config.rows < 1 || config.rows > kAmxBlockRows)
    fail("rows must be in 1.." + std::to_string(kAmxBlockRows));
  if (config.columns < 1 || config.columns > kAmxPanel)
    fail("valid columns must be in 1.." + std::to_string(kAmxPanel));
  if (config.kTailBytes < 0 || config.kTailBytes >= kAmxKChunk)
    fail("K tail bytes must be K % 64");
  const int scratch =
      config.epilogue.elementwise ? config.epilogue.elementwise->scratchZmmCount() : 0;
  if (vectors() + scratch > 32)
    fail("the elementwise epilogue asks " + std::to_string(scratch) + " scratch zmm, more than " +
         std::to_string(32 - vectors()) + " free");
  if (std::string why = checkInt8Epilogue(config.epilogue); !why.empty())
    fail(why);
}

void Int8GemmKernelAmx::dotChunk(const Reg64 &aBase, int64_t aRowTileOffset, const Reg64 &aStride) {
  // A0, B0, (B1), dots of row tile 0; A1, dots of row tile 1: each tdpbusd's
  // operands are loaded as late as possible.
  for (int r = 0; r < tiles_.rowTiles; ++r) {
    const Reg64 &base = r == 0 || aRowTileOffset ? aBase : regA1_;
    tileloadd(Tmm(AmxGemmTiles::a(r)), ptr[base + aStride + int(r * aRowTileOffset)]);
    if (r == 0)
      for (int c = 0; c < tiles_.colTiles; ++c)
        tileloadd(Tmm(AmxGemmTiles::b(c)), ptr[regB_ + regStride64_ + int(c * kAmxBTileBytes)]);
    for (int c = 0; c < tiles_.colTiles; ++c)
      tdpbusd(Tmm(AmxGemmTiles::acc(r, c)), Tmm(AmxGemmTiles::a(r)), Tmm(AmxGemmTiles::b(c)));
  }
}

void Int8GemmKernelAmx::prefetchNextAChunk() {
  // The A rows' next 64 bytes into L1 while this chunk's tiles compute: A is
  // reused from L2 by every panel of a chunk (B streams through L1 between
  // uses), and a tileloadd that misses L1 stalls the tdpbusd behind it
  // (bench/gemm_u8s8_amx: 8-18% faster on BERT's shapes; prefetching B into
  // L1 too was slower). Past the row's end a prefetch does not fault.
  lea(regPrefetch_, ptr[regA_ + kAmxKChunk]);
  for (int row = 0; row < config_.rows; row += 4) {
    if (row)
      lea(regPrefetch_, ptr[regPrefetch_ + regLda_ * 4]);
    prefetcht0(ptr[regPrefetch_]);
    if (row + 1 < config_.rows)
      prefetcht0(ptr[regPrefetch_ + regLda_]);
    if (row + 2 < config_.rows)
      prefetcht0(ptr[regPrefetch_ + regLda_ * 2]);
    if (row + 3 < config_.rows)
      prefetcht0(ptr[regPrefetch_ + regPrefetchLda3_]);
  }
}

void Int8GemmKernelAmx::prefetchNextPanelChunk() {
  // The same K chunk of the thread's next panel into L2 while this one
  // computes (bNext: the driver sets it where B streams from L3 on every
  // pass, few M blocks per thread; null elsewhere, where it only cost).
  Label skip;
  test(regPrefetchB_, regPrefetchB_);
  jz(skip, T_NEAR);
  for (int line = 0; line < int(kChunkBBytes / 64); ++line)
    prefetcht1(ptr[regPrefetchB_ + line * 64]);
  add(regPrefetchB_, int(kChunkBBytes));
  L(skip);
}

void Int8GemmKernelAmx::stageKTail() {
  // Each row's K % 64 tail bytes, zero-extended to 64: masked bytes are not
  // read (no fault past the row), so A needs no padding.
  mov(regStage_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, aTail)]);
  mov(regRow_, (uint64_t(1) << config_.kTailBytes) - 1);
  kmovq(kKTail_, regRow_);
  for (int r = 0; r < tiles_.rowTiles; ++r) {
    mov(regRow_, r == 0 ? regA_ : regA1_);
    for (int i = 0; i < tiles_.tileRows(r); ++i) {
      vmovdqu8(zmm0 | kKTail_ | T_z, ptr[regRow_]);
      vmovdqu8(ptr[regStage_ + r * kRowTileStageBytes + i * kAmxKChunk], zmm0);
      if (i + 1 < tiles_.tileRows(r))
        add(regRow_, regLda_);
    }
  }
  dotChunk(regStage_, kRowTileStageBytes, regStride64_);
}

void Int8GemmKernelAmx::rowEpilogue() {
  const Int8EpilogueConfig &e = config_.epilogue;
  mov(regSums_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, sums)]);
  if (e.compensation)
    mov(regComp_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, comp)]);
  mov(regScale_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, scale)]);
  if (e.bias)
    mov(regBias_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, bias)]);
  if (e.xScalePerRow)
    mov(regRowScale_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, xScale)]);
  if (e.elementwise && e.elementwise->columnInputCount() > 0)
    mov(regColumns_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, columns)]);
  mov(regC_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, c)]);
  mov(regLdc_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, ldc)]);
  scaleToBytes(regLdc_, e.output == QuantOutput::F32 ? 4 : 1);
  if (e.residual) {
    mov(regResidual_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, residual)]);
    mov(regLdr_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, ldr)]);
    scaleToBytes(regLdr_, sizeof(float));
  }
  if (columns_ % 16) {
    mov(regRow_.cvt32(), (1u << (columns_ % 16)) - 1);
    kmovw(kTail_, regRow_.cvt32());
  }
  mov(regRowsLeft_.cvt32(), config_.rows);
  Label row;
  align(16);
  L(row);
  for (int j = 0; j < vectors(); ++j)
    vmovdqa32(acc(0, j), zword[regSums_ + j * 64]);
  emitU8S8Epilogue(
      [&](ColumnArray array) {
        switch (array) {
        case ColumnArray::Comp:
          return regComp_;
        case ColumnArray::Scale:
          return regScale_;
        case ColumnArray::Bias:
          return regBias_;
        case ColumnArray::RowScales:
          return regRowScale_;
        case ColumnArray::Inputs:
          break;
        }
        return regColumns_;
      },
      [&] { mov(regRow_, regResidual_); }, false);
  emitU8S8Store([&] { mov(regRow_, regC_); });
  add(regSums_, kAmxSumsStride);
  add(regC_, regLdc_);
  if (e.residual)
    add(regResidual_, regLdr_);
  if (e.xScalePerRow)
    add(regRowScale_, int(sizeof(float)));
  dec(regRowsLeft_.cvt32());
  jnz(row, T_NEAR);
}

void Int8GemmKernelAmx::generate() {
  preamble();
  Label epilogue, configured, kLoop, kDone, kept;
  cmp(qword[regArgs_ + offsetof(Int8GemmAmxArgs, sumsReady)], 0);
  jne(epilogue, T_NEAR);
  cmp(qword[regArgs_ + offsetof(Int8GemmAmxArgs, configure)], 0);
  je(configured, T_NEAR);
  ldtilecfg(ptr[rip + tileConfig_]);
  L(configured);
  for (int r = 0; r < tiles_.rowTiles; ++r)
    for (int c = 0; c < tiles_.colTiles; ++c)
      tilezero(Tmm(AmxGemmTiles::acc(r, c)));
  mov(regLda_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, lda)]);
  mov(regStride64_.cvt32(), kAmxKChunk);
  mov(regA_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, a)]);
  if (tiles_.rowTiles == 2) {
    lea(regA1_, ptr[regA_ + regLda_ * 8]);
    lea(regA1_, ptr[regA1_ + regLda_ * 8]);
  }
  mov(regB_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, b)]);
  mov(regK_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, kChunks)]);
  test(regK_, regK_);
  jz(kDone, T_NEAR);
  lea(regPrefetchLda3_, ptr[regLda_ + regLda_ * 2]);
  mov(regPrefetchB_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, bNext)]);
  align(16);
  L(kLoop);
  prefetchNextAChunk();
  prefetchNextPanelChunk();
  dotChunk(regA_, 0, regLda_);
  add(regA_, kAmxKChunk);
  if (tiles_.rowTiles == 2)
    add(regA1_, kAmxKChunk);
  add(regB_, int(kChunkBBytes));
  dec(regK_);
  jnz(kLoop, T_NEAR);
  L(kDone);
  if (config_.kTailBytes)
    stageKTail();
  // Sums as s32 rows of 32 (128 bytes); r11 is the tilestored stride.
  mov(regSums_, ptr[regArgs_ + offsetof(Int8GemmAmxArgs, sums)]);
  mov(r11.cvt32(), kAmxSumsStride);
  for (int r = 0; r < tiles_.rowTiles; ++r)
    for (int c = 0; c < tiles_.colTiles; ++c)
      tilestored(ptr[regSums_ + r11 + r * kRowTileSumsBytes + c * 64],
                 Tmm(AmxGemmTiles::acc(r, c)));
  cmp(qword[regArgs_ + offsetof(Int8GemmAmxArgs, release)], 0);
  je(kept, T_NEAR);
  tilerelease();
  L(kept);
  L(epilogue);
  rowEpilogue();
  postamble();

  align(64);
  L(tileConfig_);
  for (uint8_t byte : tiles_.config().bytes())
    db(byte);
  emitU8S8Constants();
}

// ---------------------------------------------------------------------------
// Emulator

void emulateInt8GemmAmxTiles(const Int8GemmKernelConfig &config, const Int8GemmAmxArgs &args,
                             AmxTileEmulator &amx) {
  const AmxGemmTiles tiles(config.rows, config.columns);
  if (args.configure)
    amx.ldtilecfg(tiles.config().bytes());
  for (int r = 0; r < tiles.rowTiles; ++r)
    for (int c = 0; c < tiles.colTiles; ++c)
      amx.tilezero(AmxGemmTiles::acc(r, c));
  auto dotChunk = [&](const uint8_t *a, int64_t aRowTileOffset, int64_t aStride, const int8_t *b) {
    for (int r = 0; r < tiles.rowTiles; ++r) {
      amx.tileloadd(AmxGemmTiles::a(r), a + r * aRowTileOffset, aStride);
      if (r == 0)
        for (int c = 0; c < tiles.colTiles; ++c)
          amx.tileloadd(AmxGemmTiles::b(c), b + c * kAmxBTileBytes, 64);
      for (int c = 0; c < tiles.colTiles; ++c)
        amx.tdpbusd(AmxGemmTiles::acc(r, c), AmxGemmTiles::a(r), AmxGemmTiles::b(c));
    }
  };
  for (int64_t chunk = 0; chunk < args.kChunks; ++chunk)
    dotChunk(args.a + chunk * kAmxKChunk, 16 * args.lda, args.lda, args.b + chunk * kChunkBBytes);
  if (config.kTailBytes) {
    const uint8_t *tail = args.a + args.kChunks * kAmxKChunk;
    for (int r = 0; r < tiles.rowTiles; ++r)
      for (int i = 0; i < tiles.tileRows(r); ++i) {
        uint8_t *stage = args.aTail + r * kRowTileStageBytes + i * kAmxKChunk;
        std::memset(stage, 0, kAmxKChunk);
        std::memcpy(stage, tail + (16 * r + i) * args.lda, config.kTailBytes);
      }
    dotChunk(args.aTail, kRowTileStageBytes, kAmxKChunk, args.b + args.kChunks * kChunkBBytes);
  }
  for (int r = 0; r < tiles.rowTiles; ++r)
    for (int c = 0; c < tiles.colTiles; ++c)
      amx.tilestored(reinterpret_cast<uint8_t *>(args.sums) + r * kRowTileSumsBytes + c * 64,
                     kAmxSumsStride, AmxGemmTiles::acc(r, c));
  if (args.release)
    amx.tilerelease();
}

} // namespace octet::x86
