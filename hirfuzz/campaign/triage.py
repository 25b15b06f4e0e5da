"""Triage on the coordinator's side: is a saved reproducer failing the way the fuzzer
saw, and the files of a finding's folder.

hirfuzz runs each new finding's script alone before reporting it and keeps the finding
only if the script fails the same way; a script that cannot even get to the program is
hirfuzz's problem, said in its own words.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core.finding import Finding
from ..protocol import REPRO_MARK as MARK

@dataclass
class ReproOutcome:
    reproduced: bool
    observed: str
    output: str
    harness_error: str = ""   # the script could not get as far as the bug: hirfuzz's problem


def _harness_error(proc: subprocess.CompletedProcess, last_mark: str) -> str:
    """Why the script failed before reaching what it reproduces, or "" if it got there.

    A script that stops in its set-up (a user's pass module it cannot import), or raises
    before printing any mark (TVM or numpy missing, a file it needs gone), says nothing
    about the bug; counting it as "did not reproduce" would lose the finding.
    """
    if proc.returncode <= 0 or (last_mark and not last_mark.startswith(f"{MARK} stage=setup ")):
        return ""
    lines = [ln for ln in (proc.stderr or "").splitlines() if ln.strip()]
    return lines[-1].strip() if lines else f"exit {proc.returncode} before reaching the program"


def _cpu_limit(seconds: float):
    """The kernel ends a script that spins past `seconds` of CPU time (SIGXCPU), even if
    hirfuzz is gone (a second Ctrl-C while a script is checked leaves it behind)."""
    def apply():
        import resource
        limit = max(1, int(seconds))
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))
    return apply


def check_reproducer(script: Path, finding: Finding, timeout_s: float, python: str | None = None,
                     extra_env: dict | None = None) -> ReproOutcome:
    """Run the saved script alone and say whether it fails the way the fuzzer saw.

    A hang is judged on CPU time, which a loaded machine does not stretch: a build that is
    merely slow finishes within `timeout_s` CPU-seconds. The wall-clock limit, twice as
    long, catches a script that hangs asleep.
    """
    # alone, as a maintainer runs it: no PYTHONPATH of hirfuzz's, under the TVM's interpreter
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **(extra_env or {})}
    hang = finding.kind == "hang"
    try:
        proc = subprocess.run([python or sys.executable, str(script)], capture_output=True, text=True,
                              timeout=timeout_s * (2 if hang else 1), cwd=script.parent, env=env,
                              start_new_session=True, preexec_fn=_cpu_limit(timeout_s + (0 if hang else 10)))
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return ReproOutcome(hang, "hang", out[-4000:])
    output = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode == -signal.SIGXCPU:
        return ReproOutcome(hang, f"hang: over {timeout_s:.0f} s of CPU time", output[-4000:])
    if proc.returncode < 0:
        observed = f"signal {signal.Signals(-proc.returncode).name}"
        want = finding.extra.get("signal")
        return ReproOutcome(finding.kind == "crash" and finding.stage == "worker" and want in observed,
                            observed, output[-4000:])
    marks = [ln for ln in (proc.stdout or "").splitlines() if ln.startswith(MARK)]
    last = marks[-1] if marks else ""
    harness = _harness_error(proc, last)
    if harness:
        return ReproOutcome(False, f"the reproducer could not run: {harness}", output[-4000:], harness)
    if finding.kind == "wrong-result":
        return ReproOutcome(last == f"{MARK} mismatch", last or f"exit {proc.returncode}", output[-4000:])
    if finding.kind == "silent-acceptance":
        return ReproOutcome(last == f"{MARK} accepted", last or f"exit {proc.returncode}", output[-4000:])
    want = f"{MARK} stage={finding.stage} error={finding.extra.get('exc_type')}"
    if finding.stage == "worker":
        # the worker died of a signal, but Python may have turned it into an exception
        return ReproOutcome(proc.returncode != 0 and last != f"{MARK} ok", last or f"exit {proc.returncode}",
                            output[-4000:])
    return ReproOutcome(last == want, last or f"exit {proc.returncode}", output[-4000:])


# --- finding folders -------------------------------------------------------------------------

def finding_files(finding: Finding, case_json: dict, repro: str, log: str) -> dict:
    return {
        "finding.json": json.dumps(finding.to_json(), indent=2) + "\n",
        "case.json": json.dumps(case_json) + "\n",
        "repro.py": repro,
        "log.txt": log,
    }
