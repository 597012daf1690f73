// A bad mode option and a malformed calibration are errors that name the problem.
// RUN: not octet-opt %s -octet-quantize=mode=fast 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not octet-opt %s -split-input-file -octet-quantize 2>&1 | FileCheck %s
// RUN: octet-opt %s -split-input-file -octet-quantize=mode=dynamic | FileCheck %s --check-prefix=DYN

// MODE: for the --mode option: Cannot find option named 'fast'!

// Dynamic mode reads no calibration, so a malformed one does not matter there.
// DYN-COUNT-2: octet.quantize_per_row

// CHECK: error: octet-quantize: bad octet.calib: input_absmax has 3 elements, but the weight has K = 2 input features
func.func @wrong_size(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %y = octet.linear %x, %w {octet.calib = {input_absmax = dense<[4.0, 1.0, 2.0]> : tensor<3xf32>, input_min = -1.0 : f32, input_max = 1.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// CHECK: error: octet-quantize: bad octet.calib: input_min > input_max
func.func @inverted_range(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %y = octet.linear %x, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>, input_min = 1.0 : f32, input_max = -1.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}
