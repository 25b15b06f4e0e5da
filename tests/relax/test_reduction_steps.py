"""Finishing a finding is a list of named steps, each counting its worker trials, the trials
it took and its seconds: a real campaign with a planted faulty pass writes them into the
finding's finding.json, and summary.json sums them over the findings."""
import json

from conftest import ROOT, run_hirfuzz
from hirfuzz.campaign.reduction_steps import STEPS

PLANTED = ROOT / "tests" / "relax" / "planted" / "planted.yaml"


def test_a_planted_bug_s_reduction_steps_are_counted_in_finding_json_and_summed_in_summary_json(tmp_path):
    out = tmp_path / "out"
    # PlantedChangeConstant changes a constant: a pass-order wrong result, whose sequence is
    # minimised to that pass and whose graph is reduced
    proc = run_hirfuzz("--passes", PLANTED, "--pass-seq", "FoldConstant,PlantedChangeConstant,CanonicalizeBindings",
                       "--iterations", 2, "--ops", 6, "--out", out, "--seed", 0, "--only-ops", "add,multiply,exp,abs",
                       "--no-progress", "--jobs", 1, "--versions", "none")  # no version triage: not the point
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    rows = summary["findings"] + summary["unconfirmed"]
    assert [(f["kind"], f["oracle"]) for f in rows] == [("wrong-result", "pass-order")], rows
    steps = json.loads((out / rows[0]["path"] / "finding.json").read_text())["extra"]["reduction"]["steps"]
    # the steps that had something to try ran, in order; a wrong result with a lowering plan
    # goes through all but, perhaps, the lowering steps
    names = [step.name for step in STEPS]
    assert list(steps) == [n for n in names if n in steps]
    assert {"isolate_config", "drop_passes", "minimise_passes", "reduce_graph", "confirm"} <= set(steps), steps
    for stats in steps.values():
        assert set(stats) == {"calls", "successes", "seconds"} and 0 <= stats["successes"] <= stats["calls"]
    # the sequence lost FoldConstant and CanonicalizeBindings, the graph some operators, and
    # the reduced program failed alike once more
    assert rows[0]["message"].startswith("after PlantedChangeConstant():")
    assert steps["minimise_passes"]["successes"] >= 1 and steps["reduce_graph"]["successes"] >= 1
    assert steps["confirm"] == {**steps["confirm"], "calls": 1, "successes": 1}
    # without passes the program is right: that trial ran, and was not taken
    assert steps["drop_passes"]["calls"] == 1 and steps["drop_passes"]["successes"] == 0
    assert steps["reduce_graph"]["calls"] == json.loads((out / rows[0]["path"] / "finding.json").read_text()
                                                        )["extra"]["reduction"]["checks"]
    # summary.json: every step, the one finding's figures
    totals = summary["reduction_steps"]
    assert list(totals) == names
    for name in names:
        mine = steps.get(name, {"calls": 0, "successes": 0, "seconds": 0.0})
        assert totals[name] == mine, (name, totals[name], mine)
