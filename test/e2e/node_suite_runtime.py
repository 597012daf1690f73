#!/usr/bin/env python3
"""Runs every ONNX backend node test that `octetc import` imports through the compiled FP32
runtime (`octetc run`: the full pipeline, PlanBuilder, the generic and kernel steps) and
compares its outputs with the test's expected ones, with check_semantics.py's readers and
tolerance (rtol 1e-4, atol 1e-5; integers and bools exactly).

  pass              octetc run exits 0 and every output matches
  expected failure  listed in node_suite_runtime_expected_failures.txt (with a reason each)
                    and still fails with a clear octetc error (exit 1, "error: ...")
  FAIL              anything else: an octetc error, a crash, a timeout, a missing output or a
                    mismatch
  not imported      `octetc import` rejects the model (or it has an op `octetc ops` does not
                    list); onnx_node_suite.py checks those errors
  STALE             listed as an expected failure but now passes (or no longer imports)

Inputs are the test's test_data_set_0/input_N.pb files, passed as --input NAME=input_N.pb
(an unnamed TensorProto takes the graph's N-th input name). Exits non-zero on any FAIL or
STALE.

Usage: node_suite_runtime.py --octetc OCTETC [--filter REGEX] [--jobs N] [--verbose]
"""
import argparse
import collections
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx

import check_semantics

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED_FAILURES = os.path.join(HERE, "node_suite_runtime_expected_failures.txt")

Result = collections.namedtuple("Result", "name status problems clear_error", defaults=(False,))


def first_error(stderr, returncode):
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    message = next((line for line in lines if "error:" in line), lines[0] if lines else "")
    if returncode < 0:
        return f"crashed with signal {-returncode}" + (f": {message}" if message else "")
    return message[:300] or f"exit {returncode}"


def op_types(model):
    """The (domain, op type) pairs of a model's graph, its subgraphs and its local functions;
    calls of the local functions themselves are left out."""
    local = {(f.domain, f.name) for f in model.functions}
    found = set()
    graphs = [model.graph] + list(model.functions)
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            found.add((node.domain or "", node.op_type))
            for attr in node.attribute:
                graphs += ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
    return found - local


def run_test(args, test_dir, work, supported):
    name = os.path.basename(test_dir)
    model_path = os.path.join(test_dir, "model.onnx")
    model = onnx.load(model_path, load_external_data=False)
    # An op octetc does not list cannot import: skip it without starting a process.
    if any(domain not in ("", "ai.onnx") or op not in supported for domain, op in op_types(model)):
        return Result(name, "not imported", [])
    model = onnx.load(model_path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    output_names = [o.name for o in model.graph.output]
    data = os.path.join(test_dir, "test_data_set_0")
    out_dir = os.path.join(work, name)
    command = [args.octetc, "run", model_path, "--output", out_dir, "--repeat", "1",
               "--warmup", "0", "--threads", str(args.threads)] + args.octetc_arg
    for path, tensor_name, _ in check_semantics.test_tensor_protos(data, "input", input_names):
        command += ["--input", f"{tensor_name}={path}"]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return Result(name, "FAIL", [f"timeout after {args.timeout} s"])
    if proc.returncode != 0:
        imported = subprocess.run([args.octetc, "import", model_path, "--emit-bytecode", "-o",
                                   os.devnull], capture_output=True, timeout=60)
        if imported.returncode != 0:
            return Result(name, "not imported", [])
        clear = proc.returncode == 1 and "error:" in proc.stderr
        return Result(name, "FAIL", ["octetc run: " + first_error(proc.stderr, proc.returncode)], clear)
    problems = []
    for out, want in check_semantics.read_test_tensors(data, "output", output_names).items():
        path = os.path.join(out_dir, out + ".npy")
        if not os.path.exists(path):
            problems.append(f"output '{out}' missing")
            continue
        why = check_semantics.compare(np.load(path), want, rtol=check_semantics.NODE_RTOL,
                                      atol=check_semantics.NODE_ATOL)
        if why:
            problems.append(f"{out}: {why}")
    return Result(name, "FAIL" if problems else "pass", problems)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--octetc", default="octetc")
    p.add_argument("--testdata", default=check_semantics.TESTDATA)
    p.add_argument("--expected-failures", default=EXPECTED_FAILURES)
    p.add_argument("--filter", default="", help="regex on node test names")
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--threads", type=int, default=1, help="octetc run --threads (default 1: "
                   "the node tests are tiny, and --jobs runs several at once)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per model")
    p.add_argument("--octetc-arg", action="append", default=[],
                   help="extra octetc run argument, e.g. --octetc-arg=--isa=avx2 (repeatable)")
    p.add_argument("--work", help="scratch folder (default: a temporary one)")
    p.add_argument("--verbose", "-v", action="store_true", help="one line per imported test")
    args = p.parse_args(argv)

    tests = sorted(d for d in glob.glob(os.path.join(args.testdata, "*"))
                   if os.path.exists(os.path.join(d, "model.onnx"))
                   and re.search(args.filter, os.path.basename(d)))
    if not tests:
        p.error(f"no <test>/model.onnx under {args.testdata} matching {args.filter!r}")
    expected = check_semantics.read_known(args.expected_failures)
    supported = set(subprocess.run([args.octetc, "ops"], capture_output=True, text=True,
                                   check=True).stdout.split())
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(lambda d: run_test(args, d, work, supported), tests))

    counts = collections.Counter()
    failed = False
    for name, status, problems, clear_error in results:
        # A listed test must still fail the way its reason says: a clear octetc error, never
        # a crash, a timeout or wrong numbers.
        if status == "FAIL" and name in expected and clear_error:
            status = "expected failure"
        counts[status] += 1
        if status == "FAIL":
            failed = True
            print(f"FAIL      {name}")
            for problem in problems:
                print(f"    {problem}")
        elif args.verbose and status != "not imported":
            print(f"{status:<9} {name}" + (f": {problems[0]}" if problems else ""))
    ran = {r.name: r.status for r in results}
    for name in sorted(expected):
        if name in ran and ran[name] != "FAIL":
            print(f"STALE     {name}: listed in {os.path.basename(args.expected_failures)} but "
                  + ("now passes" if ran[name] == "pass" else "no longer imports"))
            failed = True
    imported = len(results) - counts["not imported"]
    print(f"{len(results)} node tests: {imported} imported, {counts['pass']} pass in the runtime, "
          f"{counts['expected failure']} expected failures, {counts['FAIL']} FAILURES")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
