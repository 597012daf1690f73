//===- StealingSchedule.h - a static schedule whose tails are stolen -*- C++ -*-===//
//
// The GEMM drivers split their (M block, panel) pairs over the team the way
// `schedule(static)` does: one contiguous range per thread, so a thread's B
// prefetch of the next panel and its rows (those the token-wise steps around
// the GEMM gave it) stay its own. On a shared host two cores do not run at
// the same speed: measured on Zen 4 (2 vCPUs, KVM), the two threads of a
// BERT-base GEMM at M = 113 finished 4-7% of the call apart, in either order,
// and the early one spun at the barrier. Here a thread that has finished its
// own range takes the items left at the back of the others' ranges, one at a
// time, so both end within about one item of each other.
//
// Each range is one 64-bit word (front and back index) changed by
// compare-and-swap: the owner advances the front, a thief lowers the back,
// and an item is taken by exactly one of them. A thread that is not in the
// team (a nested region that got fewer threads) leaves its range to thieves.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_STEALINGSCHEDULE_H
#define OCTET_COMPILER_CODEGEN_STEALINGSCHEDULE_H

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace octet::x86 {

class StealingSchedule {
public:
  /// Items [0, items) in `ranges` contiguous ranges, sized as schedule(static)
  /// sizes them (the first items % ranges ranges hold one more).
  StealingSchedule(int64_t items, int64_t ranges)
      : count_(ranges < 1 ? 1 : ranges), ranges_(new Range[size_t(count_)]) {
    if (items < 0 || items > std::numeric_limits<uint32_t>::max())
      throw std::invalid_argument("StealingSchedule: " + std::to_string(items) +
                                  " items do not fit 32-bit indices");
    for (int64_t r = 0; r < count_; ++r) {
      const auto [begin, end] = range(items, count_, r);
      ranges_[r].frontBack.store(pack(begin, end), std::memory_order_relaxed);
    }
  }

  /// Range r's items [begin, end) of `items` in `ranges` ranges (r < ranges):
  /// what thread r takes first (the next step's prefetch asks).
  static std::pair<int64_t, int64_t> range(int64_t items, int64_t ranges, int64_t r) {
    const int64_t share = items / ranges, extra = items % ranges;
    const int64_t begin = r * share + std::min(r, extra);
    return {begin, begin + share + (r < extra)};
  }

  /// Calls fn(item, stolen) for every item thread `thread` gets: its own
  /// range front to back (stolen false), then items from the backs of the
  /// other ranges (stolen true: the next one is likely item - 1). Every item
  /// goes to exactly one call among the threads that run this.
  template <typename Fn> void run(int64_t thread, Fn &&fn) {
    if (thread >= 0 && thread < count_)
      for (int64_t item; (item = take(ranges_[thread], /*fromBack=*/false)) >= 0;)
        fn(item, false);
    for (int64_t i = 1; i <= count_; ++i) {
      const int64_t victim = (thread + i) % count_;
      if (victim == thread)
        continue;
      for (int64_t item; (item = take(ranges_[victim], /*fromBack=*/true)) >= 0;)
        fn(item, true);
    }
  }

private:
  /// One range on its own cache line: the owner's front updates do not
  /// contend with the other ranges.
  struct alignas(64) Range {
    std::atomic<uint64_t> frontBack{0};
  };

  static uint64_t pack(int64_t front, int64_t back) {
    return uint64_t(front) | uint64_t(back) << 32;
  }

  /// The front (owner) or back (thief) item of `range`, or -1 if it is empty.
  static int64_t take(Range &range, bool fromBack) {
    uint64_t word = range.frontBack.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t front = int64_t(word & 0xffffffffu), back = int64_t(word >> 32);
      if (front >= back)
        return -1;
      const uint64_t taken = fromBack ? pack(front, back - 1) : pack(front + 1, back);
      // Relaxed: items are independent; the region's closing barrier orders
      // their results.
      if (range.frontBack.compare_exchange_weak(word, taken, std::memory_order_relaxed))
        return fromBack ? back - 1 : front;
    }
  }

  int64_t count_;
  std::unique_ptr<Range[]> ranges_;
};

} // namespace octet::x86

#endif
