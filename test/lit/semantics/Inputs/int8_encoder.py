"""Writes a one-layer BERT-style encoder as octet IR (a function of no
arguments: the input is a constant) whose linears carry octet.calib, the
ranges that the calibration step would record for that input. Used by
int8-lowering.test to compare the INT8 lowering with FP32 through
octet-interp. Seeded: the same file every run."""
import math
import sys

import numpy as np

B, S, H, HEADS, FFN = 2, 5, 16, 2, 32
rng = np.random.default_rng(20240611)


def f32(a):
    return np.asarray(a, dtype=np.float32)


x = f32(rng.normal(size=(B, S, H)))
x[..., 3] *= 12.0  # outlier channels, as BERT's activations have
x[..., 10] *= 6.0
g0, b0 = f32(1 + 0.2 * rng.normal(size=H)), f32(0.1 * rng.normal(size=H))
wqkv, bqkv = f32(rng.normal(size=(H, 3 * H)) / 4), f32(0.05 * rng.normal(size=3 * H))
wo, bo = f32(rng.normal(size=(H, H)) / 4), f32(0.05 * rng.normal(size=H))
g1, b1 = f32(1 + 0.2 * rng.normal(size=H)), f32(0.1 * rng.normal(size=H))
w1, bf1 = f32(rng.normal(size=(H, FFN)) / 4), f32(0.05 * rng.normal(size=FFN))
w2, bf2 = f32(rng.normal(size=(FFN, H)) / 6), f32(0.05 * rng.normal(size=H))
g2, b2 = f32(1 + 0.2 * rng.normal(size=H)), f32(0.1 * rng.normal(size=H))
EPS = 1e-12


def layer_norm(v, g, b):
    mean = v.mean(-1, keepdims=True)
    var = ((v - mean) ** 2).mean(-1, keepdims=True)
    return (v - mean) / np.sqrt(var + EPS) * g + b


def attention(q, k, v):
    d = H // HEADS
    split = lambda t: t.reshape(B, S, HEADS, d).transpose(0, 2, 1, 3)
    scores = split(q) @ split(k).transpose(0, 1, 3, 2) / math.sqrt(d)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ split(v)).transpose(0, 2, 1, 3).reshape(B, S, H)


gelu = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))

# The FP32 forward pass, recording what each linear's input spans.
calib = {}
h0 = layer_norm(x, g0, b0)
calib["qkv"] = h0
qkv = h0 @ wqkv + bqkv
a = attention(qkv[..., :H], qkv[..., H:2 * H], qkv[..., 2 * H:])
calib["out"] = a
h1 = layer_norm(a @ wo + bo + h0, g1, b1)
calib["ffn1"] = h1
f = gelu(h1 @ w1 + bf1)
calib["ffn2"] = f


def dense(a):
    a = f32(a)
    if a.ndim == 0:
        return repr(float(a))
    return "[" + ", ".join(dense(v) for v in a) + "]"


def tensor(shape):
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def constant(name, a):
    return f"  %{name} = octet.constant dense<{dense(a)}> : {tensor(a.shape)}\n"


def calib_attr(name):
    v = f32(calib[name])
    absmax = np.abs(v).reshape(-1, v.shape[-1]).max(0)
    return (f"{{octet.calib = {{input_absmax = dense<{dense(absmax)}> : {tensor(absmax.shape)}, "
            f"input_min = {float(v.min())!r} : f32, input_max = {float(v.max())!r} : f32}}}}")


out = sys.stdout
act = lambda n: tensor((B, S, n))
out.write(f"func.func @main() -> ({act(H)} {{octet.name = \"encoder\"}}) {{\n")
for name, value in [("x", x), ("g0", g0), ("b0", b0), ("wqkv", wqkv), ("bqkv", bqkv), ("wo", wo),
                    ("bo", bo), ("g1", g1), ("b1", b1), ("w1", w1), ("bf1", bf1), ("w2", w2),
                    ("bf2", bf2), ("g2", g2), ("b2", b2)]:
    out.write(constant(name, value))
vec = tensor((H,))
out.write(f"""  %h0 = octet.layer_norm %x, %g0, %b0 axis = 2 epsilon = 9.99999996E-13 : {act(H)}, {vec}, {vec}
  %qkv = octet.linear %h0, %wqkv, %bqkv {calib_attr("qkv")} : {act(H)}, {tensor((H, 3 * H))}, {tensor((3 * H,))}
  %q = octet.slice %qkv axes = [2] starts = [0] ends = [{H}] steps = [1] : {act(3 * H)} -> {act(H)}
  %k = octet.slice %qkv axes = [2] starts = [{H}] ends = [{2 * H}] steps = [1] : {act(3 * H)} -> {act(H)}
  %v = octet.slice %qkv axes = [2] starts = [{2 * H}] ends = [{3 * H}] steps = [1] : {act(3 * H)} -> {act(H)}
  %a = octet.attention %q, %k, %v num_heads = {HEADS} scale = {1 / math.sqrt(H // HEADS)!r} : {act(H)}
  %o = octet.linear %a, %wo, %bo {calib_attr("out")} : {act(H)}, {tensor((H, H))}, {vec}
  %h1 = octet.add_layer_norm %o, %h0, %g1, %b1 axis = 2 epsilon = 9.99999996E-13 : {act(H)}, {vec}, {vec}
  %f = octet.fused_linear %h1, %w1, %bf1 {{
  ^bb0(%acc: f32):
    %half = arith.constant 5.000000e-01 : f32
    %one = arith.constant 1.000000e+00 : f32
    %rsqrt2 = arith.constant 0.707106769 : f32
    %s = arith.mulf %acc, %rsqrt2 : f32
    %e = math.erf %s : f32
    %p = arith.addf %e, %one : f32
    %m = arith.mulf %acc, %half : f32
    %g = arith.mulf %m, %p : f32
    octet.yield %g : f32
  }} {calib_attr("ffn1")} : {act(H)}, {tensor((H, FFN))}, {tensor((FFN,))} -> {act(FFN)}
  %y = octet.linear %f, %w2, %bf2 {calib_attr("ffn2")} : {act(FFN)}, {tensor((FFN, H))}, {vec}
  %h2 = octet.add_layer_norm %y, %h1, %g2, %b2 axis = 2 epsilon = 9.99999996E-13 : {act(H)}, {vec}, {vec}
  return %h2 : {act(H)}
}}
""")
