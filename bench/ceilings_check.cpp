//===- ceilings_check.cpp - Octet's ceilings against plain C++ loops ------===//
//
// An independent measure of the roofline ceilings (runtime/Ceilings.h): the
// same quantities with hand-written, intrinsic-free C++ (GCC vector
// extensions, compiled for the host), interleaved with Octet's JIT
// measurement in one process, best of several rounds each:
//  - FP32 FMA: 12 independent accumulators of 16 floats, acc = acc * a + b;
//  - read bandwidth: a sum over per-thread buffers with 8 vector accumulators,
//    at the same buffer sizes Octet used.
//
//   ceilings_check [--threads N] [--rounds R]
//
// Prints both and their ratio; exits 1 if any differs by more than 10%.
//
//===----------------------------------------------------------------------===//
#include "runtime/Ceilings.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

typedef float Vec __attribute__((vector_size(64)));
using Clock = std::chrono::steady_clock;
constexpr int kAccumulators = 12;


volatile float sink;

__attribute__((noinline)) void fmaLoop(int64_t iterations, float a, float b) {
  Vec acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    acc[i] = Vec{} + float(i) * 1e-3f;
  const Vec va = Vec{} + a, vb = Vec{} + b;
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < kAccumulators; ++i)
      acc[i] = acc[i] * va + vb; // one FMA (-ffp-contract=fast, GCC's default)
  Vec total = Vec{};
  for (int i = 0; i < kAccumulators; ++i)
    total += acc[i];
  float sum = 0;
  for (int l = 0; l < 16; ++l)
    sum += total[l];
  sink = sum;
}

double fmaGflops(int threads) {
  const float a = 0.999f, b = 1e-4f; // stays bounded: no overflow, no denormals
  int64_t iterations = 1 << 16;
  for (;;) { // calibrate to about 10 ms on one thread, as Octet does
    auto start = Clock::now();
    fmaLoop(iterations, a, b);
    double took = std::chrono::duration<double>(Clock::now() - start).count();
    if (took > 0.002) {
      iterations = int64_t(double(iterations) * 0.01 / took);
      break;
    }
    iterations *= 4;
  }
  double seconds = octet::rt::bestParallelSeconds(threads, 15, [&](int) { fmaLoop(iterations, a, b); });
  return double(threads) * double(iterations) * kAccumulators * 16 * 2 / seconds / 1e9;
}

__attribute__((noinline)) float sumLoop(const Vec *data, int64_t vectors, int64_t passes) {
  Vec acc[8] = {};
  for (int64_t p = 0; p < passes; ++p)
    for (int64_t i = 0; i < vectors; i += 8)
      for (int j = 0; j < 8; ++j)
        acc[j] += data[i + j];
  Vec total = Vec{};
  for (int j = 0; j < 8; ++j)
    total += acc[j];
  float sum = 0;
  for (int l = 0; l < 16; ++l)
    sum += total[l];
  return sum;
}

double readGBs(int threads, int64_t perThreadBytes) {
  perThreadBytes = std::max<int64_t>(512, perThreadBytes / 512 * 512);
  std::vector<Vec *> buffers(threads, nullptr);
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num();
    auto *p = static_cast<Vec *>(std::aligned_alloc(4096, size_t(perThreadBytes)));
    if (p)
      std::memset(p, 0, size_t(perThreadBytes));
    buffers[t] = p;
  }
  for (Vec *p : buffers)
    if (!p) {
      std::fprintf(stderr, "out of memory\n");
      std::exit(2);
    }
  const int64_t vectors = perThreadBytes / 64;
  const int64_t passes = std::max<int64_t>(2, int64_t(0.01 * 50e9 / double(perThreadBytes)));
  double seconds = octet::rt::bestParallelSeconds(threads, passes > 2 ? 15 : 7, [&](int t) {
    float s = sumLoop(buffers[t], vectors, passes);
    if (s == 12345.0f)
      sink = s;
  });
  for (Vec *p : buffers)
    std::free(p);
  return double(threads) * double(perThreadBytes) * double(passes) / seconds / 1e9;
}

} // namespace

int main(int argc, char **argv) {
  int threads = omp_get_max_threads(), rounds = 3;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (arg == "--rounds" && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: ceilings_check [--threads N] [--rounds R]\n");
      return 2;
    }
  }
  if (threads < 1 || rounds < 1) {
    std::fprintf(stderr, "error: --threads and --rounds must be positive\n");
    return 2;
  }
  // Interleaved rounds, best of each: both see the same machine load.
  octet::rt::Ceilings best;
  double fma = 0, l2 = 0, l3 = 0, dram = 0;
  for (int r = 0; r < rounds; ++r) {
    octet::rt::Ceilings c = octet::rt::measureCeilings(threads, 1);
    best.fp32Gflops = std::max(best.fp32Gflops, c.fp32Gflops);
    best.l2GBs = std::max(best.l2GBs, c.l2GBs);
    best.l3GBs = std::max(best.l3GBs, c.l3GBs);
    best.dramGBs = std::max(best.dramGBs, c.dramGBs);
    best.l2BufferBytes = c.l2BufferBytes, best.l3BufferBytes = c.l3BufferBytes;
    best.dramBufferBytes = c.dramBufferBytes, best.fp32Isa = c.fp32Isa, best.cpu = c.cpu;
    fma = std::max(fma, fmaGflops(threads));
    l2 = std::max(l2, readGBs(threads, c.l2BufferBytes / threads));
    l3 = std::max(l3, readGBs(threads, c.l3BufferBytes / threads));
    dram = std::max(dram, readGBs(threads, c.dramBufferBytes / threads));
  }
  std::printf("%s, %d thread(s), best of %d rounds\n", best.cpu.c_str(), threads, rounds);
  std::printf("%-26s %12s %12s %8s\n", "ceiling", "octet (JIT)", "plain C++", "ratio");
  bool ok = true;
  auto row = [&](const char *name, double octet, double plain) {
    double ratio = octet / plain;
    ok &= std::fabs(ratio - 1) <= 0.10;
    std::printf("%-26s %12.1f %12.1f %8.3f%s\n", name, octet, plain, ratio,
                std::fabs(ratio - 1) <= 0.10 ? "" : "  (> 10% apart)");
  };
  row(("fp32 FMA GFLOP/s (" + best.fp32Isa + ")").c_str(), best.fp32Gflops, fma);
  row(("read L2 GB/s (" + std::to_string(best.l2BufferBytes >> 10) + " KiB)").c_str(), best.l2GBs,
      l2);
  row(("read L3 GB/s (" + std::to_string(best.l3BufferBytes >> 20) + " MiB)").c_str(), best.l3GBs,
      l3);
  row(("read DRAM GB/s (" + std::to_string(best.dramBufferBytes >> 20) + " MiB)").c_str(),
      best.dramGBs, dram);
  return ok ? 0 : 1;
}
