//===- AotLoader.cpp - open a compiled model.so ---------------------------===//
#include "runtime/AotLoader.h"
#include "compiler/codegen/HugePages.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
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

/// Verifies the trailer of the open file `fd` of `fileBytes` bytes.
Status checkTrailer(const std::string &path, int fd, uint64_t fileBytes) {
  AotFileTrailer trailer;
  if (fileBytes < sizeof(trailer) ||
      ::pread(fd, &trailer, sizeof(trailer), off_t(fileBytes - sizeof(trailer))) !=
          ssize_t(sizeof(trailer)) ||
      std::memcmp(trailer.magic, kAotTrailerMagic, sizeof(kAotTrailerMagic)) != 0)
    return notLoadable(path, "it ends in no Octet checksum trailer (not written by octetc "
                             "compile, or truncated or extended since, or compiled by an older "
                             "Octet: compile it again)");
  if (trailer.version != kAotTrailerVersion)
    return notLoadable(path, "its checksum trailer has version " +
                                 std::to_string(trailer.version) + ", this Octet reads " +
                                 std::to_string(kAotTrailerVersion) + " (compile it again)");
  if (trailer.contentBytes != fileBytes - sizeof(trailer))
    return notLoadable(path, "its checksum trailer covers " +
                                 std::to_string(trailer.contentBytes) + " bytes, but " +
                                 std::to_string(fileBytes - sizeof(trailer)) +
                                 " precede it (truncated or extended)");
  // Mapped read-only and private: the pages are the file's, and the loader
  // maps the same pages from the page cache right after.
  void *bytes = ::mmap(nullptr, trailer.contentBytes, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (bytes == MAP_FAILED)
    return Status::error("cannot read '" + path + "': " + std::strerror(errno));
  const uint64_t sum = imageChecksum(static_cast<const uint8_t *>(bytes), trailer.contentBytes);
  ::munmap(bytes, trailer.contentBytes);
  if (sum != trailer.checksum)
    return notLoadable(path, "the file is corrupt: its checksum does not match (a changed "
                             "byte anywhere in it; copy or compile it again)");
  return Status();
}

} // namespace

Status appendAotFileTrailer(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return Status::error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  Status status;
  void *bytes = MAP_FAILED;
  if (::fstat(fd, &st) != 0 || st.st_size == 0)
    status = Status::error("cannot read '" + path + "'");
  else
    bytes = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (status.ok() && bytes == MAP_FAILED)
    status = Status::error("cannot read '" + path + "': " + std::strerror(errno));
  if (status.ok()) {
    AotFileTrailer trailer;
    std::memcpy(trailer.magic, kAotTrailerMagic, sizeof(kAotTrailerMagic));
    trailer.version = kAotTrailerVersion;
    trailer.contentBytes = uint64_t(st.st_size);
    trailer.checksum = imageChecksum(static_cast<const uint8_t *>(bytes), size_t(st.st_size));
    ::munmap(bytes, size_t(st.st_size));
    if (::pwrite(fd, &trailer, sizeof(trailer), st.st_size) != ssize_t(sizeof(trailer)))
      status = Status::error("cannot write '" + path + "': " + std::strerror(errno));
  }
  if (::close(fd) != 0 && status.ok())
    status = Status::error("cannot write '" + path + "': " + std::strerror(errno));
  return status;
}

Status checkSharedObjectFile(const std::string &path, int *fdOut) {
  // Without blocking (a FIFO never makes open() wait) and only a regular file:
  // what the dynamic loader will map must have a size to check against.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return Status::error("cannot open '" + path + "': " + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() {
      if (fd >= 0)
        ::close(fd);
    }
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
  if (Status status = checkTrailer(path, fd, fileBytes); !status.ok())
    return status;
  if (fdOut) {
    *fdOut = fd;
    closer.fd = -1;
  }
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
  int fd = -1;
  if (Status status = checkSharedObjectFile(path, &fd); !status.ok())
    return status;
  // The loader opens the very file that was checked (not whatever the path
  // names by then) through /proc/self/fd; without /proc, the path. A name
  // without '/' would make dlopen search the library path, not open the file.
  std::string file = "/proc/self/fd/" + std::to_string(fd);
  if (::access(file.c_str(), R_OK) != 0)
    file = path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  void *library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  ::close(fd); // the loader has mapped what it needs
  if (!library) {
    const char *error = dlerror();
    std::string why = error ? error : "unknown reason";
    if (size_t at = why.find(file); at != std::string::npos)
      why.replace(at, file.size(), path);
    return notLoadable(path, "dlopen failed: " + why);
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

namespace {
/// What a Plan opened from a model.so keeps alive: the library, and the copy
/// of its constants where one was made.
struct OpenedModel {
  std::shared_ptr<const void> library;
  std::shared_ptr<uint8_t> constants;
};
} // namespace

// Copies with memcpy through the mapping, then drops the mapping's pages: a
// clean private file mapping, read again from the page cache if ever touched.
void placeConstants(PlanImageView &view, std::shared_ptr<const void> &owner) {
  if (view.constantsBytes < kHugePageBytes || !hugePagesAvailable())
    return;
  std::shared_ptr<uint8_t> copy = hugePageBuffer(view.constantsBytes);
  if (!copy)
    return;
  std::memcpy(copy.get(), view.constants, view.constantsBytes);
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(view.constants) + page - 1) / page * page,
                  end = (reinterpret_cast<uintptr_t>(view.constants) + view.constantsBytes) /
                        page * page;
  if (end > begin)
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
  view.constants = copy.get();
  owner = std::make_shared<OpenedModel>(OpenedModel{std::move(owner), std::move(copy)});
}

Status openAotImage(const AotImageDescriptor &descriptor, std::shared_ptr<const void> owner,
                    std::unique_ptr<Plan> &plan, KernelOptions *options,
                    ConstantPlacement placement) {
  PlanImageView view;
  if (Status status = viewOfDescriptor(descriptor, view); !status.ok())
    return status;
  if (placement == ConstantPlacement::HugePages)
    placeConstants(view, owner);
  return readPlanImage(view, std::move(owner), plan, options);
}

Status openAotModel(const std::string &path, std::unique_ptr<Plan> &plan, KernelOptions *options,
                    ConstantPlacement placement) {
  std::shared_ptr<const void> handle;
  PlanImageView view;
  if (Status status = mapAotModel(path, handle, view); !status.ok())
    return status;
  if (placement == ConstantPlacement::HugePages)
    placeConstants(view, handle);
  if (Status status = readPlanImage(view, std::move(handle), plan, options); !status.ok())
    return Status::error("'" + path + "': " + status.message());
  return Status();
}

} // namespace octet::rt
