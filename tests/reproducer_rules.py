"""The rules a finding's maintainer-facing files keep (issue 15), checked on findings of real
campaigns in both dialects: repro.py is short and runnable, nothing meant for upstream
holds this machine's paths or hirfuzz's marks, the title is regenerated from the reduced
program, and the finding has a triage class with its evidence."""
import json
import re
import subprocess
from pathlib import Path

TRIAGE_CLASSES = {"crash on a valid program", "wrong result", "ill-formed pass output", "poor diagnostic",
                  "silent acceptance", "documented limitation"}
COMPONENTS = {"pass", "operator", "codegen", "VM"}
# what marks a file as this machine's or hirfuzz's (the user's own pass folder aside)
MACHINE = ("/tmp", "/root", "site-packages", "dist-packages", "/home/", "pytest-of")
FUZZER = ("HIRFUZZ", "hirfuzz", "EXPECT_REJECTION", "an invalid program")
_ABSOLUTE = re.compile(r"""['"(\s](/[\w.+-]+(?:/[\w.+-]+)+)""")


def check_maintainer_files(out: Path, row: dict, pass_dir: Path | None = None) -> tuple[str, str]:
    """Check a saved finding's repro.py and bug-report.md (its summary.json `row`, of the
    campaign in `out`) against the rules; returns both."""
    folder = out / row["path"]
    repro = (folder / "repro.py").read_text()
    report = (folder / "bug-report.md").read_text()
    if row["ops"] <= 3:
        assert len(repro.splitlines()) <= 40, repro
    for text in (repro, report):
        # the one path allowed: the folder of the user's own pass module, which the script imports
        text = text.replace(repr(str(pass_dir)), "'<your pass folder>'") if pass_dir else text
        assert not _ABSOLUTE.findall(text) and not any(m in text for m in MACHINE), _ABSOLUTE.findall(text)
        assert not any(m in text for m in FUZZER), [m for m in FUZZER if m in text]
        assert "metadata[" not in text  # constants are inline, never the printer's unrunnable references
    title = report.splitlines()[0].removeprefix("### ")
    assert title.startswith("[Bug][") and len(title) <= 100, title
    # never cut inside a word: a shortened title ends with a whole word and " ..."
    if title.endswith(" ..."):
        assert not title[:-4].endswith(("-", "(")), title
    # TVM's error in its essence, not pasted: no exception prefix, no check's boilerplate
    assert not any(noise in title for noise in ("InternalError:", "Check failed", ") is false")), title
    graph = json.loads((folder / "case.json").read_text())["graph"]
    ops = {n["op"] for n in graph["nodes"] if n.get("kind") == "op"}
    named = re.findall(r"(?:result of |\] )(\w[\w.]*) \(\w+\)", title)  # an operator and its dtype
    assert set(named) <= ops, (title, ops)  # it names the reduced program's operators only
    assert "**Expected:**" in report and "**Actual:**" in report and "(commit " in report and "LLVM " in report
    finding = json.loads((folder / "finding.json").read_text())
    triage = finding["extra"]["triage"]
    assert triage["class"] in TRIAGE_CLASSES and triage["component"] in COMPONENTS and triage["evidence"], triage
    assert row["triage"] == triage
    return repro, report


def run_alone(python: str, folder: Path, script: str, env: dict) -> subprocess.CompletedProcess:
    """A finding's script run alone in its folder, as a maintainer runs it."""
    return subprocess.run([python, script], cwd=folder, capture_output=True, text=True, env=env, timeout=300)


def final_error(proc: subprocess.CompletedProcess) -> str:
    """The exception a script died of: the last line of its traceback that names one."""
    lines = [ln for ln in proc.stderr.splitlines() if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b", ln)]
    return lines[-1].split(":")[0].rsplit(".", 1)[-1] if lines else ""


# a disruptive finding's repro.py holds the violating call alone: a few declarations, the
# call, the build and run lines and, for a silent acceptance, its check
VIOLATION_SCRIPT_LINES = 40


def check_violation_scripts(out: Path, row: dict, python: str, env: dict) -> str:
    """Check a disruptive finding's scripts: repro.py (the violating call alone, where
    summary.json says so) is short, holds no path nor hirfuzz's marks, and, run alone, fails
    as check.py (hirfuzz's harness, whole program) fails run alone: a silent acceptance's
    with an AssertionError while TVM accepts the program, a poor diagnostic's with TVM's
    own error. Returns the kind of script repro.py is (summary.json's `reproducer`). `row` is
    the finding's in summary.json, of the campaign in `out`."""
    folder = out / row["path"]
    finding = json.loads((folder / "finding.json").read_text())
    repro, report = (folder / "repro.py").read_text(), (folder / "bug-report.md").read_text()
    assert repro.rstrip() in report  # the report shows the script a maintainer runs
    if row["reproducer"] == "harness":  # the call alone did not fail alike: said, not hidden
        assert not (folder / "check.py").exists() and finding["extra"]["call_alone"].startswith("did not fail alike")
        return row["reproducer"]
    assert row["reproducer"] in ("call", "call-in-function"), row
    assert len(repro.splitlines()) <= VIOLATION_SCRIPT_LINES, repro
    for text in (repro, report):
        assert not _ABSOLUTE.findall(text) and not any(m in text for m in MACHINE), _ABSOLUTE.findall(text)
        assert not any(m in text for m in FUZZER), [m for m in FUZZER if m in text]
    short, harness = run_alone(python, folder, "repro.py", env), run_alone(python, folder, "check.py", env)
    marks = [ln for ln in harness.stdout.splitlines() if ln.startswith("HIRFUZZ-REPRO")]
    assert harness.returncode == 1 and marks, harness.stdout[-2000:] + harness.stderr[-2000:]
    assert short.returncode == 1, short.stdout[-2000:] + short.stderr[-2000:]
    if row["kind"] == "silent-acceptance":
        assert marks[-1] == "HIRFUZZ-REPRO accepted" and final_error(short) == "AssertionError", short.stderr
        assert "raises an AssertionError while TVM accepts the invalid program" in report
    else:
        exc_type = finding["extra"]["exc_type"]
        assert marks[-1] == f"HIRFUZZ-REPRO stage={row['stage']} error={exc_type}", marks
        assert final_error(short) == exc_type, short.stderr[-2000:]
        assert f"raises TVM's internal error ({exc_type})" in report
    return row["reproducer"]
