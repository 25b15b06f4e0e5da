"""The README's set-up commands, run as written: a new user's first contact with hirfuzz
must work, and the README cannot drift from what does (a relative --out once lost every
finding of its own main command)."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

# what a test may add to shorten a campaign; it never changes the folder or the --out form
SHORTER = ["--iterations", "2", "--ops", "6", "--jobs", "1", "--no-progress"]


def setup_commands() -> list[str]:
    """The indented command lines of the README's Set-up section, in order."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Set-up\n", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    python -m ")]


def test_the_readme_has_the_two_setup_commands_and_ci_runs_the_second_exactly():
    commands = setup_commands()
    assert len(commands) == 2, commands
    assert "python -m pytest -q" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert commands[1] in ci, "`.ci/run` must run the README's test command exactly as written"


def test_the_readme_main_command_runs_as_written_and_keeps_its_findings():
    """From this folder (the README says so), with the --out it names; only flags added."""
    out = ROOT / "hirfuzz-out"
    if out.exists():
        pytest.skip(f"{out} holds a campaign of yours; this test will not touch it")
    steps = setup_commands()[0].split(" && ")
    assert len(steps) == 3 and steps[0].startswith("python -m pip install -e ."), steps
    try:
        for step in steps:
            argv = shlex.split(step)
            argv[0] = sys.executable
            if argv[2:3] == ["hirfuzz"] and "--mode" in argv:
                argv += SHORTER
            proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=900,
                                  env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
            assert proc.returncode == 0, f"{step}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        summary = json.loads((out / "summary.json").read_text())
        assert summary["cases"] == 2 and summary["cross_ir"], summary
        lost = [u for u in summary["unconfirmed"] if re.search(r"could not run|can't open", json.dumps(u))]
        assert lost == [], lost
    finally:
        shutil.rmtree(out, ignore_errors=True)
