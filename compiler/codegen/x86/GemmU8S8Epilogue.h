//===- GemmU8S8Epilogue.h - the u8 x s8 GEMM epilogue on zmm accumulators -*- C++ -*-===//
//
// The epilogue of the INT8 GEMMs (docs/int8-gemm.md, "Epilogue order"), on
// the MR x NR/16 s32 accumulators of a GemmTileAvx512 tile:
//   s32 - comp[n] -> f32 * scale[n]   (per-row x scale: * f32(xs[m] * w_scale[n]))
//   (+ bias[n]) (+ residual[m, n])
//   (elementwise program, reading per-column inputs like the bias)
//   -> f32 store, or RNE(v / out_scale) + out_zp saturated to u8 / s8.
// Both INT8 kernels derive from it: GemmU8S8Vnni on its register tile,
// GemmU8S8Amx row by row over its stored tile sums. Each says where its
// column arrays and rows are through callbacks.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_GEMMU8S8EPILOGUE_H
#define OCTET_COMPILER_CODEGEN_X86_GEMMU8S8EPILOGUE_H

#include "compiler/codegen/x86/GemmTileAvx512.h"

#include <cstdint>
#include <functional>
#include <string>

namespace octet::x86 {

/// What a quantized GEMM writes.
enum class QuantOutput { F32, U8, S8 };
const char *quantOutputName(QuantOutput output);

/// What the epilogue computes (part of a kernel's cache key).
struct GemmU8S8EpilogueConfig {
  bool compensation = false; ///< subtract comp[n] (a_zero_point != 0)
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
std::string checkGemmU8S8Epilogue(const GemmU8S8EpilogueConfig &config);
/// Kernel-name suffix: "_comp", "_rowscale", "_bias", "_residual",
/// "_elementwise", "_columns<count>", "_fastgelu" (GeluAccuracy::ForRequantize),
/// "_<output>".
std::string gemmU8S8EpilogueSuffix(const GemmU8S8EpilogueConfig &config);

class GemmU8S8EpilogueAvx512 : public GemmTileAvx512 {
protected:
  GemmU8S8EpilogueAvx512(std::string name, Isa isa, size_t maxCodeBytes, int mr, int nr,
                         int columns, const GemmU8S8EpilogueConfig &epilogue);

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
  /// tile's residual rows (called only with a residual).
  void emitU8S8Epilogue(const ColumnPointer &column,
                        const std::function<void()> &pointAtResidualRows);
  /// Stores the accumulators at the rows regRow_ / regLd_ that
  /// `pointAtOutputRows` sets (f32, or u8/s8 saturating), masked on the N tail.
  void emitU8S8Store(const std::function<void()> &pointAtOutputRows);
  /// After postamble(): the program's constants and the epilogue's own.
  void emitU8S8Constants();

  const GemmU8S8EpilogueConfig epilogue_;

private:
  bool multipliesByReciprocal() const;
  Xbyak::Address constant(int index) const; // own table, {1to16}
  Xbyak::Label ownConstants_;
};

} // namespace octet::x86

#endif
