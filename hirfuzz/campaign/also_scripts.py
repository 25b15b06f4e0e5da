"""A disruptive finding's further scripts: one per op that hit its missing check after the
first (also-<op>.py, beside repro.py), each kept only once it has run alone and failed as
its own hit did (the same exception at the same place saying the same thing, the same
death, or TVM accepting the program). Two ops typed by one function fail later in
different places (right_shift on a float in TIR's op utilities, divide on bool in LLVM
codegen), so the first hit's failure is no test of another op's script.

The checks run on one thread of their own, among the reductions' threads: the campaign
waits for it as it waits for them, and it stops when they are told to."""
from __future__ import annotations

import queue
import shutil
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.finding import Finding, short_id
from .outdir import save_folder, write_atomic
from .reducer import PENDING
from .report import with_hit_by_lines
from .verify import check_short_reproducer

if TYPE_CHECKING:
    from .reduction_host import ReductionHost

SCRIPT_LIMIT_S = 60.0


@dataclass
class AlsoScript:
    known: Finding      # the finding the hit joined
    hit: Finding        # the hit, as its own case showed it: what its script must show again
    name: str           # also-<op>.py
    text: str
    host: "ReductionHost"


class AlsoScripts:
    """The queue of further scripts to check, and the thread that checks them."""

    def __init__(self, tables):
        # findings.FindingTables (not imported: it imports this module): its lock, out,
        # reductions, also_scripts and rewrite_finding_json
        self.tables = tables
        self.queue: queue.Queue[AlsoScript] = queue.Queue()
        self.thread: threading.Thread | None = None

    def submit(self, script: AlsoScript):
        """Queue a script (call with the tables' lock held); start the thread if none runs."""
        self.queue.put(script)
        reductions = self.tables.reductions
        if self.thread is not None and self.thread.is_alive():
            return
        self.thread = threading.Thread(target=self._work, daemon=True, name="hirfuzz-also-scripts")
        if reductions is not None:  # the campaign waits for it, and halts it, as for a reduction
            reductions.threads.append(self.thread)
        self.thread.start()

    def _work(self):
        reductions = self.tables.reductions
        while reductions is None or not reductions.stop.is_set():
            try:
                script = self.queue.get_nowait()
            except queue.Empty:
                return
            try:
                self.check(script)
            finally:
                if reductions is not None:
                    reductions.changed.set()

    def check(self, script: AlsoScript):
        """Run one script alone; keep it beside the finding's repro.py if it fails as its hit
        did, else say in the finding's hit_by why it was not kept."""
        host = script.host
        staging = save_folder(host.out / ".staging", f"also-{short_id(script.hit.signature)}-{script.hit.case}",
                              {script.name: script.text})
        try:
            outcome = check_short_reproducer(staging / script.name, script.hit, SCRIPT_LIMIT_S,
                                             host.settings.tvm_python, host.settings.tvm_env,
                                             host.settings.dialect)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        with self.tables.lock:
            entry = next((e for e in script.known.extra.get("hit_by", []) if e.get("case") == script.hit.case), None)
            if entry is not None:
                entry["script" if outcome.reproduced else "script_not_kept"] = (
                    script.name if outcome.reproduced else f"alone, it {outcome.observed}")
            if outcome.reproduced:
                self.keep(script)
            self.tables.rewrite_finding_json(script.known)

    def keep(self, script: AlsoScript):
        """Write a checked script beside its finding's repro.py, or hold it for the folder
        the pending finding will get (file_finding); call with the lock held."""
        known = script.known
        folder = self.tables.out / known.path
        if not known.path or known.path.startswith(PENDING) or not folder.is_dir():
            self.tables.also_scripts.setdefault(known.signature, {})[script.name] = script.text
            return
        write_atomic(folder / script.name, script.text)
        report = folder / "bug-report.md"
        if report.is_file():
            write_atomic(report, with_hit_by_lines(report.read_text(), known.to_json()))
