"""How much finishing findings may take of a campaign: a bound per finding, and fuzzing first.

A finding's reduction (the steps that only make its program smaller: reduction_steps'
`budgeted` ones) stops at its `FindingBudget`, in worker trials and in seconds: a trial past
either bound is not run and counts as not failing alike, so each step keeps the smallest
case it had. The finding is filed as any other, with that best-so-far program, and its
finding.json says the budget ran out (extra.reduction.budget). The steps that settle what a
finding is (isolating its configuration, dropping its passes) and the last run of the
reduced program (confirm) are never cut.

While cases are still handed out, a reduction starts only while the reductions' trials so
far stay below `share` times the cases answered (`ReductionShare`): a reduction takes a worker
from fuzzing, and on Relay one trial costs about what a case does. Findings that wait are
kept in pending/ and finished once fuzzing ends, as before. Counting trials and cases,
not seconds, keeps a --jobs 1 campaign's order of cases and reductions the same from one
run to the next.

With --time, the run's wall time covers finishing too (`FinishingTime`): no case is handed
out while the findings waiting would need all that is left of it to be finished, so every
worker finishes them first, and fuzzing goes on once they are done; and a reduction gets no
more seconds than its equal part of what is left. Before, a campaign overran its --time by
finishing what it had queued (bench20, seed 4, 30 minutes: Relay 158 s for 27 findings,
Relax 217 s for a hang's scripts), so its findings an hour were fewer than its count said.

A finding is taken to cost what the last few of its oracle's took in this run: the mean of
every finding so far underestimated (bench28, Relay seed 21: finishing began with 195 s
left for 22 findings and took 376 s). Its first findings were pass crashes finished in a few
seconds, its last gradient findings whose every trial runs Relay's interpreter for
seconds, and the machine's load rose in between.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class FindingBudget:
    """What one finding's reduction may spend: `trials` worker trials and `seconds` of wall
    time from its start (None: no bound)."""
    trials: int | None = None
    seconds: float | None = None
    started: float = field(default_factory=time.monotonic)
    spent: int = 0                 # trials run under the budget
    ran_out_in: str | None = None  # the step whose trial it refused first

    def allows(self, step: str) -> bool:
        """Whether the step may run one more trial; counts it when it may."""
        if self.ran_out_in is None and (self.trials is not None and self.spent >= self.trials
                                        or self.seconds is not None and time.monotonic() - self.started > self.seconds):
            self.ran_out_in = step
        if self.ran_out_in is not None:
            return False
        self.spent += 1
        return True

    def report(self) -> dict | None:
        """What finding.json says of a budget that ran out (None: it did not)."""
        if self.ran_out_in is None:
            return None
        bound = " and ".join(b for b in (f"{self.trials} trials" if self.trials is not None else "",
                                         f"{self.seconds:g} s" if self.seconds is not None else "") if b)
        return {"trials": self.trials, "seconds": self.seconds, "spent_trials": self.spent,
                "spent_s": round(time.monotonic() - self.started, 3), "ran_out_in": self.ran_out_in,
                "note": f"reduction stopped at its budget ({bound}) in {self.ran_out_in}: the program filed "
                        "is the smallest found by then, not a minimal one"}


# what one finding's finishing (isolate, reduce, render, verify) is taken to cost before one
# has been timed in this run; bench20's 30-minute campaigns took about 10 s (Relay) and 14 s
# (Relax) a finding, hangs apart
PRIOR_FINISH_S = 30.0
# the least a reduction gets once --time is short: one or two worker trials
MIN_REDUCE_S = 10.0


# the findings, an oracle's or all, whose finishing times give the next one's estimate: the
# last ones, as the kinds of findings and the machine's load change over a campaign
RECENT_FINISHES = 5


@dataclass
class FinishingTime:
    """What finishing the findings waiting will take of --time, and what is left of it.

    A finding is taken to cost what the last RECENT_FINISHES of its oracle's findings took in
    this run on average, else the last of any oracle's, else PRIOR_FINISH_S; a hang what its
    two scripts take when each runs to its CPU limit (`hang_s`). The workers share the work."""
    ends_at: float | None   # time.monotonic() when --time runs out (None: no --time)
    hang_s: float           # a hang's finishing: its check.py and repro.py to their CPU limits
    # seconds each finding finished in this run took (not hangs), by oracle, and all in order
    took: dict[str, list[float]] = field(default_factory=dict)
    took_in_order: list[float] = field(default_factory=list)

    def finished(self, kind: str, oracle: str, seconds: float):
        if kind == "hang":
            return
        self.took.setdefault(oracle, []).append(seconds)
        self.took_in_order.append(seconds)

    def cost_s(self, kind: str, oracle: str) -> float:
        if kind == "hang":
            return self.hang_s
        recent = self.took.get(oracle) or self.took_in_order
        if not recent:
            return PRIOR_FINISH_S
        last = recent[-RECENT_FINISHES:]
        return sum(last) / len(last)

    def left_s(self) -> float | None:
        return None if self.ends_at is None else self.ends_at - time.monotonic()

    def finish_first(self, waiting: list[tuple[str, str]], jobs: int) -> bool:
        """Whether the findings waiting (their kinds and oracles) need all that is left of
        --time, on `jobs` workers."""
        left = self.left_s()
        if left is None or not waiting:
            return False
        return sum(self.cost_s(kind, oracle) for kind, oracle in waiting) / max(1, jobs) >= left

    def reduce_s(self, bound: float | None, waiting: int, jobs: int) -> float | None:
        """Seconds a reduction starting now may take: `bound` (--reduce-seconds), or less,
        its equal part of what is left of --time among the `waiting` findings (itself one)
        on `jobs` workers, but never under MIN_REDUCE_S."""
        left = self.left_s()
        if left is None:
            return bound
        part = max(MIN_REDUCE_S, left * jobs / max(1, waiting))
        return part if bound is None else min(bound, part)


@dataclass
class ReductionShare:
    """How many reductions may hold a worker now: while fuzzing, at most half the workers
    (one at least), and a new one only while the reductions' trials so far are fewer than
    `share` times the cases answered (None: no such bound; 0: none while fuzzing); once
    fuzzing is over, all."""
    share: float | None
    trials: int = 0   # worker trials reductions ran (the lock of the reductions' host guards it)

    def limit(self, jobs: int, cases: int, fuzzing: bool, running: int) -> int:
        if not fuzzing:
            return jobs
        most = max(1, jobs // 2)
        return most if self.may_start(cases) else min(most, running)  # those running go on; none starts

    def may_start(self, cases: int) -> bool:
        """Whether a reduction may start (or a thread take its next finding) while fuzzing."""
        return self.share is None or self.trials < self.share * cases
