"""A campaign's test cases: what a case is, and how each is made from the seed.

`CaseMaker` holds what making a case needs: the settings, the op specs, what the
coordinator knows of the dialect, the pass catalog, and the generation state a checkpoint
saves (coverage, generation statistics). A case is drawn from its own named random streams
(`Stream`): its graph, its inputs, its lowering plan and mutation seed, and its
configurations; its graph is generated against the coverage of the cases a fixed lag
before it (campaign.coverage_ledger). So a seed fixes every case whatever the number of
workers and of case makers (campaign.makers), and a case can be made again from its graph
alone (resuming, reducing).

A campaign's targets shape its cases: the graphs hold no op instance one of them is known
not to build (the op specs' `targets:`), and the lowering plans none of the features one of
them cannot lower (hirfuzz/targets.yaml), each drawn as an llvm-only campaign draws it and
what was left out counted in the generation statistics.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

import numpy as np

from ..core.calls import call_records
from ..core.coverage import Coverage, layered
from ..core.generate import AvoidedOp, GenStats, Rejected, drawable, generate_graph
from ..core.graph import Graph
from ..core.inputs import choose_inputs
from ..core.plan import Knobs, LoweringPlan, plan_lowering
from ..core.targets import load_target_limits, resolve_target, target_kinds
from ..core.violations import draw_inputs as draw_violation_inputs, generate_violation, violation_plan
from ..errors import HirfuzzError
from ..protocol import CHECK_ONLY, encode_array, lowered_only, make_config
from .avoidance import AvoidanceSchedule, PlanForm, without_forms
from .coverage_ledger import CoverageLedger
from .oracles import ORACLE_FIELD, ORACLES, Oracle
from .oracles.gradient import GRADIENT_DTYPE, OUTSIDE_CONTRACT, why_not_differentiable

if TYPE_CHECKING:
    from .settings import Settings


@dataclass
class Case:
    index: int
    graph: Graph
    inputs: list[np.ndarray]
    runnable: bool            # False: an input may trap (integer division by zero)
    expected: list            # TensorFacts per result of main
    gen_ms: float
    out_of_domain: str = ""   # the first domain violation, whose results are not compared
    unmet_op: str = ""        # the op whose domain the input search could not keep ("" if none)
    disruption: dict | None = None  # disruptive mode: the violation and its plan
    configs: list = field(default_factory=list)  # the first is the baseline
    lowering: dict = field(default_factory=dict)  # {"plan": LoweringPlan JSON, "mutation": {...}}
    request: dict = field(default_factory=dict)
    cross: "Case | None" = None  # a cross-IR campaign's half of it in the second IR (campaign.cross)
    timings: dict = field(default_factory=dict)  # seconds making it: generate, inputs, prepare
    new_coverage: int = 0     # coverage keys its generation added (campaign.followups reads it)
    # a follow-up mutant's: configuration position -> its original's reply to that same
    # configuration, which the worker is not asked to build again (campaign.followups)
    given: dict = field(default_factory=dict)

    @property
    def comparable(self) -> bool:
        """Its inputs keep every op in its domain and never trap: none of its results is
        left uncompared for their sake (core.inputs.CaseInputs.comparable)."""
        return self.runnable and not self.out_of_domain


@dataclass
class Made:
    """A case as a case maker drew it, with what drawing it adds to the campaign's
    generation state: the coverage keys its graph added and its generation statistics."""
    case: Case
    coverage: Coverage
    stats: "GenStats"


P_UNDIRECTED = 0.25  # cases of a pass-directed campaign generated without direction
# cases drawn in a catalog pass's documented input dtypes (CaseMaker.contract_dtypes):
# ToMixedPrecision is in a few per cent of drawn sequences, so about one case in sixty has it
# judged (5 of 300 default Relax cases), where a mixed-dtype program never meets its contract
CONTRACT_SHARE = 0.2


class Stream(IntEnum):
    """A case's random streams (values fixed: a seed must give the same campaign across
    versions)."""
    INPUTS = 0      # input values (the key is [seed, index], for older campaigns' sake)
    CONFIGS = 2     # the pass sequence and opt level drawn for the case
    PLAN = 3        # the lowering plan: functions, closures, IR features
    MUTATION = 4    # the mutators a worker applies
    DIRECTION = 5   # whether a pass-directed campaign's case is directed (campaign.probe)
    GRAPH = 6       # its graph (and a disruptive case's violation)
    PASS_CHECKS = 7  # its check-only pass sequences (--pass-checks)
    GRADIENT = 8    # whether it is a gradient case (--gradients)
    CONTRACT = 9    # whether it is drawn in a pass's documented input dtypes (contract_dtypes)
    AUTODIFF = 10   # which of the dialect's autodiffs a gradient case runs (add_gradient_config)


class CaseMaker:
    """Makes case `index` of a campaign: generated anew, or again from a graph kept on disk."""

    def __init__(self, settings: "Settings", specs, info, catalog, baseline_oracle: Oracle = Oracle.REFERENCE):
        self.s = settings
        self.specs = specs
        self.info = info          # the dialect as the coordinator knows it (dialects.DialectInfo)
        self.catalog = catalog    # the pass catalog sequences are drawn from
        # the oracle whose baseline a case starts with: a cross-IR campaign's second IR's is
        # the cross-IR oracle's (campaign.cross)
        self.baseline_oracle = baseline_oracle
        # the targets its configurations name: the settings' kinds until the workers have
        # said which GPU they see (name_targets)
        self.targets: list = list(settings.targets)
        self.violable = self.violable_ops() if settings.mode == "disruptive" else []
        self.target_kinds = target_kinds(settings.targets)
        # the plan features some target of the campaign cannot lower: stripped from every plan
        self.unlowerable = load_target_limits().features_unlowerable(self.target_kinds)
        # the generation state a checkpoint saves (see restore): coverage as the cases made
        # added it, and their generation statistics summed
        self.ledger = CoverageLedger()
        self.gen_stats = GenStats()
        # the constructs confirmed findings fail on alone, avoided from the case each took
        # effect at (campaign.avoidance); the checkpoint saves the schedule
        self.avoidance = AvoidanceSchedule(
            settings.avoid_found, self.target_kinds,
            lambda avoid: drawable(specs, settings.only_ops or specs.names(), settings.dtypes, self.target_kinds, avoid))
        # what a pass probe steers generation to (core.probe.Direction), in pinned-pass
        # campaigns; None: every case undirected
        self.direction = None
        # the terms of the dialect's autodiff, where gradient cases are drawn (--gradients)
        self.gradient_support = info.gradient_support() if settings.gradients > 0 else None
        self.differentiable = self.differentiable_ops()
        self.contract_avoided = self.gradient_contract_avoided()
        # the input dtypes passes of the catalog document (core.passes.input_contract_unmet):
        # a share of cases is drawn in them, where such a pass is judged (contract_dtypes)
        self.contracts = sorted({e.input_dtypes for e in self.sequence_passes() if e.input_dtypes})

    def name_targets(self, hello: dict):
        """Name the targets as the workers' handshake `hello` says they are: a cuda target
        with its GPU's architecture and limits (core.targets.resolve_target)."""
        self.targets = [resolve_target(t, hello) for t in self.s.targets]

    @property
    def coverage(self) -> Coverage:
        """The coverage of every case made so far."""
        return self.ledger.total

    def restore(self, state: dict):
        """Go on from a checkpoint: its coverage and generation statistics."""
        self.ledger.restore(state.get("coverage", {}), state.get("coverage_recent", []))
        self.gen_stats = GenStats(**state.get("gen_stats", {}))
        self.avoidance.restore(state.get("avoidances", []))

    def make_case(self, index: int, graph: Graph | None = None, disruption: dict | None = None,
                  configs: list | None = None, lowering: dict | None = None) -> Case:
        """Case `index`: drawn anew (no `graph`; cases are drawn in index order, as a
        campaign draws them) or made again from its graph."""
        if graph is None:
            made = self.draw_case(index, self.ledger.base_for(index), self.avoidance.avoided_at(index))
            self.absorb(index, made)
            return made.case
        return self._make(index, graph, disruption, configs, lowering, Coverage(), GenStats(), frozenset())

    def draw_case(self, index: int, base: Coverage, avoid: frozenset) -> Made:
        """Case `index` drawn anew against the coverage `base` (the ledger's for it), without
        what `avoid` holds (the avoidance schedule's: ops, plan forms): what a case maker does."""
        coverage, stats = layered(base), GenStats()
        case = self._make(index, None, None, None, None, coverage, stats, avoid)
        return Made(case, coverage, stats)

    def absorb(self, index: int, made: Made):
        """What drawing case `index` added: its coverage keys, its generation statistics."""
        self.ledger.merge(index, made.coverage)
        self.gen_stats.add(made.stats)

    def _make(self, index: int, graph: Graph | None, disruption: dict | None, configs: list | None,
              lowering: dict | None, coverage: Coverage, stats: GenStats, avoid: frozenset) -> Case:
        """Case `index`, its graph generated where none is given: against `coverage`, which it
        adds to, counted in `stats`."""
        if self.s.mode == "disruptive":
            return self.make_disruptive_case(index, graph, disruption, coverage)
        t0 = time.perf_counter()
        direction = None
        generated = graph is None
        gradient = self.gradient_case(index)
        if generated:
            direction = self.case_direction(index)
            n_ops, ops, dtypes = self.drawn_from(gradient, self.check_only(index))
            dtypes = dtypes if gradient else self.contract_dtypes(index, ops, avoid) or dtypes
            graph = generate_graph(self.specs, self.case_rng(index, Stream.GRAPH), n_ops, coverage,
                                   guided=self.s.guided, ops=ops, dtypes=dtypes, stats=stats,
                                   direction=direction, targets=self.target_kinds,
                                   avoid=avoided_in(avoid, gradient) | (self.contract_avoided if gradient else set()))
        gen_ms = (time.perf_counter() - t0) * 1000
        t_inputs = time.perf_counter()
        # inputs have their own stream per case, so the graphs depend on the seed alone (a
        # follow-up mutant made again, when resumed or reduced, has its original's: followups)
        streams = streams_index(index, lowering)
        chosen = choose_inputs(graph, self.specs, self.case_rng(streams, Stream.INPUTS))
        t_prepare = time.perf_counter()
        inputs = [chosen.values[n.id] for n in graph.variables]
        expected = [chosen.facts[r] for r in graph.results()]
        if lowering is None:
            # a case made again from its graph (resumed) was counted when it was generated
            lowering = self.case_lowering(graph, index, direction, stats if generated else None, avoid)
            if self.direction is not None:  # directed or not, what it exercises of the probe counts
                plan = lowering.get("plan")
                used = LoweringPlan.from_json(plan).features_used() if plan else []
                coverage.add(self.direction.exercised(graph, used))
        case = Case(index, graph, inputs, chosen.runnable, expected, gen_ms, chosen.reason, chosen.op,
                    configs=configs if configs is not None else self.case_configs(streams, lowering),
                    lowering=lowering, new_coverage=added_keys(coverage) if generated else 0)
        if gradient and configs is None:
            self.add_gradient_config(case, stats if generated else None)
        case.request = {"case": index, "graph": graph.to_json(), "calls": call_records(graph, self.specs),
                        "configs": case.configs,
                        "run": chosen.runnable, "inputs": [encode_array(a) for a in inputs], **lowering}
        _plant(case.request, index)
        case.timings = {"generate": gen_ms / 1000, "inputs": t_prepare - t_inputs,
                        "prepare": time.perf_counter() - t_prepare}
        return case

    def gradient_case(self, index: int) -> bool:
        """Whether case `index` is a gradient case (--gradients SHARE of a strict campaign of
        one IR whose TVM differentiates programs): its graph drawn from the ops the autodiff
        differentiates (`drawn_from`), and the gradient oracle's configuration added
        (`add_gradient_config`)."""
        return (bool(self.differentiable) and self.s.mode == "strict" and self.s.cross_dialect is None
                and self.s.pass_seq is None and self.case_rng(index, Stream.GRADIENT).random() < self.s.gradients)

    def differentiable_ops(self) -> list[str]:
        """The selected ops a gradient case draws from: those the autodiff differentiates, at
        the gradient oracle's dtype; none where there is no autodiff, or --dtypes leaves that
        dtype out."""
        if self.gradient_support is None or (self.s.dtypes and GRADIENT_DTYPE not in self.s.dtypes):
            return []
        selected = set(self.s.only_ops or self.specs.names())
        return [n for n in self.gradient_support.gradient_specs(self.specs)
                if n in selected and GRADIENT_DTYPE in self.specs.ops[n].dtypes]

    def gradient_contract_avoided(self) -> frozenset:
        """What a gradient case draws its ops without, as the autodiff's contract leaves it
        out (its CONTRACT_ROLES: Relax's dilated pools, whose backward TVM does not legalize);
        its graph would otherwise be no gradient case at all (why_not_differentiable)."""
        if not self.differentiable:
            return frozenset()
        roles = self.gradient_support.CONTRACT_ROLES
        return frozenset(AvoidedOp(name, GRADIENT_DTYPE, roles[self.specs.ops[name].dialect_op], gradient=True,
                                   outside=OUTSIDE_CONTRACT)
                         for name in self.differentiable if self.specs.ops[name].dialect_op in roles)

    def sequence_passes(self) -> list:
        """The catalog entries a case's pass sequences hold: the pinned sequence's (--pass-seq),
        else those drawn (none with --no-pass-fuzz, or without a catalog)."""
        if self.catalog is None:
            return []
        if self.s.pass_seq is not None:
            names = [step["name"] for step in self.s.pass_seq]
            return [self.catalog.entries[name] for name in names if name in self.catalog.entries]
        return self.catalog.drawable() if self.s.pass_fuzz else []

    def contract_dtypes(self, index: int, ops: list[str] | None = None,
                        avoid: frozenset = frozenset()) -> list[str] | None:
        """The dtypes case `index` is drawn in where it is one of the CONTRACT_SHARE of a strict
        campaign's cases drawn in a catalog pass's documented input dtypes (None: it is not):
        a program computing in other dtypes is not judged under that pass (Relax's
        ToMixedPrecision takes float32 programs only, and hardly one 40-operator program of
        mixed dtypes computes in float32 alone). Not where --dtypes is given, nor where no op
        of `ops` (the selected ones) can be drawn in them less the ops `avoid` holds."""
        if not self.contracts or self.s.dtypes or self.s.mode != "strict":
            return None
        rng = self.case_rng(index, Stream.CONTRACT)
        if rng.random() >= CONTRACT_SHARE:
            return None
        dtypes = list(self.contracts[int(rng.integers(len(self.contracts)))])
        names = ops if ops is not None else self.specs.names()
        return dtypes if drawable(self.specs, names, dtypes, self.target_kinds, avoided_in(avoid, False)) else None

    def drawn_from(self, gradient: bool, check_only: bool) -> tuple[int, list[str] | None, list[str] | None]:
        """(operators, ops, dtypes) a case's graph is drawn with: the settings' (a check-only
        case's operators, --check-ops, where given), or a gradient case's (at most
        --gradient-ops operators, of the ops with a gradient, at its dtype)."""
        n_ops = (self.s.check_ops or self.s.ops) if check_only else self.s.ops
        if not gradient:
            return n_ops, self.s.only_ops, self.s.dtypes
        return min(n_ops, self.s.gradient_ops), self.differentiable, [GRADIENT_DTYPE]

    def add_gradient_config(self, case: Case, stats: GenStats | None):
        """The gradient oracle's configuration, right after the baseline, where the case is
        one it judges; counted in `stats` where given (a case drawn anew). A case's first
        failing configuration is its finding, and pass sequences often fail (their checks
        in most cases): after them, a gradient's failure would mostly go unseen."""
        why = why_not_differentiable(case.graph, self.gradient_support) or (
            "" if case.comparable else "inputs outside an op's domain")
        if stats is not None:
            stats.count_gradient(why or None)
        if not why:
            config = ORACLES[Oracle.GRADIENT].config(self, self.autodiff(case.index))
            case.configs = [case.configs[0], config, *case.configs[1:]]

    def autodiff(self, index: int) -> str | None:
        """Which autodiff gradient case `index` runs, drawn evenly where the dialect has
        several (Relay's first- and higher-order); None where it has one."""
        modes = self.gradient_support.AUTODIFF_MODES
        if len(modes) < 2:
            return None
        return modes[int(self.case_rng(index, Stream.AUTODIFF).integers(len(modes)))]

    def case_rng(self, index: int, stream: "Stream") -> np.random.Generator:
        """Case `index`'s own random stream for one purpose: what one purpose draws never
        shifts another's (or the graph stream's), so a change to, say, pass drawing leaves
        a seed's graphs and inputs as they were."""
        key = [self.s.seed, index] if stream is Stream.INPUTS else [self.s.seed, index, int(stream)]
        return np.random.default_rng(key)

    def case_direction(self, index: int):
        """The direction case `index` is generated under: a share of cases stay undirected,
        so that what the probe did not see is still tried."""
        if self.direction is None or self.case_rng(index, Stream.DIRECTION).random() < P_UNDIRECTED:
            return None
        return self.direction

    def case_lowering(self, graph: Graph, index: int, direction=None, stats: GenStats | None = None,
                      avoid: frozenset = frozenset()) -> dict:
        """How the case is lowered (a plan of functions and features) and mutated (a seed).
        The plan is drawn whatever the targets, then stripped of what one of them cannot
        lower and of the forms in `avoid` that apply to the case (campaign.avoidance.PlanForm),
        counted in `stats` where given."""
        lowering = {}
        if self.s.features:
            rng = self.case_rng(index, Stream.PLAN)
            knobs = direction.knobs(self.info.plan_knobs, rng) if direction else Knobs(**self.info.plan_knobs)
            plan = plan_lowering(graph, rng, knobs)
            if self.unlowerable:
                plan, stripped = plan.stripped(self.unlowerable)
                if stats is not None:
                    stats.count_stripped(stripped)
            plan = self.lowered_without(plan, index, avoid, stats)
            lowering["plan"] = plan.to_json()
        if self.s.mutations and self.info.mutators:
            lowering["mutation"] = {"seed": [self.s.seed, index, int(Stream.MUTATION)], "count": self.s.mutations}
        return lowering

    def lowered_without(self, plan: LoweringPlan, index: int, avoid: frozenset, stats: GenStats | None) -> LoweringPlan:
        """`plan` without the forms of `avoid` that apply to case `index` (a gradient case's
        by the autodiff it runs), each form that took something away counted in `stats`."""
        forms = [a for a in avoid if isinstance(a, PlanForm)]
        if not forms:
            return plan
        gradient = self.gradient_case(index)
        plan, stripped = without_forms(plan, forms, gradient, self.autodiff(index) if gradient else None)
        for name in stripped if stats is not None else ():
            stats.avoided_found[name] = stats.avoided_found.get(name, 0) + 1
        return plan

    def case_configs(self, index: int, lowering: dict | None = None) -> list[dict]:
        """Baseline first (the VM on the first target), then a pass sequence, then the other
        executors and targets, then what is derived from those (the mutant, plainly built and
        after the drawn pass sequence): the matrix one case goes through, each oracle adding
        its own (oracles.ORACLES, in order). Last, the check-only pass sequences (--pass-checks):
        after every built configuration, so that none of those moves or is derived from them.
        A check-only case (check_only) keeps its baseline lowered only and its sequences
        check-only, and nothing else."""
        rng = self.case_rng(index, Stream.CONFIGS)
        configs = [config for oracle in ORACLES.values() for config in oracle.case_configs(self, rng, lowering)]
        checks = ORACLES[Oracle.PASS_ORDER].check_configs(self, self.case_rng(index, Stream.PASS_CHECKS))
        if self.check_only(index):
            # drawn as a built case draws them, then each pass sequence only checked
            sequences = [{**config, CHECK_ONLY: True} for config in configs[1:]
                         if config.get(ORACLE_FIELD) == Oracle.PASS_ORDER.value]
            return [lowered_only(configs[0]), *sequences, *checks]
        return configs + [config for oracle in ORACLES.values()
                          for config in oracle.derived_configs(self, configs, lowering)] + checks

    def check_only(self, index: int) -> bool:
        """Whether case `index` is check-only (--check-cases K: the K cases after each built
        one): lowered and checked well-formed, then only passed through its pass sequences,
        each output checked; never built. Most of what a campaign finds fails in a pass or
        leaves an ill-formed module, and passes cost about a hundredth of a build, so more
        graphs through passes meet more root causes an hour than the same time building.
        Strict campaigns of one IR with drawn sequences only: a pinned sequence is a pass
        developer's question about results, and a cross-IR case compares results."""
        k = self.s.check_cases
        return (k > 0 and index % (k + 1) != 0 and self.s.mode == "strict" and self.s.cross_dialect is None
                and self.s.pass_seq is None and self.s.pass_fuzz)

    def config(self, executor: str, target, oracle: Oracle, **kw) -> dict:
        """A configuration of the campaign's dialect, naming the oracle that judges it."""
        return {**make_config(executor, target, dialect=self.s.dialect, **kw), ORACLE_FIELD: oracle.value}

    def make_disruptive_case(self, index: int, graph: Graph | None, disruption: dict | None,
                             coverage: Coverage | None = None) -> Case:
        """A valid graph (none for even cases: single-node, as HIRGen did) plus one violation,
        drawn against the violation coverage of `coverage`, which it adds to."""
        coverage = coverage if coverage is not None else Coverage()
        t0 = time.perf_counter()
        generated = graph is None
        rng = self.case_rng(index, Stream.GRAPH)
        while generated:
            n_ops = 1 if index % 2 == 0 else self.s.ops
            try:
                graph, violation = generate_violation(self.specs, rng, n_ops, coverage.sets["violation"],
                                                      self.s.guided, self.violable)
                disruption = {"violation": violation.to_json(), "plan": violation_plan(violation, graph, self.specs)}
                # an input of the violating call outside its domain breaks a second constraint
                inputs, chosen = draw_violation_inputs(graph, disruption["violation"], self.specs,
                                                       self.case_rng(index, Stream.INPUTS))
                break
            except Rejected:
                continue
        if not generated:  # replayed or resumed: drawn as when generated, checked then
            inputs, chosen = draw_violation_inputs(graph, disruption["violation"], self.specs,
                                                   self.case_rng(index, Stream.INPUTS), check=False)
        gen_ms = (time.perf_counter() - t0) * 1000
        # always run: a match_cast lie is caught at run time only (the valid part's
        # out_of_domain says when its inputs may still trap, which stats.jsonl shows)
        # the valid part's results as NumPy computes them: a short reproducer passes those
        # its violating call reads as values
        expected = [chosen.facts[r] for r in graph.results()]
        case = Case(index, graph, inputs, True, expected, gen_ms, chosen.reason, chosen.op, disruption=disruption,
                    configs=[ORACLES[Oracle.DISRUPTIVE].disruptive_config(self)])
        case.request = {"case": index, "graph": graph.to_json(), "calls": call_records(graph, self.specs),
                        "configs": case.configs, "run": True,
                        "violation": disruption["plan"], "inputs": [encode_array(a) for a in inputs]}
        _plant(case.request, index)
        case.timings = {"generate": gen_ms / 1000, "prepare": time.perf_counter() - t0 - gen_ms / 1000}
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


def avoided_in(avoid: frozenset, gradient: bool) -> frozenset:
    """The ops (core.generate.AvoidedOp) a case is drawn without, of what the avoidance
    schedule gives (campaign.avoidance: its plan forms are lowering's): a gradient
    finding's in gradient cases alone."""
    return frozenset(a for a in avoid if isinstance(a, AvoidedOp) and (gradient or not a.gradient))


def added_keys(coverage: Coverage) -> int:
    """How many coverage keys a case's drawing added: its layered coverage (core.coverage.layered)
    iterates over those alone, and is the same whatever the number of case makers."""
    return sum(len(keys) for keys in coverage.sets.values())


def streams_index(index: int, lowering: dict | None) -> int:
    """The index whose input and configuration streams case `index` draws from: its own, or
    a follow-up mutant's original's (campaign.followups: same inputs, same pass sequence)."""
    return ((lowering or {}).get("mutation") or {}).get("of_case", index)


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

