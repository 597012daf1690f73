//===- PackedWeightArenaTest.cpp - octet-pack-weights' one buffer -----------===//
//
// octet-pack-weights packs every weight of a function into one buffer on huge
// pages (compiler/codegen/HugePages.h): each packed blob is a 64-byte aligned
// slice of it, the bytes are what packWeight writes, and the buffer lives as
// long as any blob does.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/GemmBlocking.h"
#include "compiler/codegen/HugePages.h"
#include "compiler/codegen/PackedWeights.h"
#include "compiler/driver/PlanBuilder.h"
#include "compiler/passes/Passes.h"
#include "test/unit/HugePageProbe.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

using namespace mlir;

namespace {

// Two [1024, 1024] i8 weights (1 MiB each, packed a little more: the buffer
// passes 2 MiB) and a [64, 48] one; `b` is read transposed.
constexpr const char *kModule = R"mlir(
func.func @main(%x: tensor<4x1024xui8>, %x64: tensor<4x64xui8>)
    -> (tensor<4x1024xf32>, tensor<4x1024xf32>, tensor<4x48xf32>) {
  %xs = octet.constant dense<0.5> : tensor<f32>
  %xzp = octet.constant dense<128> : tensor<ui8>
  %ws = octet.constant dense<0.25> : tensor<1024xf32>
  %ws48 = octet.constant dense<0.25> : tensor<48xf32>
  %a = octet.constant dense_resource<a> : tensor<1024x1024xi8>
  %b = octet.constant dense_resource<b> : tensor<1024x1024xi8>
  %c = octet.constant dense_resource<c> : tensor<64x48xi8>
  %ya = octet.qlinear %x, %a scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<1024xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<4x1024xui8>, tensor<1024x1024xi8> -> tensor<4x1024xf32>
  %yb = octet.qlinear %x, %b scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<1024xf32>) transpose_weight {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<4x1024xui8>, tensor<1024x1024xi8> -> tensor<4x1024xf32>
  %yc = octet.qlinear %x64, %c scales(%xs, %xzp, %ws48 : tensor<f32>, tensor<ui8>, tensor<48xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<4x64xui8>, tensor<64x48xi8> -> tensor<4x48xf32>
  return %ya, %yb, %yc : tensor<4x1024xf32>, tensor<4x1024xf32>, tensor<4x48xf32>
}
)mlir";

TEST(PackedWeightArena, OneHugePageBufferHoldsEveryPackedWeight) {
  MLIRContext ctx;
  DialectRegistry registry;
  octet::registerOctetDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &ctx);
  ASSERT_TRUE(module);
  // Weights with known bytes, kept for the reference packing.
  std::map<std::string, std::vector<int8_t>> dense;
  std::map<std::string, std::pair<int64_t, int64_t>> shapes;
  module->walk([&](octet::ConstantOp c) {
    auto resource = dyn_cast<DenseResourceElementsAttr>(c.getValue());
    if (!resource)
      return;
    auto type = cast<RankedTensorType>(resource.getType());
    const std::string key = resource.getRawHandle().getKey().str();
    std::vector<int8_t> &bytes = dense[key];
    bytes.resize(size_t(type.getNumElements()));
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = int8_t((i * 37 + key[0]) % 255 - 127);
    shapes[key] = {type.getDimSize(0), type.getDimSize(1)};
    AsmResourceBlob blob = HeapAsmResourceBlob::allocate(bytes.size(), 64);
    std::memcpy(blob.getMutableData().data(), bytes.data(), bytes.size());
    resource.getRawHandle().getResource()->setBlob(std::move(blob));
  });

  PassManager pm(&ctx);
  pm.addNestedPass<func::FuncOp>(octet::createOctetPackWeights());
  ASSERT_TRUE(succeeded(pm.run(*module)));

  struct Packed {
    std::string key;
    const int8_t *data;
    size_t bytes;
  };
  std::vector<Packed> packed;
  module->walk([&](octet::ConstantOp c) {
    auto resource = dyn_cast<DenseResourceElementsAttr>(c.getValue());
    if (!resource || !resource.getRawHandle().getKey().ends_with(".packed"))
      return;
    ArrayRef<char> data = resource.getRawHandle().getBlob()->getData();
    packed.push_back({resource.getRawHandle().getKey().drop_back(7).str(),
                      reinterpret_cast<const int8_t *>(data.data()), data.size()});
  });
  ASSERT_EQ(packed.size(), 3u);
  std::sort(packed.begin(), packed.end(),
            [](const Packed &x, const Packed &y) { return x.data < y.data; });

  // One buffer: 2 MiB aligned, the weights back to back on 64-byte boundaries.
  const auto base = reinterpret_cast<uintptr_t>(packed[0].data);
  EXPECT_EQ(base % octet::kHugePageBytes, 0u);
  for (size_t i = 1; i < packed.size(); ++i)
    EXPECT_EQ(packed[i].data, packed[i - 1].data + (packed[i - 1].bytes + 63) / 64 * 64)
        << packed[i].key << " is not the next slice of the buffer";
  if (octet::hugePagesAvailable()) {
    EXPECT_EQ(octet::test::hugePageEligible(base), 1);
  }

  // The bytes are packWeight's.
  for (const Packed &p : packed) {
    auto [rows, cols] = shapes[p.key];
    const bool transposed = p.key == "b";
    const int64_t k = transposed ? cols : rows, n = transposed ? rows : cols;
    octet::PackedWeightLayout layout = octet::packedWeightLayout(
        octet::PackIsa::Avx512Vnni, k, n, octet::x86::gemm_blocking::panelWidth(n));
    ASSERT_EQ(size_t(layout.bytes()), p.bytes) << p.key;
    std::vector<int8_t> expected(p.bytes);
    std::vector<int32_t> colsum(static_cast<size_t>(n));
    octet::packWeight(layout, dense[p.key].data(),
                      transposed ? octet::WeightLayout::NK : octet::WeightLayout::KN,
                      expected.data(), colsum.data());
    EXPECT_EQ(std::memcmp(expected.data(), p.data, p.bytes), 0) << p.key;
  }

  // The Plan takes the blobs (and with them the buffer): the module can go.
  auto main = module->lookupSymbol<func::FuncOp>("main");
  octet::rt::KernelOptions options;
  std::string error;
  ASSERT_TRUE(options.setTarget("host", error)) << error;
  FailureOr<std::unique_ptr<octet::rt::Plan>> plan =
      octet::buildPlan(main, options, octet::PlanConstants::Take);
  ASSERT_TRUE(succeeded(plan));
  std::vector<int8_t> lastWeight(packed.back().data, packed.back().data + packed.back().bytes);
  module = nullptr;
  EXPECT_EQ(std::memcmp(lastWeight.data(), packed.back().data, lastWeight.size()), 0)
      << "the buffer went with the module";
}

} // namespace
