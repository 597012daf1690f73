"""Small ONNX graphs whose outputs are inputs, views (reshape, transpose, slice,
expand) or one value returned twice, plus generic ops (where, cumsum, concat,
reduce, softmax, matmul of two activations); checks `octetc run` against
onnxruntime.

    edge_models.py OCTETC WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def build():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 6])
    outputs = ["same", "twice_a", "twice_b", "reshaped", "transposed", "sliced", "expanded",
               "selected", "summed", "joined", "reduced", "soft", "product", "stepped"]
    c = lambda name, array: numpy_helper.from_array(np.array(array), name)
    inits = [c("shape3", np.array([-1, 2, 3], np.int64)), c("starts", np.array([1], np.int64)),
             c("ends", np.array([5], np.int64)), c("axes1", np.array([1], np.int64)),
             c("eshape", np.array([2, 1, 6], np.int64)), c("zero", np.array(0, np.int64)),
             c("half", np.array(0.5, np.float32)), c("axis1", np.array(1, np.int64)),
             c("rstarts", np.array([-1], np.int64)), c("rends", np.array([-100], np.int64)),
             c("rsteps", np.array([-2], np.int64))]
    nodes = [
        helper.make_node("Identity", ["x"], ["same"]),
        helper.make_node("Add", ["x", "x"], ["double"]),
        helper.make_node("Identity", ["double"], ["twice_a"]),
        helper.make_node("Identity", ["double"], ["twice_b"]),
        helper.make_node("Reshape", ["double", "shape3"], ["reshaped"]),
        helper.make_node("Transpose", ["reshaped"], ["transposed"], perm=[0, 2, 1]),
        helper.make_node("Slice", ["x", "starts", "ends", "axes1"], ["sliced"]),
        helper.make_node("Expand", ["x", "eshape"], ["expanded"]),
        helper.make_node("Greater", ["ids", "zero"], ["positive"]),
        helper.make_node("Where", ["positive", "x", "half"], ["selected"]),
        helper.make_node("CumSum", ["ids", "axis1"], ["summed"]),
        helper.make_node("Concat", ["x", "sliced"], ["joined"], axis=1),
        helper.make_node("ReduceMean", ["x"], ["reduced"], axes=[1], keepdims=1),
        helper.make_node("Softmax", ["x"], ["soft"], axis=-1),
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
        helper.make_node("MatMul", ["x", "xt"], ["product"]),
        helper.make_node("Slice", ["x", "rstarts", "rends", "axes1", "rsteps"], ["stepped"]),
    ]
    outs = [helper.make_tensor_value_info(name, TensorProto.INT64 if name == "summed"
                                          else TensorProto.FLOAT, None) for name in outputs]
    graph = helper.make_graph(nodes, "edges", [x, ids], outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def main():
    octetc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    model = build()
    path = os.path.join(work, "edges.onnx")
    onnx.save(model, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    failures = 0
    for batch in (1, 2, 5):
        feeds = {"x": rng.standard_normal((batch, 6)).astype(np.float32),
                 "ids": rng.integers(-3, 4, size=(batch, 6)).astype(np.int64)}
        set_dir = os.path.join(work, "sets", "b%d" % batch)
        os.makedirs(set_dir, exist_ok=True)
        for name, value in feeds.items():
            np.save(os.path.join(set_dir, name + ".npy"), value)
    subprocess.run([octetc, "run", path, "--input-sets", os.path.join(work, "sets"),
                    "--output", os.path.join(work, "out"), "--repeat", "1", "--warmup", "0"],
                   check=True, stdout=subprocess.DEVNULL)
    for batch in (1, 2, 5):
        set_dir = os.path.join(work, "sets", "b%d" % batch)
        feeds = {n: np.load(os.path.join(set_dir, n + ".npy")) for n in ("x", "ids")}
        want = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
        for name, expected in want.items():
            got = np.load(os.path.join(work, "out", "b%d" % batch, name + ".npy"))
            ok = got.shape == expected.shape and np.allclose(got, expected, atol=1e-5, rtol=1e-5)
            print("b%d %-11s %s" % (batch, name, "ok" if ok else "FAIL %s vs %s" % (got, expected)))
            failures += not ok
    print("edge models: %d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
