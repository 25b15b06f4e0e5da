"""The campaign's output folder: layout, checkpoints and resuming (after AFL++'s).

    campaign.json        marker: hirfuzz version and the settings that fix the graphs
    state.json           checkpoint: next case, random stream, counters, cases in flight,
                         each finding's hits, and how long stats.jsonl was
    aliases.json         findings re-keyed while reduced: first signature -> the one filed
    coverage.json        coverage keys (written with each checkpoint)
    stats.jsonl          one line per judged case
    summary.json         the summary, rewritten every second
    probe.json           the pass probe map (campaign.probe), reused on resume
    report.md            the human report
    pending/             new findings not yet reduced and checked (finished on resume)
    findings/            one folder per distinct, confirmed finding
    unconfirmed/         findings whose reproducer did not fail alike (hirfuzz's problem)
    spec-disagreements/  programs TVM rejected although the specs call them valid
    workers/             worker logs

Every file is replaced atomically, and every path written into summary.json, finding.json
and report.md is relative to this folder, so a folder moved or shared still works. A
second run with the same folder resumes from the last checkpoint: the random stream and
coverage continue, cases that were in flight are run again, and findings already on disk
are known by signature, so none is lost or reported twice. What was counted after the
checkpoint is counted again when its cases run again, so it is undone first: the records
stats.jsonl got after it are cut off, and each finding's hits go back to the checkpoint's.

A write that fails (a full disk, an I/O error) raises OutputError naming the file; it
leaves no temporary file behind, and what was written before stays whole.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from pathlib import Path

from .. import __version__
from ..errors import HirfuzzError

MARKER = "campaign.json"
STATE = "state.json"
STATS = "stats.jsonl"
ALIASES = "aliases.json"
FORMAT = 1
FINDING_FOLDERS = ("findings", "unconfirmed", "spec-disagreements")
# folders a run writes whole folders into (save_folder): a kill may leave a half one, hidden
FOLDERS_OF_FOLDERS = FINDING_FOLDERS + ("pending", "hirfuzz-bugs")
# write_atomic's temporary files (".state.json.tmp1234"), which a kill may leave behind
_TEMPORARY = re.compile(r"^\..+\.tmp\d+$")
# settings that decide which graphs a campaign generates: a resume must not change them
FIXED_SETTINGS = ("mode", "seed", "ops", "targets", "guided", "only_ops", "dtypes", "spec_dir", "dialect",
                  "cross_dialect", "direct", "check_cases", "check_ops", "gradients", "gradient_ops")
# what a campaign from before the setting existed used
SETTING_DEFAULTS = {"dialect": "relax", "cross_dialect": None, "direct": True, "check_cases": 0, "check_ops": None,
                    "gradients": 0.0, "gradient_ops": 8}


class OutputError(HirfuzzError):
    """A file of the output folder could not be written (a full disk, an I/O error)."""

    def __init__(self, path: Path, exc: OSError):
        super().__init__(f"cannot write {path}: {exc.strerror or exc}")
        self.path = path


def write_atomic(path: Path, text: str):
    """Replace `path` with `text`, whole or not at all."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputError(path, exc) from None


def append_line(path: Path, line: str):
    """Add one line to `path` (its folder made if need be), whole or not at all (a failed
    write is cut off again)."""
    data = memoryview((line + "\n").encode())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # with --ray, no worker logs in workers/
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    except OSError as exc:
        raise OutputError(path, exc) from None
    try:
        start = os.lseek(fd, 0, os.SEEK_END)
        while data:
            data = data[os.write(fd, data):]
    except OSError as exc:
        try:
            os.ftruncate(fd, start)
        except OSError:
            pass  # resuming cuts the file back to the checkpoint anyway
        raise OutputError(path, exc) from None
    finally:
        os.close(fd)


def save_folder(parent: Path, name: str, files: dict[str, str]) -> Path:
    """Write a folder of files (names may hold one '/') so it appears whole or not at all."""
    final = parent / name
    # made by mkdir, so with the modes the umask gives (tempfile.mkdtemp's are 0700)
    tmp = parent / f".{name}.{uuid.uuid4().hex[:12]}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
        for fname, text in files.items():
            (tmp / fname).parent.mkdir(parents=True, exist_ok=True)
            (tmp / fname).write_text(text)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(final, exc) from None
    return final


class OutDir:
    def __init__(self, path: Path):
        self.path = path

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    @staticmethod
    def open(path: str, settings: dict) -> tuple["OutDir", dict | None]:
        """Create a fresh folder, or open one to resume; returns the checkpoint if resuming."""
        out = Path(path)
        if out.exists() and not out.is_dir():
            raise HirfuzzError(f"--out {path}: exists and is not a folder")
        if out.is_dir() and any(out.iterdir()):
            return OutDir(out), OutDir(out)._resume(path, settings)
        try:
            out.mkdir(parents=True, exist_ok=True)
            probe = out / ".write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise HirfuzzError(f"--out {path}: cannot write there ({exc.strerror or exc})") from None
        meta = {"hirfuzz": __version__, "format": FORMAT, "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "settings": settings}
        write_atomic(out / MARKER, json.dumps(meta, indent=2) + "\n")
        return OutDir(out), None

    def _resume(self, path: str, settings: dict) -> dict:
        marker = self.path / MARKER
        if not marker.is_file():
            raise HirfuzzError(f"--out {path}: folder is not empty and holds no hirfuzz campaign; "
                               "refusing to write into it (choose an empty or new folder)")
        meta = self._read_json(marker, path)
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or "settings" not in meta:
            raise HirfuzzError(f"--out {path}: {MARKER} is not a campaign marker this hirfuzz can "
                               "resume; refusing to overwrite it")
        old = meta["settings"]
        old = {**SETTING_DEFAULTS, **old}
        changed = [k for k in FIXED_SETTINGS if old.get(k) != settings.get(k)]
        if changed:
            detail = ", ".join(f"{k}: {old.get(k)!r} -> {settings.get(k)!r}" for k in changed)
            raise HirfuzzError(f"--out {path}: resuming needs the same settings as the campaign "
                               f"there ({detail}); use a new --out for different settings")
        try:
            probe = self.path / ".write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise HirfuzzError(f"--out {path}: cannot write there ({exc.strerror or exc})") from None
        state_path = self.path / STATE
        if not state_path.exists():
            state = {}  # killed before the first checkpoint: start over, keep the findings on disk
        else:
            state = self._read_json(state_path, path)
            if not isinstance(state, dict) or state.get("format") != FORMAT:
                raise HirfuzzError(f"--out {path}: {STATE} is corrupt; refusing to overwrite it")
            cov_path = self.path / "coverage.json"
            state["coverage"] = self._read_json(cov_path, path) if cov_path.exists() else {}
        self._remove_leftovers()
        self._trim_stats(state.get("stats_bytes", None if state else 0))
        return state

    def _remove_leftovers(self):
        """What a run killed (or stopped by a full disk) while writing left half-written:
        temporary files, hidden half folders, reproducers being checked."""
        for entry in self.path.iterdir():
            if entry.is_file() and _TEMPORARY.match(entry.name):
                entry.unlink(missing_ok=True)
        shutil.rmtree(self.path / ".staging", ignore_errors=True)
        for name in FOLDERS_OF_FOLDERS:
            root = self.path / name
            for entry in root.iterdir() if root.is_dir() else []:
                if entry.name.startswith(".") and entry.is_dir():
                    shutil.rmtree(entry, ignore_errors=True)

    def _trim_stats(self, keep: int | None):
        """Cut stats.jsonl back to its length at the checkpoint (`keep`; None: a checkpoint
        from before hirfuzz noted it), and to whole lines: the cases judged after the
        checkpoint run again and log again, and a line a kill cut short would swallow the
        next record appended to it."""
        path = self.path / STATS
        if not path.is_file():
            return
        try:
            with open(path, "rb+") as f:
                size = f.seek(0, os.SEEK_END)
                f.truncate(_whole_lines_end(f, size if keep is None else min(keep, size)))
        except OSError as exc:
            raise OutputError(path, exc) from None

    @staticmethod
    def _read_json(file: Path, shown: str):
        try:
            return json.loads(file.read_text())
        except (OSError, ValueError) as exc:
            raise HirfuzzError(f"--out {shown}: {file.name} is unreadable or corrupt ({exc}); "
                               "refusing to overwrite it") from None

    def record_installation(self, installation: dict):
        """Note in the marker which TVM the campaign runs under; refuse another one."""
        meta = self._read_json(self.path / MARKER, str(self.path))
        known = meta.get("installation")
        if known and _versions(known) != _versions(installation):
            raise HirfuzzError(f"--out {self.path}: the campaign there ran under TVM {known.get('tvm')} "
                               f"({known.get('python')}), this run has TVM {installation.get('tvm')} "
                               f"({installation.get('python')}); resume with the same --tvm-python, or use a "
                               "new --out")
        if known != installation:
            write_atomic(self.path / MARKER, json.dumps({**meta, "installation": installation}, indent=2) + "\n")

    def checkpoint(self, state: dict, coverage: str):
        """Coverage first (`coverage`: coverage.json's text), then the state that refers to it:
        a kill between leaves both usable. The state notes how long stats.jsonl is, to cut off what a resume logs again."""
        stats = self.path / STATS
        stats_bytes = stats.stat().st_size if stats.is_file() else 0
        write_atomic(self.path / "coverage.json", coverage + "\n")
        write_atomic(self.path / STATE, json.dumps({"format": FORMAT, **state, "stats_bytes": stats_bytes}) + "\n")

    def save_aliases(self, aliases: dict[str, str]):
        """Written as each finding is renamed, checkpoint or not: a resume needs all of them to
        give the hits the checkpoint counted under a first signature to the finding filed."""
        write_atomic(self.path / ALIASES, json.dumps(aliases, indent=1) + "\n")

    def saved_aliases(self) -> dict[str, str]:
        path = self.path / ALIASES
        if not path.is_file():
            return {}
        aliases = self._read_json(path, str(self.path))
        if not isinstance(aliases, dict):
            raise HirfuzzError(f"--out {self.path}: {ALIASES} is corrupt; move it aside to resume")
        return aliases

    def append_stats(self, record: dict):
        append_line(self.path / STATS, json.dumps(record))

    def saved_findings(self, folder: str) -> list[dict]:
        """finding.json of every finding folder already on disk (in folder-name order), its
        path the folder's where it is now (relative to the campaign's)."""
        found = []
        root = self.path / folder
        if not root.is_dir():
            return found
        for d in sorted(root.iterdir()):
            f = d / "finding.json"
            if d.name.startswith(".") or not f.is_file():
                continue
            try:
                data = json.loads(f.read_text())
            except (OSError, ValueError):
                data = None
            if not isinstance(data, dict):
                raise HirfuzzError(f"{f}: unreadable or corrupt; move that folder aside to resume")
            found.append({**data, "path": f"{folder}/{d.name}"})
        return found


def _whole_lines_end(f, end: int) -> int:
    """Where the last whole line at or before `end` of the binary file `f` ends."""
    pos = end
    while pos > 0:
        start = max(0, pos - 4096)
        f.seek(start)
        newline = f.read(pos - start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        pos = start
    return 0


def _versions(installation: dict) -> tuple:
    """The TVM versions a campaign ran under: its IR's, and a cross-IR campaign's second."""
    return installation.get("tvm"), (installation.get("cross") or {}).get("tvm")
