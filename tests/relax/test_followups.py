"""Follow-up mutants (campaign.followups): which judged cases are followed up, what a
follow-up is made of (the original's graph, plan, inputs and reference; structure-building
rewrites; the original's baseline and pass sequence, then the mutant's), how they are paced,
and that the same seed makes the same follow-ups."""
import json
import threading

import numpy as np
import pytest

from conftest import ROOT, run_hirfuzz

from hirfuzz.campaign.cases import CaseMaker
from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.followups import (FOLLOWUP_INDEX, FOLLOWUP_REWRITES, MAX_FOLLOWUPS, MAX_SHARE, FollowUps,
                                        Reason, put_back_given, worker_request)
from hirfuzz.campaign.judge import Judge
from hirfuzz.campaign.oracles import ORACLE_FIELD, Oracle
from hirfuzz.campaign.outcome import Outcome, Status
from hirfuzz.campaign.reducer import Reduction
from hirfuzz.campaign.sandbox import Worker
from hirfuzz.campaign.supply import CaseSupply
from hirfuzz.campaign.tallies import Counters
from hirfuzz.core.finding import Finding
from hirfuzz.core.oracle import Approximation, TargetTolerance, judged_facts
from hirfuzz.core.passes import load_catalog, parse_sequence
from hirfuzz.dialects import dialect_info, load_dialect
from hirfuzz.dialects.relax.mutators import REGISTRY
from hirfuzz.protocol import GIVEN_CONFIGS, GIVEN_STATUS, decode_array, encode_array
from hirfuzz.worker import execute_case

PLANTED = ROOT / "tests" / "relax" / "planted" / "planted.yaml"


def make_maker(specs, seed=1, followups=2, **kw) -> CaseMaker:
    info = dialect_info("relax")
    return CaseMaker(Settings(ops=8, seed=seed, followups=followups, **kw), specs, info,
                     load_catalog([], builtin=info.catalog))


def case_with_passes(maker: CaseMaker):
    """The first case of the seed that draws a pass sequence."""
    for index in range(40):
        case = maker.make_case(index)
        if any(c.get(ORACLE_FIELD) == Oracle.PASS_ORDER.value for c in case.configs):
            return case
    raise AssertionError("no case of 40 drew a pass sequence")


def passing_answer(case) -> dict:
    """An answer in which every configuration built and gave the reference's results."""
    reply = {"status": "ok", "outputs": [encode_array(f.value) for f in case.expected]}
    return {**reply, "others": [dict(reply) for _ in case.configs[1:]]}


def crash_under(case, config) -> Finding:
    return Finding(kind="crash", oracle=config[ORACLE_FIELD], stage="passes", signature="pass-order|crash|x",
                   message="boom", case=case.index, extra={"config": config})


def test_a_finding_past_the_baseline_is_followed_up_through_what_the_original_passed(specs):
    maker = make_maker(specs)
    case = case_with_passes(maker)
    followups = FollowUps(maker)
    failing = next(c for c in case.configs if c.get(ORACLE_FIELD) == Oracle.PASS_ORDER.value)
    original = followups.interesting(case, passing_answer(case), Outcome(Status.OK, finding=crash_under(case, failing)))
    assert original.reason is Reason.FINDING
    assert original.passed == case.configs[:case.configs.index(failing)]
    mutant = followups.followup(original, 0)
    # the original failed its pass sequence: the mutant is built plainly, not after it
    assert [(c.get("module", 0), bool(c["passes"])) for c in mutant.configs] == [(0, False), (1, False)]


def test_a_case_that_passed_is_followed_up_through_its_baseline_and_pass_sequence(specs):
    maker = make_maker(specs)
    case = case_with_passes(maker)
    case.new_coverage = 3
    original = FollowUps(maker).interesting(case, passing_answer(case), Outcome(Status.OK))
    assert original.reason is Reason.NEW_COVERAGE
    mutant = FollowUps(maker).followup(original, 1)
    sequence = next(c for c in case.configs if c.get(ORACLE_FIELD) == Oracle.PASS_ORDER.value)
    assert mutant.configs[:2] == [case.configs[0], sequence]
    assert [(c.get("module", 0), c["passes"], c[ORACLE_FIELD]) for c in mutant.configs[2:]] == [
        (1, [], Oracle.MUTATION.value), (1, sequence["passes"], Oracle.MUTATION.value)]
    assert mutant.index == FOLLOWUP_INDEX + case.index * MAX_FOLLOWUPS + 1
    # the original's graph, plan, inputs and reference, as they are: nothing drawn anew
    assert mutant.graph is case.graph and mutant.expected is case.expected
    assert all(a is b for a, b in zip(mutant.inputs, case.inputs))
    assert mutant.request["inputs"] == case.request["inputs"] and mutant.lowering["plan"] == case.lowering["plan"]
    assert mutant.request["mutation"] == mutant.lowering["mutation"] == {
        "seed": [1, mutant.index, 4], "count": FOLLOWUP_REWRITES, "structural": True, "of_case": case.index}
    # made again (resumed, reduced), it draws its original's inputs and pass sequence
    again = maker.make_case(mutant.index, case.graph, lowering=mutant.lowering)
    assert all(np.array_equal(a, b) for a, b in zip(again.inputs, case.inputs))
    assert sequence in again.configs


def test_cases_whose_baseline_failed_or_that_show_nothing_are_not_followed_up(specs):
    maker = make_maker(specs)
    case = case_with_passes(maker)
    followups = FollowUps(maker)
    baseline_crash = Outcome(Status.ERROR, "build", finding=crash_under(case, case.configs[0]))
    assert followups.interesting(case, passing_answer(case), baseline_crash) is None
    died = Outcome(Status.SIGNAL, finding=crash_under(case, case.configs[0]))
    assert followups.interesting(case, {"status": "ok"}, died) is None
    case.new_coverage = 0
    assert followups.interesting(case, passing_answer(case), Outcome(Status.OK)) is None
    spec = Finding(kind="spec-disagreement", oracle="crash", stage="lower", signature="s", message="m", case=case.index)
    assert followups.interesting(case, passing_answer(case), Outcome(Status.OK, finding=spec)) is None
    assert not FollowUps(make_maker(specs, followups=0)).enabled


def test_a_result_off_by_most_of_its_tolerance_is_a_near_miss(specs):
    maker = make_maker(specs)
    case = next(c for c in map(maker.make_case, range(40))
                if c.comparable and any(not f.exact and f.stable and f.value.dtype.kind == "f" for f in c.expected))
    case.new_coverage = 0
    followups = FollowUps(maker)
    assert followups.interesting(case, passing_answer(case), Outcome(Status.OK)) is None
    config = case.configs[0]
    facts = judged_facts(case.expected, Approximation.of_passes(config["passes"]),
                         TargetTolerance.of(specs, config["target"]))
    off = []
    for fact in facts:
        value = fact.value
        if not fact.exact and fact.stable and value.dtype.kind == "f":
            limit = fact.atol * max(1.0, fact.magnitude) + fact.rtol * np.abs(value.astype(np.float64))
            value = (value.astype(np.float64) + 0.75 * limit).astype(value.dtype)
        off.append(encode_array(value))
    answer = passing_answer(case)
    answer["outputs"] = off
    assert followups.interesting(case, answer, Outcome(Status.OK)).reason is Reason.NEAR_MISS


def test_follow_ups_are_paced_best_first_and_the_same_seed_makes_the_same_ones(specs):
    def run(seed):
        maker = make_maker(specs, seed=seed, iterations=8)
        supply = CaseSupply(maker.s, maker, None, Counters(), started=0.0)
        handed = []
        while (case := supply.next_case()) is not None:
            handed.append(case)
            case.new_coverage = case.index % 3  # some interesting, some not
            supply.judged(case, passing_answer(case), Outcome(Status.OK))
        return supply, handed

    supply, handed = run(1)
    follow = [c for c in handed if c.index >= FOLLOWUP_INDEX]
    generated = [c for c in handed if c.index < FOLLOWUP_INDEX]
    assert [c.index for c in generated] == list(range(8))
    # every generated case with new coverage gave two follow-ups, each run (past --iterations, unpaced)
    assert sorted(c.index for c in follow) == sorted(FOLLOWUP_INDEX + c.index * MAX_FOLLOWUPS + j
                                                     for c in generated if c.index % 3 for j in range(2))
    # while new cases were still to come, follow-ups stayed within their share of the cases run
    last_generated = max(i for i, c in enumerate(handed) if c.index < FOLLOWUP_INDEX)
    assert sum(1 for c in handed[:last_generated] if c.index >= FOLLOWUP_INDEX) <= MAX_SHARE * last_generated
    # the more new coverage, the sooner
    first = next(c for c in handed if c.index >= FOLLOWUP_INDEX)
    assert first.lowering["mutation"]["of_case"] in (1, 2)
    assert supply.followups.figures()["made"] == {"finding": 0, "near_miss": 0, "new_coverage": len(follow)}
    again, handed_again = run(1)
    assert [(c.index, c.request) for c in handed] == [(c.index, c.request) for c in handed_again]


def test_a_follow_up_mutant_is_built_by_structure_building_rewrites_alone(specs):
    # seed 4: the mutant and its sequence build (since session 24's ops, seed 3's sequence
    # meets a batch_norm failure of TVM's)
    maker = make_maker(specs, seed=4)
    case = case_with_passes(maker)
    case.new_coverage = 1
    original = FollowUps(maker).interesting(case, passing_answer(case), Outcome(Status.OK))
    mutant = FollowUps(maker).followup(original, 0)
    reply = execute_case(mutant.request, load_dialect("relax"))
    assert reply["mutators"] and set(reply["mutators"]) <= REGISTRY.structural
    assert len(reply["others"]) == len(mutant.configs) - 1
    assert reply["status"] == "ok" and all(r["status"] in ("ok", "skipped") for r in reply["others"][:1])


def test_the_structural_draw_takes_nothing_else_where_others_apply(specs):
    maker = make_maker(specs, seed=3)
    case = maker.make_case(0)
    dialect = load_dialect("relax")
    mod = dialect.lower(case.request)

    def drawn(structural_only):
        return {name for seed in range(12)
                for name in dialect.mutate(mod, seed, 3, {}, structural_only=structural_only)[1]}

    assert drawn(False) - REGISTRY.structural, "no other mutator applies: the test shows nothing"
    assert drawn(True) and drawn(True) <= REGISTRY.structural


def planted_closure_settings(**kw) -> Settings:
    """Cases without closures through PlantedRaiseOnClosure (a planted pass that raises on a
    function defined inside another): the originals pass it; a follow-up whose rewrites
    outline a closure fails it, the mutant's finding (seed 1: follow-up 0 of case 0)."""
    catalog = load_catalog([str(PLANTED)], builtin=dialect_info("relax").catalog)
    return Settings(ops=6, seed=1, followups=2, features=False, pass_files=[str(PLANTED)],
                    pass_seq=parse_sequence("PlantedRaiseOnClosure", catalog),
                    only_ops=["add", "exp", "abs", "multiply", "subtract"], **kw)


def followups_of(maker: CaseMaker, case, answer, outcome) -> list:
    case.new_coverage = 1
    followups = FollowUps(maker)
    followups.consider(case, answer, outcome)
    return followups.unjudged()


def test_a_follow_up_builds_only_the_mutant_and_is_judged_as_if_it_had_run_its_original_s_configurations(specs):
    info = dialect_info("relax")
    settings = planted_closure_settings()
    maker = CaseMaker(settings, specs, info, load_catalog(settings.pass_files, builtin=info.catalog))
    dialect = load_dialect("relax")
    mutators = {}  # case -> its mutant's rewrites, as the campaign records them from its answer
    judge = Judge(specs, mutators)
    case = maker.make_case(0)
    answer = execute_case(case.request, dialect)
    outcome = judge.classify(case, answer)
    assert outcome.status is Status.OK and outcome.finding is None
    followup = followups_of(maker, case, answer, outcome)[0]
    assert followup.index == FOLLOWUP_INDEX and sorted(followup.given) == [0, 1]
    assert GIVEN_CONFIGS not in followup.request  # the campaign's request alone carries the marks

    given = execute_case(worker_request(followup), dialect)
    ran_all = execute_case(followup.request, dialect)
    given_replies, all_replies = [given, *given["others"]], [ran_all, *ran_all["others"]]
    # what the worker ran: none of the original's configurations; the mutant's, as without marks
    assert [r["status"] for r in given_replies[:2]] == [GIVEN_STATUS] * 2
    assert all(r["stages"] == {} and set(r["timings"]) <= {"lower"} for r in given_replies[:2])
    assert all("build" in r["stages"] for r in all_replies[:2])
    assert [r["status"] for r in given_replies[2:]] == [r["status"] for r in all_replies[2:]] == ["ok", "error"]
    assert given["mutators"] == ran_all["mutators"]

    put_back_given(followup, given)
    for restored, ran in zip(given_replies[:2], all_replies[:2]):
        assert restored["given"] and restored["status"] == ran["status"] == "ok"
        assert all(np.array_equal(decode_array(a), decode_array(b)) for a, b in zip(restored["outputs"], ran["outputs"]))
    mutators[followup.index] = given["mutators"]
    trusting, running = judge.classify(followup, given), judge.classify(followup, ran_all)
    assert trusting.finding is not None and trusting.finding.oracle == Oracle.MUTATION.value
    assert (trusting.status, trusting.stage, trusting.finding.to_json()) == (
        running.status, running.stage, running.finding.to_json())


def test_a_checkpoint_keeps_a_waiting_follow_up_s_configurations_and_not_its_given_replies(specs, tmp_path):
    settings = Settings(out=str(tmp_path / "out"), iterations=0, ops=8, seed=1, followups=2)
    first = Campaign(settings, specs, progress=False)
    case = case_with_passes(first.maker)
    failing = next(c for c in case.configs if c.get(ORACLE_FIELD) == Oracle.PASS_ORDER.value)
    first.supply.judged(case, passing_answer(case), Outcome(Status.OK, finding=crash_under(case, failing)))
    waiting = first.supply.unjudged()
    # the original failed its pass sequence: its follow-ups leave it out, given the baseline
    assert len(waiting) == 2 and all(sorted(m.given) == [0] and failing not in m.configs for m in waiting)
    first.checkpoint()

    resumed = Campaign(settings, specs, progress=False)
    assert [(c.index, c.configs, c.request) for c in resumed.supply.queue] == [
        (m.index, m.configs, m.request) for m in waiting]
    assert not any(c.given for c in resumed.supply.queue)  # resumed, it runs every configuration


class RecordingWorker:
    """A real worker whose requests and answers are kept."""

    def __init__(self, worker: Worker):
        self.worker, self.requests, self.answers = worker, [], []

    def run_one(self, request, timeout_s):
        self.requests.append(request)
        self.answers.append(self.worker.run_one(request, timeout_s))
        return self.answers[-1]


def test_a_follow_up_s_finding_is_reduced_by_trials_that_run_every_configuration(specs, tmp_path):
    campaign = Campaign(planted_closure_settings(out=str(tmp_path / "out"), iterations=0), specs, progress=False)
    host = campaign.reductions.host
    worker = RecordingWorker(Worker(tmp_path / "worker.log"))
    try:
        case = host.make_case(0)
        answer = worker.run_one(case.request, 120)
        followup = followups_of(campaign.maker, case, answer, host.classify(case, answer))[0]
        answer = put_back_given(followup, worker.run_one(worker_request(followup), 120))
        campaign.tallies.mutators_of[followup.index] = answer["mutators"]  # as the campaign records them
        finding = host.classify(followup, answer).finding
        assert finding is not None and finding.extra["config"]["module"] == 1 and finding.extra["mutators"]
        assert "PlantedRaiseOnClosure" in finding.message
        worker.requests.clear()
        worker.answers.clear()
        reduction = Reduction(host, worker, threading.Event(), campaign.reductions.pending)
        assert reduction.finding_of(followup).signature == finding.signature  # the follow-up itself, run again
        reduced = reduction.reduced(followup, finding)
    finally:
        worker.worker.close()
    assert worker.requests and not any(GIVEN_CONFIGS in request for request in worker.requests)
    # each trial built and ran its configurations of the original program too, the baseline first
    assert all(request["configs"][0].get("module", 0) == 0 for request in worker.requests)
    replies = [reply for answer in worker.answers for reply in [answer, *answer.get("others", [])]]
    assert all(reply["status"] != GIVEN_STATUS for reply in replies)
    assert all("build" in answer["stages"] for answer in worker.answers)
    assert len(reduced.graph.operators) < len(followup.graph.operators)


@pytest.mark.slow
def test_a_campaign_with_follow_up_mutants_finds_a_tvm_bug_its_originals_do_not_show(tmp_path):
    """TVM 0.27's DataflowUseInplaceCalls dies (SIGSEGV) on a tuple one function returns
    passed to another inside a dataflow block (`t = f(x); o = g(t)`): a shape only the
    outlining rewrites make. Every generated case passes the same sequence; a follow-up
    mutant of case 5 (seed 1) is killed by it, and its finding is the mutant's."""
    out = tmp_path / "campaign"
    proc = run_hirfuzz("--pass-seq", "LegalizeOps,DataflowUseInplaceCalls", "--no-direct", "--followup-mutants", 4,
                       "--ops", 10, "--iterations", 6, "--seed", 1, "--jobs", 1, "--out", out, "--no-progress",
                       timeout=1800)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in (out / "stats.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" for r in rows if r["case"] < FOLLOWUP_INDEX)
    assert any(r["status"] == "signal" for r in rows if r["case"] >= FOLLOWUP_INDEX)
    summary = json.loads((out / "summary.json").read_text())
    [row] = summary["findings"]
    folder = out / row["path"]
    finding = json.loads((folder / "finding.json").read_text())
    assert finding["case"] >= FOLLOWUP_INDEX and finding["confirmed"]
    config = finding["extra"]["config"]
    assert config["module"] == 1 and "DataflowUseInplaceCalls" in [step["name"] for step in config["passes"]]
    assert finding["extra"]["mutators"] and set(finding["extra"]["mutators"]) <= REGISTRY.structural
    for name in finding["extra"]["mutators"]:
        assert summary["mutator_figures"][name]["findings"] >= 1
    assert "the original program is handled correctly" in (folder / "bug-report.md").read_text()
    repro = (folder / "repro.py").read_text()
    assert repro.count("@R.function") >= 2, "repro.py should hold the rewritten program, with its outlined function"
