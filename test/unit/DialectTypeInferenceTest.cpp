// Type inference of octet ops built through the C++ builders, as the importer
// and the passes build them: broadcasting with symbolic dims, matmul, reductions.
#include "compiler/passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

class TypeInference : public ::testing::Test {
protected:
  TypeInference() : builder(&ctx) {
    DialectRegistry registry;
    octet::registerOctetDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
    auto fn = func::FuncOp::create(builder, builder.getUnknownLoc(), "f",
                                           builder.getFunctionType({}, {}));
    builder.setInsertionPointToEnd(fn.addEntryBlock());
  }

  /// A value of the given type (a function argument stand-in).
  Value value(ArrayRef<int64_t> shape, Type element = {}) {
    auto type = RankedTensorType::get(shape, element ? element : builder.getF32Type());
    auto fn = cast<func::FuncOp>(builder.getInsertionBlock()->getParentOp());
    (void)fn.insertArgument(fn.getNumArguments(), type, {}, builder.getUnknownLoc());
    return fn.getArgument(fn.getNumArguments() - 1);
  }

  static SmallVector<int64_t> shapeOf(Value v) {
    return SmallVector<int64_t>(cast<RankedTensorType>(v.getType()).getShape());
  }

  MLIRContext ctx;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
};

TEST_F(TypeInference, BroadcastKeepsSymbolicDimsAndResolvesOnes) {
  Location loc = builder.getUnknownLoc();
  Value x = value({kDyn, kDyn, 768});
  Value bias = value({768});
  Value mask = value({kDyn, 1, 1, kDyn});
  Value scores = value({kDyn, 12, kDyn, kDyn});
  EXPECT_EQ(shapeOf(octet::AddOp::create(builder, loc, x, bias)),
            (SmallVector<int64_t>{kDyn, kDyn, 768}));
  EXPECT_EQ(shapeOf(octet::AddOp::create(builder, loc, scores, mask)),
            (SmallVector<int64_t>{kDyn, 12, kDyn, kDyn}));
  // A static non-1 dim decides against `?`.
  EXPECT_EQ(shapeOf(octet::MulOp::create(builder, loc, value({kDyn, 5}), value({3, 1}))),
            (SmallVector<int64_t>{3, 5}));
  auto cmp = octet::EqualOp::create(builder, loc, x, bias);
  EXPECT_TRUE(cast<RankedTensorType>(cmp.getType()).getElementType().isInteger(1));
  func::ReturnOp::create(builder, loc);
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(TypeInference, IncompatibleBroadcastIsAnErrorNotACrash) {
  SmallVector<Type> types;
  Value a = value({2, 3}), b = value({4});
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  octet::AddOp::Adaptor adaptor(ValueRange{a, b});
  EXPECT_TRUE(failed(octet::AddOp::inferReturnTypes(&ctx, builder.getUnknownLoc(), adaptor,
                                                    types)));
  EXPECT_NE(message.find("do not broadcast"), std::string::npos) << message;
}

TEST_F(TypeInference, MatMulBatchesAndVectors) {
  Location loc = builder.getUnknownLoc();
  auto q = value({kDyn, 12, kDyn, 64}), kt = value({kDyn, 12, 64, kDyn});
  EXPECT_EQ(shapeOf(octet::MatMulOp::create(builder, loc, q, kt)),
            (SmallVector<int64_t>{kDyn, 12, kDyn, kDyn}));
  EXPECT_EQ(shapeOf(octet::MatMulOp::create(builder, loc, value({kDyn, 7, 64}), value({64}))),
            (SmallVector<int64_t>{kDyn, 7}));
  EXPECT_EQ(shapeOf(octet::MatMulOp::create(builder, loc, value({64}), value({64, 3}))),
            (SmallVector<int64_t>{3}));
}

TEST_F(TypeInference, ReductionsAndTranspose) {
  Location loc = builder.getUnknownLoc();
  Value x = value({kDyn, kDyn, 768});
  auto kept = octet::ReduceMeanOp::create(builder, loc, x, builder.getDenseI64ArrayAttr({2}),
                                                  /*keepdims=*/true);
  EXPECT_EQ(shapeOf(kept), (SmallVector<int64_t>{kDyn, kDyn, 1}));
  auto dropped = octet::ReduceSumOp::create(builder, loc, x, builder.getDenseI64ArrayAttr({0, 2}),
                                                    /*keepdims=*/false);
  EXPECT_EQ(shapeOf(dropped), (SmallVector<int64_t>{kDyn}));
  auto t = octet::TransposeOp::create(builder, loc, value({2, kDyn, 12, 64}),
                                              builder.getDenseI64ArrayAttr({0, 2, 3, 1}));
  EXPECT_EQ(shapeOf(t), (SmallVector<int64_t>{2, 12, 64, kDyn}));
}

TEST(Axes, NormalizeAxis) {
  EXPECT_EQ(octet::normalizeAxis(-1, 3), 2);
  EXPECT_EQ(octet::normalizeAxis(0, 3), 0);
  EXPECT_EQ(octet::normalizeAxis(3, 3), std::nullopt);
  EXPECT_EQ(octet::normalizeAxis(-4, 3), std::nullopt);
}
} // namespace
