"""Every way of installing hirfuzz carries what it reads at run time. The op specs
(opspecs/) and the pass catalogs (passes.yaml) stand at the top of the repository, outside
the package: a wheel, built from the repository (as `pip install .` builds it) or from its
sdist, carries a copy inside the package, and runs a campaign with no checkout anywhere;
an editable install reads the top-level files where they stand. The managed environments'
pins and the titles' phrase tables are ordinary package data.

Each test starts from a clean copy of the work tree (its tracked files, and those not yet
added that git does not ignore), never from its build/ or egg-info, and runs hirfuzz from
a folder outside any checkout with no PYTHONPATH.
"""
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def clean_copy(dest: Path) -> Path:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {ROOT}")
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (ROOT / name).is_file():  # a file deleted in the work tree but not yet in git is left out
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes((ROOT / name).read_bytes())
    return dest


def pip(*args, python: str | None = None):
    """This Python's pip, installing into `python`'s environment where one is named."""
    target = ["--python", python] if python else []
    proc = subprocess.run([sys.executable, "-m", "pip", *target, *map(str, args)], capture_output=True, text=True,
                          env=ENV, timeout=900)
    assert proc.returncode == 0, f"pip {' '.join(map(str, args))}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"


def build_wheel(source: Path, folder: Path) -> Path:
    """A wheel built by pip as `pip install` builds one (isolated, with a current setuptools)."""
    pip("wheel", "-q", "--no-deps", "-w", folder, source)
    (wheel,) = folder.glob("hirfuzz-*.whl")
    return wheel


def build_sdist(source: Path, folder: Path) -> Path:
    """The sdist, from setuptools' PEP 517 hook (what `python -m build --sdist` calls)."""
    hook = f"from setuptools import build_meta; build_meta.build_sdist({str(folder)!r})"
    proc = subprocess.run([sys.executable, "-c", hook], cwd=source, capture_output=True, text=True, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sdist,) = folder.glob("hirfuzz-*.tar.gz")
    return sdist


def fresh_venv(folder: Path, system_site_packages: bool) -> str:
    """A new virtual environment (pip itself comes from this Python: `pip --python`)."""
    flags = ["--system-site-packages"] if system_site_packages else []
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", *flags, folder], check=True)
    return str(folder / "bin" / "python")


def top_level_data(source: Path) -> dict[str, bytes]:
    """The checkout's passes.yaml and op specs, by their names there."""
    files = {"passes.yaml": source / "passes.yaml",
             **{f"opspecs/{spec.name}": spec for spec in (source / "opspecs").glob("*.yaml")}}
    return {name: path.read_bytes() for name, path in files.items()}


def carries_the_top_level_data(wheel: Path, source: Path) -> bool:
    """The wheel's package holds a copy of each, byte for byte, and no other op spec."""
    with zipfile.ZipFile(wheel) as archive:
        packaged = {name.removeprefix("hirfuzz/"): archive.read(name) for name in archive.namelist()
                    if name == "hirfuzz/passes.yaml" or name.startswith("hirfuzz/opspecs/")}
    return packaged == top_level_data(source)


class Hirfuzz:
    """hirfuzz as a user runs it: `python -m hirfuzz`, from a folder outside any checkout."""

    def __init__(self, python: str, away: Path):
        self.python, self.away = python, away
        away.mkdir(exist_ok=True)

    def __call__(self, *args) -> subprocess.CompletedProcess:
        return subprocess.run([self.python, "-m", "hirfuzz", *map(str, args)], capture_output=True, text=True,
                              cwd=self.away, env=ENV, timeout=600)

    def python_says(self, code: str) -> str:
        proc = subprocess.run([self.python, "-c", code], capture_output=True, text=True, cwd=self.away, env=ENV)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout.strip()

    def names(self, ir: str, what: str) -> list[str]:
        proc = self("--ir", ir, f"--list-{what}")
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout.split()

    def data_paths(self) -> list[str]:
        """Where the running hirfuzz reads its package, op specs and pass catalog."""
        return self.python_says("import hirfuzz, hirfuzz.data as d; print(hirfuzz.__file__, d.SPEC_DIR, "
                                "d.PASS_CATALOG)").split()


def runs_from_the_wheel_alone(hirfuzz: Hirfuzz, venv: Path, tmp_path: Path):
    """Lists both dialects' ops and passes and runs a short campaign, all read from the
    installed package (never a checkout's files)."""
    site = hirfuzz.python_says("import sysconfig; print(sysconfig.get_paths()['purelib'])")
    package = Path(site) / "hirfuzz"
    assert hirfuzz.data_paths() == [str(package / "__init__.py"), str(package / "opspecs"),
                                    str(package / "passes.yaml")]
    assert str(venv) in site
    for ir, op, a_pass in (("relax", "add", "FoldConstant"), ("relay", "add", "SimplifyInference")):
        assert op in hirfuzz.names(ir, "ops")
        assert a_pass in hirfuzz.names(ir, "passes")
    assert len(hirfuzz.names("relax", "passes")) >= 40 and len(hirfuzz.names("relay", "passes")) >= 40
    assert hirfuzz("envs").returncode == 0
    # the phrase tables of bug-report titles, read only when a finding is reported
    assert int(hirfuzz.python_says("from hirfuzz.campaign.titles import phrases; "
                                   "print(len(phrases()['templates']))")) > 0
    out = tmp_path / "out"
    run = hirfuzz("--iterations", 3, "--ops", 5, "--out", out, "--no-progress", "--jobs", 1)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["cases"] == 3


@pytest.mark.slow  # builds a wheel; the sdist and editable-install tests beside it guard the data files quickly
def test_a_wheel_built_from_a_clean_copy_carries_the_top_level_data_and_runs_a_campaign_anywhere(tmp_path):
    """The `pip install .` route: a wheel built from the repository itself."""
    source = clean_copy(tmp_path / "src")
    wheel = build_wheel(source, tmp_path / "wheel")
    assert carries_the_top_level_data(wheel, source)
    # a new environment; TVM, numpy, z3 and yaml come from this Python's (installing them
    # takes most of a minute: the slow test below does), hirfuzz only from the wheel
    venv = tmp_path / "venv"
    python = fresh_venv(venv, system_site_packages=True)
    pip("install", "-q", "--no-deps", wheel, python=python)
    runs_from_the_wheel_alone(Hirfuzz(python, tmp_path / "elsewhere"), venv, tmp_path)


def test_the_sdist_carries_the_top_level_data(tmp_path):
    source = clean_copy(tmp_path / "src")
    with tarfile.open(build_sdist(source, tmp_path / "sdist")) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert set(top_level_data(source)) | {"setup.py", "MANIFEST.in"} <= in_sdist


@pytest.mark.slow
def test_a_wheel_from_the_sdist_in_an_environment_of_its_own_installs_its_dependencies_and_runs_a_campaign(tmp_path):
    """The `python -m build` route: sdist, then a wheel from it, into an environment that
    sees nothing of this Python's, its dependencies (apache-tvm among them) from the index.
    About 90 s."""
    source = clean_copy(tmp_path / "src")
    wheel = build_wheel(build_sdist(source, tmp_path / "sdist"), tmp_path / "wheel")
    assert carries_the_top_level_data(wheel, source)
    venv = tmp_path / "venv"
    python = fresh_venv(venv, system_site_packages=False)
    pip("install", "-q", wheel, python=python)
    runs_from_the_wheel_alone(Hirfuzz(python, tmp_path / "elsewhere"), venv, tmp_path)


def test_an_editable_install_reads_the_top_level_files_so_an_edit_takes_effect_on_the_next_run(tmp_path):
    checkout = clean_copy(tmp_path / "checkout")
    python = fresh_venv(tmp_path / "venv", system_site_packages=True)
    pip("install", "-q", "--no-deps", "-e", checkout, python=python)
    hirfuzz = Hirfuzz(python, tmp_path / "elsewhere")
    assert hirfuzz.data_paths() == [str(checkout / "hirfuzz" / "__init__.py"), str(checkout / "opspecs"),
                                    str(checkout / "passes.yaml")]
    assert not (checkout / "hirfuzz" / "opspecs").exists() and not (checkout / "hirfuzz" / "passes.yaml").exists()
    ops = {ir: hirfuzz.names(ir, "ops") for ir in ("relax", "relay")}
    passes = {ir: hirfuzz.names(ir, "passes") for ir in ("relax", "relay")}
    assert "sort" in ops["relax"] and "sort" in ops["relay"]

    sort_family = checkout / "opspecs" / "sort.yaml"
    dropped = {line.split("name:")[1].strip() for line in sort_family.read_text().splitlines()
               if line.startswith("  - name:")}
    sort_family.unlink()
    catalog = checkout / "passes.yaml"
    sections = [line for line in catalog.read_text().splitlines() if line[:1].isalpha()]
    assert sections[-1] == "relay:", "the edit below adds to the last section's passes"
    with catalog.open("a") as f:
        f.write("    - {name: AddedInTheCheckout, draw: false}\n")

    for ir in ("relax", "relay"):
        assert hirfuzz.names(ir, "ops") == [op for op in ops[ir] if op not in dropped]
    assert hirfuzz.names("relay", "passes") == passes["relay"] + ["AddedInTheCheckout"]
    assert hirfuzz.names("relax", "passes") == passes["relax"]
