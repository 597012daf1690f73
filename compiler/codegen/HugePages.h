//===- HugePages.h - buffers on 2 MiB pages where the kernel gives them -*- C++ -*-===//
//
// Large buffers that every run streams — the packed weights, the activation
// arena — lie on transparent huge pages where the kernel allows them (mode
// `madvise` or `always`): 2 MiB aligned and advised with MADV_HUGEPAGE.
// BERT-base INT8 streams 85 MB of weights from DRAM every run; on 4 KiB pages
// each page of a weight costs a TLB miss and a page walk (two-level under a
// hypervisor), which the GEMM's prefetches do not hide (docs/decisions.md).
// Advice only: the kernel may still give 4 KiB pages.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_HUGEPAGES_H
#define OCTET_COMPILER_CODEGEN_HUGEPAGES_H

#include <cstddef>
#include <cstdint>
#include <memory>

namespace octet {

constexpr size_t kHugePageBytes = size_t(2) << 20;

/// Whether a buffer advised with MADV_HUGEPAGE may get huge pages: the
/// kernel's transparent-huge-page mode
/// (/sys/kernel/mm/transparent_hugepage/enabled) is `madvise` or `always`.
bool hugePagesAvailable();

/// `bytes` (at least 1) of memory, free with std::free, null when out of
/// memory. From 2 MiB on: 2 MiB aligned, the whole 2 MiB pages it fills
/// madvised for huge pages (the tail past them stays on 4 KiB pages, so no
/// memory goes to waste); below: 64-byte aligned.
void *hugePageAllocate(size_t bytes);

/// The same, owned (freed with the last owner); null when out of memory.
std::shared_ptr<uint8_t> hugePageBuffer(size_t bytes);

} // namespace octet

#endif // OCTET_COMPILER_CODEGEN_HUGEPAGES_H
