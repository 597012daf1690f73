#!/usr/bin/env python3
"""Seeded random-weight BERT / DistilBERT / XLM-R encoders as the common exporters write them.

The graphs reproduce, node for node, what three exporters emit for Hugging Face encoders,
so the importer and `octet-recognize` meet realistic patterns:

  torchscript  torch.onnx TorchScript exporter (opset 14 by default; 11..20). Decomposed
               LayerNorm below opset 17 (LayerNormalization from 17), erf GELU as
               Div/Erf/Add/Mul/Mul, heads split via Shape/Gather/Unsqueeze/Concat/Reshape
               + Transpose, Kᵀ as a second Transpose, scores Div sqrt(d), extended mask
               Unsqueeze/Unsqueeze/Cast/Sub/Mul(finfo.min), Softmax(-1), MatMul + Add bias.
               Node names "MatMul_12", values numbered.
  optimum      Hugging Face Optimum: the same exporter, scoped names such as
               /bert/encoder/layer.0/attention/self/query/MatMul (opset 14; 17 for
               LayerNormalization).
  dynamo       torch.onnx dynamo exporter (opset 18..20): ReduceMean axes as an input,
               linears flattened to 2-D and back, Gemm (attention) and MatMul + Add (FFN),
               scaled_dot_product_attention decomposed with sqrt(scale) on Q and Kᵀ, masks
               via Where.

Usage: make_encoder.py --arch bert --style optimum --opset 17 -o model.onnx
       make_encoder.py --self-check     (every arch x style x opset x gelu vs reference.py)
"""
import argparse
import collections
import contextlib
import itertools
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402
from reference import EncoderConfig  # noqa: E402

STYLES = ("torchscript", "optimum", "dynamo")
OPSETS = {"torchscript": range(11, 21), "optimum": range(11, 21), "dynamo": range(18, 21)}
DEFAULT_OPSET = {"torchscript": 14, "optimum": 14, "dynamo": 18}
FLOAT_MIN = float(np.finfo(np.float32).min)
PRODUCER = {"torchscript": "1.13.1", "optimum": "2.1.2", "dynamo": "2.5.1"}


def ir_version(opset):
    """libonnx 1.12 on the C++ side reads IR 8; opsets 18+ need IR 9."""
    return 8 if opset <= 17 else 9


def layer_norm_kind(style, opset, requested="auto"):
    if requested == "auto":
        return "fused" if opset >= 17 and style != "dynamo" else "decomposed"
    if requested == "fused" and opset < 17:
        raise ValueError("LayerNormalization needs opset >= 17")
    return requested


# --------------------------------------------------------------------------- builder

class GraphBuilder:
    """Appends ONNX nodes, naming nodes and values the way the chosen exporter does."""

    def __init__(self, style, opset):
        self.style, self.opset = style, opset
        self.nodes = []
        self.initializers = []  # (name, ndarray), turned into tensors only when saved
        self._ids = itertools.count(1)
        self._scope = []
        self._scoped_names = collections.Counter()

    @contextlib.contextmanager
    def scope(self, module_path):
        """Enter a torch module, e.g. "bert.encoder.layer.0.attention.self"."""
        saved = self._scope
        self._scope = module_scope(module_path)
        try:
            yield
        finally:
            self._scope = saved

    def _names(self, op_type, n_outputs):
        n = next(self._ids)
        if self.style == "optimum":
            base = "/" + "/".join(self._scope + [op_type])
            k = self._scoped_names[base]
            self._scoped_names[base] += 1
            node = base if k == 0 else f"{base}_{k}"
            return node, [f"{node}_output_{i}" for i in range(n_outputs)]
        if self.style == "dynamo":
            return f"node_{op_type}_{n}", [f"val_{n}" if i == 0 else f"val_{n}_{i}" for i in range(n_outputs)]
        return f"{op_type}_{n}", [f"onnx::{op_type}_{n}" if i == 0 else f"{n}_{i}" for i in range(n_outputs)]

    def op(self, op_type, *inputs, n_outputs=1, **attrs):
        node_name, outputs = self._names(op_type, n_outputs)
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, name=node_name, **attrs))
        return outputs[0] if n_outputs == 1 else outputs

    def unique(self, prefix):
        """A fresh name such as the exporter's "onnx::MatMul_36"."""
        return f"{prefix}_{next(self._ids)}"

    def param(self, name, array):
        self.initializers.append((name, np.asarray(array, order="C")))
        return name

    def const(self, value, dtype=np.float32):
        """A small constant: a Constant node (TorchScript) or an initializer (dynamo)."""
        array = np.asarray(value, dtype=dtype)
        if self.style == "dynamo":
            return self.param(self.unique("val"), array)
        return self.op("Constant", value=numpy_helper.from_array(array))

    def rename_output(self, old, new):
        for node in self.nodes:
            node.output[:] = [new if o == old else o for o in node.output]
            node.input[:] = [new if i == old else i for i in node.input]
        return new

    # Ops whose signature changed across opsets.
    def unsqueeze(self, x, axes):
        if self.opset < 13:
            return self.op("Unsqueeze", x, axes=list(axes))
        return self.op("Unsqueeze", x, self.const(axes, np.int64))

    def reduce_mean(self, x, axes):
        if self.opset < 18:
            return self.op("ReduceMean", x, axes=list(axes), keepdims=1)
        return self.op("ReduceMean", x, self.const(axes, np.int64), keepdims=1)

    def dim(self, x, index):
        """x.size(index) as TorchScript traces it: a scalar from Shape -> Gather."""
        return self.op("Gather", self.op("Shape", x), self.const(index, np.int64), axis=0)

    def dim_1d(self, x, index):
        """x.size(index) as the dynamo exporter emits it: a [1] tensor from Shape(start, end)."""
        return self.op("Shape", x, start=index, end=index + 1)


def module_scope(module_path):
    """"bert.encoder.layer.0.attention" -> ["bert", "encoder", "layer.0", "attention"]."""
    parts = []
    for part in module_path.split("."):
        if part.isdigit() and parts:
            parts[-1] += "." + part
        else:
            parts.append(part)
    return parts


# --------------------------------------------------------------------------- module paths

def module_paths(arch, layer=None):
    """Hugging Face module paths (parameter-name prefixes and Optimum name scopes)."""
    root = {"bert": "bert", "xlmr": "roberta", "distilbert": "distilbert"}[arch]
    paths = {"root": root, "embeddings": f"{root}.embeddings",
             "word_embeddings": f"{root}.embeddings.word_embeddings",
             "position_embeddings": f"{root}.embeddings.position_embeddings",
             "token_type_embeddings": f"{root}.embeddings.token_type_embeddings",
             "embeddings_ln": f"{root}.embeddings.LayerNorm", "pooler": f"{root}.pooler.dense"}
    if layer is None:
        return paths
    if arch == "distilbert":
        p = f"{root}.transformer.layer.{layer}"
        paths.update(layer=p, attention=f"{p}.attention", query=f"{p}.attention.q_lin",
                     key=f"{p}.attention.k_lin", value=f"{p}.attention.v_lin",
                     attn_out=f"{p}.attention.out_lin", attn_residual=p, attn_ln=f"{p}.sa_layer_norm",
                     ffn_in=f"{p}.ffn.lin1", act=f"{p}.ffn.activation", ffn_out=f"{p}.ffn.lin2",
                     ffn_residual=p, ffn_ln=f"{p}.output_layer_norm")
    else:
        p = f"{root}.encoder.layer.{layer}"
        paths.update(layer=p, attention=f"{p}.attention.self", query=f"{p}.attention.self.query",
                     key=f"{p}.attention.self.key", value=f"{p}.attention.self.value",
                     attn_out=f"{p}.attention.output.dense", attn_residual=f"{p}.attention.output",
                     attn_ln=f"{p}.attention.output.LayerNorm", ffn_in=f"{p}.intermediate.dense",
                     act=f"{p}.intermediate.intermediate_act_fn", ffn_out=f"{p}.output.dense",
                     ffn_residual=f"{p}.output", ffn_ln=f"{p}.output.LayerNorm")
    return paths


# --------------------------------------------------------------------------- blocks

class EncoderExporter:
    """One method per block; the export style picks the node pattern inside each."""

    def __init__(self, cfg, style, opset, weights, layer_norm="auto"):
        if style not in STYLES:
            raise ValueError(f"unknown style {style!r}, expected one of {STYLES}")
        if opset not in OPSETS[style]:
            raise ValueError(f"style {style} exports opsets {OPSETS[style].start}..{OPSETS[style].stop - 1}")
        self.cfg, self.style, self.opset, self.w = cfg, style, opset, weights
        self.ln_kind = layer_norm_kind(style, opset, layer_norm)
        self.b = GraphBuilder(style, opset)
        self.dynamo = style == "dynamo"

    # ---- LayerNorm: decomposed (TorchScript < 17), LayerNormalization, dynamo var_mean/rsqrt
    def layer_norm(self, x, key, module):
        b, eps = self.b, self.cfg.eps
        gamma = b.param(f"{module}.weight", self.w[f"{key}.gamma"])
        beta = b.param(f"{module}.bias", self.w[f"{key}.beta"])
        with b.scope(module):
            if self.ln_kind == "fused":
                return b.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=eps)
            mean = b.reduce_mean(x, [-1])
            centered = b.op("Sub", x, mean)
            if self.dynamo:
                var = b.reduce_mean(b.op("Mul", centered, centered), [-1])
                rstd = b.op("Reciprocal", b.op("Sqrt", b.op("Add", var, b.const(eps))))
                normed = b.op("Mul", centered, rstd)
            else:
                var = b.reduce_mean(b.op("Pow", centered, b.const(2.0)), [-1])
                normed = b.op("Div", centered, b.op("Sqrt", b.op("Add", var, b.const(eps))))
            return b.op("Add", b.op("Mul", normed, gamma), beta)

    # ---- Linear: MatMul by [K, N] + Add(bias, .) (TorchScript); dynamo flattens to 2-D
    def linear(self, x, key, module, gemm=True):
        b = self.b
        weight, bias = self.w[f"{key}.weight"], self.w[f"{key}.bias"]
        k, n = weight.shape
        with b.scope(module):
            if not self.dynamo:
                w_name = b.param(b.unique("onnx::MatMul"), weight)
                return b.op("Add", b.param(f"{module}.bias", bias), b.op("MatMul", x, w_name))
            flat = b.op("Reshape", x, b.const([-1, k], np.int64))
            if gemm:  # aten.addmm with the torch [N, K] weight
                y = b.op("Gemm", flat, b.param(f"{module}.weight", weight.T), b.param(f"{module}.bias", bias),
                         transB=1)
            else:     # aten.mm + aten.add with the weight transpose folded
                y = b.op("Add", b.op("MatMul", flat, b.param(f"{module}.weight_t", weight)),
                         b.param(f"{module}.bias", bias))
            return b.op("Reshape", y, b.op("Concat", self.batch, self.seq, b.const([n], np.int64), axis=0))

    # ---- GELU
    def gelu(self, x, module):
        b = self.b
        with b.scope(module):
            if self.cfg.gelu == "tanh":
                if self.dynamo:  # torchlib aten.gelu(approximate="tanh")
                    inner = b.op("Mul", b.op("Pow", x, b.const(3.0)), b.const(0.044715))
                    inner = b.op("Mul", b.op("Add", x, inner), b.const(math.sqrt(2 / math.pi)))
                    inner = b.op("Add", b.op("Tanh", inner), b.const(1.0))
                    return b.op("Mul", b.op("Mul", x, inner), b.const(0.5))
                # transformers NewGELUActivation (gelu_new) traced
                half = b.op("Mul", x, b.const(0.5))
                cube = b.op("Mul", b.op("Pow", x, b.const(3.0)), b.const(0.044715))
                inner = b.op("Mul", b.op("Add", x, cube), b.const(0.7978845608028654))
                return b.op("Mul", half, b.op("Add", b.op("Tanh", inner), b.const(1.0)))
            if self.dynamo:
                erf = b.op("Erf", b.op("Mul", x, b.const(1 / math.sqrt(2))))
                return b.op("Mul", b.op("Mul", x, b.const(0.5)), b.op("Add", erf, b.const(1.0)))
            erf = b.op("Erf", b.op("Div", x, b.const(1.4142135623730951)))
            return b.op("Mul", b.op("Mul", x, b.op("Add", erf, b.const(1.0))), b.const(0.5))

    # ---- Embeddings
    def embeddings(self, input_ids, token_type_ids):
        b, cfg, paths = self.b, self.cfg, module_paths(self.cfg.arch)
        word = b.param(f"{paths['word_embeddings']}.weight", self.w["word_embeddings"])
        pos_table = b.param(f"{paths['position_embeddings']}.weight", self.w["position_embeddings"])
        with b.scope(paths["embeddings"]):
            seq_1d = self.seq if self.dynamo else b.unsqueeze(b.dim(input_ids, 1), [0])
            x = b.op("Gather", word, input_ids)
            if cfg.type_vocab:
                tt_table = b.param(f"{paths['token_type_embeddings']}.weight", self.w["token_type_embeddings"])
                if token_type_ids is None:  # XLM-R's buffered zeros, expanded to the batch
                    buffered = self.buffer_prefix(np.zeros((1, cfg.max_pos), np.int64), seq_1d)
                    batch_1d = self.batch if self.dynamo else b.unsqueeze(b.dim(input_ids, 0), [0])
                    token_type_ids = b.op("Expand", buffered, b.op("Concat", batch_1d, seq_1d, axis=0))
                x = b.op("Add", x, b.op("Gather", tt_table, token_type_ids))
            if cfg.arch == "xlmr":
                positions = self.xlmr_position_ids(input_ids)
            else:
                positions = self.buffer_prefix(np.arange(cfg.max_pos, dtype=np.int64)[None, :], seq_1d)
            x = b.op("Add", x, b.op("Gather", pos_table, positions))
        return self.layer_norm(x, "embeddings_ln", paths["embeddings_ln"])

    def buffer_prefix(self, buffer, seq_1d):
        """buffer[:, :seq] of a registered [1, max_pos] buffer."""
        b = self.b
        return b.op("Slice", b.param(b.unique("onnx::Slice"), buffer), b.const([0], np.int64), seq_1d,
                    b.const([1], np.int64), b.const([1], np.int64))

    def xlmr_position_ids(self, input_ids):
        """create_position_ids_from_input_ids: cumsum of non-pad tokens, offset by padding_idx."""
        b, pad = self.b, self.cfg.padding_idx
        mask = b.op("Cast", b.op("Not", b.op("Equal", input_ids, b.const(pad, np.int64))), to=TensorProto.INT32)
        incremental = b.op("Mul", b.op("CumSum", mask, b.const(1, np.int64)), mask)
        return b.op("Add", b.op("Cast", incremental, to=TensorProto.INT64), b.const(pad, np.int64))

    # ---- Attention masks
    def extended_mask(self, attention_mask):
        """Additive [B, 1, 1, S] mask shared by the layers (BERT / XLM-R, TorchScript)."""
        b = self.b
        with b.scope(module_paths(self.cfg.arch)["root"]):
            m = b.unsqueeze(b.unsqueeze(attention_mask, [1]), [2])
            m = b.op("Sub", b.const(1.0), b.op("Cast", m, to=TensorProto.FLOAT))
            return b.op("Mul", m, b.const(FLOAT_MIN))

    def sdpa_expanded_mask(self, attention_mask):
        """transformers _prepare_4d_attention_mask_for_sdpa: [B, 1, S, S] with finfo.min."""
        b = self.b
        m = b.op("Unsqueeze", attention_mask, b.const([1, 2], np.int64))
        m = b.op("Expand", m, b.op("Concat", self.batch, b.const([1], np.int64), self.seq, self.seq, axis=0))
        inverted = b.op("Sub", b.const(1.0), b.op("Cast", m, to=TensorProto.FLOAT))
        return b.op("Where", b.op("Cast", inverted, to=TensorProto.BOOL), b.const(FLOAT_MIN), inverted)

    # ---- Self-attention
    def attention(self, x, mask, layer):
        paths = module_paths(self.cfg.arch, layer)
        q, k, v = (self.linear(x, f"layer.{layer}.{n}", paths[n]) for n in ("query", "key", "value"))
        with self.b.scope(paths["attention"]):
            if self.dynamo:
                context = self.sdpa_attention(q, k, v, mask)
            elif self.cfg.arch == "distilbert":
                context = self.distilbert_attention(x, q, k, v, mask)
            else:
                context = self.bert_attention(q, k, v, mask)
        return self.linear(context, f"layer.{layer}.attn_out", paths["attn_out"])

    def bert_attention(self, q, k, v, ext_mask):
        """BertSelfAttention traced: transpose_for_scores, Kᵀ Transpose, Div sqrt(d), Add mask."""
        b, cfg = self.b, self.cfg

        def new_shape(t, tail):
            dims = [b.unsqueeze(b.dim(t, i), [0]) for i in (0, 1)]
            return b.op("Concat", *dims, *(b.const([d], np.int64) for d in tail), axis=0)

        def transpose_for_scores(t):
            heads = b.op("Reshape", t, new_shape(t, [cfg.heads, cfg.head_dim]))
            return b.op("Transpose", heads, perm=[0, 2, 1, 3])

        qh, kh, vh = transpose_for_scores(q), transpose_for_scores(k), transpose_for_scores(v)
        scores = b.op("MatMul", qh, b.op("Transpose", kh, perm=[0, 1, 3, 2]))
        scores = b.op("Add", b.op("Div", scores, b.const(math.sqrt(cfg.head_dim))), ext_mask)
        context = b.op("MatMul", b.op("Softmax", scores, axis=-1), vh)
        context = b.op("Transpose", context, perm=[0, 2, 1, 3])
        return b.op("Reshape", context, new_shape(context, [cfg.hidden]))

    def distilbert_attention(self, x, q, k, v, attention_mask):
        """DistilBERT MultiHeadSelfAttention traced: q / sqrt(d) before the matmul, masked_fill."""
        b, cfg = self.b, self.cfg
        bs = b.unsqueeze(b.dim(x, 0), [0])
        k_length = b.unsqueeze(b.dim(x, 1), [0])

        def shape(t):  # x.view(bs, -1, n_heads, dim_per_head).transpose(1, 2)
            view = b.op("Concat", bs, *(b.const([d], np.int64) for d in (-1, cfg.heads, cfg.head_dim)), axis=0)
            return b.op("Transpose", b.op("Reshape", t, view), perm=[0, 2, 1, 3])

        qh, kh, vh = shape(q), shape(k), shape(v)
        qh = b.op("Div", qh, b.const(math.sqrt(cfg.head_dim)))
        scores = b.op("MatMul", qh, b.op("Transpose", kh, perm=[0, 1, 3, 2]))
        masked = b.op("Equal", attention_mask, b.const(0, np.int64))
        mask_shape = b.op("Concat", bs, b.const([1], np.int64), b.const([1], np.int64), k_length, axis=0)
        masked = b.op("Expand", b.op("Reshape", masked, mask_shape), b.op("Shape", scores))
        scores = b.op("Where", masked, b.const(FLOAT_MIN), scores)
        context = b.op("MatMul", b.op("Softmax", scores, axis=-1), vh)
        unshape = b.op("Concat", bs, b.const([-1], np.int64), b.const([cfg.hidden], np.int64), axis=0)
        return b.op("Reshape", b.op("Transpose", context, perm=[0, 2, 1, 3]), unshape)

    def sdpa_attention(self, q, k, v, mask):
        """view + transpose, then torchlib's scaled_dot_product_attention decomposition."""
        b, cfg = self.b, self.cfg

        def heads(t):
            view = b.op("Concat", self.batch, self.seq, b.const([-1, cfg.head_dim], np.int64), axis=0)
            return b.op("Transpose", b.op("Reshape", t, view), perm=[0, 2, 1, 3])

        qh, kh, vh = heads(q), heads(k), heads(v)
        if cfg.arch == "distilbert":  # boolean attn_mask: Where(mask, 0, -inf)
            keep = b.op("Cast", b.op("Unsqueeze", mask, b.const([1, 2], np.int64)), to=TensorProto.BOOL)
            mask = b.op("Where", keep, b.const(0.0), b.const(-np.inf))
        key_shape = b.op("Shape", kh)
        last = b.op("Slice", key_shape, b.const([-1], np.int64), b.const([np.iinfo(np.int64).max], np.int64))
        second_last = b.op("Slice", key_shape, b.const([-2], np.int64), b.const([-1], np.int64))
        first = b.op("Slice", key_shape, b.const([0], np.int64), b.const([-2], np.int64))
        squeezed = b.op("Reshape", kh, b.op("Concat", b.const([-1], np.int64), second_last, last, axis=0))
        key_t = b.op("Reshape", b.op("Transpose", squeezed, perm=[0, 2, 1]),
                     b.op("Concat", first, last, second_last, axis=0))
        sqrt_scale = math.sqrt(1.0 / math.sqrt(cfg.head_dim))
        scores = b.op("MatMul", b.op("Mul", qh, b.const(sqrt_scale)), b.op("Mul", key_t, b.const(sqrt_scale)))
        context = b.op("MatMul", b.op("Softmax", b.op("Add", scores, mask), axis=-1), vh)
        context = b.op("Transpose", context, perm=[0, 2, 1, 3])
        return b.op("Reshape", context, b.op("Concat", self.batch, self.seq, b.const([-1], np.int64), axis=0))

    # ---- Encoder layer (post-LN) and the whole model
    def layer(self, x, mask, layer):
        b, paths = self.b, module_paths(self.cfg.arch, layer)
        attn = self.attention(x, mask, layer)
        with b.scope(paths["attn_residual"]):
            x = b.op("Add", attn, x)
        x = self.layer_norm(x, f"layer.{layer}.attn_ln", paths["attn_ln"])
        h = self.gelu(self.linear(x, f"layer.{layer}.ffn_in", paths["ffn_in"], gemm=False), paths["act"])
        h = self.linear(h, f"layer.{layer}.ffn_out", paths["ffn_out"], gemm=False)
        with b.scope(paths["ffn_residual"]):
            x = b.op("Add", h, x)
        return self.layer_norm(x, f"layer.{layer}.ffn_ln", paths["ffn_ln"])

    def pooler(self, hidden):
        """BertPooler: first token, dense (Gemm on the [N, K] torch weight), tanh."""
        b, module = self.b, module_paths("bert")["pooler"]
        with b.scope(module):
            first = b.op("Gather", hidden, b.const(0, np.int64), axis=1)
            y = b.op("Gemm", first, b.param(f"{module}.weight", self.w["pooler.weight"].T),
                     b.param(f"{module}.bias", self.w["pooler.bias"]), transB=1)
        with b.scope("bert.pooler.activation"):
            return b.op("Tanh", y)

    def build(self):
        """Returns (ModelProto without initializers, [(name, ndarray)])."""
        cfg, b = self.cfg, self.b
        dyn = ["batch", "sequence"]
        inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, dyn),
                  helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dyn)]
        if cfg.arch == "bert":
            inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, dyn))
        if self.dynamo:  # symbolic sizes, computed once as [1] tensors
            self.batch, self.seq = b.dim_1d("input_ids", 0), b.dim_1d("input_ids", 1)

        x = self.embeddings("input_ids", "token_type_ids" if cfg.arch == "bert" else None)
        if self.dynamo and cfg.arch != "distilbert":
            mask = self.sdpa_expanded_mask("attention_mask")
        elif self.dynamo or cfg.arch == "distilbert":
            mask = "attention_mask"  # each layer builds its own mask from the int64 input
        else:
            mask = self.extended_mask("attention_mask")
        for layer in range(cfg.layers):
            x = self.layer(x, mask, layer)
        b.rename_output(x, "last_hidden_state")
        outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                                 ["batch", "sequence", cfg.hidden])]
        if cfg.pooler:
            b.rename_output(self.pooler("last_hidden_state"), "pooler_output")
            outputs.append(helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, ["batch", cfg.hidden]))

        graph = helper.make_graph(b.nodes, f"{cfg.arch}_{self.style}", inputs, outputs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="pytorch", producer_version=PRODUCER[self.style],
                                  ir_version=ir_version(self.opset))
        model.doc_string = (f"octet test encoder: arch={cfg.arch} style={self.style} opset={self.opset} "
                            f"gelu={cfg.gelu} layer_norm={self.ln_kind} layers={cfg.layers} hidden={cfg.hidden} "
                            f"heads={cfg.heads} intermediate={cfg.intermediate} vocab={cfg.vocab}")
        return model, b.initializers


# --------------------------------------------------------------------------- saving

def _varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def to_model_proto(model, initializers):
    """An in-memory ModelProto with the initializers (for small models)."""
    full = onnx.ModelProto()
    full.CopyFrom(model)
    full.graph.initializer.extend(numpy_helper.from_array(a, name) for name, a in initializers)
    return full


def save(model, initializers, path, external_data=False):
    """Writes the model tensor by tensor, never holding a second copy of the weights.

    The protobuf encoding of a repeated field is the concatenation of its elements, so the
    GraphProto (field 7 of ModelProto) is written as the graph without initializers followed
    by one `initializer` (field 5) per weight: header fields, then raw_data (field 9) streamed
    from the array's buffer. With external_data the weights go to PATH.data (onnx external
    data format, 4 KiB aligned) and the .onnx keeps only references.
    """
    if external_data:
        data_name = os.path.basename(path) + ".data"
        full = onnx.ModelProto()
        full.CopyFrom(model)
        with open(os.path.join(os.path.dirname(os.path.abspath(path)), data_name), "wb") as data:
            for name, array in initializers:
                data.write(b"\0" * (-data.tell() % 4096))
                offset = data.tell()
                data.write(memoryview(array).cast("B"))
                tensor = TensorProto(name=name, dims=array.shape,
                                     data_type=helper.np_dtype_to_tensor_dtype(array.dtype),
                                     data_location=TensorProto.EXTERNAL)
                for key, value in (("location", data_name), ("offset", str(offset)), ("length", str(array.nbytes))):
                    entry = tensor.external_data.add()
                    entry.key, entry.value = key, value
                full.graph.initializer.append(tensor)
        onnx.save(full, path)
        return

    headers = [(TensorProto(name=name, dims=a.shape, data_type=helper.np_dtype_to_tensor_dtype(a.dtype))
                .SerializeToString(), a) for name, a in initializers]
    tensor_sizes = [len(h) + 1 + len(_varint(a.nbytes)) + a.nbytes for h, a in headers]
    graph_bytes = model.graph.SerializeToString()
    graph_size = len(graph_bytes) + sum(1 + len(_varint(n)) + n for n in tensor_sizes)
    rest = onnx.ModelProto()
    rest.CopyFrom(model)
    rest.ClearField("graph")
    with open(path, "wb") as f:
        f.write(rest.SerializeToString())
        f.write(b"\x3a" + _varint(graph_size) + graph_bytes)  # ModelProto.graph = 7, LEN
        for (header, array), size in zip(headers, tensor_sizes):
            f.write(b"\x2a" + _varint(size) + header)  # GraphProto.initializer = 5, LEN
            f.write(b"\x4a" + _varint(array.nbytes))    # TensorProto.raw_data = 9, LEN
            f.write(memoryview(array).cast("B"))


def make_encoder(arch="bert", style="torchscript", opset=None, gelu="erf", layers=2, hidden=64, heads=4,
                 intermediate=128, vocab=100, max_pos=512, seed=0, pooler=False, layer_norm="auto"):
    """Returns (ModelProto, weights, EncoderConfig) for a seeded random encoder."""
    cfg = EncoderConfig(arch=arch, layers=layers, hidden=hidden, heads=heads, intermediate=intermediate,
                        vocab=vocab, max_pos=max_pos, gelu=gelu, pooler=pooler)
    weights = reference.make_weights(cfg, seed)
    model, inits = EncoderExporter(cfg, style, opset or DEFAULT_OPSET[style], weights, layer_norm).build()
    return to_model_proto(model, inits), weights, cfg


# --------------------------------------------------------------------------- self-check

def cpu_lacks_vnni():
    """True on an x86 CPU without AVX-512 VNNI or AVX-VNNI: there ONNX Runtime's u8 x s8 GEMMs
    use vpmaddubsw, whose s16 pair sums saturate (onnxruntime issues 6004 and 14642)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = cpuinfo.read().split()
    except OSError:
        return False
    return "avx2" in flags and "avx512_vnni" not in flags and "avx_vnni" not in flags


def run_ort(model, feeds, exact_int8=None):
    """ORT's outputs with its default CPU kernels. exact_int8 (default: where the CPU lacks
    VNNI) sets session.x64quantprecision, ORT's own switch to s16 products that do not
    saturate, so its quantized GEMMs compute what the model says on every CPU."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    if cpu_lacks_vnni() if exact_int8 is None else exact_int8:
        options.add_session_config_entry("session.x64quantprecision", "1")
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, {n: feeds[n] for n in names})))


def check_against_reference(model, weights, cfg):
    """check_model(full_check) + ORT vs NumPy; returns the max abs difference over outputs."""
    onnx.checker.check_model(model, full_check=True)
    feeds = reference.random_inputs(cfg)
    got = run_ort(model, feeds)
    want = reference.encoder_forward(cfg, weights, feeds["input_ids"], feeds["attention_mask"],
                                     feeds.get("token_type_ids"))
    assert set(got) == set(want), (set(got), set(want))
    return max(float(np.abs(got[k] - want[k]).max()) for k in want)


def self_check_matrix():
    opsets = {"torchscript": (11, 12, 13, 14, 17), "optimum": (14, 17), "dynamo": (18, 20)}
    for arch in reference.ARCHS:
        for style in STYLES:
            for opset in opsets[style]:
                for gelu in ("erf", "tanh"):
                    yield dict(arch=arch, style=style, opset=opset, gelu=gelu, pooler=arch == "bert")
    yield dict(arch="bert", style="dynamo", opset=18, gelu="erf", layer_norm="fused")
    yield dict(arch="xlmr", style="torchscript", opset=17, gelu="erf", layer_norm="decomposed")


def self_check(tolerance=1e-4):
    print(f"{'arch':<11}{'style':<12}{'opset':>5}  {'gelu':<5}{'layernorm':<11}{'nodes':>6}  {'max|ORT-numpy|':>14}  result")
    failures = 0
    for case in self_check_matrix():
        model, weights, cfg = make_encoder(layers=2, hidden=32, heads=4, intermediate=64, vocab=50, max_pos=64,
                                           **case)
        ln = layer_norm_kind(case["style"], case["opset"], case.get("layer_norm", "auto"))
        try:
            diff = check_against_reference(model, weights, cfg)
            ok = diff <= tolerance
            detail = f"{diff:14.2e}"
        except Exception as e:  # report every combination, not just the first failure
            ok, detail = False, f"{type(e).__name__}: {e}"[:200]
        failures += not ok
        print(f"{case['arch']:<11}{case['style']:<12}{case['opset']:>5}  {case['gelu']:<5}{ln:<11}"
              f"{len(model.graph.node):>6}  {detail}  {'ok' if ok else 'FAIL'}", flush=True)
    print(f"{'all passed' if not failures else f'{failures} FAILED'} (tolerance {tolerance:g})")
    return failures == 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", choices=reference.ARCHS, default="bert")
    p.add_argument("--style", choices=STYLES, default="torchscript")
    p.add_argument("--opset", type=int, help="default: 14 (torchscript, optimum), 18 (dynamo)")
    p.add_argument("--gelu", choices=("erf", "tanh"), default="erf")
    p.add_argument("--layer-norm", choices=("auto", "decomposed", "fused"), default="auto",
                   help="auto: LayerNormalization from opset 17 (not dynamo), else decomposed")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--intermediate", type=int, help="default: 4 x hidden")
    p.add_argument("--vocab", type=int, default=100)
    p.add_argument("--max-pos", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pooler", action="store_true", help="BERT pooler output (Gather, Gemm, Tanh)")
    p.add_argument("--external-data", action="store_true", help="weights in PATH.data")
    p.add_argument("--check", action="store_true", help="also run ORT against the NumPy reference")
    p.add_argument("--self-check", action="store_true", help="every arch x style x opset x gelu vs NumPy")
    p.add_argument("-o", "--output", help="output .onnx path")
    args = p.parse_args(argv)

    if args.self_check:
        return 0 if self_check() else 1
    if not args.output:
        p.error("-o is required (or --self-check)")
    opset = args.opset or DEFAULT_OPSET[args.style]
    cfg = EncoderConfig(arch=args.arch, layers=args.layers, hidden=args.hidden, heads=args.heads,
                        intermediate=args.intermediate or 4 * args.hidden, vocab=args.vocab,
                        max_pos=args.max_pos, gelu=args.gelu, pooler=args.pooler)
    try:
        exporter = EncoderExporter(cfg, args.style, opset, reference.make_weights(cfg, args.seed), args.layer_norm)
    except ValueError as e:
        p.error(str(e))
    model, inits = exporter.build()
    save(model, inits, args.output, args.external_data)
    if args.check:
        diff = check_against_reference(onnx.load(args.output), exporter.w, cfg)
        print(f"ORT vs NumPy max diff {diff:.2e}")
        return 0 if diff <= 1e-4 else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
