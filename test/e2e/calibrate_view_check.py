#!/usr/bin/env python3
"""Calibration of a linear whose input is a strided view: y = Slice(x)[..., 2:6] · W.

The Plan reads the slice in place (a view of x with a row stride of 8), so calibration's
observer must read it through its strides (compiler/driver/Calibrate.cpp). Two batches of
different shapes; octet.calib must hold, exactly (f32), the per-channel abs-max, the
per-channel min / max and the overall min / max of the sliced values over all rows.

    calibrate_view_check.py --octetc octetc --work DIR

Prints "strided calibration: ok" or what differs; exits nonzero on a mismatch.
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from calibrate_check import dense_values, f32_hex


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--octetc", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    consts = {"w": w, "starts": np.array([2], np.int64), "ends": np.array([6], np.int64),
              "axes": np.array([2], np.int64)}
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["xs"], name="view/Slice"),
             helper.make_node("MatMul", ["xs", "w"], ["y"], name="view/MatMul")]
    graph = helper.make_graph(
        nodes, "view", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "s", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "s", 5])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "view.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    batches = [rng.standard_normal((2, 3, 8)).astype(np.float32),
               (3 * rng.standard_normal((1, 5, 8))).astype(np.float32)]
    for i, x in enumerate(batches):
        os.makedirs(os.path.join(args.work, "samples", f"b{i}"), exist_ok=True)
        np.save(os.path.join(args.work, "samples", f"b{i}", "x.npy"), x)
    out = os.path.join(args.work, "view.mlir")
    subprocess.run([args.octetc, "calibrate", model, "--samples", os.path.join(args.work, "samples"),
                    "-o", out], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = np.concatenate([x[..., 2:6].reshape(-1, 4) for x in batches])
    calib = re.findall(r"octet\.calib = \{([^}]*)\}", open(out).read())
    if len(calib) != 1:
        print(f"expected one octet.calib, found {len(calib)}")
        return 1

    def field(name):
        m = re.search(name + r" = (dense<([^>]*)>|([-0-9.e+x]+) : f32)", calib[0])
        return dense_values(m.group(2), 4) if m.group(2) else np.float32(f32_hex(m.group(3)))

    expected = {"input_absmax": np.abs(seen).max(0), "input_channel_min": seen.min(0),
                "input_channel_max": seen.max(0), "input_min": seen.min(), "input_max": seen.max()}
    bad = [f"{k}: {field(k)} != {v}" for k, v in expected.items()
           if not np.array_equal(np.asarray(field(k), np.float32), np.asarray(v, np.float32))]
    print("\n".join(bad) if bad else "strided calibration: ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
