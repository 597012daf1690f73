//===- Main.cpp - the Octet command line: octetc --------------------------===//
//
//   octetc import MODEL [-o OUT] [--elide-weights | --emit-bytecode]   ONNX → octet IR
//   octetc ops                                            supported ONNX ops
//   octetc run MODEL [--input NAME=FILE ...] [--input-sets DIR] [--int8=...] ...   compile and run
//   octetc compile MODEL -o model.so [--int8=...] ...     AOT: a self-contained model.so
//   octetc inspect model.so [--code FILE]                 what a model.so holds
//   octetc calibrate MODEL --samples DIR|generate:SPEC [-o FILE]   calibrated IR (octet.calib)
//   octetc ceilings [--refresh]                           the roofline's machine ceilings
//
//===----------------------------------------------------------------------===//
#include "tools/octetc/Octetc.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <utility>

using namespace octetc;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Each subcommand and its entry point, in the order --help lists them.
  const std::pair<cl::SubCommand *, int (*)()> commands[] = {
      {&importCommand, runImport},    {&opsCommand, runOps},
      {&runCommand, runRun},          {&compileCommand, runCompile},
      {&inspectCommand, runInspect},  {&calibrateCommand, runCalibrate},
      {&ceilingsCommand, runCeilings}};
  cl::HideUnrelatedOptions(octetcCategory, cl::SubCommand::getTopLevel());
  for (const auto &[command, entry] : commands)
    cl::HideUnrelatedOptions(octetcCategory, *command);
  cl::ParseCommandLineOptions(argc, argv,
                              "octetc: the Octet INT8 inference compiler for BERT-family "
                              "encoders\n");
  for (const auto &[command, entry] : commands)
    if (*command)
      return entry();
  llvm::errs() << "octetc: give a subcommand (import, ops, run, compile, inspect, calibrate, "
                  "ceilings); see octetc --help\n";
  return 1;
}
