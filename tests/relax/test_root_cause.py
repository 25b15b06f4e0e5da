"""One finding per root cause, against real TVM: two programs that show one TVM failure at
different result sites become one finding once reduced; a pass TVM runs inside another is
blamed when it fails alike alone."""
import json
import subprocess
import sys

import pytest
import tvm
from tvm import relax
from tvm.script import ir as I, relax as R

from conftest import run_hirfuzz
from hirfuzz.dialects.base import IllFormedAfterPass, failure_key, innermost_failing
from hirfuzz.dialects.relax.passes import apply_passes
from hirfuzz.protocol import make_config
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
    # seed 1: case 0 differs first at exp, case 1 (negative of exp) at negative
    proc = run_hirfuzz("--specs", specs, "--iterations", 2, "--ops", 2, "--no-pass-fuzz", "--no-features",
                       "--jobs", 1, "--seed", 1, "--out", out, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    [finding] = summary["findings"]
    assert finding["signature"] == "wrong-result|reference|llvm|exp:float32" and finding["hits"] == 2
    aliases = json.loads((out / "aliases.json").read_text())
    assert aliases == {"wrong-result|reference|llvm|negative:float32": finding["signature"]}
    saved = json.loads((out / finding["path"] / "finding.json").read_text())
    [merged] = saved["extra"]["merged"]
    assert merged["case"] == 1 and merged["signature"] == "wrong-result|reference|llvm|negative:float32"
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
