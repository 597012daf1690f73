"""octet.compile / octet.load / octet.compile_to_so and the Model they return."""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import tempfile
import warnings
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _capi
from ._capi import InvalidArgument, InvalidInput, Unsupported
from ._progress import make_progress

PathLike = Union[str, "os.PathLike[str]"]
ModelSource = Union[PathLike, bytes, Any]  # Any: an onnx.ModelProto
ProgressArg = Union[bool, Callable[[str, int, int], None]]
Feeds = Union[Mapping[str, Any], Sequence[Any]]


class TensorInfo(NamedTuple):
    """A model input or output: its ONNX name, NumPy dtype and shape, where a symbolic
    dim is its ONNX name ("batch", "sequence") or None when it has none."""

    name: str
    dtype: np.dtype
    shape: Tuple[Union[int, str, None], ...]


class _Buffer:
    """Owns one runtime-allocated output buffer: frees it with octet_tensor_free when the
    last NumPy array over it is gone (it hangs on the ctypes array those arrays view)."""

    __slots__ = ("lib", "address")

    def __init__(self, lib: _capi.Library, address: int):
        self.lib = lib
        self.address = address

    def __del__(self):
        self.lib.free(self.address)


# ------------------------------------------------------------------------------ Model

class Model:
    """A compiled model, from octet.compile (JIT, in this process) or octet.load (a
    model.so). It serves any batch and sequence length, and any number of threads at once:
    run() releases the GIL for the whole run.

    >>> model = octet.load("minilm-int8.so")
    >>> [i.name for i in model.inputs]
    ['input_ids', 'attention_mask', 'token_type_ids']
    >>> out = model.run({"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
    >>> out["last_hidden_state"].shape
    (2, 16, 384)
    """

    def __init__(self, lib: _capi.Library, handle: int, *, path: Optional[str] = None,
                 source: Optional[Tuple[str, Any]] = None, options: Optional[dict] = None,
                 keep: Any = None):
        # Private: use octet.compile or octet.load.
        self._lib = lib
        self._handle = ctypes.c_void_p(handle)
        self._path = path        # the model.so (AOT)
        self._source = source    # ("file" | "bytes", path | bytes) of a JIT compile
        self._options = options  # its option values, for save()
        self._keep = keep        # e.g. the calibration sets written for it
        cdll = lib.cdll
        self.inputs: Tuple[TensorInfo, ...] = tuple(
            self._info(cdll.octet_model_input_info, i) for i in range(cdll.octet_model_num_inputs(handle)))
        self.outputs: Tuple[TensorInfo, ...] = tuple(
            self._info(cdll.octet_model_output_info, i) for i in range(cdll.octet_model_num_outputs(handle)))
        self._input_index = {t.name: i for i, t in enumerate(self.inputs)}
        self._output_index = {t.name: i for i, t in enumerate(self.outputs)}
        self._output_names = [t.name for t in self.outputs]

    def _info(self, fn, index: int) -> TensorInfo:
        info = _capi.TensorInfoStruct()
        self._lib.check(fn(self._handle, index, ctypes.byref(info)))
        shape = []
        for d in range(info.rank):
            dim = info.dims[d]
            if dim >= 0:
                shape.append(int(dim))
            else:
                shape.append(info.dim_names[d].decode() or None)
        return TensorInfo(info.name.decode(), _capi.DTYPES[info.dtype], tuple(shape))

    # -------------------------------------------------------------------- properties

    @property
    def input_names(self) -> List[str]:
        """The inputs' names, in the model's order (the order a list of feeds takes)."""
        return [t.name for t in self.inputs]

    @property
    def output_names(self) -> List[str]:
        """The outputs' names, in the model's order."""
        return list(self._output_names)

    @property
    def path(self) -> Optional[str]:
        """The model.so this model was loaded from; None for a model compiled in process."""
        return self._path

    def __repr__(self) -> str:
        kind = f"model.so '{self._path}'" if self._path else "compiled in process"
        ins = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.inputs)
        outs = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.outputs)
        return f"<octet.Model ({kind}) inputs [{ins}] -> outputs [{outs}]>"

    # ---------------------------------------------------------------------------- run

    def _input_array(self, index: int, value: Any) -> np.ndarray:
        info = self.inputs[index]
        want = info.dtype
        if isinstance(value, np.ndarray):
            array = value
        else:
            try:
                array = np.asarray(value, dtype=want)
            except (TypeError, ValueError, OverflowError) as e:
                raise InvalidInput(f"input '{info.name}': cannot make a {want} array of "
                                   f"{type(value).__name__}: {e}") from None
        if array.dtype != want:
            if array.dtype.kind in "iu" and want.kind in "iu":
                # Token ids as int32 or int64, whichever the model takes: converted when
                # every value fits, so an id is never wrapped around into another.
                if array.size and not np.can_cast(array.dtype, want, "safe"):
                    limits = np.iinfo(want)
                    low, high = array.min(), array.max()
                    if low < limits.min or high > limits.max:
                        raise InvalidInput(
                            f"input '{info.name}' is {array.dtype} with values in [{low}, {high}], "
                            f"which do not fit the model's {want}")
                array = array.astype(want)
            elif array.dtype not in _capi.CODES:
                raise InvalidInput(f"input '{info.name}' has dtype {array.dtype}, which Octet "
                                   f"does not take; the model expects {want}")
            # Any other mismatch is the C API's to report (with the expected shape).
        if array.ndim > _capi.MAX_RANK:
            raise InvalidInput(f"input '{info.name}' has rank {array.ndim}; Octet takes at "
                               f"most {_capi.MAX_RANK} dims")
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        return array

    def _feeds_list(self, feeds: Feeds) -> List[np.ndarray]:
        n = len(self.inputs)
        if isinstance(feeds, Mapping):
            unknown = [k for k in feeds if k not in self._input_index]
            if unknown:
                raise InvalidInput(f"unknown input '{unknown[0]}'; the model's inputs are "
                                   f"{', '.join(self.input_names)}")
            missing = [t.name for t in self.inputs if t.name not in feeds]
            if missing:
                raise InvalidInput(f"missing input '{missing[0]}' (the model's inputs are "
                                   f"{', '.join(self.input_names)})")
            return [self._input_array(i, feeds[t.name]) for i, t in enumerate(self.inputs)]
        if isinstance(feeds, (str, bytes)) or not isinstance(feeds, Sequence):
            raise InvalidInput(f"feeds must be a dict of input name to array or a list in the "
                               f"model's input order, not {type(feeds).__name__}")
        if len(feeds) != n:
            raise InvalidInput(f"{len(feeds)} inputs given, the model takes {n} "
                               f"({', '.join(self.input_names)})")
        return [self._input_array(i, v) for i, v in enumerate(feeds)]

    def run(self, feeds: Feeds, outputs: Optional[Sequence[str]] = None, *,
            out: Optional[Union[Mapping[str, np.ndarray], Sequence[np.ndarray]]] = None
            ) -> Dict[str, np.ndarray]:
        """Runs the model and returns {output name: array}.

        feeds: {input name: array} or a list in the model's input order (`inputs`). Arrays
        are used in place when C-contiguous and of the model's dtype; int32 and int64 token
        ids are both accepted (converted when every value fits).
        outputs: the names to return (default: all).
        out: arrays to write outputs into ({name: array} or a list in output order), each
        C-contiguous, writable, of the output's dtype and exact shape; they are returned.
        Other outputs are runtime buffers wrapped without a copy: the arrays own them and
        free them when they are gone.

        Raises InvalidInput (a missing, unknown or malformed input, a bad `out` array),
        RunFailure (a failure inside a step). The GIL is released during the run.
        """
        handle = self._handle
        if not handle:
            raise InvalidArgument("the model is closed")
        arrays = self._feeds_list(feeds)
        lib = self._lib
        n_in, n_out = len(arrays), len(self.outputs)
        tensors = (_capi.TensorStruct * n_in)()
        for t, a in zip(tensors, arrays):
            t.data = a.ctypes.data
            t.dtype = _capi.CODES.get(a.dtype, 0)
            t.rank = a.ndim
            t.dims[:a.ndim] = a.shape
        results = (_capi.TensorStruct * n_out)()
        given = self._out_arrays(out) if out is not None else None
        if given:
            for index, array in given.items():
                results[index].data = array.ctypes.data
                results[index].bytes = array.nbytes
        status = lib.run(handle, tensors, n_in, results, n_out)
        if status != _capi.OK:
            raise lib.error(status)
        wanted = self._output_names if outputs is None else list(outputs)
        collected: Dict[str, np.ndarray] = {}
        try:
            for index, name in enumerate(self._output_names):
                t = results[index]
                if given and index in given:
                    array = given[index]
                    shape = tuple(t.dims[:t.rank])
                    if array.shape != shape:
                        raise InvalidInput(f"out['{name}'] has shape {array.shape}, the output "
                                           f"is {shape}")
                    collected[name] = array
                    continue
                # Runtime-owned: wrap it, no copy; _Buffer frees it with the last array.
                buffer = (ctypes.c_char * t.bytes).from_address(t.data)
                buffer._owner = _Buffer(lib, t.data)
                collected[name] = np.frombuffer(buffer, dtype=_capi.DTYPES[t.dtype]).reshape(
                    tuple(t.dims[:t.rank]))
        except BaseException:
            for index in range(len(collected), n_out):  # not yet wrapped: free them here
                if not (given and index in given) and results[index].data:
                    lib.free(results[index].data)
            raise
        if outputs is None:
            return collected
        result = {}
        for name in wanted:
            if name not in collected:
                raise InvalidArgument(f"unknown output '{name}'; the model's outputs are "
                                      f"{', '.join(self._output_names)}")
            result[name] = collected[name]
        return result

    def _out_arrays(self, out) -> Dict[int, np.ndarray]:
        if isinstance(out, Mapping):
            items = []
            for name, array in out.items():
                if name not in self._output_index:
                    raise InvalidInput(f"out: unknown output '{name}'; the model's outputs are "
                                       f"{', '.join(self._output_names)}")
                items.append((self._output_index[name], array))
        else:
            if len(out) != len(self.outputs):
                raise InvalidInput(f"out: {len(out)} arrays given, the model has "
                                   f"{len(self.outputs)} outputs")
            items = list(enumerate(out))
        given = {}
        for index, array in items:
            info = self.outputs[index]
            if not isinstance(array, np.ndarray):
                raise InvalidInput(f"out['{info.name}'] is {type(array).__name__}, not a NumPy array")
            if array.dtype != info.dtype:
                raise InvalidInput(f"out['{info.name}'] is {array.dtype}, the output is {info.dtype}")
            if not array.flags.c_contiguous or not array.flags.writeable:
                raise InvalidInput(f"out['{info.name}'] must be C-contiguous and writable")
            given[index] = array
        return given

    def __call__(self, *args: Any, **feeds: Any) -> Dict[str, np.ndarray]:
        """model(input_ids=..., attention_mask=...) or model(ids, mask, types): run()."""
        if args and feeds:
            raise InvalidInput("give inputs by position or by name, not both")
        return self.run(list(args) if args else feeds)

    # ----------------------------------------------------------------- profile, save

    @property
    def fusion_report(self) -> str:
        """What the compiler fused, as `octetc run --explain-fusion` prints it: a line
        counting the fused attention, LayerNorm and GELU blocks, then one "not fused: ..."
        line per block that stayed unfused, with its ONNX nodes and why. "" for a model.so
        (decided when it was compiled) or a library without the report."""
        if not self._lib.has("octet_model_fusion_report"):
            return ""
        text = self._lib.cdll.octet_model_fusion_report(self._handle)
        return (text or b"").decode("utf-8", "replace")

    def profile(self) -> List[Dict[str, Any]]:
        """The last successful run's per-step profile, one dict per step in plan order:
        index, kind, location (the ONNX node), shapes, median_seconds, ops, bytes, gops,
        gbs, roofline_fraction, ... (docs/profiling.md). The model must be compiled or
        loaded with profile=True; see profile_report() for the totals and ceilings."""
        return self.profile_report()["steps"]

    def profile_report(self) -> Dict[str, Any]:
        """The whole profile of the last successful run: end-to-end and summed times, the
        machine's ceilings and "steps" (as profile())."""
        lib = self._lib
        status, text = _capi.read_json_buffer(
            lambda buf, size, needed: lib.cdll.octet_model_last_profile_json(
                self._handle, buf, size, needed))
        lib.check(status)
        return json.loads(text)

    def save(self, path: PathLike) -> str:
        """Writes this model as a self-contained model.so at `path` (octet.load opens it,
        with no compiler). A loaded model.so is copied; a model compiled in process is
        compiled again ahead of time from the same ONNX model and options (the same
        calibration samples too), which gives the same outputs bit for bit. Returns the path."""
        path = os.fspath(path)
        if self._path:
            if os.path.abspath(path) != self._path:
                tmp = path + ".tmp"
                shutil.copyfile(self._path, tmp)
                os.replace(tmp, path)
            return path
        kind, source = self._source
        options = dict(self._options or {})
        options.pop("profile", None)  # a run option, not a compile one
        if kind == "file":
            _compile_file_to_so(source, path, options, progress=False)
        else:
            with tempfile.TemporaryDirectory(prefix="octet-save-") as tmp:
                onnx_path = os.path.join(tmp, "model.onnx")
                with open(onnx_path, "wb") as f:
                    f.write(source)
                _compile_file_to_so(onnx_path, path, options, progress=False)
        return path

    # ------------------------------------------------------------------- lifetime

    def close(self) -> None:
        """Releases the model now (else when it is garbage). No run may be in flight;
        arrays it returned stay valid."""
        handle, self._handle = self._handle, ctypes.c_void_p()
        if handle:
            self._lib.cdll.octet_model_destroy(handle)

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None):
            self.close()


# --------------------------------------------------------------------- compile / load

def _compile_options(int8, calibration, calibration_percentile, smoothquant, smoothquant_alpha,
                     target, attention, gemm, autotune, profile, options, precision=None):
    """(option values, calibration sets directory to keep or None)."""
    values: Dict[str, Any] = {}
    if int8 is not None:
        if int8 not in ("static", "dynamic", "none"):
            raise InvalidArgument(f"int8={int8!r}: expected None, 'static' or 'dynamic'")
        values["int8"] = int8
    keep = None
    if calibration is not None:
        if int8 != "static":
            raise InvalidArgument("calibration is for int8='static' only")
        if isinstance(calibration, (str, os.PathLike)):
            values["calibration_samples"] = os.fspath(calibration)
        else:
            keep = _write_calibration_sets(calibration)
            values["calibration_samples"] = keep.name
    if calibration_percentile is not None:
        values["calibration_percentile"] = repr(float(calibration_percentile))
    if smoothquant is not None:
        values["smoothquant"] = "on" if smoothquant else "off"
    if smoothquant_alpha is not None:
        values["smoothquant_alpha"] = repr(float(smoothquant_alpha))
    for key, value in (("target", target), ("attention", attention), ("gemm", gemm),
                       ("precision", precision)):
        if value is not None:
            values[key] = value
    if autotune:
        values["autotune"] = "1"
    if profile:
        values["profile"] = "1"
    for key, value in (options or {}).items():
        values[key] = value
    return values, keep


def _write_calibration_sets(samples: Iterable[Mapping[str, Any]]) -> tempfile.TemporaryDirectory:
    """Input sets as the C API reads them: one folder per set, NAME.npy per input."""
    folder = tempfile.TemporaryDirectory(prefix="octet-calibration-")
    count = 0
    try:
        for index, feeds in enumerate(samples):
            if not isinstance(feeds, Mapping):
                raise InvalidArgument(f"calibration set {index} is {type(feeds).__name__}; each "
                                      "set must be a dict of input name to array")
            set_dir = os.path.join(folder.name, f"set{index:06d}")
            os.mkdir(set_dir)
            for name, value in feeds.items():
                if not name or "/" in name or name in (".", ".."):
                    raise InvalidArgument(f"calibration set {index}: input name {name!r} cannot "
                                          "be a file name; give a folder of input sets instead")
                np.save(os.path.join(set_dir, f"{name}.npy"), np.ascontiguousarray(value))
            count += 1
    except BaseException:
        folder.cleanup()
        raise
    if count == 0:
        folder.cleanup()
        raise InvalidArgument("calibration: the iterable gave no input sets")
    return folder


def _source_of(model: ModelSource) -> Tuple[str, Any]:
    if isinstance(model, (str, os.PathLike)):
        return "file", os.fspath(model)
    if isinstance(model, (bytes, bytearray, memoryview)):
        return "bytes", bytes(model)
    if hasattr(model, "SerializeToString"):  # onnx.ModelProto, without importing onnx
        return "bytes", model.SerializeToString()
    raise InvalidArgument(f"model must be a path, bytes or an onnx.ModelProto, not "
                          f"{type(model).__name__}")


def _with_progress(lib: _capi.Library, values: dict, progress: ProgressArg, label: str, call):
    opts = _capi.Options(lib, values)
    display = make_progress(progress, label)
    if display is not None:
        opts.set_progress(display)
    try:
        return call(opts)
    finally:
        if display is not None:
            display.close()


def compile(model: ModelSource, *, int8: Optional[str] = None,
            calibration: Union[None, PathLike, Iterable[Mapping[str, Any]]] = None,
            calibration_percentile: Optional[float] = None,
            smoothquant: Optional[bool] = None, smoothquant_alpha: Optional[float] = None,
            target: Optional[str] = None, attention: Optional[str] = None,
            precision: Optional[str] = None, gemm: Optional[str] = None, autotune: bool = False, profile: bool = False,
            progress: ProgressArg = True, options: Optional[Mapping[str, str]] = None) -> Model:
    """Compiles an ONNX encoder in this process (JIT) and returns the Model.

    model: a path to an .onnx file (external data beside it), its bytes, or an
    onnx.ModelProto.
    int8: None (FP32), "static" (calibrated per-tensor activation scales, SmoothQuant) or
    "dynamic" (per-token scales at run time).
    calibration (static): an iterable of input dicts ({name: array}, one batch each), a
    folder of input sets (one subfolder per batch, NAME.npy per input), or
    "generate:N[xB][xS]" (N generated token batches of B x S; default "generate:16x8x128").
    calibration_percentile, smoothquant, smoothquant_alpha: docs/calibration.md.
    target: "host" (default), "avx2", "avx512-vnni", "amx", a CPU name...; attention: "auto"
    (default: "int8" with int8, "bf16" with precision "bf16", else "f32"), "f32", "bf16" or
    "int8" (docs/attention-int8.md); precision: "f32" (default) or "bf16" (an FP32 model's linears on bf16 weights,
    f32 sums; needs AVX512-BF16, not with int8); gemm: "auto", "jit", "onednn"; autotune:
    time the GEMM candidates.
    profile: time every step of each run (Model.profile()).
    progress: a progress bar on stderr during calibration (tqdm where installed, a plain
    line otherwise); False for none, or a callable(message, done, total).
    options: further C API option keys and values (docs/c-api.md).

    Raises InvalidModel, Unsupported, InvalidArgument (a bad option). The GIL is released
    while compiling.
    """
    lib = _capi.liboctet()
    kind, source = _source_of(model)
    values, keep = _compile_options(int8, calibration, calibration_percentile, smoothquant,
                                    smoothquant_alpha, target, attention, gemm, autotune,
                                    profile, options, precision)
    handle = ctypes.c_void_p()

    def call(opts):
        if kind == "file":
            status = lib.cdll.octet_model_create_from_file(source.encode(), opts.handle,
                                                           ctypes.byref(handle))
        else:
            status = lib.cdll.octet_model_create_from_bytes(source, len(source), opts.handle,
                                                            ctypes.byref(handle))
        lib.check(status)

    try:
        _with_progress(lib, values, progress, "octet.compile", call)
    except BaseException:
        if keep is not None:
            keep.cleanup()
        raise
    compiled = Model(lib, handle.value, source=(kind, source), options=values, keep=keep)
    _warn_unfused(compiled.fusion_report)
    return compiled


class FusionWarning(UserWarning):
    """A block that should fuse (attention, LayerNorm, GELU) did not: it runs correctly,
    on slower generic steps. Model.fusion_report says which and why."""


class PrecisionWarning(UserWarning):
    """The precision asked for runs slower than the default f32 on this CPU
    (precision="bf16" where vdpbf16ps is slower than FMA); Model.fusion_report's
    `slow precision:` line gives the measured peaks."""


def _warn_unfused(report: str) -> None:
    # A silent slow path is a bug: say so once per compile, as octetc does.
    lines = report.splitlines()
    unfused = [line for line in lines if line.startswith("not fused: ")]
    if unfused:
        warnings.warn(f"{len(unfused)} block(s) not fused ({lines[0]}); "
                      "Model.fusion_report says why", FusionWarning, stacklevel=3)
    for line in lines:
        if line.startswith("slow precision: "):
            warnings.warn(line[len("slow precision: "):], PrecisionWarning, stacklevel=3)


def _compile_file_to_so(onnx_path: str, so_path: str, values: dict, progress: ProgressArg) -> None:
    lib = _capi.liboctet()
    if not lib.has("octet_compile_to_so"):
        raise Unsupported(f"'{lib.path}' has no octet_compile_to_so (an older liboctet.so)")

    def call(opts):
        lib.check(lib.cdll.octet_compile_to_so(onnx_path.encode(), opts.handle, so_path.encode()))

    _with_progress(lib, values, progress, "octet.compile_to_so", call)


def compile_to_so(model: ModelSource, path: PathLike, *, int8: Optional[str] = None,
                  calibration: Union[None, PathLike, Iterable[Mapping[str, Any]]] = None,
                  calibration_percentile: Optional[float] = None,
                  smoothquant: Optional[bool] = None, smoothquant_alpha: Optional[float] = None,
                  target: Optional[str] = None, attention: Optional[str] = None,
                  precision: Optional[str] = None,
                  gemm: Optional[str] = None, autotune: bool = False,
                  progress: ProgressArg = True,
                  options: Optional[Mapping[str, str]] = None) -> str:
    """Compiles like octet.compile, ahead of time, into one self-contained model.so at
    `path` (as `octetc compile`; docs/aot.md): plan, kernel code and weights, served by
    octet.load or the C API with no compiler. `target` may name a CPU other than this one.
    Linking needs a C compiler ($CC or cc). Returns the path."""
    path = os.fspath(path)
    kind, source = _source_of(model)
    values, keep = _compile_options(int8, calibration, calibration_percentile, smoothquant,
                                    smoothquant_alpha, target, attention, gemm, autotune,
                                    False, options, precision)
    try:
        if kind == "file":
            _compile_file_to_so(source, path, values, progress)
        else:
            with tempfile.TemporaryDirectory(prefix="octet-compile-") as tmp:
                onnx_path = os.path.join(tmp, "model.onnx")
                with open(onnx_path, "wb") as f:
                    f.write(source)
                _compile_file_to_so(onnx_path, path, values, progress)
    finally:
        if keep is not None:
            keep.cleanup()
    return path


def load(path: PathLike, *, profile: bool = False, constants: str = "huge_pages") -> Model:
    """Opens a model.so written by octet.compile_to_so, Model.save or `octetc compile`.

    Needs nothing but the file: the model.so serves Octet's C API itself, so neither
    liboctet.so nor MLIR is loaded. The file is checked before it is loaded (an ELF64
    x86-64 shared object, not truncated; then its plan and code checksums, Octet version
    and CPU target); each failure is InvalidModel naming the file and the reason.
    profile: time every step of each run (Model.profile()).
    constants: "huge_pages" (default) copies the weights onto 2 MiB pages, where the GEMMs
    stream them faster (a private copy: BERT-base INT8 adds ~180 MB and ~20 ms to the
    open); "mapped" reads them where the file is mapped, shared by every process that opens
    the same model.so (many replicas on one node; docs/aot.md).
    """
    path = os.fspath(path)
    if constants not in ("huge_pages", "mapped"):
        raise ValueError(f"constants must be 'huge_pages' or 'mapped', not {constants!r}")
    lib = _capi.open_model_library(path)
    settings = {"constants": constants}
    if profile:
        settings["profile"] = "1"
    opts = _capi.Options(lib, settings)
    handle = ctypes.c_void_p()
    # NULL path: the model embedded in this very library.
    lib.check(lib.cdll.octet_model_open(None, opts.handle, ctypes.byref(handle)), f"'{path}'")
    return Model(lib, handle.value, path=os.path.abspath(path))


def ceilings(threads: Optional[int] = None, refresh: bool = False) -> Dict[str, Any]:
    """This machine's measured ceilings for `threads` OpenMP threads (default: all): peak
    FP32 and INT8 GOP/s, L2 / L3 / DRAM bandwidth in GB/s, the CPU (docs/profiling.md).
    Cached per host (~/.cache/octet); measured (about a second) when not cached or
    `refresh`. Needs liboctet.so."""
    lib = _capi.liboctet()
    if not lib.has("octet_ceilings_json"):
        raise Unsupported(f"'{lib.path}' has no octet_ceilings_json (an older liboctet.so)")
    n = 0 if threads is None else int(threads)
    status, text = _capi.read_json_buffer(
        lambda buf, size, needed: lib.cdll.octet_ceilings_json(n, int(bool(refresh)), buf, size, needed))
    lib.check(status)
    return json.loads(text)
