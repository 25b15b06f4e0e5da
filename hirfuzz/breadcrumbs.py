"""Where a worker is: a breadcrumb line on its stderr before each step that can kill it.

A segfault or an abort in TVM leaves no reply, and TVM's own last words are unreliable
(TVM 0.27 prints a native backtrace only sometimes, a stack overflow prints nothing, TVM
0.19 never does). So the worker says where it goes before it goes there: which of the
request's configurations, which stage, and in the passes stage which pass of the sequence.
Each breadcrumb is one line, `PREFIX` then JSON, written with one unbuffered write; stderr
is the worker's log (campaign.sandbox), whose last breadcrumb says where a dead worker
died (`last_place`) and stays in the finding's detail as evidence. A request starts with
an empty breadcrumb, so that a death before any step (a test-only crash) names no place
rather than the previous case's last one.

Standard library only: Relay's workers run under TVM 0.19's interpreter.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from enum import Enum

PREFIX = "hirfuzz-at "
_PREFIX_BYTES = PREFIX.encode()
# how far back in a dead worker's log its last breadcrumb is looked for: TVM may print a
# long backtrace after it, but a case's output past this is no case's of ours
SEARCH_LIMIT = 16 << 20
_CHUNK = 1 << 16


class Stage(str, Enum):
    """Where in a case a worker may die."""
    LOWER = "lower"
    WELL_FORMED = "well_formed"
    MUTATE = "mutate"
    PASSES = "passes"
    BUILD = "build"
    LOAD = "load"
    RUN = "run"


@dataclass(frozen=True)
class Place:
    """Where a worker was when it died: the stage, the configuration (its index in the
    request's configs; None before any) and, in the passes stage, the pass being run."""
    stage: Stage
    config: int | None = None
    pass_name: str | None = None
    # the positions of the configuration's passes left out of the sequence it died running:
    # the worker went on past passes that failed (worker.failures_past), each dropped in turn
    dropped: tuple[int, ...] = ()

    def key(self) -> str:
        """The place in a signature: "passes:DataflowUseInplaceCalls", "build" (never the
        configuration's index, which a reduction's trial of that configuration alone changes)."""
        return f"{self.stage.value}:{self.pass_name}" if self.pass_name else self.stage.value

    def as_extra(self) -> dict:
        """What a finding's extra says of it ("died_in")."""
        said = {"stage": self.stage.value, "config": self.config, "pass": self.pass_name,
                "dropped": list(self.dropped) or None}
        return {k: v for k, v in said.items() if v is not None}

    def describe(self) -> str:
        """Where, in a finding's message (not which configuration: the finding names it, and
        its index changes as a reduction drops the others)."""
        return f"in pass {self.pass_name}" if self.pass_name else f"in the {self.stage.value} stage"


class _Trail:
    """The worker's breadcrumbs: off unless the worker turns them on (apply_passes also runs
    in tools and probes that have no log to read them from)."""

    def __init__(self):
        self.on = False
        self.config: int | None = None
        # the pass the passes stage is in, also with the breadcrumbs off: a pass that raises
        # with no TVM frame to say where (Relay's type checker) is named by it (worker.run_config)
        self.pass_name: str | None = None
        self.pass_position: int | None = None  # its position in the sequence being run
        self.dropped: tuple[int, ...] = ()  # Place.dropped: set while the worker goes on past failed passes

    def start_request(self):
        self.config = None
        self.pass_name = None
        self.pass_position = None
        self.dropped = ()
        self._write({})

    def enter_config(self, index: int):
        self.config = index

    def at(self, stage: Stage, pass_name: str | None = None, position: int | None = None):
        self.pass_name = pass_name
        self.pass_position = position
        said = {"stage": stage.value}
        if self.config is not None:
            said["config"] = self.config
        if pass_name is not None:
            said["pass"] = pass_name
        if self.dropped:
            said["dropped"] = list(self.dropped)
        self._write(said)

    def _write(self, said: dict):
        if self.on:  # one write, no buffer between it and the log: there before a crash
            os.write(2, (PREFIX + json.dumps(said) + "\n").encode())


TRAIL = _Trail()


def parse(line: str) -> Place | None:
    """The place a breadcrumb line names (None: the empty one a request starts with, or a
    line that is no breadcrumb)."""
    if not line.startswith(PREFIX):
        return None
    try:
        said = json.loads(line[len(PREFIX):])
        return Place(Stage(said["stage"]), said.get("config"), said.get("pass"), tuple(said.get("dropped") or ()))
    except (ValueError, KeyError, TypeError):
        return None


def last_place(path, start: int = 0) -> Place | None:
    """The place the last breadcrumb in the log at `path` (from byte `start`, where the
    current process's output begins) names, read backwards in chunks up to SEARCH_LIMIT."""
    try:
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            data, pos = b"", end
            while pos > max(start, end - SEARCH_LIMIT):
                step = min(_CHUNK, pos - max(start, end - SEARCH_LIMIT))
                pos -= step
                f.seek(pos)
                data = f.read(step) + data
                # a line found earlier was searched for already: only the new chunk (and the
                # prefix's room past it) can hold a breadcrumb's start
                found = _last_line(data, step + len(_PREFIX_BYTES), at_start=pos == start)
                if found is not None:
                    return parse(found)
    except OSError:
        return None
    return None


def _last_line(data: bytes, within: int, at_start: bool) -> str | None:
    """The last breadcrumb line in `data` that starts within its first `within` bytes
    (`data` begins a line where `at_start`)."""
    i = data.rfind(b"\n" + _PREFIX_BYTES, 0, within + 1)
    if i >= 0:
        line = data[i + 1:].split(b"\n", 1)[0]
    elif at_start and data.startswith(_PREFIX_BYTES):
        line = data.split(b"\n", 1)[0]
    else:
        return None
    return line.decode("utf-8", "replace")
