#!/usr/bin/env python3
"""Padding-free batches against the padded computation (docs/padding-free.md).

Generated encoders (test/models/make_encoder.py: BERT with a pooler, TorchScript style;
DistilBERT, dynamo style) run on batches whose real lengths mix 1, the full length, odd
lengths, left padding and fully padded rows, through `octetc run` with padding dropped (the
default) and with every position computed (--no-pack-tokens): FP32, INT8 dynamic, INT8
static (the same calibration), and an FP32 model.so. For each output:

  per-token outputs ([batch, seq, ...]): real positions within 1e-5 * max(1, max|padded|)
      of the padded run (packed rows change only the softmax's summation order), padding
      positions exactly 0;
  other outputs (the pooler, which reads the CLS token at position 0): equal the same way
      on every row whose position 0 is a real token.

With --interp, octet-interp runs the FP32 pipeline with and without octet-pack-tokens on
one small batch and the same comparison holds (the reference semantics of the new ops).
Prints a table and PASS / FAIL.

    padding_free.py --octetc OCTETC [--interp OCTET_INTERP]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import token_outputs  # noqa: E402

MAKE_ENCODER = os.path.join(os.path.dirname(HERE), "models", "make_encoder.py")
SMALL = ["--layers", "2", "--hidden", "64", "--heads", "4", "--intermediate", "128",
         "--vocab", "100", "--max-pos", "160"]
MODELS = [
    ("bert-torchscript", ["--arch", "bert", "--style", "torchscript", "--pooler"] + SMALL),
    ("distilbert-dynamo", ["--arch", "distilbert", "--style", "dynamo"] + SMALL),
]
# name: (seq, per-row masks as "R" real / "." padding patterns: lengths or explicit)
SETS = {
    "mix_b5_s17": (17, [1, 17, 9, 0, 4]),         # length 1, full, odd, fully padded, short
    "long_b3_s128": (128, [128, 1, 77]),
    "none_b2_s9": (9, [9, 9]),                    # no padding: nothing to drop
    "left_b2_s8": (8, ["RRRRR...", "...RRRRR"]),  # right and left padding
    "allpad_b2_s5": (5, [0, 0]),                  # no real token at all
}
CONFIGS = {
    "fp32": [],
    "int8-dynamic": ["--int8=dynamic"],
    "int8-static": ["--int8=static", "--calib", "generate:2x2x16"],
}
TOLERANCE = 1e-5


def mask_of(seq, rows):
    mask = np.zeros((len(rows), seq), np.int64)
    for b, row in enumerate(rows):
        if isinstance(row, int):
            mask[b, :row] = 1
        else:
            mask[b] = [c == "R" for c in row]
    return mask


def write_sets(folder, names, rng):
    sets = {}
    for set_name, (seq, rows) in SETS.items():
        mask = mask_of(seq, rows)
        feeds = {}
        for name in names:
            if "mask" in name:
                feeds[name] = mask
            elif "token_type" in name:
                feeds[name] = np.zeros_like(mask)
            else:
                feeds[name] = rng.integers(2, 100, size=mask.shape, dtype=np.int64)
        os.makedirs(os.path.join(folder, set_name), exist_ok=True)
        for name, value in feeds.items():
            np.save(os.path.join(folder, set_name, name + ".npy"), value)
        sets[set_name] = mask
    return sets


def compare(packed, padded, mask):
    """A problem text or None (see the module doc)."""
    if packed.shape != padded.shape:
        return "shape %s, padded %s" % (packed.shape, padded.shape)
    if token_outputs.padded_positions(padded, mask) is not None:
        diff, problem = token_outputs.compare(packed, padded, mask, "zero")
        scale = token_outputs.scale_of(padded, mask, "zero")
    else:
        # The pooler reads position 0 (CLS): a row whose CLS is padding (left padding, or
        # no real token) has a meaningless pooled value, 0-based here, garbage in ORT.
        rows = mask[:, 0] != 0
        diff, problem = token_outputs.compare(packed[rows], padded[rows], None, "ort")
        scale = max(1.0, float(np.max(np.abs(padded[rows])))) if rows.any() else 1.0
    if problem:
        return problem
    if not np.isfinite(diff):  # a NaN or inf among the compared values
        return "non-finite values"
    if diff > TOLERANCE * scale:
        return "max|packed - padded| %.2e > %.2e" % (diff, TOLERANCE * scale)
    return None


def run(command):
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(" ".join(os.path.basename(c) for c in command[:2]) + ": " +
                           ((proc.stderr.strip() or proc.stdout.strip()).splitlines() or ["?"])[-1])
    return proc


def check_model(label, args, octetc, interp, work, rows):
    model = os.path.join(work, label + ".onnx")
    run([sys.executable, MAKE_ENCODER] + args + ["-o", model])
    import onnx
    names = [i.name for i in onnx.load(model, load_external_data=False).graph.input]
    sets_dir = os.path.join(work, label + ".sets")
    sets = write_sets(sets_dir, names, np.random.default_rng(7))
    ok = True

    def outputs_of(folder, set_name):
        sub = os.path.join(folder, set_name)
        return {f[:-4]: np.load(os.path.join(sub, f)) for f in sorted(os.listdir(sub))}

    def check(config, packed_dir, padded_dir, set_names):
        nonlocal ok
        for set_name in set_names:
            a, b = outputs_of(packed_dir, set_name), outputs_of(padded_dir, set_name)
            for name in b:
                problem = compare(a[name], b[name], sets[set_name]) if name in a else "missing"
                ok &= problem is None
                rows.append((label, config, set_name, name, "ok" if problem is None
                             else "FAIL: " + problem))

    for config, extra in CONFIGS.items():
        out = {}
        for mode, flags in (("packed", []), ("padded", ["--no-pack-tokens"])):
            out[mode] = os.path.join(work, f"{label}.{config}.{mode}")
            proc = run([octetc, "run", model, "--input-sets", sets_dir, "--output", out[mode],
                        "--repeat", "1", "--warmup", "0"] + extra + flags)
            if mode == "packed" and "padding tokens are computed" in proc.stderr:
                rows.append((label, config, "-", "-", "FAIL: " + proc.stderr.strip()))
                ok = False
        check(config, out["packed"], out["padded"], sets)

    # The FP32 model.so (the AOT plan holds the new steps and scalars).
    so = os.path.join(work, label + ".so")
    run([octetc, "compile", model, "-o", so])
    aot = os.path.join(work, label + ".aot")
    run([octetc, "run", so, "--input-sets", sets_dir, "--output", aot, "--repeat", "1",
         "--warmup", "0"])
    check("aot-fp32", aot, os.path.join(work, f"{label}.fp32.padded"), sets)

    if interp:
        # The reference interpreter: the FP32 pipeline with and without octet-pack-tokens.
        passes = ("octet-cleanup,octet-recognize,octet-cleanup,octet-fuse-gemm-epilogue,"
                  "octet-fuse-elementwise")
        set_name = "mix_b5_s17"
        inputs = [f"--input={n}={os.path.join(sets_dir, set_name, n + '.npy')}" for n in names]
        dirs = {}
        for mode, pipeline in (("packed", passes + ",octet-pack-tokens"), ("padded", passes)):
            dirs[mode] = os.path.join(work, f"{label}.interp.{mode}")
            run([interp, model, "--pipeline", pipeline, "--output-dir",
                 os.path.join(dirs[mode], set_name)] + inputs)
        check("interp", dirs["packed"], dirs["padded"], [set_name])
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--octetc", required=True)
    parser.add_argument("--interp")
    parser.add_argument("--keep")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="octet-padding-free-")
    os.makedirs(work, exist_ok=True)
    rows, ok = [], True
    for label, model_args in MODELS:
        try:
            ok &= check_model(label, model_args, args.octetc, args.interp, work, rows)
        except RuntimeError as error:
            rows.append((label, "-", "-", "-", "FAIL: %s" % error))
            ok = False
    header = ("model", "config", "set", "output", "result")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
    print("%s: %d failure(s)" % ("PASS" if ok else "FAIL",
                                 sum(1 for r in rows if r[-1].startswith("FAIL"))))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
