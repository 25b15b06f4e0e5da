"""Helpers for Relay tests. Relay tests run TVM 0.19 in its own environment, never in this process (which holds
apache-tvm 0.27): each test runs code there in a subprocess."""
import glob
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def relay_interpreter() -> tuple[str, dict]:
    """The Relay environment's Python and the variables it needs (relay-notes.md)."""
    python = os.environ.get("HIRFUZZ_RELAY_PYTHON", "/tmp/relayenv/bin/python")
    if not Path(python).is_file():
        pytest.fail(f"no Relay environment at {python}: set HIRFUZZ_RELAY_PYTHON")
    site = glob.glob(str(Path(python).parent.parent / "lib" / "python3*" / "site-packages"))
    llvm = [str(Path(s) / "llvm" / "lib") for s in site]
    env = {"LD_LIBRARY_PATH": os.pathsep.join(llvm + [os.environ.get("LD_LIBRARY_PATH", "")]),
           "TOPHUB_LOCATION": "NONE", "TVM_BACKTRACE": "1"}
    return python, env


def run_in_relay(*args, timeout=600) -> subprocess.CompletedProcess:
    """`python ARGS...` under the Relay environment, with hirfuzz's source on its path."""
    python, extra = relay_interpreter()
    env = {**os.environ, **extra, "PYTHONPATH": str(ROOT)}
    return subprocess.run([python, *map(str, args)], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=timeout)
