"""Other Pythons for the tests that check hirfuzz on every Python it supports (3.10 on).

A test asks for a Python X.Y with hirfuzz's requirements: the interpreter named by
HIRFUZZ_TEST_PYTHON<XY> (e.g. HIRFUZZ_TEST_PYTHON310), else a virtual environment made once
under ~/.cache/hirfuzz/test-pythons from a python X.Y found on this machine (pyenv's, or on
PATH), with this environment's apache-tvm and hirfuzz's other requirements installed by pip.
None when the machine has no such Python at all.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

CACHE = Path(os.environ.get("HIRFUZZ_TEST_PYTHONS", Path.home() / ".cache" / "hirfuzz" / "test-pythons"))
REQUIREMENTS = [f"apache-tvm=={version('apache-tvm')}", "numpy", "z3-solver", "pyyaml", "tqdm"]
MARKER = "hirfuzz-test-python.json"


def _is_python(path: str, wanted: tuple[int, int], imports: str = "") -> bool:
    probe = subprocess.run([path, "-c", f"import sys{imports}; print(tuple(sys.version_info[:2]))"],
                           capture_output=True, text=True, env={k: v for k, v in os.environ.items()
                                                                if k != "PYTHONPATH"})
    return probe.returncode == 0 and probe.stdout.strip() == str(wanted)


def _base_interpreter(wanted: tuple[int, int]) -> str | None:
    dotted = "%d.%d" % wanted
    candidates = sorted(glob.glob(str(Path.home() / f".pyenv/versions/{dotted}*/bin/python")), reverse=True)
    candidates += [p for p in (shutil.which(f"python{dotted}"),) if p]
    return next((c for c in candidates if _is_python(c, wanted)), None)


def python_with_tvm(wanted: tuple[int, int]) -> str | None:
    """An interpreter of Python `wanted` that imports tvm, numpy and hirfuzz's requirements."""
    named = os.environ.get("HIRFUZZ_TEST_PYTHON%d%d" % wanted)
    if named:
        return named if _is_python(named, wanted, ", tvm, numpy") else None
    if sys.version_info[:2] == wanted:
        return sys.executable
    folder = CACHE / ("py%d.%d" % wanted)
    python = folder / "bin" / "python"
    marker = folder / MARKER
    if marker.is_file() and json.loads(marker.read_text()) == REQUIREMENTS and python.is_file():
        return str(python)
    base = _base_interpreter(wanted)
    if base is None:
        return None
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([base, "-m", "venv", folder], check=True, timeout=300)
    subprocess.run([python, "-m", "pip", "install", "-q", *REQUIREMENTS], check=True, timeout=1800)
    marker.write_text(json.dumps(REQUIREMENTS))
    return str(python)
