//===- NextReadsCache.h - the next-step reads a thread keeps between runs -*- C++ -*-===//
//
// Before each step the executor publishes what the next step's threads read
// first (Step::firstReads, compiler/codegen/x86/NextStepPrefetch.h). Asking
// costs little in itself, but it reads the next step's objects (its spec, its
// driver, its kernels), which the 85 MB of weights a BERT-base run streams
// have pushed out to DRAM since the last run: ~1.3 us a step, ~0.12 ms of
// every 11 ms run at 1 x 128 on a Zen 5, on the thread that runs the steps
// while the others wait. The answer depends on the run's scalars and the
// thread count only, so each thread keeps the answers of its last Plan and
// asks again only where the shapes changed.
//
// The scalars change at the start of a run and after each token_layout step
// (the packed dims): the steps are cut into segments there, and a segment's
// answers are kept while the scalars at its start are those of the last run.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_NEXTREADSCACHE_H
#define OCTET_RUNTIME_NEXTREADSCACHE_H

#include "compiler/codegen/x86/NextStepPrefetch.h"
#include "runtime/Plan.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace octet::rt {

class NextReadsCache {
public:
  /// The cache of one run of `plan` on `threads` threads: the calling
  /// thread's (one Plan at a time: a thread that runs several Plans in turn
  /// asks again at each change; another Plan's or thread count's answers are
  /// dropped), or, where a run on this thread holds that (a step that runs a
  /// Plan itself), one of its own.
  class Lease {
  public:
    Lease(const Plan &plan, int64_t threads);
    ~Lease();
    Lease(const Lease &) = delete;
    Lease &operator=(const Lease &) = delete;
    NextReadsCache *operator->() const { return cache_; }

  private:
    std::unique_ptr<NextReadsCache> own_; ///< only while another Lease holds the thread's
    NextReadsCache *cache_;
  };
  /// The scalars at the start of the segment that begins at step `first`
  /// (0, or the step after a token_layout step): that segment's answers are
  /// dropped unless the last run's scalars there were the same.
  void beginSegment(size_t first, const std::vector<int64_t> &scalars);
  /// What step `next`'s threads read first with this run's shapes: the kept
  /// answer, or Step::firstReads (nothing if that throws, and not kept).
  const x86::NextStepReads &readsOf(size_t next, const ExecContext &ctx);

private:
  void beginRun(const Plan &plan, int64_t threads);

  struct Segment {
    size_t first = 0, end = 0; ///< its steps [first, end)
    std::vector<int64_t> scalars;
    bool known = false; ///< scalars hold a run's
  };
  uint64_t planSerial_ = 0;
  const Plan *plan_ = nullptr;
  int64_t threads_ = 0;
  std::vector<Segment> segments_;
  std::vector<x86::NextStepReads> reads_; ///< by step
  std::vector<uint8_t> valid_;            ///< by step
  bool busy_ = false; ///< a Lease holds it
};

} // namespace octet::rt

#endif
