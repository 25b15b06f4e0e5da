"""Relay workers reuse a build for a structurally equal module (worker.BuildCache) and
report what a fresh build gives: a campaign whose pass sequence changes nothing, with and
without reuse (HIRFUZZ_BUILD_CACHE=0)."""
import json
import os

from conftest import run_hirfuzz
from relay_env import relay_interpreter
from test_relay_campaign import SIMPLE_OPS


def campaign(out, env):
    args = ["--only-ops", SIMPLE_OPS, "--dtypes", "float32,int32", "--iterations", 6, "--ops", 6, "--seed", 4,
            "--pass-seq", "InferType", "--out", out, "--jobs", 1, "--no-progress", "--ir", "relay"]
    if os.environ.get("HIRFUZZ_RELAY_PYTHON"):
        python, extra = relay_interpreter()
        return run_hirfuzz(*args, "--tvm-python", python, env={**extra, **env})
    return run_hirfuzz(*args, "--tvm-python", "relay", env=env)


def test_a_pass_sequence_that_changes_nothing_saves_builds_and_changes_no_result(tmp_path):
    runs = {}
    for name, env in (("on", {}), ("off", {"HIRFUZZ_BUILD_CACHE": "0"})):
        proc = campaign(tmp_path / name, env)
        assert proc.returncode == 0, proc.stderr
        runs[name] = (json.loads((tmp_path / name / "summary.json").read_text()),
                      [json.loads(line) for line in (tmp_path / name / "stats.jsonl").read_text().splitlines()])
    (on, on_stats), (off, off_stats) = runs["on"], runs["off"]
    assert on["dialect"] == "relay" and on["builds_saved"] > 0 and off["builds_saved"] == 0
    assert [r["status"] for r in on_stats] == [r["status"] for r in off_stats]
    assert [f["signature"] for f in on["findings"]] == [f["signature"] for f in off["findings"]]
    assert on["compared"] == off["compared"] > 0
    saved = [r for r in on_stats if r["builds_saved"]]
    assert all(any(c.get("reused") == "case" for c in r["config_timings"]) for r in saved)
    for record in on_stats:  # Relay's load: the graph module or executor function, timed apart
        assert {"lower", "passes", "build", "load", "run", "worker", "transfer"} <= record["timings"].keys()
