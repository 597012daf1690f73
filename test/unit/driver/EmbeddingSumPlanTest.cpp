//===- EmbeddingSumPlanTest.cpp - embeddings folded into one step ---------===//
//
// The plan builder folds a BERT-family embedding sum (gathers of constant
// tables, their octet.fused additions, and its pack_tokens) into one
// embedding_sum step (compiler/driver/PlanEmbedding.cpp,
// runtime/TokenSteps.cpp): the plan has no gather steps, the rows are
// the sums in the body's order bit for bit, padding computes nothing, bad
// ids are errors, and sums it cannot fold keep their steps.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanBuilder.h"
#include "compiler/passes/Passes.h"
#include "runtime/Executor.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace mlir;
namespace rt = octet::rt;

namespace {

constexpr int64_t kWidth = 8, kWords = 10, kPositions = 6;

/// Table `rows` x kWidth whose element (r, j) is `scale` * (r + j / 8) plus an
/// odd fraction, so that sums round.
std::string table(int64_t rows, float scale) {
  std::string s = "dense<[";
  for (int64_t r = 0; r < rows; ++r) {
    s += r ? ", [" : "[";
    for (int64_t j = 0; j < kWidth; ++j)
      s += (j ? ", " : "") + std::to_string(scale * (float(r) + float(j) / 8.0f) + 0.1f / 3.0f);
    s += "]";
  }
  return s + "]>";
}

/// Element (r, j) of table(_, scale): what the parser makes of its text.
float element(float scale, int64_t r, int64_t j) {
  return std::strtof(std::to_string(scale * (float(r) + float(j) / 8.0f) + 0.1f / 3.0f).c_str(),
                     nullptr);
}

struct Variant {
  std::string idType = "i64";
  bool pack = true;      ///< the sum goes through token_layout / pack / unpack
  std::string alsoReturn; ///< a second result: "%sum" (folded, not packed), "%w" (not folded)
  bool subtract = false;  ///< the body subtracts the position: not folded
  /// The position ids (a constant: the plan checks only the inputs' ids on
  /// entry); -1 counts from the end: row 5.
  std::string positions = "-1, 1, 2, 3, 4, 5";
};

int64_t positionRow(int64_t s) { return s == 0 ? kPositions - 1 : s; }

std::string moduleText(const Variant &v) {
  const std::string ids = "tensor<?x?x" + v.idType + ">";
  std::string text = "func.func @main(%ids: " + ids +
                     " {octet.dim_params = [\"batch\", \"sequence\"]}, %types: " + ids +
                     " {octet.dim_params = [\"batch\", \"sequence\"]}, %am: tensor<?x?xi64> "
                     "{octet.dim_params = [\"batch\", \"sequence\"]}) -> " +
                     std::string(!v.alsoReturn.empty() ? "(tensor<?x?x8xf32>, tensor<?x?x8xf32>)"
                                                       : "tensor<?x?x8xf32>") +
                     " {\n";
  text += "  %word = octet.constant " + table(kWords, 1.0f) + " : tensor<10x8xf32>\n";
  text += "  %type = octet.constant " + table(2, 0.5f) + " : tensor<2x8xf32>\n";
  text += "  %ptab = octet.constant " + table(kPositions, 0.25f) + " : tensor<6x8xf32>\n";
  text += "  %all = octet.constant dense<[[" + v.positions + "]]> : tensor<1x6x" + v.idType + ">\n";
  text += R"mlir(  %one = octet.constant dense<1.0> : tensor<f32>
  %big = octet.constant dense<-10000.0> : tensor<f32>
  %b = octet.dim %ids[0] : IDS
  %s = octet.dim %ids[1] : IDS
  %pos = octet.slice %all axes = [1] starts = [0] ends = [%s] steps = [1] : tensor<1x6xIDT> -> tensor<1x?xIDT>
  %w = octet.gather %word, %ids axis = 0 : tensor<10x8xf32>, IDS
  %t = octet.gather %type, %types axis = 0 : tensor<2x8xf32>, IDS
  %p = octet.gather %ptab, %pos axis = 0 : tensor<6x8xf32>, tensor<1x?xIDT>
  %sum = octet.fused %w, %t, %p {
  ^bb0(%a0: f32, %a1: f32, %a2: f32):
    %x = arith.addf %a1, %a0 : f32
    %y = arith.OP %x, %a2 : f32
    octet.yield %y : f32
  } : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<1x?x8xf32> -> tensor<?x?x8xf32>
)mlir";
  if (v.pack)
    text += R"mlir(  %mf = octet.cast %am : tensor<?x?xi64> to tensor<?x?xf32>
  %m4 = octet.reshape %mf(%b, %s) : tensor<?x?xf32> -> tensor<?x1x1x?xf32>
  %inv = octet.sub %one, %m4 : tensor<f32>, tensor<?x1x1x?xf32>
  %mask = octet.mul %inv, %big : tensor<?x1x1x?xf32>, tensor<f32>
  %l = octet.token_layout %mask(%b, %s) : tensor<?x1x1x?xf32> -> tensor<?xi64>
  %x = octet.pack_tokens %sum, %l : tensor<?x?x8xf32>, tensor<?xi64>
  %out = octet.unpack_tokens %x, %l(%b, %s) : tensor<?x?x8xf32>, tensor<?xi64>
)mlir";
  else
    text += "  %out = octet.fused %sum {\n  ^bb0(%e: f32):\n    octet.yield %e : f32\n  } : "
            "tensor<?x?x8xf32> -> tensor<?x?x8xf32>\n";
  text += !v.alsoReturn.empty()
              ? "  return %out, " + v.alsoReturn + " : tensor<?x?x8xf32>, tensor<?x?x8xf32>\n}\n"
              : "  return %out : tensor<?x?x8xf32>\n}\n";
  auto replace = [&](const std::string &from, const std::string &to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  };
  replace("IDS", ids);
  replace("IDT", v.idType);
  replace("OP", v.subtract ? "subf" : "addf");
  return text;
}

class EmbeddingSumPlan : public ::testing::Test {
protected:
  EmbeddingSumPlan() {
    DialectRegistry registry;
    octet::registerOctetDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    options.setTarget("host", error);
  }

  std::unique_ptr<rt::Plan> build(const Variant &v) { return build(moduleText(v)); }
  std::unique_ptr<rt::Plan> build(const std::string &text) {
    module = parseSourceString<ModuleOp>(text, &ctx);
    if (!module)
      return nullptr;
    FailureOr<std::unique_ptr<rt::Plan>> plan = octet::buildPlan(
        module->lookupSymbol<func::FuncOp>("main"), options, octet::PlanConstants::Borrow);
    return succeeded(plan) ? std::move(*plan) : nullptr;
  }

  static std::vector<std::string> kinds(const rt::Plan &plan) {
    std::vector<std::string> k;
    for (const rt::StepPtr &step : plan.steps)
      k.push_back(step->kind());
    return k;
  }
  static bool has(const std::vector<std::string> &kinds, const std::string &kind) {
    return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
  }

  /// Runs the plan on [batch, seq] ids (i64 or i32 as the variant) and mask.
  template <typename Id>
  rt::Status run(const rt::Plan &plan, const std::vector<Id> &ids, const std::vector<Id> &types,
                 const std::vector<int64_t> &mask, int64_t batch, int64_t seq,
                 std::vector<float> &out) {
    std::vector<rt::RunTensor> inputs(3), outputs(plan.outputs.size());
    const void *data[3] = {ids.data(), types.data(), mask.data()};
    for (int i = 0; i < 3; ++i) {
      inputs[i].data = const_cast<void *>(data[i]);
      inputs[i].dtype = i < 2 && sizeof(Id) == 4 ? rt::DType::I32 : rt::DType::I64;
      inputs[i].rank = 2, inputs[i].dims[0] = batch, inputs[i].dims[1] = seq;
    }
    rt::Status status = rt::execute(plan, inputs, outputs);
    if (status.ok()) {
      const float *o = static_cast<const float *>(outputs[0].data);
      out.assign(o, o + batch * seq * kWidth);
    }
    for (rt::RunTensor &t : outputs)
      std::free(t.data);
    return status;
  }

  /// (type + word) + position at (b, s) for id rows w, t, as the body adds.
  static float expected(int64_t w, int64_t t, int64_t s, int64_t j) {
    const float sum = element(0.5f, t, j) + element(1.0f, w, j);
    return sum + element(0.25f, positionRow(s), j);
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  rt::KernelOptions options;
  std::string error;
};

TEST_F(EmbeddingSumPlan, PackedSumIsOneStepAndSkipsPadding) {
  std::unique_ptr<rt::Plan> plan = build(Variant());
  ASSERT_TRUE(plan);
  const std::vector<std::string> k = kinds(*plan);
  EXPECT_TRUE(has(k, "embedding_sum+pack_tokens"));
  EXPECT_FALSE(has(k, "gather"));
  EXPECT_FALSE(has(k, "pack_tokens"));
  // Lengths 4, 1 and 3 of 4.
  const int64_t batch = 3, seq = 4;
  std::vector<int64_t> ids = {1, 9, 3, 0, 7, 2, 2, 4, 5, 6, 8, 0};
  std::vector<int64_t> types = {0, 1, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1};
  std::vector<int64_t> mask = {1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0};
  std::vector<float> out;
  rt::Status status = run(*plan, ids, types, mask, batch, seq, out);
  ASSERT_TRUE(status.ok()) << status.message();
  for (int64_t p = 0; p < batch * seq; ++p)
    for (int64_t j = 0; j < kWidth; ++j) {
      const float want = mask[p] ? expected(ids[p], types[p], p % seq, j) : 0.0f;
      EXPECT_EQ(out[p * kWidth + j], want) << "position " << p << " column " << j;
    }
  // No padding: every position, rows in place (the key-padding mode).
  mask.assign(mask.size(), 1);
  ASSERT_TRUE(run(*plan, ids, types, mask, batch, seq, out).ok());
  EXPECT_EQ(out[(2 * seq + 3) * kWidth + 5], expected(ids[11], types[11], 3, 5));
}

// The inputs' ids are checked on entry (PlanIO.cpp); the step checks every
// index it reads, computed or constant, before it writes a row.
TEST_F(EmbeddingSumPlan, AnIdOutOfRangeIsAnErrorNamingIt) {
  Variant v;
  v.positions = "0, 1, 2, 6, 4, 5";
  std::unique_ptr<rt::Plan> plan = build(v);
  ASSERT_TRUE(plan);
  std::vector<int64_t> ids = {1, 2, 3, 0, 4, 5, 6, 7}, types(8, 0), mask(8, 1);
  mask[7] = 0;
  std::vector<float> out;
  rt::Status status = run(*plan, ids, types, mask, 2, 4, out);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("index 6 at position [0, 3]"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("[-6, 6)"), std::string::npos) << status.message();
  // Seq 3 does not read it.
  ids.resize(6), types.resize(6), mask.assign(6, 1);
  status = run(*plan, ids, types, mask, 2, 3, out);
  EXPECT_TRUE(status.ok()) << status.message();
  ids = {1, 2, 10, 0, 4, 5};
  status = run(*plan, ids, types, mask, 2, 3, out);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("10, outside the valid range [0, 10)"), std::string::npos)
      << status.message();
  // Longer than the position ids: the sliced ids stop at 6.
  ids.assign(7, 1), types.assign(7, 0), mask.assign(7, 1);
  status = run(*plan, ids, types, mask, 1, 7, out);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("i64 [1, 6] of table 2 and the 1 x 7 tokens do not broadcast"),
            std::string::npos)
      << status.message();
}

TEST_F(EmbeddingSumPlan, UnpackedSumWithI32Ids) {
  Variant v;
  v.pack = false, v.idType = "i32";
  std::unique_ptr<rt::Plan> plan = build(v);
  ASSERT_TRUE(plan);
  const std::vector<std::string> k = kinds(*plan);
  EXPECT_TRUE(has(k, "embedding_sum"));
  EXPECT_FALSE(has(k, "gather"));
  std::vector<int32_t> ids = {9, 0, 4, 5, 1, 3}, types = {1, 0, 1, 1, 0, 0};
  std::vector<int64_t> mask(6, 1);
  std::vector<float> out;
  rt::Status status = run(*plan, ids, types, mask, 2, 3, out);
  ASSERT_TRUE(status.ok()) << status.message();
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t j = 0; j < kWidth; ++j)
      EXPECT_EQ(out[p * kWidth + j], expected(ids[p], types[p], p % 3, j)) << p << ", " << j;
}

// A sum with another user: folded, its pack_tokens kept.
TEST_F(EmbeddingSumPlan, SumWithAnotherUserIsFoldedWithoutThePack) {
  Variant v;
  v.alsoReturn = "%sum";
  std::unique_ptr<rt::Plan> plan = build(v);
  ASSERT_TRUE(plan);
  const std::vector<std::string> k = kinds(*plan);
  EXPECT_TRUE(has(k, "embedding_sum"));
  EXPECT_TRUE(has(k, "pack_tokens"));
  EXPECT_FALSE(has(k, "gather"));
  std::vector<int64_t> ids = {1, 2, 3, 4}, types = {0, 1, 0, 1}, mask = {1, 1, 1, 0};
  std::vector<float> out;
  rt::Status status = run(*plan, ids, types, mask, 2, 2, out);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(out[kWidth + 3], expected(2, 1, 1, 3));
  EXPECT_EQ(out[3 * kWidth + 3], 0.0f);
}

// A gather with another user, or a body that is not a sum: the steps stay.
TEST_F(EmbeddingSumPlan, SumsItCannotFoldKeepTheirSteps) {
  for (bool subtract : {false, true}) {
    Variant v;
    if (subtract)
      v.subtract = true;
    else
      v.alsoReturn = "%w";
    std::unique_ptr<rt::Plan> plan = build(v);
    ASSERT_TRUE(plan) << subtract;
    const std::vector<std::string> k = kinds(*plan);
    EXPECT_TRUE(has(k, "gather")) << subtract;
    EXPECT_TRUE(has(k, "pack_tokens")) << subtract;
    EXPECT_FALSE(has(k, "embedding_sum+pack_tokens")) << subtract;
    EXPECT_FALSE(has(k, "embedding_sum")) << subtract;
    std::vector<int64_t> ids = {1, 2, 3, 4}, types = {0, 1, 0, 1}, mask = {1, 1, 1, 0};
    std::vector<float> out;
    rt::Status status = run(*plan, ids, types, mask, 2, 2, out);
    ASSERT_TRUE(status.ok()) << status.message();
    if (!subtract) {
      EXPECT_EQ(out[kWidth + 3], expected(2, 1, 1, 3));
    }
  }
}

/// DistilBERT's and RoBERTa's forms, with slots as octet-plan-memory gives
/// them: the word and position rows added by an octet.add and packed; the
/// token type rows, at ids an op computes (slot 5), packed alone and added
/// after. `castSlot`: the slot of an op between that gather and its pack.
std::string packedSeparatelyText(int castSlot) {
  std::string text = "func.func @main(%ids: tensor<?x?xi64> {octet.dim_params = [\"batch\", "
                     "\"sequence\"]}, %types: tensor<?x?xi64> {octet.dim_params = [\"batch\", "
                     "\"sequence\"]}, %am: tensor<?x?xi64> {octet.dim_params = [\"batch\", "
                     "\"sequence\"]}) -> tensor<?x?x8xf32> {\n";
  text += "  %word = octet.constant " + table(kWords, 1.0f) + " : tensor<10x8xf32>\n";
  text += "  %type = octet.constant " + table(2, 0.5f) + " : tensor<2x8xf32>\n";
  text += "  %ptab = octet.constant " + table(kPositions, 0.25f) + " : tensor<6x8xf32>\n";
  text += R"mlir(  %all = octet.constant dense<[[-1, 1, 2, 3, 4, 5]]> : tensor<1x6xi64>
  %zero = octet.constant dense<0> : tensor<i64>
  %one = octet.constant dense<1.0> : tensor<f32>
  %big = octet.constant dense<-10000.0> : tensor<f32>
  %b = octet.dim %ids[0] : tensor<?x?xi64>
  %s = octet.dim %ids[1] : tensor<?x?xi64>
  %pos = octet.slice %all axes = [1] starts = [0] ends = [%s] steps = [1] : tensor<1x6xi64> -> tensor<1x?xi64>
  %w = octet.gather %word, %ids axis = 0 {octet.slot = 1 : i64} : tensor<10x8xf32>, tensor<?x?xi64>
  %p = octet.gather %ptab, %pos axis = 0 {octet.slot = 2 : i64} : tensor<6x8xf32>, tensor<1x?xi64>
  %sum = octet.add %w, %p {octet.slot = 3 : i64} : tensor<?x?x8xf32>, tensor<1x?x8xf32>
  %tids = octet.add %types, %zero {octet.slot = 5 : i64} : tensor<?x?xi64>, tensor<i64>
  %t = octet.gather %type, %tids axis = 0 {octet.slot = 6 : i64} : tensor<2x8xf32>, tensor<?x?xi64>
  %mf = octet.cast %am {octet.slot = CAST : i64} : tensor<?x?xi64> to tensor<?x?xf32>
  %m4 = octet.reshape %mf(%b, %s) : tensor<?x?xf32> -> tensor<?x1x1x?xf32>
  %inv = octet.sub %one, %m4 {octet.slot = 9 : i64} : tensor<f32>, tensor<?x1x1x?xf32>
  %mask = octet.mul %inv, %big {octet.slot = 10 : i64} : tensor<?x1x1x?xf32>, tensor<f32>
  %l = octet.token_layout %mask(%b, %s) {octet.slot = 11 : i64} : tensor<?x1x1x?xf32> -> tensor<?xi64>
  %x = octet.pack_tokens %sum, %l {octet.slot = 12 : i64} : tensor<?x?x8xf32>, tensor<?xi64>
  %tp = octet.pack_tokens %t, %l {octet.slot = 13 : i64} : tensor<?x?x8xf32>, tensor<?xi64>
  %y = octet.add %x, %tp {octet.slot = 14 : i64} : tensor<?x?x8xf32>, tensor<?x?x8xf32>
  %out = octet.unpack_tokens %y, %l(%b, %s) : tensor<?x?x8xf32>, tensor<?xi64>
  return %out : tensor<?x?x8xf32>
}
)mlir";
  const size_t at = text.find("CAST");
  return text.replace(at, 4, std::to_string(castSlot));
}

// An add of two gathers folds, a packed gather alone folds, unless an op
// between the gather and its pack writes the slot of its computed ids.
TEST_F(EmbeddingSumPlan, AddedAndSinglePackedGathers) {
  for (int castSlot : {8, 5}) {
    std::unique_ptr<rt::Plan> plan = build(packedSeparatelyText(castSlot));
    ASSERT_TRUE(plan) << castSlot;
    const std::vector<std::string> k = kinds(*plan);
    EXPECT_TRUE(has(k, "embedding_sum+pack_tokens")) << castSlot;
    EXPECT_EQ(has(k, "gather+pack_tokens"), castSlot != 5) << castSlot;
    EXPECT_EQ(has(k, "gather"), castSlot == 5) << castSlot;
    std::vector<int64_t> ids = {1, 9, 3, 7, 2, 0}, types = {0, 1, 1, 1, 0, 0};
    std::vector<int64_t> mask = {1, 1, 0, 1, 1, 1};
    std::vector<float> out;
    rt::Status status = run(*plan, ids, types, mask, 2, 3, out);
    ASSERT_TRUE(status.ok()) << status.message();
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t j = 0; j < kWidth; ++j) {
        const float sum = element(1.0f, ids[p], j) + element(0.25f, positionRow(p % 3), j);
        const float want = mask[p] ? sum + element(0.5f, types[p], j) : 0.0f;
        EXPECT_EQ(out[p * kWidth + j], want) << castSlot << ": " << p << ", " << j;
      }
  }
}

} // namespace
