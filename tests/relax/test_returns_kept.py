"""A pass must not contradict what main returns (issue 27, one finding per root cause): the
Relax dialect checks each pass's output against the type main returned before the sequence
(dialects/relax/returns.py), so that a pass that mistranslates an operator is blamed where
it does, and a finding that trips over it downstream is keyed as that operator's failure
alone (reduction_steps.BlameOperatorAlone). Against real TVM 0.27: DecomposeOpsForTraining
decomposes a layer_norm over a leading axis into a computation of another shape."""
import json

import pytest
import tvm
from tvm import relax
from tvm.script import ir as I, relax as R, tirx as T

from conftest import run_hirfuzz
from hirfuzz.core.finding import RETURNS_CHANGED, ROOT, ill_formed_key
from hirfuzz.dialects.base import IllFormedAfterPass
from hirfuzz.dialects.relax import returns
from hirfuzz.dialects.relax.passes import apply_passes

DECOMPOSE = {"passes": [{"name": "DecomposeOpsForTraining", "args": {}}], "opt_level": 1}


@I.ir_module
class LeadingAxisLayerNorm:
    @R.function
    def main(x: R.Tensor((2, 1), "float16"), gamma: R.Tensor((2,), "float16"), beta: R.Tensor((2,), "float16")):
        with R.dataflow():
            y = R.nn.layer_norm(x, gamma, beta, axes=[0], epsilon=1e-5)
            R.output(y)
        return y


@I.ir_module
class TrailingAxisLayerNorm:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), gamma: R.Tensor((3,), "float32"), beta: R.Tensor((3,), "float32")):
        with R.dataflow():
            y = R.nn.layer_norm(x, gamma, beta, axes=[-1], epsilon=1e-5)
            R.output(y)
        return y


@I.ir_module
class Symbolic:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        n = T.int64()
        with R.dataflow():
            y = R.match_cast(x, R.Tensor((n, 3), "float32"))
            z = R.exp(y)
            R.output(z)
        return z


def test_a_pass_changing_the_shape_main_returns_is_blamed_with_what_changed():
    with pytest.raises(IllFormedAfterPass) as caught:
        apply_passes(LeadingAxisLayerNorm, DECOMPOSE)
    said = str(caught.value.cause)
    assert said.startswith(f"{RETURNS_CHANGED} (shape): main returned R.Tensor((2, 1)"), said
    assert "now R.Tensor((2, 2)" in said
    # blamed on the pass inside the wrapper that does it, as any ill-formed output is
    assert caught.value.inner_passes == ["MutateOpsForTraining"]
    # keyed without the program's types: another rank or size is the same fault
    assert ill_formed_key(said) == f"{RETURNS_CHANGED} (shape)"


def test_a_pass_that_keeps_or_refines_what_main_returns_passes_the_check():
    out = apply_passes(TrailingAxisLayerNorm, DECOMPOSE)  # decomposed, and the same shape
    assert "layer_norm" not in out.script()
    # a refinement (the symbolic shape made static by the passes) is no contradiction
    refined = apply_passes(Symbolic, {"passes": [{"name": "CanonicalizeBindings", "args": {}}], "opt_level": 1})
    assert (str(Symbolic["main"].ret_ty), str(refined["main"].ret_ty)) == (
        'R.Tensor(dtype="float32", ndim=2)', 'R.Tensor((2, 3), dtype="float32")')
    was = relax.TensorType([tvm.tirx.Var("n", "int64"), 3], "float32")
    returns.check_returns_kept({"main": was}, TrailingAxisLayerNorm)  # (2, 3) may be (n, 3): no complaint
    with pytest.raises(ValueError, match=r"\(dtype\)"):
        returns.check_returns_kept({"main": relax.TensorType([2, 3], "float16")}, TrailingAxisLayerNorm)
    with pytest.raises(ValueError, match=r"\(rank\)"):
        returns.check_returns_kept({"main": relax.TensorType([6], "float32")}, TrailingAxisLayerNorm)


def test_the_worker_s_words_are_the_ones_the_root_key_reads():
    assert returns.RETURNS_CHANGED == RETURNS_CHANGED


def test_a_downstream_failure_is_keyed_as_its_operator_alone_and_every_script_reproduces(tmp_path):
    # seed 1 draws a layer_norm over axes [0, 2] inside an If that hides its new shape from
    # main's declared result: the program is built, and the VM's shape check fails at run
    # time; the layer_norm alone changes what main returns
    out = tmp_path / "out"
    proc = run_hirfuzz("--mode", "strict", "--only-ops", "nn.layer_norm,less,multiply",
                       "--pass-seq", "DecomposeOpsForTraining", "--iterations", 40, "--ops", 3, "--seed", 1,
                       "--out", out, "--no-progress", "--jobs", 1, "--versions", "none")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unconfirmed"] == [], summary["unconfirmed"]
    # keyed as the layer_norm alone, it takes that operator's second key, and joins the
    # finding the decomposition's broadcast error made of the layer_norm (one fault)
    saved = [json.loads((out / row["path"] / "finding.json").read_text()) for row in summary["findings"]]
    members = [m["path"] for f in saved for m in f["extra"].get("merged", [])]
    keyed = [path for path in [row["path"] for row in summary["findings"]] + members
             if json.loads((out / path / "finding.json").read_text())["extra"].get("keyed_as")]
    assert len(keyed) == 1, [row["message"][:120] for row in summary["findings"]]
    [head] = [f for f in saved if any(m["path"] == keyed[0] for m in f["extra"].get("merged", []))]
    assert head["extra"]["operator_key"] == "root|pass-operator|MutateOpsForTraining|nn.layer_norm"
    folder = out / keyed[0]
    finding = json.loads((folder / "finding.json").read_text())
    assert finding["stage"] == "run" and "MatchShape" in finding["detail"], finding["message"]
    assert finding["extra"]["ops"] == 2
    assert finding["extra"]["keyed_as"]["operator"] == "nn.layer_norm"
    assert finding["extra"]["root_key"] == f"{ROOT}|ill-formed|MutateOpsForTraining|{RETURNS_CHANGED} (shape)"
    assert finding["extra"]["reduction"]["steps"]["operator_alone"]["calls"] >= 1
    # a merged member keeps its scripts, confirmed alone before it joined; the report is its head's
    assert (folder / "repro.py").is_file() and (folder / "check.py").is_file() and finding["confirmed"]
