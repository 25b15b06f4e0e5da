"""The campaign's output folder: layout, checkpoints and resuming (after AFL++'s).

    campaign.json        marker: hirfuzz version and the settings that fix the graphs
    state.json           checkpoint: next case, random stream, counters, cases in flight
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
are known by signature, so none is lost or reported twice.
"""
from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path

from .. import __version__
from ..errors import HirfuzzError

MARKER = "campaign.json"
STATE = "state.json"
FORMAT = 1
FINDING_FOLDERS = ("findings", "unconfirmed", "spec-disagreements")
# settings that decide which graphs a campaign generates: a resume must not change them
FIXED_SETTINGS = ("mode", "seed", "ops", "targets", "guided", "only_ops", "dtypes", "spec_dir", "dialect",
                  "cross_dialect", "direct")
# what a campaign from before the setting existed used
SETTING_DEFAULTS = {"dialect": "relax", "cross_dialect": None, "direct": True}


def write_atomic(path: Path, text: str):
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def save_folder(parent: Path, name: str, files: dict[str, str]) -> Path:
    """Write a folder of files (names may hold one '/') so it appears whole or not at all."""
    parent.mkdir(parents=True, exist_ok=True)
    final = parent / name
    # made by mkdir, so with the modes the umask gives (tempfile.mkdtemp's are 0700)
    tmp = parent / f".{name}.{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    for fname, text in files.items():
        (tmp / fname).parent.mkdir(parents=True, exist_ok=True)
        (tmp / fname).write_text(text)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
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
            return {}  # killed before the first checkpoint: start over, keep what is on disk
        state = self._read_json(state_path, path)
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise HirfuzzError(f"--out {path}: {STATE} is corrupt; refusing to overwrite it")
        cov_path = self.path / "coverage.json"
        state["coverage"] = self._read_json(cov_path, path) if cov_path.exists() else {}
        return state

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

    def checkpoint(self, state: dict, coverage: dict):
        """Coverage first, then the state that refers to it: a kill between leaves both usable."""
        write_atomic(self.path / "coverage.json", json.dumps(coverage) + "\n")
        write_atomic(self.path / STATE, json.dumps({"format": FORMAT, **state}) + "\n")

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


def _versions(installation: dict) -> tuple:
    """The TVM versions a campaign ran under: its IR's, and a cross-IR campaign's second."""
    return installation.get("tvm"), (installation.get("cross") or {}).get("tvm")
