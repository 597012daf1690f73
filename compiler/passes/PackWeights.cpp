//===- PackWeights.cpp - octet-pack-weights -------------------------------===//
//
// Packs each constant qlinear weight once, at compile time, into the panels of
// the chosen GEMM kernel (compiler/codegen/PackedWeights.h, the layout the
// kernels' own packers use) with its u8 x s8 column sums, so that plan build
// only hands the bytes to the kernel. docs/pack-weights.md.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/HugePages.h"
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

/// One weight to pack: its constant, orientation, layout and place in the arena.
struct PendingWeight {
  ConstantOp constant;
  bool transposed = false;
  int64_t k = 0, n = 0;
  PackedWeightLayout layout;
  size_t offset = 0; ///< in the arena, 64-byte aligned
  Value packed;
  DictionaryAttr fields;
};

struct OctetPackWeightsPass : octet::impl::OctetPackWeightsBase<OctetPackWeightsPass> {
  using OctetPackWeightsBase::OctetPackWeightsBase;

  void runOnOperation() override {
    // The option parser admits only the enum's names (Passes.td).
    const PackIsa packIsa = isa;
    // One packed constant per (weight, transpose_weight): shared weights are packed once.
    llvm::DenseMap<std::pair<Value, unsigned>, size_t> pendingOf;
    std::vector<PendingWeight> pending;
    std::vector<std::pair<QLinearOp, size_t>> users;
    size_t arenaBytes = 0;
    getOperation().walk([&](QLinearOp op) {
      if (op.getPacked())
        return;
      auto constant = op.getWeight().getDefiningOp<ConstantOp>();
      auto type = cast<RankedTensorType>(op.getWeight().getType());
      if (!constant || type.getRank() != 2 || !type.hasStaticShape())
        return;
      const bool transposed = op.getTransposeWeight();
      auto key = std::make_pair(Value(op.getWeight()), unsigned(transposed));
      auto found = pendingOf.find(key);
      if (found == pendingOf.end()) {
        const int64_t k = op.getK(), n = op.getN();
        if (k > kMaxU8S8K) // the runtime's exact reference loop takes it unpacked
          return;
        std::vector<char> denseWeight;
        if (weightBytes(constant, type.getNumElements(), denseWeight).empty())
          return;
        PendingWeight weight{constant, transposed, k, n,
                             packedWeightLayout(packIsa, k, n, x86::gemm_blocking::panelWidth(n))};
        weight.offset = arenaBytes;
        arenaBytes += (size_t(weight.layout.bytes()) + 63) / 64 * 64;
        found = pendingOf.try_emplace(key, pending.size()).first;
        pending.push_back(weight);
      }
      users.emplace_back(op, found->second);
    });
    if (pending.empty())
      return;

    // All packed weights in one buffer on huge pages (compiler/codegen/HugePages.h):
    // every run streams them whole, and on 4 KiB pages each page cost the GEMMs a
    // page walk. Each blob keeps the buffer alive; the Plan takes the blobs.
    std::shared_ptr<uint8_t> arena = hugePageBuffer(arenaBytes);
    if (!arena) {
      getOperation().emitError() << "cannot allocate " << arenaBytes
                                 << " bytes for the packed weights";
      return signalPassFailure();
    }
    llvm::SetVector<Operation *> oldWeights;
    for (PendingWeight &weight : pending) {
      std::vector<char> denseWeight;
      ArrayRef<int8_t> dense = weightBytes(
          weight.constant, cast<RankedTensorType>(weight.constant.getType()).getNumElements(),
          denseWeight);
      auto *bytes = reinterpret_cast<int8_t *>(arena.get() + weight.offset);
      const size_t size = size_t(weight.layout.bytes());
      std::vector<int32_t> colsum(static_cast<size_t>(weight.n));
      packWeight(weight.layout, dense.data(),
                 weight.transposed ? WeightLayout::NK : WeightLayout::KN, bytes, colsum.data());

      OpBuilder b(weight.constant);
      auto packedType = RankedTensorType::get({weight.layout.bytes()}, b.getI8Type());
      ElementsAttr data;
      if (auto resource = dyn_cast<DenseResourceElementsAttr>(weight.constant.getValue()))
        data = DenseResourceElementsAttr::get(
            packedType, (resource.getRawHandle().getKey() + ".packed").str(),
            AsmResourceBlob(ArrayRef<char>(reinterpret_cast<const char *>(bytes), size), 64,
                            [arena](void *, size_t, size_t) {}, /*dataIsMutable=*/true));
      else
        data = DenseElementsAttr::get(packedType, ArrayRef<int8_t>(bytes, size));
      weight.packed = ConstantOp::create(b, weight.constant.getLoc(), data);
      NamedAttrList fields;
      fields.append("isa", b.getStringAttr(packIsaName(packIsa)));
      fields.append("nr", b.getI64IntegerAttr(weight.layout.nr));
      fields.append("k", b.getI64IntegerAttr(weight.k));
      fields.append("n", b.getI64IntegerAttr(weight.n));
      auto colsumType = RankedTensorType::get({weight.n}, b.getI32Type());
      fields.append("colsum", DenseElementsAttr::get(colsumType, ArrayRef<int32_t>(colsum)));
      weight.fields = fields.getDictionary(b.getContext());
      oldWeights.insert(weight.constant);
      ++numPacked;
    }
    for (auto [op, index] : users) {
      op.getWeightMutable().assign(pending[index].packed);
      op.setTransposeWeight(false);
      op->setAttr(QLinearOp::kPackedAttrName, pending[index].fields);
      ++numQLinears;
    }
    for (Operation *old : oldWeights)
      if (old->use_empty())
        eraseReplacedConstant(old);
  }
};

} // namespace
