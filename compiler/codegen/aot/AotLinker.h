//===- AotLinker.h - a PlanImage into a self-contained model.so -*- C++ -*-===//
//
// `octetc compile` writes the compiled model (runtime/PlanImage.h) as one
// shared object (docs/aot.md):
//  - the plan and the constants (weights) in .rodata, the kernel code in
//    .text, included with .incbin into an assembly file that also defines the
//    exported descriptor octet_aot_image (runtime/AotLoader.h);
//  - linked by the system C compiler with the runtime's static archives, so
//    the .so serves the C API (octet.h) itself and depends only on libc,
//    libm, libgomp and, when a step uses oneDNN, libdnnl;
//  - reproducibly: the inputs get fixed names in a private temporary
//    directory that is the compiler's working directory, and no build id or
//    time stamp is written, so the same model gives the same bytes.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_AOT_AOTLINKER_H
#define OCTET_COMPILER_CODEGEN_AOT_AOTLINKER_H

#include "compiler/codegen/Status.h"
#include "runtime/PlanImage.h"

#include <cstdint>
#include <string>
#include <vector>

namespace octet::aot {

struct LinkOptions {
  /// Link libdnnl and the oneDNN providers (a step runs on oneDNN); else the
  /// stub (compiler/codegen/onednn/OneDnnStub.cpp).
  bool oneDnn = false;
};

/// What a link did, for octetc's summary.
struct LinkReport {
  std::string compiler;   ///< the C compiler's command and how it was found
  std::string runtimeDir; ///< where the runtime archives came from
  uint64_t bytes = 0;     ///< size of the written .so
};

/// The C compiler: $CC when set and not empty (split at spaces, so
/// "ccache gcc" works), else `cc` on PATH. An error names what was tried.
rt::Status findCCompiler(std::vector<std::string> &command, std::string &description);

/// The directory of the AOT runtime: $OCTET_AOT_RUNTIME_DIR when set, else
/// the build tree's (configured at build time), and the paths of what a link
/// takes from it: the C API object first, then the archives (with oneDNN's
/// providers or their stub, per `options`). An error names a missing file.
rt::Status findAotRuntime(const LinkOptions &options, std::string &dir,
                          std::vector<std::string> &files);

/// The assembly that embeds the image from plan.bin, constants.bin and
/// code.bin (relative names, in the working directory of the link).
std::string imageAssembly(const rt::PlanImage &image);

/// Writes `image` as a shared object at `outputPath` (replacing it only once
/// the link succeeded). A failed compile or link is an error that shows the
/// command and the compiler's output.
rt::Status linkSharedObject(const rt::PlanImage &image, const std::string &outputPath,
                            const LinkOptions &options, LinkReport *report = nullptr);

} // namespace octet::aot

#endif
