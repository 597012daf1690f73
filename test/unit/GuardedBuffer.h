//===- GuardedBuffer.h - test buffers that end at an unreadable page -*- C++ -*-===//
//
// Kernel tests place their last row right before a PROT_NONE page, so a read
// past the end of the data (an unmasked tail) faults instead of passing.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_TEST_UNIT_GUARDEDBUFFER_H
#define OCTET_TEST_UNIT_GUARDEDBUFFER_H

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

namespace octet::test {

/// `count` elements of T whose end touches an inaccessible page.
template <typename T> class Guarded {
public:
  explicit Guarded(size_t count) : count_(count) {
    page_ = size_t(sysconf(_SC_PAGESIZE));
    dataPages_ = (count * sizeof(T) + page_ - 1) / page_;
    base_ = static_cast<char *>(mmap(nullptr, (dataPages_ + 1) * page_,
                                     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    mprotect(base_ + dataPages_ * page_, page_, PROT_NONE);
    data_ = reinterpret_cast<T *>(base_ + dataPages_ * page_) - count;
  }
  ~Guarded() { munmap(base_, (dataPages_ + 1) * page_); }
  Guarded(const Guarded &) = delete;
  T *data() { return data_; }
  T &operator[](size_t i) { return data_[i]; }
  size_t size() const { return count_; }

private:
  size_t count_, page_, dataPages_;
  char *base_;
  T *data_;
};

} // namespace octet::test

#endif
