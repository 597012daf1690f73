#!/usr/bin/env python3
"""BERT-base INT8 latency: Octet against its peers, each runtime in its own process (their
thread pools spin and disturb a neighbour in the same process), same inputs, alternating rounds,
medians (issue 17).

  bench/setup-peers                 # once: ONNX Runtime, OpenVINO (+ torch) in ../venvs/peers
  python3 bench/peers.py --shapes 1x128,8x128,sentences32

Engines (bench/peers/worker.py):
  octet-int8        Octet INT8 static (SmoothQuant; octet.compile, JIT), system python
  octet-int8-padded the same with pack_tokens off: every padding token computed
  octet-int8-f32attn the same with attention="f32" (attention's matmuls in f32, not int8)
  octet-fp32        Octet FP32 (system python)
  octet-bf16        Octet with precision="bf16" on the FP32 model (system python)
  ov-int8           OpenVINO INT8 on the same QDQ model as ort-int8-static (static shapes), its
                    default inference precision for what is not quantized (bf16 on CPUs with
                    AVX512-BF16 or AMX; the precision is printed)
  ov-int8-f32       the same with INFERENCE_PRECISION_HINT f32: on bf16 CPUs compare against
                    the faster of the two
  ort-int8-static   ONNX Runtime, QDQ model from quantize_static (MinMax on the calibration
                    batches Octet uses; per-channel s8 MatMul weights, u8 activations)
  ort-int8-dynamic  ONNX Runtime, quantize_dynamic (s8 weights per tensor)
  torch-int8        PyTorch: torchao SmoothQuant over static INT8 (per-tensor activations,
                    per-channel weights), same calibration, torch.compile + Inductor freezing
  ort-fp32          ONNX Runtime FP32 (reference column)
  ov-default        OpenVINO on the FP32 model at its default inference precision (reference
                    column; bf16 on CPUs with AVX512-BF16, the precision is printed)
Peers run under --peers-python (default: ../venvs/peers/bin/python, or $OCTET_PEERS_PYTHON),
Octet under this python with the package of this checkout and --lib.

Shapes: BxS (random token batches of BERT's vocabulary, random real lengths S/2..S, as
bench/bert_base_int8.py; seeded by the shape's name, so a shape's batch is the same whatever
else --shapes lists), BxSfull (the same with every token real: no padding) or sentencesN: the first N sentences of ../shared/data/sentences in
file order, WordPiece-tokenized (the bert-base-uncased vocabulary of all-MiniLM-L6-v2) and
padded to the longest. Model: test/models/make_bert_base.py (seeded weights).
"""
import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bench", "minilm"))
from bert_base_int8 import token_batch  # noqa: E402  (random token batches, as that bench)

WORKER = os.path.join(ROOT, "bench", "peers", "worker.py")
ENGINES = ["octet-int8", "octet-int8-padded", "octet-int8-f32attn", "octet-fp32", "octet-bf16", "ov-int8", "ov-int8-f32", "ort-int8-static", "ort-int8-dynamic", "torch-int8", "ort-fp32", "ov-default"]
# The INT8 comparison; --engines octet-bf16,octet-fp32,ov-default for --precision bf16.
DEFAULT_ENGINES = [e for e in ENGINES
                   if e not in ("octet-fp32", "octet-bf16", "octet-int8-padded", "octet-int8-f32attn")]
TITLES = {"octet-int8": "Octet INT8 static", "octet-int8-padded": "Octet INT8 static, padding computed",
          "octet-int8-f32attn": "Octet INT8 static, f32 attention", "octet-fp32": "Octet FP32", "octet-bf16": "Octet bf16",
          "ov-int8": "OpenVINO INT8 (same QDQ)", "ov-int8-f32": "OpenVINO INT8, f32 hint",
          "ort-int8-static": "ORT INT8 static (QDQ)", "ort-int8-dynamic": "ORT INT8 dynamic",
          "torch-int8": "PyTorch torchao SmoothQuant + Inductor", "ort-fp32": "ORT FP32", "ov-default": "OpenVINO default precision"}


def handoff_ns(threads):
    """How far apart the first two threads run now: octetc ceilings' cache-line handoff (ns),
    or None without octetc. On 2 vCPUs it moves with the hypervisor's placement (a Zen 4: ~30 ns
    on one core complex, ~160 ns on two, and every runtime's memory-bound steps slow down)."""
    octetc = os.path.join(ROOT, "build/tools/octetc/octetc")
    if threads < 2 or not os.path.exists(octetc):
        return None
    out = subprocess.run([octetc, "ceilings", f"--threads={threads}"], capture_output=True, text=True).stdout
    found = re.search(r"handoff ([0-9.]+) ns", out)
    return float(found.group(1)) if found else None


def sentence_batch(count, data_dir):
    import minilm
    import sentences
    import wordpiece
    rows = sentences.load(data_dir) if data_dir else sentences.load()
    if count > len(rows):
        raise SystemExit(f"sentences{count}: the data has only {len(rows)} sentences")
    tok = wordpiece.WordPieceTokenizer.from_vocab(os.path.join(minilm.model_dir(), "vocab.txt"))
    return tok.batch([text for text, _ in rows[:count]])


def feeds_for(shape, data_dir):
    if shape.startswith("sentences"):
        count = shape[len("sentences"):]
        if not count.isdigit() or int(count) < 1:
            raise SystemExit(f"--shapes: {shape!r}: expected sentencesN, N >= 1")
        return sentence_batch(int(count), data_dir)
    full = shape.endswith("full")  # BxSfull: every token real (no padding to skip)
    parts = shape[:-len("full")].split("x") if full else shape.split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise SystemExit(f"--shapes: {shape!r}: expected BxS (e.g. 8x128), BxSfull or sentencesN")
    # Its own generator: a shape's batch must not depend on the shapes listed before it.
    rng = np.random.default_rng(zlib.crc32(shape.encode()))
    feeds = token_batch(rng, int(parts[0]), int(parts[1]))
    if full:
        feeds["input_ids"][:, -1], feeds["attention_mask"][:] = 102, 1
        feeds["input_ids"][feeds["input_ids"] == 0] = 1000
    return feeds


class Worker:
    def __init__(self, engine, python, work, env):
        self.engine = engine
        self.proc = subprocess.Popen([python, WORKER, "serve", engine, work], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "ready":
            self.proc.kill()
            raise SystemExit(f"{engine}: the worker did not start (see its stderr above)")
        self.setup_s, self.version = float(line[1]), " ".join(line[2:])

    def ask(self, *cmd):
        self.proc.stdin.write(" ".join(str(c) for c in cmd) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().split()
        if not reply or reply[0] != "ok":
            raise SystemExit(f"{self.engine}: {' '.join(map(str, cmd))}: {' '.join(reply) or 'the worker exited'}")
        return reply[1:]

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=30)


def cosine(a, b, mask):
    """Mean per-token cosine over the real tokens (padding positions are meaningless: Octet
    returns 0 there, docs/padding-free.md)."""
    real = mask.reshape(-1) != 0
    a, b = a.reshape(-1, a.shape[-1]).astype(np.float64)[real], b.reshape(-1, b.shape[-1]).astype(np.float64)[real]
    c = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-30)
    return float(np.mean(c))


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="1x128,8x128,sentences32")
    ap.add_argument("--engines", default=",".join(DEFAULT_ENGINES), help="comma separated, of: " + ", ".join(ENGINES))
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per shape")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per engine and round")
    ap.add_argument("--threads", type=int, default=2, help="threads of every runtime")
    ap.add_argument("--calib-sets", type=int, default=8, help="calibration batches (4 x 128 each)")
    ap.add_argument("--peers-python", default=os.environ.get("OCTET_PEERS_PYTHON",
                                                             os.path.join(ROOT, "..", "venvs", "peers", "bin", "python")))
    ap.add_argument("--lib", default=os.path.join(ROOT, "build/runtime/liboctet.so"))
    ap.add_argument("--model", help="BERT-base FP32 .onnx (generated when absent)")
    ap.add_argument("--data", help="the sentences folder (default ../shared/data/sentences)")
    ap.add_argument("--omp-wait-policy", choices=["active", "passive"],
                    help="OMP_WAIT_POLICY of Octet's worker (default: the OpenMP library's). On a "
                         "loaded machine, spinning waits cost Octet several times its latency")
    ap.add_argument("--base", help="the engine the ratio columns divide (default: the first octet-* engine)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "octet-bench-peers"))
    args = ap.parse_args()

    engines = [e for e in args.engines.split(",") if e]
    for e in engines:
        if e not in ENGINES:
            raise SystemExit(f"--engines: unknown {e!r}; known: {', '.join(ENGINES)}")
    peers = [e for e in engines if not e.startswith("octet-")]
    if peers and not os.path.exists(args.peers_python):
        raise SystemExit(f"--peers-python {args.peers_python}: not found; run bench/setup-peers first")
    if any(e.startswith("octet-") for e in engines) and not os.path.exists(args.lib):
        raise SystemExit(f"--lib {args.lib}: not found; build liboctet first")
    if "ort-fp32" not in engines:
        engines.append("ort-fp32")  # the cosine reference

    # The inputs first: a bad --shapes stops before minutes of model generation.
    shapes = [s for s in args.shapes.split(",") if s]
    info, all_feeds = {}, {}
    for shape in shapes:
        all_feeds[shape] = feeds_for(shape, args.data)
        mask = all_feeds[shape]["attention_mask"]
        info[shape] = f"{mask.shape[0]}x{mask.shape[1]}, {100 * mask.mean():.0f}% real tokens"
    os.makedirs(args.work, exist_ok=True)
    for shape, feeds in all_feeds.items():
        np.savez(os.path.join(args.work, shape + ".npz"), **feeds)
    model = os.path.join(args.work, "model.onnx")
    if not os.path.exists(model):
        if args.model:
            shutil.copyfile(args.model, model)
        else:
            print(f"generating {model} ...", flush=True)
            subprocess.run([sys.executable, os.path.join(ROOT, "test/models/make_bert_base.py"), "-o", model],
                           check=True)
    calib = os.path.join(args.work, "calib")
    if not os.path.isdir(calib):
        rng = np.random.default_rng(7)
        for i in range(args.calib_sets):
            d = os.path.join(calib + ".tmp", f"set{i:03d}")
            os.makedirs(d, exist_ok=True)
            for name, array in token_batch(rng, 4, 128).items():
                np.save(os.path.join(d, name + ".npy"), array)
        os.replace(calib + ".tmp", calib)
    if any(e.startswith("ort-int8") or e.startswith("ov-int8") for e in engines):
        print("ONNX Runtime quantize_static / quantize_dynamic (peers venv) ...", flush=True)
        subprocess.run([args.peers_python, WORKER, "prepare", args.work], check=True)


    env = dict(os.environ, PEERS_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads),
               OCTET_LIBRARY=args.lib)
    handoffs = [handoff_ns(args.threads)]
    workers = {}
    try:
        for e in engines:
            octet_engine = e.startswith("octet-")
            wenv = dict(env, OMP_WAIT_POLICY=args.omp_wait_policy) if octet_engine and args.omp_wait_policy else env
            workers[e] = Worker(e, sys.executable if octet_engine else args.peers_python, args.work, wenv)
            print(f"{e}: {workers[e].version}, set up in {workers[e].setup_s:.1f} s", flush=True)
        medians, cosines, notes = {}, {}, {}
        for shape in shapes:
            for e in engines:
                reply = workers[e].ask("load", shape)
                if len(reply) > 1:
                    notes[e] = f"inference precision {reply[1]}"
            times = {e: [] for e in engines}
            for r in range(args.rounds):
                # Rotate the order each round so no engine always follows the same neighbour.
                order = engines[r % len(engines):] + engines[:r % len(engines)]
                for e in order:
                    time.sleep(0.2)  # let the previous runtime's spinning threads park
                    times[e] += [float(t) for t in workers[e].ask("time", shape, args.repeat)]
            medians[shape] = {e: statistics.median(v) for e, v in times.items()}
            ref = np.load(workers["ort-fp32"].ask("out", shape)[0])
            mask = all_feeds[shape]["attention_mask"]
            cosines[shape] = {e: cosine(np.load(workers[e].ask("out", shape)[0]), ref, mask)
                              for e in engines}
            print(f"{shape} ({info[shape]}): " + ", ".join(f"{e} {m:.1f} ms" for e, m in medians[shape].items()),
                  flush=True)
    finally:
        for w in workers.values():
            w.close()
    handoffs.append(handoff_ns(args.threads))

    versions = sorted({w.version for w in workers.values()})
    print(f"\nCPU: {cpu_name()}, {os.cpu_count()} logical CPUs; {args.threads} threads per runtime; "
          f"{', '.join(versions)}; Octet OMP_WAIT_POLICY {args.omp_wait_policy or 'default'}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if None not in handoffs:
        far = " (over 100 ns: the threads ran on different core complexes)" if max(handoffs) > 100 else ""
        print(f"cache-line handoff between the first two threads: {handoffs[0]:.0f} ns before, "
              f"{handoffs[1]:.0f} ns after{far}")
    for e, n in notes.items():
        print(f"{e}: {n}")
    print(f"median of {args.rounds} alternating rounds x {args.repeat} runs, ms\n")
    # Ratio columns: --base (default the first Octet engine given) over every other engine.
    base = args.base or next((e for e in engines if e.startswith("octet-")), None)
    if base is not None and base not in engines:
        raise SystemExit(f"--base {base}: not among --engines")
    peer_cols = [e for e in engines if e != base]
    head = [TITLES[e] for e in engines]
    if base is not None:
        head += [f"{TITLES[base]} / {TITLES[e]}" for e in peer_cols]
    print("| shape | " + " | ".join(head) + " |")
    print("|---|" + "---:|" * len(head))
    for shape in shapes:
        m = medians[shape]
        cells = [f"{m[e]:.1f}" for e in engines]
        if base is not None:
            cells += [f"{m[base] / m[e]:.2f}x" for e in peer_cols]
        print(f"| {shape} ({info[shape]}) | " + " | ".join(cells) + " |")
    print("\ncosine to ORT FP32 (mean over real tokens):")
    for shape in shapes:
        print(f"  {shape}: " + ", ".join(f"{e} {c:.5f}" for e, c in cosines[shape].items() if e != "ort-fp32"))


if __name__ == "__main__":
    main()
