#!/usr/bin/env python3
"""Runs `octetc import` over every ONNX backend node test model and classifies the result.

  imported     exit 0 with IR on stdout
  clear error  exit 1, and stderr has `error:` naming the op type, the node (its name, an
               output name or its index when unnamed), the domain and the opset; or an
               explicit "unsupported opset" / "unsupported type" message naming the node or
               the model
  FAILURE      a signal (crash), a timeout, any other exit code, exit 1 without a clear
               message, or exit 0 with empty output

Exits non-zero on any FAILURE and when a model listed in node_suite_expected_pass.txt no
longer imports (the regression guard). --update-expected rewrites that list from this run.

Usage: onnx_node_suite.py --octetc build/tools/octetc/octetc [--verbose] [--update-expected]
"""
import argparse
import collections
import concurrent.futures
import os
import re
import signal
import subprocess
import sys

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "node_suite_expected_pass.txt")
TESTDATA = "/usr/share/libonnx-testdata/data/node"

Result = collections.namedtuple("Result", "name status detail")
IMPORTED, CLEAR, FAILURE = "imported", "clear error", "FAILURE"


def graph_nodes(graph):
    """(index, node) of a graph and, recursively, of its If/Loop/Scan bodies."""
    for index, node in enumerate(graph.node):
        yield index, node
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                yield from graph_nodes(sub)


def mentions(text, word):
    return re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text) is not None


def names_a_node(stderr, model):
    """The stderr names some node: its op type, its identity, its domain and its opset."""
    opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    for index, node in graph_nodes(model.graph):
        domain = node.domain or "ai.onnx"
        identities = [n for n in [node.name, *node.output] if n]
        if not (mentions(stderr, node.op_type) and
                (any(mentions(stderr, n) for n in identities) or
                 re.search(rf"(#|node |index ){index}\b", stderr))):
            continue
        domain_named = mentions(stderr, domain) or (
            domain == "ai.onnx" and re.search(r"default domain|domain (''|\"\")", stderr))
        if domain_named and domain in opsets and re.search(rf"(?<![\d.]){opsets[domain]}(?!\d)", stderr):
            return True
    return False


def names_model_or_node(stderr, model, path):
    names = {path, os.path.basename(os.path.dirname(path)), model.graph.name}
    names |= {v.name for v in list(model.graph.input) + list(model.graph.output)}
    for _, node in graph_nodes(model.graph):
        names |= {n for n in [node.name, node.op_type, *node.output] if n}
    return any(n and n in stderr for n in names)


def classify(stderr, returncode, stdout, model, path):
    if returncode == 0:
        return (IMPORTED, "") if stdout.strip() else (FAILURE, "exit 0 but empty output")
    if returncode < 0:
        return FAILURE, f"crashed: {signal.Signals(-returncode).name}"
    if returncode != 1:
        return FAILURE, f"exit {returncode}"
    first_error = next((line for line in stderr.splitlines() if "error:" in line), "")
    if first_error and names_a_node(stderr, model):
        return CLEAR, first_error.strip()
    explicit = re.search(r"unsupported (element )?(opset|type)", stderr, re.IGNORECASE)
    if first_error and explicit and names_model_or_node(stderr, model, path):
        return CLEAR, first_error.strip()
    return FAILURE, "exit 1 without a clear error: " + (stderr.strip().splitlines() or ["(no stderr)"])[0][:200]


def run_one(octetc, path, timeout):
    name = os.path.basename(os.path.dirname(path))
    try:
        proc = subprocess.run([octetc, "import", path], capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Result(name, FAILURE, f"timeout after {timeout} s")
    model = onnx.load(path, load_external_data=False)
    stderr = proc.stderr.decode(errors="replace")
    status, detail = classify(stderr, proc.returncode, proc.stdout.decode(errors="replace"), model, path)
    return Result(name, status, detail)


def read_expected(path):
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def write_expected(path, names):
    with open(path, "w") as f:
        f.write("# ONNX backend node tests that `octetc import` imports (regression guard).\n"
                "# Regenerate: test/e2e/onnx_node_suite.py --octetc OCTETC --update-expected\n")
        f.writelines(f"{n}\n" for n in sorted(names))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--octetc", required=True, help="path to (or name on PATH of) octetc")
    p.add_argument("--testdata", default=TESTDATA, help="folder of <test>/model.onnx")
    p.add_argument("--filter", default="", help="regex on test names")
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per model")
    p.add_argument("--expected", default=EXPECTED)
    p.add_argument("--update-expected", action="store_true")
    p.add_argument("--verbose", "-v", action="store_true", help="one line per model")
    args = p.parse_args(argv)

    models = sorted(os.path.join(args.testdata, d, "model.onnx") for d in os.listdir(args.testdata)
                    if re.search(args.filter, d) and os.path.exists(os.path.join(args.testdata, d, "model.onnx")))
    if not models:
        p.error(f"no model.onnx under {args.testdata} matching {args.filter!r}")
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda m: run_one(args.octetc, m, args.timeout), models))

    counts = collections.Counter(r.status for r in results)
    for r in results:
        if args.verbose or r.status == FAILURE:
            print(f"{r.status:<12} {r.name}" + (f": {r.detail}" if r.detail else ""))
    print(f"{len(results)} models: {counts[IMPORTED]} imported, {counts[CLEAR]} clear errors, "
          f"{counts[FAILURE]} FAILURES")

    imported = {r.name for r in results if r.status == IMPORTED}
    ok = counts[FAILURE] == 0
    if args.update_expected:
        write_expected(args.expected, imported)
        print(f"wrote {len(imported)} names to {args.expected}")
    else:
        ran = {r.name for r in results}
        regressed = sorted((read_expected(args.expected) & ran) - imported)
        for name in regressed:
            print(f"REGRESSION   {name}: listed in {os.path.basename(args.expected)} but no longer imports")
        ok &= not regressed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
