//===- VectorMathConstants.h - the f32 math's coefficients -------*- C++ -*-===//
//
// The constants of VectorMath's functions, shared by its AVX-512 code
// (VectorMath.cpp) and their AVX2 twins (VectorMathAvx2.h): one set of
// coefficients, so both compute the same polynomials.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_VECTORMATHCONSTANTS_H
#define OCTET_COMPILER_CODEGEN_X86_VECTORMATHCONSTANTS_H

#include <cstddef>
#include <cstdint>

namespace octet::x86::vector_math {

inline constexpr uint32_t kSignBit = 0x80000000u;
inline constexpr uint32_t kAbsMask = 0x7fffffffu;

// Coefficients: Lawson-weighted minimax fits in double, rounded to f32.
// exp(r) = 1 + r * q(r) on r in [0, ln2] (floor reduction), q lowest first.
inline constexpr float kExpQ[] = {9.999998212e-01f, 5.000056028e-01f, 1.666106731e-01f,
                                  4.191598669e-02f, 7.788009010e-03f, 1.952184131e-03f};
// 2^f on [0, 1), relative minimax (lowest first): 2.7e-6 evaluated in f32.
inline constexpr float kExp2Fast[] = {1.000002623e+00f, 6.930038333e-01f, 2.414427549e-01f,
                                      5.201146379e-02f, 1.353417058e-02f};
// t below this gives 0 whatever f is (2^-160 times less than 2): only f's is clamped.
inline constexpr float kExpFastFloor = -160.0f;
// erf(x) = x + x * P(x^2) for |x| < 1.
inline constexpr float kErfSmall[] = {1.283791661e-01f,  -3.761262596e-01f, 1.128360033e-01f,
                                      -2.685444430e-02f, 5.189535208e-03f,  -8.020841051e-04f,
                                      7.889119297e-05f};
// erfc(t) = exp(Q(t)) for t in [1, 4]; erf(x) rounds to 1 beyond 3.92.
inline constexpr float kErfcLogQ[] = {2.043598797e-04f,  -1.129661202e+00f, -6.330395937e-01f,
                                      -1.086389944e-01f, 2.537355572e-02f,  -4.282382783e-03f,
                                      4.637880193e-04f,  -2.531480823e-05f, 2.513265542e-07f};
inline constexpr float kErfLargeFrom = 1.0f, kErfClamp = 4.0f;
// tanh(x) = x + x * s * P(s), s = x^2, for |x| < 0.625.
inline constexpr float kTanhSmall[] = {-3.333333135e-01f, 1.333321035e-01f,  -5.394720286e-02f,
                                       2.170296758e-02f,  -8.182673715e-03f, 2.147536958e-03f};
inline constexpr float kTanhLargeFrom = 0.625f;
// Phi(a) - 1/2 for a in [0, 3.95] (Phi the normal CDF: 0.5 erf(a / sqrt 2)),
// and its tanh-form counterpart 0.5 tanh(sqrt(2/pi) (a + 0.044715 a^3));
// scripts/fit-fast-gelu: minimax for GELU's error, P(3.95) = 1/2 + 2e-6 so
// that min(P, 1/2) is exactly 1/2 from 3.95 on.
inline constexpr float kGeluErfFastPhi[] = {2.184230601e-03f,  3.790069222e-01f, 6.100003794e-02f,
                                            -1.531614214e-01f, 6.246816367e-02f, -1.082527358e-02f,
                                            7.083669771e-04f};
inline constexpr float kGeluTanhFastPhi[] = {1.733375713e-03f,  3.816955686e-01f, 5.548848957e-02f,
                                             -1.485688984e-01f, 6.068198010e-02f, -1.049798075e-02f,
                                             6.854338571e-04f};
inline constexpr float kGeluFastClamp = 3.95f;
static_assert(sizeof kGeluErfFastPhi == sizeof kGeluTanhFastPhi, "geluFast: one degree");

inline constexpr float kLog2e = 1.44269504088896341f;
// ln2 split so that n * kLn2Hi is exact in the fma (Cody-Waite).
inline constexpr float kLn2Hi = 0.693147182464599609375f;
inline constexpr float kLn2Lo = -1.904654299957768e-09f;

template <size_t N> constexpr int size(const float (&)[N]) { return int(N); }

} // namespace octet::x86::vector_math

#endif
