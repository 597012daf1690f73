//===- AmxSupport.cpp -----------------------------------------------------===//
#include "compiler/codegen/x86/AmxSupport.h"
#include "compiler/codegen/x86/KernelGenerator.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace octet::x86 {

namespace {
// <asm/prctl.h> names, spelled out: older kernel headers lack them.
constexpr int kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

std::string askKernel() {
  const CpuFeatures &cpu = CpuFeatures::host();
  if (!cpu.amxTile || !cpu.amxInt8)
    return "the CPU lacks AMX-TILE/AMX-INT8, or the OS does not enable tile state in XCR0 "
           "(host has: " +
           cpu.describe() + ")";
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
    return std::string("arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) failed: ") +
           std::strerror(errno);
  // The request can succeed on a kernel that then does not report the bit.
  unsigned long permitted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0)
    return std::string("arch_prctl(ARCH_GET_XCOMP_PERM) failed: ") + std::strerror(errno);
  if (!(permitted & (1ul << kXfeatureXtiledata)))
    return "the kernel accepted the AMX request but does not grant XTILEDATA";
  return "";
}
} // namespace

const std::string &requestAmxPermission() {
  static const std::string answer = askKernel();
  return answer;
}

bool amxUsable(std::string *why) {
  std::string reason;
  if (!CpuFeatures::host().supports(Isa::AmxInt8))
    reason = "host lacks AMX-INT8 with AVX-512 (host has: " + CpuFeatures::host().describe() + ")";
  else
    reason = requestAmxPermission();
  if (why)
    *why = reason;
  return reason.empty();
}

std::array<uint8_t, 64> AmxTileConfig::bytes() const {
  std::array<uint8_t, 64> b{};
  b[0] = 1; // palette 1
  for (int t = 0; t < kAmxTiles; ++t) {
    b[16 + 2 * t] = uint8_t(colsb[t] & 0xff);
    b[16 + 2 * t + 1] = uint8_t(colsb[t] >> 8);
    b[48 + t] = rows[t];
  }
  return b;
}

namespace {
[[noreturn]] void undefined(const char *instruction, const std::string &why) {
  throw std::logic_error(std::string(instruction) + ": #UD: " + why);
}
} // namespace

void AmxTileEmulator::ldtilecfg(const std::array<uint8_t, 64> &config) {
  if (config[0] != 1)
    undefined("ldtilecfg", "palette " + std::to_string(config[0]) + " (only 1 is emulated)");
  if (config[1] != 0)
    undefined("ldtilecfg", "start_row must be 0");
  AmxTileConfig c;
  for (int t = 0; t < 16; ++t) {
    const int rows = config[48 + t], colsb = config[16 + 2 * t] | config[17 + 2 * t] << 8;
    if (t >= kAmxTiles) {
      if (rows || colsb)
        undefined("ldtilecfg", "tile " + std::to_string(t) + " does not exist in palette 1");
      continue;
    }
    if (rows > kAmxMaxRows || colsb > kAmxMaxColsb || (rows == 0) != (colsb == 0))
      undefined("ldtilecfg", "tile " + std::to_string(t) + ": " + std::to_string(rows) +
                                 " rows x " + std::to_string(colsb) + " bytes");
    c.rows[t] = uint8_t(rows), c.colsb[t] = uint16_t(colsb);
  }
  config_ = c;
  configured_ = true;
  std::memset(data_, 0, sizeof data_); // ldtilecfg zeroes every tile
}

void AmxTileEmulator::check(int tile, const char *instruction) const {
  if (!configured_)
    undefined(instruction, "no tile configuration loaded");
  if (tile < 0 || tile >= kAmxTiles || config_.rows[tile] == 0)
    undefined(instruction, "tile " + std::to_string(tile) + " is not configured");
}

void AmxTileEmulator::tilezero(int tile) {
  check(tile, "tilezero");
  std::memset(data_[tile], 0, sizeof data_[tile]);
}

void AmxTileEmulator::tileloadd(int tile, const void *base, int64_t stride) {
  check(tile, "tileloadd");
  std::memset(data_[tile], 0, sizeof data_[tile]);
  for (int r = 0; r < config_.rows[tile]; ++r)
    std::memcpy(data_[tile][r], static_cast<const uint8_t *>(base) + r * stride,
                config_.colsb[tile]);
}

void AmxTileEmulator::tilestored(void *base, int64_t stride, int tile) const {
  check(tile, "tilestored");
  for (int r = 0; r < config_.rows[tile]; ++r)
    std::memcpy(static_cast<uint8_t *>(base) + r * stride, data_[tile][r], config_.colsb[tile]);
}

void AmxTileEmulator::tdpbusd(int c, int a, int b) {
  check(c, "tdpbusd"), check(a, "tdpbusd"), check(b, "tdpbusd");
  if (c == a || c == b || a == b)
    undefined("tdpbusd", "the three tiles must differ");
  const AmxTileConfig &f = config_;
  if (f.colsb[c] % 4 || f.colsb[a] % 4 || f.colsb[b] % 4)
    undefined("tdpbusd", "colsb must be a multiple of 4");
  if (f.rows[c] != f.rows[a])
    undefined("tdpbusd",
              "C rows " + std::to_string(f.rows[c]) + " != A rows " + std::to_string(f.rows[a]));
  if (f.colsb[c] != f.colsb[b])
    undefined("tdpbusd", "C colsb " + std::to_string(f.colsb[c]) + " != B colsb " +
                             std::to_string(f.colsb[b]));
  if (f.colsb[a] != 4 * f.rows[b])
    undefined("tdpbusd", "A colsb " + std::to_string(f.colsb[a]) + " != 4 * B rows " +
                             std::to_string(f.rows[b]));
  // C[m][n] (s32) += sum_k sum_{i<4} u8 A[m][4k+i] * s8 B[k][4n+i]
  for (int m = 0; m < f.rows[c]; ++m)
    for (int n = 0; n < f.colsb[c] / 4; ++n) {
      int32_t acc;
      std::memcpy(&acc, &data_[c][m][4 * n], 4);
      for (int k = 0; k < f.rows[b]; ++k)
        for (int i = 0; i < 4; ++i)
          acc += int32_t(data_[a][m][4 * k + i]) * int32_t(int8_t(data_[b][k][4 * n + i]));
      std::memcpy(&data_[c][m][4 * n], &acc, 4);
    }
}

} // namespace octet::x86
