//===- FusionReport.h - which encoder blocks fused, and why not -*- C++ -*-===//
//
// What octet-recognize left unfused: every candidate block (a softmax over
// 4-D scores, a LayerNorm-like mean-centering reduction, a GELU-like erf or
// tanh expression) that did not become its fused op, with the ONNX nodes and
// the matcher's reason. MLIR-free, so octetc and the C API can hold it.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_PASSES_FUSIONREPORT_H
#define OCTET_COMPILER_PASSES_FUSIONREPORT_H

#include <string>
#include <vector>

namespace octet {

struct FusionReport {
  enum class BlockKind { Attention, LayerNorm, Gelu };
  struct Unfused {
    BlockKind block;
    std::string where;  ///< the candidate's ONNX node(s), as diagnostics name them
    std::string reason; ///< why the matcher refused it
  };
  int fused[3] = {0, 0, 0}; ///< fused blocks of each kind, indexed by BlockKind
  std::vector<Unfused> unfused;
  /// Why octet-pack-tokens left an encoder's padding to be computed (its
  /// warning, docs/padding-free.md); empty when padding is dropped, when the
  /// pass did not run (--no-pack-tokens) or the model has no attention.
  std::string paddingKept;
  /// Why the chosen precision is expected to run slower than the default f32
  /// on the compiling CPU (--precision bf16 where vdpbf16ps is slow,
  /// rt::bf16SlowerThanFp32); empty otherwise or when compiled for another CPU.
  std::string slowPrecision;

  static const char *name(BlockKind block);
  int unfusedCount(BlockKind block) const;
  /// "12 of 12 attention blocks fused, ..." and one line per unfused block.
  std::string text() const;
  /// One line when an attention or LayerNorm block stayed unfused ("2 of 12
  /// attention blocks not fused; --explain-fusion says why"), padding is
  /// kept or the precision is slow here, else empty.
  std::string warning() const;
};

} // namespace octet

#endif
