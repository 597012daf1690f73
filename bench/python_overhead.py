#!/usr/bin/env python3
"""What the Python package adds to a run: Model.run against `octetc run`'s own latency, same
model.so, same inputs, same machine, in one invocation (issue 15: at most 3% on BERT-base 1x16).

  python3 bench/python_overhead.py [--build build] [--modes int8,fp32] [--shape 1x16]
                                   [--repeat 200] [--rounds 5]

BERT-base (test/models/make_bert_base.py, generated once into the temp directory) is compiled
with `octetc compile` per mode (int8: --int8=static --calib=generate:8x4x128; fp32) into a
model.so. Then, for --rounds rounds, alternately:
  - `octetc run model.so --input ...npy --repeat N`: the runtime's execute alone (its outputs
    reused after the first run), median of N;
  - in this process, octet.load(model.so) once, then N timed Model.run calls on the same
    arrays: runtime-owned outputs wrapped without a copy (the default), and with out= arrays
    (caller-owned, as octetc reuses its own);
and prints the median over rounds of each round's median, and Model.run / octetc. The
per-call cost alone is also measured on a 1-layer, hidden-64 model at 1x1 (where the run
itself takes microseconds). Outputs are checked to be views of the runtime's buffers.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
import octet  # noqa: E402  (the package of this checkout)

MODES = {"int8": ["--int8=static", "--calib=generate:8x4x128"], "fp32": []}


def octetc_median(octetc, so, inputs, repeat):
    args = [octetc, "run", so, "--repeat", str(repeat)]
    for name, path in inputs.items():
        args += ["--input", f"{name}={path}"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    match = re.search(r"latency: median ([0-9.]+) ms", out)
    if not match:
        sys.exit(f"no latency in octetc's output:\n{out}")
    return float(match.group(1))


def python_median(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", help="BERT-base ONNX (default: generated into the temp directory)")
    ap.add_argument("--modes", default="int8,fp32")
    ap.add_argument("--shape", default="1x16")
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "octet-bench-python"))
    args = ap.parse_args()
    octetc = os.path.join(args.build, "tools", "octetc", "octetc")
    os.environ.setdefault("OCTET_LIBRARY", os.path.join(args.build, "runtime", "liboctet.so"))
    os.makedirs(args.work, exist_ok=True)
    model = args.model or os.path.join(tempfile.gettempdir(), "octet-bench-bert-base.onnx")
    if not os.path.exists(model):
        subprocess.run([sys.executable, os.path.join(ROOT, "test/models/make_bert_base.py"), "-o", model],
                       check=True)
    batch, seq = (int(x) for x in args.shape.split("x"))
    rng = np.random.default_rng(0)
    feeds = {"input_ids": rng.integers(1000, 30000, size=(batch, seq), dtype=np.int64),
             "attention_mask": np.ones((batch, seq), np.int64),
             "token_type_ids": np.zeros((batch, seq), np.int64)}
    paths = {}
    for name, array in feeds.items():
        paths[name] = os.path.join(args.work, f"{name}.npy")
        np.save(paths[name], array)
    print(f"BERT-base {args.shape}, {args.repeat} runs x {args.rounds} rounds; "
          f"OMP threads {os.environ.get('OMP_NUM_THREADS', 'all')}; numpy {np.__version__}")

    # The per-call cost where the run itself is tiny.
    import make_encoder
    tiny, _, _ = make_encoder.make_encoder(layers=1, hidden=64, heads=4, intermediate=128, vocab=100)
    tiny_onnx = os.path.join(args.work, "tiny.onnx")
    with open(tiny_onnx, "wb") as f:
        f.write(tiny.SerializeToString())
    tiny_so = octet.compile_to_so(tiny_onnx, os.path.join(args.work, "tiny.so"), progress=False)
    ones = np.ones((1, 1), np.int64)
    tiny_feeds = {"input_ids": ones, "attention_mask": ones, "token_type_ids": 0 * ones}
    tiny_paths = {}
    for name, array in tiny_feeds.items():
        tiny_paths[name] = os.path.join(args.work, f"tiny-{name}.npy")
        np.save(tiny_paths[name], array)
    tiny_model = octet.load(tiny_so)
    c = statistics.median(octetc_median(octetc, tiny_so, tiny_paths, 2000) for _ in range(3))
    p = statistics.median(python_median(lambda: tiny_model.run(tiny_feeds), 2000) for _ in range(3))
    print(f"tiny model 1x1: octetc run {1e3 * c:.1f} us, Model.run {1e3 * p:.1f} us: "
          f"{1e3 * (p - c):.1f} us per call for the package (ctypes, checks, wrapping)")

    rows = []
    for mode in args.modes.split(","):
        so = os.path.join(args.work, f"bert-base-{mode}.so")
        start = time.perf_counter()
        subprocess.run([octetc, "compile", model, "-o", so] + MODES[mode], check=True,
                       capture_output=True)
        print(f"{mode}: octetc compile {time.perf_counter() - start:.1f} s", flush=True)
        m = octet.load(so)
        out = m.run(feeds)
        name = m.output_names[0]
        assert not out[name].flags.owndata, "outputs must be views of the runtime's buffers"
        buffers = {o.name: np.empty(out[o.name].shape, o.dtype) for o in m.outputs}
        cs, ps, pos = [], [], []
        for _ in range(args.rounds):
            cs.append(octetc_median(octetc, so, paths, args.repeat))
            ps.append(python_median(lambda: m.run(feeds), args.repeat))
            pos.append(python_median(lambda: m.run(feeds, out=buffers), args.repeat))
        c, p, po = statistics.median(cs), statistics.median(ps), statistics.median(pos)
        rows.append((mode, c, p, po))
        print(f"{mode}: octetc run {c:.3f} ms; Model.run {p:.3f} ms ({p / c:.3f}x); "
              f"Model.run(out=) {po:.3f} ms ({po / c:.3f}x); rounds: octetc "
              f"{', '.join(f'{x:.3f}' for x in cs)}; Model.run {', '.join(f'{x:.3f}' for x in ps)}",
              flush=True)
    print("\n| mode | octetc run (ms) | Model.run (ms) | ratio | Model.run(out=) (ms) | ratio |")
    print("|---|---|---|---|---|---|")
    for mode, c, p, po in rows:
        print(f"| {mode} {args.shape} | {c:.3f} | {p:.3f} | {p / c:.3f}x | {po:.3f} | {po / c:.3f}x |")


if __name__ == "__main__":
    main()
