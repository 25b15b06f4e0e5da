"""Managed TVM environments (`python -m hirfuzz setup NAME`, `envs`, `--tvm-python NAME`).

Every set-up runs in a subprocess with HIRFUZZ_HOME in a temporary folder; the fast tests
use a table of fake environments (HIRFUZZ_ENVIRONMENTS) whose only package is numpy and
whose check is `import numpy`. Nothing here imports TVM.
"""
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import ROOT

FAKE_TABLE = """
environments:
  missing:
    packages: [hirfuzz-test-no-such-package==0.0.1]
    verify: numpy
  tiny:
    packages: [numpy==2.4.6]
    verify: numpy
    env: {HIRFUZZ_TEST_SITE: "{site_packages}/numpy"}
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    """HIRFUZZ_HOME and the fake table, for this process and the subprocesses it starts."""
    table = tmp_path / "environments.yaml"
    table.write_text(FAKE_TABLE)
    monkeypatch.setenv("HIRFUZZ_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HIRFUZZ_ENVIRONMENTS", str(table))
    return tmp_path / "home"


def hirfuzz(*args, **env):
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-m", "hirfuzz", *args], capture_output=True, text=True,
                          cwd=ROOT, env=environ, timeout=1800)


def test_missing_package_is_one_message_and_leaves_no_folder(home, tmp_path):
    # offline: no index, an empty folder of wheels, so pip asks no registry at all
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    proc = hirfuzz("setup", "missing", PIP_NO_INDEX="1", PIP_FIND_LINKS=str(empty))
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("hirfuzz: error:")]
    assert len(errors) == 1
    assert "hirfuzz-test-no-such-package" in errors[0]
    assert errors[0] == proc.stderr.strip().splitlines()[-1]
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    assert not (home / "envs" / "missing").exists()


def test_half_made_folder_is_rebuilt_then_setup_is_idempotent(home):
    folder = home / "envs" / "tiny"
    (folder / "bin").mkdir(parents=True)
    (folder / "leftover").write_text("from a set-up killed half-way")
    listed = hirfuzz("envs")
    assert "broken" in next(line for line in listed.stdout.splitlines() if line.startswith("tiny"))

    first = hirfuzz("setup", "tiny")
    assert first.returncode == 0, first.stderr
    python = first.stdout.strip().splitlines()[-1]
    assert python == str(folder / "bin" / "python")
    assert not (folder / "leftover").exists()
    marker = json.loads((folder / "hirfuzz-env.json").read_text())
    assert marker["packages"] == ["numpy==2.4.6"] and marker["python"] == python
    assert marker["env"] == {"HIRFUZZ_TEST_SITE": marker["site_packages"] + "/numpy"}

    t0 = time.monotonic()
    again = hirfuzz("setup", "tiny")
    assert again.returncode == 0 and again.stdout.strip() == python
    assert "pip install" not in again.stderr
    assert time.monotonic() - t0 < 10
    assert "ready" in next(line for line in hirfuzz("envs").stdout.splitlines() if line.startswith("tiny"))


def test_marker_for_other_pins_is_not_used(home):
    from hirfuzz.envs import State, environment_dir, get_spec, read_marker, resolve_interpreter
    from hirfuzz.errors import HirfuzzError
    folder = environment_dir("tiny")
    (folder / "bin").mkdir(parents=True)
    python = folder / "bin" / "python"
    python.symlink_to(sys.executable)
    marker = {"name": "tiny", "packages": ["numpy==1.0"], "python": str(python), "env": {}}
    (folder / "hirfuzz-env.json").write_text(json.dumps(marker))
    assert read_marker(get_spec("tiny"), folder)[0] is State.OUTDATED
    with pytest.raises(HirfuzzError, match="other package versions: run `python -m hirfuzz setup tiny`"):
        resolve_interpreter("tiny")

    marker["packages"] = ["numpy==2.4.6"]
    marker["env"] = {"X": "1"}
    (folder / "hirfuzz-env.json").write_text(json.dumps(marker))
    # a managed environment's TVM is its own: the campaign's PYTHONPATH is cleared for it
    assert resolve_interpreter("tiny") == (str(python), {"PYTHONPATH": "", "X": "1"})


def test_resolve_interpreter_names_the_setup_command(home, monkeypatch):
    from hirfuzz.envs import resolve_interpreter
    from hirfuzz.errors import HirfuzzError
    monkeypatch.delenv("HIRFUZZ_ENVIRONMENTS")   # the shipped table: relay, relax
    with pytest.raises(HirfuzzError) as info:
        resolve_interpreter("relay")
    assert str(info.value) == "the relay environment is not set up: run `python -m hirfuzz setup relay`"
    assert resolve_interpreter("/usr/bin/python3") == ("/usr/bin/python3", {})


def test_tvm_python_with_an_environment_not_set_up_is_one_line(tmp_path):
    proc = hirfuzz("--tvm-python", "relay", "--iterations", "1", "--out", str(tmp_path / "out"),
                   HIRFUZZ_HOME=str(tmp_path / "home"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("hirfuzz: error: the relay environment is not set up: "
                                   "run `python -m hirfuzz setup relay`")


def test_shipped_table_pins_every_package():
    from hirfuzz.dialects import dialect_info
    from hirfuzz.envs import load_environments
    table = load_environments(str(ROOT / "hirfuzz" / "environments.yaml"))
    assert set(table) >= {"relay", "relax"}
    assert table["relay"].verify is dialect_info("relay").setup_check
    assert table["relax"].verify is dialect_info("relax").setup_check
    for spec in table.values():
        assert all("==" in package for package in spec.packages), spec.name
    assert table["relay"].runtime_env("/sp")["LD_LIBRARY_PATH"] == "/sp/llvm/lib"
    assert table["relay"].env["TOPHUB_LOCATION"] == "NONE"


def test_pip_failure_without_a_known_message_shows_its_last_lines():
    from hirfuzz.envs import pip_failure_message
    message = pip_failure_message("relay", "numpy==2.4.6", ["building...", "ERROR: disk full"])
    assert "`pip install numpy==2.4.6` failed" in message and message.endswith("ERROR: disk full")
    message = pip_failure_message("relay", "xtc-tvm-python-bindings==0.19.0.12",
                                  ["ERROR: No matching distribution found for ml-dtypes>=0.5"])
    assert "ml-dtypes>=0.5 (needed by xtc-tvm-python-bindings==0.19.0.12)" in message


@pytest.mark.slow
def test_setup_relay_for_real(tmp_path):
    home = str(tmp_path / "home")
    t0 = time.monotonic()
    first = hirfuzz("setup", "relay", HIRFUZZ_HOME=home)
    setup_s = time.monotonic() - t0
    assert first.returncode == 0, first.stderr[-3000:]
    python = first.stdout.strip().splitlines()[-1]
    marker = json.loads((tmp_path / "home" / "envs" / "relay" / "hirfuzz-env.json").read_text())
    assert marker["tvm"].startswith("0.19") and marker["python"] == python
    assert marker["env"]["LD_LIBRARY_PATH"].endswith("site-packages/llvm/lib")

    t0 = time.monotonic()
    again = hirfuzz("setup", "relay", HIRFUZZ_HOME=home)
    again_s = time.monotonic() - t0
    assert again.returncode == 0 and again.stdout.strip() == python
    assert again_s < 10, again_s
    listed = hirfuzz("envs", HIRFUZZ_HOME=home).stdout
    assert "ready" in listed and marker["tvm"] in listed
    print(f"setup relay: {setup_s:.1f} s; again: {again_s:.2f} s")


@pytest.mark.slow
@pytest.mark.parametrize("name, version", [("relax-0.25", "0.25.0.post1"), ("relax-0.26", "0.26.0")])
def test_earlier_relax_releases_set_up_and_build(tmp_path, name, version):
    """Each release's pins install together and build and run a Relax function for real
    (0.25 needs its own apache-tvm-ffi, and has a relax.TensorType of another meaning)."""
    proc = hirfuzz("setup", name, HIRFUZZ_HOME=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    listed = next(line for line in hirfuzz("envs", HIRFUZZ_HOME=str(tmp_path)).stdout.splitlines()
                  if line.startswith(name + " "))
    assert listed.split()[1:3] == ["ready", version], listed
