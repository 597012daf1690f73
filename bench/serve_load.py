#!/usr/bin/env python3
"""Bounded load test of octet.serve on a local Ray cluster (loopback only): throughput and
p50 / p99 latency of Octet INT8 replicas against the same deployment wrapping ONNX Runtime
(FP32 and INT8 dynamic), on all-MiniLM-L6-v2 (issue 16).

  python3 bench/serve_load.py [--replicas 1,2] [--batch-sizes 1,16] [--requests 200]
                              [--sentences-per-request 1] [--concurrency 8]
                              [--png bench/serve_load.png]

Requests: consecutive sentences of ../shared/data/sentences, --sentences-per-request of them
in each request (an embedding client's batch: tokenized, padded to the request's longest,
attention mask 0 on the padding), --requests requests, POSTed as an .npz body (the binary
path; JSON would time the float formatting instead of the engine) by --concurrency client
threads with keep-alive connections. For every engine x replicas x max batch size the
deployment is (re)deployed, warmed up with 20 requests, and timed over the fixed request
count: requests per second and latency percentiles. Each replica gets 1 thread (replicas pinned to separate cores).
Engines: octet-int8 (model.so, int8 static calibrated on held-out sentences), ort-fp32 and
ort-int8-dynamic (onnxruntime.quantization.quantize_dynamic) through octet.serve's
engine="onnxruntime".
"""
import argparse
import http.client
import io
import json
import os
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import octet  # noqa: E402
import sentence_throughput as st  # noqa: E402  (export, calibration sets, data)


def load(port, bodies, concurrency):
    """(wall seconds, latencies in ms, errors) for POSTing every body once."""
    latencies, errors, lock = [], [], threading.Lock()
    queue = list(enumerate(bodies))

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while True:
            with lock:
                if not queue:
                    break
                _, body = queue.pop()
            start = time.perf_counter()
            try:
                conn.request("POST", "/", body, {"Content-Type": "application/x-npz"})
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                ok, response = False, e
            elapsed = 1e3 * (time.perf_counter() - start)
            with lock:
                (latencies if ok else errors).append(elapsed if ok else str(response))
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, latencies, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", default="octet-int8,ort-int8-dynamic,ort-fp32")
    ap.add_argument("--replicas", default="1,2")
    ap.add_argument("--batch-sizes", default="1,16")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--sentences-per-request", type=int, default=1,
                    help="sentences in each request, padded to the request's longest")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--port", type=int, default=8123)
    ap.add_argument("--png", default=os.path.join(ROOT, "bench", "serve_load.png"))
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "octet-bench-serve"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    import ray
    from ray import serve
    import octet.serve
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from tokenizers import Tokenizer

    texts = [t for t, _ in st.sentence_data.load()]
    model_dir = st.minilm.model_dir()
    onnx_path = os.path.join(args.work, "minilm.onnx")
    if not os.path.exists(onnx_path):
        st.export_onnx.export(onnx_path, model_path=model_dir)
    paths = {"ort-fp32": onnx_path, "ort-int8-dynamic": os.path.join(args.work, "minilm-qdq.onnx"),
             "octet-int8": os.path.join(args.work, "minilm-int8.so")}
    if not os.path.exists(paths["ort-int8-dynamic"]):
        quantize_dynamic(onnx_path, paths["ort-int8-dynamic"], weight_type=QuantType.QInt8)
    if not os.path.exists(paths["octet-int8"]):
        octet.compile_to_so(onnx_path, paths["octet-int8"], int8="static", progress=False,
                            calibration=octet.sentence.token_batches(model_dir, texts[9::10][:64]))
    tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tokenizer.no_padding()
    per = args.sentences_per_request
    if per < 1 or args.requests * per > len(texts):
        ap.error(f"--requests x --sentences-per-request must be in [1, {len(texts)}] sentences")
    bodies, tokens = [], []
    for r in range(args.requests):
        encoded = [tokenizer.encode(t) for t in texts[r * per:(r + 1) * per]]
        width = max(len(e.ids) for e in encoded)
        tokens += [len(e.ids) for e in encoded]
        arrays = {name: np.zeros((per, width), np.int64)
                  for name in ("input_ids", "attention_mask", "token_type_ids")}
        for row, e in enumerate(encoded):
            arrays["input_ids"][row, :len(e.ids)] = e.ids
            arrays["attention_mask"][row, :len(e.ids)] = e.attention_mask
            arrays["token_type_ids"][row, :len(e.ids)] = e.type_ids
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        bodies.append(buffer.getvalue())

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a loopback cluster of its own
    # The replicas import this checkout's package, as the driver does.
    ray.init(include_dashboard=False, logging_level="ERROR",
             runtime_env={"env_vars": {"PYTHONPATH": os.path.join(ROOT, "python")}})
    serve.start(http_options={"host": "127.0.0.1", "port": args.port})
    print(f"{len(bodies)} requests ({per} sentence(s) each, {statistics.mean(tokens):.1f} "
          f"tokens on average), {args.concurrency} clients; cores {os.cpu_count()}", flush=True)
    rows = []
    for engine in args.engines.split(","):
        for replicas in (int(r) for r in args.replicas.split(",")):
            for batch in (int(b) for b in args.batch_sizes.split(",")):
                app = octet.serve.build_app(
                    paths[engine], replicas=replicas, threads=1, max_batch_size=batch,
                    batch_wait_timeout_s=0.002,
                    engine="octet" if engine.startswith("octet") else "onnxruntime")
                serve.run(app, route_prefix="/")
                load(args.port, bodies[:20], args.concurrency)
                wall, latencies, errors = load(args.port, bodies, args.concurrency)
                p50, p99 = np.percentile(latencies, [50, 99]) if latencies else (float("nan"),) * 2
                rows.append({"engine": engine, "replicas": replicas, "batch": batch,
                             "rps": len(latencies) / wall, "sps": per * len(latencies) / wall,
                             "p50": float(p50), "p99": float(p99), "errors": len(errors)})
                print(json.dumps(rows[-1]), flush=True)
                serve.delete("default")
    serve.shutdown()
    ray.shutdown()
    print(f"\n{per} sentence(s) per request")
    print("\n| engine | replicas | max batch | requests/s | sentences/s | p50 ms | p99 ms | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['engine']} | {r['replicas']} | {r['batch']} | {r['rps']:.1f} | {r['sps']:.0f} | "
              f"{r['p50']:.1f} | {r['p99']:.1f} | {r['errors']} |")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no plot)")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for engine in args.engines.split(","):
        for replicas in (int(r) for r in args.replicas.split(",")):
            pts = sorted((r["rps"], r["p99"], r["batch"]) for r in rows
                         if r["engine"] == engine and r["replicas"] == replicas)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label=f"{engine}, {replicas} replica(s)")
            for rps, p99, batch in pts:
                ax.annotate(f"b{batch}", (rps, p99), fontsize=7)
    ax.set_xlabel("requests / s")
    ax.set_ylabel("p99 latency (ms)")
    ax.set_title(f"octet.serve, all-MiniLM-L6-v2, {per} sentence(s)/request, "
                 f"{args.concurrency} clients, loopback")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.png, dpi=100)
    print(f"plot: {args.png}")


if __name__ == "__main__":
    main()
