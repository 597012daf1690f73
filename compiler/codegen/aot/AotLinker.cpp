//===- AotLinker.cpp - a PlanImage into a self-contained model.so ---------===//
#include "compiler/codegen/aot/AotLinker.h"

#include "compiler/codegen/aot/AotConfig.h"
#include "runtime/AotLoader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <tuple>

namespace octet::aot {

namespace {

using rt::Status;

// The fixed names inside the link's private directory: only these reach the
// assembler and the linker, so no random path can end up in the output.
constexpr const char *kPlanFile = "plan.bin";
constexpr const char *kConstantsFile = "constants.bin";
constexpr const char *kCodeFile = "code.bin";
constexpr const char *kAssemblyFile = "model.s";
constexpr const char *kExportsFile = "exports.map";
constexpr const char *kOutputFile = "model.so";
constexpr const char *kLogFile = "link.log";

bool isExecutable(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

/// `program` as execvp would find it; empty if it would not.
std::string searchPath(const std::string &program) {
  if (program.find('/') != std::string::npos)
    return isExecutable(program) ? program : std::string();
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (isExecutable(candidate))
      return candidate;
  }
  return std::string();
}

Status writeFile(const std::string &path, const void *data, size_t bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out && bytes)
    out.write(static_cast<const char *>(data), std::streamsize(bytes));
  out.close();
  if (!out)
    return Status::error("cannot write '" + path + "': " + std::strerror(errno));
  return Status();
}

std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string quoted(const std::vector<std::string> &command) {
  std::string line;
  for (const std::string &arg : command) {
    line += line.empty() ? "" : " ";
    line += arg.find_first_of(" \t'\"$") == std::string::npos ? arg : "'" + arg + "'";
  }
  return line;
}

/// Runs `command` in `dir` with stdout and stderr into dir/kLogFile; the exit
/// status, or -1 with `error` when it could not be started.
int runIn(const std::string &dir, const std::vector<std::string> &command, std::string &error) {
  std::vector<char *> argv;
  for (const std::string &arg : command)
    argv.push_back(const_cast<char *>(arg.c_str()));
  argv.push_back(nullptr);
  const std::string log = dir + "/" + kLogFile;
  pid_t child = ::fork();
  if (child < 0) {
    error = std::string("fork failed: ") + std::strerror(errno);
    return -1;
  }
  if (child == 0) {
    // Only async-signal-safe calls until exec.
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ::chdir(dir.c_str()) != 0)
      ::_exit(126);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execvp(argv[0], argv.data());
    const char *why = "exec failed\n";
    ssize_t ignored = ::write(2, why, std::strlen(why));
    (void)ignored;
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR) {
      error = std::string("waitpid failed: ") + std::strerror(errno);
      return -1;
    }
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

/// A private directory for one link, removed with everything in it.
class TempDir {
public:
  Status create() {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/octet-aot-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (!::mkdtemp(buffer.data()))
      return Status::error("cannot create a temporary directory '" + pattern +
                           "': " + std::strerror(errno));
    path_ = buffer.data();
    return Status();
  }
  ~TempDir() {
    if (path_.empty())
      return;
    for (const char *name :
         {kPlanFile, kConstantsFile, kCodeFile, kAssemblyFile, kExportsFile, kOutputFile, kLogFile})
      ::unlink((path_ + "/" + name).c_str());
    ::rmdir(path_.c_str());
  }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

/// Copies `from` to `to` through a temporary beside it, so `to` is replaced
/// only by a complete file.
Status copyInto(const std::string &from, const std::string &to, uint64_t &bytes) {
  std::ifstream in(from, std::ios::binary);
  const std::string partial = to + ".partial";
  std::ofstream out(partial, std::ios::binary | std::ios::trunc);
  if (!in || !out)
    return Status::error("cannot write '" + to + "': " + std::strerror(errno));
  out << in.rdbuf();
  out.close();
  if (!out) {
    ::unlink(partial.c_str());
    return Status::error("cannot write '" + to + "': " + std::strerror(errno));
  }
  if (::rename(partial.c_str(), to.c_str()) != 0) {
    int err = errno;
    ::unlink(partial.c_str());
    return Status::error("cannot write '" + to + "': " + std::strerror(err));
  }
  struct stat st;
  bytes = ::stat(to.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
  return Status();
}

} // namespace

Status findCCompiler(std::vector<std::string> &command, std::string &description) {
  command.clear();
  const char *cc = std::getenv("CC");
  if (cc && *cc) {
    std::stringstream words(cc);
    for (std::string word; words >> word;)
      command.push_back(word);
  }
  if (!command.empty()) {
    std::string found = searchPath(command[0]);
    if (found.empty())
      return Status::error("no C compiler to link the model.so: $CC is '" + std::string(cc) +
                           "', and '" + command[0] + "' is not an executable" +
                           (command[0].find('/') == std::string::npos ? " on PATH" : ""));
    description = found + " (from $CC)";
    return Status();
  }
  std::string found = searchPath("cc");
  if (found.empty())
    return Status::error("no C compiler to link the model.so: $CC is not set and 'cc' is not on "
                         "PATH; install one (e.g. apt install gcc) or set CC");
  command.push_back("cc");
  description = found + " (cc on PATH)";
  return Status();
}

Status findAotRuntime(const LinkOptions &options, std::string &dir,
                      std::vector<std::string> &files) {
  const char *env = std::getenv("OCTET_AOT_RUNTIME_DIR");
  const bool fromEnv = env && *env;
  dir = fromEnv ? env : OCTET_AOT_RUNTIME_DIR_DEFAULT;
  files = {OCTET_AOT_CAPI_OBJECT, OCTET_AOT_RUNTIME_ARCHIVES options.oneDnn
                                      ? OCTET_AOT_ONEDNN_ARCHIVE
                                      : OCTET_AOT_ONEDNN_STUB_ARCHIVE};
  for (const std::string &file : files) {
    std::string path = dir + "/" + file;
    if (::access(path.c_str(), R_OK) != 0)
      return Status::error("the AOT runtime is incomplete: no '" + path + "' (" +
                           (fromEnv ? "the directory comes from $OCTET_AOT_RUNTIME_DIR"
                                    : "the directory was configured when octetc was built; "
                                      "build the target octet_aot_runtime, or point "
                                      "$OCTET_AOT_RUNTIME_DIR at a copy") +
                           ")");
  }
  for (std::string &file : files)
    file = dir + "/" + file;
  return Status();
}

std::string imageAssembly(const rt::PlanImage &image) {
  // The layout of rt::AotImageDescriptor: magic, layout version, reserved,
  // then address and size of the plan, the constants and the code.
  static_assert(rt::kAotImageLayoutVersion == 1, "update the descriptor written here");
  std::ostringstream s;
  s << "# An Octet model image, written by octetc compile (compiler/codegen/aot).\n"
    << "\t.section .rodata.octet_plan,\"a\",@progbits\n\t.balign 64\n"
    << ".Loctet_plan:\n\t.incbin \"" << kPlanFile
    << "\"\n"
    // Page-aligned weights: each page of the mapped file holds only weights.
    << "\t.section .rodata.octet_constants,\"a\",@progbits\n\t.balign 4096\n"
    << ".Loctet_constants:\n\t.incbin \"" << kConstantsFile << "\"\n"
    << "\t.section .text.octet_code,\"ax\",@progbits\n\t.balign 64\n"
    << ".Loctet_code:\n\t.incbin \"" << kCodeFile << "\"\n"
    << "\t.section .data.rel.ro.octet_aot_image,\"aw\",@progbits\n\t.balign 64\n"
    << "\t.globl " << rt::kAotImageSymbol << "\n"
    << "\t.type " << rt::kAotImageSymbol << ",@object\n"
    << "\t.size " << rt::kAotImageSymbol << "," << sizeof(rt::AotImageDescriptor) << "\n"
    << rt::kAotImageSymbol << ":\n"
    << "\t.ascii \"" << std::string(rt::kAotImageMagic, sizeof(rt::kAotImageMagic)) << "\"\n"
    << "\t.long " << rt::kAotImageLayoutVersion << ", 0\n"
    << "\t.quad .Loctet_plan, " << image.plan.size() << "\n"
    << "\t.quad .Loctet_constants, " << image.constants.size() << "\n"
    << "\t.quad .Loctet_code, " << image.code.size()
    << "\n"
    // No executable stack for a library that never needs one.
    << "\t.section .note.GNU-stack,\"\",@progbits\n";
  return s.str();
}

Status linkSharedObject(const rt::PlanImage &image, const std::string &outputPath,
                        const LinkOptions &options, LinkReport *report) {
  std::vector<std::string> command;
  std::string compiler;
  if (Status status = findCCompiler(command, compiler); !status.ok())
    return status;
  std::string runtimeDir;
  std::vector<std::string> runtime;
  if (Status status = findAotRuntime(options, runtimeDir, runtime); !status.ok())
    return status;

  TempDir dir;
  if (Status status = dir.create(); !status.ok())
    return status;
  const std::string assembly = imageAssembly(image);
  // Only the C API and the image descriptor are exported (octet_*).
  const std::string exports = "{\n  global: octet_*;\n  local: *;\n};\n";
  for (auto [name, data, bytes] :
       {std::make_tuple(kPlanFile, (const void *)image.plan.data(), image.plan.size()),
        std::make_tuple(kConstantsFile, (const void *)image.constants.data(),
                        image.constants.size()),
        std::make_tuple(kCodeFile, (const void *)image.code.data(), image.code.size()),
        std::make_tuple(kAssemblyFile, (const void *)assembly.data(), assembly.size()),
        std::make_tuple(kExportsFile, (const void *)exports.data(), exports.size())})
    if (Status status = writeFile(dir.path() + "/" + name, data, bytes); !status.ok())
      return status;

  command.insert(command.end(),
                 {"-shared", "-o", kOutputFile, kAssemblyFile, runtime[0],
                  std::string("-Wl,--version-script=") + kExportsFile,
                  // Everything from archives stays internal (the C API is the
                  // object runtime[0], not an archive).
                  "-Wl,--exclude-libs,ALL",
                  // Calls inside the library never go through the PLT to
                  // another library's octet_* (liboctet.so in the same process).
                  "-Wl,-Bsymbolic", "-Wl,--build-id=none", "-Wl,--no-undefined",
                  "-Wl,-z,noexecstack", "-Wl,-z,relro", "-Wl,-z,now", "-Wl,--start-group"});
  command.insert(command.end(), runtime.begin() + 1, runtime.end());
  command.push_back("-Wl,--end-group");
  if (options.oneDnn)
    command.push_back(OCTET_AOT_DNNL_LIBRARY);
  // libstdc++ and libgcc are linked in; `cc` (unlike c++) adds neither by
  // itself. libgomp by name, not -fopenmp: clang's -fopenmp means libomp.
  command.insert(command.end(),
                 {"-Wl,-Bstatic", "-lstdc++", "-Wl,-Bdynamic", "-static-libgcc", "-lgomp", "-lm"});
  // A sanitized build's runtime archives need the sanitizers' runtimes.
  if (*OCTET_AOT_SANITIZE)
    command.push_back(std::string("-fsanitize=") + OCTET_AOT_SANITIZE);

  std::string error;
  int exit = runIn(dir.path(), command, error);
  if (exit != 0) {
    std::string log = readText(dir.path() + "/" + kLogFile);
    if (exit < 0)
      return Status::error("cannot run the C compiler " + compiler + ": " + error);
    return Status::error("linking the model.so failed: " + compiler + " exited with status " +
                         std::to_string(exit) +
                         "\n  command (in a temporary directory): " + quoted(command) + "\n" + log);
  }
  // The checksum of every byte the linker wrote, verified before dlopen.
  if (Status status = rt::appendAotFileTrailer(dir.path() + "/" + kOutputFile); !status.ok())
    return status;
  uint64_t bytes = 0;
  if (Status status = copyInto(dir.path() + "/" + kOutputFile, outputPath, bytes); !status.ok())
    return status;
  if (report) {
    report->compiler = compiler;
    report->runtimeDir = runtimeDir;
    report->bytes = bytes;
  }
  return Status();
}

} // namespace octet::aot
