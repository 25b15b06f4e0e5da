"""Campaigns on a real Ray cluster (--ray): two nodes on this machine (ray.cluster_utils.Cluster).

Marked `ray`: run with `-m ray` inside a network namespace that has only loopback, where
Ray binds to 127.0.0.1 (README's test command does so):

    unshare -n sh -c 'ip link set lo up && python -m pytest -q -m ray'
"""
import json
import signal
import sys
import threading
import time

import pytest

from conftest import BOOL_ADD, ROOT, run_hirfuzz
from test_campaign_engine import PLAIN, _wait_for_line, small_specs, start_hirfuzz, summary_of

pytestmark = pytest.mark.ray
ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
from campaign_fingerprint import case_prints, run_recording  # noqa: E402

from hirfuzz.campaign.coordinator import Campaign, Settings  # noqa: E402
from hirfuzz.core.passes import load_catalog, parse_sequence  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402

PLANTED = ROOT / "tests" / "relax" / "planted" / "planted.yaml"
SEQUENCE = "FoldConstant,PlantedChangeConstant,CanonicalizeBindings"
CASES = 10


def planted_settings(out, **extra) -> Settings:
    """A short campaign whose findings are fixed by its seed: a faulty pass changes constants."""
    catalog = load_catalog([str(PLANTED)])
    return Settings(mode="strict", seed=4, iterations=CASES, ops=6, out=str(out), jobs=2, timeout_s=60,
                    pass_files=[str(PLANTED)], pass_seq=parse_sequence(SEQUENCE, catalog), mutations=0,
                    only_ops=["add", "exp", "abs", "multiply", "subtract"], **extra)


def run_campaign(settings: Settings):
    """(summary, the judged cases' fingerprints, how often each case was judged)."""
    summary, seen = run_recording(Campaign(settings, load_specs(), progress=False))
    judged = {}
    for case in seen:
        judged[case.index] = judged.get(case.index, 0) + 1
    return summary, case_prints(seen), judged


def findings_of(summary: dict) -> dict:
    """Each saved finding's signature, with its hits and kind: what must not change."""
    return {f["signature"]: (f["kind"], f["hits"]) for f in summary["findings"] + summary["unconfirmed"]}


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The same campaign on the local pool with --jobs 2: what the cluster must match."""
    summary, prints, judged = run_campaign(planted_settings(tmp_path_factory.mktemp("local") / "out"))
    assert findings_of(summary), "the planted pass gave no finding: the comparison would be empty"
    return summary, prints, judged


@pytest.fixture
def cluster():
    """A head and a second node, each with its own raylet, every address on loopback."""
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    second = c.add_node(num_cpus=1)
    c.wait_for_nodes()
    yield c, second
    ray.shutdown()
    c.shutdown()


def test_a_two_node_campaign_gives_the_local_pools_graphs_and_findings(tmp_path, local_run, cluster):
    c, _ = cluster
    assert c.address.startswith("127.0.0.1:"), c.address
    summary, prints, judged = run_campaign(planted_settings(tmp_path / "out", ray=c.address))
    local_summary, local_prints, _ = local_run
    assert prints == local_prints  # same seed: the same graphs, lowerings and configurations
    assert findings_of(summary) == findings_of(local_summary)
    assert summary["cases"] == CASES and set(judged.values()) == {1}
    # both nodes ran cases, and every case is counted on one
    assert summary["nodes"]["used"] == 2, summary["nodes"]
    assert sum(summary["nodes"]["cases"].values()) == CASES
    assert summary["jobs"] == 2


def test_a_node_removed_mid_campaign_loses_no_case_and_no_finding(tmp_path, local_run, cluster):
    c, second = cluster
    campaign = Campaign(planted_settings(tmp_path / "out", ray=c.address), load_specs(), progress=False)
    result = {}
    thread = threading.Thread(target=lambda: result.update(zip(("summary", "seen"), run_recording(campaign))))
    thread.start()
    node = second.node_id[:8]
    deadline = time.monotonic() + 120
    # remove the second node while it has a case in flight
    while not any(s.busy and s.node.endswith(node) for s in getattr(campaign.pool, "workers", [])):
        assert thread.is_alive() and time.monotonic() < deadline, "the second node never got a case"
        time.sleep(0.05)
    c.remove_node(second)
    thread.join(300)
    assert not thread.is_alive(), "the campaign did not finish after losing a node"
    summary = result["summary"]
    indices = [case.index for case in result["seen"]]
    assert sorted(indices) == list(range(CASES))  # every case judged, once
    lines = (tmp_path / "out" / "stats.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["case"] for line in lines) == list(range(CASES))
    assert findings_of(summary) == findings_of(local_run[0])  # none lost, none doubled
    assert summary["pending"] == []
    assert summary["nodes"]["rerun"] >= 1  # the case in flight there ran again, on the head
    assert sum(summary["nodes"]["cases"].values()) == CASES


def test_a_killed_coordinator_leaves_nothing_on_the_cluster_and_resumes(tmp_path, cluster):
    """SIGKILL: the actors (and their sandboxed workers) go with the coordinator's Ray job,
    and the same command resumes from --out on the same cluster; a worker that aborts on a
    node is a finding there as on one machine, its actor unharmed."""
    c, _ = cluster
    out = tmp_path / "out"
    args = ["--specs", small_specs(tmp_path, BOOL_ADD), "--iterations", 16, "--ops", 4, "--out", out,
            "--ray", c.address, "--no-progress", "--no-verify", "--no-reduce", "--seed", 9, *PLAIN]
    crash = {"HIRFUZZ_TEST_CRASH": "2:abort"}
    proc = start_hirfuzz(args, crash)
    _wait_for_line(proc, "-> ", timeout_s=180)  # a finding is saved...
    proc.send_signal(signal.SIGKILL)             # ...and the coordinator dies
    proc.wait()
    ray.init(address=c.address)
    total = ray.cluster_resources()["CPU"]
    deadline = time.monotonic() + 60
    while ray.available_resources().get("CPU", 0) < total:  # its actors are released
        assert time.monotonic() < deadline, "the killed coordinator's actors still hold the cluster"
        time.sleep(0.5)
    resumed = run_hirfuzz(*args, env=crash, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    s = summary_of(out)
    assert s["resumed"] is True and s["cases"] >= 16
    sigs = sorted(f["signature"] for f in s["findings"])
    assert "crash|worker|SIGABRT" in sigs and len(sigs) == len(set(sigs))
    cases = [json.loads(line)["case"] for line in (out / "stats.jsonl").read_text().splitlines()]
    assert set(cases) == set(range(16))


def test_an_unreachable_cluster_is_one_clear_error_at_once(tmp_path):
    t0 = time.monotonic()
    proc = run_hirfuzz("--ray", "127.0.0.1:1", "--iterations", 1, "--out", tmp_path / "o", timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "--ray 127.0.0.1:1: cannot reach a Ray cluster there" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - t0 < 60


def test_a_worker_past_its_bound_on_a_node_is_out_of_memory_and_the_bound_is_named(tmp_path, cluster):
    """The actors host the same sandbox.Worker: its bound on resident memory holds on a node
    (the hog of case 2 is killed there, counted out of memory, no finding) and the workers'
    hello names it in summary.json."""
    c, _ = cluster
    out = tmp_path / "out"
    proc = run_hirfuzz("--specs", small_specs(tmp_path), "--iterations", 6, "--ops", 4, "--out", out,
                       "--ray", c.address, "--max-memory", 512, "--no-progress", "--no-verify", "--no-reduce",
                       "--seed", 9, *PLAIN, env={"HIRFUZZ_TEST_CRASH": "2:oom"}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    s = summary_of(out)
    assert s["memory_bound"] == {"kind": "resident", "limit_mb": 512, "enforced_by": "coordinator"}
    assert s["out_of_memory"] == {"cases": 1, "limit_mb": 512}
    assert not [f for f in s["findings"] + s["unconfirmed"] if "|worker|" in f["signature"]], s["findings"]
    assert "case 2 ran out of the --max-memory limit (512 MB of resident memory per worker)" in proc.stdout
