//===- EpilogueSplit.h - what the GEMM steps share (internal) ----*- C++ -*-===//
//
// Internal to the runtime (KernelSteps.cpp's makeLinear and QuantSteps.cpp's
// makeQLinear): how a GEMM step splits its epilogue program into
//   1. a residual add done by the GEMM (splitEpilogue),
//   2. a rest on the accumulator and per-column extras fused into the kernel
//      (x86::ProgramEpilogue),
//   3. anything else applied after the GEMM (ElementwiseApplier),
// plus the row views, broadcasts and program analyses those need.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_EPILOGUESPLIT_H
#define OCTET_RUNTIME_EPILOGUESPLIT_H

#include "compiler/codegen/x86/ElementwiseKernel.h"
#include "runtime/Steps.h"

#include <memory>
#include <string>
#include <vector>

namespace octet::rt {

/// AVX-512 F/BW/DQ/VL on the target CPU (options.cpu), and allowed by `options`.
bool targetHasAvx512(const KernelOptions &options);

// ---- Row views -------------------------------------------------------------

/// A tensor seen as [rows, cols] (cols = its last dim) with unit column
/// stride and one row stride, when its strides allow it.
struct RowView {
  float *data = nullptr;
  int64_t rows = 1, cols = 1, ld = 1;
};
bool asRows(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides, RowView &v);
bool rowView(const ExecContext &ctx, TensorId t, RowView &v);

/// Copies any strided view of `t`, broadcast to `shape` (right-aligned, size-1
/// dims stretch), into the contiguous `out`.
void gatherBroadcast(const ExecContext &ctx, TensorId t, const std::vector<int64_t> &shape,
                     std::vector<float> &out);

/// The residual `r` (f32) as rows of the output's shape: `data`/`ld` point
/// into `r` when it has that shape and one row stride, else into `copy`
/// (broadcast materialized, ld = the last dim). Errors name `at`.
Status residualRows(const ExecContext &ctx, TensorId r, const std::vector<int64_t> &outShape,
                    const StepWhere &at, const float *&data, int64_t &ld, std::vector<float> &copy);

// ---- Program analyses ------------------------------------------------------

/// Dead-code elimination; `live[i]`: instruction i contributes to the result.
/// Why a GEMM step (named `at`) cannot take `program` as its epilogue with
/// `extras` extra operands (malformed, or reading inputs that do not exist), or "".
std::string checkEpilogue(const ElementwiseProgram &program, size_t extras, const std::string &at);
std::vector<bool> liveInstrs(const ElementwiseProgram &p);
/// Inputs the program's result depends on (the empty program reads input 0).
std::vector<bool> inputsRead(const ElementwiseProgram &p);
/// The program without its dead instructions (ids renumbered).
ElementwiseProgram withoutDeadCode(const ElementwiseProgram &p);
/// Arithmetic instructions the result depends on: the ops per element of a
/// program in a profile (a transcendental function counts one).
double programOps(const ElementwiseProgram &p);
double tensorBytes(const ExecContext &ctx, TensorId t);
bool isIdentity(const ElementwiseProgram &p);

// ---- Elementwise application (fused regions, GEMM post-passes) --------------

/// Applies a program to tensors broadcast to the output's shape: the JIT
/// ElementwiseKernel where the run-time strides fit the column modes it was
/// generated for, else a block interpreter over rows.
class ElementwiseApplier {
public:
  ElementwiseApplier(ElementwiseProgram program, std::vector<TensorId> inputs, TensorId output);

  /// Generates the JIT kernel when the host and options allow it and the
  /// program lowers; `broadcastColumns[i]`: input i is one value per row.
  void buildJit(const KernelOptions &options, std::vector<bool> broadcastColumns);
  /// The GELUs of the block interpreter's AVX2 path: ForRequantize where the
  /// result is rounded to 8 bits (a qlinear's post-pass before its requantize),
  /// as the fused epilogues compute them (x86::GeluAccuracy). Default Full.
  /// Also folds a spelled-out GELU (erf) into one op there (x86::withGeluOps).
  void setInterpreterGelu(x86::GeluAccuracy gelu);
  bool hasJit() const { return jit_ != nullptr; }
  const std::string &jitError() const { return jitError_; }

  /// `outData` (optional): write into this contiguous f32 buffer of the
  /// output's shape instead of the output tensor (whose type and strides are
  /// then ignored); an input that is the output tensor reads the buffer too.
  /// (makeQLinear: an f32 scratch that is requantized afterwards.)
  Status apply(const ExecContext &ctx, const StepWhere &where, float *outData = nullptr) const;

private:
  ElementwiseProgram program_;
  std::vector<TensorId> inputs_;
  TensorId output_;
  std::vector<bool> read_, broadcastColumns_;
  std::unique_ptr<x86::ElementwiseKernel> jit_;
  std::string jitError_;
  x86::GeluAccuracy interpreterGelu_ = x86::GeluAccuracy::Full;
};

// ---- The GEMM-side split ---------------------------------------------------

/// The GEMM-side split of a linear epilogue: `residual` (an extra index, or
/// -1) is added by the GEMM; `rest` is what remains, input 0 = acc (+ residual).
struct EpilogueSplit {
  int residual = -1;
  ElementwiseProgram rest;
};
/// Finds `acc + extra_i` where the accumulator has no other use.
EpilogueSplit splitEpilogue(const ElementwiseProgram &p);

/// The extras a GEMM kernel loads per column, like the bias (the spec's
/// `extraPerColumn`: one f32 value per output column, the same for every row).
struct ColumnExtras {
  std::vector<bool> perColumn; ///< per program input of `rest` (x86::ProgramEpilogue::create)
  std::vector<int> extras;     ///< indices into the extras, in column-input order
  bool fusable = false;        ///< `rest` reads nothing but input 0 and these
};
ColumnExtras columnExtras(const ElementwiseProgram &rest, const std::vector<bool> &extraPerColumn);
/// The data of `columns` (indices into `extras`): each must be f32 with N
/// values and a unit stride along its last axis; else an error naming `at`.
Status columnPointers(const ExecContext &ctx, const std::vector<TensorId> &extras,
                      const std::vector<int> &columns, int64_t n, const StepWhere &at,
                      std::vector<const float *> &out);

} // namespace octet::rt

#endif
