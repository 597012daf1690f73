#!/usr/bin/env python3
"""Import time and peak memory of a 420 MB FP32 BERT-base, against ONNX Runtime loading
the same file in the same run; with --compile, also the peak memory of a whole JIT compile
(import, passes, Plan; `octetc run` of one 1 x 8 batch) in FP32, INT8 dynamic and INT8
static (calibration on its default generated samples).

Targets: import (issue: foundation) peak resident memory < 1.5x the file size, time < 2 s;
JIT compile (issue 18) FP32, INT8 dynamic and INT8 static <= 1.5x the file size.
Each measurement is a fresh process; peak RSS is the child's ru_maxrss.

  python3 bench/import_bert_base.py --octetc build/tools/octetc/octetc [--repeat 3] [--compile]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_measured(cmd):
    """Runs cmd under a tiny Python wrapper that reports the child's own peak RSS."""
    wrapper = ("import resource,subprocess,sys,time;t=time.perf_counter();"
               "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL);"
               "w=time.perf_counter()-t;"
               "print(r.returncode,w,resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", wrapper] + cmd, capture_output=True, text=True)
    code, wall, rss_kb = out.stdout.split()
    if int(code) != 0:
        sys.exit(f"failed ({code}): {' '.join(cmd)}\n{out.stderr}")
    return float(wall), int(rss_kb) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--octetc", default=os.path.join(ROOT, "build/tools/octetc/octetc"))
    ap.add_argument("--model", help="BERT-base .onnx (generated when absent)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--compile", action="store_true",
                    help="also measure JIT compiles (FP32, INT8 dynamic, INT8 static; once each)")
    args = ap.parse_args()

    model = args.model or os.path.join(tempfile.gettempdir(), "octet-bench-bert-base.onnx")
    if not os.path.exists(model):
        print(f"generating {model} ...", flush=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "test/models/make_bert_base.py"),
                        "-o", model], check=True)
    size = os.path.getsize(model)

    ort_loader = ("import onnxruntime as ort,sys;o=ort.SessionOptions();"
                  "o.graph_optimization_level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL;"
                  "ort.InferenceSession(sys.argv[1],o,providers=['CPUExecutionProvider'])")
    runs = {"octet import": [args.octetc, "import", model, "--elide-weights", "-o", os.devnull],
            "onnxruntime session (no optimization)": [sys.executable, "-c", ort_loader, model]}
    results = {}
    for name, cmd in runs.items():
        samples = [run_measured(cmd) for _ in range(args.repeat)]
        results[name] = (statistics.median(s[0] for s in samples), max(s[1] for s in samples))

    print(f"model: {model} ({size / 2**20:.0f} MiB), {args.repeat} runs each, median time, max peak RSS")
    print(f"{'':40s} {'time s':>8s} {'peak RSS MiB':>13s} {'RSS/file':>9s}")
    for name, (wall, rss) in results.items():
        print(f"{name:40s} {wall:8.2f} {rss / 2**20:13.0f} {rss / size:9.2f}")
    octet_wall, octet_rss = results["octet import"]
    ort_wall, ort_rss = results["onnxruntime session (no optimization)"]
    print(f"octet/onnxruntime: time {octet_wall / ort_wall:.2f}x, peak RSS {octet_rss / ort_rss:.2f}x")
    ok = octet_rss < 1.5 * size and octet_wall < 2.0
    print(f"targets (RSS < 1.5x file, time < 2 s): {'met' if ok else 'NOT met'}")
    if args.compile:
        print(f"\n{'JIT compile + one 1x8 run (octetc run)':40s} {'time s':>8s} {'peak RSS MiB':>13s} "
              f"{'RSS/file':>9s}")
        run = [args.octetc, "run", model, "--batch", "1", "--seq", "8", "--repeat", "1",
               "--warmup", "0"]
        for mode, target in (("none", 1.5), ("dynamic", 1.5), ("static", 1.5)):
            wall, rss = run_measured(run + [f"--int8={mode}"])
            name = {"none": "FP32", "dynamic": "INT8 dynamic", "static": "INT8 static"}[mode]
            met = target is None or rss <= target * size
            ok = ok and met
            note = "" if target is None else f"  (target <= {target}x: {'met' if met else 'NOT met'})"
            print(f"{name:40s} {wall:8.2f} {rss / 2**20:13.0f} {rss / size:9.2f}{note}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
