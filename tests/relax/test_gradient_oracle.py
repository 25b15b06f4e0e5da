"""The gradient oracle (`--gradients SHARE`, issue 27): a campaign's gradient cases, their
configuration run by a real worker (Relax's Gradient on apache-tvm 0.27, built on llvm),
judged against finite differences of the NumPy reference, and a finding's repro.py run
alone as the campaign's verify step runs it."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import put_pending, run_hirfuzz

from hirfuzz.campaign.avoidance import AvoidanceSchedule, construct_of
from hirfuzz.campaign.cases import avoided_in
from hirfuzz.campaign.judge import Judge, Status
from hirfuzz.campaign.oracles import ORACLES, Oracle
from hirfuzz.campaign.reproducers import REPRO, FindingScripts
from hirfuzz.campaign.verify import check_finding_scripts
from hirfuzz.core.generate import AvoidedOp
from hirfuzz.core.gradients import float_variables
from hirfuzz.core.graph import Graph
from hirfuzz.dialects import dialect_info, load_dialect
from hirfuzz.dialects.relax.gradients import GRADIENT_OPS
from hirfuzz.protocol import GRADIENT, encode_array
from hirfuzz.worker import execute_case
from graph_json import graph_of, op, var
from test_pass_checks import maker


def gradient_case(graph: Graph):
    """Case 0 of a campaign, made again from `graph` under the gradient configuration alone
    (as a reduction isolates it)."""
    made = maker(seed=0, mutations=0, gradients=0.1)
    return made, made.make_case(0, graph=graph, lowering={}, configs=[ORACLES[Oracle.GRADIENT].config(made)])


def judged(graph: Graph, specs):
    made, case = gradient_case(graph)
    reply = execute_case(case.request, load_dialect("relax"))
    return made, case, Judge(specs, {}).classify(case, reply)


def reproduced(made, case, outcome, specs, folder) -> bool:
    """The finding's files written as the campaign writes them, and its scripts run alone."""
    scripts = FindingScripts(dialect_info("relax"), specs, made.s, lambda: "0.27.0",
                             module_script=lambda case, config: pytest.fail("a gradient finding prints no module"))
    for name, text in scripts.files(case, outcome.finding, "").items():
        (folder / name).write_text(text)
    return check_finding_scripts(folder, outcome.finding, 120, dialect="relax").reproduced


CUMSUM_EXCLUSIVE = graph_of(var(0, [3]), op(1, "cumsum", [[0, 0]], [3], {"axis": 0, "exclusive": True}))
TRIU = graph_of(var(0, [3, 3]), op(1, "triu", [[0, 0]], [3, 3], {"k": 0}))


def test_the_gradient_ops_are_those_tvm_registers_a_gradient_for(specs):
    import tvm
    registered = {name.removeprefix("relax.") for name in tvm.ir.Op.list_op_names()
                  if name.startswith("relax.") and tvm.ir.Op.get(name).get_attr("FPrimalGradient") is not None}
    assert GRADIENT_OPS == {specs.ops[n].dialect_op for n in specs.names()} & registered


def test_a_wrong_gradient_is_a_finding_and_its_repro_reproduces_alone(specs, tmp_path):
    """sum(cumsum(x, exclusive=True)): TVM's gradient is the inclusive cumsum's (a known TVM
    bug, tools/gradient_bugs.py)."""
    made, case, outcome = judged(CUMSUM_EXCLUSIVE, specs)
    assert outcome.status is Status.MISMATCH
    finding = outcome.finding
    assert (finding.oracle, finding.signature) == ("gradient", "wrong-result|gradient|values|cumsum")
    assert "x0's gradient differs from finite differences" in finding.message
    assert reproduced(made, case, outcome, specs, tmp_path)
    assert "relax.transform.Gradient" in (tmp_path / REPRO).read_text()


# bench27 relax seed 18 unconfirmed/0001: sum(sin(x0)) + sum(max_pool2d(x2)), the pool's window
# reaching past x2 into padding on both sides, on the inputs the campaign drew. TVM's
# max_pool2d gradient (topi pool_grad) reads its out_grad and argmax buffers past their end:
# in this program those bytes are in a storage that broadcast_to and cos write later, so x2's
# gradient at its maximum is right on a fresh process's first run (1), then 4, then
# 0.40088549... (1 + 2 cos(x0[0, 1]) + cos(x0[0, 2])) on every later run
SIN_AND_MAX_POOL = graph_of(
    var(0, [2, 4]), op(1, "sin", [[0, 0]], [2, 4]), var(2, [1, 1, 2, 1]),
    op(3, "nn.max_pool2d", [[2, 0]], [1, 1, 1, 1], {"ceil_mode": False, "kh": 2, "kw": 3, "sh": 1, "sw": 1,
                                                    "pt": 0, "pl": 1, "pb": 0, "pr": 1, "dh": 1, "dw": 1}))
SIN_AND_MAX_POOL_INPUTS = [
    np.array([[1.6957798704472857, -3.789450214124498, -0.09338722183099435, -3.8033664850960767],
              [3.868737941494058, -1.1319208417107314, -2.6357213794071406, -3.812847083320353]]),
    np.array([[[[-2.9509800242225532], [-2.847351798311812]]]]),
]


def test_a_gradient_wrong_only_on_a_later_run_is_found_and_reproduces_alone(specs, tmp_path):
    """The worker judges the first of three runs whose results differ from the first's, and
    the scripts run the program three times, judging each: one run in a fresh process gave
    the right gradient, so the campaign filed this finding as unconfirmed."""
    made, case = gradient_case(SIN_AND_MAX_POOL)
    case.inputs = SIN_AND_MAX_POOL_INPUTS
    case.request["inputs"] = [encode_array(a) for a in case.inputs]
    outcome = Judge(specs, {}).classify(case, execute_case(case.request, load_dialect("relax")))
    assert outcome.status is Status.MISMATCH, outcome
    assert "x2's gradient differs from finite differences" in outcome.finding.message
    assert reproduced(made, case, outcome, specs, tmp_path)
    assert "for _ in range(RUNS)" in (tmp_path / REPRO).read_text()


def test_an_operator_alone_on_more_elements_than_differences_are_cheap_for_is_judged_on_a_sample(specs):
    """An operator alone, its inputs made variables (BlameGradientOperatorAlone), may have more
    than MAX_ELEMENTS: judged on its loss and shapes alone, a wrong gradient was not found and
    the finding not keyed as its operator (bench27 relay seed 17, grad40 0013: max_pool2d's
    dilation on 540 elements). Now MAX_ELEMENTS of them, spread evenly, are judged."""
    from hirfuzz.campaign.oracles.gradient import MAX_ELEMENTS
    graph = graph_of(var(0, [2, 150]), op(1, "cumsum", [[0, 0]], [2, 150], {"axis": 1, "exclusive": True}))
    _, _, outcome = judged(graph, specs)
    assert outcome.status is Status.MISMATCH, outcome
    said = re.search(r"at (\d+) of (\d+) elements judged \((\d+) not smooth, skipped, (\d+) not sampled\)",
                     outcome.finding.message)
    assert said and int(said.group(1)) > 0, outcome.finding.message
    counted, not_smooth, not_sampled = (int(said.group(i)) for i in (2, 3, 4))
    assert counted + not_smooth == MAX_ELEMENTS and not_sampled == 300 - MAX_ELEMENTS


def test_a_variable_reaching_a_no_grad_input_is_left_out_and_the_rest_judged(specs, tmp_path):
    """sum(cumsum(x0, exclusive=True)) + sum(full_like(x0, x1)): full_like's fill value is
    declared no_grad, so x1 is not asked for (these cases went unjudged before); x0's
    gradient is, and is the exclusive cumsum's wrong one. Its repro asks Gradient for x0 alone."""
    graph = graph_of(var(0, [3]), var(1, []), op(2, "cumsum", [[0, 0]], [3], {"axis": 0, "exclusive": True}),
                     op(3, "full_like", [[0, 0], [1, 0]], [3], {"to": None}))
    made, case = gradient_case(graph)
    reply = execute_case(case.request, load_dialect("relax"))
    assert reply["status"] == "ok" and len(reply["outputs"]) == 2, reply  # the loss, x0's gradient
    outcome = Judge(specs, {}).classify(case, reply)
    assert outcome.status is Status.MISMATCH
    assert "x0's gradient differs from finite differences" in outcome.finding.message
    assert reproduced(made, case, outcome, specs, tmp_path)
    assert "FLOAT_PARAMS = [0]" in (tmp_path / REPRO).read_text()


def test_a_gradient_crash_is_keyed_apart_and_its_repro_reproduces_alone(specs, tmp_path):
    """triu's gradient returns one partial for its two arguments: Gradient raises."""
    made, case, outcome = judged(TRIU, specs)
    finding = outcome.finding
    assert finding.kind == "crash" and finding.oracle == "gradient" and finding.stage == "passes"
    assert finding.signature.startswith("gradient|")
    assert finding.extra["failed_pass"] == "Gradient"
    assert reproduced(made, case, outcome, specs, tmp_path)


def test_a_right_gradient_is_no_finding(specs):
    """sum(tanh(x @ w)): every element smooth, TVM's gradient right."""
    graph = graph_of(var(0, [3, 4]), var(1, [4, 2]), op(2, "matmul", [[0, 0], [1, 0]], [3, 2]),
                     op(3, "tanh", [[2, 0]], [3, 2]))
    _, case, outcome = judged(graph, specs)
    assert (outcome.status, outcome.finding) == (Status.OK, None)
    assert case.request["configs"][0][GRADIENT] == "float64"


def test_a_program_outside_the_contract_is_not_judged(specs):
    """A dilated max pool's backward is not legalized, TVM says so: nothing about it is
    judged, even a crash."""
    attrs = {"ceil_mode": False, "kh": 2, "kw": 2, "sh": 1, "sw": 1, "pt": 0, "pl": 0, "pb": 0, "pr": 0,
             "dh": 2, "dw": 1}
    graph = graph_of(var(0, [1, 1, 4, 4]), op(1, "nn.max_pool2d", [[0, 0]], [1, 1, 2, 3], attrs))
    _, case = gradient_case(graph)
    reply = {"status": "error", "stage": "passes", "exc_type": "TVMError", "message": "x", "traceback": "",
             "timings": {}, "others": []}
    assert Judge(specs, {}).classify(case, reply).finding is None


def test_nll_loss_s_weights_variable_is_not_asked_for():
    # bench22 seed 8's false alarm: a weights variable's gradient came out 0, as TVM documents
    # now: the weights' variable is not asked for, the predictions' is
    from hirfuzz.dialects.relax.gradients import DECLARED_NO_GRAD
    attrs = {"reduction": "sum", "ignore_index": -100}
    weights_variable = graph_of(var(0, [2, 3]), var(1, [2], "int64"), var(2, [3]),
                                op(3, "nn.nll_loss", [[0, 0], [1, 0], [2, 0]], [], attrs))
    assert [n.id for n in float_variables(weights_variable, DECLARED_NO_GRAD)] == [0]
    assert [n.id for n in float_variables(weights_variable)] == [0, 2]


def test_gradient_cases_draw_differentiable_graphs_with_the_gradient_configuration_after_the_baseline(specs):
    made = maker(seed=2, mutations=0, gradients=0.5, ops=6)
    chosen = [i for i in range(12) if made.gradient_case(i)]
    assert chosen and len(chosen) < 12
    judged_ones = 0
    for index in range(12):
        case = made.make_case(index)
        has = len(case.configs) > 1 and bool(case.configs[1].get(GRADIENT))
        assert not any(c.get(GRADIENT) for c in case.configs[2:])
        if index not in chosen:
            assert not has
            continue
        assert {specs.ops[n.op].dialect_op for n in case.graph.operators} <= GRADIENT_OPS
        # every op computes at the gradient oracle's dtype (an astype may still make another)
        assert {n.dtype for n in case.graph.operators} == {"float64"}
        judged_ones += has
    assert judged_ones  # the others are counted, with why
    assert made.gen_stats.gradient_cases == len(chosen)
    assert sum(made.gen_stats.gradient_skipped.values()) == len(chosen) - judged_ones
    made.s.gradients = 0.0  # --gradients 0: none
    assert not any(made.gradient_case(i) for i in range(12))


def test_gradient_cases_draw_at_most_gradient_ops_operators():
    # --gradient-ops: a gradient case's graph draws at most that many; the others --ops
    made = maker(seed=2, mutations=0, gradients=0.5, ops=6, gradient_ops=2)
    sizes = {index: len(made.make_case(index).graph.operators) for index in range(12)}
    chosen = [i for i in range(12) if made.gradient_case(i)]
    assert chosen and all(sizes[i] == 2 for i in chosen)
    assert all(sizes[i] == 6 for i in range(12) if i not in chosen)


def test_a_gradient_finding_s_construct_is_avoided_in_gradient_cases_alone():
    finding = {"confirmed": True}
    case = {"graph": CUMSUM_EXCLUSIVE.to_json(), "lowering": {},
            "configs": [{"target": "llvm", "passes": [], GRADIENT: "float64"}]}
    construct = construct_of(finding, case)
    schedule = AvoidanceSchedule(True, ["llvm"], lambda avoid: True)
    schedule.offer(construct, "wrong-result-1")
    avoid = schedule.avoided_at(0)
    assert avoided_in(avoid, gradient=True) == {AvoidedOp("cumsum", "float64", gradient=True)}
    assert avoided_in(avoid, gradient=False) == frozenset()


def test_relay_offers_gradients():
    """Relay has an autodiff hirfuzz knows (tests/relay/test_relay_gradient_oracle.py), on by
    default (settings.py says why)."""
    from hirfuzz.campaign.settings import defaults_for
    assert dialect_info("relay").gradient_support() is not None
    assert defaults_for("relay").gradients == 0.2


def test_a_worker_dying_in_the_gradient_configuration_is_the_gradient_oracle_s(specs):
    """max_pool2d's backward reads out of bounds on some windows (a known TVM bug): a worker
    killed there is keyed under gradient|, apart from a death in the baseline."""
    from hirfuzz.breadcrumbs import Place, Stage
    from hirfuzz.campaign.sandbox import Death
    made = maker(seed=0, mutations=0, gradients=0.1)
    case = made.make_case(0, graph=CUMSUM_EXCLUSIVE, lowering={},
                          configs=[made.config("vm", "llvm", Oracle.REFERENCE), ORACLES[Oracle.GRADIENT].config(made)])
    judge = Judge(specs, {})
    in_gradient = judge.classify(case, Death("signal", "SIGSEGV", None, "", place=Place(Stage.RUN, 1)))
    in_baseline = judge.classify(case, Death("signal", "SIGSEGV", None, "", place=Place(Stage.RUN, 0)))
    assert in_gradient.finding.oracle == "gradient" and in_gradient.finding.signature.startswith("gradient|")
    assert in_baseline.finding.oracle == "crash"
    assert in_gradient.finding.signature == "gradient|" + in_baseline.finding.signature


def test_a_wrong_gradient_cut_short_is_keyed_as_its_operator_alone_and_joins_one_finding(tmp_path):
    # TVM 0.27's exclusive cumsum has the inclusive cumsum's gradient (tools/gradient_bugs.py).
    # Reductions cut short at one trial (as the end of a --time run cuts them) leave the
    # other operators beside it: each was a finding keyed on its op list (three at e82d122),
    # and is now keyed as the cumsum alone, one finding
    out = tmp_path / "out"
    proc = run_hirfuzz("--only-ops", "cumsum,exp,sin,multiply", "--gradients", 1, "--ops", 4, "--reduce-trials", 1,
                       "--iterations", 16, "--seed", 1, "--out", out, "--no-progress", "--jobs", 1,
                       "--versions", "none")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unconfirmed"] == []
    (row,) = [r for r in summary["findings"] if r["oracle"] == "gradient"]
    finding = json.loads((out / row["path"] / "finding.json").read_text())
    assert finding["confirmed"] and finding["extra"]["ops"] > 1  # the program as reduced, not the cumsum alone
    assert finding["extra"]["keyed_as"]["operator"] == "cumsum"
    # keyed with what the cumsum alone needs of its attributes (attributes_needed): exclusive
    assert finding["extra"]["root_key"] == "root|wrong-result|gradient|values|cumsum|needs cumsum[exclusive]"
    assert finding["extra"]["needs"] == {"cumsum": ["exclusive"]}
    assert len(finding["extra"]["merged"]) >= 1
    report = (out / row["path"] / "bug-report.md").read_text()
    assert "**Likely root:** `cumsum` alone: its gradient is wrong" in report


WHERE_GRADIENT_SHAPE = Path(__file__).parent / "data" / "where_gradient_shape.json"


def test_a_gradient_crash_fed_a_wrong_shaped_gradient_joins_that_operator_s_finding(tmp_path):
    """where returns its broadcast operand's gradient uncollapsed (a wrong shape, alone);
    conv2d's backward, fed it, raises in conv2d_transpose's type inference. The crash is
    keyed as where alone, and the two are one finding (bench26 relax seed 13 0021 + 0023)."""
    out = tmp_path / "out"
    args = ["--seed", 3, "--iterations", 1, "--ops", 2, "--only-ops", "abs", "--no-pass-fuzz", "--jobs", 1,
            "--versions", "none", "--no-progress", "--out", out]
    assert run_hirfuzz(*args).returncode == 0
    saved = json.loads(WHERE_GRADIENT_SHAPE.read_text())
    put_pending(out, "crash-conv2d-backward", saved["crash"]["finding"], saved["crash"]["case"])
    put_pending(out, "wrong-result-where", saved["shape"]["finding"], saved["shape"]["case"])
    proc = run_hirfuzz(*args)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    [row] = summary["findings"]
    finding = json.loads((out / row["path"] / "finding.json").read_text())
    assert finding["extra"]["root_key"] == "root|wrong-result|gradient|shape|where"
    aliases = json.loads((out / "aliases.json").read_text())
    assert {row["signature"], *aliases} == {saved["crash"]["finding"]["signature"],
                                           saved["shape"]["finding"]["signature"]}
