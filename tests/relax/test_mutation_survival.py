"""tools/mutation_survival.py (issue 33 item 1): what it measures of a mutant is what the
rewrite did: a function rewrite changes the function structure and a mutant-only pass
failure is counted against its mutator, where an algebraic rewrite leaves the structure."""
from __future__ import annotations

import numpy as np
import pytest
from tvm.script import ir as I, relax as R

import mutation_survival as survival
from hirfuzz.dialects import load_dialect
from hirfuzz.dialects.relax.mutators import MUTATORS, prepare_for_build
from hirfuzz.worker import _structural


@I.ir_module
class TwoGlobals:
    @R.function(private=True)
    def f(x: R.Tensor((4,), "float32")) -> R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32")):
        return (R.exp(x), R.abs(x))

    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        t = TwoGlobals.f(x)
        a = t[0]
        b = R.add(a, y)
        return b


TRAITS = {"add": ["elementwise", "commutative", "associative"]}
SEQ = [{"name": "RemoveUnusedOutputs", "args": {}}]


def survey(name: str) -> survival.Row:
    dialect = load_dialect("relax")
    mutant = MUTATORS[name].apply(TwoGlobals, np.random.default_rng(0), TRAITS)
    row = survival.Row()
    note = lambda stage: None  # noqa: E731 - no process to outlive here
    original = survival._stages(dialect, TwoGlobals, SEQ, prepare_for_build, note)
    survival._compare(row, 0, original, survival._stages(dialect, mutant, SEQ, prepare_for_build, note), SEQ,
                      _structural()[0])
    return row, mutant


def test_a_function_rewrite_survives_normalisation_and_its_mutant_only_pass_failure_is_counted():
    row, mutant = survey("wrap_return")
    assert "global:nullary-returning-function" in survival.shape_tokens(mutant)
    assert "global:nullary-returning-function" not in survival.shape_tokens(TwoGlobals)
    assert survival.structure(mutant)[0] == survival.structure(TwoGlobals)[0] + 1  # one more global
    assert row.survives["canon"] == 1 and row.structure["canon"] == 1 and row.structure["lifted"] == 1
    # TVM 0.27's RemoveUnusedOutputs rewrites f, used only as a value by get_f, and leaves
    # get_f naming the old f: the original goes through the pass, the mutant does not
    assert [(index, name) for index, name, _ in row.mutant_only_errors] == [(0, "RemoveUnusedOutputs")]
    assert "is not defined" in row.mutant_only_errors[0][2]


def test_an_algebraic_rewrite_leaves_the_function_structure_as_it_was():
    row, mutant = survey("commute")
    assert survival.structure(mutant) == survival.structure(TwoGlobals)
    assert row.survives["canon"] == 1 and row.structure["canon"] == 0
    assert row.mutant_only_errors == []


@pytest.mark.slow  # builds every mutant of a few graphs; the mutators' own tests (test_mutate.py) stay quick
def test_the_soundness_check_runs_every_mutator_and_finds_each_sound(tmp_path):
    """tools/check_mutations.py, on a few graphs: every mutant it makes is well-formed, builds
    and agrees with the reference wherever the original does (a rewrite that changed a
    result would be an error here)."""
    import json
    import subprocess
    import sys

    from conftest import ROOT
    out = tmp_path / "records.jsonl"
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "check_mutations.py"), "--graphs", "2", "--jobs", "1",
                           "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2 and "harness crash" not in proc.stdout + proc.stderr
    applied = {(r["seed"], name): v for r in records for name, v in r["variants"].items()
               if name.startswith("mutate:") and v["applies"]}
    assert len({name for _, name in applied}) >= 10, sorted(applied)
    unsound = {key: v for key, v in applied.items() if not (v["wf"] and v["built"] and v["equal"]) or "error" in v}
    assert not unsound, unsound
