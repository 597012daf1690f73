//===- gemm_u8s8_amx.cpp - the INT8 driver on AMX vs on VNNI kernels -----===//
//
// The AMX INT8 GEMM on BERT-base shapes (K x N = 768x2304 QKV, 768x768
// attention out, 768x3072 FFN in, 3072x768 FFN out; M = 128, 1024) with the
// epilogues BERT fuses there (QKV: bias, f32; attention out and FFN out:
// bias + residual, f32; FFN in: bias + GELU (erf) requantized to u8), against
// the VNNI kernel with the same parameters, alternating run by run so both see
// the same noise; each figure is the best of `reps` runs. Prints GOPS (2 ops
// per MAC), the fraction of the tdpbusd peak runtime/Ceilings measures on
// this host, and amx/vnni time.
//   gemm_u8s8_amx [reps] [threads]
//
//===----------------------------------------------------------------------===//
#include "bench/BertGemmData.h"
#include "compiler/codegen/x86/Int8GemmDriver.h"
#include "compiler/codegen/x86/Int8GemmKernelAmx.h"
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
#include <vector>

namespace {
using namespace octet;

double seconds(const std::function<void()> &f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int threads = argc > 2 ? std::atoi(argv[2]) : omp_get_max_threads();
  std::string why;
  if (!x86::amxUsable(&why)) {
    std::printf("AMX not usable here: %s\n", why.c_str());
    return 0;
  }
  omp_set_num_threads(threads);
  rt::Ceilings ceilings;
  if (rt::Status s = rt::loadOrMeasureCeilings(threads, false, ceilings); !s.ok())
    std::printf("ceilings: %s\n", s.message().c_str());
  const double peak = ceilings.amxInt8Gops;
  std::printf("tdpbusd peak, %d thread(s): %.1f GOPS; vpdpbusd peak %.1f GOPS\n", threads, peak,
              ceilings.int8Gops);
  std::printf("%5s %5s %5s %-18s | %8s %7s %5s | %8s %7s | %s\n", "M", "K", "N", "epilogue",
              "amx ms", "GOPS", "peak", "vnni ms", "GOPS", "amx/vnni time");
  std::mt19937 gen(1);
  const std::unique_ptr<x86::ProgramEpilogue> gelu =
      bench::bertGeluEpilogue(x86::GeluAccuracy::ForRequantize);
  for (int64_t m : {128, 1024})
    for (auto [k, n] : bench::kBertGemmKN) {
      bench::BertGemmData data(m, k, n, gen);
      auto &[a, c, w, bias, residual, wScale] = data;
      x86::Int8GemmParams p;
      p.aZeroPoint = 128;
      p.xScale = 0.02f;
      p.wScale = wScale;
      p.bias = bias.data();
      std::string name = "bias f32";
      if (n == 3072) {
        p.elementwise = gelu.get();
        p.output = x86::QuantOutput::U8;
        p.outScale = 0.05f;
        p.outZeroPoint = 10;
        name = "bias+gelu u8";
      } else if (n == 768) {
        p.residual = true;
        name = "bias+residual f32";
      }
      const x86::PackedInt8 packedAmx =
          x86::packInt8(octet::PackIsa::Amx, w.data(), k, n, WeightLayout::KN);
      const x86::PackedInt8 packedVnni =
          x86::packInt8(octet::PackIsa::Avx512Vnni, w.data(), k, n, WeightLayout::KN);
      const x86::Int8GemmDriver amx(packedAmx, p);
      const x86::Int8GemmDriver vnni(packedVnni, p);
      const float *res = p.residual ? residual.data() : nullptr;
      auto runAmx = [&] { amx.run(a.data(), m, k, c.data(), n, res, n); };
      auto runVnni = [&] { vnni.run(a.data(), m, k, c.data(), n, res, n); };
      for (int i = 0; i < 2; ++i)
        runAmx(), runVnni();
      double ta = 1e30, tv = 1e30;
      for (int i = 0; i < reps; ++i) {
        ta = std::min(ta, seconds(runAmx));
        tv = std::min(tv, seconds(runVnni));
      }
      const double ops = 2.0 * m * n * k;
      std::printf("%5ld %5ld %5ld %-18s | %8.3f %7.1f %4.0f%% | %8.3f %7.1f | %.2f\n", long(m),
                  long(k), long(n), name.c_str(), ta * 1e3, ops / ta / 1e9,
                  peak > 0 ? 100 * ops / ta / 1e9 / peak : 0.0, tv * 1e3, ops / tv / 1e9, ta / tv);
      std::fflush(stdout);
    }
  return 0;
}
