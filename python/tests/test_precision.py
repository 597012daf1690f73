"""octet.compile(precision="bf16"): an FP32 model's linears on bf16 weights (docs/kernel-selection.md)."""
import re
import warnings

import numpy as np
import pytest

import octet
from conftest import token_feeds


def _has_avx512_bf16():
    with open("/proc/cpuinfo") as f:
        return "avx512_bf16" in f.read().split()


@pytest.mark.skipif(not _has_avx512_bf16(), reason="this CPU lacks AVX512-BF16")
def test_bf16_linears_track_fp32(small_onnx, small_model, tmp_path):
    feeds = token_feeds(3, 16, seed=5)
    want = small_model.run(feeds)["last_hidden_state"].astype(np.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = octet.compile(small_onnx, precision="bf16", profile=True, progress=False)
    with m:
        got = m.run(feeds)["last_hidden_state"].astype(np.float64)
        kinds = [s["kind"] for s in m.profile()]
        # Where this CPU's vdpbf16ps is slower than its FMA, compiling says so, with the
        # peaks it measured (a slow path the user chose is still said).
        slow = [str(w.message) for w in caught if issubclass(w.category, octet.PrecisionWarning)]
        lines = [line for line in m.fusion_report.splitlines() if line.startswith("slow precision: ")]
        assert len(slow) == len(lines) <= 1, (slow, lines)
        if slow:
            peaks = re.search(r"peaks at (\d+) GFLOP/s per thread against (\d+) for FP32 FMA", slow[0])
            assert peaks and int(peaks[1]) < int(peaks[2]), slow[0]
    assert sum(k.startswith("gemm.jit_bf16") for k in kinds) == 8, kinds  # 2 layers x 4 linears
    assert not any(k.startswith("gemm.jit_avx512") or k.startswith("gemm.onednn") for k in kinds)
    cosine = (want * got).sum() / np.linalg.norm(want) / np.linalg.norm(got)
    assert cosine >= 0.9999 and not np.array_equal(want, got)
    so = octet.compile_to_so(small_onnx, tmp_path / "bf16.so", precision="bf16", progress=False)
    with octet.load(so) as aot:
        assert np.array_equal(aot.run(feeds)["last_hidden_state"], got.astype(np.float32))


def test_precision_errors(small_onnx):
    with pytest.raises(octet.InvalidArgument, match="option 'precision'.*f32 or bf16"):
        octet.compile(small_onnx, precision="fp16", progress=False)
    # Checked before compiling, on any CPU: INT8 and bf16 exclude each other.
    with pytest.raises(octet.InvalidArgument, match="cannot be combined with INT8"):
        octet.compile(small_onnx, precision="bf16", int8="dynamic", progress=False)
    with pytest.raises(octet.InvalidArgument, match="needs AVX512-BF16"):
        octet.compile(small_onnx, precision="bf16", target="avx512-vnni", progress=False)


def _has_avx512_vnni():
    with open("/proc/cpuinfo") as f:
        return "avx512_vnni" in f.read().split()


@pytest.mark.skipif(not _has_avx512_vnni(), reason="this CPU lacks AVX-512 VNNI")
def test_int8_attention_is_the_int8_default(small_onnx):
    """attention="auto" (the default) runs an INT8 model's attention on vpdpbusd, "f32"
    keeps the f32 kernels; the outputs stay close (docs/attention-int8.md)."""
    feeds = token_feeds(3, 16, seed=7)
    runs = {}
    for attention in (None, "f32", "int8"):
        with octet.compile(small_onnx, int8="dynamic", attention=attention, profile=True,
                           progress=False) as m:
            out = m.run(feeds)["last_hidden_state"].astype(np.float64)
            kinds = [s["kind"] for s in m.profile() if s["kind"].startswith("attention.")]
        runs[attention] = out
        want = "attention.jit_avx512" if attention == "f32" else "attention.vnni_int8"
        assert kinds and all(k == want for k in kinds), (attention, kinds)
    assert np.array_equal(runs[None], runs["int8"])
    far = np.abs(runs["int8"] - runs["f32"]).max() / np.abs(runs["f32"]).max()
    assert 0 < far < 3e-2
    with octet.compile(small_onnx, profile=True, progress=False) as fp32:  # FP32 keeps f32
        fp32.run(feeds)
        assert any(s["kind"] == "attention.jit_avx512" for s in fp32.profile())


def test_attention_errors(small_onnx):
    with pytest.raises(octet.InvalidArgument, match="option 'attention'.*auto, f32, bf16 or int8"):
        octet.compile(small_onnx, attention="int4", progress=False)


def test_slow_precision_line_is_a_precision_warning():
    """On any CPU: the fusion report's `slow precision:` line (the note the C++ test
    Ceilings.Bf16SlowNoteNamesBothPeaksOnlyWhereBf16IsSlower checks) becomes one
    octet.PrecisionWarning with its text, and a report without it gives none."""
    from octet import _model
    note = ("--precision bf16: this CPU's vdpbf16ps peaks at 91 GFLOP/s per thread against 177 "
            "for FP32 FMA: bf16 linears run slower here than the default f32 (their weights "
            "still take half the bytes)")
    fused = "fusion: 2 of 2 attention blocks fused, 5 of 5 layernorm blocks fused, 2 of 2 gelu blocks fused"
    for report, want in ((f"{fused}\nslow precision: {note}\n", [note]), (f"{fused}\n", [])):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _model._warn_unfused(report)
        got = [str(w.message) for w in caught if issubclass(w.category, octet.PrecisionWarning)]
        assert got == want, (report, got)
        assert not [w for w in caught if issubclass(w.category, octet.FusionWarning)]
