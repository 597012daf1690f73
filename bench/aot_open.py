#!/usr/bin/env python3
"""Opening an AOT model.so of BERT-base INT8 (docs/aot.md): how long octet_model_open takes
with each placement of the weights (option "constants": "mapped", read from the file's pages,
target <= 50 ms; "huge_pages", the default, copied onto 2 MiB pages), and what two processes
serving the same model.so share (mapped: its weight pages; huge_pages: a copy each).

  python3 bench/aot_open.py [--build build] [--int8 static|dynamic] [--opens 10]

Compiles BERT-base (test/models/make_bert_base.py, generated once into the temp directory)
with `octetc compile --int8=...`, then
  - per placement, opens it in --opens fresh processes through liboctet.so's
    octet_model_open (the file is in the page cache after the first), printing median / min /
    max of the open alone;
  - per placement, starts two processes that open it and run two batches, and sums the
    /proc/PID/smaps entries of the model.so's mappings in each: Rss, Pss, Shared_Clean /
    _Dirty, Private_Clean / _Dirty. Pages both map count half in each process's Pss; the
    process's anonymous memory (activations, Python; with huge_pages the weights' copy) and
    AnonHugePages show where the weights are.
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import octet  # noqa: E402  (the package of this checkout)

SMAPS_FIELDS = ("Rss", "Pss", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty")


def child_open(lib_path, so_path, placement):
    """Times octet_model_open alone in this fresh process; prints milliseconds."""
    lib = ctypes.CDLL(lib_path)
    lib.octet_model_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.octet_model_destroy.argtypes = [ctypes.c_void_p]
    lib.octet_options_create.restype = ctypes.c_void_p
    lib.octet_options_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.octet_last_error.restype = ctypes.c_char_p
    options = lib.octet_options_create()
    if lib.octet_options_set(options, b"constants", placement.encode()) != 0:
        sys.exit(f"octet_options_set: {lib.octet_last_error().decode()}")
    model = ctypes.c_void_p()
    start = time.perf_counter()
    status = lib.octet_model_open(so_path.encode(), options, ctypes.byref(model))
    ms = 1e3 * (time.perf_counter() - start)
    if status != 0:
        sys.exit(f"octet_model_open: {lib.octet_last_error().decode()}")
    print(f"{ms:.3f}")
    lib.octet_model_destroy(model)


def child_serve(lib_path, so_path, placement):
    """Opens the model (octet.load: the model.so serves itself), runs two 1 x 128 batches,
    says 'ready' with the milliseconds of the runs (the first also checks the weights'
    checksum), and waits for stdin to close."""
    model = octet.load(so_path, constants=placement)
    times = []
    rng = np.random.default_rng(0)
    arrays = []
    for info in model.inputs:
        if "mask" in info.name:
            arrays.append(np.ones((1, 128), np.int64))
        elif "type" in info.name:
            arrays.append(np.zeros((1, 128), np.int64))
        else:
            arrays.append(rng.integers(1000, 30000, size=(1, 128), dtype=np.int64))
    for _ in range(2):
        start = time.perf_counter()
        model.run(arrays)
        times.append(time.perf_counter() - start)
    print("ready " + " ".join(f"{1e3 * t:.1f}" for t in times), flush=True)
    sys.stdin.read()


def smaps_of(pid, so_path):
    """The summed smaps fields (kB) of every mapping of so_path in process pid."""
    real = os.path.realpath(so_path)
    totals = dict.fromkeys(SMAPS_FIELDS, 0)
    inside = False
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if not fields[0].endswith(":"):  # a mapping's header line
                inside = len(fields) >= 6 and fields[-1] == real
            elif inside and fields[0][:-1] in totals:
                totals[fields[0][:-1]] += int(fields[1])
    return totals


def rollup_of(pid, field):
    """A field of the process's smaps_rollup (kB): Anonymous, AnonHugePages."""
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="Octet build directory")
    p.add_argument("--model", help="BERT-base ONNX (default: generated into the temp directory)")
    p.add_argument("--int8", choices=("static", "dynamic"), default="static")
    p.add_argument("--calib", default="generate:4x2x128", help="--int8=static samples")
    p.add_argument("--opens", type=int, default=10, help="fresh processes that time the open")
    p.add_argument("--reuse", action="store_true", help="use the model.so of a previous run as it is")
    p.add_argument("--child-open", nargs=3, metavar=("LIB", "SO", "PLACEMENT"), help=argparse.SUPPRESS)
    p.add_argument("--child-serve", nargs=3, metavar=("LIB", "SO", "PLACEMENT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child_open:
        return child_open(*args.child_open)
    if args.child_serve:
        return child_serve(*args.child_serve)
    if args.opens < 1:
        p.error("--opens must be at least 1")

    octetc = os.path.join(args.build, "tools", "octetc", "octetc")
    lib = os.path.join(args.build, "runtime", "liboctet.so")
    model = args.model or os.path.join(tempfile.gettempdir(), "octet-bench-bert-base.onnx")
    if not os.path.exists(model):
        print(f"generating BERT-base into {model} ...", flush=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "test/models/make_bert_base.py"), "-o", model],
                       check=True)
    so = os.path.join(tempfile.gettempdir(), f"octet-bench-bert-base-int8-{args.int8}.so")
    command = [octetc, "compile", model, f"--int8={args.int8}", "-o", so]
    if args.int8 == "static":
        command += ["--calib", args.calib]
    if not (args.reuse and os.path.exists(so)):
        start = time.perf_counter()
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        print(f"$ {' '.join(command)}  ({time.perf_counter() - start:.1f} s)\n{out.strip()}")
        # Written back, the page cache's pages of the file are clean (else smaps says Dirty).
        os.sync()

    for placement in ("mapped", "huge_pages"):
        times = []
        for _ in range(args.opens):
            result = subprocess.run([sys.executable, __file__, "--child-open", lib, so, placement],
                                    check=True, capture_output=True, text=True)
            times.append(float(result.stdout))
        print(f"\nconstants={placement}: octet_model_open of {os.path.getsize(so) / 2**20:.1f} MiB, "
              f"{args.opens} fresh processes: median {statistics.median(times):.1f} ms, "
              f"min {min(times):.1f} ms, max {max(times):.1f} ms"
              + (" (target <= 50 ms)" if placement == "mapped" else ""))
        serve_two(lib, so, placement)


def serve_two(lib, so, placement):
    """Two processes serving the model.so with `placement`: their runs and memory."""
    servers = []
    try:
        for i in range(2):  # one after the other, so their runs do not share the cores
            server = subprocess.Popen([sys.executable, __file__, "--child-serve", lib, so, placement],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            servers.append(server)
            words = server.stdout.readline().split()
            if not words or words[0] != "ready":
                sys.exit("a serving process failed")
            print(f"serving process {i + 1}: first run 1x128 (with the weights' checksum) {words[1]} ms, "
                  f"second run {words[2]} ms")
        print(f"\nconstants={placement}: model.so mappings of two processes serving it "
              "(kB, /proc/PID/smaps):")
        print("| process | " + " | ".join(SMAPS_FIELDS) +
              " | whole process: Anonymous | AnonHugePages |")
        print("|---|" + "---:|" * (len(SMAPS_FIELDS) + 2))
        for i, server in enumerate(servers):
            totals = smaps_of(server.pid, so)
            print(f"| {i + 1} | " + " | ".join(str(totals[f]) for f in SMAPS_FIELDS) +
                  f" | {rollup_of(server.pid, 'Anonymous')} | {rollup_of(server.pid, 'AnonHugePages')} |")
    finally:
        for server in servers:
            server.stdin.close()
            server.wait()

if __name__ == "__main__":
    main()
