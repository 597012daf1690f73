//===- TokenLayoutTest.cpp - padding-free batches in the runtime ----------===//
//
// computeTokenLayout on hand-made masks (every mode and the checks that
// refuse packing), and a hand-built Plan: token_layout → pack_tokens → a row
// step → unpack_tokens, where the executor must re-evaluate the packed dims
// so that the row step sees [1, real tokens] (docs/padding-free.md).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/NextStepPrefetch.h"
#include "runtime/Executor.h"
#include "runtime/Steps.h"
#include "runtime/TokenLayout.h"
#include "TestPlans.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace octet::rt {
namespace {

/// An additive [B, 1, 1, S] mask from per-row lengths (right padding), fill -1e4 · (1 - m).
std::vector<float> keyPadding(const std::vector<int64_t> &lengths, int64_t seq, float fill) {
  std::vector<float> mask(lengths.size() * seq, 0.0f);
  for (size_t b = 0; b < lengths.size(); ++b)
    for (int64_t s = lengths[b]; s < seq; ++s)
      mask[b * seq + s] = fill;
  return mask;
}

MaskView broadcastRows(const std::vector<float> &mask, int64_t seq) {
  MaskView view;
  view.data = mask.data();
  view.strideBatch = seq;
  view.strideKey = 1;
  return view;
}

std::vector<int64_t> layoutOf(const std::vector<MaskView> &masks, int64_t batch, int64_t seq) {
  std::vector<int64_t> layout(tokenLayoutSize(batch, seq), -7);
  computeTokenLayout(masks, batch, seq, layout.data());
  return layout;
}

TEST(TokenLayout, KeyPaddingPacksRealTokensInOrder) {
  const int64_t seq = 5;
  std::vector<float> mask = keyPadding({5, 1, 0, 3}, seq, -10000.0f);
  std::vector<int64_t> layout = layoutOf({broadcastRows(mask, seq)}, 4, seq);
  TokenLayoutView view(layout.data());
  EXPECT_EQ(view.mode(), TokenMode::Packed);
  EXPECT_EQ(view.rows(), 9);
  EXPECT_EQ(std::vector<int64_t>(view.offsets(), view.offsets() + 5),
            (std::vector<int64_t>{0, 5, 6, 6, 9}));
  EXPECT_EQ(view.rowOf()[5], 5);      // row 1, token 0
  EXPECT_EQ(view.rowOf()[6], -1);     // row 1, padding
  EXPECT_EQ(view.rowOf()[3 * 5 + 2], 8);
  EXPECT_EQ(view.rowOf()[2 * 5 + 0], -1); // a fully padded row has no rows
}

TEST(TokenLayout, FillsAndFourDimMasks) {
  const int64_t seq = 4;
  for (float fill : {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::lowest(),
                     -1e9f}) {
    std::vector<float> mask = keyPadding({2, 4}, seq, fill);
    EXPECT_EQ(TokenLayoutView(layoutOf({broadcastRows(mask, seq)}, 2, seq).data()).mode(),
              TokenMode::Packed);
  }
  // [B, 1, S, S] with padded queries masked too (their rows are not read).
  std::vector<float> full(2 * seq * seq, 0.0f);
  const int64_t lengths[2] = {3, 4};
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < seq; ++i)
      for (int64_t j = 0; j < seq; ++j)
        if (j >= lengths[b] || i >= lengths[b])
          full[(b * seq + i) * seq + j] = -1e30f;
  MaskView view;
  view.data = full.data();
  view.strideBatch = seq * seq, view.strideQuery = seq, view.strideKey = 1;
  std::vector<int64_t> values = layoutOf({view}, 2, seq);
  TokenLayoutView layout(values.data());
  EXPECT_EQ(layout.mode(), TokenMode::Packed);
  EXPECT_EQ(layout.rows(), 7);
}

TEST(TokenLayout, NoPaddingOrNoRealTokenKeepsRows) {
  const int64_t seq = 3;
  std::vector<float> none = keyPadding({3, 3}, seq, -1e4f);
  std::vector<int64_t> layout = layoutOf({broadcastRows(none, seq)}, 2, seq);
  EXPECT_EQ(TokenLayoutView(layout.data()).mode(), TokenMode::KeyPadding);
  std::vector<float> all = keyPadding({0, 0}, seq, -1e4f);
  layout = layoutOf({broadcastRows(all, seq)}, 2, seq);
  TokenLayoutView view(layout.data());
  EXPECT_EQ(view.mode(), TokenMode::KeyPadding);
  EXPECT_EQ(view.rowOf()[0], -1); // unpacking zeroes it
}

TEST(TokenLayout, BiasOnRealKeysIsNotPacked) {
  // MPNet-like: a relative position bias plus key padding.
  const int64_t seq = 4;
  std::vector<float> mask = keyPadding({2, 4}, seq, -1e4f);
  std::vector<float> full(2 * seq * seq);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < seq; ++i)
      for (int64_t j = 0; j < seq; ++j)
        full[(b * seq + i) * seq + j] = mask[b * seq + j] + 0.25f * float(i - j);
  MaskView view;
  view.data = full.data();
  view.strideBatch = seq * seq, view.strideQuery = seq, view.strideKey = 1;
  std::vector<int64_t> layout = layoutOf({view}, 2, seq);
  TokenLayoutView result(layout.data());
  EXPECT_EQ(result.mode(), TokenMode::KeyPadding);
  EXPECT_EQ(result.rowOf()[2], -1);
  EXPECT_EQ(result.rowOf()[1], 1);
}

TEST(TokenLayout, OtherMasksAreLeftAlone) {
  const int64_t seq = 3;
  // Causal: key j > i masked on real rows, although every key is real somewhere.
  std::vector<float> causal(seq * seq, 0.0f);
  for (int64_t i = 0; i < seq; ++i)
    for (int64_t j = i + 1; j < seq; ++j)
      causal[i * seq + j] = -1e9f;
  MaskView view;
  view.data = causal.data();
  view.strideQuery = seq, view.strideKey = 1;
  EXPECT_EQ(TokenLayoutView(layoutOf({view}, 1, seq).data()).mode(), TokenMode::Padded);
  // A small negative value does not mask: a bias on a real key (not packed, no padding).
  std::vector<float> soft = keyPadding({2}, seq, -5.0f);
  std::vector<int64_t> biased = layoutOf({broadcastRows(soft, seq)}, 1, seq);
  EXPECT_EQ(TokenLayoutView(biased.data()).mode(), TokenMode::KeyPadding);
  EXPECT_EQ(TokenLayoutView(biased.data()).rowOf()[2], 2);
  // NaN, and two masks that disagree.
  std::vector<float> nan = keyPadding({2}, seq, std::nanf(""));
  EXPECT_EQ(TokenLayoutView(layoutOf({broadcastRows(nan, seq)}, 1, seq).data()).mode(),
            TokenMode::Padded);
  std::vector<float> a = keyPadding({2}, seq, -1e4f), b = keyPadding({1}, seq, -1e4f);
  EXPECT_EQ(TokenLayoutView(layoutOf({broadcastRows(a, seq), broadcastRows(b, seq)}, 1, seq)
                                .data())
                .mode(),
            TokenMode::Padded);
}

/// token_layout(mask) → pack(x) → +1 → unpack, on [B, S, width] inputs.
struct PackPlan {
  Plan plan;
  explicit PackPlan(int64_t width = 2) {
    Scalar batch, seq, packed;
    batch.kind = seq.kind = Scalar::Kind::InputDim;
    batch.input = seq.input = 0, batch.dim = 0, seq.dim = 1;
    plan.scalars = {batch, seq};
    auto constant = [&](int64_t v) {
      Scalar s;
      s.value = v;
      plan.scalars.push_back(s);
      return ScalarId(plan.scalars.size() - 1);
    };
    ScalarId one = constant(1), two = constant(width), five = constant(5);
    auto arith = [&](Scalar::Kind kind, ScalarId a, ScalarId b) {
      Scalar s;
      s.kind = kind, s.a = a, s.b = b;
      plan.scalars.push_back(s);
      return ScalarId(plan.scalars.size() - 1);
    };
    ScalarId layoutSize = arith(Scalar::Kind::Add, five,
                                arith(Scalar::Kind::Add, 0, arith(Scalar::Kind::Mul, 0, 1)));
    packed.kind = Scalar::Kind::PackedDim;
    packed.a = 0, packed.dim = 0;
    plan.scalars.push_back(packed);
    ScalarId packedBatch = ScalarId(plan.scalars.size() - 1);
    packed.a = 1, packed.dim = 1;
    plan.scalars.push_back(packed);
    ScalarId packedSeq = ScalarId(plan.scalars.size() - 1);
    auto tensor = [&](DType dtype, std::vector<ScalarId> shape, Storage storage, int index) {
      TensorInfo t;
      t.dtype = dtype, t.shape = std::move(shape), t.storage = storage, t.index = index;
      plan.tensors.push_back(t);
      return TensorId(plan.tensors.size() - 1);
    };
    auto slot = [&](std::vector<ScalarId> shape, DType dtype) {
      ScalarId bytes = dtype == DType::I64 ? arith(Scalar::Kind::Mul, shape[0], constant(8))
                                           : arith(Scalar::Kind::Mul,
                                                   arith(Scalar::Kind::Mul, shape[0], shape[1]),
                                                   constant(4 * width));
      plan.arenaSlots.push_back(bytes);
      return tensor(dtype, shape, Storage::Arena, int(plan.arenaSlots.size() - 1));
    };
    x = tensor(DType::F32, {0, 1, two}, Storage::Input, 0);
    mask = tensor(DType::F32, {0, one, one, 1}, Storage::Input, 1);
    out = tensor(DType::F32, {0, 1, two}, Storage::Output, 0);
    layout = slot({layoutSize}, DType::I64);
    // Slots sized for the padded batch; packed tensors must fit them.
    packedX = slot({0, 1, two}, DType::F32);
    plan.tensors[packedX].shape = {packedBatch, packedSeq, two};
    plusOne = slot({0, 1, two}, DType::F32);
    plan.tensors[plusOne].shape = {packedBatch, packedSeq, two};
    IoInfo in0{"x", DType::F32, {-1, -1, width}, {}, x},
        in1{"mask", DType::F32, {-1, 1, 1, -1}, {}, mask};
    plan.inputs = {in0, in1};
    plan.outputs = {IoInfo{"out", DType::F32, {-1, -1, width}, {}, out}};
    plan.steps.push_back(makeTokenLayout({mask}, 0, 1, layout));
    plan.steps.push_back(makePackTokens(x, layout, packedX));
    auto add = std::make_unique<test::AddConstantStep>(1.0f);
    add->inputs = {packedX};
    add->outputs = {plusOne};
    plan.steps.push_back(std::move(add));
    plan.steps.push_back(makeUnpackTokens(plusOne, layout, out));
  }
  TensorId x, mask, out, layout, packedX, plusOne;
};

// Narrow rows move on one thread; rows of 16 KiB (196 KiB in all) on the team.
TEST(TokenLayout, ExecutorRunsRowStepsOnPackedRows) {
  for (int64_t width : {int64_t(2), int64_t(4096)}) {
    PackPlan p(width);
    ASSERT_TRUE(validatePlan(p.plan).ok());
    const int64_t batch = 3, seq = 4;
    std::vector<float> x(batch * seq * width), mask = keyPadding({4, 1, 2}, seq, -1e4f);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i);
    std::vector<RunTensor> inputs(2), outputs(1);
    inputs[0].data = x.data(), inputs[0].dtype = DType::F32, inputs[0].rank = 3;
    inputs[0].dims[0] = batch, inputs[0].dims[1] = seq, inputs[0].dims[2] = width;
    inputs[1].data = mask.data(), inputs[1].dtype = DType::F32, inputs[1].rank = 4;
    inputs[1].dims[0] = batch, inputs[1].dims[1] = 1, inputs[1].dims[2] = 1,
    inputs[1].dims[3] = seq;
    RunProfile profile;
    Status status = execute(p.plan, inputs, outputs, nullptr, &profile);
    ASSERT_TRUE(status.ok()) << status.message();
    // The row step saw the 7 real tokens only.
    EXPECT_NE(profile.stepWork[2].shapes.find("[1, 7, " + std::to_string(width) + "]"),
              std::string::npos)
        << profile.stepWork[2].shapes;
    const float *out = static_cast<const float *>(outputs[0].data);
    const int64_t lengths[3] = {4, 1, 2};
    int64_t wrong = 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t s = 0; s < seq; ++s)
        for (int64_t c = 0; c < width; ++c) {
          int64_t i = (b * seq + s) * width + c;
          const float want = s < lengths[b] ? x[i] + 1.0f : 0.0f;
          if (out[i] != want && ++wrong <= 5)
            ADD_FAILURE() << "width " << width << " at " << b << "," << s << "," << c << ": "
                          << out[i] << ", want " << want;
        }
    EXPECT_EQ(wrong, 0) << "width " << width;
    std::free(outputs[0].data);
  }
}

/// x + 1 that counts how often the executor asks its first reads, and for
/// how many rows.
class AskedAddStep final : public test::AddConstantStep {
public:
  AskedAddStep() : AddConstantStep(1.0f) {}
  void firstReads(const ExecContext &ctx, int64_t, octet::x86::NextStepReads &) const override {
    asked.push_back(ctx.dim(inputs[0], 1));
  }
  mutable std::vector<int64_t> asked;
};

// The executor keeps each step's first reads for the next runs of the same
// shapes (runtime/NextReadsCache.h); after token_layout the packed rows are
// part of the shapes: a new mix of lengths with the same input dims is asked
// again, the same mix is not.
TEST(TokenLayout, NextStepReadsFollowThePackedRows) {
  PackPlan p;
  auto asked = std::make_unique<AskedAddStep>();
  AskedAddStep *add = asked.get();
  asked->inputs = p.plan.steps[2]->inputs;
  asked->outputs = p.plan.steps[2]->outputs;
  p.plan.steps[2] = std::move(asked);
  ASSERT_TRUE(validatePlan(p.plan).ok());
  const int64_t batch = 3, seq = 4;
  std::vector<float> x(batch * seq * 2, 1.0f);
  auto run = [&](const std::vector<int64_t> &lengths) {
    std::vector<float> mask = keyPadding(lengths, seq, -1e4f);
    std::vector<RunTensor> inputs(2), outputs(1);
    inputs[0].data = x.data(), inputs[0].dtype = DType::F32, inputs[0].rank = 3;
    inputs[0].dims[0] = batch, inputs[0].dims[1] = seq, inputs[0].dims[2] = 2;
    inputs[1].data = mask.data(), inputs[1].dtype = DType::F32, inputs[1].rank = 4;
    inputs[1].dims[0] = batch, inputs[1].dims[1] = 1, inputs[1].dims[2] = 1,
    inputs[1].dims[3] = seq;
    Status status = execute(p.plan, inputs, outputs);
    ASSERT_TRUE(status.ok()) << status.message();
    std::free(outputs[0].data);
  };
  run({4, 1, 2});
  run({4, 1, 2});
  EXPECT_EQ(add->asked, (std::vector<int64_t>{7}));
  run({4, 4, 2});
  run({2, 1, 4});
  run({2, 1, 4});
  EXPECT_EQ(add->asked, (std::vector<int64_t>{7, 10, 7}));
  run({4, 4, 4}); // no padding: not packed, the padded shapes
  EXPECT_EQ(add->asked, (std::vector<int64_t>{7, 10, 7, 4}));
}

/// token_layout(mask) → embedding_sum(word[ids] + position[positions]) into
/// the packed rows → unpack, rows of `width` floats; the tables are
/// constants, the ids inputs ([B, S] and [1, S]).
struct EmbeddingPlan {
  Plan plan;
  std::vector<float> word, position;
  static constexpr int64_t kWords = 7, kPositions = 5;
  explicit EmbeddingPlan(int64_t width) {
    for (int64_t i = 0; i < kWords * width; ++i)
      word.push_back(float(i % 97) * 0.37f + 1.0f / 3.0f);
    for (int64_t i = 0; i < kPositions * width; ++i)
      position.push_back(float(i % 89) * -0.21f + 0.1f);
    auto scalar = [&](Scalar s) {
      plan.scalars.push_back(s);
      return ScalarId(plan.scalars.size() - 1);
    };
    auto constant = [&](int64_t v) {
      Scalar s;
      s.value = v;
      return scalar(s);
    };
    auto arith = [&](Scalar::Kind kind, ScalarId a, ScalarId b) {
      Scalar s;
      s.kind = kind, s.a = a, s.b = b;
      return scalar(s);
    };
    Scalar dim;
    dim.kind = Scalar::Kind::InputDim;
    dim.input = 0, dim.dim = 0;
    ScalarId batch = scalar(dim);
    dim.dim = 1;
    ScalarId seq = scalar(dim);
    dim.input = 2; // the position ids' own length: seq, or 1 (broadcast)
    ScalarId positionsSeq = scalar(dim);
    ScalarId one = constant(1), n = constant(width);
    Scalar packed;
    packed.kind = Scalar::Kind::PackedDim;
    packed.a = batch, packed.dim = 0;
    ScalarId packedBatch = scalar(packed);
    packed.a = seq, packed.dim = 1;
    ScalarId packedSeq = scalar(packed);
    auto tensor = [&](DType dtype, std::vector<ScalarId> shape, Storage storage, int index,
                      const void *data = nullptr) {
      TensorInfo t;
      t.dtype = dtype, t.shape = std::move(shape), t.storage = storage, t.index = index;
      t.constant = data;
      plan.tensors.push_back(t);
      return TensorId(plan.tensors.size() - 1);
    };
    auto slot = [&](std::vector<ScalarId> shape, DType dtype, ScalarId bytes) {
      plan.arenaSlots.push_back(bytes);
      return tensor(dtype, std::move(shape), Storage::Arena, int(plan.arenaSlots.size() - 1));
    };
    const TensorId ids = tensor(DType::I64, {batch, seq}, Storage::Input, 0);
    const TensorId mask = tensor(DType::F32, {batch, one, one, seq}, Storage::Input, 1);
    const TensorId positions = tensor(DType::I64, {one, positionsSeq}, Storage::Input, 2);
    const TensorId wordTable =
        tensor(DType::F32, {constant(kWords), n}, Storage::Constant, -1, word.data());
    const TensorId positionTable =
        tensor(DType::F32, {constant(kPositions), n}, Storage::Constant, -1, position.data());
    const TensorId out = tensor(DType::F32, {batch, seq, n}, Storage::Output, 0);
    ScalarId tokens = arith(Scalar::Kind::Mul, batch, seq);
    const TensorId layout =
        slot({arith(Scalar::Kind::Add, constant(5), arith(Scalar::Kind::Add, batch, tokens))},
             DType::I64, arith(Scalar::Kind::Mul, arith(Scalar::Kind::Add, constant(5),
                                                        arith(Scalar::Kind::Add, batch, tokens)),
                               constant(8)));
    const TensorId rows = slot({packedBatch, packedSeq, n}, DType::F32,
                               arith(Scalar::Kind::Mul, tokens, constant(4 * width)));
    plan.inputs = {IoInfo{"ids", DType::I64, {-1, -1}, {}, ids},
                   IoInfo{"mask", DType::F32, {-1, 1, 1, -1}, {}, mask},
                   IoInfo{"positions", DType::I64, {1, -1}, {}, positions}};
    plan.outputs = {IoInfo{"out", DType::F32, {-1, -1, width}, {}, out}};
    plan.steps.push_back(makeTokenLayout({mask}, batch, seq, layout));
    plan.steps.push_back(
        makeEmbeddingSum({wordTable, positionTable}, {ids, positions}, layout, rows));
    plan.steps.push_back(makeUnpackTokens(rows, layout, out));
  }
};

// Each real token's rows summed into its packed row (negative ids from the
// end), padding 0; an id out of range is an error naming it. Rows of 8 floats
// on one thread, of 4096 (196 KiB) on the team.
TEST(TokenLayout, EmbeddingSumWritesThePackedRows) {
  for (int64_t width : {int64_t(8), int64_t(4096)}) {
    EmbeddingPlan p(width);
    ASSERT_TRUE(validatePlan(p.plan).ok());
    const int64_t batch = 3, seq = 4;
    std::vector<int64_t> ids = {0, 6, -1, 3, 2, 5, 5, 5, 1, -7, 4, 4}, positions = {4, -4, 2, 3};
    std::vector<float> mask = keyPadding({4, 1, 2}, seq, -1e4f);
    auto run = [&](std::vector<float> &got) {
      std::vector<RunTensor> inputs(3), outputs(1);
      inputs[0].data = ids.data(), inputs[0].dtype = DType::I64, inputs[0].rank = 2;
      inputs[0].dims[0] = batch, inputs[0].dims[1] = seq;
      inputs[1].data = mask.data(), inputs[1].dtype = DType::F32, inputs[1].rank = 4;
      inputs[1].dims[0] = batch, inputs[1].dims[1] = 1, inputs[1].dims[2] = 1,
      inputs[1].dims[3] = seq;
      inputs[2].data = positions.data(), inputs[2].dtype = DType::I64, inputs[2].rank = 2;
      inputs[2].dims[0] = 1, inputs[2].dims[1] = int64_t(positions.size());
      Status status = execute(p.plan, inputs, outputs);
      if (status.ok()) {
        const float *o = static_cast<const float *>(outputs[0].data);
        got.assign(o, o + batch * seq * width);
        std::free(outputs[0].data);
      }
      return status;
    };
    std::vector<float> got;
    Status status = run(got);
    ASSERT_TRUE(status.ok()) << status.message();
    const int64_t lengths[3] = {4, 1, 2};
    int64_t wrong = 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t s = 0; s < seq; ++s) {
        const int64_t w = (ids[b * seq + s] + EmbeddingPlan::kWords) % EmbeddingPlan::kWords;
        const int64_t q = (positions[s] + EmbeddingPlan::kPositions) % EmbeddingPlan::kPositions;
        for (int64_t c = 0; c < width; ++c) {
          const float want =
              s < lengths[b] ? p.word[w * width + c] + p.position[q * width + c] : 0.0f;
          if (got[(b * seq + s) * width + c] != want && ++wrong <= 5)
            ADD_FAILURE() << "width " << width << " at " << b << "," << s << "," << c;
        }
      }
    EXPECT_EQ(wrong, 0);
    // Out of range at a padding position: still an error, as the gathers were.
    ids[7] = 7;
    status = run(got);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find("index 7 at position [1, 3]"), std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find("[-7, 7)"), std::string::npos) << status.message();
    // Ids of one position broadcast over the sequence; of two, they do not.
    ids[7] = 5, positions = {-2};
    status = run(got);
    ASSERT_TRUE(status.ok()) << status.message();
    const int64_t w9 = (ids[9] + EmbeddingPlan::kWords) % EmbeddingPlan::kWords; // -7: row 0
    EXPECT_EQ(got[(2 * seq + 1) * width + width - 1],
              p.word[w9 * width + width - 1] + p.position[3 * width + width - 1]); // -2: row 3
    positions = {0, 1};
    status = run(got);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find("do not broadcast"), std::string::npos) << status.message();
  }
}

} // namespace
} // namespace octet::rt
