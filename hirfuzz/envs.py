"""Managed TVM environments: `python -m hirfuzz setup NAME`, `python -m hirfuzz envs`.

TVM 0.19 (Relay) and apache-tvm 0.27 (Relax) both install a top-level `tvm`, so each lives
in a virtual environment of its own under `$HIRFUZZ_HOME/envs/NAME` (default
`~/.cache/hirfuzz/envs/NAME`). The known environments, their pinned packages and the
variables their interpreter needs are package data (`environments.yaml`;
`HIRFUZZ_ENVIRONMENTS=FILE` replaces the table, for tests and for trying other pins).

An environment is usable only once its marker, `hirfuzz-env.json`, exists: setup writes it
last, atomically, after a real build and run in the new environment passed. A folder
without a valid marker (setup killed half-way) or with a marker for other pins is removed
and rebuilt, never used. This module never imports TVM: it runs the environment's own
interpreter for that.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from importlib import resources
from pathlib import Path

import yaml

from .dialects import SetupCheck, dialect_infos
from .errors import HirfuzzError

MARKER = "hirfuzz-env.json"
TABLE_VARIABLE = "HIRFUZZ_ENVIRONMENTS"
HOME_VARIABLE = "HIRFUZZ_HOME"
SITE_PACKAGES = "{site_packages}"    # placeholder in an environment's variables
VERIFY_TIMEOUT_S = 600
PIP_TAIL_LINES = 15


class State(Enum):
    READY = "ready"
    NOT_SET_UP = "not set up"
    BROKEN = "broken"        # a folder without a valid marker: setup stopped half-way
    OUTDATED = "outdated"    # set up for other pinned packages


@dataclass(frozen=True)
class EnvironmentSpec:
    """One known environment, as `environments.yaml` describes it."""
    name: str
    packages: tuple[str, ...]
    dialects: tuple[str, ...]
    verify: SetupCheck
    env: dict[str, str] = field(default_factory=dict)   # may hold {site_packages}
    description: str = ""

    def runtime_env(self, site_packages: str) -> dict[str, str]:
        return {key: value.replace(SITE_PACKAGES, site_packages) for key, value in self.env.items()}


# --- the table of environments ------------------------------------------------------------

def _spec_from_entry(name: str, entry, where: str) -> EnvironmentSpec:
    if not isinstance(entry, dict):
        raise HirfuzzError(f"{where}: environment {name}: expected a mapping")
    packages = entry.get("packages")
    if not packages or not all(isinstance(p, str) and p.strip() for p in packages):
        raise HirfuzzError(f"{where}: environment {name}: packages must be a non-empty list of requirements")
    try:
        verify = setup_checks()[entry.get("verify")]
    except (KeyError, TypeError):
        known = ", ".join(setup_checks())
        raise HirfuzzError(f"{where}: environment {name}: verify must be one of {known}, "
                           f"not {entry.get('verify')!r}") from None
    env = entry.get("env") or {}
    if not isinstance(env, dict):
        raise HirfuzzError(f"{where}: environment {name}: env must be a mapping of variables")
    return EnvironmentSpec(name=name, packages=tuple(packages), dialects=tuple(entry.get("dialects") or ()),
                           verify=verify, env={str(k): str(v) for k, v in env.items()},
                           description=str(entry.get("description", "")))


def load_environments(path: str | None = None) -> dict[str, EnvironmentSpec]:
    """The known environments: from `path`, else $HIRFUZZ_ENVIRONMENTS, else the shipped table."""
    path = path or os.environ.get(TABLE_VARIABLE)
    try:
        if path:
            where, text = path, Path(path).read_text()
        else:
            where, text = "environments.yaml", resources.files("hirfuzz").joinpath("environments.yaml").read_text()
    except OSError as exc:
        raise HirfuzzError(f"{path}: cannot read the environment table ({exc.strerror or exc})") from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise HirfuzzError(f"{where}: not valid YAML ({exc})") from None
    entries = data.get("environments") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise HirfuzzError(f"{where}: expected a mapping `environments:` of names to environments")
    return {str(name): _spec_from_entry(str(name), entry, where) for name, entry in entries.items()}


def get_spec(name: str) -> EnvironmentSpec:
    table = load_environments()
    if name not in table:
        raise HirfuzzError(f"unknown environment {name!r}; known: {', '.join(table)}")
    return table[name]


# --- where environments live, and whether they are ready -----------------------------------

def envs_home() -> Path:
    home = os.environ.get(HOME_VARIABLE)
    base = Path(home).expanduser() if home else Path.home() / ".cache" / "hirfuzz"
    return base / "envs"


def environment_dir(name: str) -> Path:
    return envs_home() / name


def venv_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def read_marker(spec: EnvironmentSpec, folder: Path) -> tuple[State, dict | None]:
    """The environment's state, and its marker when ready."""
    if not folder.exists():
        return State.NOT_SET_UP, None
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return State.BROKEN, None
    if not isinstance(marker, dict) or marker.get("name") != spec.name:
        return State.BROKEN, None
    python = Path(str(marker.get("python", "")))
    # the folder may have been moved or copied: its marker must name its own interpreter
    if python != venv_python(folder) or not python.is_file() or not os.access(python, os.X_OK):
        return State.BROKEN, None
    if marker.get("packages") != list(spec.packages):
        return State.OUTDATED, marker
    return State.READY, marker


def resolve_interpreter(value: str) -> tuple[str, dict]:
    """--tvm-python VALUE: a managed environment's interpreter and the variables it needs, or
    VALUE itself (a path, checked by the caller) with none."""
    table = load_environments()
    if value not in table:
        return value, {}
    state, marker = read_marker(table[value], environment_dir(value))
    if state is not State.READY:
        detail = {State.NOT_SET_UP: "is not set up",
                  State.BROKEN: "is broken (its set-up did not finish)",
                  State.OUTDATED: "was set up for other package versions"}[state]
        raise HirfuzzError(f"the {value} environment {detail}: run `python -m hirfuzz setup {value}`")
    # a managed environment's TVM is its own: the campaign's PYTHONPATH (a source build of
    # another TVM, say) must not shadow it; an empty PYTHONPATH is no PYTHONPATH to Python
    return marker["python"], {"PYTHONPATH": "", **(marker.get("env") or {})}


# --- setting one up ------------------------------------------------------------------------

def _say(message: str):
    """hirfuzz's own progress lines go to stderr, so that stdout holds just the interpreter."""
    print(f"hirfuzz: {message}", file=sys.stderr, flush=True)


def _child_env(extra: dict | None = None) -> dict:
    # the new interpreter must see its own site-packages, not the ones hirfuzz runs with
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return {**env, **(extra or {})}


def _create_venv(folder: Path):
    proc = subprocess.run([sys.executable, "-m", "venv", str(folder)], capture_output=True, text=True,
                          env=_child_env())
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().splitlines()
        raise HirfuzzError(f"could not create a virtual environment in {folder}: "
                           f"{said[-1] if said else f'python -m venv exited with status {proc.returncode}'}")


_NOT_FOUND = [re.compile(r"No matching distribution found for (\S+)"),
              re.compile(r"Could not find a version that satisfies the requirement (\S+)")]


def pip_failure_message(env_name: str, package: str, stderr_lines: list[str]) -> str:
    """One message for a failed `pip install package`: the requirement pip could not find,
    or else the step and pip's last lines."""
    text = "\n".join(stderr_lines)
    for pattern in _NOT_FOUND:
        found = pattern.search(text)
        if found:
            missing = found.group(1)
            via = "" if missing == package else f" (needed by {package})"
            return (f"cannot set up the {env_name} environment: pip found no distribution of {missing}{via}; "
                    "the package index is unreachable (offline?) or has no such package or version")
    tail = "\n".join(stderr_lines[-PIP_TAIL_LINES:]) or "(pip printed nothing on stderr)"
    return f"cannot set up the {env_name} environment: `pip install {package}` failed; pip's last lines:\n{tail}"


def _stream_stderr_fd():
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):   # a replaced stderr: let pip inherit ours
        return None


def _pip_install(env_name: str, python: Path, package: str):
    """pip's progress goes straight to our stderr; its stderr is echoed and kept to explain
    a failure."""
    cmd = [str(python), "-m", "pip", "install", package]
    proc = subprocess.Popen(cmd, stdout=_stream_stderr_fd(), stderr=subprocess.PIPE, text=True,
                            env=_child_env())
    kept: deque[str] = deque(maxlen=200)
    for line in proc.stderr:
        sys.stderr.write(line)
        kept.append(line.rstrip("\n"))
    if proc.wait() != 0:
        raise HirfuzzError(pip_failure_message(env_name, package, list(kept)))


def _site_packages(python: Path) -> str:
    proc = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, env=_child_env())
    if proc.returncode != 0:
        raise HirfuzzError(f"{python} cannot say where its site-packages is: {proc.stderr.strip()}")
    return proc.stdout.strip()


# the check of an environment for tests of the set-up machinery: cheap, no TVM
NUMPY_CHECK = SetupCheck("numpy", "import numpy", """
import json, numpy
print(json.dumps({"tvm": None}))
""")


def setup_checks() -> dict[str, SetupCheck]:
    """What environments.yaml's `verify:` may name: each dialect's check, and numpy's."""
    return {check.name: check for check in [*(info.setup_check for info in dialect_infos()), NUMPY_CHECK]}


def _verify(spec: EnvironmentSpec, python: Path, env: dict) -> str | None:
    """Build and run a tiny function in the new environment; its TVM version."""
    try:
        proc = subprocess.run([str(python), "-c", spec.verify.script], capture_output=True, text=True,
                              env=_child_env(env), timeout=VERIFY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise HirfuzzError(f"the {spec.name} environment's check ({spec.verify.words}) did not finish "
                           f"within {VERIFY_TIMEOUT_S} s") from None
    last = proc.stdout.strip().splitlines()[-1:] if proc.returncode == 0 else []
    try:
        return json.loads(last[0])["tvm"]
    except (IndexError, ValueError, KeyError, TypeError):
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-PIP_TAIL_LINES:])
        raise HirfuzzError(f"the {spec.name} environment installed, but its check ({spec.verify.words}) "
                           f"failed with status {proc.returncode}:\n{tail}") from None


def _write_marker(folder: Path, marker: dict):
    """Last step of a set-up, atomic: the marker exists only for a complete environment."""
    temp = folder / (MARKER + ".tmp")
    temp.write_text(json.dumps(marker, indent=2) + "\n")
    os.replace(temp, folder / MARKER)


def _build(spec: EnvironmentSpec, folder: Path) -> dict:
    steps = 3 + len(spec.packages)
    _say(f"[1/{steps}] creating a virtual environment in {folder}")
    _create_venv(folder)
    python = venv_python(folder)
    for number, package in enumerate(spec.packages, start=2):
        _say(f"[{number}/{steps}] pip install {package}")
        _pip_install(spec.name, python, package)
    site_packages = _site_packages(python)
    env = spec.runtime_env(site_packages)
    _say(f"[{steps - 1}/{steps}] checking it: {spec.verify.words}")
    tvm_version = _verify(spec, python, env)
    marker = {"name": spec.name, "packages": list(spec.packages), "dialects": list(spec.dialects),
              "python": str(python), "tvm": tvm_version, "site_packages": site_packages, "env": env,
              "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    _write_marker(folder, marker)
    _say(f"[{steps}/{steps}] ready: TVM {tvm_version or '(none)'}")
    return marker


def setup(name: str, force: bool = False) -> str:
    """Make the environment NAME (or find it ready); its interpreter."""
    spec = get_spec(name)
    folder = environment_dir(name)
    state, marker = read_marker(spec, folder)
    if state is State.READY and not force:
        return marker["python"]
    if folder.exists():
        why = "--force" if state is State.READY else {State.BROKEN: "its set-up did not finish",
                                                      State.OUTDATED: "it holds other package versions"}[state]
        _say(f"removing {folder} ({why})")
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        return _build(spec, folder)["python"]
    except BaseException:   # pip failed, the check failed, Ctrl-C: leave no half-made folder
        shutil.rmtree(folder, ignore_errors=True)
        raise


# --- the subcommands -----------------------------------------------------------------------

def setup_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hirfuzz setup",
        description="Make a managed TVM environment (a virtual environment under $HIRFUZZ_HOME/envs, "
                    "default ~/.cache/hirfuzz/envs) and print its interpreter, for --tvm-python NAME.")
    parser.add_argument("name", metavar="NAME", help="the environment: " + ", ".join(load_environments()))
    parser.add_argument("--force", action="store_true", help="rebuild it even if it is ready")
    args = parser.parse_args(argv)
    try:
        python = setup(args.name, force=args.force)
    except KeyboardInterrupt:   # setup already removed the half-made folder
        print(f"hirfuzz: setup {args.name} interrupted; nothing was kept", file=sys.stderr)
        return 130
    print(python)
    return 0


def describe_environments() -> list[tuple[str, str, str, str]]:
    """(name, state, TVM version, folder) for each known environment."""
    rows = []
    for name, spec in load_environments().items():
        folder = environment_dir(name)
        state, marker = read_marker(spec, folder)
        version = (marker or {}).get("tvm") or "-"
        rows.append((name, state.value, version, str(folder)))
    return rows


def envs_command(argv: list[str]) -> int:
    argparse.ArgumentParser(prog="python -m hirfuzz envs",
                            description="List the managed TVM environments and their state.").parse_args(argv)
    rows = [("NAME", "STATE", "TVM", "PATH")] + describe_environments()
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3])
    return 0

