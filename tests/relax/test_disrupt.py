"""Disruptive mode: each violation breaks one constraint, and TVM's answer is classified."""
import json
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import run_hirfuzz
from reproducer_rules import check_violation_scripts
from hirfuzz.core.violations import (KINDS, ViolationBuilder, applicable_kinds, classify, draw_inputs,
                             generate_violation, unsupported_dtypes, violation_plan)
from hirfuzz.core.expr import ExprError
from hirfuzz.core.generate import GraphBuilder, Rejected
from hirfuzz.core.graph import Graph, Node, TensorType
from hirfuzz.core.calls import call_records
from hirfuzz.dialects import load_dialect
from hirfuzz.protocol import encode_array
from hirfuzz.worker import execute_case

# its module fixture is costly: one xdist worker runs the whole file (`--dist loadgroup`)
pytestmark = pytest.mark.xdist_group("disrupt")


def violation_for(specs, op, kind, seed=0, tries=30):
    rng = np.random.default_rng(seed)
    for _ in range(tries):
        builder = GraphBuilder(specs, rng)
        try:
            return builder.graph, ViolationBuilder(builder, specs, rng).build(specs.ops[op], kind)
        except (Rejected, ExprError):
            continue
    raise AssertionError(f"no {kind} violation for {op}")


def run_case(specs, graph, violation, seed=0):
    plan = violation_plan(violation, graph, specs)
    inputs, _ = draw_inputs(graph, violation.to_json(), specs, np.random.default_rng(seed))
    answer = execute_case({"graph": graph.to_json(), "calls": call_records(graph, specs), "violation": plan,
                           "run": True, "inputs": [encode_array(a) for a in inputs]}, load_dialect("relax"))
    return classify(answer, violation.to_json()), answer


SAMPLE_OPS = ["add", "matmul", "concat", "nn.conv2d", "sum", "reshape", "where", "astype", "nn.max_pool2d",
              "strided_slice", "exp", "split"]


@pytest.mark.parametrize("op", SAMPLE_OPS)
def test_every_applicable_violation_kind_is_generated(specs, op):
    for kind in applicable_kinds(specs.ops[op]):
        graph, v = violation_for(specs, op, kind)
        assert v.kind == kind and v.op == op
        json.dumps(violation_plan(v, graph, specs))  # plain data, for workers and reproducers


def test_a_campaign_sized_run_covers_every_kind(specs):
    rng, seen = np.random.default_rng(3), set()
    kinds, wraps = Counter(), Counter()
    for i in range(400):
        _, v = generate_violation(specs, rng, 1 if i % 2 else 3, seen)
        kinds[v.kind] += 1
        wraps[v.wrap] += 1
    assert set(kinds) == set(KINDS)
    assert set(wraps) == {None, "global", "local"}  # in main, in functions and in closures
    assert len(seen) >= 350  # violation coverage: mostly new (op, kind, dtype, rank) tuples


def test_violations_break_the_spec(specs):
    graph, v = violation_for(specs, "right_shift", "dtype-unsupported")
    assert v.dtype not in specs.ops["right_shift"].dtypes
    assert all(graph.type_of(r).dtype == v.dtype for r in v.inputs)
    graph, v = violation_for(specs, "add", "shape-incompatible")
    a, b = (graph.type_of(r).shape for r in v.inputs)
    from hirfuzz.core.shapes import broadcastable
    assert not broadcastable(a, b)
    graph, v = violation_for(specs, "nn.conv2d", "rank-wrong")
    assert len(graph.type_of(v.inputs[0]).shape) != 4


def test_an_optional_trailing_argument_is_never_dropped_as_an_arity_violation(specs):
    # Relax's strided_slice takes its strides as an optional last argument: a call without
    # them is valid, so "one argument too few" is never drawn for it, "one too many" is
    changes = {violation_for(specs, "strided_slice", "arity", seed=seed)[1].arity for seed in range(12)}
    assert changes == {1}
    assert {violation_for(specs, "gather_elements", "arity", seed=seed)[1].arity for seed in range(12)} == {-1, 1}


# hand-picked programs whose treatment by TVM 0.27 is known

def single_op(specs, op, shapes, dtype, kind="dtype-unsupported", **extra):
    from hirfuzz.core.violations import Violation
    from hirfuzz.core.graph import Ref
    g = Graph()
    refs = [Ref(g.add(Node(i, "var", [TensorType(s, dtype)])).id) for i, s in enumerate(shapes)]
    return g, Violation(kind, op, dtype, refs, {}, "hand-picked", **extra)


def test_bool_add_is_a_poor_diagnostic_at_build(specs):
    (cls, stage), answer = run_case(specs, *single_op(specs, "add", [(2, 3), (2, 3)], "bool"))
    assert (cls, stage) == ("poor-diagnostic", "build")
    assert answer["exc_type"] == "InternalError"


@pytest.mark.parametrize("wrap", ["global", "local"])
def test_bool_add_inside_a_function_or_closure_is_still_caught(specs, wrap):
    g, v = single_op(specs, "add", [(2, 3), (2, 3)], "bool", wrap=wrap)
    (cls, stage), answer = run_case(specs, g, v)
    assert (cls, stage) == ("poor-diagnostic", "build")


def test_an_op_run_on_a_dtype_its_spec_leaves_out_is_counted_not_filed(specs):
    # logical_xor's spec lists bool alone; TVM 0.27 runs it on uint32 as a bitwise xor. The
    # spec's list is what hirfuzz generates, not what TVM documents: not a silent acceptance
    (cls, stage), answer = run_case(specs, *single_op(specs, "logical_xor", [(2, 3), (2, 3)], "uint32"))
    assert answer["status"] == "ok" and (cls, stage) == ("accepted-unlisted-dtype", "run")
    # bool add is still a poor diagnostic (above): the dtype kind is only exempt from acceptance


def test_incompatible_broadcast_is_a_clean_rejection(specs):
    (cls, stage), answer = run_case(specs, *single_op(specs, "add", [(3, 4), (2, 3)], "float32",
                                                      kind="shape-incompatible"))
    assert (cls, stage) == ("clean-rejection", "lower")
    assert answer["exc_type"] == "ValueError"


def test_match_cast_lie_is_caught_at_run_time(specs):
    g, v = single_op(specs, "exp", [(3, 4)], "float32", kind="match-cast-lie", lie={"var": 0, "actual": [3, 5]})
    (cls, stage), answer = run_case(specs, g, v)
    assert (cls, stage) == ("clean-rejection", "run")
    assert "match_cast" in answer["message"]


def test_disruptive_campaign_end_to_end(tmp_path):
    out = tmp_path / "out"
    proc = run_hirfuzz("--mode", "disruptive", "--iterations", 16, "--ops", 3, "--out", out,
                       "--no-progress", "--seed", 1)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    d = s["disruptive"]
    assert sum(d["classes"].values()) == s["cases"] == 16
    assert d["violation_coverage"] >= 14
    assert s["unconfirmed"] == []  # every reported finding reproduced from its script
    assert s["findings"]
    for f in s["findings"]:
        assert f["kind"] in ("poor-diagnostic", "crash", "silent-acceptance")
        assert f["oracle"] == "disruptive"
        # a triage class follows from what TVM did with the invalid program, with the evidence
        violation = json.loads(open(out / f["path"] / "finding.json").read())["extra"]["violation"]
        want = {"poor-diagnostic": {"poor diagnostic"}, "crash": {"poor diagnostic"},
                "silent-acceptance": {"silent acceptance", "documented limitation"}}[f["kind"]]
        assert f["triage"]["class"] in want and violation["op"] in f["triage"]["evidence"], f["triage"]
        # its title: the violation's op first, what TVM did with it, TVM's error in its essence
        heading = open(out / f["path"] / "bug-report.md").readline().removeprefix("### ").strip()
        assert heading.startswith(f"[Bug][Relax] {violation['op']}") and len(heading) <= 100, heading
        assert not any(noise in heading for noise in ("InternalError:", "Check failed", ") is false")), heading
        assert f"### {f['triage']['class']}: {f['triage']['component']} (" in (out / "report.md").read_text()


def valid_part_that_may_trap():
    """A valid part with an integer division and a take with indices (each traps, or reads
    out of bounds, on default-domain inputs), and a violation consuming both."""
    from hirfuzz.core.graph import Ref
    from hirfuzz.core.violations import Violation
    g = Graph()
    for i, (shape, dtype) in enumerate([((3, 4), "int32"), ((3, 4), "int32"), ((5,), "float32"), ((6,), "int64")]):
        g.add(Node(i, "var", [TensorType(shape, dtype)]))
    g.add(Node(4, "op", [TensorType((3, 4), "int32")], op="floor_divide", dtype="int32", inputs=[Ref(0), Ref(1)]))
    g.add(Node(5, "op", [TensorType((3, 4), "int32")], op="divide", dtype="int32", inputs=[Ref(0), Ref(1)]))
    g.add(Node(6, "op", [TensorType((6,), "float32")], op="take", dtype="float32", inputs=[Ref(2), Ref(3)],
               attrs={"axis": 0, "mode": "fast"}))
    return g, Violation("dtype-mismatch", "add", "int32", [Ref(4), Ref(6)], {}, "hand-picked")


def test_disruptive_inputs_keep_the_valid_part_in_its_domain(specs):
    """The valid part's inputs come from the in-domain search (issue 15's false alarm 2:
    a division by zero or an index out of range there crashed the program, and the crash
    was blamed on the violation); default-domain draws would break these within a few seeds."""
    from hirfuzz.campaign.cases import CaseMaker
    from hirfuzz.campaign.coordinator import Settings
    from hirfuzz.dialects import dialect_info
    graph, v = valid_part_that_may_trap()
    maker = CaseMaker(Settings(mode="disruptive"), specs, dialect_info("relax"), None)
    disruption = {"violation": v.to_json(), "plan": violation_plan(v, graph, specs)}
    for index in range(20):
        case = maker.make_case(index, graph, disruption)
        a, b, x, indices = case.inputs
        assert np.all(b != 0), f"case {index}: division by zero"
        assert np.all((0 <= indices) & (indices < x.shape[0])), f"case {index}: index out of range"
        assert case.comparable and not case.unmet_op


def test_a_lied_variable_keeps_its_real_shape_beside_in_domain_inputs(specs):
    from hirfuzz.core.graph import Ref
    graph, _ = valid_part_that_may_trap()
    lied = graph.add(Node(7, "var", [TensorType((3, 4), "float32")]))
    lie = {"kind": "match-cast-lie", "lie": {"var": lied.id, "actual": [3, 5]}}
    values, chosen = draw_inputs(graph, lie, specs, np.random.default_rng(0))
    assert values[-1].shape == (3, 5) and values[-1].dtype == np.float32
    assert np.all(values[1] != 0) and chosen.comparable
    assert Ref(lied.id) in chosen.facts  # the search saw the lied variable as declared


@pytest.fixture(scope="module")
def comparisons_campaign(tmp_path_factory) -> tuple[Path, dict]:
    """A short disruptive campaign on ops whose violations TVM 0.27 accepts (outer on mixed
    dtypes) or fails on internally (right_shift on a float, triu without k; outer on bool, a
    valid program TVM cannot build, is drawn no more): its folder and summary."""
    out = tmp_path_factory.mktemp("disrupt") / "out"
    proc = run_hirfuzz("--mode", "disruptive", "--iterations", 6, "--ops", 3, "--out", out, "--no-progress",
                       "--seed", 2, "--only-ops", "outer,triu,right_shift")
    assert proc.returncode == 0, proc.stderr
    return out, json.loads((out / "summary.json").read_text())


def test_a_disruptive_findings_repro_is_the_violating_call_alone_and_fails_as_the_harness_does(comparisons_campaign):
    """Issue 15 item 5: repro.py holds the one invalid call, its inputs parameters, not the
    whole valid graph (check.py keeps that); run alone, each fails as check.py does."""
    out, s = comparisons_campaign
    assert s["unconfirmed"] == []
    kinds = {f["kind"] for f in s["findings"]}
    assert {"silent-acceptance", "poor-diagnostic"} <= kinds, kinds
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    forms = Counter(check_violation_scripts(out, f, sys.executable, env) for f in s["findings"])
    assert s["disruptive"]["reproducers"] == dict(forms)
    alone = forms["call"] + forms["call-in-function"]
    assert alone >= 1, forms
    report = (out / "report.md").read_text()
    assert f"Findings whose repro.py is the violating call alone: {alone}; the whole program" in report
    for f in s["findings"]:  # a silent acceptance's script: no multi-kilobyte literals
        if f["kind"] == "silent-acceptance":
            script = (out / f["path"] / "repro.py").read_text()
            assert max(map(len, script.splitlines())) < 200 and len(script) < 2500, script


def test_a_finding_whose_call_alone_does_not_fail_alike_is_unconfirmed_with_the_harness(comparisons_campaign, tmp_path):
    """The reducer keeps the first short script that fails as the harness does; where none
    does, the failure may be the valid part's, not the violation's: the harness itself is
    repro.py and the finding goes to unconfirmed, saying why. Real
    scripts, run alone: a poor diagnostic's harness, and as the "short" candidate a silent
    acceptance's script (it raises an AssertionError, not TVM's error)."""
    import threading
    from types import SimpleNamespace
    from hirfuzz.campaign.reducer import Job, Reduction
    from hirfuzz.campaign.reproducers import HARNESS, REPRO, ReproForm
    from hirfuzz.campaign.verify import check_finding_scripts
    from hirfuzz.core.finding import Finding
    out, s = comparisons_campaign
    rows = {f["kind"]: out / f["path"] for f in s["findings"]}
    poor, accepted = rows["poor-diagnostic"], rows["silent-acceptance"]
    wrong, right = (accepted / REPRO).read_text(), (poor / REPRO).read_text()
    # what Reduction reads of its host (FindingScripts takes info, specs and tvm_version;
    # verifying renders nothing, so none of them is used)
    host = SimpleNamespace(settings=SimpleNamespace(timeout_s=120), out=tmp_path, lock=threading.Lock(),
                           counters=SimpleNamespace(verify_s=0.0), info=None, specs=None, tvm_version=lambda: "")
    worker = SimpleNamespace(check_scripts=lambda folder, finding, limit: check_finding_scripts(folder, finding, limit))
    reduction = Reduction(host, worker, threading.Event(), {})
    for scripts, form in (([(ReproForm.CALL, wrong), (ReproForm.CALL_IN_FUNCTION, right)], "call-in-function"),
                          ([(ReproForm.CALL, wrong)], "harness")):
        finding = Finding(**json.loads((poor / "finding.json").read_text()))
        files = {HARNESS: (poor / HARNESS).read_text(), REPRO: None}
        folder, outcome = reduction.verify_violation(Job("findings", None, finding, "", "k", finding.signature),
                                                     finding, files, scripts)
        assert finding.extra["reproducer"] == form
        if form == "harness":
            assert (folder, outcome.reproduced, finding.confirmed) == ("unconfirmed", False, False)
            assert HARNESS not in files and files[REPRO] == (poor / HARNESS).read_text()
            assert "did not fail alike" in finding.extra["call_alone"]
            assert "valid part" in finding.extra["unconfirmed_reason"]
        else:
            assert (folder, outcome.reproduced, finding.confirmed) == ("findings", True, True)
            assert files[REPRO] == right and files[HARNESS]


SCATTER_ND_ARITY = """import tvm
from tvm import relax

bb = relax.BlockBuilder()
x0 = relax.Var('x0', relax.TensorType([1, 5, 1], 'int64'))
x1 = relax.Var('x1', relax.TensorType([1, 1], 'int64'))
with bb.function('main', [x0, x1]):
    call = relax.op.scatter_nd(x0, x1, x0, reduction='update')
    call = relax.Call(call.op, [*call.args, call.args[0]], call.attrs, call.ty_args)
    bb.emit_func_output(bb.emit(call))
"""


def test_a_poor_diagnostic_script_fails_alike_only_at_the_same_frame_with_the_same_message(tmp_path):
    """A poor diagnostic's short script must raise the error its signature keys on; TVM's
    log line after the error ("BlockBuilder destroyed with remaining blocks") is not part of
    its message. One argument too many for scatter_nd, run for real."""
    from hirfuzz.campaign.verify import check_short_reproducer
    from hirfuzz.core.finding import Finding
    (tmp_path / "repro.py").write_text(SCATTER_ND_ARITY)
    seen = {}
    for name, where, message in (("same", "relax/op/tensor/manipulate.cc", "Check failed: call->args.size() == N (N vs. N) :"),
                                 ("other", "relax/op/tensor/manipulate.cc", "Check failed: (axis >= N)"),
                                 ("elsewhere", "relax/op/tensor/index.cc", "Check failed: call->args.size() == N (N vs. N) :")):
        finding = Finding(kind="poor-diagnostic", oracle="disruptive", stage="lower", message="",
                          signature=f"poor-diagnostic|arity|InternalError|{where}|{message}",
                          extra={"exc_type": "InternalError", "op_names": ["scatter_nd", "scatter_nd", "scatter_nd"],
                                 "fails_at": {"exc_type": "InternalError", "where": where, "said": message}})
        seen[name] = check_short_reproducer(tmp_path / "repro.py", finding, timeout_s=120)
    assert seen["same"].reproduced, seen["same"].output[-2000:]
    assert "Warning: BlockBuilder destroyed" in seen["same"].output  # the log line the check must skip
    for name in ("other", "elsewhere"):
        assert not seen[name].reproduced and "not where or as the fuzzer saw it" in seen[name].observed


PRELU_SLOPE = """import tvm
from tvm import relax

bb = relax.BlockBuilder()
x0 = relax.Var('x0', relax.TensorType([4], 'float32'))
x1 = relax.Var('x1', relax.TensorType([6], 'float32'))
with bb.function('main', [x0, x1]):
    bb.emit_func_output(bb.emit(relax.op.nn.prelu(x0, x1, axis=0)))
relax.build(bb.get(), target='llvm')
"""


def test_a_bare_assertion_in_tvm_fails_alike_as_an_empty_message(tmp_path):
    """TOPI's prelu asserts its slope's length with a bare `assert`: the signature's message
    is empty, and so is the script's (not the word AssertionError)."""
    from hirfuzz.campaign.verify import check_short_reproducer
    from hirfuzz.core.finding import Finding
    (tmp_path / "repro.py").write_text(PRELU_SLOPE)
    finding = Finding(kind="poor-diagnostic", oracle="disruptive", stage="build", message="",
                      signature="missing-check|shape-incompatible|InferTypePRelu",
                      extra={"exc_type": "AssertionError",
                             "fails_at": {"exc_type": "AssertionError", "where": "topi/nn/elemwise.py", "said": ""}})
    outcome = check_short_reproducer(tmp_path / "repro.py", finding, timeout_s=120)
    assert outcome.reproduced and "topi/nn/elemwise.py" in outcome.output, outcome.output[-2000:]


def _signature_of(specs, op, shapes, dtype, **extra):
    return _judged_signature(specs, *single_op(specs, op, shapes, dtype, **extra))


def _judged_signature(specs, g, v):
    from hirfuzz.campaign.oracles.disruptive import DisruptiveOracle
    from hirfuzz.campaign.cases import CaseMaker
    from hirfuzz.campaign.coordinator import Settings
    from hirfuzz.dialects import dialect_info
    (cls, stage), answer = run_case(specs, g, v)
    maker = CaseMaker(Settings(mode="disruptive"), specs, dialect_info("relax"), None)
    case = maker.make_case(0, g, {"violation": v.to_json(), "plan": violation_plan(v, g, specs)})
    return DisruptiveOracle().judge(specs, case, answer).finding.signature


def test_one_missing_check_is_one_signature_whatever_op_and_dtype_meet_it(specs):
    """Relax types every binary arithmetic, logical and bitwise op with one function,
    InferTypeBroadcastArith (src/relax/op/tensor/binary.cc), which checks no dtype class:
    add on bool (failing later in LLVM codegen, codegen_llvm.cc), right_shift on float32
    (in TIR's op utilities, op_utils.h) and logical_or on int8 all get past it. One missing
    check, one finding, whatever later trips over it; a comparison (InferTypeBroadcastCMP)
    and matmul (InferTypeMatmul) are typed elsewhere, and stay apart."""
    typed_alike = {(op, dtype): _signature_of(specs, op, [(2, 3), (2, 3)], dtype)
                   for op, dtype in (("add", "bool"), ("subtract", "bool"), ("minimum", "bool"), ("divide", "bool"),
                                     ("right_shift", "float32"), ("logical_or", "int8"))}
    assert set(typed_alike.values()) == {"missing-check|dtype-unsupported|InferTypeBroadcastArith"}, typed_alike
    assert _signature_of(specs, "less_equal", [(2, 3), (2, 3)], "bool") == \
        "missing-check|dtype-unsupported|InferTypeBroadcastCMP"
    assert _signature_of(specs, "matmul", [(2, 3), (3, 3)], "bool") == "missing-check|dtype-unsupported|matmul"


def test_a_failure_while_typing_is_keyed_on_the_check_that_fired(specs):
    """one_hot with depth -7 fails inside its own type inference on an internal check that
    says what is wrong (InferTypeOneHot, manipulate.cc: `depth > 0` as an InternalError): a
    poor diagnostic keyed on that check, where it is and what it says."""
    g, v = single_op(specs, "one_hot", [(2, 3)], "int64", kind="attr-out-of-range", attr="depth")
    v.attrs = {"depth": -7, "axis": -1, "_float": False, "on_value": 1, "off_value": 0}
    sig = _judged_signature(specs, g, v)
    assert sig.startswith("poor-diagnostic|attr-out-of-range|InternalError|relax/op/tensor/manipulate.cc|"
                          "Check failed: (depth > N)"), sig


def test_an_argument_count_tvm_never_checks_is_one_finding_however_it_fails(specs):
    """gather_elements and gather_nd skip CheckNumArguments (manipulate.cc): one argument too
    many runs (a silent acceptance), one too few reads an argument that is not there while
    typing (an IndexError in block_builder.py). One missing check: one signature."""
    seen = {_judged_signature(specs, *violation_for(specs, op, "arity", seed=seed))
            for op, seed in (("gather_elements", 0), ("gather_nd", 0), ("gather_nd", 1), ("gather_elements", 2))}
    assert seen == {"missing-check|arity|argument count"}, seen


def test_a_hit_lists_each_op_and_dtype_once_and_says_when_an_op_is_new():
    from hirfuzz.core.finding import Finding
    from hirfuzz.core.violation_key import add_violation_hit, violation_hit

    def finding(op, dtype, case):
        return Finding(kind="poor-diagnostic", oracle="disruptive", stage="build", signature="s", message="",
                       case=case, extra={"violation": {"kind": "dtype-unsupported", "op": op, "dtype": dtype,
                                                       "detail": f"{op} on {dtype}"}})
    first = finding("add", "bool", 1)
    first.extra["hit_by"] = [violation_hit(first)]
    assert add_violation_hit(first, finding("subtract", "bool", 2))       # a new op: its script is kept
    assert not add_violation_hit(first, finding("subtract", "bool", 3))   # listed already
    assert not add_violation_hit(first, finding("add", "uint8", 4))       # a new dtype of a listed op
    assert [(h["op"], h["dtype"], h["case"]) for h in first.extra["hit_by"]] == [
        ("add", "bool", 1), ("subtract", "bool", 2), ("add", "uint8", 4)]


@pytest.mark.parametrize("op", ["take", "scatter_elements", "gather_elements", "floor_divide"])
def test_a_violations_other_inputs_stay_in_their_domain(specs, op):
    """Exactly one constraint broken: the tensors only the violating call reads are drawn
    from the domain its spec declares (indices in range, a divisor away from zero), not
    the dtype's default range, which would break a second constraint."""
    from hirfuzz.core.inputs import declared_domain, within
    from hirfuzz.core.reference import op_env
    from hirfuzz.core.violations import _call_node
    checked = 0
    for kind in ("arity", "match-cast-lie", "dtype-mismatch", "shape-incompatible"):
        if kind not in applicable_kinds(specs.ops[op]):
            continue
        for seed in range(6):
            try:
                graph, v = violation_for(specs, op, kind, seed=seed)
            except AssertionError:
                continue
            values, _ = draw_inputs(graph, v.to_json(), specs, np.random.default_rng(seed))
            by_var = dict(zip((n.id for n in graph.variables), values))
            call = _call_node(v.to_json(), graph)
            env = op_env(specs.ops[op], call, graph)
            for slot, ref in enumerate(call.inputs):
                if specs.ops[op].inputs[slot].domain is None or not isinstance(ref, type(call.inputs[0])):
                    continue
                try:
                    domain = declared_domain(specs.ops[op], slot, env, by_var[ref.node].dtype.name)
                except (ExprError, IndexError, TypeError, ValueError):
                    continue  # the violation left it undefined (an index along a broken shape)
                assert within(by_var[ref.node], domain), (op, kind, seed, slot, domain, by_var[ref.node])
                checked += 1
    assert checked >= 6, checked


@pytest.mark.parametrize("kind, raised, passes", [
    ("dtype-mismatch", None, False),                                   # accepted: the bug is there
    ("dtype-mismatch", "ValueError('outer needs one dtype')", True),   # a diagnostic: fixed
    ("dtype-mismatch", "TVMError('InternalError: Check failed: x')", False),  # an internal error is no fix
    ("dtype-mismatch", "IndexError('list index out of range')", False),
    ("match-cast-lie", "ValueError('shape mismatch')", False),         # not the run-time match_cast check
    ("match-cast-lie", "ValueError('match_cast error: 3 vs 4')", True),
])
def test_a_silent_acceptance_script_passes_only_on_a_diagnostic_of_its_kind(tmp_path, kind, raised, passes):
    import subprocess
    from hirfuzz.dialects.reproducer import rejection_check

    class Call:
        what = f"{kind} on outer (hand-picked)"
    body = (["class TVMError(Exception):", "    pass"] if raised and raised.startswith("TVMError") else []) + [
        f"raise {raised}" if raised else "pass"]
    (tmp_path / "repro.py").write_text("\n".join(rejection_check(body, Call(), kind)) + "\n")
    proc = subprocess.run([sys.executable, str(tmp_path / "repro.py")], capture_output=True, text=True, timeout=60)
    assert (proc.returncode == 0) == passes, proc.stderr
    if not passes and raised is None:
        assert "AssertionError: TVM accepted" in proc.stderr


def test_a_silent_acceptances_inputs_are_small_constants_inside_their_domain():
    from hirfuzz.dialects.reproducer import CallInput, ViolatingCall, array_code, with_small_inputs
    indices = np.array([[0, 2, 1, 3]] * 8, dtype="int64")
    call = ViolatingCall("take", ["{p}0", "{p}1"], {}, 1, None,
                         [CallInput(0, [64, 64], "float32", np.random.default_rng(0).uniform(-4, 4, (64, 64)).astype("float32")),
                          CallInput(1, [8, 4], "int64", indices)], "arity on take")
    small = with_small_inputs(call)
    codes = [array_code(i.value) for i in small.inputs]
    assert codes[1] == "np.full([8, 4], 0, dtype='int64')", codes
    assert codes[0].startswith("np.full([64, 64], -3.9") and len(codes[0]) < 60, codes
    assert array_code(indices).startswith("np.array([[0, 2, 1, 3]")  # values that differ stay as they are


def test_a_second_op_hitting_a_saved_finding_is_listed_with_its_own_checked_script(specs, tmp_path):
    """One finding per missing check: bool subtract and float32 right_shift hitting the
    finding bool add filed (all typed by InferTypeBroadcastArith) are hits, listed in
    finding.json's hit_by and the bug report, each short script kept beside the first
    (also-<op>.py) once it has failed alone as its own hit did: right_shift fails elsewhere
    in TVM than add, and its script is checked against its own failure. A script that does
    not fail as its hit did (here: a hit whose failure is said to be another) is not kept,
    and hit_by says why; bool add again is counted, nothing more written."""
    import threading
    from types import SimpleNamespace
    from hirfuzz.campaign.cases import CaseMaker
    from hirfuzz.campaign.coordinator import Settings
    from hirfuzz.campaign.findings import FindingTables
    from hirfuzz.campaign.known import KnownFindings
    from hirfuzz.campaign.oracles.disruptive import DisruptiveOracle
    from hirfuzz.campaign.outdir import OutDir
    from hirfuzz.campaign.report import HIT_BY_HEADING
    from hirfuzz.dialects import dialect_info
    info = dialect_info("relax")
    maker = CaseMaker(Settings(mode="disruptive"), specs, info, None)
    cases, findings = [], []
    for index, (op, dtype) in enumerate((("add", "bool"), ("subtract", "bool"), ("right_shift", "float32"),
                                         ("maximum", "bool"), ("add", "bool"))):
        graph, v = single_op(specs, op, [(2, 3), (2, 3)], dtype)
        case = maker.make_case(index, graph, {"violation": v.to_json(), "plan": violation_plan(v, graph, specs)})
        (_cls, _stage), answer = run_case(specs, graph, v)
        cases.append(case)
        findings.append(DisruptiveOracle().judge(specs, case, answer).finding)
    assert len({f.signature for f in findings}) == 1
    assert findings[2].extra["fails_at"]["where"] != findings[0].extra["fails_at"]["where"]
    findings[3].extra["fails_at"] = dict(findings[3].extra["fails_at"], said="not what it says")
    tables = FindingTables(OutDir(tmp_path), 0, SimpleNamespace(), KnownFindings(frozenset(), {}),
                           threading.RLock(), lambda line: None)
    settings = Settings(mode="disruptive")
    host = SimpleNamespace(info=info, specs=specs, settings=settings, tvm_version=lambda: "0.27", out=tmp_path)
    tables.reductions = SimpleNamespace(pending={}, host_of=lambda finding: host, threads=[],
                                        stop=threading.Event(), changed=threading.Event())
    report = "### add on bool\n\n**Expected:** a diagnostic\n\n**Actual:** InternalError\n\n```python\nx = 1\n\n\ny = 2\n```\n"
    tables.file_finding("findings", findings[0], {"repro.py": "print()\n", "bug-report.md": report})
    for case, finding in zip(cases[1:], findings[1:]):
        tables.record(case, finding, "")
    assert tables.reductions.threads, "the checks run among the reductions' threads"
    for thread in tables.reductions.threads:
        thread.join(300)
    tables.write_hits()  # as the next checkpoint does
    folder = tmp_path / findings[0].path
    saved = json.loads((folder / "finding.json").read_text())
    assert saved["hits"] == 5
    hits = saved["extra"]["hit_by"]
    assert [(h["op"], h["dtype"]) for h in hits] == [("add", "bool"), ("subtract", "bool"),
                                                     ("right_shift", "float32"), ("maximum", "bool")]
    assert [h.get("script") for h in hits] == [None, "also-subtract.py", "also-right_shift.py", None]
    assert "not where or as the fuzzer saw it" in hits[3]["script_not_kept"]
    assert sorted(p.name for p in folder.iterdir()) == ["also-right_shift.py", "also-subtract.py", "bug-report.md",
                                                        "finding.json", "repro.py"]
    assert "relax.op.subtract(" in (folder / "also-subtract.py").read_text()
    written = (folder / "bug-report.md").read_text()
    assert (f"{HIT_BY_HEADING} add on bool; subtract on bool (also-subtract.py); right_shift on float32 "
            "(also-right_shift.py); maximum on bool. One missing check: each got past InferTypeBroadcastArith") in written
    assert written.replace(written.split("\n")[4] + "\n\n", "", 1) == report  # the line added, nothing else changed


@pytest.mark.parametrize("op", ["add", "equal", "isinf", "max"])
def test_a_bool_program_tvm_types_but_cannot_build_is_a_known_bug_never_a_violation(specs, op):
    """Relax types these ops on bool, and the build fails only where TIR or LLVM codegen
    lacks a branch for bool (kDLBool, its own type code in 0.27: codegen_llvm.cc's
    arithmetic and comparisons, tirx/op/op.cc's isinf and min_value): a valid program, so
    the spec lists bool under tvm_bugs and disruptive mode never draws it as unsupported."""
    assert "bool" in specs.ops[op].bug_dtypes() and "bool" not in unsupported_dtypes(specs.ops[op])
    g, v = single_op(specs, op, [(2, 3), (2, 3)] if op in ("add", "equal") else [(2, 3)], "bool")
    if op == "max":
        v.attrs = {"axis": [1], "keepdims": False}
    (cls, stage), answer = run_case(specs, g, v)
    assert (cls, stage, answer["exc_type"]) == ("poor-diagnostic", "build", "InternalError"), answer.get("message")
