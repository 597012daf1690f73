#!/usr/bin/env python3
"""Builds the libFuzzer targets with Debian's clang (-fsanitize=fuzzer,address,undefined)
against an Octet build tree (default build/, built with gcc: same libstdc++ ABI). The code
under test is compiled into each target with coverage; the rest links from the tree's
archives (uninstrumented). Flags per source come from the tree's compile_commands.json.

  build.py [--build-dir build] [--clang clang++-14] [TARGET ...]

Targets: onnx_import (bytes -> import -> verify), plan_image (readPlanImage on
re-sealed mutated images), octet_run (the C API's input validation). Outputs:
BUILD/fuzz/<target>_fuzzer.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize=vptr", "-fno-sanitize-recover=all"]

# target: (harness, instrumented sources, archives (relative to the build tree), extra libs)
TARGETS = {
    "onnx_import": ("test/fuzz/onnx_import_fuzzer.cpp",
                    ["frontends/onnx/Importer.cpp", "frontends/onnx/GraphImporter.cpp",
                     "frontends/onnx/OnnxOps.cpp", "frontends/onnx/OnnxIndexingOps.cpp"],
                    ["frontends/onnx/libOctetOnnxImporter.a", "compiler/ir/libOctetIR.a"],
                    ["/usr/lib/llvm-22/lib/libMLIR.so.22.1", "/usr/lib/llvm-22/lib/libLLVM.so.1",
                     "-lonnx", "-lonnx_proto", "-lprotobuf", "-Wl,-rpath,/usr/lib/llvm-22/lib"]),
    "plan_image": ("test/fuzz/plan_image_fuzzer.cpp",
                   ["runtime/PlanImage.cpp", "runtime/StepRecipe.cpp", "runtime/Plan.cpp"],
                   [], []),
    "octet_run": ("test/fuzz/octet_run_fuzzer.cpp",
                  ["runtime/CApi.cpp", "runtime/CApiTools.cpp", "runtime/Executor.cpp"], [], []),
}
# What every target links after its own: the runtime and kernels (in dependency order).
RUNTIME = ["runtime/libOctetAotLoader.a", "runtime/libOctetRuntime.a",
           "compiler/codegen/libOctetX86Kernels.a", "runtime/libOctetTokenLayout.a",
           "compiler/codegen/onednn/libOctetOneDnnKernels.a", "compiler/codegen/libOctetCommon.a"]
SYSTEM = ["-ldnnl", "-lgomp", "-lpthread", "-ldl", "-lm"]


def flags_for(commands, source):
    for entry in commands:
        if os.path.realpath(entry["file"]) == os.path.realpath(os.path.join(SRC, source)):
            words = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
            keep, skip = [], False
            for word in words[1:]:
                if skip:
                    skip = False
                    continue
                if word in ("-o", "-c", "-MF", "-MT"):
                    skip = True
                    continue
                if word in ("-MD", "/usr/bin/c++", "/usr/bin/g++") or word.startswith("-O") \
                        or word.startswith("-fsanitize") or word == "-fno-sanitize-recover=all" \
                        or word.endswith(source.split("/")[-1]) or "ccache" in word:
                    continue
                # clang's -fopenmp means libomp; Octet and oneDNN use libgomp.
                keep.append("-fopenmp=libgomp" if word == "-fopenmp" else word)
            return keep
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(SRC, "build"))
    ap.add_argument("--clang", default=shutil.which("clang++-14") or shutil.which("clang++") or "clang++")
    ap.add_argument("targets", nargs="*", default=list(TARGETS))
    args = ap.parse_args()
    build = os.path.abspath(args.build_dir)
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    out = os.path.join(build, "fuzz")
    os.makedirs(out, exist_ok=True)
    # Headers of the harnesses: the runtime's include dirs and the unit tests' helpers.
    base = flags_for(commands, "runtime/CApi.cpp") or []
    jobs = []
    # Sources that a checkout may not have yet are left out.
    for target in TARGETS:
        harness, sources, archives, libs = TARGETS[target]
        TARGETS[target] = (harness, [s for s in sources if os.path.exists(os.path.join(SRC, s))],
                           archives, libs)
    for target in args.targets:
        harness, sources, _, _ = TARGETS[target]
        for source in [harness] + sources:
            flags = flags_for(commands, source)
            if flags is None:
                flags = flags_for(commands, sources[0]) or base
            instrument = ["-fsanitize=fuzzer-no-link"] if source != harness else ["-fsanitize=fuzzer-no-link"]
            obj = os.path.join(out, target + "." + source.replace("/", "_") + ".o")
            jobs.append((obj, [args.clang] + flags + ["-O1", "-g", "-w"] + instrument + SANITIZE +
                        ["-MD", "-MF", obj + ".d", "-c", os.path.join(SRC, source), "-o", obj]))

    def up_to_date(obj):
        """The object is newer than its source and every header it included (its depfile):
        a changed class layout in a header must rebuild the harness too."""
        if not os.path.exists(obj) or not os.path.exists(obj + ".d"):
            return False
        with open(obj + ".d") as f:
            deps = f.read().replace("\\\n", " ").split(":", 1)[-1].split()
        built = os.path.getmtime(obj)
        return all(os.path.exists(d) and os.path.getmtime(d) <= built for d in deps)

    def compile_one(job):
        obj, command = job
        if up_to_date(obj):
            return None
        proc = subprocess.run(command, capture_output=True, text=True)
        return None if proc.returncode == 0 else f"{' '.join(command)}\n{proc.stderr[-3000:]}"

    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        errors = [e for e in pool.map(compile_one, jobs) if e]
    if errors:
        sys.exit("\n".join(errors))
    for target in args.targets:
        harness, sources, archives, libs = TARGETS[target]
        objects = [os.path.join(out, target + "." + s.replace("/", "_") + ".o") for s in [harness] + sources]
        binary = os.path.join(out, target + "_fuzzer")
        command = ([args.clang, "-fsanitize=fuzzer"] + SANITIZE + ["-o", binary] + objects +
                   ["-Wl,--start-group"] + [os.path.join(build, a) for a in archives + RUNTIME] +
                   ["-Wl,--end-group", "-Wl,--allow-multiple-definition"] + libs + SYSTEM)
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"linking {target}: {' '.join(command)}\n{proc.stderr[-4000:]}")
        print(binary)


if __name__ == "__main__":
    main()
