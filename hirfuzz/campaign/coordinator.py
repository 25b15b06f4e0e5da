"""The campaign: generate cases, keep every worker busy, judge answers, keep findings.

The coordinator never imports TVM. It makes every case itself (`cases`: so coverage
guidance is global and a seed fixes the graphs whatever the number of workers), hands
cases to idle workers, has their answers judged (`judge`) and counts and records the
outcomes. A new finding is kept in pending/ and finished (reduced, rendered, its
reproducer run alone) by `reducer` on a worker lent by the pool, while the other workers
fuzz on. Everything on screen is on disk first (`summary`); see `outdir` for the folder
and for resuming.
"""
from __future__ import annotations

import json
import signal
import threading
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from ..core.finding import Finding, normalize_message, short_id
from ..core.graph import Graph
from ..core.passes import load_catalog
from ..core.plan import LoweringPlan
from ..dialects import dialect_info
from ..errors import HirfuzzError
from . import DEFAULT_MUTATIONS, DEFAULT_OPS
from .cases import Case, CaseMaker
from .cross import compare_sides, ir_label, open_cross_side, settle
from .judge import Judge
from .oracles import Oracle
from .outcome import Outcome, Status
from .known import KnownFindings, load_known
from .outdir import FIXED_SETTINGS, OutDir, OutputError, save_folder, write_atomic
from .probe import Prober, direction_of
from .reducer import PENDING, ReductionHost, Reductions, waiting_under
from .report import campaign_report
from .sandbox import Interpreter, Pool, Worker, WorkerError, memory_evidence
from .summary import format_summary, summary
from .timings import add_totals, case_timings
from .reproducers import finding_files
from .userpasses import check_user_passes

__all__ = ["Campaign", "Counters", "Settings", "format_summary", "stop_note"]  # the last two: for cli.py

CHECKPOINT_S = 5.0
SUMMARY_S = 1.0
# what stops a campaign as Ctrl-C does (the first: finish the cases in flight; the second: at once)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
LABELS = {"findings": "finding", "unconfirmed": "unconfirmed (hirfuzz's problem, not a TVM finding)",
          "spec-disagreements": "spec disagreement"}
# the statuses of a case whose baseline ran, or at least built
RAN = (Status.OK, Status.RAN, Status.MISMATCH)
BUILT = RAN + (Status.BUILT,)


@dataclass
class Settings:
    mode: str = "strict"
    seed: int = 0
    iterations: int | None = None
    time_s: float | None = None
    ops: int = DEFAULT_OPS
    out: str = "hirfuzz-out"
    guided: bool = True
    only_ops: list[str] | None = None
    dtypes: list[str] | None = None
    timeout_s: float = 60.0
    max_memory_mb: int | None = 8192
    spec_dir: str | None = None
    verify: bool = True
    jobs: int | None = 1                   # workers per IR; with --ray a cap (None: the cluster's CPUs)
    reduce: bool = True
    recycle_after: int | None = 500
    targets: list[str] = field(default_factory=lambda: ["llvm"])
    executors: list[str] = field(default_factory=lambda: ["vm"])
    pass_fuzz: bool = True                 # also build each case after a drawn pass sequence
    pass_seq: list[dict] | None = None     # a pinned sequence (--pass-seq), instead of drawing
    pass_files: list[str] = field(default_factory=list)
    features: bool = True                  # lower with functions, closures and Relax features
    mutations: int = DEFAULT_MUTATIONS     # mutators applied to make each case's mutant (0: none)
    dialect: str = "relax"                 # the IR fuzzed (--ir)
    tvm_python: str | None = None          # the interpreter holding the TVM under test (None: this one)
    tvm_env: dict = field(default_factory=dict)  # what it needs in its environment
    cross_dialect: str | None = None       # the cross-IR oracle's second IR (--ir relay,relax)
    cross_python: str | None = None        # the interpreter holding its TVM (None: this one)
    cross_env: dict = field(default_factory=dict)
    known: str | None = None               # --known: a signature list or an earlier campaign's folder
    ray: str | None = None                 # --ray: the cluster's address ("local": start one here)
    tvm_managed: str | None = None         # the managed environment --tvm-python names, made on each Ray node
    cross_managed: str | None = None       # likewise for the second IR
    direct: bool = True                    # steer generation to what the pinned passes' probe found


@dataclass
class Counters:
    cases: int = 0
    valid: int = 0            # passed relax.analysis.well_formed
    built: int = 0
    ran: int = 0
    compared: int = 0         # ran, and at least one result was compared
    compared_fully: int = 0   # strict cases compared whose inputs left no result uncompared
    not_run: int = 0          # built only: every input draw may trap
    out_of_memory: int = 0    # cases whose worker ran out of --max-memory (not findings)
    spec_disagreements: int = 0
    unconfirmed: int = 0
    findings_hits: int = 0
    tvm_s: float = 0.0
    gen_s: float = 0.0
    verify_s: float = 0.0
    reduce_s: float = 0.0
    elapsed_s: float = 0.0    # of earlier runs of this campaign (resumed)
    max_rss_kb: int = 0
    hirfuzz_bugs: int = 0
    skipped: dict = field(default_factory=dict)  # executor -> configurations it cannot take by design
    cross: dict = field(default_factory=dict)    # the second IR's statuses, and reference suspects
    domain_unmet: dict = field(default_factory=dict)  # op -> cases whose inputs could not keep it in its domain
    known: dict = field(default_factory=dict)    # signature -> hits of a finding --known names
    stage_s: dict = field(default_factory=dict)  # seconds per stage over all cases (campaign.timings)
    builds_saved: int = 0     # builds a worker reused instead of building again (worker.BuildCache)
    builds_saved_across_cases: int = 0  # of which an earlier case's
    builds_saved_reducing: int = 0  # by the reducer's trial runs (not in builds_saved)

    @staticmethod
    def restore(d: dict) -> "Counters":
        names = {f.name for f in fields(Counters)}
        return Counters(**{k: v for k, v in d.items() if k in names})


class Campaign:
    """One campaign's loop, state and findings tables; see the module's docstring."""

    def __init__(self, settings: Settings, specs, progress: bool = True):
        self.s = settings
        # read first: a bad --known stops the campaign before it writes anything
        known = load_known(settings.known) if settings.known else frozenset()
        self.specs = specs
        self.info = dialect_info(settings.dialect)
        self.catalog = load_catalog(settings.pass_files, builtin=self.info.catalog)
        self.maker = CaseMaker(settings, specs, self.info, self.catalog)
        self.progress = progress
        fixed = {k: v for k, v in asdict(settings).items() if k in FIXED_SETTINGS}
        self.out, state = OutDir.open(settings.out, {**asdict(settings), **fixed})
        self.resumed = state is not None
        self.counters = Counters()
        self.next_index = 0
        self.queue: list[Case] = []  # resumed: generated before a kill, never judged
        self.ahead: list[Case] = []  # made while the workers were busy, for the next idle one
        self.disruptive: dict[str, dict[str, int]] = {}  # class -> stage -> count
        self.aliases: dict[str, str] = {}  # pass-order signatures -> their minimal sequence's
        self.ir_features: dict[str, int] = {}
        self.mutators_used: dict[str, int] = {}
        self._mutators: dict[int, list[str]] = {}  # case -> mutators its mutant went through
        self.judging = Judge(specs, self._mutators)
        self.own_bugs: dict[str, Finding] = {}
        self.findings: dict[str, Finding] = {}
        self.unconfirmed: dict[str, Finding] = {}
        self.disagreements: dict[str, Finding] = {}
        self.tables = {"findings": self.findings, "unconfirmed": self.unconfirmed,
                       "spec-disagreements": self.disagreements}
        self.lock = threading.RLock()  # the tables, aliases and screen, shared with reduction threads
        if state:
            self._restore(state)
        self.known = KnownFindings(known, self.counters.known)  # after _restore: it replaces the counters
        for folder, table in {**self.tables, "hirfuzz-bugs": self.own_bugs}.items():
            for d in self.out.saved_findings(folder):
                table[d["signature"]] = Finding(**d)
        if self.resumed:
            self.aliases = self.out.saved_aliases()
        self.cross = None if settings.cross_dialect is None else open_cross_side(
            settings, specs, lambda: self.pool.installation_of(settings.cross_dialect).get("tvm"))
        # after _restore: it replaces the counters
        self.reductions = Reductions(self._reduction_host(), self.cross and self._cross_reduction_host())
        self.reductions.restore({sig for table in self.tables.values() for sig in table} | self.known.signatures,
                                self.keyed_on)
        if state is not None:  # after the findings on disk and in pending/ are back
            self._restore_hits(state.get("hits") if state else {})
        self.pool = make_pool(settings, self.out / "workers")
        self.in_flight: dict[int, Case] = {}
        self._waits: dict[int, float] = {}  # case -> seconds it waited for a worker (campaign.timings)
        self._made_at: dict[int, float] = {}  # case made ahead -> when
        self.answers: dict[int, dict[str, object]] = {}  # case -> its answers so far, by IR
        self.started = time.monotonic()
        self.last_checkpoint = self.last_summary = 0.0
        self.stopping = False
        self.stopped_by: signal.Signals | None = None  # the signal that stopped the campaign
        self.bar = None
        self.probes = []  # what probing the passes found (core.probe.PassProbe)

    @property
    def coverage(self):
        return self.maker.coverage

    def _reduction_host(self) -> ReductionHost:
        return ReductionHost(
            settings=self.s, out=self.out, specs=self.specs, info=self.info, catalog=self.catalog,
            lock=self.lock, counters=self.counters, make_case=self.maker.make_case,
            classify=self.judging.classify, tvm_version=lambda: self.pool.tvm_version,
            installation=lambda: self.pool.installation, say=self.say,
            rename_finding=self.rename_finding, file_finding=self.file_finding, record=self.file_found)

    def _cross_reduction_host(self) -> ReductionHost:
        """The second IR's findings are finished in its own TVM, with its own cases."""
        side = self.cross
        return replace(self._reduction_host(), settings=side.settings, specs=side.specs, info=side.info,
                       catalog=side.maker.catalog, make_case=side.maker.make_case, classify=side.judge.classify,
                       tvm_version=lambda: self.pool.installation_of(side.info.name).get("tvm"),
                       installation=lambda: self.pool.installation_of(side.info.name))

    def labels(self) -> tuple[str, str]:
        """How messages name the two IRs of a cross-IR campaign, with their TVMs."""
        return (ir_label(self.s.dialect, self.pool.tvm_version),
                ir_label(self.s.cross_dialect, self.pool.installation_of(self.s.cross_dialect).get("tvm")))

    # --- resuming -------------------------------------------------------------------------

    def _restore(self, state: dict):
        self.maker.restore(state)
        self.counters = Counters.restore(state.get("counters", {}))
        self.next_index = state["next_index"]
        # cases generated before the kill but never judged run first, unchanged
        self.queue = [self.maker.make_case(c["index"], Graph.from_json(c["graph"]), c.get("disruption"),
                                           lowering=c.get("lowering")) for c in state.get("in_flight", [])]

    def keyed_on(self, signature: str) -> str:
        """The signature a finding first seen under `signature` is keyed on now (a pass-order
        finding is renamed to its minimal sequence's)."""
        seen = {signature}
        while signature in self.aliases and self.aliases[signature] not in seen:
            signature = self.aliases[signature]
            seen.add(signature)
        return signature

    def all_findings(self) -> list[Finding]:
        """Every finding this campaign holds, once each: saved, pending, and hirfuzz's own bugs."""
        with self.lock:
            saved = {f.signature: f for table in self.tables.values() for f in table.values()}
            # a pending finding already keyed on a saved one's signature was merged into it
            # (or filed as it), and its hits are there: it leaves pending/ next
            pending = [job.finding for job in self.reductions.pending.values() if job.finding.signature not in saved]
            return list(saved.values()) + list(self.own_bugs.values()) + pending

    def _restore_hits(self, saved: dict | None):
        """Each finding's hits as the checkpoint counted them (None: a checkpoint from before
        hirfuzz kept them, whose findings keep the hits on disk). The cases judged after the
        checkpoint run again and count their hits again; a finding first seen after it
        starts at none, and the case that found it counts it."""
        if saved is None:
            return
        findings = {self.keyed_on(f.signature): f for f in self.all_findings()}
        on_disk = {signature: f.hits for signature, f in findings.items()}
        for finding in findings.values():
            finding.hits = 0
        for signature, hits in saved.items():
            keyed_on = self.keyed_on(signature)
            if keyed_on in findings:
                findings[keyed_on].hits += hits
            else:  # renamed after the checkpoint to a finding --known names (known.hit ignores others)
                self.known.hit(keyed_on, hits)
        for signature, finding in findings.items():
            if finding.hits != on_disk[signature] and not finding.path.startswith(PENDING):
                self.rewrite_finding_json(finding)

    def save_progress(self):
        """summary.json every second, the checkpoint every few: all a kill can lose."""
        now = time.monotonic()
        if now - self.last_summary >= SUMMARY_S:
            self.last_summary = now
            self.write_summary()
        if now - self.last_checkpoint >= CHECKPOINT_S:
            self.last_checkpoint = now
            self.checkpoint()

    def checkpoint(self):
        pending = sorted(list(self.in_flight.values()) + self.queue + self.ahead, key=lambda c: c.index)
        counters = asdict(self.counters)
        counters["elapsed_s"] = self.elapsed()
        hits = {finding.signature: finding.hits for finding in self.all_findings()}
        state = {"next_index": self.next_index, "rng": self.maker.gen_rng.bit_generator.state,
                 "counters": counters, "gen_stats": asdict(self.maker.gen_stats), "hits": hits,
                 "in_flight": [{"index": c.index, "graph": c.graph.to_json(), "disruption": c.disruption,
                                "lowering": c.lowering} for c in pending]}
        self.out.checkpoint(state, self.coverage.to_json())

    def elapsed(self) -> float:
        return self.counters.elapsed_s + (time.monotonic() - self.started)

    def next_case(self) -> Case | None:
        """The case for the next idle worker: a resumed one, the one made ahead, or a new one."""
        if self.queue:
            return self.with_cross_half(self.queue.pop(0))
        if self.stopping or self.time_up():
            return None
        if self.ahead:
            return self.ahead.pop(0)
        return self.make_next_case()

    def make_next_case(self) -> Case | None:
        if self.iterations_done():
            return None
        t0 = time.perf_counter()
        case = self.with_cross_half(self.maker.make_case(self.next_index))
        self.counters.gen_s += time.perf_counter() - t0
        self._made_at[case.index] = time.monotonic()
        self.next_index += 1
        return case

    def make_ahead(self):
        """Make the next case while the workers build, so that the next worker to answer
        starts it at once instead of waiting for generation and the input search."""
        if self.ahead or self.stopping or self.time_up():
            return
        case = self.make_next_case()  # None once --iterations cases are made
        if case is not None:
            self.ahead.append(case)

    def with_cross_half(self, case: Case) -> Case:
        if self.cross is not None:
            case.cross = self.cross.half(case)
        return case

    def out_of_budget(self) -> bool:
        return self.iterations_done() or self.time_up()

    def iterations_done(self) -> bool:
        return self.s.iterations is not None and self.next_index >= self.s.iterations

    def time_up(self) -> bool:
        return self.s.time_s is not None and time.monotonic() - self.started >= self.s.time_s

    # --- the loop -------------------------------------------------------------------------

    def run(self) -> dict:
        try:
            self.pool.start()
        except WorkerError as exc:
            raise HirfuzzError(str(exc)) from None
        try:
            self.check_installation()
            check_user_passes(self.pool.idle(self.s.dialect)[0], self.catalog, self.s.timeout_s)
            self.probe_passes()
        except HirfuzzError:
            self.pool.close()
            raise
        self._open_bar()
        try:
            self.fuzz()
            if self.reductions.pending:
                self.say(f"{len(self.reductions.pending)} finding(s) not finished yet, kept in "
                         f"{self.out / PENDING}; run the same command again to finish them")
            summary = self.write_summary()
            write_atomic(self.out / "report.md", campaign_report(self.out.path, summary))
        except OutputError as exc:
            raise HirfuzzError(f"{exc}; the campaign stopped there. What it saved before is whole: make room "
                               f"in {self.out.path} and run the same command again to resume") from None
        return summary

    def fuzz(self):
        """The loop, until the budget is spent, a signal stops it or a write fails; then the
        checkpoint, unless a write failed (the last one is whole, and what came after it
        was not all written)."""
        restore_signals = self._catch_stop_signals()
        failed = False
        try:
            while self.step():
                self.save_progress()
        except KeyboardInterrupt:
            self.say("stopped: cases in flight will run again when this campaign resumes")
        except OutputError:
            failed = True
            raise
        finally:
            restore_signals()
            self.reductions.halt(join_s=5.0)
            self.pool.close()
            if self.bar is not None:
                self.bar.close()
            if not failed:
                self.checkpoint()
        if self.reductions.failure is not None:  # a reduction's write failed while the others stopped
            raise self.reductions.failure

    def probe_passes(self):
        """Probe the passes to fuzz (campaign.probe); a pinned sequence's probe steers generation."""
        self.probes = Prober(self).probes()
        if self.s.pass_seq and self.s.direct:
            self.maker.direction = direction_of(self.probes)

    def check_installation(self):
        """The workers' TVM can build for every target asked for, and is the TVM this
        campaign ran under before (a resume under another TVM would mix two compilers)."""
        installation = self._check_targets(self.pool.installation, self.s.targets)
        if self.cross is not None:
            hello = self.pool.installation_of(self.s.cross_dialect)
            installation["cross"] = self._check_targets(hello, self.cross.settings.targets)
        self.out.record_installation(installation)

    @staticmethod
    def _check_targets(hello: dict, targets: list[str]) -> dict:
        where = f"{hello.get('python')} (TVM {hello.get('tvm')})"
        kinds = {t.split()[0].split("-")[0] for t in targets}
        missing = sorted(kinds - set(hello.get("targets", [])))
        if missing:
            raise HirfuzzError(f"{where} cannot build for {', '.join(missing)}: that TVM was built without it")
        return {k: hello.get(k) for k in ("python", "tvm", "targets")}

    def step(self) -> bool:
        """Lend workers to reductions, hand out cases, judge answers; False once all is done."""
        if self.reductions.failure is not None:
            raise self.reductions.failure
        self.dispatch()
        if not self.pool.in_flight():
            if not self.reductions.active() and (self.stopping or not self.reductions.queue):
                return False
            self.reductions.wait(1.0)
            return True
        answered = []
        # a reduction that ends frees a worker: look again soon
        for worker, case, answer in self.pool.wait(0.25 if self.reductions.active() else 1.0):
            answers = self.answers.setdefault(case.index, {})
            answers[worker.dialect] = answer
            if len(answers) < (1 if self.cross is None else 2):
                continue  # the other IR's half is still running
            del self.answers[case.index]
            self.in_flight.pop(case.index, None)
            answered.append((case, answers))
        # the workers that answered start their next case before their answers are judged:
        # judging and making the next case take the coordinator tens of milliseconds a
        # case, which a worker would otherwise spend idle
        self.dispatch()
        for case, answers in answered:
            self.judge(case, answers[self.s.dialect], answers.get(self.s.cross_dialect))
            self._tick()
        self.make_ahead()
        return True

    def dispatch(self):
        """Reductions borrow idle workers (some while fuzzing goes on, all once it is over);
        the other idle workers get cases."""
        self.reductions.lend(self.pool, max(1, self.pool.jobs // 2) if self.fuzzing() else self.pool.jobs)
        while (workers := self.idle_workers()) is not None:
            case = self.next_case()
            if case is None:
                break
            now = time.monotonic()
            self._waits[case.index] = now - self._made_at.pop(case.index, now)
            self.in_flight[case.index] = case
            for worker, half in zip(workers, [case, case.cross]):
                worker.submit(case, half.request, self.s.timeout_s)

    def fuzzing(self) -> bool:
        """Whether cases are still to be handed out (what next_case would give)."""
        if self.stopping:
            return False
        return bool(self.queue) or not self.time_up() and (bool(self.ahead) or not self.iterations_done())

    def idle_workers(self) -> list[Worker] | None:
        """An idle worker for each IR of the campaign (a case runs in all at once), or None."""
        dialects = [self.s.dialect] + ([self.s.cross_dialect] if self.cross is not None else [])
        workers = [next(iter(self.pool.idle(d)), None) for d in dialects]
        return None if None in workers else workers

    def _catch_stop_signals(self):
        """First Ctrl-C or SIGTERM: finish the cases in flight; second: stop at once. Either
        way the checkpoint, summary and report are written."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(signum, frame):
            if self.stopping:
                raise KeyboardInterrupt
            self.stopping = True
            self.stopped_by = signal.Signals(signum)
            self.reductions.stop.set()
            again = "Ctrl-C again" if signum == signal.SIGINT else f"another {self.stopped_by.name}"
            self.say(f"{_stopped_by(self.stopped_by)}: finishing {len(self.in_flight)} case(s) in flight (pending "
                     f"findings wait for the next run); {again} to stop now")
        previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
        return lambda: [signal.signal(signum, earlier) for signum, earlier in previous.items()]

    # --- judging answers ------------------------------------------------------------------

    def judge(self, case: Case, answer, half_answer=None):
        """Count what the oracles make of a case's answer (and of its second IR's, in a
        cross-IR campaign), record its findings, and log it."""
        if isinstance(answer, dict):
            self._count_features(case, answer)
        t_compare = time.perf_counter()
        outcome = self.judging.classify(case, answer)
        if case.cross is not None:
            outcome = self.judge_cross(case, answer, half_answer, outcome)
        timings, config_timings = case_timings(case, answer, self._waits.pop(case.index, 0.0),
                                               time.perf_counter() - t_compare)
        self._count_timings(answer, timings)
        self.counters.cases += 1
        if isinstance(answer, dict):
            self._count_worker_figures(case, answer)
        if case.disruption is not None:
            table = self.disruptive.setdefault(outcome.status.value, {})
            table[outcome.stage] = table.get(outcome.stage, 0) + 1
        self._count_progress(outcome)
        self._count_input_search(case, outcome)
        self._record_outcome(case, answer, outcome)
        self.out.append_stats({
            "case": case.index, "t": round(self.elapsed(), 3), "status": outcome.status_text,
            "gen_ms": round(case.gen_ms, 3), "findings": len(self.findings),
            "pending": len(self.reductions.pending),
            "out_of_domain": case.out_of_domain or None, "coverage": self.coverage.counts(),
            "timings": timings, "config_timings": config_timings,
            "builds_saved": answer.get("builds_saved", 0) if isinstance(answer, dict) else 0})

    def _count_timings(self, answer, timings: dict):
        """Stage totals and builds saved, for summary.json."""
        c = self.counters
        add_totals(c.stage_s, timings)
        if isinstance(answer, dict):
            c.builds_saved += answer.get("builds_saved", 0)
            c.builds_saved_across_cases += sum(1 for r in [answer] + answer.get("others", [])
                                               if r.get("reused_build") == "cache")

    def judge_cross(self, case: Case, answer, half_answer, outcome: Outcome) -> Outcome:
        """The second IR's half judged, both compared (see `cross`); its finding recorded.
        Returns the first IR's outcome as the comparison settles it."""
        half_outcome = self.cross.judge.classify(case.cross, half_answer)
        labels = self.labels()
        verdict = compare_sides(case, answer, half_answer, labels)
        outcome, half_outcome = settle(outcome, half_outcome, verdict, labels)
        tally = self.counters.cross
        tally[half_outcome.status_text] = tally.get(half_outcome.status_text, 0) + 1
        if verdict is not None and verdict.suspect is not None:
            tally["reference-suspect"] = tally.get("reference-suspect", 0) + 1
        if isinstance(half_answer, dict):
            self.counters.tvm_s += _tvm_seconds(half_answer)
        self._record_outcome(case.cross, half_answer, half_outcome)
        return outcome

    def _count_worker_figures(self, case: Case, answer: dict):
        """Time in TVM, memory, and the configurations an executor skipped by design."""
        c = self.counters
        c.tvm_s += _tvm_seconds(answer)
        c.max_rss_kb = max(c.max_rss_kb, answer.get("rss_kb", 0))
        for config, reply in zip(case.configs, [answer] + answer.get("others", [])):
            if reply.get("status") == "skipped" and reply.get("reason"):
                c.skipped[config["name"]] = c.skipped.get(config["name"], 0) + 1

    def _count_progress(self, outcome: Outcome):
        """How far the case got (disruptive cases count in none of these): a program that
        failed to build was well-formed, one that failed to run was built too."""
        c, status = self.counters, outcome.status
        failed_at = outcome.stage if status is Status.ERROR else None
        c.valid += status in BUILT or failed_at in ("build", "run")
        c.built += status in BUILT or failed_at == "run"
        c.ran += status in RAN
        c.compared += status in (Status.OK, Status.MISMATCH)
        c.not_run += status is Status.BUILT

    def _count_input_search(self, case: Case, outcome: Outcome):
        """What the input search achieved: strict cases compared with every result in its
        ops' domains, and the ops whose domain it could not keep (the generator's hint)."""
        c = self.counters
        if case.disruption is None:
            c.compared_fully += case.comparable and outcome.status in (Status.OK, Status.MISMATCH)
        if case.unmet_op:
            c.domain_unmet[case.unmet_op] = c.domain_unmet.get(case.unmet_op, 0) + 1

    def _record_outcome(self, case: Case, answer, outcome: Outcome):
        """File the finding the answer shows: TVM's, a spec's, or hirfuzz's own."""
        if isinstance(answer, dict) and answer.get("mutation_error"):
            self.hirfuzz_bug(case, Finding(kind="mutator-error", oracle=Oracle.MUTATION.value, stage="mutate",
                                           signature=f"mutator-error|{normalize_message(answer['mutation_error'])}",
                                           message=answer["mutation_error"][:300], case=case.index))
        if outcome.status is Status.OUT_OF_MEMORY:
            self.ran_out_of_memory(case, outcome)
        if outcome.finding is not None:
            self.file_found(case, outcome.finding, outcome.log)

    # --- findings -------------------------------------------------------------------------

    def _count_features(self, case: Case, answer: dict):
        """IR-feature coverage: which lowering features and mutators each case used."""
        if case.lowering.get("plan"):
            for name in LoweringPlan.from_json(case.lowering["plan"]).features_used():
                self.ir_features[name] = self.ir_features.get(name, 0) + 1
        self._mutators[case.index] = answer.get("mutators", [])
        for name in answer.get("mutators", []):
            self.mutators_used[name] = self.mutators_used.get(name, 0) + 1

    def ran_out_of_memory(self, case: Case, outcome: Outcome):
        """A case that needed more than --max-memory: the limit's, neither TVM's finding nor
        a crash; counted, and said the first time."""
        self.counters.out_of_memory += 1
        if self.counters.out_of_memory == 1:
            said = memory_evidence(outcome.log)
            self.say(f"case {case.index} ran out of the --max-memory limit ({self.s.max_memory_mb} MB per worker)"
                     f"{f': {said}' if said else ''}; not a finding: such cases are counted (summary.json's "
                     "out_of_memory), and a larger --max-memory runs them")

    def hirfuzz_bug(self, case: Case, finding: Finding):
        """A problem of hirfuzz's own (a mutator that fails or changes results): kept apart."""
        self.counters.hirfuzz_bugs += 1
        known = self.own_bugs.get(finding.signature)
        if known is not None:
            known.hits += 1
            return
        name = f"{len(self.own_bugs) + 1:04d}-{finding.kind}-{short_id(finding.signature)}"
        finding.path = f"hirfuzz-bugs/{name}"  # relative to the campaign folder, as every path it writes
        case_json = {"case": case.index, "seed": self.s.seed, "graph": case.graph.to_json(),
                     "lowering": case.lowering, "configs": case.configs}
        save_folder(self.out / "hirfuzz-bugs", name, finding_files(finding, case_json, "", None, finding.detail))
        self.own_bugs[finding.signature] = finding
        self.say(f"hirfuzz's own bug (not reported as a TVM finding) {name}: {finding.message[:160]}")

    def file_found(self, case: Case, finding: Finding, log: str):
        """What the oracles found, where it belongs: TVM's findings, a spec's disagreement, or
        hirfuzz's own bug. A reduction thread files what it meets besides its own finding."""
        with self.lock:
            if finding.kind == "mutant-disagreement":
                self.hirfuzz_bug(case, finding)
            elif finding.kind == "spec-disagreement":
                self.counters.spec_disagreements += 1
                self.keep("spec-disagreements", case, finding, log)
            else:
                self.counters.findings_hits += 1
                self.record(case, finding, log)

    def record(self, case: Case, finding: Finding, log: str):
        """A finding of the oracles: a hit of one already known, or a new one to finish."""
        with self.lock:
            finding.signature = self.aliases.get(finding.signature, finding.signature)
            for table in (self.findings, self.unconfirmed):
                known = table.get(finding.signature)
                if known is not None:
                    known.hits += 1
                    if table is self.findings:
                        self.rewrite_finding_json(known)
                    return
            self.keep("findings", case, finding, log)

    def keep(self, folder: str, case: Case, finding: Finding, log: str):
        """Count a hit of a finding on its way to `folder`, or queue a new one for reduction."""
        with self.lock:
            waiting = waiting_under(self.reductions.pending, finding.signature)
            known = self.tables[folder].get(finding.signature) or (waiting.finding if waiting else None)
            if known is not None:
                known.hits += 1
                return
            if self.known.hit(finding.signature):
                return  # an earlier campaign's: counted, never reduced or filed again
            self.reductions.submit(folder, case, finding, log)
            self.say(f"new {finding.kind} (case {case.index}): {finding.message[:160]}\n"
                     f"    reducing and checking its reproducer; kept meanwhile in {PENDING}/")

    def rename_finding(self, finding: Finding, signature: str) -> bool:
        """Key `finding` on `signature` from now on (a pass-order finding on its minimal
        sequence), later hits of its first signature too. Returns whether a finding is
        already saved, or known (--known), under `signature`: the renamed one's hits are
        then added to it, and it is not filed."""
        with self.lock:
            self.aliases[finding.signature] = signature
            self.out.save_aliases(self.aliases)
            finding.signature = signature
            saved = self.findings.get(signature) or self.unconfirmed.get(signature)
            if saved is not None:
                saved.hits += finding.hits
                self.rewrite_finding_json(saved)
                return True
            if not self.known.hit(signature, finding.hits):
                return False
            # it was said to be new when first seen, under the signature it had then
            self.say(f"the {finding.kind} of case {finding.case} is a known finding (--known): counted, not filed")
            return True

    def file_finding(self, folder: str, finding: Finding, files: dict):
        """A finished finding: saved in `folder` under the next number, listed, said."""
        with self.lock:
            table = self.tables[folder]
            name = f"{len(table) + 1:04d}-{finding.kind}-{short_id(finding.signature)}"
            finding.path = f"{folder}/{name}"  # relative to the campaign folder, as every path it writes
            files["finding.json"] = json.dumps(finding.to_json(), indent=2) + "\n"
            save_folder(self.out / folder, name, files)
            table[finding.signature] = finding
            if folder == "unconfirmed":
                self.counters.unconfirmed += 1
            why = f"\n    {finding.extra['unconfirmed_reason']}" if folder == "unconfirmed" else ""
            self.say(f"{LABELS[folder]} {name}: {finding.message[:200]}{why}\n    -> {self.out / finding.path}/repro.py")

    def rewrite_finding_json(self, finding: Finding):
        folder = self.out / finding.path
        if finding.path and folder.is_dir():  # Path("") is the campaign folder itself
            write_atomic(folder / "finding.json", json.dumps(finding.to_json(), indent=2) + "\n")

    # --- reporting ------------------------------------------------------------------------

    def write_summary(self) -> dict:
        data = summary(self)
        write_atomic(self.out / "summary.json", json.dumps(data, indent=2) + "\n")
        return data

    def _open_bar(self):
        if not self.progress:
            return
        from tqdm import tqdm
        self.bar = tqdm(total=self.s.iterations, initial=self.counters.cases, unit="case",
                        dynamic_ncols=True, desc=f"hirfuzz {self.s.mode}")

    def _tick(self):
        if self.bar is None:
            return
        kinds: dict[str, int] = {}
        for f in self.findings.values():
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
        found = " ".join(f"{k}={v}" for k, v in sorted(kinds.items())) or "findings=0"
        cov = self.coverage.counts()
        self.bar.set_postfix_str(
            f"{found} cov(dtype/shape/edge/path)={cov['op_dtype']}/{cov['op_shape']}/{cov['op_edge']}/"
            f"{cov['op_path']} restarts={self.pool.restarts} reducing={len(self.reductions.pending)}", refresh=False)
        self.bar.update(1)

    def say(self, text: str):
        with self.lock:  # reduction threads speak too
            if self.bar is not None:
                self.bar.write(text)
            else:
                print(text, flush=True)


def make_pool(s: Settings, log_dir: Path):
    """The campaign's workers: here (`sandbox.Pool`), or on a Ray cluster with --ray, where
    --jobs caps the workers the cluster's CPUs allow."""
    main = Interpreter(s.dialect, s.tvm_python, s.tvm_env)
    cross = Interpreter(s.cross_dialect, s.cross_python, s.cross_env) if s.cross_dialect else None
    if s.ray is None:
        return Pool(s.jobs, log_dir, s.max_memory_mb, s.recycle_after, s.tvm_python, s.tvm_env, s.dialect,
                    cross=cross)
    from .raypool import RayPool, node_interpreter  # imports ray: only with --ray
    return RayPool(s.ray, s.jobs, s.max_memory_mb, s.recycle_after, node_interpreter(main, s.tvm_managed),
                   cross and node_interpreter(cross, s.cross_managed))


def _stopped_by(signum: signal.Signals) -> str:
    return "interrupted (Ctrl-C)" if signum == signal.SIGINT else f"terminated ({signum.name})"


def stop_note(campaign: Campaign) -> str | None:
    """The line a campaign stopped by a signal ends with, after its summary."""
    if campaign.stopped_by is None:
        return None
    return (f"hirfuzz: {_stopped_by(campaign.stopped_by)}: the campaign stopped early, its summary is above; "
            "run the same command again to resume it")


def _tvm_seconds(answer: dict) -> float:
    """What a worker's answer spent in TVM, over all its configurations."""
    return sum(sum(r.get("timings", {}).values()) for r in [answer] + answer.get("others", []))
