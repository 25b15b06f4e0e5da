"""Calls typed narrower than their operator infers (dialects/relax/narrowing.py), against real
TVM 0.27: CanonicalizeBindings leaves them where it drops a match_cast it made trivial, and
`widened` puts that match_cast back, which makes the failures they cause later go away."""
import json
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.script import ir as I, relax as R, tirx as T

from hirfuzz.dialects.relax.narrowing import first_narrowing_step, narrowed_calls, widened


@I.ir_module
class SinCastBackToStatic:
    """sin and exp of a static tensor cast to symbolic dims, cast back to static, shaped as
    campaign findings are (a first match_cast binds n, m and an `if` on n keeps it):
    CanonicalizeBindings types both calls static (n, m are 2, 3) and drops the casts back.
    The narrowed bindings are a DataflowVar (lv1) and a Var in an If branch (y)."""
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")):
        n = T.int64()
        m = T.int64()
        g: R.Tensor((n, m), dtype="float32") = R.match_cast(x, R.Tensor((n, m), dtype="float32"))
        with R.dataflow():
            lv: R.Tensor((n, m), dtype="float32") = R.match_cast(x, R.Tensor((n, m), dtype="float32"))
            lv1: R.Tensor((n, m), dtype="float32") = R.sin(lv)
            lv2: R.Tensor((2, 3), dtype="float32") = R.match_cast(lv1, R.Tensor((2, 3), dtype="float32"))
            lv3: R.Tensor((2, 3), dtype="float32") = R.add(lv2, x)
            R.output(lv3)
        if n >= 1:
            y: R.Tensor((n, m), dtype="float32") = R.exp(g)
            y1: R.Tensor((2, 3), dtype="float32") = R.match_cast(y, R.Tensor((2, 3), dtype="float32"))
            y3: R.Tensor((2, 3), dtype="float32") = y1
        else:
            y2: R.Tensor((2, 3), dtype="float32") = R.zeros(R.shape([2, 3]), dtype="float32")
            y3: R.Tensor((2, 3), dtype="float32") = y2
        return (lv3, y3)


def bindings_by_name(func) -> dict:
    """Each binding of `func`, in any block, If branches included, by its variable's name."""
    found = {}

    def visit(expr):
        if isinstance(expr, relax.SeqExpr):
            found.update((b.var.name, b) for block in expr.blocks for b in block.bindings)
    relax.analysis.post_order_visit(func, visit)
    return found


def canonical(mod):
    return relax.transform.CanonicalizeBindings()(mod)


def run_on_llvm(mod, *args):
    executable = relax.build(relax.transform.LambdaLift()(mod), target="llvm")
    outputs = relax.VirtualMachine(executable, tvm.cpu())["main"](*[tvm.runtime.tensor(a) for a in args])
    return [o.numpy() for o in outputs]


def test_canonicalize_bindings_leaves_narrowed_calls_and_the_input_has_none():
    assert narrowed_calls(SinCastBackToStatic) == []
    assert sorted(narrowed_calls(canonical(SinCastBackToStatic))) == [
        'relax.exp: R.Tensor((2, 3), dtype="float32") where it infers R.Tensor((n, m), dtype="float32")',
        'relax.sin: R.Tensor((2, 3), dtype="float32") where it infers R.Tensor((n, m), dtype="float32")']


def test_widened_puts_back_a_match_cast_of_the_call_typed_as_inferred():
    narrow = canonical(SinCastBackToStatic)
    wide = widened(narrow)
    relax.analysis.well_formed(wide)
    assert narrowed_calls(wide) == []
    bindings = bindings_by_name(wide["main"])
    for name, kind in (("lv1", relax.DataflowVar), ("y", relax.Var)):
        wide_var = bindings[f"{name}_wide"].var
        assert type(wide_var) is kind  # of its block's kind: the block's outputs stay as they were
        assert str(wide_var.ty) == 'R.Tensor((n, m), dtype="float32")'
        cast = bindings[name]
        assert isinstance(cast, relax.MatchCast) and cast.value.same_as(wide_var)
        assert str(cast.var.ty) == 'R.Tensor((2, 3), dtype="float32")'


def test_widened_computes_what_the_program_computed():
    x = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    got = run_on_llvm(widened(canonical(SinCastBackToStatic)), x)
    expected = run_on_llvm(SinCastBackToStatic, x)
    np.testing.assert_allclose(got[0], np.sin(x) + x, rtol=1e-5)
    np.testing.assert_allclose(got[1], np.exp(x), rtol=1e-5)
    for wide, original in zip(got, expected):
        np.testing.assert_allclose(wide, original, rtol=1e-6)


def test_the_narrowed_program_fails_to_build_where_the_widened_one_runs():
    """The hand-written program shows the family's VM codegen failure on its own."""
    with pytest.raises(tvm.error.InternalError, match="CodeGenVM cannot emit this Relax operator directly"):
        run_on_llvm(canonical(SinCastBackToStatic), np.zeros((2, 3), "float32"))


def test_widened_changes_nothing_without_a_narrowed_call():
    tvm.ir.assert_structural_equal(widened(SinCastBackToStatic), SinCastBackToStatic)


@I.ir_module
class AsinhThroughSymbolicDims:
    """bench19 relax-now finding 0029 (TVM 0.27, reduced by hirfuzz): after CanonicalizeBindings
    types asinh static where it infers (n5, n2, n3), FoldConstant's emit_te raises "only
    supports Tensor that has ShapeExpr shape"."""
    @R.function
    def main(x0: R.Tensor((5, 2, 3), dtype="float32")) -> R.Tensor((5, 2, 3), dtype="float32"):
        n5 = T.int64()
        n2 = T.int64()
        n3 = T.int64()
        with R.dataflow():
            lv: R.Tuple(R.Tensor((5, 2, 3), dtype="float32")) = (x0,)
            lv1: R.Tensor((5, 2, 3), dtype="float32") = lv[0]
            lv2: R.Tensor((n5, n2, n3), dtype="float32") = R.match_cast(lv1, R.Tensor((n5, n2, n3), dtype="float32"))
            lv3: R.Tensor((n5, n2, n3), dtype="float32") = R.asinh(lv2)
            lv4: R.Tensor((5, 2, 3), dtype="float32") = R.match_cast(lv3, R.Tensor((5, 2, 3), dtype="float32"))
            gv: R.Tensor((5, 2, 3), dtype="float32") = lv4
            R.output(gv)
        gv1: R.Tensor((n5, n2, n3), dtype="float32") = R.match_cast(gv, R.Tensor((n5, n2, n3), dtype="float32"))
        if n5 >= 1:
            gv2: R.Tensor((5, 2, 3), dtype="float32") = R.log_add_exp(gv, x0)
            gv4: R.Tensor((5, 2, 3), dtype="float32") = gv2
        else:
            gv3: R.Tensor((5, 2, 3), dtype="float32") = R.zeros(R.shape([5, 2, 3]), dtype="float32")
            gv4: R.Tensor((5, 2, 3), dtype="float32") = gv3
        with R.dataflow():
            lv5: R.Tensor((5, 2, 3), dtype="float32") = R.nn.log_softmax(gv4, axis=0)
            gv5: R.Tensor((5, 2, 3), dtype="float32") = lv5
            R.output(gv5)
        return gv5


def test_widening_after_canonicalize_bindings_clears_a_campaigns_later_failure():
    """The counterfactual tools/narrowing_effect.py makes: the failure goes away with the
    narrowing alone undone (everything else CanonicalizeBindings did stays)."""
    narrow = canonical(AsinhThroughSymbolicDims)
    assert len(narrowed_calls(narrow)) == 1
    with tvm.transform.PassContext(opt_level=3):
        with pytest.raises(AssertionError, match="emit_te now only supports Tensor that has ShapeExpr shape"):
            relax.transform.FoldConstant()(narrow)
        folded = relax.transform.FoldConstant()(widened(narrow))
    relax.analysis.well_formed(folded)


@I.ir_module
class ConditionalDimension:
    """A dimension spelled with T.if_then_else: in TVM 0.27 a TIR call is a relax.Call of an
    Op (prim.if_then_else) with no type inference, met when the walk enters the type
    (bench19 relax-now finding 0031's program has one)."""
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(dtype="float32", ndim=1):
        n = T.int64()
        y: R.Tensor((T.if_then_else(n > 1, n, 1),), dtype="float32") = R.reshape(x, R.shape([T.if_then_else(n > 1, n, 1)]))
        return y


def test_a_tir_call_in_a_type_is_no_operator_call_to_check():
    assert narrowed_calls(ConditionalDimension) == []
    tvm.ir.assert_structural_equal(widened(ConditionalDimension), ConditionalDimension)


def test_widening_as_a_step_of_a_sequence_clears_the_failure_where_it_stands():
    """tools/narrowing_effect.py's "after" run: the widening step (a user factory) inserted
    right after CanonicalizeBindings, the sequence run as a campaign runs it."""
    from hirfuzz.dialects.relax.passes import apply_passes
    from hirfuzz.protocol import make_config
    from narrowing_effect import with_widening_after
    config = {**make_config(passes=[{"name": "CanonicalizeBindings", "args": {}}, {"name": "FoldConstant", "args": {}}]),
              "opt_level": 3}
    with pytest.raises(AssertionError, match="emit_te now only supports"):
        apply_passes(AsinhThroughSymbolicDims, config)
    widening = with_widening_after(config, 0)
    assert [step["name"] for step in widening["passes"]] == ["CanonicalizeBindings", "WidenNarrowedCalls", "FoldConstant"]
    assert narrowed_calls(apply_passes(AsinhThroughSymbolicDims, widening)) == []


def test_the_first_narrowing_step_is_the_one_that_narrows_not_one_that_keeps_a_narrowed_call():
    """A call narrowed in a pass's input and left so is none of that pass's doing (a lowered
    program may have one TVM cannot prove equal to its inference: bench19 relax-now 0019's
    split), so it is no narrowing of the pass."""
    normalize, canonicalize = ({"name": name, "args": {}} for name in ("Normalize", "CanonicalizeBindings"))
    assert first_narrowing_step(canonical(SinCastBackToStatic), [normalize], opt_level=3) is None
    narrowing = first_narrowing_step(SinCastBackToStatic, [normalize, canonicalize, normalize], opt_level=3)
    assert (narrowing.position, len(narrowing.calls)) == (1, 2)
    assert narrowed_calls(narrowing.input) == [] and len(narrowed_calls(narrowing.output)) == 2


def test_a_narrowed_program_is_one_a_user_can_write():
    """TVM's parser takes the narrowed program back as it is (its well-formedness check
    included) and FoldConstant fails on it alone: the later failure needs no narrowing pass
    (tools/narrowing_effect.py's "parses back" column)."""
    from narrowing_effect import parses_back
    narrow = canonical(AsinhThroughSymbolicDims)
    assert parses_back(narrow) == "strictly"
    reparsed = tvm.script.from_source(narrow.script())
    assert len(narrowed_calls(reparsed)) == 1
    with tvm.transform.PassContext(opt_level=3):
        with pytest.raises(AssertionError, match="emit_te now only supports Tensor that has ShapeExpr shape"):
            relax.transform.FoldConstant()(reparsed)


def test_narrowing_effect_finds_a_campaign_finding_caused_by_its_narrowing():
    """tools/narrowing_effect.py end to end on a saved finding (bench19 relax-now 0029, its
    case.json as saved): CanonicalizeBindings narrows asinh, FoldConstant then fails, and
    with the widening step after CanonicalizeBindings the configuration passes."""
    from conftest import ROOT
    from narrowing_effect import measure, verdict
    row = measure(ROOT / "tests" / "relax" / "data" / "narrowing-finding")
    assert (row["narrowing"]["pass"], row["narrowing"]["left"]) == ("CanonicalizeBindings", [])
    assert row["before"]["status"] == "fails" and "emit_te now only supports" in row["before"]["message"]
    assert row["after"]["status"] == "passes"
    assert verdict(row) == "CLEARED"


NARROWING_FINDINGS = Path(__file__).parent / "data" / "narrowing.json"


def test_a_crash_that_goes_away_once_the_narrowing_is_checked_is_keyed_on_the_narrowing_pass(tmp_path):
    """Three saved findings of one campaign finished by a real one (reduction_steps.NarrowingCause):
    FoldConstant's type mismatch and the build's CodeGenVM, each after CanonicalizeBindings
    narrowed a call, and ConvertLayout after RemoveRedundantReshape narrowed one through the
    CanonicalizeBindings it runs inside itself, pass with the widening right after the
    narrowing pass, and are one finding keyed on CanonicalizeBindings' narrowing;
    topi::reverse_sequence after FoldBatchnormToConv2D's narrowing fails alike with it, and
    keeps its own key, as does topi's prelu, which fails in its own code (bench26 relax seed
    13 0039, 0022 and 0026; bench27 seed 16 0002 and a member of seed 18's 0016)."""
    from conftest import put_pending, run_hirfuzz
    out = tmp_path / "out"
    args = ["--seed", 3, "--iterations", 1, "--ops", 2, "--only-ops", "abs", "--no-pass-fuzz", "--jobs", 1,
            "--versions", "none", "--no-progress", "--out", out]
    assert run_hirfuzz(*args).returncode == 0
    saved = json.loads(NARROWING_FINDINGS.read_text())
    for name in ("fold_constant", "build", "reverse_sequence", "pattern_rewrite", "prelu"):
        put_pending(out, f"crash-{name}", saved[name]["finding"], saved[name]["case"])
    proc = run_hirfuzz(*args)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unconfirmed"] == []
    folders = {}  # root key -> the finding's folder
    for row in summary["findings"]:
        folders[json.loads((out / row["path"] / "finding.json").read_text())["extra"]["root_key"]] = out / row["path"]
    assert len(folders) == len(summary["findings"]) == 3, folders.keys()
    assert any("topi::reverse_sequence" in key for key in folders), folders.keys()
    assert any("prelu>get_const_int" in key for key in folders), folders.keys()
    folder = folders["root|narrowing|CanonicalizeBindings"]
    narrowing = json.loads((folder / "finding.json").read_text())
    assert narrowing["extra"]["narrowed_by"] == {"pass": "CanonicalizeBindings", "position": 0, "inside": None}
    assert "**Likely root:** `CanonicalizeBindings` types calls narrower" in (folder / "bug-report.md").read_text()
    aliases = json.loads((out / "aliases.json").read_text())
    assert {narrowing["signature"], *aliases} == {saved[name]["finding"]["signature"]
                                                 for name in ("fold_constant", "build", "pattern_rewrite")}
