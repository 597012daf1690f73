#!/usr/bin/env python3
"""Seed corpora for the fuzz targets, from real exports: small BERT, DistilBERT and XLM-R
encoders of test/models/make_encoder.py (TorchScript- and dynamo-style graphs) as ONNX
bytes for onnx_import, and the plan / code / constants sections of model.so files that
`octetc compile` makes of them for plan_image (u32 plan bytes, u32 code bytes, plan, code,
constants).

  seeds.py --octetc PATH OUT_DIR     writes OUT_DIR/onnx_import/ and OUT_DIR/plan_image/
"""
import argparse
import os
import re
import struct
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = [("bert", "torchscript"), ("distilbert", "torchscript"), ("xlmr", "dynamo"),
          ("bert", "dynamo")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--octetc", required=True)
    ap.add_argument("out")
    args = ap.parse_args()
    onnx_dir = os.path.join(args.out, "onnx_import")
    plan_dir = os.path.join(args.out, "plan_image")
    os.makedirs(onnx_dir, exist_ok=True)
    os.makedirs(plan_dir, exist_ok=True)
    for arch, style in MODELS:
        name = f"{arch}-{style}"
        model = os.path.join(onnx_dir, name + ".onnx")
        if not os.path.exists(model):
            subprocess.run([sys.executable, os.path.join(SRC, "test/models/make_encoder.py"),
                            "--arch", arch, "--style", style, "--layers", "1", "--hidden", "16",
                            "--heads", "2", "--intermediate", "32", "--vocab", "30",
                            "--max-pos", "16", "-o", model], check=True, capture_output=True)
        seed = os.path.join(plan_dir, name + ".bin")
        if os.path.exists(seed):
            continue
        so = os.path.join(args.out, name + ".so")
        subprocess.run([args.octetc, "compile", model, "-o", so], check=True, capture_output=True)
        info = subprocess.run([args.octetc, "inspect", so], check=True, capture_output=True,
                              text=True).stdout
        sizes = re.search(r"plan (\d+) bytes at file offset (\d+), constants (\d+) bytes at file "
                          r"offset (\d+), code (\d+) bytes at file offset (\d+)", info)
        plan_n, plan_at, const_n, const_at, code_n, code_at = (int(x) for x in sizes.groups())
        with open(so, "rb") as f:
            data = f.read()
        os.unlink(so)
        with open(seed, "wb") as f:
            f.write(struct.pack("<II", plan_n, code_n) + data[plan_at:plan_at + plan_n] +
                    data[code_at:code_at + code_n] + data[const_at:const_at + const_n])
    print(f"seeds in {args.out}: {len(os.listdir(onnx_dir))} models, {len(os.listdir(plan_dir))} images")


if __name__ == "__main__":
    main()
