//===- Ops.cpp - octetc ops: the supported ONNX op types ------------------===//
#include "tools/octetc/Octetc.h"

#include "frontends/onnx/Importer.h"

#include "llvm/Support/raw_ostream.h"

namespace octetc {

int runOps() {
  for (llvm::StringRef op : octet::supportedOnnxOps())
    llvm::outs() << op << "\n";
  return 0;
}

} // namespace octetc
