//===- AotLoader.h - open a compiled model.so ---------------------*- C++ -*-===//
//
// A model.so written by `octetc compile` (compiler/codegen/aot/AotLinker.h,
// docs/aot.md) exports one descriptor, kAotImageSymbol, that says where its
// three PlanImage sections lie inside the mapped file: the plan and the
// constants in .rodata, the kernel code in .text. Opening one checks the file
// (so a truncated or foreign file is an error, not a crash in the dynamic
// loader), dlopens it and rebuilds the Plan (readPlanImage): the code and the
// plan are used where they are mapped; the constants are copied onto huge
// pages where the host gives them, or read where they are mapped
// (ConstantPlacement: option "constants").
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

/// The last 32 bytes of a model.so, after everything the linker wrote: a
/// checksum (imageChecksum) of every byte before them. `octetc compile`
/// appends it; opening verifies it before the dynamic loader sees the file,
/// so a corrupt file (its dynamic section, relocations, hash tables, program
/// headers, code or weights) is an error, never a crash inside dlopen. It
/// guards against damage, not against an adversary: a model.so is code.
struct AotFileTrailer {
  char magic[8];         ///< kAotTrailerMagic
  uint64_t version;      ///< kAotTrailerVersion
  uint64_t contentBytes; ///< the file's size without the trailer
  uint64_t checksum;     ///< imageChecksum of those bytes
};
static_assert(sizeof(AotFileTrailer) == 32, "the trailer is 32 bytes");
inline constexpr char kAotTrailerMagic[8] = {'O', 'C', 'T', 'E', 'T', 'S', 'U', 'M'};
inline constexpr uint64_t kAotTrailerVersion = 1;

/// Appends the trailer to the linked model.so at `path`.
Status appendAotFileTrailer(const std::string &path);

/// Opens `path` without blocking (a FIFO never makes it wait) and checks that
/// it is a regular file holding an ELF64 little-endian x86-64 shared object
/// that is not truncated (its program headers, loadable segments and section
/// headers lie within the file) and whose trailer's checksum matches every
/// byte before it. On success `fd` (optional) receives the open file, checked
/// as it is (the caller closes it). The error says which check failed.
Status checkSharedObjectFile(const std::string &path, int *fd = nullptr);

/// The sections a descriptor points at; an error for a foreign magic or layout.
Status viewOfDescriptor(const AotImageDescriptor &descriptor, PlanImageView &view);

/// Copies the constants of a mapped model.so (`view`, from mapAotModel or a
/// descriptor) into a buffer on huge pages (compiler/codegen/HugePages.h),
/// points `view` at the copy and makes `owner` keep both alive; the file's
/// pages are dropped from this process. Every run streams the weights, and on
/// the file's 4 KiB pages each page cost the GEMMs a page walk (BERT-base INT8
/// 1 x 128 on Zen 4: the GEMMs 1-2 points of the peak faster, docs/aot.md).
/// Nothing changes where the host gives no huge pages, the section is under
/// 2 MiB, or memory is short (advice, not an error). openAotModel and
/// openAotImage call it unless told ConstantPlacement::Mapped.
void placeConstants(PlanImageView &view, std::shared_ptr<const void> &owner);

/// Where an opened model reads its constants (option "constants"): from a
/// private copy on huge pages (placeConstants), or from the file's pages where
/// they are mapped, which every process that opens the same model.so shares.
enum class ConstantPlacement { HugePages, Mapped };

/// checkSharedObjectFile, dlopen (RTLD_NOW | RTLD_LOCAL) of the very file
/// checked (through /proc/self/fd where it is mounted), the descriptor, and
/// readPlanImage with the dlopen handle as its owner: the library is closed
/// when the Plan dies. `placement`: where the constants are read from.
/// `options` (optional) receives the image's KernelOptions.
Status openAotModel(const std::string &path, std::unique_ptr<Plan> &plan,
                    KernelOptions *options = nullptr,
                    ConstantPlacement placement = ConstantPlacement::HugePages);

/// The same on a model.so that is already mapped (dlopen'ed, or this very
/// library): `owner` keeps it mapped while the Plan lives. The constants are
/// placed as openAotModel places them.
Status openAotImage(const AotImageDescriptor &descriptor, std::shared_ptr<const void> owner,
                    std::unique_ptr<Plan> &plan, KernelOptions *options = nullptr,
                    ConstantPlacement placement = ConstantPlacement::HugePages);

/// Just the dlopen and the descriptor, for `octetc inspect` (no Plan is
/// rebuilt, so this works for a model.so of another CPU target). `handle`
/// keeps the library open.
Status mapAotModel(const std::string &path, std::shared_ptr<const void> &handle,
                   PlanImageView &view);

} // namespace octet::rt

#endif
