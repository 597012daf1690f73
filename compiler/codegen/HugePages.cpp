//===- HugePages.cpp - buffers on 2 MiB pages where the kernel gives them ---===//
#include "compiler/codegen/HugePages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

namespace octet {

bool hugePagesAvailable() {
  static const bool available = [] {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    std::getline(in, line); // "always [madvise] never": the bracketed one is in force
    return line.find("[always]") != std::string::npos ||
           line.find("[madvise]") != std::string::npos;
  }();
  return available;
}

void *hugePageAllocate(size_t bytes) {
  constexpr size_t kLine = 64;
  bytes = std::max<size_t>(bytes, 1);
  if (bytes < kHugePageBytes)
    return std::aligned_alloc(kLine, (bytes + kLine - 1) / kLine * kLine);
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void *data = std::aligned_alloc(kHugePageBytes, rounded);
#ifdef MADV_HUGEPAGE
  // Only the 2 MiB pages the buffer fills: a huge page for the tail would be
  // mostly waste (a 2.4 MB weight would take 4 MiB); it stays on 4 KiB pages.
  if (data)
    ::madvise(data, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE); // advice only
#endif
  return data;
}

std::shared_ptr<uint8_t> hugePageBuffer(size_t bytes) {
  auto *data = static_cast<uint8_t *>(hugePageAllocate(bytes));
  if (!data)
    return nullptr;
  return std::shared_ptr<uint8_t>(data, [](uint8_t *p) { std::free(p); });
}

} // namespace octet
