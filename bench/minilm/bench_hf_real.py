#!/usr/bin/env python3
"""Octet on the real all-MiniLM-L6-v2 as torch.onnx.export writes it, next to the generated graph.

For each model (the exports of bench/minilm/export_hf_real.py, found in --exports, and the
generated-graph MiniLM of export_onnx.py, Optimum style, as the comparison row):

  imports     `octetc import`; its first error when it fails (the other columns are then "-")
  fused       octet.attention / LayerNorm (layer_norm + add_layer_norm) / octet.gelu after
              `octet-opt -octet-cleanup -octet-recognize -octet-cleanup`, of 6 layers
  cosine      mean and minimum cosine of mean-pooled sentence embeddings, Octet INT8 static
              (calibrated on accuracy.py's held-out sentences) against ONNX Runtime FP32 on the
              same file, over --sentences labeled sentences (accuracy.py's split and tokenizer)
  INT8 ms     `octetc run --int8=static` at 8 x 128 (made-up tokens, padded rows), median
  ORT ms      ONNX Runtime FP32 (all graph optimizations, as a user runs it) on the same file at
              8 x 128, in a process of its own, median
  (latencies: --rounds rounds alternating the models and engines; the best round's median)

Threads: every core for both (OMP / ORT defaults), or --threads N for both. Prints a table
and its markdown for bench/RESULTS.md; --json writes the figures.

    bench_hf_real.py [--exports bench/out/minilm-hf] [--octetc PATH] [--octet-opt PATH]
                     [--sentences 300] [--repeat 20] [--rounds 3] [--json FILE]
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import accuracy  # noqa: E402
import export_onnx  # noqa: E402
import hf_exports  # noqa: E402  (import_and_fuse, first_error, resolve_tools)
import minilm  # noqa: E402
import sentences  # noqa: E402
import wordpiece  # noqa: E402

LAYERS = 6
BATCH, SEQ = 8, 128

# ONNX Runtime FP32 latency in a process of its own (no Octet code or threads around it).
ORT_TIMER = r"""
import sys, time, numpy as np, onnxruntime as ort
model, batch, seq, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
options = ort.SessionOptions()
options.intra_op_num_threads = int(sys.argv[5])  # 0: ORT's default, every core
session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
rng = np.random.default_rng(0)
mask = np.ones((batch, seq), np.int64)
mask[1::2, seq // 2:] = 0
feeds = {"input_ids": rng.integers(1000, 30000, (batch, seq)), "attention_mask": mask,
         "token_type_ids": np.zeros((batch, seq), np.int64)}
feeds = {i.name: feeds[i.name] for i in session.get_inputs()}
for _ in range(3):
    session.run(None, feeds)
times = []
for _ in range(repeat):
    start = time.perf_counter()
    session.run(None, feeds)
    times.append(1e3 * (time.perf_counter() - start))
print("median_ms %.3f" % float(np.median(times)))
"""


def octet_int8_ms(octetc, model, calib_dir, repeat, threads):
    proc = subprocess.run([octetc, "run", model, "--int8=static", "--calib", calib_dir,
                           "--batch", str(BATCH), "--seq", str(SEQ), "--repeat", str(repeat),
                           "--warmup", "3", "--threads", str(threads)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("octetc run --int8=static: " + hf_exports.first_error(proc))
    match = re.search(r"latency: median ([0-9.]+) ms", proc.stdout)
    if not match:
        raise RuntimeError("octetc run printed no 'latency: median' line")
    warnings = [line for line in (proc.stderr + proc.stdout).splitlines() if "warning" in line.lower()]
    return float(match.group(1)), warnings


def ort_fp32_ms(model, repeat, threads):
    proc = subprocess.run([sys.executable, "-c", ORT_TIMER, model, str(BATCH), str(SEQ), str(repeat),
                           str(threads)], capture_output=True, text=True)
    match = re.search(r"median_ms ([0-9.]+)", proc.stdout)
    if proc.returncode != 0 or not match:
        raise RuntimeError("ONNX Runtime timing failed: " + hf_exports.first_error(proc))
    return float(match.group(1))


def measure(label, model, args, work, sets, sets_dir, calib_dir, texts):
    """Imports, fused blocks and the INT8 sentence cosine of one model (latencies: main)."""
    row = {"model": label, "file": model, "imports": "no", "fused": "-", "mean_cosine": None,
           "min_cosine": None, "int8_ms": None, "ort_fp32_ms": None, "error": None, "warnings": []}
    error, counts, _ = hf_exports.import_and_fuse(args.octetc, args.octet_opt, model,
                                                  os.path.join(work, label + ".mlirbc"))
    if error:
        row["error"] = error
        return row
    row["imports"] = "yes"
    if counts is not None:
        row["fused"] = "%d/%d/%d of %d" % (counts["attention"], counts["layer_norm"], counts["gelu"], LAYERS)
    try:
        ort_hidden = accuracy.run_ort(model, sets)
        reference = accuracy.pooled(ort_hidden, sets, len(texts))
        hidden = accuracy.run_octet(args.octetc, model, sets_dir, sets, os.path.join(work, label + ".out"),
                                    ["--int8=static", "--calib", calib_dir])
        embeddings = accuracy.pooled(hidden, sets, len(texts))
        cos = (embeddings * reference).sum(axis=1)
        row["mean_cosine"], row["min_cosine"] = float(cos.mean()), float(cos.min())
    except RuntimeError as error:
        row["error"] = str(error).splitlines()[0]
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exports", default=os.path.join(ROOT, "bench", "out", "minilm-hf"),
                        help="folder of export_hf_real.py's minilm-*.onnx (default: %(default)s)")
    parser.add_argument("--octetc", default=os.path.join(ROOT, "build", "tools", "octetc", "octetc"))
    parser.add_argument("--octet-opt", default=os.path.join(ROOT, "build", "tools", "octet-opt", "octet-opt"))
    parser.add_argument("--data", default=sentences.DEFAULT_DIR)
    parser.add_argument("--model-dir", help="the checkpoint folder (default: the installed package's)")
    parser.add_argument("--sentences", type=int, default=300, help="evaluated sentences (default 300)")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs per latency (default 20)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="latency rounds, the models alternating; the best round counts (default 3)")
    parser.add_argument("--threads", type=int, default=0,
                        help="threads of both engines (default 0: every core, each engine's default)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--keep", help="keep the work folder")
    args = parser.parse_args()
    hf_exports.resolve_tools(parser, args)
    exports = sorted(glob.glob(os.path.join(args.exports, "minilm-*.onnx")))
    if not exports:
        parser.error(f"no minilm-*.onnx in {args.exports}: run bench/minilm/export_hf_real.py "
                     f"first (where torch and transformers are installed)")
    try:
        rows_data = sentences.load(args.data)
        path = minilm.model_dir(args.model_dir)
    except (sentences.DataNotFound, minilm.ModelNotFound) as error:
        print(f"bench_hf_real.py: {error}", file=sys.stderr)
        return 2

    work = args.keep or tempfile.mkdtemp(prefix="octet-minilm-hf-")
    os.makedirs(work, exist_ok=True)
    tokenizer = wordpiece.WordPieceTokenizer.from_vocab(os.path.join(path, "vocab.txt"))
    evaluation, calibration = accuracy.split(rows_data, args.sentences)
    texts = [text for text, _ in evaluation]
    sets_dir, calib_dir = os.path.join(work, "inputs"), os.path.join(work, "calibration")
    sets = accuracy.write_sets(tokenizer, texts, 32, sets_dir)
    accuracy.write_sets(tokenizer, calibration, 32, calib_dir)

    generated = os.path.join(work, "minilm-generated.onnx")
    export_onnx.export(generated, model_path=path)
    models = [("generated (optimum style)", generated)]
    models += [(os.path.basename(f)[len("minilm-"):-len(".onnx")], f) for f in exports]
    results = []
    for label, model in models:
        print(f"measuring {label} ...", file=sys.stderr, flush=True)
        results.append(measure(label.split()[0], model, args, work, sets, sets_dir, calib_dir, texts))
        results[-1]["model"] = label
    # Latencies in rounds that alternate the models and engines, each figure the best round's
    # median: load from other processes then hits every column alike.
    for round_index in range(args.rounds):
        for r in results:
            if r["error"]:
                continue
            print(f"timing {r['model']} (round {round_index + 1} of {args.rounds}) ...",
                  file=sys.stderr, flush=True)
            try:
                int8, r["warnings"] = octet_int8_ms(args.octetc, r["file"], calib_dir, args.repeat,
                                                    args.threads)
                fp32 = ort_fp32_ms(r["file"], args.repeat, args.threads)
            except RuntimeError as error:
                r["error"] = str(error).splitlines()[0]
                continue
            r["int8_ms"] = min(int8, r["int8_ms"] or int8)
            r["ort_fp32_ms"] = min(fp32, r["ort_fp32_ms"] or fp32)

    def fmt(value, spec):
        return "-" if value is None else format(value, spec)

    print(f"all-MiniLM-L6-v2: INT8 static (calibrated on {len(calibration)} held-out sentences) "
          f"vs ORT FP32; cosine over {len(texts)} sentence embeddings; latency at {BATCH}x{SEQ}, "
          f"{args.threads or 'all'} thread(s), best of {args.rounds} rounds")
    print("| model / exporter | imports | fused attn/LN/GELU | cosine mean (min) | Octet INT8 ms | "
          "ORT FP32 ms | INT8 / ORT FP32 |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        ratio = r["int8_ms"] / r["ort_fp32_ms"] if r["int8_ms"] and r["ort_fp32_ms"] else None
        print(f"| {r['model']} | {r['imports']} | {r['fused']} | {fmt(r['mean_cosine'], '.5f')} "
              f"({fmt(r['min_cosine'], '.4f')}) | {fmt(r['int8_ms'], '.1f')} | "
              f"{fmt(r['ort_fp32_ms'], '.1f')} | {fmt(ratio, '.2f')}x |")
    for r in results:
        if r["error"]:
            print(f"{r['model']}: {r['error']}")
        for warning in r["warnings"]:
            print(f"{r['model']}: {warning}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"batch": BATCH, "seq": SEQ, "threads": args.threads, "sentences": len(texts),
                       "results": results}, f, indent=1)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if any(r["error"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
