//===- plan_image_fuzzer.cpp - libFuzzer: the plan image reader ------------===//
//
// readPlanImage on mutated images: input = u32 plan bytes, u32 code bytes,
// the plan section, the code section, the constants (test/fuzz/seeds.py cuts
// them out of real model.so files). The harness re-seals the header's three
// checksums after mutation, and sets the format version and the target's
// features to what this reader and CPU accept, so mutations (and regression
// inputs made by an older format or on another CPU) reach the tables and
// recipes behind them instead of stopping at the header. Reading must give a Plan
// that validates, or an error: never a crash or an out-of-bounds read. (The
// code section is never run: a model.so is code, docs/security.md.)
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/CpuFeatures.h"
#include "runtime/Executor.h"
#include "runtime/PlanImage.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
/// Clears the image's feature flags that this CPU lacks (the target string
/// and flag count at `at` as written; anything else is left as it is).
void limitFeaturesToHost(std::vector<uint8_t> &plan, size_t at) {
  uint32_t targetLength, count;
  if (at + 4 > plan.size())
    return;
  std::memcpy(&targetLength, plan.data() + at, 4);
  const uint64_t countAt = at + 4 + uint64_t(targetLength);
  if (countAt + 4 > plan.size())
    return;
  std::memcpy(&count, plan.data() + countAt, 4);
  const auto &flags = octet::x86::CpuFeatures::flags();
  if (count != flags.size() || countAt + 4 + count > plan.size())
    return;
  const octet::x86::CpuFeatures &host = octet::x86::CpuFeatures::host();
  for (size_t i = 0; i < flags.size(); ++i)
    if (!(host.*flags[i].field))
      plan[countAt + 4 + i] = 0;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8)
    return 0;
  uint32_t planBytes, codeBytes;
  std::memcpy(&planBytes, data, 4);
  std::memcpy(&codeBytes, data + 4, 4);
  data += 8, size -= 8;
  if (planBytes > size || codeBytes > size - planBytes)
    return 0;
  // Each section in its own exact-size buffer, so a read past one is caught.
  std::vector<uint8_t> plan(data, data + planBytes), code(data + planBytes,
                                                          data + planBytes + codeBytes),
      constants(data + planBytes + codeBytes, data + size);
  // Header: magic (8), u32 format version, str Octet version (u32 length +
  // bytes), u64 checksums of the rest, the constants and the code; then str
  // target, u32 feature count, one byte per feature. The format version is
  // set to this reader's and the features cut to this CPU's, like the
  // checksums are re-sealed: an input made by an older format or on another
  // CPU still reaches the tables (PlanImageTest checks both refusals).
  if (plan.size() >= 12) {
    const uint32_t version = octet::rt::kPlanFormatVersion;
    std::memcpy(plan.data() + 8, &version, 4);
  }
  if (plan.size() >= 16) {
    uint32_t versionLength;
    std::memcpy(&versionLength, plan.data() + 12, 4);
    const uint64_t sums = 16 + uint64_t(versionLength);
    if (sums + 24 <= plan.size()) {
      const size_t restStart = size_t(sums + 24);
      limitFeaturesToHost(plan, restStart);
      uint64_t values[3] = {
          octet::rt::imageChecksum(plan.data() + restStart, plan.size() - restStart),
          octet::rt::imageChecksum(constants.data(), constants.size()),
          octet::rt::imageChecksum(code.data(), code.size())};
      std::memcpy(plan.data() + sums, values, sizeof(values));
    }
  }
  octet::rt::PlanImageView view;
  view.plan = plan.data(), view.planBytes = plan.size();
  view.code = code.data(), view.codeBytes = code.size();
  view.constants = constants.data(), view.constantsBytes = constants.size();
  std::unique_ptr<octet::rt::Plan> result;
  octet::rt::Status status = octet::rt::readPlanImage(view, nullptr, result);
  if (status.ok()) {
    if (!result) {
      std::fprintf(stderr, "readPlanImage succeeded without a plan\n");
      std::abort();
    }
    // What the reader accepts is well-formed (the executor relies on it).
    if (octet::rt::Status valid = octet::rt::validatePlan(*result); !valid.ok()) {
      std::fprintf(stderr, "readPlanImage accepted a malformed plan: %s\n",
                   valid.message().c_str());
      std::abort();
    }
  } else if (status.message().empty()) {
    std::fprintf(stderr, "readPlanImage failed without a message\n");
    std::abort();
  }
  return 0;
}
