//===- GemmBlocking.cpp ---------------------------------------------------===//
#include "compiler/codegen/GemmBlocking.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>

namespace octet::x86::gemm_blocking {

namespace {
int64_t cacheBytes(int name, int64_t fallback) {
  long bytes = sysconf(name);
  return bytes > 0 ? bytes : fallback;
}
int64_t l1Bytes() { return cacheBytes(_SC_LEVEL1_DCACHE_SIZE, 32 * 1024); }
int64_t l2Bytes() { return cacheBytes(_SC_LEVEL2_CACHE_SIZE, 1024 * 1024); }

/// Cuts `total` into the fewest blocks of at most `maxBlock` (at least
/// `minBlocks` of them), of equal size rounded up to a multiple of `multiple`.
int64_t evenBlock(int64_t total, int64_t maxBlock, int64_t multiple, int64_t minBlocks = 1) {
  maxBlock = std::max(multiple, maxBlock / multiple * multiple);
  int64_t blocks = std::max({ceilDiv(total, maxBlock), minBlocks, int64_t(1)});
  return roundUp(std::max<int64_t>(1, ceilDiv(total, blocks)), multiple);
}
} // namespace

int panelWidth(int64_t n) { return roundUp(n, 32) < roundUp(n, 48) ? 32 : 48; }

int64_t kBlock(int64_t k, int nr, int elementBytes, int64_t maxBlock) {
  const int64_t rule = kPanelSliceL1s * l1Bytes() / (nr * elementBytes);
  return evenBlock(k, maxBlock > 0 ? std::min(rule, maxBlock) : rule, 4);
}

int64_t mBlock(int64_t m, int64_t k, int mr, int64_t panels, int elementBytes) {
  int64_t wanted = std::min(ceilDiv(m, mr), ceilDiv(omp_get_max_threads(), panels));
  return evenBlock(m, l2Bytes() / 2 / (std::max<int64_t>(k, 1) * elementBytes), mr, wanted);
}

int64_t panelsPerL2Half(int64_t panelBytes) {
  return std::max<int64_t>(1, l2Bytes() / 2 / std::max<int64_t>(panelBytes, 1));
}

std::pair<int64_t, int64_t> ThreadGrid::panelRange(int64_t t, int64_t panels) const {
  const int64_t pt = t % panelThreads;
  return {panels * pt / panelThreads, panels * (pt + 1) / panelThreads};
}

std::pair<int64_t, int64_t> ThreadGrid::blockRange(int64_t t, int64_t mBlocks) const {
  const int64_t rt = t / panelThreads;
  if (rt >= rowThreads)
    return {0, 0};
  return {mBlocks * rt / rowThreads, mBlocks * (rt + 1) / rowThreads};
}

ThreadGrid threadGrid(int64_t threads, int64_t panels, int64_t mBlocks, int64_t panelBytes,
                      int64_t blockBytes) {
  ThreadGrid best;
  int64_t bestWork = 0, bestBytes = 0;
  for (int64_t pt = 1; pt <= std::min(threads, panels); ++pt) {
    const int64_t rt = std::max<int64_t>(1, std::min(threads / pt, mBlocks));
    const int64_t p = ceilDiv(panels, pt), b = ceilDiv(mBlocks, rt);
    const int64_t work = p * b, bytes = p * panelBytes + b * blockBytes;
    if (pt == 1 || work < bestWork || (work == bestWork && bytes < bestBytes))
      best = {pt, rt}, bestWork = work, bestBytes = bytes;
  }
  return best;
}

} // namespace octet::x86::gemm_blocking
