"""Finishing findings is bounded and waits for fuzzing (campaign.reduction_budget): a
finding whose reduction runs out of its budget is filed all the same, with the smallest
program found by then, and says so; with --reduce-share a reduction does not take the only
worker from fuzzing; with --time, findings are finished first once what is left of it is
what they need. Real campaigns with a planted faulty pass (a pass-order wrong result at the
first case its sequence runs)."""
import json
import time

import pytest

from conftest import ROOT, run_hirfuzz
from hirfuzz.campaign.reduction_budget import (MIN_REDUCE_S, PRIOR_FINISH_S, FindingBudget, FinishingTime,
                                               ReductionShare)
from hirfuzz.campaign.reduction_steps import STEPS

PLANTED = ROOT / "tests" / "relax" / "planted" / "planted.yaml"
PLANTED_CAMPAIGN = ("--passes", PLANTED, "--pass-seq", "FoldConstant,PlantedChangeConstant,CanonicalizeBindings",
                    "--ops", 6, "--seed", 0, "--only-ops", "add,multiply,exp,abs", "--no-progress", "--jobs", 1,
                    # no version triage under the other Relax releases a machine may have set up
                    "--versions", "none")
BUDGETED = [step.name for step in STEPS if step.budgeted]


def run_planted(out, *flags) -> dict:
    proc = run_hirfuzz(*PLANTED_CAMPAIGN, "--out", out, *flags)
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "summary.json").read_text())


def test_a_finding_whose_reduction_runs_out_of_trials_is_filed_with_its_best_program_and_says_so(tmp_path):
    summary = run_planted(tmp_path / "out", "--iterations", 1, "--reduce-trials", 2)
    # filed and confirmed as without a budget: no finding lost
    assert [(f["kind"], f["oracle"]) for f in summary["findings"]] == [("wrong-result", "pass-order")], summary
    finding = json.loads((tmp_path / "out" / summary["findings"][0]["path"] / "finding.json").read_text())
    assert finding["confirmed"]
    reduction = finding["extra"]["reduction"]
    budget = reduction["budget"]
    assert budget["trials"] == 2 and budget["spent_trials"] == 2, budget
    assert budget["ran_out_in"] in BUDGETED and "smallest found by then" in budget["note"]
    # the steps that only shrink ran two trials between them; a program they made smaller
    # was run once more (confirm is never cut)
    steps = reduction["steps"]
    assert sum(steps[name]["calls"] for name in BUDGETED if name in steps) == 2, steps
    assert steps.get("confirm", {"calls": 1, "successes": 1}) == {**steps.get("confirm", {}), "calls": 1,
                                                                   "successes": 1}, steps


@pytest.mark.slow
def test_without_a_budget_the_same_finding_says_nothing_of_one(tmp_path):
    summary = run_planted(tmp_path / "out", "--iterations", 1, "--reduce-trials", "none")
    finding = json.loads((tmp_path / "out" / summary["findings"][0]["path"] / "finding.json").read_text())
    assert "budget" not in finding["extra"]["reduction"]
    steps = finding["extra"]["reduction"]["steps"]
    assert sum(steps[name]["calls"] for name in BUDGETED if name in steps) > 2, steps


def _findings_while_fuzzing(out) -> list[int]:
    return [json.loads(line)["findings"] for line in (out / "stats.jsonl").read_text().splitlines()]


def test_with_a_share_of_zero_the_only_worker_fuzzes_first_and_the_finding_is_finished_after(tmp_path):
    # the finding comes at the first case; with no share it waits in pending/ until the
    # last case is answered, then is finished as any other
    summary = run_planted(tmp_path / "out", "--iterations", 3, "--reduce-share", 0)
    assert _findings_while_fuzzing(tmp_path / "out") == [0, 0, 0]
    assert [(f["kind"], f["oracle"]) for f in summary["findings"]] == [("wrong-result", "pass-order")], summary
    assert summary["pending"] == []


def test_with_time_short_the_waiting_finding_is_finished_first_while_fuzzing_goes_on(tmp_path):
    # the same campaign under --time: the finding waits (share 0) until what is left of
    # --time is what it is taken to need (PRIOR_FINISH_S, none having been timed), then the
    # one worker finishes it while no case is handed out, then fuzzing goes on
    time_s = PRIOR_FINISH_S + 15
    summary = run_planted(tmp_path / "out", "--time", time_s, "--reduce-share", 0)
    # (the planted pass meets other programs in the later cases: more findings may come)
    assert ("wrong-result", "pass-order") in [(f["kind"], f["oracle"]) for f in summary["findings"]], summary
    assert summary["pending"] == []
    assert summary["time_finishing_first_s"] > 0, summary
    # before, a finding waiting under a share of 0 was finished only once fuzzing was over
    # (the test above): here it was filed while the campaign was still in its fuzz phase
    assert max(_findings_while_fuzzing(tmp_path / "out")) >= 1
    assert summary["phases"]["fuzz"]["seconds"] > summary["time_finishing_first_s"], summary["phases"]


def test_finishing_time_holds_cases_back_when_the_findings_waiting_need_what_is_left():
    left = 100.0
    crash, hang = ("crash", "pass-order"), ("hang", "crash")
    finishing = FinishingTime(ends_at=time.monotonic() + left, hang_s=360.0)
    assert not finishing.finish_first([], jobs=1)
    assert not finishing.finish_first([crash] * 3, jobs=1)             # 3 x 30 s < 100 s
    assert finishing.finish_first([crash] * 4, jobs=1)                 # 120 s
    assert not finishing.finish_first([crash] * 4, jobs=2)             # shared by two workers
    assert finishing.finish_first([hang], jobs=2)                      # a hang's scripts: 360 s
    finishing.finished("crash", "pass-order", 5.0)
    finishing.finished("hang", "crash", 400.0)                         # a hang's own estimate stands
    assert finishing.cost_s(*crash) == 5.0 and finishing.cost_s(*hang) == 360.0
    assert not finishing.finish_first([crash] * 19, jobs=1)            # now 5 s a finding
    assert not FinishingTime(ends_at=None, hang_s=360.0).finish_first([hang], jobs=1)  # no --time


def test_a_finding_is_taken_to_cost_what_the_last_of_its_oracles_findings_took():
    # bench28, Relay seed 21: pass crashes finished in seconds early on, gradient findings
    # took 20 to 40 s near the end, and the mean of all said too little
    finishing = FinishingTime(ends_at=time.monotonic() + 100.0, hang_s=360.0)
    for seconds in (2.0, 3.0, 2.0, 3.0, 2.0, 3.0):
        finishing.finished("crash", "pass-order", seconds)
    finishing.finished("wrong-result", "gradient", 30.0)
    assert finishing.cost_s("crash", "gradient") == 30.0               # its oracle's, whatever its kind
    assert finishing.cost_s("crash", "pass-order") == pytest.approx(13.0 / 5)   # its last five: 3, 2, 3, 2, 3
    assert finishing.cost_s("crash", "executor") == pytest.approx(40.0 / 5)     # none of its own: the last five, 2, 3, 2, 3, 30
    assert finishing.finish_first([("wrong-result", "gradient")] * 4, jobs=1)       # 120 s > 100 s
    assert not finishing.finish_first([("crash", "pass-order")] * 4, jobs=1)
    for seconds in (40.0,) * 5:                                          # the machine got slower
        finishing.finished("crash", "pass-order", seconds)
    assert finishing.cost_s("crash", "pass-order") == 40.0


def test_finishing_time_gives_a_reduction_its_part_of_what_is_left():
    finishing = FinishingTime(ends_at=time.monotonic() + 100.0, hang_s=360.0)
    assert 45 < finishing.reduce_s(None, waiting=2, jobs=1) <= 50      # an equal part, unbounded otherwise
    assert finishing.reduce_s(20.0, waiting=2, jobs=1) == 20.0         # --reduce-seconds is lower
    assert 95 < finishing.reduce_s(180.0, waiting=2, jobs=2) <= 100    # two workers
    assert finishing.reduce_s(None, waiting=1000, jobs=1) == MIN_REDUCE_S
    assert FinishingTime(ends_at=time.monotonic() - 5, hang_s=1).reduce_s(180.0, 1, 1) == MIN_REDUCE_S  # past --time
    assert FinishingTime(ends_at=None, hang_s=1).reduce_s(180.0, waiting=9, jobs=1) == 180.0


@pytest.mark.slow
def test_with_no_share_bound_the_finding_takes_the_worker_at_once(tmp_path):
    # the behaviour before fuzzing came first: the one worker finishes the finding (seen
    # when the second case is judged, the third being handed out first) before the last case
    run_planted(tmp_path / "out", "--iterations", 3, "--reduce-share", "none")
    assert _findings_while_fuzzing(tmp_path / "out")[-1] == 1


def test_the_share_lets_a_reduction_start_only_while_trials_stay_below_share_times_cases():
    share = ReductionShare(0.25)
    assert share.limit(jobs=1, cases=0, fuzzing=True, running=0) == 0   # nothing answered yet
    assert share.limit(jobs=1, cases=4, fuzzing=True, running=0) == 1   # 0 trials < 1
    share.trials = 1
    assert not share.may_start(4) and share.may_start(5)
    assert share.limit(jobs=1, cases=4, fuzzing=True, running=1) == 1   # one running goes on
    assert share.limit(jobs=4, cases=4, fuzzing=True, running=0) == 0   # none starts
    assert share.limit(jobs=4, cases=4, fuzzing=False, running=0) == 4  # fuzzing over: every worker
    assert ReductionShare(None).limit(jobs=4, cases=0, fuzzing=True, running=0) == 2  # half, as before


def test_a_finding_budget_counts_trials_and_names_the_step_it_ran_out_in():
    budget = FindingBudget(trials=2)
    assert budget.report() is None
    assert budget.allows("minimise_passes") and budget.allows("reduce_graph")
    assert not budget.allows("reduce_graph") and not budget.allows("shrink_plan")
    report = budget.report()
    assert (report["spent_trials"], report["ran_out_in"]) == (2, "reduce_graph")
    timed = FindingBudget(seconds=0.0)
    assert not timed.allows("reduce_graph") and timed.report()["spent_trials"] == 0
