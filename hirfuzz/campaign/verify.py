"""Verification: is a saved reproducer failing the way the fuzzer saw?

hirfuzz runs each new finding's scripts alone (its harness check.py, then the
maintainer's repro.py) before reporting it, and keeps the finding only if they fail the
same way; a script that cannot even get to the program is hirfuzz's problem, said in its
own words. Workers run these checks (sandbox.Worker.check_scripts), so this module
imports of the campaign only the environment scripts get and the scripts' names.
"""
from __future__ import annotations

import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core.finding import Finding
from ..core.violation_key import fails_at_same_check
from ..dialects import dialect_info
from ..dialects.base import FailureAlias, same_failure
from ..protocol import REPRO_MARK as MARK
from .environment import script_environment
from .reproducers import HARNESS, REPRO


@dataclass
class ReproOutcome:
    reproduced: bool
    observed: str
    output: str
    harness_error: str = ""   # the script could not get as far as the bug: hirfuzz's problem
    harness_output: str = ""  # what check.py printed, where repro.py was run after it
    harness_observed: str = ""  # what check.py was seen to do, where it reproduced and repro.py ran after it


def _harness_error(proc: subprocess.CompletedProcess, last: str) -> str:
    """Why the script failed before reaching what it reproduces, or "" if it got there.

    A script that stops in its set-up (a user's pass module it cannot import), or raises
    before printing any mark (TVM or numpy missing, a file it needs gone), says nothing
    about the bug; counting it as "did not reproduce" would lose the finding.
    """
    if proc.returncode <= 0 or (last and not last.startswith(f"{MARK} stage=setup ")):
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


def run_script(argv: list[str], script: Path, timeout_s: float, cpu_s: float, python: str | None,
         extra_env: dict | None):
    """Run a script alone, as a maintainer runs it: under the TVM's interpreter, in the
    environment that TVM needs (campaign.environment), in its folder, by absolute path (a
    relative --out named from the campaign's folder means nothing from the script's).
    Returns the CompletedProcess, or the TimeoutExpired."""
    script = script.absolute()
    try:
        return subprocess.run([python or sys.executable, *argv, str(script)], capture_output=True, text=True,
                              timeout=timeout_s, cwd=script.parent, env=script_environment(extra_env),
                              start_new_session=True, preexec_fn=_cpu_limit(cpu_s))
    except subprocess.TimeoutExpired as exc:
        return exc


def _died(proc, finding: Finding, timeout_s: float) -> ReproOutcome | None:
    """The outcome of a script that hung or was killed by a signal (None if it was not)."""
    hang = finding.kind == "hang"
    if isinstance(proc, subprocess.TimeoutExpired):
        out = proc.stdout.decode("utf-8", "replace") if isinstance(proc.stdout, bytes) else (proc.stdout or "")
        return ReproOutcome(hang, "hang", out[-4000:])
    output = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode == -signal.SIGXCPU:
        return ReproOutcome(hang, f"hang: over {timeout_s:.0f} s of CPU time", output[-4000:])
    if proc.returncode < 0:
        observed = f"signal {signal.Signals(-proc.returncode).name}"
        if finding.kind == "silent-acceptance":
            # TVM did not reject the invalid program: running it (scatter_elements reading
            # out of bounds on axis -7) may pass or kill the process; either shows the check missing
            return ReproOutcome(True, f"{observed} (not rejected: it ran into the violation)", output[-4000:])
        want = finding.extra.get("signal")
        return ReproOutcome(finding.kind == "crash" and finding.stage == "worker" and want in observed,
                            observed, output[-4000:])
    return None


def _exited_alike(finding: Finding, failed: bool) -> bool:
    """A script that failed without a signal or a hang reproduces a worker that exited (out
    of memory, an uncaught error), never one killed by a signal or one that hung: a worker
    that a case's program killed while the script alone merely raises was in a state the
    script does not recreate (seen: a SIGABRT on expand_dims whose scripts raised the
    match_cast check's clean error; a disruptive "hang" whose scripts raised it at once)."""
    return failed and finding.extra.get("signal") == "exit"  # else a signal's name, or "timeout"


def _failure_aliases(dialect: str | None) -> tuple[FailureAlias, ...]:
    """The exception names the dialect's TVM gives one failure (none known without a dialect)."""
    return dialect_info(dialect).failure_aliases if dialect else ()


def _same_failure(finding: Finding, raised: str, output: str, dialect: str | None) -> bool:
    """Is what a script raised the crash the finding saw: what TVM reports, not the name a
    renderer gave it (dialects.base.same_failure)?"""
    return same_failure(_failure_aliases(dialect), finding.extra.get("exc_type") or "", finding.message, raised,
                        output)


FAILED_MARK = re.compile(rf"^{re.escape(MARK)} stage=(\S+) error=(\S+)$")


def last_mark(stdout: str | None) -> str:
    """The last mark a reproducer printed ("" where it printed none)."""
    marks = [ln for ln in (stdout or "").splitlines() if ln.startswith(MARK)]
    return marks[-1] if marks else ""


HANG_WALL_SLACK_S = 10.0


def check_reproducer(script: Path, finding: Finding, timeout_s: float, python: str | None = None,
                     extra_env: dict | None = None, dialect: str | None = None) -> ReproOutcome:
    """Run hirfuzz's harness (check.py) alone and say whether it fails the way the fuzzer saw
    (a crash: at the same stage, with the same failure in the `dialect`'s terms).

    A hang is judged on CPU time, which a loaded machine does not stretch: a build that is
    merely slow finishes within `timeout_s` CPU-seconds. The wall-clock limit, twice as
    long and HANG_WALL_SLACK_S more, catches a script that hangs asleep; the slack keeps a
    short limit from being the wall clock's on a loaded machine, where a spinning script
    gets a fraction of a core.
    """
    hang = finding.kind == "hang"
    wall_s = timeout_s * 2 + HANG_WALL_SLACK_S if hang else timeout_s
    proc = run_script([], script, wall_s, timeout_s + (0 if hang else 10),
                python, extra_env)
    died = _died(proc, finding, timeout_s)
    if died is not None:
        return died
    output = (proc.stdout or "") + (proc.stderr or "")
    last = last_mark(proc.stdout)
    harness = _harness_error(proc, last)
    if harness:
        return ReproOutcome(False, f"the reproducer could not run: {harness}", output[-4000:], harness)
    if finding.kind == "wrong-result":
        return ReproOutcome(last == f"{MARK} mismatch", last or f"exit {proc.returncode}", output[-4000:])
    if finding.kind == "silent-acceptance":
        return ReproOutcome(last == f"{MARK} accepted", last or f"exit {proc.returncode}", output[-4000:])
    if finding.stage == "worker":
        return ReproOutcome(_exited_alike(finding, proc.returncode != 0 and last != f"{MARK} ok"),
                            last or f"exit {proc.returncode}", output[-4000:])
    failed = FAILED_MARK.match(last)
    alike = (failed is not None and failed.group(1) == finding.stage
             and _same_failure(finding, failed.group(2), output, dialect))
    return ReproOutcome(alike, last or f"exit {proc.returncode}", output[-4000:])


# runs the maintainer's repro.py as it is, and says what it raised: the script has no marks
_RUN_ALONE = f"""import runpy, sys
try:
    runpy.run_path(sys.argv[1], run_name="__main__")
except BaseException as exc:
    print("{MARK} raised=" + type(exc).__name__, file=sys.stderr)
    raise
print("{MARK} finished", file=sys.stderr)
"""
_IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError")


def check_short_reproducer(script: Path, finding: Finding, timeout_s: float, python: str | None = None,
                           extra_env: dict | None = None, dialect: str | None = None) -> ReproOutcome:
    """Run the maintainer's repro.py alone and say whether it fails the way the fuzzer saw:
    the same failure in the `dialect`'s terms (an AssertionError for a wrong result), the
    same signal, or a hang. Its output, less the line that says what it raised, is what
    the report shows."""
    hang = finding.kind == "hang"
    proc = run_script(["-c", _RUN_ALONE], script, timeout_s * (2 if hang else 1),
                timeout_s + (0 if hang else 10), python, extra_env)
    died = _died(proc, finding, timeout_s)
    if died is not None:
        return died
    said = [ln for ln in (proc.stderr or "").splitlines() if ln.startswith(MARK)]
    output = (proc.stdout or "") + "".join(f"{ln}\n" for ln in (proc.stderr or "").splitlines()
                                            if not ln.startswith(MARK))
    raised = said[-1].split("raised=", 1)[1] if said and "raised=" in said[-1] else ""
    if raised in _IMPORT_ERRORS and finding.extra.get("exc_type") not in _IMPORT_ERRORS:
        why = next((ln for ln in reversed(output.splitlines()) if raised in ln), raised)
        return ReproOutcome(False, f"the reproducer could not run: {why}", output[-4000:], why)
    observed = f"raised {raised}" if raised else "finished without an error"
    if finding.kind in ("wrong-result", "silent-acceptance"):  # its check failed: TVM's answer was wrong
        return ReproOutcome(raised == "AssertionError", observed, output[-4000:])
    if finding.stage == "worker":
        return ReproOutcome(_exited_alike(finding, bool(raised)), observed, output[-4000:])
    alike = bool(raised) and _same_failure(finding, raised, output, dialect)
    if alike and finding.kind == "poor-diagnostic" and not _same_error(output, raised, finding):
        # a disruptive script holds one call of the program: the same type is not enough,
        # TVM must fail in the same place, saying the same thing
        return ReproOutcome(False, f"{observed}, not where or as the fuzzer saw it", output[-4000:])
    return ReproOutcome(alike, observed, output[-4000:])


def _same_error(output: str, raised: str, finding: Finding) -> bool:
    """Does a script's output show the error a poor diagnostic's signature keys on: where
    in TVM it fails and its normalised message (oracles/disruptive.py violation_signature)?"""
    said = raised_text(output, raised)
    return said is not None and fails_at_same_check(finding, output, said)


def raised_text(output: str, raised: str) -> tuple[str, str] | None:
    """What the last `raised` exception in a script's output (or a traceback) says: its
    line and what follows, and that text as str(exc) says it ("" for a bare AssertionError);
    None where it raised none."""
    lines = output.splitlines()
    raised_line = re.compile(rf"^(?:[\w.]+\.)?{re.escape(raised)}(?::\s*|$)")
    starts = [i for i, ln in enumerate(lines) if raised_line.match(ln)]
    if not starts:
        return None
    # TVM's log lines ("[17:03:15] ...: Warning: BlockBuilder destroyed ...") may follow the error
    said = "\n".join(ln for ln in lines[starts[-1]:] if not _LOG_LINE.match(ln))
    return said, raised_line.sub("", said, count=1)


_LOG_LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] ")


def check_finding_scripts(folder: Path, finding: Finding, timeout_s: float, python: str | None = None,
                          extra_env: dict | None = None, dialect: str | None = None) -> ReproOutcome:
    """Run a finding's scripts alone: hirfuzz's harness (check.py), then the maintainer's
    repro.py, which must fail the same way. A folder without check.py has one script,
    repro.py, which is the harness (a disruptive finding's, or one saved before). `dialect`
    (the finding's IR) says which exception names are one failure."""
    if not (folder / HARNESS).exists():
        return check_reproducer(folder / REPRO, finding, timeout_s, python, extra_env, dialect)
    harness = check_reproducer(folder / HARNESS, finding, timeout_s, python, extra_env, dialect)
    if not harness.reproduced:
        return ReproOutcome(False, f"{HARNESS}: {harness.observed}", harness.output, harness.harness_error)
    short = check_short_reproducer(folder / REPRO, finding, timeout_s, python, extra_env, dialect)
    return ReproOutcome(short.reproduced, f"{HARNESS}: {harness.observed}; {REPRO}: {short.observed}",
                        short.output, short.harness_error, harness_output=harness.output,
                        harness_observed=harness.observed)
