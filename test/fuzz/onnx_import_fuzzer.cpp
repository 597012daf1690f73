//===- onnx_import_fuzzer.cpp - libFuzzer: ONNX bytes -> import -> verify ---===//
//
// Any byte string given to the importer (as octet_model_create_from_bytes
// does, so external data is refused) must import into IR that verifies, or
// fail with a diagnostic: never crash, hang or read out of bounds. The
// importer's sources are compiled into this binary with coverage (test/fuzz/build).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/Importer.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext ctx;
  ctx.disableMultithreading();
  bool diagnosed = false;
  mlir::ScopedDiagnosticHandler quiet(&ctx, [&](mlir::Diagnostic &) {
    diagnosed = true;
    return mlir::success();
  });
  octet::ImportLimits limits;
  limits.memoryBudget = uint64_t(256) << 20; // a fuzzer's process has little memory
  auto module = octet::importOnnxBytes(
      ctx, llvm::StringRef(reinterpret_cast<const char *>(data), size), limits);
  if (module) {
    // What the importer returns must verify (it checks itself; a failure here is a bug).
    if (mlir::failed(mlir::verify(*module))) {
      std::fprintf(stderr, "imported IR does not verify\n");
      std::abort();
    }
  } else if (!diagnosed) {
    std::fprintf(stderr, "import failed without a diagnostic\n");
    std::abort();
  }
  return 0;
}
