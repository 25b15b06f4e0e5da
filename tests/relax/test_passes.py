"""The compilation matrix: the pass catalog, pass-order fuzzing with planted faulty passes,
executors and targets."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tvm.relax.transform as relax_transform

from conftest import ROOT, run_hirfuzz, the_one_ill_formed_finding
from reproducer_rules import check_maintainer_files, final_error, run_alone
from hirfuzz.campaign.verify import check_finding_scripts
from hirfuzz.core.finding import Finding
from hirfuzz.errors import HirfuzzError
from hirfuzz.core.passes import (draw_sequence, load_catalog, minimise_sequence, parse_sequence,
                            unmet_requirements)

PLANTED = ROOT / "tests" / "relax" / "planted" / "planted.yaml"
# --versions none: these campaigns check passes, not version triage (tests/relax/test_versions.py),
# and need not run each confirmed finding again under every Relax release set up on the machine
SMALL = ["--only-ops", "add,multiply,exp,abs,subtract,sum,concat", "--no-progress", "--jobs", "1",
         "--versions", "none"]


def test_builtin_catalog_has_40_real_passes():
    catalog = load_catalog()
    assert len(catalog.entries) >= 40
    for entry in catalog.entries.values():
        assert hasattr(relax_transform, entry.name), entry.name
    proc = run_hirfuzz("--list-passes")
    assert proc.returncode == 0 and len(proc.stdout.split()) >= 40


def test_drawn_sequences_respect_requirements():
    catalog = load_catalog()
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(300):
        seq = draw_sequence(catalog, rng, max_len=8)
        assert unmet_requirements(seq, catalog) is None
        assert all(catalog.entries[s["name"]].draw for s in seq)
        seen.update(s["name"] for s in seq)
    assert {"FuseOps", "FuseTIR", "LegalizeOps"} <= seen  # chains behind requirements do appear


def test_minimise_sequence_keeps_only_what_fails():
    catalog = load_catalog()
    seq = parse_sequence("FoldConstant,LegalizeOps,AnnotateTIROpPattern,CanonicalizeBindings,FuseOps", catalog)
    # fails while FuseOps is in the sequence; FuseOps needs AnnotateTIROpPattern needs LegalizeOps
    minimal = minimise_sequence(seq, lambda s: any(x["name"] == "FuseOps" for x in s), catalog)
    assert [s["name"] for s in minimal] == ["LegalizeOps", "AnnotateTIROpPattern", "FuseOps"]


@pytest.mark.parametrize("text,needle", [
    ("passes:\n  - {name: X, import: 'a:b', colour: red}\n", "unknown key"),
    ("passes:\n  - {name: X}\n", "needs 'import"),
    ("passes:\n  - {name: X, import: 'nocolon'}\n", "package.module:factory"),
    ("passes:\n  - {name: X, import: 'a:b', args: {k: 3}}\n", "non-empty list"),
    ("passes:\n  - {name: X, import: 'a:b', requires: [magic]}\n", "no pass in the catalog establishes"),
    ("passes:\n  - {name: X, import: 'a:b', requires: [p], establishes: [q]}\n"
     "  - {name: Y, import: 'a:c', requires: [q], establishes: [p]}\n", "precondition cycle"),
    ("passes: [\n", "not valid YAML"),
    ("passes:\n  - {name: FoldConstant, import: 'a:b'}\n", "already in the catalog"),
])
def test_malformed_user_catalog_is_rejected_clearly(tmp_path, text, needle):
    f = tmp_path / "mine.yaml"
    f.write_text(text)
    with pytest.raises(HirfuzzError, match=needle):
        load_catalog([f])
    proc = run_hirfuzz("--passes", f, "--list-passes")
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr
    assert str(f) in proc.stderr


def test_unknown_pass_in_pinned_sequence(tmp_path):
    proc = run_hirfuzz("--pass-seq", "FoldConstant,FrobnicateOps", "--iterations", 1, "--out", tmp_path / "o")
    assert proc.returncode == 2 and "FrobnicateOps" in proc.stderr
    proc = run_hirfuzz("--pass-seq", "FuseTIR", "--iterations", 1, "--out", tmp_path / "o")
    assert proc.returncode == 2 and "requires" in proc.stderr


def planted_campaign(tmp_path, seq, n=4, seed=0):
    out = tmp_path / "out"
    proc = run_hirfuzz("--passes", PLANTED, "--pass-seq", seq, "--iterations", n, "--ops", 8, "--out", out,
                       "--seed", seed, *SMALL)
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "summary.json").read_text())


def test_planted_constant_change_is_found_with_minimal_sequence(tmp_path):
    s = planted_campaign(tmp_path, "FoldConstant,PlantedChangeConstant,CanonicalizeBindings")
    assert len(s["findings"]) == 1  # one bug, however many results show it
    f = s["findings"][0]
    assert f["kind"] == "wrong-result" and f["oracle"] == "pass-order"
    assert f["message"].startswith("after PlantedChangeConstant():")
    assert s["unconfirmed"] == []  # its reproducer fails alone, importing the user's pass
    # the short script a maintainer reads, and hirfuzz's harness beside it, fail alike alone
    repro, report = check_maintainer_files(tmp_path / "out", f, PLANTED.parent)
    assert "@I.ir_module" in repro and "change_constant()" in repro
    assert "np.testing.assert_allclose" in repro or "np.testing.assert_array_equal" in repro  # exact results exactly
    assert report.splitlines()[0].startswith("### [Bug][Relax] PlantedChangeConstant changes the result of ")
    assert "- well_formed before and after every pass: True" in report
    assert f["triage"]["class"] == "wrong result" and f["triage"]["component"] == "pass"
    assert "PlantedChangeConstant" in f["triage"]["evidence"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    folder = tmp_path / "out" / f["path"]
    harness, short = run_alone(sys.executable, folder, "check.py", env), run_alone(sys.executable, folder, "repro.py", env)
    assert harness.returncode == 1 and "HIRFUZZ-REPRO mismatch" in harness.stdout, harness.stdout + harness.stderr
    assert short.returncode == 1 and final_error(short) == "AssertionError", short.stderr
    # the campaign's check runs both and needs both to fail: a repro.py that no longer fails
    # (its check gone) is not a reproduced finding, though check.py alone still fails
    finding = Finding(**json.loads((folder / "finding.json").read_text()))
    assert check_finding_scripts(folder, finding, timeout_s=120).reproduced
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    lines = (broken / "repro.py").read_text().splitlines()
    (broken / "repro.py").write_text("\n".join(ln for ln in lines if not ln.lstrip().startswith("np.testing.")) + "\n")
    outcome = check_finding_scripts(broken, finding, timeout_s=120)
    assert not outcome.reproduced and "repro.py: finished without an error" in outcome.observed, outcome.observed


@pytest.mark.slow  # the constant-change plant guards the same path in the quick suite
def test_planted_binding_drop_is_found(tmp_path):
    s = planted_campaign(tmp_path, "PlantedDropBinding", n=6)
    assert s["findings"], s
    assert all(f["oracle"] == "pass-order" and "PlantedDropBinding" in f["message"] for f in s["findings"])


def test_planted_raise_on_a_closure_is_a_crash_naming_the_pass(tmp_path):
    # closures come from the lowering plans, which put some subgraphs in local functions
    s = planted_campaign(tmp_path, "CanonicalizeBindings,PlantedRaiseOnClosure", n=8, seed=3)
    crashes = [f for f in s["findings"] if f["kind"] == "crash"]
    assert crashes and crashes[0]["oracle"] == "pass-order" and crashes[0]["stage"] == "passes"
    assert crashes[0]["message"].startswith("after PlantedRaiseOnClosure():")
    # reduced as far as the failure allows: one closure left, no other lowering feature, and
    # the short script shows it (LambdaLift before the build, as TVM requires)
    plan = json.load(open(tmp_path / "out" / crashes[0]["path"] / "case.json"))["lowering"]["plan"]
    assert [c["kind"] for c in plan["functions"]] == ["local"], plan
    assert not (plan["node_features"] or plan["dynamic_params"] or plan["plain_nodes"]), plan
    repro, _ = check_maintainer_files(tmp_path / "out", crashes[0], PLANTED.parent)
    assert "relax.transform.LambdaLift()(mod)" in repro and "raise_on_closure()" in repro
    assert crashes[0]["triage"]["class"] == "crash on a valid program" and crashes[0]["triage"]["component"] == "pass"


def test_an_ill_formed_pass_output_is_blamed_on_that_pass_not_on_what_trips_over_it(tmp_path):
    # PlantedUndefineVar leaves a variable used that nothing defines; CanonicalizeBindings
    # passes it on and the build crashes on it (an InternalError at codegen): without a check
    # after each pass, the build would be blamed, under one signature per variable name
    s = planted_campaign(tmp_path, "PlantedUndefineVar,CanonicalizeBindings", n=4)
    f = the_one_ill_formed_finding(s, "pass-order|ill-formed|PlantedUndefineVar|Var ? is not defined.",
                                   "PlantedUndefineVar left an ill-formed module: ValueError: Var ")
    # hirfuzz's harness checks every pass's output too, and says well_formed before and after
    repro = subprocess.run([sys.executable, tmp_path / "out" / f["path"] / "check.py"], capture_output=True, text=True,
                           cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(PLANTED.parent)})
    assert repro.returncode == 1
    assert "well_formed before PlantedUndefineVar: True" in repro.stdout
    assert "well_formed after PlantedUndefineVar: False: Var " in repro.stdout
    assert "HIRFUZZ-REPRO stage=ill_formed_after_pass error=ValueError" in repro.stdout
    assert "well_formed after PlantedUndefineVar" in (tmp_path / "out" / f["path"] / "bug-report.md").read_text()
    # the maintainer's script shows the pass and the check that fails, nothing of hirfuzz's
    repro, report = check_maintainer_files(tmp_path / "out", f, PLANTED.parent)
    assert repro.rstrip().endswith("relax.analysis.well_formed(mod)  # raises: the pass left an ill-formed module")
    assert report.splitlines()[0].startswith("### [Bug][Relax] PlantedUndefineVar: leaves an ill-formed module (Var ")
    short = run_alone(sys.executable, tmp_path / "out" / f["path"], "repro.py", os.environ)
    assert short.returncode == 1 and short.stderr.splitlines()[-1].startswith("ValueError: Var ")
    assert (f["triage"]["class"], f["triage"]["component"]) == ("ill-formed pass output", "pass")
    assert f["triage"]["evidence"].startswith("well_formed held before PlantedUndefineVar and failed after it")
    grouped = (tmp_path / "out" / "report.md").read_text()
    assert "### ill-formed pass output: pass (1)" in grouped and "[Bug][Relax] PlantedUndefineVar" in grouped


def test_a_pass_module_only_on_pythonpath_is_found_confirmed_and_replayed(tmp_path):
    # the user's catalog sits in one folder and their module in another, on PYTHONPATH
    # only: the reproducer check runs without that PYTHONPATH and must still import it
    catalog = tmp_path / "catalog" / "mine.yaml"
    catalog.parent.mkdir()
    catalog.write_text(PLANTED.read_text())
    out = tmp_path / "out"
    env = {"PYTHONPATH": str(PLANTED.parent)}
    proc = run_hirfuzz("--passes", catalog, "--pass-seq", "PlantedDropBinding", "--iterations", 6, "--ops", 8,
                       "--out", out, *SMALL, env=env)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["findings"] and s["unconfirmed"] == [], s["unconfirmed"]
    folder = out / s["findings"][0]["path"]
    harness = open(os.path.join(folder, "check.py")).read()
    assert f"planted_passes (from {PLANTED.parent})" in harness  # the header says what it needs
    for f in s["findings"]:
        if f.get("reduced_from"):
            # the message describes the reduced program, not the one first generated
            graph = json.load(open(out / f["path"] / "case.json"))["graph"]
            named = f["message"].split("(", 2)[2].split(")")[0]  # "after P(): result i (op:dtype) ..."
            op, dtype = named.split(":")
            assert any(n.get("op") == op and n.get("dtype") == dtype for n in graph["nodes"]), f["message"]
    replayed = subprocess.run([sys.executable, "-m", "hirfuzz.replay", out], capture_output=True, text=True,
                              cwd=ROOT, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert replayed.returncode == 1 and "0 fail differently" in replayed.stdout, replayed.stdout

    # a reproducer that cannot import the pass is hirfuzz's problem, never "no longer fails"
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)
    for script in ("check.py", "repro.py"):
        text = (moved / script).read_text()
        (moved / script).write_text(text.replace(repr(str(PLANTED.parent)), repr(str(tmp_path / "gone"))))
    replayed = subprocess.run([sys.executable, "-m", "hirfuzz.replay", moved], capture_output=True, text=True,
                              cwd=ROOT, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert replayed.returncode == 1 and replayed.stdout.startswith("cannot-run"), replayed.stdout
    assert "No module named 'planted_passes'" in replayed.stdout


def test_a_pass_module_that_cannot_be_found_is_one_clear_error(tmp_path):
    catalog = tmp_path / "mine.yaml"
    catalog.write_text(PLANTED.read_text())
    proc = run_hirfuzz("--passes", catalog, "--list-passes")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cannot find module 'planted_passes'" in proc.stderr and str(catalog) in proc.stderr


def test_executors_agree_on_valid_programs(tmp_path):
    out = tmp_path / "out"
    proc = run_hirfuzz("--executors", "compiled,unoptimised", "--no-pass-fuzz", "--iterations", 6, "--ops", 8,
                       "--out", out, "--seed", 4, "--no-progress", "--jobs", 1)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["executors"] == ["vm", "compiled", "unoptimised"]
    assert s["compared"] == 6
    assert [f for f in s["findings"] if f["oracle"] == "executor"] == []


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="a GPU is present")
def test_cuda_is_skipped_with_one_line_without_a_gpu(tmp_path):
    proc = run_hirfuzz("--target", "llvm,cuda", "--iterations", 1, "--ops", 3, "--out", tmp_path / "o",
                       "--no-progress", "--jobs", 1)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("skipping the cuda target") == 1
    alone = run_hirfuzz("--target", "cuda", "--iterations", 1, "--out", tmp_path / "p")
    assert alone.returncode == 2 and "no usable target" in alone.stderr


@pytest.mark.slow  # two planted campaigns; --known matching itself is guarded by test_findings.py's known-findings test
def test_a_known_pass_order_finding_is_counted_once_its_sequence_is_minimised(tmp_path):
    """A pass-order wrong result is keyed on its minimal sequence: a later campaign that
    knows it (--known) minimises the sequence it drew, then counts a hit and files nothing."""
    seq = "FoldConstant,PlantedChangeConstant,CanonicalizeBindings"
    first = planted_campaign(tmp_path, seq)
    out = tmp_path / "again"
    proc = run_hirfuzz("--passes", PLANTED, "--pass-seq", seq, "--iterations", 4, "--ops", 8, "--out", out,
                       "--seed", 0, "--known", tmp_path / "out", *SMALL)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["findings"] == [] and s["unconfirmed"] == [] and s["pending"] == []
    assert list(s["known_hits_by_signature"]) == [first["findings"][0]["signature"]]
    assert s["known_hits"] == first["findings"][0]["hits"]
