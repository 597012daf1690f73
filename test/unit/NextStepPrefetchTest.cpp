//===- NextStepPrefetchTest.cpp - publishing and prefetching a step's first reads -===//
//
// ThreadReads keeps up to kMaxRanges non-empty ranges, dropping a repeat of
// the last; Scope publishes on its own thread only, and nests; a prefetcher
// asks for every line its thread's ranges touch, each exactly once, in at
// most `parts` advances of at most a part's lines, and nothing for a thread
// without ranges.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/NextStepPrefetch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

using octet::x86::NextStepPrefetcher;
using octet::x86::NextStepReads;
using octet::x86::ThreadReads;

namespace {

alignas(64) char buffer[64 * 64];

/// The cache lines [begin, begin + bytes) touches.
int64_t linesTouched(const char *begin, size_t bytes) {
  const auto first = reinterpret_cast<uintptr_t>(begin) / 64;
  const auto last = (reinterpret_cast<uintptr_t>(begin) + bytes - 1) / 64;
  return int64_t(last - first + 1);
}

TEST(NextStepPrefetch, ThreadReadsKeepsNonEmptyDistinctRanges) {
  ThreadReads reads;
  reads.add({nullptr, 64});
  reads.add({buffer, 0});
  EXPECT_EQ(reads.count, 0);
  reads.add({buffer, 100});
  reads.add({buffer, 100}); // the same kernel twice (a block's two tile heights)
  EXPECT_EQ(reads.count, 1);
  for (int i = 1; i < 2 * ThreadReads::kMaxRanges; ++i)
    reads.add({buffer + 64 * i, 10});
  ASSERT_EQ(reads.count, ThreadReads::kMaxRanges);
  EXPECT_EQ(reads.ranges[0].second, 100u);
  EXPECT_EQ(reads.ranges[ThreadReads::kMaxRanges - 1].first,
            buffer + 64 * (ThreadReads::kMaxRanges - 1)); // the later ones dropped
}

TEST(NextStepPrefetch, ScopePublishesOnItsThreadAndNests) {
  EXPECT_EQ(NextStepReads::published(), nullptr);
  NextStepReads outer, inner, none;
  outer.sameForAll(2, {{buffer, 64}});
  inner.sameForAll(2, {{buffer + 64, 64}});
  {
    NextStepReads::Scope a(&outer);
    EXPECT_EQ(NextStepReads::published(), &outer);
    const NextStepReads *elsewhere = &outer;
    std::thread([&] { elsewhere = NextStepReads::published(); }).join();
    EXPECT_EQ(elsewhere, nullptr) << "another thread sees this thread's reads";
    {
      NextStepReads::Scope b(&inner);
      EXPECT_EQ(NextStepReads::published(), &inner);
      NextStepReads::Scope c(&none); // no threads: nothing published
      EXPECT_EQ(NextStepReads::published(), nullptr);
    }
    EXPECT_EQ(NextStepReads::published(), &outer);
  }
  EXPECT_EQ(NextStepReads::published(), nullptr);
}

TEST(NextStepPrefetch, EveryLineOnceInAtMostPartsAdvances) {
  struct Case {
    std::vector<std::pair<int, size_t>> ranges; // offset in buffer, bytes
    int64_t parts;
  };
  for (const Case &c : {Case{{{0, 64}}, 1}, Case{{{0, 64}}, 5}, Case{{{3, 64}}, 1},
                        Case{{{1, 1}}, 3}, Case{{{0, 1000}, {1100, 70}, {2047, 2}}, 4},
                        Case{{{5, 4000}}, 7}, Case{{{0, 640}, {640, 640}}, 10}}) {
    NextStepReads reads;
    reads.perThread.resize(3); // thread 1's alone
    int64_t lines = 0;
    for (const auto &[offset, bytes] : c.ranges) {
      reads.perThread[1].add({buffer + offset, bytes});
      lines += linesTouched(buffer + offset, bytes);
    }
    const int64_t partMax = (lines + 2 * int64_t(c.ranges.size()) + c.parts - 1) / c.parts;
    NextStepPrefetcher prefetcher(&reads, 1, c.parts);
    int64_t issued = 0, advances = 0;
    for (int64_t got; (got = prefetcher.advance()) > 0; ++advances) {
      EXPECT_LE(got, partMax);
      issued += got;
    }
    EXPECT_EQ(issued, lines) << c.ranges.size() << " ranges, " << c.parts << " parts";
    EXPECT_LE(advances, c.parts);
    EXPECT_EQ(NextStepPrefetcher(&reads, 0, c.parts).advance(), 0) << "thread 0 has no ranges";
    EXPECT_EQ(NextStepPrefetcher(&reads, 3, c.parts).advance(), 0) << "beyond the team";
    EXPECT_EQ(NextStepPrefetcher(&reads, 1, 0).advance(), 0) << "no parts";
    EXPECT_EQ(NextStepPrefetcher(nullptr, 1, c.parts).advance(), 0) << "nothing published";
  }
}

} // namespace
