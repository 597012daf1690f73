//===- GemmBf16Avx512.cpp -------------------------------------------------===//
#include "compiler/codegen/x86/GemmBf16Avx512.h"

#include <string>

namespace octet::x86 {
using namespace Xbyak;

namespace {
std::string kernelName(const GemmF32Avx512Config &c) {
  return "gemm_bf16_avx512" + gemmF32KernelSuffix(c);
}
} // namespace

GemmBf16Avx512::GemmBf16Avx512(const GemmF32Avx512Config &config)
    : GemmF32Avx512(config, kernelName(config), Isa::Avx512Bf16) {}

void GemmBf16Avx512::kStep(int step) {
  // One packed B pair row: 16 columns' (k, k+1) bf16 pairs per zmm; padded
  // panel columns are zero, so it is loaded unmasked.
  for (int j = 0; j < vectors(); ++j)
    vmovups(zB(j), zword[regB_ + (step * nr_ + 16 * j) * 4]);
  for (int i = 0; i < mr_; ++i) {
    vpbroadcastd(zA_, aRow(i, step)); // A row i's (k, k+1) pair in every lane
    for (int j = 0; j < vectors(); ++j)
      vdpbf16ps(acc(i, j), zB(j), zA_);
  }
}

} // namespace octet::x86
