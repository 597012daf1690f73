"""Writes binary ONNX models for the importer's lit tests.

usage: make_model.py weights OUT.onnx          Add(x, w) with a 1000-float initializer
       make_model.py external-missing OUT_DIR  the same with w in a missing external file
       make_model.py external-short OUT_DIR    the same with w's external file too short
       make_model.py external-ok OUT_DIR       the same with a complete external file
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weights_model():
    w = numpy_helper.from_array(np.arange(1000, dtype=np.float32), name="w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1000])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1000])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                             producer_name="make_model.py")


def external_model(out_dir, weight_bytes):
    model = weights_model()
    tensor = model.graph.initializer[0]
    with open(os.path.join(out_dir, "weights.bin"), "wb") as f:
        f.write(tensor.raw_data[:weight_bytes])
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", "4000")):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    onnx.save(model, os.path.join(out_dir, "model.onnx"))


def main():
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "weights":
        onnx.save(weights_model(), out)
        return
    os.makedirs(out, exist_ok=True)
    external_model(out, 4000 if mode == "external-ok" else 1000)
    if mode == "external-missing":
        os.remove(os.path.join(out, "weights.bin"))


if __name__ == "__main__":
    main()
