//===- AotLoader.h - open a compiled model.so ---------------------*- C++ -*-===//
//
// A model.so written by `octetc compile` (compiler/codegen/aot/AotLinker.h,
// docs/aot.md) exports one descriptor, kAotImageSymbol, that says where its
// three PlanImage sections lie inside the mapped file: the plan and the
// constants in .rodata, the kernel code in .text. Opening one checks the file
// (so a truncated or foreign file is an error, not a crash in the dynamic
// loader), dlopens it and rebuilds the Plan in place (readPlanImage): the
// weights and the code are used where they are mapped, nothing is copied.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_AOTLOADER_H
#define OCTET_RUNTIME_AOTLOADER_H

#include "runtime/PlanImage.h"

#include <cstdint>
#include <memory>
#include <string>

namespace octet::rt {

/// The exported descriptor's layout: eight-byte fields in this order. The
/// linker writes it in assembly (AotLinker.cpp), so a change here bumps
/// kAotImageLayoutVersion and the linker's writer together.
struct AotImageDescriptor {
  char magic[8];          ///< kAotImageMagic
  uint32_t layoutVersion; ///< kAotImageLayoutVersion
  uint32_t reserved;
  const uint8_t *plan;
  uint64_t planBytes;
  const uint8_t *constants;
  uint64_t constantsBytes;
  const uint8_t *code;
  uint64_t codeBytes;
};
static_assert(sizeof(AotImageDescriptor) == 64, "the linker writes 64 bytes");

inline constexpr char kAotImageSymbol[] = "octet_aot_image";
inline constexpr char kAotImageMagic[8] = {'O', 'C', 'T', 'E', 'T', 'A', 'O', 'T'};
inline constexpr uint32_t kAotImageLayoutVersion = 1;

/// That `path` is an ELF64 little-endian x86-64 shared object that is not
/// truncated: its program headers, loadable segments and section headers lie
/// within the file. The error says which check failed.
Status checkSharedObjectFile(const std::string &path);

/// The sections a descriptor points at; an error for a foreign magic or layout.
Status viewOfDescriptor(const AotImageDescriptor &descriptor, PlanImageView &view);

/// checkSharedObjectFile, dlopen (RTLD_NOW | RTLD_LOCAL), the descriptor, and
/// readPlanImage with the dlopen handle as its owner: the library is closed
/// when the Plan dies. `options` (optional) receives the image's KernelOptions.
Status openAotModel(const std::string &path, std::unique_ptr<Plan> &plan,
                    KernelOptions *options = nullptr);

/// The same on a model.so that is already mapped (dlopen'ed, or this very
/// library): `owner` keeps it mapped while the Plan lives.
Status openAotImage(const AotImageDescriptor &descriptor, std::shared_ptr<const void> owner,
                    std::unique_ptr<Plan> &plan, KernelOptions *options = nullptr);

/// Just the dlopen and the descriptor, for `octetc inspect` (no Plan is
/// rebuilt, so this works for a model.so of another CPU target). `handle`
/// keeps the library open.
Status mapAotModel(const std::string &path, std::shared_ptr<const void> &handle,
                   PlanImageView &view);

} // namespace octet::rt

#endif
