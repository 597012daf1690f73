//===- PackWeights.cpp - octet-pack-weights -------------------------------===//
//
// Packs each constant qlinear weight once, at compile time, into the panels of
// the chosen GEMM kernel (compiler/codegen/PackedWeights.h, the layout the
// kernels' own packers use) with its u8 x s8 column sums, so that plan build
// only hands the bytes to the kernel. docs/pack-weights.md.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/PackedWeights.h"
#include "compiler/ir/ConstantData.h"
#include "compiler/codegen/GemmBlocking.h"
#include "compiler/passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "compiler/passes/ResourceBlobs.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <vector>

namespace octet {
#define GEN_PASS_DEF_OCTETPACKWEIGHTS
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

/// The bytes of a static-shape i8 constant of `count` elements (a resource
/// blob's in place, a splat expanded into `storage`); empty for anything else
/// (an elided blob).
ArrayRef<int8_t> weightBytes(ConstantOp constant, int64_t count, std::vector<char> &storage) {
  std::optional<ArrayRef<char>> bytes = octet::constantBytes(constant.getValue(), storage);
  if (!bytes || int64_t(bytes->size()) != count)
    return {};
  return ArrayRef<int8_t>(reinterpret_cast<const int8_t *>(bytes->data()), bytes->size());
}

struct OctetPackWeightsPass : octet::impl::OctetPackWeightsBase<OctetPackWeightsPass> {
  using OctetPackWeightsBase::OctetPackWeightsBase;

  void runOnOperation() override {
    // The option parser admits only the enum's names (Passes.td).
    const PackIsa packIsa = isa;
    // One packed constant per (weight, transpose_weight): shared weights are packed once.
    llvm::DenseMap<std::pair<Value, unsigned>, std::pair<Value, DictionaryAttr>> packed;
    llvm::SetVector<Operation *> oldWeights;
    getOperation().walk([&](QLinearOp op) {
      if (op.getPacked())
        return;
      auto constant = op.getWeight().getDefiningOp<ConstantOp>();
      auto type = cast<RankedTensorType>(op.getWeight().getType());
      if (!constant || type.getRank() != 2 || !type.hasStaticShape())
        return;
      const bool transposed = op.getTransposeWeight();
      auto key = std::make_pair(Value(op.getWeight()), unsigned(transposed));
      auto found = packed.find(key);
      if (found == packed.end()) {
        const int64_t k = op.getK(), n = op.getN();
        if (k > kMaxU8S8K) // the runtime's exact reference loop takes it unpacked
          return;
        std::vector<char> denseWeight;
        ArrayRef<int8_t> weight = weightBytes(constant, type.getNumElements(), denseWeight);
        if (weight.empty())
          return;
        PackedWeightLayout layout =
            packedWeightLayout(packIsa, k, n, x86::gemm_blocking::panelWidth(n));
        // Packed straight into the new blob, 64-byte aligned as the kernels'
        // panels like it (the Plan takes the blob as it is).
        AsmResourceBlob blob = HeapAsmResourceBlob::allocate(size_t(layout.bytes()), 64);
        auto *bytes = reinterpret_cast<int8_t *>(blob.getMutableData().data());
        std::vector<int32_t> colsum(static_cast<size_t>(n));
        packWeight(layout, weight.data(), transposed ? WeightLayout::NK : WeightLayout::KN, bytes,
                   colsum.data());

        OpBuilder b(constant);
        auto packedType = RankedTensorType::get({layout.bytes()}, b.getI8Type());
        ElementsAttr data;
        if (auto resource = dyn_cast<DenseResourceElementsAttr>(constant.getValue()))
          data = DenseResourceElementsAttr::get(
              packedType, (resource.getRawHandle().getKey() + ".packed").str(), std::move(blob));
        else
          data =
              DenseElementsAttr::get(packedType, ArrayRef<int8_t>(bytes, size_t(layout.bytes())));
        Value packedWeight = ConstantOp::create(b, constant.getLoc(), data);
        NamedAttrList fields;
        fields.append("isa", b.getStringAttr(packIsaName(packIsa)));
        fields.append("nr", b.getI64IntegerAttr(layout.nr));
        fields.append("k", b.getI64IntegerAttr(k));
        fields.append("n", b.getI64IntegerAttr(n));
        fields.append("colsum", DenseElementsAttr::get(
                                    RankedTensorType::get({n}, b.getI32Type()),
                                    ArrayRef<int32_t>(colsum)));
        found = packed.try_emplace(key, packedWeight, fields.getDictionary(b.getContext())).first;
        oldWeights.insert(constant);
        ++numPacked;
      }
      op.getWeightMutable().assign(found->second.first);
      op.setTransposeWeight(false);
      op->setAttr(QLinearOp::kPackedAttrName, found->second.second);
      ++numQLinears;
    });
    for (Operation *old : oldWeights)
      if (old->use_empty())
        eraseReplacedConstant(old);
  }
};

} // namespace
