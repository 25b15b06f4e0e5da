"""Findings reach the user on the paths users take, not only on the tests' own: a relative
--out named from another working directory (the default among them), and a TVM that is
found only through PYTHONPATH, as TVM's documentation sets up a source build."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from check_user_paths import hirfuzz as hirfuzz_from, planted_specs, pythonpath_only_tvm  # noqa: E402

# a planted spec whose every case is one real, stable TVM crash (conftest.BOOL_ADD)
QUICK = ("--iterations", "2", "--ops", "2", "--jobs", "1", "--no-progress")


def confirmed_and_lost(out: Path) -> tuple[list, list]:
    summary = json.loads((out / "summary.json").read_text())
    return summary["findings"], summary["unconfirmed"]


@pytest.mark.parametrize("out_args, out_name", [((), "hirfuzz-out"), (("--out", "../elsewhere"), "../elsewhere")])
def test_a_relative_out_from_another_folder_keeps_every_finding(tmp_path, out_args, out_name):
    work = tmp_path / "work"
    work.mkdir()
    specs = planted_specs(tmp_path / "specs")
    proc = hirfuzz_from(work, "--specs", specs, *QUICK, *out_args)
    assert proc.returncode == 0, proc.stderr
    out = (work / out_name).resolve()
    confirmed, lost = confirmed_and_lost(out)
    assert len(confirmed) == 1 and lost == [], (proc.stdout, lost)
    # replay from the same folder, by the same relative name
    replayed = hirfuzz_from(work, out_name, module="hirfuzz.replay")
    assert replayed.returncode == 1 and "1 still reproduce" in replayed.stdout, replayed.stdout + replayed.stderr


@pytest.fixture(scope="module")
def tvm_on_pythonpath(tmp_path_factory) -> tuple[Path, Path]:
    python, tvm_path = pythonpath_only_tvm(tmp_path_factory.mktemp("pythonpath-tvm"))
    alone = subprocess.run([python, "-c", "import tvm"], capture_output=True, text=True)
    assert "No module named 'tvm'" in alone.stderr  # the environment alone has no TVM
    return python, tvm_path


def test_a_tvm_found_through_pythonpath_keeps_every_finding(tmp_path, tvm_on_pythonpath):
    python, tvm_path = tvm_on_pythonpath
    specs = planted_specs(tmp_path / "specs")
    env = {**os.environ, "PYTHONPATH": str(tvm_path)}
    proc = hirfuzz_from(tmp_path, "--tvm-python", python, "--specs", specs, *QUICK, "--out", "out", env=env)
    assert proc.returncode == 0, proc.stderr
    confirmed, lost = confirmed_and_lost(tmp_path / "out")
    assert len(confirmed) == 1 and lost == [], (proc.stdout, lost)
    # replayed from a shell without the export: the campaign recorded where its TVM was
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    replayed = hirfuzz_from(tmp_path, "out", module="hirfuzz.replay", env=bare)
    assert replayed.returncode == 1 and "1 still reproduce" in replayed.stdout, replayed.stdout + replayed.stderr
    # and the saved script runs as the maintainer runs it, with the same export
    [script] = (tmp_path / "out" / "findings").glob("*/repro.py")
    by_hand = subprocess.run([python, script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert by_hand.returncode != 0 and "InternalError" in by_hand.stderr, by_hand.stderr[-2000:]
