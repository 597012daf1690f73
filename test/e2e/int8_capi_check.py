#!/usr/bin/env python3
"""The C API's INT8 options through the Python package (python/octet) against ONNX Runtime FP32.

A generated 2-layer BERT (test/models/make_encoder.py) is created through liboctet.so with
  {"int8": "static", "calibration_samples": "generate:4x4x32", "smoothquant_alpha": "0.6"},
  {"int8": "static", "smoothquant": "off", "calibration_percentile": "99.9"} and
  {"int8": "dynamic"},
run on a padded batch, and each output must satisfy max|octet - ort| <= 0.25 * max(1, max|ort|)
and cosine >= 0.99 (the bounds of int8_vs_ort.py). Then the option checks: every bad key or
value must fail octet_options_set with OCTET_ERROR_INVALID_ARGUMENT (1) and a message naming
the option, and bad calibration samples must fail model creation with a message naming them.

    int8_capi_check.py --lib build/runtime/liboctet.so --work DIR
"""
import argparse
import ctypes
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
import octet  # noqa: E402
import run_vs_ort  # noqa: E402

TOLERANCE = 0.25
COSINE = 0.99


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    os.environ["OCTET_LIBRARY"] = args.lib  # the package's liboctet.so: this one
    import onnxruntime as ort

    model = os.path.join(args.work, "bert.onnx")
    subprocess.run([sys.executable, run_vs_ort.MAKE_ENCODER, "--arch", "bert", "--layers", "2",
                    "--hidden", "64", "--heads", "4", "--intermediate", "128", "--vocab", "100",
                    "--max-pos", "128", "-o", model], check=True, stdout=subprocess.DEVNULL)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feeds = run_vs_ort.make_inputs(session, 3, 40, 100, np.random.default_rng(5))
    want = session.run(None, feeds)
    ok = True
    for config in ({"int8": "static", "calibration_samples": "generate:4x4x32",
                    "smoothquant_alpha": "0.6"},
                   {"int8": "static", "calibration_samples": "generate:4x4x32",
                    "smoothquant": "off", "calibration_percentile": "99.9"},
                   {"int8": "dynamic"}):
        label = ",".join("%s=%s" % kv for kv in config.items())
        try:
            m = octet.compile(model, options=config, progress=False)
            got = list(m.run(feeds).values())
        except octet.Error as e:
            print("%s: FAIL: %s" % (label, e))
            ok = False
            continue
        for g, w in zip(got, want):
            # Padding positions of per-token outputs are 0 (docs/padding-free.md).
            w = run_vs_ort.token_outputs.zero_padding(w, feeds["attention_mask"])
            g, w = g.astype(np.float64), w.astype(np.float64)
            diff = float(np.max(np.abs(g - w)))
            cos = float(np.dot(g.ravel(), w.ravel()) / (np.linalg.norm(g) * np.linalg.norm(w)))
            good = diff <= TOLERANCE * max(1.0, float(np.max(np.abs(w)))) and cos >= COSINE
            ok &= good
            print("%s: max|diff| %.3f cosine %.5f %s" % (label, diff, cos,
                                                         "ok" if good else "FAIL"))

    lib = ctypes.CDLL(args.lib)
    lib.octet_last_error.restype = ctypes.c_char_p
    lib.octet_options_create.restype = ctypes.c_void_p
    lib.octet_options_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.octet_options_destroy.argtypes = [ctypes.c_void_p]
    opts = lib.octet_options_create()
    for key, value in (("int8", "int4"), ("smoothquant", "yes"), ("smoothquant_alpha", "1.5"),
                       ("smoothquant_alpha", "0.5x"), ("calibration_percentile", "40"),
                       ("calibration_samples", ""), ("calibration_progress", "2")):
        status = lib.octet_options_set(opts, key.encode(), value.encode())
        print("set %s=%r: status %d: %s" % (key, value, status, lib.octet_last_error().decode()))
        ok &= status == 1
    lib.octet_options_destroy(opts)
    for samples in (os.path.join(args.work, "no-such-dir"), "generate:0x4"):
        try:
            octet.compile(model, options={"int8": "static", "calibration_samples": samples},
                          progress=False)
            print("samples %s: FAIL: no error" % samples)
            ok = False
        except octet.Error as e:
            print("samples %s: octet status %d: %s" % (os.path.basename(samples), e.status, e))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
