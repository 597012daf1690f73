//===- StepRecipe.cpp - build a step from its recipe ----------------------===//
#include "runtime/StepRecipe.h"

#include "compiler/codegen/x86/GemmBf16.h"
#include "compiler/codegen/x86/KernelGenerator.h"
#include "runtime/KernelSelection.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <optional>

namespace octet::rt {

namespace {
// Factories that cannot fail at build time return null only for reasons they
// do not name; say which step it was.
StepPtr orError(StepPtr step, const char *what, std::string &error) {
  if (!step && error.empty())
    error = std::string("the ") + what + " step cannot be built";
  return step;
}

StepPtr callFactory(const StepRecipe::Call &call, const KernelOptions &options,
                    std::string &error) {
  using namespace recipe;
  struct Visitor {
    const KernelOptions &options;
    std::string &error;
    StepPtr operator()(const Binary &r) { return orError(makeBinary(r.kind, r.a, r.b, r.out), "binary", error); }
    StepPtr operator()(const Unary &r) { return orError(makeUnary(r.kind, r.in, r.out), "unary", error); }
    StepPtr operator()(const Cast &r) { return orError(makeCast(r.in, r.out), "cast", error); }
    StepPtr operator()(const Where &r) {
      return orError(makeWhere(r.condition, r.a, r.b, r.out), "where", error);
    }
    StepPtr operator()(const Gather &r) {
      return orError(makeGather(r.data, r.indices, r.axis, r.out), "gather", error);
    }
    StepPtr operator()(const Copy &r) { return orError(makeCopy(r.in, r.out), "copy", error); }
    StepPtr operator()(const Concat &r) {
      return orError(makeConcat(r.ins, r.axis, r.out), "concat", error);
    }
    StepPtr operator()(const Reduce &r) {
      return orError(makeReduce(r.kind, r.in, r.axes, r.out), "reduce", error);
    }
    StepPtr operator()(const CumSum &r) {
      return orError(makeCumSum(r.in, r.axis, r.exclusive, r.reverse, r.out), "cumsum", error);
    }
    StepPtr operator()(const Softmax &r) {
      return orError(makeSoftmax(r.in, r.axis, r.out), "softmax", error);
    }
    StepPtr operator()(const Range &r) {
      return orError(makeRange(r.start, r.delta, r.out), "range", error);
    }
    StepPtr operator()(const FromElements &r) {
      return orError(makeFromElements(r.elements, r.out), "from_elements", error);
    }
    StepPtr operator()(const MatMul &r) { return orError(makeMatMul(r.a, r.b, r.out), "matmul", error); }
    StepPtr operator()(const Linear &r) { return makeLinear(r.spec, options, error); }
    StepPtr operator()(const LayerNorm &r) { return makeLayerNorm(r.spec, options, error); }
    StepPtr operator()(const Attention &r) { return makeAttention(r.spec, options, error); }
    StepPtr operator()(const FusedElementwise &r) {
      return makeFusedElementwise(r.program, r.inputs, r.output, options, error);
    }
    StepPtr operator()(const Quantize &r) {
      return orError(makeQuantize(r.in, r.scale, r.zeroPoint, r.axis, r.out, options), "quantize",
                     error);
    }
    StepPtr operator()(const Dequantize &r) {
      return orError(makeDequantize(r.in, r.scale, r.zeroPoint, r.axis, r.out), "dequantize", error);
    }
    StepPtr operator()(const QuantizePerRow &r) {
      return makeQuantizePerRow(r.in, r.out, r.scaleOut, options, error);
    }
    StepPtr operator()(const QLinear &r) { return makeQLinear(r.spec, r.outType, options, error); }
    StepPtr operator()(const GatherND &r) {
      return orError(makeGatherND(r.data, r.indices, r.batchDims, r.out), "gather_nd", error);
    }
    StepPtr operator()(const GatherElements &r) {
      return orError(makeGatherElements(r.data, r.indices, r.axis, r.out), "gather_elements",
                     error);
    }
    StepPtr operator()(const TokenLayout &r) {
      return orError(makeTokenLayout(r.masks, r.batch, r.seq, r.out), "token_layout", error);
    }
    StepPtr operator()(const PackTokens &r) {
      return orError(makePackTokens(r.in, r.layout, r.out), "pack_tokens", error);
    }
    StepPtr operator()(const UnpackTokens &r) {
      return orError(makeUnpackTokens(r.in, r.layout, r.out), "unpack_tokens", error);
    }
    StepPtr operator()(const EmbeddingSum &r) {
      return orError(makeEmbeddingSum(r.tables, r.indices, r.layout, r.out), "embedding_sum",
                     error);
    }
  };
  return std::visit(Visitor{options, error}, call);
}
} // namespace

namespace {
bool hasAuto(const GemmChoice &choice) {
  return std::count(choice.begin(), choice.end(), GemmProvider::Auto) != 0;
}

/// Resolves a GEMM recipe's Auto providers (rule or autotune) before its
/// factory runs, so the recipe keeps the choice: an AOT model then builds the
/// same providers without timing anything again.
std::optional<GemmChoiceRecord> resolveChoice(StepRecipe &recipe, const KernelOptions &options,
                                              std::string &error) {
  x86::KernelCodeCaptureSuspend notCandidates;
  if (auto *linear = std::get_if<recipe::Linear>(&recipe.call); linear &&
      hasAuto(linear->spec.provider))
    return resolveGemmChoice(linear->spec, options, error);
  if (auto *qlinear = std::get_if<recipe::QLinear>(&recipe.call); qlinear &&
      hasAuto(qlinear->spec.provider))
    return resolveGemmChoice(qlinear->spec, qlinear->outType, options, error);
  return std::nullopt;
}

/// A linear whose providers include JitBf16 gets its weight packed to bf16
/// panels here, once, into memory the recipe keeps: the step uses them in
/// place and an AOT image stores them (half the f32 weight's bytes) instead of
/// the f32 weight, which the recipe drops when no bucket needs it.
void packBf16Weight(StepRecipe &recipe) {
  auto *linear = std::get_if<recipe::Linear>(&recipe.call);
  if (!linear)
    return;
  LinearSpec &spec = linear->spec;
  const GemmChoice &p = spec.provider;
  if (spec.bf16Weight || !spec.weight || std::find(p.begin(), p.end(), GemmProvider::JitBf16) == p.end())
    return;
  auto packed = std::make_shared<const x86::PackedBf16Weights>(
      x86::packBf16(spec.weight, spec.k, spec.n, spec.layout));
  spec.bf16Weight = packed->data();
  linear->bf16PackedBytes = packed->size() * sizeof(uint16_t);
  // Aliasing: get() is the panels' first byte (what the image stores), the
  // vector stays owned.
  linear->bf16Packed = std::shared_ptr<const void>(packed, packed->data());
  if (std::count(p.begin(), p.end(), GemmProvider::JitBf16) == kGemmBuckets)
    spec.weight = nullptr;
}
} // namespace

StepPtr buildStep(const StepRecipe &recipe, const KernelOptions &options, std::string &error) {
  StepRecipe resolved = recipe;
  StepPtr step;
  // Kernel generation throws on its own failures (Xbyak, an AOT model whose
  // code does not match its recipes): a build error, never an escape.
  try {
    std::optional<GemmChoiceRecord> record = resolveChoice(resolved, options, error);
    if (!error.empty())
      return nullptr;
    packBf16Weight(resolved);
    step = callFactory(resolved.call, options, error);
    if (step && record && options.choices) {
      record->step = step.get();
      options.choices->records.push_back(std::move(*record));
    }
  } catch (const std::exception &e) {
    error = e.what();
    return nullptr;
  }
  if (step)
    step->recipe = std::make_shared<const StepRecipe>(std::move(resolved));
  return step;
}

} // namespace octet::rt
