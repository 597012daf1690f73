//===- GemmU8S8Epilogue.h - the u8 x s8 GEMM epilogue on zmm accumulators -*- C++ -*-===//
//
// The epilogue of the INT8 GEMMs (docs/int8-gemm.md, "Epilogue order"), on
// the MR x NR/16 s32 accumulators of a GemmTileAvx512 tile:
//   s32 - comp[n] -> f32 * scale[n] (+ bias[n]) (+ residual[m, n])
//   (elementwise program) -> f32 store, or RNE(v / out_scale) + out_zp
//   saturated to u8 / s8.
// The AMX kernel (GemmU8S8Amx) runs it over rows of its tile sums; it is the
// same code as GemmU8S8Vnni's private epilogue()/storeC(), which should move
// onto this base (pass lambdas that load comp/scale/bias and the residual and
// C rows from GemmU8S8Args) so that one copy remains.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_GEMMU8S8EPILOGUE_H
#define OCTET_COMPILER_CODEGEN_X86_GEMMU8S8EPILOGUE_H

#include "compiler/codegen/x86/GemmTileAvx512.h"
#include "compiler/codegen/x86/GemmU8S8Vnni.h"

#include <functional>
#include <string>

namespace octet::x86 {

/// What the epilogue computes (part of a kernel's cache key).
struct GemmU8S8EpilogueConfig {
  bool compensation = false; ///< subtract comp[n] (a_zero_point != 0)
  bool bias = false;
  bool residual = false;
  const EpilogueEmitter *elementwise = nullptr;
  QuantOutput output = QuantOutput::F32;
  float outScale = 1.0f;    ///< u8/s8 output: real value of one step
  int32_t outZeroPoint = 0; ///< u8/s8 output: 0..255 / -128..127
};

/// "" or why the configuration is invalid (output scale, zero point range).
std::string checkGemmU8S8Epilogue(const GemmU8S8EpilogueConfig &config);
/// Kernel-name suffix: "_comp", "_bias", "_residual", "_elementwise", "_<output>".
std::string gemmU8S8EpilogueSuffix(const GemmU8S8EpilogueConfig &config);

class GemmU8S8EpilogueAvx512 : public GemmTileAvx512 {
protected:
  GemmU8S8EpilogueAvx512(std::string name, Isa isa, size_t maxCodeBytes, int mr, int nr,
                         int columns, const GemmU8S8EpilogueConfig &epilogue);

  enum class ColumnArray { Comp, Scale, Bias };
  /// Returns a register that points at the tile's first column of the array
  /// (NR entries readable); it may emit the load of that pointer.
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
  bool exactReciprocal() const;
  Xbyak::Address constant(int index) const; // own table, {1to16}
  Xbyak::Label ownConstants_;
};

} // namespace octet::x86

#endif
