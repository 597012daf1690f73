//===- FusionReport.cpp - the fusion report as text -----------------------===//
#include "compiler/passes/FusionReport.h"

using namespace octet;

const char *FusionReport::name(BlockKind block) {
  switch (block) {
  case BlockKind::Attention:
    return "attention";
  case BlockKind::LayerNorm:
    return "LayerNorm";
  case BlockKind::Gelu:
    return "GELU";
  }
  return "block";
}

int FusionReport::unfusedCount(BlockKind block) const {
  int count = 0;
  for (const Unfused &u : unfused)
    count += u.block == block;
  return count;
}

static std::string countLine(const FusionReport &report, FusionReport::BlockKind block,
                             const char *verb) {
  int missed = report.unfusedCount(block), total = missed + report.fused[int(block)];
  int shown = std::string(verb) == "fused" ? report.fused[int(block)] : missed;
  return std::to_string(shown) + " of " + std::to_string(total) + " " +
         FusionReport::name(block) + " blocks " + verb;
}

std::string FusionReport::text() const {
  using B = BlockKind;
  std::string text = "fusion: " + countLine(*this, B::Attention, "fused") + ", " +
                     countLine(*this, B::LayerNorm, "fused") + ", " +
                     countLine(*this, B::Gelu, "fused") + "\n";
  for (const Unfused &u : unfused)
    text += std::string("not fused: ") + name(u.block) + " at " + u.where + ": " + u.reason + "\n";
  if (!paddingKept.empty())
    text += "padding kept: " + paddingKept + "\n";
  if (!slowPrecision.empty())
    text += "slow precision: --precision bf16: " + slowPrecision + "\n";
  return text;
}

std::string FusionReport::warning() const {
  std::string parts;
  for (BlockKind block : {BlockKind::Attention, BlockKind::LayerNorm, BlockKind::Gelu}) {
    if (!unfusedCount(block))
      continue;
    parts += (parts.empty() ? "" : ", ") + countLine(*this, block, "not fused");
  }
  std::string padding =
      paddingKept.empty() ? "" : "padding tokens are computed like real ones (" + paddingKept + ")";
  std::string notes = padding;
  if (!slowPrecision.empty())
    notes += std::string(notes.empty() ? "" : "; ") + "--precision bf16: " + slowPrecision;
  if (parts.empty())
    return notes;
  return parts + "; --explain-fusion says why (the unfused blocks run as slower generic steps)" +
         (notes.empty() ? "" : "; " + notes);
}
