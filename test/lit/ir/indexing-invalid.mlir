// Verifier errors of the mask and index ops (gather_nd, gather_elements, mod,
// is_nan, xor): each names what is wrong and the shapes involved.
// RUN: octet-opt %s -split-input-file -verify-diagnostics

func.func @gather_nd_dynamic_tuple(%d: tensor<?x?xf32>, %i: tensor<?x?xi64>) {
  // expected-error @+1 {{octet.gather_nd: the last dim of the indices [?, ?] must be static}}
  %0 = "octet.gather_nd"(%d, %i) : (tensor<?x?xf32>, tensor<?x?xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @gather_nd_tuple_too_long(%d: tensor<4x5xf32>, %i: tensor<3x3xi64>) {
  // expected-error @+1 {{octet.gather_nd: index tuples of 3 entries do not fit data [4, 5] after 0 batch dims}}
  %0 = octet.gather_nd %d, %i : tensor<4x5xf32>, tensor<3x3xi64>
  return
}

// -----

func.func @gather_nd_batch_dims(%d: tensor<4x5xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{octet.gather_nd: batch_dims 2 must be less than both ranks (2 and 2)}}
  %0 = octet.gather_nd %d, %i batch_dims = 2 : tensor<4x5xf32>, tensor<4x1xi64>
  return
}

// -----

func.func @gather_nd_batch_mismatch(%d: tensor<4x5xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+1 {{octet.gather_nd: batch dim 0 differs: data [4, 5], indices [3, 1]}}
  %0 = octet.gather_nd %d, %i batch_dims = 1 : tensor<4x5xf32>, tensor<3x1xi64>
  return
}

// -----

func.func @gather_nd_float_indices(%d: tensor<4x5xf32>, %i: tensor<3x1xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = "octet.gather_nd"(%d, %i) : (tensor<4x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @gather_elements_rank(%d: tensor<4x5xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{octet.gather_elements: indices [4] must have the rank of the data [4, 5]}}
  %0 = octet.gather_elements %d, %i axis = 0 : tensor<4x5xf32>, tensor<4xi64>
  return
}

// -----

func.func @gather_elements_axis(%d: tensor<4x5xf32>, %i: tensor<4x5xi64>) {
  // expected-error @+1 {{octet.gather_elements: axis 2 is out of range for rank 2}}
  %0 = octet.gather_elements %d, %i axis = 2 : tensor<4x5xf32>, tensor<4x5xi64>
  return
}

// -----

func.func @gather_elements_wider(%d: tensor<4x5xf32>, %i: tensor<4x6xi64>) {
  // expected-error @+1 {{octet.gather_elements: indices dim 1 (6) exceeds the data's (5)}}
  %0 = octet.gather_elements %d, %i axis = 0 : tensor<4x5xf32>, tensor<4x6xi64>
  return
}

// -----

func.func @mod_float_without_fmod(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'octet.mod' op on floats needs `fmod` (ONNX Mod requires fmod = 1 for floats)}}
  %0 = octet.mod %a, %b : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @mod_bool(%a: tensor<4xi1>, %b: tensor<4xi1>) {
  // expected-error @+1 {{'octet.mod' op is not defined on i1 tensors}}
  %0 = octet.mod %a, %b : tensor<4xi1>, tensor<4xi1>
  return
}

// -----

func.func @xor_not_bool(%a: tensor<4xi32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'octet.xor' op operands must be i1 tensors, got element type 'i32'}}
  %0 = octet.xor %a, %b : tensor<4xi32>, tensor<4xi32>
  return
}

// -----

func.func @is_nan_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values}}
  %0 = "octet.is_nan"(%a) : (tensor<4xi32>) -> tensor<4xi1>
  return
}

// -----

func.func @ceil_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values}}
  %0 = octet.ceil %a : tensor<4xi32>
  return
}

// -----

func.func @element_index_rank(%a: tensor<2x2xi64>) {
  // expected-error @+1 {{'octet.element_index' op reads a 0-D or 1-D integer tensor, got 'tensor<2x2xi64>'}}
  %0 = octet.element_index %a[0] : tensor<2x2xi64>
  return
}

// -----

func.func @element_index_position(%a: tensor<2xi64>) {
  // expected-error @+1 {{'octet.element_index' op position 2 is out of range for 'tensor<2xi64>'}}
  %0 = octet.element_index %a[2] : tensor<2xi64>
  return
}
