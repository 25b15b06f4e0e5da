"""The campaign: generate cases, keep every worker busy, judge answers, keep findings.

The coordinator never imports TVM. It generates every case itself (so coverage guidance
is global and a seed fixes the graphs whatever the number of workers), hands cases to
idle workers, and judges their answers. A new finding is kept in pending/ and finished
(reduced, rendered, its reproducer run alone) by `reducer` on a worker lent by the pool,
while the other workers fuzz on. Everything on screen is on disk first; see `outdir` for
the folder and for resuming.
"""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from enum import IntEnum
from pathlib import Path

import numpy as np

from .. import __version__
from ..core.calls import call_records
from ..core.coverage import Coverage
from ..core.violations import CLASSES, classify as classify_violation, draw_inputs as draw_violation_inputs
from ..core.violations import generate_violation, violation_plan
from ..errors import HirfuzzError
from ..core.plan import Knobs, LoweringPlan, plan_lowering
from ..core.generate import GenStats, Rejected, generate_graph
from ..core.graph import Graph
from ..core.inputs import choose_inputs
from ..core.oracle import compare_results
from .outdir import FIXED_SETTINGS, OutDir, save_folder, write_atomic
from ..core.passes import draw_sequence, load_catalog
from .reducer import PENDING, Reductions
from .report import campaign_report
from .sandbox import Death, Pool, WorkerError
from ..core.finding import Finding, crash_signature, death_signature, error_line, normalize_message, short_id
from ..dialects import dialect_info
from ..protocol import decode_array, describe_config, encode_array, make_config
from .triage import finding_files

CHECKPOINT_S = 5.0
SUMMARY_S = 1.0


@dataclass
class Settings:
    mode: str = "strict"
    seed: int = 0
    iterations: int | None = None
    time_s: float | None = None
    ops: int = 20
    out: str = "hirfuzz-out"
    guided: bool = True
    only_ops: list[str] | None = None
    dtypes: list[str] | None = None
    timeout_s: float = 60.0
    max_memory_mb: int | None = 8192
    spec_dir: str | None = None
    verify: bool = True
    jobs: int = 1
    reduce: bool = True
    recycle_after: int | None = 500
    targets: list[str] = field(default_factory=lambda: ["llvm"])
    executors: list[str] = field(default_factory=lambda: ["vm"])
    pass_fuzz: bool = True                 # also build each case after a drawn pass sequence
    pass_seq: list[dict] | None = None     # a pinned sequence (--pass-seq), instead of drawing
    pass_files: list[str] = field(default_factory=list)
    features: bool = True                  # lower with functions, closures and Relax features
    mutations: int = 1                     # mutators applied to make each case's mutant (0: none)
    dialect: str = "relax"                 # the IR fuzzed (--ir)
    tvm_python: str | None = None          # the interpreter holding the TVM under test (None: this one)
    tvm_env: dict = field(default_factory=dict)  # what it needs in its environment


@dataclass
class Case:
    index: int
    graph: Graph
    inputs: list[np.ndarray]
    runnable: bool            # False: an input may trap (integer division by zero)
    expected: list            # TensorFacts per result of main
    gen_ms: float
    out_of_domain: str = ""   # the first domain violation, whose results are not compared
    disruption: dict | None = None  # disruptive mode: the violation and its plan
    configs: list = field(default_factory=list)  # the first is the baseline
    lowering: dict = field(default_factory=dict)  # {"plan": LoweringPlan JSON, "mutation": {...}}
    request: dict = field(default_factory=dict)


class Stream(IntEnum):
    """A case's random streams besides the campaign's graph stream (values fixed: a seed
    must give the same campaign across versions)."""
    INPUTS = 0      # input values (the key is [seed, index], for older campaigns' sake)
    CONFIGS = 2     # the pass sequence and opt level drawn for the case
    PLAN = 3        # the lowering plan: functions, closures, IR features
    MUTATION = 4    # the mutators a worker applies


@dataclass
class Counters:
    cases: int = 0
    valid: int = 0            # passed relax.analysis.well_formed
    built: int = 0
    ran: int = 0
    compared: int = 0         # ran, and at least one result was compared
    not_run: int = 0          # built only: every input draw may trap
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

    @staticmethod
    def restore(d: dict) -> "Counters":
        names = {f.name for f in fields(Counters)}
        return Counters(**{k: v for k, v in d.items() if k in names})


@dataclass
class Outcome:
    status: str
    finding: Finding | None = None
    log: str = ""


class Campaign:
    def __init__(self, settings: Settings, specs, progress: bool = True):
        self.s = settings
        self.specs = specs
        self.info = dialect_info(settings.dialect)
        self.catalog = load_catalog(settings.pass_files, builtin=self.info.catalog)
        self.violable = self.violable_ops() if settings.mode == "disruptive" else []
        self.progress = progress
        fixed = {k: v for k, v in asdict(settings).items() if k in FIXED_SETTINGS}
        self.out, state = OutDir.open(settings.out, {**asdict(settings), **fixed})
        self.resumed = state is not None
        self.coverage = Coverage()
        self.gen_rng = np.random.default_rng(settings.seed)
        self.gen_stats = GenStats()
        self.counters = Counters()
        self.next_index = 0
        self.queue: list[Case] = []
        self.disruptive: dict[str, dict[str, int]] = {}  # class -> stage -> count
        self.aliases: dict[str, str] = {}  # pass-order signatures -> their minimal sequence's
        self.ir_features: dict[str, int] = {}
        self.mutators_used: dict[str, int] = {}
        self._mutators: dict[int, list[str]] = {}  # case -> mutators its mutant went through
        self.own_bugs: dict[str, Finding] = {}
        self.findings: dict[str, Finding] = {}
        self.unconfirmed: dict[str, Finding] = {}
        self.disagreements: dict[str, Finding] = {}
        self.tables = {"findings": self.findings, "unconfirmed": self.unconfirmed,
                       "spec-disagreements": self.disagreements}
        self.lock = threading.RLock()  # the tables, aliases and screen, shared with reduction threads
        if state:
            self._restore(state)
        for folder, table in self.tables.items():
            for d in self.out.saved_findings(folder):
                table[d["signature"]] = Finding(**d)
        self.reductions = Reductions(self)
        self.reductions.restore({sig for table in self.tables.values() for sig in table})
        self.pool = Pool(settings.jobs, self.out / "workers", settings.max_memory_mb,
                         settings.recycle_after, settings.tvm_python, settings.tvm_env, settings.dialect)
        self.in_flight: dict[int, Case] = {}
        self.started = time.monotonic()
        self.last_checkpoint = self.last_summary = 0.0
        self.stopping = False
        self.bar = None

    # --- resuming -------------------------------------------------------------------------

    def _restore(self, state: dict):
        self.coverage = Coverage.from_json(state.get("coverage", {}))
        self.gen_rng.bit_generator.state = state["rng"]
        self.counters = Counters.restore(state.get("counters", {}))
        self.gen_stats = GenStats(**state.get("gen_stats", {}))
        self.next_index = state["next_index"]
        # cases generated before the kill but never judged run first, unchanged
        self.queue = [self.make_case(c["index"], Graph.from_json(c["graph"]), c.get("disruption"),
                                     lowering=c.get("lowering")) for c in state.get("in_flight", [])]

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
        pending = sorted(list(self.in_flight.values()) + self.queue, key=lambda c: c.index)
        counters = asdict(self.counters)
        counters["elapsed_s"] = self.elapsed()
        state = {"next_index": self.next_index, "rng": self.gen_rng.bit_generator.state,
                 "counters": counters, "gen_stats": asdict(self.gen_stats),
                 "in_flight": [{"index": c.index, "graph": c.graph.to_json(), "disruption": c.disruption,
                                "lowering": c.lowering} for c in pending]}
        self.out.checkpoint(state, self.coverage.to_json())

    def elapsed(self) -> float:
        return self.counters.elapsed_s + (time.monotonic() - self.started)

    # --- cases ----------------------------------------------------------------------------

    def make_case(self, index: int, graph: Graph | None = None, disruption: dict | None = None,
                  configs: list | None = None, lowering: dict | None = None) -> Case:
        if self.s.mode == "disruptive":
            return self.make_disruptive_case(index, graph, disruption)
        t0 = time.perf_counter()
        if graph is None:
            graph = generate_graph(self.specs, self.gen_rng, self.s.ops, self.coverage, guided=self.s.guided,
                                   ops=self.s.only_ops, dtypes=self.s.dtypes, stats=self.gen_stats)
        gen_ms = (time.perf_counter() - t0) * 1000
        # inputs have their own stream per case, so the graphs depend on the seed alone
        chosen = choose_inputs(graph, self.specs, self.case_rng(index, Stream.INPUTS))
        inputs = [chosen.values[n.id] for n in graph.variables]
        expected = [chosen.facts[r] for r in graph.results()]
        lowering = lowering if lowering is not None else self.case_lowering(graph, index)
        case = Case(index, graph, inputs, chosen.runnable, expected, gen_ms, chosen.reason,
                    configs=configs if configs is not None else self.case_configs(index, lowering),
                    lowering=lowering)
        case.request = {"case": index, "graph": graph.to_json(), "calls": call_records(graph, self.specs),
                        "configs": case.configs,
                        "run": chosen.runnable, "inputs": [encode_array(a) for a in inputs], **lowering}
        _plant(case.request, index)
        return case

    def case_rng(self, index: int, stream: "Stream") -> np.random.Generator:
        """Case `index`'s own random stream for one purpose: what one purpose draws never
        shifts another's (or the graph stream's), so a change to, say, pass drawing leaves
        a seed's graphs and inputs as they were."""
        key = [self.s.seed, index] if stream is Stream.INPUTS else [self.s.seed, index, int(stream)]
        return np.random.default_rng(key)

    def case_lowering(self, graph: Graph, index: int) -> dict:
        """How the case is lowered (a plan of functions and features) and mutated (a seed)."""
        lowering = {}
        if self.s.features:
            plan = plan_lowering(graph, self.case_rng(index, Stream.PLAN), Knobs(**self.info.plan_knobs))
            lowering["plan"] = plan.to_json()
        if self.s.mutations and self.info.mutators:
            lowering["mutation"] = {"seed": [self.s.seed, index, int(Stream.MUTATION)], "count": self.s.mutations}
        return lowering

    def case_configs(self, index: int, lowering: dict | None = None) -> list[dict]:
        """Baseline first (the VM on the first target), then a pass sequence, then the mutant,
        then the other executors and targets: the matrix one case goes through."""
        rng = self.case_rng(index, Stream.CONFIGS)
        base = self.info.baseline
        configs = [self.config(base, self.s.targets[0])]
        seq = self.s.pass_seq
        if seq is None and self.s.pass_fuzz:
            seq = draw_sequence(self.catalog, rng)
        if seq:
            levels = self.info.pass_opt_levels
            configs.append(self.config(base, self.s.targets[0], passes=seq,
                                       opt_level=levels[int(rng.integers(len(levels)))]))
        if lowering and lowering.get("mutation"):
            configs.append({**self.config(base, self.s.targets[0]), "module": 1})
        configs += [self.config(e, self.s.targets[0]) for e in self.s.executors if e != base]
        configs += [self.config(base, t) for t in self.s.targets[1:]]
        return configs

    def config(self, executor: str, target: str, **kw) -> dict:
        return make_config(executor, target, dialect=self.s.dialect, **kw)

    def make_disruptive_case(self, index: int, graph: Graph | None, disruption: dict | None) -> Case:
        """A valid graph (none for even cases: single-node, as HIRGen did) plus one violation."""
        t0 = time.perf_counter()
        if graph is None:
            n_ops = 1 if index % 2 == 0 else self.s.ops
            while True:
                try:
                    graph, violation = generate_violation(self.specs, self.gen_rng, n_ops,
                                                          self.coverage.sets["violation"], self.s.guided,
                                                          self.violable)
                    break
                except Rejected:
                    continue
            disruption = {"violation": violation.to_json(), "plan": violation_plan(violation, graph, self.specs)}
        inputs = draw_violation_inputs(graph, disruption["violation"], self.case_rng(index, Stream.INPUTS))
        gen_ms = (time.perf_counter() - t0) * 1000
        case = Case(index, graph, inputs, True, [], gen_ms, disruption=disruption,
                    configs=[self.config(self.info.baseline, self.s.targets[0])])
        case.request = {"case": index, "graph": graph.to_json(), "calls": call_records(graph, self.specs),
                        "configs": case.configs, "run": True,
                        "violation": disruption["plan"], "inputs": [encode_array(a) for a in inputs]}
        _plant(case.request, index)
        return case

    def violable_ops(self) -> list[str]:
        """The ops a violation may target: not the dialect's composites, whose reproducer
        would need hirfuzz to rebuild them."""
        names = self.s.only_ops or self.specs.names()
        prefix = self.info.composite_prefix
        ops = [n for n in names if not (prefix and self.specs.ops[n].dialect_op.startswith(prefix))]
        if not ops:
            raise HirfuzzError(f"disruptive mode: every selected op is a composite of several {self.s.dialect} "
                               f"ops ({', '.join(names)}); select at least one the dialect has as one op")
        return ops

    def next_case(self) -> Case | None:
        if self.queue:
            return self.queue.pop(0)
        if self.stopping or self.out_of_budget():
            return None
        t0 = time.perf_counter()
        case = self.make_case(self.next_index)
        self.counters.gen_s += time.perf_counter() - t0
        self.next_index += 1
        return case

    def out_of_budget(self) -> bool:
        if self.s.iterations is not None and self.next_index >= self.s.iterations:
            return True
        return self.s.time_s is not None and time.monotonic() - self.started >= self.s.time_s

    # --- the loop -------------------------------------------------------------------------

    def run(self) -> dict:
        try:
            self.pool.start()
        except WorkerError as exc:
            raise HirfuzzError(str(exc)) from None
        try:
            self.check_installation()
        except HirfuzzError:
            self.pool.close()
            raise
        self._open_bar()
        restore_sigint = self._catch_sigint()
        try:
            while self.step():
                self.save_progress()
        except KeyboardInterrupt:
            self.say("stopped: cases in flight will run again when this campaign resumes")
        finally:
            restore_sigint()
            self.reductions.halt(join_s=5.0)
            self.pool.close()
            if self.bar is not None:
                self.bar.close()
            self.checkpoint()
        if self.reductions.pending:
            self.say(f"{len(self.reductions.pending)} finding(s) not finished yet, kept in {self.out / PENDING}; "
                     "run the same command again to finish them")
        summary = self.write_summary()
        write_atomic(self.out / "report.md", campaign_report(self.out.path, summary))
        return summary

    def check_installation(self):
        """The workers' TVM can build for every target asked for, and is the TVM this
        campaign ran under before (a resume under another TVM would mix two compilers)."""
        hello = self.pool.installation
        where = f"{hello.get('python')} (TVM {hello.get('tvm')})"
        kinds = {t.split()[0].split("-")[0] for t in self.s.targets}
        missing = sorted(kinds - set(hello.get("targets", [])))
        if missing:
            raise HirfuzzError(f"{where} cannot build for {', '.join(missing)}: that TVM was built without it")
        self.out.record_installation({k: hello.get(k) for k in ("python", "tvm", "targets")})

    def step(self) -> bool:
        """Lend workers to reductions, hand out cases, judge answers; False once all is done."""
        fuzzing = not self.stopping and (bool(self.queue) or not self.out_of_budget())
        # reductions borrow idle workers: some while fuzzing goes on, all once it is over
        self.reductions.lend(self.pool, max(1, self.s.jobs // 2) if fuzzing else self.s.jobs)
        for worker in self.pool.idle():
            case = self.next_case()
            if case is None:
                break
            self.in_flight[case.index] = case
            worker.submit(case, case.request, self.s.timeout_s)
        if not self.pool.in_flight():
            if not self.reductions.active() and (self.stopping or not self.reductions.queue):
                return False
            self.reductions.wait(1.0)
            return True
        # a reduction that ends frees a worker: look again soon
        for _worker, case, answer in self.pool.wait(0.25 if self.reductions.active() else 1.0):
            self.in_flight.pop(case.index, None)
            self.judge(case, answer)
            self._tick()
        return True

    def _catch_sigint(self):
        """First Ctrl-C: finish the cases in flight; second: stop at once."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(signum, frame):
            if self.stopping:
                raise KeyboardInterrupt
            self.stopping = True
            self.reductions.stop.set()
            self.say(f"finishing {len(self.in_flight)} case(s) in flight (pending findings wait for the next run); "
                     "Ctrl-C again to stop now")
        previous = signal.signal(signal.SIGINT, handler)
        return lambda: signal.signal(signal.SIGINT, previous)

    # --- judging answers ------------------------------------------------------------------

    def classify(self, case: Case, answer) -> Outcome:
        """What an answer means; no side effects, so the reducer can use it too."""
        if case.disruption is not None:
            return self.classify_disruptive(case, answer)
        if isinstance(answer, Death):
            kind = "hang" if answer.reason == "timeout" else "crash"
            finding = Finding(kind=kind, oracle="crash", stage="worker",
                              signature=death_signature(answer.reason, answer.signal),
                              message=answer.describe(), detail=answer.log_tail, case=case.index,
                              extra={"signal": answer.signal or answer.reason, "config": case.configs[0]})
            return Outcome(answer.reason, finding, answer.log_tail)
        if answer["status"] == "error" and answer["stage"] in ("lower", "well_formed"):
            # TVM refused a program the specs call valid: a spec to fix (or a type inference
            # bug to look at by hand), never reported as a TVM crash
            outcome = self._judge_config(case, answer, case.configs[0], "crash")
            outcome.finding.kind = "spec-disagreement"
            return outcome
        base = self._judge_config(case, answer, case.configs[0], "reference")
        if base.finding is not None or answer["status"] == "error":
            return base
        for config, other in zip(case.configs[1:], answer.get("others", [])):
            if other["status"] == "skipped":  # the mutator failed (hirfuzz's own bug), or the
                continue                      # executor cannot take the program by design
            oracle = "mutation" if config.get("module") else "pass-order" if config["passes"] else "executor"
            outcome = self._judge_config(case, other, config, oracle)
            if outcome.finding is not None:
                return Outcome(base.status, outcome.finding, outcome.log)  # the baseline's status counts
        return base

    def _judge_config(self, case: Case, reply: dict, config: dict, oracle: str) -> Outcome:
        """One configuration's reply: a crash, a result that differs from the reference, or fine.

        The baseline's crashes are the crash oracle's; a configuration that fails or differs
        while the baseline did not is the pass-order oracle's (it ran a pass sequence) or
        the executor oracle's (another executor or target).
        """
        label = "" if oracle in ("crash", "reference") else f" under {describe_config(config, with_passes=False)}"
        if reply["status"] == "error":
            stage, exc_type = reply["stage"], reply["exc_type"]
            said = error_line(exc_type, reply["message"])
            oracle = "crash" if oracle == "reference" else oracle
            prefix = "" if oracle == "crash" else f"{oracle}|"
            finding = Finding(kind="crash", oracle=oracle, stage=stage,
                              signature=prefix + crash_signature(stage, exc_type, reply["message"], reply["traceback"]),
                              message=f"{said[:320]}{label}", detail=reply["traceback"],
                              case=case.index, extra={"exc_type": exc_type, "config": config})
            return Outcome(f"error:{stage}", finding, reply["traceback"])
        if not case.runnable:
            return Outcome("built")
        outputs = [decode_array(a) for a in reply["outputs"]]
        if oracle == "mutation":
            outputs = outputs[:len(case.expected)]  # expose_output appends results at the end
        mismatches = compare_results(case.expected, outputs)
        if not mismatches:
            return Outcome("ok" if any(f.stable for f in case.expected) else "ran")
        first = mismatches[0]
        results = case.graph.results()
        node = case.graph.nodes[results[first.index].node] if 0 <= first.index < len(results) else None
        where = f"{node.op}:{node.dtype}" if node is not None else "arity"
        # a pass sequence's wrong results are one bug per (minimal) sequence, whichever
        # result shows it; another executor's or target's, one per operator and dtype
        if oracle == "pass-order":
            key = f"{config['name']}:{config['target']}|{','.join(step['name'] for step in config['passes'])}"
        else:
            key = (config["target"] if oracle == "reference" else f"{config['name']}:{config['target']}") + f"|{where}"
        if oracle == "mutation":
            # the mutant is meant to equal the original, which agreed with the reference:
            # hirfuzz's mutator, not TVM, is the first suspect (issue policy); logged apart
            return Outcome("mismatch", Finding(
                kind="mutant-disagreement", oracle="mutation", stage="run",
                signature=f"mutant-disagreement|{','.join(self._mutators.get(case.index, []))}|{where}",
                message=f"the mutant's result {first.index} ({where}) differs from the reference: {first.detail}",
                detail="\n".join(f"result {m.index}: {m.detail}" for m in mismatches),
                case=case.index, extra={"config": config}))
        finding = Finding(kind="wrong-result", oracle=oracle, stage="run",
                          signature=f"wrong-result|{oracle}|{key}",
                          message=f"result {first.index} ({where}) differs from the NumPy reference{label}: "
                                  f"{first.detail}",
                          detail="\n".join(f"result {m.index}: {m.detail}" for m in mismatches),
                          case=case.index, extra={"config": config})
        return Outcome("mismatch", finding)

    def classify_disruptive(self, case: Case, answer) -> Outcome:
        v = case.disruption["violation"]
        cls, stage = classify_violation(answer, v)
        status = f"{cls}:{stage}"
        if cls == "clean-rejection":
            return Outcome(status)
        what = f"{v['kind']} on {v['op']} ({v['detail']})"
        if isinstance(answer, Death):
            sig = death_signature(answer.reason, answer.signal)
            message, detail, extra = answer.describe(), answer.log_tail, {"signal": answer.signal or answer.reason}
        elif cls == "poor-diagnostic":
            sig = crash_signature(stage, answer["exc_type"], answer["message"], answer["traceback"])
            said = error_line(answer["exc_type"], answer["message"])
            message = said[:270]
            detail, extra = answer["traceback"], {"exc_type": answer["exc_type"]}
        else:  # silent acceptance: nothing to key on but what was broken
            sig = f"{v['op']}|{v['kind']}"
            message = f"accepted and ran: {what}"
            note = self.specs.ops[v["op"]].note if v["op"] in self.specs.ops else ""
            detail, extra = (f"the spec's note on {v['op']}: {note}" if note else ""), {}
        extra["violation"] = v
        kind = "hang" if isinstance(answer, Death) and answer.reason == "timeout" else cls
        finding = Finding(kind=kind, oracle="disruptive", stage=stage, signature=f"{cls}|{sig}",
                          message=f"{message} [{what}]" if cls != "silent-acceptance" else message,
                          detail=detail, case=case.index, extra=extra)
        return Outcome(status, finding, detail)

    def judge(self, case: Case, answer):
        if isinstance(answer, dict):
            self._count_features(case, answer)
        outcome = self.classify(case, answer)
        c = self.counters
        c.cases += 1
        if isinstance(answer, dict):
            c.tvm_s += sum(sum(r.get("timings", {}).values()) for r in [answer] + answer.get("others", []))
            c.max_rss_kb = max(c.max_rss_kb, answer.get("rss_kb", 0))
            for config, reply in zip(case.configs, [answer] + answer.get("others", [])):
                if reply.get("status") == "skipped" and reply.get("reason"):
                    c.skipped[config["name"]] = c.skipped.get(config["name"], 0) + 1
        status = outcome.status
        if case.disruption is not None:
            cls, stage = status.split(":", 1)
            table = self.disruptive.setdefault(cls, {})
            table[stage] = table.get(stage, 0) + 1
        stage = status.split(":", 1)[1] if status.startswith("error:") else None
        c.valid += status in ("ok", "ran", "built", "mismatch") or stage in ("build", "run")
        c.built += status in ("ok", "ran", "built", "mismatch") or stage == "run"
        c.ran += status in ("ok", "ran", "mismatch")
        c.compared += status == "ok" or (status == "mismatch")
        c.not_run += status == "built"
        if isinstance(answer, dict) and answer.get("mutation_error"):
            self.hirfuzz_bug(case, Finding(kind="mutator-error", oracle="mutation", stage="mutate",
                                           signature=f"mutator-error|{normalize_message(answer['mutation_error'])}",
                                           message=answer["mutation_error"][:300], case=case.index))
        if outcome.finding is not None and outcome.finding.kind == "mutant-disagreement":
            self.hirfuzz_bug(case, outcome.finding)
        elif outcome.finding is not None:
            if outcome.finding.kind == "spec-disagreement":
                c.spec_disagreements += 1
                self.keep("spec-disagreements", case, outcome.finding, outcome.log)
            else:
                c.findings_hits += 1
                self.record(case, outcome.finding, outcome.log)
        with open(self.out / "stats.jsonl", "a") as f:
            f.write(json.dumps({
                "case": case.index, "t": round(self.elapsed(), 3), "status": status,
                "gen_ms": round(case.gen_ms, 3), "findings": len(self.findings),
                "pending": len(self.reductions.pending),
                "out_of_domain": case.out_of_domain or None, "coverage": self.coverage.counts()}) + "\n")

    # --- findings -------------------------------------------------------------------------

    def _count_features(self, case: Case, answer: dict):
        """IR-feature coverage: which lowering features and mutators each case used."""
        if case.lowering.get("plan"):
            for name in LoweringPlan.from_json(case.lowering["plan"]).features_used():
                self.ir_features[name] = self.ir_features.get(name, 0) + 1
        self._mutators[case.index] = answer.get("mutators", [])
        for name in answer.get("mutators", []):
            self.mutators_used[name] = self.mutators_used.get(name, 0) + 1

    def hirfuzz_bug(self, case: Case, finding: Finding):
        """A problem of hirfuzz's own (a mutator that fails or changes results): kept apart."""
        self.counters.hirfuzz_bugs += 1
        known = self.own_bugs.get(finding.signature)
        if known is not None:
            known.hits += 1
            return
        name = f"{len(self.own_bugs) + 1:04d}-{finding.kind}-{short_id(finding.signature)}"
        finding.path = str(self.out / "hirfuzz-bugs" / name)
        case_json = {"case": case.index, "seed": self.s.seed, "graph": case.graph.to_json(),
                     "lowering": case.lowering, "configs": case.configs}
        save_folder(self.out / "hirfuzz-bugs", name, finding_files(finding, case_json, "", finding.detail))
        self.own_bugs[finding.signature] = finding
        self.say(f"hirfuzz's own bug (not reported as a TVM finding) {name}: {finding.message[:160]}")

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
            waiting = self.reductions.pending.get(finding.signature)
            known = self.tables[folder].get(finding.signature) or (waiting.finding if waiting else None)
            if known is not None:
                known.hits += 1
                return
            self.reductions.submit(folder, case, finding, log)
            self.say(f"new {finding.kind} (case {case.index}): {finding.message[:160]}\n"
                     f"    reducing and checking its reproducer; kept meanwhile in {PENDING}/")

    def rewrite_finding_json(self, finding: Finding):
        folder = Path(finding.path)
        if folder.is_dir():
            write_atomic(folder / "finding.json", json.dumps(finding.to_json(), indent=2) + "\n")

    # --- reporting ------------------------------------------------------------------------

    def summary(self) -> dict:
        c = self.counters
        elapsed = self.elapsed()
        # the workers' capacity is --jobs times the wall time; TVM's part of it is building
        # and running cases, starting workers (importing TVM, all at once at first),
        # reducing and re-running reproducers. The rest, hirfuzz's own share, includes any
        # time a worker waited for work.
        pool = self.pool
        in_tvm = c.tvm_s + pool.startup_worker_s + c.verify_s + c.reduce_s
        capacity = len(pool.workers) * elapsed
        with self.lock:
            tables = {name: [self._finding_row(f) for f in table.values()] for name, table in self.tables.items()}
            pending = [self._finding_row(job.finding) for job in self.reductions.pending.values()]
        return {
            "hirfuzz": __version__, "tvm": self.pool.tvm_version, "dialect": self.s.dialect, "mode": self.s.mode,
            "seed": self.s.seed, "targets": self.s.targets, "executors": self.s.executors, "ops_per_graph": self.s.ops,
            "coverage_guided": self.s.guided, "jobs": self.s.jobs, "resumed": self.resumed,
            "cases": c.cases, "valid": c.valid, "built": c.built, "ran": c.ran, "compared": c.compared,
            "not_run": c.not_run, "skipped_by_design": dict(sorted(c.skipped.items())),
            "elapsed_s": round(elapsed, 3),
            "time_in_tvm_s": round(in_tvm, 3), "time_building_running_s": round(c.tvm_s, 3),
            "time_starting_workers_s": round(self.pool.startup_s, 3),
            "time_verifying_reproducers_s": round(c.verify_s, 3), "time_reducing_s": round(c.reduce_s, 3),
            "generation_s": round(c.gen_s, 3),
            "overhead_share": round(max(0.0, 1 - in_tvm / capacity), 4) if capacity > 0 else 0.0,
            "worker_busy_share": round(pool.busy_s / (len(pool.workers) * max(1e-9, time.monotonic() - self.started)), 4),
            "worker_restarts": self.pool.restarts, "worker_recycles": self.pool.recycles,
            "worker_max_rss_mb": round(c.max_rss_kb / 1024, 1),
            "coverage": self.coverage.counts(),
            "generation": asdict(self.gen_stats),
            "findings": tables["findings"],
            "finding_hits": c.findings_hits,
            "pending": pending,
            "unconfirmed": tables["unconfirmed"],
            "spec_disagreements": tables["spec-disagreements"],
            "disruptive": self._disruptive_summary(),
            "ir_features": dict(sorted(self.ir_features.items())),
            "mutators": dict(sorted(self.mutators_used.items())),
            "hirfuzz_bugs": [self._finding_row(f) for f in self.own_bugs.values()],
        }

    def _disruptive_summary(self) -> dict | None:
        if self.s.mode != "disruptive":
            return None
        classes = {cls: sum(self.disruptive.get(cls, {}).values()) for cls in CLASSES}
        stages: dict[str, int] = {}
        for table in self.disruptive.values():
            for stage, n in table.items():
                stages[stage] = stages.get(stage, 0) + n
        return {"classes": classes, "by_class_and_stage": self.disruptive, "by_stage": stages,
                "violation_coverage": len(self.coverage.sets["violation"])}

    @staticmethod
    def _finding_row(f: Finding) -> dict:
        return {"signature": f.signature, "kind": f.kind, "oracle": f.oracle, "stage": f.stage,
                "path": f.path, "hits": f.hits, "message": f.message, "ops": f.extra.get("ops"),
                "reduced_from": f.extra.get("reduced_from"), "reason": f.extra.get("unconfirmed_reason")}

    def write_summary(self) -> dict:
        data = self.summary()
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


def _plant(request: dict, index: int):
    """Test-only crashes, so tests can kill workers without a TVM bug:

    HIRFUZZ_TEST_CRASH="3:segfault,5:hang" makes cases 3 and 5 kill their worker (segfault,
    abort, hang or oom); HIRFUZZ_TEST_CRASH_EDGE="abs>exp" aborts every case, reduction
    runs included, whose graph feeds an abs straight into an exp.
    """
    for item in filter(None, os.environ.get("HIRFUZZ_TEST_CRASH", "").split(",")):
        at, how = item.split(":")
        if int(at) == index:
            request.update({"kind": "test-crash", "how": how})
    edge = os.environ.get("HIRFUZZ_TEST_CRASH_EDGE")
    if edge:
        request["crash_if_edge"] = edge.split(">")


def format_summary(data: dict, out: str) -> str:
    cov = data["coverage"]
    d = data.get("disruptive")
    what = (", ".join(f"{n} {c}" for c, n in d["classes"].items()) + f"; violation coverage {d['violation_coverage']}"
            if d else f"{data['valid']} well-formed, {data['built']} built, {data['compared']} compared with the reference")
    lines = [
        f"hirfuzz {data['mode']}: {data['cases']} cases in {data['elapsed_s']:.1f}s ({what})",
        f"coverage: op-dtype {cov['op_dtype']}, op-shape {cov['op_shape']}, op-edge {cov['op_edge']}, "
        f"op-path {cov['op_path']}",
        f"time in TVM {data['time_in_tvm_s']:.1f}s over {data['jobs']} worker(s); hirfuzz's own share of "
        f"wall time {100 * data['overhead_share']:.1f}%",
        f"findings: {len(data['findings'])} distinct ({data['finding_hits']} hits)",
    ]
    for f in data["findings"]:
        size = f" [{f['reduced_from']} -> {f['ops']} ops]" if f.get("reduced_from") else ""
        lines.append(f"  [{f['kind']}] x{f['hits']}{size} {f['message'][:150]}")
        lines.append(f"      {f['path']}/repro.py")
    if data["pending"]:
        lines.append(f"pending (found, not reduced and checked yet; finished on resume): {len(data['pending'])}, "
                     f"see {out}/pending/")
    if data["unconfirmed"]:
        lines.append(f"unconfirmed (hirfuzz's problem, not TVM's): {len(data['unconfirmed'])}")
        for f in data["unconfirmed"]:
            lines.append(f"  {f['message'][:100]}\n      {f.get('reason') or ''}\n      {f['path']}")
    if data["spec_disagreements"]:
        lines.append(f"spec disagreements (TVM rejected a program the specs call valid): "
                     f"{len(data['spec_disagreements'])}, see {out}/spec-disagreements/")
    lines.append(f"report: {os.path.join(out, 'report.md')}")
    return "\n".join(lines)
