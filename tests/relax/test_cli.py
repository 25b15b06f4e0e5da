"""The command line: bad input gets one clear line and a non-zero exit, never a traceback."""
import json
import os

import pytest

from conftest import run_hirfuzz


def assert_clean_error(proc, *needles):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def test_list_ops(specs):
    proc = run_hirfuzz("--list-ops")
    assert proc.returncode == 0
    assert proc.stdout.split() == specs.names()
    assert len(specs.names()) >= 40


def test_list_passes():
    proc = run_hirfuzz("--list-passes")
    assert proc.returncode == 0
    assert "FoldConstant" in proc.stdout.split()


@pytest.mark.parametrize("args,needle", [
    (["--ops", "0"], "--ops"),
    (["--iterations", "-3"], "--iterations"),
    (["--time", "soon"], "--time"),
    (["--only-ops", "add,frobnicate"], "frobnicate"),
    (["--dtypes", "float31"], "float31"),
    (["--target", "vulkan"], "vulkan"),
    (["--mode", "chaos"], "--mode"),
])
def test_bad_flags(args, needle, tmp_path):
    proc = run_hirfuzz(*args, "--iterations", "1", "--out", tmp_path / "o")
    assert_clean_error(proc, needle)
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_out(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    proc = run_hirfuzz("--iterations", "1", "--out", locked / "o")
    assert_clean_error(proc, "cannot write")


def test_out_that_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    proc = run_hirfuzz("--iterations", "1", "--out", f)
    assert_clean_error(proc, "not a folder")


def test_out_with_foreign_files_is_not_overwritten(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    proc = run_hirfuzz("--iterations", "1", "--out", tmp_path)
    assert_clean_error(proc, "not empty")
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_corrupt_campaign_folder_is_refused(tmp_path):
    (tmp_path / "campaign.json").write_text("{not json")
    proc = run_hirfuzz("--iterations", "1", "--out", tmp_path)
    assert_clean_error(proc, "corrupt")


def test_malformed_spec_names_file_op_and_field(spec_copy, tmp_path):
    (spec_copy / "zz_broken.yaml").write_text(
        "ops:\n  - name: my_exp\n    inputs: [x]\n    dtypes: [float32]\n    reference: np.exp(x\n")
    proc = run_hirfuzz("--specs", spec_copy, "--iterations", "1", "--out", tmp_path / "o")
    assert_clean_error(proc, "zz_broken.yaml", "my_exp", "reference")


def test_unknown_dtype_in_spec(spec_copy, tmp_path):
    (spec_copy / "zz_broken.yaml").write_text(
        "ops:\n  - name: my_abs\n    inputs: [x]\n    dtypes: [float33]\n    reference: np.abs(x)\n")
    proc = run_hirfuzz("--specs", spec_copy, "--list-ops")
    assert_clean_error(proc, "zz_broken.yaml", "my_abs", "dtypes", "float33")


def test_short_campaign_end_to_end(tmp_path):
    out = tmp_path / "o"
    proc = run_hirfuzz("--mode", "strict", "--seed", "3", "--iterations", "4", "--ops", "8",
                       "--out", out, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == 4
    assert summary["valid"] == 4
    # every case built, check-only (--check-cases: 3 of the 4 by default) or a confirmed TVM
    # crash: no spec disagreement, no false alarm
    baseline_crashes = sum(f["hits"] for f in summary["findings"] if f["oracle"] == "crash")
    assert summary["checked_only"] == 3
    assert summary["built"] + summary["checked_only"] + baseline_crashes == 4
    assert summary["spec_disagreements"] == [] and summary["unconfirmed"] == []
    assert summary["compared"] >= 1
    assert summary["coverage"]["op_dtype"] >= 8
    assert isinstance(summary["findings"], list)
    assert "elapsed_s" in summary
    lines = (out / "stats.jsonl").read_text().splitlines()
    assert len(lines) == 4
    assert "hirfuzz strict: 4 cases" in proc.stdout


def _bad_known(tmp_path, what):
    """A --known argument that is not a signature list nor a campaign folder."""
    path = tmp_path / what
    if what == "not-a-campaign":
        path.mkdir()
        (path / "notes.txt").write_text("hello\n")
    elif what in ("corrupt-finding", "finding-without-signature"):
        folder = path / "findings" / "0001-crash-abc"
        folder.mkdir(parents=True)
        (path / "campaign.json").write_text("{}\n")
        (folder / "finding.json").write_text("{not json" if what == "corrupt-finding" else "[]")
        path = folder / "finding.json"  # the file the message must name
    elif what == "binary":
        path.write_bytes(b"\xff\xfe\x00crash")
    return tmp_path / what, path


@pytest.mark.parametrize("what", ["missing", "not-a-campaign", "corrupt-finding", "finding-without-signature",
                                  "binary"])
def test_bad_known_file_is_one_clear_error(tmp_path, what):
    given, named = _bad_known(tmp_path, what)
    proc = run_hirfuzz("--known", given, "--iterations", "1", "--out", tmp_path / "o")
    assert proc.returncode == 2
    assert_clean_error(proc, str(named), "--known")
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "o").exists()  # nothing written before the error
