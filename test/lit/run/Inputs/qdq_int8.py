"""qdq-int8.test: octetc run on make_qdq.py's static QDQ model with the INT8 passes,
against ONNX Runtime on the same inputs.
Usage: qdq_int8.py SRC OCTETC WORK PASSES [extra octetc args...]"""
import os
import subprocess
import sys

import numpy as np

src, octetc, work, passes = sys.argv[1:5]
extra = sys.argv[5:]
sys.path[:0] = [os.path.join(src, "test", "e2e"), os.path.join(src, "test", "models")]
import qdq_reference  # noqa: E402

model_path, feeds, spec, ort_default = qdq_reference.static_model_reference(work)
out = os.path.join(work, "octet-out")
args = [octetc, "run", model_path, f"--passes={passes}", "--output", out,
        "--repeat", "1", "--warmup", "0", "--print-plan"] + extra
for name, array in feeds.items():
    path = os.path.join(work, f"{name}.npy")
    np.save(path, np.array(array, order="C"))
    args += ["--input", f"{name}={path}"]
run = subprocess.run(args, capture_output=True, text=True)
if run.returncode != 0:
    print("ERROR octetc run:", run.stdout, run.stderr)
    sys.exit(1)
print("qgemm providers:", " ".join(k for k in ("qgemm.jit_vnni", "qgemm.jit_amx", "qgemm.jit_avx2", "qgemm.onednn", "qgemm.reference")
                                   if k in run.stdout))
got = np.load(os.path.join(out, "last_hidden_state.npy")).astype(np.float64)
failed = qdq_reference.compare(
    [("octet vs ORT (default kernels)", got, ort_default, qdq_reference.TOLERANCE),
     ("octet vs ORT (spec semantics)", got, spec, qdq_reference.TOLERANCE)])
sys.exit(1 if failed else 0)
