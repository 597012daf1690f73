#!/usr/bin/env python3
"""The GEMMs of a compiled model as a fraction of the vpdpbusd (or FMA) peak measured in the
same run (issue 17 item 4: BERT-base's M = 128 GEMMs against >= 88%).

  python3 bench/gemm_efficiency.py MODEL [--octetc PATH] [--shape 1x128] [--runs 5]
                                   [--repeat 30] [--threads 2] [-- OCTETC_RUN_ARGS...]

MODEL: a model.so (octetc compile) or an ONNX file (then pass its compile flags after `--`,
e.g. `-- --int8=static --calib=DIR`). Each run is a fresh `octetc run --profile-json` process:
the profile samples the compute peaks before every repeat and holds each step to their median
(docs/profiling.md), and sums steps of one kind on the same shapes into classes. Printed per
GEMM class (kind and shapes): its share of the steps' time and its efficiency in every run,
the median and the best over the runs; then all GEMMs together (their summed ops over their
summed median times, against the same peak) and each run's sampled peak and end-to-end time.
A shared machine has slow phases (bench/RESULTS.md): the runs are separate processes so that
one phase does not decide the figure, and the table shows the spread. Two vCPUs may also sit
on one core complex or on two (the profile's cache-line handoff between the threads, under or
over 100 ns, runtime/Ceilings.h): each run's handoff is printed, and where runs of both kinds
occur, the all-GEMMs median of each.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAR_HANDOFF_NS = 100  # runtime/Ceilings.h kFarHandoffNs


def is_gemm(kind):
    return kind.startswith(("qgemm", "gemm"))


def one_run(args, extra, path):
    batch, seq = args.shape.split("x")
    cmd = [args.octetc, "run", args.model, "--batch", batch, "--seq", seq,
           "--repeat", str(args.repeat), "--warmup", "3", "--profile-json", path] + extra
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"gemm_efficiency: {' '.join(cmd)} failed:\n{done.stderr.strip()}")
    with open(path) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--octetc", default=os.path.join(ROOT, "build/tools/octetc/octetc"))
    ap.add_argument("--shape", default="1x128", help="BATCHxSEQ (default 1x128)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    args, extra = ap.parse_known_args()
    extra = [x for x in extra if x != "--"]
    if args.runs < 1 or args.repeat < 1:
        sys.exit("gemm_efficiency: --runs and --repeat must be >= 1")

    per_class = {}  # (kind, shapes) -> {"share": [...], "eff": [...], "steps": n}
    total, runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.runs):
            p = one_run(args, extra, os.path.join(tmp, f"p{r}.json"))
            c = p.get("ceilings")
            if not c or not c.get("peak_samples"):
                sys.exit("gemm_efficiency: the profile has no peaks sampled in the run "
                         "(an octetc older than the sampled peaks?)")
            gemms = [k for k in p["classes"] if is_gemm(k["kind"])]
            for k in gemms:
                e = per_class.setdefault((k["kind"], k["shapes"]), {"share": [], "eff": [], "steps": k["steps"]})
                e["share"].append(k["share"])
                e["eff"].append(k["roofline_fraction"])
            # All GEMMs: summed ops over summed time, against the class bounds' time.
            ops = sum(k["ops"] for k in gemms)
            seconds = sum(k["median_seconds"] for k in gemms)
            bound_seconds = sum(k["ops"] / (k["gops"] * 1e9) * k["roofline_fraction"] for k in gemms if k["gops"] > 0)
            total.append(bound_seconds / seconds if seconds > 0 else 0)
            runs.append((c["int8_gops"], c["fp32_gflops"], c["cached_int8_gops"], p["end_to_end_seconds"], ops,
                         c.get("handoff_ns", 0)))

    pct = lambda v: f"{100 * v:.1f}"
    print(f"{args.model} at {args.shape}, {args.threads} threads, {args.runs} runs x {args.repeat} repeats; "
          "% of the peak sampled in the same run")
    print("| GEMM class | steps | share of steps | per run % | median % | best % |")
    print("|---|---:|---:|---|---:|---:|")
    for (kind, shapes), e in sorted(per_class.items(), key=lambda kv: -statistics.median(kv[1]["share"])):
        print(f"| {kind}: {shapes} | {e['steps']} | {pct(statistics.median(e['share']))}% | "
              f"{' '.join(pct(v) for v in e['eff'])} | {pct(statistics.median(e['eff']))} | {pct(max(e['eff']))} |")
    print(f"| all GEMMs ({runs[0][4] / 1e9:.2f} GOP per run) | | | {' '.join(pct(v) for v in total)} | "
          f"{pct(statistics.median(total))} | {pct(max(total))} |")
    print("peaks sampled (int8 GOP/s, fp32 GFLOP/s; cached int8), end to end and the threads' "
          "cache-line handoff per run: " +
          "; ".join(f"{i:.0f} / {f:.0f} ({ci:.0f}), {1e3 * t:.2f} ms, {h:.0f} ns" for i, f, ci, t, _, h in runs))
    # Near (one core complex) and far runs apart, where both occurred (0: not measured).
    near = [v for v, run in zip(total, runs) if 0 < run[5] <= FAR_HANDOFF_NS]
    far = [v for v, run in zip(total, runs) if run[5] > FAR_HANDOFF_NS]
    if near and far:
        print(f"all GEMMs by state: near ({len(near)} runs) median {pct(statistics.median(near))}%, "
              f"far ({len(far)} runs) median {pct(statistics.median(far))}%")


if __name__ == "__main__":
    main()
