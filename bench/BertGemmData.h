//===- BertGemmData.h - BERT-base INT8 GEMM shapes and random operands -*- C++ -*-===//
//
// The INT8 GEMM benches' operands: BERT-base's four linear shapes and seeded
// random u8 activations, s8 weights ([K, N]), bias, residual and per-channel
// weight scales around 0.015; the GELU epilogue program.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_BENCH_BERTGEMMDATA_H
#define OCTET_BENCH_BERTGEMMDATA_H

#include "compiler/codegen/x86/ProgramEpilogue.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace octet::bench {

/// K x N of QKV (fused), attention out, FFN in, FFN out.
inline constexpr int64_t kBertGemmKN[4][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};

struct BertGemmData {
  std::vector<uint8_t> a, c; ///< c: room for M x N f32
  std::vector<int8_t> w;     ///< [K, N]
  std::vector<float> bias, residual, wScale;

  BertGemmData(int64_t m, int64_t k, int64_t n, std::mt19937 &gen)
      : a(m * k), c(m * n * 4), w(k * n), bias(n), residual(m * n), wScale(n) {
    std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127);
    std::uniform_real_distribution<float> unit(-1, 1);
    for (uint8_t &x : a)
      x = uint8_t(u8(gen));
    for (int8_t &x : w)
      x = int8_t(s8(gen));
    for (float &x : bias)
      x = unit(gen);
    for (float &x : residual)
      x = unit(gen);
    for (float &x : wScale)
      x = 0.01f * (1.5f + unit(gen));
  }
};

/// GELU (erf) as the epilogue program BERT's FFN-in fuses; exits on failure.
inline std::unique_ptr<x86::ProgramEpilogue>
bertGeluEpilogue(x86::GeluAccuracy accuracy = x86::GeluAccuracy::Full) {
  rt::ElementwiseProgram program;
  using Op = rt::ElementwiseProgram::Op;
  program.numInputs = 1;
  program.instrs = {{Op::Input, 0, -1, 0}, {Op::GeluErf, 0, -1, 0}};
  std::string error;
  auto e = x86::ProgramEpilogue::create(program, error, {}, accuracy);
  if (!e) {
    std::fprintf(stderr, "GELU epilogue: %s\n", error.c_str());
    std::exit(1);
  }
  return e;
}

} // namespace octet::bench

#endif
