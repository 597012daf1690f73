//===- octet-interp.cpp - run octet IR on .npy inputs ----------------------===//
//
//   octet-interp MODEL(.mlir|.mlirbc|.onnx|.onnxtxt) --input NAME=FILE.npy ...
//                [--output-dir DIR] [--pipeline "octet-cleanup,octet-recognize"]
//
// Evaluates @main with the reference interpreter and writes each result as
// DIR/<octet.name>.npy: the oracle the semantic tests compare against ONNX
// Runtime and the ONNX node suite.
//
//===----------------------------------------------------------------------===//
#include "compiler/interp/Interpreter.h"
#include "compiler/ir/AttrNames.h"
#include "compiler/ir/Locations.h"
#include "compiler/passes/Passes.h"
#include "frontends/onnx/Importer.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.mlir|.mlirbc|.onnx|.onnxtxt>"));
static cl::list<std::string> inputArgs("input",
                                       cl::desc("NAME=FILE.npy for the argument named NAME"),
                                       cl::value_desc("name=file"));
static cl::opt<std::string> outputDir("output-dir", cl::desc("Where <name>.npy outputs go"),
                                      cl::init("."));
static cl::opt<std::string>
    pipeline("pipeline",
             cl::desc("Passes to run first: \"octet-cleanup,octet-recognize\" (or a full "
                      "builtin.module(...) pipeline)"),
             cl::init(""));

//===----------------------------------------------------------------------===//
// NumPy .npy (format 1.0-3.0 read, 1.0 written): little-endian, C order.
//===----------------------------------------------------------------------===//

static const char kMagic[] = "\x93NUMPY";

static std::string npyDescr(Type type) {
  if (type.isF16())
    return "<f2";
  if (type.isBF16()) // NumPy has no bfloat16: its bits as uint16, as onnx.numpy_helper does
    return "<u2";
  if (type.isF32())
    return "<f4";
  if (type.isF64())
    return "<f8";
  if (type.isInteger(1))
    return "|b1";
  if (auto intType = dyn_cast<IntegerType>(type)) {
    unsigned bytes = intType.getWidth() / 8;
    if (intType.getWidth() % 8 || bytes > 8 || !llvm::isPowerOf2_32(bytes))
      return "";
    return std::string(bytes == 1 ? "|" : "<") + (intType.isUnsigned() ? "u" : "i") +
           std::to_string(bytes);
  }
  return "";
}

static LogicalResult writeNpy(StringRef path, const octet::HostTensor &t) {
  std::string descr = npyDescr(t.elementType);
  if (descr.empty()) {
    llvm::errs() << "error: " << path << ": no .npy dtype for " << t.elementType << "\n";
    return failure();
  }
  // A Python tuple: "(2, 3)", "(2,)" or "()".
  SmallVector<std::string> dims;
  for (int64_t d : t.shape)
    dims.push_back(std::to_string(d));
  std::string shape = llvm::join(dims, ", ") + (dims.size() == 1 ? "," : "");
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Pad with spaces so that the data starts on a 64-byte boundary; end with \n.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    llvm::errs() << "error: " << path << ": " << ec.message() << "\n";
    return failure();
  }
  os << StringRef(kMagic, 6) << '\x01' << '\x00';
  os << char(header.size() & 0xff) << char(header.size() >> 8) << header << octet::encodeTensor(t);
  return success();
}

/// The value of `'key': ...` in the header dict, up to the next top-level comma.
static std::optional<std::string> headerField(StringRef header, StringRef key) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == StringRef::npos)
    return std::nullopt;
  StringRef rest = header.drop_front(at + key.size() + 2).ltrim(" :");
  size_t end = rest.starts_with("(") ? rest.find(')') + 1 : rest.find_first_of(",}");
  return rest.take_front(end).trim().str();
}

static FailureOr<octet::HostTensor> readNpy(StringRef path, Type elementType) {
  auto fail = [&](const Twine &why) {
    llvm::errs() << "error: " << path << ": " << why << "\n";
    return failure();
  };
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail(buffer.getError().message());
  StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() < 10 || !bytes.starts_with(StringRef(kMagic, 6)))
    return fail("not a .npy file");
  unsigned major = uint8_t(bytes[6]);
  size_t lenBytes = major == 1 ? 2 : 4, headerLen = 0;
  for (size_t i = 0; i < lenBytes; ++i)
    headerLen |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
  if (8 + lenBytes + headerLen > bytes.size())
    return fail("truncated header");
  StringRef header = bytes.substr(8 + lenBytes, headerLen);
  auto descr = headerField(header, "descr"), order = headerField(header, "fortran_order"),
       shapeText = headerField(header, "shape");
  if (!descr || !order || !shapeText)
    return fail("header lacks descr, fortran_order or shape");
  if (*order != "False")
    return fail("Fortran-order arrays are not supported");
  std::string want = "'" + npyDescr(elementType) + "'";
  if (*descr != want)
    return fail("dtype " + *descr + " but the argument's element type needs " + want);
  SmallVector<int64_t> shape;
  SmallVector<StringRef> dims;
  StringRef(*shapeText).trim("()").split(dims, ',', -1, false);
  for (StringRef d : dims) {
    int64_t v;
    if (d.trim().getAsInteger(10, v))
      return fail("bad shape " + *shapeText);
    shape.push_back(v);
  }
  StringRef data = bytes.drop_front(8 + lenBytes + headerLen);
  auto t = octet::decodeTensor(elementType, shape, ArrayRef<char>(data.data(), data.size()));
  if (failed(t))
    return fail("data size does not match shape " + *shapeText + " and dtype " + *descr);
  return t;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

static OwningOpRef<ModuleOp> loadModel(MLIRContext &ctx) {
  StringRef ext = llvm::sys::path::extension(modelPath);
  if (ext == ".onnx" || ext == ".onnxtxt")
    return octet::importOnnxFile(ctx, modelPath);
  llvm::SourceMgr sourceMgr;
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(modelPath);
  if (!buffer) {
    llvm::errs() << "error: " << modelPath << ": " << buffer.getError().message() << "\n";
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, &ctx);
}

/// "octet-cleanup,octet-recognize" or "-octet-cleanup -octet-recognize" as a
/// pipeline on every function; of a full `builtin.module(...)` the part inside.
/// The text is parsed into a PassManager already anchored on builtin.module:
/// kept whole, it would nest a second module level and run on nothing.
static std::string pipelineText(StringRef text) {
  StringRef trimmed = text.trim();
  if (trimmed.consume_front("builtin.module(") && trimmed.consume_back(")"))
    return trimmed.str();
  std::string normalized = text.str();
  std::replace(normalized.begin(), normalized.end(), ' ', ',');
  SmallVector<StringRef> names;
  StringRef(normalized).split(names, ',', -1, false);
  SmallVector<std::string> passes;
  for (StringRef name : names)
    passes.push_back(name.trim().ltrim('-').str());
  return "func.func(" + llvm::join(passes, ",") + ")";
}

static StringRef nameOf(func::FuncOp func, unsigned i, bool result) {
  auto attr = result ? func.getResultAttrOfType<StringAttr>(i, octet::attr::kName)
                     : func.getArgAttrOfType<StringAttr>(i, octet::attr::kName);
  return attr ? attr.getValue() : StringRef();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  octet::registerOctetPasses();
  registerCanonicalizerPass();
  registerCSEPass();
  cl::ParseCommandLineOptions(argc, argv, "octet-interp: the reference interpreter of octet IR\n");

  DialectRegistry registry;
  octet::registerOctetDialects(registry);
  MLIRContext ctx(registry);
  ctx.getDiagEngine().registerHandler([](Diagnostic &diag) {
    llvm::errs() << octet::formatLocation(diag.getLocation()) << ": "
                 << octet::severityName(diag.getSeverity()) << ": " << diag << "\n";
    for (const Diagnostic &note : diag.getNotes())
      llvm::errs() << octet::formatLocation(note.getLocation()) << ": note: " << note << "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = loadModel(ctx);
  if (!module)
    return 1;

  if (!pipeline.empty()) {
    PassManager pm(&ctx);
    if (failed(parsePassPipeline(pipelineText(pipeline), pm)) || failed(pm.run(*module)))
      return 1;
  }
  auto func = module->lookupSymbol<func::FuncOp>("main");
  if (!func) {
    llvm::errs() << "error: " << modelPath << ": no func.func @main\n";
    return 1;
  }

  llvm::StringMap<std::string> files;
  for (const std::string &arg : inputArgs) {
    auto [name, file] = StringRef(arg).split('=');
    if (file.empty()) {
      llvm::errs() << "error: --input " << arg << ": expected NAME=FILE.npy\n";
      return 1;
    }
    files[name] = file.str();
  }
  SmallVector<octet::HostTensor> inputs;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    StringRef name = nameOf(func, i, false);
    auto it = files.find(name);
    if (it == files.end()) {
      llvm::errs() << "error: no --input for argument #" << i << " '" << name << "'\n";
      return 1;
    }
    auto type = cast<RankedTensorType>(func.getArgumentTypes()[i]);
    auto t = readNpy(it->second, type.getElementType());
    if (failed(t))
      return 1;
    inputs.push_back(std::move(*t));
    files.erase(it);
  }
  for (const auto &unused : files) {
    llvm::errs() << "error: --input " << unused.getKey() << ": @main has no such argument\n";
    return 1;
  }

  auto outputs = octet::evaluate(func, inputs);
  if (failed(outputs))
    return 1;
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
    llvm::errs() << "error: " << outputDir << ": " << ec.message() << "\n";
    return 1;
  }
  for (auto [i, t] : llvm::enumerate(*outputs)) {
    std::string name = nameOf(func, i, true).str();
    if (name.empty())
      name = "output_" + std::to_string(i);
    llvm::SmallString<256> path(outputDir);
    llvm::sys::path::append(path, name + ".npy");
    if (failed(writeNpy(path, t)))
      return 1;
  }
  return 0;
}
