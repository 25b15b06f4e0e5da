"""--tvm-python: workers, reproducer checks, reductions and replay under another interpreter,
one that holds a TVM and numpy and nothing of hirfuzz's."""
import json
import os
import subprocess
import sys
import venv

import pytest

from conftest import BOOL_ADD, ROOT, SPECS, run_hirfuzz

# its module fixture is costly: one xdist worker runs the whole file (`--dist loadgroup`)
pytestmark = pytest.mark.xdist_group("tvm-python")


def plant_bool_add(tmp_path):
    d = tmp_path / "specs"
    d.mkdir()
    (d / "ops.yaml").write_text(BOOL_ADD)
    (d / "tolerances.yaml").write_text((SPECS / "tolerances.yaml").read_text())
    return d


def installed_version(dist: str) -> str:
    from importlib.metadata import version
    return version(dist)


@pytest.fixture(scope="module")
def tvm_only_python(tmp_path_factory):
    """A second environment with only apache-tvm and numpy, as the campaign's own are."""
    home = tmp_path_factory.mktemp("tvm-only")
    venv.create(home, with_pip=True)
    python = home / "bin" / "python"
    pins = [f"apache-tvm=={installed_version('apache-tvm')}", f"numpy=={installed_version('numpy')}"]
    subprocess.run([python, "-m", "pip", "install", "-q", *pins], check=True, timeout=900)
    return python


def test_a_campaign_under_a_second_environment_runs_end_to_end(tmp_path, tvm_only_python):
    out = tmp_path / "out"
    proc = run_hirfuzz("--tvm-python", tvm_only_python, "--specs", plant_bool_add(tmp_path), "--iterations", 3,
                       "--ops", 2, "--out", out, "--no-progress", "--jobs", 1)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["findings"]) == 1 and summary["unconfirmed"] == []  # checked under that Python
    marker = json.loads((out / "campaign.json").read_text())
    assert marker["installation"]["python"] == str(tvm_only_python)
    assert marker["installation"]["tvm"] == summary["tvm"]
    # replay finds the interpreter the campaign used; this one's PYTHONPATH plays no part
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    replayed = subprocess.run([sys.executable, "-m", "hirfuzz.replay", out], capture_output=True, text=True,
                              cwd=ROOT, env=env)
    assert replayed.returncode == 1 and "1 still reproduce" in replayed.stdout, replayed.stdout


def test_a_python_without_tvm_is_one_clear_error(tmp_path):
    home = tmp_path / "bare"
    venv.create(home, with_pip=False)
    proc = run_hirfuzz("--tvm-python", home / "bin" / "python", "--iterations", 1, "--out", tmp_path / "o")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cannot import TVM" in proc.stderr and "No module named 'tvm'" in proc.stderr
    assert str(home / "bin" / "python") in proc.stderr


@pytest.mark.parametrize("content, mode, needle", [
    ("just some text\n", 0o755, "cannot run it as Python"),
    ("print('hi')\n", 0o644, "not executable"),
])
def test_a_file_that_is_no_python_is_one_clear_error(tmp_path, content, mode, needle):
    fake = tmp_path / "python"
    fake.write_text(content)
    fake.chmod(mode)
    proc = run_hirfuzz("--tvm-python", fake, "--iterations", 1, "--out", tmp_path / "o")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert needle in proc.stderr and str(fake) in proc.stderr
    missing = run_hirfuzz("--tvm-python", tmp_path / "nowhere", "--iterations", 1, "--out", tmp_path / "p")
    assert missing.returncode == 2 and "no such file" in missing.stderr
