//===- OctetDialect.td - the octet dialect ----------------------*- tablegen -*-===//
#ifndef OCTET_DIALECT_TD
#define OCTET_DIALECT_TD

include "mlir/IR/OpBase.td"

def Octet_Dialect : Dialect {
  let name = "octet";
  let cppNamespace = "::octet";
  let summary = "Tensor-level ops of BERT-family encoders, FP32 and INT8";
  let description = [{
    The `octet` dialect is what the ONNX importer produces and what every Octet
    pass rewrites. Values are ranked tensors of builtin types; a dimension that
    is not fixed (batch, sequence) is `?` and its run-time size is an `index`
    value (`octet.dim`). Ops that take a run-time shape (`octet.reshape`,
    `octet.expand`) list one `index` operand per `?` of their result type, in
    order, as `tensor.empty` does. Axes are stored non-negative.

    ONNX integer types map to signless integers (`i8`, `i32`, `i64`) and
    unsigned ones to `ui8`, `ui16`, …; bool maps to `i1`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    void registerOps();
  }];
}

class Octet_Op<string mnemonic, list<Trait> traits = []>
    : Op<Octet_Dialect, mnemonic, traits>;

#endif // OCTET_DIALECT_TD
