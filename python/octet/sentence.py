"""SentenceEncoder: sentence embeddings from an Octet model, sentence-transformers style."""
from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

from ._capi import InvalidArgument
from ._model import Model, PathLike, compile, load

POOLING_MODES = ("mean", "cls", "max")
_FEEDS = ("input_ids", "attention_mask", "token_type_ids")


def _read_json(path: str) -> Optional[dict]:
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise InvalidArgument(f"{path}: not valid JSON: {e}") from None


def _pooling_of(folder: Optional[str]) -> str:
    """The mode of sentence-transformers' 1_Pooling/config.json (mean when absent)."""
    if folder is None:
        return "mean"
    path = os.path.join(folder, "1_Pooling", "config.json")
    config = _read_json(path)
    if config is None:
        return "mean"
    modes = [m for m, key in (("cls", "pooling_mode_cls_token"), ("mean", "pooling_mode_mean_tokens"),
                              ("max", "pooling_mode_max_tokens")) if config.get(key)]
    others = [k for k, v in config.items() if k.startswith("pooling_mode_") and v and k not in (
        "pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens")]
    if len(modes) != 1 or others:
        raise InvalidArgument(f"{path}: SentenceEncoder supports exactly one of mean, CLS or max "
                              f"pooling; the config asks for {modes + others or 'none'}")
    return modes[0]


def _load_tokenizer(tokenizer: Any):
    """(a tokenizers.Tokenizer, its folder or None)."""
    try:
        import tokenizers
    except ImportError:
        raise ImportError("SentenceEncoder tokenizes with the Hugging Face 'tokenizers' package: "
                          "pip install tokenizers (or octet[sentence])") from None
    if isinstance(tokenizer, tokenizers.Tokenizer):
        return tokenizer, None
    if hasattr(tokenizer, "encode_batch") and hasattr(tokenizer, "no_padding"):
        return tokenizer, None  # tokenizers' implementations (BertWordPieceTokenizer, ...)
    if not isinstance(tokenizer, (str, os.PathLike)):
        raise InvalidArgument(f"tokenizer must be a folder, a tokenizer.json or vocab.txt path, "
                              f"or a tokenizers.Tokenizer, not {type(tokenizer).__name__}")
    path = os.fspath(tokenizer)
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    if os.path.isdir(path):
        for name in ("tokenizer.json", "vocab.txt"):
            if os.path.isfile(os.path.join(path, name)):
                path = os.path.join(path, name)
                break
        else:
            raise InvalidArgument(f"{tokenizer}: no tokenizer.json or vocab.txt in this folder")
    if not os.path.isfile(path):
        raise InvalidArgument(f"{path}: no such tokenizer file")
    if path.endswith(".json"):
        try:
            return tokenizers.Tokenizer.from_file(path), folder
        except Exception as e:  # tokenizers raises its own Exception type
            raise InvalidArgument(f"{path}: not a Hugging Face tokenizer.json: {e}") from None
    # vocab.txt: BERT's WordPiece, lower-cased unless tokenizer_config.json says otherwise.
    config = _read_json(os.path.join(folder, "tokenizer_config.json")) or {}
    from tokenizers.implementations import BertWordPieceTokenizer
    return BertWordPieceTokenizer(path, lowercase=bool(config.get("do_lower_case", True))), folder


def token_batches(tokenizer: Any, sentences: Sequence[str], batch_size: int = 8,
                  max_length: int = 256) -> Iterator[Dict[str, np.ndarray]]:
    """Yields padded int64 input dicts (input_ids, attention_mask, token_type_ids) of
    `sentences`, `batch_size` a batch, truncated to `max_length` tokens: e.g. calibration
    samples for octet.compile(..., int8="static", calibration=token_batches(folder, texts)).
    tokenizer: as SentenceEncoder's (a folder, a tokenizer.json / vocab.txt, a Tokenizer)."""
    tok, _ = _load_tokenizer(tokenizer)
    tok.enable_padding()
    tok.enable_truncation(max_length)
    for start in range(0, len(sentences), batch_size):
        encodings = tok.encode_batch(list(sentences[start:start + batch_size]))
        yield {"input_ids": np.array([e.ids for e in encodings], np.int64),
               "attention_mask": np.array([e.attention_mask for e in encodings], np.int64),
               "token_type_ids": np.array([e.type_ids for e in encodings], np.int64)}


class SentenceEncoder:
    """Sentence embeddings with an Octet model, as sentence-transformers computes them.

    model: a Model, a model.so path (octet.load) or an .onnx path (octet.compile, FP32);
    or any object with Model's `inputs`, `outputs` and `run(feeds, output_names)`.
    tokenizer: the sentence-transformers model folder (tokenizer.json, else vocab.txt for
    BERT's WordPiece; 1_Pooling/config.json and sentence_bert_config.json are read from
    it too), a tokenizer.json or vocab.txt path, or a tokenizers.Tokenizer.
    pooling: "mean", "cls" or "max"; default: the folder's 1_Pooling/config.json, else mean.
    max_length: tokens per sentence after truncation; default: max_seq_length of
    sentence_bert_config.json, else 512.

    >>> encoder = octet.SentenceEncoder(octet.load("minilm-int8.so"), model_folder)
    >>> e = encoder.encode(["A cat sits.", "A dog runs."])   # (2, 384), unit length
    >>> float(e[0] @ e[1])
    """

    def __init__(self, model: Union[Model, PathLike], tokenizer: Any, *,
                 pooling: Optional[str] = None, max_length: Optional[int] = None):
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            model = load(path) if path.endswith(".so") else compile(path, progress=False)
        if not isinstance(model, Model) and not all(
                hasattr(model, a) for a in ("inputs", "outputs", "run")):
            # Anything with Model's inputs / outputs / run(feeds, names) also serves (a
            # benchmark wraps ONNX Runtime so, to batch and pool it the same way).
            raise InvalidArgument(f"model must be an octet.Model or a path, not {type(model).__name__}")
        self.model = model
        self.tokenizer, folder = _load_tokenizer(tokenizer)
        self.pooling = pooling or _pooling_of(folder)
        if self.pooling not in POOLING_MODES:
            raise InvalidArgument(f"pooling={self.pooling!r}: expected one of {', '.join(POOLING_MODES)}")
        if max_length is None:
            st = _read_json(os.path.join(folder, "sentence_bert_config.json")) if folder else None
            max_length = int(st["max_seq_length"]) if st and "max_seq_length" in st else 512
        if max_length < 2:
            raise InvalidArgument(f"max_length={max_length}: a sentence needs at least 2 tokens")
        self.max_length = max_length
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length)
        self._pad_id = self._find_pad_id()
        for info in model.inputs:
            if info.name not in _FEEDS:
                raise InvalidArgument(f"the model's input '{info.name}' is none of "
                                      f"{', '.join(_FEEDS)}: SentenceEncoder cannot fill it")
        if "input_ids" not in [i.name for i in model.inputs]:
            raise InvalidArgument("the model has no input 'input_ids'")
        names = [o.name for o in model.outputs]
        ranked = [o for o in model.outputs if len(o.shape) == 3 and o.dtype == np.float32]
        preferred = [o for o in ranked if o.name in ("last_hidden_state", "token_embeddings")]
        if not (preferred or ranked):
            raise InvalidArgument(f"the model has no float32 output of rank 3 (token embeddings "
                                  f"[batch, sequence, hidden]) to pool; its outputs are {names}")
        self.output = (preferred or ranked)[0].name
        self.last_timing: Dict[str, float] = {}

    def _find_pad_id(self) -> int:
        padding = getattr(self.tokenizer, "padding", None)
        if isinstance(padding, dict) and "pad_id" in padding:
            return int(padding["pad_id"])
        for token in ("[PAD]", "<pad>"):
            pid = self.tokenizer.token_to_id(token)
            if pid is not None:
                return int(pid)
        return 0

    def encode(self, sentences: Sequence[str], batch_size: int = 32, normalize: bool = True
               ) -> np.ndarray:
        """Embeddings of `sentences` as a float32 array [len(sentences), hidden], in the
        given order. Sentences of similar token counts are batched together (at most
        `batch_size` a run), so little is padding; each batch is pooled over its attention
        mask, then L2-normalized when `normalize`. self.last_timing has the seconds spent
        tokenizing, running and pooling."""
        if isinstance(sentences, str):
            raise InvalidArgument("encode takes a list of sentences, not one string")
        if batch_size < 1:
            raise InvalidArgument(f"batch_size={batch_size}: must be at least 1")
        sentences = list(sentences)
        for i, s in enumerate(sentences):
            if not isinstance(s, str):
                raise InvalidArgument(f"sentence {i} is {type(s).__name__}, not str")
        hidden = None
        t0 = time.perf_counter()
        encodings = self.tokenizer.encode_batch(sentences) if sentences else []
        t_tokenize = time.perf_counter() - t0
        order = sorted(range(len(sentences)), key=lambda i: (len(encodings[i].ids), i))
        result: Optional[np.ndarray] = None
        t_run = t_pool = 0.0
        wanted = {i.name: i for i in self.model.inputs}
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.full((len(chunk), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            types = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                e = encodings[i]
                n = len(e.ids)
                ids[row, :n] = e.ids
                mask[row, :n] = 1
                types[row, :n] = e.type_ids
            values = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            feeds = {name: values[name].astype(info.dtype, copy=False) for name, info in wanted.items()}
            t1 = time.perf_counter()
            tokens = self.model.run(feeds, [self.output])[self.output]
            t2 = time.perf_counter()
            pooled = self._pool(tokens, mask)
            if normalize:
                norms = np.linalg.norm(pooled, axis=1, keepdims=True)
                pooled = pooled / np.maximum(norms, 1e-12)
            if result is None:
                hidden = pooled.shape[1]
                result = np.empty((len(sentences), hidden), dtype=np.float32)
            result[chunk] = pooled
            t_pool += time.perf_counter() - t2
            t_run += t2 - t1
        self.last_timing = {"tokenize": t_tokenize, "run": t_run, "pool": t_pool}
        if result is None:
            width = next((o.shape[2] for o in self.model.outputs if o.name == self.output), None)
            return np.zeros((0, width if isinstance(width, int) else 0), dtype=np.float32)
        return result

    def _pool(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.pooling == "cls":
            return np.array(tokens[:, 0, :], dtype=np.float32)
        m = mask.astype(np.float32)
        if self.pooling == "max":
            # sentence-transformers sets padded positions to -1e9 before the max.
            return np.where(m[:, :, None] > 0, tokens, np.float32(-1e9)).max(axis=1)
        summed = np.matmul(m[:, None, :], tokens)[:, 0, :]
        return summed / np.maximum(m.sum(axis=1, keepdims=True), 1e-9)
