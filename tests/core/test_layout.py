"""The repository's top level is the design's: setup.cfg, hirfuzz/, opspecs/, passes.yaml,
tests/, tools/ and README.md, beside the files a Python project keeps there. The op specs
and the pass catalogs live only at the top (no copy inside the package), and a checkout
reads them there."""
import subprocess

import pytest
import yaml

from conftest import ROOT
from hirfuzz import data
from hirfuzz.core.spec import load_specs
from hirfuzz.dialects import dialect_info, dialect_names

DESIGN = {"setup.cfg", "hirfuzz", "opspecs", "passes.yaml", "tests", "tools", "README.md"}
# what a setuptools project and its CI keep beside them: a minimal pyproject.toml, setup.py
# (it copies opspecs/ and passes.yaml into the wheel) and MANIFEST.in (into the sdist)
PROJECT = {"pyproject.toml", "setup.py", "MANIFEST.in", ".ci", ".gitignore"}


@pytest.fixture(scope="module")
def tracked() -> list[str]:
    proc = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"not a git checkout: {ROOT}")
    return proc.stdout.split()


def test_the_top_level_holds_the_designs_entries_and_the_projects_files_only(tracked):
    top = {name.split("/")[0] for name in tracked}
    assert DESIGN <= top, f"missing at the top: {sorted(DESIGN - top)}"
    assert top - DESIGN <= PROJECT, f"neither the design's nor a project file: {sorted(top - DESIGN - PROJECT)}"


def test_op_specs_and_pass_catalogs_are_kept_at_the_top_only(tracked):
    inside = [name for name in tracked if name.startswith("hirfuzz/")
              and (name.startswith("hirfuzz/opspecs/") or name.endswith("passes.yaml"))]
    assert inside == []
    assert any(name.startswith("opspecs/") and name.endswith(".yaml") for name in tracked)


def test_a_checkout_reads_the_top_level_files():
    assert data.SPEC_DIR == ROOT / "opspecs" and data.PASS_CATALOG == ROOT / "passes.yaml"
    sources = {op.source for op in load_specs().ops.values()}
    assert sources == {str(p) for p in (ROOT / "opspecs").glob("*.yaml") if p.name != "tolerances.yaml"}


def test_each_dialect_declares_its_section_of_the_one_catalog():
    sections = yaml.safe_load((ROOT / "passes.yaml").read_text())
    assert list(sections) == dialect_names()
    for name in dialect_names():
        catalog = dialect_info(name).catalog
        assert (catalog.file, catalog.dialect) == (ROOT / "passes.yaml", name)
        assert sections[name]["passes"]
