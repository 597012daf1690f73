"""Plain NumPy forward pass of the BERT-family encoders that make_encoder.py exports.

The generated ONNX graphs and this reference read the same weight dict, so agreement
between ONNX Runtime and this module shows that a graph computes the encoder rather than
merely loading. Everything is computed in float64; weights are stored as float32.

Weight dict keys (independent of arch and export style; linear weights are [in, out]):
  word_embeddings [V, H], position_embeddings [P, H], token_type_embeddings [T, H]
  (bert, xlmr), embeddings_ln.{gamma,beta}, pooler.{weight,bias} (bert, optional) and,
  per layer i, layer.i.{query,key,value,attn_out,ffn_in,ffn_out}.{weight,bias} and
  layer.i.{attn_ln,ffn_ln}.{gamma,beta}.
"""
from dataclasses import dataclass
import math

import numpy as np

ARCHS = ("bert", "distilbert", "xlmr")
LAYER_LINEARS = ("query", "key", "value", "attn_out", "ffn_in", "ffn_out")
LAYER_NORMS = ("attn_ln", "ffn_ln")


@dataclass(frozen=True)
class EncoderConfig:
    arch: str = "bert"
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    intermediate: int = 128
    vocab: int = 100
    max_pos: int = 512
    gelu: str = "erf"  # "erf" (exact) or "tanh" (gelu_new)
    pooler: bool = False

    def __post_init__(self):
        if self.arch not in ARCHS:
            raise ValueError(f"unknown arch {self.arch!r}, expected one of {ARCHS}")
        if self.gelu not in ("erf", "tanh"):
            raise ValueError(f"unknown gelu {self.gelu!r}")
        if self.hidden % self.heads:
            raise ValueError("hidden must be a multiple of heads")
        if self.pooler and self.arch != "bert":
            raise ValueError("--pooler is a BERT head")

    @property
    def head_dim(self):
        return self.hidden // self.heads

    @property
    def eps(self):
        return 1e-5 if self.arch == "xlmr" else 1e-12

    @property
    def type_vocab(self):
        return {"bert": 2, "xlmr": 1, "distilbert": 0}[self.arch]

    @property
    def padding_idx(self):
        """XLM-R's <pad> id; its position ids start after it."""
        return 1

    @property
    def position_rows(self):
        # XLM-R positions are offset by padding_idx + 1, so its table has 2 extra rows.
        return self.max_pos + (self.padding_idx + 1 if self.arch == "xlmr" else 0)


def make_weights(cfg, seed=0):
    """Seeded random float32 weights, scaled so every block moves the output measurably."""
    rng = np.random.Generator(np.random.PCG64(seed))

    def normal(shape, std):
        return (rng.standard_normal(shape, dtype=np.float32) * np.float32(std))

    h, i = cfg.hidden, cfg.intermediate
    w = {
        "word_embeddings": normal((cfg.vocab, h), 0.5),
        "position_embeddings": normal((cfg.position_rows, h), 0.5),
    }
    if cfg.type_vocab:
        w["token_type_embeddings"] = normal((cfg.type_vocab, h), 0.5)
    shapes = {"query": (h, h), "key": (h, h), "value": (h, h), "attn_out": (h, h),
              "ffn_in": (h, i), "ffn_out": (i, h)}

    def norm(prefix):
        w[f"{prefix}.gamma"] = 1.0 + normal((h,), 0.1)
        w[f"{prefix}.beta"] = normal((h,), 0.1)

    norm("embeddings_ln")
    for layer in range(cfg.layers):
        for name in LAYER_LINEARS:
            k, n = shapes[name]
            w[f"layer.{layer}.{name}.weight"] = normal((k, n), 1.0 / math.sqrt(k))
            w[f"layer.{layer}.{name}.bias"] = normal((n,), 0.1)
        for name in LAYER_NORMS:
            norm(f"layer.{layer}.{name}")
    if cfg.pooler:
        w["pooler.weight"] = normal((h, h), 1.0 / math.sqrt(h))
        w["pooler.bias"] = normal((h,), 0.1)
    return w


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu(x, kind):
    if kind == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def position_ids(cfg, input_ids):
    if cfg.arch == "xlmr":
        not_pad = (input_ids != cfg.padding_idx).astype(np.int64)
        return np.cumsum(not_pad, axis=1) * not_pad + cfg.padding_idx
    return np.broadcast_to(np.arange(input_ids.shape[1]), input_ids.shape)


def encoder_forward(cfg, weights, input_ids, attention_mask, token_type_ids=None):
    """Returns {"last_hidden_state": [B, S, H]} (+ "pooler_output" [B, H]) in float64."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    x = w["word_embeddings"][input_ids]
    if cfg.type_vocab:
        types = token_type_ids if token_type_ids is not None else np.zeros_like(input_ids)
        x = x + w["token_type_embeddings"][types]
    x = x + w["position_embeddings"][position_ids(cfg, input_ids)]
    x = layer_norm(x, w["embeddings_ln.gamma"], w["embeddings_ln.beta"], cfg.eps)

    batch, seq, _ = x.shape
    heads, dim = cfg.heads, cfg.head_dim
    # Masked keys get a score so low that their probability is exactly 0 in float32 and
    # float64 alike, as finfo(float32).min (additive or filled) and -inf do in the graphs.
    key_visible = attention_mask.astype(bool)[:, None, None, :]

    def linear(t, name):
        return t @ w[f"{name}.weight"] + w[f"{name}.bias"]

    def split_heads(t):
        return t.reshape(batch, seq, heads, dim).transpose(0, 2, 1, 3)

    for layer in range(cfg.layers):
        p = f"layer.{layer}"
        q, k, v = (split_heads(linear(x, f"{p}.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dim)
        probs = softmax(np.where(key_visible, scores, -1e300))
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, heads * dim)
        x = layer_norm(linear(context, f"{p}.attn_out") + x,
                       w[f"{p}.attn_ln.gamma"], w[f"{p}.attn_ln.beta"], cfg.eps)
        ffn = linear(gelu(linear(x, f"{p}.ffn_in"), cfg.gelu), f"{p}.ffn_out")
        x = layer_norm(ffn + x, w[f"{p}.ffn_ln.gamma"], w[f"{p}.ffn_ln.beta"], cfg.eps)

    out = {"last_hidden_state": x}
    if cfg.pooler:
        out["pooler_output"] = np.tanh(linear(x[:, 0], "pooler"))
    return out


def random_inputs(cfg, batch=2, seq=7, seed=1):
    """Token batch with the tail of the last row padded (mask 0, XLM-R <pad> id)."""
    rng = np.random.default_rng(seed)
    # Ids >= 3 stay clear of XLM-R's <s>/<pad>/</s> = 0/1/2.
    ids = rng.integers(3, cfg.vocab, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    pad = max(1, seq // 3)
    mask[-1, seq - pad:] = 0
    ids[-1, seq - pad:] = cfg.padding_idx if cfg.arch == "xlmr" else 0
    feeds = {"input_ids": ids, "attention_mask": mask}
    if cfg.arch == "bert":
        feeds["token_type_ids"] = (np.arange(seq)[None, :] >= seq // 2).astype(np.int64).repeat(batch, 0)
    return feeds
