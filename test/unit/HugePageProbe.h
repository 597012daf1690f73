//===- HugePageProbe.h - does the kernel back a buffer with huge pages? -*- C++ -*-===//
//
// For tests of buffers that compiler/codegen/HugePages.h places: the mapping
// that holds an address, read from /proc/self/smaps.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_TEST_UNIT_HUGEPAGEPROBE_H
#define OCTET_TEST_UNIT_HUGEPAGEPROBE_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace octet::test {

/// A field (e.g. "THPeligible", "AnonHugePages") of the /proc/self/smaps
/// mapping that holds `address`, as a number (kB for sizes); -1 where absent.
inline long smapsField(uintptr_t address, const std::string &field) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = address >= lo && address < hi;
      continue;
    }
    if (inside && line.rfind(field + ":", 0) == 0)
      return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

/// 1 where the kernel may back the mapping holding `address` with huge pages
/// (madvised, or mode "always").
inline int hugePageEligible(uintptr_t address) { return int(smapsField(address, "THPeligible")); }

} // namespace octet::test

#endif // OCTET_TEST_UNIT_HUGEPAGEPROBE_H
