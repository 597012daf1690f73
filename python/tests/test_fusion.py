"""The fusion report from Python: Model.fusion_report, and a FusionWarning when a block
that should fuse does not (a silent slow path is a bug)."""
import os
import warnings

import numpy as np
import pytest

import octet
from conftest import ROOT

TWO_ATTENTIONS = os.path.join(ROOT, "test", "lit", "run", "Inputs", "two_attentions.onnxtxt")


def test_fully_fused_model_reports_and_does_not_warn(small_onnx):
    with warnings.catch_warnings():
        warnings.simplefilter("error", octet.FusionWarning)
        model = octet.compile(small_onnx, progress=False)
    report = model.fusion_report
    assert report.startswith("fusion: 2 of 2 attention blocks fused, 5 of 5 LayerNorm")
    assert "not fused" not in report


def test_unfused_attention_warns_and_names_the_node():
    with pytest.warns(octet.FusionWarning, match=r"1 block\(s\) not fused .*1 of 2 attention"):
        model = octet.compile(TWO_ATTENTIONS, progress=False)
    lines = model.fusion_report.splitlines()
    assert lines[1].startswith("not fused: attention at node 'probs2', 'capped': no Q·Kᵀ")
    # Unfused still computes: the model runs.
    out = model.run({"x": np.ones((2, 5, 8), np.float32)})
    assert out["y"].shape == (2, 5, 8)


def test_model_so_has_no_report(small_onnx, tmp_path):
    path = octet.compile_to_so(small_onnx, tmp_path / "m.so", progress=False)
    assert octet.load(path).fusion_report == ""
