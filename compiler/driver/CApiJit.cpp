//===- CApiJit.cpp - the C API's compiler entry points in liboctet.so -----===//
//
// octet_model_create_from_file / _bytes and octet_calibrate: the JIT compiler
// (compiler/driver) behind the shared C API of CApi.cpp. An AOT model.so links
// CApiAot.cpp instead (runtime/). This is liboctet's JIT entry, above the
// runtime (docs/architecture.md).
//
//===----------------------------------------------------------------------===//
#include "octet/octet.h"

#include "compiler/codegen/aot/AotLinker.h"
#include "compiler/driver/Compile.h"
#include "compiler/driver/CompileSettings.h"
#include "runtime/CApiInternal.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

using octet::capi::fail;
using octet::capi::guarded;
using octet::rt::Plan;

namespace {

/// The compiler's Status carries no category; its messages say "unsupported"
/// (or "not supported") for valid models Octet cannot compile.
octet_status compileFailureStatus(const std::string &message) {
  std::string lower(message);
  for (char &c : lower)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("unsupported") != std::string::npos ||
      lower.find("not supported") != std::string::npos ||
      lower.find("does not support") != std::string::npos)
    return OCTET_ERROR_UNSUPPORTED;
  return OCTET_ERROR_INVALID_MODEL;
}

/// Sends `compile`'s progress to the callback of octet_options_set_progress,
/// if one is set.
void attachProgress(const octet_options &options, octet::CompileOptions &compile) {
  if (!options.progress)
    return;
  octet_progress_fn callback = options.progress;
  void *user = options.progressUser;
  // Calibration reports lines ("calibrate: batch 3/16 (1.2 s)"); the counts
  // are read back from them so a binding can draw a bar.
  compile.progress = [callback, user](const std::string &line) {
    int64_t done = 0, total = -1;
    if (size_t at = line.find("batch "); at != std::string::npos) {
      const char *text = line.c_str() + at + 6;
      char *slash = nullptr, *end = nullptr;
      long long d = std::strtoll(text, &slash, 10);
      if (slash != text && *slash == '/') {
        long long t = std::strtoll(slash + 1, &end, 10);
        if (end != slash + 1 && t > 0) {
          done = d;
          total = t;
        }
      }
    } else if (size_t at = line.find(" batch(es)"); at != std::string::npos) {
      // "calibrate: 24 linear(s), 16 batch(es) from '...'": the start.
      size_t begin = line.rfind(' ', at - 1);
      if (begin != std::string::npos)
        total = std::strtoll(line.c_str() + begin + 1, nullptr, 10);
      if (total <= 0)
        total = -1;
    }
    callback(user, line.c_str(), done, total);
  };
}

octet::CompileOptions toCompileOptions(const octet_options *options) {
  if (!options)
    return octet::CompileOptions();
  octet::CompileOptions result = octet::compileOptionsFrom(*options);
  if (options->calibrationProgress)
    result.progress = [](const std::string &line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  attachProgress(*options, result); // a callback replaces the stderr lines
  if (options->printIrAfterAll)
    result.irAfterPass = [](const std::string &pass, const std::string &ir) {
      std::fprintf(stderr, "// -----// IR Dump After %s //----- //\n%s\n", pass.c_str(),
                   ir.c_str());
    };
  return result;
}

/// Settings that contradict each other or the target (validateCompileOptions:
/// precision bf16 with INT8, ...) are the caller's error, not the model's.
octet_status checkCompileOptions(const octet::CompileOptions &compile, const char *at) {
  octet::rt::Status valid = octet::validateCompileOptions(compile);
  return valid.ok() ? OCTET_OK
                    : fail(OCTET_ERROR_INVALID_ARGUMENT, std::string(at) + valid.message());
}

octet_status modelFromCompile(octet::rt::Status status, std::unique_ptr<Plan> plan,
                              const octet_options *options, const octet::FusionReport &fusion,
                              octet_model **model) {
  if (!status.ok())
    return fail(compileFailureStatus(status.message()), status.message());
  if (!plan)
    return fail(OCTET_ERROR_RUNTIME, "the compiler returned no plan");
  // A JIT model runs here: a plan for another CPU's features must not (SIGILL).
  if (std::string why = toCompileOptions(options).kernels.whyNotRunnableHere(); !why.empty())
    return fail(OCTET_ERROR_UNSUPPORTED,
                why + "; make a model.so for that CPU with octetc compile --target");
  octet_status made = octet::capi::modelFromPlan(std::move(plan), options, model);
  if (made == OCTET_OK)
    (*model)->fusionReport = fusion.text();
  return made;
}

/// The JIT entry points' common path: checks the options, runs `compileFn`
/// (compileOnnxFile or compileOnnxBytes) with the fusion report attached, and
/// wraps the plan into *model.
template <typename CompileFn>
octet_status compileModel(const octet_options *options, const char *at, octet_model **model,
                          CompileFn &&compileFn) {
  octet::CompileOptions compile = toCompileOptions(options);
  if (octet_status bad = checkCompileOptions(compile, at))
    return bad;
  octet::FusionReport fusion;
  compile.fusionReport = &fusion;
  std::unique_ptr<Plan> plan;
  octet::rt::Status status = compileFn(compile, plan);
  return modelFromCompile(std::move(status), std::move(plan), options, fusion, model);
}

} // namespace

const octet::rt::AotImageDescriptor *octet::capi::embeddedAotImage() { return nullptr; }

extern "C" {

octet_status octet_model_create_from_file(const char *onnx_path, const octet_options *options,
                                          octet_model **model) {
  return guarded("octet_model_create_from_file", [&]() -> octet_status {
    if (!model)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_model_create_from_file: model is null");
    *model = nullptr;
    if (!onnx_path)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_model_create_from_file: path is null");
    return compileModel(options, "octet_model_create_from_file: ", model,
                        [&](const octet::CompileOptions &compile, std::unique_ptr<Plan> &plan) {
                          return octet::compileOnnxFile(onnx_path, compile, plan);
                        });
  });
}

octet_status octet_model_create_from_bytes(const void *onnx_bytes, size_t size,
                                           const octet_options *options, octet_model **model) {
  return guarded("octet_model_create_from_bytes", [&]() -> octet_status {
    if (!model)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_model_create_from_bytes: model is null");
    *model = nullptr;
    if (!onnx_bytes)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_model_create_from_bytes: bytes is null");
    if (size == 0)
      return fail(OCTET_ERROR_INVALID_MODEL, "octet_model_create_from_bytes: the model is empty");
    return compileModel(options, "octet_model_create_from_bytes: ", model,
                        [&](const octet::CompileOptions &compile, std::unique_ptr<Plan> &plan) {
                          return octet::compileOnnxBytes(onnx_bytes, size, compile, plan);
                        });
  });
}

octet_status octet_calibrate(const char *onnx_path, const char *samples,
                             const octet_options *options, const char *output_path) {
  return guarded("octet_calibrate", [&]() -> octet_status {
    if (!onnx_path || !output_path)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, std::string("octet_calibrate: ") +
                                                    (!onnx_path ? "onnx_path" : "output_path") +
                                                    " is null");
    octet::CompileOptions compile = toCompileOptions(options);
    if (samples)
      compile.calibrationSamples = samples;
    octet::rt::Status status = octet::calibrateOnnxFile(onnx_path, compile, output_path);
    if (!status.ok())
      return fail(compileFailureStatus(status.message()), "octet_calibrate: " + status.message());
    return OCTET_OK;
  });
}

octet_status octet_compile_to_so(const char *onnx_path, const octet_options *options,
                                 const char *so_path) {
  return guarded("octet_compile_to_so", [&]() -> octet_status {
    const char *at = "octet_compile_to_so: ";
    if (!onnx_path || !so_path)
      return fail(OCTET_ERROR_INVALID_ARGUMENT,
                  std::string(at) + (!onnx_path ? "onnx_path" : "so_path") + " is null");
    // Fail before a long compile (and calibration) when the link cannot work.
    std::vector<std::string> command, files;
    std::string compiler, dir;
    octet::rt::Status ready = octet::aot::findCCompiler(command, compiler);
    if (ready.ok())
      ready = octet::aot::findAotRuntime(octet::aot::LinkOptions(), dir, files);
    if (!ready.ok())
      return fail(OCTET_ERROR_UNSUPPORTED, at + ready.message());
    octet::CompileOptions compile = toCompileOptions(options);
    if (octet_status bad = checkCompileOptions(compile, at))
      return bad;
    auto report = [&](const char *message) {
      if (options && options->progress)
        options->progress(options->progressUser, message, 0, -1);
    };
    report("compile");
    octet::rt::PlanImage image;
    std::unique_ptr<Plan> plan; // built for the target, never run here
    octet::rt::Status status = octet::compileOnnxFileToImage(onnx_path, compile, image, &plan);
    if (!status.ok())
      return fail(compileFailureStatus(status.message()), at + status.message());
    if (!plan)
      return fail(OCTET_ERROR_RUNTIME, std::string(at) + "the compiler returned no plan");
    octet::aot::LinkOptions link;
    link.oneDnn = octet::rt::planUsesOneDnn(*plan);
    report("link");
    if (octet::rt::Status linked = octet::aot::linkSharedObject(image, so_path, link); !linked.ok())
      return fail(OCTET_ERROR_RUNTIME, at + linked.message());
    return OCTET_OK;
  });
}

} // extern "C"
