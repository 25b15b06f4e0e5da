import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "opspecs"

sys.path.insert(0, str(ROOT / "tools"))
# a real, stable TVM crash to plant in a spec set: add on bool tensors
from check_user_paths import BOOL_ADD  # noqa: E402,F401


@pytest.fixture(scope="session")
def specs():
    from hirfuzz.core.spec import load_specs
    return load_specs()


@pytest.fixture
def spec_copy(tmp_path):
    """A writable copy of the shipped op specs, for tests that plant a change."""
    dest = tmp_path / "opspecs"
    shutil.copytree(SPECS, dest)
    return dest


def run_hirfuzz(*args, timeout=600, env=None, python=None):
    """Run the CLI as a user would (under `python`, default this one); the CompletedProcess."""
    env = dict(os.environ, **(env or {}))
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([python or sys.executable, "-m", "hirfuzz", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT)


def the_one_ill_formed_finding(summary: dict, signature: str, message_part: str) -> dict:
    """A campaign whose planted pass leaves an ill-formed module files one finding, blamed
    on that pass (stage ill_formed_after_pass), confirmed by its reproducer alone."""
    assert len(summary["findings"]) == 1, summary["findings"]  # one root cause, one finding
    f = summary["findings"][0]
    assert (f["kind"], f["oracle"], f["stage"]) == ("crash", "pass-order", "ill_formed_after_pass"), f
    assert f["signature"] == signature
    assert message_part in f["message"], f["message"]
    assert summary["unconfirmed"] == []  # the reproducer alone fails the same way
    return f
