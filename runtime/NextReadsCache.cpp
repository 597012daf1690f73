//===- NextReadsCache.cpp - the next-step reads a thread keeps between runs ===//
#include "runtime/NextReadsCache.h"

#include <algorithm>

namespace octet::rt {

namespace {
thread_local NextReadsCache threadCache;
} // namespace

NextReadsCache::Lease::Lease(const Plan &plan, int64_t threads)
    : own_(threadCache.busy_ ? std::make_unique<NextReadsCache>() : nullptr),
      cache_(own_ ? own_.get() : &threadCache) {
  cache_->beginRun(plan, threads);
  cache_->busy_ = true; // after what may throw: a failed Lease holds nothing
}

NextReadsCache::Lease::~Lease() { cache_->busy_ = false; }

void NextReadsCache::beginRun(const Plan &plan, int64_t threads) {
  plan_ = &plan;
  if (plan.serial == planSerial_ && threads == threads_ && reads_.size() == plan.steps.size())
    return;
  // The Plan's serial last: were an allocation to throw (the run fails with
  // "out of memory"), the next run starts over.
  planSerial_ = 0;
  threads_ = threads;
  reads_.assign(plan.steps.size(), x86::NextStepReads());
  valid_.assign(plan.steps.size(), 0);
  segments_.clear();
  size_t first = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i]->definesTokenLayout()) {
      segments_.push_back({first, i + 1, {}, false});
      first = i + 1;
    }
  segments_.push_back({first, plan.steps.size(), {}, false});
  planSerial_ = plan.serial;
}

void NextReadsCache::beginSegment(size_t first, const std::vector<int64_t> &scalars) {
  auto segment = std::find_if(segments_.begin(), segments_.end(),
                              [&](const Segment &s) { return s.first == first; });
  if (segment == segments_.end() || (segment->known && segment->scalars == scalars))
    return;
  segment->scalars = scalars;
  segment->known = true;
  std::fill(valid_.begin() + long(segment->first), valid_.begin() + long(segment->end), 0);
}

const x86::NextStepReads &NextReadsCache::readsOf(size_t next, const ExecContext &ctx) {
  x86::NextStepReads &reads = reads_[next];
  if (!valid_[next]) {
    // A hint: were it to fail (out of memory), the run goes on without it,
    // and the next run asks again.
    try {
      plan_->steps[next]->firstReads(ctx, threads_, reads);
      valid_[next] = 1;
    } catch (...) {
      reads.perThread.clear();
    }
  }
  return reads;
}

} // namespace octet::rt
