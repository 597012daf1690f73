//===- Inspect.cpp - octetc inspect: what a model.so holds ----------------===//
#include "tools/octetc/Octetc.h"

#include "runtime/AotLoader.h"
#include "runtime/PlanImage.h"

#include "llvm/Support/raw_ostream.h"

#include <link.h>

namespace octetc {

/// Where the mapped byte `address` lies in its shared object's file (through
/// the loaded segments' program headers), -1 if in none: for tests that
/// patch a model.so's sections.
static int64_t fileOffsetOf(const void *address) {
  struct Search {
    uintptr_t address;
    int64_t offset = -1;
  } search{reinterpret_cast<uintptr_t>(address)};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto *s = static_cast<Search *>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &ph = info->dlpi_phdr[i];
          uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && s->address >= begin && s->address < begin + ph.p_filesz) {
            s->offset = int64_t(ph.p_offset + (s->address - begin));
            return 1;
          }
        }
        return 0;
      },
      &search);
  return search.offset;
}

int runInspect() {
  std::shared_ptr<const void> library;
  rt::PlanImageView view;
  if (rt::Status status = rt::mapAotModel(inspectModel, library, view); !status.ok()) {
    llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  llvm::outs() << "model.so '" << inspectModel << "': plan " << view.planBytes
               << " bytes at file offset " << fileOffsetOf(view.plan) << ", constants "
               << view.constantsBytes << " bytes at file offset " << fileOffsetOf(view.constants)
               << ", code " << view.codeBytes << " bytes at file offset " << fileOffsetOf(view.code)
               << "\n";
  if (!inspectCode.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream file(inspectCode, ec);
    if (ec) {
      llvm::errs() << "error: cannot write --code '" << inspectCode << "': " << ec.message()
                   << "\n";
      return 1;
    }
    file.write(reinterpret_cast<const char *>(view.code), view.codeBytes);
    llvm::outs() << "code section written to '" << inspectCode << "'\n";
  }
  rt::PlanImageInfo info;
  if (rt::Status status = rt::describePlanImage(view, info); !status.ok()) {
    llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  llvm::outs() << "Octet " << info.octetVersion << ", plan format " << info.formatVersion
               << ", target '" << info.target << "' (" << info.features.describe() << "), "
               << info.constants.size() << " constant ranges, " << info.kernels.size()
               << " kernel calls:\n";
  for (size_t i = 0; i < info.kernels.size(); ++i)
    llvm::outs() << "  kernel " << i << ": " << info.kernels[i].name << " at code offset "
                 << info.kernels[i].offset << ", " << info.kernels[i].bytes << " bytes\n";
  std::unique_ptr<rt::Plan> plan;
  rt::KernelOptions options;
  if (rt::Status status = rt::readPlanImage(view, library, plan, &options); !status.ok()) {
    llvm::outs() << "cannot open it on this CPU: " << status.message() << "\n";
    return 0;
  }
  llvm::outs() << "target '" << options.target << "': " << plan->steps.size() << " steps, "
               << plan->inputs.size() << " inputs, " << plan->outputs.size() << " outputs\n";
  for (size_t i = 0; i < plan->steps.size(); ++i)
    llvm::outs() << "  step " << i << ": " << plan->steps[i]->kind() << " '"
                 << plan->steps[i]->location << "'\n";
  return 0;
}

} // namespace octetc
