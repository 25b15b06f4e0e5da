"""The gradient oracle on Relay (`--gradients SHARE`, issue 27): a gradient case's
configuration run by a real Relay worker (TVM 0.19's FirstOrderGradient on the loss program,
built and run on the VM), judged against finite differences of the NumPy reference, and a
finding's repro.py run alone as the campaign's verify step runs it."""
import json

import pytest

from hirfuzz.campaign.cases import CaseMaker
from hirfuzz.campaign.conformance import make_samples
from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.judge import Status
from hirfuzz.campaign.oracles import ORACLES, Oracle
from hirfuzz.campaign.reproducers import REPRO, FindingScripts
from hirfuzz.campaign.sandbox import Worker
from hirfuzz.campaign.verify import check_finding_scripts
from hirfuzz.core.graph import Graph
from hirfuzz.core.spec import load_specs
from hirfuzz.dialects import dialect_info
from hirfuzz.dialects.relay.gradients import GRADIENT_COMPOSITES, GRADIENT_OPS, Autodiff, gradient_specs
from hirfuzz.core.plan import Cut, LoweringPlan
from hirfuzz.protocol import AUTODIFF, GRADIENT, decode_array

from conftest import run_hirfuzz
from graph_json import graph_of, op, var
from relay_env import relay_interpreter, run_in_relay


@pytest.fixture(scope="module")
def relay_campaign(tmp_path_factory):
    """A Relay campaign's case maker and judge, and a Relay worker (TVM 0.19)."""
    python, env = relay_interpreter()
    out = tmp_path_factory.mktemp("relaygrad")
    settings = Settings(out=str(out / "out"), iterations=0, ops=4, dialect="relay", tvm_python=python,
                        tvm_env=env, seed=0, gradients=0.1)
    campaign = Campaign(settings, load_specs(dialect="relay"), progress=False)
    worker = Worker(out / "worker.log", python=python, extra_env=env, dialect="relay")
    yield campaign, worker
    worker.close()


def judged(relay_campaign, graph: Graph, autodiff: str | None = None, lowering: dict | None = None):
    """Case 0 made again from `graph` (lowered as `lowering` says) under the gradient
    configuration of `autodiff` alone (as a reduction isolates it), run by the Relay worker
    and judged."""
    campaign, worker = relay_campaign
    case = campaign.maker.make_case(0, graph=graph, lowering=lowering or {},
                                    configs=[ORACLES[Oracle.GRADIENT].config(campaign.maker, autodiff)])
    reply = worker.run_one(case.request, timeout_s=300)
    return case, reply, campaign.reductions.host.classify(case, reply)


def reproduced(relay_campaign, case, finding, folder) -> bool:
    """The finding's files written as the campaign writes them (the loss program's text
    rendered by the worker), and its scripts run alone in the Relay environment."""
    campaign, worker = relay_campaign

    def module_script(case, config):
        reply = worker.run_one({"kind": "render", "graph": case.graph.to_json(), "calls": case.request["calls"],
                                "module": 0, "plain": False, GRADIENT: config.get(GRADIENT),
                                AUTODIFF: config.get(AUTODIFF), **case.lowering}, 120)
        assert reply["status"] == "ok", reply
        return {"script": reply["script"], "consts": [decode_array(c) for c in reply["consts"]]}
    specs = campaign.specs
    scripts = FindingScripts(dialect_info("relay"), specs, campaign.s, lambda: "0.19.0", module_script=module_script)
    for name, text in scripts.files(case, finding, "").items():
        (folder / name).write_text(text)
    python, env = relay_interpreter()
    return check_finding_scripts(folder, finding, 300, python=python, extra_env=env, dialect="relay").reproduced


# sum(take(x1, x0, axis=-1)): TVM 0.19's take_grad compares each axis with -1 unnormalized,
# so it never finds the axis and adds every index's gradient to the whole of x1
TAKE_NEGATIVE_AXIS = graph_of(var(0, [2], "int64"), var(1, [6]),
                              op(2, "take", [[1, 0], [0, 0]], [2], {"axis": -1, "mode": "fast"}))


def registered_gradients() -> set[str]:
    """The ops TVM 0.19 registers FPrimalGradient for."""
    proc = run_in_relay("-c", "import json, tvm; print('OPS ' + json.dumps([n for n in tvm.ir.Op.list_op_names() "
                              "if tvm.ir.Op.get(n).get_attr('FPrimalGradient') is not None]))", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return set(json.loads(proc.stdout.split("OPS ", 1)[1]))


def test_the_gradient_ops_are_those_tvm_0_19_registers_a_gradient_for():
    registered = registered_gradients()
    specs = load_specs(dialect="relay")
    called = {specs.ops[n].dialect_op for n in specs.names()}
    assert GRADIENT_OPS == {n for n in called if not n.startswith("hirfuzz.")} & registered


# each composite's samples lowered by the Relay dialect: the Relay ops called, per composite
CALLED_BY_COMPOSITES = r"""
import json, sys
from tvm import relay
from hirfuzz.dialects import load_dialect
dialect, called = load_dialect("relay"), {}
for composite, request in json.load(open(sys.argv[1])):
    module = dialect.lower(request)
    def visit(node):
        if isinstance(node, relay.Call) and hasattr(node.op, "name"):
            called.setdefault(composite, set()).add(node.op.name)
    for function in module.functions.values():
        relay.analysis.post_order_visit(function, visit)
print("CALLED " + json.dumps({k: sorted(v) for k, v in called.items()}))
"""


def test_the_composites_with_a_gradient_call_only_the_ops_they_declare_each_of_which_has_one(tmp_path):
    """GRADIENT_COMPOSITES is what their samples lower to (float64, 6 samples each), and
    each op in it registers FPrimalGradient in TVM 0.19."""
    specs = load_specs(dialect="relay")
    by_op = {specs.ops[n].dialect_op: n for n in specs.names()}
    samples = []
    for composite in sorted(GRADIENT_COMPOSITES):
        for _, item in make_samples(specs, [by_op[composite]], 6, 0, configs=[]):
            if not isinstance(item, str) and item[0].dtype == "float64":
                samples.append((composite, item[1]))
    (tmp_path / "samples.json").write_text(json.dumps(samples))
    proc = run_in_relay("-c", CALLED_BY_COMPOSITES, tmp_path / "samples.json", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    called = json.loads(proc.stdout.split("CALLED ", 1)[1])
    assert sorted(called) == sorted(GRADIENT_COMPOSITES)
    for composite, ops in called.items():
        assert set(ops) <= GRADIENT_COMPOSITES[composite], composite
    assert set().union(*GRADIENT_COMPOSITES.values()) <= registered_gradients()
    assert {"nn.max_pool2d", "nn.avg_pool2d", "square"} <= set(gradient_specs(specs))  # drawn for gradient cases


# sum(max_pool2d(x, 2x2 window, dilation 2)): TVM 0.19's max_pool2d_grad (_tensor_grad.py)
# passes the pool's size, strides, padding and ceil mode to nn.max_pool2d_grad, not its
# dilation, so the gradient lands on the undilated window's maximum
DILATED_MAX_POOL = graph_of(var(0, [1, 1, 5, 5]), op(1, "nn.max_pool2d", [[0, 0]], [1, 1, 3, 3], {
    "kh": 2, "kw": 2, "sh": 1, "sw": 1, "pt": 0, "pl": 0, "pb": 0, "pr": 0, "dh": 2, "dw": 2, "ceil_mode": False}))


def test_a_dilated_max_pool2d_through_its_composite_is_a_gradient_finding(relay_campaign):
    case, reply, outcome = judged(relay_campaign, DILATED_MAX_POOL)
    assert reply["status"] == "ok", reply
    assert outcome.status is Status.MISMATCH, (reply, outcome)
    assert outcome.finding.signature == "wrong-result|gradient|values|nn.max_pool2d"
    undilated = graph_of(var(0, [1, 1, 5, 5]), op(1, "nn.max_pool2d", [[0, 0]], [1, 1, 4, 4], {
        "kh": 2, "kw": 2, "sh": 1, "sw": 1, "pt": 0, "pl": 0, "pb": 0, "pr": 0, "dh": 1, "dw": 1, "ceil_mode": False}))
    assert judged(relay_campaign, undilated)[2].status is Status.OK


def test_a_dilated_max_pool2d_alone_on_more_elements_than_differences_are_cheap_for_is_found(relay_campaign):
    """bench27 relay seed 17 (grad40 0013): the max_pool2d of a reduction cut short, alone on
    its input of 540 elements under the higher-order autodiff, as BlameGradientOperatorAlone
    tries it. Judged on its loss and shapes alone it passed, and the finding kept its six
    operators' key apart from max_pool2d's; a sample of its elements shows the wrong gradient."""
    graph = graph_of(var(0, [5, 3, 6, 6]), op(1, "nn.max_pool2d", [[0, 0]], [5, 3, 3, 6], {
        "ceil_mode": True, "kh": 2, "kw": 2, "sh": 2, "sw": 1, "pt": 1, "pl": 1, "pb": 0, "pr": 1, "dh": 2, "dw": 2}))
    case, reply, outcome = judged(relay_campaign, graph, autodiff=Autodiff.HIGHER_ORDER.value)
    assert reply["status"] == "ok", reply
    assert outcome.status is Status.MISMATCH, (reply, outcome)
    assert outcome.finding.signature == "wrong-result|gradient|values|nn.max_pool2d"
    assert "not sampled" in outcome.finding.message


def test_a_pool_in_ceil_mode_cut_to_the_spec_s_size_has_a_gradient(relay_campaign):
    """In ceil mode Relay keeps a last window starting in the trailing padding (width 2
    here) that the spec drops (width 1): the composite slices it off over every axis, since
    strided_slice's gradient asserts `axes` are absent (bench23 seed 9: a false alarm
    while the composite sliced with `axes`)."""
    pool = {"kh": 1, "kw": 2, "sh": 1, "sw": 3, "pt": 0, "pl": 1, "pb": 0, "pr": 1, "dh": 1, "dw": 1, "ceil_mode": True}
    for name, attrs in (("nn.avg_pool2d", {**pool, "count_include_pad": False}), ("nn.max_pool2d", pool)):
        graph = graph_of(var(0, [1, 1, 3, 1]), op(1, name, [[0, 0]], [1, 1, 3, 1], attrs))
        case, reply, outcome = judged(relay_campaign, graph)
        assert reply["status"] == "ok", reply
        assert (outcome.status, outcome.finding) == (Status.OK, None), name


def test_a_right_relay_gradient_is_judged_and_no_finding(relay_campaign):
    """sum(tanh(dense(x, w))): every element smooth, TVM's gradient right."""
    graph = graph_of(var(0, [3, 4]), var(1, [2, 4]), op(2, "nn.dense", [[0, 0], [1, 0]], [3, 2]),
                     op(3, "tanh", [[2, 0]], [3, 2]))
    case, reply, outcome = judged(relay_campaign, graph)
    assert reply["status"] == "ok", reply  # differentiated, built and run, not skipped
    assert ORACLES[Oracle.GRADIENT].not_judged(case, case.configs[0]) is None
    assert (outcome.status, outcome.finding) == (Status.OK, None)


def test_take_along_a_negative_axis_is_a_gradient_finding_and_its_repro_reproduces_alone(relay_campaign, tmp_path):
    case, reply, outcome = judged(relay_campaign, TAKE_NEGATIVE_AXIS)
    assert outcome.status is Status.MISMATCH, (reply, outcome)
    finding = outcome.finding
    assert (finding.oracle, finding.signature) == ("gradient", "wrong-result|gradient|values|take")
    assert "x1's gradient differs from finite differences" in finding.message
    assert reproduced(relay_campaign, case, finding, tmp_path)
    assert "FirstOrderGradient" in (tmp_path / REPRO).read_text()


def test_the_loss_sums_a_narrow_result_in_the_loss_dtype(relay_campaign):
    """The reference sums each float result in float64: the loss program casts a float16
    result to float64 before summing it (a float16 sum rounds and overflows)."""
    campaign, worker = relay_campaign
    graph = Graph.from_json({"format": 1, "nodes": [
        {"id": 0, "kind": "var", "outputs": [{"shape": [4], "dtype": "float16"}]},
        {"id": 1, "kind": "op", "op": "negative", "dtype": "float16", "inputs": [[0, 0]], "attrs": {},
         "outputs": [{"shape": [4], "dtype": "float16"}]}]})
    case = campaign.maker.make_case(0, graph=graph, lowering={},
                                    configs=[ORACLES[Oracle.GRADIENT].config(campaign.maker)])
    reply = worker.run_one({"kind": "render", "graph": graph.to_json(), "calls": case.request["calls"],
                            "module": 0, "plain": False, GRADIENT: "float64"}, 120)
    assert reply["status"] == "ok", reply
    body = reply["script"].split("{", 1)[1]
    assert body.index('cast(') < body.index("sum("), reply["script"]
    assert "-> float64" in reply["script"]


def test_a_dilated_conv2d_is_outside_the_gradient_s_contract():
    """conv2d_grad emits a dilated conv2d_transpose, which TVM 0.19's x86 strategy refuses
    ("not support dilate now"): such a graph gets no gradient configuration."""
    from hirfuzz.dialects.relay.gradients import outside_contract
    conv = {"groups": 1, "out_channels": 1, "kh": 1, "kw": 1, "sh": 1, "sw": 1, "pt": 0, "pl": 0, "pb": 0, "pr": 0}
    graph = lambda dw: graph_of(var(0, [1, 1, 3, 3]), var(1, [1, 1, 1, 1]),  # noqa: E731
                                op(2, "nn.conv2d", [[0, 0], [1, 0]], [1, 1, 3, 3], {**conv, "dh": 1, "dw": dw}))
    assert "dilation" in outside_contract(graph(2))
    assert outside_contract(graph(1)) is None


# sum(tanh(dense(x0, x1))), tanh in a function of its own
DENSE_TANH = graph_of(var(0, [3, 4]), var(1, [2, 4]), op(2, "nn.dense", [[0, 0], [1, 0]], [3, 2]),
                      op(3, "tanh", [[2, 0]], [3, 2]))
HIGHER_ORDER = Autodiff.HIGHER_ORDER.value


def lowered_with(*cuts: Cut) -> dict:
    return {"plan": LoweringPlan(functions=list(cuts)).to_json()}


def test_the_higher_order_autodiff_differentiates_a_global_function_right_on_the_interpreter(relay_campaign):
    """The loss calls the program as its lowering plan made it (`forward`), here with tanh
    in a global function: ReverseAD differentiates through both global calls, and the
    gradient runs on Relay's interpreter, the one executor with references."""
    case, reply, outcome = judged(relay_campaign, DENSE_TANH, HIGHER_ORDER, lowered_with(Cut(3, 3, "global")))
    assert case.configs[0]["kind"] == "debug" and case.configs[0][AUTODIFF] == HIGHER_ORDER
    assert reply["status"] == "ok", reply
    assert (outcome.status, outcome.finding) == (Status.OK, None)


def test_a_closure_under_the_higher_order_autodiff_is_a_crash_and_its_repro_reproduces_alone(relay_campaign, tmp_path):
    """TVM 0.19's ReverseADType (higher_order_gradient.cc) turns a function type's argument
    types into (value, gradient reference) pairs but keeps its return type, so the
    let-bound closure's variable gets a type its reversed body does not have: InferType
    fails on every program calling a closure. The same graph in a global function is
    differentiated right (the test above), and FirstOrderGradient never sees the closure."""
    case, reply, outcome = judged(relay_campaign, DENSE_TANH, HIGHER_ORDER, lowered_with(Cut(3, 3, "local")))
    assert outcome.status is Status.ERROR, (reply, outcome)
    finding = outcome.finding
    assert finding.signature.startswith("gradient|crash|passes|DiagnosticError|"), finding.signature
    assert "ref(Tensor[(3, 2), float64])" in finding.message
    assert reproduced(relay_campaign, case, finding, tmp_path)
    assert 'mode="higher_order"' in (tmp_path / REPRO).read_text()
    first_order = judged(relay_campaign, DENSE_TANH, None, lowered_with(Cut(3, 3, "local")))
    assert first_order[2].status is Status.OK


def test_a_closure_s_crash_under_the_higher_order_autodiff_is_reduced_to_one_closure_then_avoided(tmp_path):
    """The closure crash above in a real campaign of gradient cases (seed 1: case 14 holds
    two closures): its plan is reduced to one closure, a form that fails whatever it
    computes, so the campaign's later higher-order gradient cases are lowered without
    closures (the first-order ones and the others keep theirs). A function obtained as a
    value fails alike (R34) but is another form, met only as a hit of this finding."""
    python, env = relay_interpreter()
    out = tmp_path / "out"
    settings = dict(seed=1, gradients=1.0, ops=3, pass_fuzz=False, executors=["vm"], dialect="relay")
    proc = run_hirfuzz("--ir", "relay", "--tvm-python", python, "--seed", 1, "--gradients", 1, "--ops", 3,
                       "--iterations", 40, "--no-pass-fuzz", "--jobs", 1, "--versions", "none", "--no-progress",
                       # its finding is reduced as soon as it is seen, not after the dynamic-shape
                       # finding before it has used the reductions' share of the campaign
                       "--reduce-share", 100, "--executors", "vm", "--out", out, env=env)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    # the campaign's other finding is its forward program's on a dynamic shape (avg_pool2d's
    # shape function ignoring dilation), which names no construct to avoid
    [finding] = [f for f in summary["findings"] if "ref(Tensor" in f["message"]]
    case = json.loads((out / finding["path"] / "case.json").read_text())
    assert case["configs"][-1][AUTODIFF] == HIGHER_ORDER
    assert [c["kind"] for c in case["lowering"]["plan"]["functions"]] == ["local"]  # one closure, nothing else
    [row] = summary["avoided_constructs"]["constructs"]
    assert row["construct"] == "plan[function_local] under higher_order" and row["finding"] == finding["path"]
    assert row["draws_avoided"] >= 1 and row["from_case"] > json.loads((out / finding["path"] / "finding.json").read_text())["case"]
    assert "plans lowered without it" in (out / "report.md").read_text()
    # the campaign's cases made again under its saved schedule: no later higher-order
    # gradient case holds a closure, and the first such case the schedule took one from
    maker = CaseMaker(Settings(**settings), load_specs(dialect="relay"), dialect_info("relay"), None)
    maker.avoidance.restore(json.loads((out / "state.json").read_text())["avoidances"])
    cases = [maker.make_case(i) for i in range(40)]  # in order: each is drawn against the coverage before it
    later = [c for c in cases[row["from_case"]:] if maker.gradient_case(c.index) and maker.autodiff(c.index) == HIGHER_ORDER]
    assert later and not any(cut.kind == "local" for c in later
                             for cut in LoweringPlan.from_json(c.lowering["plan"]).functions)


def test_relay_gradient_cases_draw_both_autodiffs_and_relax_one():
    """A Relay gradient case runs the first- or the higher-order autodiff, drawn from its own
    stream; a Relax one names none (it has one)."""
    def drawn(dialect: str) -> set:
        settings = Settings(out="unused", iterations=0, dialect=dialect, seed=0, gradients=1.0)
        maker = CaseMaker(settings, load_specs(dialect=dialect), dialect_info(dialect), None)
        return {maker.autodiff(i) for i in range(40)}
    assert drawn("relay") == {"first_order", "higher_order"}
    assert drawn("relax") == {None}
