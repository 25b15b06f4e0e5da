"""The environment the TVM under test runs in: one rule for workers, reproducer checks,
reductions and replay.

A TVM is found through the campaign's own environment: site-packages, a source build on
PYTHONPATH (TVM's documented set-up, `export PYTHONPATH=$TVM_HOME/python`), a library
folder named by TVM_LIBRARY_PATH. Every process that runs TVM for hirfuzz gets that
environment, plus the variables its interpreter needs (a managed environment's
LD_LIBRARY_PATH). Workers alone also get hirfuzz's own folder on PYTHONPATH, to import
`hirfuzz.worker`; a reproducer never does, since it must need only tvm and numpy. A
script that ran without the user's PYTHONPATH could not import their TVM, and every
finding would be lost as "could not run".
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import HirfuzzError

# the variables that decide which TVM a Python finds and loads: recorded with the campaign,
# so that a replay from another shell (one without the user's exports) finds the same TVM
TVM_LOCATING_VARIABLES = ("PYTHONPATH", "TVM_LIBRARY_PATH", "LD_LIBRARY_PATH")

# the folder holding the hirfuzz package: what hirfuzz itself adds to a worker's PYTHONPATH
HIRFUZZ_ROOT = str(Path(__file__).resolve().parents[2])


def inherited_tvm_variables(environ=None) -> dict[str, str]:
    """The variables of the campaign's environment that locate its TVM (those set)."""
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in TVM_LOCATING_VARIABLES if environ.get(name)}


def script_environment(extra_env: dict | None = None) -> dict[str, str]:
    """Where a reproducer runs: the campaign's environment and the interpreter's variables,
    less hirfuzz's folder wherever it is on PYTHONPATH (the tests put it there, a user may
    too), so that a script that needed hirfuzz would fail its check, not the maintainer."""
    env = {**os.environ, **(extra_env or {})}
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and not _is_hirfuzz_root(p)]
    env["PYTHONPATH"] = os.pathsep.join(kept)
    return env


def _is_hirfuzz_root(entry: str) -> bool:
    try:
        return os.path.samefile(entry, HIRFUZZ_ROOT)
    except OSError:  # gone, or never there
        return False


def worker_environment(extra_env: dict | None = None) -> dict[str, str]:
    """Where a worker runs: a script's environment, with hirfuzz importable and TVM set to
    print its backtraces (a finding's signature keys on the deepest TVM frame) and to use
    one thread (--jobs workers share the cores instead of fighting over them)."""
    env = script_environment(extra_env)
    env.setdefault("TVM_BACKTRACE", "1")
    env.setdefault("TVM_NUM_THREADS", "1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (HIRFUZZ_ROOT, env.get("PYTHONPATH", "")) if p)
    return env


def _check_python(path: str) -> str:
    """--tvm-python: an existing, executable file (what it holds is checked by the workers'
    handshake, which names what is missing)."""
    found = Path(path).expanduser()
    if not found.is_file():
        raise HirfuzzError(f"--tvm-python {path}: no such file")
    if not os.access(found, os.X_OK):
        raise HirfuzzError(f"--tvm-python {path}: not executable")
    return str(found.absolute())


def tvm_interpreter(value: str | None, ray: str | None = None) -> tuple[str | None, dict, str | None]:
    """--tvm-python: a managed environment's name or an interpreter's path; (path, its
    variables, the managed environment's name). With --ray a managed environment is made on
    each node that needs it, and a path is checked there."""
    from ..envs import load_environments, resolve_interpreter  # needs PyYAML, unlike the rest
    managed = value if value in load_environments() else None
    if ray is not None:
        return (None if managed or not value else str(Path(value).expanduser().absolute())), {}, managed
    if not value:  # the TVM this Python finds, through the campaign's environment
        return None, inherited_tvm_variables(), None
    python, env = resolve_interpreter(value)
    # recorded with the campaign, so that a replay from another shell finds the same TVM
    return _check_python(python), env if managed else inherited_tvm_variables(), None
