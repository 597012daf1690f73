//===- Compile.cpp - ONNX to a runnable Plan ------------------------------===//
//
// import → FP32 pipeline → PlanBuilder, in one MLIRContext that dies on
// return (the Plan owns copies of the weights). Diagnostics are collected as
// "file:node: message" lines into the returned Status.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Compile.h"

#include "compiler/driver/PlanBuilder.h"
#include "compiler/passes/Passes.h"
#include "frontends/onnx/Importer.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <mutex>

using namespace mlir;
namespace rt = octet::rt;

namespace {

/// `file` or `file:node` for the importer's locations (a node's NameLoc wraps
/// the model's FileLineColLoc), as octetc prints them.
std::string formatLocation(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return file.getFilename().str();
  if (auto name = dyn_cast<NameLoc>(loc)) {
    std::string inner = formatLocation(name.getChildLoc());
    return (inner.empty() ? "" : inner + ":") + name.getName().str();
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::string joined;
    for (Location part : fused.getLocations()) {
      std::string text = formatLocation(part);
      if (!text.empty())
        joined += (joined.empty() ? "" : ", ") + text;
    }
    return joined;
  }
  if (isa<UnknownLoc>(loc))
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

/// Calls CompileOptions::irAfterPass with the IR after every pass.
class IrAfterPass : public PassInstrumentation {
public:
  explicit IrAfterPass(const octet::CompileOptions &options) : options_(options) {}
  void runAfterPass(Pass *pass, Operation *op) override {
    // The adaptor that runs the nested function passes has no argument: its
    // dump would repeat the last pass's under an empty name.
    if (pass->getArgument().empty())
      return;
    std::string text;
    llvm::raw_string_ostream os(text);
    OpPrintingFlags flags;
    flags.elideLargeElementsAttrs(16).elideLargeResourceString(64).useLocalScope();
    op->print(os, flags);
    options_.irAfterPass(pass->getArgument().str(), text);
  }

private:
  const octet::CompileOptions &options_;
};

/// The FP32 pipeline's function passes as text ("octet-cleanup,..."), for messages.
std::string fp32PassNames(MLIRContext &ctx) {
  PassManager pm(&ctx, ModuleOp::getOperationName());
  octet::buildFp32Pipeline(pm);
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os); // builtin.module(func.func(a,b,...))
  llvm::StringRef inner(text);
  size_t open = inner.find("func.func(");
  if (open == llvm::StringRef::npos)
    return text;
  inner = inner.drop_front(open + strlen("func.func(")).rtrim(")");
  return inner.str();
}

/// The passes of CompileOptions::passes: the FP32 pipeline, nothing ("none"),
/// or a comma-separated list of octet function passes.
rt::Status buildPipeline(PassManager &pm, const std::string &passes) {
  llvm::StringRef text = llvm::StringRef(passes).trim();
  if (text.empty()) {
    octet::buildFp32Pipeline(pm);
    return rt::Status();
  }
  if (text == "none")
    return rt::Status();
  auto invalid = [&](llvm::StringRef why) {
    return rt::Status::error("pass pipeline '" + passes + "': " + why.str() +
                             " (give function passes separated by commas, e.g. the FP32 "
                             "pipeline '" +
                             fp32PassNames(*pm.getContext()) + "', or 'none' for no pass)");
  };
  // Passes nest in @main here; a nested pipeline such as func.func(...) would
  // silently match nothing.
  if (text.contains('('))
    return invalid("nested pipelines are not taken");
  // The pass registry is global; registering twice is harmless but not
  // thread-safe, so once per process.
  static std::once_flag registered;
  std::call_once(registered, [] { octet::registerOctetPasses(); });
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  if (failed(parsePassPipeline(text, pm.nest<func::FuncOp>(), errorStream))) {
    // MLIR's message is "<parser>:1:N: error: WHY\n<text>\n<caret>": keep WHY.
    llvm::StringRef why = llvm::StringRef(error).split('\n').first;
    size_t at = why.find("error: ");
    if (at != llvm::StringRef::npos)
      why = why.drop_front(at + strlen("error: "));
    return invalid(why.empty() ? "cannot parse it" : why);
  }
  return rt::Status();
}

rt::Status compileModule(MLIRContext &ctx, OwningOpRef<ModuleOp> module,
                         const octet::CompileOptions &options, std::string &diagnostics,
                         std::unique_ptr<rt::Plan> &plan) {
  auto failure = [&](const char *fallback) {
    return rt::Status::error(diagnostics.empty() ? std::string(fallback) : diagnostics);
  };
  if (!module)
    return failure("cannot import the ONNX model");
  if (options.irAfterPass)
    options.irAfterPass("import", [&] {
      std::string text;
      llvm::raw_string_ostream os(text);
      OpPrintingFlags flags;
      flags.elideLargeElementsAttrs(16).elideLargeResourceString(64).useLocalScope();
      module->print(os, flags);
      return text;
    }());
  PassManager pm(&ctx, ModuleOp::getOperationName());
  if (rt::Status built = buildPipeline(pm, options.passes); !built.ok())
    return built;
  if (options.irAfterPass) {
    ctx.disableMultithreading();
    pm.addInstrumentation(std::make_unique<IrAfterPass>(options));
  }
  if (failed(pm.run(*module)))
    return failure("the FP32 pipeline failed");
  auto main = module->lookupSymbol<func::FuncOp>("main");
  if (!main)
    return rt::Status::error("the imported module has no @main function");
  FailureOr<std::unique_ptr<rt::Plan>> built = octet::buildPlan(main, options.kernels);
  if (failed(built))
    return failure("cannot build the execution plan");
  plan = std::move(*built);
  return rt::Status();
}

/// Runs `body` in a fresh context whose diagnostics land in `diagnostics`.
template <typename Body> rt::Status withContext(std::string &diagnostics, Body body) {
  DialectRegistry registry;
  octet::registerOctetDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ctx.printOpOnDiagnostic(false); // the message names the op; the IR dump is noise here
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error &&
        diag.getSeverity() != DiagnosticSeverity::Warning)
      return success();
    std::string where = formatLocation(diag.getLocation());
    if (!diagnostics.empty())
      diagnostics += "\n";
    if (diag.getSeverity() == DiagnosticSeverity::Warning)
      diagnostics += "warning: ";
    diagnostics += (where.empty() ? "" : where + ": ") + diag.str();
    for (const Diagnostic &note : diag.getNotes()) {
      std::string noteWhere = formatLocation(note.getLocation());
      diagnostics += "\n  note: " + (noteWhere.empty() ? "" : noteWhere + ": ") + note.str();
    }
    return success();
  });
  return body(ctx);
}

} // namespace

rt::Status octet::compileOnnxFile(const std::string &path, const CompileOptions &options,
                                  std::unique_ptr<rt::Plan> &plan) {
  std::string diagnostics;
  return withContext(diagnostics, [&](MLIRContext &ctx) {
    return compileModule(ctx, importOnnxFile(ctx, path), options, diagnostics, plan);
  });
}

rt::Status octet::compileOnnxBytes(const void *bytes, size_t size, const CompileOptions &options,
                                   std::unique_ptr<rt::Plan> &plan) {
  if (!bytes && size)
    return rt::Status::error("compileOnnxBytes: null model bytes");
  std::string diagnostics;
  return withContext(diagnostics, [&](MLIRContext &ctx) {
    llvm::StringRef data(static_cast<const char *>(bytes), size);
    return compileModule(ctx, importOnnxBytes(ctx, data, "."), options, diagnostics, plan);
  });
}
