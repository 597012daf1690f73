//===- Samples.h - input sets from files, or generated token batches -*- C++ -*-===//
//
// What `octetc run --input-sets` and calibration feed a Plan: a directory with
// one subdirectory per input set (NAME.npy / NAME.pb per model input), checked
// against the Plan's inputs, or `generate:N[xB][xS]` token batches made up to
// look like tokenized text (docs/calibration.md). MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_DRIVER_SAMPLES_H
#define OCTET_COMPILER_DRIVER_SAMPLES_H

#include "compiler/driver/TensorFiles.h"
#include "runtime/Executor.h"
#include "runtime/Plan.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace octet {

/// Checks a tensor against what input `io` expects (dtype, rank, static dims);
/// `source` names where it came from in the message.
bool checkInput(const rt::IoInfo &io, const io::HostTensor &tensor, const std::string &source,
                std::string &error);

/// The subdirectories of `root` (one input set each), sorted by name. `what`
/// names the flag or key in messages ("--input-sets").
bool listInputSets(const std::string &root, const std::string &what,
                   std::vector<std::string> &dirs, std::string &error);

/// Reads the NAME.npy / NAME.pb files of one input-set directory: tensors[i]
/// for the Plan's input i, given[i] whether the directory holds it. A file
/// naming no input, a duplicate or a tensor `checkInput` refuses is an error.
bool readInputSet(const rt::Plan &plan, const std::string &dir,
                  std::vector<io::HostTensor> &tensors, std::vector<bool> &given,
                  std::string &error);

/// `generate:N[xB][xS]`: N batches of B sequences (default 8) of length S
/// (default 128).
struct GenerateSpec {
  int64_t batches = 0, batch = 8, seq = 128;
};
/// True when `samples` starts with "generate:"; then parses it into `spec`
/// (false with `error` when malformed).
/// Element i of `t` (any dtype) = v, converted as a C cast would.
void setElement(io::HostTensor &t, int64_t i, double v);

bool isGenerateSpec(const std::string &samples);
bool parseGenerateSpec(const std::string &samples, GenerateSpec &spec, std::string &error);

/// One generated batch for the Plan's inputs (docs/calibration.md): token ids
/// with a Zipf-like distribution over the vocabulary, a first ([CLS]) and last
/// ([SEP]) token, random lengths padded to `seq` with a matching attention
/// mask, token type ids 0, position ids 0..S-1, floats normal(0, 1). Static
/// dims of the Plan win over `batch` / `seq`.
std::vector<io::HostTensor> generateBatch(const rt::Plan &plan, int64_t batch, int64_t seq,
                                          std::mt19937_64 &rng);

/// Views of `tensors` (the Plan's inputs in order) as run inputs; they must
/// outlive `inputs`. False when a rank exceeds rt::kMaxRank.
bool runInputsOf(const rt::Plan &plan, std::vector<io::HostTensor> &tensors,
                 std::vector<rt::RunTensor> &inputs, std::string &error);

} // namespace octet

#endif
