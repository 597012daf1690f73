#!/usr/bin/env python3
"""INT8 BERT-base latency: Octet INT8 (static, SmoothQuant; JIT through its C API) against ONNX
Runtime INT8 running a QDQ model of the same weights (quantize_static, per-channel MatMul
weights, u8 activations) and against ONNX Runtime FP32, in the same process, alternating rounds
so that machine noise hits all of them.

Targets (INT8 issue): Octet INT8 <= 0.6x ONNX Runtime INT8; GEMM work / GEMM time >= 75% of
the vpdpbusd peak Octet measures on this machine; compile (JIT, calibration excluded) <= 3 s.

  python3 bench/bert_base_int8.py [--shapes 1x128,8x128] [--rounds 5] [--calib-sets 8]

Both quantizers calibrate on the same sample sets (random token batches, written once as
octetc --input-sets directories). Prints, per shape, median/min/max latencies, the ratios,
and how far each INT8 output is from the FP32 one; then the GEMM share of Octet's profile
(octetc run --profile-json) against the measured vpdpbusd peak.
"""
import argparse
import json
import re
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
from bert_base_fp32 import time_calls  # noqa: E402

VOCAB = 30522


def token_batch(rng, batch, seq):
    """Token ids as a tokenizer gives them: [CLS] ... [SEP], random lengths, padded."""
    ids = rng.integers(1000, VOCAB, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    for b in range(batch):
        length = int(rng.integers(seq // 2, seq + 1))
        ids[b, 0], ids[b, length - 1] = 101, 102
        ids[b, length:], mask[b, length:] = 0, 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def write_sets(directory, feeds_list):
    for i, feeds in enumerate(feeds_list):
        d = os.path.join(directory, f"set{i:03d}")
        os.makedirs(d, exist_ok=True)
        for name, array in feeds.items():
            np.save(os.path.join(d, name + ".npy"), array)


def cosine(a, b):
    a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    c = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-30)
    return float(np.mean(c)), float(np.min(c))


def ort_qdq_model(fp32, out, sets):
    from onnxruntime import quantization as q

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self._it = iter(sets)

        def get_next(self):
            return next(self._it, None)

    q.quantize_static(fp32, out, Reader(), quant_format=q.QuantFormat.QDQ, per_channel=True,
                      activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8,
                      calibrate_method=q.CalibrationMethod.MinMax, op_types_to_quantize=["MatMul"],
                      extra_options={"QDQOpTypePerChannelSupportToAxis": {"MatMul": 1}})


def gemm_efficiency(octetc, model, shape, calib_dir, target, attention, int8_gops_hint=None):
    """Octet's profile: GEMM ops / GEMM time against the vpdpbusd (and tdpbusd) ceilings it
    measures."""
    batch, seq = shape.split("x")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "profile.json")
        subprocess.run([octetc, "run", model, "--int8=static", f"--calib={calib_dir}", "--batch", batch,
                        "--seq", seq, "--repeat", "10", "--warmup", "2", f"--target={target}",
                        f"--attention={attention}",
                        "--profile-json", out],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        profile = json.load(open(out))
    gemm = [s for s in profile["steps"] if s["kind"].startswith("qgemm")]
    ops = sum(s["ops"] for s in gemm)
    seconds = sum(s["median_seconds"] for s in gemm)
    ceilings = profile.get("ceilings") or {}
    peak = ceilings.get("int8_gops", int8_gops_hint)
    amx_peak = ceilings.get("amx_int8_gops", 0)
    by_kind = {}
    for s in profile["steps"]:
        k = s["kind"].split("+")[0]
        by_kind[k] = by_kind.get(k, 0.0) + s["median_seconds"]
    return ops / seconds / 1e9, peak, amx_peak, seconds, profile["end_to_end_seconds"], by_kind


def compile_split(octetc, model, calib_dir):
    """octetc's compile time of the static INT8 model, and the calibration's share of it."""
    out = subprocess.run([octetc, "run", model, "--int8=static", f"--calib={calib_dir}", "--batch", "1",
                          "--seq", "8", "--repeat", "1", "--warmup", "0"],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"compiled '.*' in ([0-9.]+) ms \(calibration ([0-9.]+) ms, the rest ([0-9.]+) ms\)", out)
    return tuple(float(x) / 1e3 for x in m.groups()) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="BERT-base FP32 .onnx (generated when absent)")
    ap.add_argument("--lib", default=os.path.join(ROOT, "build/runtime/liboctet.so"))
    ap.add_argument("--octetc", default=os.path.join(ROOT, "build/tools/octetc/octetc"))
    ap.add_argument("--target", default="host",
                    help="Octet's target CPU (host, avx512-vnni, amx, ...): avx512-vnni on an AMX "
                         "host measures the VNNI kernels")
    ap.add_argument("--attention", default="f32", choices=["f32", "bf16"],
                    help="Octet's attention precision (bf16: AMX-BF16 where the target has it)")
    ap.add_argument("--shapes", default="1x128,8x128", help="batch x sequence, comma separated")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per shape")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per round")
    ap.add_argument("--calib-sets", type=int, default=8, help="calibration batches (4 x 128 each)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "octet-bench-int8"),
                    help="directory for the generated models and sample sets (reused)")
    args = ap.parse_args()

    import onnxruntime as ort

    os.makedirs(args.work, exist_ok=True)
    model = args.model or os.path.join(tempfile.gettempdir(), "octet-bench-bert-base.onnx")
    if not os.path.exists(model):
        print(f"generating {model} ...", flush=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "test/models/make_bert_base.py"), "-o", model],
                       check=True)
    calib_dir = os.path.join(args.work, "calib")
    rng = np.random.default_rng(7)
    sets = [token_batch(rng, 4, 128) for _ in range(args.calib_sets)]
    if not os.path.isdir(calib_dir):
        write_sets(calib_dir, sets)
    qdq = os.path.join(args.work, f"bert-base-qdq-{args.calib_sets}.onnx")
    if not os.path.exists(qdq):
        print(f"ONNX Runtime quantize_static -> {qdq} ...", flush=True)
        ort_qdq_model(model, qdq, sets)

    threads = os.cpu_count()
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    ort_fp32 = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    ort_int8 = ort.InferenceSession(qdq, so, providers=["CPUExecutionProvider"])

    # Compile time without calibration: dynamic mode needs none; static mode is timed whole
    # (calibration included) and its calibration share is printed by octetc --verbose.
    os.environ["OCTET_LIBRARY"] = args.lib
    start = time.perf_counter()
    octet.compile(model, int8="dynamic", target=args.target, attention=args.attention,
                  progress=False)
    compile_dynamic = time.perf_counter() - start
    start = time.perf_counter()
    octet_model = octet.compile(model, int8="static", calibration=calib_dir, target=args.target,
                                attention=args.attention, progress=False)
    first = octet_model.output_names[0]
    compile_static = time.perf_counter() - start
    print(f"threads {threads}; Octet target {args.target}, attention {args.attention}; ONNX Runtime {ort.__version__}; Octet compile: INT8 dynamic "
          f"{compile_dynamic:.2f} s, INT8 static {compile_static:.2f} s (calibration over "
          f"{args.calib_sets} x 4 x 128 included)", flush=True)

    eval_rng = np.random.default_rng(0)
    rows = []
    for shape in args.shapes.split(","):
        batch, seq = (int(x) for x in shape.split("x"))
        feeds = token_batch(eval_rng, batch, seq)
        feeds = {i.name: feeds[i.name] for i in ort_fp32.get_inputs()}
        inputs = [feeds[name] for name in octet_model.input_names]
        reference = ort_fp32.run(None, feeds)[0]
        cos_octet = cosine(octet_model.run(inputs)[first], reference)
        cos_ort = cosine(ort_int8.run(None, feeds)[0], reference)
        times = {"octet": [], "ort_int8": [], "ort_fp32": []}
        for _ in range(args.rounds):
            times["octet"] += time_calls(lambda: octet_model.run(inputs), args.repeat)
            times["ort_int8"] += time_calls(lambda: ort_int8.run(None, feeds), args.repeat)
            times["ort_fp32"] += time_calls(lambda: ort_fp32.run(None, feeds), args.repeat)
        rows.append((shape, {k: (statistics.median(v), min(v), max(v)) for k, v in times.items()},
                     cos_octet, cos_ort))

    print("\n| batch x seq | Octet INT8 ms | ORT INT8 (QDQ) ms | ORT FP32 ms | Octet / ORT INT8 "
          "| Octet / ORT FP32 | cosine to FP32: Octet (min) | ORT INT8 (min) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for shape, t, co, cr in rows:
        cell = lambda k: f"{t[k][0]:.1f} ({t[k][1]:.1f}–{t[k][2]:.1f})"  # noqa: E731
        print(f"| {shape} | {cell('octet')} | {cell('ort_int8')} | {cell('ort_fp32')} "
              f"| {t['octet'][0] / t['ort_int8'][0]:.2f}x | {t['octet'][0] / t['ort_fp32'][0]:.2f}x "
              f"| {co[0]:.5f} ({co[1]:.5f}) | {cr[0]:.5f} ({cr[1]:.5f}) |")

    split = compile_split(args.octetc, model, calib_dir)
    if split:
        print(f"\nCompile, static INT8 (octetc): {split[0]:.2f} s = calibration {split[1]:.2f} s "
              f"+ the rest {split[2]:.2f} s (import, passes, packing, JIT; target <= 3 s)")
    print("\nGEMM efficiency (octetc run --profile-json, same model and samples):")
    for shape in args.shapes.split(","):
        gops, peak, amx_peak, gemm_s, e2e_s, by_kind = gemm_efficiency(args.octetc, model, shape,
                                                                       calib_dir, args.target,
                                                                       args.attention)
        amx = f" ({100 * gops / amx_peak:.1f}% of the tdpbusd peak {amx_peak:.0f})" if amx_peak else ""
        print(f"  {shape}: INT8 GEMMs {gops:.0f} GOP/s = {100 * gops / peak:.1f}% of the vpdpbusd peak "
              f"{peak:.0f} GOP/s{amx}; GEMMs {1e3 * gemm_s:.1f} ms of {1e3 * e2e_s:.1f} ms end to end")
        for kind, s in sorted(by_kind.items(), key=lambda kv: -kv[1]):
            print(f"      {kind:32s} {1e3 * s:8.2f} ms  {100 * s / e2e_s:5.1f}%")


if __name__ == "__main__":
    main()
