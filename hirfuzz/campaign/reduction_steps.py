"""The steps that finish a finding, in the order they run, each with its statistics.

Each step makes the failing case smaller or more precise, and takes a trial only where it
fails with the finding's own signature (reducer.same_signature). As in Hypothesis's
shrinker (a list of named passes, each counting what it tried and what it won), every
step records what it cost and what it earned, so one can say which step earns its
worker time:

    calls      the worker trials it ran
    successes  the trials that failed alike and were taken
    seconds    its wall time, trials included

finding.json keeps them under extra.reduction.steps; summary.json sums them over the
findings filed (reduction_steps).

To add a step: write a subclass of `Step` with a `name`, an `applies` where it has
nothing to try on some findings, and a `run` that returns the case, smaller where a trial
allowed (or `state.case` itself); then put an instance in ISOLATING, REDUCING or KEYING. Run its
trials through the `Reduction` it is given: `fails_alike(case, signature)` for a
candidate it takes when it fails alike, or `finding_of(case)` and
`failed_alike(found, signature)` where it needs what the trial found. Those count the
calls and successes; the step itself counts nothing.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Iterable, Protocol

import numpy as np

from ..core.finding import Finding, in_operator_code
from ..core.passes import minimise_sequence, stand_ins_for, unmet_requirements
from ..core.plan import LoweringPlan
from ..core.attributes import plainer_values, roles_held
from ..core import expr as E
from ..core.generate import Rejected, conditional_exclusion, output_types, single_op_graph
from ..core.graph import Graph
from ..core.inputs import not_finite
from ..core.reduce import keep_operators, reduce_graph
from ..core.reference import op_env
from ..core.targets import target_kinds
from ..dialects.base import ILL_FORMED_STAGE
from ..protocol import CHECK_ONLY, lowered_only
from .oracles import ORACLES, Oracle, definition
from .oracles.gradient import GradientDiffers

if TYPE_CHECKING:
    from .cases import Case
    from .reduction_budget import FindingBudget
    from .reduction_host import ReductionHost
    from .settings import Settings


# the stages a pass sequence fails at: a pass raised, or left an ill-formed module
PASS_STAGES = ("passes", ILL_FORMED_STAGE)
# the stages after a pass sequence, which a crash or a worker's death may come at
AFTER_PASSES = ("build", "load", "run")


class Reduction(Protocol):
    """What a step may use of the reduction running it (reducer.Reduction, which imports
    this module): its trials on the lent worker, which count the running step's calls and
    successes, and what it reads of the campaign."""
    host: "ReductionHost"
    s: "Settings"
    budget: "FindingBudget"  # its ran_out_in: where the finding's trials ran out (None: they did not)

    def finding_of(self, case: "Case") -> Finding | None: ...
    def failed_alike(self, found: Finding | None, signature: str, oracle_may_change: bool = False) -> bool: ...
    def fails_alike(self, case: "Case", signature: str) -> bool: ...
    def runs_clean(self, case: "Case") -> bool: ...
    def fails_without_passes(self, case: "Case", finding: Finding, config: dict) -> bool: ...
    def variant(self, case: "Case", graph=None, configs=None, lowering=None) -> "Case": ...


@dataclass
class StepStats:
    calls: int = 0        # worker trials
    successes: int = 0    # trials that failed alike and were taken
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"calls": self.calls, "successes": self.successes, "seconds": round(self.seconds, 3)}


@dataclass
class Finishing:
    """A finding on its way through the steps."""
    finding: Finding
    case: "Case"                   # as far as the steps got: each step's result is the next one's case
    start: "Case | None" = None    # the case the running list of steps started from
    whole: bool = False            # no configuration alone killed the worker: the case keeps all of them
    reduced_signature: str | None = None  # the signature the reduced program's own run had (Confirm)
    alone: "OperatorAlone | None" = None  # the operator whose failure alone is the finding's (BlameOperatorAlone)
    # per operator of the reduced program whose attributes were made plainer, the roles of
    # those it needs (SimplifyAttributes): a wrong result's root key names them
    needs: dict[str, list[str]] = field(default_factory=dict)
    stats: dict[str, StepStats] = field(default_factory=dict)  # the steps that ran, in order


class Step(ABC):
    """One named way of making a failing case smaller or more precise."""
    name: ClassVar[str]
    # whether its trials count against the finding's budget (reduction_budget): a step that
    # only makes the program smaller, and keeps the case it had when a trial is refused
    budgeted: ClassVar[bool] = False

    def applies(self, reduction: "Reduction", state: Finishing) -> bool:
        """Whether the step has anything to try on the finding as it stands (a step that
        does not apply is not run, and has no statistics in finding.json)."""
        return True

    @abstractmethod
    def run(self, reduction: "Reduction", state: Finishing) -> "Case":
        """The case, smaller where a trial allowed (or `state.case` itself)."""


def _under(reduction: "Reduction", case: "Case", config: dict, finding: Finding) -> "Case":
    """The case under the failing configuration alone, after the baseline where the
    finding's oracle judges against the baseline's run (a reproducer then builds both)."""
    return reduction.variant(case, configs=configs_under(case.configs[0], config, finding))


def configs_under(baseline: dict, config: dict, finding: Finding) -> list[dict]:
    """The failing configuration `config`, after `baseline` where the finding's oracle judges
    against the baseline: only lowered (protocol.lowered_only) where `config` is check-only,
    whose failure is in its passes, so that no trial builds what nothing compares with."""
    if not definition(finding.oracle).against_baseline:
        return [config]
    return [lowered_only(baseline) if config.get(CHECK_ONLY) else baseline, config]


# --- isolating: what the failure is keyed on (a pass-order wrong result, on its minimal sequence) ---

class IsolateConfig(Step):
    """The case under the one configuration that fails. A worker that died took every
    configuration with it: each is tried alone to find the one that kills it.
    Reproducers and the later steps then build only that one."""
    name = "isolate_config"

    def run(self, reduction, state):
        case, finding = state.case, state.finding
        config = finding.extra.get("config")
        if finding.stage == "worker" and len(case.configs) > 1 and not reduction.s.reduce:
            # each try may cost a time-out (a hang's always does): --no-reduce means none
            finding.extra["isolation"] = (f"not isolated (--no-reduce); the case keeps all "
                                          f"{len(case.configs)} configurations")
            state.whole = True
            return case
        if finding.stage == "worker" and len(case.configs) > 1:
            config = next((c for c in _died_in_first(case.configs, finding)
                           if reduction.fails_alike(reduction.variant(case, configs=[c]), finding.signature)), None)
            if config is None:  # none alone: the case stays whole, the failure its own
                finding.extra["isolation"] = (f"no configuration alone killed the worker; the case keeps "
                                              f"all {len(case.configs)}")
                state.whole = True
                return case
            if config.get("module"):
                # a mutant killed it (a follow-up's, where the original passed the same
                # configurations): the finding is the mutant's, as a mutant's raise is; the
                # original's baseline stays first (a smaller graph whose mutation applies no
                # mutator skips the mutant's configuration, which a baseline cannot be)
                finding.extra.update({"config": config, "mutators": reduction.last_mutators})
                return reduction.variant(case, configs=[case.configs[0], config])
        return _under(reduction, case, dict(config or case.configs[0]), finding)


def _died_in_first(configs: list[dict], finding: Finding) -> list[dict]:
    """The configurations to try alone, the one the worker said it died in first (its
    breadcrumb: judge.Judge._death), so that one trial usually settles it."""
    named = finding.extra.get("died_in", {}).get("config")
    if named is None or not 0 <= named < len(configs):
        return configs
    return [configs[named], *configs[:named], *configs[named + 1:]]


def _failing_passes(state: Finishing, minimising: bool = False) -> bool:
    """Is the finding a pass sequence's, isolated to a configuration that runs passes?
    (`minimising`: or one whose oracle lets its sequence be minimised, never dropped; or a
    worker that died inside one of its passes, or in the build or run after them, whose
    signature names where, so that a shorter sequence dying there fails alike.)"""
    oracle = definition(state.finding.oracle)
    died_in = state.finding.extra.get("died_in", {})
    # a worker that died in a pass, or in the build or run after the sequence: a shorter
    # sequence that dies there fails alike (the signature names where), and the title and
    # reproducer then hold only the passes the death needs
    died_on_the_way = bool(died_in.get("pass")) or died_in.get("stage") in AFTER_PASSES
    return (not state.whole and (oracle.narrows_passes or (minimising and (oracle.minimises_passes or died_on_the_way)))
            and bool(state.case.configs[-1]["passes"]))


class DropPasses(Step):
    """A pass sequence's failure that its configuration shows with no pass at all is the
    executor's (Reduction.fails_without_passes): no pass is to blame."""
    name = "drop_passes"

    def applies(self, reduction, state):
        # a check-only sequence's failure is in its passes: with none, nothing would run
        return _failing_passes(state) and not state.case.configs[-1].get(CHECK_ONLY)

    def run(self, reduction, state):
        case, finding = state.case, state.finding
        config = case.configs[-1]
        if not reduction.fails_without_passes(case, finding, config):
            return case
        return _under(reduction, case, ORACLES[Oracle.PASS_ORDER].without_passes(config), finding)


def _minimises(reduction: "Reduction", state: Finishing) -> bool:
    """Is the finding's pass sequence to be made smaller? A wrong result is keyed on its
    minimal sequence, so it is minimised even with --no-reduce; a crash is keyed on its
    message, and its sequence is left as found."""
    return _failing_passes(state, minimising=True) and (reduction.s.reduce or state.finding.kind == "wrong-result")


class MinimisePasses(Step):
    """The shortest pass sequence that still fails alike (delta debugging over the
    sequence, each trial respecting the passes' requirements)."""
    name = "minimise_passes"
    budgeted = True

    def applies(self, reduction, state):
        return _minimises(reduction, state)

    def run(self, reduction, state):
        case, finding = state.case, state.finding
        config = case.configs[-1]

        def fails(seq):
            # the trial under the shorter sequence alone, after the baseline where the oracle
            # judges against it (a dead worker's isolated case has no baseline to keep)
            return reduction.fails_alike(_under(reduction, case, {**config, "passes": seq}, finding),
                                         finding.signature)
        passes = minimise_sequence(config["passes"], fails, reduction.host.catalog)
        if passes == config["passes"]:
            return case
        return _under(reduction, case, {**config, "passes": passes}, finding)


class StandIn(Step):
    """Each pass of the failing sequence replaced by a simpler one that stands in for it,
    where the finding fails alike with it: first the passes it runs inside itself (its
    catalog entry's `runs_inside_it`), then the catalog's `stand_ins` (Relax:
    CanonicalizeBindings), each with its first choice of arguments, never the pass itself.

    Why: a simpler pass that reproduces the failure is a smaller reproducer, one that does
    not send a TVM developer to a pass that only carried the fault there; and findings of
    one fault first seen after different passes that run it inside them come out with one
    sequence, so that they key alike where the key names the sequence (a pass-order wrong
    result's minimal sequence; a crash no TVM frame places, keyed on its one pass). Where a
    TVM frame or an ill-formed output's pass keys the failure, the key never named the pass
    that carried it (bench17's four CanonicalizeBindings findings of issue 27: each had its
    pass replaced, and kept its own key: four failures, at four places). A trial is taken
    only where it fails with the finding's own signature, as every step's is: a
    substitution that changes the failure is not kept."""
    name = "stand_in"
    budgeted = True

    def applies(self, reduction, state):
        # where the sequence is minimised, and the catalog has a stand-in for one of its passes
        # (Relay's names none); not a hang's, each of whose trials costs a time-out
        catalog = reduction.host.catalog
        return (_minimises(reduction, state) and state.finding.kind != "hang"
                and any(stand_ins_for(step, catalog) for step in state.case.configs[-1]["passes"]))

    def run(self, reduction, state):
        case, finding = state.case, state.finding
        config, catalog = case.configs[-1], reduction.host.catalog
        passes, taken = list(config["passes"]), case
        for position, step in enumerate(config["passes"]):
            for stand_in in stand_ins_for(step, catalog):
                trial_passes = [*passes[:position], stand_in, *passes[position + 1:]]
                if unmet_requirements(trial_passes, catalog) is not None:
                    continue  # a later pass needs what the replaced one establishes
                trial = _under(reduction, case, {**config, "passes": trial_passes}, finding)
                found = reduction.finding_of(trial)
                if reduction.failed_alike(found, finding.signature):
                    passes, taken = trial_passes, trial
                    _blamed_as_in(found, finding)
                    break
        return taken


def _blamed_as_in(found: Finding, finding: Finding):
    """The finding's message and blame as the trial that replaced a pass found them: the
    pass whose output was ill-formed, and the passes within it that fail alike (judge), are
    the sequence's now, not the replaced pass's (titles and reports read them), and so is
    the pass that raised (the root key of a crash no TVM frame places names it)."""
    finding.message, finding.detail = found.message, found.detail
    for key in ("blamed_pass", "inner_passes", "innermost_pass", "failed_pass"):
        if key in found.extra:
            finding.extra[key] = found.extra[key]
        else:
            finding.extra.pop(key, None)


# --- reducing: the program itself, where --reduce is on -----------------------------------

def _lowering_following(case: "Case", ids: dict[int, int]) -> dict:
    """The case's lowering, its plan following the nodes that stay (`ids`: old to new)."""
    plan = case.lowering.get("plan")
    return {**case.lowering, "plan": LoweringPlan.from_json(plan).renumbered(ids).to_json()} if plan else case.lowering


class ReduceGraph(Step):
    """The smallest graph hirfuzz can find that fails alike (core.reduce: operators, then
    constants made variables), its lowering plan following the nodes that stay."""
    name = "reduce_graph"
    budgeted = True

    def run(self, reduction, state):
        case, finding = state.case, state.finding
        small, ids, budget = reduce_graph(case.graph, lambda g, ids: reduction.fails_alike(
            reduction.variant(case, graph=g, lowering=_lowering_following(case, ids)), finding.signature))
        # whether more checks might shrink it further: worth knowing when it did not shrink much.
        # The cap is this step's own (core.reduce.reduce_graph's checks and seconds), not the
        # finding's reduction budget (extra.reduction.budget), which two readers took it for
        finding.extra["reduction"] = {"checks": budget.checks, "reduce_graph_cap_reached": budget.exhausted}
        if len(small.operators) >= len(case.graph.operators):
            return case
        return reduction.variant(case, graph=small, lowering=_lowering_following(case, ids))


class DropLowering(Step):
    """Drop the lowering plan, then the mutant unless it is what fails, where the failure
    holds without them: the reproducer is then the plain program."""
    name = "drop_lowering"
    budgeted = True

    def applies(self, reduction, state):
        return any(key in state.case.lowering for key in ("plan", "mutation"))

    def run(self, reduction, state):
        case, signature = state.case, state.finding.signature
        failing = case.configs[-1]
        for key in ("plan", "mutation"):
            if key not in case.lowering or (key == "mutation" and failing.get("module")):
                continue
            lowering = {k: v for k, v in case.lowering.items() if k != key}
            configs = [c for c in case.configs if not c.get("module")] if key == "mutation" else case.configs
            trial = reduction.variant(case, configs=configs, lowering=lowering)
            if reduction.fails_alike(trial, signature):
                case = trial
        return case


class ShrinkPlan(Step):
    """Where the failure needs some of the plan, drop the rest one entry at a time while
    it holds: functions (a closure or global inlined), a node's features (an `If` and its
    other branch, a `match_cast`), dynamic signatures and plain blocks; then take the
    extras off what stays (a function's plain block, captures or being a value, a node's
    other features: LoweringPlan.simpler), so that what is left is the form the failure
    needs (campaign.avoidance avoids a form alone)."""
    name = "shrink_plan"
    budgeted = True

    def applies(self, reduction, state):
        return bool(state.case.lowering.get("plan"))

    def run(self, reduction, state):
        case, signature = state.case, state.finding.signature
        plan = LoweringPlan.from_json(case.lowering["plan"])
        entries = ([("functions", i) for i in reversed(range(len(plan.functions)))]
                   + [("node_features", n) for n in sorted(plan.node_features)]
                   + [("dynamic_params", n) for n in plan.dynamic_params]
                   + [("plain_nodes", n) for n in plan.plain_nodes])
        for what, index in entries:
            smaller = plan.without(what, index)
            trial = reduction.variant(case, lowering={**case.lowering, "plan": smaller.to_json()})
            if reduction.fails_alike(trial, signature):
                case, plan = trial, smaller
        needed = set()  # the extras the failure needs: taking one off did not fail alike
        for _ in range(len(plan.simpler())):  # each round takes one extra off, or ends
            tried = [(extra, p) for extra, p in plan.simpler() if extra not in needed]
            for extra, simpler in tried:
                trial = reduction.variant(case, lowering={**case.lowering, "plan": simpler.to_json()})
                if reduction.fails_alike(trial, signature):
                    case, plan = trial, simpler
                    break
                needed.add(extra)
            else:
                break
        return case


def with_attribute(graph: Graph, node_id: int, name: str, value, spec, target_kinds) -> Graph | None:
    """The graph with one attribute of an operator set to `value`, its results' types as the
    spec gives them; None where the spec's constraints or a target exclusion turn the value
    down, or where a result's type changes and another operator reads it."""
    node = graph.nodes[node_id]
    env = {**op_env(spec, node, graph), name: value}
    try:
        constraints = [*(spec.solve.constraints if spec.solve is not None else ()), *spec.constraints]
        if not all(c(env) for c in constraints):
            return None
        if conditional_exclusion(spec, node.dtype, env, target_kinds) is not None:
            return None
        outputs = output_types(spec, env, node.dtype)
    except (E.ExprError, Rejected):
        return None
    read = any(ref.node == node_id for ref in graph.consumers())
    if outputs != list(node.outputs) and read:
        return None
    changed = Graph.from_json(graph.to_json())
    changed.nodes[node_id].attrs[name] = value
    changed.nodes[node_id].outputs = outputs
    return changed


def plainest_failing(reduction: "Reduction", case: "Case", signature: str) -> "Case":
    """The case with each attribute of its operators set to its plainest value where it still
    fails alike (core.attributes.plainer_values: a window's kernel, stride and dilation 1,
    its padding 0, a flag False), round after round while one is taken (a padding must fall
    before the kernel it stays below)."""
    kinds = target_kinds(reduction.s.targets)
    needed: set[tuple[int, str]] = set()
    taken = True
    while taken:  # each round takes one attribute plainer, or ends
        taken = False
        for node in case.graph.operators:
            spec = reduction.host.specs.ops[node.op]
            for name, value in plainer_values(spec, node.attrs).items():
                if (node.id, name) in needed:
                    continue
                graph = with_attribute(case.graph, node.id, name, value, spec, kinds)
                trial = reduction.variant(case, graph=graph) if graph is not None else None
                if trial is not None and not _computes_finitely(trial):
                    trial = None  # a program strict generation turns down: another failure's, not this one's
                if trial is not None and reduction.fails_alike(trial, signature):
                    case, taken = trial, True
                    break
                if graph is not None:  # a value the spec turns down may be allowed once another falls
                    needed.add((node.id, name))
            if taken:
                break
    return case


def _computes_finitely(case: "Case") -> bool:
    """Whether the reference computes every result of the case finitely, and far from its
    dtype's largest value, from its inputs, as strict generation wants of every insertion
    (core.generate: the witness). A max pool made undilated in ceil mode may have a window
    wholly in its padding, whose max is -inf (bench25 relay13-now 0025: that other failure
    was taken for the dilation's), or, in float32, -FLT_MAX, which an average of two
    overflows to -inf where the float64 reference does not (bench25 relax13-now 0025, a
    false alarm the simplified program made)."""
    def edgy(f) -> bool:
        if f.value.dtype.kind != "f":
            return False
        return not_finite(f.value) or f.magnitude >= np.finfo(f.value.dtype).max / 2
    return case.comparable and not any(edgy(f) for f in case.expected)


def _note_needs(reduction: "Reduction", state: Finishing, case: "Case"):
    """What of their attributes the operators of `case`, made plainest, need (state.needs;
    finding.json's extra.needs): a wrong result's alone, which is keyed on them. A crash is
    keyed on where TVM fails, and what its program kept of its attributes may be what a
    trial failed otherwise on, not what it needs (bench25 relay13-now 0002: a 1x1 conv2d
    fails alike)."""
    if state.finding.kind != "wrong-result":
        return
    for node in case.graph.operators:
        state.needs[node.op] = sorted(roles_held(reduction.host.specs.ops[node.op], node.attrs))
    needs = {op: roles for op, roles in state.needs.items() if roles}
    if needs:
        state.finding.extra["needs"] = needs


def _has_plainer(reduction: "Reduction", case: "Case") -> bool:
    return any(plainer_values(reduction.host.specs.ops[n.op], n.attrs) for n in case.graph.operators)


class SimplifyAttributes(Step):
    """Each attribute of the reduced program's operators made plainest where the failure
    holds (plainest_failing). What stays is what the failure needs: the reproducer shows
    only that, and a wrong result's root key names it (state.needs), so two faults of one
    operator are two findings: Relay's max_pool2d gradient with a dilation and past its
    last window (bench24 relay-now 0016, R33 merged into R27 when keyed on the operator
    alone). Where the finding's budget runs out on the way, what was tried is kept but the
    needs are not said (AttributesNeeded says them for a wrong result)."""
    name = "simplify_attributes"
    budgeted = True
    MOST_OPERATORS = 3  # a larger program's attributes cost more trials than they tell

    def applies(self, reduction, state):
        return (state.case.disruption is None and len(state.case.graph.operators) <= self.MOST_OPERATORS
                and _has_plainer(reduction, state.case))

    def run(self, reduction, state):
        case = plainest_failing(reduction, state.case, state.finding.signature)
        if reduction.budget.ran_out_in is None:  # a trial refused is no answer
            _note_needs(reduction, state, case)
        return case


class AttributesNeeded(Step):
    """What a wrong result's keyed program needs of its attributes, where SimplifyAttributes
    did not say: the operator it is keyed as alone (OperatorBlame), or a program whose
    budget ran out. Not budgeted, as OperatorBlame is not: a key without them would split
    one fault in two (TVM 0.27's exclusive cumsum gradient, keyed once with and once
    without, where a reduction cut at one trial kept four operators)."""
    name = "attributes_needed"

    def applies(self, reduction, state):
        keyed = state.alone.case if state.alone is not None else state.case
        ops = keyed.graph.operators
        return (state.finding.kind == "wrong-result" and keyed.disruption is None
                and len(ops) <= SimplifyAttributes.MOST_OPERATORS
                and any(n.op not in state.needs for n in ops) and _has_plainer(reduction, keyed))

    def run(self, reduction, state):
        if state.alone is not None:  # the finding keeps its program; its key is the operator's alone
            _note_needs(reduction, state, plainest_failing(reduction, state.alone.case, state.alone.found.signature))
            return state.case
        case = plainest_failing(reduction, state.case, state.finding.signature)
        _note_needs(reduction, state, case)
        return case


class Confirm(Step):
    """The reduced case run once more: its message and detail become the finding's (the
    first program's "result 9 (cumsum:uint32)" the reduced one may not even have). Where
    that run fails otherwise (a failure that comes and goes, a worker out of memory), the
    finding keeps the case the reducing steps started from, and says so: a finding is
    never filed under a failure other than its own."""
    name = "confirm"

    def applies(self, reduction, state):
        return state.case is not state.start

    def run(self, reduction, state):
        finding, reduced = state.finding, state.case
        found = reduction.finding_of(reduced)
        if reduction.failed_alike(found, finding.signature):
            finding.message, finding.detail = found.message, found.detail
            state.reduced_signature = found.signature
            if found.extra.get("failed_pass"):
                finding.extra["failed_pass"] = found.extra["failed_pass"]
            return reduced
        said = f"failed otherwise: {found.message[:200]}" if found is not None else "did not fail"
        finding.extra.setdefault("reduction", {})["kept_unreduced"] = (
            f"run once more, the reduced program ({len(reduced.graph.operators)} operators) {said}; "
            "the finding keeps its unreduced program")
        reduction.host.say(f"the {finding.kind} of case {finding.case}: its reduced program {said[:160]}; "
                           "kept unreduced")
        return state.start


# --- keying: which root cause the finding is one of --------------------------------------

@dataclass
class OperatorAlone:
    """An operator of a reduced program that, alone, fails the finding's sequence: its
    failure (`found`, under `case`) is the one the finding is keyed as (reducer.root_key_of)."""
    op: str
    found: Finding
    case: "Case"


def failure_position(finding: Finding, passes: list[dict]) -> int | None:
    """Where in `passes` the finding failed: the position of the pass that raised, left an
    ill-formed module or killed the worker, len(passes) for the build or run after them;
    None where it is not known (before the passes, or a pass not named)."""
    died_in = finding.extra.get("died_in", {})
    if finding.stage in AFTER_PASSES or (finding.stage == "worker" and died_in.get("stage") in AFTER_PASSES):
        return len(passes)
    if finding.stage == ILL_FORMED_STAGE:
        name = finding.extra.get("blamed_pass")
    else:
        name = died_in.get("pass") if finding.stage == "worker" else finding.extra.get("failed_pass")
    return next((i for i, step in enumerate(passes) if step["name"] == name), None)


def fails_no_later(found: Finding | None, passes: list[dict], latest: int) -> bool:
    """Did an operator's trial alone (`found`) fail in a pass of `passes` at or before
    position `latest`, where the finding it is tried for failed? (BlameOperatorAlone)"""
    if found is None or found.stage not in PASS_STAGES:
        return False
    position = failure_position(found, passes)
    return position is not None and position <= latest


class OperatorBlame(Step):
    """The operators of a finished case each alone, plainly lowered (its result main's own,
    which a plan could hide in an If's declared type): the first whose trial (`trial`) fails
    as `blames` says is what the finding is keyed as (state.alone, extra.keyed_as). The case
    is not changed (its reproducer shows what the campaign saw)."""

    def run(self, reduction, state):
        case, finding = state.case, state.finding
        plain = {k: v for k, v in case.lowering.items() if k not in ("plan", "mutation")}
        for node in case.graph.operators:
            graph, _ = keep_operators(case.graph, {node.id})
            trial = self.trial(reduction, state, graph, plain)
            found = reduction.finding_of(trial)
            if self.blames(state, found):
                state.alone = OperatorAlone(node.op, found, trial)
                finding.extra["keyed_as"] = {"operator": node.op, "message": found.message[:300]}
                return case
        return case

    @abstractmethod
    def trial(self, reduction, state: Finishing, graph, lowering: dict) -> "Case":
        """The case of one operator alone (`graph`, `lowering`) under what the step tries."""

    @abstractmethod
    def blames(self, state: Finishing, found: Finding | None) -> bool:
        """Whether the operator's failure alone (`found`; None: none) is the finding's."""


class BlameOperatorAlone(OperatorBlame):
    """Each operator of the reduced program alone under the failing sequence, check-only:
    the first that fails in a pass no later than the finding failed is what the finding is
    keyed as.

    Why: a pass that mistranslates one operator leaves a program that its consumers trip
    over, each in its own place: DecomposeOpsForTraining's layer_norm over a leading axis
    (bench19) was four findings, a broadcast check failing in the decomposition, in a
    `less` after it, in a call of a local function, and in the build, where the
    layer_norm alone shows the one fault (the pass changes the shape it returns). Every
    operator of a reduced program is needed for its failure, so one that fails the same
    sequence alone, no later, carries the fault the failure grew from."""
    name = "operator_alone"
    budgeted = True

    def applies(self, reduction, state):
        finding, case = state.finding, state.case
        return (finding.kind == "crash" and case.disruption is None and len(case.graph.operators) > 1
                and bool(case.configs[-1].get("passes"))
                and failure_position(finding, case.configs[-1]["passes"]) is not None)

    def trial(self, reduction, state, graph, lowering):
        config = {**state.case.configs[-1], CHECK_ONLY: True}
        return _under(reduction, reduction.variant(state.case, graph=graph, lowering=lowering), config, state.finding)

    def blames(self, state, found):
        passes = state.case.configs[-1]["passes"]
        return fails_no_later(found, passes, failure_position(state.finding, passes))


class BlameGradientOperatorAlone(OperatorBlame):
    """Each operator of a gradient finding's reduced program alone under the gradient
    configuration: the first whose gradient is wrong alone is what a wrong gradient is keyed
    as, and the first whose gradient has a wrong shape alone is what a gradient crash is.

    Why: a wrong gradient is keyed on the ops of its reduced program, and a reduction cut
    short by its budget (at the end of a --time run each gets its equal part of what is
    left, 10 s at least: two or three Relay gradient builds) leaves several. On seed 8
    (bench22) take's gradient with a negative axis was six findings, one reduced to `take`
    alone and five cut short with three to six other operators beside it. A gradient of the
    wrong shape is passed on to the backward of the ops before it, which may crash on it:
    Relax's `where` returns its broadcast operand's gradient uncollapsed, and conv2d's
    backward feeding it raised "layout NCHW requires the input to be 4-dim" (bench25 relax
    seed 13 0017 + 0018, bench26 0021 + 0023: one root cause, two findings). Not budgeted: a
    gradient program of one operator builds in a second or two, and the finding's key is
    worth those trials more than a smaller program is."""
    name = "gradient_operator_alone"

    def applies(self, reduction, state):
        finding, case = state.finding, state.case
        return (finding.oracle == Oracle.GRADIENT.value and finding.kind in ("wrong-result", "crash")
                and case.disruption is None and len(case.graph.operators) > 1)

    def trial(self, reduction, state, graph, lowering):
        return reduction.variant(state.case, graph=graph, lowering=lowering, configs=[state.case.configs[-1]])

    def blames(self, state, found):
        if found is None or found.kind != "wrong-result" or found.oracle != state.finding.oracle:
            return False
        return state.finding.kind == "wrong-result" or GradientDiffers.of(found.signature) is GradientDiffers.SHAPE


class NarrowingCause(Step):
    """Whether a crash after a pass goes away once the run-time checks that pass dropped are
    put back (DialectInfo.widening, inserted right after it; Relax: narrowing.widened): the
    first pass of the failing sequence after which it does is what the finding is keyed as
    (extra.narrowed_by, narrowed_pass), wherever the program trips over it later: the
    pass itself, or where it runs others inside itself (its catalog entry's `runs_inside_it`),
    the first of those, so that CanonicalizeBindings' narrowing is one key whether it ran as
    a pass or inside RemoveRedundantReshape or InlinePrivateFunctions (bench27 relax seed 16:
    three findings, one through each). The case is not changed.

    Why: TVM 0.27's CanonicalizeBindings keeps a match_cast whose symbolic variable has a
    run-time use (an If on `n >= 1`) but puts the constant it binds into later annotations,
    leaving calls typed narrower than their operators infer with nothing left to check it;
    each later pass or the build trips over that in its own place (FoldConstant's "Argument 0
    type mismatch", ConvertLayout's "should not rewrite global-scope Var", CodeGenVM's
    "cannot emit", ScatterND's shape check). bench26's readers counted 7 findings of Relax
    seed 13 and 6 of seed 14 as that one fault (tools/narrowing_effect.py clears 5 of seed
    13's so). A failure that stays once the checks are back (topi::reverse_sequence on a
    symbolic batch, which a hand-written program fails too) keeps its own key, and so does
    one in an operator's own code (core.finding.in_operator_code), whose shapes a user can
    give it too: topi's prelu asking for a constant channel count after the narrowing went
    away with it checked, and was joined under the narrowing (bench27 relax seed 18 0016, a
    merged member), where prelu fails alike on a symbolic channel a user writes. Not
    budgeted: a trial is check-only where the failure is in a pass, and the key is what
    spares a maintainer the repeats."""
    name = "narrowing_cause"

    def applies(self, reduction, state):
        finding, case = state.finding, state.case
        position = failure_position(finding, case.configs[-1].get("passes") or [])
        return (reduction.host.info.widening is not None and finding.kind == "crash"
                and case.disruption is None and state.alone is None and bool(position)
                and not in_operator_code(finding.signature, finding.detail))

    def run(self, reduction, state):
        finding, case = state.finding, state.case
        config = case.configs[-1]
        if finding.stage in PASS_STAGES:  # nothing after the passes is needed to see it go
            config = {**config, CHECK_ONLY: True}
        passes = config["passes"]
        widening = {"name": "WidenNarrowedCalls", "import": reduction.host.info.widening, "args": {}}
        for position in range(failure_position(finding, passes)):
            widened = {**config, "passes": [*passes[:position + 1], widening, *passes[position + 1:]]}
            if reduction.runs_clean(_under(reduction, case, widened, finding)):
                step = passes[position]
                inside = narrowing_pass(step)
                finding.extra["narrowed_by"] = {"pass": step["name"], "position": position,
                                                "inside": inside if inside != step["name"] else None}
                return case
        return case


def narrowed_pass(extra: dict) -> str | None:
    """The pass a finished finding's narrowing is keyed on (NarrowingCause's extra.narrowed_by:
    the one it ran inside where there is one), or None where it was not keyed so."""
    narrowed_by = extra.get("narrowed_by")
    return (narrowed_by.get("inside") or narrowed_by["pass"]) if narrowed_by else None


def narrowing_pass(step: dict) -> str:
    """The pass a narrowing step narrows by (NarrowingCause): the step's own, or where it runs
    others inside itself, the first of them (the pattern rewrites and InlinePrivateFunctions
    run CanonicalizeBindings first)."""
    inside = step.get("runs_inside_it") or []
    return inside[0] if inside else step["name"]


class FormAlone(Step):
    """Whether a failure that needs one choice of its lowering plan (its form) and no pass
    fails alike with that form around another operator: one trial, on a plain elementwise op
    at the program's dtype (PROBE_OPS). Only then is the form avoided whatever the program
    computes (campaign.avoidance: extra.form_alone). TVM 0.19's higher-order autodiff fails
    on any closure; TVM 0.27's prelu legalization on a symbolic channel count fails only on
    prelu, and avoiding every match_cast for it took 1788 symbolic shapes out of a Relax
    campaign (bench25 relax13-now 0008)."""
    name = "form_alone"
    PROBE_OPS = ("tanh", "exp", "negative", "abs")

    def applies(self, reduction, state):
        case = state.case
        plan = case.lowering.get("plan")
        return (state.finding.kind == "crash" and case.disruption is None and bool(case.graph.operators)
                and not case.configs[-1].get("passes") and "mutation" not in case.lowering
                and plan is not None and LoweringPlan.from_json(plan).form() is not None)

    def run(self, reduction, state):
        case, specs = state.case, reduction.host.specs
        dtype = case.graph.operators[0].dtype
        held = {n.op for n in case.graph.operators}
        probe = next((op for op in self.PROBE_OPS if op in specs.ops and op not in held
                      and dtype in specs.ops[op].dtypes), None)
        state.finding.extra["form_alone"] = False
        if probe is None:
            return case
        try:
            drawn = single_op_graph(specs, probe, dtype, np.random.default_rng(0), reduction.s.targets)
        except Rejected:
            return case
        # its inputs variables, as a gradient is taken with respect to them
        graph, _ = keep_operators(drawn, {n.id for n in drawn.operators}, {n.id for n in drawn.nodes if n.kind == "const"})
        plan = LoweringPlan.from_json(case.lowering["plan"]).moved_to(graph)
        trial = reduction.variant(case, graph=graph, lowering={**case.lowering, "plan": plan.to_json()})
        state.finding.extra["form_alone"] = reduction.fails_alike(trial, state.finding.signature)
        return case


# before a finding's signature is settled: a finding in findings/ that is no disruptive one's
ISOLATING: tuple[Step, ...] = (IsolateConfig(), DropPasses(), MinimisePasses(), StandIn())
# then, with --reduce, on the isolated case (not a hang's: each trial would cost a time-out;
# not a disruptive one's, tied to its graph's node numbering)
REDUCING: tuple[Step, ...] = (ReduceGraph(), DropLowering(), ShrinkPlan(), SimplifyAttributes(), Confirm())
# then, on the finished case of a crash or a wrong result, what it is keyed as
KEYING: tuple[Step, ...] = (BlameOperatorAlone(), BlameGradientOperatorAlone(), NarrowingCause(), AttributesNeeded(),
                            FormAlone())
STEPS = ISOLATING + REDUCING + KEYING


def step_totals(findings: Iterable[Finding]) -> dict:
    """Each step's calls, successes and seconds summed over `findings` (their
    extra.reduction.steps), every step listed in order; a step only an older or newer
    hirfuzz knew (a resumed campaign's finding.json) follows them."""
    totals = {step.name: StepStats() for step in STEPS}
    for finding in findings:
        for name, stats in (finding.extra.get("reduction") or {}).get("steps", {}).items():
            total = totals.setdefault(name, StepStats())
            total.calls += stats["calls"]
            total.successes += stats["successes"]
            total.seconds += stats["seconds"]
    return {name: total.to_json() for name, total in totals.items()}
