"""octet.serve and octet.data on a real local Ray cluster: a head and one extra worker node
(`ray start`, loopback only), Serve's HTTP proxy on 127.0.0.1."""
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import octet
from conftest import token_feeds

ray = pytest.importorskip("ray")
serve_api = pytest.importorskip("ray.serve")
import octet.data  # noqa: E402
import octet.serve  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_command():
    return [os.path.join(os.path.dirname(sys.executable), "ray")] \
        if os.path.exists(os.path.join(os.path.dirname(sys.executable), "ray")) else ["ray"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head (2 CPUs) and a worker node (1 CPU) on this machine, loopback only."""
    temp = str(tmp_path_factory.mktemp("ray"))
    port = free_port()
    # Loopback only: no token authentication (a token left in ~/.ray by another Ray use
    # would otherwise be required by one node and not offered by the other).
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    saved = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"  # for this process's ray.init
    common = ["--disable-usage-stats", "--node-ip-address=127.0.0.1"]
    subprocess.run(ray_command() + ["start", "--head", f"--port={port}", "--num-cpus=2",
                                    "--include-dashboard=false", f"--temp-dir={temp}"] + common,
                   check=True, env=env, capture_output=True, timeout=180)
    address = f"127.0.0.1:{port}"
    try:
        worker = subprocess.run(ray_command() + ["start", f"--address={address}", "--num-cpus=1"]
                                + common, env=env, capture_output=True, text=True, timeout=180)
        assert worker.returncode == 0, worker.stdout + worker.stderr
        ray.init(address=address, logging_level="ERROR")
        deadline = time.time() + 60
        while len([n for n in ray.nodes() if n["Alive"]]) < 2 and time.time() < deadline:
            time.sleep(0.5)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
        http = free_port()
        yield f"http://127.0.0.1:{http}", http
    finally:
        try:
            serve_api.shutdown()
        except Exception:
            pass
        ray.shutdown()
        subprocess.run(ray_command() + ["stop", "--force"], env=env, capture_output=True, timeout=120)
        if saved is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = saved
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def model_so(small_onnx, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("serve") / "bert-int8.so")
    return octet.compile_to_so(small_onnx, path, int8="static", calibration="generate:4x2x16",
                               progress=False)


@pytest.fixture(scope="module")
def served(cluster, model_so):
    url, port = cluster
    # The replicas share the file's weight pages; the tests compare with octet.load's
    # default (a copy on huge pages where the host has them): bit for bit the same.
    app = octet.serve.build_app(model_so, replicas=2, threads=1, max_batch_size=8,
                                max_length=64, pin=False, constants="mapped")
    octet.serve.run(app, port=port)
    return url


def test_build_app_refuses_an_unknown_constants_placement(model_so):
    with pytest.raises(ValueError, match="'huge_pages' or 'mapped'"):
        octet.serve.build_app(model_so, constants="shared")


def post(url, body, content_type="application/json", timeout=60):
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_json_and_npz_responses_match_model_run_bit_for_bit(served, model_so):
    model = octet.load(model_so)
    for batch, seq in ((1, 1), (2, 7), (3, 40)):
        feeds = token_feeds(batch, seq, seed=seq)
        want = model.run(feeds)["last_hidden_state"]
        status, body = post(served, json.dumps({k: v.tolist() for k, v in feeds.items()}).encode())
        assert status == 200, body
        got = np.array(json.loads(body)["last_hidden_state"], dtype=np.float32)
        assert np.array_equal(got, want)
        buffer = io.BytesIO()
        np.savez(buffer, **feeds)
        status, body = post(served, buffer.getvalue(), "application/x-npz")
        assert status == 200, body
        with np.load(io.BytesIO(body)) as out:
            assert np.array_equal(out["last_hidden_state"], want)


def test_bad_requests_are_400_and_good_ones_keep_being_served(served):
    feeds = {k: v.tolist() for k, v in token_feeds(1, 5).items()}
    cases = [
        (b"this is not json", "not JSON"),
        (json.dumps([1, 2]).encode(), "must be a JSON object"),
        (json.dumps({**feeds, "input_ids": [[0.5, 1.5, 2.5, 3.5, 4.5]]}).encode(), "must hold integers"),
        (json.dumps({**feeds, "input_ids": [[1, 2], [3]]}).encode(), "rectangular"),
        (json.dumps({k: [[1] * 65] for k in feeds}).encode(), "longer than this deployment's max_length 64"),
        (json.dumps({**feeds, "position_ids": [[0]]}).encode(), "unknown input 'position_ids'"),
        (json.dumps({"input_ids": feeds["input_ids"]}).encode(), "missing input"),
        (json.dumps({**feeds, "input_ids": [[1, 2, 3, 4, 100]]}).encode(), "outside the valid range"),
        (json.dumps({"sentences": ["a"]}).encode(), "no tokenizer"),
    ]
    for body, message in cases:
        status, answer = post(served, body)
        assert status == 400, (message, status, answer)
        assert message in json.loads(answer)["error"], (message, answer)
        status, _ = post(served, json.dumps(feeds).encode())
        assert status == 200
    status, answer = post(served, b"\x00garbage", "application/x-npz")
    assert status == 400 and "not a NumPy .npz" in json.loads(answer)["error"]


def test_a_replica_killed_under_load_loses_no_request(served):
    """160 requests from 4 client threads (each retried up to 3 times on a 5xx or a broken
    connection) while one replica is killed: every request ends, succeeded or with a clear
    error, within the bound."""
    feeds = json.dumps({k: v.tolist() for k, v in token_feeds(2, 16).items()}).encode()
    outcomes, lock = [], threading.Lock()

    def client(count):
        for _ in range(count):
            start, result = time.time(), None
            for attempt in range(4):
                try:
                    status, body = post(served, feeds, timeout=30)
                except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                    result = ("connection", str(e))
                    continue
                if status == 200:
                    result = ("ok", attempt)
                    break
                result = ("http", status, body[:200])
                if status < 500:
                    break
            with lock:
                outcomes.append((result, time.time() - start))

    threads = [threading.Thread(target=client, args=(40,)) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    replicas = [a for a in ray.util.list_named_actors(all_namespaces=True)
                if "SERVE_REPLICA" in a["name"]]
    assert len(replicas) == 2, replicas
    ray.kill(ray.get_actor(replicas[0]["name"], namespace=replicas[0]["namespace"]), no_restart=True)
    with lock:
        assert len(outcomes) < 100, "the load ended before the kill: nothing was tested"
    for t in threads:
        t.join(timeout=300)
        assert not t.is_alive(), "a client hung"
    assert len(outcomes) == 160
    failed = [o for o in outcomes if o[0][0] != "ok"]
    for (result, _) in failed:  # a failure must say what happened
        assert result[0] in ("http", "connection") and result[-1]
    assert len(failed) <= 16, failed
    # Serve restarts the replica; the deployment keeps serving.
    status, _ = post(served, feeds)
    assert status == 200


def test_sentences_and_ray_data(cluster, tmp_path):
    """A tokenizer deployment answers sentences as SentenceEncoder does; octet.data embeds a
    Parquet corpus with the same model."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "minilm"))
    import export_onnx
    import minilm
    model_dir = minilm.model_dir()
    onnx_path = str(tmp_path / "minilm.onnx")
    export_onnx.export(onnx_path, model_path=model_dir)
    so = octet.compile_to_so(onnx_path, tmp_path / "minilm.so", int8="dynamic", progress=False)
    url, port = cluster
    app = octet.serve.build_app(so, tokenizer=model_dir, replicas=1, threads=1, pin=False,
                                name="sentences")
    serve_api.run(app, name="sentences", route_prefix="/sentences")
    texts = ["A man is eating food.", "A man is eating a piece of bread.", "Stocks fell."]
    status, body = post(url + "/sentences", json.dumps({"sentences": texts}).encode())
    assert status == 200, body
    got = np.array(json.loads(body)["embeddings"], dtype=np.float32)
    want = octet.SentenceEncoder(octet.load(so), model_dir).encode(texts)
    assert np.array_equal(got, want)

    # Ray Data's actors need the CPUs the replicas hold.
    for app_name in list(serve_api.status().applications):
        serve_api.delete(app_name)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    rows = [f"sentence number {i} about {'cats' if i % 2 else 'markets'}" for i in range(200)]
    pq.write_table(pa.table({"id": list(range(200)), "text": rows}), corpus / "part-0.parquet")
    count = octet.data.embed_parquet(str(corpus), str(tmp_path / "out"), so, model_dir,
                                     concurrency=2, threads=1, rows_per_batch=64)
    assert count == 200
    table = ray.data.read_parquet(str(tmp_path / "out")).to_pandas()
    table = table.sort_values("id")
    embeddings = np.stack(table["embedding"].to_numpy())
    assert embeddings.shape == (200, 384)
    local = octet.SentenceEncoder(octet.load(so), model_dir).encode(rows)
    cos = np.sum(embeddings * local, axis=1)
    assert cos.min() > 0.9999
