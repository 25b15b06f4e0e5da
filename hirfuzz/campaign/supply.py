"""The cases a campaign hands out, in order: those a killed run left unjudged, then new ones
(drawn by the case makers, campaign.makers; the next one made ahead while the workers
build), within the budget (--iterations, --time) and until a signal stops the campaign.
With --time, none is handed out while the findings waiting need what is left of it
(reduction_budget.FinishingTime): the workers finish them first."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from ..core.graph import Graph
from .cases import Case, CaseMaker
from .makers import InProcessMakers
from .followups import FollowUps

if TYPE_CHECKING:
    from .cross import CrossSide
    from .settings import Settings
    from .tallies import Counters


class CaseSupply:
    def __init__(self, settings: "Settings", maker: CaseMaker, cross: "CrossSide | None", counters: "Counters",
                 started: float):
        self.s, self.maker, self.cross, self.counters = settings, maker, cross, counters
        self.started = started   # when this run of the campaign started (--time counts from there)
        self.next_index = 0
        self.queue: list[Case] = []  # resumed: generated before a kill, never judged
        self.ahead: list[Case] = []  # made while the workers were busy, for the next idle one
        self._made_at: dict[int, float] = {}  # case made ahead -> when
        self.stopping = False    # a signal stopped the campaign: no case is handed out any more
        self.makers = InProcessMakers(maker)  # who draws new cases (the fuzz phase may open a pool)
        self.followups = FollowUps(maker)  # mutants of the interesting cases (--followup-mutants)
        # whether the findings waiting need all that is left of --time (Reductions.finish_first)
        self.finish_first: Callable[[], bool] = lambda: False
        self._held_since: float | None = None  # when finishing first last began holding cases back
        self.held_back = False  # whether next_case gave no case last because findings were finished first

    def restore(self, state: dict):
        """Where a checkpoint left the supply: the next index, and the cases it had handed
        out or made but not judged, which run first, unchanged."""
        self.next_index = state["next_index"]
        self.queue = [self.maker.make_case(c["index"], Graph.from_json(c["graph"]), c.get("disruption"),
                                           configs=c.get("configs"), lowering=c.get("lowering"))
                      for c in state.get("in_flight", [])]

    def unjudged(self) -> list[Case]:
        """The cases made and not handed out yet (a checkpoint keeps them)."""
        return self.queue + self.ahead + self.followups.unjudged()

    def next_case(self) -> Case | None:
        """The case for the next idle worker: a resumed one, a follow-up mutant, the one
        made ahead, or a new one."""
        self.held_back = False
        if self.queue:
            return self.with_cross_half(self.queue.pop(0))
        if self.stopping or self.time_up():
            return None
        if self.holding_back():
            self.held_back = True
            return None
        # past --iterations, the follow-ups left run without the share that paces them
        paced = bool(self.ahead) or not self.iterations_done()
        case = self.followups.next_case(paced) or (self.ahead.pop(0) if self.ahead else self.make_next_case())
        if case is not None:
            self.followups.counted()
        return case

    def judged(self, case: Case, answer, outcome):
        """A case's answer is judged: follow it up if it was interesting (campaign.followups)."""
        self.followups.consider(case, answer, outcome)

    def waited_s(self, case: Case) -> float:
        """How long `case` waited for a worker since it was made (0 for a resumed one)."""
        now = time.monotonic()
        return now - self._made_at.pop(case.index, now)

    def make_next_case(self) -> Case | None:
        if self.iterations_done():
            return None
        t0 = time.perf_counter()
        case = self.with_cross_half(self.makers.take(self.next_index))
        self.counters.gen_s += time.perf_counter() - t0
        self._made_at[case.index] = time.monotonic()
        self.next_index += 1
        return case

    def make_ahead(self):
        """Make the next case while the workers build, so that the next worker to answer
        starts it at once instead of waiting for generation and the input search."""
        if self.ahead or self.stopping or self.time_up() or not self.makers.ready(self.next_index):
            return
        case = self.make_next_case()  # None once --iterations cases are made
        if case is not None:
            self.ahead.append(case)

    def with_cross_half(self, case: Case) -> Case:
        if self.cross is not None:
            case.cross = self.cross.half(case)
        return case

    def handing_out(self) -> bool:
        """Whether cases are handed out now (what next_case would give)."""
        return not self.over() and (bool(self.queue) or not self.holding_back())

    def over(self) -> bool:
        """Whether no case will be handed out any more: the fuzz phase is over."""
        if self.stopping or not self.queue and self.time_up():
            self._stop_holding()
            return True
        return not self.queue and not self.ahead and self.iterations_done() and not self.followups.waiting

    def holding_back(self) -> bool:
        """Whether new cases wait while the workers finish findings first (--time is short);
        counts the seconds they waited (counters.finish_first_s)."""
        if self.s.time_s is None or not self.finish_first():
            self._stop_holding()
            return False
        if self._held_since is None:
            self._held_since = time.monotonic()
        return True

    def _stop_holding(self):
        if self._held_since is not None:
            self.counters.finish_first_s += time.monotonic() - self._held_since
            self._held_since = None

    def iterations_done(self) -> bool:
        return self.s.iterations is not None and self.next_index >= self.s.iterations

    def time_up(self) -> bool:
        return self.s.time_s is not None and time.monotonic() - self.started >= self.s.time_s
