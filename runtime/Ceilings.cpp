//===- Ceilings.cpp - measuring the roofline's ceilings with JIT loops -----===//
#include "runtime/Ceilings.h"

#include "compiler/codegen/x86/AmxSupport.h"
#include "compiler/codegen/x86/KernelGenerator.h"

#include <cpuid.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <vector>

namespace octet::rt {

namespace {

using x86::Isa;
using x86::KernelGenerator;
using Clock = std::chrono::steady_clock;

/// Independent accumulators per thread: at 4-cycle latency and two vector
/// pipes, 8 keep every pipe busy; 12 leave headroom for longer latencies.
constexpr int kAccumulators = 12;
/// Many short trials, the best kept: on a shared machine some trial runs in a
/// quiet moment, and the ceiling is what the hardware does then.
constexpr int kTrials = 15;
constexpr double kTrialSeconds = 0.01;

/// `iterations` × 2 × kAccumulators of `vfmadd231ps` (zmm or ymm),
/// `vpdpbusd` or `vdpbf16ps` on independent accumulators. void fn(int64_t iterations).
class PeakLoop : public KernelGenerator {
public:
  enum class Kind { FmaZmm, FmaYmm, DotZmm, DotYmm, S16Ymm, Bf16Zmm };
  explicit PeakLoop(Kind kind)
      : KernelGenerator("ceilings.peak", kind == Kind::FmaYmm || kind == Kind::DotYmm ||
                                                 kind == Kind::S16Ymm
                                             ? Isa::Avx2
                                         : kind == Kind::Bf16Zmm ? Isa::Avx512Bf16
                                                                 : Isa::Avx512),
        kind_(kind) {}
  using Fn = void (*)(int64_t);
  static constexpr int kInstructionsPerIteration = 2 * kAccumulators;

protected:
  void generate() override {
    const bool zmm = kind_ == Kind::FmaZmm || kind_ == Kind::DotZmm || kind_ == Kind::Bf16Zmm;
    auto reg = [&](int i) -> Xbyak::Xmm {
      return zmm ? Xbyak::Xmm(Xbyak::Zmm(i)) : Xbyak::Xmm(Xbyak::Ymm(i));
    };
    // Zeros: no denormals, and the same speed as any other value.
    for (int i = 0; i < kAccumulators + 2; ++i) {
      if (zmm)
        vpxord(Xbyak::Zmm(i), Xbyak::Zmm(i), Xbyak::Zmm(i));
      else
        vpxor(Xbyak::Ymm(i), Xbyak::Ymm(i), Xbyak::Ymm(i));
    }
    Xbyak::Label loop, done;
    test(rdi, rdi);
    jle(done, T_NEAR);
    L(loop);
    for (int u = 0; u < 2; ++u)
      for (int i = 0; i < kAccumulators; ++i) {
        const Xbyak::Xmm acc = reg(i), a = reg(kAccumulators), b = reg(kAccumulators + 1);
        switch (kind_) {
        case Kind::FmaZmm:
        case Kind::FmaYmm:
          vfmadd231ps(acc, a, b);
          break;
        case Kind::DotZmm:
          vpdpbusd(acc, a, b, Xbyak::EvexEncoding);
          break;
        case Kind::DotYmm:
          vpdpbusd(acc, a, b, Xbyak::VexEncoding);
          break;
        case Kind::S16Ymm: // as Int8GemmAvx2's K step: a product, then its add
          vpmaddwd(Xbyak::Ymm(kAccumulators + 2), a, b);
          vpaddd(acc, acc, Xbyak::Ymm(kAccumulators + 2));
          break;
        case Kind::Bf16Zmm:
          vdpbf16ps(Xbyak::Zmm(acc.getIdx()), Xbyak::Zmm(a.getIdx()), Xbyak::Zmm(b.getIdx()));
          break;
        }
      }
    dec(rdi);
    jnz(loop, T_NEAR);
    L(done);
    vzeroupper();
    ret();
  }

private:
  Kind kind_;
};

/// `iterations` x kTdpbusdPerIteration of `tdpbusd` on 4 independent
/// accumulator tiles: tmm0-3 += tmm4|5 . tmm6|7, every tile 16 rows x 64 bytes
/// (palette 1's largest), so each tdpbusd does 16 x 16 x 64 u8.s8 products.
/// At 16 cycles per tdpbusd and ~50 cycles latency (Sapphire Rapids), 4
/// accumulators keep the unit busy. Tiles start at zero: the speed does not
/// depend on the values, and no memory is read. void fn(int64_t iterations).
class AmxPeakLoop : public KernelGenerator {
public:
  AmxPeakLoop() : KernelGenerator("ceilings.peak_tdpbusd", Isa::AmxInt8) {}
  using Fn = void (*)(int64_t);
  static constexpr int kTdpbusdPerIteration = 8;
  static constexpr double kOpsPerTdpbusd = 16.0 * 16 * 64 * 2;

protected:
  void generate() override {
    using Xbyak::Tmm;
    preamble();
    Xbyak::Label config, loop, done;
    ldtilecfg(ptr[rip + config]);
    for (int t = 0; t < x86::kAmxTiles; ++t)
      tilezero(Tmm(t));
    test(rdi, rdi);
    jle(done, T_NEAR);
    align(16);
    L(loop);
    for (int u = 0; u < kTdpbusdPerIteration / 4; ++u)
      for (int c = 0; c < 4; ++c)
        tdpbusd(Tmm(c), Tmm(4 + c / 2), Tmm(6 + c % 2));
    dec(rdi);
    jnz(loop, T_NEAR);
    L(done);
    // Leaves the tile state in its init state: no 8 KiB XSAVE per context switch.
    tilerelease();
    postamble();
    align(64);
    L(config);
    x86::AmxTileConfig tiles;
    tiles.rows.fill(x86::kAmxMaxRows);
    tiles.colsb.fill(x86::kAmxMaxColsb);
    for (uint8_t byte : tiles.bytes())
      db(byte);
  }
};

/// Reads `bytes` (a multiple of 512) from `data`, `passes` times, with vector
/// loads into registers that nothing reads (the loads still execute).
/// void fn(const void *data, int64_t bytes, int64_t passes).
class ReadLoop : public KernelGenerator {
public:
  explicit ReadLoop(bool zmm)
      : KernelGenerator("ceilings.read", zmm ? Isa::Avx512 : Isa::Avx2), zmm_(zmm) {}
  using Fn = void (*)(const void *, int64_t, int64_t);
  static constexpr int64_t kBlock = 512;

protected:
  void generate() override {
    Xbyak::Label outer, inner, done;
    test(rdx, rdx);
    jle(done, T_NEAR);
    test(rsi, rsi);
    jle(done, T_NEAR);
    L(outer);
    mov(rax, rdi);
    mov(rcx, rsi);
    L(inner);
    const int width = zmm_ ? 64 : 32;
    for (int offset = 0, i = 0; offset < kBlock; offset += width, ++i) {
      if (zmm_)
        vmovaps(Xbyak::Zmm(i % 16), ptr[rax + offset]);
      else
        vmovaps(Xbyak::Ymm(i % 16), ptr[rax + offset]);
    }
    add(rax, int(kBlock));
    sub(rcx, int(kBlock));
    jg(inner, T_NEAR);
    dec(rdx);
    jnz(outer, T_NEAR);
    L(done);
    vzeroupper();
    ret();
  }

private:
  bool zmm_;
};

/// Iterations that take about `seconds` on one thread (calibrated).
/// PeakLoop::Fn and AmxPeakLoop::Fn are both void (*)(int64_t).
int64_t calibrate(PeakLoop::Fn fn, double seconds) {
  int64_t iterations = 1 << 12;
  for (;;) {
    const auto start = Clock::now();
    fn(iterations);
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    if (took > seconds / 8 || iterations > (int64_t(1) << 40))
      return std::max<int64_t>(1, int64_t(double(iterations) * seconds / std::max(took, 1e-9)));
    iterations *= 4;
  }
}

/// A peak loop with the iterations of about `trialSeconds` on one thread
/// (calibrated once, after a warm-up that raises the clock and pages the code
/// in). PeakLoop::Fn and AmxPeakLoop::Fn are both void (*)(int64_t).
struct CalibratedLoop {
  PeakLoop::Fn fn = nullptr;
  double opsPerIteration = 0; ///< per thread
  int64_t iterations = 0;

  CalibratedLoop() = default;
  CalibratedLoop(PeakLoop::Fn loop, double ops, double trialSeconds)
      : fn(loop), opsPerIteration(ops) {
    fn(1 << 14);
    iterations = calibrate(fn, trialSeconds);
  }
  /// Ops/s on `threads` threads, each running the loop alone: the best of `trials`.
  double opsPerSecond(int threads, int trials) const {
    const double seconds = bestParallelSeconds(threads, trials, [&](int) { fn(iterations); });
    return double(threads) * double(iterations) * opsPerIteration / seconds;
  }
};

/// Peak ops/s of the loop `fn` on `threads` threads; `opsPerIteration` per thread.
double peakOps(PeakLoop::Fn fn, double opsPerIteration, int threads) {
  return CalibratedLoop(fn, opsPerIteration, kTrialSeconds).opsPerSecond(threads, kTrials);
}

/// A compute peak's loop on this host: its kind, ops per instruction and ISA name.
struct ComputeLoop {
  PeakLoop::Kind kind;
  double opsPerInstruction;
  const char *isa;
};

ComputeLoop fmaLoop(const x86::CpuFeatures &cpu) {
  const bool zmm = cpu.supports(Isa::Avx512);
  return zmm ? ComputeLoop{PeakLoop::Kind::FmaZmm, 16 * 2.0, "avx512"}
             : ComputeLoop{PeakLoop::Kind::FmaYmm, 8 * 2.0, "avx2"};
}

/// vpdpbusd: 4 u8·s8 products summed into each int32 lane, 2 ops each;
/// without VNNI, AVX2's exact form (x86::Int8GemmAvx2): vpmaddwd, 2 s16
/// products into each int32 lane, and the vpaddd that accumulates them.
std::optional<ComputeLoop> dotLoop(const x86::CpuFeatures &cpu) {
  if (cpu.supports(Isa::Avx512) && cpu.avx512vnni)
    return ComputeLoop{PeakLoop::Kind::DotZmm, 16 * 4 * 2.0, "avx512_vnni"};
  if (cpu.avxVnni)
    return ComputeLoop{PeakLoop::Kind::DotYmm, 8 * 4 * 2.0, "avx_vnni"};
  if (cpu.supports(Isa::Avx2))
    return ComputeLoop{PeakLoop::Kind::S16Ymm, 8 * 2 * 2.0, "avx2_s16"};
  return std::nullopt;
}

/// vdpbf16ps: 2 bf16 products summed into each f32 lane, 2 flops each; none
/// without AVX512-BF16.
std::optional<ComputeLoop> bf16Loop(const x86::CpuFeatures &cpu) {
  if (cpu.supports(Isa::Avx512Bf16))
    return ComputeLoop{PeakLoop::Kind::Bf16Zmm, 16 * 2 * 2.0, "avx512_bf16"};
  return std::nullopt;
}

/// Peak ops/s of `loop` on `threads` threads.
double peakOps(const ComputeLoop &loop, int threads) {
  PeakLoop code(loop.kind);
  return peakOps(code.entry<PeakLoop::Fn>(),
                 PeakLoop::kInstructionsPerIteration * loop.opsPerInstruction, threads);
}

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};

/// Read bandwidth (bytes/s) with `perThreadBytes` per thread, each thread
/// streaming its own buffer (first touched by itself: local pages).
double readBandwidth(ReadLoop::Fn fn, int threads, int64_t perThreadBytes) {
  perThreadBytes =
      std::max<int64_t>(ReadLoop::kBlock, perThreadBytes / ReadLoop::kBlock * ReadLoop::kBlock);
  std::vector<std::unique_ptr<char, FreeDeleter>> buffers(threads);
  bool failed = false;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    char *p = static_cast<char *>(std::aligned_alloc(4096, size_t(perThreadBytes)));
    if (p) {
      std::memset(p, 1, size_t(perThreadBytes));
    } else {
#pragma omp atomic write
      failed = true;
    }
    buffers[t].reset(p);
  }
  if (failed)
    return 0;
  // About kTrialSeconds per trial: passes over the buffer at an assumed 50 GB/s per
  // thread; at least 2 passes (DRAM-sized buffers: fewer, longer trials).
  const int64_t passes =
      std::max<int64_t>(2, int64_t(kTrialSeconds * 50e9 / double(perThreadBytes)));
  const int trials = passes > 2 ? kTrials : 7;
  const double seconds = bestParallelSeconds(
      threads, trials, [&](int t) { fn(buffers[t].get(), perThreadBytes, passes); });
  return double(threads) * double(perThreadBytes) * double(passes) / seconds;
}

/// The data/unified cache of `level` as this CPU sees it: sysfs (what lscpu
/// shows), else sysconf (which under some hypervisors reports the whole
/// package's L3 as one core's); 0 if neither knows.
int64_t cacheBytes(int level) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream levelFile(dir + "/level"), typeFile(dir + "/type"), sizeFile(dir + "/size");
    int fileLevel = 0;
    std::string type, size;
    if (!(levelFile >> fileLevel) || !(typeFile >> type) || !(sizeFile >> size))
      break;
    if (fileLevel != level || type == "Instruction")
      continue;
    char *end = nullptr;
    const long long value = std::strtoll(size.c_str(), &end, 10);
    const int64_t unit = *end == 'K' ? 1024 : *end == 'M' ? 1 << 20 : *end == 'G' ? 1 << 30 : 1;
    if (value > 0)
      return int64_t(value) * unit;
  }
  const long value = sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
  return value > 0 ? int64_t(value) : 0;
}

std::string cpuBrand() {
  unsigned regs[12] = {};
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(0x80000000, &eax, &ebx, &ecx, &edx) || eax < 0x80000004)
    return "unknown x86-64";
  for (unsigned i = 0; i < 3; ++i)
    __get_cpuid(0x80000002 + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
  char text[49] = {};
  std::memcpy(text, regs, 48);
  std::string brand(text);
  // Trim the padding.
  brand.erase(0, brand.find_first_not_of(' '));
  while (!brand.empty() && brand.back() == ' ')
    brand.pop_back();
  return brand.empty() ? "unknown x86-64" : brand;
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || !name[0])
    return "localhost";
  std::string text(name);
  for (char &c : text) // keep the file name tame
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.')
      c = '_';
  return text;
}

std::string fnvHex(const std::string &text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text)
    hash = (hash ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(hash));
  return std::string(out, 8);
}

int resolveThreads(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

std::string jsonEscape(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20)
      continue;
    out += c;
  }
  return out;
}

/// The value after `"key":` in our own flat JSON; false if absent.
bool jsonField(const std::string &json, const std::string &key, std::string &raw) {
  const std::string needle = "\"" + key + "\":";
  size_t at = json.find(needle);
  if (at == std::string::npos)
    return false;
  at += needle.size();
  while (at < json.size() && json[at] == ' ')
    ++at;
  if (at < json.size() && json[at] == '"') {
    std::string value;
    for (size_t i = at + 1; i < json.size(); ++i) {
      if (json[i] == '\\' && i + 1 < json.size()) {
        value += json[++i];
        continue;
      }
      if (json[i] == '"') {
        raw = value;
        return true;
      }
      value += json[i];
    }
    return false;
  }
  size_t end = json.find_first_of(",}\n", at);
  raw = json.substr(at, end == std::string::npos ? std::string::npos : end - at);
  return !raw.empty();
}

/// 2: amx_note added.
constexpr int kCacheVersion = 4; // 3: bf16_gflops; 4: int8 on avx2_s16 without VNNI

} // namespace

std::string Ceilings::toJson() const {
  std::ostringstream os;
  os.precision(17);
  os << "{\n"
     << "  \"version\": " << kCacheVersion << ",\n"
     << "  \"host\": \"" << jsonEscape(host) << "\",\n"
     << "  \"cpu\": \"" << jsonEscape(cpu) << "\",\n"
     << "  \"threads\": " << threads << ",\n"
     << "  \"fp32_isa\": \"" << fp32Isa << "\",\n"
     << "  \"fp32_gflops\": " << fp32Gflops << ",\n"
     << "  \"int8_isa\": \"" << int8Isa << "\",\n"
     << "  \"int8_gops\": " << int8Gops << ",\n"
     << "  \"bf16_gflops\": " << bf16Gflops << ",\n"
     << "  \"amx_int8_gops\": " << amxInt8Gops << ",\n"
     << "  \"amx_note\": \"" << jsonEscape(amxNote) << "\",\n"
     << "  \"l2_gbs\": " << l2GBs << ",\n"
     << "  \"l3_gbs\": " << l3GBs << ",\n"
     << "  \"dram_gbs\": " << dramGBs << ",\n"
     << "  \"l2_buffer_bytes\": " << l2BufferBytes << ",\n"
     << "  \"l3_buffer_bytes\": " << l3BufferBytes << ",\n"
     << "  \"dram_buffer_bytes\": " << dramBufferBytes << ",\n"
     << "  \"l3_cache_bytes\": " << l3CacheBytes << ",\n"
     << "  \"measure_seconds\": " << measureSeconds << "\n"
     << "}\n";
  return os.str();
}

bool Ceilings::fromJson(const std::string &json, Ceilings &out, std::string &error) {
  Ceilings c;
  std::string raw;
  auto number = [&](const char *key, double &value) {
    if (!jsonField(json, key, raw)) {
      error = std::string("no \"") + key + "\"";
      return false;
    }
    char *end = nullptr;
    value = std::strtod(raw.c_str(), &end);
    if (end == raw.c_str() || !(value >= 0)) {
      error = std::string("\"") + key + "\" is not a non-negative number: '" + raw + "'";
      return false;
    }
    return true;
  };
  auto text = [&](const char *key, std::string &value) {
    if (!jsonField(json, key, raw)) {
      error = std::string("no \"") + key + "\"";
      return false;
    }
    value = raw;
    return true;
  };
  double version = 0, threads = 0, l2b = 0, l3b = 0, drb = 0, l3c = 0;
  if (!number("version", version))
    return false;
  if (int(version) != kCacheVersion) {
    error =
        "version " + std::to_string(int(version)) + ", expected " + std::to_string(kCacheVersion);
    return false;
  }
  if (!text("host", c.host) || !text("cpu", c.cpu) || !number("threads", threads) ||
      !text("fp32_isa", c.fp32Isa) || !number("fp32_gflops", c.fp32Gflops) ||
      !text("int8_isa", c.int8Isa) || !number("int8_gops", c.int8Gops) ||
      !number("bf16_gflops", c.bf16Gflops) || !number("amx_int8_gops", c.amxInt8Gops) ||
      !text("amx_note", c.amxNote) || !number("l2_gbs", c.l2GBs) || !number("l3_gbs", c.l3GBs) ||
      !number("dram_gbs", c.dramGBs) || !number("l2_buffer_bytes", l2b) ||
      !number("l3_buffer_bytes", l3b) || !number("dram_buffer_bytes", drb) ||
      !number("l3_cache_bytes", l3c) || !number("measure_seconds", c.measureSeconds))
    return false;
  c.threads = int(threads);
  c.l2BufferBytes = int64_t(l2b), c.l3BufferBytes = int64_t(l3b);
  c.dramBufferBytes = int64_t(drb), c.l3CacheBytes = int64_t(l3c);
  if (c.threads < 1 || c.fp32Gflops <= 0 || c.dramGBs <= 0) {
    error = "threads, fp32_gflops and dram_gbs must be positive";
    return false;
  }
  out = c;
  return true;
}

namespace {

Ceilings measureOnce(int threads) {
  Ceilings c;
  c.threads = resolveThreads(threads);
  c.host = hostName();
  c.cpu = cpuBrand();
  const x86::CpuFeatures &cpu = x86::CpuFeatures::host();
  const bool zmm = cpu.supports(Isa::Avx512);
  const int t = c.threads;

  const ComputeLoop fma = fmaLoop(cpu);
  c.fp32Isa = fma.isa;
  c.fp32Gflops = peakOps(fma, t) / 1e9;
  if (const std::optional<ComputeLoop> dot = dotLoop(cpu)) {
    c.int8Isa = dot->isa;
    c.int8Gops = peakOps(*dot, t) / 1e9;
  }
  if (const std::optional<ComputeLoop> bf16 = bf16Loop(cpu))
    c.bf16Gflops = peakOps(*bf16, t) / 1e9;
  // tdpbusd only where it cannot fault: AMX-INT8 present and XTILEDATA granted
  // (the permission is per process, so every OpenMP thread may use tiles).
  std::string why;
  if (x86::amxUsable(&why)) {
    auto loop = makeAmxPeakLoop();
    c.amxInt8Gops = peakOps(loop->entry<AmxPeakLoop::Fn>(), amxPeakOpsPerIteration(), t) / 1e9;
  } else {
    c.amxNote = why;
  }

  ReadLoop read(zmm);
  auto fn = read.entry<ReadLoop::Fn>();
  const int64_t l2 = cacheBytes(2), l3 = cacheBytes(3);
  c.l3CacheBytes = l3;
  // L2: 256 KiB per thread, or half the L2 where it is smaller.
  const int64_t l2PerThread = l2 > 0 ? std::min<int64_t>(256 << 10, l2 / 2) : 256 << 10;
  // L3: 8 MiB in all, or half the L3 where it is smaller (but above the L2 buffers).
  int64_t l3Total = l3 > 0 ? std::min<int64_t>(8 << 20, l3 / 2) : 8 << 20;
  l3Total = std::max(l3Total, 2 * l2PerThread * t);
  // DRAM: 256 MiB, at least 8x the L3 (up to 2 GiB).
  const int64_t dramTotal =
      std::max<int64_t>(int64_t(256) << 20, std::min<int64_t>(8 * l3, int64_t(2) << 30));
  c.l2GBs = readBandwidth(fn, t, l2PerThread) / 1e9;
  c.l3GBs = readBandwidth(fn, t, l3Total / t) / 1e9;
  c.dramGBs = readBandwidth(fn, t, dramTotal / t) / 1e9;
  c.l2BufferBytes = l2PerThread * t;
  c.l3BufferBytes = l3Total / t * t;
  c.dramBufferBytes = dramTotal / t * t;
  return c;
}

} // namespace

Ceilings measureCeilings(int threads, int rounds) {
  const auto start = Clock::now();
  Ceilings best = measureOnce(threads);
  for (int r = 1; r < rounds; ++r) {
    const Ceilings c = measureOnce(threads);
    best.fp32Gflops = std::max(best.fp32Gflops, c.fp32Gflops);
    best.int8Gops = std::max(best.int8Gops, c.int8Gops);
    best.bf16Gflops = std::max(best.bf16Gflops, c.bf16Gflops);
    best.amxInt8Gops = std::max(best.amxInt8Gops, c.amxInt8Gops);
    best.l2GBs = std::max(best.l2GBs, c.l2GBs);
    best.l3GBs = std::max(best.l3GBs, c.l3GBs);
    best.dramGBs = std::max(best.dramGBs, c.dramGBs);
  }
  best.measureSeconds = std::chrono::duration<double>(Clock::now() - start).count();
  return best;
}

std::string ceilingsCachePath(int threads) {
  std::string dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    dir = std::string(xdg) + "/octet";
  else if (const char *home = std::getenv("HOME"); home && *home)
    dir = std::string(home) + "/.cache/octet";
  else
    dir = "/tmp/octet-cache";
  return dir + "/ceilings-" + hostName() + "-" + fnvHex(cpuBrand()) + "-" +
         std::to_string(resolveThreads(threads)) + ".json";
}

Status loadOrMeasureCeilings(int threads, bool refresh, Ceilings &out, bool *fromCache,
                             std::string *note, int rounds) {
  const std::string path = ceilingsCachePath(threads);
  if (fromCache)
    *fromCache = false;
  if (!refresh) {
    std::ifstream in(path);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      std::string error;
      if (Ceilings::fromJson(text.str(), out, error) && out.threads == resolveThreads(threads)) {
        if (fromCache)
          *fromCache = true;
        return Status();
      }
      if (note)
        *note = "the cache '" + path + "' is unreadable (" + error + "); measured again";
    }
  }
  out = measureCeilings(threads, std::max(1, rounds));
  if (out.fp32Gflops <= 0 || out.dramGBs <= 0)
    return Status::error("measuring the ceilings failed (out of memory for the " +
                         std::to_string(out.dramBufferBytes >> 20) + " MiB stream?)");
  // mkdir -p of the cache directory; failures only cost a re-measure next time.
  const std::string dir = path.substr(0, path.rfind('/'));
  for (size_t at = 1; at != std::string::npos; at = dir.find('/', at + 1))
    ::mkdir(dir.substr(0, at).c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  std::ofstream file(temporary);
  file << out.toJson();
  file.close();
  if (!file || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    if (note)
      *note = "could not write the cache '" + path + "'";
  }
  return Status();
}

std::unique_ptr<x86::KernelGenerator> makeAmxPeakLoop() { return std::make_unique<AmxPeakLoop>(); }

namespace {
/// A peak loop timed in short trials (the run-time samples and the bf16
/// check): best of 2 trials of 5 ms on `threads` threads.
struct SampledLoop {
  static constexpr int kTrials = 2;
  static constexpr double kTrialSeconds = 0.005;
  std::unique_ptr<PeakLoop> code;
  CalibratedLoop loop;
  explicit SampledLoop(const ComputeLoop &compute)
      : code(std::make_unique<PeakLoop>(compute.kind)),
        loop(code->entry<PeakLoop::Fn>(),
             PeakLoop::kInstructionsPerIteration * compute.opsPerInstruction, kTrialSeconds) {}
  double gops(int threads) const { return loop.opsPerSecond(threads, kTrials) / 1e9; }
};
} // namespace

struct ComputePeakSampler::Loops {
  std::optional<SampledLoop> fma, dot, bf16; ///< dot, bf16 empty without VNNI, AVX512-BF16
};

ComputePeakSampler::ComputePeakSampler(int threads, bool int8, bool bf16)
    : loops_(std::make_unique<Loops>()), threads_(resolveThreads(threads)) {
  const x86::CpuFeatures &cpu = x86::CpuFeatures::host();
  loops_->fma.emplace(fmaLoop(cpu));
  if (const std::optional<ComputeLoop> dot = dotLoop(cpu); dot && int8)
    loops_->dot.emplace(*dot);
  if (const std::optional<ComputeLoop> loop = bf16Loop(cpu); loop && bf16)
    loops_->bf16.emplace(*loop);
}

ComputePeakSampler::~ComputePeakSampler() = default;

void ComputePeakSampler::sample() {
  fp32Gflops_.push_back(loops_->fma->gops(threads_));
  int8Gops_.push_back(loops_->dot ? loops_->dot->gops(threads_) : 0.0);
  bf16Gflops_.push_back(loops_->bf16 ? loops_->bf16->gops(threads_) : 0.0);
  handoffNs_.push_back(handoffNanoseconds(threads_));
}

SampledPeaks ComputePeakSampler::peaks() const {
  return {int(fp32Gflops_.size()), median(fp32Gflops_), median(int8Gops_), median(bf16Gflops_),
          median(handoffNs_)};
}

std::string handoffNote(double ns) {
  return ns > kFarHandoffNs
             ? "far apart (different core complexes or sockets), so steps that read what the "
               "other thread wrote run slower than they would close together"
             : "";
}

double handoffNanoseconds(int threads) {
  if (resolveThreads(threads) < 2)
    return 0;
  constexpr int kHandoffs = 2000, kTrials = 3;
  // A spin that outlasts this many polls gives up (a thread descheduled for
  // long on an overloaded host): that trial does not count.
  constexpr int64_t kMaxPolls = int64_t(1) << 26;
  double best = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    alignas(64) std::atomic<int> flag{0};
    std::atomic<bool> gaveUp{false};
    Clock::time_point start, end;
#pragma omp parallel num_threads(2)
    {
      if (omp_get_num_threads() == 2) {
        const int me = omp_get_thread_num();
#pragma omp barrier
#pragma omp single
        start = Clock::now();
        for (int next = me; next < kHandoffs && !gaveUp.load(std::memory_order_relaxed);
             next += 2) {
          for (int64_t polls = 0; flag.load(std::memory_order_acquire) != next; ++polls)
            if (polls == kMaxPolls || gaveUp.load(std::memory_order_relaxed)) {
              gaveUp = true;
              break;
            }
          flag.store(next + 1, std::memory_order_release);
        }
#pragma omp barrier
#pragma omp single
        end = Clock::now();
      } else {
#pragma omp single
        gaveUp = true; // no second thread to hand to
      }
    }
    if (gaveUp)
      continue;
    const double ns = std::chrono::duration<double, std::nano>(end - start).count() / kHandoffs;
    best = best > 0 ? std::min(best, ns) : ns;
  }
  return best;
}

Ceilings SampledPeaks::apply(Ceilings c) const {
  if (samples == 0)
    return c;
  c.fp32Gflops = fp32Gflops;
  c.int8Gops = int8Gops;
  c.bf16Gflops = bf16Gflops;
  return c;
}

std::string bf16SlowerThanFp32() {
  const x86::CpuFeatures &cpu = x86::CpuFeatures::host();
  const std::optional<ComputeLoop> bf16 = bf16Loop(cpu);
  if (!bf16)
    return "";
  // One thread (the ratio, not the peak, matters): ~24 ms with the calibration.
  const double fp32 = SampledLoop(fmaLoop(cpu)).gops(1), bf16Peak = SampledLoop(*bf16).gops(1);
  return bf16SlowNote(bf16Peak, fp32);
}

std::string bf16SlowNote(double bf16Gflops, double fp32Gflops) {
  if (!(bf16Gflops > 0) || !(fp32Gflops > 0) || !(bf16Gflops < fp32Gflops))
    return "";
  std::ostringstream os;
  os.precision(0);
  os << std::fixed << "this CPU's vdpbf16ps peaks at " << bf16Gflops
     << " GFLOP/s per thread against " << fp32Gflops
     << " for FP32 FMA: bf16 linears run slower here than the default f32 (their "
        "weights still take half the bytes)";
  return os.str();
}

double amxPeakOpsPerIteration() {
  return AmxPeakLoop::kTdpbusdPerIteration * AmxPeakLoop::kOpsPerTdpbusd;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

/// Runs `body(thread)` on every thread at once `trials` times; returns the
/// shortest wall time of a trial (all threads start together at a barrier).
double bestParallelSeconds(int threads, int trials, const std::function<void(int)> &body) {
  double best = 1e30;
  for (int trial = 0; trial < trials; ++trial) {
    Clock::time_point start;
#pragma omp parallel num_threads(threads)
    {
#pragma omp barrier
#pragma omp single
      start = Clock::now();
      // `single` ends with a barrier: every thread starts after the clock read.
      body(omp_get_thread_num());
    }
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

} // namespace octet::rt
