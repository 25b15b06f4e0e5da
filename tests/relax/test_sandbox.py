"""Workers: a segfault, an abort or a hang in a worker is recorded and the next case runs."""
import numpy as np
import pytest

from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import generate_graph
from hirfuzz.core.inputs import choose_inputs
from hirfuzz.campaign.sandbox import Death, Worker
from hirfuzz.core.calls import call_records
from hirfuzz.protocol import decode_array, encode_array


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
