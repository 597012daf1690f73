//===- Steps.h - the steps a Plan is made of ---------------------*- C++ -*-===//
//
// Factories for every step kind. The compiler's PlanBuilder maps each octet
// op to one of these; tests build small Plans with them directly.
//
//  - Generic steps (GenericSteps.cpp): numpy-broadcasting elementwise ops,
//    casts, gathers, copies of strided views, reductions, ... on any strided
//    input view (a broadcast is a stride of 0). Outputs are contiguous. They
//    carry the ops an encoder has around its heavy kernels (masks, position
//    ids, embeddings) and everything a graph may hold that no fast kernel
//    covers; they are compiled C++ (auto-vectorized), never JIT.
//  - Kernel steps (KernelSteps.cpp): GEMMs with fused epilogues, attention,
//    LayerNorm, GELU and fused elementwise regions, on the JIT AVX-512
//    kernels of compiler/codegen/x86 or oneDNN, chosen by KernelOptions and
//    the host CPU (hosts without AVX-512 get oneDNN GEMMs and compiled C++
//    row kernels).
// Every factory checks what it can at compile time and returns null with
// `error` set when it cannot build the step; run() checks run-time shapes.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_STEPS_H
#define OCTET_RUNTIME_STEPS_H

#include "compiler/codegen/CpuFeatures.h"
#include "compiler/codegen/ElementwiseProgram.h"
#include "compiler/codegen/PackedWeights.h"
#include "runtime/Plan.h"

#include <array>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace octet::rt {

using StepPtr = std::unique_ptr<Step>;

// ---- Generic steps ---------------------------------------------------------

/// The kinds' order is part of the AOT format (PlanImage): append at the end.
enum class BinaryKind {
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Max,
  Min,
  Equal,
  Less,
  Greater,
  And,
  Or,
  Xor,
  Mod,
  FMod
};
enum class UnaryKind {
  Neg,
  Abs,
  Exp,
  Log,
  Erf,
  Tanh,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Relu,
  Sigmoid,
  Not,
  Ceil,
  Floor,
  Sign,
  IsNaN,
  IsInf,
  IsPosInf,
  IsNegInf ///< f32/f64 in, Bool out
};
enum class ReduceKind { Mean, Sum, Max, Min };

/// out = a (op) b, numpy broadcasting; comparisons write Bool, And/Or/Xor take Bool.
/// Integer Div truncates toward zero and reports division by zero as an error.
/// Mod (integers only) takes the divisor's sign, as Python's %; FMod the
/// dividend's, as C's fmod; an integer divisor of 0 is an error.
StepPtr makeBinary(BinaryKind kind, TensorId a, TensorId b, TensorId out);
StepPtr makeUnary(UnaryKind kind, TensorId in, TensorId out);
/// Element type conversion (float → int truncates toward zero, as ONNX Cast).
StepPtr makeCast(TensorId in, TensorId out);
StepPtr makeWhere(TensorId condition, TensorId a, TensorId b, TensorId out);
/// numpy.take(data, indices, axis); negative indices count from the end; an
/// index out of range is an error naming the value and its position.
StepPtr makeGather(TensorId data, TensorId indices, int axis, TensorId out);
/// ONNX GatherND: out = indices.shape[:-1] + data.shape[batchDims + q:], each
/// q-tuple of `indices` (i64/i32) picking a slice of data within its batch.
/// Every index is checked first: one out of range is an error naming its
/// position and value. OpenMP over the tuples when large.
StepPtr makeGatherND(TensorId data, TensorId indices, int batchDims, TensorId out);
/// ONNX GatherElements (numpy.take_along_axis): out has indices' shape and
/// out[i...] = data[i... with indices[i...] in dim `axis`]; checked as makeGatherND.
StepPtr makeGatherElements(TensorId data, TensorId indices, int axis, TensorId out);
/// Copies any view (slice, transpose, expand) into the contiguous `out`.
StepPtr makeCopy(TensorId in, TensorId out);
StepPtr makeConcat(std::vector<TensorId> ins, int axis, TensorId out);
/// Reduces `axes` of `in`; `out` has them as size-1 dims or not at all.
StepPtr makeReduce(ReduceKind kind, TensorId in, std::vector<int> axes, TensorId out);
StepPtr makeCumSum(TensorId in, int axis, bool exclusive, bool reverse, TensorId out);
/// Softmax over `axis` (any axis, any view): the fallback; see makeAttention.
StepPtr makeSoftmax(TensorId in, int axis, TensorId out);
/// out[i] = start + i * delta, i < out's length (the compiler sizes it).
StepPtr makeRange(ScalarId start, ScalarId delta, TensorId out);

// ---- Padding-free batches (TokenSteps.cpp, docs/padding-free.md) -----------

/// out (i64 [tokenLayoutSize(batch, seq)]) = the layout of the masks
/// (runtime/TokenLayout.h); the executor re-evaluates PackedDim scalars after it.
StepPtr makeTokenLayout(std::vector<TensorId> masks, ScalarId batch, ScalarId seq, TensorId out);
/// out = the real tokens' rows of in ([batch, seq, …]) when the layout is
/// Packed ([1, rows, …]), else a copy of in.
StepPtr makePackTokens(TensorId in, TensorId layout, TensorId out);
/// out ([batch, seq, …]) = in's rows back at their positions, 0 at padding
/// (layout Packed or KeyPadding), else a copy of in.
StepPtr makeUnpackTokens(TensorId in, TensorId layout, TensorId out);
/// An encoder's embeddings: row (b, s) of out = tables[0][indices[0][b, s]] +
/// tables[1][indices[1][b, s]] + ..., summed in f32 in that order (tables f32
/// [rows, N] with contiguous rows; indices i64/i32 [1 or batch, 1 or seq],
/// negative ones from the end, every one checked first: one out of range is
/// an error naming it). With a token layout (else layout -1) out is what
/// pack_tokens of the sum would give: the real tokens' rows when Packed
/// (padding computes nothing), else every position. At least one table (else
/// null). OpenMP over the tokens when large (runtime/TokenSteps.cpp).
StepPtr makeEmbeddingSum(std::vector<TensorId> tables, std::vector<TensorId> indices,
                         TensorId layout, TensorId out);
/// A 1-D integer tensor of scalar values (shape tensors).
StepPtr makeFromElements(std::vector<ScalarId> elements, TensorId out);
/// Batched, broadcasting f32 matmul of two run-time tensors (ONNX MatMul
/// semantics incl. 1-D operands). GEMMs with a constant weight use makeLinear.
StepPtr makeMatMul(TensorId a, TensorId b, TensorId out);

// ---- Kernel steps ----------------------------------------------------------

/// Who computes a GEMM step (docs/kernel-selection.md). Auto: the factory
/// resolves it through runtime/KernelSelection.h.
enum class GemmProvider : uint8_t {
  Auto,
  JitF32,    ///< x86::GemmF32 (AVX-512), linear only
  JitVnni,   ///< x86::Int8GemmDriver on Int8GemmKernelVnni (AVX-512 VNNI), qlinear only
  JitAmx,    ///< x86::Int8GemmDriver on Int8GemmKernelAmx (AMX-INT8), qlinear only
  OneDnn,    ///< onednn::MatMulF32 / MatMulU8S8
  Reference, ///< the exact C++ loop, qlinear only (nothing else can take it)
  JitBf16,   ///< x86::GemmBf16 (AVX512-BF16, bf16 weights), linear only (--precision bf16)
  JitAvx2    ///< x86::Int8GemmAvx2 (AVX2, exact s16 products: CPUs without VNNI), qlinear only
};
const char *gemmProviderName(GemmProvider provider); ///< "jit_vnni", ...

/// M (= batch x sequence) is known only at run time: a GEMM step holds one
/// provider per M bucket, M <= 32, M <= 256, M > 256, timed (autotune) at
/// M = 16, 128 and 1024.
constexpr int kGemmBuckets = 3;
constexpr int64_t kGemmBucketMaxM[kGemmBuckets] = {32, 256, INT64_MAX};
constexpr int64_t kGemmBucketTimedM[kGemmBuckets] = {16, 128, 1024};
inline int gemmBucket(int64_t m) {
  return m <= kGemmBucketMaxM[0] ? 0 : m <= kGemmBucketMaxM[1] ? 1 : 2;
}
/// The provider of each M bucket: plain data, stored in the specs (AOT).
using GemmChoice = std::array<GemmProvider, kGemmBuckets>;

struct GemmChoiceLog; // runtime/KernelSelection.h

/// The operands of attention's Q·Kᵀ and P·V (--attention): f32; bf16 on AMX-BF16
/// or AVX512-BF16 (docs/attention-bf16.md); int8 on AVX-512 VNNI, quantized at run
/// time per query row, key and head dim (docs/attention-int8.md). Sums are f32 /
/// int32, the softmax f32. Stored as one byte in a model.so: values are append-only.
enum class AttentionPrecision : uint8_t { F32 = 0, Bf16 = 1, Int8 = 2 };
const char *attentionPrecisionName(AttentionPrecision precision);

struct KernelOptions {
  enum class Gemm { Auto, Jit, OneDnn };
  Gemm gemm = Gemm::Auto;  ///< Auto: the documented rule (docs/kernel-selection.md)
  bool allowAvx512 = true; ///< false: act as on an AVX2-only host (tests, isa=avx2)
  /// The CPU the steps are built for: every kernel decision reads this, never
  /// the host. A foreign target's code is generated but must not run here.
  x86::CpuFeatures cpu = x86::CpuFeatures::host();
  std::string target = "host"; ///< cpu's name (x86::CpuFeatures::forTarget)
  /// Resolve Auto GEMM providers by timing the candidates that run here (at
  /// build time, per M bucket) instead of by the rule alone.
  bool autotune = false;
  /// Attention's Q·Kᵀ and P·V operands (--attention); PlanBuilder sets
  /// AttentionSpec::precision from it. F32 is the default.
  AttentionPrecision attention = AttentionPrecision::F32;
  /// `--precision bf16`: every linear (f32 GEMM with a constant weight) runs on
  /// x86::GemmBf16 - weights packed as bf16 (half the bytes), activations
  /// rounded to bf16, f32 sums - where the target has AVX512-BF16; an error
  /// where it does not (docs/kernel-selection.md). Off: f32, the default.
  bool linearBf16 = false;
  /// makeLinear keeps only the f32 weight's pointer (it must outlive the step)
  /// and builds the provider's kernel and packed or reordered weight at each
  /// run, freeing them after it: no second copy of the weights lives beside
  /// the caller's. For a Plan run a few times while its weights are alive
  /// elsewhere (calibration's instrumented Plan, compiler/driver/Calibrate.cpp);
  /// the same kernels, so the same results. Off: built once (the default).
  bool packWeightsPerRun = false;
  /// Not owned, may be null: receives one record per GEMM whose provider a
  /// factory resolved (--print-kernel-choices). Also caches timings per shape.
  GemmChoiceLog *choices = nullptr;

  /// Sets `cpu` and `target` from a name (x86::CpuFeatures::forTarget);
  /// false with `error` listing the known names.
  bool setTarget(const std::string &name, std::string &error);
  /// Why a Plan built with these options must not run on this CPU ("compiled
  /// for amx, this CPU lacks amx_tile amx_int8"), or "".
  std::string whyNotRunnableHere() const;
};

/// out[..., N] = epilogue(in[..., K] · W + bias, extras...). W is a constant
/// ([K, N] or [N, K]), packed at build time; `input` may be a view whose last
/// dim is contiguous (a row stride, e.g. a slice of the merged Q/K/V output).
/// The epilogue program's input 0 is the accumulator (bias added), input i
/// the element of extras[i-1] broadcast to out's shape; no instructions: identity.
struct LinearSpec {
  TensorId input = -1, output = -1;
  const float *weight = nullptr; ///< read only by makeLinear (it packs or reorders a copy)
  WeightLayout layout = WeightLayout::KN;
  int64_t k = 0, n = 0;
  /// The weight packed for JitBf16 (x86::packBf16, x86::packedBf16Elements(k, n)
  /// elements), used in place: it must outlive the step. buildStep packs it
  /// for a JitBf16 recipe (so an AOT model stores these panels, not the f32
  /// weight, which is then null); makeLinear packs its own copy when it is null.
  const uint16_t *bf16Weight = nullptr;
  const float *bias = nullptr; ///< [N] or null, kept alive by the Plan
  std::vector<TensorId> extras;
  /// extraPerColumn[i]: extras[i] is one f32 value per output column (as
  /// QLinearSpec's): the JIT GEMM fuses a program reading it.
  std::vector<bool> extraPerColumn;
  ElementwiseProgram epilogue;
  /// JitF32, JitBf16 or OneDnn per M bucket; Auto entries are resolved by makeLinear
  /// (resolveGemmChoice) and KernelOptions::gemm restricts them.
  GemmChoice provider{};
};
StepPtr makeLinear(const LinearSpec &spec, const KernelOptions &options, std::string &error);

/// y = LayerNorm(x (+ residual)) · gamma + beta over the last dim (length n);
/// `sum` (optional) receives x + residual. gamma, beta: constants [n].
/// octet.layer_norm_quantize: `quantized` (u8/i8, x's shape) receives y
/// quantized as makeQuantize (per tensor, plan-time qScale / qZeroPoint) or,
/// with `rowScale` (f32 [..., 1]), as makeQuantizePerRow, bit for bit; `output`
/// may then be -1 (y is not written).
struct LayerNormSpec {
  TensorId x = -1, residual = -1, output = -1, sum = -1;
  const float *gamma = nullptr, *beta = nullptr;
  int64_t n = 0;
  float epsilon = 1e-5f;
  TensorId quantized = -1, rowScale = -1;
  DType quantizedType = DType::U8; ///< U8 or I8 (per row: U8)
  float qScale = 1;
  int32_t qZeroPoint = 0;
  /// Per tensor only: `quantized` is that of the same normalization with this
  /// affine, `output` keeps gamma / beta (octet.layer_norm_quantize's
  /// quant_affine: SmoothQuant's LayerNorm copy merged into the original).
  const float *qGamma = nullptr, *qBeta = nullptr;
};
StepPtr makeLayerNorm(const LayerNormSpec &spec, const KernelOptions &options, std::string &error);

/// (AttentionStep.cpp) octet.attention: q, k, v [B, S, H·D] (views with a row stride allowed),
/// optional additive mask broadcastable to [B, H, S, S], out [B, S, H·D].
/// GEMMs plus the fused scale+mask+softmax kernel per (batch, head).
struct AttentionSpec {
  TensorId q = -1, k = -1, v = -1, mask = -1, output = -1;
  int64_t numHeads = 1;
  float scale = 1;
  /// Q·Kᵀ and P·V on bf16 or int8 operands where the target has the
  /// instructions, else f32 (KernelOptions::attention).
  AttentionPrecision precision = AttentionPrecision::F32;
  /// Probabilities that come out NaN (rows whose scores are all -inf: fully
  /// masked) are 0, as Where(IsNaN(p), 0, p) after the softmax makes them.
  bool zeroMaskedRows = false;
  /// A token layout (octet.token_layout, runtime/TokenLayout.h) or -1: when
  /// it says Packed, q, k, v and out are [1, rows, H·D] and each sequence
  /// attends over its own rows; the mask is then not read.
  TensorId tokenLayout = -1;
  /// F32, or U8 / I8: the output quantized per tensor as it is copied out,
  /// saturate(RNE(x / outputScale) + outputZeroPoint), bit for bit what
  /// makeQuantize computes (the Plan builder folds the octet.quantize that was
  /// the attention's only user; docs/attention-int8.md).
  DType outputType = DType::F32;
  float outputScale = 1;
  int32_t outputZeroPoint = 0;
};
StepPtr makeAttention(const AttentionSpec &spec, const KernelOptions &options, std::string &error);

/// out = program(inputs...) elementwise, inputs broadcast to out's shape
/// (octet.gelu is the one-instruction program GeluErf / GeluTanh).
StepPtr makeFusedElementwise(const ElementwiseProgram &program, std::vector<TensorId> inputs,
                             TensorId output, const KernelOptions &options, std::string &error);

// ---- Quantization steps (QuantSteps.cpp) -----------------------------------

/// ONNX QuantizeLinear: out (u8/i8) = saturate(round_half_even(in / scale) + zp).
/// scale: 0-D / 1-element (per tensor) or 1-D along `axis` (negative counts
/// from the end); zeroPoint (-1: 0) as scale. Scales are read at run time.
/// Per tensor, on a dense f32 input, it runs the AVX-512 kernel
/// (x86::QuantizeKernel: vdivps, RNE, saturation) when `options` allow it;
/// otherwise the same formula in C++.
StepPtr makeQuantize(TensorId in, TensorId scale, TensorId zeroPoint, int axis, TensorId out,
                     const KernelOptions &options = KernelOptions());
/// ONNX DequantizeLinear: out (f32) = (in - zp) * scale; in u8, i8 or i32.
StepPtr makeDequantize(TensorId in, TensorId scale, TensorId zeroPoint, int axis, TensorId out);

/// octet.quantize_per_row: per row r of `in` (f32 [..., K]),
/// scaleOut[r] = max_k |in[r, k]| / 127 (1 for a zero row; NaN skipped) and
/// out[r, k] = clamp(round_half_even(in[r, k] / scaleOut[r]), -127, 127) + 128
/// (u8, same shape; NaN gives 128); scaleOut is f32 [..., 1]. Rows may have a
/// row stride; the scales are dense. AVX-512 kernel (x86::QuantizePerRowKernel)
/// or the same formula in C++; OpenMP over rows.
StepPtr makeQuantizePerRow(TensorId in, TensorId out, TensorId scaleOut,
                           const KernelOptions &options, std::string &error);

/// octet.qlinear (docs/int8-quantization.md, docs/int8-gemm.md): u8 input
/// [..., K] (unit column stride, one row stride) times a constant s8 weight;
/// f32 result or requantized u8/i8:
///   y = epilogue(f32(f32(xs · ws[n]) · f32(Σ (x − xzp)·w)) + bias[n], extras...)
/// then, for u8/i8, saturate(RNE(y / outScale) + outZp).
/// The epilogue program's input 0 is the accumulator (bias added), input i the
/// element of extras[i-1] broadcast to the result's shape (as LinearSpec's).
/// xs is one scale (0-D / 1 element) or, with xScalePerRow, an f32 tensor of
/// the input's leading dims and a last dim of 1 (octet.quantize_per_row).
/// The JIT INT8 driver (x86::Int8GemmDriver on AVX-512 VNNI or AMX kernels) runs
/// it when the activation's zero point (and, for u8/i8, the output's scale and
/// zero point) are plan-time constants (the *Const pointers); they add a
/// residual extra themselves, fuse an accumulator-only program into the
/// epilogue and apply anything else after (on an f32 scratch before
/// requantizing). oneDNN's int8 matmul is the other provider; where none can,
/// a compiled C++ loop with exact int32 sums evaluates every form per element.
/// Which one runs, per M bucket: `provider` (docs/kernel-selection.md).
struct QLinearSpec {
  TensorId input = -1, output = -1;
  /// Plain ([K, N] / [N, K], `layout`) or packed. A weight packed for the
  /// provider's kernel is used in place, not copied: `weight` must then stay
  /// alive and unchanged for the step's life (the Plan keeps it: a constant of
  /// Plan::keepAlive, or the mapped model.so of an AOT model). Otherwise it is
  /// read only at build time (packed, reordered by oneDNN, or copied to [N, K]
  /// when the reference loop is the provider).
  const int8_t *weight = nullptr;
  WeightLayout layout = WeightLayout::KN;
  /// Set when octet-pack-weights packed the weight at compile time: `weight`
  /// holds the kernel's panels (packed->bytes()) and `colsum` its column sums
  /// [N] (read only at build time); `layout` is then unused. A layout that is
  /// not the chosen provider's (amx panels for the VNNI kernel, ...) is
  /// unpacked and repacked at build time.
  std::optional<PackedWeightLayout> packed;
  const int32_t *colsum = nullptr;
  int64_t k = 0, n = 0;
  const float *bias = nullptr;   ///< [N] or null (copied)
  const float *wScale = nullptr; ///< [wScaleCount] (copied)
  int64_t wScaleCount = 0;       ///< 1 or N
  TensorId xScale = -1, xZeroPoint = -1, outScale = -1, outZeroPoint = -1;
  bool xScalePerRow = false;          ///< xScale is [..., 1] f32, one per input row
  const float *xScaleConst = nullptr; ///< per tensor only
  const uint8_t *xZeroPointConst = nullptr;
  const float *outScaleConst = nullptr;
  const void *outZeroPointConst = nullptr; ///< u8 or i8, the output's type
  std::vector<TensorId> extras;
  /// extraPerColumn[i]: extras[i] is one f32 value per output column, the
  /// same for every row (shape [N], or [1, .., 1, N]): the VNNI GEMM fuses a
  /// program reading it (x86::ProgramEpilogue's per-column inputs).
  std::vector<bool> extraPerColumn;
  ElementwiseProgram epilogue;
  /// JitVnni, JitAmx, OneDnn or Reference per M bucket; Auto entries are
  /// resolved by makeQLinear (resolveGemmChoice).
  GemmChoice provider{};
  /// The output is this many equal column groups that an attention splits
  /// by heads (a merged Q/K/V: 3): the VNNI GEMM splits each group's panels
  /// over the team as the attention splits heads (x86::Int8GemmParams::columnGroups).
  int64_t columnGroups = 1;
};
StepPtr makeQLinear(const QLinearSpec &spec, DType outType, const KernelOptions &options,
                    std::string &error);

} // namespace octet::rt

#endif
