//===- Ceilings.cpp - octetc ceilings: the machine's roofline ceilings ----===//
#include "tools/octetc/Octetc.h"

#include "runtime/Ceilings.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace octetc {

int runCeilings() {
  if (ceilingsThreads < 0 || ceilingsRounds < 1) {
    llvm::errs() << "error: --threads and --rounds must be positive\n";
    return 1;
  }
  rt::Ceilings c;
  bool cached = false;
  std::string note;
  rt::Status status = rt::loadOrMeasureCeilings(ceilingsThreads, ceilingsRefresh, c, &cached, &note,
                                                ceilingsRounds);
  if (!note.empty())
    llvm::errs() << "note: " << note << "\n";
  if (!status.ok()) {
    llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  if (ceilingsJson) {
    llvm::outs() << c.toJson();
    return 0;
  }
  llvm::outs() << "ceilings of '" << c.cpu << "' on " << c.host << ", " << c.threads
               << " thread(s) (" << (cached ? "cached" : "measured now") << ": "
               << rt::ceilingsCachePath(ceilingsThreads) << ")\n"
               << llvm::format("  fp32 FMA     %8.1f GFLOP/s  (%s vfmadd231ps)\n", c.fp32Gflops,
                               c.fp32Isa.c_str());
  if (c.int8Gops > 0)
    llvm::outs() << llvm::format(
        "  int8 dot     %8.1f GOP/s    (%s %s)\n", c.int8Gops, c.int8Isa.c_str(),
        c.int8Isa == "avx2_s16" ? "vpmaddwd + vpaddd: exact s16, no VNNI" : "vpdpbusd");
  else
    llvm::outs() << "  int8 dot          - (no VNNI, no AVX2)\n";
  if (c.bf16Gflops > 0)
    llvm::outs() << llvm::format("  bf16 dot     %8.1f GFLOP/s  (avx512_bf16 vdpbf16ps)\n",
                                 c.bf16Gflops);
  else
    llvm::outs() << "  bf16 dot          - (no AVX512-BF16)\n";
  if (c.amxInt8Gops > 0)
    llvm::outs() << llvm::format("  int8 AMX     %8.1f GOP/s    (tdpbusd)\n", c.amxInt8Gops);
  else
    llvm::outs() << "  int8 AMX          -  AMX: not available ("
                 << (c.amxNote.empty() ? "not measured" : c.amxNote) << ")\n";
  auto mib = [](int64_t bytes) { return double(bytes) / double(1 << 20); };
  llvm::outs() << llvm::format("  read L2      %8.1f GB/s     (%.2f MiB in all)\n", c.l2GBs,
                               mib(c.l2BufferBytes))
               << llvm::format("  read L3      %8.1f GB/s     (%.2f MiB in all; L3 %.0f MiB)\n",
                               c.l3GBs, mib(c.l3BufferBytes), mib(c.l3CacheBytes))
               << llvm::format("  read DRAM    %8.1f GB/s     (%.0f MiB in all)\n", c.dramGBs,
                               mib(c.dramBufferBytes))
               << llvm::format("  measured in %.2f s\n", c.measureSeconds);
  // Not a ceiling but the machine's state now (never cached): how far apart
  // the first two threads run.
  if (const double ns = rt::handoffNanoseconds(c.threads); ns > 0) {
    const std::string note = rt::handoffNote(ns);
    llvm::outs() << llvm::format("  thread 0 -> 1 cache-line handoff %.1f ns (measured now)", ns)
                 << (note.empty() ? "" : ": " + note) << "\n";
  }
  return 0;
}

} // namespace octetc
