"""A cross-IR finding's counterpart: the reduced program in the other IR, tried under every
release of that IR's TVM at hand.

A Relay finding's first question for a maintainer is whether Relax, which replaced Relay,
still has the bug. The cross-IR oracle answers it for one TVM while the campaign runs
("Relax on TVM 0.27: agrees with the reference"); once the finding is reduced and
confirmed, its reduced graph is lowered to the other IR as a standalone script
(`relax-counterpart.py` beside repro.py) and run, as the user would run it, under that
IR's own interpreter and each managed environment of it that is set up (relax-0.25, ...).
`finding.json` records what each release did (`extra.counterpart`), and the bug report
says it in one line.
"""
from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..core.finding import Finding
from ..dialects.reproducer import RUN_LINE
from ..protocol import REPRO_MARK as MARK
from .outdir import save_folder
from .reproducers import expected_for
from .verify import FAILED_MARK, last_mark, run_script
from .versions import Release, and_list, ready_environments, release_of, version_key

if TYPE_CHECKING:
    from ..dialects import DialectInfo
    from .cases import Case


class CounterpartVerdict(str, Enum):
    AGREES = "agrees with the reference"
    DIFFERS = "differs from the reference"
    FAILS = "fails"            # said with its stage and error: "fails at build (TVMError)"
    DIES = "dies"              # a signal or a hang
    CANNOT_RUN = "cannot run"  # the script never reached the program (another API)


# the IR whose findings are tried in another, and that other: Relax replaced Relay, so a
# Relay bug's first question is whether Relax has it too
COUNTERPART_OF = {"relay": "relax"}


@dataclass
class CounterpartSide:
    """The other IR of a cross-IR campaign, as a finding of the first is tried in it."""
    info: "DialectInfo"
    specs: object                              # its spellings of the campaign's ops
    make_case: Callable[..., "Case"]           # its CaseMaker.make_case: inputs and reference for a graph
    python: str                                # the interpreter of its campaign TVM
    env: dict
    tvm_version: Callable[[], str]             # that TVM's version, once its workers said it
    _releases: list[Release] | None = None

    def releases(self) -> list[Release]:
        """Its campaign TVM, then each set-up environment of its dialect with another
        version (asked once: each costs an interpreter's start)."""
        if self._releases is None:
            found = {self.tvm_version(): Release(self.info.name, self.python, self.env, self.tvm_version())}
            for name in ready_environments(self.info.name):
                release = release_of(name)
                found.setdefault(release.version, release)
            self._releases = list(found.values())
        return self._releases

    def script_name(self) -> str:
        return f"{self.info.name}-counterpart.py"

    def script(self, case: "Case", finding: Finding) -> str:
        """The reduced graph of `case` as a standalone script of this IR: built as its
        baseline builds, run on inputs drawn for it, checked against the reference."""
        other = self.make_case(case.index, case.graph)
        config = other.configs[0]  # the baseline: what the cross-IR oracle ran
        described = Finding(kind=finding.kind, oracle=finding.oracle, stage=finding.stage,
                            signature=finding.signature,
                            message=f"the {self.info.name.capitalize()} counterpart of: {finding.message}")
        writer = self.info.reproducer_writer()
        text = writer.render_reproducer(other.graph, self.specs, described, config, other.inputs,
                                        run=other.runnable, expected=expected_for(other, config, self.specs),
                                        tvm_version=self.tvm_version())
        # it is no repro.py: exit 0 says this IR computes the program as the reference does
        return text.replace(RUN_LINE, f"Run: python {self.script_name()}   (exit status 0: "
                                      f"{self.info.name.capitalize()} computes it as the NumPy reference does)")


def verdict_of(proc) -> str:
    """What a counterpart script did, from its last mark: agreed, differed, failed (at
    which stage, with what), died, or never got to the program."""
    if isinstance(proc, subprocess.TimeoutExpired):
        return CounterpartVerdict.DIES.value + " (hangs)"
    if proc.returncode < 0:
        return f"{CounterpartVerdict.DIES.value} (signal {signal.Signals(-proc.returncode).name})"
    last = last_mark(proc.stdout)
    if last == f"{MARK} ok":
        return CounterpartVerdict.AGREES.value
    if last == f"{MARK} mismatch":
        return CounterpartVerdict.DIFFERS.value
    failed = FAILED_MARK.match(last)
    if failed is not None and failed.group(1) != "setup":
        return f"{CounterpartVerdict.FAILS.value} at {failed.group(1)} ({failed.group(2)})"
    lines = [ln.strip() for ln in (proc.stderr or "").splitlines() if ln.strip()]
    return f"{CounterpartVerdict.CANNOT_RUN.value} ({lines[-1][:120] if lines else f'exit {proc.returncode}'})"


def try_counterpart(folder: Path, script_name: str, releases: list[Release], timeout_s: float) -> dict[str, str]:
    """TVM version -> what the counterpart script did there, oldest release first."""
    verdicts = {}
    for release in releases:
        proc = run_script([], folder / script_name, timeout_s * 2, timeout_s, release.python, release.env)
        verdicts[release.version] = verdict_of(proc)
    return {v: verdicts[v] for v in sorted(verdicts, key=version_key)}


def counterpart_of(side: CounterpartSide, case: "Case", finding: Finding, staging: Path,
                   timeout_s: float) -> dict:
    """Write the counterpart script of a confirmed finding into `staging` and run it under
    each release: the record finding.json keeps as extra.counterpart."""
    name = side.script_name()
    folder = save_folder(staging.parent, staging.name, {name: side.script(case, finding)})
    versions = try_counterpart(folder, name, side.releases(), timeout_s)
    wrong = [v for v, verdict in versions.items() if verdict != CounterpartVerdict.AGREES.value]
    return {"dialect": side.info.name, "script": name, "versions": versions, "fails_on": wrong}


def counterpart_sentence(record: dict) -> str:
    """'Its Relax counterpart (relax-counterpart.py) agrees with the reference on 0.26.0 and
    0.27.0.post1.' — each distinct verdict with the releases that gave it."""
    by_verdict: dict[str, list[str]] = {}
    for version, verdict in record["versions"].items():
        by_verdict.setdefault(verdict, []).append(version)
    said = "; ".join(f"{verdict} on {and_list(versions)}" for verdict, versions in by_verdict.items())
    return f"Its {record['dialect'].capitalize()} counterpart ({record['script']}, the same program): {said}."
