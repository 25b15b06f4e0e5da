"""The campaign folder on the paths users take: a folder moved or shared after the
campaign, a umask that lets others read it."""
import json
import os
import re
import shutil
import subprocess
import sys

from conftest import BOOL_ADD, ROOT
from test_campaign_engine import PLAIN, small_specs, summary_of


def campaign_args(tmp_path, out, iterations):
    """A small campaign whose one finding (TVM 0.27's bool add crash) comes at its first case."""
    return ["--specs", small_specs(tmp_path, BOOL_ADD), "--iterations", iterations, "--ops", 3, "--out", out,
            "--jobs", 1, "--no-progress", "--no-reduce", "--seed", 2, *PLAIN]


def test_a_moved_campaign_folder_keeps_its_links_and_replays(tmp_path):
    """Paths in summary.json, finding.json and report.md are relative to the campaign folder,
    and its folders get the modes the umask gives, so it can be moved or shared."""
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "hirfuzz", *map(str, campaign_args(tmp_path, out, 3))], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600, preexec_fn=lambda: os.umask(0o027))
    assert proc.returncode == 0, proc.stderr
    moved = tmp_path / "shared" / "campaign"
    moved.parent.mkdir()
    shutil.move(out, moved)

    s = summary_of(moved)
    [row] = s["findings"]
    folder = moved / row["path"]
    assert row["path"] == f"findings/{folder.name}" and (folder / "repro.py").is_file()
    assert json.loads((folder / "finding.json").read_text())["path"] == row["path"]
    report = (moved / "report.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", report)
    assert f"{row['path']}/repro.py" in links and all((moved / link).exists() for link in links), links
    for text in (report, (moved / "summary.json").read_text(), (folder / "finding.json").read_text()):
        assert str(tmp_path) not in text

    assert oct(folder.stat().st_mode & 0o777) == oct(0o750)  # umask 027: not 0700
    assert oct((folder / "original").stat().st_mode & 0o777) == oct(0o750)

    replay = subprocess.run([sys.executable, "-m", "hirfuzz.replay", str(moved)], capture_output=True, text=True,
                            env=env, timeout=300)
    assert replay.returncode == 1 and "1 still reproduce" in replay.stdout, replay.stdout + replay.stderr
