"""octet-pack-weights against an independent NumPy statement of the layouts.

gen: prints @main with one qlinear per (K, N, transposed) case (constant u8
input, random s8 weight, per-channel scales, zero point 131), each result
named for octet-interp.
check ISA PACKED.mlir: every packed constant and colsum in PACKED.mlir equal
the layout docs/pack-weights.md states, computed here from the weights.
"""
import re
import sys

import numpy as np

CASES = [(5, 3, False), (70, 50, True), (130, 100, False), (4, 33, True), (64, 97, False)]


def weight(k, n, i):
    rng = np.random.default_rng(100 + i)
    return rng.integers(-127, 128, size=(k, n), dtype=np.int64).astype(np.int8)


def fmt(a):
    return str(a.astype(np.int64).tolist())


def gen():
    results, types, body = [], [], []
    for i, (k, n, t) in enumerate(CASES):
        w = weight(k, n, i)
        stored = w.T if t else w
        x = np.random.default_rng(i).integers(0, 256, size=(3, k))
        wtype = f"tensor<{stored.shape[0]}x{stored.shape[1]}xi8>"
        body += [
            f"  %x{i} = octet.constant dense<{fmt(x)}> : tensor<3x{k}xui8>",
            f"  %w{i} = octet.constant dense<{fmt(stored)}> : {wtype}",
            f"  %ws{i} = octet.constant dense<[{', '.join(f'{j}.0' for j in range(1, n + 1))}]> : tensor<{n}xf32>",
            f"  %y{i} = octet.qlinear %x{i}, %w{i} scales(%xs, %xzp, %ws{i} : tensor<f32>, tensor<ui8>, tensor<{n}xf32>)"
            + (" transpose_weight" if t else "") + " {",
            "  ^bb0(%acc: f32):",
            "    octet.yield %acc : f32",
            f"  }} : tensor<3x{k}xui8>, {wtype} -> tensor<3x{n}xf32>",
        ]
        results.append(f"%y{i}")
        types.append(f"tensor<3x{n}xf32>")
    sig = ", ".join(f'{t} {{octet.name = "y{i}"}}' for i, t in enumerate(types))
    print(f"func.func @main() -> ({sig}) {{")
    print("  %xs = octet.constant dense<0.5> : tensor<f32>")
    print("  %xzp = octet.constant dense<131> : tensor<ui8>")
    print("\n".join(body))
    print(f"  return {', '.join(results)} : {', '.join(types)}")
    print("}")


def expected(isa, w):
    k, n = w.shape
    if isa == "amx":
        nr, k64 = 32, -(-k // 64)
        out = np.zeros(-(-n // 32) * k64 * 2048, np.int8)
        for kk in range(k):
            for c in range(n):
                at = ((c // 32 * k64 + kk // 64) * 2 + c % 32 // 16) * 1024 + kk % 64 // 4 * 64 + c % 16 * 4 + kk % 4
                out[at] = w[kk, c]
        return nr, out
    nr = 32 if -(-n // 32) * 32 < -(-n // 48) * 48 else 48
    k4 = -(-k // 4)
    out = np.zeros(-(-n // nr) * nr * k4 * 4, np.int8)
    for kk in range(k):
        for c in range(n):
            out[((c // nr * k4 + kk // 4) * nr + c % nr) * 4 + kk % 4] = w[kk, c]
    return nr, out


def check(isa, path):
    text = open(path).read()
    consts = {m.group(1): m.group(2) for m in re.finditer(
        r"(%\S+) = octet.constant dense<\[([-0-9, ]*)\]> : tensor<\d+xi8>", text)}
    ops = re.findall(r"octet.qlinear %\S+, (%\S+) scales\(.*?\{octet.packed = \{colsum = dense<\[?([-0-9, ]*)\]?> : "
                     r"tensor<\d+xi32>, isa = \"(\w+)\", k = (\d+) : i64, n = (\d+) : i64, nr = (\d+) : i64\}\}",
                     text, re.S)
    assert len(ops) == len(CASES), f"{len(ops)} packed qlinears, want {len(CASES)}"
    for i, ((k, n, _), (name, colsum, got_isa, gk, gn, gnr)) in enumerate(zip(CASES, ops)):
        w = weight(k, n, i)
        nr, bytes_ = expected(isa, w)
        got = np.array([int(v) for v in consts[name].split(",")], np.int8)
        assert got_isa == isa and (int(gk), int(gn), int(gnr)) == (k, n, nr), (i, got_isa, gk, gn, gnr)
        assert got.shape == bytes_.shape and (got == bytes_).all(), f"case {i}: packed bytes differ"
        sums = np.array([int(v) for v in colsum.split(",")])
        assert (sums == w.astype(np.int64).sum(0)).all(), f"case {i}: colsum differs"
        print(f"case {i} K={k} N={n} nr={nr} {len(bytes_)} bytes ok")


if __name__ == "__main__":
    gen() if sys.argv[1] == "gen" else check(sys.argv[2], sys.argv[3])
