//===- LegacyForms.cpp - ops of opsets 1-10 in the form the importer reads ===//
//
// The conversions in OnnxOps.cpp and OnnxIndexingOps.cpp read each op in its
// opset-11 form (and the newer forms they name). A model of an older opset
// may use an older version of an op; libonnx's schema registry says which
// (the version in force at the model's opset), and `kOldForms` says, for
// every version whose signature or meaning differs from what the conversion
// reads, whether the node is rewritten into the newer form (attributes that
// became inputs, a string that became an enum, the legacy `broadcast`/`axis`
// broadcasting) or refused with the reason. Every other pre-11 version of a
// supported op is read as is: it differs from its successor only in the
// element types allowed, in `consumed_inputs` (an in-place hint with no
// effect on the result), or in the negative axes and indices and the
// multidirectional broadcasting the newer forms also accept
// (docs/onnx-import.md has the audit, op by op).
//
// An op whose first version comes after the model's opset is not an op of
// that opset at all: refused, naming the opset that introduced it.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/GraphImporter.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <onnx/defs/schema.h>

#include <limits>

using namespace mlir;
using namespace octet;
using namespace octet::onnx_import;

//===----------------------------------------------------------------------===//
// Rewrites
//===----------------------------------------------------------------------===//

/// Adds `value` to the graph under a fresh name (one no ONNX value has) and
/// makes it input `i` of the node being converted.
static void setInputValue(NodeContext &n, unsigned i, StringRef what, OnnxValue value) {
  std::string base = ("octet.upgraded/" + n.nodeName + "/" + what).str(), name = base;
  for (unsigned k = 1; n.graph.values.count(name); ++k)
    name = base + "#" + std::to_string(k);
  n.graph.values[name] = std::move(value);
  while (n.node.input_size() <= static_cast<int>(i))
    n.node.add_input("");
  n.node.set_input(static_cast<int>(i), name);
}

static void setConstantInput(NodeContext &n, unsigned i, StringRef what, DenseElementsAttr value) {
  OnnxValue entry;
  entry.type = cast<RankedTensorType>(value.getType());
  entry.constant = value;
  setInputValue(n, i, what, std::move(entry));
}

static DenseElementsAttr int64Vector(NodeContext &n, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    IntegerType::get(n.context(), 64));
  return DenseElementsAttr::get(type, values);
}

/// The name of the op's version in messages: "Slice-1".
static std::string versioned(NodeContext &n, int64_t version) {
  return (n.node.op_type() + "-" + Twine(version)).str();
}

/// Binary ops before opset 7 (Add/Sub/Mul/Div-1 and -6, Pow/And/Or/Xor/
/// Equal/Greater/Less-1): with broadcast = 0 both inputs have one shape; with
/// broadcast = 1 B's dims match a contiguous run of A's dims, the trailing
/// ones unless `axis` says where the run starts. Numpy broadcasting reads
/// both exactly once B has as many trailing 1 dims as A has dims after the
/// run, so B is reshaped to that and the conversion reads the node as is.
static LogicalResult upgradeLegacyBroadcast(NodeContext &n, int64_t version) {
  RankedTensorType a = n.inputType(0), b = n.inputType(1);
  if (!n.intAttr("broadcast", 0)) {
    bool sameShape = a.getRank() == b.getRank();
    for (int64_t d = 0; sameShape && d < a.getRank(); ++d)
      sameShape = a.isDynamicDim(d) || b.isDynamicDim(d) || a.getDimSize(d) == b.getDimSize(d);
    if (!sameShape)
      return n.fail(
          versioned(n, version) + " without broadcast = 1 takes two inputs of one shape, got " +
          Twine(a.getRank()) + "-D and " + Twine(b.getRank()) + "-D inputs of different shapes");
    return success();
  }
  if (b.getRank() > a.getRank())
    return n.fail(versioned(n, version) + " broadcasts B onto A, but B has rank " +
                  Twine(b.getRank()) + " > A's rank " + Twine(a.getRank()));
  const onnx::AttributeProto *axisAttr = n.attribute("axis");
  if (!axisAttr)
    return success(); // suffix matching: numpy's alignment
  int64_t axis = n.intAttr("axis", 0);
  if (axis < 0 || axis + b.getRank() > a.getRank())
    return n.fail(versioned(n, version) + " axis = " + Twine(axis) + " does not place B (rank " +
                  Twine(b.getRank()) + ") within A (rank " + Twine(a.getRank()) + ")");
  int64_t trailing = a.getRank() - axis - b.getRank();
  if (trailing == 0)
    return success();
  SmallVector<OpFoldResult> sizes = n.dims(n.input(1));
  sizes.append(trailing, n.indexConst(1));
  OnnxValue entry;
  entry.tensor = n.reshapeTo(n.input(1), sizes);
  entry.type = cast<RankedTensorType>(entry.tensor.getType());
  setInputValue(n, 1, "B", std::move(entry));
  return success();
}

/// Cast-1 names the target type by its TensorProto.DataType name ("FLOAT").
static LogicalResult upgradeCastName(NodeContext &n, int64_t version) {
  for (onnx::AttributeProto &attr : *n.node.mutable_attribute()) {
    if (attr.name() != "to" || attr.type() != onnx::AttributeProto::STRING)
      continue;
    onnx::TensorProto_DataType type;
    if (!onnx::TensorProto_DataType_Parse(attr.s(), &type))
      return n.fail(versioned(n, version) + " attribute to = '" + attr.s() +
                    "' names no ONNX data type");
    attr.set_type(onnx::AttributeProto::INT);
    attr.set_i(type);
    attr.clear_s();
    return success();
  }
  return n.fail(versioned(n, version) + " needs its attribute to (a data type name)");
}

/// Clip-1 and -6 take min and max as float attributes that default to the
/// lowest and the largest float. The defaults are kept as bounds (not dropped):
/// -inf clips to the lowest float, as those versions define.
static LogicalResult upgradeClipAttributes(NodeContext &n, int64_t version) {
  Type element = n.inputType(0).getElementType();
  if (!isa<FloatType>(element))
    return n.fail(versioned(n, version) + " takes a float tensor (float16, float or double)");
  if (n.node.input_size() > 1)
    return n.fail(versioned(n, version) + " takes one input (min and max are attributes)");
  auto scalar = [&](float value) {
    return DenseElementsAttr::get(RankedTensorType::get({}, element),
                                  FloatAttr::get(element, static_cast<double>(value)));
  };
  float lowest = n.floatAttr("min", std::numeric_limits<float>::lowest());
  float highest = n.floatAttr("max", std::numeric_limits<float>::max());
  setConstantInput(n, 1, "min", scalar(lowest));
  setConstantInput(n, 2, "max", scalar(highest));
  return success();
}

/// Concat-1's axis is optional and defaults to 1.
static LogicalResult upgradeConcatAxis(NodeContext &n, int64_t) {
  if (n.attribute("axis"))
    return success();
  onnx::AttributeProto *axis = n.node.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  return success();
}

/// Reshape-1 takes the shape as an attribute.
static LogicalResult upgradeReshapeAttribute(NodeContext &n, int64_t version) {
  auto shape = n.intsAttr("shape");
  if (!shape)
    return n.fail(versioned(n, version) + " needs its attribute shape (a list of ints)");
  if (n.node.input_size() > 1)
    return n.fail(versioned(n, version) + " takes one input (the shape is an attribute)");
  setConstantInput(n, 1, "shape", int64Vector(n, *shape));
  return success();
}

/// Slice-1 takes starts, ends and (optionally) axes as attributes, with step
/// 1; its clamping of out-of-range starts and ends is Slice-10's.
static LogicalResult upgradeSliceAttributes(NodeContext &n, int64_t version) {
  auto starts = n.intsAttr("starts"), ends = n.intsAttr("ends");
  if (!starts || !ends)
    return n.fail(versioned(n, version) + " needs its attributes starts and ends (lists of ints)");
  if (n.node.input_size() > 1)
    return n.fail(versioned(n, version) +
                  " takes one input (starts, ends and axes are attributes)");
  setConstantInput(n, 1, "starts", int64Vector(n, *starts));
  setConstantInput(n, 2, "ends", int64Vector(n, *ends));
  if (auto axes = n.intsAttr("axes"))
    setConstantInput(n, 3, "axes", int64Vector(n, *axes));
  return success();
}

//===----------------------------------------------------------------------===//
// Table
//===----------------------------------------------------------------------===//

namespace {
/// Versions of `opType` up to `lastVersion` (schema since-versions) differ
/// from what its conversion reads: rewritten by `upgrade`, or refused for
/// `reason` when `upgrade` is null. `requiredInputs` replaces the
/// conversion's count before the rewrite.
struct OldForm {
  StringRef opType;
  int64_t lastVersion;
  unsigned requiredInputs; // of the older form
  LogicalResult (*upgrade)(NodeContext &, int64_t version);
  StringRef reason;
};
} // namespace

static const OldForm kOldForms[] = {
    {"Add", 6, 2, upgradeLegacyBroadcast, ""},
    {"And", 1, 2, upgradeLegacyBroadcast, ""},
    {"Cast", 1, 1, upgradeCastName, ""},
    {"Clip", 6, 1, upgradeClipAttributes, ""},
    {"Concat", 1, 1, upgradeConcatAxis, ""},
    {"Div", 6, 2, upgradeLegacyBroadcast, ""},
    {"Equal", 1, 2, upgradeLegacyBroadcast, ""},
    {"Greater", 1, 2, upgradeLegacyBroadcast, ""},
    {"Less", 1, 2, upgradeLegacyBroadcast, ""},
    {"Mul", 6, 2, upgradeLegacyBroadcast, ""},
    {"Or", 1, 2, upgradeLegacyBroadcast, ""},
    {"Pow", 1, 2, upgradeLegacyBroadcast, ""},
    {"Reshape", 1, 1, upgradeReshapeAttribute, ""},
    {"Slice", 1, 1, upgradeSliceAttributes, ""},
    {"Sub", 6, 2, upgradeLegacyBroadcast, ""},
    {"Tile", 1, 2, nullptr,
     "Tile-1 repeats along one axis given by its inputs 'tiles' and 'axis'; Octet converts "
     "Tile from opset 6 on (one 'repeats' entry per dim)"},
    {"Xor", 1, 2, upgradeLegacyBroadcast, ""},
};

OpForm octet::onnx_import::classifyOpForm(const onnx::NodeProto &node, int64_t opset) {
  OpForm form;
  // libonnx knows the schemas up to its own newest opset; above it the
  // conversions read the ops as the opset says (they check what they read).
  const auto &ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto range = ranges.find(onnx::ONNX_DOMAIN);
  if (range == ranges.end() || opset > range->second.second)
    return form;
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), onnx::ONNX_DOMAIN);
  if (!schema) {
    form.kind = OpForm::Refused;
    int64_t first = 0;
    for (int64_t v = opset + 1; !first && v <= range->second.second; ++v)
      if (const onnx::OpSchema *later = onnx::OpSchemaRegistry::Schema(
              node.op_type(), static_cast<int>(v), onnx::ONNX_DOMAIN))
        first = later->since_version();
    form.reason =
        "ai.onnx opset " + std::to_string(opset) + " has no op '" + node.op_type() + "' (" +
        (first ? "it was introduced in opset " + std::to_string(first)
               : "it was introduced after opset " + std::to_string(range->second.second)) +
        ")";
    return form;
  }
  form.version = schema->since_version();
  for (const OldForm &old : kOldForms) {
    if (old.opType != node.op_type() || form.version > old.lastVersion)
      continue;
    form.kind = old.upgrade ? OpForm::Upgraded : OpForm::Refused;
    form.reason = old.reason.str();
    form.upgrade = old.upgrade;
    form.requiredInputs = old.requiredInputs;
    return form;
  }
  // Dropout-1 and -6 run in training mode (random) unless is_test is set;
  // with it they are the identity that Dropout-7 on is in inference.
  if (node.op_type() == "Dropout" && form.version < 7) {
    bool isTest = false;
    for (const auto &attr : node.attribute())
      if (attr.name() == "is_test")
        isTest = attr.i() != 0;
    if (!isTest) {
      form.kind = OpForm::Refused;
      form.reason = "Dropout-" + std::to_string(form.version) +
                    " without is_test = 1 is training-mode (random) dropout; Octet compiles "
                    "inference only";
    }
  }
  return form;
}

LogicalResult octet::onnx_import::upgradeOpForm(NodeContext &n, const OpForm &form) {
  if (form.kind != OpForm::Upgraded)
    return success();
  return form.upgrade(n, form.version);
}
