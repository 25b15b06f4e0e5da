"""Helpers for Relay tests. Relay tests run TVM 0.19 in its own environment, never in this
process (which holds apache-tvm 0.27): each test runs code there in a subprocess."""
import os
import subprocess
from pathlib import Path

import pytest

from hirfuzz.envs import resolve_interpreter
from hirfuzz.errors import HirfuzzError

ROOT = Path(__file__).resolve().parents[2]


def relay_interpreter() -> tuple[str, dict]:
    """The managed Relay environment's Python (`python -m hirfuzz setup relay`) and the
    variables it needs; HIRFUZZ_RELAY_PYTHON names another interpreter holding TVM 0.19."""
    if os.environ.get("HIRFUZZ_RELAY_PYTHON"):
        return os.environ["HIRFUZZ_RELAY_PYTHON"], {"TOPHUB_LOCATION": "NONE", "TVM_BACKTRACE": "1"}
    try:
        return resolve_interpreter("relay")
    except HirfuzzError as exc:  # a missing environment fails the Relay tests, never skips them
        pytest.fail(str(exc))


def relay_interpreter_alone() -> tuple[str, dict]:
    """The Relay environment's Python and a whole environment to run a saved script in as a
    user does: without hirfuzz's source on PYTHONPATH, which a script must not need."""
    python, extra = relay_interpreter()
    return python, {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **extra}


def run_in_relay(*args, timeout=600) -> subprocess.CompletedProcess:
    """`python ARGS...` under the Relay environment, with hirfuzz's source on its path."""
    python, extra = relay_interpreter()
    env = {**os.environ, **extra, "PYTHONPATH": str(ROOT)}
    return subprocess.run([python, *map(str, args)], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=timeout)
