//===- GemmU8S8.h - blocked, threaded INT8 GEMM with VNNI-packed weights -*- C++ -*-===//
//
//   C[M, N] = out( program( x_scale[m] * w_scale[n] * (sum_k A[m, k] * B[k, n]
//                                                  - a_zero_point * colsum_B[n])
//                           + bias[n] + residual[m, n] ) )
//
// A: u8 [M, K] row-major with zero point a_zero_point (asymmetric activations;
// s8 activations are shifted by +128 by the caller, with a_zero_point = 128).
// B: s8, symmetric per output channel (w_scale[n]); constant, packed once by
// packU8S8, which also computes colsum_B (the u8 x s8 compensation).
// out: f32, or u8 / s8 = saturate(RNE(v / out_scale) + out_zero_point).
// x_scale: one per tensor (folded into the per-column scale at construction)
// or one per row of A (run()'s xScale; the kernel forms f32(x_scale[m] * w_scale[n])).
// program: the elementwise epilogue; besides the accumulator it may read
// per-column vectors ([N] f32, run()'s `columns`), loaded like the bias.
// N and K are fixed (B is a constant weight); M is known only at run time.
//
// Packed layout: ceil(N / NR) panels of [ceil(K / 4)][NR][4] s8, element
// (k, n) at ((p * K4 + k / 4) * NR + n % NR) * 4 + k % 4 with p = n / NR:
// one zmm holds 4 consecutive K of 16 columns, vpdpbusd's operand order.
// Columns past N and K bytes past K are zero.
//
// K tail: A rows need only K bytes (no padding): the last K % 4 bytes are read
// with a zero-masked load (GemmU8S8Vnni.h).
//
// Blocking rule (GemmF32's, with bytes for floats):
//  - NR is 48 unless 32 pads N to fewer columns; MR fills the 32 zmm with
//    MR * NR/16 s32 accumulators beside the B group, the A broadcast and the
//    epilogue's scratch (9 for NR = 48, 14 for NR = 32; fewer with a program).
//  - Kc (a multiple of 4): a Kc x NR byte block of a B panel fits in L1d; K is
//    cut into equal blocks. Between K blocks a tile's s32 sums wait in a
//    per-thread [Mc][NR] buffer.
//  - Mc: the Mc x K bytes of A fit in half of L2; M is cut into equal blocks.
// Threads (OpenMP, current team size) take (M block, N panel) pairs, N panels
// innermost. All kernels are generated at construction; run() is thread-safe.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_GEMMU8S8_H
#define OCTET_COMPILER_CODEGEN_X86_GEMMU8S8_H

#include "compiler/codegen/PackedWeights.h"
#include "compiler/codegen/x86/GemmF32.h"
#include "compiler/codegen/x86/GemmU8S8Vnni.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace octet::x86 {

/// The panel width packU8S8 and GemmU8S8 use for N columns.
int gemmU8S8PanelWidth(int64_t n);

using octet::kMaxU8S8K; // PackedWeights.h

struct PackedU8S8 {
  int64_t n = 0, k = 0;
  int nr = 0;
  std::vector<int8_t, CacheLineAllocator<int8_t>> data; ///< the panels
  std::vector<int32_t> colsum;                          ///< sum_k B[k, n], [N]
};

/// A packed weight where it lies: a PackedU8S8's, or compile-time packed
/// bytes used in place (octet-pack-weights; an AOT model's mapped constants).
/// `data` must outlive the GEMM; `colsum` is read only at construction.
struct PackedU8S8View {
  int64_t n = 0, k = 0;
  int nr = 0;
  const int8_t *data = nullptr;
  int64_t bytes = 0;
  const int32_t *colsum = nullptr; ///< [N]
  PackedU8S8View() = default;
  PackedU8S8View(int64_t n, int64_t k, int nr, const int8_t *data, int64_t bytes,
                 const int32_t *colsum)
      : n(n), k(k), nr(nr), data(data), bytes(bytes), colsum(colsum) {}
  PackedU8S8View(const PackedU8S8 &p) // NOLINT: implicit, a PackedU8S8 is a view of itself
      : PackedU8S8View(p.n, p.k, p.nr, p.data.data(), int64_t(p.data.size()),
                       p.colsum.size() == size_t(p.n) ? p.colsum.data() : nullptr) {}
};

/// Packs B ([K, N] or [N, K] s8) into VNNI panels and computes colsum_B.
/// Throws std::invalid_argument for N or K out of range or a null B.
PackedU8S8 packU8S8(const int8_t *b, int64_t k, int64_t n, WeightLayout layout);

struct GemmU8S8Params {
  int32_t aZeroPoint = 0;                       ///< 0..255
  float xScale = 1.0f;                          ///< A's scale (per tensor)
  /// Per-row A scales (dynamic per-token quantization): run() takes x_scale[M]
  /// and the kernel computes f32(x_scale[m] * w_scale[n]); `xScale` is unused.
  bool xScalePerRow = false;
  std::vector<float> wScale;                    ///< [N] per output channel, or 1 entry (per tensor)
  const float *bias = nullptr;                  ///< [N] f32, or null (copied)
  bool residual = false;                        ///< run() gets a residual [M, N] f32 to add
  const EpilogueEmitter *elementwise = nullptr; ///< must outlive the GemmU8S8
  QuantOutput output = QuantOutput::F32;
  float outScale = 1.0f;    ///< u8/s8 output
  int32_t outZeroPoint = 0; ///< u8/s8 output
};

/// The GemmU8S8Params checks shared by GemmU8S8 and GemmU8S8AmxDriver: ""
/// or what is wrong.
std::string checkGemmU8S8Params(const GemmU8S8Params &params, int64_t n);
/// Why N, K cannot be an INT8 GEMM's shape (N >= 1, 1 <= K <= kMaxU8S8K), or "".
std::string checkGemmU8S8Shape(int64_t n, int64_t k);

class GemmU8S8 {
public:
  /// Host support: AVX-512 F/BW/VL/DQ and VNNI.
  static bool hostSupported();

  /// `packed.data` is referenced, not copied: it must outlive this object.
  /// Throws std::invalid_argument (what and why) for bad parameters.
  /// Generating needs no VNNI (a plan for another CPU); run() does.
  GemmU8S8(PackedU8S8View packed, GemmU8S8Params params);

  /// lda in bytes (>= K), ldc in elements of the output type (>= N), ldr in
  /// floats (>= N). A rows are read for exactly K bytes. `xScale`: M per-row
  /// A scales (only with GemmU8S8Params::xScalePerRow). `columns`: one [N]
  /// f32 pointer per per-column input of the program. Throws
  /// std::invalid_argument on bad arguments, std::runtime_error when the host
  /// lacks AVX-512 VNNI. Threads: OpenMP's team size.
  void run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
           const float *residual = nullptr, int64_t ldr = 0, const float *xScale = nullptr,
           const float *const *columns = nullptr) const;

  int mr() const { return mr_; }
  int nr() const { return nr_; }
  int64_t kc() const { return kc_; }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }

private:
  GemmU8S8KernelFn kernel(int rows, bool tailPanel) const {
    return kernelFns_[(rows - 1) * 2 + tailPanel];
  }
  int64_t mc(int64_t m) const;

  int64_t n_, k_;
  PackedU8S8View packed_;
  GemmU8S8Params params_;
  int nr_, mr_;
  int64_t kc_, panels_, k4_;
  // Per column, padded to whole panels (kernels read whole vectors).
  std::vector<int32_t, CacheLineAllocator<int32_t>> comp_;
  std::vector<float, CacheLineAllocator<float>> scale_, bias_;
  std::vector<std::unique_ptr<GemmU8S8Vnni>> kernels_;
  std::vector<GemmU8S8KernelFn> kernelFns_; // [rows - 1][tail panel]
};

} // namespace octet::x86

#endif
