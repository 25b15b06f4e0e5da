"""The coordinator's side never imports TVM: it must survive whatever TVM does, and it
may drive workers under another interpreter with another TVM (or none of its own). Nor
does it import ray unless --ray is given: a single-machine user never installs it."""
import subprocess
import sys

from conftest import ROOT

# every module the coordinator loads, and a short generation through the core
PROGRAM = """
import importlib.abc, sys

class NoTVM(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in ("tvm", "ray") or name.startswith(("tvm.", "ray.")):
            raise ImportError("the coordinator imported " + name)

sys.meta_path.insert(0, NoTVM())
import numpy as np
import hirfuzz.cli, hirfuzz.protocol, hirfuzz.worker, hirfuzz.replay, hirfuzz.report
import hirfuzz.campaign.coordinator, hirfuzz.campaign.reducer, hirfuzz.campaign.replay
import hirfuzz.campaign.raypool
import hirfuzz.dialects.relax.repro, hirfuzz.dialects.relax.violate
from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import generate_graph
from hirfuzz.core.passes import load_catalog
from hirfuzz.core.spec import load_specs
from hirfuzz.dialects import dialect_info
specs = load_specs()
graph = generate_graph(specs, np.random.default_rng(0), 10, Coverage())
assert len(graph.operators) == 10
assert len(load_catalog(builtin=dialect_info("relax").catalog).entries) >= 40
print("ok", sorted(m for m in sys.modules if m.split(".")[0] in ("tvm", "ray")))
"""


def test_coordinator_modules_import_no_tvm():
    proc = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok []"


def test_ray_missing_is_one_clear_error(tmp_path):
    """--ray without the ray extra: one line saying how to install it, exit status 2."""
    hide_ray = ("import sys, importlib.abc\n"
                "class NoRay(importlib.abc.MetaPathFinder):\n"
                "    def find_spec(self, name, path, target=None):\n"
                "        if name == 'ray' or name.startswith('ray.'):\n"
                "            raise ImportError('No module named ray')\n"
                "sys.meta_path.insert(0, NoRay())\n"
                "from hirfuzz.cli import main\n"
                "sys.exit(main())\n")
    proc = subprocess.run([sys.executable, "-c", hide_ray, "--ray", "--iterations", "1", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "hirfuzz: error: --ray needs the ray extra: pip install 'hirfuzz[ray]'"
    assert not (tmp_path / "o").exists()  # stopped before anything was written
