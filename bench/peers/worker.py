#!/usr/bin/env python3
"""One runtime of bench/peers.py in its own process (their thread pools spin and would disturb a
neighbour in the same process).

  worker.py prepare WORK          (peers venv) ONNX Runtime's QDQ and dynamic INT8 models
  worker.py serve ENGINE WORK     a line protocol on stdin/stdout, driven by bench/peers.py:
      load SHAPE                  -> "ok <seconds>"   build / compile for the feeds WORK/SHAPE.npz
      time SHAPE REPEAT           -> "ok <ms> <ms> ..." REPEAT timed runs
      out SHAPE                   -> "ok <path>"      the first output saved as .npy
      quit
Engines: octet-int8, octet-int8-padded, octet-int8-f32attn, octet-fp32, octet-bf16 (system python, the package of this checkout), ort-fp32, ort-int8-static,
ort-int8-dynamic, ov-int8, ov-int8-f32, ov-default, torch-int8 (peers venv). Files in WORK: model.onnx (FP32 BERT-base),
calib/setNNN/*.npy (calibration batches), qdq.onnx, dynamic.onnx, SHAPE.npz (feeds).
"""
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THREADS = int(os.environ.get("PEERS_THREADS", "2"))


def calibration_sets(work):
    calib = os.path.join(work, "calib")
    sets = []
    for d in sorted(os.listdir(calib)):
        folder = os.path.join(calib, d)
        sets.append({f[:-4]: np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder))})
    return sets


def prepare(work):
    """QDQ (static: MinMax calibration on the same batches Octet calibrates on, per-channel s8
    MatMul weights, u8 activations; as bench/bert_base_int8.py) and dynamic INT8 models."""
    from onnxruntime import quantization as q
    fp32 = os.path.join(work, "model.onnx")
    qdq = os.path.join(work, "qdq.onnx")
    if not os.path.exists(qdq):
        sets = calibration_sets(work)

        class Reader(q.CalibrationDataReader):
            def __init__(self):
                self._it = iter(sets)

            def get_next(self):
                return next(self._it, None)

        q.quantize_static(fp32, qdq + ".tmp", Reader(), quant_format=q.QuantFormat.QDQ, per_channel=True,
                          activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8,
                          calibrate_method=q.CalibrationMethod.MinMax, op_types_to_quantize=["MatMul"],
                          extra_options={"QDQOpTypePerChannelSupportToAxis": {"MatMul": 1}})
        os.replace(qdq + ".tmp", qdq)
    dynamic = os.path.join(work, "dynamic.onnx")
    if not os.path.exists(dynamic):
        # The usual ONNX Runtime INT8 path for transformers (its quantization docs): s8 weights
        # per tensor, u8 activations quantized at run time.
        q.quantize_dynamic(fp32, dynamic + ".tmp", weight_type=q.QuantType.QInt8, op_types_to_quantize=["MatMul"])
        os.replace(dynamic + ".tmp", dynamic)


class Octet:
    """octet-int8: INT8 static (SmoothQuant, the calibration sets; -padded, -f32attn: without
    padding-free batches, with f32 attention); octet-fp32: FP32;
    octet-bf16: the FP32 model with precision="bf16" (bf16 weights and activations in the
    linears and attention's matmuls, f32 sums)."""

    def __init__(self, work, engine):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import octet
        self.version = "octet (this checkout)"
        path = os.path.join(work, "model.onnx")
        if engine in ("octet-int8", "octet-int8-padded", "octet-int8-f32attn"):
            # -padded: every padding token computed (pack_tokens off, docs/padding-free.md);
            # -f32attn: attention's matmuls in f32 (before int8 attention, docs/attention-int8.md).
            self.model = octet.compile(path, int8="static", calibration=os.path.join(work, "calib"),
                                       progress=False,
                                       attention="f32" if engine.endswith("f32attn") else None,
                                       options={"pack_tokens": "off"} if engine.endswith("padded") else None)
        else:
            self.model = octet.compile(path, precision="bf16" if engine == "octet-bf16" else None,
                                       progress=False)

    def load(self, feeds):
        inputs = [feeds[n] for n in self.model.input_names]
        first = self.model.output_names[0]
        return lambda: self.model.run(inputs)[first]


class Ort:
    FILES = {"ort-fp32": "model.onnx", "ort-int8-static": "qdq.onnx", "ort-int8-dynamic": "dynamic.onnx"}

    def __init__(self, work, engine):
        import onnxruntime as ort
        self.version = f"onnxruntime {ort.__version__}"
        so = ort.SessionOptions()
        so.intra_op_num_threads = THREADS
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(os.path.join(work, self.FILES[engine]), so,
                                            providers=["CPUExecutionProvider"])

    def load(self, feeds):
        feeds = {i.name: feeds[i.name] for i in self.session.get_inputs()}
        return lambda: self.session.run(None, feeds)[0]


class OpenVino:
    """Compiled per shape with static input shapes, as OpenVINO's docs recommend for BERT (its
    dynamic-shape path is slower): the best case for OpenVINO. ov-int8 runs the QDQ model ORT
    runs (OpenVINO maps Q/DQ pairs to its low-precision FakeQuantize path) at OpenVINO's default
    inference precision for the non-quantized ops (bf16 where the CPU has AVX512-BF16/AMX);
    ov-int8-f32 the same with INFERENCE_PRECISION_HINT f32 (on such CPUs one of the two is
    OpenVINO's best INT8 setting, and a ratio is only fair against the better); ov-default the
    FP32 model at OpenVINO's default inference precision."""

    def __init__(self, work, engine):
        import openvino as ov
        self.ov = ov
        self.core = ov.Core()
        self.version = f"openvino {ov.__version__}"
        self.path = os.path.join(work, "qdq.onnx" if engine.startswith("ov-int8") else "model.onnx")
        self.config = {"INFERENCE_NUM_THREADS": THREADS, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
        if engine == "ov-int8-f32":
            self.config["INFERENCE_PRECISION_HINT"] = "f32"

    def load(self, feeds):
        model = self.core.read_model(self.path)
        names = [i.get_any_name() for i in model.inputs]
        model.reshape({n: self.ov.PartialShape(list(feeds[n].shape)) for n in names})
        compiled = self.core.compile_model(model, "CPU", self.config)
        precision = compiled.get_property("INFERENCE_PRECISION_HINT")
        self.precision = precision.get_type_name() if hasattr(precision, "get_type_name") else str(precision).replace(" ", "")
        request = compiled.create_infer_request()
        inputs = {n: feeds[n] for n in names}
        return lambda: request.infer(inputs)[0]


class TorchInt8:
    """PyTorch's own INT8 path: BERT-base as a torch module with the ONNX model's weights,
    torchao SmoothQuant (alpha 0.5) over Int8StaticActivationInt8WeightConfig (per-tensor u8/s8
    static activations, per-channel weights: the scheme Octet's static mode uses), calibrated on
    the same batches, then torch.compile (Inductor) with freezing, per shape (static shapes)."""

    def __init__(self, work):
        import onnx
        import torch
        import torchao
        from onnx import numpy_helper
        from torchao.prototype.smoothquant import SmoothQuantConfig
        from torchao.quantization import quantize_
        from torchao.quantization.granularity import PerRow, PerTensor
        from torchao.quantization.quant_api import Int8StaticActivationInt8WeightConfig
        from torchao.quantization.quantize_.common.quantization_step import QuantizationStep
        torch.set_num_threads(THREADS)
        self.torch = torch
        self.version = f"torch {torch.__version__} torchao {torchao.__version__}"
        graph = onnx.load(os.path.join(work, "model.onnx")).graph
        weights = [(i.name, torch.from_numpy(numpy_helper.to_array(i).copy())) for i in graph.initializer]
        model = _torch_bert(torch, weights).eval()
        config = SmoothQuantConfig(base_config=Int8StaticActivationInt8WeightConfig(granularity=[PerTensor(), PerRow()]),
                                   step=QuantizationStep.PREPARE, alpha=0.5)
        quantize_(model, config)
        with torch.no_grad():
            for feeds in calibration_sets(work):
                model(*(torch.from_numpy(feeds[n]) for n in ("input_ids", "attention_mask", "token_type_ids")))
        config.step = QuantizationStep.CONVERT
        quantize_(model, config)
        torch._inductor.config.freezing = True
        self.model = torch.compile(model, dynamic=False)

    def load(self, feeds):
        args = tuple(self.torch.from_numpy(feeds[n]) for n in ("input_ids", "attention_mask", "token_type_ids"))

        def run():
            with self.torch.no_grad():
                return self.model(*args).numpy()
        return run


def _torch_bert(torch, weights):
    """BERT-base as test/models/make_bert_base.py exports it: the initializers in graph order
    (embeddings; then per layer Q, K, V, attention output, LayerNorm, FFN in, FFN out, LayerNorm;
    MatMul weights stored [in, out])."""
    nn, F = torch.nn, torch.nn.functional
    named = dict(weights)
    emb = {n: named[f"bert.embeddings.{n}"] for n in ("word_embeddings.weight", "position_embeddings.weight",
                                                       "token_type_embeddings.weight", "LayerNorm.weight", "LayerNorm.bias")}
    # Everything but the embeddings and the exporter's position-id constant (onnx::Slice_*).
    rest = [t for n, t in weights if not n.startswith("bert.embeddings.") and not n.startswith("onnx::Slice")]
    if len(rest) % 16:
        raise ValueError(f"model.onnx: {len(rest)} encoder initializers, expected 16 per layer")

    def linear(w, b):
        layer = nn.Linear(w.shape[0], w.shape[1])
        layer.weight.data, layer.bias.data = w.t().contiguous(), b
        return layer

    def norm(w, b):
        layer = nn.LayerNorm(w.shape[0], eps=1e-12)
        layer.weight.data, layer.bias.data = w, b
        return layer

    class Layer(nn.Module):
        def __init__(self, t):
            super().__init__()
            self.q, self.k, self.v, self.o = (linear(t[i], t[i + 1]) for i in (0, 2, 4, 6))
            self.ln1 = norm(t[8], t[9])
            self.ffn_in, self.ffn_out = linear(t[10], t[11]), linear(t[12], t[13])
            self.ln2 = norm(t[14], t[15])

        def forward(self, x, bias):
            b, s, h = x.shape
            heads = lambda t: t.view(b, s, 12, h // 12).transpose(1, 2)  # noqa: E731
            q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
            p = torch.softmax(q @ k.transpose(-1, -2) / (h // 12) ** 0.5 + bias, dim=-1)
            x = self.ln1(self.o((p @ v).transpose(1, 2).reshape(b, s, h)) + x)
            return self.ln2(self.ffn_out(F.gelu(self.ffn_in(x))) + x)

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding.from_pretrained(emb["word_embeddings.weight"])
            self.pos = nn.Embedding.from_pretrained(emb["position_embeddings.weight"])
            self.token_type = nn.Embedding.from_pretrained(emb["token_type_embeddings.weight"])
            self.ln = norm(emb["LayerNorm.weight"], emb["LayerNorm.bias"])
            self.layers = nn.ModuleList(Layer(rest[i:i + 16]) for i in range(0, len(rest), 16))

        def forward(self, ids, mask, types):
            x = self.ln(self.word(ids) + self.pos(torch.arange(ids.shape[1]))[None] + self.token_type(types))
            bias = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
            for layer in self.layers:
                x = layer(x, bias)
            return x
    return Bert()


def serve(engine, work):
    start = time.perf_counter()
    if engine.startswith("octet-"):
        runtime = Octet(work, engine)
    elif engine.startswith("ort-"):
        runtime = Ort(work, engine)
    elif engine.startswith("ov-"):
        runtime = OpenVino(work, engine)
    elif engine == "torch-int8":
        runtime = TorchInt8(work)
    else:
        raise SystemExit(f"worker: unknown engine {engine!r}")
    print(f"ready {time.perf_counter() - start:.3f} {runtime.version}", flush=True)
    calls = {}
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "quit":
                break
            shape = cmd[1]
            if cmd[0] == "load":
                start = time.perf_counter()
                feeds = dict(np.load(os.path.join(work, shape + ".npz")))
                calls[shape] = runtime.load(feeds)
                calls[shape]()  # first run: allocations, OpenVINO/ORT lazy init
                extra = f" {runtime.precision}" if hasattr(runtime, "precision") else ""
                print(f"ok {time.perf_counter() - start:.3f}{extra}", flush=True)
            elif cmd[0] == "time":
                fn, times = calls[shape], []
                for _ in range(int(cmd[2])):
                    start = time.perf_counter()
                    fn()
                    times.append((time.perf_counter() - start) * 1e3)
                print("ok " + " ".join(f"{t:.4f}" for t in times), flush=True)
            elif cmd[0] == "out":
                path = os.path.join(work, f"out-{engine}-{shape}.npy")
                np.save(path, np.asarray(calls[shape](), dtype=np.float32))
                print(f"ok {path}", flush=True)
            else:
                print(f"error unknown command {cmd[0]!r}", flush=True)
        except Exception as e:  # reported to the driver, which names the engine and stops
            print(f"error {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "prepare":
        prepare(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
