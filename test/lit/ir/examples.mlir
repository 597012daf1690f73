// The example of every op description in OctetOps.td, verbatim, wrapped in a
// function that defines its operands: the documentation parses and verifies.
// The second RUN line checks that every example line of the generated
// OctetOps.md is here (update this file when an example changes).
// RUN: octet-opt %s -verify-roundtrip -o /dev/null
// RUN: %python %S/check_examples.py %octet_obj/compiler/ir/OctetOps.md %s

func.func @abs(%x: tensor<?x?x768xf32>) {
  %y = octet.abs %x : tensor<?x?x768xf32>
  return
}

func.func @add_layer_norm(%x: tensor<?x?x768xf32>, %r: tensor<?x?x768xf32>, %gamma: tensor<768xf32>, %beta: tensor<768xf32>) {
  %y = octet.add_layer_norm %x, %r, %gamma, %beta axis = 2 epsilon = 1.0e-12
         : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
  return
}

func.func @add(%a: tensor<?x?x768xf32>, %b: tensor<768xf32>) {
  %y = octet.add %a, %b : tensor<?x?x768xf32>, tensor<768xf32>
  return
}

func.func @and(%a: tensor<?x?x768xi1>, %b: tensor<768xi1>) {
  %y = octet.and %a, %b : tensor<?x?x768xi1>, tensor<768xi1>
  return
}

func.func @attention(%q: tensor<?x?x768xf32>, %k: tensor<?x?x768xf32>, %v: tensor<?x?x768xf32>, %mask: tensor<?x1x1x?xf32>) {
  %ctx = octet.attention %q, %k, %v, %mask num_heads = 12 scale = 0.125
           : tensor<?x?x768xf32>, tensor<?x1x1x?xf32>
  return
}

func.func @token_layout(%mask: tensor<?x1x1x?xf32>, %b: index, %s: index) {
  %layout = octet.token_layout %mask (%b, %s) : tensor<?x1x1x?xf32> -> tensor<?xi64>
  return
}

func.func @pack_tokens(%x: tensor<?x?x768xf32>, %layout: tensor<?xi64>) {
  %p = octet.pack_tokens %x, %layout : tensor<?x?x768xf32>, tensor<?xi64>
  return
}

func.func @unpack_tokens(%p: tensor<?x?x768xf32>, %layout: tensor<?xi64>, %b: index, %s: index) {
  %y = octet.unpack_tokens %p, %layout (%b, %s) : tensor<?x?x768xf32>, tensor<?xi64>
  return
}

func.func @ceil(%x: tensor<?x?x768xf32>) {
  %y = octet.ceil %x : tensor<?x?x768xf32>
  return
}

func.func @cast(%mask: tensor<?x?xi64>) {
  %f = octet.cast %mask : tensor<?x?xi64> to tensor<?x?xf32>
  return
}

func.func @concat(%a: tensor<?x4xf32>, %b: tensor<?x2xf32>) {
  %y = octet.concat %a, %b axis = 1 : tensor<?x4xf32>, tensor<?x2xf32>
  return
}

func.func @constant() {
  %eps = octet.constant dense<9.99999996E-13> : tensor<f32>
  %w = octet.constant dense_resource<encoder.q.weight> : tensor<768x768xf32>
  return
}

func.func @cumsum(%mask: tensor<?x?xi32>) {
  %c = octet.cumsum %mask axis = 1 : tensor<?x?xi32>
  return
}

func.func @dequantize(%q: tensor<?x768xui8>, %s: tensor<f32>, %zp: tensor<ui8>) {
  %x = octet.dequantize %q, %s, %zp : tensor<?x768xui8>, tensor<f32>, tensor<ui8> -> tensor<?x768xf32>
  return
}

func.func @dim(%input_ids: tensor<?x?xi64>) {
  %seq = octet.dim %input_ids[1] : tensor<?x?xi64>
  return
}

func.func @div(%a: tensor<?x?x768xf32>, %b: tensor<768xf32>) {
  %y = octet.div %a, %b : tensor<?x?x768xf32>, tensor<768xf32>
  return
}

func.func @dynamic_quantize(%x: tensor<?x768xf32>) {
  %q, %s, %zp = octet.dynamic_quantize %x : tensor<?x768xf32>
  return
}

func.func @element_index(%repeats: tensor<2xi64>) {
  %r1 = octet.element_index %repeats[1] : tensor<2xi64>
  return
}

func.func @equal(%a: tensor<?x?x768xf32>, %b: tensor<768xf32>) {
  %y = octet.equal %a, %b : tensor<?x?x768xf32>, tensor<768xf32>
  return
}

func.func @erf(%x: tensor<?x?x768xf32>) {
  %y = octet.erf %x : tensor<?x?x768xf32>
  return
}

func.func @exp(%x: tensor<?x?x768xf32>) {
  %y = octet.exp %x : tensor<?x?x768xf32>
  return
}

func.func @expand(%pos: tensor<1x?xi64>, %b: index, %s: index) {
  %p = octet.expand %pos(%b, %s) : tensor<1x?xi64> -> tensor<?x?xi64>
  return
}

func.func @from_elements(%b: index, %s: index) {
  %shape = octet.from_elements %b, %s : tensor<2xi64>
  return
}

func.func @floor(%x: tensor<?x?x768xf32>) {
  %y = octet.floor %x : tensor<?x?x768xf32>
  return
}

func.func @gather(%table: tensor<30522x768xf32>, %ids: tensor<?x?xi64>) {
  %e = octet.gather %table, %ids axis = 0 : tensor<30522x768xf32>, tensor<?x?xi64>
  return
}

func.func @gather_elements(%buffer: tensor<?x512xi64>, %pos: tensor<?x?xi64>) {
  %t = octet.gather_elements %buffer, %pos axis = 1 : tensor<?x512xi64>, tensor<?x?xi64>
  return
}

func.func @gather_nd(%mask: tensor<?x?xi1>, %idx: tensor<?x1x?x?x2xi64>, %x: tensor<2x2x2xi32>, %i: tensor<2x1xi64>) {
  %m = octet.gather_nd %mask, %idx : tensor<?x?xi1>, tensor<?x1x?x?x2xi64>
  %r = octet.gather_nd %x, %i batch_dims = 1 : tensor<2x2x2xi32>, tensor<2x1xi64>
  return
}

func.func @fused_linear(%x: tensor<?x?x768xf32>, %w: tensor<768x3072xf32>, %b: tensor<3072xf32>, %r: tensor<?x?x3072xf32>) {
    %y = octet.fused_linear %x, %w, %b extra(%r : tensor<?x?x3072xf32>) {
    ^bb0(%acc: f32, %r0: f32):
      %zero = arith.constant 0.000000e+00 : f32
      %relu = arith.maximumf %acc, %zero : f32
      %sum = arith.addf %relu, %r0 : f32
      octet.yield %sum : f32
    } : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32> -> tensor<?x?x3072xf32>
  return
}

func.func @fused(%a: tensor<?x?x768xf32>, %b: tensor<1x?x768xf32>, %c: tensor<f32>) {
    %y = octet.fused %a, %b, %c {
    ^bb0(%a0: f32, %b0: f32, %c0: f32):
      %ab = arith.addf %a0, %b0 : f32
      %big = arith.constant -1.000000e+04 : f32
      %scaled = arith.mulf %c0, %big : f32
      %sum = arith.addf %ab, %scaled : f32
      octet.yield %sum : f32
    } : tensor<?x?x768xf32>, tensor<1x?x768xf32>, tensor<f32> -> tensor<?x?x768xf32>
  return
}

func.func @gelu(%x: tensor<?x?x3072xf32>) {
  %y = octet.gelu %x : tensor<?x?x3072xf32>
  %z = octet.gelu %x approximate = "tanh" : tensor<?x?x3072xf32>
  return
}

func.func @scalar_gelu(%x: f32) {
  %y = octet.scalar_gelu %x : f32
  %z = octet.scalar_gelu %x approximate = "tanh" : f32
  return
}

func.func @greater(%a: tensor<?x?x768xf32>, %b: tensor<768xf32>) {
  %y = octet.greater %a, %b : tensor<?x?x768xf32>, tensor<768xf32>
  return
}

func.func @is_inf(%x: tensor<?x4xf32>) {
  %m = octet.is_inf %x : tensor<?x4xf32>
  %n = octet.is_inf %x detect_positive = false : tensor<?x4xf32>
  return
}

func.func @is_nan(%p: tensor<?x12x?x?xf32>) {
  %m = octet.is_nan %p : tensor<?x12x?x?xf32>
  return
}

func.func @layer_norm_quantize(%x: tensor<?x?x768xf32>, %r: tensor<?x?x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>, %s: tensor<f32>, %zp: tensor<ui8>) {
    %y, %q = octet.layer_norm_quantize %x residual(%r : tensor<?x?x768xf32>), %g, %b
               axis = 2 epsilon = 1.0e-12 scale(%s, %zp : tensor<f32>, tensor<ui8>)
               : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32> -> tensor<?x?x768xui8>
    %y2, %q2, %rs = octet.layer_norm_quantize %x, %g, %b axis = 2 epsilon = 1.0e-12
               : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
               -> tensor<?x?x768xui8>, tensor<?x?x1xf32>
  return
}

func.func @layer_norm(%x: tensor<?x?x768xf32>, %gamma: tensor<768xf32>, %beta: tensor<768xf32>) {
  %y = octet.layer_norm %x, %gamma, %beta axis = 2 epsilon = 1.0e-12
         : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
  return
}

func.func @less(%a: tensor<?x?x768xf32>, %b: tensor<768xf32>) {
  %y = octet.less %a, %b : tensor<?x?x768xf32>, tensor<768xf32>
  return
}

func.func @linear(%x: tensor<?x?x768xf32>, %w: tensor<768x3072xf32>, %b: tensor<3072xf32>, %wt: tensor<3072x768xf32>) {
  %y = octet.linear %x, %w, %b : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>
  %z = octet.linear %x, %wt, %b transpose_weight : tensor<?x?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>
  return
}

func.func @log(%x: tensor<?x?x768xf32>) {
  %y = octet.log %x : tensor<?x?x768xf32>
  return
}

func.func @matmul_integer(%a: tensor<?x768xui8>, %b: tensor<768x768xi8>, %azp: tensor<ui8>, %bzp: tensor<i8>) {
  %y = octet.matmul_integer %a, %b zero_points(%azp, %bzp)
         : (tensor<?x768xui8>, tensor<768x768xi8>, tensor<ui8>, tensor<i8>) -> tensor<?x768xi32>
  return
}

func.func @matmul(%q: tensor<?x12x?x64xf32>, %kt: tensor<?x12x64x?xf32>) {
  %s = octet.matmul %q, %kt : tensor<?x12x?x64xf32>, tensor<?x12x64x?xf32>
  return
}

func.func @max(%a: tensor<?x?x768xf32>, %b: tensor<768xf32>) {
  %y = octet.max %a, %b : tensor<?x?x768xf32>, tensor<768xf32>
  return
}

func.func @min(%a: tensor<?x?x768xf32>, %b: tensor<768xf32>) {
  %y = octet.min %a, %b : tensor<?x?x768xf32>, tensor<768xf32>
  return
}

func.func @mod(%a: tensor<?xi64>, %b: tensor<i64>, %x: tensor<?x4xf32>, %y: tensor<4xf32>) {
  %r = octet.mod %a, %b : tensor<?xi64>, tensor<i64>
  %f = octet.mod %x, %y fmod : tensor<?x4xf32>, tensor<4xf32>
  return
}

func.func @mul(%a: tensor<?x?x768xf32>, %b: tensor<768xf32>) {
  %y = octet.mul %a, %b : tensor<?x?x768xf32>, tensor<768xf32>
  return
}

func.func @neg(%x: tensor<?x?x768xf32>) {
  %y = octet.neg %x : tensor<?x?x768xf32>
  return
}

func.func @not(%x: tensor<?x?x768xi1>) {
  %y = octet.not %x : tensor<?x?x768xi1>
  return
}

func.func @or(%a: tensor<?x?x768xi1>, %b: tensor<768xi1>) {
  %y = octet.or %a, %b : tensor<?x?x768xi1>, tensor<768xi1>
  return
}

func.func @pow(%a: tensor<?x?x768xf32>, %b: tensor<768xf32>) {
  %y = octet.pow %a, %b : tensor<?x?x768xf32>, tensor<768xf32>
  return
}

func.func @qlinear(%x: tensor<?x?x768xui8>, %w: tensor<768x3072xi8>, %wt: tensor<3072x768xi8>, %b: tensor<3072xf32>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<3072xf32>, %ys: tensor<f32>, %yzp: tensor<ui8>, %r: tensor<?x?x3072xf32>) {
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
  return
}

func.func @quantize_0(%x: tensor<?x?x768xf32>, %s: tensor<f32>, %zp: tensor<ui8>) {
  %q = octet.quantize %x, %s, %zp : tensor<?x?x768xf32>, tensor<f32>, tensor<ui8> -> tensor<?x?x768xui8>
  return
}

func.func @quantize_1(%x: tensor<768x768xf32>, %s: tensor<768xf32>) {
  %w = octet.quantize %x, %s axis = 1 : tensor<768x768xf32>, tensor<768xf32> -> tensor<768x768xi8>
  return
}

func.func @quantize_per_row(%x: tensor<?x?x768xf32>) {
    %q, %s = octet.quantize_per_row %x : tensor<?x?x768xf32> -> tensor<?x?x768xui8>, tensor<?x?x1xf32>
  return
}

func.func @range(%c0: index, %seq: index, %c1: index) {
  %pos = octet.range %c0, %seq, %c1 : tensor<?xi64>
  return
}

func.func @reciprocal(%x: tensor<?x?x768xf32>) {
  %y = octet.reciprocal %x : tensor<?x?x768xf32>
  return
}

func.func @reduce_max(%x: tensor<?x?x768xf32>) {
  %m = octet.reduce_max %x axes = [2] keepdims : tensor<?x?x768xf32>
  return
}

func.func @reduce_mean(%x: tensor<?x?x768xf32>) {
  %m = octet.reduce_mean %x axes = [2] keepdims : tensor<?x?x768xf32>
  return
}

func.func @reduce_min(%x: tensor<?x?x768xf32>) {
  %m = octet.reduce_min %x axes = [2] keepdims : tensor<?x?x768xf32>
  return
}

func.func @reduce_sum(%x: tensor<?x?x768xf32>) {
  %m = octet.reduce_sum %x axes = [2] keepdims : tensor<?x?x768xf32>
  return
}

func.func @relu(%x: tensor<?x?x768xf32>) {
  %y = octet.relu %x : tensor<?x?x768xf32>
  return
}

func.func @reshape(%x: tensor<?x?x768xf32>, %b: index, %s: index) {
  %h = octet.reshape %x(%b, %s) : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
  return
}

func.func @rsqrt(%x: tensor<?x?x768xf32>) {
  %y = octet.rsqrt %x : tensor<?x?x768xf32>
  return
}

func.func @sigmoid(%x: tensor<?x?x768xf32>) {
  %y = octet.sigmoid %x : tensor<?x?x768xf32>
  return
}

func.func @sign(%x: tensor<?x?x768xf32>) {
  %y = octet.sign %x : tensor<?x?x768xf32>
  return
}

func.func @slice(%ids: tensor<1x512xi64>, %s: index) {
  %p = octet.slice %ids axes = [1] starts = [0] ends = [%s] steps = [1]
         : tensor<1x512xi64> -> tensor<1x?xi64>
  return
}

func.func @softmax(%s: tensor<?x12x?x?xf32>) {
  %p = octet.softmax %s axis = 3 : tensor<?x12x?x?xf32>
  return
}

func.func @sqrt(%x: tensor<?x?x768xf32>) {
  %y = octet.sqrt %x : tensor<?x?x768xf32>
  return
}

func.func @sub(%a: tensor<?x?x768xf32>, %b: tensor<768xf32>) {
  %y = octet.sub %a, %b : tensor<?x?x768xf32>, tensor<768xf32>
  return
}

func.func @tanh(%x: tensor<?x?x768xf32>) {
  %y = octet.tanh %x : tensor<?x?x768xf32>
  return
}

func.func @transpose(%x: tensor<?x?x12x64xf32>) {
  %t = octet.transpose %x permutation = [0, 2, 1, 3] : tensor<?x?x12x64xf32>
  return
}

func.func @where(%c: tensor<?x1x1x?xi1>, %a: tensor<f32>, %b: tensor<?x12x?x?xf32>) {
  %y = octet.where %c, %a, %b : tensor<?x1x1x?xi1>, tensor<f32>, tensor<?x12x?x?xf32>
  return
}

func.func @xor(%a: tensor<?x?x768xi1>, %b: tensor<768xi1>) {
  %y = octet.xor %a, %b : tensor<?x?x768xi1>, tensor<768xi1>
  return
}
