"""A campaign's run in named phases, and the seconds and cases of each (summary.json's
`phases`): where the time went, read by phase instead of inferred from the totals.

    start   the workers start, their TVM is checked, the user's passes are checked
    probe   the passes to fuzz are probed (campaign.probe): no case is judged
    fuzz    cases are handed out, until the budget is spent or a signal stops the campaign
    finish  no case is handed out any more: the cases in flight are judged, and the
            reductions (pending findings) run on every worker until they are done

A case counts in the phase it is judged in, so the phases' cases add up to the campaign's.
A resumed campaign adds its phases to those of its earlier runs (they are checkpointed).
"""
from __future__ import annotations

import time
from enum import Enum
from typing import Callable


class Phase(Enum):
    START = "start"
    PROBE = "probe"
    FUZZ = "fuzz"
    FINISH = "finish"


class PhaseClock:
    """The phase a campaign is in, and each phase's seconds and judged cases so far."""

    def __init__(self, cases: Callable[[], int], earlier: dict | None = None):
        self.cases = cases  # the cases the campaign has judged (all runs)
        self.totals = {name: dict(figures) for name, figures in (earlier or {}).items()}
        self.current: Phase | None = None
        self._entered = 0.0
        self._cases_at_entry = 0

    def enter(self, phase: Phase):
        """End the phase the campaign was in, and start `phase`."""
        self.end()
        self.current, self._entered, self._cases_at_entry = phase, time.monotonic(), self.cases()

    def end(self):
        if self.current is not None:
            self.totals = self.figures()
            self.current = None

    def figures(self) -> dict[str, dict]:
        """name -> {seconds, cases}, in the order the phases ran, the current one up to now."""
        totals = {name: dict(figures) for name, figures in self.totals.items()}
        if self.current is not None:
            figures = totals.setdefault(self.current.value, {"seconds": 0.0, "cases": 0})
            figures["seconds"] += time.monotonic() - self._entered
            figures["cases"] += self.cases() - self._cases_at_entry
        return totals
