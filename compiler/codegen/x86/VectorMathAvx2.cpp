//===- VectorMathAvx2.cpp -------------------------------------------------===//
#include "compiler/codegen/x86/VectorMathAvx2.h"

#include "compiler/codegen/CpuFeatures.h"

#include <cstring>

namespace octet::x86::avx2 {

bool hostSupported() {
  static const bool supported = CpuFeatures::host().supports(Isa::Avx2);
  return supported;
}

OCTET_TARGET_AVX2 void unaryBlock(UnaryOp op, const float *a, float *r, int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_ps(r + i, unary(op, _mm256_loadu_ps(a + i)));
  if (i < count) { // the tail through a zero-padded vector
    float lanes[8] = {};
    std::memcpy(lanes, a + i, size_t(count - i) * sizeof(float));
    _mm256_storeu_ps(lanes, unary(op, _mm256_loadu_ps(lanes)));
    std::memcpy(r + i, lanes, size_t(count - i) * sizeof(float));
  }
}

} // namespace octet::x86::avx2
