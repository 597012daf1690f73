//===- Pipeline.cpp - the standard pass pipelines -------------------------===//
#include "compiler/passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void octet::buildFp32Pipeline(OpPassManager &pm) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createOctetCleanup());
  fn.addPass(createOctetRecognize());
  fn.addPass(createOctetCleanup());
  fn.addPass(createOctetFuseGemmEpilogue());
  fn.addPass(createOctetFuseElementwise());
  fn.addPass(createOctetPlanMemory());
}

void octet::registerOctetPipelines() {
  PassPipelineRegistration<>(
      "octet-fp32-pipeline",
      "The FP32 pipeline so far: cleanup, recognize, cleanup, fuse-gemm-epilogue, fuse-elementwise, "
      "plan-memory",
      buildFp32Pipeline);
}
