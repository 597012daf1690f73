// Bad options and malformed calibration are errors that name what is wrong.
// RUN: not octet-opt %s -octet-smoothquant=alpha=1.5 2>&1 | FileCheck %s --check-prefix=ALPHA
// RUN: not octet-opt %s -octet-smoothquant=alpha=-0.25 2>&1 | FileCheck %s --check-prefix=ALPHA-NEG
// RUN: not octet-opt %s -split-input-file -octet-smoothquant 2>&1 | FileCheck %s

// ALPHA: error: octet-smoothquant: alpha = 1.5 is outside [0, 1]
// ALPHA-NEG: error: octet-smoothquant: alpha = -0.25 is outside [0, 1]

// CHECK: error: octet-smoothquant: bad octet.calib: input_absmax has 3 elements, but the weight has K = 2 input features
func.func @wrong_size(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  %y = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[4.0, 1.0, 2.0]> : tensor<3xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// CHECK: error: octet-smoothquant: bad octet.calib: input_absmax[0] = -1{{.*}}; expected finite values >= 0
func.func @negative(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  %y = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[-1.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// CHECK: error: octet-smoothquant: bad octet.calib: expected a dictionary
func.func @not_a_dictionary(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  %y = octet.linear %ln, %w {octet.calib = dense<[4.0, 1.0]> : tensor<2xf32>} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// CHECK: error: octet-smoothquant: bad octet.calib: input_min > input_max
func.func @inverted_range(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  %y = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>, input_min = 1.0 : f32, input_max = -1.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// CHECK: error: octet-smoothquant: bad octet.calib: channel 0: input_channel_min/max disagree with each other or with input_absmax
func.func @channel_extremes_disagree(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  %y = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>,
                               input_channel_min = dense<[-5.0, -1.0]> : tensor<2xf32>, input_channel_max = dense<[1.0, 0.5]> : tensor<2xf32>}}
         : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// CHECK: error: octet-smoothquant: bad octet.calib: input_channel_min and input_channel_max come together
func.func @channel_extremes_alone(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  %y = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>,
                               input_channel_min = dense<[-4.0, -1.0]> : tensor<2xf32>}}
         : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}
