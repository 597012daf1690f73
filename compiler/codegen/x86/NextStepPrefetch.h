//===- NextStepPrefetch.h - the next step's code, prefetched by the step before -*- C++ -*-===//
//
// Every step of a plan runs its own JIT kernels (a GEMM's are generated with
// its layer's output scale; a LayerNorm's, an attention's per step), and one
// run of BERT-base streams 85 MB of weights through the caches: by the next
// run a step's kernels' code has left L2 and L3, and its first kernel call
// waits on instruction fetches from DRAM, one miss after another. Measured on
// a Zen 5 at 1 x 128 (rdtsc around every kernel call): each GEMM's first call
// took 1.6-4.7 us longer than the steady ones; with this, the run 0.5-1% less.
//
// The executor asks the next step which code each thread of its team runs
// first (Step::firstReads; Int8GemmDriver / GemmF32 / GemmBf16::firstReads,
// KernelGenerator::generatedCode) and publishes that on the thread that runs the steps while
// the current step runs (NextStepReads::Scope). A step that takes part reads
// published() before its parallel region and has each thread prefetch its
// own ranges into L2 a part at a time as its loop advances
// (NextStepPrefetcher): the same OpenMP thread runs the next step's first
// call on the same core.
//
// Code only, measured (RESULTS session 25): prefetching each GEMM's first B
// slice (36 KB a thread) the same way made the GEMMs faster by what it made
// the LayerNorms and the attention before them slower (the prefetches hold
// the miss buffers those steps' own loads wait for): no gain end to end.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_NEXTSTEPPREFETCH_H
#define OCTET_COMPILER_CODEGEN_X86_NEXTSTEPPREFETCH_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace octet::x86 {

/// What one thread of the next step reads first, in order: up to kMaxRanges
/// ranges of bytes (a kernel's code and constants).
struct ThreadReads {
  static constexpr int kMaxRanges = 12;
  std::pair<const void *, size_t> ranges[kMaxRanges];
  int count = 0;
  /// Adds a range unless it is empty, already the last one, or there is no room.
  void add(std::pair<const void *, size_t> range);
};

/// The first reads of the next step, per thread of its team (by OpenMP thread
/// number).
struct NextStepReads {
  std::vector<ThreadReads> perThread;

  /// Every thread of a `threads` team reads the same `ranges` (the kernels of
  /// a step whose threads all run the same code).
  void sameForAll(int64_t threads, const ThreadReads &reads);
  void sameForAll(int64_t threads, std::initializer_list<std::pair<const void *, size_t>> ranges);

  /// What the executor published on the calling thread, or null.
  static const NextStepReads *published();

  /// Publishes `reads` (null or none: nothing) on this thread while alive.
  class Scope {
  public:
    explicit Scope(const NextStepReads *reads);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    const NextStepReads *previous_;
  };
};

/// One team thread's share of published reads, prefetched into L2 in `parts`
/// equal parts, one per advance() (so that no burst of misses stalls the
/// step that issues them), then nothing.
class NextStepPrefetcher {
public:
  /// `reads` as published() returned it on the thread that opened the region.
  NextStepPrefetcher(const NextStepReads *reads, int thread, int64_t parts);
  /// Prefetches the next part; returns the cache lines it asked for.
  int64_t advance() { return range_ < count_ ? advanceSlow() : 0; }

private:
  int64_t advanceSlow();
  const std::pair<const void *, size_t> *ranges_ = nullptr;
  int count_ = 0, range_ = 0;
  const char *next_ = nullptr; // the next line of ranges_[range_]
  int64_t partLines_ = 0;
};

} // namespace octet::x86

#endif
