"""The campaign engine: workers die and the campaign goes on; a killed coordinator resumes
without losing or repeating findings; findings are reduced; replay re-runs them."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from check_user_paths import kill_after_a_hit_the_checkpoint_missed
from conftest import BOOL_ADD, ROOT, SPECS, run_hirfuzz


def small_specs(tmp_path, extra=""):
    """abs and exp from the shipped specs, plus `extra`: a small, fast spec set."""
    import yaml
    d = tmp_path / "specs"
    d.mkdir()
    (d / "tolerances.yaml").write_text((SPECS / "tolerances.yaml").read_text())
    unary = yaml.safe_load((SPECS / "unary.yaml").read_text())
    keep = [op for op in unary["ops"] if op["name"] in ("abs", "exp", "negative", "sqrt")]
    (d / "unary.yaml").write_text(yaml.safe_dump({"ops": keep}))
    if extra:
        (d / "extra.yaml").write_text(extra)
    return d


# these tests are about the engine, not the oracles: plain lowering, no pass sequences or mutants
PLAIN = ["--no-pass-fuzz", "--no-features", "--mutations", 0]


def summary_of(out):
    return json.loads((out / "summary.json").read_text())


# a planted bug: every case (reduction runs included) that feeds abs into negative aborts
PLANTED_EDGE = {"HIRFUZZ_TEST_CRASH_EDGE": "abs>negative"}


def planted_args(tmp_path, out, iterations, jobs):
    """A campaign over abs, exp, negative and sqrt whose one bug is PLANTED_EDGE."""
    return ["--specs", small_specs(tmp_path), "--iterations", iterations, "--ops", 16, "--out", out,
            "--jobs", jobs, "--no-verify", "--no-progress", "--seed", 1, *PLAIN]


def start_hirfuzz(args, env):
    """The CLI as a child to send signals to, its output merged and read line by line."""
    return subprocess.Popen([sys.executable, "-m", "hirfuzz", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
                            cwd=ROOT)


def test_dying_workers_are_recorded_and_the_campaign_goes_on(tmp_path):
    out = tmp_path / "out"
    env = {"HIRFUZZ_TEST_CRASH": "1:segfault,3:abort,5:hang,7:oom"}
    # a 20-s limit: the out-of-memory case runs on a worker just restarted after the hang, and
    # on a loaded machine its start and 2 GB of allocation took past 10 s (a timeout, not the bound)
    proc = run_hirfuzz("--specs", small_specs(tmp_path), "--iterations", 10, "--ops", 3, "--out", out,
                       "--jobs", 2, "--timeout", 20, "--max-memory", 2048, "--no-verify", "--no-reduce",
                       "--no-progress", *PLAIN, env=env)
    assert proc.returncode == 0, proc.stderr
    s = summary_of(out)
    assert s["cases"] == 10
    kinds = sorted(f["signature"] for f in s["findings"])
    # the worker that ran out of --max-memory is the limit's, counted apart: not a crash
    assert kinds == ["crash|worker|SIGABRT", "crash|worker|SIGSEGV", "hang|worker|timeout"]
    assert s["out_of_memory"] == {"cases": 1, "limit_mb": 2048}
    assert s["memory_bound"] == {"kind": "resident", "limit_mb": 2048, "enforced_by": "coordinator"}
    assert "case 7 ran out of the --max-memory limit (2048 MB of resident memory per worker)" in proc.stdout
    assert s["worker_restarts"] == 4
    assert s["built"] == 6  # every other case still ran


def test_no_reduce_tries_no_configuration_of_a_hang_alone(tmp_path):
    """--no-reduce --no-verify: a hang is filed as it was seen, its case whole, without
    trying each configuration alone (each try would hang for the time-out again)."""
    out = tmp_path / "out"
    proc = run_hirfuzz("--specs", small_specs(tmp_path), "--iterations", 2, "--ops", 3, "--out", out,
                       "--jobs", 1, "--timeout", 5, "--no-verify", "--no-reduce", "--no-progress",
                       "--executors", "vm,compiled", env={"HIRFUZZ_TEST_CRASH": "0:hang"})
    assert proc.returncode == 0, proc.stderr
    [hang] = [f for f in summary_of(out)["findings"] if f["signature"] == "hang|worker|timeout"]
    finding = json.loads((out / hang["path"] / "finding.json").read_text())
    assert finding["extra"]["isolation"].startswith("not isolated (--no-reduce)"), finding["extra"]
    assert finding["extra"]["reduction"]["steps"]["isolate_config"]["calls"] == 0


def _wait_for_line(proc, needle, timeout_s):
    deadline = time.monotonic() + timeout_s
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"'{needle}' not seen in: {''.join(seen)}")


def test_killed_coordinator_resumes_without_losing_or_repeating_findings(tmp_path):
    out = tmp_path / "out"
    specs = small_specs(tmp_path, BOOL_ADD)
    args = ["--specs", specs, "--iterations", 40, "--ops", 4, "--out", out, "--jobs", 2,
            "--no-progress", "--no-verify", "--no-reduce", "--seed", 9, *PLAIN]
    proc = start_hirfuzz(args, {"HIRFUZZ_TEST_CRASH": "2:abort,30:segfault"})
    seen = _wait_for_line(proc, "-> ", timeout_s=120)  # a finding is on screen...
    proc.send_signal(signal.SIGKILL)                    # ...and the coordinator dies
    proc.wait()
    on_screen = {line.split()[1].rstrip(":") for line in seen if line.startswith("finding ")}
    assert on_screen
    on_disk = {d.name for d in (out / "findings").iterdir()}
    assert on_screen <= on_disk

    resumed = run_hirfuzz(*args, env={"HIRFUZZ_TEST_CRASH": "2:abort,30:segfault"})
    assert resumed.returncode == 0, resumed.stderr
    s = summary_of(out)
    assert s["resumed"] is True
    sigs = [f["signature"] for f in s["findings"]]
    assert len(sigs) == len(set(sigs)) == 3, sigs  # bool add, abort, segfault: once each
    assert len(list((out / "findings").iterdir())) == 3
    assert on_screen <= {d.name for d in (out / "findings").iterdir()}
    cases = [json.loads(line)["case"] for line in (out / "stats.jsonl").read_text().splitlines()]
    assert set(cases) == set(range(40))


def test_resume_refuses_changed_settings(tmp_path):
    out = tmp_path / "out"
    specs = small_specs(tmp_path)
    first = run_hirfuzz("--specs", specs, "--iterations", 2, "--ops", 3, "--out", out, "--jobs", 1, "--no-progress",
                        *PLAIN)
    assert first.returncode == 0, first.stderr
    again = run_hirfuzz("--specs", specs, "--iterations", 2, "--ops", 5, "--out", out, "--jobs", 1)
    assert again.returncode == 2 and "Traceback" not in again.stderr
    assert "ops: 3 -> 5" in again.stderr


def test_resume_continues_the_same_graphs(tmp_path):
    """4 cases then 4 more equal 8 cases at once: the random stream carries on."""
    specs = small_specs(tmp_path)
    common = ["--specs", specs, "--ops", 5, "--jobs", 1, "--no-progress", "--seed", 4, *PLAIN]
    assert run_hirfuzz(*common, "--iterations", 8, "--out", tmp_path / "a").returncode == 0
    assert run_hirfuzz(*common, "--iterations", 4, "--out", tmp_path / "b").returncode == 0
    assert run_hirfuzz(*common, "--iterations", 8, "--out", tmp_path / "b").returncode == 0
    cov_a = json.loads((tmp_path / "a" / "coverage.json").read_text())
    cov_b = json.loads((tmp_path / "b" / "coverage.json").read_text())
    assert cov_a == cov_b
    resumed = summary_of(tmp_path / "b")
    assert resumed["cases"] == 8
    # the second run's phases add to the first's
    assert sum(phase["cases"] for phase in resumed["phases"].values()) == 8, resumed["phases"]


def test_each_phase_says_its_seconds_and_the_cases_judged_in_it(tmp_path):
    """A campaign whose finding is reduced: cases are judged while fuzzing, and after it
    (the case in flight when the budget ran out); the reduction ends in the finish phase."""
    out = tmp_path / "out"
    proc = run_hirfuzz(*planted_args(tmp_path, out, 6, 1), env=PLANTED_EDGE)
    assert proc.returncode == 0, proc.stderr
    s = summary_of(out)
    assert len(s["findings"]) == 1 and s["pending"] == []
    phases = s["phases"]
    assert list(phases) == ["start", "probe", "fuzz", "finish"], phases
    assert sum(phase["cases"] for phase in phases.values()) == s["cases"] == 6, phases
    assert phases["start"]["cases"] == phases["probe"]["cases"] == 0
    assert phases["fuzz"]["cases"] > 0 and phases["finish"]["cases"] > 0, phases
    # nothing to probe (no pass sequences): its phase takes next to no time
    assert phases["start"]["seconds"] > 0 and phases["fuzz"]["seconds"] > 0 and phases["finish"]["seconds"] > 0
    # each figure is rounded to the millisecond: their sum may pass the total by half of one each
    assert sum(phase["seconds"] for phase in phases.values()) <= s["elapsed_s"] + 0.0005 * len(phases), (
        phases, s["elapsed_s"])


def test_planted_two_op_bug_is_reduced_to_a_few_ops(tmp_path):
    out = tmp_path / "out"
    proc = run_hirfuzz(*planted_args(tmp_path, out, 6, 1), env=PLANTED_EDGE)
    assert proc.returncode == 0, proc.stderr
    s = summary_of(out)
    assert len(s["findings"]) == 1
    f = s["findings"][0]
    assert f["reduced_from"] == 16 and f["ops"] <= 3
    case = json.loads(open(out / f["path"] / "case.json").read())
    assert {n.get("op") for n in case["graph"]["nodes"]} >= {"abs", "negative"}
    original = json.loads(open(out / f["path"] / "original" / "case.json").read())
    assert sum(n["kind"] == "op" for n in original["graph"]["nodes"]) == 16
    reduction = json.loads(open(out / f["path"] / "finding.json").read())["extra"]["reduction"]
    assert 0 < reduction["checks"] <= 48


def test_replay_says_which_findings_still_reproduce(tmp_path):
    out = tmp_path / "out"
    proc = run_hirfuzz("--specs", small_specs(tmp_path, BOOL_ADD), "--iterations", 3, "--ops", 3,
                       "--out", out, "--jobs", 1, "--no-progress", "--seed", 2, *PLAIN)
    assert proc.returncode == 0, proc.stderr
    s = summary_of(out)
    assert [f["kind"] for f in s["findings"]] == ["crash"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    replay = subprocess.run([sys.executable, "-m", "hirfuzz.replay", str(out)], capture_output=True,
                            text=True, env=env, timeout=300)
    assert replay.returncode == 1
    assert "1 still reproduce" in replay.stdout
    bug = open(out / s["findings"][0]["path"] / "bug-report.md").read()
    assert "**Expected:**" in bug and "R.add(" in bug and "TVM 0.27" in bug
    assert "report.md" in proc.stdout and (out / "report.md").read_text().count("repro.py") >= 1


def test_features_and_mutants_run_without_false_alarms(tmp_path):
    """Oracle 2: functions, closures and features in lowering, and a mutant per case; every
    reported finding reproduces alone, and the summary counts what was used."""
    out = tmp_path / "out"
    proc = run_hirfuzz("--iterations", 8, "--ops", 10, "--out", out, "--jobs", 2, "--no-progress",
                       "--seed", 5, "--no-pass-fuzz", "--mutations", 2)
    assert proc.returncode == 0, proc.stderr
    s = summary_of(out)
    assert s["cases"] == 8 and s["compared"] == 8
    assert sum(s["ir_features"].values()) > 0 and sum(s["mutators"].values()) > 0
    # per mutator: the mutants it made, those that built, the findings they exposed (none here)
    figures = s["mutator_figures"]
    assert {name: f["applied"] for name, f in figures.items()} == s["mutators"]
    assert all(0 < f["built"] <= f["applied"] and f["findings"] == 0 for f in figures.values())
    assert s["unconfirmed"] == [] and s["hirfuzz_bugs"] == []


def test_fuzzing_goes_on_while_a_finding_is_reduced(tmp_path):
    """With two workers, one reduces the new finding and the other keeps running cases."""
    out = tmp_path / "out"
    proc = run_hirfuzz(*planted_args(tmp_path, out, 12, 2), env=PLANTED_EDGE)
    assert proc.returncode == 0, proc.stderr
    s = summary_of(out)
    assert len(s["findings"]) == 1 and s["findings"][0]["ops"] <= 3
    assert s["pending"] == [] and not any((out / "pending").iterdir())
    stats = [json.loads(line) for line in (out / "stats.jsonl").read_text().splitlines()]
    assert len(stats) == 12
    # cases judged while the finding waited in pending/: the pool did not stop for it
    assert any(row["pending"] == 1 for row in stats), stats


def test_finding_killed_while_pending_is_finished_on_resume(tmp_path):
    out = tmp_path / "out"
    args = planted_args(tmp_path, out, 6, 1)
    proc = start_hirfuzz(args, PLANTED_EDGE)
    _wait_for_line(proc, "new crash", timeout_s=120)  # on screen, reduction under way...
    proc.send_signal(signal.SIGKILL)                   # ...and the coordinator dies
    proc.wait()
    assert [d.name for d in (out / "pending").iterdir()] or list((out / "findings").iterdir())

    resumed = run_hirfuzz(*args, env=PLANTED_EDGE)
    assert resumed.returncode == 0, resumed.stderr
    s = summary_of(out)
    assert len(s["findings"]) == 1 and s["findings"][0]["ops"] <= 3  # finished, reduced, once
    assert len(list((out / "findings").iterdir())) == 1
    assert not any((out / "pending").iterdir())


def test_corrupt_pending_finding_is_refused(tmp_path):
    out = tmp_path / "out"
    specs = small_specs(tmp_path)
    first = run_hirfuzz("--specs", specs, "--iterations", 1, "--ops", 3, "--out", out, "--no-progress", *PLAIN)
    assert first.returncode == 0, first.stderr
    broken = out / "pending" / "crash-0123456789"
    broken.mkdir(parents=True)
    (broken / "finding.json").write_text("{half")
    again = run_hirfuzz("--specs", specs, "--iterations", 2, "--ops", 3, "--out", out, "--no-progress", *PLAIN)
    assert again.returncode == 2 and "Traceback" not in again.stderr
    assert "crash-0123456789" in again.stderr and "corrupt" in again.stderr
    assert (broken / "finding.json").read_text() == "{half"  # left for the user to look at


# the first Ctrl-C or SIGTERM finishes the cases in flight; each is named on screen
STOPS = {"ctrl-c": (signal.SIGINT, "interrupted (Ctrl-C)"), "sigterm": (signal.SIGTERM, "terminated (SIGTERM)")}


@pytest.mark.parametrize("stop", STOPS)
def test_ctrl_c_or_sigterm_finishes_cases_in_flight_and_keeps_pending_findings(tmp_path, stop):
    sent, named = STOPS[stop]
    out = tmp_path / "out"
    proc = start_hirfuzz(planted_args(tmp_path, out, 200, 1), PLANTED_EDGE)
    _wait_for_line(proc, "new crash", timeout_s=120)
    proc.send_signal(sent)
    rest, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, rest
    assert f"{named}: finishing" in rest and "Traceback" not in rest
    assert "hirfuzz strict: " in rest and f"report: {out}/report.md" in rest  # the summary, on screen
    assert rest.rstrip().splitlines()[-1].startswith(f"hirfuzz: {named}: the campaign stopped early")
    s = summary_of(out)
    assert 0 < s["cases"] < 200
    assert len((out / "stats.jsonl").read_text().splitlines()) == s["cases"]
    assert json.loads((out / "state.json").read_text())["counters"]["cases"] == s["cases"]
    assert "## Findings" in (out / "report.md").read_text()
    # the finding is either finished or waits in pending/ for the next run: never lost
    assert len(s["findings"]) + len(s["pending"]) == 1
    assert len(s["pending"]) == len([d for d in (out / "pending").iterdir()])
    assert ("not finished yet" in rest) == bool(s["pending"])


def test_a_campaign_killed_after_a_checkpoint_resumes_counting_each_hit_and_case_once(tmp_path):
    out = tmp_path / "out"
    args = ["--specs", small_specs(tmp_path, BOOL_ADD), "--iterations", 50, "--ops", 3, "--out", out, "--jobs", 1,
            "--no-progress", "--no-verify", "--no-reduce", "--seed", 2, *PLAIN]
    proc = start_hirfuzz(args, {})
    kill_after_a_hit_the_checkpoint_missed(proc, out)
    with open(out / "stats.jsonl", "a") as f:
        f.write('{"case": 7, "t": 1.')  # what a kill in the middle of a write leaves
    resumed = run_hirfuzz(*args)
    assert resumed.returncode == 0, resumed.stderr
    records = [json.loads(line) for line in (out / "stats.jsonl").read_text().splitlines()]  # every line whole
    assert sorted(r["case"] for r in records) == list(range(50))  # each case logged once
    crashed = sum(r["status"] == "error:build" for r in records)  # the bool add crash, each time it was hit
    s = summary_of(out)
    assert len(s["findings"]) == 1 and s["findings"][0]["hits"] == s["finding_hits"] == crashed > 1, s["findings"]
    assert json.loads((out / s["findings"][0]["path"] / "finding.json").read_text())["hits"] == crashed
