#!/usr/bin/env python3
"""Fully and partly padded rows on the real Hugging Face exports (test/models/exports).

A batch of 3 x 6 tokens whose attention mask is all ones in row 0, all zeros in row 1 (a
fully masked row: every key of every query is padding) and padded after 3 tokens in row 2
runs through `octetc run` (FP32, one process per fixture) and ONNX Runtime. The masked rows
are where the exporters' mask idioms differ (finfo.min or -inf fills; sdpa's
Where(IsNaN(softmax), 0, softmax)), so Octet computing every position (--no-pack-tokens)
must give exactly what ONNX Runtime gives: NaN where it gives NaN, and every other value
within 1e-4 * max(1, max|ORT|). With padding-free batches (the default,
docs/padding-free.md) the real tokens must match the same way, padding positions of
per-token outputs are 0, and the fully padded row of other outputs is not compared (it is
computed from padding only).

    hf_masked_rows.py --octetc OCTETC [--filter GLOB[,GLOB...]]

Prints one line per fixture and "N fixtures: N ok, N FAILED"; exits nonzero on a failure.
"""
import argparse
import fnmatch
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import token_outputs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTS = os.path.join(os.path.dirname(HERE), "models", "exports")


def feeds_for(session):
    batch, seq = 3, 6
    mask = np.ones((batch, seq), np.int64)
    mask[1, :] = 0
    mask[2, 3:] = 0
    ids = np.random.default_rng(0).integers(3, 50, (batch, seq)).astype(np.int64)
    feeds = {}
    for info in session.get_inputs():
        if info.name == "input_ids":
            feeds[info.name] = ids
        elif info.name == "attention_mask":
            feeds[info.name] = mask
        else:  # token_type_ids
            feeds[info.name] = np.zeros((batch, seq), np.int64)
    return feeds


def check(path, octetc, work):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = feeds_for(session)
    reference = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    args = []
    for name, value in feeds.items():
        np.save(os.path.join(work, name + ".npy"), value)
        args += ["--input", f"{name}={os.path.join(work, name + '.npy')}"]
    mask = feeds["attention_mask"]
    for packed in (False, True):
        problem = compare_run(octetc, path, args, work, reference, mask, packed)
        if problem:
            return ("padding-free: " if packed else "--no-pack-tokens: ") + problem
    return None


def compare_run(octetc, path, args, work, reference, mask, packed):
    out = os.path.join(work, "packed" if packed else "padded")
    proc = subprocess.run([octetc, "run", path, *args, "--output", out, "--repeat", "1"] +
                          ([] if packed else ["--no-pack-tokens"]), capture_output=True, text=True)
    if proc.returncode:
        return "octetc failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
    for name, expected in reference.items():
        got = np.load(os.path.join(out, name + ".npy"))
        if packed:
            expected = token_outputs.zero_padding(expected, mask)
            if token_outputs.padded_positions(expected, mask) is None:
                rows = mask.any(axis=1)  # a fully padded row's pooled outputs are meaningless
                got, expected = got[rows], expected[rows]
        if got.shape != expected.shape:
            return f"{name}: shape {got.shape}, ORT {expected.shape}"
        if not np.array_equal(np.isnan(got), np.isnan(expected)):
            return (f"{name}: NaN at {int(np.isnan(got).sum())} places, ORT at "
                    f"{int(np.isnan(expected).sum())}")
        finite = ~np.isnan(expected)
        error = float(np.max(np.abs(got[finite] - expected[finite]), initial=0.0))
        bound = 1e-4 * max(1.0, float(np.max(np.abs(expected[finite]), initial=0.0)))
        if error > bound:
            return f"{name}: max|octet - ort| {error:.2e} > {bound:.2e}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--octetc", required=True)
    parser.add_argument("--filter", default="*")
    args = parser.parse_args()
    globs = args.filter.split(",")
    fixtures = sorted(f for f in glob.glob(os.path.join(EXPORTS, "*", "*.onnx"))
                      if any(fnmatch.fnmatch(os.path.relpath(f, EXPORTS)[:-5], g) for g in globs))
    if not fixtures:
        sys.exit(f"hf_masked_rows.py: --filter {args.filter!r} selects no fixture")
    failures = []
    with tempfile.TemporaryDirectory() as work:
        for path in fixtures:
            name = os.path.relpath(path, EXPORTS)[:-5]
            folder = os.path.join(work, name.replace("/", "_"))
            os.makedirs(folder)
            problem = check(path, args.octetc, folder)
            if problem:
                failures.append(f"{name}: FAILED: {problem}")
            print(failures[-1] if problem else f"{name}: ok")
    # Again next to the count: FileCheck's dump of a failed run elides the middle lines.
    for line in failures:
        print(line)
    failed = len(failures)
    print(f"{len(fixtures)} fixtures: {len(fixtures) - failed} ok, {failed} FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
