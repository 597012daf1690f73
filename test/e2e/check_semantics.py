#!/usr/bin/env python3
"""Checks the meaning of imported and rewritten octet IR with the reference interpreter.

  --node-suite   every ONNX backend node test that `octetc import` imports is run by
                 octet-interp on test_data_set_0, as imported and again after
                 `octet-cleanup,octet-recognize`, and compared to the expected outputs
                 (rtol 1e-4, atol 1e-5; integers and bools exactly). Tests listed in
                 semantics_known_differences.txt (with a reason each) are skipped.
  --model ARCH STYLE OPSET GELU
                 a small encoder from test/models/make_encoder.py is run by ONNX Runtime
                 and by octet-interp as imported, after
                 `octet-cleanup,octet-recognize,octet-cleanup` and after that plus
                 `octet-fuse-gemm-epilogue`; all must match ORT.
  --qdq MODE     the same for test/models/make_qdq.py's `static` or `dynamic` model.

Exits non-zero on any mismatch or interpreter error.

Usage: check_semantics.py --octetc OCTETC --interp OCTET_INTERP (--node-suite | --model bert torchscript 14 erf
       | --qdq static) [--work DIR]
"""
import argparse
import collections
import copy
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")
KNOWN = os.path.join(HERE, "semantics_known_differences.txt")
TESTDATA = "/usr/share/libonnx-testdata/data/node"
RECOGNIZE = "octet-cleanup,octet-recognize"
FULL = "octet-cleanup,octet-recognize,octet-cleanup"
FUSED = FULL + ",octet-fuse-gemm-epilogue"
NODE_RTOL, NODE_ATOL = 1e-4, 1e-5  # node tests' float outputs (node_suite_runtime.py too)

sys.path.insert(0, MODELS)


def compare(got, want, rtol, atol):
    """'' when equal within tolerance (exact for integers and bools), else why not."""
    if got.shape != want.shape:
        return f"shape {got.shape} != expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != expected {want.dtype}"
    if not np.issubdtype(want.dtype, np.floating):
        bad = got != want
        return f"{int(bad.sum())} of {want.size} elements differ" if bad.any() else ""
    g, w = got.astype(np.float64), want.astype(np.float64)
    close = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return ""
    err = np.abs(g - w)[~close]
    return f"{int((~close).sum())} of {want.size} elements differ, max |diff| {err.max():.3g}"


def run_interp(interp, model, feeds, outdir, pipeline=None):
    """Runs octet-interp; returns ({name: array}, '') or (None, error text)."""
    os.makedirs(outdir, exist_ok=True)
    args = [interp, model, "--output-dir", outdir]
    for name, array in feeds.items():
        path = os.path.join(outdir, f"in.{len(args)}.npy")
        np.save(path, np.array(array, order="C"))  # ascontiguousarray would make 0-D arrays 1-D
        args += ["--input", f"{name}={path}"]
    if pipeline:
        args += ["--pipeline", pipeline]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    if proc.returncode != 0:
        return None, (proc.stderr.strip() or f"exit {proc.returncode}").splitlines()[0][:300]
    return {os.path.basename(p)[:-4]: np.load(p) for p in glob.glob(os.path.join(outdir, "*.npy"))
            if not os.path.basename(p).startswith("in.")}, ""


# --------------------------------------------------------------------------- node suite

def read_known(path):
    """{test: reason} from 'name  # reason' lines."""
    known = {}
    if os.path.exists(path):
        for line in open(path):
            name, _, reason = line.partition("#")
            if name.strip():
                known[name.strip()] = reason.strip()
    return known


def test_tensor_protos(data_dir, kind, names):
    """[(path, name, TensorProto)] of a node test's <kind>_N.pb files, in N order; an unnamed
    tensor takes the graph's N-th name."""
    paths = sorted(glob.glob(os.path.join(data_dir, f"{kind}_*.pb")),
                   key=lambda p: int(re.findall(r"\d+", os.path.basename(p))[0]))
    protos = []
    for i, path in enumerate(paths):
        tensor = onnx.TensorProto()
        with open(path, "rb") as f:
            tensor.ParseFromString(f.read())
        protos.append((path, tensor.name or names[i], tensor))
    return protos


def read_test_tensors(data_dir, kind, names):
    """{name: array} from a node test's <kind>_N.pb files (see test_tensor_protos)."""
    return {name: numpy_helper.to_array(tensor)
            for _, name, tensor in test_tensor_protos(data_dir, kind, names)}


def node_test(args, test_dir, work):
    name = os.path.basename(test_dir)
    model_path = os.path.join(test_dir, "model.onnx")
    bytecode = os.path.join(work, name + ".mlirbc")
    proc = subprocess.run([args.octetc, "import", model_path, "--emit-bytecode", "-o", bytecode],
                          capture_output=True, timeout=60)
    if proc.returncode != 0:
        return name, "skipped", []
    model = onnx.load(model_path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    output_names = [o.name for o in model.graph.output]
    data = os.path.join(test_dir, "test_data_set_0")
    feeds = read_test_tensors(data, "input", input_names)
    want = read_test_tensors(data, "output", output_names)
    problems = []
    for label, pipeline in (("imported", None), ("recognized", RECOGNIZE)):
        got, error = run_interp(args.interp, bytecode, feeds, os.path.join(work, name, label), pipeline)
        if got is None:
            problems.append(f"{label}: interpreter error: {error}")
            continue
        for out, expected in want.items():
            if out not in got:
                problems.append(f"{label}: output '{out}' missing")
                continue
            why = compare(got[out], expected, rtol=NODE_RTOL, atol=NODE_ATOL)
            if why:
                problems.append(f"{label}: {out}: {why}")
    return name, ("MISMATCH" if problems else "match"), problems


def node_suite(args, work):
    known = read_known(args.known)
    tests = sorted(d for d in glob.glob(os.path.join(args.testdata, "*"))
                   if os.path.exists(os.path.join(d, "model.onnx")) and re.search(args.filter, os.path.basename(d)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda d: node_test(args, d, work), tests))
    counts = collections.Counter()
    failed = False
    for name, status, problems in results:
        if status == "MISMATCH" and name in known:
            status = "known difference"
        counts[status] += 1
        if status == "MISMATCH":
            failed = True
            print(f"MISMATCH  {name}")
            for p in problems:
                print(f"    {p}")
        elif args.verbose and status != "skipped":
            print(f"{status:<9} {name}")
    stale = sorted(set(known) - {n for n, s, _ in results if s == "MISMATCH"})
    for name in stale:
        if any(n == name for n, _, _ in results):
            print(f"STALE     {name}: listed in {os.path.basename(args.known)} but now matches or does not import")
            failed = True
    imported = counts["match"] + counts["MISMATCH"] + counts["known difference"]
    print(f"{len(results)} node tests: {imported} imported, {counts['match']} match, "
          f"{counts['known difference']} known differences, {counts['MISMATCH']} MISMATCHES")
    return 1 if failed else 0


# --------------------------------------------------------------------------- encoders

def run_ort_spec(model, feeds):
    """ONNX Runtime with graph optimizations off, so each node runs as the ONNX spec says."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, {n: feeds[n] for n in names})))


def exact_matmul_integer(model):
    """MatMulInteger spelled as an int32 MatMul of zero-point-shifted operands.

    ONNX Runtime's u8·s8 kernel on AVX2 without VNNI sums pairs of products in int16 with
    saturation (vpmaddubsw), so its MatMulInteger can be off by hundreds where the spec's
    exact sum is not; the int32 MatMul is exact."""
    from onnx import TensorProto, helper
    model = copy.deepcopy(model)
    nodes = []
    for n in model.graph.node:
        if n.op_type != "MatMulInteger":
            nodes.append(n)
            continue
        shifted = []
        for k, zp in ((0, 2), (1, 3)):
            x = f"{n.output[0]}__in{k}"
            nodes.append(helper.make_node("Cast", [n.input[k]], [x], to=TensorProto.INT32))
            if len(n.input) > zp and n.input[zp]:
                nodes.append(helper.make_node("Cast", [n.input[zp]], [x + "_zp"], to=TensorProto.INT32))
                nodes.append(helper.make_node("Sub", [x, x + "_zp"], [x + "_shifted"]))
                x += "_shifted"
            shifted.append(x)
        nodes.append(helper.make_node("MatMul", shifted, list(n.output), name=n.name))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


def check_against_ort(args, model, feeds, work, label, references,
                      stages=(("imported", None), ("recognized", FULL))):
    """Runs octet-interp after each (stage, pipeline) against each (name, outputs, tolerance)
    reference; a tolerance of None only reports the difference."""
    path = os.path.join(work, "model.onnx")
    onnx.save(model, path)
    ok = True
    for stage, pipeline in stages:
        got, error = run_interp(args.interp, path, feeds, os.path.join(work, stage), pipeline)
        if got is None:
            print(f"ERROR     {label} {stage}: {error}")
            ok = False
            continue
        for ref, want, tolerance in references:
            for name, expected in want.items():
                diff = (float(np.abs(got[name].astype(np.float64) - expected).max())
                        if name in got and got[name].shape == expected.shape else float("inf"))
                good = tolerance is None or diff <= tolerance
                verdict = "info" if tolerance is None else "ok" if good else "MISMATCH"
                print(f"{verdict:<9} {label} {stage}: {name} max |interp - {ref}| = {diff:.3g}"
                      + ("" if tolerance is None else f" (tolerance {tolerance:g})"))
                ok &= good
    return 0 if ok else 1


def encoder(args, work):
    import make_encoder
    import reference
    arch, style, opset, gelu = args.model
    model, _, cfg = make_encoder.make_encoder(arch=arch, style=style, opset=int(opset), gelu=gelu)
    feeds = {k: v for k, v in reference.random_inputs(cfg).items()
             if k in {i.name for i in model.graph.input}}
    import make_encoder
    return check_against_ort(args, model, feeds, work, f"{arch}-{style}-opset{opset}-{gelu}",
                             [("ORT", make_encoder.run_ort(model, feeds), 1e-4)],
                             (("imported", None), ("recognized", FULL), ("fused", FUSED)))


def qdq(args, work):
    import reference
    subprocess.run([sys.executable, os.path.join(MODELS, "make_qdq.py"), "--mode", args.qdq, "--out-dir", work,
                    "--quiet"], check=True, stdout=subprocess.DEVNULL)
    model = onnx.load(os.path.join(work, f"bert-{args.qdq}.onnx"))
    cfg = reference.EncoderConfig(arch="bert")
    feeds = {k: v for k, v in reference.random_inputs(cfg, seed=7).items()
             if k in {i.name for i in model.graph.input}}
    # The meaning check is against ORT computing what the ONNX spec says: graph optimizations
    # off (no fused QLinear/int8 kernels) and MatMulInteger made exact. Every op is then the
    # same float32 or exact integer arithmetic as ours, so 1e-4 holds (measured < 1e-6); a
    # quantization step that flipped would show as a jump of a whole scale step (> 1e-2).
    # The default ORT session is only reported: its AVX2 u8·s8 kernels saturate int16 pair
    # sums (see exact_matmul_integer), which moves outputs by up to ~0.5 on this model.
    import make_encoder
    return check_against_ort(args, model, feeds, work, f"bert-{args.qdq}",
                             [("ORT (spec semantics)", run_ort_spec(exact_matmul_integer(model), feeds), 1e-4),
                              ("ORT (default kernels)", make_encoder.run_ort(model, feeds), None)])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--octetc", default="octetc")
    p.add_argument("--interp", default="octet-interp")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--node-suite", action="store_true")
    mode.add_argument("--model", nargs=4, metavar=("ARCH", "STYLE", "OPSET", "GELU"))
    mode.add_argument("--qdq", choices=("static", "dynamic"))
    p.add_argument("--testdata", default=TESTDATA)
    p.add_argument("--known", default=KNOWN)
    p.add_argument("--filter", default="", help="regex on node test names")
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--work", help="scratch folder (default: a temporary one)")
    p.add_argument("--verbose", "-v", action="store_true")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        if args.node_suite:
            return node_suite(args, work)
        return encoder(args, work) if args.model else qdq(args, work)


if __name__ == "__main__":
    sys.exit(main())
