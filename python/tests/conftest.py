"""Shared fixtures: small seeded encoders (test/models/make_encoder.py) compiled once per
session, and helpers. The package under test is python/octet (PYTHONPATH, set by the ctest
entry) on the build tree's liboctet.so ($OCTET_LIBRARY)."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))

import octet  # noqa: E402
import make_encoder  # noqa: E402

VOCAB = 100


def token_feeds(batch, seq, seed=0, vocab=VOCAB, pad_rows=True):
    """input_ids / attention_mask / token_type_ids (int64) with every other row padded."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    if pad_rows and seq > 2:
        mask[1::2, seq - seq // 3:] = 0
    return {"input_ids": ids, "attention_mask": mask,
            "token_type_ids": np.zeros((batch, seq), dtype=np.int64)}


@pytest.fixture(scope="session")
def small_onnx(tmp_path_factory):
    """A 2-layer BERT (hidden 64, 4 heads, vocab 100) as Optimum exports it: the path."""
    model, _, _ = make_encoder.make_encoder(arch="bert", style="optimum", layers=2, hidden=64,
                                            heads=4, intermediate=128, vocab=VOCAB, max_pos=64)
    path = str(tmp_path_factory.mktemp("small") / "bert.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


@pytest.fixture(scope="session")
def small_model(small_onnx):
    return octet.compile(small_onnx, progress=False)


@pytest.fixture(scope="session")
def ort_session(small_onnx):
    import onnxruntime as ort
    return ort.InferenceSession(small_onnx, providers=["CPUExecutionProvider"])
