//===- GemmU8S8Amx.cpp ----------------------------------------------------===//
#include "compiler/codegen/x86/GemmU8S8Amx.h"
#include "compiler/codegen/GemmBlocking.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace octet::x86 {
using namespace Xbyak;
using gemm_blocking::ceilDiv;

namespace {
[[noreturn]] void reject(const std::string &what) {
  throw std::invalid_argument("GemmU8S8Amx: " + what);
}

void checkShape(int64_t n, int64_t k) {
  if (std::string why = checkGemmU8S8Shape(n, k); !why.empty())
    reject(why);
}

constexpr int64_t kChunkBBytes = 2 * kAmxBTileBytes; // both column tiles of one K chunk
/// A thread with at most this many M blocks prefetches its next panel's B
/// into L2 during each call: with few passes over B (batch 1 x 128: 4), B
/// streams from L3 and the prefetch took BERT-base 1x128 from 11.7 to 10.9 ms
/// (median of 3); with many (8 x 128: 16-32) B is in L2 and it only cost.
constexpr int64_t kPrefetchBMaxBlocks = 4;
constexpr int kRowTileSumsBytes = 16 * kAmxSumsStride;
constexpr int kRowTileStageBytes = 16 * kAmxKChunk;
} // namespace

// ---------------------------------------------------------------------------
// Packing

int64_t amxPackedOffset(int64_t k, int64_t n, int64_t kTotal) {
  // The offset does not depend on the total N.
  return packedWeightLayout(PackIsa::Amx, kTotal, n + 1, kAmxPanel).offset(k, n);
}

PackedU8S8Amx packU8S8Amx(const int8_t *b, int64_t k, int64_t n, WeightLayout layout) {
  checkShape(n, k);
  if (!b)
    reject("packU8S8Amx: null weight");
  PackedU8S8Amx packed;
  packed.n = n, packed.k = k;
  const PackedWeightLayout to = packedWeightLayout(PackIsa::Amx, k, n, kAmxPanel);
  packed.data.resize(to.bytes());
  packed.colsum.resize(n);
  packWeight(to, b, layout, packed.data.data(), packed.colsum.data());
  return packed;
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
std::string kernelName(const GemmU8S8AmxConfig &c) {
  std::string name = "gemm_u8s8_amx_m" + std::to_string(c.rows) + "c" + std::to_string(c.columns);
  if (c.kTailBytes)
    name += "_ktail" + std::to_string(c.kTailBytes);
  return name + gemmU8S8EpilogueSuffix(c.epilogue);
}
} // namespace

// The epilogue walks one row at a time (GemmTileAvx512 with MR = 1 over a
// 32-column panel): the sums of up to 32 rows are in memory, not registers.
GemmU8S8Amx::GemmU8S8Amx(const GemmU8S8AmxConfig &config)
    : GemmU8S8EpilogueAvx512(kernelName(config), Isa::AmxInt8, 16 * 1024, 1, kAmxPanel,
                             std::clamp(config.columns, 1, kAmxPanel), config.epilogue),
      config_(config), tiles_(config.rows, config.columns) {
  auto fail = [&](const std::string &why) {
    throw std::invalid_argument("GemmU8S8Amx " + name() + ": " + why);
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
  if (std::string why = checkGemmU8S8Epilogue(config.epilogue); !why.empty())
    fail(why);
}

void GemmU8S8Amx::dotChunk(const Reg64 &aBase, int64_t aRowTileOffset, const Reg64 &aStride) {
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

void GemmU8S8Amx::prefetchNextAChunk() {
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

void GemmU8S8Amx::prefetchNextPanelChunk() {
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

void GemmU8S8Amx::stageKTail() {
  // Each row's K % 64 tail bytes, zero-extended to 64: masked bytes are not
  // read (no fault past the row), so A needs no padding.
  mov(regStage_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, aTail)]);
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

void GemmU8S8Amx::rowEpilogue() {
  const GemmU8S8EpilogueConfig &e = config_.epilogue;
  mov(regSums_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, sums)]);
  if (e.compensation)
    mov(regComp_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, comp)]);
  mov(regScale_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, scale)]);
  if (e.bias)
    mov(regBias_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, bias)]);
  if (e.xScalePerRow)
    mov(regRowScale_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, xScale)]);
  if (e.elementwise && e.elementwise->columnInputCount() > 0)
    mov(regColumns_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, columns)]);
  mov(regC_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, c)]);
  mov(regLdc_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, ldc)]);
  scaleToBytes(regLdc_, e.output == QuantOutput::F32 ? 4 : 1);
  if (e.residual) {
    mov(regResidual_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, residual)]);
    mov(regLdr_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, ldr)]);
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
      [&] { mov(regRow_, regResidual_); });
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

void GemmU8S8Amx::generate() {
  preamble();
  Label epilogue, configured, kLoop, kDone, kept;
  cmp(qword[regArgs_ + offsetof(GemmU8S8AmxArgs, sumsReady)], 0);
  jne(epilogue, T_NEAR);
  cmp(qword[regArgs_ + offsetof(GemmU8S8AmxArgs, configure)], 0);
  je(configured, T_NEAR);
  ldtilecfg(ptr[rip + tileConfig_]);
  L(configured);
  for (int r = 0; r < tiles_.rowTiles; ++r)
    for (int c = 0; c < tiles_.colTiles; ++c)
      tilezero(Tmm(AmxGemmTiles::acc(r, c)));
  mov(regLda_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, lda)]);
  mov(regStride64_.cvt32(), kAmxKChunk);
  mov(regA_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, a)]);
  if (tiles_.rowTiles == 2) {
    lea(regA1_, ptr[regA_ + regLda_ * 8]);
    lea(regA1_, ptr[regA1_ + regLda_ * 8]);
  }
  mov(regB_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, b)]);
  mov(regK_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, kChunks)]);
  test(regK_, regK_);
  jz(kDone, T_NEAR);
  lea(regPrefetchLda3_, ptr[regLda_ + regLda_ * 2]);
  mov(regPrefetchB_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, bNext)]);
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
  mov(regSums_, ptr[regArgs_ + offsetof(GemmU8S8AmxArgs, sums)]);
  mov(r11.cvt32(), kAmxSumsStride);
  for (int r = 0; r < tiles_.rowTiles; ++r)
    for (int c = 0; c < tiles_.colTiles; ++c)
      tilestored(ptr[regSums_ + r11 + r * kRowTileSumsBytes + c * 64],
                 Tmm(AmxGemmTiles::acc(r, c)));
  cmp(qword[regArgs_ + offsetof(GemmU8S8AmxArgs, release)], 0);
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

void emulateGemmU8S8AmxTiles(const GemmU8S8AmxConfig &config, const GemmU8S8AmxArgs &args,
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

// ---------------------------------------------------------------------------
// Driver

GemmU8S8AmxDriver::GemmU8S8AmxDriver(PackedU8S8AmxView packed, GemmU8S8Params params)
    : n_(packed.n), k_(packed.k), packed_(packed), params_(std::move(params)) {
  checkShape(n_, k_);
  panels_ = ceilDiv(n_, kAmxPanel);
  kChunks_ = k_ / kAmxKChunk;
  if (!packed.data || packed.bytes != panels_ * ceilDiv(k_, kAmxKChunk) * kChunkBBytes ||
      !packed.colsum)
    reject("packed weights are not packU8S8Amx's layout for N " + std::to_string(n_) + ", K " +
           std::to_string(k_));
  if (std::string why = checkGemmU8S8Params(params_, n_); !why.empty())
    reject(why);

  const int64_t padded = panels_ * kAmxPanel;
  comp_.assign(padded, 0);
  scale_.assign(padded, 0.0f);
  bias_.assign(padded, 0.0f);
  for (int64_t j = 0; j < n_; ++j) {
    comp_[j] = params_.aZeroPoint * packed.colsum[j];
    const float w = params_.wScale[params_.wScale.size() == 1 ? 0 : j];
    scale_[j] = params_.xScalePerRow ? w : params_.xScale * w;
    if (params_.bias)
      bias_[j] = params_.bias[j];
  }

  const int tailColumns = n_ % kAmxPanel ? int(n_ % kAmxPanel) : kAmxPanel;
  kernels_.resize(2 * kAmxBlockRows);
  kernelFns_.resize(2 * kAmxBlockRows);
  for (int rows = 1; rows <= kAmxBlockRows; ++rows)
    for (bool tail : {false, true}) {
      if (tail && tailColumns == kAmxPanel)
        continue;
      if (!tail && n_ < kAmxPanel)
        continue;
      GemmU8S8AmxConfig config;
      config.rows = rows;
      config.columns = tail ? tailColumns : kAmxPanel;
      config.kTailBytes = int(k_ % kAmxKChunk);
      config.epilogue.compensation = params_.aZeroPoint != 0;
      config.epilogue.xScalePerRow = params_.xScalePerRow;
      config.epilogue.columnStride = padded * int64_t(sizeof(float));
      config.epilogue.bias = params_.bias != nullptr;
      config.epilogue.residual = params_.residual;
      config.epilogue.elementwise = params_.elementwise;
      config.epilogue.output = params_.output;
      config.epilogue.outScale = params_.outScale;
      config.epilogue.outZeroPoint = params_.outZeroPoint;
      kernels_[(rows - 1) * 2 + tail] = std::make_unique<GemmU8S8Amx>(config);
      kernelFns_[(rows - 1) * 2 + tail] =
          kernels_[(rows - 1) * 2 + tail]->entry<GemmU8S8AmxKernelFn>();
    }
}

template <typename Call>
AmxRunStats GemmU8S8AmxDriver::runWith(const uint8_t *a, int64_t m, int64_t lda, void *c,
                                       int64_t ldc, const float *residual, int64_t ldr,
                                       const float *xScale, const float *const *columns,
                                       Call call) const {
  if (m < 0)
    reject("run: M must be >= 0, got " + std::to_string(m));
  AmxRunStats total;
  if (m == 0)
    return total;
  if (!a || !c)
    reject("run: null A or C");
  if (lda < k_)
    reject("run: lda " + std::to_string(lda) + " < K " + std::to_string(k_));
  if (ldc < n_)
    reject("run: ldc " + std::to_string(ldc) + " < N " + std::to_string(n_));
  if (params_.residual && (!residual || ldr < n_))
    reject("run: the epilogue adds a residual: need one with ldr >= N " + std::to_string(n_));
  if (params_.xScalePerRow && !xScale)
    reject("run: the GEMM takes per-row activation scales: need M of them");
  std::vector<float, CacheLineAllocator<float>> columnInputs;
  try {
    columnInputs = padColumnInputs(params_.elementwise, n_, panels_ * kAmxPanel, columns);
  } catch (const std::invalid_argument &e) {
    reject(e.what());
  }

  const int64_t mBlocks = ceilDiv(m, int64_t(kAmxBlockRows));
  const int64_t panelBytes = ceilDiv(k_, kAmxKChunk) * kChunkBBytes;
  const int64_t chunkPanels = gemm_blocking::panelsPerL2Half(panelBytes);
  const int elementBytes = params_.output == QuantOutput::F32 ? 4 : 1;
  auto *cBytes = static_cast<uint8_t *>(c);
  std::exception_ptr error;
#pragma omp parallel if (panels_ * mBlocks > 1)
  {
    thread_local std::vector<int32_t, CacheLineAllocator<int32_t>> sums(kAmxBlockRows * kAmxPanel);
    thread_local std::vector<uint8_t, CacheLineAllocator<uint8_t>> aTail(kAmxBlockRows *
                                                                         kAmxKChunk);
    // This thread's panels and M blocks (threadGrid), in chunks of panels
    // that fit half of L2: each M block passes over a chunk, so B is read
    // from memory once per thread and from L2 after, while the M block's A
    // stays in L1/L2. M blocks run forward in even chunks and backward in odd
    // ones: the M-tail block's configuration is loaded about once per two
    // chunks. The thread knows its last call (tilerelease). The grid is that
    // of the actual team (a nested region may get fewer threads than
    // omp_get_max_threads() says); every thread computes the same one.
    const int64_t t = omp_get_thread_num();
    const gemm_blocking::ThreadGrid grid = gemm_blocking::threadGrid(
        omp_get_num_threads(), panels_, mBlocks, panelBytes, kAmxBlockRows * k_);
    const auto [pBegin, pEnd] = grid.panelRange(t, panels_);
    const auto [mBegin, mEnd] = grid.blockRange(t, mBlocks);
    const int64_t calls = (pEnd - pBegin) * (mEnd - mBegin);
    const bool prefetchB = mEnd - mBegin <= kPrefetchBMaxBlocks;
    AmxRunStats mine;
    // The configuration depends on the rows only (AmxGemmTiles::config).
    int loadedRows = 0;
    try {
      for (int64_t c0 = pBegin, chunk = 0; c0 < pEnd && calls; c0 += chunkPanels, ++chunk)
        for (int64_t i = 0; i < mEnd - mBegin; ++i)
          for (int64_t p = c0; p < std::min(pEnd, c0 + chunkPanels); ++p) {
            const int64_t mb = chunk % 2 ? mEnd - 1 - i : mBegin + i;
            const int64_t row = mb * kAmxBlockRows, col = p * kAmxPanel;
            const int rows = int(std::min<int64_t>(kAmxBlockRows, m - row));
            const bool tailPanel = n_ - col < kAmxPanel;
            const GemmU8S8Amx &kernel = this->kernel(rows, tailPanel);
            GemmU8S8AmxArgs args{a + row * lda,
                                 packed_.data + p * panelBytes,
                                 sums.data(),
                                 aTail.data(),
                                 cBytes + (row * ldc + col) * elementBytes,
                                 comp_.data() + col,
                                 scale_.data() + col,
                                 bias_.data() + col,
                                 params_.residual ? residual + row * ldr + col : nullptr,
                                 lda,
                                 ldc,
                                 ldr,
                                 kChunks_,
                                 loadedRows != rows,
                                 mine.calls + 1 == calls,
                                 0,
                                 params_.xScalePerRow ? xScale + row : nullptr,
                                 columnInputs.empty() ? nullptr : columnInputs.data() + col,
                                 prefetchB && p + 1 < pEnd ? packed_.data + (p + 1) * panelBytes
                                                           : nullptr};
            loadedRows = rows;
            mine.calls += 1, mine.configLoads += args.configure != 0,
                mine.releases += args.release;
            call(kernel, kernelFns_[(rows - 1) * 2 + tailPanel], args);
          }
    } catch (...) {
#pragma omp critical(octet_amx_error)
      if (!error)
        error = std::current_exception();
    }
#pragma omp critical(octet_amx_stats)
    {
      total.calls += mine.calls;
      total.configLoads += mine.configLoads;
      total.releases += mine.releases;
    }
  }
  if (error)
    std::rethrow_exception(error);
  return total;
}

AmxRunStats GemmU8S8AmxDriver::run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                                   const float *residual, int64_t ldr, const float *xScale,
                                   const float *const *columns) const {
  std::string why;
  if (!amxUsable(&why))
    throw std::runtime_error("GemmU8S8Amx: cannot run on this host: " + why);
  return runWith(
      a, m, lda, c, ldc, residual, ldr, xScale, columns,
      [](const GemmU8S8Amx &, GemmU8S8AmxKernelFn fn, const GemmU8S8AmxArgs &args) { fn(&args); });
}

AmxRunStats GemmU8S8AmxDriver::runEmulated(const uint8_t *a, int64_t m, int64_t lda, void *c,
                                           int64_t ldc, const float *residual, int64_t ldr,
                                           const float *xScale,
                                           const float *const *columns) const {
  if (!CpuFeatures::host().supports(Isa::Avx512))
    throw std::runtime_error("GemmU8S8Amx: the emulated run executes the AVX-512 epilogue; the "
                             "host lacks AVX-512 (host has: " +
                             CpuFeatures::host().describe() + ")");
  return runWith(
      a, m, lda, c, ldc, residual, ldr, xScale, columns,
      [](const GemmU8S8Amx &kernel, GemmU8S8AmxKernelFn fn, const GemmU8S8AmxArgs &args) {
        thread_local AmxTileEmulator amx; // tile state is per thread, as on the CPU
        emulateGemmU8S8AmxTiles(kernel.config(), args, amx);
        GemmU8S8AmxArgs epilogueOnly = args;
        epilogueOnly.sumsReady = 1;
        fn(&epilogueOnly);
      });
}

} // namespace octet::x86
