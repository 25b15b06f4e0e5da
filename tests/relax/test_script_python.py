"""A finding's scripts run on every Python hirfuzz supports (3.10 on), whatever Python the
worker that printed its module ran on (issue 24, item 6).

TVM's printer spells a global function's symbolic dimensions as PEP 695 type parameters
(`def main[n1](...)`, after `from __future__ import annotations`) when it runs on Python
3.12 or later: such a module pasted into check.py was a SyntaxError, and repro.py needed
Python 3.12. The end-to-end test runs its scripts under a Python 3.10 interpreter that has
apache-tvm and numpy, named by HIRFUZZ_TEST_PYTHON310 (and its worker under
HIRFUZZ_TEST_PYTHON312, or this Python if it is 3.12 or later, where there is one).
"""
import ast
import json
import types
from pathlib import Path

import pytest
from tvm import relax, tirx
from tvm.runtime import script_printer

from conftest import run_hirfuzz
from pythons import python_with_tvm
from hirfuzz.campaign.verify import check_finding_scripts
from hirfuzz.core.finding import Finding
from hirfuzz.dialects.relax.text import module_to_script

PLANTED_DIR = Path(__file__).resolve().parent / "planted"
PASS = "PlantedRaiseOnSymbolicParam"


def _symbolic_main():
    """A module whose main takes a tensor of symbolic shape, with a constant (the printer's
    metadata) in it."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([tirx.Var("n1", "int64"), 4], "float32"))
    with bb.function("main", [x]):
        y = bb.match_cast(x, relax.TensorType([3, 4], "float32"))
        bb.emit_func_output(bb.emit(relax.op.add(y, relax.const([[1.5] * 4] * 3, "float32"))))
    return bb.get()


def test_a_module_printed_on_python_312_is_written_in_python_310_syntax(monkeypatch):
    # the printer decides on the Python it runs on: make it see 3.12, as a worker under 3.12 does
    monkeypatch.setattr(script_printer, "sys", types.SimpleNamespace(version_info=(3, 12, 1)))
    mod = _symbolic_main()
    as_312_prints_it = mod.script()
    assert "from __future__ import annotations" in as_312_prints_it and "def main[n1](" in as_312_prints_it
    text, consts = module_to_script(mod)  # parsed back and compared with the module inside
    assert "__future__" not in text and 'n1 = TypeVar("n1")' in text and "def main(x:" in text, text
    ast.parse(text, feature_version=(3, 10))
    assert len(consts) == 1 and "_c[0]" in text


def test_the_scripts_of_a_finding_with_symbolic_shapes_run_under_python_310(tmp_path):
    """hirfuzz itself runs on 3.10 with its workers on 3.12, as the issue's campaign did; the
    finding's scripts then run alone under 3.10."""
    py310, py312 = python_with_tvm((3, 10)), python_with_tvm((3, 12))
    if py310 is None or py312 is None:
        pytest.skip("this machine has no Python 3.10 or 3.12 to make an environment from "
                    "(or name them: HIRFUZZ_TEST_PYTHON310, HIRFUZZ_TEST_PYTHON312)")
    catalog = tmp_path / "mine.yaml"
    catalog.write_text(f'passes:\n  - {{name: {PASS}, import: "planted_passes:raise_on_symbolic_param"}}\n')
    out = tmp_path / "out"
    proc = run_hirfuzz("--tvm-python", py312, "--passes", catalog, "--pass-seq", PASS, "--iterations", 6,
                       "--ops", 4, "--seed", 0, "--only-ops", "add,multiply,exp,abs,subtract", "--jobs", 1,
                       "--no-progress", "--out", out, env={"PYTHONPATH": str(PLANTED_DIR)}, python=py310)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unconfirmed"] == [], summary["unconfirmed"]
    (row,) = summary["findings"]
    folder = out / row["path"]  # (absolute or relative to the campaign folder)
    assert json.loads((folder / "case.json").read_text())["lowering"]["plan"]["dynamic_params"]
    # the bug report names the Python TVM ran under, not the one running hirfuzz
    assert "- Python 3.12." in (folder / "bug-report.md").read_text()
    harness, short = (folder / "check.py").read_text(), (folder / "repro.py").read_text()
    assert "Needs: Python 3.10 or later, apache-tvm 0.27 (Relax) and numpy" in harness
    for text in (harness, short):
        assert "__future__" not in text and "TypeVar(" in text and "def main(x" in text
        ast.parse(text, feature_version=(3, 10))
    # both scripts alone under 3.10, checked as the campaign and replay check them
    finding = Finding(**json.loads((folder / "finding.json").read_text()))
    outcome = check_finding_scripts(folder, finding, timeout_s=120, python=py310)
    assert outcome.reproduced, outcome.observed
    assert outcome.observed == "check.py: HIRFUZZ-REPRO stage=passes error=ValueError; repro.py: raised ValueError"
    for output in (outcome.harness_output, outcome.output):
        assert "ValueError: PlantedRaiseOnSymbolicParam: cannot handle symbolic dimensions" in output, output
