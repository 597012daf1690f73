//===- CpuFeatures.h - what a CPU can run: the host or a named target -*- C++ -*-===//
//
// The instruction sets a kernel generator can target and the features of a
// CPU: the running one (CPUID gated by the OS's XSAVE state) or a named
// target when compiling for another CPU (KernelOptions::cpu). No Xbyak here:
// the runtime's options and the AOT format carry CpuFeatures by value.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_CPUFEATURES_H
#define OCTET_COMPILER_CODEGEN_X86_CPUFEATURES_H

#include <string>
#include <vector>

namespace octet::x86 {

/// Instruction sets a kernel can target. AvxVnni (256-bit vpdpbusd, VEX) and
/// Avx512 are not ordered: Alder Lake has the first only, Skylake-SP the second.
/// AmxBf16: the bf16 attention on AMX-BF16 tiles (AVX512-BF16 conversions);
/// Avx512Bf16: the bf16 attention on vdpbf16ps (AVX-512 with AVX512-BF16).
enum class Isa { Avx2, AvxVnni, Avx512, Avx512Vnni, AmxInt8, AmxBf16, Avx512Bf16 };
const char *isaName(Isa isa);

/// What a CPU supports: the running one (CPUID, gated by the OS's XSAVE state
/// in XCR0: ymm for AVX, opmask/zmm for AVX-512, XTILECFG/XTILEDATA for AMX),
/// or a named target when compiling for another CPU. A plain struct of bools
/// (serialized field by field).
struct CpuFeatures {
  bool avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512bf16 = false, avxVnni = false;
  bool amxTile = false, amxInt8 = false, amxBf16 = false;
  /// This CPU, less the features named in $OCTET_CPU_DISABLE (comma or space
  /// separated describe() names, e.g. "amx_tile,amx_int8").
  static const CpuFeatures &host();
  /// Features of a target CPU by name: "host", "avx2" (Haswell),
  /// "avx-vnni" (Alder Lake), "avx512" (Skylake-SP), "avx512-vnni"
  /// (Cascade Lake, Ice Lake-SP, Zen 4), "amx" (Sapphire Rapids and later),
  /// or an alias from targetNames(). Returns false with `error` naming the
  /// known targets for anything else.
  static bool forTarget(const std::string &name, CpuFeatures &out, std::string &error);
  static std::vector<std::string> targetNames();
  bool supports(Isa isa) const;
  /// The strongest INT8 dot-product ISA: AmxInt8 > Avx512Vnni > AvxVnni >
  /// Avx2 (vpmaddubsw); returns false when not even AVX2 is there.
  bool bestInt8Isa(Isa &isa) const;
  /// "avx2 fma avx512f ... amx_int8": the features present, for messages.
  std::string describe() const;
  /// Every feature flag and its describe() name, in a fixed order (the AOT
  /// format stores the flags in this order: append only).
  struct Flag {
    bool CpuFeatures::*field;
    const char *name;
  };
  static const std::vector<Flag> &flags();
  /// The features of this one that `cpu` lacks, as describe() names them
  /// ("amx_tile amx_int8"); "" when `cpu` can run everything this one can.
  std::string missingOn(const CpuFeatures &cpu) const;
  bool operator==(const CpuFeatures &o) const;
  bool operator!=(const CpuFeatures &o) const { return !(*this == o); }
};

/// Whether this host's CPU is AMD's (cpuid vendor "AuthenticAMD"). Not a
/// feature: nothing generated depends on it, only run-time choices that
/// measured differently on AMD's and Intel's cache topologies (an L3 per core
/// complex, or one per socket): Int8GemmDriver's row split.
bool hostIsAmd();

} // namespace octet::x86

#endif
