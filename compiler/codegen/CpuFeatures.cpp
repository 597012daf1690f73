//===- CpuFeatures.cpp ----------------------------------------------------===//
#include "compiler/codegen/CpuFeatures.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <xbyak/xbyak_util.h>

#include <utility>

namespace octet::x86 {

const char *isaName(Isa isa) {
  switch (isa) {
  case Isa::Avx2:
    return "avx2";
  case Isa::AvxVnni:
    return "avx_vnni";
  case Isa::Avx512:
    return "avx512";
  case Isa::Avx512Vnni:
    return "avx512_vnni";
  case Isa::AmxInt8:
    return "amx";
  case Isa::AmxBf16:
    return "amx_bf16";
  case Isa::Avx512Bf16:
    return "avx512_bf16";
  }
  return "unknown";
}

namespace {
/// OCTET_CPU_DISABLE="amx_tile,amx_int8 ...": act as a CPU without these
/// features (as oneDNN's ONEDNN_MAX_CPU_ISA), to compare kernels or to test
/// what a CPU without them does. An unknown name is reported once and ignored.
void hideFeatures(CpuFeatures &f, const char *names) {
  if (!names)
    return;
  std::string list(names);
  for (char &c : list)
    if (c == ',')
      c = ' ';
  size_t at = 0;
  while ((at = list.find_first_not_of(' ', at)) != std::string::npos) {
    size_t end = std::min(list.find(' ', at), list.size());
    const std::string name = list.substr(at, end - at);
    at = end;
    bool known = false;
    for (const CpuFeatures::Flag &flag : CpuFeatures::flags())
      if (name == flag.name)
        f.*flag.field = false, known = true;
    if (!known)
      std::fprintf(stderr, "octet: OCTET_CPU_DISABLE: unknown CPU feature '%s' ignored\n",
                   name.c_str());
  }
}
} // namespace

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
    // Xbyak gates AVX and AVX-512 on XCR0 but not AMX: the OS must also
    // enable XTILECFG (bit 17) and XTILEDATA (bit 18), or tile instructions #UD.
    const bool tileState = cpu.has(C::tOSXSAVE) && (cpu.getXfeature() & (3u << 17)) == (3u << 17);
    f.amxTile = tileState && cpu.has(C::tAMX_TILE);
    f.amxInt8 = tileState && cpu.has(C::tAMX_INT8);
    f.amxBf16 = tileState && cpu.has(C::tAMX_BF16);
    hideFeatures(f, std::getenv("OCTET_CPU_DISABLE"));
    return f;
  }();
  return features;
}

bool hostIsAmd() {
  static const bool amd = Xbyak::util::Cpu().has(Xbyak::util::Cpu::tAMD);
  return amd;
}

namespace {
struct Target {
  const char *name;
  const char *aliases; // space separated
  CpuFeatures (*features)();
};

CpuFeatures avx2Target() {
  CpuFeatures f;
  f.avx2 = f.fma = true;
  return f;
}
CpuFeatures avxVnniTarget() {
  CpuFeatures f = avx2Target();
  f.avxVnni = true;
  return f;
}
CpuFeatures avx512Target() {
  CpuFeatures f = avx2Target();
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
  return f;
}
CpuFeatures avx512VnniTarget() {
  CpuFeatures f = avx512Target();
  f.avx512vnni = true;
  return f;
}
/// AVX-512 VNNI with BF16 (vdpbf16ps): Cooper Lake, AMD Zen 4 and Zen 5.
CpuFeatures avx512Bf16Target() {
  CpuFeatures f = avx512VnniTarget();
  f.avx512bf16 = true;
  return f;
}
CpuFeatures amxTarget() {
  CpuFeatures f = avx512VnniTarget();
  f.avx512bf16 = f.avxVnni = true;
  f.amxTile = f.amxInt8 = f.amxBf16 = true;
  return f;
}

const Target kTargets[] = {
    {"avx2", "haswell broadwell skylake zen2 zen3", avx2Target},
    {"avx-vnni", "alderlake raptorlake", avxVnniTarget},
    {"avx512", "skylake-avx512 skx", avx512Target},
    {"avx512-vnni", "cascadelake icelake-server", avx512VnniTarget},
    {"avx512-bf16", "cooperlake zen4 zen5", avx512Bf16Target},
    {"amx", "sapphirerapids emeraldrapids graniterapids", amxTarget},
};
} // namespace

std::vector<std::string> CpuFeatures::targetNames() {
  std::vector<std::string> names{"host"};
  for (const Target &t : kTargets) {
    names.push_back(t.name);
    std::string aliases = t.aliases;
    for (size_t at = 0; at < aliases.size();) {
      size_t end = aliases.find(' ', at);
      if (end == std::string::npos)
        end = aliases.size();
      names.push_back(aliases.substr(at, end - at));
      at = end + 1;
    }
  }
  return names;
}

bool CpuFeatures::forTarget(const std::string &name, CpuFeatures &out, std::string &error) {
  if (name == "host") {
    out = host();
    return true;
  }
  for (const Target &t : kTargets) {
    const std::string aliases = std::string(" ") + t.aliases + " ";
    if (name == t.name || aliases.find(" " + name + " ") != std::string::npos) {
      out = t.features();
      return true;
    }
  }
  error = "unknown target CPU '" + name + "'; known:";
  for (const std::string &known : targetNames())
    error += " " + known;
  return false;
}

bool CpuFeatures::bestInt8Isa(Isa &isa) const {
  for (Isa candidate : {Isa::AmxInt8, Isa::Avx512Vnni, Isa::AvxVnni, Isa::Avx2})
    if (supports(candidate)) {
      isa = candidate;
      return true;
    }
  return false;
}

const std::vector<CpuFeatures::Flag> &CpuFeatures::flags() {
  static const std::vector<Flag> all = {{&CpuFeatures::avx2, "avx2"},
                                        {&CpuFeatures::fma, "fma"},
                                        {&CpuFeatures::avx512f, "avx512f"},
                                        {&CpuFeatures::avx512bw, "avx512bw"},
                                        {&CpuFeatures::avx512vl, "avx512vl"},
                                        {&CpuFeatures::avx512dq, "avx512dq"},
                                        {&CpuFeatures::avx512vnni, "avx512_vnni"},
                                        {&CpuFeatures::avx512bf16, "avx512_bf16"},
                                        {&CpuFeatures::avxVnni, "avx_vnni"},
                                        {&CpuFeatures::amxTile, "amx_tile"},
                                        {&CpuFeatures::amxInt8, "amx_int8"},
                                        {&CpuFeatures::amxBf16, "amx_bf16"}};
  return all;
}

namespace {
/// Every feature with its describe() name.
template <typename F> void forEachFeature(const CpuFeatures &c, F f) {
  for (const CpuFeatures::Flag &flag : CpuFeatures::flags())
    f(c.*flag.field, flag.name);
}
} // namespace

std::string CpuFeatures::describe() const {
  std::string s;
  forEachFeature(*this, [&](bool present, const char *name) {
    if (present)
      s += (s.empty() ? "" : " ") + std::string(name);
  });
  return s.empty() ? "none" : s;
}

bool CpuFeatures::supports(Isa isa) const {
  bool avx512 = avx512f && avx512bw && avx512vl && avx512dq;
  switch (isa) {
  case Isa::Avx2:
    return avx2 && fma;
  case Isa::AvxVnni:
    return avx2 && fma && avxVnni;
  case Isa::Avx512:
    return avx512;
  case Isa::Avx512Vnni:
    return avx512 && avx512vnni;
  case Isa::AmxInt8:
    return avx512 && amxTile && amxInt8;
  case Isa::AmxBf16:
    return avx512 && avx512bf16 && amxTile && amxBf16;
  case Isa::Avx512Bf16:
    return avx512 && avx512bf16;
  }
  return false;
}

std::string CpuFeatures::missingOn(const CpuFeatures &cpu) const {
  std::vector<bool> has;
  forEachFeature(cpu, [&](bool present, const char *) { has.push_back(present); });
  std::string s;
  size_t i = 0;
  forEachFeature(*this, [&](bool present, const char *name) {
    if (present && !has[i])
      s += (s.empty() ? "" : " ") + std::string(name);
    ++i;
  });
  return s;
}

bool CpuFeatures::operator==(const CpuFeatures &o) const {
  return missingOn(o).empty() && o.missingOn(*this).empty();
}

} // namespace octet::x86
