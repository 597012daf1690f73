#!/usr/bin/env python3
"""The hostile-input probes of issue 18, rerun: each case runs in its own process
with a time limit and counts as a clean error (exit 1 with an `error:` line, or
a C API status with a message), a success, a crash (a signal, or any other exit)
or a hang. Nothing may be read outside a model's folder: the marker written
beside the models must never appear in any output.

  hostile_probe.py models --octetc PATH --model M.onnx [--cases N] [--seed S]
      N byte-mutated copies of M (truncations, flips, overwritten runs) through
      `octetc run`, and the hostile external-data models of
      test/lit/onnx/Inputs/hostile_models.py through `octetc import` and `run`
  hostile_probe.py so --octetc PATH --lib LIBOCTET --so MODEL.so [--flips N] [--seed S]
      copies of MODEL.so with N single-bit flips in each region the dynamic
      loader reads (ELF and program headers, .dynamic, .rela.*, .gnu.hash,
      .dynsym, .dynstr) and in .text, .rodata and the trailer, plus a
      truncated, an extended and a FIFO one, each through `octetc run` and
      through octet_model_open + octet_model_destroy of LIBOCTET
  hostile_probe.py leak --lib LIBOCTET --so MODEL.so [--cycles 300]
      heap and RSS growth over octet_model_open + octet_model_destroy cycles
      (fails above --max-bytes-per-cycle of heap, default 1024)
"""
import argparse
import ctypes
import os
import random
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SECRET = b"SECRET-"


class Tally:
    def __init__(self):
        self.counts = {"clean error": 0, "success": 0, "crash": 0, "hang": 0, "read outside": 0}
        self.details = []

    def add(self, name, outcome, detail=""):
        self.counts[outcome] += 1
        if outcome in ("crash", "hang", "read outside"):
            self.details.append(f"{outcome.upper()} {name}: {detail}")

    def report(self, what):
        for line in self.details:
            print(line)
        c = self.counts
        print(f"{sum(c.values())} {what}: {c['clean error']} clean errors, {c['success']} successes, "
              f"{c['crash']} crashes, {c['hang']} hangs, {c['read outside']} read outside")
        return 1 if c["crash"] or c["hang"] or c["read outside"] else 0


def classify(command, timeout, env=None):
    """(outcome, detail) of one process."""
    try:
        proc = subprocess.run(command, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "hang", f"> {timeout} s"
    out = proc.stdout + proc.stderr
    if SECRET in out:
        return "read outside", out[:200]
    if proc.returncode == 0:
        return "success", ""
    if proc.returncode == 1 and b"error" in out:
        return "clean error", ""
    return "crash", f"exit {proc.returncode}: {out.strip()[-300:]!r}"


def mutations(data, count, rng):
    sys.path.insert(0, HERE)
    from importer_robustness import corruptions
    return list(corruptions(data, count, rng))


def probe_models(args):
    tally = Tally()
    with open(args.model, "rb") as f:
        data = f.read()
    run = [args.octetc, "run", "--repeat", "1", "--warmup", "0", "--batch", "1", "--seq", "8"]
    with tempfile.TemporaryDirectory() as work:
        cases = mutations(data, args.cases, random.Random(args.seed))

        def one(indexed):
            index, (name, payload) = indexed
            path = os.path.join(work, f"case{index}.onnx")
            with open(path, "wb") as f:
                f.write(payload)
            outcome = classify(run + [path], args.timeout)
            os.unlink(path)
            return name, outcome

        with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            for name, (outcome, detail) in pool.map(one, enumerate(cases)):
                tally.add(name, outcome, detail)
        subprocess.run([sys.executable, os.path.join(HERE, "..", "lit", "onnx", "Inputs",
                                                     "hostile_models.py"), work], check=True)
        models = os.path.join(work, "models")
        for entry in sorted(os.listdir(models)):
            if not entry.endswith(".onnx"):
                continue
            path = os.path.join(models, entry)
            for command in ([args.octetc, "import", path], run + [path]):
                outcome, detail = classify(command, args.timeout)
                tally.add(f"{command[1]} {entry}", outcome, detail)
    return tally.report("hostile and mutated models")


def elf_regions(data):
    """(name, offset, size) of what the loader reads, and of .text, .rodata."""
    ehdr = struct.unpack_from("<16sHHIQQQIHHHHHH", data)
    phoff, shoff, phentsize, phnum, shentsize, shnum, shstrndx = (
        ehdr[5], ehdr[6], ehdr[9], ehdr[10], ehdr[11], ehdr[12], ehdr[13])
    regions = [("elf header", 0, 64), ("program headers", phoff, phentsize * phnum)]
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = sections[shstrndx]
    for s in sections:
        name = data[strtab[4] + s[0]:].split(b"\0", 1)[0].decode()
        if name in (".dynamic", ".rela.dyn", ".rela.plt", ".gnu.hash", ".dynsym", ".dynstr",
                    ".text", ".rodata", ".data.rel.ro") and s[5]:
            regions.append((name, s[4], s[5]))
    regions.append(("trailer", len(data) - 32, 32))
    return regions


OPEN_DESTROY = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.octet_last_error.restype = ctypes.c_char_p
lib.octet_model_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
lib.octet_model_destroy.argtypes = [ctypes.c_void_p]
model = ctypes.c_void_p()
status = lib.octet_model_open(sys.argv[2].encode(), None, ctypes.byref(model))
lib.octet_model_destroy(model)
if status:
    print("error:", lib.octet_last_error().decode(errors="replace"))
sys.exit(1 if status else 0)
"""


def probe_so(args):
    tally = Tally()
    with open(args.so, "rb") as f:
        data = f.read()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as work:
        cases = []
        for name, offset, size in elf_regions(data):
            for i in range(args.flips):
                mutated = bytearray(data)
                at = offset + rng.randrange(size)
                mutated[at] ^= 1 << rng.randrange(8)
                cases.append((f"{name} flip@{at}", bytes(mutated)))
        cases += [("truncated", data[:-1000]), ("extended", data + b"\0" * 16),
                  ("no trailer", data[:-32])]
        paths = []
        for index, (name, payload) in enumerate(cases):
            path = os.path.join(work, f"case{index}.so")
            with open(path, "wb") as f:
                f.write(payload)
            paths.append((name, path))
        fifo = os.path.join(work, "fifo.so")
        os.mkfifo(fifo)
        paths.append(("fifo", fifo))

        def one(item):
            name, path = item
            results = []
            for command in ([args.octetc, "run", path, "--repeat", "1", "--warmup", "0",
                             "--seq", "8"],
                            [sys.executable, "-c", OPEN_DESTROY, args.lib, path]):
                results.append((f"{'octetc run' if command[0] == args.octetc else 'C API'} {name}",
                                classify(command, args.timeout)))
            return results

        with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            for results in pool.map(one, paths):
                for name, (outcome, detail) in results:
                    # The original file's one flip may land in padding: a success is fine.
                    tally.add(name, outcome, detail)
    return tally.report("runs of corrupt model.so files")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]


def heap_bytes():
    """Bytes malloc has handed out and not taken back (glibc's mallinfo2)."""
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def probe_leak(args):
    lib = ctypes.CDLL(args.lib)
    lib.octet_last_error.restype = ctypes.c_char_p
    lib.octet_model_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.octet_model_destroy.argtypes = [ctypes.c_void_p]

    def cycle():
        model = ctypes.c_void_p()
        if lib.octet_model_open(args.so.encode(), None, ctypes.byref(model)):
            sys.exit("octet_model_open: " + lib.octet_last_error().decode())
        lib.octet_model_destroy(model)

    for _ in range(20):  # warm up: the loader's and allocator's own caches
        cycle()
    rss, heap = rss_kib(), heap_bytes()
    for _ in range(args.cycles):
        cycle()
    rss, heap = rss_kib() - rss, heap_bytes() - heap
    per_cycle = heap / args.cycles
    print(f"{args.cycles} open/close cycles: heap in use grew {heap} bytes ({per_cycle:.0f} per "
          f"cycle), RSS {rss} KiB")
    return 0 if per_cycle < args.max_bytes_per_cycle else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["models", "so", "leak"])
    ap.add_argument("--octetc")
    ap.add_argument("--lib")
    ap.add_argument("--model")
    ap.add_argument("--so")
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--flips", type=int, default=4)
    ap.add_argument("--cycles", type=int, default=300)
    ap.add_argument("--max-bytes-per-cycle", type=float, default=1024)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    return {"models": probe_models, "so": probe_so, "leak": probe_leak}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
