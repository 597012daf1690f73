"""qdq-eliminate.test: octet-interp on make_qdq.py's static model, before and after
octet-eliminate-qdq, against ONNX Runtime. Usage: qdq_eliminate.py SRC OCTET_INTERP WORK"""
import os
import sys

import numpy as np

src, interp, work = sys.argv[1:4]
sys.path[:0] = [os.path.join(src, "test", "e2e"), os.path.join(src, "test", "models")]
import check_semantics  # noqa: E402
import qdq_reference  # noqa: E402

TOLERANCE = qdq_reference.TOLERANCE
model_path, feeds, spec, ort_default = qdq_reference.static_model_reference(work)
runs = {}
# The eliminated model is octet-opt's output (WORK/eliminated.mlir), so the qlinears run.
for stage, path in (("imported", model_path), ("eliminated", os.path.join(work, "eliminated.mlir"))):
    got, error = check_semantics.run_interp(interp, path, feeds, os.path.join(work, stage))
    if got is None:
        print(f"ERROR {stage}: {error}")
        sys.exit(1)
    runs[stage] = got["last_hidden_state"].astype(np.float64)
failed = qdq_reference.compare(
    [("imported vs ORT (spec semantics)", runs["imported"], spec, 1e-4),
     ("eliminated vs imported", runs["eliminated"], runs["imported"], TOLERANCE),
     ("eliminated vs ORT (spec semantics)", runs["eliminated"], spec, TOLERANCE),
     ("ORT (default kernels) vs ORT (spec semantics)", ort_default, spec, None)])
sys.exit(1 if failed else 0)
