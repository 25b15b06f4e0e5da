"""A failed pass hides nothing after it (issue 27, no bug masking another): the worker runs a
failing sequence again without each pass that failed, check-only, and says what else failed
(worker.failures_past); where the first failure is a finding the campaign holds, the judge
files the first one it does not hold, under the sequence that shows it alone."""
from pathlib import Path

from hirfuzz.breadcrumbs import Place, Stage
from hirfuzz.campaign.cases import Case
from hirfuzz.campaign.judge import Judge
from hirfuzz.campaign.sandbox import Death
from hirfuzz.core.graph import Graph
from hirfuzz.dialects import load_dialect
from hirfuzz.protocol import CHECK_ONLY, PAST_FAILURES, make_config, without_passes
from hirfuzz.worker import execute_case
from test_death_place import worker  # noqa: F401 - the fixture: a worker whose log keeps breadcrumbs
from test_sandbox import real_case

PLANTED = Path(__file__).parent / "planted"
USER_PASSES = Path(__file__).parents[1] / "user_passes"


def raising(message: str) -> dict:
    return {"name": f"Raise{message}", "args": {"message": f"planted failure {message}"},
            "import": "planted_passes:always_raise", "search_dir": str(PLANTED)}


NORMALIZE = {"name": "Normalize", "args": {}}
SEQUENCE = [raising("A"), NORMALIZE, raising("B"), raising("C"), NORMALIZE]


def _case(real: dict, configs: list[dict]) -> Case:
    return Case(index=3, graph=Graph.from_json(real["graph"]), inputs=[], runnable=False, expected=[], gen_ms=0.0,
                configs=configs)


def test_the_worker_goes_on_past_each_failed_pass_and_the_judge_files_the_first_failure_not_known(specs):
    real = real_case(specs)
    configs = [make_config(), {**make_config(passes=SEQUENCE), CHECK_ONLY: True}]
    reply = execute_case({**real, "configs": configs}, load_dialect("relax"))
    failed = reply["others"][0]
    assert (failed["stage"], failed["failed_pass"]) == ("passes", "RaiseA")
    past = failed[PAST_FAILURES]
    assert [(p["failed_pass"], p["dropped"]) for p in past] == [("RaiseB", [0]), ("RaiseC", [0, 2])]
    # each its own traceback: not one chained to the failure it was met past, whose TVM frames
    # would key it (a campaign keyed known crashes anew at the well-formedness check they followed)
    assert all("planted failure A" not in p["traceback"] and "During handling" not in p["traceback"] for p in past)
    judge, case = Judge(specs, {}), _case(real, configs)
    first = judge.classify(case, reply).finding
    assert "planted failure A" in first.message  # nothing known: the first failure, as always
    outcome = judge.classify(case, reply, known={first.signature}.__contains__)
    assert "planted failure B" in outcome.finding.message and outcome.past_known
    # judged, reduced and reproduced under the sequence that shows it first
    assert outcome.finding.extra["config"]["passes"] == [NORMALIZE, raising("B"), raising("C"), NORMALIZE]
    assert outcome.finding.extra["config"] == without_passes(configs[1], [0])
    both = {first.signature, outcome.finding.signature}
    third = judge.classify(case, reply, known=both.__contains__)
    assert "planted failure C" in third.finding.message and third.past_known
    assert third.finding.extra["config"] == without_passes(configs[1], [0, 2])


def test_a_death_past_a_failed_pass_is_pinned_to_the_sequence_without_it(worker, specs):
    segfault = {"name": "PlantedDeath", "args": {}, "import": "deaths:segfault", "search_dir": str(USER_PASSES)}
    real = real_case(specs)
    configs = [make_config(), make_config(passes=[raising("A"), segfault])]
    death = worker.run_one({**real, "configs": configs}, timeout_s=120)
    assert isinstance(death, Death) and death.place == Place(Stage.PASSES, 1, "PlantedDeath", (0,)), death
    finding = Judge(specs, {}).classify(_case(real, configs), death).finding
    assert finding.extra["config"] == without_passes(configs[1], [0])  # what its reduction runs: it dies there
    assert finding.extra["died_in"]["dropped"] == [0]
