#!/usr/bin/env python3
"""Sentence-embedding accuracy of Octet's INT8 modes against FP32 on all-MiniLM-L6-v2.

Exports the model (export_onnx.py), tokenizes the labeled sentences (wordpiece.py), and
computes mean-pooled, L2-normalized sentence embeddings with ONNX Runtime FP32 (the
reference) and with Octet through `octetc run --input-sets` in each mode:

  fp32        Octet FP32
  static-sq   --int8=static, SmoothQuant (alpha 0.5; the default INT8 mode)
  static      --int8=static --no-smoothquant
  dynamic     --int8=dynamic (per-token activation scales, no calibration)

Split: sentence i (in file order) is a calibration sentence when i % 10 == 9 (100 of the
1000, held out: never evaluated); the others are evaluated. Static modes calibrate on the
held-out sentences (--calib-count of them, batches of --batch).

Per mode: cosine of each sentence's embedding with ORT FP32's (mean, minimum) and a linear
probe: L2-regularized logistic regression (Newton's method, NumPy) on the embeddings,
5-fold cross-validation over a fixed seeded stratified split, the same folds for every mode;
the accuracy is over all evaluated sentences (--probe-seeds N: also its mean over the fold
splits of seeds 0..N-1, less dependent on which sentences share a fold). Octet FP32's last_hidden_state must match ORT's
to 1e-4 x max(1, max|ORT|) on real tokens (exit 1 otherwise); --min-mean-cosine X exits 1
when an INT8 mode's mean cosine is below X.

Usage: accuracy.py [--data DIR] [--octetc PATH] [--modes fp32,static-sq,static,dynamic]
                   [--limit N] [--calib-count N] [--octetc-arg=ARG ...] [--min-mean-cosine X]
                   [--json FILE] [--keep DIR] [--probe-seeds N]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_onnx  # noqa: E402
import minilm  # noqa: E402
import sentences  # noqa: E402
import wordpiece  # noqa: E402

MODES = {
    "fp32": [],
    "static-sq": ["--int8=static"],
    "static": ["--int8=static", "--no-smoothquant"],
    "dynamic": ["--int8=dynamic"],
}
CALIBRATED = ("static-sq", "static")
CALIB_EVERY = 10  # sentence i is held out for calibration when i % 10 == 9
FOLDS = 5
PROBE_SEED = 0
FP32_TOLERANCE = 1e-4  # x max(1, max|ORT|), as test/e2e/run_vs_ort.py
PROBE_L2 = 0.1     # ridge strength per training sample, on standardized features (best FP32 fit)


# --------------------------------------------------------------------------- data

def split(rows, limit=None, calib_count=None):
    """(evaluation rows, calibration texts): every 10th sentence is held out for calibration."""
    evaluation = [r for i, r in enumerate(rows) if i % CALIB_EVERY != CALIB_EVERY - 1]
    calibration = [r[0] for i, r in enumerate(rows) if i % CALIB_EVERY == CALIB_EVERY - 1]
    return evaluation[:limit], calibration[:calib_count]


def write_sets(tokenizer, texts, batch, folder):
    """Input sets of `batch` sentences, sorted by token count so each set pads little.
    Returns [(set name, indices into texts, attention mask)]."""
    lengths = [len(tokenizer.encode(t)) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
    sets = []
    for start in range(0, len(order), batch):
        indices = order[start:start + batch]
        feeds = tokenizer.batch([texts[i] for i in indices])
        name = f"set{start // batch:04d}"
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        for key, value in feeds.items():
            np.save(os.path.join(folder, name, key + ".npy"), value)
        sets.append((name, indices, feeds))
    return sets


def pooled(hidden_by_set, sets, count):
    """[count, H] sentence embeddings from per-set last_hidden_state arrays."""
    out = None
    for (name, indices, feeds) in sets:
        emb = minilm.mean_pool(hidden_by_set[name], feeds["attention_mask"])
        if out is None:
            out = np.zeros((count, emb.shape[1]))
        out[indices] = emb
    return out


# --------------------------------------------------------------------------- engines

def run_ort(model, sets):
    import onnxruntime as ort
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return {name: session.run(["last_hidden_state"], feeds)[0] for name, _, feeds in sets}


def run_octet(octetc, model, sets_dir, sets, out_dir, mode_args):
    """One `octetc run --input-sets` (one compile, every set once); {set: last_hidden_state}."""
    shutil.rmtree(out_dir, ignore_errors=True)
    command = [octetc, "run", model, "--input-sets", sets_dir, "--output", out_dir,
               "--repeat", "1", "--warmup", "0"] + mode_args
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip())[-2000:]
        raise RuntimeError(f"{' '.join(command)} failed (exit {proc.returncode}):\n{tail}")
    hidden = {}
    for name, _, feeds in sets:
        path = os.path.join(out_dir, name, "last_hidden_state.npy")
        if not os.path.isfile(path):
            raise RuntimeError(f"octetc wrote no {path}")
        hidden[name] = np.load(path)
        want = feeds["input_ids"].shape + (None,)
        if hidden[name].shape[:2] != want[:2]:
            raise RuntimeError(f"{path}: shape {hidden[name].shape}, expected {want[:2]} + (hidden,)")
    return hidden


# --------------------------------------------------------------------------- linear probe

def folds(labels, k=FOLDS, seed=PROBE_SEED):
    """Stratified fold number per sample, from one seeded permutation per class."""
    rng = np.random.default_rng(seed)
    fold = np.empty(len(labels), dtype=np.int64)
    for cls in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == cls))
        fold[members] = np.arange(len(members)) % k
    return fold


def fit_logistic(x, y, l2=PROBE_L2, iterations=50):
    """L2-regularized logistic regression by Newton's method; returns (weights, bias)."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2 * n)
    reg[-1] = 0.0  # the bias is not regularized
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) + reg * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(reg)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w[:-1], w[-1]


def probe_accuracy(embeddings, labels, fold):
    """k-fold accuracy: standardize on the training folds, fit, predict the held-out fold."""
    correct = 0
    for f in range(fold.max() + 1):
        train, test = fold != f, fold == f
        mean, std = embeddings[train].mean(0), embeddings[train].std(0) + 1e-12
        w, b = fit_logistic((embeddings[train] - mean) / std, labels[train].astype(np.float64))
        predicted = ((embeddings[test] - mean) / std @ w + b) > 0
        correct += int((predicted == labels[test].astype(bool)).sum())
    return correct / len(labels)


# --------------------------------------------------------------------------- main

def default_octetc():
    on_path = shutil.which("octetc")
    if on_path:
        return on_path
    return os.path.join(minilm.ROOT, "build", "tools", "octetc", "octetc")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=sentences.DEFAULT_DIR,
                   help=f"folder with {sentences.FILE} (default: {sentences.DEFAULT_DIR})")
    p.add_argument("--octetc", default=None, help="octetc binary (default: on PATH, else build/tools/octetc/octetc)")
    p.add_argument("--modes", default="fp32,static-sq,static,dynamic",
                   help="comma-separated Octet modes: " + ", ".join(MODES))
    p.add_argument("--limit", type=int, help="evaluate only the first N non-calibration sentences")
    p.add_argument("--calib-count", type=int, default=100,
                   help="held-out calibration sentences for the static modes (default: all 100)")
    p.add_argument("--batch", type=int, default=32, help="sentences per input set (default 32)")
    p.add_argument("--model-dir", help="the checkpoint folder (default: the installed package's)")
    p.add_argument("--octetc-arg", action="append", default=[],
                   help="extra octetc run argument for every Octet mode, e.g. --octetc-arg=--smoothquant-alpha=0.75 "
                        "(repeatable)")
    p.add_argument("--min-mean-cosine", type=float,
                   help="exit 1 when an INT8 mode's mean cosine with FP32 is below this")
    p.add_argument("--json", help="also write the figures to this JSON file")
    p.add_argument("--probe-seeds", type=int, default=1,
                   help="also report the probe accuracy's mean over the fold splits of seeds 0..N-1")
    p.add_argument("--keep", help="keep the model, input sets and outputs in this folder")
    args = p.parse_args(argv)

    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        p.error(f"unknown modes {unknown}; choose from {', '.join(MODES)}")
    if args.batch < 1 or (args.limit is not None and args.limit < FOLDS * 2) or args.calib_count < 1:
        p.error(f"--batch and --calib-count must be >= 1, --limit >= {FOLDS * 2} (the probe's {FOLDS} folds)")
    octetc = args.octetc or default_octetc()
    if os.sep not in octetc:  # a bare name: look it up on PATH
        octetc = shutil.which(octetc) or octetc
    if not (os.path.isfile(octetc) and os.access(octetc, os.X_OK)):
        p.error(f"octetc '{octetc}' is not an executable file (give --octetc PATH)")
    try:
        rows = sentences.load(args.data)
        model_path = minilm.model_dir(args.model_dir)
    except (sentences.DataNotFound, minilm.ModelNotFound) as e:
        print(f"accuracy.py: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # a malformed data file
        print(f"accuracy.py: {e}", file=sys.stderr)
        return 1

    work = args.keep or tempfile.mkdtemp(prefix="octet-minilm-")
    os.makedirs(work, exist_ok=True)
    try:
        start = time.perf_counter()
        model = os.path.join(work, "minilm.onnx")
        export_onnx.export(model, model_path=model_path)
        tokenizer = wordpiece.WordPieceTokenizer.from_vocab(os.path.join(model_path, "vocab.txt"))
        evaluation, calibration = split(rows, args.limit, args.calib_count)
        texts = [t for t, _ in evaluation]
        labels = np.array([label for _, label in evaluation])
        sets_dir, calib_dir = os.path.join(work, "inputs"), os.path.join(work, "calibration")
        shutil.rmtree(sets_dir, ignore_errors=True)
        shutil.rmtree(calib_dir, ignore_errors=True)
        sets = write_sets(tokenizer, texts, args.batch, sets_dir)
        if any(m in CALIBRATED for m in modes):
            write_sets(tokenizer, calibration, args.batch, calib_dir)
        tokens = sum(int(f["attention_mask"].sum()) for _, _, f in sets)
        print(f"all-MiniLM-L6-v2 on {len(texts)} sentences ({tokens} tokens, {len(sets)} sets of <= {args.batch}); "
              f"static modes calibrate on {len(calibration)} held-out sentences (index % {CALIB_EVERY} == "
              f"{CALIB_EVERY - 1}); probe: {FOLDS}-fold logistic regression, seed {PROBE_SEED}", flush=True)

        fold = folds(labels)
        splits = [folds(labels, seed=s) for s in range(max(1, args.probe_seeds))]

        def probe_mean(embeddings):
            return float(np.mean([probe_accuracy(embeddings, labels, f) for f in splits]))

        ort_hidden = run_ort(model, sets)
        reference = pooled(ort_hidden, sets, len(texts))
        results = [{"mode": "ort-fp32", "mean_cosine": 1.0, "min_cosine": 1.0, "max_abs_diff": 0.0,
                    "probe_accuracy": probe_accuracy(reference, labels, fold),
                    "probe_accuracy_mean": probe_mean(reference), "seconds": None}]
        for mode in modes:
            mode_args = list(MODES[mode]) + args.octetc_arg
            if mode in CALIBRATED:
                mode_args += ["--calib", calib_dir]
            t = time.perf_counter()
            hidden = run_octet(octetc, model, sets_dir, sets, os.path.join(work, "out-" + mode), mode_args)
            seconds = time.perf_counter() - t
            emb = pooled(hidden, sets, len(texts))
            if not np.isfinite(emb).all():
                raise RuntimeError(f"mode {mode}: embeddings hold NaN or Inf")
            cos = (emb * reference).sum(axis=1)
            # last_hidden_state on real tokens only (padded rows are don't-care).
            diff = max(float(np.abs(hidden[n] - ort_hidden[n])[f["attention_mask"] == 1].max()) for n, _, f in sets)
            results.append({"mode": mode, "mean_cosine": float(cos.mean()), "min_cosine": float(cos.min()),
                            "max_abs_diff": diff, "probe_accuracy": probe_accuracy(emb, labels, fold),
                            "probe_accuracy_mean": probe_mean(emb), "seconds": seconds})
    except (RuntimeError, ValueError) as e:
        print(f"accuracy.py: {e}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    seeds = max(1, args.probe_seeds)
    mean_head = f" {'probe avg' + str(seeds):>11}" if seeds > 1 else ""
    print(f"{'mode':<10} {'mean cos':>9} {'min cos':>9} {'max|dh|':>9} {'probe acc':>9}{mean_head} {'octetc s':>9}")
    for r in results:
        secs = "-" if r["seconds"] is None else f"{r['seconds']:.1f}"
        mean = f" {r['probe_accuracy_mean']:11.4f}" if seeds > 1 else ""
        print(f"{r['mode']:<10} {r['mean_cosine']:9.5f} {r['min_cosine']:9.5f} {r['max_abs_diff']:9.2e} "
              f"{r['probe_accuracy']:9.4f}{mean} {secs:>9}")
    print(f"total {time.perf_counter() - start:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sentences": len(texts), "calibration_sentences": len(calibration), "folds": FOLDS,
                       "probe_seeds": seeds, "results": results}, f, indent=2)
    ok = True
    for r in results:
        if r["mode"] == "fp32":  # Octet FP32 must match ORT as on every encoder (run_vs_ort.py)
            bound = FP32_TOLERANCE * max(1.0, max(float(np.abs(h).max()) for h in ort_hidden.values()))
            good = r["max_abs_diff"] <= bound
            ok &= good
            print(f"fp32: last_hidden_state max|octet - ort| {r['max_abs_diff']:.2e} <= {bound:.1e}: "
                  f"{'ok' if good else 'FAIL'}")
    if args.min_mean_cosine is not None:
        for r in results:
            if r["mode"] in ("ort-fp32", "fp32"):
                continue
            good = r["mean_cosine"] >= args.min_mean_cosine
            ok &= good
            print(f"{r['mode']}: mean cosine {r['mean_cosine']:.5f} >= {args.min_mean_cosine}: "
                  f"{'ok' if good else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
