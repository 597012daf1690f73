"""Comparing encoder outputs when padding is dropped (docs/padding-free.md).

With padding-free batches (the default), an output whose leading dims are the
attention mask's [batch, seq] holds the real tokens' values and 0 at padding
positions; ONNX Runtime computes the padding positions too. These helpers
compare the real positions and check the padding ones.
"""
import numpy as np


def find_mask(feeds):
    """The attention mask of an input set ({name: array}), or None."""
    for name, value in feeds.items():
        if "mask" in name and value.ndim == 2:
            return value
    return None


def padded_positions(output, mask):
    """A [batch, seq] bool array of the output's padding positions, or None when the output
    is not per token (its leading dims are not the mask's) or there is no mask."""
    if mask is None or output.ndim < 2 or output.shape[:2] != mask.shape:
        return None
    return mask == 0


def compare(got, want, mask, padding):
    """max|got - want| over the compared elements, and a problem text or None.

    padding: "zero" (padding positions of per-token outputs must be exactly 0 and are not
    compared with `want`), or "ort" (every position is compared)."""
    pad = padded_positions(want, mask) if padding == "zero" else None
    if pad is None:
        real_got, real_want = got, want
    else:
        real_got, real_want = got[~pad], want[~pad]
        nonzero = int(np.count_nonzero(got[pad]))
        if nonzero:
            return 0.0, "%d padding values are not 0" % nonzero
    if real_want.size == 0:
        return 0.0, None
    diff = float(np.max(np.abs(real_got.astype(np.float64) - real_want.astype(np.float64))))
    return diff, None


def scale_of(want, mask, padding):
    """max(1, max|want|) over what compare() compares."""
    pad = padded_positions(want, mask) if padding == "zero" else None
    values = want if pad is None else want[~pad]
    return max(1.0, float(np.max(np.abs(values)))) if values.size else 1.0


def zero_padding(want, mask):
    """ORT's output with its padding positions set to 0 (what Octet returns there)."""
    pad = padded_positions(want, mask)
    if pad is None:
        return want
    out = want.copy()
    out[pad] = 0
    return out
