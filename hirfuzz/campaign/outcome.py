"""What judging a worker's answer to a case gives: how far the case got (`Status`, and the
stage that failed) and the finding it shows, if any (`Outcome`)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..core.finding import Finding


class Status(Enum):
    """How far a case got, as its baseline's answer (or a disruptive case's) says."""
    OK = "ok"              # ran, and its results agree with the reference
    RAN = "ran"            # ran; no result was stable enough to compare
    BUILT = "built"        # built, not run: every input draw may trap
    CHECKED = "checked"    # a check-only case (campaign.cases): well-formed, its passes checked, never built
    # its baseline cannot take the program by design (a limit TVM says it has: a Relay
    # operator with no shape function met on a dynamic shape); counted in skipped_by_design
    SKIPPED = "skipped"
    MISMATCH = "mismatch"  # ran, and a result differs
    # hirfuzz failed judging its answer: its own bug, filed in hirfuzz-bugs/ (the campaign goes on)
    UNJUDGED = "unjudged"
    ERROR = "error"        # failed at a stage (Outcome.stage)
    # its worker died (sandbox.Death.reason)
    SIGNAL = "signal"
    EXIT = "exit"
    TIMEOUT = "timeout"
    # its worker ran out of the --max-memory limit (sandbox.Death.memory_limit_mb): the limit's
    # doing, not a finding; counted, and said
    OUT_OF_MEMORY = "out-of-memory"
    # disruptive mode: what TVM did with the broken program (core.violations.CLASSES),
    # at a stage (Outcome.stage)
    CLEAN_REJECTION = "clean-rejection"
    POOR_DIAGNOSTIC = "poor-diagnostic"
    CRASH = "crash"
    SILENT_ACCEPTANCE = "silent-acceptance"
    ACCEPTED_UNLISTED_DTYPE = "accepted-unlisted-dtype"   # counted, not a finding (violations.classify)


@dataclass
class Outcome:
    status: Status
    stage: str | None = None        # where an error, or a disruptive case's class, was seen
    finding: Finding | None = None
    log: str = ""
    # its finding is a configuration's after one that failed with a finding the campaign held
    # (judge.Judge.classify, `known`): what that one would have hidden
    past_known: bool = False

    @property
    def status_text(self) -> str:
        """The status as stats.jsonl spells it: "ok", "signal", "error:build",
        "clean-rejection:lower"."""
        return self.status.value if self.stage is None else f"{self.status.value}:{self.stage}"
