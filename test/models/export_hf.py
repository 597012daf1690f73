#!/usr/bin/env python3
"""Exports tiny random-init Hugging Face encoders with torch.onnx.export, as users export them.

These are the committed fixtures of test/models/exports/ (checked by test/e2e/hf_exports.py):
what transformers + torch write today, not what test/models/make_encoder.py imitates. CI does
not run this script (it needs torch); it is run by hand, in a virtual environment that holds
exactly the pinned versions below, and its output is committed:

    transformers 5.x (PINNED_TRANSFORMERS_5):
        dynamo exporter (torch's default) at opsets 18 and 20,
        TorchScript exporter (dynamo=False) at opsets 14 and 17,
        attn_implementation "eager" and "sdpa";
    transformers 4.x (PINNED_TRANSFORMERS_4, the graphs of Optimum-exported models on the Hub):
        TorchScript exporter at opsets 14 and 17, "eager" and "sdpa".

for BertModel, BertForSequenceClassification, DistilBertModel, RobertaModel, XLMRobertaModel,
ElectraModel, AlbertModel and MPNetModel: 2 layers, hidden 32, 2 heads, intermediate 64,
vocab 64, 64 positions (sequences up to 62 with RoBERTa's position ids), seeded weights.
Inputs input_ids + attention_mask (+ token_type_ids where the model has token types, as
Optimum exports them), int64 [batch, sequence] with the dynamic axes named "batch" and
"sequence". The dynamo exporter's per-node debug metadata (stack traces with the exporting
machine's paths, FX nodes, class hierarchies) is dropped: half of each file, no semantics. Each file is self-contained (onnx.save, no external data).

Every export is checked before it is written: ONNX Runtime must load it and run it at batch 2 x
sequence 7 with a padded mask, matching the PyTorch forward pass to 1e-4. A combination that the
exporter cannot produce, or that ONNX Runtime cannot run, is dropped and listed (with its
reason) in manifest.json's "dropped".

    python export_hf.py [--out test/models/exports] [--only bert-dynamo-op20-sdpa,...]

Writes <out>/<transformers version>/<arch>-<exporter>-op<N>-<attention>.onnx and merges this
version's entries into <out>/manifest.json.
"""
import argparse
import fnmatch
import inspect
import json
import os
import sys
import tempfile
import time
import traceback
import warnings

PINNED_TORCH = "2.15.0"
PINNED_TRANSFORMERS_5 = "5.23.0"
PINNED_TRANSFORMERS_4 = "4.57.6"
PINNED_ORT = "1.20.1"  # the test pin (scripts/requirements.txt): what must run the fixtures

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "exports")

SEED = 20261203
BATCH, SEQ = 2, 7  # the check shape; row 1 has a padded tail
CHECK_TOLERANCE = 1e-4

# The tiny shape every architecture shares: ~90 files must stay within 15 MB in all.
LAYERS, HIDDEN, HEADS, INTERMEDIATE, VOCAB, POSITIONS = 2, 32, 2, 64, 64, 64

DEBUG_METADATA = {"pkg.torch.onnx.stack_trace", "pkg.torch.onnx.fx_node",
                  "pkg.torch.onnx.class_hierarchy"}

# (name, transformers config class, model class, config overrides, inputs, outputs)
ARCHS = [
    ("bert", "BertConfig", "BertModel", {},
     ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"]),
    ("bert-seqcls", "BertConfig", "BertForSequenceClassification", {"num_labels": 3},
     ["input_ids", "attention_mask", "token_type_ids"], ["logits"]),
    ("distilbert", "DistilBertConfig", "DistilBertModel", {},
     ["input_ids", "attention_mask"], ["last_hidden_state"]),
    # RoBERTa and XLM-R: padding id 1, positions numbered from it (input_ids != 1, cumsum),
    # one token type that Optimum does not export as an input.
    ("roberta", "RobertaConfig", "RobertaModel", {"pad_token_id": 1, "type_vocab_size": 1},
     ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"]),
    ("xlmr", "XLMRobertaConfig", "XLMRobertaModel", {"pad_token_id": 1, "type_vocab_size": 1},
     ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"]),
    # ELECTRA and ALBERT project a smaller embedding (16) up to the hidden size.
    ("electra", "ElectraConfig", "ElectraModel", {"embedding_size": 16},
     ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state"]),
    ("albert", "AlbertConfig", "AlbertModel", {"embedding_size": 16},
     ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"]),
    ("mpnet", "MPNetConfig", "MPNetModel", {"pad_token_id": 1, "relative_attention_num_buckets": 32},
     ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"]),
]

# (exporter, opset) per transformers major version.
EXPORTS = {
    5: [("dynamo", 18), ("dynamo", 20), ("torchscript", 14), ("torchscript", 17)],
    4: [("torchscript", 14), ("torchscript", 17)],
}
ATTENTIONS = ["eager", "sdpa"]


def die(message):
    print(f"export_hf.py: {message}", file=sys.stderr)
    sys.exit(2)


def check_versions():
    """The pinned versions, or a clear message: another torch or transformers writes other
    graphs, and the fixtures would silently change."""
    try:
        import torch
        import transformers
        import onnx  # noqa: F401
    except ImportError as error:
        die(f"{error.name} is not installed; run this in a virtual environment with "
            f"torch=={PINNED_TORCH}, transformers=={PINNED_TRANSFORMERS_5} (or "
            f"{PINNED_TRANSFORMERS_4}), onnx, onnxscript and onnxruntime=={PINNED_ORT}")
    torch_version = torch.__version__.split("+")[0]
    if torch_version != PINNED_TORCH:
        die(f"torch {torch.__version__} is installed; the fixtures are pinned to torch=={PINNED_TORCH}")
    if transformers.__version__ not in (PINNED_TRANSFORMERS_5, PINNED_TRANSFORMERS_4):
        die(f"transformers {transformers.__version__} is installed; the fixtures are pinned to "
            f"transformers=={PINNED_TRANSFORMERS_5} or =={PINNED_TRANSFORMERS_4}")
    try:
        import onnxruntime
    except ImportError:
        die(f"onnxruntime is not installed (onnxruntime=={PINNED_ORT} checks every export)")
    if onnxruntime.__version__ != PINNED_ORT:
        die(f"onnxruntime {onnxruntime.__version__} is installed; the check needs the test pin "
            f"onnxruntime=={PINNED_ORT}")
    return torch_version, transformers.__version__


def make_model(arch, attention):
    """The seeded random-init model in eval mode. Weights are drawn wider than the init's
    0.02 and the LayerNorm scales and shifts moved off 1 / 0, so that attention is not uniform
    and a wrong mask or LayerNorm shows in the outputs."""
    import torch
    import transformers

    name, config_class, model_class, overrides, _, _ = arch
    config = getattr(transformers, config_class)(
        vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE, max_position_embeddings=POSITIONS,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.2,
        **overrides)
    if name == "distilbert":  # DistilBERT names its sizes differently
        config = transformers.DistilBertConfig(
            vocab_size=VOCAB, dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS, hidden_dim=INTERMEDIATE,
            max_position_embeddings=POSITIONS, dropout=0.0, attention_dropout=0.0,
            initializer_range=0.2)
    torch.manual_seed(SEED)
    model = getattr(transformers, model_class)._from_config(config, attn_implementation=attention)
    if getattr(model.config, "_attn_implementation", attention) != attention:
        raise RuntimeError(f"asked for attn_implementation={attention!r}, the model uses "
                           f"{model.config._attn_implementation!r}")
    generator = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.add_(0.2 * torch.randn(module.weight.shape, generator=generator))
                module.bias.add_(0.2 * torch.randn(module.bias.shape, generator=generator))
    model.eval()
    return model


def sample_inputs(input_names, batch=BATCH, seq=SEQ, seed=SEED):
    """Token ids in [2, VOCAB) (0 and 1 are padding ids), row 1 padded after 4 tokens."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    feeds = {"input_ids": torch.randint(2, VOCAB, (batch, seq), generator=generator)}
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[1:, 4:] = 0
    feeds["attention_mask"] = mask
    if "token_type_ids" in input_names:
        types = torch.zeros(batch, seq, dtype=torch.int64)
        types[:, seq // 2:] = 1
        feeds["token_type_ids"] = types
    return {name: feeds[name] for name in input_names}


def torch_outputs(model, feeds, output_names):
    import torch

    with torch.no_grad():
        result = model(**feeds, return_dict=True)
    return {name: result[name].numpy() for name in output_names}


def wrap_inputs(model, input_names, output_names):
    """A module whose forward(*inputs) returns the named outputs of model(**inputs)."""
    import torch

    class InputsWrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *inputs):
            result = self.model(**dict(zip(input_names, inputs)), return_dict=True)
            return tuple(result[name] for name in output_names)

    return InputsWrapper()


def export_one(model, feeds, output_names, exporter, opset):
    """torch.onnx.export as a user calls it (opset None: the exporter's default); returns (the
    onnx.ModelProto with its tensors inside, whether the model had to be wrapped)."""
    import onnx
    import torch

    input_names = list(feeds)
    wrapped = False
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = os.path.join(tmp, "model.onnx")
        if exporter == "dynamo":
            batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
            torch.onnx.export(model, (), raw, kwargs=dict(feeds), input_names=input_names,
                              output_names=output_names, opset_version=opset, dynamo=True,
                              dynamic_shapes={name: {0: batch, 1: sequence} for name in input_names})
        else:
            # Positional, in forward()'s order (None for what is not fed), as users and Optimum
            # call it.
            params = list(inspect.signature(model.forward).parameters)
            last = max(params.index(name) for name in input_names)
            positional = tuple(feeds.get(name) for name in params[:last + 1])
            axes = {name: {0: "batch", 1: "sequence"} for name in input_names}
            for name in output_names:
                axes[name] = {0: "batch", 1: "sequence"} if name == "last_hidden_state" else {0: "batch"}
            try:
                torch.onnx.export(model, positional, raw, input_names=input_names,
                                  output_names=output_names, opset_version=opset, dynamo=False,
                                  dynamic_axes=axes)
            except TypeError as error:
                # transformers 5's forward decorators refill use_cache from the config into
                # the keywords, which collides with the positional arguments that
                # torch.jit.trace passes ("got multiple values for argument 'use_cache'").
                # Users get past it the usual way: a module whose forward takes the inputs.
                if "multiple values" not in str(error):
                    raise
                wrapped = True
                torch.onnx.export(wrap_inputs(model, input_names, output_names),
                                  tuple(feeds.values()), raw, input_names=input_names,
                                  output_names=output_names, opset_version=opset, dynamo=False,
                                  dynamic_axes=axes)
        proto = onnx.load(raw, load_external_data=True)
    # The dynamo exporter records per node its Python stack trace (paths of the exporting
    # machine), FX node and class hierarchy: half of a file, none of the graph's meaning, and
    # nothing an importer reads. The module scopes (namespace, name_scopes) stay.
    for node in proto.graph.node:
        kept = [p for p in node.metadata_props if p.key not in DEBUG_METADATA]
        if len(kept) != len(node.metadata_props):
            del node.metadata_props[:]
            node.metadata_props.extend(kept)
    return proto, wrapped


def ort_check(path, feeds, want):
    """ONNX Runtime (the test pin) loads and runs the file; max|ORT - torch| over all outputs."""
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(list(want), {name: value.numpy() for name, value in feeds.items()})
    return max(float(np.max(np.abs(g - w))) for g, w in zip(got, want.values()))


def op_summary(model):
    opsets = {entry.domain or "ai.onnx": entry.version for entry in model.opset_import}
    ops = sorted({(node.domain or "ai.onnx", node.op_type) for node in model.graph.node})
    return opsets, ops


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="folder of the fixtures (default: %(default)s)")
    parser.add_argument("--only", help="comma-separated fixture globs, e.g. 'bert-*-sdpa,mpnet-dynamo-*'")
    args = parser.parse_args()
    torch_version, tf_version = check_versions()

    import onnx
    import torch

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    major = int(tf_version.split(".")[0])
    version_dir = os.path.join(args.out, tf_version)
    os.makedirs(version_dir, exist_ok=True)
    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = {"fixtures": [], "dropped": []}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    globs = args.only.split(",") if args.only else None

    fixtures, dropped = [], []
    for arch in ARCHS:
        name, _, model_class, _, input_names, output_names = arch
        for attention in ATTENTIONS:
            for exporter, opset in EXPORTS[major]:
                label = f"{name}-{exporter}-op{opset}-{attention}"
                if globs and not any(fnmatch.fnmatch(label, g) for g in globs):
                    continue
                start = time.time()
                path = os.path.join(version_dir, label + ".onnx")
                try:
                    model = make_model(arch, attention)
                except Exception as error:  # noqa: BLE001 (the reason is what we record)
                    dropped.append({"fixture": label, "transformers": tf_version,
                                    "reason": f"transformers: {type(error).__name__}: {error}".splitlines()[0]})
                    print(f"{label}: DROPPED (model): {dropped[-1]['reason']}", flush=True)
                    continue
                feeds = sample_inputs(input_names)
                want = torch_outputs(model, feeds, output_names)
                try:
                    proto, wrapped = export_one(model, feeds, output_names, exporter, opset)
                except Exception as error:  # noqa: BLE001
                    message = f"{type(error).__name__}: {error}".strip().splitlines()
                    dropped.append({"fixture": label, "transformers": tf_version,
                                    "reason": "exporter: " + (message[0] if message else "?")})
                    print(f"{label}: DROPPED (export): {dropped[-1]['reason']}", flush=True)
                    traceback.print_exc(limit=2)
                    continue
                proto.doc_string = (f"{model_class} ({LAYERS} layers, hidden {HIDDEN}, {HEADS} heads), "
                                    f"random init seed {SEED}; torch {torch_version} "
                                    f"{exporter} exporter, opset {opset}, attn_implementation "
                                    f"{attention}, transformers {tf_version} (test/models/export_hf.py)")
                onnx.save(proto, path, save_as_external_data=False)
                try:
                    diff = ort_check(path, feeds, want)
                except Exception as error:  # noqa: BLE001
                    os.remove(path)
                    message = f"{type(error).__name__}: {error}".strip().splitlines()
                    dropped.append({"fixture": label, "transformers": tf_version,
                                    "reason": f"onnxruntime {PINNED_ORT}: " + (message[0] if message else "?")})
                    print(f"{label}: DROPPED (ORT): {dropped[-1]['reason']}", flush=True)
                    continue
                if diff > CHECK_TOLERANCE:
                    os.remove(path)
                    dropped.append({"fixture": label, "transformers": tf_version,
                                    "reason": f"ORT differs from PyTorch by {diff:.2e} (> {CHECK_TOLERANCE})"})
                    print(f"{label}: DROPPED: {dropped[-1]['reason']}", flush=True)
                    continue
                opsets, ops = op_summary(proto)
                fixtures.append({
                    "fixture": label, "file": os.path.relpath(path, args.out),
                    "arch": name, "model_class": model_class, "exporter": exporter,
                    "opset": opset, "opsets": opsets, "attention": attention,
                    "transformers": tf_version, "torch": torch_version,
                    "layers": LAYERS, "hidden": HIDDEN, "heads": HEADS,
                    "intermediate": INTERMEDIATE, "vocab": VOCAB, "max_positions": POSITIONS,
                    "pad_token_id": 1 if name in ("roberta", "xlmr", "mpnet") else 0,
                    "inputs": input_names, "outputs": output_names, "wrapped": wrapped,
                    "ort_vs_torch": float(f"{diff:.3g}"), "bytes": os.path.getsize(path),
                    "ops": [f"{domain}::{op}" for domain, op in ops]})
                print(f"{label}: ok ({os.path.getsize(path) // 1024} KiB, ORT vs torch {diff:.1e}, "
                      f"{time.time() - start:.1f}s)", flush=True)

    # Merge: this run's entries replace the same fixtures (and drops) of this version.
    done = {(e["fixture"], e["transformers"]) for e in fixtures + dropped}
    manifest["fixtures"] = [e for e in manifest["fixtures"]
                            if (e["fixture"], e["transformers"]) not in done] + fixtures
    manifest["dropped"] = [e for e in manifest["dropped"]
                           if (e["fixture"], e["transformers"]) not in done] + dropped
    manifest["fixtures"].sort(key=lambda e: (e["transformers"], e["fixture"]))
    manifest["dropped"].sort(key=lambda e: (e["transformers"], e["fixture"]))
    manifest["generator"] = "test/models/export_hf.py"
    manifest["pins"] = {"torch": PINNED_TORCH, "transformers": [PINNED_TRANSFORMERS_5, PINNED_TRANSFORMERS_4],
                        "onnxruntime_check": PINNED_ORT}
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"{len(fixtures)} written, {len(dropped)} dropped; {manifest_path}")


if __name__ == "__main__":
    main()
