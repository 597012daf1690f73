#!/usr/bin/env python3
"""octetc run against ONNX Runtime on generated encoders.

For each model (test/models/make_encoder.py: BERT, DistilBERT, XLM-R as the
torchscript / optimum / dynamo exporters write them; GELU erf and tanh; small
2-layer ones and a 1-layer hidden-768 one) it writes one input set per
(batch, sequence) shape, with attention masks whose odd rows have a padded
tail, runs all of them in one `octetc run --input-sets` process (one compile),
and compares every output with onnxruntime:

    max|octet - ort| <= 1e-4 * max(1, max|ort|)

over the real tokens of per-token outputs, whose padding positions must be 0
(padding-free batches, docs/padding-free.md), or over every position when the
run computes padding (--no-pack-tokens, or a pass prefix without
octet-pack-tokens).

Prints a table; exits nonzero on any failure.

    run_vs_ort.py --octetc build/tools/octetc/octetc [--quick] [--models a,b]
                  [--octetc-arg=--isa=avx2 ...] [--keep DIR]

--pass-prefixes checks the meaning of every pass instead: bert-torchscript,
distilbert-optimum and xlmr-dynamo (or --models) are compiled and run after
each prefix of the FP32 pipeline (`octetc run --passes=...`: import only,
+cleanup, +recognize, +cleanup, ... +plan-memory, as --print-ir-after-all
lists them) on the quick shapes, each against ORT with the same tolerance.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import token_outputs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MAKE_ENCODER = os.path.join(ROOT, "test", "models", "make_encoder.py")

SMALL = ["--layers", "2", "--hidden", "64", "--heads", "4", "--intermediate", "128",
         "--vocab", "100", "--max-pos", "400"]
WIDE = ["--layers", "1", "--hidden", "768", "--heads", "12", "--intermediate", "3072",
        "--vocab", "200", "--max-pos", "400"]

# (label, make_encoder arguments)
MODELS = [
    ("bert-torchscript", ["--arch", "bert", "--style", "torchscript"] + SMALL),
    ("bert-torchscript-tanh", ["--arch", "bert", "--style", "torchscript", "--gelu", "tanh"] + SMALL),
    ("bert-optimum", ["--arch", "bert", "--style", "optimum"] + SMALL),
    ("bert-dynamo", ["--arch", "bert", "--style", "dynamo"] + SMALL),
    ("distilbert-torchscript", ["--arch", "distilbert", "--style", "torchscript"] + SMALL),
    ("distilbert-optimum", ["--arch", "distilbert", "--style", "optimum"] + SMALL),
    ("distilbert-dynamo", ["--arch", "distilbert", "--style", "dynamo", "--gelu", "tanh"] + SMALL),
    ("xlmr-torchscript", ["--arch", "xlmr", "--style", "torchscript"] + SMALL),
    ("xlmr-optimum", ["--arch", "xlmr", "--style", "optimum"] + SMALL),
    ("xlmr-dynamo", ["--arch", "xlmr", "--style", "dynamo"] + SMALL),
    ("bert-768", ["--arch", "bert", "--style", "torchscript"] + WIDE),
]
# --pass-prefixes: one model per architecture and exporter family.
PASS_PREFIX_MODELS = ["bert-torchscript", "distilbert-optimum", "xlmr-dynamo"]
BATCHES = [1, 3, 8]
SEQUENCES = [1, 7, 128, 384]
TOLERANCE = 1e-4


def make_inputs(session, batch, seq, vocab, rng):
    """Token ids in [2, vocab) (XLM-R pads with id 1), masks with padded tails."""
    feeds = {}
    for info in session.get_inputs():
        name = info.name
        if "mask" in name:
            mask = np.ones((batch, seq), dtype=np.int64)
            for row in range(1, batch, 2):  # odd rows: a padded tail, >= 1 token kept
                keep = max(1, seq - (seq // 3 + row % 3))
                mask[row, keep:] = 0
            feeds[name] = mask
        elif "token_type" in name:
            feeds[name] = (rng.random((batch, seq)) < 0.3).astype(np.int64)
        else:
            feeds[name] = rng.integers(2, vocab, size=(batch, seq), dtype=np.int64)
    return feeds


def prepare_model(label, args, work, shapes):
    """Writes the model and one input set per shape; returns (model path, input sets folder,
    {set: {output: ORT's array}})."""
    import onnxruntime as ort

    model = os.path.join(work, label + ".onnx")
    subprocess.run([sys.executable, MAKE_ENCODER] + args + ["-o", model], check=True,
                   stdout=subprocess.DEVNULL)
    vocab = int(args[args.index("--vocab") + 1])
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    # A stable seed per model (str hash() changes with every process).
    rng = np.random.default_rng(zlib.crc32(label.encode()))
    sets_dir = os.path.join(work, label + ".inputs")
    expected, masks = {}, {}
    for batch, seq in shapes:
        set_name = "b%d_s%03d" % (batch, seq)
        os.makedirs(os.path.join(sets_dir, set_name), exist_ok=True)
        feeds = make_inputs(session, batch, seq, vocab, rng)
        for name, value in feeds.items():
            np.save(os.path.join(sets_dir, set_name, name + ".npy"), value)
        expected[set_name] = dict(zip([o.name for o in session.get_outputs()],
                                      session.run(None, feeds)))
        masks[set_name] = token_outputs.find_mask(feeds)
    return model, sets_dir, expected, masks


def padding_mode(extra_args):
    """"ort" when the run computes padding positions, else "zero"."""
    if "--no-pack-tokens" in extra_args:
        return "ort"
    for arg in extra_args:
        if arg.startswith("--passes=") and "octet-pack-tokens" not in arg:
            return "ort"
    return "zero"


def run_and_compare(label, model, sets_dir, expected, masks, octetc, out_dir, out_rows,
                    extra_args=()):
    """One `octetc run --input-sets` of `model`; a row per (set, output) into out_rows."""
    start = time.time()
    proc = subprocess.run([octetc, "run", model, "--input-sets", sets_dir, "--output", out_dir,
                           "--repeat", "1", "--warmup", "0"] + list(extra_args),
                          capture_output=True, text=True)
    seconds = time.time() - start
    if proc.returncode != 0:
        message = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        out_rows.append((label, "all", "-", "-", "FAIL: octetc: " + (message[-1] if message else "?")))
        return False
    ok = True
    padding = padding_mode(extra_args)
    for set_name, outputs in expected.items():
        for name, want in outputs.items():
            path = os.path.join(out_dir, set_name, name + ".npy")
            if not os.path.exists(path):
                out_rows.append((label, set_name, name, "-", "FAIL: no output file"))
                ok = False
                continue
            got = np.load(path)
            if got.shape != want.shape or got.dtype != want.dtype:
                out_rows.append((label, set_name, name, "-", "FAIL: %s %s, ORT %s %s" % (
                    got.dtype, got.shape, want.dtype, want.shape)))
                ok = False
                continue
            mask = masks[set_name]
            diff, problem = token_outputs.compare(got, want, mask, padding)
            bound = TOLERANCE * token_outputs.scale_of(want, mask, padding)
            good = problem is None and diff <= bound and not np.isnan(got).any()
            ok &= good
            out_rows.append((label, set_name, name, "%.2e" % diff,
                             "ok" if good else "FAIL (%s)" % (problem or "bound %.1e" % bound)))
    out_rows.append((label, "octetc", "", "%.1fs" % seconds, "compile + %d sets" % len(expected)))
    return ok


def run_model(label, args, octetc, work, shapes, out_rows, extra_args=()):
    model, sets_dir, expected, masks = prepare_model(label, args, work, shapes)
    return run_and_compare(label, model, sets_dir, expected, masks, octetc,
                           os.path.join(work, label + ".outputs"), out_rows, extra_args)


def pipeline_passes(octetc, model):
    """The passes of octetc's FP32 pipeline, in order, as its --print-ir-after-all names them
    (so the prefixes follow compiler/passes/Pipeline.cpp)."""
    proc = subprocess.run([octetc, "run", model, "--batch", "1", "--seq", "2", "--repeat", "1",
                           "--warmup", "0", "--print-ir-after-all"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("octetc run --print-ir-after-all failed: " + proc.stderr.strip()[-300:])
    passes = re.findall(r"^// -----// IR Dump After (\S+) //", proc.stderr, re.MULTILINE)
    if not passes or passes[0] != "import":
        raise RuntimeError("octetc --print-ir-after-all printed no 'import' dump first")
    return passes[1:]


def check_pass_prefixes(models, octetc, work, shapes, rows, extra_args=()):
    """Compiles and runs each model after every prefix of the FP32 pipeline (import only,
    then one more pass at a time) against ORT: every pass must keep the meaning."""
    ok = True
    passes = None
    for label, model_args in models:
        model, sets_dir, expected, masks = prepare_model(label, model_args, work, shapes)
        passes = passes or pipeline_passes(octetc, model)
        for count in range(len(passes) + 1):
            pipeline = ",".join(passes[:count]) or "none"
            stage = "+".join(["import"] + [p.replace("octet-", "") for p in passes[:count]])
            ok &= run_and_compare(f"{label} [{count}: {stage}]", model, sets_dir, expected, masks,
                                  octetc,
                                  os.path.join(work, f"{label}.outputs.{count}"), rows,
                                  list(extra_args) + ["--passes=" + pipeline])
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--octetc", required=True)
    parser.add_argument("--quick", action="store_true", help="fewer models and shapes")
    parser.add_argument("--models", help="comma-separated model labels (default: all)")
    parser.add_argument("--octetc-arg", action="append", default=[],
                        help="extra octetc run argument, e.g. --octetc-arg=--isa=avx2 (repeatable)")
    parser.add_argument("--pass-prefixes", action="store_true",
                        help="compile and run after every prefix of the FP32 pipeline (import only, "
                             "+cleanup, +recognize, ...) on a few small models, quick shapes")
    parser.add_argument("--keep", help="keep the models, inputs and outputs in this directory")
    args = parser.parse_args()

    models = MODELS
    if args.pass_prefixes and not args.models:
        args.models = ",".join(PASS_PREFIX_MODELS)
    if args.models:
        wanted = set(args.models.split(","))
        models = [m for m in MODELS if m[0] in wanted]
        unknown = wanted - {m[0] for m in MODELS}
        if unknown:
            parser.error("unknown models: " + ", ".join(sorted(unknown)))
    shapes = [(b, s) for b in BATCHES for s in SEQUENCES]
    if args.quick or args.pass_prefixes:
        shapes = [(1, 7), (3, 128)]

    rows = []
    all_ok = True
    work = args.keep or tempfile.mkdtemp(prefix="octet-e2e-")
    os.makedirs(work, exist_ok=True)
    if args.pass_prefixes:
        try:
            all_ok &= check_pass_prefixes(models, args.octetc, work, shapes, rows, args.octetc_arg)
        except (subprocess.CalledProcessError, RuntimeError) as e:
            rows.append(("pass prefixes", "-", "-", "-", "FAIL: %s" % e))
            all_ok = False
        models = []
    for label, model_args in models:
        # The 768-wide model at batch 8 x 384 is the slow one on 2 cores: it
        # keeps the shapes that matter for its GEMM blocking.
        model_shapes = shapes
        if label == "bert-768" and not args.quick:
            model_shapes = [(1, 1), (1, 7), (3, 128), (8, 384)]
        try:
            all_ok &= run_model(label, model_args, args.octetc, work, model_shapes, rows,
                                args.octetc_arg)
        except subprocess.CalledProcessError as e:
            rows.append((label, "-", "-", "-", "FAIL: %s" % e))
            all_ok = False

    return report(("model", "set", "output", "max|diff|", "result"), rows, all_ok,
                  None if args.keep else work)


def report(header, rows, all_ok, remove=None):
    """Prints the table (the last column says ok / FAIL ...) and the verdict line; removes
    the `remove` folder; returns the exit status."""
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
    failures = sum(1 for r in rows if str(r[-1]).startswith("FAIL"))
    print("%s: %d failure(s)" % ("PASS" if all_ok else "FAIL", failures))
    if remove:
        import shutil
        shutil.rmtree(remove, ignore_errors=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
