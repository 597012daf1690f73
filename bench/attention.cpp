//===- attention.cpp - the attention step against alternatives ------------===//
//
//   bench_attention [cpu]     (cpu: process CPU time instead of wall time)
// BERT-base heads (H = 12, D = 64), q/k/v slices of one [B, S, 2304] buffer,
// mask [B, 1, 1, S], B in {1, 8}, S in {128, 384}; best of repeated runs of
//  - step.jit: makeAttention with the JIT kernels (per (b, h): Q·Kᵀ, softmax, P·V
//    in a per-thread scores tile);
//  - step.int8: the same step's int8 path (Q·Kᵀ and P·V on vpdpbusd, operands
//    quantized per row and key at run time; docs/attention-int8.md), on AVX-512 VNNI;
//  - step.bf16: its bf16 path (AMX-BF16 tiles, or vdpbf16ps without AMX), where the
//    host has AVX512-BF16 (docs/attention-bf16.md);
//  - step.cpp: the same step with the compiled C++ kernels (allowAvx512 = false);
//  - onednn:   the straightforward alternative: two batched oneDNN matmuls over
//    strided [B, H, S, D] views with the whole [B, H, S, S] scores tensor in
//    memory, and the same JIT softmax over its rows in between.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/AttentionKernels.h"
#include "runtime/Steps.h"
#include "test/unit/PlanTestUtil.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>
#include <string>

namespace octet::rt {
namespace {

/// `cpu` on the command line: process CPU time instead of wall time (with
/// OMP_NUM_THREADS=1 on a shared host, this leaves out the time others ran).
bool useCpuClock = false;
bool cpuClock() { return useCpuClock; }

/// A failed check: the figures would be meaningless, so the run stops.
void check(bool ok, const std::string &what) {
  if (!ok) {
    std::fprintf(stderr, "bench_attention: %s\n", what.c_str());
    std::exit(1);
  }
}

double nowMs(bool cpu) {
  timespec ts;
  clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

double bestMs(const std::function<void()> &fn, int repeats) {
  fn(); // warm up: first-touch of scratch, caches
  const bool cpu = cpuClock();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    double t0 = nowMs(cpu);
    fn();
    ms.push_back(nowMs(cpu) - t0);
  }
  // The fastest run: the host may be shared, and interference only adds time.
  return *std::min_element(ms.begin(), ms.end());
}

void benchBertBaseShapes() {
  const bool jit = x86::CpuFeatures::host().supports(x86::Isa::Avx512);
  const int64_t H = 12, D = 64, W = H * D;
  const float scale = 0.125f;
  std::printf("threads %d, AVX-512 %s, %s time\n", omp_get_max_threads(), jit ? "yes" : "no",
              cpuClock() ? "CPU" : "wall");
  const bool int8 = x86::CpuFeatures::host().supports(x86::Isa::Avx512Vnni);
  const bool bf16 = x86::CpuFeatures::host().supports(x86::Isa::Avx512Bf16);
  std::printf("%-4s %-5s %12s %12s %12s %12s %12s   (ms, best of runs; GOP/s in brackets)\n", "B",
              "S", "step.jit", "step.int8", "step.bf16", "step.cpp", "onednn");
  for (int64_t B : {1, 8})
    for (int64_t S : {128, 384}) {
      std::mt19937 rng(42);
      std::uniform_real_distribution<float> u(-1, 1);
      std::vector<float> qkv(size_t(B * S * 3 * W)), mask(size_t(B * S), 0.0f),
          out(size_t(B * S * W));
      for (float &x : qkv)
        x = u(rng);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = S - S / 4; t < S; ++t)
          mask[size_t(b * S + t)] = -10000.0f;

      test::BoundPlan bp;
      TensorId base = bp.tensor("qkv", {B, S, 3 * W}, qkv.data());
      std::vector<int64_t> strides = {S * 3 * W, 3 * W, 1};
      AttentionSpec spec;
      spec.q = bp.view("q", base, {B, S, W}, strides, 0, qkv.data());
      spec.k = bp.view("k", base, {B, S, W}, strides, W, qkv.data() + W);
      spec.v = bp.view("v", base, {B, S, W}, strides, 2 * W, qkv.data() + 2 * W);
      spec.mask = bp.tensor("mask", {B, 1, 1, S}, mask.data());
      spec.output = bp.tensor("out", {B, S, W}, out.data(), Storage::Output);
      spec.numHeads = H, spec.scale = scale;
      ExecContext ctx = bp.context();
      const int repeats = S * B > 1000 ? 10 : 30;
      auto timeStep = [&](bool allowAvx512, AttentionPrecision precision) {
        KernelOptions options;
        options.allowAvx512 = allowAvx512;
        std::string error;
        AttentionSpec withPrecision = spec;
        withPrecision.precision = precision;
        StepPtr step = makeAttention(withPrecision, options, error);
        check(step != nullptr, "makeAttention: " + error);
        return bestMs([&] { check(step->run(ctx).ok(), "the attention step failed"); }, repeats);
      };
      double msInt8 = int8 ? timeStep(true, AttentionPrecision::Int8) : 0;
      std::vector<float> int8Out = out;
      double msBf16 = bf16 ? timeStep(true, AttentionPrecision::Bf16) : 0;
      double msJit = jit ? timeStep(true, AttentionPrecision::F32) : 0;
      std::vector<float> expected = out;
      double msCpp = timeStep(false, AttentionPrecision::F32);

      // oneDNN: scores[B,H,S,S] = scale · Q·Kᵀ; softmax(+mask) rows; out = P·V.
      using dnnl::memory;
      dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      dnnl::stream stream(engine);
      const memory::dims qDims = {B, H, S, D}, qStrides = {S * 3 * W, D, 3 * W, 1};
      memory::desc qMd(qDims, memory::data_type::f32, qStrides);
      memory::desc kTMd({B, H, D, S}, memory::data_type::f32, {S * 3 * W, D, 1, 3 * W});
      memory::desc scoresMd({B, H, S, S}, memory::data_type::f32, memory::format_tag::abcd);
      memory::desc outMd(qDims, memory::data_type::f32, {S * W, D, W, 1});
      dnnl::primitive_attr scaled;
      scaled.set_output_scales(0, {scale});
      dnnl::matmul qk(
          dnnl::matmul::primitive_desc(dnnl::matmul::desc(qMd, kTMd, scoresMd), scaled, engine));
      dnnl::matmul pv(
          dnnl::matmul::primitive_desc(dnnl::matmul::desc(scoresMd, qMd, outMd), engine));
      std::vector<float> scores(size_t(B * H * S * S));
      memory qMem(qMd, engine, qkv.data()), kMem(kTMd, engine, qkv.data() + W),
          vMem(qMd, engine, qkv.data() + 2 * W), sMem(scoresMd, engine, scores.data()),
          oMem(outMd, engine, out.data());
      x86::AttentionSoftmaxKernel softmaxKernel(true);
      auto softmaxFn = jit ? softmaxKernel.entry<x86::AttentionSoftmaxKernel::Fn>() : nullptr;
      double msDnnl = bestMs(
          [&] {
            qk.execute(stream,
                       {{DNNL_ARG_SRC, qMem}, {DNNL_ARG_WEIGHTS, kMem}, {DNNL_ARG_DST, sMem}});
            stream.wait();
#pragma omp parallel for
            for (int64_t bh = 0; bh < B * H; ++bh) {
              x86::AttentionSoftmaxArgs args;
              args.x = scores.data() + bh * S * S, args.ldx = S, args.rows = S, args.n = S;
              args.mask = mask.data() + (bh / H) * S, args.ldMask = 0, args.scale = 1;
              softmaxFn ? softmaxFn(&args) : x86::attentionSoftmaxReference(args);
            }
            pv.execute(stream,
                       {{DNNL_ARG_SRC, sMem}, {DNNL_ARG_WEIGHTS, vMem}, {DNNL_ARG_DST, oMem}});
            stream.wait();
          },
          repeats);
      double worst = 0;
      for (size_t i = 0; i < out.size(); ++i)
        worst = std::max(worst, double(std::abs(out[i] - expected[i])));
      check(worst < 1e-4, "oneDNN and the step disagree by " + std::to_string(worst));
      if (int8) {
        double far = 0;
        for (size_t i = 0; i < out.size(); ++i)
          far = std::max(far, double(std::abs(int8Out[i] - expected[i])));
        check(far < 2e-2, "the int8 step is " + std::to_string(far) + " from f32");
      }

      const double gflop = 4.0 * B * H * S * S * D * 1e-9;
      auto rate = [&](double ms) { return ms > 0 ? gflop / ms * 1e3 : 0.0; };
      std::printf(
          "%-4lld %-5lld %6.2f [%4.0f] %6.2f [%4.0f] %6.2f [%4.0f] %6.2f [%4.0f] %6.2f [%4.0f]\n",
          (long long)B, (long long)S, msJit, rate(msJit), msInt8, rate(msInt8), msBf16,
          rate(msBf16), msCpp, rate(msCpp), msDnnl, rate(msDnnl));
    }
}

} // namespace
} // namespace octet::rt

int main(int argc, char **argv) {
  if (argc > 2 || (argc == 2 && std::string(argv[1]) != "cpu")) {
    std::fprintf(stderr, "usage: bench_attention [cpu]\n");
    return 2;
  }
  octet::rt::useCpuClock = argc == 2;
  octet::rt::benchBertBaseShapes();
  return 0;
}
