//===- Import.cpp - octetc import: ONNX to octet IR -----------------------===//
#include "tools/octetc/Octetc.h"

#include "compiler/passes/Passes.h"
#include "frontends/onnx/Importer.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

namespace octetc {

int runImport() {
  mlir::DialectRegistry registry;
  octet::registerOctetDialects(registry);
  mlir::MLIRContext ctx(registry);
  printDiagnostics(ctx);
  octet::ImportLimits limits;
  if (!memoryBudget(limits.memoryBudget))
    return 1;
  auto module = octet::importOnnxFile(ctx, importModel, limits);
  if (!module)
    return 1;
  std::string error;
  auto output = mlir::openOutputFile(importOutput, &error);
  if (!output) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  if (emitBytecode && elideWeights) {
    llvm::errs() << "error: --emit-bytecode and --elide-weights exclude each other\n";
    return 1;
  }
  if (emitBytecode) {
    if (failed(mlir::writeBytecodeToFile(*module, output->os())))
      return 1;
    output->keep();
    return 0;
  }
  mlir::OpPrintingFlags flags;
  // Local scope leaves out the resource section: MLIR would hex-encode every
  // blob before eliding it, which costs seconds on a BERT.
  if (elideWeights)
    flags.elideLargeElementsAttrs(16).elideLargeResourceString(64).useLocalScope();
  module->print(output->os(), flags);
  output->os() << "\n";
  output->keep();
  return 0;
}

} // namespace octetc
