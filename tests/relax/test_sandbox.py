"""Workers: a segfault, an abort or a hang in a worker is recorded and the next case runs; a
worker past its --max-memory bound is killed by the pool's own loop."""
import time
from pathlib import Path

import numpy as np
import pytest

from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import generate_graph
from hirfuzz.core.inputs import choose_inputs
from hirfuzz.campaign.sandbox import MEMORY_POLL_S, Death, Pool, Worker
from hirfuzz.core.calls import call_records
from hirfuzz.core.targets import resolve_target
from hirfuzz.protocol import decode_array, encode_array, make_config
from overflow_cases import graph_of


def real_case(specs, seed=0):
    g = generate_graph(specs, np.random.default_rng(seed), 4, Coverage(), ops=["abs", "add", "concat"])
    ci = choose_inputs(g, specs, np.random.default_rng(seed))
    return {"case": 1, "graph": g.to_json(), "calls": call_records(g, specs), "run": ci.runnable,
            "inputs": [encode_array(ci.values[n.id]) for n in g.variables]}


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    w = Worker(tmp_path_factory.mktemp("w") / "worker.log", max_memory_mb=8192)
    yield w
    w.close()


@pytest.mark.parametrize("how,reason,signal", [
    ("segfault", "signal", "SIGSEGV"),
    ("abort", "signal", "SIGABRT"),
    ("hang", "timeout", None),
])
def test_worker_death_is_reported_and_worker_restarts(worker, specs, how, reason, signal):
    death = worker.run_one({"kind": "test-crash", "how": how}, timeout_s=5)
    assert isinstance(death, Death)
    assert death.reason == reason and death.signal == signal
    restarts = worker.restarts
    reply = worker.run_one(real_case(specs), timeout_s=120)
    assert isinstance(reply, dict) and reply["status"] == "ok", reply
    assert worker.restarts == restarts


def test_worker_is_recycled_after_its_quota(specs, tmp_path):
    w = Worker(tmp_path / "w.log", recycle_after=2)
    try:
        pids = []
        for _ in range(5):
            reply = w.run_one(real_case(specs), timeout_s=120)
            assert reply["status"] == "ok"
            pids.append(w.proc.pid)
        assert len(set(pids)) == 3 and w.recycles == 2 and w.restarts == 0
    finally:
        w.close()


def test_rank0_arrays_survive_the_pipe():
    a = np.asarray(2.5, dtype="float16")
    b = decode_array(encode_array(a))
    assert b.shape == () and b.dtype == np.float16 and b == a


def test_the_pools_wait_reads_a_bounded_workers_memory_while_it_works(tmp_path):
    """Pool.wait, asked to wait up to 30 s, wakes every MEMORY_POLL_S to read the bounded
    worker's memory: the hog (64 MB blocks, about 1 GB/s here) is killed soon past the bound,
    long before it stops growing at four times the bound."""
    pool = Pool(1, tmp_path, max_memory_mb=512, recycle_after=None)
    try:
        pool.start()
        start_mb = pool.workers[0].hello["rss_peak_kb"] // 1024
        t0 = time.monotonic()
        pool.workers[0].submit("the hog", {"kind": "test-crash", "how": "oom"}, timeout_s=60)
        done = []
        while not done and time.monotonic() - t0 < 60:
            done = pool.wait(max_wait_s=30)
            # each wait returns within a read or two of the bound being passed
            assert done or time.monotonic() - t0 < 10 * MEMORY_POLL_S + (512 - start_mb) / 100
        elapsed = time.monotonic() - t0
    finally:
        pool.close()
    [(_, case, death)] = done
    assert case == "the hog" and isinstance(death, Death) and death.reason == "memory", death
    assert 512 < death.resident_mb < 512 + 512 and elapsed < 20, (death, elapsed)


@pytest.mark.gpu
def test_a_worker_under_the_default_bound_sees_the_gpu_and_runs_a_case_on_it(tmp_path, specs):
    """The default --max-memory (8192 MB) bounds resident memory, not the address space CUDA
    reserves as it starts: the worker sees the GPU, and builds and runs one abs on it (on
    the target a campaign would give it: cuda with the architecture its hello names)."""
    w = Worker(Path(tmp_path) / "worker.log", max_memory_mb=8192)
    try:
        w.start()
        assert w.hello["memory_bound"] == {"kind": "resident", "limit_mb": 8192, "enforced_by": "coordinator"}
        assert w.hello["devices"]["cuda"] is True, w.hello
        g, [x] = graph_of("abs", "float32", [[[-1.5, 2.0, -0.0], [3.25, -4.0, 5.5]]], None, {})
        request = {"case": 1, "graph": g.to_json(), "calls": call_records(g, specs), "run": True,
                   "inputs": [encode_array(x)], "configs": [make_config(target=resolve_target("cuda", w.hello))]}
        reply = w.run_one(request, timeout_s=300)
    finally:
        w.close()
    assert isinstance(reply, dict) and reply["status"] == "ok", reply
    [out] = [decode_array(a) for a in reply["outputs"]]
    np.testing.assert_array_equal(out, np.abs(x))
