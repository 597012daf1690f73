//===- plan_image_fuzzer.cpp - libFuzzer: the plan image reader ------------===//
//
// readPlanImage on mutated images: input = u32 plan bytes, u32 code bytes,
// the plan section, the code section, the constants (test/fuzz/seeds.py cuts
// them out of real model.so files). The harness re-seals the header's three
// checksums after mutation, so mutations reach the tables and recipes behind
// them instead of stopping at a checksum mismatch. Reading must give a Plan
// that validates, or an error: never a crash or an out-of-bounds read. (The
// code section is never run: a model.so is code, docs/security.md.)
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"
#include "runtime/PlanImage.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

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
  // bytes), u64 checksums of the rest, the constants and the code.
  if (plan.size() >= 16) {
    uint32_t versionLength;
    std::memcpy(&versionLength, plan.data() + 12, 4);
    const uint64_t sums = 16 + uint64_t(versionLength);
    if (sums + 24 <= plan.size()) {
      const size_t restStart = size_t(sums + 24);
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
