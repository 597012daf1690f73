//===- gemm_bf16.cpp - GemmBf16 (vdpbf16ps) against GemmF32 on BERT shapes -===//
//
// C[M, N] = A[M, K] * W + bias on BERT-base shapes: the JIT f32 GEMM and the
// bf16 GEMM of --precision bf16 (docs/kernel-selection.md, "bf16 linears"),
// interleaved per repetition so a busy machine slows both alike, with OpenMP's
// thread count (OMP_NUM_THREADS). One line per shape: medians in ms and
// GOP/s (2·M·N·K per run), and the bf16 / f32 time ratio.
//   gemm_bf16 [reps]
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/GemmBf16.h"
#include "compiler/codegen/x86/GemmF32.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {
template <typename F> double timeMs(F f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
} // namespace

int main(int argc, char **argv) {
  using namespace octet::x86;
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  if (!GemmBf16::hostSupported()) {
    std::printf("this CPU lacks AVX512-BF16 (has: %s)\n", CpuFeatures::host().describe().c_str());
    return 1;
  }
  std::printf("threads %d; median of %d interleaved runs\n", omp_get_max_threads(), reps);
  std::printf("%6s %6s %6s | %9s %8s | %9s %8s | %s\n", "M", "K", "N", "f32 ms", "GOP/s",
              "bf16 ms", "GOP/s", "bf16/f32 time");
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t kn[][2] = {{768, 768}, {768, 2304}, {768, 3072}, {3072, 768}};
  for (int64_t m : {128, 1024})
    for (auto [k, n] : kn) {
      std::vector<float> a(m * k), w(k * n), bias(n), c(m * n);
      for (std::vector<float> *v : {&a, &w, &bias})
        for (float &x : *v)
          x = dist(gen);
      PackedWeights packed = packB(w.data(), k, n, WeightLayout::KN);
      PackedBf16Weights panels = packBf16(w.data(), k, n, WeightLayout::KN);
      GemmF32 f32(n, k, packed.data(), {}, bias.data());
      GemmBf16 bf16(n, k, panels.data(), {}, bias.data());
      std::vector<double> tf, tb;
      for (int i = 0; i < reps + 2; ++i) {
        const double f = timeMs([&] { f32.run(a.data(), m, k, c.data(), n); });
        const double b = timeMs([&] { bf16.run(a.data(), m, k, c.data(), n); });
        if (i >= 2) // warm-up: pages, caches
          tf.push_back(f), tb.push_back(b);
      }
      const double gop = 2.0 * double(m) * double(n) * double(k) * 1e-9;
      const double f = median(tf), b = median(tb);
      std::printf("%6lld %6lld %6lld | %9.3f %8.1f | %9.3f %8.1f | %.2f\n", (long long)m,
                  (long long)k, (long long)n, f, gop / f * 1e3, b, gop / b * 1e3, b / f);
    }
  return 0;
}
