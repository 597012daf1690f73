"""Octet from Python: compile BERT-family ONNX encoders to INT8 or FP32, save them as a
self-contained model.so, open and run them, and encode sentences.

>>> import octet
>>> model = octet.compile("minilm.onnx", int8="static")      # JIT, in this process
>>> model.save("minilm-int8.so")                              # AOT: one shared object
>>> model = octet.load("minilm-int8.so")                      # needs nothing but the file
>>> out = model.run({"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
>>> encoder = octet.SentenceEncoder(model, "path/to/all-MiniLM-L6-v2")
>>> embeddings = encoder.encode(["A sentence.", "Another one."])

See docs/python.md.
"""
from ._capi import Error, InvalidArgument, InvalidInput, InvalidModel, RunFailure, Unsupported
from ._model import FusionWarning, Model, PrecisionWarning, TensorInfo, ceilings, compile, compile_to_so, load
from .sentence import SentenceEncoder

__version__ = "0.5.0"

__all__ = ["Error", "FusionWarning", "InvalidArgument", "InvalidInput", "InvalidModel", "Model", "PrecisionWarning", "RunFailure",
           "SentenceEncoder", "TensorInfo", "Unsupported", "ceilings", "compile", "compile_to_so",
           "load"]
