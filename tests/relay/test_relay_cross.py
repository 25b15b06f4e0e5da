"""The cross-IR oracle (--ir relay,relax): each graph lowered to Relay and to Relax, run in
TVM 0.19 (the managed environment) and in apache-tvm 0.27 (this Python), compared with
the reference and with each other."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_hirfuzz
from relay_env import relay_interpreter
from test_relay_campaign import SIMPLE_OPS, spec_folder


def cross_campaign(*args):
    relay_interpreter()  # fails the test, naming the set-up command, without the environment
    return run_hirfuzz("--ir", "relay,relax", "--no-progress", "--jobs", 1, *args)


def planted_campaign(tmp_path, reference: str, relay_op: str, relax_op: str) -> tuple[Path, dict]:
    """A two-case cross-IR campaign of one planted op: its --out folder and summary."""
    out = tmp_path / "out"
    specs = spec_folder(tmp_path, planted(reference, relay_op, relax_op))
    proc = cross_campaign("--specs", specs, "--iterations", 2, "--ops", 3, "--out", out)
    assert proc.returncode == 0, proc.stderr
    return out, json.loads((out / "summary.json").read_text())


def planted(reference: str, relay_op: str, relax_op: str) -> str:
    """One op whose reference and whose spelling in each IR the test chooses."""
    return f"""
ops:
  - name: planted
    inputs: [a]
    dtypes: [int32]
    reference: {reference}
    dialects:
      relay: {{op: {relay_op}}}
      relax: {{op: {relax_op}}}
"""


def test_each_graph_runs_in_both_tvms_and_valid_programs_agree(tmp_path):
    out = tmp_path / "out"
    # no pass sequences: they find real TVM 0.19 bugs (LambdaLift before the VM), not the point here
    proc = cross_campaign("--only-ops", SIMPLE_OPS, "--dtypes", "float32,int32", "--iterations", 4, "--ops", 8,
                          "--no-pass-fuzz", "--out", out)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["dialect"] == "relay" and s["tvm"].startswith("0.19")
    cross = s["cross_ir"]
    assert cross["dialect"] == "relax" and cross["tvm"].startswith("0.27")
    assert sum(cross["outcomes"].values()) == s["cases"] == 4
    assert cross["outcomes"].get("ok", 0) + cross["outcomes"].get("ran", 0) == 4, cross
    assert s["findings"] == [] and s["spec_disagreements"] == [] and s["unconfirmed"] == []
    installation = json.loads((out / "campaign.json").read_text())["installation"]
    assert installation["tvm"].startswith("0.19") and installation["cross"]["tvm"].startswith("0.27")
    assert "cross-IR: the same cases in relax" in proc.stdout


def test_the_tvm_that_is_wrong_is_named_and_its_finding_replays_in_that_tvm(tmp_path):
    # Relax computes abs where the reference and Relay negate
    out, s = planted_campaign(tmp_path, "np.negative(a)", "negative", "abs")
    assert s["unconfirmed"] == [] and len(s["findings"]) == 1, s["findings"]
    row = s["findings"][0]
    assert row["oracle"] == "cross-ir" and "Relax on TVM 0.27" in row["message"] and row["ops"] == 1
    finding = json.loads((out / row["path"] / "finding.json").read_text())
    assert finding["confirmed"] and finding["extra"]["cross_ir"].startswith("Relay on TVM 0.19")
    assert "agrees with the reference" in finding["extra"]["cross_ir"]
    script = (out / row["path"] / "repro.py").read_text()
    assert "relax" in script and "fromtext" not in script  # a Relax script, for apache-tvm
    replayed = subprocess.run([sys.executable, "-m", "hirfuzz.replay", out], capture_output=True, text=True,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert replayed.returncode == 1 and "1 still reproduce" in replayed.stdout, replayed.stdout


@pytest.fixture(scope="module")
def wrong_relay(tmp_path_factory) -> tuple[Path, dict]:
    """One campaign where Relay takes the absolute value and Relax and the reference negate,
    read by the two tests after it (one cross-IR campaign is about a minute on 2 cores)."""
    return planted_campaign(tmp_path_factory.mktemp("wrong-relay"), "np.negative(a)", "abs", "negative")


# the two tests read one campaign: one xdist worker runs both (`--dist loadgroup`)
@pytest.mark.xdist_group("relay-cross-wrong-relay")
def test_a_wrong_first_ir_notes_that_the_other_tvm_is_right(wrong_relay):
    out, s = wrong_relay
    assert len(s["findings"]) == 1 and s["findings"][0]["oracle"] == "reference", s["findings"]
    finding = json.loads((out / s["findings"][0]["path"] / "finding.json").read_text())
    assert finding["confirmed"] and "tvm.relay.parse(TEXT" in (out / finding["path"] / "repro.py").read_text()
    assert finding["extra"]["cross_ir"].startswith("Relax on TVM 0.27") and "agrees" in finding["extra"]["cross_ir"]


@pytest.mark.xdist_group("relay-cross-wrong-relay")
def test_a_relay_finding_says_what_each_relax_release_makes_of_its_counterpart(wrong_relay):
    """A confirmed Relay finding's reduced program is also written in Relax and run under
    each Relax release at hand (here this Python's): Relax spells the op right, so the
    counterpart agrees; the script is kept beside repro.py and runs alone."""
    import tvm
    out, s = wrong_relay
    [row] = s["findings"]
    folder = out / row["path"]
    counterpart = json.loads((folder / "finding.json").read_text())["extra"]["counterpart"]
    # this Python's TVM, and any earlier Relax release set up on the machine
    assert counterpart["versions"][tvm.__version__] == "agrees with the reference", counterpart
    assert set(counterpart["versions"].values()) == {"agrees with the reference"} and counterpart["fails_on"] == []
    report = (folder / "bug-report.md").read_text()
    assert "Its Relax counterpart (relax-counterpart.py, the same program): agrees with the reference on " in report
    script = (folder / "relax-counterpart.py").read_text()
    assert f"TVM: {tvm.__version__}" in script and "Run: python relax-counterpart.py" in script
    alone = subprocess.run([sys.executable, folder / "relax-counterpart.py"], capture_output=True, text=True)
    assert alone.returncode == 0 and "HIRFUZZ-REPRO ok" in alone.stdout, alone.stdout + alone.stderr


@pytest.mark.slow  # a second cross-IR campaign; the quick test above guards the path
def test_a_counterpart_that_relax_gets_wrong_too_is_said(tmp_path):
    # Relay takes the absolute value, Relax squares, the reference negates: both wrong, unalike
    out, s = planted_campaign(tmp_path, "np.negative(a)", "abs", "square")
    relay = [row for row in s["findings"] if row["oracle"] == "reference"]
    assert len(relay) == 1, s["findings"]
    counterpart = json.loads((out / relay[0]["path"] / "finding.json").read_text())["extra"]["counterpart"]
    assert set(counterpart["versions"].values()) == {"differs from the reference"}, counterpart
    assert counterpart["fails_on"] == list(counterpart["versions"])


def test_both_tvms_wrong_alike_suspects_the_reference_not_tvm(tmp_path):
    # both IRs negate; the reference takes the absolute value
    out, s = planted_campaign(tmp_path, "np.abs(a)", "negative", "negative")
    assert s["findings"] == [] and s["unconfirmed"] == []
    assert [d["signature"] for d in s["spec_disagreements"]] == ["reference-suspect|planted:int32"]
    assert "agree with each other, not with the NumPy reference" in s["spec_disagreements"][0]["message"]
    assert s["cross_ir"]["outcomes"]["reference-suspect"] == 2


def test_what_a_cross_ir_campaign_cannot_do_is_said_at_once(tmp_path):
    for extra, words in ((["--mode", "disruptive"], "disruptive mode"), (["--tvm-python", sys.executable],
                                                                           "--tvm-python names one interpreter")):
        proc = run_hirfuzz("--ir", "relay,relax", *extra, "--iterations", 1, "--out", tmp_path / "o")
        assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    proc = run_hirfuzz("--ir", "relay,relay", "--iterations", 1, "--out", tmp_path / "o")
    assert proc.returncode == 2 and "two different ones" in proc.stderr
