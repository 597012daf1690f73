#!/usr/bin/env python3
"""Roofline of a model on this machine: the ceilings Octet measures (`octetc ceilings`) and
one point per kernel class (QKV GEMM, attention, FFN GEMMs, LayerNorm, softmax, ...) from
`octetc run --profile-json`, for each batch size asked for.

  python3 bench/roofline.py [--model M.onnx] [--batches 1,8] [--seq 128] [--repeat 10]
                            [--precisions fp32,int8] [--int8-args "--int8=static --calib=DIR"]
                            [--out bench/out/roofline-bert-base.png]

Without --model, BERT-base is generated (test/models/make_bert_base.py). Prints a markdown
table per batch (class, steps, time and share, GOP/s, GB/s, op/B, % of the roofline bound)
and draws the PNG with matplotlib (`pip install matplotlib` if it is missing).
With int8 among --precisions the model is also compiled with --int8=static (calibrated on
generated token batches unless --int8-args says otherwise): its points share the plot, marked
per precision, against the INT8 vpdpbusd ceiling as well as the FP32 one.
A class's point: its summed ops / summed time against summed ops / summed bytes; its bound
is the ops-weighted roof of its steps (each held to L3 or DRAM bandwidth by working set).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GEMM_SHAPES = re.compile(r"\[(\d+), (\d+)\] x \[(\d+), (\d+)\]")


def kernel_class(step):
    """The kernel class of one profile step, from its kind, location and shapes."""
    kind, location = step["kind"], step["location"].lower()
    if kind.startswith("qgemm"):  # the INT8 GEMMs: same classes as FP32, by shape
        return kernel_class(dict(step, kind=kind[1:]))
    if kind.startswith("quantize"):
        return "quantize"
    if kind.startswith("gemm"):
        m = GEMM_SHAPES.search(step["shapes"])
        k, n = (int(m.group(2)), int(m.group(4))) if m else (0, 0)
        if any(w in location for w in ("query", "key", "value", "qkv")) or (k and n == 3 * k):
            return "QKV GEMM"
        if "pooler" in location:
            return "pooler GEMM"
        if k and n == 4 * k:
            return "FFN-in GEMM (+GELU)"
        if n and k == 4 * n:
            return "FFN-out GEMM"
        if k and n == k:
            return "attention-out GEMM"
        return "other GEMM"
    if kind.startswith("attention"):
        return "attention"
    if kind.startswith("layernorm"):
        return "LayerNorm"
    if "softmax" in kind:
        return "softmax"
    if kind.startswith("matmul"):
        return "batched matmul"
    if kind.startswith("gather"):
        return "embedding gather"
    if kind.startswith("elementwise"):
        return "fused elementwise"
    return "other (generic steps)"


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{result.stderr}{result.stdout}")
    return result.stdout


def group(profile):
    classes = {}
    for s in profile["steps"]:
        c = classes.setdefault(kernel_class(s), {"steps": 0, "seconds": 0.0, "ops": 0.0,
                                                  "bytes": 0.0, "roof_seconds": 0.0})
        c["steps"] += 1
        c["seconds"] += s["median_seconds"]
        c["ops"] += s["ops"]
        c["bytes"] += s["bytes"]
        # The class's bound: its ops over the time its steps would take at their roofs.
        if s.get("bound_gops", 0) > 0:
            c["roof_seconds"] += s["ops"] / (s["bound_gops"] * 1e9)
    for c in classes.values():
        c["gops"] = c["ops"] / c["seconds"] / 1e9 if c["seconds"] > 0 else 0
        c["gbs"] = c["bytes"] / c["seconds"] / 1e9 if c["seconds"] > 0 else 0
        c["intensity"] = c["ops"] / c["bytes"] if c["bytes"] > 0 else 0
        c["bound_gops"] = c["ops"] / c["roof_seconds"] / 1e9 if c["roof_seconds"] > 0 else 0
        c["fraction"] = c["gops"] / c["bound_gops"] if c["bound_gops"] > 0 else 0
    return classes


def table(profile, classes):
    total = sum(c["seconds"] for c in classes.values())
    lines = [f"end to end: median {profile['end_to_end_seconds'] * 1e3:.2f} ms, mean "
             f"{profile['end_to_end_mean_seconds'] * 1e3:.2f} ms; sum of step medians "
             f"{profile['sum_seconds'] * 1e3:.2f} ms, of step means "
             f"{profile['sum_mean_seconds'] * 1e3:.2f} ms "
             f"({100 * profile['sum_mean_seconds'] / profile['end_to_end_mean_seconds']:.1f}% of "
             f"the mean run)", "",
             "| kernel class | steps | ms | share | GOP/s | GB/s | op/B | % of roof |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, c in sorted(classes.items(), key=lambda kv: -kv[1]["seconds"]):
        lines.append(f"| {name} | {c['steps']} | {c['seconds'] * 1e3:.2f} | "
                     f"{100 * c['seconds'] / total:.1f}% | {c['gops']:.1f} | {c['gbs']:.1f} | "
                     f"{c['intensity']:.1f} | {100 * c['fraction']:.0f}%"
                     f"{' (bytes overstated)' if c['fraction'] > 1 else ''} |")
    if any(c["fraction"] > 1 for c in classes.values()):
        lines += ["", "Above 100%: the step's Work counts more bytes than it moves (a gather "
                  "counts its whole table; docs/profiling.md)."]
    return "\n".join(lines)


def plot(ceilings, runs, out, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("error: matplotlib is missing: pip install matplotlib")
    fig, ax = plt.subplots(figsize=(10, 6.5))
    peak = ceilings["fp32_gflops"]
    xs = [2 ** (i / 4) for i in range(-48, 49)]  # op/B from 1/4096 to 4096
    top = max(peak, ceilings.get("int8_gops") or 0)  # memory roofs run up to the highest peak
    for name, key, style in (("L2", "l2_gbs", ":"), ("L3", "l3_gbs", "--"),
                             ("DRAM", "dram_gbs", "-")):
        bw = ceilings[key]
        ax.plot(xs, [min(top, x * bw) for x in xs], style, color="gray",
                label=f"{name} read {bw:.0f} GB/s")
    ax.axhline(peak, color="black", lw=1.5,
               label=f"FP32 FMA peak {peak:.0f} GFLOP/s ({ceilings['fp32_isa']})")
    if ceilings.get("int8_gops"):
        ax.axhline(ceilings["int8_gops"], color="black", ls="-.", lw=1,
                   label=f"INT8 vpdpbusd peak {ceilings['int8_gops']:.0f} GOP/s")
    markers = "osD^v<>p"
    names = sorted({n for _, classes in runs for n in classes})
    colors = {n: plt.cm.tab10(i % 10) for i, n in enumerate(names)}
    labelled = set()
    for r, (label, classes) in enumerate(runs):
        for name, c in classes.items():
            if c["ops"] <= 0 or c["seconds"] <= 0:
                continue
            ax.scatter(c["intensity"], c["gops"], marker=markers[r % len(markers)], s=60,
                       color=colors[name], edgecolor="black", zorder=3,
                       label=None if name in labelled else name)
            labelled.add(name)
            ax.annotate(f"{label}", (c["intensity"], c["gops"]), textcoords="offset points",
                        xytext=(5, -10), fontsize=7)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=10)
    ax.set_xlabel("arithmetic intensity (op / byte)")
    ax.set_ylabel("GOP/s")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="ONNX model (default: BERT-base, generated when absent)")
    ap.add_argument("--octetc", default=os.path.join(ROOT, "build/tools/octetc/octetc"))
    ap.add_argument("--batches", default="1,8", help="batch sizes, comma separated")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="OpenMP threads (default: all)")
    ap.add_argument("--precisions", default="fp32,int8", help="fp32, int8 or both")
    ap.add_argument("--int8-args", default="--int8=static",
                    help="octetc run flags of the INT8 build (e.g. '--int8=static --calib=DIR')")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/out/roofline-bert-base.png"))
    ap.add_argument("--title", default=None)
    ap.add_argument("--keep-json", help="directory to keep the profile JSON (and the octetc "
                    "--profile table, .txt) in")
    args = ap.parse_args()

    if not os.path.exists(args.octetc):
        sys.exit(f"error: no octetc at '{args.octetc}' (build it, or give --octetc)")
    model = args.model
    if not model:
        model = os.path.join(tempfile.gettempdir(), "octet-bench-bert-base.onnx")
        if not os.path.exists(model):
            run([sys.executable, os.path.join(ROOT, "test/models/make_bert_base.py"), "-o", model])
    threads = ["--threads", str(args.threads)] if args.threads > 0 else []
    ceilings = json.loads(run([args.octetc, "ceilings", "--json"] + threads))
    print(f"ceilings ({ceilings['threads']} threads, {ceilings['cpu']}): "
          f"fp32 {ceilings['fp32_gflops']:.1f} GFLOP/s, int8 {ceilings['int8_gops']:.1f} GOP/s, "
          f"read L2 {ceilings['l2_gbs']:.1f}, L3 {ceilings['l3_gbs']:.1f}, "
          f"DRAM {ceilings['dram_gbs']:.1f} GB/s")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for precision in args.precisions.split(","):
            if precision not in ("fp32", "int8"):
                sys.exit(f"error: --precisions: '{precision}' is not fp32 or int8")
            extra = args.int8_args.split() if precision == "int8" else []
            for batch in [int(b) for b in args.batches.split(",")]:
                name = f"profile-{precision}-b{batch}-s{args.seq}"
                path = os.path.join(args.keep_json or tmp, name + ".json")
                if args.keep_json:
                    os.makedirs(args.keep_json, exist_ok=True)
                text = run([args.octetc, "run", model, "--batch", str(batch), "--seq", str(args.seq),
                            "--repeat", str(args.repeat), "--warmup", str(args.warmup), "--profile",
                            "--profile-json", path] + extra + threads)
                if args.keep_json:  # the per-step table too
                    with open(path[:-len(".json")] + ".txt", "w") as f:
                        f.write(text)
                with open(path) as f:
                    profile = json.load(f)
                classes = group(profile)
                print(f"\n### {precision.upper()}, batch {batch}, sequence {args.seq}\n")
                print(table(profile, classes))
                runs.append((f"{precision} b{batch}", classes))
    title = args.title or (f"{os.path.basename(model)} {args.precisions.upper()}, seq {args.seq}, "
                           f"{ceilings['threads']} threads, {ceilings['cpu']}")
    plot(ceilings, runs, args.out, title)


if __name__ == "__main__":
    main()
