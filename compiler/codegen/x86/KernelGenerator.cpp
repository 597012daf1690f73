//===- KernelGenerator.cpp ------------------------------------------------===//
#include "compiler/codegen/x86/KernelGenerator.h"

#include <xbyak/xbyak_util.h>

namespace octet::x86 {

const char *isaName(Isa isa) {
  switch (isa) {
  case Isa::Avx2:
    return "avx2";
  case Isa::Avx512:
    return "avx512";
  case Isa::Avx512Vnni:
    return "avx512_vnni";
  case Isa::AmxInt8:
    return "amx";
  }
  return "unknown";
}

const CpuFeatures &CpuFeatures::host() {
  static const CpuFeatures features = [] {
    Xbyak::util::Cpu cpu;
    using C = Xbyak::util::Cpu;
    CpuFeatures f;
    f.avx2 = cpu.has(C::tAVX2);
    f.fma = cpu.has(C::tFMA);
    f.avx512f = cpu.has(C::tAVX512F);
    f.avx512bw = cpu.has(C::tAVX512BW);
    f.avx512vl = cpu.has(C::tAVX512VL);
    f.avx512dq = cpu.has(C::tAVX512DQ);
    f.avx512vnni = cpu.has(C::tAVX512_VNNI);
    f.avx512bf16 = cpu.has(C::tAVX512_BF16);
    f.avxVnni = cpu.has(C::tAVX_VNNI);
    f.amxTile = cpu.has(C::tAMX_TILE);
    f.amxInt8 = cpu.has(C::tAMX_INT8);
    f.amxBf16 = cpu.has(C::tAMX_BF16);
    return f;
  }();
  return features;
}

bool CpuFeatures::supports(Isa isa) const {
  bool avx512 = avx512f && avx512bw && avx512vl && avx512dq;
  switch (isa) {
  case Isa::Avx2:
    return avx2 && fma;
  case Isa::Avx512:
    return avx512;
  case Isa::Avx512Vnni:
    return avx512 && avx512vnni;
  case Isa::AmxInt8:
    return avx512 && amxTile && amxInt8;
  }
  return false;
}

// DontSetProtectRWE: the buffer stays read+write while generating and becomes
// read+execute in finalize(); it is never writable and executable together.
KernelGenerator::KernelGenerator(std::string name, Isa isa, size_t maxCodeBytes)
    : Xbyak::CodeGenerator(maxCodeBytes, Xbyak::DontSetProtectRWE), name_(std::move(name)),
      isa_(isa) {}

void KernelGenerator::finalize() {
  if (generated_)
    return;
  generate();
  readyRE();
  setProtectModeRE();
  generated_ = true;
}

std::vector<uint8_t> KernelGenerator::bytes() {
  finalize();
  return std::vector<uint8_t>(getCode(), getCode() + getSize());
}

void KernelGenerator::preamble() {
  for (const Xbyak::Reg64 &r : {rbx, rbp, r12, r13, r14, r15})
    push(r);
}

void KernelGenerator::postamble() {
  for (const Xbyak::Reg64 &r : {r15, r14, r13, r12, rbp, rbx})
    pop(r);
  vzeroupper();
  ret();
  codeSize_ = getSize();
}

} // namespace octet::x86
