//===- Int8GemmDriver.cpp -------------------------------------------------===//
#include "compiler/codegen/x86/Int8GemmDriver.h"
#include "compiler/codegen/CpuFeatures.h"
#include "compiler/codegen/GemmBlocking.h"
#include "compiler/codegen/StealingSchedule.h"
#include "compiler/codegen/x86/Int8GemmKernelAmx.h"
#include "compiler/codegen/x86/Int8GemmKernelVnni.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace octet::x86 {

using gemm_blocking::ceilDiv;

namespace {
/// A thread with at most this many M blocks prefetches its next panel's B
/// into L2 during each AMX call: with few passes over B (batch 1 x 128: 4), B
/// streams from L3 and the prefetch took BERT-base 1x128 from 11.7 to 10.9 ms
/// (median of 3); with many (8 x 128: 16-32) B is in L2 and it only cost.
constexpr int64_t kPrefetchBMaxBlocks = 4;
} // namespace

const Int8GemmKernelFamily &int8GemmKernels(PackIsa isa) {
  switch (isa) {
  case PackIsa::Amx:
    return Int8GemmKernelAmx::family();
  case PackIsa::Avx512Vnni:
    break;
  }
  return Int8GemmKernelVnni::family();
}

int int8GemmPanelWidth(PackIsa isa, int64_t n) { return int8GemmKernels(isa).panelWidth(n); }

std::string checkInt8GemmShape(int64_t n, int64_t k) {
  if (n < 1)
    return "N must be >= 1, got " + std::to_string(n);
  if (k < 1 || k > kMaxU8S8K)
    return "K must be in 1.." + std::to_string(kMaxU8S8K) +
           " (s32 sums of u8 * s8 products must not overflow), got " + std::to_string(k);
  return "";
}

std::string checkInt8GemmParams(const Int8GemmParams &p, int64_t n) {
  if (p.aZeroPoint < 0 || p.aZeroPoint > 255)
    return "activation zero point must be in 0..255, got " + std::to_string(p.aZeroPoint);
  if (!p.xScalePerRow && !std::isfinite(p.xScale))
    return "activation scale must be finite";
  if (p.wScale.size() != 1 && int64_t(p.wScale.size()) != n)
    return "weight scales: need 1 or N = " + std::to_string(n) + ", got " +
           std::to_string(p.wScale.size());
  for (size_t j = 0; j < p.wScale.size(); ++j)
    if (!std::isfinite(p.wScale[j]))
      return "weight scale " + std::to_string(j) + " is not finite";
  if (p.maxKBlock < 0)
    return "the K block bound must be >= 0 (0: the blocking rule's), got " +
           std::to_string(p.maxKBlock);
  if (p.columnGroups < 1 || n % p.columnGroups != 0)
    return "column groups must be >= 1 and divide N = " + std::to_string(n) + ", got " +
           std::to_string(p.columnGroups);
  return "";
}

PackedInt8 packInt8(PackIsa isa, const int8_t *b, int64_t k, int64_t n, WeightLayout layout) {
  const std::string where = std::string("packInt8 (") + packIsaName(isa) + "): ";
  if (std::string why = checkInt8GemmShape(n, k); !why.empty())
    throw std::invalid_argument(where + why);
  if (!b)
    throw std::invalid_argument(where + "null weight");
  PackedInt8 packed;
  packed.isa = isa, packed.n = n, packed.k = k, packed.nr = int8GemmPanelWidth(isa, n);
  const PackedWeightLayout to = packedWeightLayout(isa, k, n, packed.nr);
  packed.data.resize(to.bytes());
  packed.colsum.resize(n);
  packWeight(to, b, layout, packed.data.data(), packed.colsum.data());
  return packed;
}

bool Int8GemmDriver::hostSupported(PackIsa isa) {
  return int8GemmKernels(isa).whyNotUsable().empty();
}

void Int8GemmDriver::reject(const std::string &what) const {
  throw std::invalid_argument(std::string("Int8GemmDriver (") + family_.name + "): " + what);
}

Int8GemmDriver::Int8GemmDriver(PackedInt8View packed, Int8GemmParams params)
    : family_(int8GemmKernels(packed.isa)), n_(packed.n), k_(packed.k), packed_(packed),
      params_(std::move(params)), nr_(packed.nr) {
  if (std::string why = checkInt8GemmShape(n_, k_); !why.empty())
    reject(why);
  const PackedWeightLayout layout = packedWeightLayout(packed.isa, k_, n_, nr_);
  if (nr_ != family_.panelWidth(n_) || !packed.data || packed.bytes != layout.bytes() ||
      !packed.colsum)
    reject(std::string("packed weights are not the ") + packIsaName(packed.isa) + " layout for N " +
           std::to_string(n_) + ", K " + std::to_string(k_));
  if (std::string why = checkInt8GemmParams(params_, n_); !why.empty())
    reject(why);

  panels_ = ceilDiv(n_, nr_);
  panelBytes_ = layout.bytes() / panels_;
  const int64_t padded = panels_ * nr_;
  comp_.assign(padded, 0);
  scale_.assign(padded, 0.0f);
  bias_.assign(padded, 0.0f);
  for (int64_t j = 0; j < n_; ++j) {
    comp_[j] = -params_.aZeroPoint * packed.colsum[j];
    const float w = params_.wScale[params_.wScale.size() == 1 ? 0 : j];
    scale_[j] = params_.xScalePerRow ? w : params_.xScale * w;
    if (params_.bias)
      bias_[j] = params_.bias[j];
  }

  const int scratch = params_.elementwise ? params_.elementwise->scratchZmmCount() : 0;
  mr_ = family_.maxRows(nr_, scratch);
  if (mr_ < 1)
    reject("the elementwise epilogue asks " + std::to_string(scratch) +
           " scratch zmm, leaving no accumulator rows");
  const bool registerTile = family_.schedule == Int8GemmSchedule::RegisterTile;
  kc_ = registerTile ? gemm_blocking::kBlock(k_, nr_, sizeof(int8_t), params_.maxKBlock) : k_;

  Int8GemmKernelConfig config;
  config.nr = nr_;
  config.kTailBytes = int(k_ % family_.kGranule);
  // Two lines of B per K step where registerTileMBlock may split rows: a
  // small weight (every thread streams all of it then). A fixed size, not
  // this CPU's L2: an AOT image's kernels must not depend on the host that
  // compiled it. The rest keep one: two measured 1-2% slower on BERT-base's
  // FFN GEMMs (bench/RESULTS.md, session 16).
  bPrefetchLines_ = registerTile && k_ * n_ <= kRowSplitWeightBytes ? 2 : 1;
  config.bPrefetchLines = bPrefetchLines_;
  Int8EpilogueConfig &e = config.epilogue;
  e.compensation = params_.aZeroPoint != 0;
  e.xScalePerRow = params_.xScalePerRow;
  e.bias = params_.bias != nullptr;
  e.residual = params_.residual;
  e.elementwise = params_.elementwise;
  e.columnStride = padded * int64_t(sizeof(float));
  e.output = params_.output;
  e.outScale = params_.outScale;
  e.outZeroPoint = params_.outZeroPoint;
  // Generated in this order, each finalized before the next: an AOT image
  // lists the kernels in generation order. The RegisterTile schedule has
  // always generated both widths, even when equal or unused; its images list
  // them so.
  // Faster sets for blocks of few row tiles (prefetchSet), after the first:
  // two and four lines where the kernels prefetch one, four where two. Then
  // (RegisterTile) the same paces again, prefetching into L1 and L2: the sets
  // AMD hosts run (prefetchSet says why). A JIT driver generates only this
  // host's half (the other half's slots stay empty: BERT-base INT8 has 2160
  // such kernels); a model.so holds both, for whichever host opens it.
  const int tailColumns = n_ % nr_ ? int(n_ % nr_) : nr_;
  paces_ = {bPrefetchLines_};
  if (registerTile)
    for (int pace = bPrefetchLines_ * 2; pace <= kMaxPrefetchLines; pace *= 2)
      paces_.push_back(pace);
  paceCount_ = int(paces_.size());
  if (registerTile)
    paces_.insert(paces_.end(), paces_.begin(), paces_.end());
  kernels_.resize(2 * paces_.size() * size_t(mr_));
  entries_.resize(kernels_.size());
  const bool everySet = kernelsForAnImage();
  for (int set = 0; set < int(paces_.size()); ++set) {
    config.bPrefetchLines = paces_[set];
    config.bPrefetchToL1 = set >= paceCount_;
    if (config.bPrefetchToL1 != hostIsAmd() && registerTile && !everySet)
      continue;
    for (int rows = 1; rows <= mr_; ++rows)
      for (bool tail : {false, true}) {
        if (!registerTile && ((tail && tailColumns == nr_) || (!tail && n_ < nr_)))
          continue;
        config.rows = rows;
        config.columns = tail ? tailColumns : nr_;
        const size_t at = kernelIndex(rows, tail, set);
        kernels_[at] = family_.generate(config);
        entries_[at] = kernels_[at]->entry<AnyKernelFn>();
      }
  }
}

Int8GemmDriver::~Int8GemmDriver() = default;

const Int8GemmKernel &Int8GemmDriver::kernel(int rows, bool tailPanel, int set) const {
  if (set == -1)
    set = hostIsAmd() && int(paces_.size()) > paceCount_ ? paceCount_ : 0;
  if (rows < 1 || rows > mr_ || set < 0 || set >= int(paces_.size()) ||
      !kernels_[kernelIndex(rows, tailPanel, set)])
    throw std::out_of_range(std::string("Int8GemmDriver (") + family_.name + "): no kernel for " +
                            std::to_string(rows) + " rows on the " + (tailPanel ? "tail" : "full") +
                            " panel in kernel set " + std::to_string(set));
  return *kernels_[kernelIndex(rows, tailPanel, set)];
}

int Int8GemmDriver::prefetchSet(int64_t tiles, int64_t kBytes, int minLines, bool toL1) const {
  // A block's tiles bring in tiles x steps x pace lines of the next slice
  // (K x NR bytes): the slowest pace that covers it, since repeated
  // prefetches are not free. At K = 768, NR = 48: 576 lines, 48 steps a
  // call: one line under 12 tiles (M < 100 in one block at MR 9) fell short,
  // and BERT-base's FFN GEMMs at 1 x 32 ran 19-21% faster on two, at 1 x 128
  // (15 tiles) 1-2% slower (RESULTS.md, sessions 16 and 18); two under 6
  // tiles, and four put M = 32 cold 3-7 points higher on Zen 4 (session 22).
  const int64_t granule = family_.kGranule;
  const int64_t steps = kBytes / granule / GemmTileAvx512::kUnroll;
  const int64_t sliceLines = ceilDiv(kBytes, granule) * granule * nr_ / 64;
  int set = 0;
  while (set + 1 < paceCount_ &&
         (paces_[set] < minLines || tiles * steps * paces_[set] < sliceLines))
    ++set;
  // prefetcht1 (into L2) is not always carried out on AMD (reported on Zen
  // 4; on Zen 5 BERT-base INT8 at 1 x 128 ran 1-4% faster end to end with
  // prefetcht0, 2-7 points of the peak with a weight streamed from DRAM, and
  // no faster with the next slice prefetched a slice earlier: lines missing,
  // not late). prefetcht0 also fills L1, where the current slice is read.
  return toL1 && int(paces_.size()) > paceCount_ ? set + paceCount_ : set;
}

/// One run's arguments after the checks.
struct Int8GemmDriver::Call {
  const uint8_t *a;
  int64_t m, lda;
  uint8_t *c;
  int64_t ldc;
  const float *residual;
  int64_t ldr;
  const float *xScale;
  const float *columns; ///< the program's per-column inputs, padded to whole panels
  int elementBytes;     ///< of C
};

/// The fields both schedules' arguments share, for the call at (row, col): A
/// at K = 0, C, the per-column arrays, the residual, strides and row scales.
template <typename Args>
Args Int8GemmDriver::tileArgs(const Call &r, int64_t row, int64_t col) const {
  Args args{};
  args.a = r.a + row * r.lda;
  args.c = r.c + (row * r.ldc + col) * r.elementBytes;
  args.comp = comp_.data() + col;
  args.scale = scale_.data() + col;
  args.bias = bias_.data() + col;
  args.residual = r.residual ? r.residual + row * r.ldr + col : nullptr;
  args.lda = r.lda, args.ldc = r.ldc, args.ldr = r.ldr;
  args.xScale = r.xScale ? r.xScale + row : nullptr;
  args.columns = r.columns ? r.columns + col : nullptr;
  return args;
}

template <typename Invoke>
Int8GemmRunStats Int8GemmDriver::runWith(const uint8_t *a, int64_t m, int64_t lda, void *c,
                                         int64_t ldc, const float *residual, int64_t ldr,
                                         const float *xScale, const float *const *columns,
                                         Invoke invoke) const {
  if (m < 0)
    reject("run: M must be >= 0, got " + std::to_string(m));
  if (m == 0)
    return {};
  if (!a || !c)
    reject("run: null A or C");
  if (lda < k_)
    reject("run: lda " + std::to_string(lda) + " < K " + std::to_string(k_));
  if (ldc < n_)
    reject("run: ldc " + std::to_string(ldc) + " < N " + std::to_string(n_));
  if (params_.xScalePerRow && !xScale)
    reject("run: the GEMM takes per-row activation scales: need M of them");
  if (params_.residual && (!residual || ldr < n_))
    reject("run: the epilogue adds a residual: need one with ldr >= N " + std::to_string(n_));
  const int outBytes = params_.output == QuantOutput::F32 ? 4 : 1;
  ColumnInputs storage;
  const float *inputs = nullptr;
  try {
    inputs =
        columnInputs(params_.elementwise, n_, panels_ * nr_, columns, storage, c, m, ldc, outBytes);
  } catch (const std::invalid_argument &e) {
    reject(e.what());
  }
  const Call call{a,      m,
                  lda,    static_cast<uint8_t *>(c),
                  ldc,    params_.residual ? residual : nullptr,
                  ldr,    params_.xScalePerRow ? xScale : nullptr,
                  inputs, outBytes};
  if (family_.schedule == Int8GemmSchedule::RegisterTile)
    return runRegisterTiles(call, invoke);
  return runAmxTiles(call, invoke);
}

void Int8GemmDriver::run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                         const float *residual, int64_t ldr, const float *xScale,
                         const float *const *columns) const {
  runCounted(a, m, lda, c, ldc, residual, ldr, xScale, columns);
}

Int8GemmRunStats Int8GemmDriver::runCounted(const uint8_t *a, int64_t m, int64_t lda, void *c,
                                            int64_t ldc, const float *residual, int64_t ldr,
                                            const float *xScale,
                                            const float *const *columns) const {
  if (m > 0)
    // A plan built for another CPU: never execute its code here.
    if (std::string why = family_.whyNotUsable(); !why.empty())
      throw std::runtime_error(std::string("Int8GemmDriver (") + family_.name +
                               "): cannot run on this host: " + why);
  return runWith(a, m, lda, c, ldc, residual, ldr, xScale, columns,
                 [](const Int8GemmKernel &, AnyKernelFn fn, auto &args) {
                   // A RegisterTile kernel moves its block's row fields
                   // (Int8GemmVnniArgs::tiles); an AMX one reads its own.
                   using Args = std::decay_t<decltype(args)>;
                   reinterpret_cast<void (*)(Args *)>(fn)(&args);
                 });
}

Int8GemmRunStats Int8GemmDriver::runEmulated(const uint8_t *a, int64_t m, int64_t lda, void *c,
                                             int64_t ldc, const float *residual, int64_t ldr,
                                             const float *xScale,
                                             const float *const *columns) const {
  const std::string where = std::string("Int8GemmDriver (") + family_.name + "): ";
  if (family_.schedule != Int8GemmSchedule::AmxTiles)
    throw std::logic_error(where + "only the AMX tiles have an emulator");
  if (!CpuFeatures::host().supports(Isa::Avx512))
    throw std::runtime_error(where +
                             "the emulated run executes the AVX-512 epilogue; the host "
                             "lacks AVX-512 (host has: " +
                             CpuFeatures::host().describe() + ")");
  return runWith(a, m, lda, c, ldc, residual, ldr, xScale, columns,
                 [](const Int8GemmKernel &kernel, AnyKernelFn fn, auto &args) {
                   using Args = std::decay_t<decltype(args)>;
                   if constexpr (std::is_same_v<Args, Int8GemmAmxArgs>) {
                     thread_local AmxTileEmulator amx; // tile state is per thread, as on the CPU
                     emulateInt8GemmAmxTiles(kernel.config(), args, amx);
                     Int8GemmAmxArgs epilogueOnly = args;
                     epilogueOnly.sumsReady = 1;
                     reinterpret_cast<Int8GemmAmxFn>(fn)(&epilogueOnly);
                   }
                 });
}

// ---------------------------------------------------------------------------
// RegisterTile: (M block, panel) pairs over the team, K blocks inside.

int Int8GemmDriver::rowSplitLines(int64_t m) const {
  const int64_t threads = omp_get_max_threads();
  if (params_.columnGroups > 1)
    return 0; // the panels split, by the groups' column ranges
  // Rows over the team (each thread all panels of its own rows) where the
  // kernels prefetch two lines of B per unrolled K step (small weights:
  // kRowSplitWeightBytes; on AMD also the big weights' two-line set, up to
  // kRowSplitBigWeightBytesAmd) and each thread's rows make enough row tiles
  // that this brings the next panel (K x NR bytes, K / 8 lines per call) into
  // L2 while it computes the current one: NR / 8 tiles, 6 at NR 48. Each
  // thread then reads the A and residual rows and writes the C rows that the
  // token-wise steps around the GEMM (LayerNorm, quantize: static row ranges)
  // gave it or take from it, instead of half of every row from the other
  // core's cache, at the price of streaming all of B. That price measured
  // higher than the gain for BERT-base's FFN GEMMs (2.25 MiB) on a Xeon
  // (session 16: 89 -> 85% and 94 -> 90% of the peak), lower on Zen 4, whose
  // cores reach each other's lines through the L3 of a core complex or
  // beyond it (session 21: +0.5-3 points each, the LayerNorms after them -20
  // to -30%).
  const bool bigOnAmd = bPrefetchLines_ == 1 && paceCount_ > 1 &&
                        k_ * n_ <= kRowSplitBigWeightBytesAmd && hostIsAmd();
  const int lines = bPrefetchLines_ >= 2 ? bPrefetchLines_ : bigOnAmd ? paces_[1] : 0;
  if (lines < 2 || threads < 2 || ceilDiv(ceilDiv(m, threads), mr_) < ceilDiv(nr_, 4 * lines))
    return 0;
  return lines;
}

int64_t Int8GemmDriver::registerTileMBlock(int64_t m) const {
  if (!rowSplitLines(m))
    return gemm_blocking::mBlock(m, k_, mr_, panels_, sizeof(uint8_t));
  // A whole number of blocks per thread (the static split of the (block,
  // panel) pairs then gives each thread whole blocks), each within the L2
  // rule's height.
  const int64_t threads = omp_get_max_threads();
  const int64_t l2Block = gemm_blocking::mBlock(m, k_, mr_, /*panels=*/threads, sizeof(uint8_t));
  const int64_t blocks = gemm_blocking::roundUp(std::max(ceilDiv(m, l2Block), threads), threads);
  return ceilDiv(m, blocks);
}

std::pair<int64_t, int64_t> Int8GemmDriver::pairAt(int64_t index, int64_t mBlocks,
                                                   int64_t threads) const {
  const int64_t groups = params_.columnGroups, groupPanels = panels_ / groups;
  // Groups whose columns the panels do not divide (or a team of one) keep the
  // row-major order: no share of a group would be whole panels.
  if (groups <= 1 || threads <= 1 || (n_ / groups) % nr_ != 0)
    return {index / panels_, index % panels_};
  // Thread t's part: its share [t gp / T, (t + 1) gp / T) of every group's
  // gp panels, for every M block; the parts before it hold
  // mBlocks x groups x (t gp / T) pairs. A thread whose share is empty has
  // an empty part, which the search steps over.
  auto partStart = [&](int64_t t) { return mBlocks * groups * (t * groupPanels / threads); };
  int64_t t = 0;
  while (t + 1 < threads && partStart(t + 1) <= index)
    ++t;
  const int64_t first = t * groupPanels / threads;
  const int64_t share = (t + 1) * groupPanels / threads - first;
  const int64_t at = index - partStart(t);
  const int64_t inBlock = at % (groups * share);
  return {at / (groups * share), inBlock / share * groupPanels + first + inBlock % share};
}

std::vector<std::pair<int64_t, int64_t>> Int8GemmDriver::pairOrder(int64_t mBlocks,
                                                                   int64_t threads) const {
  std::vector<std::pair<int64_t, int64_t>> order;
  order.reserve(size_t(mBlocks * panels_));
  for (int64_t i = 0; i < mBlocks * panels_; ++i)
    order.push_back(pairAt(i, mBlocks, threads));
  return order;
}

void Int8GemmDriver::firstReads(int64_t m, int64_t threads,
                                std::vector<ThreadReads> &perThread) const {
  perThread.assign(size_t(std::max<int64_t>(threads, 0)), ThreadReads());
  if (family_.schedule != Int8GemmSchedule::RegisterTile || m <= 0 || threads < 1)
    return;
  const int64_t mBlock = registerTileMBlock(m), mBlocks = ceilDiv(m, mBlock);
  const int minLines = rowSplitLines(m);
  for (int64_t t = 0; t < threads; ++t) {
    const auto [first, end] = StealingSchedule::range(mBlocks * panels_, threads, t);
    if (first == end)
      continue;
    // The first block's kernels as runRegisterTiles picks them: its tall and
    // short row tiles on the first item's panel, in the block's kernel set.
    const auto [mb, p] = pairAt(first, mBlocks, threads);
    const BlockTiles block =
        blockTiles(std::min(m, (mb + 1) * mBlock) - mb * mBlock, std::min(kc_, k_), minLines);
    const bool tailPanel = n_ - p * nr_ < nr_;
    for (int64_t tileRows : {block.shortRows + (block.tall > 0), block.shortRows})
      if (tileRows >= 1)
        if (const auto &kernel = kernels_[kernelIndex(int(tileRows), tailPanel, block.set)])
          perThread[size_t(t)].add(kernel->generatedCode());
  }
}

template <typename Invoke>
Int8GemmRunStats Int8GemmDriver::runRegisterTiles(const Call &r, Invoke invoke) const {
  const int64_t m = r.m;
  const int64_t mBlock = registerTileMBlock(m);
  const int64_t mBlocks = ceilDiv(m, mBlock);
  const int64_t kBlocks = ceilDiv(k_, kc_);
  // Rows split on AMD (a big weight): at least its lines per step.
  const int minLines = rowSplitLines(m);
  // Panels are [K / granule][NR][granule] bytes. gemm_blocking::kBlock cuts K
  // in multiples of 4, so a RegisterTile family's granule divides 4 (VNNI: 4).
  const int64_t granule = family_.kGranule;
  int64_t calls = 0, fewTilesCalls = 0, stolenPairs = 0;
  // schedule(static)'s ranges of (M block, panel) pairs, row-major, their
  // tails taken by the threads that finish first.
  const int64_t threads = omp_get_max_threads();
  const int64_t items = mBlocks * panels_;
  StealingSchedule schedule(items, threads);
  // The next step's code, a part per item (NextStepPrefetch.h).
  const NextStepReads *nextStep = NextStepReads::published();
#pragma omp parallel if (items > 1) reduction(+ : calls, fewTilesCalls, stolenPairs)
  {
    const int thread = omp_get_thread_num();
    NextStepPrefetcher prefetcher(nextStep, thread, ceilDiv(items, threads));
    // s32 sums of one (M block, panel) between K blocks, reused across runs.
    thread_local std::vector<int32_t, CacheLineAllocator<int32_t>> partial;
    if (kBlocks > 1 && int64_t(partial.size()) < mBlock * nr_)
      partial.resize(mBlock * nr_);
    schedule.run(thread, [&](int64_t item, bool stolen) {
      prefetcher.advance();
      const auto [mb, p] = pairAt(item, mBlocks, threads);
      stolenPairs += stolen;
      const int64_t rowBegin = mb * mBlock, rowEnd = std::min(m, rowBegin + mBlock);
      const int64_t col = p * nr_;
      const bool tailPanel = n_ - col < nr_;
      const int8_t *panel = packed_.data + p * panelBytes_;
      for (int64_t kb = 0; kb < kBlocks; ++kb) {
        const int64_t k0 = kb * kc_, len = std::min(kc_, k_ - k0);
        const int8_t *b = panel + (k0 / granule) * nr_ * granule;
        const int64_t kGroups = len / granule, kTail = len % granule;
        const int64_t sliceBytes = ceilDiv(len, granule) * granule * nr_;
        // What this thread reads next: the bytes after this slice (the next K
        // block, or the next panel), or, after the last K block of an item
        // taken from the back of another thread's range, the first block of
        // the item before it (the next one it would take). The row tiles pull
        // them into L2 in turn, each kernel call one line per unrolled K
        // step; once they are covered (or past the weight's end), a call
        // prefetches its own, L1-resident slice (L1 hits).
        const bool stealsBefore = stolen && kb == kBlocks - 1 && item > 0;
        // The next item's panel where the order is not the panels' (groups).
        const int64_t nextItem = stealsBefore ? item - 1 : item + 1;
        const bool grouped = params_.columnGroups > 1 && kb == kBlocks - 1 && nextItem < items;
        const int64_t nextPanel =
            stealsBefore || grouped ? pairAt(nextItem, mBlocks, threads).second : p + 1;
        const bool orderJumps = grouped && nextPanel != p + (stealsBefore ? -1 : 1);
        const int8_t *next =
            stealsBefore || orderJumps ? packed_.data + nextPanel * panelBytes_ : b + sliceBytes;
        const int64_t nextBytes =
            stealsBefore ? ceilDiv(std::min(kc_, k_), granule) * granule * nr_
                         : std::min<int64_t>(sliceBytes, packed_.data + packed_.bytes - next);
        // The block's rows in equal tiles (128 rows at MR 9: 8 x 9 + 7 x 8,
        // not 14 x 9 + 2): a 2-row tile has too few accumulators to hide
        // vpdpbusd's latency.
        const auto [tiles, shortRows, tallTiles, set] =
            blockTiles(rowEnd - rowBegin, len, minLines);
        const int64_t linesPerTile = kGroups / GemmTileAvx512::kUnroll * paces_[set];
        // One argument block for the slice's tiles, its tall tiles then its
        // short ones, one call each: the kernel moves the row fields and the
        // prefetch from tile to tile (Int8GemmVnniArgs::tiles).
        Int8GemmVnniArgs args = tileArgs<Int8GemmVnniArgs>(r, rowBegin, col);
        args.a += k0;
        args.b = b;
        args.partial = kBlocks > 1 ? partial.data() : nullptr;
        args.kGroups = kGroups, args.kTail = kTail;
        args.accumulate = kb > 0, args.last = kb == kBlocks - 1;
        args.bPrefetch = nextBytes > 0 ? next : b;
        args.prefetchLeft = nextBytes, args.prefetchStep = linesPerTile * 64;
        for (const auto &[rows, count] :
             {std::pair{shortRows + 1, tallTiles}, std::pair{shortRows, tiles - tallTiles}}) {
          if (count <= 0 || rows <= 0)
            continue;
          args.tiles = count;
          const size_t at = kernelIndex(int(rows), tailPanel, set);
          invoke(*kernels_[at], entries_[at], args);
          calls += count, fewTilesCalls += set % paceCount_ > 0 ? count : 0;
        }
      }
    });
  }
  Int8GemmRunStats stats;
  stats.calls = calls, stats.fewTilesCalls = fewTilesCalls, stats.stolenPairs = stolenPairs;
  return stats;
}

// ---------------------------------------------------------------------------
// AmxTiles: a panels x M blocks grid, all of K per call.

template <typename Invoke>
Int8GemmRunStats Int8GemmDriver::runAmxTiles(const Call &r, Invoke invoke) const {
  const int64_t m = r.m;
  const int64_t mBlocks = ceilDiv(m, int64_t(mr_));
  const int64_t kChunks = k_ / kAmxKChunk;
  const int64_t chunkPanels = gemm_blocking::panelsPerL2Half(panelBytes_);
  Int8GemmRunStats total;
  std::exception_ptr error;
  const NextStepReads *nextStep = NextStepReads::published(); // a part per call
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
    const gemm_blocking::ThreadGrid grid =
        gemm_blocking::threadGrid(omp_get_num_threads(), panels_, mBlocks, panelBytes_, mr_ * k_);
    const auto [pBegin, pEnd] = grid.panelRange(t, panels_);
    const auto [mBegin, mEnd] = grid.blockRange(t, mBlocks);
    const int64_t calls = (pEnd - pBegin) * (mEnd - mBegin);
    const bool prefetchB = mEnd - mBegin <= kPrefetchBMaxBlocks;
    NextStepPrefetcher prefetcher(nextStep, int(t), calls);
    Int8GemmRunStats mine;
    // The configuration depends on the rows only (AmxGemmTiles::config).
    int loadedRows = 0;
    try {
      for (int64_t c0 = pBegin, chunk = 0; c0 < pEnd && calls; c0 += chunkPanels, ++chunk)
        for (int64_t i = 0; i < mEnd - mBegin; ++i)
          for (int64_t p = c0; p < std::min(pEnd, c0 + chunkPanels); ++p) {
            prefetcher.advance();
            const int64_t mb = chunk % 2 ? mEnd - 1 - i : mBegin + i;
            const int64_t row = mb * mr_, col = p * nr_;
            const int rows = int(std::min<int64_t>(mr_, m - row));
            const bool tailPanel = n_ - col < nr_;
            Int8GemmAmxArgs args = tileArgs<Int8GemmAmxArgs>(r, row, col);
            args.b = packed_.data + p * panelBytes_;
            args.sums = sums.data(), args.aTail = aTail.data();
            args.kChunks = kChunks;
            args.configure = loadedRows != rows, args.release = mine.calls + 1 == calls;
            args.sumsReady = 0;
            args.bNext = prefetchB && p + 1 < pEnd ? packed_.data + (p + 1) * panelBytes_ : nullptr;
            loadedRows = rows;
            mine.calls += 1, mine.configLoads += args.configure != 0, mine.releases += args.release;
            const size_t at = kernelIndex(rows, tailPanel, 0);
            invoke(*kernels_[at], entries_[at], args);
          }
    } catch (...) {
#pragma omp critical(octet_int8_gemm_error)
      if (!error)
        error = std::current_exception();
    }
#pragma omp critical(octet_int8_gemm_stats)
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

} // namespace octet::x86
