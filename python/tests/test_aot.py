"""compile_to_so, Model.save and octet.load: the model.so path."""
import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

import octet
from conftest import ROOT, token_feeds

INT8 = dict(int8="static", calibration="generate:4x2x16")


@pytest.fixture(scope="module")
def int8_so(small_onnx, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("aot") / "bert-int8.so")
    assert octet.compile_to_so(small_onnx, path, progress=False, **INT8) == path
    return path


def test_aot_is_bit_identical_to_jit(small_onnx, int8_so):
    jit = octet.compile(small_onnx, progress=False, **INT8)
    aot = octet.load(int8_so)
    assert aot.path == os.path.abspath(int8_so) and "model.so" in repr(aot)
    assert aot.inputs == jit.inputs and aot.outputs == jit.outputs
    for batch, seq in ((1, 1), (2, 9), (3, 32)):
        feeds = token_feeds(batch, seq, seed=seq)
        assert np.array_equal(aot.run(feeds)["last_hidden_state"],
                              jit.run(feeds)["last_hidden_state"])


def test_constants_mapped_or_on_huge_pages_compute_the_same(int8_so):
    feeds = token_feeds(2, 9, seed=3)
    placed = octet.load(int8_so)  # the default: a copy on huge pages (where it pays)
    mapped = octet.load(int8_so, constants="mapped")
    assert np.array_equal(placed.run(feeds)["last_hidden_state"],
                          mapped.run(feeds)["last_hidden_state"])
    with pytest.raises(ValueError, match="'huge_pages' or 'mapped'"):
        octet.load(int8_so, constants="shared")


def test_save_of_a_jit_model_reproduces_it(small_onnx, tmp_path):
    calibration = [token_feeds(2, 16, seed=s) for s in range(3)]
    feeds = token_feeds(2, 12, seed=1)
    with open(small_onnx, "rb") as f:
        data = f.read()
    for source in (small_onnx, data):  # a file, and bytes (written to a temporary file)
        jit = octet.compile(source, int8="static", calibration=iter(calibration), progress=False)
        path = jit.save(tmp_path / "saved.so")
        aot = octet.load(path)
        assert np.array_equal(aot.run(feeds)["last_hidden_state"], jit.run(feeds)["last_hidden_state"])
        # A model.so saves as a copy of itself.
        copy = aot.save(tmp_path / "copy.so")
        with open(path, "rb") as a, open(copy, "rb") as b:
            assert a.read() == b.read()


def test_rewritten_file_loads_anew(small_onnx, tmp_path):
    path = str(tmp_path / "m.so")
    feeds = token_feeds(2, 8)
    octet.compile_to_so(small_onnx, path, progress=False)
    fp32 = octet.load(path)
    fp32_out = fp32.run(feeds)["last_hidden_state"]
    octet.compile_to_so(small_onnx, path, int8="dynamic", progress=False)
    dynamic = octet.load(path)  # while the first is still loaded: a new library
    dynamic_out = dynamic.run(feeds)["last_hidden_state"]
    assert not np.array_equal(fp32_out, dynamic_out)
    assert np.array_equal(fp32.run(feeds)["last_hidden_state"], fp32_out)
    want = octet.compile(small_onnx, int8="dynamic", progress=False).run(feeds)["last_hidden_state"]
    assert np.array_equal(dynamic_out, want)


def test_load_errors(int8_so, tmp_path):
    with pytest.raises(octet.InvalidModel, match="cannot open .*missing.so.*No such file"):
        octet.load(tmp_path / "missing.so")
    text = tmp_path / "model.onnx.so"
    text.write_bytes(b"not an ELF file at all, but long enough to hold a header" * 2)
    with pytest.raises(octet.InvalidModel, match="is not a loadable Octet model.so: it is not an ELF file"):
        octet.load(text)
    data = open(int8_so, "rb").read()
    truncated = tmp_path / "truncated.so"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(octet.InvalidModel, match=r"past its \d+ bytes \(truncated\)"):
        octet.load(truncated)
    liboctet = os.environ.get("OCTET_LIBRARY") or os.path.join(ROOT, "build", "runtime", "liboctet.so")
    with pytest.raises(octet.InvalidModel, match="ends in no Octet checksum trailer"):
        octet.load(liboctet)
    extended = tmp_path / "extended.so"
    extended.write_bytes(data + b"\0")
    with pytest.raises(octet.InvalidModel, match="ends in no Octet checksum trailer"):
        octet.load(extended)
    with pytest.raises(octet.InvalidModel, match="not a regular file"):
        octet.load(tmp_path)
    # A flipped bit anywhere (the plan, the code, the weights, the dynamic-linking table
    # that dlopen reads first): the whole file's checksum, verified before dlopen as
    # octet_model_open does, so a damaged file is an exception, never a crash.
    octetc = os.environ.get("OCTET_OCTETC") or os.path.join(ROOT, "build", "tools", "octetc", "octetc")
    inspect = subprocess.run([octetc, "inspect", int8_so], capture_output=True, text=True, check=True)
    plan, constants, code = (int(x) for x in re.findall(r"file offset (\d+)", inspect.stdout))
    for name, at in (("plan", plan + 100), ("constants", constants + 1000), ("code", code + 10),
                     ("dynamic", _dynamic_section_offset(data) + 8), ("last", len(data) - 33)):
        corrupt = bytearray(data)
        corrupt[at] ^= 1
        path = tmp_path / f"{name}.so"
        path.write_bytes(bytes(corrupt))
        with pytest.raises(octet.InvalidModel, match="the file is corrupt: its checksum does not match"):
            octet.load(path)


def _dynamic_section_offset(elf: bytes) -> int:
    """The file offset of an ELF64 file's .dynamic section (type SHT_DYNAMIC)."""
    e_shoff, = struct.unpack_from("<Q", elf, 40)
    e_shentsize, e_shnum = struct.unpack_from("<HH", elf, 58)
    for i in range(e_shnum):
        sh_type, = struct.unpack_from("<I", elf, e_shoff + i * e_shentsize + 4)
        if sh_type == 6:
            sh_offset, = struct.unpack_from("<Q", elf, e_shoff + i * e_shentsize + 24)
            return sh_offset
    raise AssertionError("no .dynamic section")


def test_profile_of_a_loaded_model(int8_so):
    m = octet.load(int8_so, profile=True)
    m.run(token_feeds(2, 16))
    kinds = [s["kind"] for s in m.profile()]
    assert any(k.startswith("qgemm") for k in kinds), kinds
    with pytest.raises(octet.InvalidArgument, match="without the option profile"):
        octet.load(int8_so).profile()


def test_load_needs_nothing_but_the_file(int8_so, tmp_path):
    """In a fresh process with no liboctet.so to be found: load and run, and neither
    liboctet.so nor MLIR is mapped."""
    script = f"""
import sys
sys.path.insert(0, {os.path.join(ROOT, 'python')!r})
import numpy as np, octet
m = octet.load({int8_so!r})
ids = np.ones((1, 5), np.int64)
out = m.run({{"input_ids": ids, "attention_mask": ids, "token_type_ids": 0 * ids}})
maps = open("/proc/self/maps").read()
assert "liboctet" not in maps and "libMLIR" not in maps, "the compiler was loaded"
print("ok", out["last_hidden_state"].shape)
try:
    octet.compile("x.onnx")
except octet.Unsupported as e:
    print("compile:", e)
"""
    env = {k: v for k, v in os.environ.items() if k not in ("OCTET_LIBRARY", "PYTHONPATH")}
    env["OCTET_LIBRARY"] = str(tmp_path / "no-liboctet.so")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ok (1, 5, 64)" in done.stdout
    assert "liboctet.so" in done.stdout  # compile says what it lacks


def test_a_killed_process_leaves_no_load_folder(int8_so, tmp_path):
    """octet.load's dlopen name lives only while dlopen runs: a process killed after loading
    (a Ray replica stopped by its controller) leaves nothing in the temporary folder."""
    script = f"""
import os, sys
sys.path.insert(0, {os.path.join(ROOT, 'python')!r})
import octet
models = [octet.load({int8_so!r}) for _ in range(3)]
print(sorted(os.listdir({str(tmp_path)!r})), flush=True)
os.kill(os.getpid(), 9)
"""
    env = dict(os.environ, TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == -9, done.stderr
    assert done.stdout.strip() == "[]"
    assert os.listdir(tmp_path) == []


def test_compile_to_so_needs_a_c_compiler(small_onnx, tmp_path, monkeypatch):
    monkeypatch.setenv("CC", "/no/such/cc")
    path = tmp_path / "m.so"
    with pytest.raises(octet.Unsupported, match="no C compiler to link the model.so: .*'/no/such/cc'"):
        octet.compile_to_so(small_onnx, path, progress=False)
    assert not path.exists()
    monkeypatch.delenv("CC")
    monkeypatch.setenv("OCTET_AOT_RUNTIME_DIR", str(tmp_path))
    with pytest.raises(octet.Unsupported, match="the AOT runtime is incomplete"):
        octet.compile(small_onnx, progress=False).save(path)
