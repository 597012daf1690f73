"""Compares octetc run's and octet-interp's outputs (jit/, aot/, interp/) with numpy for
run/dtypes.test."""
import os
import sys

import numpy as np

work = sys.argv[1]
load = lambda name: np.load(os.path.join(work, name + ".npy"))  # noqa: E731
a, b, x, y, i, j = (load(n) for n in "abxyij")
with np.errstate(invalid="ignore", divide="ignore"):
    want = {"m": np.maximum(a, b), "q": a / b, "r": np.mod(x, y), "s": np.mod(i, j)}
for run in ("jit", "aot", "interp"):
    for name, expected in want.items():
        got = np.load(os.path.join(work, run, name + ".npy"))
        assert got.dtype == expected.dtype, (run, name, got.dtype, expected.dtype)
        # Bit for bit: f16 results are rounded once from the float result, as numpy's.
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                      expected.view(f"u{expected.itemsize}"),
                                      err_msg=f"{run} {name}")
    print(f"{run}: m q r s match numpy")
