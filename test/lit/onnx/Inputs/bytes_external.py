"""octet_model_create_from_bytes on a model with external data: refused without
the option external_data_dir (never looked up in the working directory, which
is the model's folder here), read with it, and still confined to it.

usage: bytes_external.py LIBOCTET MODELS_DIR
"""
import ctypes
import os
import sys

lib = ctypes.CDLL(sys.argv[1])
models = sys.argv[2]
lib.octet_last_error.restype = ctypes.c_char_p
lib.octet_options_create.restype = ctypes.c_void_p
lib.octet_options_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
lib.octet_options_destroy.argtypes = [ctypes.c_void_p]
lib.octet_model_create_from_bytes.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p,
                                              ctypes.POINTER(ctypes.c_void_p)]
lib.octet_model_destroy.argtypes = [ctypes.c_void_p]

os.chdir(models)
for name, options in (("inside", {}), ("inside", {"external_data_dir": models}),
                      ("dotdot", {"external_data_dir": models}),
                      ("inside", {"external_data_dir": models, "memory_budget": "100"})):
    with open(os.path.join(models, name + ".onnx"), "rb") as f:
        data = f.read()
    opts = lib.octet_options_create()
    for key, value in options.items():
        assert lib.octet_options_set(opts, key.encode(), value.encode()) == 0
    model = ctypes.c_void_p()
    status = lib.octet_model_create_from_bytes(data, len(data), opts, ctypes.byref(model))
    lib.octet_options_destroy(opts)
    print(f"{name} {sorted(options)}: status {status}:", lib.octet_last_error().decode() if status else "ok")
    lib.octet_model_destroy(model)
