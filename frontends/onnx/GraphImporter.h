//===- GraphImporter.h - state shared by the ONNX importer's parts -*- C++ -*-===//
//
// The importer walks the ONNX graph once, in order. Each ONNX value becomes an
// `OnnxValue`: a tensor (materialized lazily), possibly a constant, and
// possibly a "shape value" — a small integer vector known entry by entry at
// import time, which is how shape sub-graphs (Shape → Gather → Concat →
// Reshape) fold away.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_FRONTENDS_ONNX_GRAPHIMPORTER_H
#define OCTET_FRONTENDS_ONNX_GRAPHIMPORTER_H

#include "compiler/ir/OctetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <vector>

namespace octet::onnx_import {

/// Entries of a 0-D or 1-D integer tensor: each a constant (an index
/// IntegerAttr) or a run-time value (`index`, or `i1` for boolean tensors).
using ShapeValue = llvm::SmallVector<mlir::OpFoldResult, 4>;

/// Largest tensor kept as a DenseElementsAttr (and usable as a shape value).
constexpr int64_t kSmallTensorLimit = 64;

/// What the importer knows about one ONNX value.
struct OnnxValue {
  mlir::RankedTensorType type;
  mlir::Value tensor;              // null until first used as data
  mlir::ElementsAttr constant;     // initializer or Constant: op created on use
  std::optional<ShapeValue> shape; // entries known at import time
};

/// Maps an ONNX element type to its MLIR type; null for unsupported types.
mlir::Type convertElementType(mlir::MLIRContext *ctx, int32_t onnxType);

/// Name of an ONNX TensorProto_DataType, for messages.
std::string onnxTypeName(int32_t onnxType);

/// "ONNX op 'T' (domain 'd', opset N) at node 'n'": how errors name a node.
std::string describeNode(llvm::StringRef opType, llvm::StringRef domain, int64_t opset,
                         llvm::StringRef nodeName);

class GraphImporter;

/// One node being converted: its inputs, attributes, and error reporting that
/// names the op, node, domain and opset.
class NodeContext {
public:
  NodeContext(GraphImporter &graph, onnx::NodeProto &node, llvm::StringRef nodeName,
              llvm::StringRef domain, int64_t opset, mlir::Location loc)
      : graph(graph), node(node), nodeName(nodeName), domain(domain), opset(opset), loc(loc) {}

  GraphImporter &graph;
  onnx::NodeProto &node;
  llvm::StringRef nodeName;
  llvm::StringRef domain;
  int64_t opset;
  mlir::Location loc;

  mlir::OpBuilder &builder() const;
  mlir::MLIRContext *context() const { return loc.getContext(); }

  /// Emits "ONNX op 'T' (domain 'd', opset N) at node 'n': <reason>".
  mlir::LogicalResult fail(const llvm::Twine &reason) const;

  // Inputs. An absent optional input has an empty name.
  bool hasInput(unsigned i) const;
  mlir::Value input(unsigned i) const;
  mlir::RankedTensorType inputType(unsigned i) const;
  const OnnxValue &inputInfo(unsigned i) const;
  /// The input's entries when it is a shape value or a small integer constant.
  std::optional<ShapeValue> shapeInput(unsigned i) const;
  /// The input's values when they are all known at import time.
  std::optional<llvm::SmallVector<int64_t>> constantInts(unsigned i) const;
  /// The input as a small constant, or null.
  mlir::DenseElementsAttr constantInput(unsigned i) const;

  // Attributes.
  const onnx::AttributeProto *attribute(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t defaultValue) const;
  float floatAttr(llvm::StringRef name, float defaultValue) const;
  std::optional<llvm::SmallVector<int64_t>> intsAttr(llvm::StringRef name) const;
  std::string stringAttr(llvm::StringRef name, llvm::StringRef defaultValue) const;

  /// Normalizes `axis` against `rank`, failing with a message naming `what`.
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank, llvm::StringRef what) const;

  // Outputs.
  void setOutput(unsigned i, mlir::Value value);
  /// Sets output `i` from a conversion that may have failed (and reported why).
  mlir::LogicalResult setResult(unsigned i, mlir::FailureOr<mlir::Value> value) {
    if (mlir::failed(value))
      return mlir::failure();
    setOutput(i, *value);
    return mlir::success();
  }
  void setOutput(unsigned i, OnnxValue value);
  void setShapeOutput(unsigned i, ShapeValue entries, mlir::RankedTensorType type);

  /// Creates an op whose result types are inferred, turning a failed
  /// inference into an error on this node instead of a crash.
  template <typename OpT, typename... Args> mlir::FailureOr<OpT> create(Args &&...args) {
    mlir::OperationState state(loc, OpT::getOperationName());
    OpT::build(builder(), state, mlir::TypeRange{}, std::forward<Args>(args)...);
    llvm::SmallVector<mlir::Type> types;
    std::string message;
    mlir::LogicalResult inferred = mlir::failure();
    {
      mlir::ScopedDiagnosticHandler capture(context(), [&](mlir::Diagnostic &diag) {
        message = diag.str();
        return mlir::success();
      });
      inferred = OpT::inferReturnTypes(context(), loc, state.operands,
                                       state.attributes.getDictionary(context()),
                                       state.getRawProperties(), state.regions, types);
    }
    if (mlir::failed(inferred))
      return fail(message.empty() ? "invalid operands" : llvm::StringRef(message));
    state.addTypes(types);
    return llvm::cast<OpT>(builder().create(state));
  }
  /// `create` for single-result ops, giving the result.
  template <typename OpT, typename... Args> mlir::FailureOr<mlir::Value> value(Args &&...args) {
    auto op = create<OpT>(std::forward<Args>(args)...);
    if (mlir::failed(op))
      return mlir::failure();
    return op->getResult();
  }

  // Index arithmetic that folds constants.
  mlir::OpFoldResult indexConst(int64_t v) const;
  mlir::Value indexValue(mlir::OpFoldResult v) const;
  /// The size of dim `dim` of `tensor`: a constant or a run-time index.
  mlir::OpFoldResult dim(mlir::Value tensor, int64_t dim) const;
  llvm::SmallVector<mlir::OpFoldResult> dims(mlir::Value tensor) const;

  /// `octet.reshape` / `octet.expand` of `input` to `sizes` (constants become
  /// static dims, values the `?` dims).
  mlir::Value reshapeTo(mlir::Value input, llvm::ArrayRef<mlir::OpFoldResult> sizes) const;
  mlir::Value expandTo(mlir::Value input, llvm::ArrayRef<mlir::OpFoldResult> sizes) const;
};

enum class IndexOp { Add, Sub, Mul, Div, Max, Min };

/// c · x₁ · … · xₙ: the canonical form of the importer's index products. The
/// atoms are run-time sizes that are not themselves products, in the order the
/// importer first saw them (so the IR built from a product is deterministic).
struct IndexProduct {
  int64_t coefficient = 1;
  llvm::SmallVector<mlir::Value, 4> atoms;
};

/// Builds the function body for one ONNX graph.
class GraphImporter {
public:
  GraphImporter(mlir::OpBuilder &builder, mlir::Location fileLoc, llvm::StringRef baseDir)
      : builder(builder), fileLoc(fileLoc), baseDir(baseDir) {}

  mlir::OpBuilder &builder;
  mlir::Location fileLoc;
  /// Where external tensor data lives (the model's directory).
  std::string baseDir;
  llvm::StringMap<OnnxValue> values;

  /// The tensor for a value, creating its constant or shape op on first use.
  mlir::Value materialize(OnnxValue &value, mlir::Location loc);
  std::optional<ShapeValue> shapeValueOf(const OnnxValue &value) const;

  mlir::OpFoldResult dim(mlir::Value tensor, int64_t dim, mlir::Location loc);
  /// Records the size of dim `dim` of `tensor` when its op computed it.
  void recordDim(mlir::Value tensor, int64_t dim, mlir::OpFoldResult size) {
    dimCache[{tensor, dim}] = size;
  }
  /// lhs op rhs on index values, folded: constants fold, and products and
  /// exact quotients of products are canonical (one SSA value per product),
  /// so (S·768)/(S·64) is 12 and S·H·D built twice is one value.
  mlir::OpFoldResult indexOp(IndexOp op, mlir::OpFoldResult lhs, mlir::OpFoldResult rhs,
                             mlir::Location loc);
  mlir::Value indexValue(mlir::OpFoldResult v, mlir::Location loc);

  /// The broadcast of two sizes (ONNX: equal, or one of them 1) where the
  /// importer can tell, else null: a size and min(size, c) broadcast to the
  /// size in every run that is valid (a sliced buffer of at most c rows added
  /// to S rows: equal when S <= c, an error otherwise unless c is 1).
  mlir::OpFoldResult knownBroadcast(mlir::OpFoldResult a, mlir::OpFoldResult b);
  /// True if `v` is a tensor size or a product of sizes (so never negative).
  bool isSize(mlir::OpFoldResult v) const;

  /// Dims of graph inputs that share a dim_param name with an earlier input
  /// dim are that dim: (argument, dim) → (first argument, dim).
  llvm::DenseMap<std::pair<mlir::Value, int64_t>, std::pair<mlir::Value, int64_t>> sameSymbol;

private:
  /// The size of a `?` dim derived from how the tensor was computed, or null.
  mlir::OpFoldResult deriveDim(mlir::Value tensor, int64_t dim, mlir::Location loc);
  mlir::OpFoldResult broadcastDim(llvm::ArrayRef<std::pair<mlir::Value, int64_t>> operands,
                                  int64_t resultRank, int64_t dim, mlir::Location loc);
  IndexProduct productOf(mlir::OpFoldResult v);
  mlir::OpFoldResult buildProduct(IndexProduct product, mlir::Location loc);

  llvm::DenseMap<std::pair<mlir::Value, int64_t>, mlir::OpFoldResult> dimCache;
  // A std::map, not a DenseMap: INT64_MAX and INT64_MIN are DenseMap's empty
  // and tombstone keys, and a hostile model's sizes reach them.
  std::map<int64_t, mlir::Value> indexConstants;
  /// Products built by indexOp, both ways, and the order atoms were first seen.
  llvm::DenseMap<mlir::Value, IndexProduct> products;
  std::map<std::pair<int64_t, std::vector<unsigned>>, mlir::Value> productValues;
  llvm::DenseMap<mlir::Value, unsigned> atomOrder;
};

/// How one op type of the default domain converts.
struct OpConversion {
  llvm::StringRef opType;
  unsigned requiredInputs; // checked before `convert` runs
  mlir::LogicalResult (*convert)(NodeContext &);
};
/// The conversion of `opType`, or null when the op is unsupported.
const OpConversion *lookupConversion(llvm::StringRef opType);
/// OnnxIndexingOps.cpp's table (GatherND, GatherElements, IsNaN, Clip, Tile, ...),
/// which lookupConversion consults after OnnxOps.cpp's.
llvm::ArrayRef<OpConversion> indexingConversions();
/// Input `i`'s entries as a shape value: known at import (NodeContext::shapeInput)
/// or, for a 0-D/1-D integer graph input of static length, its elements read at run
/// time (`octet.element_index`; docs/decisions.md). Nullopt otherwise.
std::optional<ShapeValue> shapeOrInputElements(NodeContext &n, unsigned i);

/// How the importer reads an ai.onnx op at a model's opset (LegacyForms.cpp):
/// as is, after rewriting an older form into the one its conversion reads, or
/// not at all (an older form not converted, or an op the opset does not have).
struct OpForm {
  enum Kind { Read, Upgraded, Refused } kind = Read;
  /// The since-version of the op's schema at the opset; 0 above the opsets
  /// libonnx knows.
  int64_t version = 0;
  std::string reason; // Refused: why
  /// Upgraded: the inputs the older form needs (its rewrite adds the rest).
  unsigned requiredInputs = 0;
  mlir::LogicalResult (*upgrade)(NodeContext &, int64_t version) = nullptr;
};
OpForm classifyOpForm(const onnx::NodeProto &node, int64_t opset);
/// Rewrites an Upgraded node (its attributes, inputs) into the form its
/// conversion reads; a no-op for the other kinds.
mlir::LogicalResult upgradeOpForm(NodeContext &n, const OpForm &form);

/// Converts an ONNX tensor (initializer or Constant) to an elements attribute,
/// moving its bytes (raw_data, or external data read from `baseDir`) into a
/// resource blob when it is large. Emits an error at `loc` on failure.
mlir::ElementsAttr convertTensor(onnx::TensorProto &tensor, llvm::StringRef baseDir,
                                 mlir::Location loc);

} // namespace octet::onnx_import

#endif
