//===- gemm_f32_providers.cpp - JIT GemmF32 vs oneDNN MatMulF32 -----------===//
//
// C[M, N] = A[M, K] * W + bias on BERT-base shapes, both FP32 providers, with
// OpenMP's thread count (OMP_NUM_THREADS). Prints one line per shape: the
// median of `reps` runs after warm-up, in ms and GFLOP/s, and the ratio.
//   gemm_f32_providers [reps]
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/onednn/MatMulF32.h"
#include "compiler/codegen/x86/GemmF32.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

namespace {
double medianMs(int reps, const std::function<void()> &f) {
  for (int i = 0; i < 3; ++i)
    f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const auto &cpu = octet::x86::CpuFeatures::host();
  const bool jit = cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl;
  std::printf("threads %d, AVX-512 %s\n", omp_get_max_threads(), jit ? "yes" : "no");
  std::printf("%6s %6s %6s | %9s %8s | %9s %8s | %s\n", "M", "K", "N", "jit ms", "GF/s",
              "onednn ms", "GF/s", "jit/onednn time");
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t kn[][2] = {{768, 768}, {768, 2304}, {768, 3072}, {3072, 768}};
  for (int64_t m : {128, 1024})
    for (auto [k, n] : kn) {
      std::vector<float> a(m * k), w(k * n), bias(n), c(m * n);
      for (float &x : a)
        x = dist(gen);
      for (float &x : w)
        x = dist(gen);
      for (float &x : bias)
        x = dist(gen);
      const double flops = 2.0 * m * n * k;
      double jitMs = 0;
      if (jit) {
        octet::x86::PackedWeights packed =
            octet::x86::packB(w.data(), k, n, octet::WeightLayout::KN);
        octet::x86::GemmF32 gemm(n, k, packed.data(), {}, bias.data());
        jitMs = medianMs(reps, [&] { gemm.run(a.data(), m, k, c.data(), n); });
      }
      std::unique_ptr<octet::onednn::MatMulF32> mm;
      if (!octet::onednn::MatMulF32::create(n, k, w.data(), octet::WeightLayout::KN, bias.data(),
                                            false, mm)
               .ok())
        return 1;
      const double dnnMs = medianMs(reps, [&] {
        if (!mm->run(a.data(), m, k, c.data(), n).ok())
          std::abort();
      });
      std::printf("%6ld %6ld %6ld | %9.3f %8.1f | %9.3f %8.1f | %.2f\n", long(m), long(k), long(n),
                  jitMs, jit ? flops / jitMs / 1e6 : 0.0, dnnMs, flops / dnnMs / 1e6,
                  jit ? jitMs / dnnMs : 0.0);
    }
  return 0;
}
