#!/usr/bin/env python3
"""Octet on the real Hugging Face exports of test/models/exports (test/models/export_hf.py).

For every fixture of the manifest (or those --filter selects), with the built tools:

  import   `octetc import` (bytecode); on failure, its first error message;
  fusion   `octet-opt -octet-cleanup -octet-recognize -octet-cleanup` on the imported IR,
           counting octet.attention, octet.layer_norm + octet.add_layer_norm and octet.gelu:
           attention == layers, GELU == layers, LayerNorm >= 2 x layers;
  fp32     one `octetc run --input-sets` over batch 1 and 3 x sequence 1, 7, 33 (masks with
           padded tails, pad token ids under them, one row fully real) against ONNX Runtime
           (graph optimizations off), every output:
               max|octet - ort| <= 1e-4 * max(1, max|ort|);
  int8     `octetc run --int8=static` (calibrated on a small directory of input sets written
           here, with the model's own pad id) and `--int8=dynamic` on the same sets: cosine to
           Octet's FP32 on the main output (the first: last_hidden_state or logits) >= 0.999
           over all sets together, and >= 0.99 on each set.

A fixture fails at the stages whose check fails (a failed import stops the others).
test/e2e/hf_exports_expected_failures.txt lists what is known to fail, one
"FIXTURE-GLOB  STAGE[,STAGE...]: reason" a line (globs over "<transformers>/<fixture>"; the
first matching line counts): a listed fixture must fail at exactly those stages (XFAIL); one
that fails at other stages, or passes ("now passes, remove from the list"), is a failure, so
that the list stays true.

Prints one table and "PASS: ..." or "FAIL: ..."; exits nonzero on any failure not expected.

    hf_exports.py --octetc octetc --octet-opt octet-opt [--filter 'bert-*,5.23.0/xlmr-*']
                  [--jobs 2] [--keep DIR] [--expected-failures FILE] [--manifest FILE]
"""
import argparse
import concurrent.futures
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import token_outputs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXPORTS = os.path.join(ROOT, "test", "models", "exports")
EXPECTED_FAILURES = os.path.join(HERE, "hf_exports_expected_failures.txt")

STAGES = ("import", "fp32", "int8", "fusion")
SHAPES = [(1, 1), (1, 7), (1, 33), (3, 1), (3, 7), (3, 33)]
# Calibration input sets (batch, sequence): the lengths the test runs, other tokens. Ranges
# taken on long sequences alone miss a short one's (one token attends to itself only).
CALIB_SHAPES = [(8, 1), (8, 3), (8, 7), (8, 12), (8, 16), (8, 24), (8, 33), (8, 33)]
TOLERANCE = 1e-4
# INT8: the cosine over the main output of all sets together (the bound), and a floor
# for each set alone. One set at sequence 1 is 32 to 96 numbers (3 to 9 for logits), where the
# rounding of a few values moves the cosine by 1e-3; the floor still catches a shape that INT8
# gets wrong rather than coarse.
COSINE = 0.999
SET_COSINE = 0.99
INT8_CONFIGS = {"static": ["--int8=static"], "dynamic": ["--int8=dynamic"]}
FUSED_OPS = {"attention": ("attention",), "layer_norm": ("layer_norm", "add_layer_norm"),
             "gelu": ("gelu",)}


def run_tool(command):
    """subprocess.run, with a tool that cannot start (missing, being relinked) as a failed run
    with the reason as its message instead of a traceback."""
    try:
        return subprocess.run(command, capture_output=True, text=True)
    except OSError as error:
        return subprocess.CompletedProcess(command, 127, "", f"error: cannot run {command[0]}: {error}")


def resolve_tools(parser, args):
    """args.octetc and args.octet_opt as absolute paths, or a usage error. A bare name is looked
    up with which(): a PATH entry that holds a folder of the tool's name (build/tools/octetc)
    makes subprocess fail with "Permission denied" where which() skips it."""
    for option in ("octetc", "octet_opt"):
        found = shutil.which(getattr(args, option))
        if not found:
            parser.error(f"{getattr(args, option)}: not found (build it, or give its path)")
        setattr(args, option, os.path.abspath(found))


def import_and_fuse(octetc, octet_opt, model, bytecode):
    """(import error or None, fused-op counts or None, octet-opt error or None): `octetc
    import` to bytecode, then cleanup + recognize + cleanup, counting the fused ops."""
    proc = run_tool([octetc, "import", model, "--emit-bytecode", "-o", bytecode])
    if proc.returncode != 0:
        return first_error(proc).replace(model, os.path.basename(model)), None, None
    proc = run_tool([octet_opt, bytecode, "-octet-cleanup", "-octet-recognize", "-octet-cleanup",
                     "--mlir-elide-elementsattrs-if-larger=4"])
    if proc.returncode != 0:
        return None, None, "octet-opt: " + first_error(proc)
    return None, count_fused(proc.stdout), None


def first_error(proc):
    """The first line that says error (else the last line) of a failed tool run."""
    lines = [line.strip() for line in (proc.stderr + "\n" + proc.stdout).splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower():
            return line
    return lines[-1] if lines else f"exit status {proc.returncode}, no message"


def make_feeds(input_names, batch, seq, vocab, pad, rng):
    """Token ids in [3, vocab) over the real tokens, the pad id under the mask's zeros (as a
    tokenizer writes them: RoBERTa-style position ids count the non-pad tokens); row 0 fully
    real, the other rows (and a batch-1 set of 7) with a padded tail of >= 1 real token."""
    mask = np.ones((batch, seq), dtype=np.int64)
    for row in range(batch):
        if row > 0 or (batch == 1 and seq == 7):
            mask[row, max(1, seq - (seq // 3 + row)):] = 0
    ids = rng.integers(3, vocab, size=(batch, seq), dtype=np.int64)
    ids[mask == 0] = pad
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in input_names:
        types = np.zeros((batch, seq), dtype=np.int64)
        types[:, seq // 2:] = 1
        types[mask == 0] = 0
        feeds["token_type_ids"] = types
    unknown = set(input_names) - set(feeds)
    if unknown:
        raise ValueError("fixture input(s) the driver cannot make: " + ", ".join(sorted(unknown)))
    return {name: feeds[name] for name in input_names}


def write_sets(folder, sets):
    for set_name, feeds in sets.items():
        os.makedirs(os.path.join(folder, set_name), exist_ok=True)
        for name, value in feeds.items():
            np.save(os.path.join(folder, set_name, name + ".npy"), value)


def octetc_run(octetc, model, sets_dir, out_dir, extra):
    return run_tool([octetc, "run", model, "--input-sets", sets_dir, "--output", out_dir,
                     "--repeat", "1", "--warmup", "0", "--threads", "1"] + extra)


def load_outputs(out_dir, sets, names):
    """{set: {output: array}} of an octetc run; a missing file is a clear error."""
    result = {}
    for set_name in sets:
        result[set_name] = {}
        for name in names:
            path = os.path.join(out_dir, set_name, name + ".npy")
            if not os.path.exists(path):
                raise RuntimeError(f"octetc wrote no {set_name}/{name}.npy")
            result[set_name][name] = np.load(path)
    return result


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    denominator = np.linalg.norm(a) * np.linalg.norm(b)
    value = float(a @ b / denominator) if denominator > 0 else float(np.array_equal(a, b))
    return value if np.isfinite(value) else -1.0


def count_fused(ir_text):
    counts = {}
    for key, names in FUSED_OPS.items():
        counts[key] = sum(len(re.findall(r"\boctet\.%s\b" % re.escape(n), ir_text)) for n in names)
    return counts


def check_fixture(fixture, args, work):
    """Runs the stages on one fixture; returns a result dict (the failing stages with their
    first message, the table's figures)."""
    import onnxruntime as ort

    ident = f"{fixture['transformers']}/{fixture['fixture']}"
    model = os.path.join(os.path.dirname(os.path.abspath(args.manifest)), fixture["file"])
    folder = os.path.join(work, ident.replace("/", "_"))
    os.makedirs(folder, exist_ok=True)
    result = {"id": ident, "failures": {}, "imports": "-", "fp32": "-", "int8": "-",
              "fused": "-", "seconds": 0.0}
    start = time.time()

    def fail(stage, message):  # the first message of each stage
        result["failures"].setdefault(stage, message)

    # import, then fusion (whose verdict counts after the numeric stages: those say more)
    import_error, counts, fusion_error = import_and_fuse(
        args.octetc, args.octet_opt, model, os.path.join(folder, "model.mlirbc"))
    if import_error:
        result["imports"] = "no"
        fail("import", import_error)
        result["seconds"] = time.time() - start
        return result
    result["imports"] = "yes"
    if counts is not None:
        layers = fixture["layers"]
        result["fused"] = "%d/%d/%d" % (counts["attention"], counts["layer_norm"], counts["gelu"])
        missing = []
        if counts["attention"] != layers:
            missing.append(f"{counts['attention']} attention for {layers} layers")
        if counts["gelu"] != layers:
            missing.append(f"{counts['gelu']} GELU for {layers} layers")
        if counts["layer_norm"] < 2 * layers:
            missing.append(f"{counts['layer_norm']} LayerNorm for {layers} layers (>= {2 * layers})")
        if missing:
            fusion_error = "fused " + ", ".join(missing)

    # fp32 against ORT
    rng = np.random.default_rng(zlib.crc32(ident.encode()))
    sets = {"b%d_s%02d" % (b, s): make_feeds(fixture["inputs"], b, s, fixture["vocab"],
                                             fixture["pad_token_id"], rng) for b, s in SHAPES}
    sets_dir = os.path.join(folder, "inputs")
    write_sets(sets_dir, sets)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    try:
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        expected = {s: dict(zip(names, session.run(None, feeds))) for s, feeds in sets.items()}
    except Exception as error:  # noqa: BLE001 (ORT raises its own types): the reference is gone
        fail("fp32", f"onnxruntime: {type(error).__name__}: {str(error).splitlines()[0]}")
        result["seconds"] = time.time() - start
        return result

    proc = octetc_run(args.octetc, model, sets_dir, os.path.join(folder, "fp32"), [])
    fp32 = None
    if proc.returncode != 0:
        fail("fp32", "octetc run: " + first_error(proc))
    else:
        try:
            fp32 = load_outputs(os.path.join(folder, "fp32"), sets, names)
        except RuntimeError as error:
            fail("fp32", str(error))
    if fp32 is not None:
        worst, where = 0.0, ""
        for set_name, outputs in expected.items():
            for name, want in outputs.items():
                got = fp32[set_name][name]
                # Padding positions of per-token outputs are 0 (docs/padding-free.md).
                want = token_outputs.zero_padding(want, token_outputs.find_mask(sets[set_name]))
                if got.shape != want.shape or got.dtype != want.dtype:
                    fail("fp32", f"{set_name} {name}: {got.dtype} {got.shape}, ORT {want.dtype} "
                                 f"{want.shape}")
                    continue
                if not np.isfinite(got).all():
                    fail("fp32", f"{set_name} {name}: non-finite values")
                    continue
                scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
                err = float(np.max(np.abs(got.astype(np.float64) - want))) / scale if want.size else 0.0
                if err > worst:
                    worst, where = err, f"{set_name} {name}"
        result["fp32"] = "%.1e" % worst
        if worst > TOLERANCE:
            fail("fp32", f"max|octet - ort| = {worst:.2e} x max(1, max|ort|) at {where} (> {TOLERANCE})")

    # int8 static and dynamic against Octet's FP32 on the main output
    if fp32 is not None and not args.no_int8:
        calib_dir = os.path.join(folder, "calib")
        calib_rng = np.random.default_rng(zlib.crc32(ident.encode()) + 1)
        write_sets(calib_dir, {"c%d" % i: make_feeds(fixture["inputs"], b, s, fixture["vocab"],
                                                     fixture["pad_token_id"], calib_rng)
                               for i, (b, s) in enumerate(CALIB_SHAPES)})
        main = names[0]
        cosines = []
        for config, extra in INT8_CONFIGS.items():
            if config == "static":
                extra = extra + ["--calib=" + calib_dir]
            out_dir = os.path.join(folder, "int8-" + config)
            proc = octetc_run(args.octetc, model, sets_dir, out_dir, extra)
            if proc.returncode != 0:
                fail("int8", f"--int8={config}: " + first_error(proc))
                cosines.append("err")
                continue
            try:
                got = load_outputs(out_dir, sets, [main])
            except RuntimeError as error:
                fail("int8", f"--int8={config}: {error}")
                cosines.append("err")
                continue
            low, low_set = 1.0, ""
            for set_name in sets:
                cos = cosine(got[set_name][main], fp32[set_name][main])
                if cos < low:
                    low, low_set = cos, set_name
            overall = cosine(np.concatenate([got[x][main].ravel() for x in sets]),
                             np.concatenate([fp32[x][main].ravel() for x in sets]))
            cosines.append("%.4f" % overall)
            if overall < COSINE:
                fail("int8", f"--int8={config}: cosine {overall:.4f} to FP32 on {main} over all "
                             f"sets (< {COSINE})")
            elif low < SET_COSINE:
                fail("int8", f"--int8={config}: cosine {low:.4f} to FP32 at {low_set} {main} "
                             f"(< {SET_COSINE})")
        result["int8"] = "/".join(cosines)

    if fusion_error:
        fail("fusion", fusion_error)
    result["seconds"] = time.time() - start
    return result


def read_expected(path):
    """[(glob, [stages], reason, line number)] of the expected-failures file."""
    entries = []
    if not os.path.exists(path):
        return entries
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            stages, _, reason = (parts[1] if len(parts) > 1 else "").partition(":")
            stages = [stage.strip() for stage in stages.split(",")]
            if not reason.strip() or not all(stage in STAGES for stage in stages):
                raise SystemExit(f"{path}:{number}: expected 'FIXTURE-GLOB  STAGE[,STAGE...]: "
                                 f"reason' with STAGE one of {', '.join(STAGES)}; got {line!r}")
            entries.append((parts[0], stages, reason.strip(), number))
    return entries


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--octetc", required=True)
    parser.add_argument("--octet-opt", required=True)
    parser.add_argument("--filter", help="comma-separated globs over '<transformers>/<fixture>' "
                                         "or '<fixture>' (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="fixtures checked at once (default 2)")
    parser.add_argument("--manifest", default=os.path.join(EXPORTS, "manifest.json"),
                        help="the fixtures (files relative to its folder; default: %(default)s)")
    parser.add_argument("--expected-failures", default=EXPECTED_FAILURES)
    parser.add_argument("--no-int8", action="store_true", help="skip the INT8 stage")
    parser.add_argument("--keep", help="keep the inputs, IR and outputs in this folder")
    parser.add_argument("--verbose", action="store_true", help="print every fixture's message")
    args = parser.parse_args()
    resolve_tools(parser, args)

    with open(args.manifest) as f:
        fixtures = json.load(f)["fixtures"]
    if args.filter:
        globs = args.filter.split(",")
        fixtures = [x for x in fixtures
                    if any(fnmatch.fnmatch(f"{x['transformers']}/{x['fixture']}", g)
                           or fnmatch.fnmatch(x["fixture"], g) for g in globs)]
        if not fixtures:
            parser.error(f"--filter {args.filter!r} selects no fixture of the manifest")
    expected = read_expected(args.expected_failures)

    work = args.keep or tempfile.mkdtemp(prefix="octet-hf-")
    os.makedirs(work, exist_ok=True)
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(lambda x: check_fixture(x, args, work), fixtures))

    rows, unexpected, xfails, passes = [], 0, 0, 0
    used = set()
    name = os.path.basename(args.expected_failures)
    for r in results:
        failing = [stage for stage in STAGES if stage in r["failures"]]
        messages = "; ".join(f"{stage}: {r['failures'][stage]}" for stage in failing)
        match = next((e for e in expected if fnmatch.fnmatch(r["id"], e[0])), None)
        if match:
            used.add(match[3])
        if not failing and match is None:
            status = "ok"
            passes += 1
        elif not failing:
            status = f"FAIL: now passes, remove from the list ({name}:{match[3]} {match[0]})"
            unexpected += 1
        elif match is None:
            status = "FAIL: " + messages
            unexpected += 1
        elif set(failing) != set(match[1]):
            status = (f"FAIL: expected to fail at {','.join(match[1])} ({name}:{match[3]}), "
                      f"fails at {','.join(failing) or 'none'}: {messages}")
            unexpected += 1
        else:
            status = "XFAIL " + (messages if args.verbose else ",".join(failing))
            xfails += 1
        rows.append((r["id"], r["imports"], r["fp32"], r["int8"], r["fused"], status))
    header = ("fixture", "imports", "fp32 err", "int8 cos s/d", "attn/LN/GELU", "status")
    widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header) - 1)]
    for row in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + "  " + row[-1])
    stale = [e for e in expected if e[3] not in used and not args.filter]
    for glob, _, _, number in stale:
        print(f"FAIL: {name}:{number}: '{glob}' matches no fixture; remove it")
    unexpected += len(stale)
    print("%s: %d ok, %d expected failure(s), %d unexpected (%d fixtures, %.0fs)" % (
        "PASS" if unexpected == 0 else "FAIL", passes, xfails, unexpected, len(results),
        time.time() - start))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if unexpected == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
