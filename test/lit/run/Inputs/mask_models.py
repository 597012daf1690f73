"""The mask and index ops of current torch.onnx exports, checked against onnxruntime in
the JIT (`octetc run model.onnx`) and AOT (`octetc compile`, then `octetc run model.so`),
at several batch sizes and sequence lengths:

- the dynamo exporter's padding mask, attention_mask[batch_idx, kv_idx]: GatherND of a
  [B, S] mask at [B, 1, S, S, 2] index tuples built from Range / Expand / Concat, then
  And / Where into an additive mask;
- RoBERTa's buffered token type ids: GatherElements of an expanded [B, 512] buffer at
  the position ids;
- sdpa's Where(IsNaN(p), 0, p) guard;
- Clip (opset 13, a bound as a graph input), Trilu (k as a graph input), Tile, Mod
  (both sign rules), Sign, Ceil, Floor, IsInf, Xor.

    mask_models.py OCTETC WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUTPUTS = {
    "mask_add": TensorProto.FLOAT, "token_types": TensorProto.INT64,
    "guarded": TensorProto.FLOAT, "clipped": TensorProto.FLOAT, "lower": TensorProto.FLOAT,
    "tiled": TensorProto.FLOAT, "mod": TensorProto.INT64, "fmod": TensorProto.FLOAT,
    "sign": TensorProto.FLOAT, "ceil": TensorProto.FLOAT, "floor": TensorProto.FLOAT,
    "inf": TensorProto.BOOL, "xor": TensorProto.BOOL, "nd_batch": TensorProto.FLOAT,
}


def build():
    c = lambda name, array: numpy_helper.from_array(np.asarray(array), name)
    inputs = [
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"]),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq"]),
        helper.make_tensor_value_info("hi", TensorProto.FLOAT, []),
        helper.make_tensor_value_info("k", TensorProto.INT64, []),
    ]
    inits = [
        c("zero", np.array(0, np.int64)), c("one", np.array(1, np.int64)),
        c("i0", np.array([0], np.int64)), c("i1", np.array([1], np.int64)),
        c("shape_b111", np.array([-1, 1, 1, 1], np.int64)),
        c("shape_111s", np.array([1, 1, 1, -1], np.int64)),
        c("axes_last", np.array([-1], np.int64)),
        c("buffer", np.arange(512, dtype=np.int64).reshape(1, 512) % 3),
        c("neg_inf", np.array(-np.inf, np.float32)), c("fzero", np.array(0.0, np.float32)),
        c("lo", np.array(-0.5, np.float32)), c("reps", np.array([2, 3], np.int64)),
        c("divisor", np.array([3, -3, 5], np.int64).reshape(3, 1, 1)),
        c("fdivisor", np.array(1.5, np.float32)),
        c("seven", np.array(7, np.int64)),
    ]
    nodes = [
        # sizes
        helper.make_node("Shape", ["attention_mask"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["b"], axis=0),
        helper.make_node("Gather", ["shape", "one"], ["s"], axis=0),
        # the dynamo padding mask
        helper.make_node("Range", ["zero", "b", "one"], ["batch_range"]),
        helper.make_node("Reshape", ["batch_range", "shape_b111"], ["batch_idx"]),
        helper.make_node("Range", ["zero", "s", "one"], ["kv_range"]),
        helper.make_node("Reshape", ["kv_range", "shape_111s"], ["kv_idx"]),
        helper.make_node("Unsqueeze", ["b", "i0"], ["b1"]),
        helper.make_node("Unsqueeze", ["s", "i0"], ["s1"]),
        helper.make_node("Concat", ["b1", "i1", "s1", "s1"], ["grid"], axis=0),
        helper.make_node("Expand", ["batch_idx", "grid"], ["batch_grid"]),
        helper.make_node("Expand", ["kv_idx", "grid"], ["kv_grid"]),
        helper.make_node("Unsqueeze", ["batch_grid", "axes_last"], ["bu"]),
        helper.make_node("Unsqueeze", ["kv_grid", "axes_last"], ["ku"]),
        helper.make_node("Concat", ["bu", "ku"], ["tuples"], axis=-1),
        helper.make_node("Cast", ["attention_mask"], ["mask_bool"], to=TensorProto.BOOL),
        helper.make_node("GatherND", ["mask_bool", "tuples"], ["picked"]),
        helper.make_node("Trilu", ["picked_f"], ["causal_f"], upper=0),
        helper.make_node("Cast", ["picked"], ["picked_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["causal_f"], ["causal"], to=TensorProto.BOOL),
        helper.make_node("And", ["picked", "causal"], ["visible"]),
        helper.make_node("Where", ["visible", "fzero", "neg_inf"], ["mask_add"]),
        # RoBERTa's buffered token type ids
        helper.make_node("Expand", ["buffer", "bshape"], ["buffered"]),
        helper.make_node("Concat", ["b1", "buffer_len"], ["bshape"], axis=0),
        helper.make_node("Constant", [], ["buffer_len"], value=c("bl", np.array([512], np.int64))),
        helper.make_node("GatherElements", ["buffered", "position_ids"], ["token_types"], axis=1),
        # sdpa's NaN guard on a fully masked softmax
        helper.make_node("Unsqueeze", ["x", "i1"], ["x3"]),
        helper.make_node("Add", ["x3", "mask_add_2d"], ["scores"]),
        helper.make_node("Gather", ["mask_add", "zero"], ["mask_b0"], axis=1),
        helper.make_node("Identity", ["mask_b0"], ["mask_add_2d"]),
        helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "fzero", "p"], ["guarded"]),
        # elementwise and data movement
        helper.make_node("Clip", ["x", "lo", "hi"], ["clipped"]),
        helper.make_node("Trilu", ["x", "k"], ["lower"], upper=0),
        helper.make_node("Tile", ["x", "reps"], ["tiled"]),
        helper.make_node("Cast", ["x_scaled"], ["xi"], to=TensorProto.INT64),
        helper.make_node("Mul", ["x", "seven_f"], ["x_scaled"]),
        helper.make_node("Cast", ["seven"], ["seven_f"], to=TensorProto.FLOAT),
        helper.make_node("Mod", ["xi", "divisor"], ["mod"]),
        helper.make_node("Mod", ["x", "fdivisor"], ["fmod"], fmod=1),
        helper.make_node("Sign", ["x"], ["sign"]),
        helper.make_node("Ceil", ["x"], ["ceil"]),
        helper.make_node("Floor", ["x"], ["floor"]),
        helper.make_node("Div", ["x", "fzero"], ["x_inf"]),
        helper.make_node("IsInf", ["x_inf"], ["inf"], detect_negative=0),
        helper.make_node("Xor", ["picked", "causal"], ["xor"]),
        # GatherND with batch_dims = 1: per batch row, the element at position_ids[:, :1]
        helper.make_node("Gather", ["position_ids", "zero"], ["first"], axis=1),
        helper.make_node("Unsqueeze", ["first", "axes_last"], ["first_pos"]),
        helper.make_node("Mod", ["first_pos", "s1"], ["in_row"]),
        helper.make_node("GatherND", ["x", "in_row"], ["nd_batch"], batch_dims=1),
    ]
    # ONNX wants the graph topologically sorted.
    produced = {i.name for i in inputs} | {t.name for t in inits}
    ordered, pending = [], list(nodes)
    while pending:
        ready = [n for n in pending if all(i in produced or not i for i in n.input)]
        assert ready, [n.output for n in pending]
        for n in ready:
            ordered.append(n)
            produced.update(n.output)
            pending.remove(n)
    outs = [helper.make_tensor_value_info(name, t, None) for name, t in OUTPUTS.items()]
    graph = helper.make_graph(ordered, "masks", inputs, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def feeds_for(rng, batch, seq):
    mask = np.ones((batch, seq), np.int64)
    for row in range(batch):  # left-aligned padding; row 0 fully padded when batch > 2
        mask[row, seq - row % seq:] = 0 if row else 1
    if batch > 2:
        mask[2, :] = 0
    x = rng.standard_normal((batch, seq)).astype(np.float32) * 3
    x[0, 0] = 0.0
    return {"attention_mask": mask,
            "position_ids": rng.integers(-512, 512, size=(batch, seq)).astype(np.int64),
            "x": x, "hi": np.array(0.75, np.float32),
            "k": np.array(seq // 2 - 1, np.int64)}


def main():
    octetc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "masks.onnx")
    onnx.save(build(), path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    lib = os.path.join(work, "masks.so")
    subprocess.run([octetc, "compile", path, "-o", lib], check=True, stdout=subprocess.DEVNULL)
    rng = np.random.default_rng(5)
    shapes = [(1, 1), (2, 5), (3, 8), (4, 13)]
    for batch, seq in shapes:
        set_dir = os.path.join(work, "sets", f"b{batch}s{seq}")
        os.makedirs(set_dir, exist_ok=True)
        for name, value in feeds_for(rng, batch, seq).items():
            np.save(os.path.join(set_dir, name + ".npy"), value)
    failures = 0
    for model, tag in ((path, "jit"), (lib, "aot")):
        out = os.path.join(work, "out-" + tag)
        subprocess.run([octetc, "run", model, "--input-sets", os.path.join(work, "sets"),
                        "--output", out, "--repeat", "1", "--warmup", "0"],
                       check=True, stdout=subprocess.DEVNULL)
        for batch, seq in shapes:
            name = f"b{batch}s{seq}"
            set_dir = os.path.join(work, "sets", name)
            feeds = {i.name: np.load(os.path.join(set_dir, i.name + ".npy"))
                     for i in session.get_inputs()}
            want = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
            for output, expected in want.items():
                got = np.load(os.path.join(out, name, output + ".npy"))
                ok = got.shape == expected.shape and got.dtype == expected.dtype and \
                    np.allclose(got, expected, atol=1e-6, rtol=1e-6, equal_nan=True)
                if not ok:
                    failures += 1
                    print(f"FAIL {tag} {name} {output}: got {got.dtype} {got.shape}, "
                          f"want {expected.dtype} {expected.shape}\n{got}\n{expected}")
    print(f"mask models: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
