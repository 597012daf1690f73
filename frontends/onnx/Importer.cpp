//===- Importer.cpp - ONNX model, graph and tensors to octet IR -----------===//
//
// Reads the model (binary through protobuf's streams, or ONNX text), checks
// it, turns initializers into constants without copying their bytes, and
// converts the graph node by node into `func.func @main`.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/Importer.h"
#include "compiler/ir/AttrNames.h"
#include "frontends/onnx/GraphImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/defs/parser.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;
using namespace octet::onnx_import;

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

Type octet::onnx_import::convertElementType(MLIRContext *ctx, int32_t onnxType) {
  auto integer = [&](unsigned width, bool isUnsigned = false) -> Type {
    return IntegerType::get(ctx, width, isUnsigned ? IntegerType::Unsigned : IntegerType::Signless);
  };
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return Float32Type::get(ctx);
  case onnx::TensorProto::FLOAT16:
    return Float16Type::get(ctx);
  case onnx::TensorProto::BFLOAT16:
    return BFloat16Type::get(ctx);
  case onnx::TensorProto::DOUBLE:
    return Float64Type::get(ctx);
  case onnx::TensorProto::BOOL:
    return integer(1);
  case onnx::TensorProto::INT8:
    return integer(8);
  case onnx::TensorProto::UINT8:
    return integer(8, true);
  case onnx::TensorProto::INT16:
    return integer(16);
  case onnx::TensorProto::UINT16:
    return integer(16, true);
  case onnx::TensorProto::INT32:
    return integer(32);
  case onnx::TensorProto::UINT32:
    return integer(32, true);
  case onnx::TensorProto::INT64:
    return integer(64);
  case onnx::TensorProto::UINT64:
    return integer(64, true);
  default:
    return {};
  }
}

std::string octet::onnx_import::onnxTypeName(int32_t onnxType) {
  if (onnx::TensorProto::DataType_IsValid(onnxType))
    return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(onnxType));
  return "type #" + std::to_string(onnxType);
}

/// Bytes per element as ONNX stores them (bool: one byte).
static size_t storageBytes(Type elementType) {
  return std::max<size_t>(1, elementType.getIntOrFloatBitWidth() / 8);
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

/// Opens `path` for reading without blocking (a FIFO or a device never makes
/// open() or read() wait) and only if it is a regular file, so that its size
/// is known and bounded. Returns the descriptor, or -1 with `why` set.
static int openRegularFile(const char *path, int extraFlags, uint64_t &size, std::string &why) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | extraFlags);
  if (fd < 0) {
    why = std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    why = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    why = S_ISDIR(st.st_mode)    ? "it is a directory"
          : S_ISFIFO(st.st_mode) ? "it is a FIFO, not a regular file"
                                 : "it is not a regular file";
    ::close(fd);
    return -1;
  }
  size = uint64_t(st.st_size);
  return fd;
}

namespace {
/// Where a tensor's external data lies, checked: a regular file inside the
/// allowed folder (after resolving symlinks) that holds [offset, offset+length).
struct ExternalData {
  std::string path; ///< the resolved path
  uint64_t offset = 0, length = 0;
};
} // namespace

/// Checks a tensor's external data entry against the rules of docs/security.md
/// (as ONNX Runtime does): a relative location that resolves inside `baseDir`,
/// a regular file, long enough. Reads nothing; `fd` (optional) receives the
/// open file.
static LogicalResult resolveExternalData(const onnx::TensorProto &tensor, StringRef baseDir,
                                         uint64_t expectedBytes, ExternalData &data, Location loc,
                                         int *fdOut = nullptr) {
  std::string location;
  uint64_t offset = 0, length = expectedBytes;
  for (const auto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset" || entry.key() == "length") {
      unsigned long long parsed;
      if (StringRef(entry.value()).getAsInteger(10, parsed))
        return emitError(loc) << "tensor '" << tensor.name() << "' has an invalid external data "
                              << entry.key() << " '" << entry.value() << "'";
      (entry.key() == "offset" ? offset : length) = parsed;
    }
  }
  if (location.empty())
    return emitError(loc) << "tensor '" << tensor.name()
                          << "' has external data without a location";
  if (length != expectedBytes)
    return emitError(loc) << "tensor '" << tensor.name() << "' has external data of " << length
                          << " bytes but its shape needs " << expectedBytes;
  if (baseDir.empty())
    return emitError(loc) << "tensor '" << tensor.name() << "' has external data ('" << location
                          << "') but the model was given as bytes, with no folder for external "
                             "data (the option external_data_dir names one)";
  if (location.find('\0') != std::string::npos || llvm::sys::path::is_absolute(location))
    return emitError(loc) << "tensor '" << tensor.name() << "' has external data at '" << location
                          << "': an external data location must be relative to the model's "
                             "folder";
  // Confinement: the location, with every symlink resolved, must lie inside
  // the folder (itself resolved), so neither '..' nor a link leads out.
  char resolvedBase[PATH_MAX], resolved[PATH_MAX];
  if (!::realpath(std::string(baseDir).c_str(), resolvedBase))
    return emitError(loc) << "cannot resolve the external data folder '" << baseDir
                          << "': " << std::strerror(errno);
  SmallString<256> joined(resolvedBase);
  llvm::sys::path::append(joined, location);
  if (!::realpath(joined.c_str(), resolved))
    return emitError(loc) << "cannot open external data file '" << joined << "' of tensor '"
                          << tensor.name() << "': " << std::strerror(errno);
  StringRef inside(resolved), base(resolvedBase);
  bool baseIsRoot = base == "/";
  if (!inside.starts_with(base) ||
      (!baseIsRoot && (inside.size() == base.size() || inside[base.size()] != '/')))
    return emitError(loc) << "tensor '" << tensor.name() << "' has external data at '" << location
                          << "', which resolves to '" << resolved
                          << "', outside the model's folder '" << resolvedBase
                          << "': external data must lie inside it";
  // The resolved path has no symlink left; O_NOFOLLOW keeps its last
  // component from becoming one in the meantime.
  uint64_t fileBytes = 0;
  std::string why;
  int fd = openRegularFile(resolved, O_NOFOLLOW, fileBytes, why);
  if (fd < 0)
    return emitError(loc) << "cannot open external data file '" << resolved << "' of tensor '"
                          << tensor.name() << "': " << why;
  if (offset > fileBytes || length > fileBytes - offset) {
    ::close(fd);
    return emitError(loc) << "external data file '" << resolved << "' of tensor '" << tensor.name()
                          << "' is too short: needs " << length << " bytes at offset " << offset
                          << ", the file has " << fileBytes;
  }
  data.path = resolved;
  data.offset = offset;
  data.length = length;
  if (fdOut)
    *fdOut = fd;
  else
    ::close(fd);
  return success();
}

/// Reads a tensor's checked external data into `out` with pread: one buffer,
/// no second copy, allocated only once the file is known to hold it.
static LogicalResult readExternalData(const onnx::TensorProto &tensor, StringRef baseDir,
                                      uint64_t expectedBytes, std::string &out, Location loc) {
  ExternalData data;
  int fd = -1;
  if (failed(resolveExternalData(tensor, baseDir, expectedBytes, data, loc, &fd)))
    return failure();
  auto closeFd = llvm::scope_exit([&] { ::close(fd); });
  out.resize(data.length);
  uint64_t done = 0;
  while (done < data.length) {
    ssize_t n = ::pread(fd, out.data() + done, data.length - done, data.offset + done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) // the file shrank since it was checked
      return emitError(loc) << "external data file '" << data.path << "' of tensor '"
                            << tensor.name() << "' is too short: needs " << data.length
                            << " bytes at offset " << data.offset << ", read " << done
                            << (n < 0 ? std::string(": ") + std::strerror(errno) : "");
    done += n;
  }
  return success();
}

/// Stores each value's low `elementBytes` bytes (the host is little-endian, as
/// ONNX's raw_data is) — how ONNX packs narrow types into int32_data.
template <typename T>
static void packField(const google::protobuf::RepeatedField<T> &field, size_t elementBytes,
                      std::string &out) {
  out.resize(field.size() * elementBytes);
  for (int i = 0; i < field.size(); ++i) {
    T v = field.Get(i);
    std::memcpy(&out[i * elementBytes], &v, elementBytes);
  }
}

/// The values from a tensor's typed fields (float_data, int32_data …).
static void packTypedFields(const onnx::TensorProto &tensor, size_t elementBytes,
                            std::string &out) {
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    return packField(tensor.float_data(), elementBytes, out);
  case onnx::TensorProto::DOUBLE:
    return packField(tensor.double_data(), elementBytes, out);
  case onnx::TensorProto::INT64:
    return packField(tensor.int64_data(), elementBytes, out);
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    return packField(tensor.uint64_data(), elementBytes, out);
  default:
    return packField(tensor.int32_data(), elementBytes, out);
  }
}

/// The tensor's element count from its dims: each dim non-negative and the
/// count at most 2^40 (no product overflows), else an error naming the tensor.
static LogicalResult checkedElementCount(const onnx::TensorProto &tensor, uint64_t &count,
                                         Location loc) {
  count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0 || (d > 0 && count > (uint64_t(1) << 40) / uint64_t(d)))
      return emitError(loc) << "tensor '" << tensor.name() << "' has an invalid dim " << d;
    count *= d;
  }
  return success();
}

ElementsAttr octet::onnx_import::convertTensor(onnx::TensorProto &tensor, StringRef baseDir,
                                               Location loc) {
  MLIRContext *ctx = loc.getContext();
  Type elementType = convertElementType(ctx, tensor.data_type());
  if (!elementType) {
    emitError(loc) << "tensor '" << tensor.name() << "' has unsupported element type "
                   << onnxTypeName(tensor.data_type());
    return {};
  }
  if (tensor.has_segment()) {
    emitError(loc) << "tensor '" << tensor.name() << "' is segmented, which is not supported";
    return {};
  }
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  uint64_t numElements = 0;
  if (failed(checkedElementCount(tensor, numElements, loc)))
    return {};
  auto type = RankedTensorType::get(shape, elementType);
  size_t elementBytes = storageBytes(elementType);
  uint64_t expectedBytes = numElements * elementBytes;

  std::string bytes;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    if (failed(readExternalData(tensor, baseDir, expectedBytes, bytes, loc)))
      return {};
  } else if (tensor.has_raw_data()) {
    bytes.swap(*tensor.mutable_raw_data()); // take the bytes, do not copy them
  } else {
    packTypedFields(tensor, elementBytes, bytes);
  }
  if (bytes.size() != expectedBytes) {
    emitError(loc) << "tensor '" << tensor.name() << "' holds " << bytes.size()
                   << " bytes of data but its type " << type << " needs " << expectedBytes;
    return {};
  }

  if (numElements <= static_cast<uint64_t>(kSmallTensorLimit)) {
    if (elementType.isInteger(1)) {
      SmallVector<bool> values;
      for (char c : bytes)
        values.push_back(c != 0);
      return DenseElementsAttr::get(type, values);
    }
    return DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(bytes.data(), bytes.size()));
  }
  // The blob's deleter owns the bytes for as long as the context holds the
  // resource; moving the string keeps its heap buffer.
  auto *owned = new std::string(std::move(bytes));
  AsmResourceBlob blob = UnmanagedAsmResourceBlob::allocateWithAlign(
      ArrayRef<char>(owned->data(), owned->size()), elementBytes,
      [owned](void *, size_t, size_t) { delete owned; });
  StringRef name = tensor.name().empty() ? StringRef("tensor") : StringRef(tensor.name());
  return DenseResourceElementsAttr::get(type, name, std::move(blob));
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

namespace {
/// A graph input's or output's declared type.
struct DeclaredType {
  RankedTensorType type;
  SmallVector<Attribute> dimParams;
};

class ModelImporter {
public:
  ModelImporter(MLIRContext &ctx, onnx::ModelProto &model, StringRef path, StringRef baseDir,
                uint64_t memoryBudget)
      : ctx(ctx), model(model), path(path), baseDir(baseDir), memoryBudget(memoryBudget),
        fileLoc(FileLineColLoc::get(&ctx, path, 0, 0)) {}

  OwningOpRef<ModuleOp> run();

private:
  LogicalResult checkModel();
  /// Checks what needs no conversion: every op is supported and every input
  /// defined. Runs before the ONNX checker so these errors read well.
  LogicalResult checkNodes();
  /// Checks every constant's claimed size (and external data's file) before
  /// any is read: each fits its file, and all together fit the memory budget.
  LogicalResult checkConstants();
  /// libonnx's checker with the model's folder, where external data lies.
  LogicalResult runOnnxChecker();
  FailureOr<DeclaredType> declaredType(const onnx::ValueInfoProto &info, Location loc);
  LogicalResult convertNode(GraphImporter &graph, onnx::NodeProto &node, unsigned index,
                            const llvm::StringSet<> &usedNames);
  /// Verifies the ops created for one node; the first failure's message, or "".
  std::string verifyNewOps(Block &block, Operation *lastBefore);
  Location valueLoc(StringRef name) { return NameLoc::get(StringAttr::get(&ctx, name), fileLoc); }

  MLIRContext &ctx;
  onnx::ModelProto &model;
  std::string path, baseDir;
  uint64_t memoryBudget;
  Location fileLoc;
  llvm::StringMap<int64_t> opsets; // domain ("ai.onnx" for the default) → version
};
} // namespace

/// The IR versions ONNX Runtime 1.20 reads (ONNX 1.17: IR 10).
constexpr int64_t kMaxIrVersion = 10;

static std::string nodeName(const onnx::NodeProto &node, unsigned index);

static StringRef canonicalDomain(StringRef domain) {
  return domain.empty() ? StringRef("ai.onnx") : domain;
}

LogicalResult ModelImporter::checkModel() {
  if (!model.has_ir_version())
    return emitError(fileLoc) << "'" << path << "' is not an ONNX model: it has no ir_version";
  if (!model.has_graph())
    return emitError(fileLoc) << "'" << path << "' is not an ONNX model: it has no graph";
  if (model.opset_import_size() == 0)
    return emitError(fileLoc) << "'" << path << "' is not an ONNX model: it imports no opset";
  for (const auto &opset : model.opset_import())
    opsets[canonicalDomain(opset.domain())] = opset.version();
  auto defaultOpset = opsets.find("ai.onnx");
  if (defaultOpset == opsets.end()) {
    std::string domains;
    for (const auto &entry : opsets)
      domains += (domains.empty() ? "" : ", ") + entry.getKey().str();
    return emitError(fileLoc) << "unsupported opset: '" << path
                              << "' imports no ai.onnx opset (only " << domains
                              << "); Octet supports ai.onnx opsets 1-20";
  }
  // Below opset 11 each node is checked against the version of its op in
  // force at the model's opset (classifyOpForm): older forms are rewritten or
  // refused node by node, so the range starts at the first opset.
  int64_t version = defaultOpset->second;
  if (version < 1 || version > 20)
    return emitError(fileLoc) << "unsupported opset " << version
                              << " (Octet supports ai.onnx opsets 1-20)";
  if (model.ir_version() < 3 || model.ir_version() > kMaxIrVersion)
    return emitError(fileLoc) << "unsupported IR version " << model.ir_version()
                              << " (Octet, like ONNX Runtime 1.20, reads IR versions 3-"
                              << kMaxIrVersion << ")";
  if (model.graph().output_size() == 0)
    return emitError(fileLoc) << "'" << path << "' has a graph with no outputs";
  if (failed(checkNodes()) || failed(checkConstants()))
    return failure();
  // libonnx 1.12 knows the schemas up to opset 17 and IR version 8 only
  // (current exporters write IR 9-10 with opsets the checker does know).
  if (version <= 17 && model.ir_version() <= onnx::IR_VERSION)
    return runOnnxChecker();
  return success();
}

LogicalResult ModelImporter::runOnnxChecker() {
  // onnx::checker::check_model(ModelProto) checks external data relative to
  // the working directory, and its overload taking a path parses the whole
  // file again; so this sets up the same context with the model's folder and
  // runs the graph and function checks it would.
  try {
    onnx::checker::CheckerContext context;
    context.set_ir_version(static_cast<int>(model.ir_version()));
    std::unordered_map<std::string, int> imports;
    for (const auto &opset : model.opset_import())
      imports[opset.domain()] = static_cast<int>(opset.version());
    context.set_opset_imports(std::move(imports));
    context.set_model_dir(baseDir);
    onnx::checker::LexicalScopeContext scope;
    onnx::checker::check_graph(model.graph(), context, scope);
    if (model.ir_version() >= 8)
      onnx::checker::check_model_local_functions(model, context, scope);
  } catch (const std::exception &e) {
    return emitError(fileLoc) << "the ONNX checker rejected '" << path << "': " << e.what();
  }
  return success();
}

LogicalResult ModelImporter::checkConstants() {
  const uint64_t budget = memoryBudget ? memoryBudget : octet::physicalMemoryBytes();
  uint64_t total = 0;
  auto claim = [&](const onnx::TensorProto &tensor, Location loc) -> LogicalResult {
    Type elementType = convertElementType(&ctx, tensor.data_type());
    if (!elementType)
      return success(); // convertTensor names the unsupported type; nothing is read
    uint64_t count = 0;
    if (failed(checkedElementCount(tensor, count, loc)))
      return failure();
    uint64_t bytes = count * storageBytes(elementType);
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
      ExternalData data;
      if (failed(resolveExternalData(tensor, baseDir, bytes, data, loc)))
        return failure();
    }
    total += bytes; // each term <= 2^43: no overflow
    if (total > budget)
      return emitError(loc) << "tensor '" << tensor.name() << "' claims " << bytes
                            << " bytes, which brings the model's constants to " << total
                            << " bytes, more than the memory budget of " << budget << " bytes ("
                            << (memoryBudget ? "as set" : "this host's memory")
                            << "; octetc --memory-budget, C API option memory_budget)";
    return success();
  };
  const onnx::GraphProto &graph = model.graph();
  for (const auto &tensor : graph.initializer())
    if (failed(claim(tensor, valueLoc(tensor.name()))))
      return failure();
  for (auto [index, node] : llvm::enumerate(graph.node()))
    for (const auto &attr : node.attribute())
      if (attr.has_t() && failed(claim(attr.t(), valueLoc(nodeName(node, index)))))
        return failure();
  return success();
}

static StringRef typeKindName(const onnx::TypeProto &type) {
  switch (type.value_case()) {
  case onnx::TypeProto::kSequenceType:
    return "sequence";
  case onnx::TypeProto::kMapType:
    return "map";
  case onnx::TypeProto::kOptionalType:
    return "optional";
  case onnx::TypeProto::kSparseTensorType:
    return "sparse tensor";
  default:
    return "(none)";
  }
}

FailureOr<DeclaredType> ModelImporter::declaredType(const onnx::ValueInfoProto &info,
                                                    Location loc) {
  if (!info.type().has_tensor_type())
    return emitError(loc) << "graph value '" << info.name() << "' has unsupported type "
                          << typeKindName(info.type()) << ": Octet supports tensors only";
  const auto &tensorType = info.type().tensor_type();
  Type elementType = convertElementType(&ctx, tensorType.elem_type());
  if (!elementType)
    return emitError(loc) << "graph value '" << info.name() << "' has unsupported element type "
                          << onnxTypeName(tensorType.elem_type());
  if (!tensorType.has_shape())
    return emitError(loc) << "graph value '" << info.name()
                          << "' has no shape; Octet needs the rank of every input and output";
  DeclaredType result;
  SmallVector<int64_t> shape;
  for (const auto &dim : tensorType.shape().dim()) {
    bool isStatic = dim.has_dim_value() && dim.dim_value() >= 0;
    shape.push_back(isStatic ? dim.dim_value() : ShapedType::kDynamic);
    result.dimParams.push_back(
        StringAttr::get(&ctx, dim.has_dim_param() ? dim.dim_param() : std::string()));
  }
  result.type = RankedTensorType::get(shape, elementType);
  return result;
}

std::string ModelImporter::verifyNewOps(Block &block, Operation *lastBefore) {
  auto begin = lastBefore ? std::next(lastBefore->getIterator()) : block.begin();
  std::string message;
  ScopedDiagnosticHandler capture(&ctx, [&](Diagnostic &diag) {
    if (message.empty())
      message = diag.str();
    return success();
  });
  for (Operation &op : llvm::make_range(begin, block.end()))
    if (failed(verify(&op, /*verifyRecursively=*/false)))
      break;
  return message;
}

/// Exporters often leave nodes unnamed; the first output names them well.
static std::string nodeName(const onnx::NodeProto &node, unsigned index) {
  if (!node.name().empty())
    return node.name();
  if (node.output_size() && !node.output(0).empty())
    return node.output(0);
  return node.op_type() + "#" + std::to_string(index);
}

LogicalResult ModelImporter::checkNodes() {
  const onnx::GraphProto &graph = model.graph();
  llvm::StringSet<> defined;
  for (const auto &tensor : graph.initializer())
    defined.insert(tensor.name());
  for (const auto &input : graph.input())
    defined.insert(input.name());
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    std::string name = nodeName(node, index);
    StringRef domain = canonicalDomain(node.domain());
    std::string where = describeNode(node.op_type(), domain, opsets.lookup(domain), name);
    Location loc = valueLoc(name);
    const OpConversion *conversion =
        domain == "ai.onnx" ? lookupConversion(node.op_type()) : nullptr;
    if (!conversion)
      return emitError(loc) << "unsupported " << where;
    OpForm form = classifyOpForm(node, opsets.lookup(domain));
    if (form.kind == OpForm::Refused)
      return emitError(loc) << where << ": " << form.reason;
    for (const std::string &input : node.input())
      if (!input.empty() && !defined.contains(input))
        return emitError(loc) << where << ": input '" << input
                              << "' is not defined (no initializer, graph input or earlier "
                                 "node output)";
    // An older form that is rewritten may get inputs from its attributes
    // (Slice-1's starts and ends): it needs only its own.
    unsigned required =
        form.kind == OpForm::Upgraded ? form.requiredInputs : conversion->requiredInputs;
    for (unsigned i = 0; i < required; ++i)
      if (i >= static_cast<unsigned>(node.input_size()) || node.input(i).empty())
        return emitError(loc) << where << ": needs at least " << required << " inputs";
    for (const std::string &output : node.output())
      defined.insert(output);
  }
  return success();
}

LogicalResult ModelImporter::convertNode(GraphImporter &graph, onnx::NodeProto &node,
                                         unsigned index, const llvm::StringSet<> &usedNames) {
  std::string name = nodeName(node, index);
  StringRef domain = canonicalDomain(node.domain());
  NodeContext context(graph, node, name, domain, opsets.lookup(domain), valueLoc(name));
  Block &block = *graph.builder.getInsertionBlock();
  Operation *lastBefore = block.empty() ? nullptr : &block.back();
  if (failed(upgradeOpForm(context, classifyOpForm(node, context.opset))) ||
      failed(lookupConversion(node.op_type())->convert(context)))
    return failure();
  std::string invalid = verifyNewOps(block, lastBefore);
  if (!invalid.empty())
    return context.fail("cannot convert: " + invalid);
  for (auto [i, output] : llvm::enumerate(node.output()))
    if (!output.empty() && !graph.values.count(output) && usedNames.contains(output))
      return context.fail("output " + Twine(i) + " ('" + output +
                          "') is not supported, but the graph uses it");
  return success();
}

OwningOpRef<ModuleOp> ModelImporter::run() {
  if (failed(checkModel()))
    return {};
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  SmallVector<NamedAttribute> opsetAttrs;
  for (const auto &opset : opsets)
    opsetAttrs.emplace_back(StringAttr::get(&ctx, opset.getKey()),
                            IntegerAttr::get(IntegerType::get(&ctx, 64), opset.getValue()));
  (*module)->setAttr(octet::attr::kOpset, DictionaryAttr::get(&ctx, opsetAttrs));
  std::string producer = model.producer_name();
  if (!model.producer_version().empty())
    producer += (producer.empty() ? "" : " ") + model.producer_version();
  (*module)->setAttr(octet::attr::kProducer, StringAttr::get(&ctx, producer));

  onnx::GraphProto &graphProto = *model.mutable_graph();
  OpBuilder builder(module->getBodyRegion());
  GraphImporter graph(builder, fileLoc, baseDir);

  for (onnx::TensorProto &tensor : *graphProto.mutable_initializer()) {
    ElementsAttr value = convertTensor(tensor, baseDir, valueLoc(tensor.name()));
    if (!value)
      return {};
    OnnxValue &entry = graph.values[tensor.name()];
    entry.type = cast<RankedTensorType>(value.getType());
    entry.constant = value;
  }

  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::string> argNames;
  auto ioAttrs = [&](StringRef name, ArrayRef<Attribute> dimParams) {
    NamedAttribute attrs[] = {
        NamedAttribute(StringAttr::get(&ctx, octet::attr::kName), StringAttr::get(&ctx, name)),
        NamedAttribute(StringAttr::get(&ctx, octet::attr::kDimParams),
                       ArrayAttr::get(&ctx, dimParams))};
    return DictionaryAttr::get(&ctx, attrs);
  };
  SmallVector<SmallVector<Attribute>> argDimParams;
  for (const auto &input : graphProto.input()) {
    if (graph.values.count(input.name()))
      continue; // an initializer listed as input (IR version < 4)
    auto declared = declaredType(input, valueLoc(input.name()));
    if (failed(declared))
      return {};
    argTypes.push_back(declared->type);
    argAttrs.push_back(ioAttrs(input.name(), declared->dimParams));
    argNames.push_back(input.name());
    argDimParams.push_back(declared->dimParams);
  }

  auto func = func::FuncOp::create(builder, fileLoc, "main", builder.getFunctionType(argTypes, {}));
  func.setAllArgAttrs(argAttrs);
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);

  llvm::StringMap<std::pair<Value, int64_t>> symbolDims;
  for (auto [i, arg] : llvm::enumerate(body->getArguments())) {
    OnnxValue &entry = graph.values[argNames[i]];
    entry.type = cast<RankedTensorType>(arg.getType());
    entry.tensor = arg;
    for (auto [d, param] : llvm::enumerate(argDimParams[i])) {
      StringRef name = cast<StringAttr>(param).getValue();
      if (name.empty() || !entry.type.isDynamicDim(d))
        continue;
      auto [it, inserted] = symbolDims.try_emplace(name, arg, d);
      if (!inserted)
        graph.sameSymbol[{arg, static_cast<int64_t>(d)}] = it->second;
    }
  }

  llvm::StringSet<> usedNames;
  for (const auto &node : graphProto.node())
    for (const std::string &input : node.input())
      usedNames.insert(input);
  for (const auto &output : graphProto.output())
    usedNames.insert(output.name());

  for (auto [index, node] : llvm::enumerate(*graphProto.mutable_node()))
    if (failed(convertNode(graph, node, index, usedNames)))
      return {};

  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (const auto &output : graphProto.output()) {
    Location loc = valueLoc(output.name());
    auto found = graph.values.find(output.name());
    if (found == graph.values.end()) {
      emitError(loc) << "graph output '" << output.name() << "' is not computed by the graph";
      return {};
    }
    Value value = graph.materialize(found->second, loc);
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<Attribute> dimParams(type.getRank(), StringAttr::get(&ctx, ""));
    // The computed type wins; a declared shape only names the dims.
    const auto &declared = output.type().tensor_type();
    Type declaredElement = convertElementType(&ctx, declared.elem_type());
    if (declaredElement && declaredElement != type.getElementType()) {
      emitError(loc) << "graph output '" << output.name() << "' is declared as " << declaredElement
                     << " but computes " << type;
      return {};
    }
    if (declared.has_shape() && declared.shape().dim_size() == type.getRank())
      for (auto [d, dim] : llvm::enumerate(declared.shape().dim()))
        dimParams[d] = StringAttr::get(&ctx, dim.dim_param());
    results.push_back(value);
    resultAttrs.push_back(ioAttrs(output.name(), dimParams));
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setFunctionType(builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  func.setAllResultAttrs(resultAttrs);

  std::string message;
  {
    ScopedDiagnosticHandler capture(&ctx, [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    if (succeeded(verify(*module)))
      return module;
  }
  emitError(fileLoc) << "internal importer error: the imported IR does not verify: " << message;
  return {};
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

static void loadDialects(MLIRContext &ctx) {
  ctx.loadDialect<octet::OctetDialect, arith::ArithDialect, func::FuncDialect>();
}

uint64_t octet::physicalMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), pageBytes = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageBytes <= 0)
    return uint64_t(1) << 40; // unknown: only the per-tensor 2^40 limit applies
  return uint64_t(pages) * uint64_t(pageBytes);
}

mlir::OwningOpRef<ModuleOp> octet::importOnnxBytes(MLIRContext &ctx, StringRef bytes,
                                                   const ImportLimits &limits) {
  loadDialects(ctx);
  Location loc = FileLineColLoc::get(&ctx, "<memory>", 0, 0);
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    emitError(loc) << "ONNX model of " << bytes.size() << " bytes exceeds protobuf's 2 GiB limit";
    return {};
  }
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    emitError(loc) << "not a valid ONNX model (protobuf parse failed)";
    return {};
  }
  // No folder given: external data is refused (readExternalData), never
  // looked up relative to the working directory.
  return ModelImporter(ctx, model, "<memory>", limits.externalDataDir, limits.memoryBudget).run();
}

/// Parses ONNX text format; the parser needs a NUL-terminated buffer.
static LogicalResult parseOnnxText(StringRef path, onnx::ModelProto &model, Location loc) {
  uint64_t size = 0;
  std::string why;
  int fd = openRegularFile(std::string(path).c_str(), 0, size, why);
  if (fd < 0)
    return emitError(loc) << "cannot open '" << path << "': " << why;
  auto closeFd = llvm::scope_exit([&] { ::close(fd); });
  auto buffer = llvm::MemoryBuffer::getOpenFile(fd, path, size, /*RequiresNullTerminator=*/true);
  if (!buffer)
    return emitError(loc) << "cannot read '" << path << "': " << buffer.getError().message();
  try {
    onnx::OnnxParser parser((*buffer)->getBufferStart());
    auto status = parser.Parse(model);
    if (!status.IsOK())
      return emitError(loc) << "cannot parse ONNX text '" << path << "': " << status.ErrorMessage();
  } catch (const std::exception &e) {
    return emitError(loc) << "cannot parse ONNX text '" << path << "': " << e.what();
  }
  return success();
}

/// Parses a binary model through protobuf's streams (no second in-memory copy
/// of the file), with the size limit raised to 2 GiB.
static LogicalResult parseOnnxBinary(StringRef path, onnx::ModelProto &model, Location loc) {
  uint64_t size = 0;
  std::string why;
  int fd = openRegularFile(std::string(path).c_str(), 0, size, why);
  if (fd < 0)
    return emitError(loc) << "cannot open '" << path << "': " << why;
  google::protobuf::io::FileInputStream file(fd, /*block_size=*/1 << 20);
  file.SetCloseOnDelete(true);
  if (size > static_cast<uint64_t>(INT_MAX))
    return emitError(loc) << "'" << path << "' has " << size
                          << " bytes, more than protobuf's 2 GiB limit for an ONNX model "
                             "(larger weights belong in external data)";
  google::protobuf::io::CodedInputStream stream(&file);
  stream.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&stream) || file.GetErrno() != 0)
    return emitError(loc) << "'" << path << "' is not a valid ONNX model (protobuf parse failed"
                          << (file.GetErrno() ? std::string(": ") + std::strerror(file.GetErrno())
                                              : std::string())
                          << ")";
  return success();
}

mlir::OwningOpRef<ModuleOp> octet::importOnnxFile(MLIRContext &ctx, StringRef path,
                                                  const ImportLimits &limits) {
  loadDialects(ctx);
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  onnx::ModelProto model;
  bool isText = path.ends_with(".onnxtxt");
  if (failed(isText ? parseOnnxText(path, model, loc) : parseOnnxBinary(path, model, loc)))
    return {};
  SmallString<256> baseDir(limits.externalDataDir);
  if (baseDir.empty()) {
    baseDir = path;
    llvm::sys::path::remove_filename(baseDir);
    if (baseDir.empty())
      baseDir = ".";
  }
  return ModelImporter(ctx, model, path, baseDir, limits.memoryBudget).run();
}
