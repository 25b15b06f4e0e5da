"""Case makers: where a campaign's cases are drawn, off the coordinator's critical path.

Drawing a case (generation, the input search with its NumPy reference, the request) takes
the coordinator tens of milliseconds; with many workers that is what keeps them waiting.
`--makers N` draws cases in N processes of their own (`MakerPool`); with none, the
coordinator draws them itself, one ahead while the workers build (`InProcessMakers`).

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
import traceback
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING

from ..errors import HirfuzzError
from .coverage_ledger import COVERAGE_LAG

if TYPE_CHECKING:
    from .cases import Case, CaseMaker, Made
    from .settings import Settings

PER_MAKER = 2  # cases handed to one maker at once: the next is there as it sends one back
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


class MakerPool:
    """N processes drawing cases ahead of the coordinator, up to COVERAGE_LAG at once."""

    def __init__(self, n: int, maker: "CaseMaker", next_index: int, last_index: int | None):
        self.maker = maker
        self.next_draw = next_index       # the next case to hand to a maker
        self.last_index = last_index      # none past it (--iterations); None: no end
        self.received_upto = next_index   # every case before it is back
        self.made: dict[int, "Made"] = {}  # back, not taken yet
        self.handed: dict[int, int] = {}  # case -> the maker drawing it
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

    def close(self):
        for inbox in self.inboxes:
            try:
                inbox.send(None)
            except OSError:
                pass
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
        for pipe in self.inboxes + self.outboxes:
            pipe.close()

    def _hand_out(self):
        """Hand each maker up to PER_MAKER cases, none of which must wait for a case not back."""
        while (self.next_draw <= self.received_upto + COVERAGE_LAG
               and (self.last_index is None or self.next_draw < self.last_index)):
            load = {i: 0 for i in range(len(self.inboxes))}
            for m in self.handed.values():
                load[m] += 1
            free = min(load, key=load.get)
            if load[free] >= PER_MAKER:
                return
            index = self.next_draw
            self.inboxes[free].send(("draw", index, self.maker.avoidance.avoided_at(index)))
            self.handed[index] = free
            self.next_draw += 1

    def _receive(self, timeout: float | None):
        for pipe in wait(self.outboxes, timeout):
            try:
                answer = pipe.recv()
            except EOFError:
                raise HirfuzzError("a case maker process died; see its error above") from None
            if answer[0] == "error":
                raise HirfuzzError(f"a case maker failed drawing case {answer[1]}:\n{answer[2]}")
            _, index, made = answer
            del self.handed[index]
            self.made[index] = made
            self.maker.ledger.merge(index, made.coverage)
            for inbox in self.inboxes:  # each maker's ledger learns every case's keys
                inbox.send(("coverage", index, made.coverage))
            while self.received_upto in self.made:
                self.received_upto += 1


def open_makers(settings: "Settings", maker: "CaseMaker", next_index: int):
    """The campaign's case makers (settings.makers processes, or the coordinator itself)."""
    if not settings.makers:
        return InProcessMakers(maker)
    return MakerPool(settings.makers, maker, next_index, settings.iterations)


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
