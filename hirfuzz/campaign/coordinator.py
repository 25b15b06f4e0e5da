"""The campaign: generate cases, keep every worker busy, judge answers, keep findings.

The coordinator never imports TVM. Its case makers draw the cases (`makers`: in its own
process, in maker processes or on the cluster; coverage guidance is merged by case index,
so a seed fixes the graphs whatever the number of workers and makers); it hands
cases to idle workers, has their answers judged (`judge`), counts the outcomes (`tallies`)
and files the findings (`findings`). A new finding is kept in pending/ and finished
(reduced, rendered, its reproducer run alone) by `reducer` on a worker lent by the pool,
while the other workers fuzz on. A run goes through named phases (`phases`: start, probe,
fuzz, finish). Everything on screen is on disk first (`summary`); see `outdir` for the
folder and for resuming.
"""
from __future__ import annotations

import json
import signal
import sys
import threading
import time
import traceback
from dataclasses import asdict, replace
from pathlib import Path

from ..core.finding import Finding, normalize_message
from ..core.passes import load_catalog
from ..core.targets import target_kind
from ..dialects import dialect_info
from ..errors import HirfuzzError
from .avoidance import construct_of, saved_constructs
from .cases import Case, CaseMaker
from .counterpart import COUNTERPART_OF, CounterpartSide
from .cross import compare_sides, ir_label, open_cross_side, settle
from .findings import FindingTables
from .followups import put_back_given, saved_configs, worker_request
from .judge import Judge
from .oracles import Oracle
from .outcome import Outcome, Status
from .known import KnownFindings, load_known
from .makers import open_makers
from .outdir import FIXED_SETTINGS, OutDir, OutputError, write_atomic
from .phases import Phase, PhaseClock
from .probe import ProbeContext, Prober, direction_of
from .reducer import PENDING, ReductionHost, Reductions
from .report import campaign_report
from .sandbox import Interpreter, Pool, Worker, WorkerError, memory_evidence
from .screen import Screen
from .settings import Settings
from .summary import CampaignView, format_summary, summary
from .supply import CaseSupply
from .tallies import Counters, Tallies
from .timings import CoordinatorClock, case_timings
from .userpasses import check_user_passes
from .versions import baseline_of, campaign_releases

# Counters and Settings: where tests and tools import them from; the last two: for cli.py
__all__ = ["Campaign", "Counters", "Settings", "format_summary", "stop_note", "unjudged_note"]

CHECKPOINT_S = 5.0
SUMMARY_S = 1.0
# what stops a campaign as Ctrl-C does (the first: finish the cases in flight; the second: at once)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Campaign:
    """One campaign's loop and its phases; see the module's docstring."""

    def __init__(self, settings: Settings, specs, progress: bool = True):
        self.s = settings
        # read first: a bad --known stops the campaign before it writes anything
        known = load_known(settings.known) if settings.known else frozenset()
        self.specs = specs
        self.info = dialect_info(settings.dialect)
        self.catalog = load_catalog(settings.pass_files, builtin=self.info.catalog)
        self.maker = CaseMaker(settings, specs, self.info, self.catalog)
        fixed = {k: v for k, v in asdict(settings).items() if k in FIXED_SETTINGS}
        self.out, state = OutDir.open(settings.out, {**asdict(settings), **fixed})
        self.resumed = state is not None
        self.tallies = Tallies(Counters.restore((state or {}).get("counters", {})))
        self.judging = Judge(specs, self.tallies.mutators_of)
        lock = threading.RLock()
        self.screen = Screen(progress, lock)
        self.tables = FindingTables(self.out, settings.seed, self.counters, KnownFindings(known, self.counters.known),
                                    lock, self.screen.say)
        self.cross = None if settings.cross_dialect is None else open_cross_side(
            settings, specs, lambda: self.pool.installation_of(settings.cross_dialect).get("tvm"))
        self.started = time.monotonic()
        self.supply = CaseSupply(settings, self.maker, self.cross, self.counters, self.started)
        if state:
            self.maker.restore(state)
            self.supply.restore(state)
        self.tables.load(self.resumed)
        self.tables.confirmed = self.avoid_construct_of
        self.offer_saved_constructs()
        ends_at = None if settings.time_s is None else self.started + settings.time_s
        self.reductions = Reductions(self._reduction_host(), self.cross and self._cross_reduction_host(), ends_at)
        self.supply.finish_first = lambda: self.reductions.finish_first(self.pool.jobs)
        self.tables.reductions = self.reductions
        self.reductions.restore(self.tables.signatures() | self.tables.known.signatures, self.tables.keyed_on)
        if state is not None:  # after the findings on disk and in pending/ are back
            self.tables.restore_hits(state.get("hits"))
        self.pool = make_pool(settings, self.out / "workers")
        self.in_flight: dict[int, Case] = {}
        self._waits: dict[int, float] = {}  # case -> seconds it waited for a worker (campaign.timings)
        self.answers: dict[int, dict[str, object]] = {}  # case -> its answers so far, by IR
        self.phases = PhaseClock(lambda: self.counters.cases, (state or {}).get("phases"))
        self.last_checkpoint = self.last_summary = 0.0
        self.clock = CoordinatorClock()  # the coordinator's own seconds, per stage
        self.stopped_by: signal.Signals | None = None  # the signal that stopped the campaign
        self.probes = []  # what probing the passes found (core.probe.PassProbe)
        self.releases = []  # the other TVM releases confirmed findings are tried under (versions.py)
        self.baseline = None  # --baseline's TVM (versions.Release)

    @property
    def counters(self) -> Counters:
        return self.tallies.counters

    @property
    def coverage(self):
        return self.maker.coverage

    def _reduction_host(self) -> ReductionHost:
        return ReductionHost(
            settings=self.s, out=self.out, specs=self.specs, info=self.info, catalog=self.catalog,
            lock=self.tables.lock, counters=self.counters, make_case=self.maker.make_case,
            classify=self.judging.classify, tvm_version=lambda: self.pool.tvm_version,
            installation=lambda: self.pool.installation, say=self.screen.say,
            rename_finding=self.tables.rename_finding, file_finding=self.tables.file_finding,
            join_root=self.tables.join_root,
            record=self.tables.file_found, releases=lambda: self.releases,
            baseline=lambda: self.baseline, counterpart=self._counterpart_for(self.s.dialect))

    def _cross_reduction_host(self) -> ReductionHost:
        """The second IR's findings are finished in its own TVM, with its own cases."""
        side = self.cross
        return replace(self._reduction_host(), settings=side.settings, specs=side.specs, info=side.info,
                       catalog=side.maker.catalog, make_case=side.maker.make_case, classify=side.judge.classify,
                       tvm_version=lambda: self.pool.installation_of(side.info.name).get("tvm"),
                       installation=lambda: self.pool.installation_of(side.info.name), releases=lambda: [],
                       baseline=lambda: None, counterpart=self._counterpart_for(side.info.name))

    def _counterpart_for(self, dialect: str) -> CounterpartSide | None:
        """Where a cross-IR campaign tries the confirmed findings of `dialect` in the other
        IR (counterpart.py): Relay's in Relax, whichever of the two is first."""
        if self.cross is None or COUNTERPART_OF.get(dialect) not in (self.s.dialect, self.s.cross_dialect):
            return None
        if dialect == self.s.dialect:  # the other IR is the cross side
            side = self.cross
            return CounterpartSide(side.info, side.specs, side.maker.make_case, self.s.cross_python or sys.executable,
                                   self.s.cross_env, lambda: self.pool.installation_of(side.info.name).get("tvm"))
        return CounterpartSide(self.info, self.specs, self.maker.make_case, self.s.tvm_python or sys.executable,
                               self.s.tvm_env, lambda: self.pool.tvm_version)

    def labels(self) -> tuple[str, str]:
        """How messages name the two IRs of a cross-IR campaign, with their TVMs."""
        return (ir_label(self.s.dialect, self.pool.tvm_version),
                ir_label(self.s.cross_dialect, self.pool.installation_of(self.s.cross_dialect).get("tvm")))

    # --- constructs avoided (campaign.avoidance) ------------------------------------------

    def avoid_construct_of(self, finding: Finding, case_json: str):
        """A confirmed finding just filed: generation avoids the construct it fails on alone,
        if any (the second IR's findings of a cross-IR campaign name none of this IR's)."""
        if finding.oracle == Oracle.CROSS_IR or not case_json:
            return
        construct = construct_of(finding.to_json(), json.loads(case_json))
        if construct is not None:
            self.maker.avoidance.offer(construct, finding.path)

    def offer_saved_constructs(self):
        """The constructs of the findings confirmed before this run (a resumed campaign's,
        where the checkpoint's schedule does not have them yet) and of a --known campaign
        folder's, avoided from the next case generated."""
        avoidance = self.maker.avoidance
        for construct, finding in saved_constructs(self.out.path):
            avoidance.offer(construct, finding)
        if self.s.known and Path(self.s.known).is_dir():
            for construct, finding in saved_constructs(Path(self.s.known)):
                avoidance.offer(construct, f"--known {self.s.known}/{finding}")

    # --- checkpoints ---------------------------------------------------------------------

    def save_progress(self):
        """summary.json every second, the checkpoint every few: all a kill can lose."""
        now = time.monotonic()
        if now - self.last_summary >= SUMMARY_S:
            self.last_summary = now
            with self.clock.stage("summary"):
                self.write_summary()
        if now - self.last_checkpoint >= CHECKPOINT_S:
            self.last_checkpoint = now
            with self.clock.stage("checkpoint"):
                self.checkpoint()

    def checkpoint(self):
        pending = sorted(list(self.in_flight.values()) + self.supply.unjudged(), key=lambda c: c.index)
        counters = asdict(self.counters)
        counters["elapsed_s"] = self.elapsed()
        hits = {finding.signature: finding.hits for finding in self.tables.all_findings()}
        self.tables.write_hits()
        coverage, recent = self.maker.ledger.saved(self.supply.next_index)
        state = {"next_index": self.supply.next_index, "coverage_recent": recent, "counters": counters,
                 "gen_stats": asdict(self.maker.gen_stats), "hits": hits,
                 "avoidances": self.maker.avoidance.to_json(),
                 "phases": self.phases.figures(),
                 "in_flight": [{"index": c.index, "graph": c.graph.to_json(), "disruption": c.disruption,
                                "lowering": c.lowering, **saved_configs(c)} for c in pending]}
        self.out.checkpoint(state, coverage)

    def elapsed(self) -> float:
        return self.counters.elapsed_s + (time.monotonic() - self.started)

    # --- the loop -------------------------------------------------------------------------

    def run(self) -> dict:
        """The phases in turn (campaign.phases); returns the summary."""
        self.phases.enter(Phase.START)
        try:
            self.pool.start()
        except WorkerError as exc:
            raise HirfuzzError(str(exc)) from None
        try:
            self.check_installation()
            self.releases = campaign_releases(self.s.versions, self.s.dialect, self.s.tvm_python, self.pool.tvm_version)
            self.baseline = baseline_of(self.s.baseline) if self.s.baseline else None
            check_user_passes(self.pool.idle(self.s.dialect)[0], self.catalog, self.s.timeout_s)
            self.phases.enter(Phase.PROBE)
            self.probe_passes()
        except HirfuzzError:
            self.pool.close()
            raise
        self.screen.open(self.s.iterations, self.counters.cases, f"hirfuzz {self.s.mode}")
        self.phases.enter(Phase.FUZZ)
        try:
            self.fuzz()
            self.phases.end()
            if self.reductions.pending:
                self.say(f"{len(self.reductions.pending)} finding(s) not finished yet, kept in "
                         f"{self.out / PENDING}; run the same command again to finish them")
            with self.clock.stage("summary"):
                summary = self.write_summary()
            with self.clock.stage("report"):
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
        self.supply.makers = open_makers(self.s, self.maker, self.supply.next_index)
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
            self.supply.makers.close()
            self.pool.close()
            self.screen.close()
            if not failed:
                self.checkpoint()
        if self.reductions.failure is not None:  # a reduction's write failed while the others stopped
            raise self.reductions.failure

    def probe_passes(self):
        """Probe the passes to fuzz (campaign.probe); a pinned sequence's probe steers generation."""
        context = ProbeContext(settings=self.s, specs=self.specs, info=self.info, catalog=self.catalog,
                               out=self.out, pool=self.pool, maker=self.maker, classify=self.judging.classify,
                               say=self.say)
        self.probes = Prober(context).probes()
        if self.s.pass_seq and self.s.direct:
            self.maker.direction = direction_of(self.probes)

    def check_installation(self):
        """The workers' TVM can build for every target asked for, and is the TVM this
        campaign ran under before (a resume under another TVM would mix two compilers)."""
        installation = self._check_targets(self.pool.installation, self.s.targets)
        self.maker.name_targets(self.pool.installation)
        if self.cross is not None:
            hello = self.pool.installation_of(self.s.cross_dialect)
            installation["cross"] = self._check_targets(hello, self.cross.settings.targets)
            self.cross.maker.name_targets(hello)
        self.out.record_installation(installation)

    @staticmethod
    def _check_targets(hello: dict, targets: list[str]) -> dict:
        where = f"{hello.get('python')} (TVM {hello.get('tvm')})"
        kinds = {target_kind(t) for t in targets}
        missing = sorted(kinds - set(hello.get("targets", [])))
        if missing:
            raise HirfuzzError(f"{where} cannot build for {', '.join(missing)}: that TVM was built without it")
        if "cuda" in kinds and not hello.get("devices", {}).get("cuda"):
            raise HirfuzzError(f"{where} sees no CUDA device: its workers cannot run the cuda target")
        return {k: hello.get(k) for k in ("python", "tvm", "targets")}

    def step(self) -> bool:
        """Lend workers to reductions, hand out cases, judge answers; False once all is done."""
        if self.reductions.failure is not None:
            raise self.reductions.failure
        self.dispatch()
        if self.phases.current is Phase.FUZZ and self.supply.over():
            self.phases.enter(Phase.FINISH)  # no case is handed out any more
        if not self.pool.in_flight():
            if not self.reductions.active() and (self.supply.stopping or not self.reductions.queue):
                # cases held back while findings were finished first go out now that they are
                return self.supply.held_back
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
        with self.clock.stage("make"):
            self.supply.make_ahead()
        return True

    def dispatch(self):
        """Reductions borrow idle workers (some while fuzzing goes on, within their share:
        reduction_budget; all once it is over); the other idle workers get cases."""
        limit = self.reductions.limit(self.pool.jobs, self.counters.cases, self.supply.handing_out())
        self.reductions.lend(self.pool, limit)
        while (workers := self.idle_workers()) is not None:
            with self.clock.stage("make"):
                case = self.supply.next_case()
            if case is None:
                break
            self._waits[case.index] = self.supply.waited_s(case)
            self.in_flight[case.index] = case
            with self.clock.stage("dispatch"):
                for worker, half in zip(workers, [case, case.cross]):
                    worker.submit(case, worker_request(half), self.s.timeout_s)

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
            if self.supply.stopping:
                raise KeyboardInterrupt
            self.supply.stopping = True
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
        answer = put_back_given(case, answer)  # a follow-up's original's replies (campaign.followups)
        if isinstance(answer, dict):
            self.tallies.count_features(case, answer)
        t_compare = time.perf_counter()
        with self.clock.stage("judge"):
            try:
                outcome = self.judging.classify(case, answer, known=self.tables.holds)
                if case.cross is not None:
                    outcome = self.judge_cross(case, answer, half_answer, outcome)
            except Exception as error:  # noqa: BLE001 - a bug of hirfuzz's in judging must not end the campaign
                outcome = self.unjudged(case, error)
        with self.clock.stage("record"):
            self._record(case, answer, outcome, time.perf_counter() - t_compare)

    def unjudged(self, case: Case, error: Exception) -> Outcome:
        """A case whose answer hirfuzz failed to judge: its own bug, filed in hirfuzz-bugs/ with
        the traceback, and the campaign goes on (bench29 relay seed 23 stopped at 1273 s on a
        reply the judge had never met, a baseline that skipped). The run ends with exit status
        3 (cli), so that it is not missed."""
        where = traceback.extract_tb(error.__traceback__)[-1]
        self.tables.hirfuzz_bug(case, Finding(
            kind="judge-error", oracle="judge", stage="judge",
            signature=f"judge-error|{type(error).__name__}|{Path(where.filename).name}:{where.name}",
            message=f"hirfuzz failed judging case {case.index}'s answer: {type(error).__name__}: {error}"[:300],
            detail=traceback.format_exc(), case=case.index))
        return Outcome(Status.UNJUDGED)

    def _record(self, case: Case, answer, outcome: Outcome, compare_s: float):
        """Count the case's outcome, file its finding and log it (stats.jsonl)."""
        timings, config_timings = case_timings(case, answer, self._waits.pop(case.index, 0.0), compare_s)
        self.tallies.count_judged(case, answer, outcome, timings)
        self._record_outcome(case, answer, outcome)
        self.supply.judged(case, answer, outcome)
        self.out.append_stats({
            "case": case.index, "t": round(self.elapsed(), 3), "status": outcome.status_text,
            "gen_ms": round(case.gen_ms, 3), "findings": len(self.tables.findings),
            "pending": len(self.reductions.pending),
            "out_of_domain": case.out_of_domain or None, "coverage": self.coverage.counts(),
            "timings": timings, "config_timings": config_timings,
            "builds_saved": answer.get("builds_saved", 0) if isinstance(answer, dict) else 0})

    def judge_cross(self, case: Case, answer, half_answer, outcome: Outcome) -> Outcome:
        """The second IR's half judged, both compared (see `cross`); its finding recorded.
        Returns the first IR's outcome as the comparison settles it."""
        half_outcome = self.cross.judge.classify(case.cross, half_answer)
        labels = self.labels()
        verdict = compare_sides(case, answer, half_answer, labels)
        outcome, half_outcome = settle(outcome, half_outcome, verdict, labels)
        self.tallies.count_cross(half_answer, half_outcome, verdict is not None and verdict.suspect is not None)
        self._record_outcome(case.cross, half_answer, half_outcome)
        return outcome

    def _record_outcome(self, case: Case, answer, outcome: Outcome):
        """File the finding the answer shows: TVM's, a spec's, or hirfuzz's own."""
        if isinstance(answer, dict) and answer.get("mutation_error"):
            self.tables.hirfuzz_bug(case, Finding(
                kind="mutator-error", oracle=Oracle.MUTATION.value, stage="mutate",
                signature=f"mutator-error|{normalize_message(answer['mutation_error'])}",
                message=answer["mutation_error"][:300], case=case.index))
        if outcome.status is Status.OUT_OF_MEMORY:
            self.ran_out_of_memory(case, outcome)
        if outcome.finding is not None:
            self.tables.file_found(case, outcome.finding, outcome.log)

    def ran_out_of_memory(self, case: Case, outcome: Outcome):
        """A case that needed more than --max-memory: the limit's, neither TVM's finding nor
        a crash; counted, and said the first time."""
        self.counters.out_of_memory += 1
        if self.counters.out_of_memory == 1:
            said = memory_evidence(outcome.log)
            self.say(f"case {case.index} ran out of the --max-memory limit ({self.s.max_memory_mb} MB of resident memory per worker)"
                     f"{f': {said}' if said else ''}; not a finding: such cases are counted (summary.json's "
                     "out_of_memory), and a larger --max-memory runs them")

    # --- reporting ------------------------------------------------------------------------

    def view(self) -> CampaignView:
        """What summary.json reads of the campaign now."""
        cross_tvm = self.pool.installation_of(self.s.cross_dialect).get("tvm") if self.cross is not None else None
        return CampaignView(settings=self.s, tallies=self.tallies, tables=self.tables, pool=self.pool,
                            maker=self.maker, probes=self.probes, phases=self.phases.figures(),
                            resumed=self.resumed, elapsed_s=self.elapsed(), coordinator_s=self.clock.figures(),
                            running_s=time.monotonic() - self.started, cross_tvm=cross_tvm,
                            followups=self.supply.followups.figures())

    def write_summary(self) -> dict:
        data = summary(self.view())
        write_atomic(self.out / "summary.json", json.dumps(data, indent=2) + "\n")
        return data

    def _tick(self):
        self.screen.tick(self._postfix)

    def _postfix(self) -> str:
        kinds: dict[str, int] = {}
        for f in self.tables.findings.values():
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
        found = " ".join(f"{k}={v}" for k, v in sorted(kinds.items())) or "findings=0"
        cov = self.coverage.counts()
        return (f"{found} cov(dtype/shape/edge/path)={cov['op_dtype']}/{cov['op_shape']}/{cov['op_edge']}/"
                f"{cov['op_path']} restarts={self.pool.restarts} reducing={len(self.reductions.pending)}")

    def say(self, text: str):
        self.screen.say(text)


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


def unjudged_note(summary: dict) -> str | None:
    """The line a campaign that failed judging some case ends with (exit status 3)."""
    unjudged = sum(bug["hits"] for bug in summary["hirfuzz_bugs"] if bug["kind"] == "judge-error")
    if not unjudged:
        return None
    return (f"hirfuzz: hirfuzz's own bug: it failed judging {unjudged} case(s), whose findings, if any, are lost "
            "(hirfuzz-bugs/ holds each failure's traceback); the rest of the campaign ran as usual")


def stop_note(campaign: Campaign) -> str | None:
    """The line a campaign stopped by a signal ends with, after its summary."""
    if campaign.stopped_by is None:
        return None
    return (f"hirfuzz: {_stopped_by(campaign.stopped_by)}: the campaign stopped early, its summary is above; "
            "run the same command again to resume it")
