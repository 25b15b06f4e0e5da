"""Case makers: where a campaign's cases are drawn, off the coordinator's critical path.

Drawing a case (generation, the input search with its NumPy reference, the request) takes
the coordinator tens of milliseconds; with many workers that is what keeps them waiting.
`--makers N` draws cases in N processes of their own (`ProcessMakers`), or N actors on the
cluster with --ray (`RayMakers`); with none, the coordinator draws them itself, one ahead
while the workers build (`InProcessMakers`).

Either way case `i` is the seed's alone: its random streams are its own (cases.Stream),
and its graph is generated against the coverage of the cases before `i - COVERAGE_LAG`
(coverage_ledger). The pool hands case `i` to a maker only once every one of those is back,
and sends each maker every case's coverage keys before any case that must see them, so 1,
2 or 8 makers draw the same cases. The constructs confirmed findings fail on
(campaign.avoidance) are read by the coordinator as it hands each case out, in index order.
The coordinator takes cases in index order (`take`); what the makers drew past the last
one taken is drawn again after a resume, alike.
"""
from __future__ import annotations

import multiprocessing
import queue
import threading
import time
import traceback
from abc import ABC, abstractmethod
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING

from ..errors import HirfuzzError
from .coverage_ledger import COVERAGE_LAG

if TYPE_CHECKING:
    from .cases import Case, CaseMaker, Made
    from .settings import Settings

PER_MAKER = 2  # cases handed to one maker at once: the next is there as it sends one back
CLOSE_S = 5.0  # how long closing waits for the makers to end
WORKERS_PER_MAKER = 4  # --makers by default: a maker draws a case in a fraction of a worker's time on it


def default_makers(jobs: int | None) -> int:
    """--makers left out: none for a few workers (the coordinator draws between answers), then
    one per WORKERS_PER_MAKER workers, as many as can draw at once (COVERAGE_LAG)."""
    return min((jobs or 0) // WORKERS_PER_MAKER, COVERAGE_LAG // PER_MAKER)


class InProcessMakers:
    """No maker processes: the coordinator draws each case itself when it is taken."""

    def __init__(self, maker: "CaseMaker"):
        self.maker = maker

    def ready(self, index: int) -> bool:
        return True

    def take(self, index: int) -> "Case":
        return self.maker.make_case(index)

    def close(self):
        pass


class MakerPool(ABC):
    """Makers drawing cases ahead of the coordinator, up to COVERAGE_LAG at once: what to
    draw and when, and what comes back. How a maker is reached is a subclass's: processes
    here (`ProcessMakers`), Ray actors on the cluster (`RayMakers`)."""

    def __init__(self, n: int, maker: "CaseMaker", next_index: int, last_index: int | None):
        self.n = n
        self.maker = maker
        self.next_draw = next_index       # the next case to hand to a maker
        self.last_index = last_index      # none past it (--iterations); None: no end
        self.received_upto = next_index   # every case before it is back
        self.made: dict[int, "Made"] = {}  # back, not taken yet
        self.handed: dict[int, int] = {}  # case -> the maker drawing it

    def ready(self, index: int) -> bool:
        self._hand_out()
        self._receive(0.0)
        return index in self.made

    def take(self, index: int) -> "Case":
        """Case `index`, waiting for it if it is not back yet; cases are taken in index order."""
        self._hand_out()
        while index not in self.made:
            self._receive(None)
            self._hand_out()
        made = self.made.pop(index)
        self.maker.gen_stats.add(made.stats)
        self.maker.ledger.base_for(index)  # what no case to come can add to any more is folded
        return made.case

    @abstractmethod
    def close(self):
        ...

    def _hand_out(self):
        """Hand each maker up to PER_MAKER cases, none of which must wait for a case not back."""
        while (self.next_draw <= self.received_upto + COVERAGE_LAG
               and (self.last_index is None or self.next_draw < self.last_index)):
            load = dict.fromkeys(range(self.n), 0)
            for m in self.handed.values():
                load[m] += 1
            free = min(load, key=load.get)
            if load[free] >= PER_MAKER:
                return
            index = self.next_draw
            self._send_draw(free, index, self.maker.avoidance.avoided_at(index))
            self.handed[index] = free
            self.next_draw += 1

    def _receive(self, timeout: float | None):
        for index, made in self._answers(timeout):
            del self.handed[index]
            self.made[index] = made
            self.maker.ledger.merge(index, made.coverage)
            self._send_coverage(index, made.coverage)  # each maker's ledger learns every case's keys
            while self.received_upto in self.made:
                self.received_upto += 1

    # --- how makers are reached ---------------------------------------------------------

    @abstractmethod
    def _send_draw(self, slot: int, index: int, avoid: frozenset):
        """Have maker `slot` draw case `index` after every coverage sent to it before."""
        ...

    @abstractmethod
    def _send_coverage(self, index: int, coverage):
        """Tell every maker what case `index` added to the coverage."""
        ...

    @abstractmethod
    def _answers(self, timeout: float | None) -> list[tuple[int, "Made"]]:
        """The cases back within `timeout` seconds (None: at least one, however long)."""
        ...


class ProcessMakers(MakerPool):
    """Makers in processes of this machine, each with a pipe each way."""

    def __init__(self, n: int, maker: "CaseMaker", next_index: int, last_index: int | None):
        super().__init__(n, maker, next_index, last_index)
        context = multiprocessing.get_context("spawn")  # no fork of a coordinator with threads
        self.inboxes: list[Connection] = []  # to each maker: what to draw, every case's coverage
        self.outboxes: list[Connection] = []  # from each maker: the cases it drew
        self.procs = []
        state = maker_state(maker)
        for _ in range(n):
            inbox_out, inbox_in = context.Pipe(duplex=False)
            outbox_out, outbox_in = context.Pipe(duplex=False)
            proc = context.Process(target=serve, args=(inbox_out, outbox_in, state), daemon=True,
                                   name="hirfuzz-maker")
            proc.start()
            inbox_out.close()
            outbox_in.close()
            self.inboxes.append(inbox_in)
            self.outboxes.append(outbox_out)
            self.procs.append(proc)

    def close(self):
        for inbox in self.inboxes:
            try:
                inbox.send(None)
            except OSError:
                pass
        # a maker may be sending a case nobody takes now: read it, so that it gets to the end
        deadline = time.monotonic() + CLOSE_S
        open_outboxes = list(self.outboxes)
        while open_outboxes and time.monotonic() < deadline:
            for pipe in wait(open_outboxes, 0.1):
                try:
                    pipe.recv()
                except (EOFError, OSError):
                    open_outboxes.remove(pipe)
        for proc in self.procs:
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
        for pipe in self.inboxes + self.outboxes:
            pipe.close()

    def _send_draw(self, slot: int, index: int, avoid: frozenset):
        self.inboxes[slot].send(("draw", index, avoid))

    def _send_coverage(self, index: int, coverage):
        for inbox in self.inboxes:
            inbox.send(("coverage", index, coverage))

    def _answers(self, timeout: float | None) -> list[tuple[int, "Made"]]:
        answers = []
        for pipe in wait(self.outboxes, timeout):
            try:
                answer = pipe.recv()
            except EOFError:
                raise HirfuzzError("a case maker process died; see its error above") from None
            if answer[0] == "error":
                doing = "starting" if answer[1] is None else f"drawing case {answer[1]}"
                raise HirfuzzError(f"a case maker failed {doing}:\n{answer[2]}")
            answers.append((answer[1], answer[2]))
        return answers


class RayMakers(MakerPool):
    """Makers as Ray actors on the cluster (--ray): the coverage each must learn goes with
    the next case it is asked to draw (an actor runs one caller's calls in order)."""

    def __init__(self, n: int, maker: "CaseMaker", next_index: int, last_index: int | None):
        super().__init__(n, maker, next_index, last_index)
        from .raypool import import_ray
        self.ray = import_ray()
        # no CPU of its own: the workers' actors hold one each, every CPU of the cluster by
        # default, and a maker waiting for a CPU would leave every worker waiting for cases
        actor = self.ray.remote(num_cpus=0)(MakerActor)
        state = maker_state(maker)
        self.actors = [actor.remote(state) for _ in range(n)]
        self.unsent: list[list] = [[] for _ in range(n)]  # per actor: (case, coverage) it has not learnt
        self.drawing: dict = {}  # object ref -> case

    def close(self):
        for actor in self.actors:
            self.ray.kill(actor)

    def _send_draw(self, slot: int, index: int, avoid: frozenset):
        self.drawing[self.actors[slot].draw.remote(index, avoid, self.unsent[slot])] = index
        self.unsent[slot] = []

    def _send_coverage(self, index: int, coverage):
        for unsent in self.unsent:
            unsent.append((index, coverage))

    def _answers(self, timeout: float | None) -> list[tuple[int, "Made"]]:
        if not self.drawing:
            return []
        ready, _ = self.ray.wait(list(self.drawing), num_returns=1, timeout=timeout)
        if ready:  # and whatever else is back already
            ready, _ = self.ray.wait(list(self.drawing), num_returns=len(self.drawing), timeout=0)
        answers = []
        for ref in ready:
            index = self.drawing.pop(ref)
            try:
                answers.append((index, self.ray.get(ref)))
            except Exception as exc:  # noqa: BLE001 - the actor's error, or its node lost
                raise HirfuzzError(f"a case maker failed drawing case {index} on the cluster: {exc}") from None
        return answers


class MakerActor:
    """A maker on a Ray node (RayMakers)."""

    def __init__(self, state: dict):
        self.maker = _maker_of(state)

    def draw(self, index: int, avoid: frozenset, coverage: list) -> "Made":
        for case, added in coverage:
            self.maker.ledger.merge(case, added)
        return self.maker.draw_case(index, self.maker.ledger.base_for(index), avoid)


def open_makers(settings: "Settings", maker: "CaseMaker", next_index: int):
    """The campaign's case makers (settings.makers processes, or the coordinator itself)."""
    if not settings.makers:
        return InProcessMakers(maker)
    pool = ProcessMakers if settings.ray is None else RayMakers
    return pool(settings.makers, maker, next_index, settings.iterations)


def maker_state(maker: "CaseMaker") -> dict:
    """What a maker process needs to draw as `maker` draws: the settings, the targets as the
    workers named them, the probe's direction; it loads the specs and passes itself."""
    return {"settings": maker.s, "targets": maker.targets, "direction": maker.direction}


def serve(inbox: Connection, outbox: Connection, state: dict):
    """A maker process: draws the cases it is handed, learning each case's coverage keys.
    A thread empties its inbox as messages come, so that the coordinator never waits to
    send while this process waits to send it a case."""
    try:
        maker = _maker_of(state)
    except Exception:  # noqa: BLE001 - said to the coordinator, which stops the campaign
        outbox.send(("error", None, traceback.format_exc()))
        return
    messages: queue.Queue = queue.Queue()
    threading.Thread(target=_read_all, args=(inbox, messages), daemon=True).start()
    while True:
        message = messages.get()
        if message is None:
            return
        kind, index, payload = message
        if kind == "coverage":
            maker.ledger.merge(index, payload)
            continue
        try:
            made = maker.draw_case(index, maker.ledger.base_for(index), payload)
        except Exception:  # noqa: BLE001 - as above
            outbox.send(("error", index, traceback.format_exc()))
            return
        outbox.send(("made", index, made))


def _read_all(inbox: Connection, messages: queue.Queue):
    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):
            message = None
        messages.put(message)
        if message is None:
            return


def _maker_of(state: dict) -> "CaseMaker":
    from ..core.passes import load_catalog
    from ..core.spec import load_specs
    from ..dialects import dialect_info
    from .cases import CaseMaker
    s = state["settings"]
    specs = load_specs(s.spec_dir, dialect=s.dialect)
    if s.cross_dialect is not None:
        specs = specs.shared_with(load_specs(s.spec_dir, dialect=s.cross_dialect))
    info = dialect_info(s.dialect)
    maker = CaseMaker(s, specs, info, load_catalog(s.pass_files, builtin=info.catalog))
    maker.targets = state["targets"]
    maker.direction = state["direction"]
    return maker
