"""Embedding a corpus with Ray Data (pip install octet[serve] pyarrow; docs/serving.md).

    octet.data.embed_parquet("corpus/", "embeddings/", "minilm-int8.so",
                             tokenizer="all-MiniLM-L6-v2/", concurrency=2, threads=1)

reads Parquet files with a text column, embeds every row with an Octet model.so in a pool of
`concurrency` actors (one model per actor, opened once: a model.so opens in milliseconds and
maps its weights, so actors on one node share them), and writes Parquet with the input
columns plus the embedding (a fixed-shape float32 tensor column).
"""
from __future__ import annotations

import os
from typing import Dict, Optional

import numpy as np

from ._model import load
from .sentence import SentenceEncoder


class Embedder:
    """The map_batches callable: one SentenceEncoder per actor."""

    def __init__(self, model_path: str, tokenizer: str, text_column: str = "text",
                 output_column: str = "embedding", encode_batch_size: int = 32,
                 threads: int = 1, max_length: Optional[int] = None):
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))  # before libgomp starts
        self.encoder = SentenceEncoder(load(model_path), tokenizer, max_length=max_length)
        self.text_column = text_column
        self.output_column = output_column
        self.encode_batch_size = encode_batch_size

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        if self.text_column not in batch:
            raise KeyError(f"no column '{self.text_column}' (columns: {', '.join(batch)})")
        texts = ["" if t is None else str(t) for t in batch[self.text_column]]
        batch[self.output_column] = self.encoder.encode(texts, batch_size=self.encode_batch_size)
        return batch


def embed_parquet(source: str, destination: str, model_path: str, tokenizer: str, *,
                  text_column: str = "text", output_column: str = "embedding",
                  rows_per_batch: int = 256, encode_batch_size: int = 32, concurrency: int = 1,
                  threads: int = 1, max_length: Optional[int] = None) -> int:
    """Embeds the Parquet dataset at `source` into Parquet files under `destination` with
    Ray Data (ray.init first to join a cluster; the model.so and tokenizer paths must exist
    on every node). Returns the number of rows written."""
    import ray
    dataset = ray.data.read_parquet(source)
    embedded = dataset.map_batches(
        Embedder, batch_size=rows_per_batch, batch_format="numpy", concurrency=concurrency,
        num_cpus=threads,
        fn_constructor_kwargs=dict(model_path=os.path.abspath(model_path), tokenizer=tokenizer,
                                   text_column=text_column, output_column=output_column,
                                   encode_batch_size=encode_batch_size, threads=threads,
                                   max_length=max_length),
        runtime_env={"env_vars": {"OMP_NUM_THREADS": str(threads)}})
    embedded.write_parquet(destination)
    return ray.data.read_parquet(destination).count()
