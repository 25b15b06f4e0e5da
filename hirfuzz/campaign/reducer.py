"""New findings, finished in the background: isolate, reduce, render, verify, save.

A new signature is written to pending/ at once, so a kill loses nothing already shown on
screen. A reduction thread then borrows an idle worker from the pool and, while the
other workers fuzz on, isolates the failing configuration (minimising its pass
sequence), reduces the graph, drops the lowering plan and the mutant where the failure
holds without them (the named steps of reduction_steps.py, each counting its trials,
successes and seconds), renders the reproducer and runs it alone. The finding then moves
to findings/ (or to unconfirmed/ when its script does not fail alike). Findings left
pending by a kill or a Ctrl-C are finished when the campaign resumes.

Reduction sees the campaign only through a `ReductionHost`: what it reads (settings,
specs, dialect, pass catalog, the output folder, the TVM version), what it calls (make a
case, judge an answer, say something) and the three things it changes, each under the
host's lock: two time counters, a pass-order finding's signature, and the finished
finding, which the host files.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import threading
import time
import traceback
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Callable

from ..errors import HirfuzzError
from ..core.graph import Graph
from .outdir import OutputError, append_line, save_folder
from ..core.passes import describe as describe_passes
from ..core.attributes import key_roles
from .report import bug_report
from .sandbox import Worker, WorkerError
from .target_independence import judge_target
from ..core.finding import (Finding, failed_pass_of, lone_operator_key, narrowing_root_key, pass_failed_in,
                            pass_root_key, root_key, short_id, stale_type_carrier)
from ..protocol import AUTODIFF, GRADIENT, decode_array, describe_config
from .oracles import ORACLES, Oracle, definition
from .reduction_budget import FindingBudget, FinishingTime, ReductionShare
from .reduction_host import ReductionHost
from .reduction_steps import ISOLATING, KEYING, REDUCING, Finishing, StepStats, configs_under, narrowed_pass
from .reproducers import HARNESS, REPRO, ReproForm, FindingScripts
from .triage import classify_finding
from .verify import ReproOutcome
from .counterpart import counterpart_of, counterpart_sentence
from .versions import Verdict, regression_since, try_releases, verdict_under, versions_sentence

if TYPE_CHECKING:
    from .cases import Case

PENDING = "pending"


class Interrupted(Exception):
    """The campaign is stopping: the finding stays in pending/ for the next run."""


@dataclass
class Job:
    folder: str        # where it is headed: "findings" or "spec-disagreements"
    case: "Case"
    finding: Finding
    log: str
    key: str           # its folder under pending/
    signature: str     # as first seen (a pass-order finding may shrink to another)


def waiting_under(pending: dict[str, Job], signature: str, besides: Job | None = None) -> Job | None:
    """The pending job whose finding is keyed on `signature` now: under it, or renamed to it
    by its reduction (a pass-order finding keyed on its minimal sequence). Two findings first
    seen apart and reduced at once to one sequence are then one finding, not two; call with
    the host's lock held."""
    job = pending.get(signature)
    if job is not None and job is not besides:
        return job
    return next((j for j in pending.values() if j is not besides and j.finding.signature == signature), None)


class Reductions:
    """The queue of findings waiting to be finished, on disk and in memory, and the
    threads that finish them on workers lent by the pool.

    A cross-IR campaign's findings in its second IR (the CROSS_IR oracle's) are finished
    through `cross_host`, on workers of that IR: reduced, rendered and verified in its TVM.
    """

    def __init__(self, host: ReductionHost, cross_host: ReductionHost | None = None, ends_at: float | None = None):
        self.host = host
        self.cross_host = cross_host
        self.root = host.out / PENDING
        self.queue: list[Job] = []              # not taken by a thread yet
        self.pending: dict[str, Job] = {}       # signature -> job, queued or in progress
        self.working: dict[int, Job] = {}       # worker -> the job a thread finishes on it now
        self.threads: list[threading.Thread] = []
        self.stop = threading.Event()
        self.changed = threading.Event()        # a thread finished a job or ended
        self.failure: OutputError | None = None  # a write that failed: the campaign stops
        self.share = ReductionShare(host.settings.reduce_share)  # fuzzing first (reduction_budget)
        self.fuzzing_at: int | None = None  # while fuzzing, the cases answered when last asked (limit)
        # --time covers finishing: what the findings waiting will take of it (reduction_budget)
        self.finishing = FinishingTime(ends_at, 2 * script_limit_s("hang", host.settings.timeout_s))
        self.jobs = 1  # the workers, as last told (limit)

    def limit(self, jobs: int, cases: int, fuzzing: bool) -> int:
        """How many reductions may hold a worker now (ReductionShare.limit)."""
        with self.host.lock:
            self.fuzzing_at = cases if fuzzing else None
            self.jobs = jobs
            return self.share.limit(jobs, cases, fuzzing, self.active())

    def finish_first(self, jobs: int) -> bool:
        """Whether the findings waiting need all that is left of --time on `jobs` workers:
        then no case is handed out until enough of them are finished (reduction_budget)."""
        with self.host.lock:
            return self.finishing.finish_first([(job.finding.kind, job.finding.oracle) for job in self._waiting()],
                                              jobs)

    def reduce_s(self) -> float | None:
        """Seconds the reduction starting now may take (FinishingTime.reduce_s)."""
        with self.host.lock:
            return self.finishing.reduce_s(self.host.settings.reduce_seconds, len(self._waiting()), self.jobs)

    def _waiting(self) -> list[Job]:
        """The jobs queued or being finished (not one a bug of hirfuzz's left pending)."""
        return self.queue + list(self.working.values())

    def _may_go_on(self) -> bool:
        """Whether a thread that finished a finding takes the next one (call with the lock
        held): once fuzzing is over always, while it goes on within the share alone."""
        return self.fuzzing_at is None or self.share.may_start(self.fuzzing_at)

    def host_of(self, finding: Finding) -> ReductionHost:
        """The IR a finding was made in: the second one's findings are its oracle's."""
        if self.cross_host is not None and finding.oracle == Oracle.CROSS_IR:
            return self.cross_host
        return self.host

    # --- the main thread's side (called with host.lock held where tables are read) --------

    def submit(self, folder: str, case, finding: Finding, log: str):
        """Keep a new finding in pending/ (whole or not at all), then queue it."""
        key = f"{finding.kind}-{short_id(finding.signature)}"
        finding.path = f"{PENDING}/{key}"  # relative to the campaign folder
        case_json = {"folder": folder, "case": case.index, "graph": case.graph.to_json(),
                     "disruption": case.disruption, "configs": case.configs, "lowering": case.lowering}
        save_folder(self.root, key, {"finding.json": json.dumps(finding.to_json(), indent=2) + "\n",
                                     "case.json": json.dumps(case_json) + "\n", "log.txt": log})
        job = Job(folder, case, finding, log, key, finding.signature)
        self.pending[finding.signature] = job
        self.queue.append(job)

    def restore(self, known: set[str], keyed_on: Callable[[str], str]):
        """Queue the findings an earlier run left in pending/; drop those already saved
        (under the signature `keyed_on` says they have now)."""
        if not self.root.is_dir():
            return
        for folder in sorted(self.root.iterdir()):
            if folder.name.startswith(".done-"):  # removed by a run killed while removing it
                shutil.rmtree(folder, ignore_errors=True)
            if folder.name.startswith("."):
                continue
            try:
                finding = Finding(**json.loads((folder / "finding.json").read_text()))
                data = json.loads((folder / "case.json").read_text())
                log = (folder / "log.txt").read_text()
                graph = Graph.from_json(data["graph"])
            except (OSError, ValueError, TypeError, KeyError) as exc:
                raise HirfuzzError(f"{folder}: unreadable or corrupt pending finding ({exc}); "
                                   "move that folder aside to resume") from None
            if keyed_on(finding.signature) in known:  # saved just before a kill, not yet removed
                self.remove(folder.name)
                continue
            case = self.host_of(finding).make_case(data["case"], graph, data["disruption"], configs=data["configs"],
                                                   lowering=data["lowering"])
            finding.path = f"{PENDING}/{folder.name}"  # relative to the campaign folder
            job = Job(data["folder"], case, finding, log, folder.name, finding.signature)
            self.pending[finding.signature] = job
            self.queue.append(job)

    def lend(self, pool, limit: int):
        """Start threads on idle workers for queued findings, up to `limit` threads."""
        self.threads = [t for t in self.threads if t.is_alive()]
        while not self.stop.is_set() and len(self.threads) < limit:
            with self.host.lock:
                job = self._next_job(lambda job: bool(pool.idle(self._dialect(job))))
            if job is None:
                return
            worker = pool.idle(self._dialect(job))[0]
            worker.lent = True
            thread = threading.Thread(target=self._work, args=(worker, job), daemon=True,
                                      name=f"hirfuzz-reduction-{len(self.threads)}")
            self.threads.append(thread)
            thread.start()

    def _dialect(self, job: Job) -> str:
        return self.host_of(job.finding).settings.dialect

    def _next_job(self, takes) -> Job | None:
        """The first queued job that `takes(job)` (call with the lock held)."""
        job = next((j for j in self.queue if takes(j)), None)
        if job is not None:
            self.queue.remove(job)
        return job

    def remove(self, key: str):
        """Drop pending/<key>: renamed first, so that a kill while its files are deleted
        leaves no half folder for the next run to trip over."""
        gone = self.root / f".done-{key}-{time.monotonic_ns()}"
        os.replace(self.root / key, gone)
        shutil.rmtree(gone, ignore_errors=True)

    def fail(self, exc: "OutputError"):
        """A write of a thread's failed: no more jobs; the main thread stops the campaign."""
        self.failure = self.failure or exc
        self.stop.set()

    def active(self) -> int:
        return sum(t.is_alive() for t in self.threads)

    def wait(self, timeout_s: float):
        self.changed.wait(timeout_s)
        self.changed.clear()

    def halt(self, join_s: float):
        """Finish no more jobs: threads stop at their next check; wait for them a while."""
        self.stop.set()
        deadline = time.monotonic() + join_s
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))

    # --- the threads ----------------------------------------------------------------------

    def _work(self, worker: Worker, job: Job):
        """Finish `job`, then whatever else is queued, on `worker`; then give it back."""
        host = self.host_of(job.finding)
        try:
            reduction = Reduction(host, worker, self.stop, self.pending, self.share, self.reduce_s)
            while job is not None and not self.stop.is_set():
                started = time.monotonic()
                with host.lock:
                    self.working[id(worker)] = job
                try:
                    reduction.finish(job)
                except Interrupted:
                    return
                except OutputError as exc:  # the finding stays pending; the campaign stops
                    self.fail(exc)
                    return
                except Exception:  # a bug of hirfuzz's own: say so, keep the finding pending
                    if self.stop.is_set():
                        return
                    log = host.out / "workers" / "reduction-errors.log"
                    try:
                        append_line(log, f"--- {job.key}\n{traceback.format_exc()}")
                    except OutputError as exc:
                        self.fail(exc)
                        return
                    host.say(f"hirfuzz failed to finish pending/{job.key} (see {log}); it stays pending")
                else:
                    with host.lock:
                        del self.pending[job.signature]
                        self.finishing.finished(job.finding.kind, job.finding.oracle, time.monotonic() - started)
                    self.remove(job.key)
                    self.changed.set()
                with host.lock:  # the worker goes on with its own IR's findings only, within the share
                    job = self._next_job(lambda j: self.host_of(j.finding) is host) if self._may_go_on() else None
        finally:
            with host.lock:
                self.working.pop(id(worker), None)
            worker.lent = False
            self.changed.set()


def operator_key_on(folder: str, finding: Finding, case) -> str | None:
    """The second root key of a finding headed for `folder` whose reduced program (`case`:
    its graph, lowering, configs and disruption) is one operator, plainly lowered: a crash,
    ill-formed output or death in a pass, its lone-operator key (core.finding.lone_operator_key);
    another, its oracle's (OracleDefinition.operator_key); else None. tools/root_causes.py
    gives saved findings theirs with it."""
    operators = case.graph.operators
    plain = not any(key in (case.lowering or {}) for key in ("plan", "mutation"))
    if folder != "findings" or case.disruption is not None or len(operators) != 1 or not plain:
        return None
    failed_in = pass_failed_in(finding.extra, finding.stage)
    if finding.kind != "crash" or not failed_in:
        return definition(finding.oracle).operator_key(finding, case)
    construct = stale_type_carrier(case.lowering, case.graph.to_json(), case.configs[-1].get("passes") or [])
    return lone_operator_key(failed_in, operators[0].op, construct)


def with_needs(key: str | None, state: Finishing, ops: set[str]) -> str | None:
    """A wrong result's root key with what of `ops`' attributes its reduced program needs
    (reduction_steps.SimplifyAttributes, as core.attributes.key_roles names them): one
    operator's two faults, each needing its own attributes (a dilation; a last window past
    the padding), are two root causes. A crash is keyed on where TVM fails, which says it
    already."""
    if key is None or state.finding.kind != "wrong-result":
        return key
    needed = [f"{op}[{','.join(key_roles(roles))}]" for op, roles in sorted(state.needs.items()) if op in ops and roles]
    return f"{key}|needs {' '.join(needed)}" if needed else key


def script_limit_s(kind: str, timeout_s: float) -> float:
    """Seconds a finding's script may take alone. A hang is confirmed only if the script
    spends three times the case's limit in CPU time: a build that was merely slow, on a
    loaded machine too, then finishes."""
    return max(timeout_s, 60) * (3 if kind == "hang" else 1)


def same_signature(found: str, signature: str, oracle_may_change: bool = False) -> bool:
    """Is a trial's failure (its signature `found`) the finding's (`signature`)? Each step of
    a reduction is taken only where it is. A crash keeps every part of its signature; a
    wrong result keeps its kind and oracle (which result differs first may change as the
    case shrinks). With `oracle_may_change`,
    the oracle is left out: a pass sequence's failure that its configuration shows with no
    pass at all is the executor oracle's, and the same failure."""
    if signature.startswith("wrong-result|"):
        keep = 1 if oracle_may_change else 2
        return found.split("|")[:keep] == signature.split("|")[:keep]
    # workers name one failure alike: the dialects' aliases (dialects.base.FailureAlias) are
    # for a script's renderer, which reduction never meets
    return _crash_parts(found, oracle_may_change) == _crash_parts(signature, oracle_may_change)


# what the oracles' crash signatures start with (the crash oracle's start with nothing)
_PREFIXES = {oracle.crash_prefix() for oracle in ORACLES.values()} - {""}


def _crash_parts(signature: str, without_oracle: bool) -> list[str]:
    head, _, rest = signature.partition("|")
    if without_oracle and f"{head}|" in _PREFIXES:
        signature = rest
    return signature.split("|", 4)  # the message, last, may hold a "|" itself


def _name_passes(finding: Finding, passes: list):
    """Say the pass sequence a finding fails after, in its message and extra."""
    if not passes:
        return
    finding.extra["passes"] = describe_passes(passes)
    finding.extra["pass_names"] = [step["name"] for step in passes]
    finding.message = f"after {finding.extra['passes']}: {finding.message}"


class Reduction:
    """One thread's work on one lent worker: turn a job into a saved finding."""

    def __init__(self, host: ReductionHost, worker: Worker, stop: threading.Event, pending: dict[str, Job],
                 share: ReductionShare | None = None, reduce_s: Callable[[], float | None] | None = None):
        self.host = host
        self.share = share  # counts the trials run, which fuzzing's share is judged by
        # the seconds a finding's reduction may take when it starts (Reductions.reduce_s:
        # --reduce-seconds, less near the end of --time)
        self.reduce_s = reduce_s or (lambda: host.settings.reduce_seconds)
        self.s = host.settings
        self.worker = worker
        self.stop = stop
        self.pending = pending  # Reductions.pending: signature -> job, read under the host's lock
        self.step = StepStats()  # the running step's statistics, which its trials count into
        self.running = None      # the running step (reduction_steps.Step), None outside one
        self.budget = FindingBudget()  # the running finding's, made anew by finish()
        self.scripts = FindingScripts(host.info, host.specs, host.settings, host.tvm_version, self.module_script)
        self.last_mutators: list[str] = []  # the mutators the last trial's mutant went through (a worker's answer)

    def finish(self, job: Job):
        host, finding, original = self.host, job.finding, job.case
        first = copy.deepcopy(finding)  # as first seen: what original/repro.py says it fails with
        state = Finishing(finding, original)
        t0 = time.monotonic()
        self.budget = FindingBudget(self.s.reduce_trials, self.reduce_s())
        if job.folder == "findings" and original.disruption is None:
            self.run_steps(ISOLATING, state)
        isolated = state.case
        if self.merged_into_known(job, isolated.configs[-1]["passes"]):
            return
        unreduced = copy.deepcopy(finding)  # what the isolated case fails with, before reduction says more
        # hangs would cost a time-out per try; disruptive cases are single operators or
        # tied to their graph's node numbering, so they are saved as generated
        if job.folder == "findings" and self.s.reduce and finding.kind != "hang" and isolated.disruption is None:
            self.run_steps(REDUCING, state)
        if job.folder == "findings" and self.s.reduce:
            self.run_steps(KEYING, state)
        with host.lock:
            host.counters.reduce_s += time.monotonic() - t0
        files = self.describe(job, state, first, isolated)
        folder, outcome, files = self.verify_finished(job, state, first, isolated, unreduced, files)
        case = state.case
        # a finding whose reproducer stands, with the root cause of one filed before, joins it
        joins = folder == "findings" and (finding.confirmed or not self.s.verify)
        if joins and host.join_root(finding, job.signature, files):
            return
        if folder == "findings" and finding.confirmed:
            self.judge_target(job, finding, case)
        if folder == "findings" and finding.confirmed and (host.releases() or host.baseline()):
            self.date(job, finding, files)
        if folder == "findings" and finding.confirmed and host.counterpart is not None:
            self.try_counterpart(job, case, finding, files)
        files["bug-report.md"] = bug_report(finding.to_json(), files[REPRO], outcome, host.installation(),
                                            describe_config(case.configs[-1]), host.info, case.graph,
                                            (case.lowering or {}).get("plan"))
        host.file_finding(folder, finding, files)

    def describe(self, job: Job, state: Finishing, first: Finding, isolated) -> dict:
        """The finished finding said in full (the passes it fails after, its root keys, its
        reduction's statistics and triage) and its folder's files, for `state.case`; an
        original/ beside them where that is not the case as generated."""
        finding, case, original = state.finding, state.case, job.case
        _name_passes(finding, case.configs[-1]["passes"])
        root, operator = self.root_key_of(job, state), self.operator_key_of(job, state)
        finding.extra.pop("root_key", None)  # a second description (verify_unreduced) keys anew
        finding.extra.pop("operator_key", None)
        if root is not None:
            finding.extra["root_key"] = root
        if operator is not None and operator != root:
            finding.extra["operator_key"] = operator
        if state.stats:
            finding.extra.setdefault("reduction", {})["steps"] = {name: stats.to_json()
                                                                  for name, stats in state.stats.items()}
        if self.budget.report() is not None:
            finding.extra.setdefault("reduction", {})["budget"] = self.budget.report()
            self.host.say(f"the {finding.kind} of case {finding.case}: its reduction ran out of budget in "
                          f"{self.budget.ran_out_in}; filed with the smallest program found by then")
        finding.extra["ops"] = len(case.graph.operators)
        finding.extra["triage"] = classify_finding(finding, self.host.specs)
        finding.extra.pop("reduced_from", None)
        if case is not original:
            finding.extra["reduced_from"] = len(original.graph.operators)
        files = self.scripts.files(case, finding, job.log)
        if case is not original:
            seen = self.as_first_seen(original, first, isolated)
            first = copy.deepcopy(first)
            _name_passes(first, seen.configs[-1]["passes"])
            orig = self.scripts.files(seen, first, job.log)
            files["original/case.json"] = json.dumps(self.scripts.case_json(original)) + "\n"  # as generated: every configuration
            files["original/repro.py"] = orig[HARNESS if HARNESS in orig else REPRO]
        return files

    def verify_finished(self, job: Job, state: Finishing, first: Finding, isolated, unreduced: Finding,
                        files: dict) -> tuple[str, ReproOutcome | None, dict]:
        """The folder a finished finding goes to, what its scripts printed alone, and its files
        (the unreduced program's, where only they fail alike: verify_unreduced)."""
        if job.folder != "findings" or not self.s.verify:
            return job.folder, None, files
        if state.case.disruption is not None:
            folder, outcome = self.verify_violation(job, state.finding, files,
                                                    self.scripts.violation_scripts(state.case, state.finding))
            return folder, outcome, files
        folder, outcome = self.verify(job, state.finding, files)
        if not self.may_keep_unreduced(outcome, state, isolated):
            return folder, outcome, files
        return self.verify_unreduced(job, state, first, isolated, unreduced, outcome, files)

    @staticmethod
    def may_keep_unreduced(outcome: ReproOutcome, state: Finishing, isolated) -> bool:
        """Whether a finding whose reduced scripts did not fail alike alone is tried unreduced:
        where the scripts ran (a verdict on the program) and reduction changed the program."""
        return not outcome.reproduced and not outcome.harness_error and state.case is not isolated

    def verify_unreduced(self, job: Job, state: Finishing, first: Finding, isolated, unreduced: Finding,
                         reduced_outcome: ReproOutcome, reduced_files: dict) -> tuple[str, ReproOutcome, dict]:
        """The finding filed with the program reduction started from, where the reduced one's
        scripts did not fail alike alone and its own do. A failure that depends on what else
        the process holds (a read past a buffer) may fail on the worker that reduced it and
        not alone: bench29 relay seed 23, a max_pool2d gradient reduced to one differing
        element of 120 on the worker and none alone. Else the reduced filing stands."""
        finding = state.finding
        reduced = copy.deepcopy(finding), state.case, state.reduced_signature
        finding.message, finding.detail = unreduced.message, unreduced.detail
        finding.extra.pop("failed_pass", None)
        if "failed_pass" in unreduced.extra:
            finding.extra["failed_pass"] = unreduced.extra["failed_pass"]
        finding.extra.pop("unconfirmed_reason", None)
        said = (f"alone, the reduced program's scripts ({len(state.case.graph.operators)} operators) did not fail "
                f"alike ({reduced_outcome.observed}); the finding keeps its unreduced program")
        finding.extra.setdefault("reduction", {})["kept_unreduced"] = said
        state.case, state.reduced_signature = isolated, None
        files = self.describe(job, state, first, isolated)
        folder, outcome = self.verify(job, finding, files)
        if outcome.reproduced:
            self.host.say(f"the {finding.kind} of case {finding.case}: its reduced program's scripts did not fail "
                          "alike alone, its unreduced program's did: filed unreduced")
            return folder, outcome, files
        restored, state.case, state.reduced_signature = reduced
        for name in (f.name for f in fields(Finding)):
            setattr(finding, name, getattr(restored, name))
        finding.extra["unconfirmed_reason"] += f"; nor did its unreduced program's ({outcome.observed})"
        return "unconfirmed", reduced_outcome, reduced_files

    def root_key_of(self, job: Job, state: Finishing) -> str | None:
        """Where TVM fails in the finished case (core.finding.root_key), the key a finding
        joins another with one root cause by; None where it cannot be said: a wrong result
        whose reduced program did not run once more alike (what differs first then belongs
        to the program as generated), a worker's death whose log says nothing fatal (its
        detail is the reduced program's once confirmed), a disruptive finding."""
        if job.folder != "findings" or state.case.disruption is not None:
            return None
        failed_in = pass_failed_in(state.finding.extra, state.finding.stage)
        entry = self.host.catalog.entries.get(failed_in) if failed_in else None
        if state.finding.kind == "crash" and entry is not None and entry.one_root_cause:
            return pass_root_key(failed_in)
        if state.alone is not None:  # an operator of it fails alone: that failure is the root (operator_alone)
            return with_needs(self._root_key_on(state.alone.found, state.alone.case), state, {state.alone.op})
        narrowed = narrowed_pass(state.finding.extra)
        if narrowed is not None:  # it goes away once a pass's narrowing is checked (narrowing_cause)
            return narrowing_root_key(narrowed)
        signature = state.finding.signature
        if state.finding.kind == "wrong-result":
            # the reduced program's own run; a program the reduction could not shrink is its own reduced one
            reduced = "reduce_graph" in state.stats and "kept_unreduced" not in state.finding.extra.get("reduction", {})
            signature = state.reduced_signature or (signature if reduced else None)
        key = self._root_key_on(state.finding, state.case, signature) if signature else None
        return with_needs(key, state, set(state.needs))

    @staticmethod
    def operator_key_of(job: Job, state: Finishing) -> str | None:
        """The finished finding's second root key (operator_key_on): its operator's alone,
        where one fails alone as it does (OperatorBlame), else its reduced program's. A
        finding keyed as stack alone and one reduced to stack share it, whatever their
        messages (bench24 relax-now 0003, a death, and 0015, ConvertLayout's raise)."""
        if state.alone is not None:
            return operator_key_on(job.folder, state.alone.found, state.alone.case)
        return operator_key_on(job.folder, state.finding, state.case)

    @staticmethod
    def _root_key_on(finding: Finding, case, signature: str | None = None) -> str | None:
        """core.finding.root_key of `finding` (under `signature`, its own by default), seen on `case`."""
        passes = case.configs[-1].get("passes") or []
        failed_pass = failed_pass_of(finding.extra, [step["name"] for step in passes], finding.stage)
        construct = stale_type_carrier(case.lowering, case.graph.to_json(), passes)
        return root_key(signature or finding.signature, _PREFIXES, failed_pass, finding.detail, finding.message,
                        construct)

    def merged_into_known(self, job: Job, passes: list) -> bool:
        """Isolating a finding may change what it is keyed on: a pass-order wrong result is
        one finding per minimal sequence, and a configuration that fails alike with no pass
        is the executor's. Rename it (later hits of its first signature follow), and count
        it as a hit where a finding is already saved, known or pending under the new signature."""
        host, finding = self.host, job.finding
        signature = finding.signature
        oracle = definition(finding.oracle)
        if finding.kind == "wrong-result" and oracle.narrows_passes and passes:
            signature = oracle.minimal_signature(signature, passes)
        if signature == job.signature:
            return False
        with host.lock:
            finding.signature = job.signature
            if host.rename_finding(finding, signature):
                return True
            twin = waiting_under(self.pending, signature, besides=job)
            if twin is not None:
                twin.finding.hits += finding.hits
                return True
        return False

    def verify(self, job: Job, finding: Finding, files: dict) -> tuple[str, ReproOutcome]:
        """Run the reproducers alone (the harness, then the short script, which must fail
        alike); a script that does not fail alike is not a finding we stand by. Returns the
        folder the finding goes to and what the scripts printed."""
        staging = save_folder(self.host.out / ".staging", job.key, files)
        t0 = time.monotonic()
        limit = self.script_limit(finding)
        # on the lent worker's machine, under its interpreter: a Ray node's, with --ray
        outcome = self.worker.check_scripts(staging, finding, limit)
        shutil.rmtree(staging, ignore_errors=True)
        with self.host.lock:
            self.host.counters.verify_s += time.monotonic() - t0
        finding.confirmed = outcome.reproduced
        if outcome.harness_error:
            # not a verdict on the bug: the script never got to it (say, a user's pass
            # module it could not import). Kept apart, in hirfuzz's own words.
            finding.extra["unconfirmed_reason"] = f"hirfuzz could not run the reproducer: {outcome.harness_error}"
        elif not outcome.reproduced:
            finding.extra["unconfirmed_reason"] = f"the reproducer alone did not fail alike ({outcome.observed})"
        files["repro-output.txt"] = f"observed: {outcome.observed}\n\n{outcome.output}" + (
            f"\n--- {HARNESS}:\n{outcome.harness_output}" if outcome.harness_output else "")
        return ("findings" if outcome.reproduced else "unconfirmed"), outcome

    def script_limit(self, finding: Finding) -> float:
        return script_limit_s(finding.kind, self.s.timeout_s)

    def judge_target(self, job: Job, finding: Finding, case):
        """Target triage: a confirmed build or run crash on another target retried on llvm under
        llvm's pipelines (target_independence), its scripts run alone as verify runs them."""
        def run_scripts(config: dict) -> ReproOutcome:
            retry = self.variant(case, configs=[*case.configs[:-1], config])
            staging = save_folder(self.host.out / ".staging", f"{job.key}-llvm",
                                  self.scripts.files(retry, finding, job.log))
            t0 = time.monotonic()
            try:
                return self.worker.check_scripts(staging, finding, self.script_limit(finding))
            finally:
                shutil.rmtree(staging, ignore_errors=True)
                with self.host.lock:
                    self.host.counters.verify_s += time.monotonic() - t0

        verdict = judge_target(finding, case.configs[-1], self.host.info.llvm_pipelines, run_scripts)
        if verdict is not None:
            verdict.record(finding)
            if verdict.independent:
                self.host.say(f"the {finding.stage} failure of case {finding.case} is target-independent: "
                              f"it fails alike under {verdict.alike_under}")

    def date(self, job: Job, finding: Finding, files: dict):
        """Version triage: the confirmed finding's repro.py run unchanged under the other TVM
        releases and under --baseline (versions.py), here, as the user will run it. A
        regression since a release, and a finding new in the build under test, are said on
        screen and head the report."""
        releases, baseline = self.host.releases(), self.host.baseline()
        staging = save_folder(self.host.out / ".staging", f"{job.key}-versions", files)
        t0 = time.monotonic()
        limit = self.script_limit(finding)  # a hang must hang alike there too
        try:
            versions = try_releases(staging, finding, releases, limit, self.host.tvm_version()) if releases else None
            on_baseline = verdict_under(staging, finding, baseline, limit) if baseline else None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        with self.host.lock:
            self.host.counters.verify_s += time.monotonic() - t0
        if versions is not None:
            since = regression_since(versions)
            finding.extra["versions"], finding.extra["regression_since"] = versions, since
            if since:
                self.host.say(f"the {finding.kind} of case {finding.case} is a regression: {versions_sentence(versions)}")
        if on_baseline is not None:
            finding.extra["baseline"] = {"python": baseline.python, "tvm": baseline.version,
                                         "verdict": on_baseline.value}
            # only a script that runs clean on the baseline shows the build under test broke
            # it; one that fails otherwise there says nothing either way
            finding.extra["new_in_build"] = on_baseline is Verdict.PASSES
            if on_baseline is Verdict.PASSES:
                self.host.say(f"the {finding.kind} of case {finding.case} is new in your build: "
                              f"its repro.py passes on the baseline ({baseline.name})")

    def try_counterpart(self, job: Job, case: Case, finding: Finding, files: dict):
        """The reduced program in the other IR of a cross-IR campaign, tried under each of
        its releases (counterpart.py), its script kept beside repro.py."""
        staging = self.host.out / ".staging" / f"{job.key}-counterpart"
        t0 = time.monotonic()
        try:
            record = counterpart_of(self.host.counterpart, case, finding, staging, self.script_limit(finding))
            files[record["script"]] = (staging / record["script"]).read_text()
        except Exception as exc:  # extra knowledge of a finding already confirmed: never worth losing it
            record = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        with self.host.lock:
            self.host.counters.verify_s += time.monotonic() - t0
        finding.extra["counterpart"] = record
        if record.get("fails_on"):
            self.host.say(f"the {finding.kind} of case {finding.case}: {counterpart_sentence(record)}")

    def verify_violation(self, job: Job, finding: Finding, files: dict, scripts: list) -> tuple[str, ReproOutcome]:
        """Confirm a disruptive finding on the first of its short scripts (`scripts`:
        (form, text), shortest first) that fails as the harness does. Where none does, the
        whole program fails but the violation alone does not: the failure may be the valid
        part's (seen: TVM 0.19 failing to build a fused trilu and cos, filed as a poor
        diagnostic on a take beside it), so the finding is kept, with the harness as its
        repro.py, among the unconfirmed, saying why."""
        for form, script in scripts:
            files[REPRO] = script
            folder, outcome = self.verify(job, finding, files)
            if outcome.reproduced:
                finding.extra["reproducer"] = form.value
                return folder, outcome
            if not outcome.harness_observed:  # the harness did not fail alike either: unconfirmed
                return folder, outcome
        finding.extra["reproducer"] = ReproForm.HARNESS.value
        finding.extra["call_alone"] = f"did not fail alike ({outcome.observed})"
        finding.extra["unconfirmed_reason"] = (f"the violating call alone did not fail alike ({outcome.observed}), "
                                               "the whole program did: the failure may be its valid part's")
        finding.confirmed = False
        files[REPRO] = files.pop(HARNESS)
        outcome = ReproOutcome(False, outcome.harness_observed, outcome.harness_output)
        files["repro-output.txt"] = f"observed: {outcome.observed}\n\n{outcome.output}"
        return "unconfirmed", outcome

    # --- the steps, and their trials on the lent worker -------------------------------------

    def run_steps(self, steps, state: Finishing):
        """Run each step that applies to the finding as it stands, each on the case the one
        before left, counting its trials and timing it (state.stats)."""
        state.start = state.case
        for step in steps:
            if not step.applies(self, state):
                continue
            self.step = state.stats.setdefault(step.name, StepStats())
            self.running = step
            t0 = time.monotonic()
            try:
                state.case = step.run(self, state)
            finally:
                self.step.seconds += time.monotonic() - t0
                self.step = StepStats()  # a trial outside a step counts for none
                self.running = None

    def reduced(self, case, finding: Finding):
        """The case through the reducing steps alone (graph, lowering plan, mutant, the
        reduced case run once more)."""
        state = Finishing(finding, case)
        self.run_steps(REDUCING, state)
        return state.case

    def finding_of(self, case) -> Finding | None:
        """What the oracles make of the case run again (None: nothing, or no worker): one
        trial of the running step."""
        return self._trial(case)[1]

    def runs_clean(self, case) -> bool:
        """Does the case run again with nothing found, on a worker that answered? (A trial
        no worker ran, or the finding's budget refused, is no evidence that it passes.)"""
        answered, found = self._trial(case)
        clean = answered and found is None
        self.step.successes += clean  # the trial the step asked for: it takes what it shows
        return clean

    def _trial(self, case) -> tuple[bool, Finding | None]:
        """(whether a worker answered, what the oracles make of its answer): one trial of
        the running step."""
        if self.stop.is_set():
            raise Interrupted
        if self.running is not None and self.running.budgeted and not self.budget.allows(self.running.name):
            return False, None  # past the finding's budget: the step keeps the case it has
        self.step.calls += 1
        if self.share is not None:
            with self.host.lock:
                self.share.trials += 1
        try:
            answer = self.worker.run_one(case.request, self.s.timeout_s)
        except WorkerError:
            return False, None
        if isinstance(answer, dict) and answer.get("mutators"):
            self.last_mutators = list(answer["mutators"])
        if isinstance(answer, dict) and answer.get("builds_saved"):
            with self.host.lock:  # a trial's baseline is often built already (worker.BuildCache)
                self.host.counters.builds_saved_reducing += answer["builds_saved"]
        return True, self.host.classify(case, answer).finding

    def failed_alike(self, found: Finding | None, signature: str, oracle_may_change: bool = False) -> bool:
        """Is a trial's finding the finding's failure (`same_signature`)? A step takes a
        trial that is, so it counts as one of the running step's successes."""
        alike = found is not None and same_signature(found.signature, signature, oracle_may_change)
        self.step.successes += alike
        return alike

    def fails_alike(self, case, signature: str) -> bool:
        """Does the case fail the same way? (Ask only of a case the step takes if it does.)"""
        return self.failed_alike(self.finding_of(case), signature)

    def variant(self, case, graph=None, configs=None, lowering=None):
        """The case with another graph, configurations or lowering; the same inputs' seed."""
        return self.host.make_case(case.index, graph or case.graph,
                                configs=configs if configs is not None else case.configs,
                                lowering=lowering if lowering is not None else case.lowering)

    def fails_without_passes(self, case, finding: Finding, config: dict) -> bool:
        """Does the configuration fail the same way with no pass at all (the executor at that
        opt level)? Then no pass is to blame, whichever one a minimisation would keep: the
        finding becomes the executor oracle's.

        A crash is the same only if it is the same failure. Another one (seen: DynamicToStatic's
        type error, whose program without the pass crashes the VM at opt_level 1) is a finding
        of its own, recorded as the campaign records any; this one keeps its passes, its
        stage and its exception (a half-renamed finding is checked against a script that
        fails as the other one does, and is lost to unconfirmed/)."""
        alone = ORACLES[Oracle.PASS_ORDER].without_passes(config)
        without = self.variant(case, configs=[case.configs[0], alone])
        found = self.finding_of(without)
        if found is None:
            return False
        if not self.failed_alike(found, finding.signature, oracle_may_change=True):
            self.host.record(without, found, found.detail)
            return False
        finding.oracle, finding.signature = found.oracle, found.signature
        finding.message, finding.detail = found.message, found.detail
        finding.extra["config"] = alone
        return True

    def module_script(self, case, config: dict) -> dict:
        """The text (TVMScript, Relay text) of the module the failing configuration built,
        before its passes, with its constants apart: {"script", "consts"}, or {"error"}."""
        request = {"kind": "render", "graph": case.graph.to_json(), "calls": case.request["calls"],
                   "module": config.get("module", 0), "plain": bool(config.get("plain")),
                   GRADIENT: config.get(GRADIENT), AUTODIFF: config.get(AUTODIFF),
                   **case.lowering}
        try:
            reply = self.worker.run_one(request, self.s.timeout_s)
        except WorkerError:
            reply = None
        if not isinstance(reply, dict) or reply.get("status") != "ok":
            why = reply.get("message", "")[:300] if isinstance(reply, dict) else "the worker died"
            return {"error": why}
        return {"script": reply["script"], "consts": [decode_array(c) for c in reply["consts"]]}

    def as_first_seen(self, original, first: Finding, isolated):
        """The case as generated, under the configuration its failure was first seen in (for
        a worker that died, the one the isolate_config step found to kill it)."""
        config = first.extra.get("config")
        if first.stage == "worker" or config is None:
            return self.variant(original, configs=isolated.configs)
        return self.variant(original, configs=configs_under(original.configs[0], config, first))
