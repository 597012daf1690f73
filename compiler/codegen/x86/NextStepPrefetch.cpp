//===- NextStepPrefetch.cpp -----------------------------------------------===//
#include "compiler/codegen/x86/NextStepPrefetch.h"

#include <algorithm>
#include <immintrin.h>

namespace octet::x86 {

namespace {
thread_local const NextStepReads *publishedReads = nullptr;
constexpr int64_t kLine = 64;

/// The start of the line `p` lies in: every line a range touches is fetched.
const char *lineOf(const void *p) {
  return static_cast<const char *>(p) - reinterpret_cast<uintptr_t>(p) % kLine;
}
} // namespace

void ThreadReads::add(std::pair<const void *, size_t> range) {
  if (!range.first || range.second == 0 || count >= kMaxRanges ||
      (count > 0 && ranges[count - 1].first == range.first))
    return;
  ranges[count++] = range;
}

void NextStepReads::sameForAll(int64_t threads, const ThreadReads &reads) {
  perThread.assign(size_t(std::max<int64_t>(threads, 0)), reads);
}

void NextStepReads::sameForAll(int64_t threads,
                               std::initializer_list<std::pair<const void *, size_t>> ranges) {
  ThreadReads reads;
  for (const auto &range : ranges)
    reads.add(range);
  sameForAll(threads, reads);
}

const NextStepReads *NextStepReads::published() { return publishedReads; }

NextStepReads::Scope::Scope(const NextStepReads *reads) : previous_(publishedReads) {
  publishedReads = reads && !reads->perThread.empty() ? reads : nullptr;
}

NextStepReads::Scope::~Scope() { publishedReads = previous_; }

NextStepPrefetcher::NextStepPrefetcher(const NextStepReads *reads, int thread, int64_t parts) {
  if (!reads || thread < 0 || size_t(thread) >= reads->perThread.size() || parts < 1)
    return;
  const ThreadReads &mine = reads->perThread[size_t(thread)];
  int64_t lines = 0;
  for (int i = 0; i < mine.count; ++i)
    lines += (int64_t(mine.ranges[i].second) + kLine - 1) / kLine + 1; // at most
  if (lines == 0)
    return;
  ranges_ = mine.ranges, count_ = mine.count;
  next_ = lineOf(ranges_[0].first);
  partLines_ = std::max<int64_t>(1, (lines + parts - 1) / parts);
}

int64_t NextStepPrefetcher::advanceSlow() {
  int64_t issued = 0;
  while (issued < partLines_ && range_ < count_) {
    const char *end = static_cast<const char *>(ranges_[range_].first) + ranges_[range_].second;
    for (; next_ < end && issued < partLines_; next_ += kLine, ++issued)
      _mm_prefetch(next_, _MM_HINT_T1); // into L2: the front end takes it from there
    if (next_ >= end && ++range_ < count_)
      next_ = lineOf(ranges_[range_].first);
  }
  return issued;
}

} // namespace octet::x86
