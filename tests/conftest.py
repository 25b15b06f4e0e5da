import json
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


def cuda_device() -> str:
    """"" where this machine has a GPU TVM can use; otherwise why not."""
    if not (os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")):
        return "no NVIDIA device on this machine"
    import tvm
    if not tvm.runtime.enabled("cuda"):
        return f"TVM {tvm.__version__} here was built without CUDA"
    return "" if tvm.cuda(0).exist else "TVM sees no CUDA device"


@pytest.hookimpl(trylast=True)  # after -m has deselected: only the gpu tests that would run
def pytest_collection_modifyitems(config, items):
    """Tests marked gpu run only where TVM sees a GPU (`python -m pytest -m gpu` there);
    elsewhere each is skipped, and the summary says why in one line."""
    gpu = [item for item in items if "gpu" in item.keywords]
    if not gpu:
        return
    why = cuda_device()
    if why:
        for item in gpu:
            item.add_marker(pytest.mark.skip(reason=f"gpu test: {why}"))
        config._gpu_skipped = (len(gpu), why)


def pytest_terminal_summary(terminalreporter, config):
    skipped = getattr(config, "_gpu_skipped", None)
    if skipped:
        terminalreporter.write_line(f"{skipped[0]} gpu test(s) skipped: {skipped[1]}")


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


def put_pending(out, name: str, finding: dict, case: dict, log: str = ""):
    """A finding as a campaign keeps it when first seen (out/pending/NAME: finding.json,
    case.json, log.txt), which the campaign's next run with its folder finishes."""
    pending = out / "pending" / name
    pending.mkdir(parents=True)
    (pending / "finding.json").write_text(json.dumps(finding))
    (pending / "case.json").write_text(json.dumps(case))
    (pending / "log.txt").write_text(log)


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


@pytest.fixture
def spec_dir(tmp_path):
    """An empty op-spec folder with the shipped tolerances, for a test's own specs."""
    d = tmp_path / "specs"
    d.mkdir()
    shutil.copy(SPECS / "tolerances.yaml", d / "tolerances.yaml")
    return d


def assert_named_spec_error(spec_dir, field: str, words: str):
    """Loading `spec_dir` fails with one message naming bad.yaml, op 'myop', the field and `words`."""
    from hirfuzz.core.spec import load_specs
    from hirfuzz.errors import SpecError
    with pytest.raises(SpecError) as info:
        load_specs(spec_dir)
    msg = str(info.value)
    assert "bad.yaml" in msg and "op 'myop'" in msg and f"field '{field}'" in msg, msg
    assert words in msg, msg
