"""Oracles end to end: planted spec mistakes become findings whose reproducers fail alone."""
import json
import subprocess
import sys

from conftest import BOOL_ADD, run_hirfuzz
from reproducer_rules import check_maintainer_files


WRONG_EXP = """
ops:
  - name: exp
    inputs: [x]
    dtypes: [float32]
    reference: np.exp(x) + 0.5
    tolerance: transcendental
"""


def plant(tmp_path, text):
    d = tmp_path / "specs"
    d.mkdir()
    (d / "ops.yaml").write_text(text)
    (d / "tolerances.yaml").write_text((__import__("conftest").SPECS / "tolerances.yaml").read_text())
    return d


def campaign(tmp_path, specs, n=2, ops=2):
    out = tmp_path / "out"
    # --versions none: no version triage under the other Relax releases a machine may have set
    # up (tests/relax/test_versions.py guards it); each confirmed finding cost some 25 s more.
    # --check-cases 0: every case built and compared, which these tests count on
    proc = run_hirfuzz("--specs", specs, "--iterations", n, "--ops", ops, "--out", out, "--no-progress",
                       "--versions", "none", "--check-cases", 0)
    assert proc.returncode == 0, proc.stderr
    return out, json.loads((out / "summary.json").read_text())


def test_build_crash_is_found_deduplicated_and_reproduced(tmp_path):
    # TVM 0.27 accepts add on bool tensors in type inference, then fails in legalisation
    out, summary = campaign(tmp_path, plant(tmp_path, BOOL_ADD), n=3)
    assert len(summary["findings"]) == 1
    f = summary["findings"][0]
    assert f["kind"] == "crash" and f["stage"] == "build" and f["hits"] == 3
    assert "InternalError" in f["signature"]
    repro = subprocess.run([sys.executable, out / f["path"] / "check.py"], capture_output=True, text=True, timeout=300)
    assert repro.returncode == 1
    assert "HIRFUZZ-REPRO stage=build error=InternalError" in repro.stdout
    short = subprocess.run([sys.executable, out / f["path"] / "repro.py"], capture_output=True, text=True, timeout=300)
    assert short.returncode == 1 and short.stderr.splitlines()[-1].startswith("tvm.error.InternalError: ")
    # the report: TVM's traceback trimmed to its last frames, no path of this machine's
    _, report = check_maintainer_files(out, f)
    shown = report.split("**Output**", 1)[1]
    assert "tvm.error.InternalError: Check failed" in shown and shown.count('  File "') <= 3, shown
    # the title says the failed check's condition, not TVM's "InternalError: Check failed: (...) is false"
    assert report.splitlines()[0].startswith("### [Bug][Relax] add_bool (bool) fails to build: check `")
    assert f["triage"]["class"] == "crash on a valid program" and f["triage"]["component"] in ("codegen", "operator")
    assert "valid" in f["triage"]["evidence"]
    saved = json.loads(open(out / f["path"] / "case.json").read())
    assert saved["graph"]["nodes"]


def test_wrong_result_is_reported_with_expected_values(tmp_path):
    out, summary = campaign(tmp_path, plant(tmp_path, WRONG_EXP), n=1)
    assert [f["kind"] for f in summary["findings"]] == ["wrong-result"]
    f = summary["findings"][0]
    assert f["oracle"] == "reference"
    repro = subprocess.run([sys.executable, out / f["path"] / "check.py"], capture_output=True, text=True, timeout=300)
    assert repro.returncode == 1 and "HIRFUZZ-REPRO mismatch" in repro.stdout
    short = subprocess.run([sys.executable, out / f["path"] / "repro.py"], capture_output=True, text=True, timeout=300)
    assert short.returncode == 1 and "AssertionError" in short.stderr and "Mismatched elements" in short.stderr


def test_correct_specs_give_no_finding(tmp_path):
    out, summary = campaign(tmp_path, plant(tmp_path, WRONG_EXP.replace(" + 0.5", "")), n=2)
    assert summary["findings"] == [] and summary["compared"] == 2


def test_a_reference_that_cannot_compute_marks_the_case_not_comparable(tmp_path):
    """Out-of-domain inputs can break the NumPy reference itself (an index out of range):
    the case is then not compared below that node, and the campaign goes on."""
    import numpy as np
    from hirfuzz.core.coverage import Coverage
    from hirfuzz.core.generate import generate_graph
    from hirfuzz.core.inputs import choose_inputs
    from hirfuzz.core.spec import load_specs
    d = plant(tmp_path, "ops:\n  - name: abs\n    inputs: [x]\n    dtypes: [int32]\n    reference: x[99]\n")
    specs = load_specs(d)
    g = generate_graph(specs, np.random.default_rng(0), 2, Coverage())
    chosen = choose_inputs(g, specs, np.random.default_rng(0))
    assert chosen.runnable and not chosen.comparable
    assert "reference cannot compute" in chosen.reason
    assert not any(chosen.facts[r].stable for r in g.results())


def test_crash_signatures_key_tvm_checks_on_their_condition():
    """One TVM check site is one finding, whatever IR its message names; addresses,
    variable names and numbers do not split findings either."""
    from hirfuzz.core.finding import crash_signature
    trace = 'File "/tvm/src/relax/backend/vm/vm_shape_lower.cc", line 1, in VisitPrimExpr\n'
    first = crash_signature("build", "InternalError", "Check failed: (slot->value_computed) is false: PrimExpr "
                            'T.int64(2) * n2 in function I.GlobalVar("f1") has not been computed', trace)
    second = crash_signature("build", "InternalError", "Check failed: (slot->value_computed) is false: PrimExpr "
                             'T.int64(8) * (n2 * n1) in function I.GlobalVar("main_local2") has not been computed', trace)
    other = crash_signature("build", "InternalError", "Check failed: (it != functions.end()) is false: There is "
                            'no definition of I.GlobalVar("f1")', trace)
    assert first == second != other
    assert (crash_signature("run", "TVMError", "bad pointer 0x7f00aa at lv12", "") ==
            crash_signature("run", "TVMError", "bad pointer 0x5500bb at lv3", ""))


def test_a_hang_is_confirmed_on_cpu_time_not_on_a_slow_wall_clock(tmp_path):
    """A reproducer that spins is a hang; one that is merely slow on the wall clock (a
    loaded machine) is not; one that hangs asleep is caught by the wall-clock limit."""
    from hirfuzz.campaign.verify import check_reproducer
    from hirfuzz.core.finding import Finding
    from hirfuzz.protocol import REPRO_MARK as MARK
    hang = Finding(kind="hang", oracle="crash", stage="worker", signature="hang|worker|timeout", message="")
    scripts = {"spin": "while True:\n    pass\n",
               "slow": f"import time\ntime.sleep(3)\nprint('{MARK} ok')\n",
               "asleep": "import time\ntime.sleep(60)\n"}
    seen = {}
    for name, text in scripts.items():
        (tmp_path / f"{name}.py").write_text(text)
        seen[name] = check_reproducer(tmp_path / f"{name}.py", hang, timeout_s=2)
    assert seen["spin"].reproduced and "CPU time" in seen["spin"].observed
    assert not seen["slow"].reproduced and seen["slow"].observed == f"{MARK} ok"
    assert seen["asleep"].reproduced and seen["asleep"].observed == "hang"


def test_a_silent_acceptance_that_crashes_when_run_again_still_reproduces(tmp_path):
    """TVM left an invalid program unchecked (scatter_elements on axis -7 reads out of
    bounds): run again, it may pass or die of a signal; both show the missing check. A
    clean rejection does not."""
    from hirfuzz.campaign.verify import check_reproducer
    from hirfuzz.core.finding import Finding
    from hirfuzz.protocol import REPRO_MARK as MARK
    accepted = Finding(kind="silent-acceptance", oracle="disruptive", stage="run",
                       signature="silent-acceptance|scatter_elements|attr-out-of-range", message="")
    scripts = {"segv": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
               "ran": f"print('{MARK} accepted')\n",
               "rejected": f"print('{MARK} stage=lower error=ValueError')\n"}
    seen = {}
    for name, text in scripts.items():
        (tmp_path / f"{name}.py").write_text(text)
        seen[name] = check_reproducer(tmp_path / f"{name}.py", accepted, timeout_s=20)
    assert seen["segv"].reproduced and "SIGSEGV" in seen["segv"].observed
    assert seen["ran"].reproduced
    assert not seen["rejected"].reproduced


def test_a_worker_killed_by_a_signal_is_confirmed_only_by_a_script_killed_by_it(tmp_path):
    """A worker that a case killed (SIGABRT) or hung while its scripts alone merely raise
    was in a state the scripts do not recreate: unconfirmed. One that exited (out of
    memory, an uncaught error) is reproduced by a script that fails."""
    from hirfuzz.campaign.verify import check_reproducer, check_short_reproducer
    from hirfuzz.core.finding import Finding
    from hirfuzz.protocol import REPRO_MARK as MARK

    def worker_death(how):
        kind = "hang" if how == "timeout" else "crash"
        return Finding(kind=kind, oracle="crash", stage="worker", signature=f"{kind}|worker|{how}",
                       message="", extra={"signal": how})

    scripts = {"abort": "import os\nos.abort()\n",
               "raise": f"print('{MARK} stage=run error=ValueError')\nraise ValueError('match_cast: shape mismatch')\n"}
    for name, text in scripts.items():
        (tmp_path / f"{name}.py").write_text(text)
    for check in (check_reproducer, check_short_reproducer):
        assert check(tmp_path / "abort.py", worker_death("SIGABRT"), timeout_s=20).reproduced
        assert not check(tmp_path / "raise.py", worker_death("SIGABRT"), timeout_s=20).reproduced
        assert not check(tmp_path / "raise.py", worker_death("timeout"), timeout_s=20).reproduced
        assert check(tmp_path / "raise.py", worker_death("exit"), timeout_s=20).reproduced


# this "log" gives NaN on every input the search can draw (as a spec that forgot its
# domain would): no draw keeps it in its domain
UNMEETABLE = """
ops:
  - name: abs
    inputs: [x]
    dtypes: [float32]
    reference: np.abs(x)
  - name: log
    inputs: [x]
    dtypes: [float32]
    reference: np.log(x - 1000)
"""


def test_the_generator_avoids_an_op_whose_domain_no_input_meets_and_counts_it_when_forced(tmp_path):
    # beside abs, no graph holds this log (its witness is NaN): every case is compared in full
    out, summary = campaign(tmp_path, plant(tmp_path, UNMEETABLE), n=6, ops=1)
    assert summary["domain_unmet"] == {} and summary["compared_fully"] == summary["cases"] == 6
    # alone, the generator must place it in the end: the case is counted, never compared
    forced = tmp_path / "forced"
    proc = run_hirfuzz("--specs", tmp_path / "specs", "--iterations", 3, "--ops", 1, "--out", forced,
                       "--no-progress", "--only-ops", "log")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((forced / "summary.json").read_text())
    assert summary["domain_unmet"] == {"log": 3} and summary["compared_fully"] == 0
    # its results were never compared: no wrong result (a drawn pass sequence may still meet a
    # TVM bug of its own: TopologicalSort's "Var n6 is not defined" through a check-only one)
    assert [f for f in summary["findings"] if f["kind"] == "wrong-result"] == []
    report = (forced / "report.md").read_text()
    assert "0 with every result" in report and "| log | " in report


def test_known_findings_of_an_earlier_campaign_are_counted_not_filed_again(tmp_path):
    """--known: a nightly campaign told what earlier ones found files only what is new."""
    first, before = campaign(tmp_path, plant(tmp_path, BOOL_ADD), n=3)
    [found] = before["findings"]
    signatures = tmp_path / "known.txt"
    signatures.write_text(f"# from the first campaign\n\n{found['signature']}\n")
    for name, known in (("from-folder", first), ("from-list", signatures)):
        out = tmp_path / name
        proc = run_hirfuzz("--specs", tmp_path / "specs", "--iterations", 3, "--ops", 2, "--out", out,
                           "--no-progress", "--known", known, "--check-cases", 0)
        assert proc.returncode == 0, proc.stderr
        s = json.loads((out / "summary.json").read_text())
        assert s["findings"] == [] and s["pending"] == [] and s["unconfirmed"] == [], name
        assert s["known_hits"] == 3 and s["known_hits_by_signature"] == {found["signature"]: 3}, name
        assert not (out / "findings").exists() and not list((out / "pending").glob("*")), name
        assert "known findings (--known): 3 hits of 1" in proc.stdout
        assert "Known findings hit again" in (out / "report.md").read_text()
