//===- QuantizeKernels.h - f32 -> u8/s8 activation quantization -*- C++ -*-===//
//
// The two AVX-512 kernels that turn f32 activations into a GEMM's u8 input:
//
//  - QuantizePerRowKernel (octet.quantize_per_row, dynamic per-token):
//      s[r] = absmax_k |x[r, k]| / 127 (exactly that f32 division; 1 when the
//             absmax is 0; NaN elements are skipped by the max),
//      q[r, k] = clamp(RNE(x[r, k] / s[r]), -127, 127) + 128  (NaN gives 128).
//    Per row: one pass for the absmax (4 vmaxps chains), one for x / s
//    (vdivps, the exact division the formula names), vcvtps2dq (MXCSR's
//    round-to-nearest-even) and a saturating byte store.
//  - QuantizeKernel (ONNX QuantizeLinear per tensor, u8 or s8):
//      q = saturate(RNE(x / scale) + zp).  Clamping x / scale to
//      [lo - zp, hi - zp] before rounding equals saturating after it (the
//      bounds are integers); NaN gives zp.
// Tails (a row's or the tensor's last count % 16 elements) are read and
// written under a mask: nothing past the data is touched.
//
// quantizeRowScalar / quantizeScalar are the same formulas in C++: the
// fallback on hosts without AVX-512 and the definition the kernels match bit
// for bit (the unit tests also check both against their own reference).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_QUANTIZEKERNELS_H
#define OCTET_COMPILER_CODEGEN_X86_QUANTIZEKERNELS_H

#include "compiler/codegen/x86/Int8GemmKernel.h"
#include "compiler/codegen/x86/KernelGenerator.h"

#include <cstdint>

namespace octet::x86 {

/// Run-time arguments of QuantizePerRowKernel (System V: rdi).
struct QuantizePerRowArgs {
  const float *x; ///< first row; rows of `cols` floats, `ldx` floats apart
  uint8_t *q;     ///< first row; rows of `cols` bytes, `ldq` bytes apart
  float *scale;   ///< one per row, contiguous
  int64_t rows, cols, ldx, ldq;
  int64_t vectors;   ///< cols / 16 (set by run())
  uint32_t tailMask; ///< (1 << cols % 16) - 1 (set by run())
};

class QuantizePerRowKernel : public KernelGenerator {
public:
  /// Generates for any target; run() throws std::runtime_error on a host
  /// without AVX-512 F/BW/DQ/VL.
  QuantizePerRowKernel();
  /// Quantizes args.rows rows (single-threaded; callers split rows across threads).
  void run(QuantizePerRowArgs args) const;

protected:
  void generate() override;

private:
  using Fn = void (*)(const QuantizePerRowArgs *);
  Fn fn_ = nullptr;
};

/// Run-time arguments of QuantizeKernel.
struct QuantizeArgs {
  const float *x;
  void *q;       ///< u8 or s8, the kernel's output type
  int64_t count; ///< elements
  float scale;
  float lo, hi; ///< the output type's bounds minus zp (set by run())
  int32_t zp;
  int64_t vectors;   ///< count / 16 (set by run())
  uint32_t tailMask; ///< (set by run())
};

/// How QuantizeKernel divides by the scale: Exact, `vdivps` (QuantizeLinear's
/// formula, bit for bit); Reciprocal, times f32(1 / scale): a code differs
/// only where x / scale lies within an ulp of a rounding tie, and the loop no
/// longer waits on `vdivps`. For quantizes inside an approximation already
/// coarser than that (the int8 attention's output).
enum class QuantizeDivision { Exact, Reciprocal };

class QuantizeKernel : public KernelGenerator {
public:
  /// `output`: U8 or S8 (std::invalid_argument for F32). Generates for any
  /// target; run() throws std::runtime_error on a host without AVX-512 F/BW/DQ/VL.
  explicit QuantizeKernel(QuantOutput output, QuantizeDivision division = QuantizeDivision::Exact);
  /// q[i] = saturate(RNE(x[i] / scale) + zp), i < count (single-threaded);
  /// Reciprocal: x[i] * f32(1 / scale) in place of the division.
  /// zp must be in the output type's range.
  void run(const float *x, void *q, int64_t count, float scale, int32_t zp) const;

protected:
  void generate() override;

private:
  using Fn = void (*)(const QuantizeArgs *);
  QuantOutput output_;
  QuantizeDivision division_;
  Fn fn_ = nullptr;
};

/// True when the kernels above can run here (AVX-512 F/BW/DQ/VL).
bool quantizeKernelsSupported();

/// q[i] = quantizeScalar(x[i], scale, zp, lo, hi), i < count, u8 (lo 0) or
/// s8 (lo -128) bytes: compiled C++ on AVX2 where the host has it (8 lanes,
/// the same operations: exact division, round to nearest even, NaN -> zp),
/// else the scalar loop. The requantize of hosts without AVX-512.
void quantizeRowCompiled(const float *x, void *q, int64_t count, float scale, int32_t zp,
                         int32_t lo, int32_t hi);

/// One row of QuantizePerRowKernel in C++; returns the row's scale.
float quantizeRowScalar(const float *x, int64_t cols, uint8_t *q);
/// One element of QuantizeKernel in C++: saturate(RNE(x / scale) + zp) into [lo, hi].
inline int32_t quantizeScalar(float x, float scale, int32_t zp, int32_t lo, int32_t hi);

} // namespace octet::x86

#include <cmath>

namespace octet::x86 {
inline int32_t quantizeScalar(float x, float scale, int32_t zp, int32_t lo, int32_t hi) {
  const float r = std::nearbyint(x / scale); // default rounding mode: to nearest even
  const float v = r + float(zp);
  if (!(v >= float(lo)))
    return std::isnan(v) ? zp : lo;
  if (v > float(hi))
    return hi;
  return int32_t(v);
}
} // namespace octet::x86

#endif
