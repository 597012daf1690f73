"""ctypes declarations of Octet's C API (runtime/include/octet/octet.h) and the errors.

Why ctypes: it releases the GIL on every foreign call and needs no compiled extension, so
one pure-Python package serves liboctet.so (the JIT compiler) and any model.so (which
exports the same C API itself) alike; the per-call cost is a few microseconds
(docs/decisions.md, "Python package").
"""
from __future__ import annotations

import _ctypes
import ctypes
import os
import struct
import threading
from typing import Optional

import numpy as np

MAX_RANK = 8  # OCTET_MAX_RANK

# octet_status
OK = 0
_INVALID_ARGUMENT, _INVALID_MODEL, _UNSUPPORTED, _INVALID_INPUT, _OUTPUT_TOO_SMALL, _RUNTIME = range(1, 7)

# octet_dtype <-> NumPy (runtime/include/octet/octet.h's codes)
DTYPES = {1: np.dtype(np.float32), 2: np.dtype(np.float64), 3: np.dtype(np.int64),
          4: np.dtype(np.int32), 5: np.dtype(np.int8), 6: np.dtype(np.uint8),
          7: np.dtype(np.bool_), 8: np.dtype(np.int16), 9: np.dtype(np.uint16),
          10: np.dtype(np.uint32), 11: np.dtype(np.uint64), 12: np.dtype(np.float16)}
CODES = {v: k for k, v in DTYPES.items()}


class Error(Exception):
    """Every error of the octet package; `status` is the C API's octet_status (0 where the
    error was found in Python before any call)."""

    status = 0

    def __init__(self, message: str, status: Optional[int] = None):
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidArgument(Error, ValueError):
    """A bad option, argument or index (OCTET_ERROR_INVALID_ARGUMENT)."""

    status = _INVALID_ARGUMENT


class InvalidModel(Error):
    """The model cannot be read or is malformed: an ONNX file, or a model.so that is
    truncated, corrupt, from another Octet version or for another CPU
    (OCTET_ERROR_INVALID_MODEL)."""

    status = _INVALID_MODEL


class Unsupported(Error):
    """A valid model uses something Octet does not support, or the call needs what this
    library lacks (OCTET_ERROR_UNSUPPORTED)."""

    status = _UNSUPPORTED


class InvalidInput(Error, ValueError):
    """An input's name, dtype, rank, dims or values (token ids out of the vocabulary), or an
    `out=` array that does not fit (OCTET_ERROR_INVALID_INPUT, OCTET_ERROR_OUTPUT_TOO_SMALL)."""

    status = _INVALID_INPUT


class RunFailure(Error):
    """Anything else that failed during a run, e.g. out of memory (OCTET_ERROR_RUNTIME)."""

    status = _RUNTIME


_ERRORS = {_INVALID_ARGUMENT: InvalidArgument, _INVALID_MODEL: InvalidModel,
           _UNSUPPORTED: Unsupported, _INVALID_INPUT: InvalidInput,
           _OUTPUT_TOO_SMALL: InvalidInput, _RUNTIME: RunFailure}


class TensorStruct(ctypes.Structure):
    """octet_tensor."""

    _fields_ = [("data", ctypes.c_void_p), ("bytes", ctypes.c_size_t), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int32), ("dims", ctypes.c_int64 * MAX_RANK)]


class TensorInfoStruct(ctypes.Structure):
    """octet_tensor_info."""

    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)),
                ("dim_names", ctypes.POINTER(ctypes.c_char_p))]


PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64,
                               ctypes.c_int64)

_P = ctypes.c_void_p
_SIGNATURES = {
    # name: (restype, argtypes)
    "octet_last_error": (ctypes.c_char_p, []),
    "octet_options_create": (_P, []),
    "octet_options_set": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p]),
    "octet_options_destroy": (None, [_P]),
    "octet_model_create_from_file": (ctypes.c_int, [ctypes.c_char_p, _P, ctypes.POINTER(_P)]),
    "octet_model_create_from_bytes": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, _P,
                                                     ctypes.POINTER(_P)]),
    "octet_model_open": (ctypes.c_int, [ctypes.c_char_p, _P, ctypes.POINTER(_P)]),
    "octet_model_destroy": (None, [_P]),
    "octet_model_num_inputs": (ctypes.c_int32, [_P]),
    "octet_model_num_outputs": (ctypes.c_int32, [_P]),
    "octet_model_input_info": (ctypes.c_int, [_P, ctypes.c_int32, ctypes.POINTER(TensorInfoStruct)]),
    "octet_model_output_info": (ctypes.c_int, [_P, ctypes.c_int32, ctypes.POINTER(TensorInfoStruct)]),
    "octet_run": (ctypes.c_int, [_P, ctypes.POINTER(TensorStruct), ctypes.c_int32,
                                 ctypes.POINTER(TensorStruct), ctypes.c_int32]),
    "octet_tensor_free": (None, [_P]),
    "octet_model_last_profile_json": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t,
                                                     ctypes.POINTER(ctypes.c_size_t)]),
}
# Added after the first model.so format; a library without them still serves the rest.
_OPTIONAL = {
    "octet_options_set_progress": (ctypes.c_int, [_P, PROGRESS_FN, _P]),
    "octet_compile_to_so": (ctypes.c_int, [ctypes.c_char_p, _P, ctypes.c_char_p]),
    "octet_ceilings_json": (ctypes.c_int, [ctypes.c_int32, ctypes.c_int32, ctypes.c_char_p,
                                           ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "octet_model_fusion_report": (ctypes.c_char_p, [_P]),
}


class Library:
    """One loaded library that serves the C API: liboctet.so or a model.so."""

    def __init__(self, path: str, cdll: ctypes.CDLL, loaded: bool = False):
        self.path = path
        self.cdll = cdll
        self._loaded = loaded  # a model.so of open_model_library: closed with this object
        for name, (restype, argtypes) in list(_SIGNATURES.items()) + list(_OPTIONAL.items()):
            fn = getattr(cdll, name, None)
            if fn is None:
                if name in _SIGNATURES:
                    raise InvalidModel(f"'{path}' exports no {name}: it is not an Octet library")
                continue
            fn.restype = restype
            fn.argtypes = argtypes
        self.last_error = cdll.octet_last_error
        self.run = cdll.octet_run
        self.free = cdll.octet_tensor_free

    def has(self, name: str) -> bool:
        return getattr(self.cdll, name, None) is not None

    def check(self, status: int, context: str = "") -> None:
        """Raises the exception of `status` with this thread's last error message."""
        if status != OK:
            raise self.error(status, context)

    def error(self, status: int, context: str = "") -> Error:
        message = (self.last_error() or b"").decode("utf-8", "replace")
        if context:
            message = f"{context}: {message}"
        return _ERRORS.get(status, Error)(message, status)

    def __del__(self):
        # A model.so is unloaded with its last Model and output buffer (they hold this
        # object), so that a file written again at the same path loads anew.
        if self._loaded:
            self._loaded = False
            _ctypes.dlclose(self.cdll._handle)


# ---------------------------------------------------------------- liboctet.so (the JIT)

_HERE = os.path.dirname(os.path.abspath(__file__))
_liboctet: Optional[Library] = None
_liboctet_lock = threading.Lock()


def _liboctet_candidates():
    """(path, AOT runtime dir to use or None): $OCTET_LIBRARY, the copy installed with the
    package, then the build tree of a checkout that runs the package from python/."""
    env = os.environ.get("OCTET_LIBRARY")
    if env:
        return [(env, None)]
    native = os.path.join(_HERE, "_native")
    checkout_build = os.environ.get("OCTET_BUILD_DIR") or os.path.join(_HERE, "..", "..", "build")
    return [(os.path.join(native, "liboctet.so"), os.path.join(native, "octet-aot")),
            (os.path.join(checkout_build, "runtime", "liboctet.so"), None)]


def liboctet() -> Library:
    """liboctet.so, loaded once: the JIT compiler that octet.compile needs (octet.load
    does not: a model.so serves itself)."""
    global _liboctet
    with _liboctet_lock:
        if _liboctet is not None:
            return _liboctet
        tried = []
        for path, aot_dir in _liboctet_candidates():
            if not os.path.isfile(path):
                tried.append(path)
                continue
            try:
                cdll = ctypes.CDLL(os.path.abspath(path))
            except OSError as e:
                raise Unsupported(f"cannot load liboctet.so from '{path}': {e}") from None
            if aot_dir and os.path.isdir(aot_dir):
                # Model.save / compile_to_so link against the runtime installed beside it.
                os.environ.setdefault("OCTET_AOT_RUNTIME_DIR", aot_dir)
            _liboctet = Library(os.path.abspath(path), cdll)
            return _liboctet
        raise Unsupported(
            "liboctet.so (Octet's JIT compiler, needed to compile ONNX models; octet.load "
            "opens a model.so without it) was not found; looked at " + ", ".join(tried) +
            ". Install the package from the checkout (pip install <checkout>) or set "
            "$OCTET_LIBRARY to the library's path")


# ------------------------------------------------------------------- model.so (the AOT)

_EM_X86_64 = 62
_ET_DYN = 3
_PT_LOAD = 1


_MASK64 = (1 << 64) - 1
_CHECKSUM_CHUNK = 1 << 20


def _mix(h: int, v: int) -> int:
    h = ((h ^ v) * 0x9E3779B97F4A7C15) & _MASK64
    return h ^ (h >> 29)


def _image_checksum(data) -> int:
    """runtime/PlanImage.cpp's imageChecksum of `data` (a buffer): per 1 MiB chunk,
    Fletcher sums of the 64-bit words in eight lanes (a += w, b += a, mod 2^64) and
    the tail's words, mixed; the chunks' sums mixed in order. uint64 arithmetic
    in NumPy wraps as C's does."""
    size = len(data)
    h = _mix(0x6F63746574, size)
    for start in range(0, size, _CHECKSUM_CHUNK):
        chunk = data[start:start + _CHECKSUM_CHUNK]
        blocks = len(chunk) // 64
        words = np.frombuffer(chunk, dtype="<u8", count=blocks * 8).reshape(blocks, 8)
        with np.errstate(over="ignore"):
            a = words.sum(axis=0, dtype=np.uint64)
            # b after block i adds a after it: word i counts (blocks - i) times.
            weights = np.arange(blocks, 0, -1, dtype=np.uint64)[:, None]
            b = (words * weights).sum(axis=0, dtype=np.uint64)
        tail = np.zeros(8, dtype="<u8")
        rest = bytes(chunk[blocks * 64:])
        tail.view(np.uint8)[:len(rest)] = np.frombuffer(rest, dtype=np.uint8)
        s = len(chunk)
        for lane in range(8):
            s = _mix(_mix(_mix(s, int(a[lane])), int(b[lane])), int(tail[lane]))
        h = _mix(h, s)
    return h


def _check_elf(path: str, fd: int) -> None:
    """The checks octet_model_open makes before dlopen (docs/aot.md): an ELF64
    little-endian x86-64 shared object whose program headers, loadable segments and section
    headers lie within the file; so a truncated or foreign file is an error, not a crash
    of the dynamic loader."""
    size = os.fstat(fd).st_size
    head = os.pread(fd, 64, 0)

    def bad(why: str) -> InvalidModel:
        return InvalidModel(f"'{path}' is not a loadable Octet model.so: {why}")

    if len(head) < 64 or head[:4] != b"\x7fELF":
        raise bad("it is not an ELF file")
    if head[4] != 2 or head[5] != 1:
        raise bad("it is not a 64-bit little-endian ELF file")
    (e_type, e_machine, _, _, e_phoff, e_shoff, _, _, e_phentsize, e_phnum, e_shentsize,
     e_shnum, _) = struct.unpack_from("<HHIQQQIHHHHHH", head, 16)
    if e_machine != _EM_X86_64:
        raise bad(f"it is for machine {e_machine}, not x86-64 ({_EM_X86_64})")
    if e_type != _ET_DYN:
        raise bad(f"it is not a shared object (ELF type {e_type})")
    ph_end = e_phoff + e_phnum * e_phentsize
    if ph_end > size:
        raise bad(f"its program headers end at byte {ph_end}, past its {size} bytes (truncated)")
    sh_end = e_shoff + e_shnum * e_shentsize
    if sh_end > size:
        raise bad(f"its section headers end at byte {sh_end}, past its {size} bytes (truncated)")
    if e_phentsize < 56 and e_phnum:
        raise bad(f"its program header entries are {e_phentsize} bytes, expected 56")
    # The trailer octetc compile appends (runtime/AotLoader.h, AotFileTrailer): its magic,
    # version, the size it covers and the checksum of those bytes, verified here before
    # the dynamic loader reads any of them, as octet_model_open does (a damaged .dynamic
    # or relocation would crash inside dlopen).
    trailer = os.pread(fd, 32, size - 32) if size >= 96 else b""
    if len(trailer) != 32 or trailer[:8] != b"OCTETSUM" or \
            struct.unpack_from("<QQ", trailer, 8) != (1, size - 32):
        raise bad("it ends in no Octet checksum trailer (not written by octetc compile, or "
                  "truncated or extended since, or compiled by an older Octet: compile it again)")
    import mmap
    with mmap.mmap(fd, size - 32, prot=mmap.PROT_READ) as content:
        matches = _image_checksum(memoryview(content)) == struct.unpack_from("<Q", trailer, 24)[0]
    if not matches:
        raise bad("the file is corrupt: its checksum does not match (a changed byte anywhere "
                  "in it; copy or compile it again)")
    headers = os.pread(fd, e_phnum * e_phentsize, e_phoff)
    for i in range(e_phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", headers, i * e_phentsize)
        if p_type == _PT_LOAD and p_offset + p_filesz > size:
            raise bad(f"its loadable segment {i} ends at byte {p_offset + p_filesz}, past its "
                      f"{size} bytes (truncated)")


_load_count = 0
_load_lock = threading.Lock()


def _unique_load_name(fd: int, path: str) -> str:
    """A name for dlopen that no earlier load in this process used: a fresh symlink to
    /proc/self/fd/<fd>. dlopen returns an already loaded library whose name matches, and a
    library stays loaded past dlclose while a thread holds its thread_local objects, so
    neither the file's path (written again: other contents) nor /proc/self/fd/<fd> (fd
    numbers are reused) may serve as the name. The symlink lives in a folder of its own,
    removed with it right after dlopen (the caller's _drop_load_name): a process that is
    killed later (a Ray replica) leaves nothing behind in the temporary folder."""
    global _load_count
    import tempfile
    with _load_lock:
        _load_count += 1  # the count keeps names distinct should mkdtemp reuse a folder name
        count = _load_count
    folder = tempfile.mkdtemp(prefix="octet-load-")
    name = os.path.join(folder, f"{count}-{os.path.basename(path) or 'model.so'}")
    os.symlink(f"/proc/self/fd/{fd}", name)
    return name


def _drop_load_name(name: str) -> None:
    os.unlink(name)
    os.rmdir(os.path.dirname(name))


def open_model_library(path: str) -> Library:
    """Loads a model.so as a library of its own. It is opened once, checked, and loaded
    through that same open file (what is checked is what is loaded) under a name no other
    load used, so a file written again at the same path loads anew."""
    import stat
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise InvalidModel(f"cannot open '{path}': {e.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvalidModel(f"'{path}' is not a regular file")
        _check_elf(path, fd)
        name = _unique_load_name(fd, path)
        try:
            cdll = ctypes.CDLL(name)
        except OSError as e:
            raise InvalidModel(f"'{path}' is not a loadable Octet model.so: "
                               f"{str(e).replace(name, path)}") from None
        finally:
            _drop_load_name(name)
        if getattr(cdll, "octet_aot_image", None) is None:
            _ctypes.dlclose(cdll._handle)
            raise InvalidModel(f"'{path}' is not a loadable Octet model.so: it exports no "
                               "octet_aot_image (a shared object, but not one octetc compile wrote)")
    finally:
        os.close(fd)  # the mapping stays
    return Library(os.path.abspath(path), cdll, loaded=True)


# -------------------------------------------------------------------------- options

class Options:
    """An octet_options of `lib`, destroyed with this object."""

    def __init__(self, lib: Library, values: dict):
        self.lib = lib
        self.handle = lib.cdll.octet_options_create()
        if not self.handle:
            raise RunFailure("octet_options_create: out of memory")
        self._callback = None
        for key, value in values.items():
            if isinstance(value, bool):
                value = "1" if value else "0"
            lib.check(lib.cdll.octet_options_set(self.handle, str(key).encode(),
                                                 str(value).encode()))

    def set_progress(self, callback) -> None:
        """callback(message: str, done: int, total: int) on the compiling thread."""
        if not self.lib.has("octet_options_set_progress"):
            return

        def trampoline(_user, message, done, total):
            try:
                callback(message.decode("utf-8", "replace"), int(done), int(total))
            except Exception:  # never let a display error unwind through C++
                pass

        self._callback = PROGRESS_FN(trampoline)  # kept alive while the options live
        self.lib.check(self.lib.cdll.octet_options_set_progress(self.handle, self._callback, None))

    def __del__(self):
        if getattr(self, "handle", None):
            self.lib.cdll.octet_options_destroy(self.handle)
            self.handle = None


def read_json_buffer(call) -> str:
    """A string from a C call with the (buffer, size, &needed) convention."""
    needed = ctypes.c_size_t(0)
    status = call(None, 0, ctypes.byref(needed))
    if status not in (OK, _OUTPUT_TOO_SMALL):
        return status, ""
    buffer = ctypes.create_string_buffer(needed.value)
    status = call(buffer, needed.value, ctypes.byref(needed))
    return status, buffer.value.decode("utf-8", "replace")
