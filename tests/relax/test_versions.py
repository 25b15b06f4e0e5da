"""Version triage: a finding's repro.py tried under other TVM releases (replay --versions)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from hirfuzz.campaign.versions import regression_since, version_key, versions_sentence
from hirfuzz.envs import resolve_interpreter

sys.path.insert(0, str(ROOT / "tools"))
from check_user_paths import hirfuzz, planted_specs  # noqa: E402


def test_release_order_puts_a_post_release_after_its_base():
    assert sorted(["0.27.0.post1", "0.26.0", "0.27.0", "0.25.0.post1"], key=version_key) == [
        "0.25.0.post1", "0.26.0", "0.27.0", "0.27.0.post1"]


@pytest.mark.parametrize("versions, since", [
    ({"0.25.0.post1": "passes", "0.26.0": "fails alike", "0.27.0.post1": "fails alike"}, "0.26.0"),
    ({"0.25.0.post1": "fails alike", "0.26.0": "fails alike", "0.27.0.post1": "fails alike"}, None),
    # an older release that fails otherwise (its API differs) dates nothing
    ({"0.25.0.post1": "fails otherwise", "0.26.0": "fails alike"}, None),
    ({"0.25.0.post1": "passes", "0.26.0": "fails otherwise", "0.27.0.post1": "fails alike"}, "0.26.0"),
    ({"0.26.0": "fails alike", "0.27.0.post1": "passes"}, None),  # fixed since: no regression
])
def test_a_regression_dates_from_the_release_after_the_last_that_passes(versions, since):
    assert regression_since(versions) == since


def test_the_sentence_a_bug_report_carries():
    versions = {"0.27.0.post1": "fails alike", "0.25.0.post1": "passes", "0.26.0": "fails alike"}
    assert versions_sentence(versions) == ("Fails alike on 0.26.0 and 0.27.0.post1; passes on 0.25.0.post1: "
                                           "a regression since 0.26.0.")


def test_replay_versions_records_what_each_tvm_does(tmp_path):
    specs = planted_specs(tmp_path / "specs")
    campaign = hirfuzz(tmp_path, "--specs", specs, "--iterations", "1", "--ops", "2", "--jobs", "1",
                       "--no-progress", "--out", "out")
    assert campaign.returncode == 0, campaign.stderr
    # this interpreter's TVM, named by its path, as a user names their own build
    proc = hirfuzz(tmp_path, "--versions", sys.executable, "out", module="hirfuzz.replay")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    import tvm
    assert f"Fails alike on {tvm.__version__}." in proc.stdout
    [finding] = (tmp_path / "out" / "findings").glob("*/finding.json")
    extra = json.loads(finding.read_text())["extra"]
    assert extra["versions"] == {tvm.__version__: "fails alike"} and extra["regression_since"] is None
    assert f"**TVM releases:**" not in (finding.parent / "bug-report.md").read_text()  # one release dates nothing


def test_a_campaign_dates_its_confirmed_findings_on_the_releases_named(tmp_path):
    """--versions: each confirmed finding's repro.py also runs under another TVM, here the
    Relay environment's 0.19 (which the test set-up makes, and which has Relax too). The
    planted bool `add` crashes 0.27's LLVM codegen ("Check failed: t.MatchesCode(kDLFloat)")
    and builds on 0.19: a real regression, dated in finding.json, the bug report, on screen
    and at the head of report.md."""
    relay_python, _ = resolve_interpreter("relay")
    relay_tvm = subprocess.run([relay_python, "-c", "import tvm; print(tvm.__version__)"], capture_output=True,
                               text=True, env={**os.environ, "PYTHONPATH": ""}).stdout.strip()
    specs = planted_specs(tmp_path / "specs")
    proc = hirfuzz(tmp_path, "--specs", specs, "--iterations", "1", "--ops", "2", "--jobs", "1",
                   "--no-progress", "--out", "out", "--versions", "relay")
    assert proc.returncode == 0, proc.stderr
    import tvm
    [folder] = [f.parent for f in (tmp_path / "out" / "findings").glob("*/finding.json")]
    finding = json.loads((folder / "finding.json").read_text())
    assert finding["confirmed"] and "MatchesCode" in finding["message"], finding["message"]
    assert finding["extra"]["versions"] == {relay_tvm: "passes", tvm.__version__: "fails alike"}
    assert finding["extra"]["regression_since"] == tvm.__version__
    sentence = f"Fails alike on {tvm.__version__}; passes on {relay_tvm}: a regression since {tvm.__version__}."
    assert f"**TVM releases:** {sentence}\n" in (folder / "bug-report.md").read_text()
    assert f"is a regression: {sentence}" in proc.stdout
    report = (tmp_path / "out" / "report.md").read_text()
    assert report.index("## Regressions (1)") < report.index("## Findings"), report
    assert f"| {tvm.__version__} | " in report.split("## Findings")[0]


def test_a_campaign_with_no_other_release_set_up_tries_none(tmp_path):
    specs = planted_specs(tmp_path / "specs")
    proc = hirfuzz(tmp_path, "--specs", specs, "--iterations", "1", "--ops", "2", "--jobs", "1",
                   "--no-progress", "--out", "out", env={**os.environ, "HIRFUZZ_HOME": str(tmp_path / "home")})
    assert proc.returncode == 0, proc.stderr
    [finding] = (tmp_path / "out" / "findings").glob("*/finding.json")
    assert "versions" not in json.loads(finding.read_text())["extra"]
    assert "TVM releases" not in (finding.parent / "bug-report.md").read_text()


def test_a_campaign_names_a_release_it_cannot_use_before_any_case(tmp_path):
    proc = hirfuzz(tmp_path, "--iterations", "1", "--ops", "2", "--jobs", "1", "--no-progress", "--out", "out",
                   "--versions", "relax-0.25", env={**os.environ, "HIRFUZZ_HOME": str(tmp_path / "home")})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "hirfuzz: error: the relax-0.25 environment is not set up: run `python -m hirfuzz setup relax-0.25`"]


def test_replay_versions_names_a_tvm_it_cannot_use(tmp_path):
    proc = hirfuzz(tmp_path, "--versions", "relax-0.25", str(tmp_path), module="hirfuzz.replay",
                   env={**os.environ, "HIRFUZZ_HOME": str(tmp_path / "home")})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "relax-0.25 environment is not set up" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_a_real_regression_is_dated_on_real_releases(tmp_path):
    """relax-0.25 and relax-0.26 set up for real. The finding (a 10-minute campaign's, seed 31:
    AdjustMatmulOrder then ConvertLayout, "DataflowBlock Pass should not rewrite or delete any
    global-scope Var") builds on 0.25 and fails alike on 0.26 and 0.27, checked by hand."""
    home = {**os.environ, "HIRFUZZ_HOME": str(tmp_path / "home")}
    for name in ("relax-0.25", "relax-0.26"):
        setup = subprocess.run([sys.executable, "-m", "hirfuzz", "setup", name], capture_output=True, text=True,
                               env={**home, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=1800)
        assert setup.returncode == 0, setup.stderr[-3000:]
    folder = tmp_path / "finding"
    shutil.copytree(Path(__file__).parent / "data" / "regression-since-0.26", folder)
    proc = hirfuzz(tmp_path, "--versions", f"relax-0.25,relax-0.26,{sys.executable}", folder,
                   module="hirfuzz.replay", env=home)
    assert "passes on 0.25.0.post1: a regression since 0.26.0." in proc.stdout, proc.stdout + proc.stderr
    extra = json.loads((folder / "finding.json").read_text())["extra"]
    assert extra["regression_since"] == "0.26.0"
    assert extra["versions"]["0.25.0.post1"] == "passes" and extra["versions"]["0.26.0"] == "fails alike"
