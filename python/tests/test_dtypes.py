"""Element types beyond the encoders' f32 / i64: a model with float16, uint16, int16, uint32
and uint64 inputs and outputs runs through the package (C API codes 8-12, runtime/Plan.h's
appended DTypes) and computes what NumPy computes: f16 in float rounded to nearest even,
integers exactly, Mod with the divisor's sign (fmod=0) or the dividend's (fmod=1)."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import octet


def binary_model(tmp_path, op, elem, shape_a, shape_b, **attrs):
    """A one-node graph out = op(a, b) on ONNX element type `elem`; the path."""
    graph = helper.make_graph(
        [helper.make_node(op, ["a", "b"], ["out"], **attrs)], f"{op.lower()}_dtypes",
        [helper.make_tensor_value_info("a", elem, shape_a),
         helper.make_tensor_value_info("b", elem, shape_b)],
        [helper.make_tensor_value_info("out", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = str(tmp_path / f"{op}_{elem}.onnx")
    onnx.save(model, path)
    return path


def test_float16_inputs_and_outputs_round_to_nearest_even(tmp_path):
    model = octet.compile(binary_model(tmp_path, "Add", TensorProto.FLOAT16, [2, 5], [5]),
                          progress=False)
    assert [t.dtype for t in model.inputs] == [np.dtype(np.float16)] * 2
    assert model.outputs[0].dtype == np.dtype(np.float16)
    # 1 + 2^-11 is halfway between 1 and the next half: to even (1); 65504 + 16 overflows.
    a = np.array([[1, 1, 65504, 65504, np.nan], [0.1, -2, 3, np.inf, 1e-7]], np.float16)
    b = np.array([2.0 ** -11, 3 * 2.0 ** -12, 16, 8, 1], np.float16)
    got = model.run({"a": a, "b": b})["out"]
    assert got.dtype == np.float16
    with np.errstate(over="ignore"):
        want = a + b  # NumPy's float16 add: exact sum rounded once
    np.testing.assert_array_equal(got.view(np.uint16)[~np.isnan(want)],
                                  want.view(np.uint16)[~np.isnan(want)])
    assert np.isnan(got[0, 4]) and got[0, 2] == np.inf and got[0, 0] == 1


@pytest.mark.parametrize("elem,np_type", [(TensorProto.UINT16, np.uint16),
                                          (TensorProto.INT16, np.int16),
                                          (TensorProto.UINT32, np.uint32),
                                          (TensorProto.UINT64, np.uint64)])
def test_integer_max_min_mod_are_exact(tmp_path, elem, np_type):
    info = np.iinfo(np_type)
    rng = np.random.default_rng(int(elem))
    a = rng.integers(info.min, info.max, size=(3, 7), dtype=np_type, endpoint=True)
    b = rng.integers(info.min, info.max, size=(7,), dtype=np_type, endpoint=True)
    b[b == 0] = 3
    a[0, :2] = [info.max, info.min]  # the extremes (uint64's top half reads negative as int64)
    for op, want in [("Max", np.maximum(a, b)), ("Min", np.minimum(a, b)),
                     ("Mod", np.mod(a, b))]:  # np.mod: the divisor's sign, as fmod=0
        model = octet.compile(binary_model(tmp_path, op, elem, [3, 7], [7]), progress=False)
        assert model.inputs[0].dtype == np.dtype(np_type)
        got = model.run({"a": a, "b": b})["out"]
        assert got.dtype == np.dtype(np_type), op
        np.testing.assert_array_equal(got, want, err_msg=op)
    if info.min < 0:
        model = octet.compile(binary_model(tmp_path, "Mod", elem, [3, 7], [7], fmod=1),
                              progress=False)
        np.testing.assert_array_equal(model.run({"a": a, "b": b})["out"], np.fmod(a, b))


def test_a_float16_feed_for_a_float32_input_is_refused(tmp_path):
    model = octet.compile(binary_model(tmp_path, "Add", TensorProto.FLOAT, [3], [3]),
                          progress=False)
    x = np.ones(3, np.float16)
    with pytest.raises(octet.InvalidInput, match="f16"):
        model.run({"a": x, "b": x})
