"""A worker's death keyed by where it died (issue 33): the worker's breadcrumbs name the
configuration, the stage and the pass it was in, so that a segfault in one pass is not a
hit of a segfault found in another."""
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from hirfuzz.breadcrumbs import PREFIX, Place, Stage, last_place
from hirfuzz.campaign.cases import Case
from hirfuzz.campaign.judge import Judge
from hirfuzz.campaign.outcome import Status
from hirfuzz.campaign.sandbox import Death, Worker
from hirfuzz.campaign.titles import title
from hirfuzz.campaign.triage import classify_finding
from hirfuzz.core.calls import call_records
from hirfuzz.core.graph import Graph, Node, Ref, TensorType
from hirfuzz.dialects import dialect_info
from hirfuzz.protocol import encode_array, make_config
from conftest import run_hirfuzz
from test_sandbox import real_case

PLANTED = Path(__file__).parent / "planted"
USER_PASSES = Path(__file__).parents[1] / "user_passes"


def _step(name: str, factory: str) -> dict:
    return {"name": name, "args": {}, "import": f"planted_passes:{factory}", "search_dir": str(PLANTED)}


def _segfault(name: str) -> dict:
    """A step that kills the worker, under the name `name`."""
    return {"name": name, "args": {}, "import": "deaths:segfault", "search_dir": str(USER_PASSES)}


def _inplace_crash_config() -> dict:
    """A real TVM 0.27 segfault: DataflowUseInplaceCalls on a tuple passed between private
    functions in a dataflow block (the module swapped in by a planted pass before it)."""
    return make_config(passes=[_step("PlantedInplaceOnTupleModule", "inplace_on_tuple_module"),
                               {"name": "DataflowUseInplaceCalls", "args": {}}], opt_level=0)


def _returning_as_the_planted_module(specs) -> dict:
    """A real case whose main returns what the planted module's main returns, a (2, 3)
    float32 tensor: a pass that swapped in a module returning another type would be blamed
    for that first (dialects/relax/returns.py), and DataflowUseInplaceCalls never run."""
    graph = Graph()
    graph.add(Node(0, "var", [TensorType((2, 3), "float32")]))
    graph.add(Node(1, "op", [TensorType((2, 3), "float32")], op="abs", dtype="float32", inputs=[Ref(0)]))
    return {"case": 1, "graph": graph.to_json(), "calls": call_records(graph, specs), "run": True,
            "inputs": [encode_array(np.ones((2, 3), dtype="float32"))]}


def _case(index: int, configs: list[dict]) -> Case:
    return Case(index=index, graph=Graph(), inputs=[], runnable=True, expected=[], gen_ms=0.0, configs=configs)


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    w = Worker(tmp_path_factory.mktemp("w") / "worker.log")
    yield w
    w.close()


def test_a_real_tvm_segfault_is_keyed_by_the_pass_it_died_in(worker, specs):
    """The second configuration segfaults inside DataflowUseInplaceCalls (whatever TVM
    prints, or not, as it dies): the finding names the pass, and is that configuration's."""
    configs = [make_config(), _inplace_crash_config()]
    death = worker.run_one({**_returning_as_the_planted_module(specs), "configs": configs}, timeout_s=120)
    assert isinstance(death, Death) and death.signal == "SIGSEGV", death
    assert death.place == Place(Stage.PASSES, 1, "DataflowUseInplaceCalls"), death
    assert f'{PREFIX}{{"stage": "passes", "config": 1, "pass": "DataflowUseInplaceCalls"}}' in death.log_tail
    outcome = Judge(specs, {}).classify(_case(7, configs), death)
    finding = outcome.finding
    assert outcome.status is Status.SIGNAL
    assert finding.signature == "crash|worker|SIGSEGV|passes:DataflowUseInplaceCalls", finding.signature
    assert finding.extra["config"] == configs[1]
    assert finding.extra["died_in"] == {"stage": "passes", "config": 1, "pass": "DataflowUseInplaceCalls"}
    assert finding.message == "killed by SIGSEGV in pass DataflowUseInplaceCalls", finding.message
    assert classify_finding(finding)["evidence"].endswith(": the process died (SIGSEGV) in pass DataflowUseInplaceCalls")
    assert classify_finding(finding)["component"] == "pass"
    said = title(dataclasses.asdict(finding), Graph(), dialect_info("relax"))
    assert said == "[Bug][Relax] DataflowUseInplaceCalls crashes TVM (SIGSEGV)", said
    # the next case runs on a fresh worker, and its breadcrumbs are its own
    reply = worker.run_one(real_case(specs), timeout_s=120)
    assert reply["status"] == "ok", reply


def test_deaths_in_two_places_are_two_findings_and_in_one_place_one(worker, specs):
    """Planted segfaults in passes of two names, and a test-only crash before any stage:
    the same place keys one signature whichever configuration it was in, another place
    another, and no place keeps the signature a death had before places were known."""
    judge = Judge(specs, {})
    here = make_config(passes=[_segfault("PlantedSegfault")])
    there = make_config(passes=[{"name": "Normalize", "args": {}}, _segfault("PlantedSegfaultElsewhere")])
    signatures, configs_of = [], []
    for index, configs in enumerate([[make_config(), here], [here], [make_config(), make_config(), there]]):
        death = worker.run_one({**real_case(specs), "configs": configs}, timeout_s=120)
        finding = judge.classify(_case(index, configs), death).finding
        signatures.append(finding.signature)
        configs_of.append(finding.extra["config"])
    assert signatures == ["crash|worker|SIGSEGV|passes:PlantedSegfault"] * 2 + [
        "crash|worker|SIGSEGV|passes:PlantedSegfaultElsewhere"], signatures
    assert configs_of == [here, here, there]
    early = worker.run_one({**real_case(specs), "kind": "test-crash", "how": "segfault"}, timeout_s=60)
    assert early.place is None, early  # the earlier case's breadcrumbs are not its place
    assert judge.classify(_case(9, [make_config()]), early).finding.signature == "crash|worker|SIGSEGV"


def test_the_last_breadcrumb_is_found_behind_a_long_backtrace(tmp_path):
    """TVM may print a long native backtrace after the last breadcrumb; an earlier process's
    breadcrumbs, before where this one's output begins, are never its."""
    log = tmp_path / "worker.log"
    earlier = f'{PREFIX}{{"stage": "run", "config": 0}}\n'
    log.write_text(earlier + f'{PREFIX}{{}}\n{PREFIX}{{"stage": "build", "config": 2}}\n'
                   + "  frame in libtvm.so\n" * 200_000)
    assert last_place(log, len(earlier)) == Place(Stage.BUILD, 2)
    log.write_text(earlier + f"{PREFIX}{{}}\n" + "noise\n" * 1000)
    assert last_place(log, len(earlier)) is None
    assert last_place(log, 0) is None  # the empty breadcrumb a request starts with ends the search


def test_a_death_in_a_pass_has_its_sequence_minimised(tmp_path):
    """A worker killed inside one pass of a sequence: the finding's sequence is shrunk to
    what still dies there (an H100 campaign's ConvertLayout SIGFPE kept all six passes it
    was found with), and its reproducer, run alone, dies the same way."""
    out = tmp_path / "out"
    proc = run_hirfuzz("--passes", USER_PASSES / "deaths.yaml", "--pass-seq", "FoldConstant,PlantedSegfault,Normalize",
                       "--iterations", 1, "--ops", 3, "--only-ops", "add,exp", "--no-features", "--seed", 0, "--jobs", 1,
                       "--no-progress", "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unconfirmed"] == [], summary["unconfirmed"]
    [row] = summary["findings"]
    finding = json.loads((out / row["path"] / "finding.json").read_text())
    assert finding["signature"] == "crash|worker|SIGSEGV|passes:PlantedSegfault", finding["signature"]
    assert finding["extra"]["pass_names"] == ["PlantedSegfault"], finding["extra"]
    assert finding["message"] == "after PlantedSegfault(): killed by SIGSEGV in pass PlantedSegfault"
    assert finding["extra"]["reduction"]["steps"]["minimise_passes"]["successes"] >= 1
    assert "tvm.transform.Sequential([segfault()])(mod)" in (out / row["path"] / "repro.py").read_text()
