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


@pytest.mark.parametrize("option, value, said", [
    ("--versions", "relax-0.25", "the relax-0.25 environment is not set up: run `python -m hirfuzz setup relax-0.25`"),
    ("--baseline", "/no/such/python", "--baseline /no/such/python: cannot run /no/such/python: No such file or directory"),
])
def test_a_campaign_names_a_tvm_it_cannot_use_before_any_case(tmp_path, option, value, said):
    proc = hirfuzz(tmp_path, "--iterations", "1", "--ops", "2", "--jobs", "1", "--no-progress", "--out", "out",
                   option, value, env={**os.environ, "HIRFUZZ_HOME": str(tmp_path / "home")})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"hirfuzz: error: {said}"]


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


def patched_tvm(folder: Path) -> Path:
    """A pass developer's build, as PYTHONPATH finds it: the installed TVM with one change,
    Relax's `add` legalised as a subtraction (relax/transform/legalize_ops/binary.py). Every
    other file is a link to the installed one."""
    import tvm
    installed = Path(tvm.__file__).parent
    changed = Path("relax/transform/legalize_ops/binary.py")
    on_the_way = {installed / parent for parent in changed.parents}

    def mirror(source: Path, target: Path):
        target.mkdir(parents=True)
        for entry in source.iterdir():
            if entry in on_the_way:
                mirror(entry, target / entry.name)
            elif entry != installed / changed:
                (target / entry.name).symlink_to(entry)

    mirror(installed, folder / "tvm")
    text = (installed / changed).read_text()
    line = 'register_legalize("relax.add", _binary(topi.add))'
    assert line in text
    (folder / "tvm" / changed).write_text(text.replace(line, line.replace("topi.add", "topi.subtract")))
    return folder


def test_baseline_marks_a_finding_only_the_build_under_test_has_as_new(tmp_path):
    """--baseline, as a pass developer uses it: the build under test (this TVM with `add`
    legalised wrongly, first on PYTHONPATH) gives wrong results for `add`; its repro.py
    passes on the baseline (the TVM installed, named by its interpreter): new in the build.
    The planted bool `add` crash fails alike on the baseline: not new."""
    build = patched_tvm(tmp_path / "build")
    env = {**os.environ, "PYTHONPATH": str(build)}
    proc = hirfuzz(tmp_path, "--only-ops", "add", "--dtypes", "float32", "--iterations", "2", "--ops", "2",
                   "--jobs", "1", "--no-progress", "--out", "new", "--baseline", sys.executable, "--versions", "none",
                   env=env)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "new" / "summary.json").read_text())
    wrong = [f for f in summary["findings"] if f["kind"] == "wrong-result"]
    assert wrong and all(f["new_in_build"] for f in wrong), summary["findings"]
    finding = json.loads((tmp_path / "new" / wrong[0]["path"] / "finding.json").read_text())
    assert finding["confirmed"] and finding["extra"]["baseline"]["verdict"] == "passes"
    assert "**Baseline:** passes on TVM" in (tmp_path / "new" / wrong[0]["path"] / "bug-report.md").read_text()
    report = (tmp_path / "new" / "report.md").read_text()
    assert report.index("## New in your build") < report.index("## Findings")
    assert "new in your build (their repro.py passes on --baseline): " in proc.stdout

    specs = planted_specs(tmp_path / "specs")
    proc = hirfuzz(tmp_path, "--specs", specs, "--iterations", "1", "--ops", "2", "--jobs", "1", "--no-progress",
                   "--out", "old", "--baseline", sys.executable, "--versions", "none")
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads((tmp_path / "old" / "summary.json").read_text())["findings"]
    assert row["new_in_build"] is False
    assert "New in your build" not in (tmp_path / "old" / "report.md").read_text()
    assert "new in your build (their repro.py passes on --baseline): 0 of 1" in proc.stdout


def test_replay_makes_a_reports_dating_lines_anew_keeping_one_of_each():
    """replay --versions rewrites the lines bug_report put before the expected behaviour:
    the releases line takes the new verdicts, and the baseline line is not repeated."""
    from hirfuzz.campaign.report import with_versions_lines
    finding = {"extra": {"versions": {"0.26.0": "passes", "0.27.0.post1": "fails alike"},
                         "baseline": {"python": "/b/python", "tvm": "0.27.0", "verdict": "passes"},
                         "new_in_build": True}}
    report = ("### title\n\n**Environment**\n- TVM 0.27\n\n**TVM releases:** Fails alike on 0.27.0.post1.\n\n"
              "**Baseline:** passes on TVM 0.27.0 (/b/python): new in the build under test.\n\n"
              "**Expected:** it runs.\n")
    once = with_versions_lines(report, finding)
    assert with_versions_lines(once, finding) == once
    assert once == ("### title\n\n**Environment**\n- TVM 0.27\n\n"
                    "**TVM releases:** Fails alike on 0.27.0.post1; passes on 0.26.0: a regression since 0.27.0.post1.\n\n"
                    "**Baseline:** passes on TVM 0.27.0 (/b/python): new in the build under test.\n\n"
                    "**Expected:** it runs.\n")
    assert with_versions_lines("no report here\n", finding) == "no report here\n"
