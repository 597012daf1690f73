#!/usr/bin/env python3
"""BERT-base (12 layers, hidden 768, 12 heads, FFN 3072, vocab 30522) with seeded random
weights, exported in the TorchScript style at opset 14: about 420 MB of float32.

Weights are drawn straight into float32 (PCG64) and streamed to disk tensor by tensor (see
make_encoder.save), so memory peaks at about one copy of the weights.

Usage: make_bert_base.py -o bert-base.onnx [--external-data] [--check]
"""
import argparse
import os
import sys
import time

import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_encoder  # noqa: E402
import reference  # noqa: E402

BERT_BASE = reference.EncoderConfig(arch="bert", layers=12, hidden=768, heads=12, intermediate=3072,
                                    vocab=30522, max_pos=512)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--external-data", action="store_true", help="weights in OUTPUT.data (onnx external data)")
    p.add_argument("--style", choices=make_encoder.STYLES, default="torchscript")
    p.add_argument("--opset", type=int, default=14)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--check", action="store_true",
                   help="onnx.checker and ONNX Runtime vs the NumPy reference (batch 2, seq 7)")
    args = p.parse_args(argv)

    start = time.perf_counter()
    weights = reference.make_weights(BERT_BASE, args.seed)
    generated = time.perf_counter()
    model, initializers = make_encoder.EncoderExporter(BERT_BASE, args.style, args.opset, weights).build()
    make_encoder.save(model, initializers, args.output, args.external_data)
    done = time.perf_counter()
    size = os.path.getsize(args.output)
    if args.external_data:
        size += os.path.getsize(args.output + ".data")
    params = sum(a.size for _, a in initializers if a.dtype.kind == "f")
    print(f"{args.output}: {params / 1e6:.1f}M parameters, {size / 2**20:.1f} MiB, "
          f"weights {generated - start:.2f} s, graph + write {done - generated:.2f} s")

    if args.check:
        onnx.checker.check_model(args.output)  # by path: works for external data too
        diff = make_encoder.check_against_reference(onnx.load(args.output), weights, BERT_BASE)
        print(f"ORT vs NumPy max diff {diff:.2e}")
        return 0 if diff <= 1e-4 else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
