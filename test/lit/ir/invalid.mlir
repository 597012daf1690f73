// Every verifier error of the octet dialect, one case each: malformed IR is
// rejected with a message that names what is wrong and the offending values.
// RUN: octet-opt %s -split-input-file -verify-diagnostics

func.func @broadcast_mismatch(%a: tensor<?x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{octet.add: operand shapes [?, 3] and [4] do not broadcast}}
  %0 = octet.add %a, %b : tensor<?x3xf32>, tensor<4xf32>
  return
}

// -----

func.func @element_type_mismatch(%a: tensor<3xf32>, %b: tensor<3xi32>) {
  // expected-error @+1 {{octet.mul: element types differ ('f32' vs 'i32')}}
  %0 = octet.mul %a, %b : tensor<3xf32>, tensor<3xi32>
  return
}

// -----

func.func @result_type_mismatch(%a: tensor<3xf32>, %b: tensor<3xf32>) {
  // The result type is spelled out, so the verifier re-infers and compares it.
  // expected-error @+2 {{'octet.sub' op failed to infer returned types}}
  // expected-error @+1 {{'octet.sub' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  %0 = "octet.sub"(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @i1_arithmetic(%a: tensor<3xi1>, %b: tensor<3xi1>) {
  // expected-error @+1 {{'octet.add' op arithmetic on i1 tensors is not defined; use octet.and/octet.or}}
  %0 = octet.add %a, %b : tensor<3xi1>, tensor<3xi1>
  return
}

// -----

func.func @and_not_i1(%a: tensor<3xi64>, %b: tensor<3xi64>) {
  // expected-error @+1 {{'octet.and' op operands must be i1 tensors, got element type 'i64'}}
  %0 = octet.and %a, %b : tensor<3xi64>, tensor<3xi64>
  return
}

// -----

func.func @or_not_i1(%a: tensor<3xf32>, %b: tensor<f32>) {
  // expected-error @+1 {{'octet.or' op operands must be i1 tensors, got element type 'f32'}}
  %0 = octet.or %a, %b : tensor<3xf32>, tensor<f32>
  return
}

// -----

func.func @not_float(%a: tensor<3xf32>) {
  // expected-error @+1 {{'octet.not' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = octet.not %a : tensor<3xf32>
  return
}

// -----

func.func @exp_of_integer(%a: tensor<3xi64>) {
  // expected-error @+1 {{'octet.exp' op operand #0 must be ranked tensor of floating-point values}}
  %0 = octet.exp %a : tensor<3xi64>
  return
}

// -----

func.func @cast_changes_shape(%a: tensor<3xi64>) {
  // expected-error @+1 {{'octet.cast' op requires the same shape for all operands and results}}
  %0 = octet.cast %a : tensor<3xi64> to tensor<4xf32>
  return
}

// -----

func.func @where_branch_types(%c: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xi32>) {
  // expected-error @+1 {{'octet.where' op both branches must have the same element type, got 'tensor<3xf32>' and 'tensor<3xi32>'}}
  %0 = octet.where %c, %a, %b : tensor<3xi1>, tensor<3xf32>, tensor<3xi32>
  return
}

// -----

func.func @where_broadcast(%c: tensor<2xi1>, %a: tensor<3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{octet.where: operand shapes [2] and [3] do not broadcast}}
  %0 = octet.where %c, %a, %b : tensor<2xi1>, tensor<3xf32>, tensor<3xf32>
  return
}

// -----

func.func @matmul_contracting(%a: tensor<?x64xf32>, %b: tensor<32x8xf32>) {
  // expected-error @+1 {{octet.matmul: contracting dims differ (64 vs 32) in [?, 64] · [32, 8]}}
  %0 = octet.matmul %a, %b : tensor<?x64xf32>, tensor<32x8xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+1 {{octet.matmul: batch dims of [2, 4, 8] and [3, 8, 4] do not broadcast}}
  %0 = octet.matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x4xf32>
  return
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{octet.matmul: operands must have rank >= 1, got [] and [3]}}
  %0 = octet.matmul %a, %b : tensor<f32>, tensor<3xf32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<2x3xf32>, %b: tensor<3x2xf16>) {
  // expected-error @+1 {{'octet.matmul' op element types differ: 'tensor<2x3xf32>' and 'tensor<3x2xf16>'}}
  %0 = octet.matmul %a, %b : tensor<2x3xf32>, tensor<3x2xf16>
  return
}

// -----

func.func @linear_contracting(%x: tensor<?x?x768xf32>, %w: tensor<512x3072xf32>) {
  // expected-error @+1 {{'octet.linear' op input's last dim 768 does not match the weight's rows 512}}
  %0 = octet.linear %x, %w : tensor<?x?x768xf32>, tensor<512x3072xf32>
  return
}

// -----

func.func @linear_bias_shape(%x: tensor<?x768xf32>, %w: tensor<768x3072xf32>, %b: tensor<768xf32>) {
  // expected-error @+1 {{'octet.linear' op bias must have shape [3072] (the weight's columns), got [768]}}
  %0 = octet.linear %x, %w, %b : tensor<?x768xf32>, tensor<768x3072xf32>, tensor<768xf32>
  return
}

// -----

// With transpose_weight the weight is [N, K]: K is its columns, N its rows.
func.func @linear_transposed_contracting(%x: tensor<?x768xf32>, %w: tensor<768x3072xf32>) {
  // expected-error @+1 {{'octet.linear' op input's last dim 768 does not match the weight's columns 3072}}
  %0 = octet.linear %x, %w transpose_weight : tensor<?x768xf32>, tensor<768x3072xf32>
  return
}

// -----

func.func @linear_transposed_bias_shape(%x: tensor<?x768xf32>, %w: tensor<3072x768xf32>, %b: tensor<768xf32>) {
  // expected-error @+1 {{'octet.linear' op bias must have shape [3072] (the weight's rows), got [768]}}
  %0 = octet.linear %x, %w, %b transpose_weight : tensor<?x768xf32>, tensor<3072x768xf32>, tensor<768xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<?x768xf32>, %w: tensor<768xf32>) {
  // expected-error @+1 {{octet.linear: needs an input of rank >= 1 and a 2-D weight, got 'tensor<?x768xf32>' and 'tensor<768xf32>'}}
  %0 = octet.linear %x, %w : tensor<?x768xf32>, tensor<768xf32>
  return
}

// -----

func.func @linear_weight_type(%x: tensor<?x768xf32>, %w: tensor<768x8xi8>) {
  // expected-error @+1 {{'octet.linear' op weight element type 'i8' differs from the input's 'f32'}}
  %0 = octet.linear %x, %w : tensor<?x768xf32>, tensor<768x8xi8>
  return
}

// -----

func.func @reduce_axes_unsorted(%x: tensor<?x?x768xf32>) {
  // expected-error @+1 {{'octet.reduce_sum' op axes must be sorted and unique, got [2, 1]}}
  %0 = octet.reduce_sum %x axes = [2, 1] : tensor<?x?x768xf32>
  return
}

// -----

func.func @reduce_axes_repeated(%x: tensor<?x?x768xf32>) {
  // expected-error @+1 {{'octet.reduce_max' op axes must be sorted and unique, got [1, 1]}}
  %0 = octet.reduce_max %x axes = [1, 1] : tensor<?x?x768xf32>
  return
}

// -----

func.func @reduce_axis_out_of_range(%x: tensor<?x?x768xf32>) {
  // expected-error @+1 {{octet.reduce_mean: axis 3 is out of range for rank 3}}
  %0 = octet.reduce_mean %x axes = [3] : tensor<?x?x768xf32>
  return
}

// -----

func.func @reduce_negative_axis(%x: tensor<?x?x768xf32>) {
  // expected-error @+1 {{'octet.reduce_mean' op attribute 'axes' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
  %0 = octet.reduce_mean %x axes = [-1] : tensor<?x?x768xf32>
  return
}

// -----

func.func @reduce_no_axes(%x: tensor<?x?x768xf32>) {
  // expected-error @+1 {{'octet.reduce_min' op needs at least one axis}}
  %0 = octet.reduce_min %x axes = [] : tensor<?x?x768xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<?x12x?x?xf32>) {
  // expected-error @+1 {{'octet.softmax' op axis 4 is out of range for rank 4}}
  %0 = octet.softmax %x axis = 4 : tensor<?x12x?x?xf32>
  return
}

// -----

func.func @cumsum_axis(%x: tensor<?x?xi32>) {
  // expected-error @+1 {{'octet.cumsum' op axis 2 is out of range for rank 2}}
  %0 = octet.cumsum %x axis = 2 : tensor<?x?xi32>
  return
}

// -----

func.func @layer_norm_gamma_shape(%x: tensor<?x?x768xf32>, %g: tensor<512xf32>) {
  // expected-error @+1 {{'octet.layer_norm' op gamma must have shape [768] (the normalized dims), got [512]}}
  %0 = octet.layer_norm %x, %g axis = 2 epsilon = 1.0e-12 : tensor<?x?x768xf32>, tensor<512xf32>
  return
}

// -----

func.func @layer_norm_beta_rank(%x: tensor<?x?x768xf32>, %g: tensor<768xf32>, %b: tensor<1x768xf32>) {
  // expected-error @+1 {{'octet.layer_norm' op beta must have shape [768] (the normalized dims), got [1, 768]}}
  %0 = octet.layer_norm %x, %g, %b axis = 2 epsilon = 1.0e-12 : tensor<?x?x768xf32>, tensor<768xf32>, tensor<1x768xf32>
  return
}

// -----

func.func @layer_norm_gamma_type(%x: tensor<?x768xf32>, %g: tensor<768xf16>) {
  // expected-error @+1 {{'octet.layer_norm' op gamma must have element type 'f32', got 'f16'}}
  %0 = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x768xf32>, tensor<768xf16>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<?x768xf32>, %g: tensor<768xf32>) {
  // expected-error @+1 {{'octet.layer_norm' op axis 2 is out of range for rank 2}}
  %0 = octet.layer_norm %x, %g axis = 2 epsilon = 1.0e-12 : tensor<?x768xf32>, tensor<768xf32>
  return
}

// -----

func.func @layer_norm_epsilon_zero(%x: tensor<?x768xf32>, %g: tensor<768xf32>) {
  // expected-error @+1 {{'octet.layer_norm' op epsilon must be positive, got 0}}
  %0 = octet.layer_norm %x, %g axis = 1 epsilon = 0.0 : tensor<?x768xf32>, tensor<768xf32>
  return
}

// -----

func.func @layer_norm_epsilon_negative(%x: tensor<?x768xf32>, %g: tensor<768xf32>) {
  // expected-error @+1 {{'octet.layer_norm' op epsilon must be positive, got -1.000000e-05}}
  %0 = octet.layer_norm %x, %g axis = 1 epsilon = -1.0e-5 : tensor<?x768xf32>, tensor<768xf32>
  return
}

// -----

func.func @add_layer_norm_epsilon_nan(%x: tensor<?x768xf32>, %g: tensor<768xf32>) {
  // expected-error @+1 {{'octet.add_layer_norm' op epsilon must be positive, got nan}}
  %0 = octet.add_layer_norm %x, %x, %g axis = 1 epsilon = 0x7FC00000 : tensor<?x768xf32>, tensor<768xf32>
  return
}

// -----

func.func @add_layer_norm_residual_type(%x: tensor<?x768xf32>, %r: tensor<768xf32>, %g: tensor<768xf32>) {
  // expected-error @+1 {{'octet.add_layer_norm' op failed to verify that all of {input, residual, result} have same type}}
  %0 = "octet.add_layer_norm"(%x, %r, %g) <{axis = 1 : i64, epsilon = 1.0e-12 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<?x768xf32>
  return
}

// -----

func.func @gelu_approximate(%x: tensor<?x3072xf32>) {
  // expected-error @+1 {{'octet.gelu' op approximate must be "none" or "tanh", got "fast"}}
  %0 = octet.gelu %x approximate = "fast" : tensor<?x3072xf32>
  return
}

// -----

func.func @scalar_gelu_approximate(%x: f32) {
  // expected-error @+1 {{'octet.scalar_gelu' op approximate must be "none" or "tanh", got "fast"}}
  %0 = octet.scalar_gelu %x approximate = "fast" : f32
  return
}

// -----

func.func @scalar_gelu_f64(%x: f64) {
  // expected-error @+1 {{'octet.scalar_gelu' op operand #0 must be 32-bit float, but got 'f64'}}
  %0 = octet.scalar_gelu %x : f64
  return
}

// -----

func.func @attention_heads(%q: tensor<?x?x768xf32>) {
  // expected-error @+1 {{'octet.attention' op hidden size 768 is not a multiple of num_heads 10}}
  %0 = octet.attention %q, %q, %q num_heads = 10 scale = 0.125 : tensor<?x?x768xf32>
  return
}

// -----

func.func @attention_rank2(%q: tensor<?x768xf32>) {
  // expected-error @+1 {{'octet.attention' op query, key and value must be [batch, seq, hidden], got 'tensor<?x768xf32>'}}
  %0 = octet.attention %q, %q, %q num_heads = 12 scale = 0.125 : tensor<?x768xf32>
  return
}

// -----

func.func @attention_zero_heads(%q: tensor<?x?x768xf32>) {
  // expected-error @+1 {{'octet.attention' op attribute 'num_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = octet.attention %q, %q, %q num_heads = 0 scale = 0.125 : tensor<?x?x768xf32>
  return
}

// -----

func.func @attention_mask_shape(%q: tensor<?x?x768xf32>, %m: tensor<?x12x1x1x?xf32>) {
  // expected-error @+1 {{'octet.attention' op mask of shape [?, 12, 1, 1, ?] does not broadcast to the scores [?, 12, ?, ?] [batch, heads, seq, seq]}}
  %0 = octet.attention %q, %q, %q, %m num_heads = 12 scale = 0.125 : tensor<?x?x768xf32>, tensor<?x12x1x1x?xf32>
  return
}

// -----

func.func @attention_mask_heads(%q: tensor<?x?x768xf32>, %m: tensor<?x8x?x?xf32>) {
  // expected-error @+1 {{'octet.attention' op mask of shape [?, 8, ?, ?] does not broadcast to the scores [?, 12, ?, ?] [batch, heads, seq, seq]}}
  %0 = octet.attention %q, %q, %q, %m num_heads = 12 scale = 0.125 : tensor<?x?x768xf32>, tensor<?x8x?x?xf32>
  return
}

// -----

func.func @attention_mask_type(%q: tensor<?x?x768xf32>, %m: tensor<?x1x1x?xf16>) {
  // expected-error @+1 {{'octet.attention' op mask must be additive, of element type 'f32', got 'f16'}}
  %0 = octet.attention %q, %q, %q, %m num_heads = 12 scale = 0.125 : tensor<?x?x768xf32>, tensor<?x1x1x?xf16>
  return
}

// -----

func.func @reshape_element_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'octet.reshape' op cannot reshape [2, 3] (6 elements) to [7] (7 elements)}}
  %0 = octet.reshape %x : tensor<2x3xf32> -> tensor<7xf32>
  return
}

// -----

func.func @reshape_not_divisible(%x: tensor<4x6xf32>, %n: index) {
  // expected-error @+1 {{'octet.reshape' op cannot reshape [4, 6] (24 elements) to [?, 5] (5·? elements)}}
  %0 = octet.reshape %x(%n) : tensor<4x6xf32> -> tensor<?x5xf32>
  return
}

// -----

func.func @reshape_dynamic_dim_count(%x: tensor<?x?x768xf32>, %n: index) {
  // expected-error @+1 {{'octet.reshape' op result type 'tensor<?x?x12x64xf32>' has 2 dynamic dims but 1 size operands were given}}
  %0 = octet.reshape %x(%n) : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<6xf32>) {
  // expected-error @+1 {{'octet.reshape' op element type changes from 'f32' to 'i32'}}
  %0 = octet.reshape %x : tensor<6xf32> -> tensor<2x3xi32>
  return
}

// -----

func.func @expand_incompatible(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{'octet.expand' op cannot expand [3, 4] to [2, 3, 5]}}
  %0 = octet.expand %x : tensor<3x4xf32> -> tensor<2x3x5xf32>
  return
}

// -----

func.func @expand_lower_rank(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'octet.expand' op cannot expand [2, 3, 4] to [3, 4]}}
  %0 = octet.expand %x : tensor<2x3x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @expand_dynamic_dim_count(%x: tensor<1x?xi64>, %n: index) {
  // expected-error @+1 {{'octet.expand' op result type 'tensor<?x?xi64>' has 2 dynamic dims but 1 size operands were given}}
  %0 = octet.expand %x(%n) : tensor<1x?xi64> -> tensor<?x?xi64>
  return
}

// -----

func.func @transpose_not_a_permutation(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{octet.transpose: [0, 2, 2] is not a permutation of 0..2}}
  %0 = octet.transpose %x permutation = [0, 2, 2] : tensor<2x3x4xf32>
  return
}

// -----

func.func @transpose_wrong_length(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{octet.transpose: permutation has 2 entries for a tensor of rank 3}}
  %0 = octet.transpose %x permutation = [1, 0] : tensor<2x3x4xf32>
  return
}

// -----

func.func @concat_dim_mismatch(%a: tensor<3x4xf32>, %b: tensor<5x2xf32>) {
  // expected-error @+1 {{octet.concat: inputs differ in dim 0 (3 vs 5), which is not the concat axis 1}}
  %0 = octet.concat %a, %b axis = 1 : tensor<3x4xf32>, tensor<5x2xf32>
  return
}

// -----

func.func @concat_rank_mismatch(%a: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{octet.concat: inputs 'tensor<3x4xf32>' and 'tensor<4xf32>' differ in rank or element type}}
  %0 = octet.concat %a, %b axis = 0 : tensor<3x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{octet.concat: axis 2 is out of range for rank 2}}
  %0 = octet.concat %a, %a axis = 2 : tensor<3x4xf32>, tensor<3x4xf32>
  return
}

// -----

func.func @concat_no_inputs() {
  // The result type is spelled out, so the verifier re-infers and compares it.
  // expected-error @+2 {{'octet.concat' op failed to infer returned types}}
  // expected-error @+1 {{octet.concat: needs at least one input}}
  %0 = "octet.concat"() <{axis = 0 : i64}> : () -> tensor<3xf32>
  return
}

// -----

func.func @slice_list_lengths(%x: tensor<1x512xi64>) {
  // expected-error @+1 {{'octet.slice' op axes, starts, ends and steps must have the same length, got 1, 1, 1 and 2}}
  %0 = octet.slice %x axes = [1] starts = [0] ends = [128] steps = [1, 1] : tensor<1x512xi64> -> tensor<1x128xi64>
  return
}

// -----

func.func @slice_length_mismatch(%x: tensor<1x512xi64>) {
  // expected-error @+1 {{'octet.slice' op slicing 0:128:1 of axis 1 (size 512) gives 128 elements, but the result has 64}}
  %0 = octet.slice %x axes = [1] starts = [0] ends = [128] steps = [1] : tensor<1x512xi64> -> tensor<1x64xi64>
  return
}

// -----

func.func @slice_negative_step_length(%x: tensor<10xf32>) {
  // expected-error @+1 {{'octet.slice' op slicing -1:-100:-3 of axis 0 (size 10) gives 4 elements, but the result has 3}}
  %0 = octet.slice %x axes = [0] starts = [-1] ends = [-100] steps = [-3] : tensor<10xf32> -> tensor<3xf32>
  return
}

// -----

func.func @slice_zero_step(%x: tensor<1x512xi64>) {
  // expected-error @+1 {{'octet.slice' op step of axis 1 must not be zero}}
  %0 = octet.slice %x axes = [1] starts = [0] ends = [128] steps = [0] : tensor<1x512xi64> -> tensor<1x128xi64>
  return
}

// -----

func.func @slice_repeated_axis(%x: tensor<1x512xi64>) {
  // expected-error @+1 {{'octet.slice' op axis 1 is sliced twice}}
  %0 = octet.slice %x axes = [1, 1] starts = [0, 0] ends = [128, 128] steps = [1, 1] : tensor<1x512xi64> -> tensor<1x128xi64>
  return
}

// -----

func.func @slice_axis_out_of_range(%x: tensor<1x512xi64>) {
  // expected-error @+1 {{'octet.slice' op axis 2 is out of range for rank 2}}
  %0 = octet.slice %x axes = [2] starts = [0] ends = [1] steps = [1] : tensor<1x512xi64> -> tensor<1x512xi64>
  return
}

// -----

func.func @slice_unsliced_dim(%x: tensor<2x512xi64>) {
  // expected-error @+1 {{'octet.slice' op dim 0 is not sliced but changes size from 2 to 1}}
  %0 = octet.slice %x axes = [1] starts = [0] ends = [128] steps = [1] : tensor<2x512xi64> -> tensor<1x128xi64>
  return
}

// -----

func.func @slice_rank(%x: tensor<1x512xi64>) {
  // expected-error @+1 {{'octet.slice' op result 'tensor<128xi64>' must have the rank and element type of 'tensor<1x512xi64>'}}
  %0 = octet.slice %x axes = [1] starts = [0] ends = [128] steps = [1] : tensor<1x512xi64> -> tensor<128xi64>
  return
}

// -----

func.func @gather_axis(%t: tensor<30522x768xf32>, %i: tensor<?x?xi64>) {
  // expected-error @+1 {{octet.gather: axis 2 is out of range for rank 2}}
  %0 = octet.gather %t, %i axis = 2 : tensor<30522x768xf32>, tensor<?x?xi64>
  return
}

// -----

func.func @gather_float_indices(%t: tensor<30522x768xf32>, %i: tensor<?xf32>) {
  // expected-error @+1 {{'octet.gather' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = octet.gather %t, %i axis = 0 : tensor<30522x768xf32>, tensor<?xf32>
  return
}

// -----

func.func @quantize_scale_length(%x: tensor<768x768xf32>, %s: tensor<512xf32>) {
  // expected-error @+1 {{'octet.quantize' op per-axis scale has 512 entries but axis 1 has size 768}}
  %0 = octet.quantize %x, %s axis = 1 : tensor<768x768xf32>, tensor<512xf32> -> tensor<768x768xi8>
  return
}

// -----

func.func @quantize_missing_axis(%x: tensor<768x768xf32>, %s: tensor<768xf32>) {
  // expected-error @+1 {{'octet.quantize' op a per-axis scale [768] needs an `axis`}}
  %0 = octet.quantize %x, %s : tensor<768x768xf32>, tensor<768xf32> -> tensor<768x768xi8>
  return
}

// -----

func.func @quantize_axis_out_of_range(%x: tensor<768x768xf32>, %s: tensor<768xf32>) {
  // expected-error @+1 {{'octet.quantize' op axis 2 is out of range for rank 2}}
  %0 = octet.quantize %x, %s axis = 2 : tensor<768x768xf32>, tensor<768xf32> -> tensor<768x768xi8>
  return
}

// -----

func.func @quantize_scale_rank(%x: tensor<768x768xf32>, %s: tensor<1x768xf32>) {
  // expected-error @+1 {{'octet.quantize' op scale must be a scalar or 1-D, got 'tensor<1x768xf32>'}}
  %0 = octet.quantize %x, %s axis = 1 : tensor<768x768xf32>, tensor<1x768xf32> -> tensor<768x768xi8>
  return
}

// -----

func.func @quantize_zero_point_type(%x: tensor<?x768xf32>, %s: tensor<f32>, %zp: tensor<i8>) {
  // expected-error @+1 {{'octet.quantize' op zero point must have element type 'ui8', got 'i8'}}
  %0 = octet.quantize %x, %s, %zp : tensor<?x768xf32>, tensor<f32>, tensor<i8> -> tensor<?x768xui8>
  return
}

// -----

func.func @quantize_zero_point_shape(%x: tensor<768x768xf32>, %s: tensor<768xf32>, %zp: tensor<i8>) {
  // expected-error @+1 {{'octet.quantize' op zero point shape [] differs from scale shape [768]}}
  %0 = octet.quantize %x, %s, %zp axis = 0 : tensor<768x768xf32>, tensor<768xf32>, tensor<i8> -> tensor<768x768xi8>
  return
}

// -----

func.func @quantize_result_shape(%x: tensor<?x768xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'octet.quantize' op result shape [?, 512] must equal the input shape [?, 768]}}
  %0 = octet.quantize %x, %s : tensor<?x768xf32>, tensor<f32> -> tensor<?x512xi8>
  return
}

// -----

func.func @dequantize_zero_point_type(%x: tensor<?x768xi8>, %s: tensor<f32>, %zp: tensor<ui8>) {
  // expected-error @+1 {{'octet.dequantize' op zero point must have element type 'i8', got 'ui8'}}
  %0 = octet.dequantize %x, %s, %zp : tensor<?x768xi8>, tensor<f32>, tensor<ui8> -> tensor<?x768xf32>
  return
}

// -----

func.func @matmul_integer_one_zero_point(%a: tensor<?x768xui8>, %b: tensor<768x768xi8>, %zp: tensor<ui8>) {
  // expected-error @+1 {{'octet.matmul_integer' op zero points come as a pair: give both lhs and rhs zero points or none}}
  %0 = "octet.matmul_integer"(%a, %b, %zp) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (tensor<?x768xui8>, tensor<768x768xi8>, tensor<ui8>) -> tensor<?x768xi32>
  return
}

// -----

func.func @matmul_integer_zero_point_type(%a: tensor<?x768xui8>, %b: tensor<768x768xi8>, %azp: tensor<i8>, %bzp: tensor<i8>) {
  // expected-error @+1 {{'octet.matmul_integer' op lhs zero point must have element type 'ui8', got 'i8'}}
  %0 = octet.matmul_integer %a, %b zero_points(%azp, %bzp) : (tensor<?x768xui8>, tensor<768x768xi8>, tensor<i8>, tensor<i8>) -> tensor<?x768xi32>
  return
}

// -----

func.func @matmul_integer_zero_point_columns(%a: tensor<?x768xui8>, %b: tensor<768x768xi8>, %azp: tensor<ui8>, %bzp: tensor<512xi8>) {
  // expected-error @+1 {{'octet.matmul_integer' op rhs zero point must be a scalar or have one entry per column [768], got [512]}}
  %0 = octet.matmul_integer %a, %b zero_points(%azp, %bzp) : (tensor<?x768xui8>, tensor<768x768xi8>, tensor<ui8>, tensor<512xi8>) -> tensor<?x768xi32>
  return
}

// -----

func.func @matmul_integer_lhs_zero_point_vector(%a: tensor<?x768xui8>, %b: tensor<768x768xi8>, %azp: tensor<4xui8>, %bzp: tensor<i8>) {
  // expected-error @+1 {{'octet.matmul_integer' op lhs zero point must be a scalar, got [4]}}
  %0 = octet.matmul_integer %a, %b zero_points(%azp, %bzp) : (tensor<?x768xui8>, tensor<768x768xi8>, tensor<4xui8>, tensor<i8>) -> tensor<?x768xi32>
  return
}

// -----

func.func @matmul_integer_contracting(%a: tensor<?x768xui8>, %b: tensor<512x768xi8>) {
  // The result type is spelled out, so the verifier re-infers and compares it.
  // expected-error @+2 {{'octet.matmul_integer' op failed to infer returned types}}
  // expected-error @+1 {{octet.matmul_integer: contracting dims differ (768 vs 512) in [?, 768] · [512, 768]}}
  %0 = octet.matmul_integer %a, %b : (tensor<?x768xui8>, tensor<512x768xi8>) -> tensor<?x768xi32>
  return
}

// -----

func.func @dim_index(%x: tensor<?x?xi64>) {
  // expected-error @+1 {{'octet.dim' op dim index 2 is out of range for a tensor of rank 2}}
  %0 = octet.dim %x[2] : tensor<?x?xi64>
  return
}

// -----

func.func @from_elements_size(%a: index, %b: index) {
  // expected-error @+1 {{'octet.from_elements' op result must be a 1-D tensor of 2 elements, got 'tensor<3xi64>'}}
  %0 = octet.from_elements %a, %b : tensor<3xi64>
  return
}

// -----

func.func @range_zero_delta(%n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'octet.range' op delta must not be zero}}
  %0 = octet.range %c0, %n, %c0 : tensor<?xi64>
  return
}

// -----

func.func @range_size(%n: index) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c10 = arith.constant 10 : index
  // expected-error @+1 {{'octet.range' op range from 0 to 10 by 3 has 4 elements, but the result type has 5}}
  %0 = octet.range %c0, %c10, %c3 : tensor<5xi64>
  return
}

// -----

func.func @range_rank(%n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'octet.range' op result must be 1-D, got 'tensor<?x?xi64>'}}
  %0 = octet.range %c0, %n, %n : tensor<?x?xi64>
  return
}

// -----

func.func @constant_type() {
  // expected-error @+1 {{'octet.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "octet.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return
}

// -----

func.func @quantize_per_tensor_axis_out_of_range(%x: tensor<?x768xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'octet.quantize' op axis 5 is out of range for rank 2}}
  %0 = octet.quantize %x, %s axis = 5 : tensor<?x768xf32>, tensor<f32> -> tensor<?x768xi8>
  return
}

// -----

func.func @slice_dynamic_marker_as_static(%x: tensor<?xf32>) {
  // expected-error @+1 {{expected 1 dynamic starts values}}
  %0 = "octet.slice"(%x) <{axes = array<i64: 0>, static_starts = array<i64: -9223372036854775808>, static_ends = array<i64: 1>, steps = array<i64: 1>, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<?xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @slice_of_empty_dim(%x: tensor<0xf32>) {
  // expected-error @+1 {{'octet.slice' op slicing -1:-10:-1 of axis 0 (size 0) gives 0 elements, but the result has 1}}
  %0 = octet.slice %x axes = [0] starts = [-1] ends = [-10] steps = [-1] : tensor<0xf32> -> tensor<1xf32>
  return
}

// -----

func.func @fused_linear_result(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'octet.fused_linear' op result type 'tensor<?x4xf32>' differs from the linear's 'tensor<?x8xf32>'}}
  %y = octet.fused_linear %x, %w {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @fused_linear_k(%x: tensor<?x3xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'octet.fused_linear' op input's last dim 3 does not match the weight's rows 4}}
  %y = octet.fused_linear %x, %w {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x3xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @fused_linear_extra_shape(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>, %r: tensor<2x1x8xf32>) {
  // expected-error @+1 {{'octet.fused_linear' op extra operand #0 of shape [2, 1, 8] does not broadcast to the result shape [?, 8]}}
  %y = octet.fused_linear %x, %w extra(%r : tensor<2x1x8xf32>) {
  ^bb0(%acc: f32, %r0: f32):
    octet.yield %acc : f32
  } : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @fused_linear_block_args(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>, %r: tensor<8xf32>) {
  // expected-error @+1 {{'octet.fused_linear' op epilogue block must take ('f32', 'f32'): the accumulator, then one element per extra operand}}
  %y = octet.fused_linear %x, %w extra(%r : tensor<8xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @fused_linear_yield_type(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'octet.fused_linear' op epilogue must end with an octet.yield of one 'f32'}}
  %y = octet.fused_linear %x, %w {
  ^bb0(%acc: f32):
    %c = arith.constant 1 : i32
    octet.yield %c : i32
  } : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @fused_linear_body(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) {
  %y = octet.fused_linear %x, %w {
  ^bb0(%acc: f32):
    // expected-error @+1 {{'octet.constant' op is not a scalar f32 op that the epilogue of octet.fused_linear allows}}
    %t = octet.constant dense<1.0> : tensor<f32>
    octet.yield %acc : f32
  } : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @fused_linear_isolated(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>, %s: f32) {
  // expected-note @+1 {{required by region isolation constraints}}
  %y = octet.fused_linear %x, %w {
  ^bb0(%acc: f32):
    // expected-error @+1 {{using value defined outside the region}}
    %m = arith.mulf %acc, %s : f32
    octet.yield %m : f32
  } : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @yield_outside(%a: f32) {
  // expected-error @+1 {{'octet.yield' op expects parent op to be one of 'octet.fused_linear, octet.fused, octet.qlinear'}}
  octet.yield %a : f32
}

// -----

func.func @fused_no_inputs() {
  // expected-error @+1 {{'octet.fused' op needs at least one input: the result shape is their broadcast}}
  %y = "octet.fused"() ({
  ^bb0:
    %c = arith.constant 1.0 : f32
    "octet.yield"(%c) : (f32) -> ()
  }) : () -> tensor<2xf32>
  return
}

// -----

func.func @fused_widens(%a: tensor<?x4xf32>, %b: tensor<3x1x4xf32>) {
  // expected-error @+1 {{'octet.fused' op input #1 of shape [3, 1, 4] does not broadcast to the result shape [?, 4]}}
  %y = octet.fused %a, %b {
  ^bb0(%a0: f32, %b0: f32):
    octet.yield %a0 : f32
  } : tensor<?x4xf32>, tensor<3x1x4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @fused_inputs_disagree(%a: tensor<2x?xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{'octet.fused' op input #1 of shape [3, 4] does not broadcast with the inputs before it [2, ?]}}
  %y = octet.fused %a, %b {
  ^bb0(%a0: f32, %b0: f32):
    octet.yield %a0 : f32
  } : tensor<2x?xf32>, tensor<3x4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @fused_result_from_nowhere(%a: tensor<4xf32>) {
  // expected-error @+1 {{'octet.fused' op result shape [?, 4] is not the broadcast of the input shapes [4]}}
  %y = octet.fused %a {
  ^bb0(%a0: f32):
    octet.yield %a0 : f32
  } : tensor<4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @fused_stretched(%a: tensor<1x4xf32>) {
  // expected-error @+1 {{'octet.fused' op result shape [3, 4] is not the broadcast of the input shapes [1, 4]}}
  %y = octet.fused %a {
  ^bb0(%a0: f32):
    octet.yield %a0 : f32
  } : tensor<1x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @fused_block_args(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'octet.fused' op body block must take ('f32', 'f32'): one element per input}}
  %y = octet.fused %a, %b {
  ^bb0(%a0: f32):
    octet.yield %a0 : f32
  } : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @fused_input_type(%a: tensor<4xi32>) {
  // expected-error @+1 {{'octet.fused' op operand #0 must be variadic of ranked tensor of 32-bit float values, but got 'tensor<4xi32>'}}
  %y = octet.fused %a {
  ^bb0(%a0: i32):
    %c = arith.constant 1.0 : f32
    octet.yield %c : f32
  } : tensor<4xi32> -> tensor<4xf32>
  return
}

// -----

func.func @fused_yield_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'octet.fused' op body must end with an octet.yield of one 'f32'}}
  %y = octet.fused %a {
  ^bb0(%a0: f32):
    %c = arith.constant 1 : i32
    octet.yield %c : i32
  } : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @fused_body_op(%a: tensor<4xf32>) {
  %y = octet.fused %a {
  ^bb0(%a0: f32):
    // expected-error @+1 {{'math.sin' op is not a scalar f32 op that octet.fused allows (arith.constant, arith.addf, arith.subf, arith.mulf, arith.divf, arith.maximumf, arith.minimumf, math.powf, arith.negf, math.absf, math.exp, math.log, math.erf, math.tanh, math.sqrt, math.rsqrt, octet.scalar_gelu)}}
    %s = math.sin %a0 : f32
    octet.yield %s : f32
  } : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @fused_body_f64(%a: tensor<4xf32>) {
  %y = octet.fused %a {
  ^bb0(%a0: f32):
    // expected-error @+1 {{'arith.extf' op is not a scalar f32 op that octet.fused allows}}
    %d = arith.extf %a0 : f32 to f64
    %e = math.exp %d : f64
    %t = arith.truncf %e : f64 to f32
    octet.yield %t : f32
  } : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @fused_body_constant(%a: tensor<4xf32>) {
  %y = octet.fused %a {
  ^bb0(%a0: f32):
    // expected-error @+1 {{'octet.constant' op is not a scalar f32 op that octet.fused allows}}
    %t = octet.constant dense<1.0> : tensor<f32>
    octet.yield %a0 : f32
  } : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @fused_isolated(%a: tensor<4xf32>, %s: f32) {
  // expected-note @+1 {{required by region isolation constraints}}
  %y = octet.fused %a {
  ^bb0(%a0: f32):
    // expected-error @+1 {{using value defined outside the region}}
    %m = arith.mulf %a0, %s : f32
    octet.yield %m : f32
  } : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @qlinear_k(%x: tensor<?x3xui8>, %w: tensor<4x8xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>) {
  // expected-error @+1 {{'octet.qlinear' op input's last dim 3 does not match the weight's rows 4}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x3xui8>, tensor<4x8xi8> -> tensor<?x8xf32>
  return
}

// -----

func.func @qlinear_weight_scale(%x: tensor<?x4xui8>, %w: tensor<8x4xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<4xf32>) {
  // expected-error @+1 {{'octet.qlinear' op weight_scale (one per output channel) must have shape [8] (the weight's rows), got [4]}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<4xf32>) transpose_weight {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x4xui8>, tensor<8x4xi8> -> tensor<?x8xf32>
  return
}

// -----

func.func @qlinear_bias(%x: tensor<?x4xui8>, %w: tensor<4x8xi8>, %b: tensor<4xf32>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>) {
  // expected-error @+1 {{'octet.qlinear' op bias must have shape [8] (the weight's columns), got [4]}}
  %y = octet.qlinear %x, %w, %b scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x4xui8>, tensor<4x8xi8>, tensor<4xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @qlinear_weight_type(%x: tensor<?x4xui8>, %w: tensor<4x8xui8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>) {
  // expected-error @+1 {{'octet.qlinear' op operand #1 must be ranked tensor of 8-bit signless integer values}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x4xui8>, tensor<4x8xui8> -> tensor<?x8xf32>
  return
}

// -----

func.func @qlinear_result_shape(%x: tensor<?x4xui8>, %w: tensor<4x8xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>) {
  // expected-error @+1 {{'octet.qlinear' op result shape [?, 4] differs from the linear's [?, 8]}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x4xui8>, tensor<4x8xi8> -> tensor<?x4xf32>
  return
}

// -----

func.func @qlinear_missing_requantize(%x: tensor<?x4xui8>, %w: tensor<4x8xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>) {
  // expected-error @+1 {{'octet.qlinear' op a quantized result (requantize fused) needs output scale and zero point}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x4xui8>, tensor<4x8xi8> -> tensor<?x8xui8>
  return
}

// -----

func.func @qlinear_f32_requantize(%x: tensor<?x4xui8>, %w: tensor<4x8xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>) {
  // expected-error @+1 {{'octet.qlinear' op an f32 result takes no output scale and zero point}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) requantize(%xs, %xzp : tensor<f32>, tensor<ui8>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x4xui8>, tensor<4x8xi8> -> tensor<?x8xf32>
  return
}

// -----

func.func @qlinear_output_zero_point(%x: tensor<?x4xui8>, %w: tensor<4x8xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>) {
  // expected-error @+1 {{'octet.qlinear' op output zero point must have the result's element type 'i8', got 'ui8'}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) requantize(%xs, %xzp : tensor<f32>, tensor<ui8>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x4xui8>, tensor<4x8xi8> -> tensor<?x8xi8>
  return
}

// -----

func.func @qlinear_epilogue_type(%x: tensor<?x4xui8>, %w: tensor<4x8xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>, %ys: tensor<f32>, %yzp: tensor<ui8>) {
  // expected-error @+1 {{'octet.qlinear' op epilogue block must take ('f32'): the dequantized accumulator, then one element per extra operand}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) requantize(%ys, %yzp : tensor<f32>, tensor<ui8>) {
  ^bb0(%acc: i32):
    %f = arith.sitofp %acc : i32 to f32
    octet.yield %f : f32
  } : tensor<?x4xui8>, tensor<4x8xi8> -> tensor<?x8xui8>
  return
}

// -----

func.func @qlinear_extra_shape(%x: tensor<?x4xui8>, %w: tensor<4x8xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>, %r: tensor<2x1x8xf32>) {
  // expected-error @+1 {{'octet.qlinear' op extra operand #0 of shape [2, 1, 8] does not broadcast to the result shape [?, 8]}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) extra(%r : tensor<2x1x8xf32>) {
  ^bb0(%acc: f32, %r0: f32):
    octet.yield %acc : f32
  } : tensor<?x4xui8>, tensor<4x8xi8> -> tensor<?x8xf32>
  return
}
