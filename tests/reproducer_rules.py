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


def check_maintainer_files(row: dict, pass_dir: Path | None = None) -> tuple[str, str]:
    """Check a saved finding's repro.py and bug-report.md against the rules; returns both."""
    folder = Path(row["path"])
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
