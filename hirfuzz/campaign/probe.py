"""Probing the passes a campaign fuzzes, before it fuzzes (the programs: core.probe).

A campaign with a pinned sequence (--pass-seq) probes every pass of it; one that draws
sequences probes a small sample of the catalog (SAMPLED_PASSES passes, each op once, in
its variable form), for report.md alone. The programs go to the campaign's workers in
batches (a worker that dies on a batch has it split until the program that kills it is
alone: that program "raised"); for a pinned sequence, the fan-out programs it acted on are
split into their edges, and a few changed programs are built and run, baseline against
the sequence, to see whether the change alters results. A probe keeps to a time budget
(DETAILED_BUDGET_S, at most a third of --time): a slow TVM (Relay: about 0.1 s a program)
gets through a random sample of the op programs, and the report says how many were left.

The probe map is saved as probe.json in --out, keyed on what decides it (the sequences,
the ops, and the text of each user pass module): a resume reuses it, and a changed pass
is probed again.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..core.calls import call_records
from ..core.passes import parse_sequence
from ..core.probe import (Direction, Outcome, PassProbe, Program, SiteKind, SiteResult, fanout_programs,
                          feature_programs, op_programs, pair_programs)
from ..protocol import make_config
from .oracles import Oracle
from .outdir import write_atomic
from .sandbox import Death

if TYPE_CHECKING:
    from ..core.passes import Catalog
    from ..core.spec import SpecSet
    from ..dialects import DialectInfo
    from .cases import CaseMaker
    from .outcome import Outcome as CaseOutcome
    from .outdir import OutDir
    from .settings import Settings

PROBE_FILE = "probe.json"
BATCH = 50                # programs per worker request
# a sampled probe's (report.md's alone): a batch sent just before its deadline runs to the end,
# and 50 Relay programs took 20-25 s of a loaded worker where the budget was 2 s a pass
SAMPLE_BATCH = 1
DETAILED_BUDGET_S = 60.0  # seconds a pinned sequence's probe may take (Relax needs about 5-15)
BUDGET_SHARE = 1 / 3      # of a --time budget, the most a probe may take
OP_SHARE = 0.7            # of which the op programs may take this share (the fan-outs the rest)
SAMPLE_BUDGET_S = 4.0     # seconds the sampled catalog passes' probes may take in all
SAMPLED_PASSES = 2        # catalog passes probed when sequences are drawn
MAX_PAIRS = 2000          # edges split out of the fan-outs a pass acted on
RESULT_CHECKS = 16        # changed programs built and run to see whether results change
PROBE_CASE_INDEX = 10**9  # case indices of those runs: apart from the campaign's own
PROBE_STREAM = 7          # the probe's random stream: [seed, PROBE_STREAM], apart from the graphs'


@dataclass(frozen=True)
class ProbeContext:
    """What probing needs of a campaign, and all it gets."""
    settings: "Settings"  # the mode, the passes (pinned or drawn), ops, dtypes, targets, time budget
    specs: "SpecSet"
    info: "DialectInfo"   # the baseline executor, the opt levels and the lowering features it lacks
    catalog: "Catalog"    # what a drawn sequence's sample is taken from
    out: "OutDir"         # probe.json is saved there
    pool: object          # the campaign's workers (sandbox.Pool or raypool.RayPool), idle
    maker: "CaseMaker"    # makes the cases that check whether a change alters results
    classify: Callable[..., "CaseOutcome"]  # judges them (Judge.classify)
    say: Callable[[str], None]


def sequences_to_probe(s: "Settings", catalog: "Catalog", rng) -> list[list[dict]]:
    """The pinned sequence, or a sample of the catalog's passes that need nothing before them."""
    if s.mode != "strict":
        return []
    if s.pass_seq:
        return [s.pass_seq]
    if not s.pass_fuzz:
        return []
    alone = sorted(e.name for e in catalog.drawable() if not e.requires)
    picked = rng.choice(len(alone), size=min(SAMPLED_PASSES, len(alone)), replace=False) if alone else []
    return [parse_sequence(alone[int(i)], catalog) for i in sorted(picked)]


def probe_key(sequences: list[list[dict]], ops: list[str], dtypes) -> str:
    """What decides a probe map: a change to any of it calls for a new probe."""
    sources = {}
    for step in (step for seq in sequences for step in seq):
        if step.get("import") and step.get("search_dir"):
            module = step["import"].split(":")[0].replace(".", "/")
            for path in (Path(step["search_dir"]) / f"{module}.py", Path(step["search_dir"]) / module / "__init__.py"):
                if path.is_file():
                    sources[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    text = json.dumps({"sequences": sequences, "ops": ops, "dtypes": dtypes, "sources": sources}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class Prober:
    """Runs a campaign's probes on its idle workers."""

    def __init__(self, context: ProbeContext):
        self.context = context
        self.settings = context.settings
        self.rng = np.random.default_rng([context.settings.seed, PROBE_STREAM])
        self.ops = context.settings.only_ops or context.specs.names()

    def probes(self) -> list[PassProbe]:
        """The probe map: reused from probe.json when nothing it depends on changed."""
        sequences = sequences_to_probe(self.settings, self.context.catalog, self.rng)
        if not sequences:
            return []
        key = probe_key(sequences, self.ops, self.settings.dtypes)
        path = self.context.out / PROBE_FILE
        if path.is_file():
            saved = json.loads(path.read_text())
            if saved.get("key") == key:
                return [PassProbe.from_json(p) for p in saved["probes"]]
            self.context.say("the passes or ops changed since the last probe: probing again")
        probes = [self.probe(seq, detailed=bool(self.settings.pass_seq)) for seq in sequences]
        write_atomic(path, json.dumps({"key": key, "probes": [p.to_json() for p in probes]}) + "\n")
        return probes

    def probe(self, seq: list[dict], detailed: bool) -> PassProbe:
        """One sequence: the IR features, every op site (in every form when `detailed`),
        then the edges, then whether a few changes alter results; within a time budget
        (a slow TVM, Relay's, gets through a sample: op programs are probed in a random order)."""
        t0 = time.monotonic()
        budget = DETAILED_BUDGET_S if detailed else SAMPLE_BUDGET_S / SAMPLED_PASSES
        if self.settings.time_s is not None:  # a short campaign keeps most of its time for fuzzing
            budget = min(budget, self.settings.time_s * BUDGET_SHARE)
        specs, dtypes = self.context.specs, self.settings.dtypes
        config = make_config(self.context.info.baseline, self.context.maker.targets[0], passes=seq,
                             opt_level=max(self.context.info.pass_opt_levels), dialect=self.settings.dialect)
        probe = PassProbe([step["name"] for step in seq])
        if not detailed:
            programs = op_programs(specs, self.ops, self.rng, dtypes, forms=False)
            programs = [p for p in programs if p.site.dtype == specs.ops[p.site.op].dtypes[0]]
            done, probe.unprobed = self.run(self.shuffled(programs), config, t0 + budget, batch=SAMPLE_BATCH)
            probe.results = [r for _, r in done]
            probe.seconds = time.monotonic() - t0
            return probe
        results, unprobed = self.run(feature_programs(specs, self.ops, self.rng, self.lacking(), dtypes), config,
                                     t0 + budget)
        done, left = self.run(self.shuffled(op_programs(specs, self.ops, self.rng, dtypes)), config,
                              t0 + OP_SHARE * budget)
        results, unprobed = results + done, unprobed + left
        # edges among the ops the pass left alone on their own: what else acts is a pair
        alone = sorted(set(self.ops) - {r.site.op for _, r in results if r.site.kind is SiteKind.OP
                                         and r.strongest.acted})
        fanouts, left = self.run(fanout_programs(specs, alone, self.rng, dtypes), config, t0 + budget)
        pairs = [pair for program, r in fanouts if r.strongest.acted
                 for pair in pair_programs(specs, program, self.rng)][:MAX_PAIRS]
        done, more = self.run(pairs, config, t0 + budget)
        results += fanouts + done
        probe.unprobed = unprobed + left + more
        self.check_results(results, seq)
        probe.results = [r for _, r in results]
        probe.seconds = time.monotonic() - t0
        skipped = f" ({probe.unprobed} left out for time)" if probe.unprobed else ""
        self.context.say(f"probed {', '.join(probe.passes)} on {len(probe.results)} programs{skipped} in "
                         f"{probe.seconds:.1f} s: acted on {sum(1 for r in probe.results if r.strongest.acted)}")
        return probe

    def shuffled(self, programs: list[Program]) -> list[Program]:
        return [programs[int(i)] for i in self.rng.permutation(len(programs))]

    def lacking(self) -> dict:
        return {k: v for k, v in self.context.info.plan_knobs.items() if not v}

    # --- the workers --------------------------------------------------------------------------

    def run(self, programs: list[Program], config: dict, deadline: float, batch: int = BATCH) -> tuple[list, int]:
        """(program, its SiteResult) for each program probed, from batches (of `batch`
        programs) spread over the idle workers, none sent after `deadline`; and how many
        were left out for time."""
        replies: dict[int, dict] = {}
        queue = [list(range(i, min(i + batch, len(programs)))) for i in range(0, len(programs), batch)]
        pool = self.context.pool
        while (queue and time.monotonic() < deadline) or pool.in_flight():
            for worker in pool.idle(self.settings.dialect):
                if not queue or time.monotonic() >= deadline:
                    break
                batch = queue.pop(0)
                request = {"kind": "probe", "config": config, "programs": [self.request(programs[i]) for i in batch]}
                worker.submit(batch, request, self.settings.timeout_s * max(1, len(batch) // 10))
            for _worker, batch, answer in pool.wait(1.0):
                if isinstance(answer, Death):
                    queue += self.split(batch, answer, replies, len(config["passes"]))
                    continue
                replies.update(zip(batch, answer["results"]))
        done = [(programs[i], SiteResult(programs[i].site, [Outcome(o) for o in r["outcomes"]], r["detail"]))
                for i, r in sorted(replies.items())]
        return done, len(programs) - len(done)

    @staticmethod
    def split(batch: list[int], death: Death, replies: dict, steps: int) -> list[list[int]]:
        """A batch that killed its worker: halves to run again, or the one program that did."""
        if len(batch) > 1:
            return [batch[:len(batch) // 2], batch[len(batch) // 2:]]
        replies[batch[0]] = {"outcomes": ["raised"] + ["not run"] * (steps - 1),
                             "detail": f"the worker died: {death.describe()}"}
        return []

    def request(self, program: Program) -> dict:
        return {"graph": program.graph.to_json(), "calls": call_records(program.graph, self.context.specs),
                "plan": program.plan}

    # --- results ------------------------------------------------------------------------------

    def check_results(self, results: list[tuple[Program, SiteResult]], seq: list[dict]):
        """Build and run a few changed programs, one per pattern, baseline against the sequence:
        a pass-order finding there marks the site ALTERED (at the last pass that changed it)."""
        chosen, seen = [], set()
        for program, result in results:
            pattern = (program.site.kind, program.site.op, program.site.parent, program.site.form)
            if result.strongest is Outcome.CHANGED and program.site.kind is not SiteKind.FANOUT \
                    and pattern not in seen and len(chosen) < RESULT_CHECKS:
                seen.add(pattern)
                chosen.append((program, result))
        maker, base, target = self.context.maker, self.context.info.baseline, self.context.maker.targets[0]
        configs = [maker.config(base, target, Oracle.REFERENCE),
                   maker.config(base, target, Oracle.PASS_ORDER, passes=seq,
                                opt_level=max(self.context.info.pass_opt_levels))]
        worker = self.context.pool.idle(self.settings.dialect)[0]
        for i, (program, result) in enumerate(chosen):
            lowering = {"plan": program.plan} if program.plan else {}
            case = maker.make_case(PROBE_CASE_INDEX + i, program.graph, configs=configs, lowering=lowering)
            if not case.runnable:
                continue
            outcome = self.context.classify(case, worker.run_one(case.request, self.settings.timeout_s))
            finding = outcome.finding
            if finding is not None and finding.oracle == Oracle.PASS_ORDER:
                last = max(j for j, o in enumerate(result.outcomes) if o is Outcome.CHANGED)
                result.outcomes[last] = Outcome.ALTERED
                result.detail = finding.message[:300]


def direction_of(probes: list[PassProbe]) -> Direction | None:
    """What generation is steered by: the sites any probed pass acted on (None: nothing)."""
    direction = Direction.merged([p.direction() for p in probes])
    return None if direction.empty else direction
