"""One finding per root cause, against real TVM: two programs that show one TVM failure at
different result sites become one finding once reduced; a pass TVM runs inside another is
blamed when it fails alike alone."""
import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.script import ir as I, relax as R, tirx as T

from conftest import run_hirfuzz
from hirfuzz.campaign.cases import Case
from hirfuzz.campaign.coordinator import Campaign
from hirfuzz.campaign.judge import Judge
from hirfuzz.campaign.reducer import _PREFIXES, _name_passes
from hirfuzz.campaign.settings import Settings
from hirfuzz.campaign.titles import title
from hirfuzz.core.finding import Finding, crash_signature, root_key
from hirfuzz.core.graph import Graph
from hirfuzz.core.passes import load_catalog, parse_sequence
from hirfuzz.dialects import dialect_info, load_dialect
from hirfuzz.dialects.base import IllFormedAfterPass, failure_key, innermost_failing
from hirfuzz.dialects.relax.passes import apply_passes
from hirfuzz.protocol import make_config
from hirfuzz.worker import run_config
from test_findings import WRONG_EXP, plant

# exp's reference is off by 0.5 (a planted spec mistake: TVM's exp is then "wrong");
# negative is right, and a program of negative(exp(x)) differs first at negative
WRONG_EXP_AND_NEGATIVE = WRONG_EXP + """
  - name: negative
    traits: [elementwise]
    inputs: [x]
    dtypes: [float32]
    reference: np.negative(x)
"""


@pytest.mark.slow
def test_two_result_sites_of_one_wrong_operator_are_one_finding_with_an_alias(tmp_path):
    specs = plant(tmp_path, WRONG_EXP_AND_NEGATIVE)
    out = tmp_path / "out"
    # seed 1: of 4 cases, some differ first at exp, one (negative of exp) at negative. Without
    # --no-avoid-found, exp's one-operator finding would steer the later cases off exp.
    proc = run_hirfuzz("--specs", specs, "--iterations", 4, "--ops", 2, "--no-pass-fuzz", "--no-features",
                       "--no-avoid-found", "--jobs", 1, "--seed", 1, "--out", out, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    [finding] = summary["findings"]
    assert finding["signature"] == "wrong-result|reference|llvm|exp:float32" and finding["hits"] >= 2
    aliases = json.loads((out / "aliases.json").read_text())
    assert aliases == {"wrong-result|reference|llvm|negative:float32": finding["signature"]}
    saved = json.loads((out / finding["path"] / "finding.json").read_text())
    [merged] = [m for m in saved["extra"]["merged"] if m["signature"] == "wrong-result|reference|llvm|negative:float32"]
    # nothing lost: the joined finding's reduced reproducer is kept, and still fails
    repro = out / merged["path"] / "repro.py"
    assert subprocess.run([sys.executable, repro], capture_output=True, timeout=300).returncode == 1


@I.ir_module
class PrivateFunctionByClosure:
    """RemoveUnusedOutputs (TVM 0.27) leaves main calling f1, which it removed: its first
    constituent, RemoveUnusedOutputsInner, already does; the CanonicalizeBindings after it
    is not at fault."""
    @R.function(private=True)
    def f1(p0: R.Tensor((2, 4), dtype="float32"), p1: R.Tensor((6, 4), dtype="float32")) -> R.Tuple(
            R.Tensor((2, 4), dtype="float32"), R.Tensor((6, 4), dtype="float32")):
        with R.dataflow():
            gv: R.Tensor((2, 4), dtype="float32") = R.exp(p0)
            gv1: R.Tensor((6, 4), dtype="float32") = R.negative(p1)
            R.output(gv, gv1)
        return (gv, gv1)

    @R.function(private=True)
    def get_f1() -> R.Callable((R.Tensor((2, 4), dtype="float32"), R.Tensor((6, 4), dtype="float32")), R.Tuple(
            R.Tensor((2, 4), dtype="float32"), R.Tensor((6, 4), dtype="float32")), True):
        cls = PrivateFunctionByClosure
        return cls.f1

    @R.function
    def main(x0: R.Tensor((2, 4), dtype="float32"), x1: R.Tensor((6, 4), dtype="float32")) -> R.Tuple(
            R.Tensor((2, 4), dtype="float32"), R.Tensor((6, 4), dtype="float32")):
        cls = PrivateFunctionByClosure
        with R.dataflow():
            lv = cls.get_f1()
            lv1 = lv(x0, x1)
            lv2 = lv1[0]
            lv3 = lv1[1]
            gv = (lv2, lv3)
            R.output(gv)
        return gv


def ill_formed_after(module, names: list[str]) -> IllFormedAfterPass:
    config = {**make_config(passes=[{"name": n, "args": {}} for n in names]), "opt_level": 1}
    with pytest.raises(IllFormedAfterPass) as caught:
        apply_passes(module, config)
    return caught.value


def test_a_wrapper_pass_is_searched_for_the_pass_within_it_that_fails_alike():
    assert [p.info.name for p in relax.transform.RemoveUnusedOutputs().passes] == [
        "RemoveUnusedOutputsInner", "CanonicalizeBindings", "DeadCodeElimination"]
    failure = ill_formed_after(PrivateFunctionByClosure, ["RemoveUnusedOutputs"])
    assert failure.pass_name == "RemoveUnusedOutputs" and failure.inner_passes == ["RemoveUnusedOutputsInner"]
    assert "is not defined" in str(failure.cause)
    # CanonicalizeBindings alone leaves the module well-formed: not blamed
    relax.analysis.well_formed(relax.transform.CanonicalizeBindings()(PrivateFunctionByClosure))


def test_the_search_descends_through_nested_wrappers_to_the_innermost():
    outer = tvm.transform.Sequential([relax.transform.ToNonDataflow(), relax.transform.RemoveUnusedOutputs()],
                                     name="Outer")
    run = lambda mod, pass_: tvm.transform.Sequential([pass_])(mod)  # noqa: E731 - as passes.apply_passes runs one
    with tvm.transform.PassContext(opt_level=1):
        with pytest.raises(Exception) as caught:
            relax.analysis.well_formed(run(PrivateFunctionByClosure, outer))
        key = failure_key(caught.value, ill_formed=True)
        assert innermost_failing(outer, PrivateFunctionByClosure, key, run, relax.analysis.well_formed) == [
            "RemoveUnusedOutputs", "RemoveUnusedOutputsInner"]
        # another failure than the one searched for: nothing within is blamed for it
        assert innermost_failing(outer, PrivateFunctionByClosure, "ill-formed|something else", run,
                                 relax.analysis.well_formed) == []


@I.ir_module
class MatchCastThroughIf:
    """A program of a Relax campaign (an hour on TVM 0.27, its finding 0016, reduced by
    hirfuzz): LegalizeOps makes relu a call_tir of symbolic shape (n2, n2, n6, n3), which
    TVM 0.27's CanonicalizeBindings (its CanonicalizeTIRVariables) then declares as the
    static (2, 2, 6, 3) the match_cast of x0 implies, while the PrimFunc's signature still
    implies the symbolic shape: the module is ill-formed. Every pattern-rewrite pass runs
    CanonicalizeBindings inside itself (passes.yaml `runs_inside_it`) and fails alike."""
    @R.function
    def main(x0: R.Tensor((2, 2, 6, 3), dtype="float64")) -> R.Tensor((2, 2, 6, 3), dtype="float64"):
        n2 = T.int64()
        n6 = T.int64()
        n3 = T.int64()
        gv: R.Tensor((n2, n2, n6, n3), dtype="float64") = R.match_cast(x0, R.Tensor((n2, n2, n6, n3), dtype="float64"))
        gv1: R.Shape([n2, n2, n6, n3]) = R.shape_of(gv)
        gv2: R.Tensor((4,), dtype="int64") = R.shape_to_tensor(gv1)
        gv3: R.Tensor((), dtype="int64") = R.sum(gv2, axis=None, keepdims=False)
        gv4: R.Tensor((), dtype="bool") = R.greater_equal(gv3, R.const(4, "int64"))
        if gv4:
            gv5: R.Tensor((n2, n2, n6, n3), dtype="float64") = R.nn.relu(gv)
            gv7: R.Tensor(dtype="float64", ndim=4) = gv5
        else:
            gv6: R.Tensor((2, 2, 6, 3), dtype="float64") = R.zeros(R.shape([2, 2, 6, 3]), dtype="float64")
            gv7: R.Tensor(dtype="float64", ndim=4) = gv6
        gv8: R.Tensor((2, 2, 6, 3), dtype="float64") = R.match_cast(gv7, R.Tensor((2, 2, 6, 3), dtype="float64"))
        return gv8


@I.ir_module
class MatmulOfSumWithBroadcast:
    """ExpandMatmulOfSum (TVM 0.27) splits matmul(a, c0 + c) into matmul(a, c0) + matmul(a, c)
    although c is broadcast in the sum: matmul(a, c) has no reduction axis to match, and the
    pass raises. CanonicalizeBindings and EliminateCommonSubexpr, which it runs inside
    itself, leave the program well-formed: the pass keeps the blame."""
    @R.function
    def main(a: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((1,), dtype="float32")) -> R.Tensor((2, 2), dtype="float32"):
        with R.dataflow():
            s: R.Tensor((3, 2), dtype="float32") = R.add(R.const(np.ones((3, 2), "float32")), c)
            m: R.Tensor((2, 2), dtype="float32") = R.matmul(a, s)
            R.output(m)
        return m


def judged(specs, module, steps: list[dict]) -> Finding:
    """The finding a campaign's judge makes of `module` failing after `steps` in a worker."""
    config = {**make_config(passes=steps), "opt_level": 1}
    reply = run_config(load_dialect("relax"), module, config, [], run=False)
    case = Case(index=0, graph=Graph(), inputs=[], runnable=False, expected=[], gen_ms=0.0, configs=[config])
    finding = Judge(specs, {}).classify(case, {**reply, "others": []}).finding
    _name_passes(finding, steps)  # as the reducer names and keys it
    finding.extra["root_key"] = root_key(finding.signature, _PREFIXES)
    return finding


def titled(finding: Finding) -> str:
    return title(dataclasses.asdict(finding), Graph(), dialect_info("relax"))


def test_pattern_rewrite_passes_that_fail_as_the_pass_inside_them_are_one_root_cause(specs):
    catalog = load_catalog()
    wrappers = ["RemoveRedundantReshape", "AdjustMatmulOrder"]
    found = {name: judged(specs, MatchCastThroughIf, parse_sequence(f"LegalizeOps,{name}", catalog))
             for name in wrappers}
    alone = judged(specs, MatchCastThroughIf, parse_sequence("LegalizeOps,CanonicalizeBindings", catalog))
    assert alone.extra["innermost_pass"] == "CanonicalizeTIRVariables"
    for name, finding in found.items():
        assert finding.extra["blamed_pass"] == name
        assert finding.extra["inner_passes"] == ["CanonicalizeBindings", "CanonicalizeTIRVariables"]
        assert finding.extra["root_key"] == alone.extra["root_key"]
        assert titled(finding) == titled(alone) == "[Bug][Relax] CanonicalizeTIRVariables: leaves an ill-formed module"
    # before the catalog named what they run inside them: each wrapper its own root cause
    bare = {name: judged(specs, MatchCastThroughIf, [{"name": "LegalizeOps", "args": {}}, {"name": name, "args": {}}])
            for name in wrappers}
    assert all("innermost_pass" not in finding.extra for finding in bare.values())
    assert len({finding.extra["root_key"] for finding in bare.values()}) == 2


def test_a_campaign_files_the_failure_of_the_pass_inside_two_wrappers_once(specs, tmp_path):
    catalog = load_catalog()
    first, second = (judged(specs, MatchCastThroughIf, parse_sequence(f"LegalizeOps,{name}", catalog))
                     for name in ("RemoveRedundantReshape", "AdjustMatmulOrder"))
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0), specs, progress=False)
    first.confirmed = True
    campaign.tables.file_finding("findings", first, {"repro.py": ""})
    campaign.tables.record(campaign.maker.make_case(0), second, "log")
    assert list(campaign.tables.findings) == [first.signature] and first.hits == 2
    assert not campaign.tables.reductions.pending


def test_a_pass_whose_inner_passes_do_not_fail_alike_keeps_the_blame(specs):
    steps = parse_sequence("ExpandMatmulOfSum", load_catalog())
    assert steps[0]["runs_inside_it"] == ["CanonicalizeBindings", "EliminateCommonSubexpr"]
    finding = judged(specs, MatmulOfSumWithBroadcast, steps)
    assert finding.stage == "passes" and "reduction length" in finding.message
    assert "innermost_pass" not in finding.extra
    assert titled(finding).startswith("[Bug][Relax] ExpandMatmulOfSum"), titled(finding)


@I.ir_module
class InlinedIntoMatchCasts:
    """bench17/relax-after-k4 finding 0018 (TVM 0.27, reduced by hirfuzz): once LegalizeOps
    has made its calls call_tir, CanonicalizeBindings leaves main ill-formed (a call_tir's
    declared output no longer matches its PrimFunc, after the match_casts' refinement).
    InlinePrivateFunctions canonicalizes each function it inlines into (inline_functions.cc),
    so inlining f1 fails alike: one root cause, the inner pass's."""
    @R.function(private=True)
    def f1(p1_0: R.Tensor((3,), dtype="float64"), p5_0: R.Tensor((), dtype="float64")) -> R.Tensor((3,), dtype="float64"):
        with R.dataflow():
            lv: R.Tensor((3,), dtype="float64") = R.atan2(p1_0, p5_0)
            gv: R.Tensor((3,), dtype="float64") = lv
            R.output(gv)
        return gv

    @R.function
    def main(x0: R.Tensor((4, 1), dtype="int32"), x1: R.Tensor((3,), dtype="float64"), x2: R.Tensor((4, 6), dtype="uint64"), x5: R.Tensor((), dtype="float64")) -> R.Tuple(R.Tensor((), dtype="uint64"), R.Tensor((4, 1), dtype="int32"), R.Tensor((3,), dtype="float64")):
        n4 = T.int64()
        n6 = T.int64()
        n1 = T.int64()
        cls = InlinedIntoMatchCasts
        gv: R.Tensor((n4, n6), dtype="uint64") = R.match_cast(x2, R.Tensor((n4, n6), dtype="uint64"))
        if n4 >= 1:
            gv1: R.Tensor((), dtype="uint64") = R.mean(x2, axis=[-2, -1], keepdims=False)
            gv3: R.Tensor((), dtype="uint64") = gv1
        else:
            gv2: R.Tensor((), dtype="uint64") = R.zeros(R.shape([]), dtype="uint64")
            gv3: R.Tensor((), dtype="uint64") = gv2
        with R.dataflow():
            lv: R.Shape([4, 1]) = R.shape_of(x0)
            lv1: R.Shape([n4, n1]) = R.match_cast(lv, R.Shape([n4, n1]))
            lv2: R.Tensor((n4, n1), dtype="int32") = R.reshape(x0, R.shape([n4, n1]))
            lv3: R.Tensor((4, 1), dtype="int32") = R.match_cast(lv2, R.Tensor((4, 1), dtype="int32"))
            lv4: R.Tensor((n4, 1), dtype="int32") = R.match_cast(lv3, R.Tensor((n4, 1), dtype="int32"))
            lv5: R.Tensor((n4, 1), dtype="int32") = R.sign(lv4)
            lv6: R.Tensor((4, 1), dtype="int32") = R.match_cast(lv5, R.Tensor((4, 1), dtype="int32"))
            lv7: R.Tensor((3,), dtype="float64") = cls.f1(x1, x5)
            gv4: R.Tensor((4, 1), dtype="int32") = lv6
            gv5: R.Tensor((3,), dtype="float64") = lv7
            R.output(gv4, gv5)
        return (gv3, gv4, gv5)


def test_inlining_a_function_fails_as_the_canonicalization_it_runs_inside_it(specs):
    catalog = load_catalog()
    inlined = judged(specs, InlinedIntoMatchCasts, parse_sequence("LegalizeOps,InlinePrivateFunctions", catalog))
    alone = judged(specs, InlinedIntoMatchCasts, parse_sequence("LegalizeOps,CanonicalizeBindings", catalog))
    assert inlined.extra["blamed_pass"] == "InlinePrivateFunctions"
    assert inlined.extra["inner_passes"][0] == "CanonicalizeBindings", inlined.extra
    assert inlined.extra["root_key"] == alone.extra["root_key"]


@I.ir_module
class PrivateFunctionAsValue:
    """bench15/after finding 0017 (TVM 0.27, reduced by hirfuzz): InlinePrivateFunctions
    inlines get_f1 into main and drops f1, which get_f1 returned as a value: main is left
    naming a GlobalVar the module no longer has."""
    @R.function(private=True)
    def f1(p0_0: R.Tensor((3,), dtype="float16")) -> R.Tensor((3,), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((3,), dtype="float16") = R.tan(p0_0)
            gv: R.Tensor((3,), dtype="float16") = lv
            R.output(gv)
        return gv

    @R.function(private=True)
    def get_f1() -> R.Callable((R.Tensor((3,), dtype="float16"),), R.Tensor((3,), dtype="float16"), True):
        cls = PrivateFunctionAsValue
        return cls.f1

    @R.function
    def main(x0: R.Tensor((3,), dtype="float16")) -> R.Tensor((3,), dtype="float16"):
        cls = PrivateFunctionAsValue
        gv: R.Callable((R.Tensor((3,), dtype="float16"),), R.Tensor((3,), dtype="float16"), True) = cls.get_f1()
        gv1: R.Tensor((3,), dtype="float16") = gv(x0)
        return gv1


@I.ir_module
class OtherPrivateFunctionAsValue:
    """PrivateFunctionAsValue with other names and another operator: the same bug."""
    @R.function(private=True)
    def g(p: R.Tensor((2, 2), dtype="float32")) -> R.Tensor((2, 2), dtype="float32"):
        y: R.Tensor((2, 2), dtype="float32") = R.cos(p)
        return y

    @R.function(private=True)
    def get_g() -> R.Callable((R.Tensor((2, 2), dtype="float32"),), R.Tensor((2, 2), dtype="float32"), True):
        cls = OtherPrivateFunctionAsValue
        return cls.g

    @R.function
    def main(x: R.Tensor((2, 2), dtype="float32")) -> R.Tensor((2, 2), dtype="float32"):
        cls = OtherPrivateFunctionAsValue
        f: R.Callable((R.Tensor((2, 2), dtype="float32"),), R.Tensor((2, 2), dtype="float32"), True) = cls.get_g()
        out: R.Tensor((2, 2), dtype="float32") = f(x)
        return out


@I.ir_module
class CalleeOutsideDataflow:
    """bench15/after finding 0024 (TVM 0.27, reduced by hirfuzz): InlinePrivateFunctions
    inlines f1, whose binding is outside any dataflow block, into main's dataflow block by
    splitting it in two; lv, defined in the first half and used in the second, is not made
    an output of the first: a DataflowVar used outside the block that defines it."""
    @R.function(private=True)
    def f1(p2_0: R.Tensor((2, 6, 1), dtype="int32")) -> R.Tensor((2, 6, 1), dtype="bool"):
        gv: R.Tensor((2, 6, 1), dtype="bool") = R.isinf(p2_0)
        return gv

    @R.function
    def main(x0: R.Tensor((4, 3, 5, 2), dtype="uint64"), x2: R.Tensor((2, 6, 1), dtype="int32")) -> R.Tuple(R.Tensor((2, 6, 1), dtype="bool"), R.Tensor((4, 3, 5, 2), dtype="uint64")):
        cls = CalleeOutsideDataflow
        with R.dataflow():
            lv: R.Tensor((4, 3, 5, 2), dtype="uint64") = R.cumprod(x0, axis=3, dtype=None, exclusive=False)
            lv1: R.Tensor((2, 6, 1), dtype="bool") = cls.f1(x2)
            lv2: R.Tensor((4, 3, 5, 2), dtype="uint64") = R.add(lv, x0)
            gv: R.Tensor((2, 6, 1), dtype="bool") = lv1
            gv1: R.Tensor((4, 3, 5, 2), dtype="uint64") = lv2
            R.output(gv, gv1)
        return (gv, gv1)


def test_one_pass_leaving_a_global_var_or_a_dataflow_var_undefined_is_two_root_causes(specs):
    """The root key keeps the kind of variable TVM's well-formedness check names: it checks
    a GlobalVar against the module and a Var or DataflowVar against its scope, and here the
    two are two bugs of InlinePrivateFunctions (which functions it drops; how it splits a
    dataflow block), fixed apart. The program's own names are left out: another program of
    the first bug has its root key."""
    steps = parse_sequence("InlinePrivateFunctions", load_catalog())
    as_value, other, outside = (judged(specs, module, steps) for module in
                                (PrivateFunctionAsValue, OtherPrivateFunctionAsValue, CalleeOutsideDataflow))
    assert as_value.extra["root_key"] == "root|ill-formed|InlinePrivateFunctions|GlobalVar ? is not defined."
    assert other.extra["root_key"] == as_value.extra["root_key"]
    assert outside.extra["root_key"] == "root|ill-formed|InlinePrivateFunctions|DataflowVar ? is not defined."


@I.ir_module
class StaticShapeThroughSymbolicSin:
    """bench15/after finding 0003 (TVM 0.27, reduced by hirfuzz): TVM 0.27's
    CanonicalizeBindings drops the match_cast of sin(lv) to the static shape and types the
    call static, although its operator infers the symbolic shape of lv; its output passes
    well_formed, and the build fails later (CodeGenVM), or ConvertLayout (finding 0006), at
    their own frames."""
    @R.function
    def main(x0: R.Tensor((6, 1, 4, 2), dtype="float64"), x2: R.Tensor((2, 5), dtype="uint32")) -> R.Tuple(R.Tensor((5, 2), dtype="uint32"), R.Tensor((6, 1, 4, 2), dtype="bool")):
        n6 = T.int64()
        n4 = T.int64()
        n2 = T.int64()
        n5 = T.int64()
        with R.dataflow():
            lv: R.Tensor((n6, 1, n4, n2), dtype="float64") = R.match_cast(x0, R.Tensor((n6, 1, n4, n2), dtype="float64"))
            lv1: R.Tensor((n6, 1, n4, n2), dtype="float64") = R.sin(lv)
            lv2: R.Tensor((6, 1, 4, 2), dtype="float64") = R.match_cast(lv1, R.Tensor((6, 1, 4, 2), dtype="float64"))
            gv: R.Tensor((6, 1, 4, 2), dtype="float64") = lv2
            R.output(gv)
        gv1: R.Tensor((n2, n5), dtype="uint32") = R.match_cast(x2, R.Tensor((n2, n5), dtype="uint32"))
        if n2 >= 1:
            gv2: R.Tensor((5, 2), dtype="uint32") = R.permute_dims(x2, axes=[1, 0])
            gv4: R.Tensor((5, 2), dtype="uint32") = gv2
        else:
            gv3: R.Tensor((5, 2), dtype="uint32") = R.zeros(R.shape([5, 2]), dtype="uint32")
            gv4: R.Tensor((5, 2), dtype="uint32") = gv3
        with R.dataflow():
            lv3: R.Tensor((6, 1, 4, 2), dtype="bool") = R.equal(gv, x0)
            gv5: R.Tensor((6, 1, 4, 2), dtype="bool") = lv3
            R.output(gv5)
        return (gv4, gv5)


def test_the_projected_check_finds_the_call_canonicalize_bindings_types_narrower_than_inferred():
    """tools/root_causes.py --narrowing (narrowing.narrowed_calls): the call TVM 0.27's CanonicalizeBindings leaves
    typed static where its operator infers a symbolic shape is found, in its output only;
    CalleeOutsideDataflow's canonical form, whose types are all as inferred, has none."""
    from hirfuzz.dialects.relax.narrowing import narrowed_calls
    canonical = relax.transform.CanonicalizeBindings()
    relax.analysis.well_formed(canonical(StaticShapeThroughSymbolicSin))  # TVM's check holds
    assert narrowed_calls(StaticShapeThroughSymbolicSin) == []
    assert narrowed_calls(canonical(StaticShapeThroughSymbolicSin)) == [
        'relax.sin: R.Tensor((6, 1, 4, 2), dtype="float64") where it infers R.Tensor((n6, 1, n4, n2), dtype="float64")']
    assert narrowed_calls(canonical(CalleeOutsideDataflow)) == []


@I.ir_module
class PreluOnASymbolicChannel:
    """topi's prelu asks for a constant channel count (get_const_int, topi/nn/elemwise.py),
    so legalizing it on a symbolic one raises in TVM's Python, no C++ frame on the way:
    bench18 relax-now filed it twice, keyed `pass:LegalizeOps` where LegalizeOps was drawn
    and `stage:build` where relax.build legalized it."""
    @R.function
    def main(x: R.Tensor((2, "c"), "float32"), a: R.Tensor(("c",), "float32")) -> R.Tensor((2, "c"), "float32"):
        y = R.nn.prelu(x, a, axis=1)
        return y


def test_a_fault_raised_in_tvms_python_is_one_root_cause_in_a_pass_and_in_the_build():
    def reply_under(passes: list[dict]) -> dict:
        config = {**make_config(passes=passes), "opt_level": 1}
        return run_config(load_dialect("relax"), PreluOnASymbolicChannel, config, [], run=False)
    as_pass, in_build = reply_under([{"name": "LegalizeOps", "args": {}}]), reply_under([])
    assert (as_pass["stage"], in_build["stage"]) == ("passes", "build")
    keys = [root_key(crash_signature(r["stage"], r["exc_type"], r["message"], r["traceback"]), _PREFIXES,
                     r.get("failed_pass"), r["traceback"]) for r in (as_pass, in_build)]
    assert keys[0] == keys[1], keys
    assert "|tvm/topi/nn/elemwise.py:prelu>get_const_int|" in keys[0], keys


def test_an_op_named_by_its_whole_repr_in_a_tvm_error_is_named_by_its_name():
    """TVM 0.27 names an op in an error by its repr, ~400 characters of argument
    descriptions before what went wrong; the finding's message, cut shorter, lost TVM's
    words (bench24 relax-now 0046: CheckCollapseShape's own sentence was never seen)."""
    from hirfuzz.protocol import error_reply
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([2, 3], "float32"))
    y = relax.Var("y", relax.TensorType([4], "float32"))
    with bb.function("main", [x, y]):
        try:
            bb.emit(relax.op.add(x, y))
        except ValueError as exc:  # TVM 0.27 raises a broadcast error as one
            raised = exc
        else:
            raise AssertionError("adding (2, 3) and (4,) did not fail")
        bb.emit_func_output(x)
    assert 'name="relax.add"' in str(raised) and "description=" in str(raised)
    message = error_reply("passes", raised)["message"]
    assert message.startswith("In Op(relax.add), ") and "not broadcastable" in message
    assert "description=" not in message
