"""Octet models under Ray Serve (pip install octet[serve]; docs/serving.md).

Each replica opens a model.so (octet.load: milliseconds, no compiler) and serves HTTP POSTs
on the deployment's route:
  - token inputs as JSON {"input_ids": [[...]], "attention_mask": [[...]], ...}, answered
    {output name: nested lists};
  - the same as a NumPy .npz body (Content-Type application/x-npz), answered with an .npz
    of the outputs;
  - with a tokenizer, {"sentences": ["...", ...]}, answered {"embeddings": [[...]]}
    (octet.SentenceEncoder).
Requests are batched dynamically (Ray Serve's @serve.batch): token requests are sorted by
length and run in groups in which at most a quarter of the tokens are padding (a request
alone is never padded), sentences through SentenceEncoder's length-sorted batches. Bad input is a 400 with {"error": message}, never a replica crash.
Each replica pins its OpenMP threads to a core group of its own (see _claim_core_group).

    app = octet.serve.build_app("minilm-int8.so", tokenizer="all-MiniLM-L6-v2/",
                                replicas=2, threads=1)
    octet.serve.run(app, port=8000)
"""
from __future__ import annotations

import asyncio
import fcntl
import io
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _capi
from ._model import load
from .sentence import SentenceEncoder

try:
    from ray import serve
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("octet.serve needs Ray Serve: pip install 'ray[serve]' (or octet[serve])") from e

NPZ = "application/x-npz"
LOCK_DIR = os.path.join("/tmp", "octet-serve-cores")


class BadRequest(ValueError):
    """A request this deployment answers with 400."""


def _claim_core_group(threads: int) -> Optional[List[int]]:
    """Pins this process to a group of `threads` cores that no other replica on this node
    holds (an flock on /tmp/octet-serve-cores/group-<i>.lock, held while the process lives),
    so replicas with OpenMP threads do not share cores. None when every group is taken (the
    replica then runs unpinned)."""
    cores = sorted(os.sched_getaffinity(0))
    os.makedirs(LOCK_DIR, exist_ok=True)
    for group in range(len(cores) // threads):
        fd = os.open(os.path.join(LOCK_DIR, f"group-{group}.lock"), os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        chosen = cores[group * threads:(group + 1) * threads]
        for task in os.listdir("/proc/self/task"):  # every thread; later ones inherit it
            try:
                os.sched_setaffinity(int(task), chosen)
            except OSError:
                pass
        _claim_core_group.held = fd  # never closed: the lock lives with the process
        return chosen
    return None


def parse_request(body: bytes, content_type: str) -> Tuple[str, Any]:
    """("tokens", {name: 2-D array}) or ("sentences", [str]); BadRequest otherwise."""
    if content_type.split(";")[0].strip() in (NPZ, "application/octet-stream"):
        try:
            with np.load(io.BytesIO(body), allow_pickle=False) as archive:
                return "tokens", {name: archive[name] for name in archive.files}
        except Exception as e:
            raise BadRequest(f"the body is not a NumPy .npz archive: {e}") from None
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadRequest(f"the body is not JSON: {e}") from None
    if not isinstance(payload, dict) or not payload:
        raise BadRequest("the body must be a JSON object: {\"input_ids\": [[...]], ...} or "
                         "{\"sentences\": [...]}")
    if "sentences" in payload:
        sentences = payload["sentences"]
        if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
            raise BadRequest("\"sentences\" must be a list of strings")
        return "sentences", sentences
    arrays = {}
    for name, value in payload.items():
        try:
            array = np.asarray(value)
        except (ValueError, TypeError) as e:
            raise BadRequest(f"input '{name}' is not a rectangular array: {e}") from None
        if array.dtype.kind not in "iub":
            raise BadRequest(f"input '{name}' must hold integers (token ids, masks), "
                             f"not {array.dtype}")
        arrays[name] = array
    return "tokens", arrays


class OnnxRuntimeModel:
    """An ONNX Runtime session with the part of octet.Model the server uses: the baseline
    that bench/serve_load.py deploys the same way (engine="onnxruntime")."""

    def __init__(self, path: str, threads: int):
        import onnxruntime as ort
        from ._model import TensorInfo
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        dtypes = {"tensor(int64)": np.dtype(np.int64), "tensor(int32)": np.dtype(np.int32),
                  "tensor(float)": np.dtype(np.float32)}

        def info(node):
            return TensorInfo(node.name, dtypes[node.type],
                              tuple(d if isinstance(d, int) else (d or None) for d in node.shape))
        self.inputs = tuple(info(i) for i in self.session.get_inputs())
        self.outputs = tuple(info(o) for o in self.session.get_outputs())

    def run(self, feeds, outputs=None):
        names = list(outputs) if outputs else [o.name for o in self.outputs]
        return dict(zip(names, self.session.run(names, feeds)))


class OctetServer:
    """The deployment's class (wrapped by serve.deployment in build_app)."""

    def __init__(self, model_path: str, tokenizer: Optional[str] = None, threads: int = 1,
                 max_batch_size: int = 16, batch_wait_timeout_s: float = 0.005,
                 max_length: int = 512, pin: bool = True, engine: str = "octet",
                 constants: str = "huge_pages"):
        from ray.serve.metrics import Counter, Histogram
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))  # before libgomp starts
        self.cores = _claim_core_group(threads) if pin else None
        if engine == "octet":
            self.model = load(model_path, constants=constants)
        elif engine == "onnxruntime":
            self.model = OnnxRuntimeModel(model_path, threads)
        else:
            raise ValueError(f"engine={engine!r}: expected 'octet' or 'onnxruntime'")
        self.encoder = SentenceEncoder(self.model, tokenizer) if tokenizer else None
        self.max_length = max_length
        self.inputs = {i.name: i for i in self.model.inputs}
        # Outputs whose dim 1 is the inputs' sequence dim: sliced back after padding.
        seq_dim = next(iter(self.inputs.values())).shape[1] if self.inputs else None
        self.sequence_outputs = {o.name for o in self.model.outputs
                                 if isinstance(seq_dim, str) and len(o.shape) > 1
                                 and o.shape[1] == seq_dim}
        self.can_pad = "attention_mask" in self.inputs and bool(self.sequence_outputs)
        # Runs happen on one thread (they release the GIL), so the event loop keeps
        # accepting and batching requests meanwhile.
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="octet-run")
        self.batch.set_max_batch_size(max_batch_size)
        self.batch.set_batch_wait_timeout_s(batch_wait_timeout_s)
        self.requests = Counter("octet_requests", description="requests by HTTP status",
                                tag_keys=("status",))
        self.batch_sizes = Histogram("octet_batch_size", description="requests per batch",
                                     boundaries=[1, 2, 4, 8, 16, 32, 64])
        self.latency = Histogram("octet_request_ms", description="request latency (ms)",
                                 boundaries=[1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000])

    # ------------------------------------------------------------------ requests

    def _check_tokens(self, arrays: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        unknown = [n for n in arrays if n not in self.inputs]
        if unknown:
            raise BadRequest(f"unknown input '{unknown[0]}'; the model takes "
                             f"{', '.join(self.inputs)}")
        missing = [n for n in self.inputs if n not in arrays]
        if missing:
            raise BadRequest(f"missing input '{missing[0]}'; the model takes {', '.join(self.inputs)}")
        shape = None
        for name, array in arrays.items():
            if array.ndim != 2:
                raise BadRequest(f"input '{name}' has rank {array.ndim}, expected [batch, sequence]")
            if shape is not None and array.shape != shape:
                raise BadRequest(f"input '{name}' has shape {list(array.shape)}, others {list(shape)}")
            shape = array.shape
        if shape[1] > self.max_length:
            raise BadRequest(f"sequence of {shape[1]} tokens, longer than this deployment's "
                             f"max_length {self.max_length}")
        if shape[0] == 0 or shape[1] == 0:
            raise BadRequest(f"empty input of shape {list(shape)}")
        return {n: np.ascontiguousarray(a, dtype=self.inputs[n].dtype) for n, a in arrays.items()}

    async def __call__(self, request) -> Any:
        from starlette.responses import JSONResponse, Response
        start = time.perf_counter()
        content_type = request.headers.get("content-type", "")
        binary = content_type.split(";")[0].strip() in (NPZ, "application/octet-stream")
        status = 200
        try:
            kind, payload = parse_request(await request.body(), content_type)
            if kind == "sentences" and self.encoder is None:
                raise BadRequest("this deployment has no tokenizer: send token ids")
            if kind == "tokens":
                payload = self._check_tokens(payload)
            result = await self.batch((kind, payload))
            if isinstance(result, Exception):
                raise result
            if binary:
                out = io.BytesIO()
                np.savez(out, **result)
                response = Response(out.getvalue(), media_type=NPZ)
            else:
                response = JSONResponse({k: v.tolist() for k, v in result.items()})
        except (BadRequest, _capi.InvalidInput, _capi.InvalidArgument) as e:
            status, response = 400, JSONResponse({"error": str(e)}, status_code=400)
        except _capi.Error as e:
            status, response = 500, JSONResponse({"error": str(e)}, status_code=500)
        self.requests.inc(tags={"status": str(status)})
        self.latency.observe(1e3 * (time.perf_counter() - start))
        return response

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.005)
    async def batch(self, items: List[Tuple[str, Any]]) -> List[Any]:
        self.batch_sizes.observe(len(items))
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, self._compute, items)

    def _token_groups(self, members: List[int], items) -> List[List[int]]:
        """Token requests grouped for one run each: sorted by length, a group grows while at
        most a quarter of its tokens would be padding. Without an attention_mask (or a named
        sequence dim) nothing can be padded: only equal lengths share a run."""
        length = {i: next(iter(items[i][1].values())).shape for i in members}
        ordered = sorted(members, key=lambda i: length[i][1])
        groups: List[List[int]] = []
        for i in ordered:
            if groups:
                group = groups[-1] + [i]
                rows = sum(length[j][0] for j in group)
                real = sum(length[j][0] * length[j][1] for j in group)
                width = length[i][1]
                same = all(length[j][1] == width for j in group)
                if same or (self.can_pad and rows * width - real <= 0.25 * rows * width):
                    groups[-1] = group
                    continue
            groups.append([i])
        return groups

    def _compute(self, items: List[Tuple[str, Any]]) -> List[Any]:
        """One result per item: a dict of arrays, or the exception that item raised (one bad
        item never fails the others)."""
        results: List[Any] = [None] * len(items)
        tokens = [i for i, (kind, _) in enumerate(items) if kind == "tokens"]
        sentences = [i for i, (kind, _) in enumerate(items) if kind == "sentences"]
        for members in self._token_groups(tokens, items):
            shapes = [next(iter(items[i][1].values())).shape for i in members]
            width = max(seq for _, seq in shapes)
            feeds = {}
            for name in self.inputs:
                parts = []
                for i, (rows, seq) in zip(members, shapes):
                    part = items[i][1][name]
                    if seq < width:  # padding: token 0, mask 0, type 0
                        part = np.pad(part, ((0, 0), (0, width - seq)))
                    parts.append(part)
                feeds[name] = np.concatenate(parts) if len(parts) > 1 else parts[0]
            try:
                out = self.model.run(feeds)
            except Exception as e:
                if len(members) == 1:
                    results[members[0]] = e
                    continue
                for i in members:  # find the culprit: each request alone
                    try:
                        results[i] = self.model.run(items[i][1])
                    except Exception as single:
                        results[i] = single
                continue
            begin = 0
            for i, (rows, seq) in zip(members, shapes):
                results[i] = {k: (v[begin:begin + rows, :seq] if k in self.sequence_outputs
                                  else v[begin:begin + rows]) for k, v in out.items()}
                begin += rows
        if sentences:
            texts = [s for i in sentences for s in items[i][1]]
            try:
                embeddings = self.encoder.encode(texts)
                begin = 0
                for i in sentences:
                    n = len(items[i][1])
                    results[i] = {"embeddings": embeddings[begin:begin + n]}
                    begin += n
            except Exception as e:
                for i in sentences:
                    results[i] = e
        return results

    def check_health(self) -> None:
        """Ray Serve's periodic health check: the model must still answer a 1 x 1 run."""
        feeds = {n: np.ones((1, 1), i.dtype) for n, i in self.inputs.items()}
        self.model.run(feeds)


def build_app(model_path: str, *, tokenizer: Optional[str] = None, replicas: int = 1,
              threads: int = 1, max_batch_size: int = 16, batch_wait_timeout_s: float = 0.005,
              max_length: int = 512, pin: bool = True, name: str = "octet",
              engine: str = "octet", constants: str = "huge_pages"):
    """The Ray Serve application: `replicas` replicas of the model.so at `model_path` (the
    path must exist on every node that runs one; docs/serving.md), each with `threads`
    OpenMP threads pinned to cores of its own and dynamic batches of up to
    `max_batch_size` requests gathered for at most `batch_wait_timeout_s`. engine
    "onnxruntime" serves an ONNX file the same way instead (a baseline for comparisons).
    constants: octet.load's — "huge_pages" (default: each replica copies the weights onto
    2 MiB pages, faster GEMMs) or "mapped" (the replicas on a node share the file's pages:
    less memory with many replicas)."""
    if constants not in ("huge_pages", "mapped"):
        raise ValueError(f"constants must be 'huge_pages' or 'mapped', not {constants!r}")
    deployment = serve.deployment(OctetServer, name=name).options(
        num_replicas=replicas,
        ray_actor_options={"num_cpus": threads,
                           "runtime_env": {"env_vars": {"OMP_NUM_THREADS": str(threads)}}},
        health_check_period_s=2, health_check_timeout_s=30)
    return deployment.bind(os.path.abspath(model_path), tokenizer, threads, max_batch_size,
                           batch_wait_timeout_s, max_length, pin, engine, constants)


def run(app, *, host: str = "127.0.0.1", port: int = 8000, route_prefix: str = "/",
        blocking: bool = False):
    """Starts Ray Serve's HTTP proxy on host:port (Ray must be up: ray.init or `ray start`)
    and deploys `app` at `route_prefix`. Returns the application's handle."""
    serve.start(http_options={"host": host, "port": port})
    return serve.run(app, route_prefix=route_prefix, blocking=blocking)
