//===- FusedKernels.h - fused elementwise and last-axis kernels -*- C++ -*-===//
//
// Kernel generators for the FP32 path, all built on VectorMath: LayerNorm
// (plain, residual-add, embedding gather + add), softmax with an additive
// mask, and unary elementwise maps (GELU erf / tanh and the other UnaryOps).
// Row kernels know the row length N at generation time and take the row count
// M at run time; the remainder N % 16 runs under an opmask, so nothing outside
// a row is read or written. run() drives the kernel over rows with OpenMP.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_FUSEDKERNELS_H
#define OCTET_COMPILER_CODEGEN_X86_FUSEDKERNELS_H

#include "compiler/codegen/x86/KernelGenerator.h"
#include "compiler/codegen/x86/VectorMath.h"

#include <functional>

namespace octet::x86 {

/// Shared row machinery: the loop over the 16-float vectors of one row.
class RowKernel : public KernelGenerator {
protected:
  static constexpr int kUnroll = 4;
  RowKernel(std::string name, int64_t n);

  /// Emits body(slot, disp, tail) for every vector of the row, in blocks of
  /// kUnroll under a runtime loop. The vector is at [rowPointer + rCol + disp];
  /// slot (< kUnroll) picks independent registers; tail: masked by kTail.
  void forEachVector(const std::function<void(int, int, bool)> &body);
  /// Sets kTail for N % 16; call before the first forEachVector.
  void initTailMask();
  void load(const Xbyak::Zmm &z, const Xbyak::Address &a, bool tail);
  void store(const Xbyak::Address &a, const Xbyak::Zmm &z, bool tail);
  /// acc (op)= v, on the row's lanes only.
  void accumulate(const Xbyak::Zmm &acc, const Xbyak::Zmm &v, bool tail, bool isMax);
  /// Folds the kUnroll accumulators into a broadcast total in `dst`.
  void reduceAccumulators(const Xbyak::Zmm &dst, bool isMax);
  /// The whole kernel around its rows: reads the row count from `rowCount`,
  /// returns at once when it is ≤ 0, runs setup() (argument loads), then row()
  /// once per row (it advances its own pointers), and places the constants.
  void emitRowLoop(const Xbyak::Address &rowCount, const std::function<void()> &setup,
                   const std::function<void()> &row);

  int64_t n_;
  int32_t rowBytes_;
  ConstantTable constants_{*this};
  const Xbyak::Reg64 rCol = rax, rRows = rbp, rRow = rbx;
  const Xbyak::Opmask kTail = k1;
  // z0-3 accumulators, z4-7 row values, z8-11 masked-load temporaries, z14-31
  // VectorMath's pool.
  Xbyak::Zmm acc(int slot) const { return Xbyak::Zmm(slot); }
  Xbyak::Zmm val(int slot) const { return Xbyak::Zmm(4 + slot); }
  Xbyak::Zmm tmp(int slot) const { return Xbyak::Zmm(8 + slot); }
  VectorMath math_;
};

/// Where a LayerNorm input row comes from.
enum class RowSource {
  Dense,    ///< row m at src + m * N
  Gathered, ///< row m at src + index[m] * N (embedding tables)
};

struct LayerNormArgs {
  const float *src[3] = {};     ///< summed inputs (x, residual, or embedding tables)
  const int64_t *index[3] = {}; ///< per Gathered source: the row ids, M of them
  float *sum = nullptr;         ///< optional: the sum of the sources, M x N
  float *y = nullptr;           ///< M x N (unused without LayerNormQuantize::writeY)
  const float *gamma = nullptr, *beta = nullptr;
  int64_t rows = 0;
  void *q = nullptr;            ///< LayerNormQuantize: M x N u8 / s8
  float *rowScale = nullptr;    ///< LayerNormQuantize::PerRow: M scales
  /// LayerNormQuantize::ownAffine: the quantized value's gamma and beta.
  const float *qGamma = nullptr, *qBeta = nullptr;
};

/// The quantized output of a LayerNormKernel (octet.layer_norm_quantize), from
/// the f32 y exactly as the unfused quantize kernels (QuantizeKernels.h) compute it:
///  - PerTensor: q = saturate(RNE(y / scale) + zeroPoint), u8 or s8;
///  - PerRow: s = absmax(y) / 127 (1 for 0, NaN skipped), q = clamp(RNE(y / s),
///    -127, 127) + 128 (NaN: 128); a fourth pass recomputes y (or rereads it
///    when stored) after the row's absmax is known.
struct LayerNormQuantize {
  enum class Mode { None, PerTensor, PerRow };
  Mode mode = Mode::None;
  bool signedOutput = false; ///< PerTensor: s8 instead of u8
  float scale = 1;           ///< PerTensor
  int32_t zeroPoint = 0;     ///< PerTensor, in the output type's range
  bool writeY = true;        ///< false: only q (and the row scales) are written
  /// PerTensor only: q quantizes norm * qGamma + qBeta (LayerNormArgs), not
  /// y: a second affine of the same normalization (octet.layer_norm_quantize's
  /// quant_affine), so one pass writes y and the smoothed copy's q.
  bool ownAffine = false;
};

/// y = (x - mean) / sqrt(var + eps) * gamma + beta over rows of N, where x is
/// the sum of up to three sources: LayerNorm (1 Dense), residual-add +
/// LayerNorm (2 Dense, optionally writing x), embedding + LayerNorm (3
/// Gathered: word, position, token type). Two passes for mean then variance
/// (no E[x^2] - mean^2 cancellation; a row whose sum of squares overflows
/// takes two more, rescaled by its largest deviation), a third to normalize; x is kept in `sum`
/// or `y` between passes when it is not a single input row (without y or sum
/// to keep it in, each pass sums the sources again: the same bits).
/// With a LayerNormQuantize (Dense sources only) y is also quantized.
class LayerNormKernel : public RowKernel {
public:
  LayerNormKernel(int64_t n, std::vector<RowSource> sources, bool writeSum, float epsilon,
                  LayerNormQuantize quantize = {});
  void run(const LayerNormArgs &args);

protected:
  void generate() override;

private:
  std::vector<RowSource> sources_;
  bool writeSum_;
  float epsilon_;
  LayerNormQuantize quant_;
  const Xbyak::Reg64 rArgs = rdi, rY = r14, rSum = r15, rGamma = rdx, rBeta = rcx, rTmp = rsi;
  const Xbyak::Reg64 rSrc[3] = {r8, r9, r10}, rIdx[3] = {r11, r12, r13};
  // Quantizing needs Dense sources, so the index registers are free for these
  // (ownAffine is per tensor: no row scales).
  const Xbyak::Reg64 rQ = r11, rRowScale = r12, rQGamma = r13, rQBeta = r12;
  const Xbyak::Zmm zMean = zmm12, zRstd = zmm13, zRowScale = zmm15; // pool: free after rsqrt
  const Xbyak::Opmask kNan = k4, kOverflow = k5;
};

/// y[m] = softmax(scale * x[m] + mask[m / rowsPerMask]) over rows of N.
/// The mask has one row of N per `rowsPerMask` consecutive rows: BERT's
/// [B,1,1,S] mask over scores [B,H,S,S] is rowsPerMask = H*S; [1,S] shared by
/// all rows is rowsPerMask = M; a full [M,S] mask is 1. Mask entries may be
/// -inf or -FLT_MAX. A row whose every entry is -inf yields all zeros (no
/// NaN); with -FLT_MAX entries a fully masked row is uniform, as in PyTorch.
struct SoftmaxArgs {
  const float *x = nullptr;
  float *y = nullptr; ///< may equal x
  const float *mask = nullptr;
  int64_t rows = 0;
  int64_t rowsPerMask = 1;
};

class SoftmaxKernel : public RowKernel {
public:
  SoftmaxKernel(int64_t n, float scale, bool hasMask);
  void run(const SoftmaxArgs &args);

protected:
  void generate() override;

private:
  /// What the kernel reads: SoftmaxArgs plus the rows of the first mask row
  /// already consumed, so that a chunk may start mid mask row.
  struct Call {
    SoftmaxArgs args;
    int64_t maskPhase;
  };
  float scale_;
  bool hasMask_;
  const Xbyak::Reg64 rArgs = rdi, rX = r8, rY = r9, rMask = r10, rPer = r11, rPhase = r12;
  const Xbyak::Zmm zMax = zmm12, zInv = zmm13;
};

/// y[i] = op(x[i]) over a buffer of any length (GELU for the FFN; any UnaryOp).
class UnaryKernel : public KernelGenerator {
public:
  explicit UnaryKernel(UnaryOp op);
  void run(const float *x, float *y, int64_t count);

protected:
  void generate() override;

private:
  UnaryOp op_;
  ConstantTable constants_{*this};
  const Xbyak::Reg64 rX = rdi, rY = rsi, rCount = rdx;
  const Xbyak::Opmask kTail = k1;
  const Xbyak::Zmm zVal = zmm0;
};

} // namespace octet::x86

#endif
