//===- QuantizeKernels.cpp ------------------------------------------------===//
#include "compiler/codegen/x86/QuantizeKernels.h"

#include "compiler/codegen/x86/VectorMathAvx2.h" // avx2::hostSupported

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>

namespace octet::x86 {
using namespace Xbyak;

namespace {
uint32_t tailMaskOf(int64_t n) { return (1u << (n % 16)) - 1; }
// vcmpps predicate: unordered (either operand NaN).
constexpr uint8_t kUnord = 3;
} // namespace

bool quantizeKernelsSupported() {
  static const bool supported = CpuFeatures::host().supports(Isa::Avx512);
  return supported;
}

namespace {
// The kernels are generated for any target (a model.so compiled on this host
// for another CPU); they refuse to run where they cannot.
void requireHost(const char *kernel) {
  if (!quantizeKernelsSupported())
    throw std::runtime_error(std::string(kernel) +
                             ": cannot run on this host: it lacks AVX-512 F/BW/DQ/VL (host has: " +
                             CpuFeatures::host().describe() + ")");
}
} // namespace

float quantizeRowScalar(const float *x, int64_t cols, uint8_t *q) {
  float absMax = 0.0f;
  for (int64_t j = 0; j < cols; ++j)
    absMax = std::max(absMax, std::fabs(x[j])); // a NaN never wins
  const float scale = absMax == 0.0f ? 1.0f : absMax / 127.0f;
  for (int64_t j = 0; j < cols; ++j) {
    const float v = std::nearbyint(x[j] / scale);
    q[j] = std::isnan(v) ? 128 : uint8_t(int32_t(std::clamp(v, -127.0f, 127.0f)) + 128);
  }
  return scale;
}

namespace {
/// quantizeScalar 8 lanes at a time over the whole vectors of the row;
/// returns how many elements it wrote (a multiple of 8).
__attribute__((target("avx2"))) int64_t quantizeRowAvx2(const float *x, uint8_t *q, int64_t count,
                                                        float scale, int32_t zp, int32_t lo,
                                                        int32_t hi) {
  const __m256 vs = _mm256_set1_ps(scale), vz = _mm256_set1_ps(float(zp));
  const __m256 vlo = _mm256_set1_ps(float(lo)), vhi = _mm256_set1_ps(float(hi));
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 r = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), vs),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 v = _mm256_add_ps(r, vz);
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    // max(v, lo) is lo for a NaN v; the blend then makes it zp.
    const __m256 clamped = _mm256_blendv_ps(_mm256_min_ps(_mm256_max_ps(v, vlo), vhi), vz, nan);
    // Integral values in [lo, hi]: the packs saturate nothing.
    const __m256i words = _mm256_packs_epi32(_mm256_cvtps_epi32(clamped), _mm256_setzero_si256());
    const __m256i bytes =
        lo < 0 ? _mm256_packs_epi16(words, words) : _mm256_packus_epi16(words, words);
    const uint32_t low = uint32_t(_mm256_extract_epi32(bytes, 0));
    const uint32_t high = uint32_t(_mm256_extract_epi32(bytes, 4));
    std::memcpy(q + i, &low, 4);
    std::memcpy(q + i + 4, &high, 4);
  }
  return i;
}
} // namespace

void quantizeRowCompiled(const float *x, void *q, int64_t count, float scale, int32_t zp,
                         int32_t lo, int32_t hi) {
  auto *bytes = static_cast<uint8_t *>(q);
  int64_t i = avx2::hostSupported() ? quantizeRowAvx2(x, bytes, count, scale, zp, lo, hi) : 0;
  for (; i < count; ++i)
    bytes[i] = uint8_t(quantizeScalar(x[i], scale, zp, lo, hi));
}

// ---- QuantizePerRowKernel ----------------------------------------------------

QuantizePerRowKernel::QuantizePerRowKernel()
    : KernelGenerator("quantize_per_row_u8_avx512", Isa::Avx512, 4096) {
  fn_ = entry<Fn>();
}

void QuantizePerRowKernel::run(QuantizePerRowArgs args) const {
  if (args.rows <= 0 || args.cols <= 0)
    return;
  requireHost("QuantizePerRowKernel");
  args.vectors = args.cols / 16;
  args.tailMask = tailMaskOf(args.cols);
  fn_(&args);
}

void QuantizePerRowKernel::generate() {
  Label constants, rowLoop, maxLoop4, maxLoop1, maxTail, reduce, qLoop, qTail, next;
  enum { kAbsMask, k127, kOne, kLow, kHigh, k128 };
  auto constant = [&](int i) { return dword[rip + constants + 4 * i]; };
  const Reg64 x = rsi, q = rdx, scale = rcx, rows = r8, vectors = r9, ldx = r10, ldq = r11;
  const Reg64 px = rax, pq = r12, count = r13;
  const Zmm zS(16), zLo(17), zHi(18), z128(19), zAbs(20), zT(21), zI(22);
  const Opmask kTail = k1, kNan = k2;

  preamble();
  mov(x, ptr[rdi + offsetof(QuantizePerRowArgs, x)]);
  mov(q, ptr[rdi + offsetof(QuantizePerRowArgs, q)]);
  mov(scale, ptr[rdi + offsetof(QuantizePerRowArgs, scale)]);
  mov(rows, ptr[rdi + offsetof(QuantizePerRowArgs, rows)]);
  mov(vectors, ptr[rdi + offsetof(QuantizePerRowArgs, vectors)]);
  mov(ldx, ptr[rdi + offsetof(QuantizePerRowArgs, ldx)]);
  shl(ldx, 2);
  mov(ldq, ptr[rdi + offsetof(QuantizePerRowArgs, ldq)]);
  mov(eax, dword[rdi + offsetof(QuantizePerRowArgs, tailMask)]);
  kmovw(kTail, eax);
  vbroadcastss(zAbs, constant(kAbsMask));
  vbroadcastss(zLo, constant(kLow));
  vbroadcastss(zHi, constant(kHigh));
  vpbroadcastd(z128, constant(k128));

  L(rowLoop);
  // absmax: |x| = x & 0x7fffffff; vmaxps(acc, |x|, acc) returns acc (its
  // second operand) when |x| is NaN, so NaN never enters the max.
  for (int i = 0; i < 4; ++i)
    vxorps(Zmm(i), Zmm(i), Zmm(i));
  mov(px, x);
  mov(count, vectors);
  L(maxLoop4);
  cmp(count, 4);
  jl(maxLoop1, T_NEAR);
  for (int i = 0; i < 4; ++i) {
    vandps(Zmm(4 + i), zAbs, zword[px + 64 * i]);
    vmaxps(Zmm(i), Zmm(4 + i), Zmm(i));
  }
  add(px, 256);
  sub(count, 4);
  jmp(maxLoop4, T_NEAR);
  L(maxLoop1);
  test(count, count);
  jz(maxTail, T_NEAR);
  vandps(Zmm(4), zAbs, zword[px]);
  vmaxps(Zmm(0), Zmm(4), Zmm(0));
  add(px, 64);
  dec(count);
  jmp(maxLoop1, T_NEAR);
  L(maxTail);
  kortestw(kTail, kTail);
  jz(reduce, T_NEAR);
  vmovups(Zmm(4) | kTail | T_z, zword[px]); // masked-off lanes read as 0
  vandps(Zmm(4), Zmm(4), zAbs);
  vmaxps(Zmm(0), Zmm(4), Zmm(0));
  L(reduce);
  // No NaN is left: the reduction order does not matter.
  vmaxps(Zmm(0), Zmm(0), Zmm(1));
  vmaxps(Zmm(2), Zmm(2), Zmm(3));
  vmaxps(Zmm(0), Zmm(0), Zmm(2));
  vextractf32x8(Ymm(1), Zmm(0), 1);
  vmaxps(Ymm(0), Ymm(0), Ymm(1));
  vextractf128(Xmm(1), Ymm(0), 1);
  vmaxps(Xmm(0), Xmm(0), Xmm(1));
  vshufps(Xmm(1), Xmm(0), Xmm(0), 0x4E);
  vmaxps(Xmm(0), Xmm(0), Xmm(1));
  vshufps(Xmm(1), Xmm(0), Xmm(0), 0xB1);
  vmaxps(Xmm(0), Xmm(0), Xmm(1));
  // s = absmax / 127, or 1 when absmax is 0.
  vdivss(Xmm(2), Xmm(0), ptr[rip + constants + 4 * k127]);
  vxorps(Xmm(4), Xmm(4), Xmm(4));
  vcmpeqss(Xmm(3), Xmm(0), Xmm(4));
  vmovss(Xmm(5), ptr[rip + constants + 4 * kOne]);
  vblendvps(Xmm(2), Xmm(2), Xmm(5), Xmm(3));
  vmovss(dword[scale], Xmm(2));
  vbroadcastss(zS, Xmm(2));

  // q = clamp(RNE(x / s), -127, 127) + 128; NaN lanes become 0 before the shift.
  auto quantize = [&](const Address &src, bool tail) {
    if (tail)
      vmovups(zT | kTail | T_z, src);
    else
      vmovups(zT, src);
    vdivps(zT, zT, zS);
    vcmpps(kNan, zT, zT, kUnord);
    vmaxps(zT, zT, zLo);
    vminps(zT, zT, zHi);
    vxorps(zT | kNan, zT, zT);
    vcvtps2dq(zI, zT); // MXCSR's default rounding: to nearest even
    vpaddd(zI, zI, z128);
  };
  mov(px, x);
  mov(pq, q);
  mov(count, vectors);
  L(qLoop);
  test(count, count);
  jz(qTail, T_NEAR);
  quantize(zword[px], false);
  vpmovusdb(xword[pq], zI);
  add(px, 64);
  add(pq, 16);
  dec(count);
  jmp(qLoop, T_NEAR);
  L(qTail);
  kortestw(kTail, kTail);
  jz(next, T_NEAR);
  quantize(zword[px], true);
  vpmovusdb(xword[pq] | kTail, zI);
  L(next);
  add(x, ldx);
  add(q, ldq);
  add(scale, 4);
  dec(rows);
  jnz(rowLoop, T_NEAR);
  postamble();

  align(64);
  L(constants);
  for (uint32_t w :
       {0x7fffffffu, bitsOf(127.0f), bitsOf(1.0f), bitsOf(-127.0f), bitsOf(127.0f), 128u})
    dd(w);
}

// ---- QuantizeKernel ----------------------------------------------------------

// The names are part of an AOT image's kernel table: an image whose kernel
// divides never replays into a step that passes the reciprocal.
QuantizeKernel::QuantizeKernel(QuantOutput output, QuantizeDivision division)
    : KernelGenerator(std::string("quantize_") + quantOutputName(output) +
                          (division == QuantizeDivision::Reciprocal ? "_reciprocal" : "") +
                          "_avx512",
                      Isa::Avx512, 4096),
      output_(output), division_(division) {
  if (output == QuantOutput::F32)
    throw std::invalid_argument("QuantizeKernel: the output must be u8 or s8");
  fn_ = entry<Fn>();
}

void QuantizeKernel::run(const float *x, void *q, int64_t count, float scale, int32_t zp) const {
  if (count <= 0)
    return;
  requireHost("QuantizeKernel");
  const int32_t lo = output_ == QuantOutput::U8 ? 0 : -128;
  if (zp < lo || zp > lo + 255)
    throw std::invalid_argument("QuantizeKernel: zero point " + std::to_string(zp) +
                                " outside the " + quantOutputName(output_) + " range");
  QuantizeArgs args;
  args.x = x, args.q = q, args.count = count, args.zp = zp;
  args.scale = division_ == QuantizeDivision::Reciprocal ? 1.0f / scale : scale;
  args.lo = float(lo - zp), args.hi = float(lo + 255 - zp);
  args.vectors = count / 16;
  args.tailMask = tailMaskOf(count);
  fn_(&args);
}

void QuantizeKernel::generate() {
  Label loop, tail, done;
  const Reg64 px = rsi, pq = rdx, count = rcx;
  const Zmm zS(16), zLo(17), zHi(18), zZp(19), zT(20);
  const Opmask kTail = k1, kNan = k2;
  auto store = [&](const Address &dst) {
    if (output_ == QuantOutput::U8)
      vpmovusdb(dst, zT); // values are 0..255 here
    else
      vpmovsdb(dst, zT);
  };
  auto quantize = [&]() {
    if (division_ == QuantizeDivision::Reciprocal)
      vmulps(zT, zT, zS); // zS holds 1 / scale
    else
      vdivps(zT, zT, zS); // the division the formula names
    vcmpps(kNan, zT, zT, kUnord);
    vmaxps(zT, zT, zLo);
    vminps(zT, zT, zHi);
    vxorps(zT | kNan, zT, zT); // NaN -> 0 -> zp
    vcvtps2dq(zT, zT);         // MXCSR's default rounding: to nearest even
    vpaddd(zT, zT, zZp);
  };
  preamble();
  mov(px, ptr[rdi + offsetof(QuantizeArgs, x)]);
  mov(pq, ptr[rdi + offsetof(QuantizeArgs, q)]);
  mov(count, ptr[rdi + offsetof(QuantizeArgs, vectors)]);
  vbroadcastss(zS, dword[rdi + offsetof(QuantizeArgs, scale)]);
  vbroadcastss(zLo, dword[rdi + offsetof(QuantizeArgs, lo)]);
  vbroadcastss(zHi, dword[rdi + offsetof(QuantizeArgs, hi)]);
  vpbroadcastd(zZp, dword[rdi + offsetof(QuantizeArgs, zp)]);
  mov(eax, dword[rdi + offsetof(QuantizeArgs, tailMask)]);
  kmovw(kTail, eax);
  L(loop);
  test(count, count);
  jz(tail, T_NEAR);
  vmovups(zT, zword[px]);
  quantize();
  store(xword[pq]);
  add(px, 64);
  add(pq, 16);
  dec(count);
  jmp(loop, T_NEAR);
  L(tail);
  kortestw(kTail, kTail);
  jz(done, T_NEAR);
  vmovups(zT | kTail | T_z, zword[px]);
  quantize();
  store(xword[pq] | kTail);
  L(done);
  postamble();
}

} // namespace octet::x86
