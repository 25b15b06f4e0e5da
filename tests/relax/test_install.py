"""A non-editable `pip install .` carries everything hirfuzz reads at run time: op specs,
pass catalogs, the managed environments' pins and the titles' phrase tables are package data."""
import json
import os
import subprocess
import sys

from conftest import ROOT


def test_a_non_editable_install_lists_ops_and_runs_a_campaign(tmp_path):
    # a copy of the tracked files, so that no stale build/ or egg-info of this checkout leaks in
    src = tmp_path / "src"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        dest = src / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes((ROOT / name).read_bytes())
    venv = tmp_path / "venv"
    # this Python's packages (TVM, numpy, z3, yaml) stay visible; hirfuzz itself comes from the install
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    install = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(src)],
                             capture_output=True, text=True, env=env)
    assert install.returncode == 0, install.stderr[-3000:]
    away = tmp_path / "elsewhere"  # not the checkout: `import hirfuzz` must find the installed copy
    away.mkdir()

    def hirfuzz(*args):
        return subprocess.run([python, "-m", "hirfuzz", *map(str, args)], capture_output=True, text=True,
                              cwd=away, env=env, timeout=600)
    where = subprocess.run([python, "-c", "import hirfuzz; print(hirfuzz.__file__)"], capture_output=True,
                           text=True, cwd=away, env=env)
    assert str(venv) in where.stdout, where.stdout + where.stderr
    for ir in ("relax", "relay"):
        ops = hirfuzz("--ir", ir, "--list-ops")
        assert ops.returncode == 0 and "add" in ops.stdout.split(), ops.stderr
        passes = hirfuzz("--ir", ir, "--list-passes")
        assert passes.returncode == 0 and "FoldConstant" in passes.stdout.split(), passes.stderr
    assert hirfuzz("envs").returncode == 0
    # the phrase tables of bug-report titles, read only when a finding is reported
    titles = subprocess.run([python, "-c", "from hirfuzz.campaign.titles import phrases; print(len(phrases()['templates']))"],
                            capture_output=True, text=True, cwd=away, env=env)
    assert titles.returncode == 0 and int(titles.stdout) > 0, titles.stderr
    out = tmp_path / "out"
    run = hirfuzz("--iterations", 3, "--ops", 5, "--out", out, "--no-progress", "--jobs", 1)
    assert run.returncode == 0, run.stderr
    assert json.loads((out / "summary.json").read_text())["cases"] == 3
