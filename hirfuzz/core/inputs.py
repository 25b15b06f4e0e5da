"""Input values: drawn inside each op's value domain, so no intermediate is NaN, Inf or UB.

A variable's domain is the intersection of the domains of every op input it feeds. After
drawing, the reference interpreter checks every op's inputs against that op's domain (an
intermediate can leave it even when the variables are inside theirs); hirfuzz redraws a
few times and, when no draw fits, marks the case as not comparable rather than guessing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .graph import Graph, Ref, TensorType
from .reference import TensorFacts, interpret, op_env

REDRAWS = 8


def default_domain(dtype: str) -> tuple[float, float]:
    if dtype == "bool":
        return (0, 1)
    if dtype.startswith("uint"):
        return (0, 8)
    if dtype.startswith("int"):
        return (-8, 8)
    return (-4.0, 4.0)


def slot_domain(spec, slot: int, env: dict, dtype: str) -> tuple[float, float]:
    """Where to draw a new leaf feeding input `slot`: its declared domain within the default."""
    lo, hi = default_domain(dtype)
    declared = declared_domain(spec, slot, env, dtype)
    if declared is None:
        return lo, hi
    return max(lo, declared[0]), min(hi, declared[1])


def declared_domain(spec, slot: int, env: dict, dtype: str) -> tuple[float, float] | None:
    """The range an op requires of input `slot` (None: any finite value)."""
    rule = spec.inputs[slot].domain
    if rule is None or dtype == "bool":
        return None
    lo, hi = rule(env)
    return float(lo), float(hi)


def draw(rng, t: TensorType, domain: tuple[float, float]) -> np.ndarray:
    lo, hi = domain
    if t.dtype == "bool":
        value = rng.random(t.shape) < 0.5
    elif t.dtype.startswith(("int", "uint")):
        value = rng.integers(int(np.ceil(lo)), int(np.floor(hi)) + 1, size=t.shape)
    else:
        value = rng.uniform(lo, hi, size=t.shape)
    return np.asarray(value, dtype=t.dtype)  # rank 0 stays an array, not a NumPy scalar


def leaf_domains(graph: Graph, specs) -> dict[int, tuple[float, float]]:
    """For each variable, the intersection of the domains of the op inputs it feeds."""
    domains = {n.id: default_domain(n.type.dtype) for n in graph.variables}
    for node in graph.operators:
        spec = specs.ops[node.op]
        env = op_env(spec, node, graph)
        for slot, item in enumerate(node.inputs):
            for ref in item if isinstance(item, list) else [item]:
                if ref.node not in domains:
                    continue
                lo, hi = slot_domain(spec, slot, env, graph.type_of(ref).dtype)
                cur = domains[ref.node]
                domains[ref.node] = (max(cur[0], lo), min(cur[1], hi))
    # Disjoint domains: draw at the edge; the interpreter's check then rejects the draw.
    return {k: (lo, max(lo, hi)) for k, (lo, hi) in domains.items()}


@dataclass
class Violations:
    """What a draw of inputs does outside the ops' domains."""
    tainted: set[int]          # op nodes whose results are not comparable (and those below)
    trap: str | None           # a violation that may trap at run time (integer division by 0)
    first: str | None          # the first violation, for the log

    @property
    def clean(self) -> bool:
        return not self.tainted


def find_violations(graph: Graph, specs, facts: dict[Ref, TensorFacts]) -> Violations:
    """Op inputs outside their declared domain, and NaN/Inf results, with what they taint."""
    tainted: set[int] = set()
    trap = first = None
    for node in graph.operators:
        spec = specs.ops[node.op]
        refs = node.input_refs()
        if any(r.node in tainted for r in refs):
            tainted.add(node.id)
            continue
        problem = _input_outside_domain(spec, node, graph, facts)
        if problem is None and any(facts[Ref(node.id, i)].failed for i in range(len(node.outputs))):
            problem = f"the reference cannot compute node {node.id} ({node.op})"
        if problem is None and any(_not_finite(facts[Ref(node.id, i)].value) for i in range(len(node.outputs))):
            problem = f"node {node.id} ({node.op}) produces NaN or Inf"
        if problem is None:
            continue
        tainted.add(node.id)
        first = first or problem
        if spec.may_trap and trap is None:
            trap = problem
    return Violations(tainted, trap, first)


def _not_finite(v: np.ndarray) -> bool:
    return v.dtype.kind == "f" and not np.all(np.isfinite(v))


def _input_outside_domain(spec, node, graph, facts) -> str | None:
    env = op_env(spec, node, graph)
    for slot, item in enumerate(node.inputs):
        for ref in item if isinstance(item, list) else [item]:
            value = facts[ref].value
            if value.dtype.kind == "b" or value.size == 0:
                continue
            declared = declared_domain(spec, slot, env, value.dtype.name)
            if declared is None:
                continue
            lo, hi = declared
            if value.min() < lo or value.max() > hi:
                return f"input {slot} of node {node.id} ({node.op}) leaves [{lo}, {hi}]"
    return None


@dataclass
class CaseInputs:
    values: dict[int, np.ndarray]        # variable id -> value
    facts: dict[Ref, TensorFacts]        # reference result of every tensor
    runnable: bool                       # False: every draw may trap (never run such a case)
    reason: str = ""                     # the first domain violation of the kept draw, if any

    @property
    def comparable(self) -> bool:
        """Every result can be compared: the kept draw violates no domain."""
        return self.runnable and not self.reason


def choose_inputs(graph: Graph, specs, rng) -> CaseInputs:
    """A draw with no violation if one of a few is; else the one tainting the fewest ops.

    Results below a violation are marked unstable (not compared); a draw that may trap
    is kept only if no other draw exists, and then the case is built but not run.
    """
    domains = leaf_domains(graph, specs)
    best = None
    for _ in range(REDRAWS):
        values = {n.id: draw(rng, n.type, domains[n.id]) for n in graph.variables}
        facts = interpret(graph, specs, values)
        found = find_violations(graph, specs, facts)
        key = (found.trap is not None, len(found.tainted))
        if best is None or key < best[0]:
            best = (key, values, facts, found)
        if found.clean:
            break
    _, values, facts, found = best
    for node_id in found.tainted:
        for i in range(len(graph.nodes[node_id].outputs)):
            facts[Ref(node_id, i)].stable = False
    return CaseInputs(values, facts, found.trap is None, found.first or "")
