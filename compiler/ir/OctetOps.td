//===- OctetOps.td - octet dialect ops --------------------------*- tablegen -*-===//
#ifndef OCTET_OPS_TD
#define OCTET_OPS_TD

include "compiler/ir/OctetDialect.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Octet_Tensor : RankedTensorOf<[AnyType]>;
def Octet_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Octet_BoolTensor : RankedTensorOf<[I1]>;
def Octet_IntTensor : RankedTensorOf<[AnyInteger]>;
def Octet_QuantTensor : RankedTensorOf<[I8, UI8]>;
def Octet_F32Tensor : RankedTensorOf<[F32]>;
def Octet_I32Tensor : RankedTensorOf<[I32]>;
def Octet_TokenLayout : 1DTensorOf<[I64]>;
def Octet_Axes : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayNonNegative<DenseI64ArrayAttr>]>;
def Octet_Axis : ConfinedAttr<I64Attr, [IntNonNegative]>;

//===----------------------------------------------------------------------===//
// Constants and shapes
//===----------------------------------------------------------------------===//

def Octet_ConstantOp : Octet_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a tensor constant (weights, biases, scalars)";
  let description = [{
    Holds a tensor value. Small constants are `dense<…>` attributes; imported
    weights are `dense_resource<…>` blobs that reference the model's bytes
    without copying them.

    ```mlir
    %eps = octet.constant dense<9.99999996E-13> : tensor<f32>
    %w = octet.constant dense_resource<encoder.q.weight> : tensor<768x768xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Octet_DimOp : Octet_Op<"dim", [Pure]> {
  let summary = "the run-time size of one dimension of a tensor";
  let description = [{
    Folds to a constant when the dimension is static, and to the size operand
    that produced it when the tensor comes from `octet.reshape` or
    `octet.expand`. Otherwise it moves to the operand dim that provably has the
    same size: the input of shape-preserving ops, `transpose`, `slice` (unsliced
    axes), `concat` (other axes), `gather`, reductions, `linear`, `matmul` and
    broadcasting ops (where the other operand has no such dim or a static 1).

    ```mlir
    %seq = octet.dim %input_ids[1] : tensor<?x?xi64>
    ```
  }];
  let arguments = (ins Octet_Tensor:$source, Octet_Axis:$index);
  let results = (outs Index:$result);
  let assemblyFormat = "$source `[` $index `]` attr-dict `:` type($source)";
  let hasCanonicalizer = 1;
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Octet_FromElementsOp : Octet_Op<"from_elements", [Pure]> {
  let summary = "a 1-D integer tensor made of index values (a shape as data)";
  let description = [{
    Materializes a shape computed at run time when a model uses it as data
    (e.g. ONNX `Shape` as a graph output).

    ```mlir
    %shape = octet.from_elements %b, %s : tensor<2xi64>
    ```
  }];
  let arguments = (ins Variadic<Index>:$elements);
  let results = (outs RankedTensorOf<[I64, I32]>:$result);
  let assemblyFormat = "$elements attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Octet_ElementIndexOp : Octet_Op<"element_index", [Pure]> {
  let summary = "one element of a small integer tensor, as an index (a shape read from data)";
  let description = [{
    The element at flat position `position` of a 0-D or 1-D integer tensor,
    sign-extended to `index`. This is how a shape that a model takes as a
    graph input (Tile's repeats, Expand's shape in the ONNX node tests)
    reaches the sizes of other ops. The runtime evaluates every size once per
    run before any step, so it reads only graph inputs this way: the plan
    builder rejects any other operand, naming it. Folds on constants.

    ```mlir
    %r1 = octet.element_index %repeats[1] : tensor<2xi64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyInteger]>:$input, Octet_Axis:$position);
  let results = (outs Index:$result);
  let assemblyFormat = "$input `[` $position `]` attr-dict `:` type($input)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Octet_RangeOp : Octet_Op<"range", [Pure]> {
  let summary = "start, start + delta, … up to (excluding) limit";
  let description = [{
    ONNX `Range` over integers, with run-time bounds (position ids).

    ```mlir
    %pos = octet.range %c0, %seq, %c1 : tensor<?xi64>
    ```
  }];
  let arguments = (ins Index:$start, Index:$limit, Index:$delta);
  let results = (outs RankedTensorOf<[I64, I32, F32]>:$result);
  let assemblyFormat = "$start `,` $limit `,` $delta attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops (numpy broadcasting)
//===----------------------------------------------------------------------===//

class Octet_BinaryOp<string mnemonic, string what, list<Trait> traits = [],
                     string resultNote = "The result has the operands' element type; `i1` is rejected.",
                     string exampleElement = "f32">
    : Octet_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor])> {
  let summary = "elementwise " # what # " with numpy broadcasting";
  let description = [{
    Elementwise over the broadcast shape of both operands (ONNX / numpy rules:
    shapes align at the right, a dim of 1 stretches). Both operands have the
    same element type. }] # resultNote # [{ Folds on small constants.

    ```mlir
    %y = octet.}] # mnemonic # [{ %a, %b : tensor<?x?x768x}] # exampleElement #
    [{>, tensor<768x}] # exampleElement # [{>
    ```
  }];
  let arguments = (ins Octet_Tensor:$lhs, Octet_Tensor:$rhs);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Octet_AddOp : Octet_BinaryOp<"add", "sum", [Commutative]>;
def Octet_SubOp : Octet_BinaryOp<"sub", "difference">;
def Octet_MulOp : Octet_BinaryOp<"mul", "product", [Commutative]>;
def Octet_DivOp : Octet_BinaryOp<"div", "quotient (integers round toward zero)">;
def Octet_PowOp : Octet_BinaryOp<"pow", "power">;
def Octet_MaxOp : Octet_BinaryOp<"max", "maximum", [Commutative]>;
def Octet_MinOp : Octet_BinaryOp<"min", "minimum", [Commutative]>;
def Octet_EqualOp : Octet_BinaryOp<"equal", "comparison a == b (to i1)", [Commutative],
                                   "The result is `i1`.">;
def Octet_LessOp : Octet_BinaryOp<"less", "comparison a < b (to i1)", [], "The result is `i1`.">;
def Octet_GreaterOp : Octet_BinaryOp<"greater", "comparison a > b (to i1)", [], "The result is `i1`.">;
def Octet_AndOp : Octet_BinaryOp<"and", "logical and of i1", [Commutative],
                                 "Operands and result are `i1`.", "i1">;
def Octet_OrOp : Octet_BinaryOp<"or", "logical or of i1", [Commutative],
                                "Operands and result are `i1`.", "i1">;

class Octet_UnaryOp<string mnemonic, string what, Type operandType = Octet_FloatTensor,
                    string exampleElement = "f32">
    : Octet_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise " # what;
  let description = [{
    Elementwise; the result has the operand's type. Folds on small constants.

    ```mlir
    %y = octet.}] # mnemonic # [{ %x : tensor<?x?x768x}] # exampleElement # [{>
    ```
  }];
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Octet_NegOp : Octet_UnaryOp<"neg", "negation", Octet_Tensor>;
def Octet_AbsOp : Octet_UnaryOp<"abs", "absolute value", Octet_Tensor>;
def Octet_ExpOp : Octet_UnaryOp<"exp", "e^x">;
def Octet_LogOp : Octet_UnaryOp<"log", "natural logarithm">;
def Octet_ErfOp : Octet_UnaryOp<"erf", "error function">;
def Octet_TanhOp : Octet_UnaryOp<"tanh", "hyperbolic tangent">;
def Octet_SqrtOp : Octet_UnaryOp<"sqrt", "square root">;
def Octet_RsqrtOp : Octet_UnaryOp<"rsqrt", "1 / sqrt(x)">;
def Octet_ReciprocalOp : Octet_UnaryOp<"reciprocal", "1 / x">;
def Octet_ReluOp : Octet_UnaryOp<"relu", "max(x, 0)">;
def Octet_SigmoidOp : Octet_UnaryOp<"sigmoid", "1 / (1 + e^-x)">;
def Octet_NotOp : Octet_UnaryOp<"not", "logical negation", Octet_BoolTensor, "i1">;

def Octet_CeilOp : Octet_UnaryOp<"ceil", "rounding up to an integral value">;
def Octet_FloorOp : Octet_UnaryOp<"floor", "rounding down to an integral value">;
def Octet_SignOp : Octet_UnaryOp<"sign", "sign: -1, 0 or 1 (NaN stays NaN)", Octet_Tensor>;
def Octet_XorOp : Octet_BinaryOp<"xor", "logical exclusive or of i1", [Commutative],
                                 "Operands and result are `i1`.", "i1">;

def Octet_ModOp : Octet_Op<"mod", [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise remainder with numpy broadcasting (ONNX Mod)";
  let description = [{
    Without `fmod` (integers only): the remainder has the sign of the divisor,
    as Python's `%` (`-7 mod 3` is 2). With `fmod`: the remainder has the
    sign of the dividend, as C's `fmod` (`-7 fmod 3` is -1); floats need it.
    An integer divisor of 0 is an error at run time. Folds on small constants.

    ```mlir
    %r = octet.mod %a, %b : tensor<?xi64>, tensor<i64>
    %f = octet.mod %x, %y fmod : tensor<?x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Octet_Tensor:$lhs, Octet_Tensor:$rhs, UnitAttr:$fmod);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`fmod` $fmod^)? attr-dict `:` type($lhs) `,` type($rhs)
  }];
  let hasFolder = 1;
  let hasVerifier = 1;
}

class Octet_FloatTestOp<string mnemonic, string what>
    : Octet_Op<mnemonic, [Pure, SameOperandsAndResultShape, InferTypeOpAdaptor]> {
  let summary = "elementwise " # what # " of a float, to i1";
  let results = (outs Octet_BoolTensor:$result);
  let hasFolder = 1;
}

def Octet_IsNanOp : Octet_FloatTestOp<"is_nan", "NaN test"> {
  let description = [{
    ONNX `IsNaN`: true where the element is NaN; the result has the input's
    shape.

    ```mlir
    %m = octet.is_nan %p : tensor<?x12x?x?xf32>
    ```
  }];
  let arguments = (ins Octet_FloatTensor:$input);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Octet_IsInfOp : Octet_FloatTestOp<"is_inf", "infinity test"> {
  let description = [{
    ONNX `IsInf`: true where the element is +inf (when `detect_positive`) or
    -inf (when `detect_negative`); both by default. With neither, every
    element is false.

    ```mlir
    %m = octet.is_inf %x : tensor<?x4xf32>
    %n = octet.is_inf %x detect_positive = false : tensor<?x4xf32>
    ```
  }];
  let arguments = (ins Octet_FloatTensor:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_negative,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_positive);
  let assemblyFormat = [{
    $input (`detect_negative` `=` $detect_negative^)? (`detect_positive` `=` $detect_positive^)?
    attr-dict `:` type($input)
  }];
}

def Octet_CastOp : Octet_Op<"cast", [Pure, SameOperandsAndResultShape]> {
  let summary = "elementwise conversion of the element type";
  let description = [{
    Converts as ONNX `Cast` does: float to integer truncates toward zero,
    anything to `i1` is `x != 0`.

    ```mlir
    %f = octet.cast %mask : tensor<?x?xi64> to tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Octet_Tensor:$input);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

def Octet_WhereOp : Octet_Op<"where", [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise select: cond ? a : b, with broadcasting";
  let description = [{
    ONNX `Where`: the condition and both branches broadcast together (numpy
    rules); the branches have the same element type, which is the result's.

    ```mlir
    %y = octet.where %c, %a, %b : tensor<?x1x1x?xi1>, tensor<f32>, tensor<?x12x?x?xf32>
    ```
  }];
  let arguments = (ins Octet_BoolTensor:$condition, Octet_Tensor:$lhs, Octet_Tensor:$rhs);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,` type($rhs)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and reductions
//===----------------------------------------------------------------------===//

def Octet_MatMulOp : Octet_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "matrix product with numpy semantics (batched, broadcast)";
  let description = [{
    `numpy.matmul`: the last two dims are multiplied, leading dims broadcast;
    a 1-D operand is a vector.

    ```mlir
    %s = octet.matmul %q, %kt : tensor<?x12x?x64xf32>, tensor<?x12x64x?xf32>
    ```
  }];
  let arguments = (ins Octet_Tensor:$lhs, Octet_Tensor:$rhs);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasVerifier = 1;
}

/// Shared by the ops with a `weight` and `transpose_weight`.
defvar Octet_LinearFeatureDims = [{
  /// The weight dims of the output features N and the reduced K.
  int64_t getOutputFeatureDim() { return getTransposeWeight() ? 0 : 1; }
  int64_t getInputFeatureDim() { return getTransposeWeight() ? 1 : 0; }
}];

def Octet_LinearOp : Octet_Op<"linear", [Pure, InferTypeOpAdaptor]> {
  let summary = "x · W (+ bias): a dense layer with a 2-D weight";
  let description = [{
    `x` is `[..., K]`, `weight` is `[K, N]`, the optional `bias` is `[N]`; the
    result is `[..., N]`. With `transpose_weight`, `weight` is `[N, K]` (torch
    `nn.Linear`'s layout, ONNX `Gemm` with `transB = 1`) and the product is
    x · Wᵀ, so imported weights keep their layout and are never copied.
    `octet-recognize` forms it from `matmul` (of a transposed constant) + `add`.

    ```mlir
    %y = octet.linear %x, %w, %b : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>
    %z = octet.linear %x, %wt, %b transpose_weight : tensor<?x?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>
    ```
  }];
  let arguments = (ins Octet_Tensor:$input, Octet_Tensor:$weight,
                       Optional<Octet_Tensor>:$bias, UnitAttr:$transpose_weight);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`transpose_weight` $transpose_weight^)? attr-dict
    `:` type($input) `,` type($weight) (`,` type($bias)^)?
  }];
  let extraClassDeclaration = Octet_LinearFeatureDims;
  let hasVerifier = 1;
}

def Octet_FusedLinearOp : Octet_Op<"fused_linear",
    [Pure, AttrSizedOperandSegments, IsolatedFromAbove]> {
  let summary = "a linear layer with an elementwise epilogue in a scalar region";
  let description = [{
    Computes `acc = x · W (+ bias)` exactly as `octet.linear` (same operands,
    same `transpose_weight`), then runs the `epilogue` region on every element
    of the result. The region's block takes the accumulator as an `f32`, then
    one `f32` per `extra` operand: the element of that tensor at the same
    position, broadcast (numpy rules) to the result shape, which it must not
    widen. The body is side-effect-free scalar `arith`/`math` ops, isolated
    from above (its constants are inside), and `octet.yield`s the result
    element. `octet-fuse-gemm-epilogue` forms it from a linear and the
    elementwise ops that follow it; one code generator lowers any body
    (the `linalg.generic` convention).

    ```mlir
    %y = octet.fused_linear %x, %w, %b extra(%r : tensor<?x?x3072xf32>) {
    ^bb0(%acc: f32, %r0: f32):
      %zero = arith.constant 0.000000e+00 : f32
      %relu = arith.maximumf %acc, %zero : f32
      %sum = arith.addf %relu, %r0 : f32
      octet.yield %sum : f32
    } : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32> -> tensor<?x?x3072xf32>
    ```
  }];
  let arguments = (ins Octet_F32Tensor:$input, Octet_F32Tensor:$weight,
                       Optional<Octet_F32Tensor>:$bias, Variadic<Octet_F32Tensor>:$extra,
                       UnitAttr:$transpose_weight);
  let results = (outs Octet_F32Tensor:$result);
  let regions = (region SizedRegion<1>:$epilogue);
  // The region comes before attr-dict, whose `{` would otherwise be ambiguous.
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`transpose_weight` $transpose_weight^)?
    (`extra` `(` $extra^ `:` type($extra) `)`)? $epilogue attr-dict
    `:` type($input) `,` type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let extraClassDeclaration = Octet_LinearFeatureDims;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Octet_FusedOp : Octet_Op<"fused", [Pure, IsolatedFromAbove]> {
  let summary = "a group of elementwise ops as one scalar region over a broadcast";
  let description = [{
    Runs the `body` region on every element of the result. The block takes
    one `f32` per input: the element of that input at the same position,
    broadcast (numpy rules) to the result shape. The result shape is the
    broadcast of the input shapes: no input widens it, and no result dim
    comes from nowhere. The body is straight-line scalar f32 code of the ops
    an elementwise program lowers (`arith.addf`, `subf`, `mulf`, `divf`,
    `maximumf`, `minimumf`, `negf`, `constant`; `math.erf`, `tanh`, `exp`,
    `log`, `sqrt`, `rsqrt`, `powf`, `absf`; `octet.scalar_gelu`), isolated from above (its
    constants are inside), and `octet.yield`s the result element.
    `octet-fuse-elementwise` forms it from a connected group of pointwise
    ops that has one result used outside the group.

    ```mlir
    %y = octet.fused %a, %b, %c {
    ^bb0(%a0: f32, %b0: f32, %c0: f32):
      %ab = arith.addf %a0, %b0 : f32
      %big = arith.constant -1.000000e+04 : f32
      %scaled = arith.mulf %c0, %big : f32
      %sum = arith.addf %ab, %scaled : f32
      octet.yield %sum : f32
    } : tensor<?x?x768xf32>, tensor<1x?x768xf32>, tensor<f32> -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins Variadic<Octet_F32Tensor>:$inputs);
  let results = (outs Octet_F32Tensor:$result);
  let regions = (region SizedRegion<1>:$body);
  // The region comes before attr-dict, whose `{` would otherwise be ambiguous.
  let assemblyFormat = "$inputs $body attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Octet_YieldOp : Octet_Op<"yield",
    [Pure, Terminator, ParentOneOf<["FusedLinearOp", "FusedOp", "QLinearOp"]>]> {
  let summary = "the element computed by a fused op's region";
  let description = [{
    Ends the scalar region of `octet.fused_linear`, `octet.fused` or
    `octet.qlinear` with the result element.

    ```mlir
      octet.yield %sum : f32
    ```
  }];
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

class Octet_ReduceOp<string mnemonic, string what>
    : Octet_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = what # " over the given axes";
  let description = [{
    Reduces over `axes` (at least one; sorted, unique, non-negative);
    `keepdims` keeps them as size-1 dims. ONNX's "no axes" (reduce all) is
    spelled out as the list of every axis.

    ```mlir
    %m = octet.}] # mnemonic # [{ %x axes = [2] keepdims : tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins Octet_Tensor:$input, Octet_Axes:$axes, UnitAttr:$keepdims);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = "$input `axes` `=` $axes (`keepdims` $keepdims^)? attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Octet_ReduceMeanOp : Octet_ReduceOp<"reduce_mean", "mean">;
def Octet_ReduceSumOp : Octet_ReduceOp<"reduce_sum", "sum">;
def Octet_ReduceMaxOp : Octet_ReduceOp<"reduce_max", "maximum">;
def Octet_ReduceMinOp : Octet_ReduceOp<"reduce_min", "minimum">;

def Octet_CumSumOp : Octet_Op<"cumsum", [Pure, SameOperandsAndResultType]> {
  let summary = "cumulative sum along one axis";
  let description = [{
    ONNX `CumSum` (XLM-RoBERTa computes position ids with it).

    ```mlir
    %c = octet.cumsum %mask axis = 1 : tensor<?x?xi32>
    ```
  }];
  let arguments = (ins Octet_Tensor:$input, Octet_Axis:$axis, UnitAttr:$exclusive,
                       UnitAttr:$reverse);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis (`exclusive` $exclusive^)? (`reverse` $reverse^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Recognized encoder blocks
//===----------------------------------------------------------------------===//

def Octet_SoftmaxOp : Octet_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax along one axis";
  let description = [{
    exp(x - max) / sum(exp(x - max)) along `axis`; the result has the input's
    type.

    ```mlir
    %p = octet.softmax %s axis = 3 : tensor<?x12x?x?xf32>
    ```
  }];
  let arguments = (ins Octet_FloatTensor:$input, Octet_Axis:$axis);
  let results = (outs Octet_FloatTensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Octet_LayerNormOp : Octet_Op<"layer_norm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalization over the dims from `axis` on";
  let description = [{
    y = (x - mean) / sqrt(var + epsilon) * gamma + beta, with mean and (biased)
    variance over dims `axis ..< rank`; `gamma` and `beta` have the shape of
    those dims.

    ```mlir
    %y = octet.layer_norm %x, %gamma, %beta axis = 2 epsilon = 1.0e-12
           : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Octet_FloatTensor:$input, Octet_FloatTensor:$gamma,
                       Optional<Octet_FloatTensor>:$beta, Octet_Axis:$axis, F32Attr:$epsilon);
  let results = (outs Octet_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma (`,` $beta^)? `axis` `=` $axis `epsilon` `=` $epsilon attr-dict
    `:` type($input) `,` type($gamma) (`,` type($beta)^)?
  }];
  let hasVerifier = 1;
}

def Octet_AddLayerNormOp : Octet_Op<"add_layer_norm",
    [Pure, AllTypesMatch<["input", "residual", "result"]>]> {
  let summary = "layer_norm(input + residual): the residual add fused with LayerNorm";
  let description = [{
    The post-LN block of BERT: `layer_norm(x + residual)`. `residual` has the
    input's type.

    ```mlir
    %y = octet.add_layer_norm %x, %r, %gamma, %beta axis = 2 epsilon = 1.0e-12
           : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Octet_FloatTensor:$input, Octet_FloatTensor:$residual,
                       Octet_FloatTensor:$gamma, Optional<Octet_FloatTensor>:$beta,
                       Octet_Axis:$axis, F32Attr:$epsilon);
  let results = (outs Octet_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $residual `,` $gamma (`,` $beta^)? `axis` `=` $axis `epsilon` `=` $epsilon attr-dict
    `:` type($input) `,` type($gamma) (`,` type($beta)^)?
  }];
  let hasVerifier = 1;
}

def Octet_LayerNormQuantizeOp : Octet_Op<"layer_norm_quantize",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["input", "result"]>]> {
  let summary = "(residual +) LayerNorm over the last dim, then quantize: one pass writes u8/i8";
  let description = [{
    `y = layer_norm(input (+ residual))` exactly as `octet.layer_norm` /
    `octet.add_layer_norm` compute it (the sum rounded to f32 first), then the
    quantized `y` as the op it replaces computes it:

    - with `scale(%s, %zp)` (0-D f32 and a 0-D u8/i8 zero point):
      `octet.quantize %y, %s, %zp` (per tensor);
    - without: `octet.quantize_per_row %y`, whose per-row scale is the third
      result (the quantized result is then u8, zero point 128).

    The first result is `y` itself; it is materialized only when something
    reads it (BERT's residual), so a fused LayerNorm whose f32 result is dead
    writes nothing but the bytes. Normalizes over the last dim only.
    `octet-fuse-elementwise` forms it.

    With `quant_affine(%g2, %b2)` (per tensor only) the quantized result is
    that of a second LayerNorm of the same input with its own affine,
    `quantize(layer_norm(input (+ residual)) with %g2, %b2)`, while `y` keeps
    `%g, %b`: SmoothQuant's smoothed copy of a LayerNorm merged into the
    original by `octet-merge-layer-norms`, so that one pass over the input
    writes both.

    ```mlir
    %y, %q = octet.layer_norm_quantize %x residual(%r : tensor<?x?x768xf32>), %g, %b
               axis = 2 epsilon = 1.0e-12 scale(%s, %zp : tensor<f32>, tensor<ui8>)
               : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32> -> tensor<?x?x768xui8>
    %y2, %q2, %rs = octet.layer_norm_quantize %x, %g, %b axis = 2 epsilon = 1.0e-12
               : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
               -> tensor<?x?x768xui8>, tensor<?x?x1xf32>
    ```
  }];
  let arguments = (ins Octet_F32Tensor:$input, Optional<Octet_F32Tensor>:$residual,
                       Octet_F32Tensor:$gamma, Optional<Octet_F32Tensor>:$beta,
                       Octet_Axis:$axis, F32Attr:$epsilon,
                       Optional<Octet_F32Tensor>:$scale, Optional<Octet_QuantTensor>:$zero_point,
                       Optional<Octet_F32Tensor>:$quant_gamma, Optional<Octet_F32Tensor>:$quant_beta);
  let results = (outs Octet_F32Tensor:$result, Octet_QuantTensor:$quantized,
                      Optional<Octet_F32Tensor>:$row_scale);
  let assemblyFormat = [{
    $input (`residual` `(` $residual^ `:` type($residual) `)`)? `,` $gamma (`,` $beta^)?
    `axis` `=` $axis `epsilon` `=` $epsilon
    (`scale` `(` $scale^ `,` $zero_point `:` type($scale) `,` type($zero_point) `)`)?
    (`quant_affine` `(` $quant_gamma^ `,` $quant_beta `:` type($quant_gamma) `,` type($quant_beta) `)`)?
    attr-dict
    `:` type($input) `,` type($gamma) (`,` type($beta)^)? `->` type($quantized) (`,` type($row_scale)^)?
  }];
  let hasVerifier = 1;
}

def Octet_GeluOp : Octet_Op<"gelu", [Pure, SameOperandsAndResultType]> {
  let summary = "GELU activation, exact (erf) or tanh-approximated";
  let description = [{
    `approximate = "none"`: 0.5·x·(1 + erf(x/√2)); `"tanh"`:
    0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).

    ```mlir
    %y = octet.gelu %x : tensor<?x?x3072xf32>
    %z = octet.gelu %x approximate = "tanh" : tensor<?x?x3072xf32>
    ```
  }];
  let arguments = (ins Octet_FloatTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Octet_FloatTensor:$result);
  let assemblyFormat = "$input (`approximate` `=` $approximate^)? attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Octet_ScalarGeluOp : Octet_Op<"scalar_gelu", [Pure, SameOperandsAndResultType]> {
  let summary = "GELU of one f32, for the scalar region of a fused op";
  let description = [{
    `octet.gelu` on one element: the op a fused region holds for the
    runtime's GELU instructions (the elementwise program's GeluErf /
    GeluTanh), where spelling GELU out in `math.erf` arithmetic would give
    another instruction sequence. `octet-lower-gelu` makes it from a lone
    `octet.gelu`.

    ```mlir
    %y = octet.scalar_gelu %x : f32
    %z = octet.scalar_gelu %x approximate = "tanh" : f32
    ```
  }];
  let arguments = (ins F32:$input, DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs F32:$result);
  let assemblyFormat = "$input (`approximate` `=` $approximate^)? attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Octet_AttentionOp : Octet_Op<"attention",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["query", "key", "value", "result"]>]> {
  let summary = "multi-head scaled dot-product attention on [batch, seq, heads·dim]";
  let description = [{
    Splits `query`, `key` and `value`, all `[B, S, H·D]` (self-attention), into
    `num_heads` heads, computes softmax(scale · Q·Kᵀ + mask)·V per head and
    merges the heads back to `[B, S, H·D]`. `mask` is additive, broadcastable
    to `[B, H, S, S]` (0 where a key is visible, a large negative number
    where it is masked). With `zero_masked_rows`, a probability that comes
    out NaN — every score of its row is -inf, a fully masked row — is 0
    instead (what `where(isnan(p), 0, p)` after the softmax computes, as
    PyTorch's sdpa exports do), so such a row of the result is 0.

    With `tokens(%layout)` (an `octet.token_layout`, set by octet-pack-tokens)
    query, key and value may hold the real tokens of the batch packed
    together: when the layout says so at run time, each sequence attends over
    its own rows only and the mask (checked by the layout to be a key-padding
    mask) is not read; otherwise the attention runs as without it.

    ```mlir
    %ctx = octet.attention %q, %k, %v, %mask num_heads = 12 scale = 0.125
             : tensor<?x?x768xf32>, tensor<?x1x1x?xf32>
    ```
  }];
  let arguments = (ins Octet_FloatTensor:$query, Octet_FloatTensor:$key,
                       Octet_FloatTensor:$value, Optional<Octet_FloatTensor>:$mask,
                       Optional<Octet_TokenLayout>:$token_layout,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads, F32Attr:$scale,
                       UnitAttr:$zero_masked_rows);
  let results = (outs Octet_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $mask^)?
    (`tokens` `(` $token_layout^ `:` type($token_layout) `)`)?
    `num_heads` `=` $num_heads `scale` `=` $scale
    (`zero_masked_rows` $zero_masked_rows^)? attr-dict
    `:` type($query) (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Padding-free batches (octet-pack-tokens, docs/padding-free.md)
//===----------------------------------------------------------------------===//

def Octet_TokenLayoutOp : Octet_Op<"token_layout", [Pure]> {
  let summary = "where each token of a padded batch goes when padding is dropped";
  let description = [{
    Decides, at run time, from the attention masks `masks` (additive, each
    broadcastable to `[batch, heads, seq, seq]`), whether the batch's padding
    can be dropped: every mask must be a key-padding mask — on each real
    token's row, 0 at the real keys and at most -1e4 (or -inf) at the others,
    the same real keys in every mask. The result (i64, `5 + batch + batch·seq`
    elements) is
    `[mode, rows, batch, seq, offsets[batch + 1], row_of[batch·seq]]`:
     - mode 0: the masks are not key-padding masks; nothing is packed and
       `octet.unpack_tokens` copies every position;
     - mode 1: packed: sequence b holds rows `[offsets[b], offsets[b+1])` of
       a `[1, rows, …]` tensor, position p = b·seq + s is row `row_of[p]`, or
       -1 for a padding position;
     - mode 2: key padding, but nothing is dropped (no padding, or no real
       token at all): rows stay in place and `octet.unpack_tokens` writes 0 at
       the padding positions, as mode 1 does.

    ```mlir
    %layout = octet.token_layout %mask (%b, %s) : tensor<?x1x1x?xf32> -> tensor<?xi64>
    ```
  }];
  let arguments = (ins Variadic<Octet_F32Tensor>:$masks, Index:$batch, Index:$seq);
  let results = (outs Octet_TokenLayout:$result);
  let assemblyFormat = [{
    $masks `(` $batch `,` $seq `)` attr-dict `:` type($masks) `->` type($result)
  }];
  let builders = [OpBuilder<(ins "mlir::ValueRange":$masks, "mlir::Value":$batch,
                                 "mlir::Value":$seq)>];
  let hasVerifier = 1;
}

def Octet_PackTokensOp : Octet_Op<"pack_tokens", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "drops the padding positions of a [batch, seq, …] tensor";
  let description = [{
    With a layout of mode 1, the result is `[1, rows, …]`: the real tokens'
    rows of `input` in order; otherwise it is `input`. Its first two dims are
    therefore not the input's (shape analyses stop here).

    ```mlir
    %p = octet.pack_tokens %x, %layout : tensor<?x?x768xf32>, tensor<?xi64>
    ```
  }];
  let arguments = (ins Octet_Tensor:$input, Octet_TokenLayout:$layout);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = "$input `,` $layout attr-dict `:` type($input) `,` type($layout)";
  let hasVerifier = 1;
}

def Octet_UnpackTokensOp : Octet_Op<"unpack_tokens", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "puts packed rows back at their positions of [batch, seq, …]";
  let description = [{
    The inverse of `octet.pack_tokens`, to `[batch, seq, …]`: with a layout of
    mode 1 or 2, padding positions are 0 (a padding position's value is
    meaningless; docs/padding-free.md); with mode 0 the input is copied.

    ```mlir
    %y = octet.unpack_tokens %p, %layout (%b, %s) : tensor<?x?x768xf32>, tensor<?xi64>
    ```
  }];
  let arguments = (ins Octet_Tensor:$input, Octet_TokenLayout:$layout, Index:$batch,
                       Index:$seq);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $layout `(` $batch `,` $seq `)` attr-dict `:` type($input) `,` type($layout)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Octet_ReshapeOp : Octet_Op<"reshape", [Pure]> {
  let summary = "reinterpret a tensor with another shape of the same size";
  let description = [{
    The result type gives the new shape; each `?` in it takes its run-time
    size from one `index` operand, in order.

    ```mlir
    %h = octet.reshape %x(%b, %s) : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
    ```
  }];
  let arguments = (ins Octet_Tensor:$input, Variadic<Index>:$dynamic_dims);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = [{
    $input (`(` $dynamic_dims^ `)`)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Octet_ExpandOp : Octet_Op<"expand", [Pure]> {
  let summary = "broadcast a tensor to a larger shape";
  let description = [{
    The result type gives the target shape, with one `index` operand per `?`.
    The input must be broadcastable to it.

    ```mlir
    %p = octet.expand %pos(%b, %s) : tensor<1x?xi64> -> tensor<?x?xi64>
    ```
  }];
  let arguments = (ins Octet_Tensor:$input, Variadic<Index>:$dynamic_dims);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = [{
    $input (`(` $dynamic_dims^ `)`)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Octet_TransposeOp : Octet_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
  let summary = "permute the dims of a tensor";
  let description = [{
    Result dim i is input dim `permutation[i]`.

    ```mlir
    %t = octet.transpose %x permutation = [0, 2, 1, 3] : tensor<?x?x12x64xf32>
    ```
  }];
  let arguments = (ins Octet_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = "$input `permutation` `=` $permutation attr-dict `:` type($input)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Octet_ConcatOp : Octet_Op<"concat", [Pure, InferTypeOpAdaptor]> {
  let summary = "join tensors along one axis";
  let description = [{
    All inputs have the same rank and element type and agree on every dim but
    `axis`. Folds when all inputs are small constants.

    ```mlir
    %y = octet.concat %a, %b axis = 1 : tensor<?x4xf32>, tensor<?x2xf32>
    ```
  }];
  let arguments = (ins Variadic<Octet_Tensor>:$inputs, Octet_Axis:$axis);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = "$inputs `axis` `=` $axis attr-dict `:` type($inputs)";
  let hasFolder = 1;
}

def Octet_SliceOp : Octet_Op<"slice", [Pure, AttrSizedOperandSegments]> {
  let summary = "ONNX Slice: a strided window along some axes";
  let description = [{
    For each listed axis, takes `start, start + step, …` up to `end`
    (excluded). Negative starts/ends count from the end and out-of-range ones
    are clamped, as in ONNX. Starts and ends may be run-time `index` values.
    A static bound cannot be INT64_MIN (it marks a run-time bound in the
    list): "to the front" is any end <= -size-1, e.g. -9223372036854775807.
    Axes are listed at most once; steps are non-zero.

    ```mlir
    %p = octet.slice %ids axes = [1] starts = [0] ends = [%s] steps = [1]
           : tensor<1x512xi64> -> tensor<1x?xi64>
    ```
  }];
  let arguments = (ins Octet_Tensor:$input, Variadic<Index>:$starts, Variadic<Index>:$ends,
                       Octet_Axes:$axes, DenseI64ArrayAttr:$static_starts,
                       DenseI64ArrayAttr:$static_ends, DenseI64ArrayAttr:$steps);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = [{
    $input `axes` `=` $axes
    `starts` `=` custom<DynamicIndexList>($starts, $static_starts)
    `ends` `=` custom<DynamicIndexList>($ends, $static_ends)
    `steps` `=` $steps attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Octet_GatherOp : Octet_Op<"gather", [Pure, InferTypeOpAdaptor]> {
  let summary = "ONNX Gather: take slices of `data` along `axis` at `indices`";
  let description = [{
    The embedding lookup of an encoder is `gather` on axis 0 of a table.
    Negative indices count from the end.

    ```mlir
    %e = octet.gather %table, %ids axis = 0 : tensor<30522x768xf32>, tensor<?x?xi64>
    ```
  }];
  let arguments = (ins Octet_Tensor:$data, RankedTensorOf<[I32, I64]>:$indices, Octet_Axis:$axis);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `axis` `=` $axis attr-dict `:` type($data) `,` type($indices)";
}

def Octet_GatherNDOp : Octet_Op<"gather_nd", [Pure, InferTypeOpAdaptor]> {
  let summary = "ONNX GatherND: slices of `data` at the index tuples in the last dim of `indices`";
  let description = [{
    With `q` the (static) last dim of `indices` and `b` = `batch_dims`, the
    result is `indices.shape[:-1] + data.shape[b + q:]`: each index tuple
    `indices[i..., :]` picks `data[batch..., t0, ..., t(q-1), ...]`, where the
    first `b` dims of `data` and `indices` are shared batch dims (equal).
    Negative entries count from the end of their dim; one out of range is a
    run-time error naming its position and value. The dynamo exporter builds
    the attention padding mask this way (`attention_mask[batch_idx, kv_idx]`).

    ```mlir
    %m = octet.gather_nd %mask, %idx : tensor<?x?xi1>, tensor<?x1x?x?x2xi64>
    %r = octet.gather_nd %x, %i batch_dims = 1 : tensor<2x2x2xi32>, tensor<2x1xi64>
    ```
  }];
  let arguments = (ins Octet_Tensor:$data, RankedTensorOf<[I32, I64]>:$indices,
                       DefaultValuedAttr<Octet_Axis, "0">:$batch_dims);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices (`batch_dims` `=` $batch_dims^)? attr-dict `:` type($data) `,` type($indices)
  }];
  let hasVerifier = 1;
}

def Octet_GatherElementsOp : Octet_Op<"gather_elements", [Pure, InferTypeOpAdaptor]> {
  let summary = "ONNX GatherElements: data[..., indices[i...], ...] along `axis`, elementwise";
  let description = [{
    `indices` has the rank of `data`; the result has the shape of `indices`
    and `result[i0, .., ik, ..] = data[i0, .., indices[i0, .., ik, ..], ..]`
    with the index in dim `axis` (`numpy.take_along_axis`). Outside `axis`,
    each `indices` dim is at most the `data` dim. Negative indices count
    from the end; one out of range is a run-time error naming its position
    and value.

    ```mlir
    %t = octet.gather_elements %buffer, %pos axis = 1 : tensor<?x512xi64>, tensor<?x?xi64>
    ```
  }];
  let arguments = (ins Octet_Tensor:$data, RankedTensorOf<[I32, I64]>:$indices, Octet_Axis:$axis);
  let results = (outs Octet_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `axis` `=` $axis attr-dict `:` type($data) `,` type($indices)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

def Octet_QuantizeOp : Octet_Op<"quantize", [Pure]> {
  let summary = "float to int8/uint8: saturate(round(x / scale) + zero_point)";
  let description = [{
    Per-tensor when `scale` is a scalar; per-axis when it is 1-D along `axis`.
    Rounding is to nearest even. Without `zero_point` it is 0.

    ```mlir
    %q = octet.quantize %x, %s, %zp : tensor<?x?x768xf32>, tensor<f32>, tensor<ui8> -> tensor<?x?x768xui8>
    %w = octet.quantize %x, %s axis = 1 : tensor<768x768xf32>, tensor<768xf32> -> tensor<768x768xi8>
    ```
  }];
  let arguments = (ins Octet_F32Tensor:$input, Octet_F32Tensor:$scale,
                       Optional<Octet_QuantTensor>:$zero_point, OptionalAttr<Octet_Axis>:$axis);
  let results = (outs Octet_QuantTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $zero_point^)? (`axis` `=` $axis^)? attr-dict
    `:` type($input) `,` type($scale) (`,` type($zero_point)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Octet_DequantizeOp : Octet_Op<"dequantize", [Pure]> {
  let summary = "int8/uint8/int32 to float: (x - zero_point) · scale";
  let description = [{
    Per-tensor or per-axis, as `octet.quantize`.

    ```mlir
    %x = octet.dequantize %q, %s, %zp : tensor<?x768xui8>, tensor<f32>, tensor<ui8> -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8, UI8, I32]>:$input, Octet_F32Tensor:$scale,
                       Optional<RankedTensorOf<[I8, UI8, I32]>>:$zero_point,
                       OptionalAttr<Octet_Axis>:$axis);
  let results = (outs Octet_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $zero_point^)? (`axis` `=` $axis^)? attr-dict
    `:` type($input) `,` type($scale) (`,` type($zero_point)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Octet_DynamicQuantizeOp : Octet_Op<"dynamic_quantize", [Pure, InferTypeOpAdaptor]> {
  let summary = "ONNX DynamicQuantizeLinear: uint8 with scale and zero point from the data";
  let description = [{
    scale = (max(0, max x) - min(0, min x)) / 255, zero_point =
    saturate(round(-min / scale)); returns the quantized tensor, the scale and
    the zero point.

    ```mlir
    %q, %s, %zp = octet.dynamic_quantize %x : tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Octet_F32Tensor:$input);
  let results = (outs RankedTensorOf<[UI8]>:$result, 0DTensorOf<[F32]>:$scale,
                      0DTensorOf<[UI8]>:$zero_point);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Octet_QuantizePerRowOp : Octet_Op<"quantize_per_row", [Pure]> {
  let summary = "dynamic per-row (per-token) symmetric quantization to u8 with zero point 128";
  let description = [{
    Quantizes each row (all axes but the last; a token of an encoder's
    activation) with its own scale, computed from the data at run time:
    `s[r] = max_k |x[r, k]| / 127` in f32 (exactly `absmax / 127.0f`; 1 for a
    row of zeros) and `q[r, k] = saturate(round_half_even(x[r, k] / s[r])) + 128`,
    so q is in [1, 255] and its real value is `(q - 128) · s[r]`. A NaN element
    gives 128. The second result holds the scales with the input's leading
    dims and a last dim of 1; `octet.qlinear` takes it as a per-row
    `input_scale` with `input_zero_point` 128. `octet-quantize{mode=dynamic}`
    places it before each linear's input.

    ```mlir
    %q, %s = octet.quantize_per_row %x : tensor<?x?x768xf32> -> tensor<?x?x768xui8>, tensor<?x?x1xf32>
    ```
  }];
  let arguments = (ins Octet_F32Tensor:$input);
  let results = (outs RankedTensorOf<[UI8]>:$result, Octet_F32Tensor:$scale);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result) `,` type($scale)";
  let hasVerifier = 1;
}

def Octet_MatMulIntegerOp : Octet_Op<"matmul_integer",
    [Pure, InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "integer matmul (a - a_zero_point) · (b - b_zero_point) into i32";
  let description = [{
    numpy matmul semantics as `octet.matmul`; zero points come as a pair
    (imported ONNX models without one get a zero constant); `a`'s is a scalar,
    `b`'s a scalar or one per column.

    ```mlir
    %y = octet.matmul_integer %a, %b zero_points(%azp, %bzp)
           : (tensor<?x768xui8>, tensor<768x768xi8>, tensor<ui8>, tensor<i8>) -> tensor<?x768xi32>
    ```
  }];
  let arguments = (ins Octet_QuantTensor:$lhs, Octet_QuantTensor:$rhs,
                       Optional<Octet_QuantTensor>:$lhs_zero_point,
                       Optional<Octet_QuantTensor>:$rhs_zero_point);
  let results = (outs Octet_I32Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`zero_points` `(` $lhs_zero_point^ `,` $rhs_zero_point `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Octet_QLinearOp : Octet_Op<"qlinear",
    [Pure, AttrSizedOperandSegments, IsolatedFromAbove]> {
  let summary = "INT8 linear layer: u8 activation · per-channel s8 weight, f32 epilogue, optional requantize";
  let description = [{
    The integer GEMM of the INT8 path. `input` is a `ui8` tensor `[..., K]`,
    quantized asymmetrically per tensor with `input_scale` (`tensor<f32>`)
    and `input_zero_point` (`tensor<ui8>`): its real value is
    `(input - input_zero_point) · input_scale`. `input_scale` may instead be
    per row (from `octet.quantize_per_row`): a tensor of the input's rank
    whose dims are the input's leading dims and a last dim of 1, one scale
    per row m; the zero point stays one `tensor<ui8>` (128 there). `weight` is an `i8` (signed)
    `[K, N]` tensor, or `[N, K]` with `transpose_weight` as in
    `octet.linear`, quantized symmetrically (zero point 0) per output
    channel with `weight_scale` (`tensor<Nxf32>`). The optional `bias` is
    f32 `[N]`. Scales and zero points are operands so that a run-time
    (dynamic) activation scale works; the weight and its scales are
    normally constants.

    Per output element (row m, column n), in this order, each step rounded
    to f32:
    - `sum = Σ_k (input[m, k] - input_zero_point) · w[k, n]`, exact in i32
      (a kernel may compute `Σ_k input·w - input_zero_point · Σ_k w[k, n]`,
      the same integer);
    - `acc = f32(f32(input_scale · weight_scale[n]) · f32(sum))` (with
      a per-row scale, `input_scale[m]`), then
      `acc = acc + bias[n]` when there is a bias;
    - `y = epilogue(acc, extra...)`: the region runs exactly as in
      `octet.fused_linear` (a block of one `f32` for the accumulator, then
      one `f32` per `extra` operand, broadcast to the result shape without
      widening it; side-effect-free scalar `arith`/`math`; `octet.yield` of
      an `f32`). An identity region (`octet.yield %acc`) is the plain
      dequantized GEMM.
    - The result is `y` for an `f32` result. For a `ui8` or `i8` result
      (requantize fused), `output_scale` (`tensor<f32>`) and
      `output_zero_point` (`tensor<ui8>`/`tensor<i8>`, the result's element
      type; a symmetric `i8` result gives 0) are given and the element is
      `saturate(round_half_even(y / output_scale) + output_zero_point)`,
      as `octet.quantize` computes it.

    `octet-eliminate-qdq` forms it from the QDQ form of ONNX Runtime's
    static quantization; `octet-quantize` from FP32 linears.

    Packed weight (`octet-pack-weights`, docs/pack-weights.md): `weight` may
    instead be a 1-D `i8` tensor holding a GEMM kernel's packed panels, with
    the attribute `octet.packed = {isa = "avx512_vnni" | "amx", nr, k, n,
    colsum = dense<...> : tensor<Nxi32>}` saying how (`nr`: columns per
    panel; `colsum[n] = Σ_k w[k, n]`, the u8·s8 compensation); no
    `transpose_weight` then. The values computed are the same.

    ```mlir
    %y = octet.qlinear %x, %w, %b scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3072xf32>) {
    ^bb0(%acc: f32):
      %zero = arith.constant 0.000000e+00 : f32
      %relu = arith.maximumf %acc, %zero : f32
      octet.yield %relu : f32
    } : tensor<?x?x768xui8>, tensor<768x3072xi8>, tensor<3072xf32> -> tensor<?x?x3072xf32>
    %q = octet.qlinear %x, %wt scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3072xf32>) transpose_weight
           requantize(%ys, %yzp : tensor<f32>, tensor<ui8>) extra(%r : tensor<?x?x3072xf32>) {
    ^bb0(%acc: f32, %r0: f32):
      %sum = arith.addf %acc, %r0 : f32
      octet.yield %sum : f32
    } : tensor<?x?x768xui8>, tensor<3072x768xi8> -> tensor<?x?x3072xui8>
    ```
  }];
  let arguments = (ins RankedTensorOf<[UI8]>:$input, RankedTensorOf<[I8]>:$weight,
                       Optional<Octet_F32Tensor>:$bias,
                       Octet_F32Tensor:$input_scale, 0DTensorOf<[UI8]>:$input_zero_point,
                       Octet_F32Tensor:$weight_scale,
                       Optional<0DTensorOf<[F32]>>:$output_scale,
                       Optional<0DTensorOf<[I8, UI8]>>:$output_zero_point,
                       Variadic<Octet_F32Tensor>:$extra, UnitAttr:$transpose_weight);
  let results = (outs RankedTensorOf<[F32, I8, UI8]>:$result);
  let regions = (region SizedRegion<1>:$epilogue);
  // The region comes before attr-dict, whose `{` would otherwise be ambiguous.
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)?
    `scales` `(` $input_scale `,` $input_zero_point `,` $weight_scale `:`
      type($input_scale) `,` type($input_zero_point) `,` type($weight_scale) `)`
    (`transpose_weight` $transpose_weight^)?
    (`requantize` `(` $output_scale^ `,` $output_zero_point `:` type($output_scale) `,`
      type($output_zero_point) `)`)?
    (`extra` `(` $extra^ `:` type($extra) `)`)? $epilogue attr-dict
    `:` type($input) `,` type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let extraClassDeclaration = Octet_LinearFeatureDims # [{
    /// `octet.packed` (octet-pack-weights): the weight is a kernel's packed panels.
    static constexpr ::llvm::StringLiteral kPackedAttrName = "octet.packed";
    ::mlir::DictionaryAttr getPacked() {
      return (*this)->getAttrOfType<::mlir::DictionaryAttr>(kPackedAttrName);
    }
    /// The packed layout and column sums of a verified op with `octet.packed`.
    ::octet::PackedWeightLayout getPackedLayout();
    ::mlir::DenseIntElementsAttr getPackedColsum();
    /// K and N, from the weight's type or from `octet.packed`.
    int64_t getK();
    int64_t getN();
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

#endif // OCTET_OPS_TD
