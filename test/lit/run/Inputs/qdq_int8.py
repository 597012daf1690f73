"""qdq-int8.test: octetc run on make_qdq.py's static QDQ model with the INT8 passes,
against ONNX Runtime on the same inputs.
Usage: qdq_int8.py SRC OCTETC WORK PASSES [extra octetc args...]"""
import os
import subprocess
import sys

import numpy as np
import onnx

src, octetc, work, passes = sys.argv[1:5]
extra = sys.argv[5:]
sys.path[:0] = [os.path.join(src, "test", "e2e"), os.path.join(src, "test", "models")]
import check_semantics  # noqa: E402
import make_encoder  # noqa: E402
import reference  # noqa: E402

# The outputs follow a LayerNorm (std ~1). A requantized GEMM result may sit one
# quantization step away from ONNX Runtime's where the f32 product lies on a rounding
# boundary (the VNNI kernel's rounding order differs); 0.05 is about a tenth of the
# output's std, while a wrong scale or zero point is off by ~1 (qdq-eliminate.test's bound).
TOLERANCE = 0.05
model_path = os.path.join(work, "bert-static.onnx")
model = onnx.load(model_path)
cfg = reference.EncoderConfig(arch="bert")
feeds = {k: v for k, v in reference.random_inputs(cfg, seed=7).items()
         if k in {i.name for i in model.graph.input}}
spec = check_semantics.run_ort_spec(model, feeds)["last_hidden_state"]
ort_default = make_encoder.run_ort(model, feeds)["last_hidden_state"]

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
print("qgemm providers:", " ".join(k for k in ("qgemm.jit_vnni", "qgemm.reference")
                                   if k in run.stdout))
got = np.load(os.path.join(out, "last_hidden_state.npy")).astype(np.float64)
failed = 0
for name, ref, tolerance in (("octet vs ORT (default kernels)", ort_default, TOLERANCE),
                             ("octet vs ORT (spec semantics)", spec, TOLERANCE)):
    diff = float(np.abs(got - ref).max()) if got.shape == ref.shape else float("inf")
    verdict = "ok" if diff <= tolerance else "MISMATCH"
    failed += verdict == "MISMATCH"
    print(f"{name}: {verdict} max |diff| = {diff:.3g}, mean {float(np.abs(got - ref).mean()):.3g}")
sys.exit(1 if failed else 0)
