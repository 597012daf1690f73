"""examples/python/encode_sentences.py runs as is: compile, save, load in a fresh process."""
import os
import subprocess
import sys

from conftest import ROOT


def test_example_runs(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "encode_sentences.py"),
                           "--work", str(tmp_path), "--repeat", "3"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "liboctet.so loaded: False" in out  # the fresh process opened the model.so alone
    assert "A man is eating food.                      closest: A man is eating a piece of bread." in out
    assert "sentences/s" in out
