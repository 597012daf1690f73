"""Writes ONNX models that try to read outside their folder or claim more than
they hold, for test/lit/onnx/external-data-confinement.test and
bench/hostile_probe.py.

usage: hostile_models.py OUT_DIR

OUT_DIR/secret.bin lies outside the models' folder OUT_DIR/models/; each
model there is Add(x, w) with w (1000 floats) in external data at:
  absolute.onnx      OUT_DIR/secret.bin by absolute path
  dotdot.onnx        ../secret.bin
  symlink.onnx       link.bin, a symlink to ../secret.bin
  fifo.onnx          pipe.bin, a FIFO
  directory.onnx     adir, a directory
  devzero.onnx       zero.bin, a symlink to /dev/zero, w claiming 32 GiB
  huge.onnx          weights.bin (4000 bytes), w claiming 32 GiB
  short.onnx         weights.bin, w of 2^20 floats (the file holds 1000)
  inside.onnx        data/weights.bin through data/../data/, IR version 8 so
                     libonnx's checker runs (valid: must import from any folder)
  insidelink.onnx    inlink.bin, a symlink to data/weights.bin (valid)
  ir99.onnx          inline w, IR version 99
  nooutputs.onnx     inline w, a graph with no outputs
  bigbatch.onnx      inline w, input x of static shape [2^40, 1000]
and OUT_DIR/models/model-fifo.onnx is a FIFO given as the model itself.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(w_dims=(1000,), external=None, ir_version=None, outputs=True, batch="batch"):
    w = numpy_helper.from_array(np.arange(1000, dtype=np.float32), name="w")
    if external is not None:
        w.ClearField("raw_data")
        del w.dims[:]
        w.dims.extend(w_dims)
        w.data_location = TensorProto.EXTERNAL
        entry = w.external_data.add()
        entry.key, entry.value = "location", external
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "hostile",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, w_dims[-1]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, w_dims[-1]])]
        if outputs else [], [w])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                          producer_name="hostile_models.py")
    if ir_version is not None:
        m.ir_version = ir_version
    return m


def main():
    out = os.path.abspath(sys.argv[1])
    models = os.path.join(out, "models")
    os.makedirs(os.path.join(models, "data"), exist_ok=True)
    os.makedirs(os.path.join(models, "adir"), exist_ok=True)
    weights = np.arange(1000, dtype=np.float32).tobytes()
    with open(os.path.join(out, "secret.bin"), "wb") as f:
        f.write(b"SECRET-" * 600)  # 4200 bytes: enough for w
    for name in ("weights.bin", os.path.join("data", "weights.bin")):
        with open(os.path.join(models, name), "wb") as f:
            f.write(weights)
    links = {"link.bin": "../secret.bin", "zero.bin": "/dev/zero",
             "inlink.bin": "data/weights.bin"}
    for name, target in links.items():
        path = os.path.join(models, name)
        if os.path.lexists(path):
            os.remove(path)
        os.symlink(target, path)
    for fifo in ("pipe.bin", "model-fifo.onnx"):
        path = os.path.join(models, fifo)
        if not os.path.exists(path):
            os.mkfifo(path)
    huge = (8, 1 << 30)
    cases = {
        "absolute": model(external=os.path.join(out, "secret.bin")),
        "dotdot": model(external="../secret.bin"),
        "symlink": model(external="link.bin"),
        "fifo": model(external="pipe.bin"),
        "directory": model(external="adir"),
        "devzero": model(huge, external="zero.bin"),
        "huge": model(huge, external="weights.bin"),
        "short": model((1 << 20,), external="weights.bin"),
        "inside": model(external="data/../data/weights.bin", ir_version=8),
        "insidelink": model(external="inlink.bin", ir_version=8),
        "ir99": model(ir_version=99),
        "nooutputs": model(outputs=False),
        "bigbatch": model(batch=1 << 40),
    }
    for name, m in cases.items():
        with open(os.path.join(models, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
