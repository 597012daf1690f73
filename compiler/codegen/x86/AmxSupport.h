//===- AmxSupport.h - AMX permission, tile configuration, tile emulator -*- C++ -*-===//
//
// Three things every AMX kernel needs besides its code:
//  - Permission. Linux (5.16+) leaves the 8 KiB XTILEDATA state out of a
//    process's signal frames until it asks for it with
//    arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18); the first tile
//    instruction of a process that did not ask is killed with SIGILL.
//  - The 64-byte tile configuration that ldtilecfg loads (palette 1: 8 tiles
//    of at most 16 rows x 64 bytes).
//  - AmxTileEmulator: ldtilecfg / tilezero / tileloadd / tdpbusd / tilestored
//    in C++, with the hardware's #UD checks as exceptions, so the blocking of
//    an AMX kernel can be tested on a CPU without AMX.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_AMXSUPPORT_H
#define OCTET_COMPILER_CODEGEN_X86_AMXSUPPORT_H

#include <array>
#include <cstdint>
#include <string>

namespace octet::x86 {

/// Palette 1 limits.
constexpr int kAmxTiles = 8, kAmxMaxRows = 16, kAmxMaxColsb = 64;

/// Asks Linux once per process for the AMX tile data state. Returns "" when
/// granted (or already granted), else why not (no AMX-INT8 on the CPU, the OS
/// does not enable tile state, or the kernel refused: errno's text).
/// Thread-safe; the answer is computed once.
const std::string &requestAmxPermission();

/// The host can run AMX-INT8 kernels: CpuFeatures says AMX (with AVX-512 for
/// the epilogue) and requestAmxPermission() succeeded. `why` gets the reason
/// when not.
bool amxUsable(std::string *why = nullptr);

/// One palette-1 tile configuration: per tile its rows and bytes per row
/// (0 rows and 0 bytes: unused).
struct AmxTileConfig {
  std::array<uint8_t, kAmxTiles> rows{};
  std::array<uint16_t, kAmxTiles> colsb{};
  /// ldtilecfg's 64-byte memory operand: palette 1, start_row 0, colsb[16]
  /// (u16) at byte 16, rows[16] (u8) at byte 48.
  std::array<uint8_t, 64> bytes() const;
  bool operator==(const AmxTileConfig &o) const { return rows == o.rows && colsb == o.colsb; }
};

/// The tile instructions of palette 1, executed in C++. Every instruction
/// checks what the CPU checks (and throws std::logic_error naming the
/// instruction and the violated rule where the CPU raises #UD): a tile used
/// before ldtilecfg, tdpbusd's shape rules (C rows = A rows, C colsb = B
/// colsb, A colsb = 4 * B rows, colsb % 4 = 0, three distinct tiles). Loads
/// read exactly rows x colsb bytes and zero the rest of the tile, as the CPU.
class AmxTileEmulator {
public:
  void ldtilecfg(const std::array<uint8_t, 64> &config);
  void tilerelease() { configured_ = false; }
  void tilezero(int tile);
  void tileloadd(int tile, const void *base, int64_t stride);
  void tilestored(void *base, int64_t stride, int tile) const;
  void tdpbusd(int c, int a, int b);
  const AmxTileConfig &config() const { return config_; }

private:
  void check(int tile, const char *instruction) const;
  bool configured_ = false;
  AmxTileConfig config_;
  alignas(64) uint8_t data_[kAmxTiles][kAmxMaxRows][kAmxMaxColsb] = {};
};

} // namespace octet::x86

#endif
