#!/usr/bin/env python3
"""FP32 BERT-base latency: Octet (JIT, through its C API) against ONNX Runtime FP32 on the
same ONNX graph, in the same process, alternating rounds so that machine noise hits both.

Target (issue: FP32 end to end): Octet at least as fast as ONNX Runtime (ratio <= 1.0).

  python3 bench/bert_base_fp32.py [--model bert-base.onnx] [--shapes 1x128,8x128] [--rounds 5]

Prints, per shape, the median/min/max latency of each and the ratio Octet / ONNX Runtime of
the medians, plus the largest output difference between the two.
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import octet  # noqa: E402  (the package of this checkout, on --lib)


def time_calls(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="BERT-base .onnx (generated when absent)")
    ap.add_argument("--lib", default=os.path.join(ROOT, "build/runtime/liboctet.so"))
    ap.add_argument("--shapes", default="1x128,8x128", help="batch x sequence, comma separated")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per shape")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per round")
    ap.add_argument("--gemm", default="auto", choices=["auto", "jit", "onednn"])
    args = ap.parse_args()

    import onnxruntime as ort

    model = args.model or os.path.join(tempfile.gettempdir(), "octet-bench-bert-base.onnx")
    if not os.path.exists(model):
        print(f"generating {model} ...", flush=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "test/models/make_bert_base.py"), "-o", model],
                       check=True)

    threads = os.cpu_count()
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    start = time.perf_counter()
    session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    ort_load = time.perf_counter() - start

    start = time.perf_counter()
    os.environ["OCTET_LIBRARY"] = args.lib
    octet_model = octet.compile(model, gemm=args.gemm, progress=False)
    first = octet_model.output_names[0]
    octet_compile = time.perf_counter() - start
    print(f"threads {threads}; ONNX Runtime {ort.__version__} session {ort_load:.2f} s; "
          f"Octet compile {octet_compile:.2f} s", flush=True)

    rng = np.random.default_rng(0)
    rows = []
    for shape in args.shapes.split(","):
        batch, seq = (int(x) for x in shape.split("x"))
        feeds = {
            "input_ids": rng.integers(0, 30522, size=(batch, seq), dtype=np.int64),
            "attention_mask": np.ones((batch, seq), dtype=np.int64),
            "token_type_ids": np.zeros((batch, seq), dtype=np.int64),
        }
        feeds = {i.name: feeds[i.name] for i in session.get_inputs()}
        inputs = [feeds[name] for name in octet_model.input_names]
        expected = session.run(None, feeds)[0]
        got = octet_model.run(inputs)[first]
        diff = float(np.max(np.abs(expected - got)))
        ort_times, octet_times = [], []
        for _ in range(args.rounds):
            ort_times += time_calls(lambda: session.run(None, feeds), args.repeat)
            octet_times += time_calls(lambda: octet_model.run(inputs), args.repeat)
        o, t = statistics.median(ort_times), statistics.median(octet_times)
        rows.append((shape, t, min(octet_times), max(octet_times), o, min(ort_times), max(ort_times),
                     t / o, diff, float(np.max(np.abs(expected)))))

    print("\n| batch x seq | Octet median (min–max) ms | ONNX Runtime median (min–max) ms "
          "| Octet / ORT | max abs diff (output scale) |")
    print("|---|---:|---:|---:|---:|")
    for shape, t, tmin, tmax, o, omin, omax, ratio, diff, scale in rows:
        print(f"| {shape} | {t:.1f} ({tmin:.1f}–{tmax:.1f}) | {o:.1f} ({omin:.1f}–{omax:.1f}) "
              f"| {ratio:.2f}x | {diff:.2e} ({scale:.2f}) |")


if __name__ == "__main__":
    main()
