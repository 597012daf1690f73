//===- octetc.cpp - the Octet command line ---------------------------------===//
//
//   octetc import MODEL [-o OUT] [--elide-weights | --emit-bytecode]   ONNX → octet IR
//   octetc ops                                            supported ONNX ops
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"
#include "frontends/onnx/Importer.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::OptionCategory octetcCategory("octetc options");
static cl::SubCommand importCommand("import", "Import an ONNX model and print it as octet IR");
static cl::opt<std::string> importModel(cl::Positional, cl::Required, cl::desc("<model.onnx>"),
                                        cl::sub(importCommand), cl::cat(octetcCategory));
static cl::opt<std::string> importOutput("o", cl::desc("Output file (default: stdout)"),
                                         cl::value_desc("file"), cl::init("-"),
                                         cl::sub(importCommand), cl::cat(octetcCategory));
static cl::opt<bool> elideWeights(
    "elide-weights",
    cl::desc("Elide large constants and weight blobs (for reading: the output does not parse "
             "back to the same model)"),
    cl::sub(importCommand), cl::cat(octetcCategory));
static cl::opt<bool> emitBytecode(
    "emit-bytecode",
    cl::desc("Write MLIR bytecode (weights stay binary: fast for large models, and octet-opt "
             "reads it)"),
    cl::sub(importCommand), cl::cat(octetcCategory));

static cl::SubCommand opsCommand("ops", "List the supported ONNX op types, one per line");

/// `file` or `file:node` for the importer's locations (a node's NameLoc
/// wraps the model's FileLineColLoc).
static std::string formatLocation(mlir::Location loc) {
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc))
    return file.getFilename().str();
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc))
    return formatLocation(name.getChildLoc()) + ":" + name.getName().str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

/// Prints diagnostics as `error: <loc>: message`.
static void printDiagnostics(mlir::MLIRContext &ctx) {
  ctx.getDiagEngine().registerHandler([](mlir::Diagnostic &diag) {
    auto severity = [](mlir::DiagnosticSeverity s) {
      switch (s) {
      case mlir::DiagnosticSeverity::Error:
        return "error";
      case mlir::DiagnosticSeverity::Warning:
        return "warning";
      case mlir::DiagnosticSeverity::Note:
        return "note";
      case mlir::DiagnosticSeverity::Remark:
        return "remark";
      }
      return "error";
    };
    llvm::errs() << severity(diag.getSeverity()) << ": " << formatLocation(diag.getLocation())
                 << ": " << diag << "\n";
    for (const mlir::Diagnostic &note : diag.getNotes())
      llvm::errs() << "note: " << formatLocation(note.getLocation()) << ": " << note << "\n";
    return mlir::success();
  });
}

static int runImport() {
  mlir::DialectRegistry registry;
  octet::registerOctetDialects(registry);
  mlir::MLIRContext ctx(registry);
  printDiagnostics(ctx);
  auto module = octet::importOnnxFile(ctx, importModel);
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

static int runOps() {
  for (llvm::StringRef op : octet::supportedOnnxOps())
    llvm::outs() << op << "\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  for (cl::SubCommand *command : {&cl::SubCommand::getTopLevel(), &importCommand, &opsCommand})
    cl::HideUnrelatedOptions(octetcCategory, *command);
  cl::ParseCommandLineOptions(argc, argv,
                              "octetc: the Octet INT8 inference compiler for BERT-family "
                              "encoders\n");
  if (importCommand)
    return runImport();
  if (opsCommand)
    return runOps();
  llvm::errs() << "octetc: give a subcommand (import, ops); see octetc --help\n";
  return 1;
}
