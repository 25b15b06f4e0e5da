"""Check: does every finding reach the user on the paths users take?

    python tools/check_user_paths.py [--paths relative-out,pythonpath-tvm,...] [--time 120]
                                     [--max-memory 210] [--keep DIR]

Runs a real campaign along each path, as a user starts it, and prints per path the findings
confirmed, those filed under unconfirmed/ (each with its reason below the table), and the
duplicates a kill and resume left (hits counted twice, case records written twice).

    relative-out     the default --out (./hirfuzz-out), named from the campaign's folder
    pythonpath-tvm   --tvm-python names a Python without TVM; its tvm and tvm_ffi come only
                     from PYTHONPATH (TVM's documented source-build set-up); replayed later
                     from a shell without the export
    relay-faulty     Relay with a planted faulty pass pinned (tests/relay/planted) and pass
                     fuzzing on: the pass's findings and TVM 0.19's own
    max-memory       a real campaign (seed 1) under --max-memory at the edge of what TVM needs
    kill-resume      a campaign killed with SIGKILL just after a hit its last checkpoint
                     has not counted, then resumed; its hits and records against the same
                     campaign run whole

On relative-out, pythonpath-tvm and kill-resume every case meets one planted, real TVM crash
(add on bool tensors), so any unconfirmed entry there is a finding lost by hirfuzz; on the
others each reason must be read. Target: 0 lost, 0 duplicated, on every path.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import venv
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "opspecs"
RELAY_PLANTED = ROOT / "tests" / "relay" / "planted" / "planted.yaml"

# TVM 0.27 types add on bool tensors, then fails to legalise it: a real, stable crash
BOOL_ADD = """
ops:
  - name: add_bool
    relax: add
    inputs:
      - a
      - {name: b, shape: "a.shape"}
    constraints: ["b.shape == a.shape"]
    dtypes: [bool]
    reference: np.logical_or(a, b)
"""
PLANTED_FLAGS = ["--ops", "2", "--jobs", "1", "--no-progress"]


def planted_specs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ops.yaml").write_text(BOOL_ADD)
    (folder / "tolerances.yaml").write_text((SPECS / "tolerances.yaml").read_text())
    return folder


def pythonpath_only_tvm(home: Path) -> tuple[Path, Path]:
    """(a Python whose environment has numpy and the rest of the installed packages but no
    TVM, a folder holding `tvm` and `tvm_ffi` to put on PYTHONPATH), linked from this
    Python's site-packages, as a source build's python/ folder would be."""
    venv.create(home / "venv", with_pip=False)
    python = home / "venv" / "bin" / "python"
    venv_site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                    capture_output=True, text=True, check=True).stdout.strip())
    site = Path(sysconfig.get_paths()["purelib"])
    tvm_path = home / "tvm-build" / "python"
    tvm_path.mkdir(parents=True)
    for entry in site.iterdir():
        if entry.name in ("tvm", "tvm_ffi"):
            (tvm_path / entry.name).symlink_to(entry)
        elif not entry.name.startswith(("apache_tvm", "__editable__", "hirfuzz")):
            (venv_site / entry.name).symlink_to(entry)
    return python, tvm_path


def hirfuzz(cwd: Path, *args, env: dict | None = None, module: str = "hirfuzz") -> subprocess.CompletedProcess:
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=3600)


# --- the paths: each runs its campaign(s) in `work` and returns the campaign folder --------

def relative_out(work: Path, args) -> Path:
    specs = planted_specs(work / "specs")
    (work / "cwd").mkdir()
    hirfuzz(work / "cwd", "--specs", specs, "--iterations", "4", *PLANTED_FLAGS)
    return work / "cwd" / "hirfuzz-out"


def pythonpath_tvm(work: Path, args) -> Path:
    python, tvm_path = pythonpath_only_tvm(work / "env")
    env = {**os.environ, "PYTHONPATH": str(tvm_path)}
    hirfuzz(work, "--tvm-python", python, "--specs", planted_specs(work / "specs"), "--iterations", "4",
            *PLANTED_FLAGS, "--out", "out", env=env)
    return work / "out"


def relay_faulty(work: Path, args) -> Path:
    hirfuzz(work, "--ir", "relay", "--passes", RELAY_PLANTED, "--pass-seq", "PlantedSwapOperands",
            "--time", args.time, "--seed", "3", "--jobs", "1", "--no-progress", "--out", "out")
    return work / "out"


def max_memory(work: Path, args) -> Path:
    hirfuzz(work, "--max-memory", args.max_memory, "--seed", "1", "--ops", "8", "--time", args.time,
            "--jobs", "1", "--no-progress", "--out", "out")
    return work / "out"


def kill_after_a_hit_the_checkpoint_missed(proc: subprocess.Popen, out: Path, timeout_s: float = 600):
    """SIGKILL a campaign (of one finding) just after a hit of its finding that the last
    checkpoint has not counted: the resumed run judges that case again, and must not count
    the hit twice."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
        try:
            counted = json.loads((out / "state.json").read_text())["counters"]["findings_hits"]
            on_disk = [json.loads(f.read_text())["hits"] for f in (out / "findings").glob("*/finding.json")]
        except (OSError, ValueError):
            continue  # not written yet, or being replaced
        if on_disk and on_disk[0] > counted:
            proc.send_signal(signal.SIGKILL)  # the coordinator alone, as `kill -9 PID` does
            proc.wait()
            return
    raise AssertionError("no hit came after a checkpoint before the campaign ended")


def kill_resume(work: Path, args) -> Path:
    specs = planted_specs(work / "specs")
    argv = ["--specs", specs, "--iterations", "50", "--ops", "3", "--seed", "2", "--jobs", "1", "--no-progress"]
    hirfuzz(work, *argv, "--out", "whole")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "hirfuzz", *map(str, argv), "--out", "out"], cwd=work, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    kill_after_a_hit_the_checkpoint_missed(proc, work / "out")
    hirfuzz(work, *argv, "--out", "out")
    return work / "out"


PATHS = {"relative-out": relative_out, "pythonpath-tvm": pythonpath_tvm, "relay-faulty": relay_faulty,
         "max-memory": max_memory, "kill-resume": kill_resume}


def duplicated_records(out: Path) -> int:
    """Cases recorded more than once in stats.jsonl (a torn line counts as one too)."""
    cases = Counter()
    for line in (out / "stats.jsonl").read_text().splitlines():
        try:
            cases[json.loads(line)["case"]] += 1
        except (ValueError, KeyError):
            cases["torn"] += 2
    return sum(n - 1 for n in cases.values() if n > 1)


def duplicated_hits(out: Path) -> int | None:
    """Hits over those of the same campaign run whole (kill-resume only)."""
    whole = out.parent / "whole" / "summary.json"
    if not whole.exists():
        return None
    return _hits(out / "summary.json") - _hits(whole)


def _hits(summary_path: Path) -> int:
    summary = json.loads(summary_path.read_text())
    return sum(f["hits"] for f in summary["findings"] + summary["unconfirmed"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paths", default=",".join(PATHS), help=f"comma list of {', '.join(PATHS)}")
    ap.add_argument("--time", type=int, default=120, help="seconds for the time-bound campaigns (default 120)")
    ap.add_argument("--max-memory", type=int, default=210,
                    help="MB of resident memory for the max-memory path (default 210: a Relax worker "
                         "takes about 197 to start)")
    ap.add_argument("--keep", type=Path, help="keep the campaigns in this folder")
    args = ap.parse_args(argv)
    chosen = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in PATHS]
    if unknown:
        ap.error(f"unknown path(s) {', '.join(unknown)}; known: {', '.join(PATHS)}")
    base = args.keep or Path(tempfile.mkdtemp(prefix="hirfuzz-paths-"))
    rows, reasons = [], []
    for name in chosen:
        work = base / name
        work.mkdir(parents=True, exist_ok=False)
        t0 = time.monotonic()
        out = PATHS[name](work, args)
        try:
            summary = json.loads((out / "summary.json").read_text())
        except (OSError, ValueError) as exc:
            rows.append((name, "-", "-", "-", "-", f"no summary: {exc}"))
            continue
        reasons += [(name, u.get("reason", "")) for u in summary["unconfirmed"]]
        extra_hits = duplicated_hits(out)
        rows.append((name, len(summary["findings"]), len(summary["unconfirmed"]),
                     "-" if extra_hits is None else extra_hits, duplicated_records(out),
                     f"{time.monotonic() - t0:.0f} s"))
    header = ("path", "confirmed", "unconfirmed", "duplicated hits", "duplicated records", "took")
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(map(str, row)) + " |")
    for name, reason in reasons:
        print(f"- {name}: unconfirmed: {reason.splitlines()[0][:300] if reason else '(no reason)'}")
    print(f"campaigns in {base}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
