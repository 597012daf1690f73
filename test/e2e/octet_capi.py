"""A ctypes binding of Octet's C API (runtime/include/octet/octet.h) for benchmarks and
tests: compile an ONNX model in-process (or open a model.so of `octetc compile`) and run it on
NumPy arrays."""
import ctypes

import numpy as np

MAX_RANK = 8
_DTYPES = {1: np.float32, 2: np.float64, 3: np.int64, 4: np.int32, 5: np.int8, 6: np.uint8, 7: np.bool_}
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}


class _TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("dim_names", ctypes.POINTER(ctypes.c_char_p))]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("bytes", ctypes.c_size_t), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int32), ("dims", ctypes.c_int64 * MAX_RANK)]


class OctetError(RuntimeError):
    pass


class OctetModel:
    def __init__(self, lib_path, onnx_path, options=None):
        self._lib = lib = ctypes.CDLL(lib_path)
        lib.octet_last_error.restype = ctypes.c_char_p
        lib.octet_options_create.restype = ctypes.c_void_p
        lib.octet_options_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
        lib.octet_options_destroy.argtypes = [ctypes.c_void_p]
        lib.octet_model_create_from_file.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                                     ctypes.POINTER(ctypes.c_void_p)]
        lib.octet_model_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.octet_model_destroy.argtypes = [ctypes.c_void_p]
        for fn in (lib.octet_model_num_inputs, lib.octet_model_num_outputs):
            fn.argtypes = [ctypes.c_void_p]
            fn.restype = ctypes.c_int32
        for fn in (lib.octet_model_input_info, lib.octet_model_output_info):
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(_TensorInfo)]
        lib.octet_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Tensor), ctypes.c_int32,
                                  ctypes.POINTER(_Tensor), ctypes.c_int32]
        lib.octet_tensor_free.argtypes = [ctypes.c_void_p]

        opts = lib.octet_options_create()
        try:
            for key, value in (options or {}).items():
                self._check(lib.octet_options_set(opts, key.encode(), str(value).encode()))
            handle = ctypes.c_void_p()
            # A model.so (AOT) is opened, ONNX compiled here (JIT).
            create = lib.octet_model_open if onnx_path.endswith(".so") else lib.octet_model_create_from_file
            self._check(create(onnx_path.encode(), opts, ctypes.byref(handle)))
        finally:
            lib.octet_options_destroy(opts)
        self._model = handle
        self.inputs = [self._info(lib.octet_model_input_info, i)
                       for i in range(lib.octet_model_num_inputs(handle))]
        self.outputs = [self._info(lib.octet_model_output_info, i)
                        for i in range(lib.octet_model_num_outputs(handle))]
        self.input_names = [i["name"] for i in self.inputs]
        self.output_names = [o["name"] for o in self.outputs]

    def _check(self, status):
        if status != 0:
            raise OctetError(f"octet status {status}: {self._lib.octet_last_error().decode()}")

    def _info(self, fn, index):
        info = _TensorInfo()
        self._check(fn(self._model, index, ctypes.byref(info)))
        return {"name": info.name.decode(), "dtype": _DTYPES[info.dtype],
                "dims": [info.dims[d] for d in range(info.rank)],
                "dim_names": [info.dim_names[d].decode() for d in range(info.rank)]}

    def run(self, arrays):
        """Runs on NumPy arrays (in the model's input order); returns NumPy outputs."""
        arrays = [np.ascontiguousarray(a) for a in arrays]
        inputs = (_Tensor * len(arrays))()
        for t, a in zip(inputs, arrays):
            t.data = a.ctypes.data
            t.bytes = a.nbytes
            t.dtype = _CODES[a.dtype]
            t.rank = a.ndim
            for d, n in enumerate(a.shape):
                t.dims[d] = n
        outputs = (_Tensor * len(self.outputs))()
        self._check(self._lib.octet_run(self._model, inputs, len(arrays), outputs, len(self.outputs)))
        results = []
        for t in outputs:
            shape = tuple(t.dims[d] for d in range(t.rank))
            dtype = np.dtype(_DTYPES[t.dtype])
            count = int(np.prod(shape)) if shape else 1
            buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(t.data) if count else b""
            results.append(np.frombuffer(bytes(buf), dtype=dtype).reshape(shape))
            self._lib.octet_tensor_free(t.data)
        return results

    def __del__(self):
        if getattr(self, "_model", None):
            self._lib.octet_model_destroy(self._model)
            self._model = None
