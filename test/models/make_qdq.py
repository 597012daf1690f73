#!/usr/bin/env python3
"""Quantized variants of a small generated BERT, made by ONNX Runtime's own quantizers.

  static   quantize_static, QDQ format: QuantizeLinear/DequantizeLinear pairs around the
           quantized ops; activations QUInt8 per tensor (MinMax calibration over random token
           batches), weights QInt8 per channel.
  dynamic  quantize_dynamic, QOperator format: DynamicQuantizeLinear + MatMulInteger
           (+ Cast/Mul for the scales), weights QInt8.

Both keep to the standard ai.onnx domain; any other domain in the result is an error. Each
model is run in ONNX Runtime and its op histogram printed.

Usage: make_qdq.py --out-dir DIR [--mode static|dynamic|both] [make_encoder options]
"""
import argparse
import collections
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime import quantization as q

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_encoder  # noqa: E402
import reference  # noqa: E402


class RandomTokenBatches(q.CalibrationDataReader):
    """Calibration feeds: `count` random padded token batches (batch 2, seq 7)."""

    def __init__(self, cfg, input_names, count=8):
        self._feeds = iter([{k: v for k, v in reference.random_inputs(cfg, seed=100 + i).items()
                             if k in input_names} for i in range(count)])

    def get_next(self):
        return next(self._feeds, None)


def quantize(fp32_path, out_path, mode, cfg):
    if mode == "static":
        inputs = {i.name for i in onnx.load(fp32_path, load_external_data=False).graph.input}
        q.quantize_static(fp32_path, out_path, RandomTokenBatches(cfg, inputs), quant_format=q.QuantFormat.QDQ,
                          per_channel=True, activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8,
                          calibrate_method=q.CalibrationMethod.MinMax,
                          # MatMuls only (weights and the two attention matmuls): a quantized
                          # Add would give the finfo.min attention mask and the scores one
                          # per-tensor scale and wipe out the scores.
                          op_types_to_quantize=["MatMul"],
                          # MatMul weights are [K, N]: one scale per output column.
                          extra_options={"QDQOpTypePerChannelSupportToAxis": {"MatMul": 1}})
    else:
        # Only MatMul: Gather/Attention would bring in other op forms; MatMulConstBOnly keeps
        # the activation x activation matmuls of attention in float.
        q.quantize_dynamic(fp32_path, out_path, weight_type=q.QuantType.QInt8, op_types_to_quantize=["MatMul"],
                           extra_options={"MatMulConstBOnly": True})


def histogram(model):
    return collections.Counter((n.domain or "ai.onnx", n.op_type) for n in model.graph.node)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out-dir", required=True)
    p.add_argument("--mode", choices=("static", "dynamic", "both"), default="both")
    p.add_argument("--arch", choices=reference.ARCHS, default="bert")
    p.add_argument("--style", choices=make_encoder.STYLES, default="torchscript")
    p.add_argument("--opset", type=int, default=14, help="QDQ per-channel axis needs 13+")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no histograms")
    args = p.parse_args(argv)

    os.makedirs(args.out_dir, exist_ok=True)
    model, weights, cfg = make_encoder.make_encoder(arch=args.arch, style=args.style, opset=args.opset,
                                                    layers=args.layers, hidden=args.hidden, heads=args.heads,
                                                    intermediate=4 * args.hidden, seed=args.seed)
    fp32_path = os.path.join(args.out_dir, f"{args.arch}-fp32.onnx")
    onnx.save(model, fp32_path)
    feeds = reference.random_inputs(cfg, seed=7)
    fp32 = make_encoder.run_ort(model, feeds)["last_hidden_state"]

    ok = True
    for mode in ("static", "dynamic") if args.mode == "both" else (args.mode,):
        out_path = os.path.join(args.out_dir, f"{args.arch}-{mode}.onnx")
        quantize(fp32_path, out_path, mode, cfg)
        quantized = onnx.load(out_path)
        onnx.checker.check_model(quantized)
        hist = histogram(quantized)
        foreign = sorted({d for d, _ in hist if d != "ai.onnx"})
        got = make_encoder.run_ort(quantized, feeds)["last_hidden_state"]
        diff = float(np.abs(got - fp32).max())
        print(f"{out_path}: {sum(hist.values())} nodes, opset "
              f"{[o.version for o in quantized.opset_import if o.domain in ('', 'ai.onnx')][0]}, "
              f"ORT runs, max |int8 - fp32| = {diff:.3f} (output std {fp32.std():.3f})"
              + (f", NON-STANDARD DOMAINS {foreign}" if foreign else ""))
        if not args.quiet:
            for (domain, op), n in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])):
                print(f"    {n:5d}  {op}" + ("" if domain == "ai.onnx" else f"  ({domain})"))
        ok &= not foreign
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
