// octet-interp --pipeline really runs its passes on @main (it once parsed the pipeline one
// module level too deep and ran nothing, which made every "after the pass" check compare a
// model with itself): a pass that fails on this function must fail the run, in both spellings.
// RUN: not octet-interp %s --pipeline octet-smoothquant 2>&1 | FileCheck %s
// RUN: not octet-interp %s --pipeline "builtin.module(func.func(octet-smoothquant))" 2>&1 | FileCheck %s
// CHECK: octet-smoothquant: bad octet.calib: input_absmax has 3 elements
func.func @main(%x: tensor<?x2xf32> {octet.name = "x"}) -> (tensor<?x2xf32> {octet.name = "y"}) {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  %y = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[4.0, 1.0, 2.0]> : tensor<3xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}
