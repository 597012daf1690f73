#!/usr/bin/env python3
"""Checks `octetc calibrate` (or the C API's octet_calibrate) number for number against numpy.

A tiny model whose linears read the model input x directly (x·W1 + b1 and x·W2ᵀ, both
[?, ?, 8] → N) is calibrated on an input-set directory of three batches of different shapes
(one channel with outliers). Every `octet.calib` in the written IR must hold:

  input_absmax[j] == max over all batches and rows of |x[..., j]|   (exactly, f32)
  input_channel_min[j] / input_channel_max[j] == min / max of x[..., j]  (exactly)
  input_min / input_max == min / max of x over all batches          (exactly)
  with --percentile P: input_min / input_max == mean over batches of
      numpy.percentile(batch, 100 - P) / numpy.percentile(batch, P)  (to 1e-6 relative)

    calibrate_check.py --octetc octetc --work DIR [--percentile 99] [--lib liboctet.so]

Prints "calibration of N linear(s): ok" or what differs; exits nonzero on a mismatch.
"""
import argparse
import ctypes
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

K = 8
SHAPES = [(2, 5), (1, 7), (3, 2)]


def make_model(path):
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((K, 4)).astype(np.float32)
    b1 = rng.standard_normal(4).astype(np.float32)
    w2t = rng.standard_normal((3, K)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["xw1"], name="first/MatMul"),
        helper.make_node("Add", ["xw1", "b1"], ["y"], name="first/Add"),
        helper.make_node("Transpose", ["w2t"], ["w2"], perm=[1, 0], name="second/Transpose"),
        helper.make_node("MatMul", ["x", "w2"], ["z"], name="second/MatMul"),
    ]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", 4]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", "sequence", 3])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2t, "w2t")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.save(model, path)


def make_samples(folder):
    rng = np.random.default_rng(11)
    batches = []
    for i, (b, s) in enumerate(SHAPES):
        x = rng.standard_normal((b, s, K)).astype(np.float32)
        x[..., 3] *= 40.0  # an outlier channel, as in BERT's activations
        x[..., 5] = np.abs(x[..., 5])  # a channel that is never negative
        os.makedirs(os.path.join(folder, "set%d" % i), exist_ok=True)
        np.save(os.path.join(folder, "set%d" % i, "x.npy"), x)
        batches.append(x)
    return batches


DENSE = r"dense<(\[[^\]]*\]|[^>\[]+)> : tensor<(\d+)xf32>"
CALIB = re.compile(r"octet\.calib = \{input_absmax = " + DENSE + r", input_channel_max = " + DENSE +
                   r", input_channel_min = " + DENSE + r", input_max = ([^ ]+) : f32, "
                   r"input_min = ([^ ]+) : f32\}")


def f32_hex(text):
    """MLIR prints some f32 attributes as hex bit patterns (0x41200000)."""
    if text.startswith("0x"):
        return float(np.frombuffer(int(text, 16).to_bytes(4, "little"), np.float32)[0])
    return float(np.float32(text))


def dense_values(text, size):
    """The K values of a printed dense<...> (a list, or one splat value)."""
    if text.startswith("["):
        return np.array([f32_hex(v.strip()) for v in text[1:-1].split(",")], np.float32)
    return np.full(size, f32_hex(text.strip()), np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--octetc")
    parser.add_argument("--lib", help="calibrate through liboctet.so's octet_calibrate instead")
    parser.add_argument("--work", required=True)
    parser.add_argument("--percentile", type=float, default=0)
    args = parser.parse_args()

    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "tiny.onnx")
    samples = os.path.join(args.work, "samples")
    out = os.path.join(args.work, "tiny.calib.mlir")
    make_model(model)
    batches = make_samples(samples)
    if args.lib:
        lib = ctypes.CDLL(args.lib)
        lib.octet_last_error.restype = ctypes.c_char_p
        lib.octet_options_create.restype = ctypes.c_void_p
        lib.octet_options_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
        lib.octet_options_destroy.argtypes = [ctypes.c_void_p]
        lib.octet_calibrate.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p,
                                        ctypes.c_char_p]
        opts = lib.octet_options_create()
        if args.percentile:
            assert lib.octet_options_set(opts, b"calibration_percentile",
                                         str(args.percentile).encode()) == 0
        status = lib.octet_calibrate(model.encode(), samples.encode(), opts, out.encode())
        lib.octet_options_destroy(opts)
        if status != 0:
            print("octet_calibrate failed (%d): %s" % (status, lib.octet_last_error().decode()))
            return 1
    else:
        command = [args.octetc, "calibrate", model, "--samples", samples, "-o", out]
        if args.percentile:
            command.append("--percentile=%g" % args.percentile)
        proc = subprocess.run(command, capture_output=True, text=True)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            print("octetc calibrate failed")
            return 1
    text = open(out).read()
    found = CALIB.findall(text)
    linears = len(re.findall(r"octet\.(?:fused_)?linear ", text))
    if not found or len(found) != linears:
        print("FAIL: %d octet.calib attribute(s) for %d linear(s)" % (len(found), linears))
        return 1

    every = np.concatenate([x.reshape(-1, K) for x in batches])
    want_absmax = np.max(np.abs(every), axis=0)
    if args.percentile:
        want_min = np.mean([np.percentile(x.astype(np.float64), 100 - args.percentile)
                            for x in batches])
        want_max = np.mean([np.percentile(x.astype(np.float64), args.percentile)
                            for x in batches])
    else:
        want_min, want_max = float(every.min()), float(every.max())
    ok = True
    for absmax_text, size, chmax_text, _, chmin_text, _, max_text, min_text in found:
        got_min, got_max = f32_hex(min_text), f32_hex(max_text)
        if int(size) != K:
            print("FAIL: input_absmax has %s elements, expected %d" % (size, K))
            ok = False
            continue
        absmax = dense_values(absmax_text, K)
        if not np.array_equal(absmax, want_absmax):
            print("FAIL: input_absmax %s, numpy %s" % (absmax, want_absmax))
            ok = False
        chmin, chmax = dense_values(chmin_text, K), dense_values(chmax_text, K)
        if not np.array_equal(chmin, every.min(axis=0)) or not np.array_equal(chmax, every.max(axis=0)):
            print("FAIL: input_channel_min/max %s / %s, numpy %s / %s" % (
                chmin, chmax, every.min(axis=0), every.max(axis=0)))
            ok = False
        tol = 1e-6 * max(1.0, abs(want_max), abs(want_min)) if args.percentile else 0.0
        if abs(got_min - want_min) > tol or abs(got_max - want_max) > tol:
            print("FAIL: input_min/max %r/%r, numpy %r/%r" % (got_min, got_max, want_min, want_max))
            ok = False
    if ok:
        print("calibration of %d linear(s): ok" % len(found))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
