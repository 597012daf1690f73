//===- Int8GemmKernel.h - what every INT8 GEMM micro-kernel shares -*- C++ -*-===//
//
// The micro-kernel side of the INT8 GEMM (the driver is Int8GemmDriver.h):
//  - Int8GemmKernelConfig: what one generated kernel computes (its cache key);
//  - Int8GemmKernel: the base of every micro-kernel generator, with the
//    epilogue (docs/int8-gemm.md, "Epilogue order") on the MR x NR/16 s32
//    accumulators of a GemmTileAvx512 tile:
//      s32 + comp[n] -> f32 * scale[n]   (per-row x scale: * f32(xs[m] * w_scale[n]))
//      (+ bias[n]) (+ residual[m, n])
//      (elementwise program, reading per-column inputs like the bias)
//      -> f32 store, or RNE(v / out_scale) + out_zp saturated to u8 / s8.
//    comp[n] is the compensation negated, -a_zero_point * colsum_B[n], so
//    that a kernel may start its sums from it (the VNNI kernel does: no
//    subtraction left for the epilogue). After a GELU for a requantized
//    result, the requantize is one FMA, v * (1 / out_scale) + out_zp, then
//    the clamp to the output's range and one conversion.
//    Int8GemmKernelVnni runs it on its register tile, Int8GemmKernelAmx row
//    by row over its stored tile sums; each says where its column arrays and
//    rows are through callbacks;
//  - Int8GemmKernelFamily: what the driver must know of an ISA's kernels
//    before it generates any (packed layout, panel width, rows per call, how
//    calls are scheduled) and how to generate one. A new ISA is one kernel
//    class with its family (and its PackIsa, where its packed layout is new).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_INT8GEMMKERNEL_H
#define OCTET_COMPILER_CODEGEN_X86_INT8GEMMKERNEL_H

#include "compiler/codegen/PackedWeights.h"
#include "compiler/codegen/x86/GemmTileAvx512.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace octet::x86 {

/// What a quantized GEMM writes.
enum class QuantOutput { F32, U8, S8 };
const char *quantOutputName(QuantOutput output);

/// What the epilogue computes (part of a kernel's cache key).
struct Int8EpilogueConfig {
  bool compensation = false; ///< add comp[n] = -a_zero_point * colsum_B[n] (a_zero_point != 0)
  bool xScalePerRow = false; ///< scale[n] is w_scale[n]; x_scale[m] comes per row
  bool bias = false;
  bool residual = false;
  const EpilogueEmitter *elementwise = nullptr;
  /// Bytes between the elementwise program's per-column inputs (NR-padded
  /// rows of floats), when it reads any.
  int64_t columnStride = 0;
  QuantOutput output = QuantOutput::F32;
  float outScale = 1.0f;    ///< u8/s8 output: real value of one step
  int32_t outZeroPoint = 0; ///< u8/s8 output: 0..255 / -128..127
};

/// "" or why the configuration is invalid (output scale, zero point range, a
/// fast-GELU program with an f32 output).
std::string checkInt8Epilogue(const Int8EpilogueConfig &config);
/// Kernel-name suffix: "_comp", "_rowscale", "_bias", "_residual",
/// "_elementwise", "_columns<count>", "_fastgelu" (GeluAccuracy::ForRequantize),
/// "_<output>".
std::string int8EpilogueSuffix(const Int8EpilogueConfig &config);

/// What one generated micro-kernel computes (its cache key).
struct Int8GemmKernelConfig {
  int rows = 1;       ///< rows of A and C per call: 1..the family's maxRows
  int nr = 48;        ///< panel width (the family's panelWidth(N))
  int columns = 48;   ///< valid columns of the panel (< nr only for the last one)
  int kTailBytes = 0; ///< K % the family's kGranule: the masked / staged last K group (0: none)
  /// RegisterTile: lines of the next B slice prefetched per unrolled K step
  /// (1, 2 or 4; Int8GemmDriver::prefetchSet says which a block runs).
  int bPrefetchLines = 1;
  /// RegisterTile: those lines into L1 and L2 (prefetcht0) rather than into L2
  /// (prefetcht1): the sets the driver runs on AMD hosts, where prefetcht1
  /// reaches L2 only now and then (Int8GemmDriver::prefetchSet).
  bool bPrefetchToL1 = false;
  Int8EpilogueConfig epilogue;
};

/// The base of every INT8 GEMM micro-kernel: one generated kernel for one
/// Int8GemmKernelConfig, with the shared epilogue.
class Int8GemmKernel : public GemmTileAvx512 {
public:
  const Int8GemmKernelConfig &config() const { return config_; }

protected:
  /// `tileRows` x `tileColumns` (`validColumns` of them stored): the register
  /// tile the epilogue runs on (the AMX kernel's is one row of its panel).
  Int8GemmKernel(std::string name, Isa isa, size_t maxCodeBytes, int tileRows, int tileColumns,
                 int validColumns, const Int8GemmKernelConfig &config);

  /// Comp, Scale, Bias: [N] arrays; Inputs: the program's per-column inputs
  /// (columnStride bytes apart); RowScales: the per-row x scales, one float
  /// per tile row.
  enum class ColumnArray { Comp, Scale, Bias, Inputs, RowScales };
  /// Returns a register that points at the tile's first column of the array
  /// (NR entries readable; RowScales: at the tile's first row); it may emit
  /// the load of that pointer.
  using ColumnPointer = std::function<Xbyak::Reg64(ColumnArray)>;

  /// The epilogue on the accumulators, leaving f32 (or s32 codes for u8/s8
  /// output) in them. `pointAtResidualRows` points regRow_ / regLd_ at the
  /// tile's residual rows (called only with a residual). `sumsHoldComp`: the
  /// sums started from comp[n] (nothing to add). Uses zA_ and zB(0) as
  /// temporaries (free once the dot products are done).
  void emitU8S8Epilogue(const ColumnPointer &column,
                        const std::function<void()> &pointAtResidualRows, bool sumsHoldComp);
  /// Stores the accumulators at the rows regRow_ / regLd_ that
  /// `pointAtOutputRows` sets (f32, or u8/s8 saturating), masked on the N tail.
  void emitU8S8Store(const std::function<void()> &pointAtOutputRows);
  /// After postamble(): the program's constants and the epilogue's own.
  void emitU8S8Constants();

  const Int8GemmKernelConfig config_;
  const Int8EpilogueConfig epilogue_;

private:
  bool multipliesByReciprocal() const;
  /// A fast GELU's result is requantized: scale and bias are one FMA, and the
  /// requantize adds out_zp before rounding (one FMA with the reciprocal; see
  /// the header).
  bool requantizesAfterFastGelu() const;
  Xbyak::Address constant(int index) const;       // own table, {1to16}
  Xbyak::Address scalarConstant(int index) const; // own table, one float
  Xbyak::Label ownConstants_;
};

/// How the driver calls an ISA's kernels (Int8GemmDriver.cpp has one loop
/// nest for each).
enum class Int8GemmSchedule {
  /// A call: `rows` x one panel over one K block, the accumulators in
  /// registers; K blocks pass s32 partial sums through a per-thread buffer
  /// (Int8GemmVnniArgs); B panels are [K / granule][NR][granule] bytes, the
  /// granule a divisor of 4. Threads take (M block, panel) pairs.
  RegisterTile,
  /// A call: up to `rows` x one panel over all of K into per-thread tile sums,
  /// then the epilogue; a thread's tile configuration persists across calls
  /// (Int8GemmAmxArgs). Threads take a panels x M blocks grid.
  AmxTiles,
};

/// One ISA's micro-kernels as the driver sees them, before generating any.
struct Int8GemmKernelFamily {
  const char *name;          ///< the provider's name: "jit_vnni", "jit_amx"
  PackIsa packIsa;           ///< the packed-B layout (PackedWeights.h)
  Int8GemmSchedule schedule; ///< the driver's loop nest
  int kGranule;              ///< K bytes per dot step (the K tail is K % kGranule)
  int (*panelWidth)(int64_t n);
  /// Rows per call for a panel width and the epilogue program's scratch zmm
  /// (< 1: the program leaves no room).
  int (*maxRows)(int nr, int scratchZmm);
  /// "" when this host can run the kernels, else why not.
  std::string (*whyNotUsable)();
  /// Generates one kernel (throws std::invalid_argument for a configuration
  /// it cannot generate); generating needs no support from the host.
  std::unique_ptr<Int8GemmKernel> (*generate)(const Int8GemmKernelConfig &config);
};

} // namespace octet::x86

#endif
