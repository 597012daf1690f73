"""qdq-eliminate.test: octet-interp on make_qdq.py's static model, before and after
octet-eliminate-qdq, against ONNX Runtime. Usage: qdq_eliminate.py SRC OCTET_INTERP WORK"""
import os
import sys

import numpy as np
import onnx

src, interp, work = sys.argv[1:4]
sys.path[:0] = [os.path.join(src, "test", "e2e"), os.path.join(src, "test", "models")]
import check_semantics  # noqa: E402
import make_encoder  # noqa: E402
import reference  # noqa: E402

TOLERANCE = 0.05  # about a tenth of the output's std; a wrong scale or zero point is ~1
model_path = os.path.join(work, "bert-static.onnx")
model = onnx.load(model_path)
cfg = reference.EncoderConfig(arch="bert")
feeds = {k: v for k, v in reference.random_inputs(cfg, seed=7).items()
         if k in {i.name for i in model.graph.input}}
spec = check_semantics.run_ort_spec(model, feeds)["last_hidden_state"]
ort_default = make_encoder.run_ort(model, feeds)["last_hidden_state"]
runs = {}
# The eliminated model is octet-opt's output (WORK/eliminated.mlir), so the qlinears run.
for stage, path in (("imported", model_path), ("eliminated", os.path.join(work, "eliminated.mlir"))):
    got, error = check_semantics.run_interp(interp, path, feeds, os.path.join(work, stage))
    if got is None:
        print(f"ERROR {stage}: {error}")
        sys.exit(1)
    runs[stage] = got["last_hidden_state"].astype(np.float64)
failed = 0
for name, a, b, tolerance in (("imported vs ORT (spec semantics)", runs["imported"], spec, 1e-4),
                              ("eliminated vs imported", runs["eliminated"], runs["imported"], TOLERANCE),
                              ("eliminated vs ORT (spec semantics)", runs["eliminated"], spec, TOLERANCE),
                              ("ORT (default kernels) vs ORT (spec semantics)", ort_default, spec, None)):
    diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("inf")
    verdict = "info" if tolerance is None else "ok" if diff <= tolerance else "MISMATCH"
    failed += verdict == "MISMATCH"
    print(f"{name}: {verdict} max |diff| = {diff:.3g}, mean {float(np.abs(a - b).mean()):.3g}")
sys.exit(1 if failed else 0)
