//===- gemm_u8s8_epilogue.cpp - cost of a fused GELU in the VNNI GEMM -----===//
//
// Int8GemmDriver on BERT-base's FFN-in shape (M = 128, K = 768, N = 3072; a_zp
// 128, per-channel scales, bias), one thread:
//  - "bias":            the bare GEMM, f32 result;
//  - "bias+gelu fused": GELU (erf) in the kernel's epilogue (ProgramEpilogue);
//  - "bias, gelu pass": the bare GEMM, then GELU as a separate in-place pass
//                       over C (ElementwiseKernel, what an unfused step does);
//  - the same three with a requantized u8 result (the separate pass then
//    runs on an f32 scratch and QuantizeKernel requantizes it);
//  - "u8 fast gelu x column": BERT-base INT8's FFN-in as the compiler builds
//    it, GELU for a requantized result (GeluAccuracy::ForRequantize) times a
//    per-column vector (the next GEMM's SmoothQuant factors) then requantized.
// Each figure is the best of `reps` runs of the thread's CPU time (time
// slicing on a shared host drops out).
//   gemm_u8s8_epilogue [reps] [M]
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/ElementwiseKernel.h"
#include "compiler/codegen/x86/Int8GemmDriver.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"
#include "compiler/codegen/x86/QuantizeKernels.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <time.h>
#include <vector>

namespace {
using namespace octet;
using Op = rt::ElementwiseProgram::Op;

double cpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

double best(int reps, const std::function<void()> &f) {
  f(); // warm up
  double b = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = cpuSeconds();
    f();
    b = std::min(b, cpuSeconds() - t0);
  }
  return b;
}
} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 30;
  const int64_t m = argc > 2 ? std::atoll(argv[2]) : 128, k = 768, n = 3072;
  if (!x86::Int8GemmDriver::hostSupported()) {
    std::printf("host lacks AVX-512 VNNI\n");
    return 0;
  }
  omp_set_num_threads(1);
  std::mt19937 gen(1);
  std::uniform_int_distribution<int> u8(0, 255), s8(-127, 127);
  std::vector<uint8_t> a(m * k);
  std::vector<int8_t> b(k * n);
  for (auto &v : a)
    v = uint8_t(u8(gen));
  for (auto &v : b)
    v = int8_t(s8(gen));
  std::vector<float> ws(n, 1e-4f), bias(n, 0.1f);
  const x86::PackedInt8 packed =
      x86::packInt8(octet::PackIsa::Avx512Vnni, b.data(), k, n, WeightLayout::KN);

  rt::ElementwiseProgram gelu;
  gelu.numInputs = 1;
  gelu.instrs = {{Op::Input, 0, -1, 0}, {Op::GeluErf, 0, -1, 0}};
  std::string error;
  auto fused = x86::ProgramEpilogue::create(gelu, error);
  rt::ElementwiseProgram geluColumn;
  geluColumn.numInputs = 2;
  geluColumn.instrs = {
      {Op::Input, 0, -1, 0}, {Op::GeluErf, 0, -1, 0}, {Op::Input, 1, -1, 0}, {Op::Mul, 1, 2, 0}};
  auto fusedColumn = x86::ProgramEpilogue::create(geluColumn, error, {false, true},
                                                  x86::GeluAccuracy::ForRequantize);
  if (!fused || !fusedColumn) {
    std::fprintf(stderr, "gemm_u8s8_epilogue: %s\n", error.c_str());
    return 1;
  }
  std::vector<float> column(n, 0.8f);
  const float *columns[] = {column.data()};
  auto pass = x86::ElementwiseKernel::create(gelu, {false}, error);
  x86::QuantizeKernel requant(x86::QuantOutput::U8);

  auto make = [&](bool withGelu, x86::QuantOutput out,
                  const x86::EpilogueEmitter *program = nullptr) {
    x86::Int8GemmParams p;
    p.aZeroPoint = 128;
    p.xScale = 0.02f;
    p.wScale = ws;
    p.bias = bias.data();
    p.elementwise = program ? program : withGelu ? fused.get() : nullptr;
    p.output = out;
    p.outScale = 0.05f;
    p.outZeroPoint = 10;
    return std::make_unique<x86::Int8GemmDriver>(packed, p);
  };
  auto plain = make(false, x86::QuantOutput::F32), withGelu = make(true, x86::QuantOutput::F32);
  auto plainU8 = make(false, x86::QuantOutput::U8), geluU8 = make(true, x86::QuantOutput::U8);
  auto geluColumnU8 = make(true, x86::QuantOutput::U8, fusedColumn.get());
  std::vector<float> c(m * n);
  std::vector<uint8_t> q(m * n);
  auto geluPass = [&]() {
    x86::ElementwiseKernelArgs args;
    args.in[0] = c.data(), args.inRowStride[0] = n;
    args.out = c.data(), args.outRowStride = n;
    args.rows = m, args.cols = n;
    pass->run(args);
  };
  const double ops = 2.0 * double(m) * double(n) * double(k);
  struct Row {
    const char *name;
    std::function<void()> f;
  } rows[] = {
      {"f32 bias", [&] { plain->run(a.data(), m, k, c.data(), n); }},
      {"f32 bias+gelu fused", [&] { withGelu->run(a.data(), m, k, c.data(), n); }},
      {"f32 bias, gelu pass",
       [&] {
         plain->run(a.data(), m, k, c.data(), n);
         geluPass();
       }},
      {"u8 bias", [&] { plainU8->run(a.data(), m, k, q.data(), n); }},
      {"u8 bias+gelu fused", [&] { geluU8->run(a.data(), m, k, q.data(), n); }},
      {"u8 bias, gelu pass + requant",
       [&] {
         plain->run(a.data(), m, k, c.data(), n);
         geluPass();
         requant.run(c.data(), q.data(), m * n, 0.05f, 10);
       }},
      {"u8 fast gelu x column fused",
       [&] { geluColumnU8->run(a.data(), m, k, q.data(), n, nullptr, 0, nullptr, columns); }},
  };
  std::printf(
      "Int8GemmDriver (VNNI) M=%lld K=%lld N=%lld, 1 thread, best of %d (thread CPU time)\n",
      (long long)m, (long long)k, (long long)n, reps);
  for (const Row &r : rows) {
    const double t = best(reps, r.f);
    std::printf("%-30s %8.3f ms %8.1f GOPS\n", r.name, t * 1e3, ops / t * 1e-9);
  }
  return 0;
}
