"""The campaign folder on the paths users take: a disk that fills up, a folder moved or
shared after the campaign, a umask that lets others read it."""
import errno
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import BOOL_ADD, ROOT, run_hirfuzz
from test_campaign_engine import PLAIN, _wait_for_line, small_specs, start_hirfuzz, summary_of


def campaign_args(tmp_path, out, iterations):
    """A small campaign whose one finding (TVM 0.27's bool add crash) comes at its first case."""
    return ["--specs", small_specs(tmp_path, BOOL_ADD), "--iterations", iterations, "--ops", 3, "--out", out,
            "--jobs", 1, "--no-progress", "--no-reduce", "--seed", 2, *PLAIN]


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB file system of its own, to fill."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill: {mounted.stderr.strip()}")
    yield disk
    subprocess.run(["umount", "--lazy", str(disk)], check=True)


def fill(disk):
    """Take every free byte of `disk`, as another program filling the disk would."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def hidden_leftovers(out):
    """Temporary files and half-written folders anywhere in `out`."""
    return [os.path.join(root, name) for root, dirs, files in os.walk(out) for name in dirs + files
            if name.startswith(".") and name != ".staging" or re.search(r"\.tmp\d+$", name)]


# the disk fills while the finding's reproducer is checked (a reduction thread's write fails
# first), or once it is filed (the coordinator's: a stats record, the summary, a checkpoint)
WHEN = {"checking": "new crash", "filed": "-> "}


@pytest.mark.parametrize("when", WHEN)
def test_a_full_disk_stops_the_campaign_with_one_line_and_leaves_what_was_saved_whole(tmp_path, small_disk, when):
    out = small_disk / "out"
    args = campaign_args(tmp_path, out, 40)
    proc = start_hirfuzz(args, {})
    _wait_for_line(proc, WHEN[when], timeout_s=120)
    while not (out / "state.json").exists() and proc.poll() is None:  # and a first checkpoint
        time.sleep(0.05)
    fill(small_disk)
    said, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2, said
    error = said.strip().splitlines()[-1]
    assert error.startswith(f"hirfuzz: error: cannot write {out}/") and "No space left on device" in error, said
    assert "Traceback" not in said
    assert hidden_leftovers(out) == [] and not any((out / ".staging").glob("*"))
    # what was saved before is whole: the checkpoint, every record, the finding (pending or filed)
    for name in ("campaign.json", "state.json", "coverage.json", "summary.json"):
        json.loads((out / name).read_text())
    records = [json.loads(line) for line in (out / "stats.jsonl").read_text().splitlines()]
    saved = list(out.glob("pending/*/finding.json")) + list(out.glob("findings/*/finding.json"))
    assert len(saved) == 1 and json.loads(saved[0].read_text())["kind"] == "crash"

    (small_disk / "filler").unlink()  # room again: the same command goes on where it stopped
    resumed = run_hirfuzz(*args)
    assert resumed.returncode == 0, resumed.stderr
    s = summary_of(out)
    assert len(s["findings"]) == 1 and s["unconfirmed"] == [] and s["pending"] == []
    cases = [json.loads(line)["case"] for line in (out / "stats.jsonl").read_text().splitlines()]
    assert sorted(cases) == list(range(40)) and len(cases) >= len(records)


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
