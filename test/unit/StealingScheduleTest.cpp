//===- StealingScheduleTest.cpp - static ranges whose tails are stolen ----===//
#include "compiler/codegen/StealingSchedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

using octet::x86::StealingSchedule;

namespace {

/// Whether `item` lies in range `range` of schedule(static)'s split.
bool inRange(int64_t item, int64_t items, int64_t ranges, int64_t range) {
  const int64_t share = items / ranges, extra = items % ranges;
  const int64_t begin = range * share + std::min(range, extra);
  return item >= begin && item < begin + share + (range < extra);
}

/// The items `thread` takes alone, each checked to be flagged stolen exactly
/// when it lies outside the thread's own range.
std::vector<int64_t> runAlone(StealingSchedule &schedule, int64_t thread, int64_t items,
                              int64_t ranges) {
  std::vector<int64_t> taken;
  schedule.run(thread, [&](int64_t item, bool stolen) {
    EXPECT_EQ(stolen, !inRange(item, items, std::max<int64_t>(ranges, 1), thread)) << item;
    taken.push_back(item);
  });
  return taken;
}

} // namespace

// schedule(static)'s split (10 over 3: 4, 3, 3); thread 1 alone takes its own
// range front to back, then range 2 and range 0 from their backs.
TEST(StealingSchedule, OwnRangeFirstThenOthersFromTheBack) {
  StealingSchedule schedule(10, 3);
  EXPECT_EQ(runAlone(schedule, 1, 10, 3), (std::vector<int64_t>{4, 5, 6, 9, 8, 7, 3, 2, 1, 0}));
  EXPECT_TRUE(runAlone(schedule, 0, 10, 3).empty()) << "every item was taken once";
}

// A team smaller than the ranges (a nested region that got fewer threads):
// the missing threads' ranges are taken too; fewer items than ranges leave
// empty ranges; no items, no calls.
TEST(StealingSchedule, RangesWithoutThreadsAndEmptyRanges) {
  StealingSchedule fewThreads(7, 4);
  std::vector<int64_t> first = runAlone(fewThreads, 0, 7, 4),
                       second = runAlone(fewThreads, 1, 7, 4);
  EXPECT_EQ(first.size(), 7u);
  EXPECT_TRUE(second.empty());

  StealingSchedule fewItems(2, 5);
  // Thread 4 owns an empty range; it visits ranges 0 and 1 (one item each).
  EXPECT_EQ(runAlone(fewItems, 4, 2, 5), (std::vector<int64_t>{0, 1}));
  StealingSchedule none(0, 2);
  EXPECT_TRUE(runAlone(none, 0, 0, 2).empty());
  StealingSchedule noRanges(3, 0); // treated as one range
  EXPECT_EQ(runAlone(noRanges, 0, 3, 0), (std::vector<int64_t>{0, 1, 2}));
}

TEST(StealingSchedule, RejectsCountsPastIndices) {
  EXPECT_THROW(StealingSchedule(int64_t(1) << 33, 2), std::invalid_argument);
  EXPECT_THROW(StealingSchedule(-1, 2), std::invalid_argument);
}

// Threads running at once, one of them slowed: each item is taken exactly
// once, and the others take items from the slow thread's range.
TEST(StealingSchedule, ConcurrentThreadsTakeEachItemOnce) {
  for (int threads : {2, 3, 8}) {
    const int64_t items = 5000;
    StealingSchedule schedule(items, threads);
    std::vector<std::atomic<int>> count(items);
    std::atomic<int64_t> stolenFromSlow{0}, wrongFlags{0};
    std::vector<std::thread> team;
    for (int t = 0; t < threads; ++t)
      team.emplace_back([&, t] {
        schedule.run(t, [&](int64_t item, bool stolen) {
          count[item].fetch_add(1);
          wrongFlags.fetch_add(stolen == inRange(item, items, threads, t));
          if (t == 0)
            std::this_thread::sleep_for(std::chrono::microseconds(20));
          else if (inRange(item, items, threads, 0))
            stolenFromSlow.fetch_add(1);
        });
      });
    for (std::thread &thread : team)
      thread.join();
    for (int64_t i = 0; i < items; ++i)
      ASSERT_EQ(count[i].load(), 1) << "item " << i << " with " << threads << " threads";
    EXPECT_EQ(wrongFlags.load(), 0) << "items flagged stolen in their own range, or not stolen "
                                       "outside it";
    // Thread 0 sleeps 20 us per item, the others do not: they finish their
    // ranges while it is in its first items and take the rest of its range.
    EXPECT_GT(stolenFromSlow.load(), 0) << threads << " threads";
  }
}
