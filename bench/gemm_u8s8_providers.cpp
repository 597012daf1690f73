//===- gemm_u8s8_providers.cpp - JIT Int8GemmDriver vs oneDNN MatMulU8S8 --------===//
//
// The two INT8 GEMM providers on BERT-base shapes (K x N = 768x2304 QKV,
// 768x768 attention out, 768x3072 FFN in, 3072x768 FFN out; M = 128, 1024),
// a_zp 128, per-channel weight scales, on 1 and 2 threads, each with two
// epilogues:
//  - "bias":  bias, f32 output (the bare GEMM);
//  - "bert":  what BERT fuses there: QKV bias (f32); attention out and FFN
//             out bias + residual (f32, a distinct residual: oneDNN copies it
//             into C first); FFN in bias + GELU (erf) requantized to u8.
// The providers alternate run by run (same noise for both); each figure is
// the best of `reps` runs: noise on a shared host only adds time. Prints GOPS
// (2 int8 ops per MAC), the fraction of the vpdpbusd peak measured by
// runtime/Ceilings (cached per host and thread count) and jit/onednn time.
//   gemm_u8s8_providers [reps] [cpu]
// `cpu`: one-thread times are the thread's CPU time (oneDNN runs a 1-thread
// OpenMP team on the calling thread), so time slicing drops out.
//
//===----------------------------------------------------------------------===//
#include "bench/BertGemmData.h"
#include "compiler/codegen/onednn/MatMulU8S8.h"
#include "compiler/codegen/x86/Int8GemmDriver.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"
#include "runtime/Ceilings.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <time.h>
#include <vector>

namespace {
using namespace octet;

double seconds(const std::function<void()> &f, bool cpuTime) {
  if (cpuTime) {
    timespec start, end;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    f();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
    return double(end.tv_sec - start.tv_sec) + 1e-9 * double(end.tv_nsec - start.tv_nsec);
  }
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Best times of `a` and `b`, run alternately `reps` times after warm-up.
std::pair<double, double> bestOfAlternating(int reps, bool cpuTime, const std::function<void()> &a,
                                            const std::function<void()> &b) {
  for (int i = 0; i < 2; ++i)
    a(), b();
  double ta = 1e30, tb = 1e30;
  for (int i = 0; i < reps; ++i) {
    ta = std::min(ta, seconds(a, cpuTime));
    tb = std::min(tb, seconds(b, cpuTime));
  }
  return {ta, tb};
}

} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const bool cpuTime = argc > 2 && std::string(argv[2]) == "cpu";
  if (!x86::Int8GemmDriver::hostSupported()) {
    std::printf("host lacks AVX-512 VNNI: no JIT INT8 GEMM to compare with\n");
    return 0;
  }
  const int threadCounts[] = {1, 2};
  double peak[3] = {0, 0, 0};
  for (int t : threadCounts) {
    rt::Ceilings ceilings;
    if (rt::Status s = rt::loadOrMeasureCeilings(t, false, ceilings); !s.ok())
      std::printf("ceilings (%d threads): %s\n", t, s.message().c_str());
    peak[t] = ceilings.int8Gops;
    std::printf("vpdpbusd peak, %d thread(s): %.1f GOPS (%s)\n", t, peak[t],
                ceilings.int8Isa.c_str());
  }
  std::printf("times: best of %d, %s\n", reps,
              cpuTime ? "1 thread: thread CPU time, 2 threads: wall" : "wall");
  std::printf("%5s %5s %5s %2s %-22s | %8s %6s %4s | %8s %6s %4s | %s\n", "M", "K", "N", "t",
              "epilogue", "jit ms", "GOPS", "peak", "dnnl ms", "GOPS", "peak", "jit/onednn time");

  std::mt19937 gen(1);
  const std::unique_ptr<x86::ProgramEpilogue> gelu = bench::bertGeluEpilogue();
  std::string implementation;
  for (int64_t m : {128, 1024})
    for (auto [k, n] : bench::kBertGemmKN) {
      bench::BertGemmData data(m, k, n, gen);
      auto &[a, c, w, bias, residual, wScale] = data;
      const x86::PackedInt8 packed =
          x86::packInt8(octet::PackIsa::Avx512Vnni, w.data(), k, n, WeightLayout::KN);
      const bool ffnIn = n == 3072, residualBlock = n == 768;
      for (bool bert : {false, true}) {
        x86::Int8GemmParams jp;
        jp.aZeroPoint = 128;
        jp.xScale = 0.02f;
        jp.wScale = wScale;
        jp.bias = bias.data();
        onednn::MatMulU8S8Params dp;
        dp.aZeroPoint = jp.aZeroPoint;
        dp.xScale = jp.xScale;
        dp.wScale = wScale;
        dp.bias = bias.data();
        std::string name = "bias f32";
        if (bert && ffnIn) {
          jp.elementwise = gelu.get();
          jp.output = x86::QuantOutput::U8;
          jp.outScale = dp.outScale = 0.05f;
          jp.outZeroPoint = dp.outZeroPoint = 10;
          dp.gelu = onednn::U8S8Gelu::Erf;
          dp.output = onednn::U8S8Output::U8;
          name = "bias+gelu_erf u8";
        } else if (bert && residualBlock) {
          jp.residual = dp.residual = true;
          name = "bias+residual f32";
        } else if (bert) {
          continue; // QKV: "bert" is "bias f32"
        }
        const x86::Int8GemmDriver jit(packed, jp);
        std::unique_ptr<onednn::MatMulU8S8> dnn;
        if (onednn::Status s =
                onednn::MatMulU8S8::create(n, k, w.data(), WeightLayout::KN, dp, dnn);
            !s.ok()) {
          std::fprintf(stderr, "%s\n", s.message().c_str());
          return 1;
        }
        implementation = dnn->implementation();
        const float *res = jp.residual ? residual.data() : nullptr;
        auto runJit = [&] { jit.run(a.data(), m, k, c.data(), n, res, n); };
        auto runDnn = [&] {
          if (!dnn->run(a.data(), m, k, c.data(), n, res, n).ok())
            std::abort();
        };
        const double ops = 2.0 * m * n * k;
        for (int t : threadCounts) {
          omp_set_num_threads(t);
          auto [tj, td] = bestOfAlternating(reps, cpuTime && t == 1, runJit, runDnn);
          const double gj = ops / tj / 1e9, gd = ops / td / 1e9;
          std::printf(
              "%5ld %5ld %5ld %2d %-22s | %8.3f %6.1f %3.0f%% | %8.3f %6.1f %3.0f%% | %.2f\n",
              long(m), long(k), long(n), t, name.c_str(), tj * 1e3, gj,
              peak[t] > 0 ? 100 * gj / peak[t] : 0.0, td * 1e3, gd,
              peak[t] > 0 ? 100 * gd / peak[t] : 0.0, tj / td);
          std::fflush(stdout);
        }
      }
    }
  std::printf("oneDNN implementation: %s\n", implementation.c_str());
  return 0;
}
