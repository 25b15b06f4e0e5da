"""Pass-order fuzzing on Relay: small faulty passes, written here, are found by short campaigns
given only their catalog entry, each with the minimal pass sequence in its finding."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, the_one_ill_formed_finding
from hirfuzz.campaign.verify import check_finding_scripts
from hirfuzz.core.finding import Finding
from relay_env import relay_interpreter, relay_interpreter_alone
from reproducer_rules import check_maintainer_files, final_error, run_alone
from test_relay_campaign import relay_campaign

PLANTED = ROOT / "tests" / "relay" / "planted" / "planted.yaml"
OPS = ["--only-ops", "add,subtract,multiply,exp,abs,sum,negative,tanh", "--dtypes", "float32"]


def planted_campaign(tmp_path, seq, n=4, seed=0, ops=8):
    out = tmp_path / "out"
    proc = relay_campaign("--passes", PLANTED, "--pass-seq", seq, "--iterations", n, "--ops", ops, "--out", out,
                          "--seed", seed, "--jobs", 2, *OPS)
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "summary.json").read_text())


def test_planted_constant_change_is_found_with_minimal_sequence(tmp_path):
    s = planted_campaign(tmp_path, "FoldConstant,PlantedChangeConstant,SimplifyExpr")
    wrong = [f for f in s["findings"] if f["kind"] == "wrong-result"]
    assert len(wrong) == 1, s["findings"]  # one bug, however many results show it
    assert wrong[0]["oracle"] == "pass-order"
    assert wrong[0]["message"].startswith("after PlantedChangeConstant():"), wrong[0]["message"]
    assert s["unconfirmed"] == []  # its reproducer fails alone, importing the user's pass
    # the short script a maintainer reads (Relay text, constants beside it) and hirfuzz's
    # harness fail alike, run alone
    repro, report = check_maintainer_files(tmp_path / "out", wrong[0], PLANTED.parent)
    assert "tvm.relay.parse(TEXT" in repro and "change_constant()" in repro and "meta[relay.Constant]" in repro
    assert report.splitlines()[0].startswith("### [Bug][Relay] PlantedChangeConstant changes the result of ")
    assert (wrong[0]["triage"]["class"], wrong[0]["triage"]["component"]) == ("wrong result", "pass")
    python, env = relay_interpreter_alone()
    folder = tmp_path / "out" / wrong[0]["path"]
    harness, short = run_alone(python, folder, "check.py", env), run_alone(python, folder, "repro.py", env)
    assert harness.returncode == 1 and "HIRFUZZ-REPRO mismatch" in harness.stdout, harness.stdout + harness.stderr
    assert short.returncode == 1 and final_error(short) == "AssertionError", short.stderr


@pytest.mark.slow  # the constant-change plant guards the same path in the quick suite
def test_planted_operand_swap_is_found_with_minimal_sequence(tmp_path):
    # in 6 cases seeds 1 and 2 meet a subtract whose operands share a type (all the pass
    # swaps); seed 0 does not: the probe steers to forms, not to operands of one type
    s = planted_campaign(tmp_path, "SimplifyExpr,PlantedSwapOperands,DeadCodeElimination", n=6, seed=1)
    wrong = [f for f in s["findings"] if f["kind"] == "wrong-result"]
    assert wrong, s
    assert all(f["oracle"] == "pass-order" and f["message"].startswith("after PlantedSwapOperands():")
               for f in wrong), [f["message"] for f in wrong]
    assert s["unconfirmed"] == []


@pytest.mark.slow  # Relax's twin runs in the quick suite; the ill-formed plant guards Relay's crash path
def test_planted_raise_on_a_closure_is_a_crash_naming_the_pass(tmp_path):
    # closures come from the lowering plans, which put some subgraphs in let-bound functions
    s = planted_campaign(tmp_path, "InferType,PlantedRaiseOnClosure", n=8, seed=3)
    crashes = [f for f in s["findings"] if f["kind"] == "crash"]
    assert crashes and crashes[0]["oracle"] == "pass-order" and crashes[0]["stage"] == "passes"
    assert crashes[0]["message"].startswith("after PlantedRaiseOnClosure():"), crashes[0]["message"]
    assert s["unconfirmed"] == []


def test_an_ill_formed_pass_output_is_blamed_on_that_pass_not_on_what_trips_over_it(tmp_path):
    # PlantedUndefineVar leaves a free variable in a global function; without a check after
    # each pass, the next step's InferType (or the build) would fail on it and be blamed
    s = planted_campaign(tmp_path, "PlantedUndefineVar,SimplifyExpr,DeadCodeElimination", n=4)
    f = the_one_ill_formed_finding(s, "pass-order|ill-formed|PlantedUndefineVar|free variable ? in global function ?",
                                   "PlantedUndefineVar left an ill-formed module: ValueError: free variable %")
    report = (tmp_path / "out" / f["path"] / "bug-report.md").read_text()
    assert "well_formed before PlantedUndefineVar: True" in report
    assert "well_formed after PlantedUndefineVar: False: free variable %" in report
    repro, report = check_maintainer_files(tmp_path / "out", f, PLANTED.parent)
    assert repro.rstrip().endswith("check_well_formed(mod)  # raises: the pass left an ill-formed module")
    assert report.splitlines()[0].startswith("### [Bug][Relay] PlantedUndefineVar: leaves an ill-formed module")
    assert (f["triage"]["class"], f["triage"]["component"]) == ("ill-formed pass output", "pass")
    python, env = relay_interpreter()
    short = run_alone(python, tmp_path / "out" / f["path"], "repro.py", {**os.environ, **env})
    assert short.returncode == 1 and short.stderr.splitlines()[-1].startswith("ValueError: free variable %")


def test_a_type_error_tvm_cannot_place_in_a_script_is_still_one_failure(tmp_path):
    # PlantedWidenArgument builds a new IRModule, as a user's module pass does, and casts an
    # argument to float64: Relay's type checker fails after it. The worker renders that
    # diagnostic itself: a DiagnosticError. In repro.py the module comes from parsed text,
    # whose source map the new IRModule dropped, and TVM's own renderer raises a TVMError
    # quoting the diagnostic instead: the same failure, confirmed (it was left unconfirmed)
    s = planted_campaign(tmp_path, "PlantedWidenArgument", n=2)
    assert s["findings"] and s["unconfirmed"] == [], s["unconfirmed"]
    python, env = relay_interpreter_alone()
    for row in s["findings"]:
        assert (row["stage"], row["signature"].split("|")[2]) == ("ill_formed_after_pass", "PlantedWidenArgument"), row
        folder = tmp_path / "out" / row["path"]
        finding = Finding(**json.loads((folder / "finding.json").read_text()))
        assert finding.extra["exc_type"] == "DiagnosticError"
        # check.py renders diagnostics as the worker does; repro.py is TVM's alone
        seen = check_finding_scripts(folder, finding, 120, python, env, dialect="relay")
        assert seen.reproduced, seen.observed
        assert "HIRFUZZ-REPRO stage=ill_formed_after_pass error=DiagnosticError" in seen.harness_output
        assert "diagnostic: The Relay type checker is unable to show the following types match." in seen.harness_output
        assert seen.observed.endswith("repro.py: raised TVMError") and "source maps are not populated" in seen.output
    # the alias is Relay's, and holds only for the diagnostic the worker saw
    assert not check_finding_scripts(folder, finding, 120, python, env).reproduced
    other = Finding(**{**finding.to_json(), "message": "DiagnosticError: Incompatible broadcast type"})
    assert not check_finding_scripts(folder, other, 120, python, env, dialect="relay").reproduced
    replayed = subprocess.run([sys.executable, "-m", "hirfuzz.replay", tmp_path / "out"], capture_output=True,
                              text=True, cwd=ROOT, env={**os.environ, **env})
    assert f"{len(s['findings'])} still reproduce" in replayed.stdout, replayed.stdout + replayed.stderr


def test_fast_math_is_judged_within_its_approximation_with_no_false_alarm(tmp_path):
    # FastMath (preserves_results: false) turns exp, tanh and erf into fast approximations on
    # TVM 0.19: drawn now, it is judged within the tolerance its catalog entry documents
    out = tmp_path / "out"
    proc = relay_campaign("--pass-seq", "FastMath", "--iterations", 6, "--ops", 6, "--out", out, "--seed", 2,
                          "--jobs", 2, "--only-ops", "exp,tanh,erf,add,multiply", "--dtypes", "float32")
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["findings"] == [] and s["unconfirmed"] == [] and s["compared_fully"] > 0, s
    stats = [json.loads(line) for line in (out / "stats.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" for r in stats), [r["status"] for r in stats]


def test_a_relay_pass_is_probed_and_generation_steered_to_what_it_rewrites(tmp_path):
    # the probe runs in TVM 0.19's workers: PlantedSwapOperands swaps subtract's operands
    # where both have one type, and nothing else
    s = planted_campaign(tmp_path, "PlantedSwapOperands", n=4, seed=1)  # as above: seed 0 meets no subtract of one type
    [probed] = s["probe"]["probed"]
    [said] = probed["says"]
    # one program per site: whether a subtract's operands share a type (all the pass swaps)
    # depends on the shapes drawn, alone or fed by another op; a broadcast operand never does
    assert said.startswith("PlantedSwapOperands rewrote: "), said
    rewrote = said.removeprefix("PlantedSwapOperands rewrote: ").split(";")[0].split(", ")
    assert all("subtract" in site and site.endswith("in float32") for site in rewrote), said
    assert "broadcast" not in said  # operands of two types are left alone
    assert s["probe"]["directed"] and s["coverage"]["probe_site"] >= 1
    assert any(f["message"].startswith("after PlantedSwapOperands():") for f in s["findings"]), s["findings"]
