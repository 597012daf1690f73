//===- CompileStub.cpp - stands in for the compiler driver in C API tests ===//
//
// The runtime tests link runtime/CApi.cpp without the compiler: these
// definitions record the options the C API passed and fail the way the real
// driver does, so the option mapping and the error categories are testable.
//
//===----------------------------------------------------------------------===//
#include "CompileStub.h"

namespace octet {

CompileOptions lastCompileOptions;
int compileCalls = 0;

static rt::Status stubCompile(const std::string &what, const CompileOptions &options) {
  lastCompileOptions = options;
  ++compileCalls;
  if (what.find("unsupported") != std::string::npos)
    return rt::Status::error(what + ": node 'Loop_3': unsupported op Loop");
  return rt::Status::error(what + ": not a valid ONNX model");
}

// The C API checks settings before compiling; the stub accepts every one.
rt::Status validateCompileOptions(const CompileOptions &) { return rt::Status(); }

rt::Status compileOnnxFile(const std::string &path, const CompileOptions &options,
                           std::unique_ptr<rt::Plan> &plan) {
  return stubCompile(path, options);
}

rt::Status compileOnnxBytes(const void *bytes, size_t size, const CompileOptions &options,
                            std::unique_ptr<rt::Plan> &plan) {
  return stubCompile(std::string(static_cast<const char *>(bytes), size), options);
}

rt::Status compileOnnxFileToImage(const std::string &path, const CompileOptions &options,
                                  rt::PlanImage &image, std::unique_ptr<rt::Plan> *plan) {
  return stubCompile(path, options);
}

rt::Status calibrateOnnxFile(const std::string &path, const CompileOptions &options,
                             const std::string &outputPath, CalibrationSummary *summary) {
  return stubCompile(path, options);
}

} // namespace octet
