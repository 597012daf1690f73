#!/usr/bin/env python3
"""NumPy simulation of Octet's INT8 quantization on all-MiniLM-L6-v2 (no Octet involved).

A float32 NumPy forward pass of the model in which every weight GEMM (Q, K, V, attention
output, FFN in, FFN out) is fake-quantized as docs/int8-quantization.md specifies: weights
symmetric per output channel (127 levels); static: activations u8 per tensor from the
calibrated min/max (ONNX Runtime's scale/zero point formula), optionally after SmoothQuant
(s_j = absmax(X_j)^a / max|W_j|^(1-a), clamped to [1e-5, 1e5], one s for linears sharing X;
ranges of X/s from the per-channel abs-max within the per-tensor min/max, as
octet-smoothquant rewrites them); dynamic: symmetric per token. Attention matmuls, softmax,
LayerNorm and GELU stay FP32. Same split and calibration sentences as accuracy.py.

It tells an algorithmic accuracy limit from an implementation bug: Octet's cosines
(accuracy.py) should be close to these.

Usage: simulate_int8.py [--data DIR] [--limit N] [--calib-count N] [--alphas 0.5,0.75]
"""
import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import accuracy  # noqa: E402
import minilm  # noqa: E402
import sentences  # noqa: E402
import wordpiece  # noqa: E402

SHARED_INPUT = {"query": ("query", "key", "value"), "key": ("query", "key", "value"),
                "value": ("query", "key", "value")}


def erf(x):
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32's resolution of GELU)."""
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (np.sign(x) * (1.0 - poly * np.exp(-x * x))).astype(np.float32)


class Model:
    def __init__(self, cfg, weights):
        self.cfg, self.w = cfg, weights

    def layer_norm(self, x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + np.float32(self.cfg.eps)) * self.w[name + ".gamma"] + self.w[name + ".beta"]

    def forward(self, feeds, linear):
        """last_hidden_state; linear(x, layer prefix, name) computes each weight GEMM + bias."""
        cfg, w = self.cfg, self.w
        ids, mask = feeds["input_ids"], feeds["attention_mask"]
        batch, seq = ids.shape
        x = w["word_embeddings"][ids] + w["token_type_embeddings"][feeds["token_type_ids"]] \
            + w["position_embeddings"][:seq]
        x = self.layer_norm(x, "embeddings_ln")
        visible = mask.astype(bool)[:, None, None, :]

        def heads(t):
            return t.reshape(batch, seq, cfg.heads, cfg.head_dim).transpose(0, 2, 1, 3)

        for layer in range(cfg.layers):
            p = f"layer.{layer}"
            q, k, v = (heads(linear(x, p, n)) for n in ("query", "key", "value"))
            scores = np.where(visible, q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(cfg.head_dim)), -1e30)
            e = np.exp(scores - scores.max(-1, keepdims=True))
            context = ((e / e.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(batch, seq, cfg.hidden)
            x = self.layer_norm(linear(context, p, "attn_out") + x, p + ".attn_ln")
            h = linear(x, p, "ffn_in")
            h = 0.5 * h * (1 + erf(h / np.float32(math.sqrt(2))))
            x = self.layer_norm(linear(h, p, "ffn_out") + x, p + ".ffn_ln")
        return x

    def fp32(self, x, p, n):
        return x @ self.w[f"{p}.{n}.weight"] + self.w[f"{p}.{n}.bias"]


def quantize_weight(w):
    scale = np.abs(w).max(0) / 127
    scale[scale == 0] = 1
    return np.clip(np.round(w / scale), -127, 127) * scale


def static_linear(model, stats, alpha):
    """Static per-tensor u8 activations, SmoothQuant with `alpha` (None: without)."""
    cache = {}

    def linear(x, p, n):
        if (p, n) not in cache:
            absmax, lo, hi = stats[(p, n)]
            if alpha is None:
                s = np.ones_like(absmax)
            else:
                wmax = np.max([np.abs(model.w[f"{p}.{m}.weight"]).max(1) for m in SHARED_INPUT.get(n, (n,))], 0)
                s = np.clip(absmax.astype(np.float64) ** alpha / wmax.astype(np.float64) ** (1 - alpha), 1e-5, 1e5)
                s = s.astype(np.float32)
            lo_s = (np.maximum(-absmax, lo) / s).min()
            hi_s = (np.minimum(absmax, hi) / s).max()
            rmin, rmax = min(0.0, lo_s), max(0.0, hi_s)
            scale = (rmax - rmin) / 255 if rmax > rmin else 1.0
            zp = np.clip(np.round(-rmin / scale), 0, 255)
            cache[(p, n)] = (s, quantize_weight(model.w[f"{p}.{n}.weight"] * s[:, None]), scale, zp)
        s, wq, scale, zp = cache[(p, n)]
        xq = (np.clip(np.round(x / s / scale) + zp, 0, 255) - zp) * scale
        return xq.astype(np.float32) @ wq + model.w[f"{p}.{n}.bias"]
    return linear


def dynamic_linear(model):
    def linear(x, p, n):
        scale = np.abs(x).max(-1, keepdims=True) / 127
        scale[scale == 0] = 1
        xq = np.clip(np.round(x / scale), -127, 127) * scale
        return xq @ quantize_weight(model.w[f"{p}.{n}.weight"]) + model.w[f"{p}.{n}.bias"]
    return linear


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=sentences.DEFAULT_DIR)
    p.add_argument("--model-dir")
    p.add_argument("--limit", type=int, default=300)
    p.add_argument("--calib-count", type=int, default=100)
    p.add_argument("--alphas", default="0.5,0.75")
    args = p.parse_args(argv)
    try:
        rows = sentences.load(args.data)
        cfg, weights, path = minilm.load(args.model_dir)
    except (sentences.DataNotFound, minilm.ModelNotFound, ValueError) as e:
        print(f"simulate_int8.py: {e}", file=sys.stderr)
        return 2
    model = Model(cfg, weights)
    tokenizer = wordpiece.WordPieceTokenizer.from_vocab(os.path.join(path, "vocab.txt"))
    evaluation, calibration = accuracy.split(rows, args.limit, args.calib_count)

    def batches(texts):
        return [tokenizer.batch(texts[i:i + 32]) for i in range(0, len(texts), 32)]

    stats = {}  # per linear: (per-channel abs-max, min, max) over all rows, padding included

    def observe(x, p, n):
        absmax = np.abs(x).reshape(-1, x.shape[-1]).max(0)
        old = stats.get((p, n))
        stats[(p, n)] = (absmax, x.min(), x.max()) if old is None else \
            (np.maximum(old[0], absmax), min(old[1], x.min()), max(old[2], x.max()))
        return model.fp32(x, p, n)

    for feeds in batches(calibration):
        model.forward(feeds, observe)
    sets = batches([t for t, _ in evaluation])

    def embed(linear):
        return np.concatenate([minilm.mean_pool(model.forward(f, linear), f["attention_mask"]) for f in sets])

    reference = embed(model.fp32)
    modes = [("static", static_linear(model, stats, None))]
    modes += [(f"static-sq a={a}", static_linear(model, stats, float(a))) for a in args.alphas.split(",")]
    modes += [("dynamic", dynamic_linear(model))]
    print(f"NumPy simulation on {len(evaluation)} sentences, calibration on {len(calibration)}")
    print(f"{'mode':<16} {'mean cos':>9} {'min cos':>9}")
    for name, linear in modes:
        cos = (embed(linear) * reference).sum(1)
        print(f"{name:<16} {cos.mean():9.5f} {cos.min():9.5f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
