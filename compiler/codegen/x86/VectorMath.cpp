//===- VectorMath.cpp -----------------------------------------------------===//
#include "compiler/codegen/x86/VectorMath.h"
#include "compiler/codegen/x86/VectorMathConstants.h"

#include <cstring>
#include <stdexcept>

namespace octet::x86 {

using Xbyak::Opmask;
using Xbyak::Zmm;

using namespace vector_math;

namespace {

// vcmpps / vfpclassps / vrndscaleps immediates.
constexpr uint8_t kCmpLtOq = 0x01, kCmpNgeUq = 0x09;
constexpr uint8_t kClassZeroOrInf = 0x1e; // +0, -0, +inf, -inf
constexpr uint8_t kRoundFloor = 0x09;     // floor, suppress precision exception
// vpternlogd: dst = c ? b : a per bit (a = dst, b = src1, c = src2).
constexpr uint8_t kBitSelect = 0xd8;

} // namespace

Xbyak::Address ConstantTable::f32(float value) {
  uint32_t b;
  std::memcpy(&b, &value, sizeof b);
  return bits(b);
}

size_t ConstantTable::offsetOf(uint32_t value) {
  size_t i = 0;
  while (i < values_.size() && values_[i] != value)
    ++i;
  if (i == values_.size())
    values_.push_back(value);
  return 4 * i;
}

Xbyak::Address ConstantTable::bits(uint32_t value) {
  return gen_.ptr_b[gen_.rip + label() + int(offsetOf(value))];
}

Xbyak::Address ConstantTable::scalar(float value) {
  uint32_t b;
  std::memcpy(&b, &value, sizeof b);
  return gen_.dword[gen_.rip + label() + int(offsetOf(b))];
}

void ConstantTable::emit() {
  if (external_)
    throw std::logic_error("ConstantTable: an external table is placed by its owner");
  gen_.align(64);
  gen_.L(label_);
  for (uint32_t v : values_)
    gen_.dd(v);
}

int zmmScratchFor(UnaryOp op) {
  switch (op) {
  case UnaryOp::Neg:
  case UnaryOp::Abs:
    return 0;
  case UnaryOp::Reciprocal:
    return 1;
  case UnaryOp::Exp:
  case UnaryOp::Rsqrt:
    return 2;
  case UnaryOp::Sigmoid:
  case UnaryOp::GeluErfFast:
  case UnaryOp::GeluTanhFast:
    return 3;
  case UnaryOp::Erf:
  case UnaryOp::Tanh:
  case UnaryOp::GeluTanh:
    return 4;
  case UnaryOp::GeluErf:
    return 6;
  }
  return 0;
}

int maskScratchFor(UnaryOp op) {
  switch (op) {
  case UnaryOp::Erf:
  case UnaryOp::Tanh:
  case UnaryOp::Sigmoid:
  case UnaryOp::Rsqrt:
  case UnaryOp::GeluErf:
  case UnaryOp::GeluTanh:
    return 1;
  default:
    return 0;
  }
}

VectorMath::VectorMath(Xbyak::CodeGenerator &gen, ConstantTable &constants,
                       std::vector<Zmm> zmmPool, std::vector<Opmask> maskPool)
    : gen_(gen), constants_(constants), zmmPool_(std::move(zmmPool)),
      maskPool_(std::move(maskPool)) {}

const Zmm &VectorMath::zmm(size_t i) const {
  if (i >= zmmPool_.size())
    throw std::logic_error("VectorMath: zmm scratch pool too small");
  return zmmPool_[i];
}

const Opmask &VectorMath::mask(size_t i) const {
  if (i >= maskPool_.size())
    throw std::logic_error("VectorMath: opmask scratch pool too small");
  return maskPool_[i];
}

void VectorMath::add(const Zmm &d, const Zmm &a, const Operand &b) { gen_.vaddps(d, a, b); }
void VectorMath::sub(const Zmm &d, const Zmm &a, const Operand &b) { gen_.vsubps(d, a, b); }
void VectorMath::mul(const Zmm &d, const Zmm &a, const Operand &b) { gen_.vmulps(d, a, b); }
void VectorMath::div(const Zmm &d, const Zmm &a, const Operand &b) { gen_.vdivps(d, a, b); }
void VectorMath::max(const Zmm &d, const Zmm &a, const Operand &b) { gen_.vmaxps(d, a, b); }
void VectorMath::min(const Zmm &d, const Zmm &a, const Operand &b) { gen_.vminps(d, a, b); }

void VectorMath::fma(const Zmm &d, const Zmm &a, const Operand &b, const Operand &c) {
  if (b.isMEM() && c.isMEM())
    throw std::logic_error("VectorMath::fma: two memory operands");
  if (c.isMEM()) { // 213: d = d * reg + mem
    const Zmm &bz = static_cast<const Zmm &>(b);
    if (d == bz) {
      gen_.vfmadd213ps(d, a, c);
      return;
    }
    if (d != a)
      gen_.vmovaps(d, a);
    gen_.vfmadd213ps(d, bz, c);
    return;
  }
  const Zmm &cz = static_cast<const Zmm &>(c);
  if (d == cz) { // 231: d = a * b + d
    gen_.vfmadd231ps(d, a, b);
    return;
  }
  if (b.isREG() && d == static_cast<const Zmm &>(b)) {
    gen_.vfmadd213ps(d, a, cz);
    return;
  }
  if (d != a)
    gen_.vmovaps(d, a);
  gen_.vfmadd132ps(d, cz, b); // 132: d = d * b + c
}

void VectorMath::broadcast(const Zmm &d, float value) {
  gen_.vbroadcastss(d, constants_.scalar(value));
}

void VectorMath::neg(const Zmm &d, const Zmm &s) {
  gen_.vpxord(d, s, constants_.bits(kSignBit));
}

void VectorMath::abs(const Zmm &d, const Zmm &s) {
  gen_.vpandd(d, s, constants_.bits(kAbsMask));
}

void VectorMath::horner(const Zmm &acc, const Zmm &x, const float *c, int n, float scale) {
  broadcast(acc, c[n - 1] * scale);
  for (int i = n - 2; i >= 0; --i)
    gen_.vfmadd213ps(acc, x, constant(c[i] * scale));
}

void VectorMath::copySign(const Zmm &magnitude, const Zmm &sign) {
  gen_.vpternlogd(magnitude, sign, constants_.bits(kSignBit), kBitSelect);
}

// x = n ln2 + r with n = floor(x log2e): exp(x) = 2^n e^r, the 2^n applied by
// vscalefps(p, t) which floors t itself. Lanes with x = +-inf or NaN get a NaN
// r; clamping r keeps p finite there, and vscalefps(p, t = +-inf or NaN)
// yields inf, 0 or NaN as it should. Overflow and underflow (denormals
// included) come from vscalefps's single rounding.
void VectorMath::expCore(const Zmm &d, const Zmm &s, const Zmm &t, const Zmm &p) {
  gen_.vmulps(t, s, constant(kLog2e));
  gen_.vrndscaleps(p, t, kRoundFloor);
  if (d != s)
    gen_.vmovaps(d, s);
  gen_.vfnmadd231ps(d, p, constant(kLn2Hi));
  gen_.vfnmadd231ps(d, p, constant(kLn2Lo));
  gen_.vmaxps(d, d, constant(-1.0f)); // a NaN r becomes -1 here
  gen_.vminps(d, d, constant(1.0f));
  horner(p, d, kExpQ, size(kExpQ));
  gen_.vfmadd213ps(p, d, constant(1.0f));
  gen_.vscalefps(d, p, t);
}

void VectorMath::exp(const Zmm &d, const Zmm &s) { expCore(d, s, zmm(0), zmm(1)); }

// exp(x) = 2^floor(t) 2^f, t = x log2e, f = t - floor(t): vscalefps floors the
// unclamped t itself, so a NaN stays NaN and -inf gives 0 while f comes from t
// clamped (finite, in [0, 1)).
void VectorMath::expFast(const Zmm &d, const Zmm &s) {
  const Zmm &t = zmm(0), &f = zmm(1);
  gen_.vmulps(t, s, constant(kLog2e));
  gen_.vmaxps(f, t, constant(kExpFastFloor)); // a NaN t takes the bound
  gen_.vrndscaleps(d, f, kRoundFloor);
  gen_.vsubps(f, f, d);
  horner(d, f, kExp2Fast, size(kExp2Fast));
  gen_.vscalefps(d, d, t);
}

// Two regions blended per lane; NaN lanes take the small-|x| branch (NGE_UQ
// is true for unordered), which propagates them.
void VectorMath::erfCore(const Zmm &d, const Zmm &s, const Zmm *t, const Opmask &k) {
  const Zmm &small = t[0], &u = t[1], &large = t[2], &t3 = t[3];
  gen_.vmulps(u, s, s);
  horner(small, u, kErfSmall, size(kErfSmall));
  gen_.vfmadd213ps(small, s, s); // x + x P(x^2)
  gen_.vpandd(u, s, constants_.bits(kAbsMask));
  gen_.vcmpps(k, u, constant(kErfLargeFrom), kCmpNgeUq);
  gen_.vminps(u, u, constant(kErfClamp));
  horner(large, u, kErfcLogQ, size(kErfcLogQ));
  expCore(large, large, u, t3);         // erfc(|x|)
  gen_.vsubps(large, large, constant(1.0f)); // -(1 - erfc); its magnitude is erf(|x|)
  copySign(large, s);
  gen_.vmovaps(large | k, small);
  gen_.vmovaps(d, large);
}

void VectorMath::erf(const Zmm &d, const Zmm &s) {
  const Zmm t[] = {zmm(0), zmm(1), zmm(2), zmm(3)};
  erfCore(d, s, t, mask(0));
}

void VectorMath::tanh(const Zmm &d, const Zmm &s) {
  const Zmm &small = zmm(0), &u = zmm(1), &large = zmm(2), &t3 = zmm(3);
  const Opmask &k = mask(0);
  gen_.vmulps(u, s, s);
  horner(small, u, kTanhSmall, size(kTanhSmall));
  gen_.vmulps(small, small, u);
  gen_.vfmadd213ps(small, s, s); // x + x s P(s)
  gen_.vpandd(u, s, constants_.bits(kAbsMask));
  gen_.vcmpps(k, u, constant(kTanhLargeFrom), kCmpNgeUq);
  gen_.vmulps(large, u, constant(-2.0f));
  expCore(large, large, u, t3); // e = exp(-2|x|), 0 for |x| = inf
  gen_.vaddps(u, large, constant(1.0f));
  gen_.vsubps(large, large, constant(1.0f));
  gen_.vdivps(large, large, u); // (e - 1) / (e + 1) = -tanh|x|
  copySign(large, s);
  gen_.vmovaps(large | k, small);
  gen_.vmovaps(d, large);
}

// e = exp(-|x|) never overflows; 1/(1+e) for x >= 0 and e/(1+e) for x < 0
// keep full relative accuracy in both tails (denormal results included).
void VectorMath::sigmoidCore(const Zmm &d, const Zmm &s, const Zmm *t, const Opmask &k) {
  const Zmm &e = t[0], &den = t[1], &num = t[2];
  gen_.vpord(e, s, constants_.bits(kSignBit)); // -|x|
  expCore(e, e, den, num);
  gen_.vaddps(den, e, constant(1.0f));
  gen_.vcmpps(k, s, constant(0.0f), kCmpLtOq);
  broadcast(num, 1.0f);
  gen_.vmovaps(num | k, e);
  gen_.vdivps(d, num, den);
}

void VectorMath::sigmoid(const Zmm &d, const Zmm &s) {
  const Zmm t[] = {zmm(0), zmm(1), zmm(2)};
  sigmoidCore(d, s, t, mask(0));
}

// y1 = y0 + y0/2 (1 - x y0^2), with x y0 formed first so that denormal x does
// not overflow y0^2. Lanes where y0 is 0 or inf (x = inf or 0) keep y0.
void VectorMath::rsqrt(const Zmm &d, const Zmm &s) {
  const Zmm &y0 = zmm(0), &r = zmm(1);
  const Opmask &k = mask(0);
  gen_.vrsqrt14ps(y0, s);
  gen_.vfpclassps(k, y0, kClassZeroOrInf);
  gen_.vmulps(r, s, y0);
  gen_.vfnmadd213ps(r, y0, constant(1.0f)); // 1 - x y0^2
  gen_.vmulps(d, y0, constant(0.5f));
  gen_.vfmadd213ps(d, r, y0);
  gen_.vmovaps(d | k, y0);
}

void VectorMath::reciprocal(const Zmm &d, const Zmm &s) {
  const Zmm &one = zmm(0);
  broadcast(one, 1.0f);
  gen_.vdivps(d, one, s);
}

void VectorMath::reciprocalOfUniform(const Zmm &d, const Zmm &s) {
  const Zmm &one = zmm(0);
  broadcast(one, 1.0f);
  gen_.vdivss(Xbyak::Xmm(d.getIdx()), Xbyak::Xmm(one.getIdx()), Xbyak::Xmm(s.getIdx()));
  gen_.vbroadcastss(d, Xbyak::Xmm(d.getIdx()));
}

void VectorMath::geluErf(const Zmm &d, const Zmm &s) {
  const Zmm t[] = {zmm(0), zmm(1), zmm(2), zmm(3)};
  const Zmm &e = zmm(4), &half = zmm(5);
  gen_.vmulps(e, s, constant(0.70710678118654752f));
  erfCore(e, e, t, mask(0));
  gen_.vmulps(half, s, constant(0.5f));
  gen_.vfmadd213ps(e, half, half); // x/2 + x/2 erf
  gen_.vmovaps(d, e);
}

// 0.5 (1 + tanh u) = sigmoid(2u): 2u = x (k0 + k1 x^2).
void VectorMath::geluTanh(const Zmm &d, const Zmm &s) {
  constexpr float k0 = 1.5957691216057308f; // 2 sqrt(2/pi)
  constexpr float k1 = k0 * 0.044715f;
  const Zmm t[] = {zmm(0), zmm(1), zmm(2)};
  const Zmm &u = zmm(3);
  gen_.vmulps(u, s, s);
  gen_.vmulps(u, u, constant(k1));
  gen_.vaddps(u, u, constant(k0));
  gen_.vmulps(u, u, s);
  sigmoidCore(u, u, t, mask(0));
  gen_.vmulps(d, u, s);
}

// GELU(x) = x Phi(x) = x/2 + |x| (Phi(|x|) - 1/2). A NaN |x| clamps to 4 but
// the last fma keeps it; x = -inf gives -inf + inf = NaN, as x Phi(x) does.
// Doubled, every constant is twice the plain one's (exact in binary), so every
// rounding of 2 GELU(x) = x + |x| min(2P, 1) is twice the plain one's.
void VectorMath::geluFast(const Zmm &d, const Zmm &s, const float *oddPhi, bool timesTwo) {
  const Zmm &a = zmm(0), &clamped = zmm(1), &p = zmm(2);
  const float factor = timesTwo ? 2.0f : 1.0f;
  gen_.vpandd(a, s, constants_.bits(kAbsMask));
  gen_.vminps(clamped, a, constant(kGeluFastClamp));
  horner(p, clamped, oddPhi, size(kGeluErfFastPhi), factor);
  gen_.vminps(p, p, constant(0.5f * factor));
  if (!timesTwo) {
    gen_.vmulps(d, s, constant(0.5f));
    gen_.vfmadd231ps(d, p, a);
  } else if (d == s) {
    gen_.vfmadd231ps(d, p, a);
  } else {
    gen_.vfmadd213ps(p, a, s);
    gen_.vmovaps(d, p);
  }
}

void VectorMath::geluErfFast(const Zmm &d, const Zmm &s, bool timesTwo) {
  geluFast(d, s, kGeluErfFastPhi, timesTwo);
}
void VectorMath::geluTanhFast(const Zmm &d, const Zmm &s, bool timesTwo) {
  geluFast(d, s, kGeluTanhFastPhi, timesTwo);
}

void VectorMath::unary(UnaryOp op, const Zmm &d, const Zmm &s) {
  switch (op) {
  case UnaryOp::Neg:
    return neg(d, s);
  case UnaryOp::Abs:
    return abs(d, s);
  case UnaryOp::Exp:
    return exp(d, s);
  case UnaryOp::Erf:
    return erf(d, s);
  case UnaryOp::Tanh:
    return tanh(d, s);
  case UnaryOp::Sigmoid:
    return sigmoid(d, s);
  case UnaryOp::Rsqrt:
    return rsqrt(d, s);
  case UnaryOp::Reciprocal:
    return reciprocal(d, s);
  case UnaryOp::GeluErf:
    return geluErf(d, s);
  case UnaryOp::GeluTanh:
    return geluTanh(d, s);
  case UnaryOp::GeluErfFast:
    return geluErfFast(d, s);
  case UnaryOp::GeluTanhFast:
    return geluTanhFast(d, s);
  }
}

// Butterfly over 256-, 128-, 64- and 32-bit halves: a + b == b + a exactly,
// so every lane ends with the same value.
void VectorMath::reduce(const Zmm &d, const Zmm &s, Reduction reduction) {
  const Zmm &t = zmm(0);
  auto op = [&](const Zmm &x) {
    switch (reduction) {
    case Reduction::Sum:
      return gen_.vaddps(d, x, t);
    case Reduction::Max:
      return gen_.vmaxps(d, x, t);
    case Reduction::MaxBits:
      return gen_.vpmaxud(d, x, t);
    }
  };
  gen_.vshuff32x4(t, s, s, 0x4e);
  op(s);
  gen_.vshuff32x4(t, d, d, 0xb1);
  op(d);
  gen_.vpermilps(t, d, 0x4e);
  op(d);
  gen_.vpermilps(t, d, 0xb1);
  op(d);
}

void VectorMath::reduceSum(const Zmm &d, const Zmm &s) { reduce(d, s, Reduction::Sum); }
void VectorMath::reduceMax(const Zmm &d, const Zmm &s) { reduce(d, s, Reduction::Max); }
void VectorMath::reduceMaxBits(const Zmm &d, const Zmm &s) { reduce(d, s, Reduction::MaxBits); }

} // namespace octet::x86
