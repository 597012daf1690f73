"""The reference side of the QDQ tests (test/lit/run/qdq-int8.test, quantized.test,
test/lit/semantics/qdq-eliminate.test): make_qdq.py's static model in WORK, fixed inputs, and
ONNX Runtime's outputs on them, plus the comparison the tests print."""
import os

import numpy as np
import onnx

import check_semantics
import make_encoder
import reference

# The outputs follow a LayerNorm (std ~1). A requantized GEMM result may sit one quantization
# step away from ONNX Runtime's where the f32 product lies on a rounding boundary; 0.05 is
# about a tenth of the output's std, while a wrong scale or zero point is off by ~1.
TOLERANCE = 0.05


def static_model_reference(work, seed=7):
    """(model path, feeds, ORT spec-mode output, ORT default-kernel output) of WORK/bert-static.onnx."""
    model_path = os.path.join(work, "bert-static.onnx")
    model = onnx.load(model_path)
    cfg = reference.EncoderConfig(arch="bert")
    feeds = {k: v for k, v in reference.random_inputs(cfg, seed=seed).items()
             if k in {i.name for i in model.graph.input}}
    spec = check_semantics.run_ort_spec(model, feeds)["last_hidden_state"]
    ort_default = make_encoder.run_ort(model, feeds)["last_hidden_state"]
    return model_path, feeds, spec, ort_default


def compare(rows):
    """Prints 'NAME: ok|MISMATCH|info max |diff| = ...' per (name, a, b, tolerance or None);
    returns the number of mismatches."""
    failed = 0
    for name, a, b, tolerance in rows:
        diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("inf")
        verdict = "info" if tolerance is None else "ok" if diff <= tolerance else "MISMATCH"
        failed += verdict == "MISMATCH"
        mean = float(np.abs(a - b).mean()) if a.shape == b.shape else float("inf")
        print(f"{name}: {verdict} max |diff| = {diff:.3g}, mean {mean:.3g}")
    return failed
