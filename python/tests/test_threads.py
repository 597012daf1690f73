"""One Model from many Python threads: bit-identical to serial runs, and the GIL is free
while a run is in flight."""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import octet
from conftest import token_feeds


@pytest.mark.parametrize("kind", ["fp32", "int8-aot"])
def test_threads_match_serial_runs(small_onnx, tmp_path, kind):
    if kind == "fp32":
        model = octet.compile(small_onnx, progress=False)
    else:
        path = octet.compile_to_so(small_onnx, tmp_path / "m.so", int8="static",
                                   calibration="generate:4x2x16", progress=False)
        model = octet.load(path)
    cases = [token_feeds(1 + i % 4, 3 + 7 * (i % 5), seed=i) for i in range(24)]
    serial = [model.run(f)["last_hidden_state"] for f in cases]
    start = threading.Barrier(8)

    def work(worker):
        start.wait()
        results = []
        for repeat in range(3):
            for i in range(worker, len(cases), 8):
                results.append((i, model.run(cases[i])["last_hidden_state"]))
        return results

    with ThreadPoolExecutor(8) as pool:
        for results in pool.map(work, range(8)):
            for i, got in results:
                assert np.array_equal(got, serial[i]), f"case {i} differs from its serial run"


def test_gil_is_released_during_a_run(small_onnx):
    """A Python thread keeps running while another thread is inside a long run: the
    longest pause between its iterations is far shorter than the run. Holding the GIL
    through the run would pause it for the whole run."""
    model = octet.compile(small_onnx, progress=False)
    batch = 64
    while True:  # a run of at least 100 ms, so scheduling noise stays well below it
        feeds = token_feeds(batch, 64)
        t0 = time.perf_counter()
        model.run(feeds)
        one_run = time.perf_counter() - t0
        if one_run >= 0.1 or batch >= 8192:
            break
        batch *= 2
    runs = 3
    done = threading.Event()

    def run():
        for _ in range(runs):
            model.run(feeds)
        done.set()

    worker = threading.Thread(target=run)
    longest, last = 0.0, time.perf_counter()
    worker.start()
    while not done.is_set():
        time.sleep(0.0005)
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    assert longest < 0.5 * one_run, (longest, one_run)
