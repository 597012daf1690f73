//===- PlanConstantsTest.cpp - who owns the weights during a compile ------===//
//
// The compile holds about one copy of the weights (issue 18): the Plan takes
// the module's large blobs instead of copying them, a JIT build frees the f32
// weights its steps pack, calibration's Plan borrows them, and blobs no op
// refers to any more are freed (compiler/driver/PlanBuilder.h,
// compiler/passes/ResourceBlobs.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanBuilder.h"
#include "compiler/passes/Passes.h"
#include "compiler/passes/ResourceBlobs.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace mlir;
namespace rt = octet::rt;

namespace {

// A [256, 256] f32 weight (256 KiB: large enough to be taken, not copied) and a
// [1000, 256] embedding table read by a gather; `unused` is referred to by no op.
constexpr const char *kModule = R"mlir(
func.func @main(%ids: tensor<4xi64>) -> tensor<4x256xf32> {
  %table = octet.constant dense_resource<table> : tensor<1000x256xf32>
  %w = octet.constant dense_resource<weight> : tensor<256x256xf32>
  %x = octet.gather %table, %ids axis = 0 : tensor<1000x256xf32>, tensor<4xi64>
  %y = octet.linear %x, %w : tensor<4x256xf32>, tensor<256x256xf32>
  return %y : tensor<4x256xf32>
}
func.func private @unused() -> tensor<256x256xf32> {
  %u = octet.constant dense_resource<unused> : tensor<256x256xf32>
  return %u : tensor<256x256xf32>
}
)mlir";

class PlanConstants : public ::testing::Test {
protected:
  PlanConstants() {
    DialectRegistry registry;
    octet::registerOctetDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(kModule, &ctx);
    main = module->lookupSymbol<func::FuncOp>("main");
    // Blobs with known bytes: the weight is 0.5 everywhere, table row r holds r.
    module->walk([&](octet::ConstantOp c) {
      auto resource = cast<DenseResourceElementsAttr>(c.getValue());
      auto type = cast<RankedTensorType>(resource.getType());
      size_t count = size_t(type.getNumElements());
      AsmResourceBlob blob = HeapAsmResourceBlob::allocate(count * sizeof(float), alignof(float));
      auto *values = reinterpret_cast<float *>(blob.getMutableData().data());
      for (size_t i = 0; i < count; ++i)
        values[i] = type.getDimSize(0) == 1000 ? float(i / 256) : 0.5f;
      resource.getRawHandle().getResource()->setBlob(std::move(blob));
    });
    options.setTarget("host", error);
  }

  /// The bytes the blob named `key` holds now (empty once freed).
  ArrayRef<char> blob(StringRef key) {
    ArrayRef<char> data;
    module->walk([&](octet::ConstantOp c) {
      auto resource = cast<DenseResourceElementsAttr>(c.getValue());
      if (resource.getRawHandle().getKey() == key)
        if (AsmResourceBlob *b = resource.getRawHandle().getBlob())
          data = b->getData();
    });
    return data;
  }

  /// The Plan's constant tensor named `name`, or null.
  static const rt::TensorInfo *constantTensor(const rt::Plan &plan, const std::string &name) {
    for (const rt::TensorInfo &t : plan.tensors)
      if (t.storage == rt::Storage::Constant && t.name == name)
        return &t;
    return nullptr;
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  func::FuncOp main;
  rt::KernelOptions options;
  std::string error;
};

TEST_F(PlanConstants, TakeKeepsTheTableWithoutACopyAndFreesThePackedWeight) {
  ASSERT_TRUE(main);
  const void *tableBytes = blob("table").data();
  ASSERT_FALSE(blob("weight").empty());
  FailureOr<std::unique_ptr<rt::Plan>> plan =
      octet::buildPlan(main, options, octet::PlanConstants::Take);
  ASSERT_TRUE(succeeded(plan));
  const rt::TensorInfo *table = constantTensor(**plan, "table");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->constant, tableBytes) << "the table was copied, not taken";
  // The linear's weight: packed by its step, no Plan tensor, its blob freed.
  EXPECT_EQ(constantTensor(**plan, "weight"), nullptr);
  EXPECT_TRUE(blob("weight").empty());
  for (const rt::ConstantRange &range : (*plan)->constants)
    EXPECT_NE(range.bytes, size_t(256 * 256 * sizeof(float))) << "a range into the freed weight";
  // The Plan owns the table now: it outlives the module and its context.
  module = nullptr;
  const float *rows = static_cast<const float *>(table->constant);
  EXPECT_EQ(rows[999 * 256 + 7], 999.0f);
}

TEST_F(PlanConstants, TakeForImageKeepsThePackedWeightForTheImage) {
  ASSERT_TRUE(main);
  const void *weightBytes = blob("weight").data();
  FailureOr<std::unique_ptr<rt::Plan>> plan =
      octet::buildPlan(main, options, octet::PlanConstants::TakeForImage);
  ASSERT_TRUE(succeeded(plan));
  EXPECT_EQ(blob("weight").data(), weightBytes);
  bool listed = false;
  for (const rt::ConstantRange &range : (*plan)->constants)
    listed |= range.data == weightBytes;
  EXPECT_TRUE(listed) << "the image needs the weight's range";
}

TEST_F(PlanConstants, BorrowLeavesTheModuleItsBlobs) {
  ASSERT_TRUE(main);
  const void *tableBytes = blob("table").data();
  {
    FailureOr<std::unique_ptr<rt::Plan>> plan =
        octet::buildPlan(main, options, octet::PlanConstants::Borrow);
    ASSERT_TRUE(succeeded(plan));
    EXPECT_EQ(constantTensor(**plan, "table")->constant, tableBytes);
    EXPECT_TRUE((*plan)->keepAlive.empty() ||
                std::none_of((*plan)->keepAlive.begin(), (*plan)->keepAlive.end(),
                             [&](const auto &p) { return p.get() == tableBytes; }));
  }
  // The Plan is gone; the module still has every weight.
  EXPECT_EQ(blob("table").data(), tableBytes);
  EXPECT_EQ(reinterpret_cast<const float *>(blob("weight").data())[5], 0.5f);
}

TEST_F(PlanConstants, ReleaseUnusedBlobsFreesOnlyWhatNoOpRefersTo) {
  ASSERT_TRUE(main);
  EXPECT_EQ(octet::releaseUnusedBlobs(*module), 0u);
  module->lookupSymbol<func::FuncOp>("unused").erase();
  // Erased with its function: no op refers to `unused`, but the context kept it.
  auto &manager = DenseResourceElementsHandle::getManagerInterface(&ctx).getBlobManager();
  ASSERT_NE(manager.lookup("unused"), nullptr);
  EXPECT_FALSE(manager.lookup("unused")->getBlob()->getData().empty());
  EXPECT_EQ(octet::releaseUnusedBlobs(*module), 1u);
  EXPECT_TRUE(manager.lookup("unused")->getBlob()->getData().empty());
  EXPECT_FALSE(blob("weight").empty());
  EXPECT_FALSE(blob("table").empty());
}

TEST_F(PlanConstants, EraseReplacedConstantFreesAnUnsharedBlobAtOnce) {
  ASSERT_TRUE(main);
  module->lookupSymbol<func::FuncOp>("unused").erase();
  octet::ConstantOp weight;
  octet::LinearOp linear;
  main.walk([&](octet::ConstantOp c) {
    if (cast<DenseResourceElementsAttr>(c.getValue()).getRawHandle().getKey() == "weight")
      weight = c;
  });
  main.walk([&](octet::LinearOp l) { linear = l; });
  ASSERT_TRUE(weight && linear);
  auto &manager = DenseResourceElementsHandle::getManagerInterface(&ctx).getBlobManager();
  // A pass gives the linear another constant on the same blob: erasing the old
  // op must keep the blob.
  OpBuilder builder(weight);
  auto copy = octet::ConstantOp::create(builder, weight.getLoc(), weight.getValue());
  linear->setOperand(1, copy.getResult());
  octet::eraseReplacedConstant(weight);
  EXPECT_FALSE(manager.lookup("weight")->getBlob()->getData().empty());
  // The linear gone (its result replaced by its input, of the same type), the
  // last constant on the blob is erased and the blob freed with it.
  linear.getResult().replaceAllUsesWith(linear.getInput());
  linear.erase();
  octet::eraseReplacedConstant(copy);
  EXPECT_TRUE(manager.lookup("weight")->getBlob()->getData().empty());
  EXPECT_FALSE(blob("table").empty());
}

} // namespace
