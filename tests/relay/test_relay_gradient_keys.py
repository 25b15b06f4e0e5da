"""A crash of one operator's gradient program, wherever it shows (the autodiff, the build,
the run), is keyed as that operator's gradient rule's (oracles/gradient.py operator_key):
TVM 0.19's conv2d_grad types a grouped conv2d's transpose with the wrong channel count,
which failed the first-order autodiff's type inference in one finding and the
higher-order program's run-time shape check in another (bench28 relay seed 19 0024 and
0018: one root cause to its reader, two findings)."""
import json
from pathlib import Path
from types import SimpleNamespace

from hirfuzz.campaign.reducer import operator_key_on
from hirfuzz.core.finding import Finding
from hirfuzz.core.graph import Graph

SAVED = json.loads((Path(__file__).parent / "data" / "grouped_conv2d_gradient.json").read_text())


def second_key(saved: dict) -> str | None:
    case = saved["case"]
    reduced = SimpleNamespace(graph=Graph.from_json(case["graph"]), lowering=case["lowering"],
                              configs=case["configs"], disruption=case["disruption"])
    return operator_key_on("findings", Finding(**saved["finding"]), reduced)


def test_a_grouped_conv2d_s_gradient_failing_in_the_autodiff_and_at_run_time_shares_a_key():
    run, autodiff = SAVED["run"], SAVED["autodiff"]
    assert run["finding"]["stage"] == "run" and run["finding"]["extra"]["config"]["autodiff"] == "higher_order"
    assert autodiff["finding"]["stage"] == "passes" and autodiff["finding"]["extra"]["failed_pass"] == "Gradient"
    assert second_key(run) == second_key(autodiff) == "root|pass-operator|Gradient|nn.conv2d"


def test_a_gradient_crash_of_more_than_one_operator_gets_no_such_key():
    run = json.loads(json.dumps(SAVED["run"]))
    graph = run["case"]["graph"]
    conv = next(n for n in graph["nodes"] if n["kind"] == "op")
    graph["nodes"].append({**conv, "id": max(n["id"] for n in graph["nodes"]) + 1})
    assert second_key(run) is None
