//===- KernelGenerator.cpp ------------------------------------------------===//
#include "compiler/codegen/x86/KernelGenerator.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace octet::x86 {

// DontSetProtectRWE: the buffer stays read+write while generating and becomes
// read+execute in finalize(); it is never writable and executable together.
KernelGenerator::KernelGenerator(std::string name, Isa isa, size_t maxCodeBytes)
    : Xbyak::CodeGenerator(maxCodeBytes, Xbyak::DontSetProtectRWE), name_(std::move(name)),
      isa_(isa) {}

namespace {
thread_local KernelCodeCapture *activeCapture = nullptr;
thread_local KernelCodeReplay *activeReplay = nullptr;
std::atomic<uint64_t> generatedCount{0};
} // namespace

KernelCodeCapture::KernelCodeCapture() : previous_(activeCapture) { activeCapture = this; }
KernelCodeCapture::~KernelCodeCapture() { activeCapture = previous_; }

KernelCodeCaptureSuspend::KernelCodeCaptureSuspend() : saved_(activeCapture) {
  activeCapture = nullptr;
}
KernelCodeCaptureSuspend::~KernelCodeCaptureSuspend() { activeCapture = saved_; }

KernelCodeReplay::KernelCodeReplay(std::vector<Kernel> kernels)
    : previous_(activeReplay), kernels_(std::move(kernels)) {
  activeReplay = this;
}
KernelCodeReplay::~KernelCodeReplay() { activeReplay = previous_; }

uint64_t kernelsGenerated() { return generatedCount.load(); }

bool kernelsForAnImage() { return activeCapture || activeReplay; }

namespace {
/// With OCTET_PERF_MAP set (not "0"), each kernel's code range and name go to
/// /tmp/perf-PID.map, the file `perf report` reads to name JIT code.
void notePerfMap(const void *code, size_t size, const std::string &name) {
  static const bool enabled = [] {
    const char *v = std::getenv("OCTET_PERF_MAP");
    return v && *v && std::string(v) != "0";
  }();
  if (!enabled)
    return;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  static FILE *map =
      std::fopen(("/tmp/perf-" + std::to_string(getpid()) + ".map").c_str(), "a");
  if (!map)
    return;
  std::fprintf(map, "%lx %zx %s\n", reinterpret_cast<unsigned long>(code), size, name.c_str());
  std::fflush(map);
}
} // namespace

void KernelGenerator::finalize() {
  if (generated_)
    return;
  if (KernelCodeReplay *replay = activeReplay) {
    if (replay->next_ >= replay->kernels_.size())
      throw std::runtime_error("kernel '" + name_ + "' is not in the model's code (it holds " +
                               std::to_string(replay->kernels_.size()) + " kernels)");
    const KernelCodeReplay::Kernel &k = replay->kernels_[replay->next_];
    if (k.name != name_)
      throw std::runtime_error("kernel " + std::to_string(replay->next_) + " of the model's code is '" +
                               k.name + "', the step asks for '" + name_ + "'");
    replay->next_ += 1;
    replayed_ = k.code;
    replayedSize_ = codeSize_ = k.size;
    generated_ = true;
    notePerfMap(replayed_, replayedSize_, name_);
    return;
  }
  generate();
  readyRE();
  setProtectModeRE();
  generated_ = true;
  generatedCount.fetch_add(1);
  notePerfMap(getCode(), getSize(), name_);
  if (KernelCodeCapture *capture = activeCapture)
    capture->kernels_.push_back({name_, std::vector<uint8_t>(getCode(), getCode() + getSize())});
}

std::vector<uint8_t> KernelGenerator::bytes() {
  finalize();
  if (replayed_)
    return std::vector<uint8_t>(replayed_, replayed_ + replayedSize_);
  return std::vector<uint8_t>(getCode(), getCode() + getSize());
}

void KernelGenerator::preamble() {
  for (const Xbyak::Reg64 &r : {rbx, rbp, r12, r13, r14, r15})
    push(r);
}

void KernelGenerator::postamble() {
  for (const Xbyak::Reg64 &r : {r15, r14, r13, r12, rbp, rbx})
    pop(r);
  vzeroupper();
  ret();
  codeSize_ = getSize();
}

} // namespace octet::x86
