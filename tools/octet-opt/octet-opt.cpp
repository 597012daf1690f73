//===- octet-opt.cpp - the MLIR opt driver with octet registered ----------===//
#include "compiler/passes/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  octet::registerOctetDialects(registry);
  octet::registerOctetPasses();
  octet::registerOctetPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Octet optimizer driver\n", registry));
}
