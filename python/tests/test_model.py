"""octet.compile, Model.inputs / outputs / run / __call__, out=, errors."""
import ctypes

import numpy as np
import pytest

import octet
from conftest import VOCAB, token_feeds


def test_inputs_and_outputs_name_symbolic_dims(small_model):
    names = [i.name for i in small_model.inputs]
    assert names == ["input_ids", "attention_mask", "token_type_ids"]
    for info in small_model.inputs:
        assert info.dtype == np.int64
        assert info.shape == ("batch", "sequence")
    (out,) = small_model.outputs
    assert out.name == "last_hidden_state" and out.dtype == np.float32
    assert out.shape == ("batch", "sequence", 64)
    assert small_model.input_names == names and small_model.output_names == ["last_hidden_state"]
    assert "compiled in process" in repr(small_model)


@pytest.mark.parametrize("batch,seq", [(1, 1), (1, 7), (3, 16), (2, 64)])
def test_run_matches_onnx_runtime(small_model, ort_session, batch, seq):
    feeds = token_feeds(batch, seq, seed=batch * 100 + seq)
    got = small_model.run(feeds)["last_hidden_state"]
    (want,) = ort_session.run(None, feeds)
    assert got.shape == want.shape and got.dtype == np.float32
    # Real tokens match; padding positions are 0 (padding-free batches, docs/padding-free.md).
    real = feeds["attention_mask"] != 0
    assert np.abs(got[real] - want[real]).max() <= 1e-4 * max(1.0, np.abs(want[real]).max())
    assert not got[~real].any()


def test_padding_computed_on_request(small_onnx, ort_session):
    feeds = token_feeds(3, 16, seed=316)
    model = octet.compile(small_onnx, options={"pack_tokens": "off"}, progress=False)
    got = model.run(feeds)["last_hidden_state"]
    (want,) = ort_session.run(None, feeds)
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, np.abs(want).max())


def test_feeds_as_list_kwargs_and_positional(small_model):
    feeds = token_feeds(2, 9, seed=3)
    by_name = small_model.run(feeds)["last_hidden_state"]
    as_list = small_model.run([feeds[n] for n in small_model.input_names])["last_hidden_state"]
    called = small_model(**feeds)["last_hidden_state"]
    positional = small_model(*[feeds[n] for n in small_model.input_names])["last_hidden_state"]
    for other in (as_list, called, positional):
        assert np.array_equal(by_name, other)


def test_int32_ids_and_python_lists_are_accepted(small_model):
    feeds = token_feeds(2, 5, seed=4)
    want = small_model.run(feeds)["last_hidden_state"]
    as_int32 = {k: v.astype(np.int32) for k, v in feeds.items()}
    assert np.array_equal(small_model.run(as_int32)["last_hidden_state"], want)
    as_lists = {k: v.tolist() for k, v in feeds.items()}
    assert np.array_equal(small_model.run(as_lists)["last_hidden_state"], want)
    # Non-contiguous views are copied, not misread.
    wide = {k: np.repeat(v, 2, axis=1)[:, ::2] for k, v in feeds.items()}
    assert not wide["input_ids"].flags.c_contiguous
    assert np.array_equal(small_model.run(wide)["last_hidden_state"], want)


def test_outputs_are_runtime_buffers_without_a_copy(small_model):
    out = small_model.run(token_feeds(2, 8))["last_hidden_state"]
    assert not out.flags.owndata            # a view of the runtime's buffer
    assert out.ctypes.data % 64 == 0         # the runtime allocates 64-byte aligned
    assert out.flags.c_contiguous and out.flags.writeable
    view = out[1]
    del out                                  # the view keeps the buffer alive
    assert np.isfinite(view).all()


def test_runtime_buffers_are_freed(small_model):
    # 300 runs of a 1 MiB output: a leak would grow the heap by ~300 MiB.
    def rss_kib():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    feeds = token_feeds(64, 64)
    for _ in range(10):
        small_model.run(feeds)
    before = rss_kib()
    for _ in range(300):
        small_model.run(feeds)
    assert rss_kib() - before < 64 * 1024


def test_out_writes_into_caller_arrays(small_model):
    feeds = token_feeds(3, 11, seed=5)
    want = small_model.run(feeds)["last_hidden_state"]
    buffer = np.full((3, 11, 64), np.nan, dtype=np.float32)
    result = small_model.run(feeds, out={"last_hidden_state": buffer})
    assert result["last_hidden_state"] is buffer
    assert np.array_equal(buffer, want)
    result = small_model.run(feeds, out=[buffer])
    assert result["last_hidden_state"] is buffer


def test_out_errors(small_model):
    feeds = token_feeds(3, 11)
    with pytest.raises(octet.InvalidInput, match="too small|needs|bytes"):
        small_model.run(feeds, out={"last_hidden_state": np.empty((2, 11, 64), np.float32)})
    with pytest.raises(octet.InvalidInput, match="has shape"):
        small_model.run(feeds, out={"last_hidden_state": np.empty((11, 3, 64), np.float32)})
    with pytest.raises(octet.InvalidInput, match="float64"):
        small_model.run(feeds, out={"last_hidden_state": np.empty((3, 11, 64), np.float64)})
    with pytest.raises(octet.InvalidInput, match="C-contiguous"):
        small_model.run(feeds, out={"last_hidden_state": np.empty((3, 11, 128), np.float32)[:, :, ::2]})
    with pytest.raises(octet.InvalidInput, match="unknown output 'nope'"):
        small_model.run(feeds, out={"nope": np.empty(1, np.float32)})


def test_selected_outputs(small_model):
    feeds = token_feeds(1, 4)
    assert list(small_model.run(feeds, ["last_hidden_state"])) == ["last_hidden_state"]
    with pytest.raises(octet.InvalidArgument, match="unknown output 'pooled'"):
        small_model.run(feeds, ["pooled"])


def test_input_errors_name_the_input(small_model):
    feeds = token_feeds(2, 6)
    with pytest.raises(octet.InvalidInput, match="missing input 'token_type_ids'"):
        small_model.run({k: v for k, v in feeds.items() if k != "token_type_ids"})
    with pytest.raises(octet.InvalidInput, match="unknown input 'position_ids'"):
        small_model.run({**feeds, "position_ids": feeds["input_ids"]})
    with pytest.raises(octet.InvalidInput, match="2 inputs given, the model takes 3"):
        small_model.run([feeds["input_ids"], feeds["attention_mask"]])
    with pytest.raises(octet.InvalidInput, match="complex64, which Octet does not take"):
        small_model.run({**feeds, "input_ids": feeds["input_ids"].astype(np.complex64)})
    # float16 is a dtype Octet takes (an f16 tensor), not the one this input has.
    with pytest.raises(octet.InvalidInput, match="input_ids.*f16"):
        small_model.run({**feeds, "input_ids": feeds["input_ids"].astype(np.float16)})
    with pytest.raises(octet.InvalidInput, match="input_ids"):
        small_model.run({**feeds, "input_ids": feeds["input_ids"].astype(np.float32)})
    bad = feeds["input_ids"].copy()
    bad[1, 3] = VOCAB
    with pytest.raises(octet.InvalidInput, match=r"element \[1, 3\] is 100, outside the valid range"):
        small_model.run({**feeds, "input_ids": bad})
    with pytest.raises(octet.InvalidInput, match="disagree on 'sequence'"):
        small_model.run({**feeds, "attention_mask": feeds["attention_mask"][:, :5]})
    with pytest.raises(octet.InvalidInput, match="do not fit the model's int64"):
        small_model.run({**feeds, "input_ids": np.full((2, 6), 2**63, np.uint64)})
    with pytest.raises(octet.InvalidInput):
        small_model.run("input_ids")
    # Every error is an octet.Error with the C API's status, and the model still serves.
    try:
        small_model.run({**feeds, "input_ids": bad})
    except octet.Error as e:
        assert e.status == 4
    assert small_model.run(feeds)["last_hidden_state"].shape == (2, 6, 64)


def test_compile_errors(tmp_path, small_onnx):
    with pytest.raises(octet.InvalidModel, match="nothing.onnx"):
        octet.compile(str(tmp_path / "nothing.onnx"), progress=False)
    with pytest.raises(octet.InvalidModel):
        octet.compile(b"this is not a protobuf", progress=False)
    with pytest.raises(octet.InvalidArgument, match="smoothquant_alpha"):
        octet.compile(small_onnx, int8="static", smoothquant_alpha=2, progress=False)
    with pytest.raises(octet.InvalidArgument, match="int8="):
        octet.compile(small_onnx, int8="int4", progress=False)
    with pytest.raises(octet.InvalidArgument, match="is for int8='static' only"):
        octet.compile(small_onnx, calibration="generate:1", progress=False)
    with pytest.raises(octet.InvalidArgument, match="model must be a path"):
        octet.compile(42, progress=False)
    with pytest.raises(octet.InvalidArgument, match="no input sets"):
        octet.compile(small_onnx, int8="static", calibration=[], progress=False)
    with pytest.raises(octet.InvalidModel, match="no file for input 'token_type_ids'"):
        feeds = token_feeds(2, 8)
        del feeds["token_type_ids"]
        octet.compile(small_onnx, int8="static", calibration=[feeds], progress=False)
    for cls in (octet.InvalidArgument, octet.InvalidModel, octet.Unsupported,
                octet.InvalidInput, octet.RunFailure):
        assert issubclass(cls, octet.Error)


def test_target_this_cpu_lacks_is_unsupported(small_onnx):
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    if " amx_int8" in flags:
        pytest.skip("this CPU has AMX: every target runs here")
    with pytest.raises(octet.Unsupported, match="amx"):
        octet.compile(small_onnx, target="amx", progress=False)


def test_compile_from_bytes_and_modelproto(small_onnx, small_model):
    import onnx
    feeds = token_feeds(2, 7, seed=9)
    want = small_model.run(feeds)["last_hidden_state"]
    with open(small_onnx, "rb") as f:
        data = f.read()
    for source in (data, onnx.load(small_onnx)):
        m = octet.compile(source, progress=False)
        assert np.array_equal(m.run(feeds)["last_hidden_state"], want)


def test_int8_modes_track_fp32(small_onnx, small_model):
    feeds = token_feeds(4, 16, seed=11)
    real = feeds["attention_mask"].reshape(-1) != 0  # padding positions are 0
    want = small_model.run(feeds)["last_hidden_state"].reshape(-1, 64)[real]
    calibration = [token_feeds(4, 16, seed=s) for s in range(4)]
    for model in (octet.compile(small_onnx, int8="dynamic", progress=False),
                  octet.compile(small_onnx, int8="static", calibration=calibration, progress=False),
                  octet.compile(small_onnx, int8="static", calibration="generate:4x2x16",
                                smoothquant_alpha=0.5, progress=False)):
        got = model.run(feeds)["last_hidden_state"].reshape(-1, 64)[real]
        cos = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
        assert cos.mean() > 0.99, cos.mean()


def test_progress_reports_calibration_batches(small_onnx, capfd):
    seen = []
    calibration = [token_feeds(2, 8, seed=s) for s in range(3)]
    octet.compile(small_onnx, int8="static", calibration=calibration,
                  progress=lambda message, done, total: seen.append((done, total)))
    assert (0, 3) in seen and (3, 3) in seen and [d for d, t in seen if t == 3] == [0, 1, 2, 3]
    octet.compile(small_onnx, int8="static", calibration=calibration, progress=True)
    err = capfd.readouterr().err
    assert "octet.compile" in err and "3/3" in err


def test_closed_model(small_onnx):
    m = octet.compile(small_onnx, progress=False)
    out = m.run(token_feeds(1, 3))["last_hidden_state"]
    m.close()
    assert np.isfinite(out).all()  # outputs outlive the model
    with pytest.raises(octet.InvalidArgument, match="closed"):
        m.run(token_feeds(1, 3))
    with octet.compile(small_onnx, progress=False) as m2:
        assert m2.run(token_feeds(1, 3))["last_hidden_state"].shape == (1, 3, 64)


def test_profile_and_ceilings(small_onnx, small_model):
    m = octet.compile(small_onnx, profile=True, progress=False)
    m.run(token_feeds(2, 16))
    steps = m.profile()
    assert steps and {"index", "kind", "location", "median_seconds", "ops", "bytes"} <= set(steps[0])
    assert [s["index"] for s in steps] == list(range(len(steps)))
    report = m.profile_report()
    assert report["end_to_end_seconds"] > 0 and report["steps"] == steps
    with pytest.raises(octet.InvalidArgument, match="without the option profile"):
        small_model.profile()
    c = octet.ceilings()
    assert c["fp32_gflops"] > 0 and c["dram_gbs"] > 0 and c["cpu"]
