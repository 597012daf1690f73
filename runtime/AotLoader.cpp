//===- AotLoader.cpp - open a compiled model.so ---------------------------===//
#include "runtime/AotLoader.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace octet::rt {

namespace {

Status notLoadable(const std::string &path, const std::string &why) {
  return Status::error("'" + path + "' is not a loadable Octet model.so: " + why);
}

/// [offset, offset + count * size) lies within `fileBytes` (no overflow).
bool tableFits(uint64_t offset, uint64_t count, uint64_t size, uint64_t fileBytes) {
  if (count == 0)
    return true;
  if (size == 0 || count > fileBytes / size)
    return false;
  return offset <= fileBytes && count * size <= fileBytes - offset;
}

} // namespace

Status checkSharedObjectFile(const std::string &path) {
  // Without blocking (a FIFO never makes open() wait) and only a regular file:
  // what the dynamic loader will map must have a size to check against.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return Status::error("cannot open '" + path + "': " + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return Status::error("cannot open '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return notLoadable(path, S_ISDIR(st.st_mode)    ? "it is a directory"
                             : S_ISFIFO(st.st_mode) ? "it is a FIFO, not a regular file"
                                                    : "it is not a regular file");
  const uint64_t fileBytes = uint64_t(st.st_size);
  auto readAt = [&](void *into, uint64_t bytes, uint64_t offset) {
    uint64_t done = 0;
    while (done < bytes) {
      ssize_t n = ::pread(fd, static_cast<char *>(into) + done, bytes - done, off_t(offset + done));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return false;
      done += uint64_t(n);
    }
    return true;
  };
  Elf64_Ehdr header;
  if (fileBytes < sizeof(header))
    return notLoadable(path,
                       "it has " + std::to_string(fileBytes) + " bytes, less than an ELF64 header");
  if (!readAt(&header, sizeof(header), 0))
    return notLoadable(path, "cannot read its ELF header");
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return notLoadable(path, "it is not an ELF file");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_machine != EM_X86_64)
    return notLoadable(path, "it is not a 64-bit x86-64 ELF file");
  if (header.e_type != ET_DYN)
    return notLoadable(path, "it is not a shared object (ELF type " +
                                 std::to_string(header.e_type) + ")");
  if (header.e_phentsize != sizeof(Elf64_Phdr) ||
      !tableFits(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), fileBytes))
    return notLoadable(path, "its program headers lie outside its " + std::to_string(fileBytes) +
                                 " bytes (truncated?)");
  if (!tableFits(header.e_shoff, header.e_shnum, header.e_shentsize, fileBytes))
    return notLoadable(
        path, "its section headers end at byte " +
                  std::to_string(header.e_shoff + uint64_t(header.e_shnum) * header.e_shentsize) +
                  ", past its " + std::to_string(fileBytes) + " bytes (truncated)");
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  if (header.e_phnum &&
      !readAt(segments.data(), segments.size() * sizeof(Elf64_Phdr), header.e_phoff))
    return notLoadable(path, "cannot read its program headers");
  for (const Elf64_Phdr &segment : segments)
    if (segment.p_type == PT_LOAD && !tableFits(segment.p_offset, 1, segment.p_filesz, fileBytes))
      return notLoadable(path, "a loadable segment ends at byte " +
                                   std::to_string(segment.p_offset + segment.p_filesz) +
                                   ", past its " + std::to_string(fileBytes) +
                                   " bytes (truncated)");
  return Status();
}

Status viewOfDescriptor(const AotImageDescriptor &descriptor, PlanImageView &view) {
  if (std::memcmp(descriptor.magic, kAotImageMagic, sizeof(kAotImageMagic)) != 0)
    return Status::error("its " + std::string(kAotImageSymbol) +
                         " is not an Octet image descriptor (wrong magic)");
  if (descriptor.layoutVersion != kAotImageLayoutVersion)
    return Status::error("its image descriptor has layout version " +
                         std::to_string(descriptor.layoutVersion) + ", this Octet reads " +
                         std::to_string(kAotImageLayoutVersion) +
                         " (compile the model again with this octetc)");
  view.plan = descriptor.plan;
  view.planBytes = descriptor.planBytes;
  view.constants = descriptor.constants;
  view.constantsBytes = descriptor.constantsBytes;
  view.code = descriptor.code;
  view.codeBytes = descriptor.codeBytes;
  return Status();
}

Status mapAotModel(const std::string &path, std::shared_ptr<const void> &handle,
                   PlanImageView &view) {
  if (Status status = checkSharedObjectFile(path); !status.ok())
    return status;
  // A name without '/' would make dlopen search the library path, not open the file.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  void *library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    return notLoadable(path, std::string("dlopen failed: ") + (why ? why : "unknown reason"));
  }
  handle =
      std::shared_ptr<const void>(library, [](const void *h) { dlclose(const_cast<void *>(h)); });
  const auto *descriptor = static_cast<const AotImageDescriptor *>(dlsym(library, kAotImageSymbol));
  if (!descriptor)
    return notLoadable(path, std::string("it exports no ") + kAotImageSymbol +
                                 " (a shared object, but not one octetc compile wrote)");
  if (Status status = viewOfDescriptor(*descriptor, view); !status.ok())
    return notLoadable(path, status.message());
  return Status();
}

Status openAotImage(const AotImageDescriptor &descriptor, std::shared_ptr<const void> owner,
                    std::unique_ptr<Plan> &plan, KernelOptions *options) {
  PlanImageView view;
  if (Status status = viewOfDescriptor(descriptor, view); !status.ok())
    return status;
  return readPlanImage(view, std::move(owner), plan, options);
}

Status openAotModel(const std::string &path, std::unique_ptr<Plan> &plan, KernelOptions *options) {
  std::shared_ptr<const void> handle;
  PlanImageView view;
  if (Status status = mapAotModel(path, handle, view); !status.ok())
    return status;
  if (Status status = readPlanImage(view, std::move(handle), plan, options); !status.ok())
    return Status::error("'" + path + "': " + status.message());
  return Status();
}

} // namespace octet::rt
