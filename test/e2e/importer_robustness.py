#!/usr/bin/env python3
"""Feeds `octetc import` seeded corruptions of a valid encoder model (truncations, flipped
bytes, overwritten runs) and checks that each either imports or fails with a clear
`error:` and exit code 1: never a crash, a hang or an exit without a message.

  importer_robustness.py --octetc PATH --model MODEL.onnx [--cases 200] [--seed 0]
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor


def corruptions(data, count, rng):
    """(name, bytes) pairs: truncations, byte flips and overwritten runs, spread over the file."""
    for i in range(count):
        kind = i % 3
        if kind == 0:
            cut = rng.randrange(len(data))
            yield f"truncate@{cut}", data[:cut]
        elif kind == 1:
            mutated = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                pos = rng.randrange(len(data))
                mutated[pos] ^= 1 << rng.randrange(8)
            yield "flip", bytes(mutated)
        else:
            mutated = bytearray(data)
            pos = rng.randrange(len(data))
            run = rng.randint(1, 64)
            mutated[pos:pos + run] = bytes(rng.randrange(256) for _ in range(run))
            yield f"overwrite@{pos}", bytes(mutated)


def run_case(octetc, workdir, index, name, payload, timeout):
    path = os.path.join(workdir, f"case{index}.onnx")
    with open(path, "wb") as f:
        f.write(payload)
    try:
        proc = subprocess.run([octetc, "import", path, "--elide-weights", "-o", os.devnull],
                              capture_output=True, text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"{name}: hang (> {timeout} s)"
    finally:
        os.unlink(path)
    if proc.returncode == 0:
        return None
    if proc.returncode == 1 and "error:" in proc.stderr:
        return None
    return f"{name}: exit {proc.returncode}, stderr: {proc.stderr.strip()[:200]!r}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--octetc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=30)
    args = ap.parse_args()
    with open(args.model, "rb") as f:
        data = f.read()
    rng = random.Random(args.seed)
    cases = list(corruptions(data, args.cases, rng))
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        failures = [r for r in pool.map(lambda ic: run_case(args.octetc, workdir, ic[0], *ic[1], args.timeout),
                                        enumerate(cases)) if r]
    for failure in failures:
        print("FAILURE", failure)
    print(f"{len(cases)} corrupted models: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
