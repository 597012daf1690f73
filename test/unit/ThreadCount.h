//===- ThreadCount.h - scoped OpenMP team size for tests --------*- C++ -*-===//
#ifndef OCTET_TEST_UNIT_THREADCOUNT_H
#define OCTET_TEST_UNIT_THREADCOUNT_H

#include <omp.h>

namespace octet::test {
/// Sets the OpenMP team size for its scope, then restores the previous one.
class ThreadCount {
public:
  explicit ThreadCount(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(saved_); }
  ThreadCount(const ThreadCount &) = delete;
  ThreadCount &operator=(const ThreadCount &) = delete;

private:
  int saved_;
};
} // namespace octet::test

#endif
