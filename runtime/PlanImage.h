//===- PlanImage.h - a Plan as bytes: the AOT model format -------*- C++ -*-===//
//
// What `octetc compile` puts into a model.so and what opening one reads back
// (docs/aot.md). Three sections:
//  - plan: a header (magic, format version, Octet version, checksums of all
//    three sections, the target CPU's features) and the Plan's tables: scalars,
//    tensors, arena slots, inputs and outputs, and one recipe per step (the
//    factory and the arguments it was called with, runtime/StepRecipe.h);
//  - constants: every constant byte range the tensors and recipes point at,
//    each 64-byte aligned (the section itself must be placed 64-byte aligned);
//  - code: the machine code of every kernel the steps generated while the
//    Plan was built (position independent), each 64-byte aligned.
// Reading rebuilds each step from its recipe with the same factory, but the
// kernels are not generated again: they come from the code section in the
// order they were generated (x86::KernelCodeReplay), and constants point into
// the constants section, so a mapped model.so is used in place.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_PLANIMAGE_H
#define OCTET_RUNTIME_PLANIMAGE_H

#include "runtime/Plan.h"
#include "runtime/Steps.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace octet::x86 {
class KernelCodeCapture;
}

namespace octet::rt {

/// Bumped on every change of the byte layout, or of what the kernel code
/// expects of the runtime that calls it (8: the INT8 GEMM's compensation is
/// passed negated; 9: a qlinear's column groups; 10: the VNNI GEMMs' kernel
/// sets that prefetch into L1; 11: the int8 attention dot kernel reads its
/// row-group count; 12: the bf16 (vdpbf16ps) one too; 13: the FP32 and bf16
/// GEMM kernels prefetch B, in two sets; 14: bf16 linears' fast GELU; 15:
/// the embedding_sum step; 16: a VNNI GEMM kernel call runs several row
/// tiles; 17: an FP32 or bf16 GEMM kernel call too); a reader rejects any
/// other.
constexpr uint32_t kPlanFormatVersion = 17;

struct PlanImage {
  std::vector<uint8_t> plan;
  std::vector<uint8_t> constants;
  std::vector<uint8_t> code;
  /// Kernels the steps use, and how many distinct ones the code section holds.
  size_t kernelCalls = 0, kernels = 0;
};

/// The three sections where they lie (a mapped model.so): nothing is copied.
struct PlanImageView {
  const uint8_t *plan = nullptr;
  size_t planBytes = 0;
  const uint8_t *constants = nullptr;
  size_t constantsBytes = 0;
  const uint8_t *code = nullptr;
  size_t codeBytes = 0;
};

/// Serializes `plan`, built with `options` while `capture` was active on this
/// thread (every step made by buildStep, so it has its recipe). Its constants
/// must still be alive (call it before the compiled module is freed).
Status writePlanImage(const Plan &plan, const KernelOptions &options,
                      const x86::KernelCodeCapture &capture, PlanImage &out);

/// Rebuilds the Plan of an image: checks the magic, the format and Octet
/// versions and the plan and code checksums (a clear error for a corrupt or
/// foreign file; the weights' checksum is checked before the first run, see
/// Plan::firstRunCheck),
/// then that this CPU has every feature the image's target needs (an error
/// naming the missing ones, never SIGILL). `owner` keeps the image's memory
/// alive for as long as the Plan lives (e.g. the dlopen handle).
Status readPlanImage(const PlanImageView &image, std::shared_ptr<const void> owner,
                     std::unique_ptr<Plan> &out, KernelOptions *options = nullptr);

/// What an image holds, read without building it (octetc inspect, on any CPU).
struct PlanImageInfo {
  uint32_t formatVersion = 0;
  std::string octetVersion;
  std::string target;
  x86::CpuFeatures features;
  std::vector<ConstantRange> constants; ///< where each range lies in the constants section
  struct Kernel {
    std::string name;
    uint64_t offset = 0, bytes = 0; ///< in the code section
  };
  std::vector<Kernel> kernels; ///< in the order the steps use them
};

/// Reads an image's header and tables (versions and the plan and code
/// checksums checked, as readPlanImage does; the CPU is not).
Status describePlanImage(const PlanImageView &image, PlanImageInfo &info);

/// The checksum of the image's sections (chunked, on all threads), for the
/// model.so file trailer (AotLoader.h) too.
uint64_t imageChecksum(const uint8_t *data, size_t bytes);

/// Whether a step of `plan` runs on oneDNN (its model.so must link libdnnl).
bool planUsesOneDnn(const Plan &plan);

} // namespace octet::rt

#endif
