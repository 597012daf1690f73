//===- TensorFiles.h - .npy and ONNX TensorProto (.pb) files ----*- C++ -*-===//
//
// What `octetc run` and calibration read inputs from (and octetc writes its
// outputs to): NumPy's .npy (format v1/v2/v3, little-endian, C order) and ONNX
// TensorProto .pb files (raw_data or the typed fields), for the dtypes a Plan
// knows.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_DRIVER_TENSORFILES_H
#define OCTET_COMPILER_DRIVER_TENSORFILES_H

#include "runtime/Plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace octet::io {

/// A dense row-major tensor in host memory.
struct HostTensor {
  rt::DType dtype = rt::DType::F32;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
  std::string name; ///< a TensorProto's name, if any

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  }
};

/// Reads `path` as .npy or (by extension .pb) a TensorProto; false with
/// `error` saying what is wrong with which file.
bool readTensorFile(const std::string &path, HostTensor &tensor, std::string &error);
bool readNpy(const std::string &path, HostTensor &tensor, std::string &error);
bool readTensorProto(const std::string &path, HostTensor &tensor, std::string &error);
bool writeNpy(const std::string &path, const HostTensor &tensor, std::string &error);

/// "[2, 128]" for messages.
std::string formatDims(const std::vector<int64_t> &dims);

} // namespace octet::io

#endif
