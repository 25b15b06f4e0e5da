"""Reduction: shrink a failing graph while its failure keeps the same signature.

Delta debugging over operator nodes (Zeller's ddmin, as C-Reduce and Hypothesis shrink):
try dropping chunks of operators, halving the chunk size when nothing can go. Dropping an
operator never breaks the graph: every consumer of its outputs gets a fresh variable of
the same type instead, so shapes and dtypes, and with them every constraint, still hold.
Then constants are turned into variables where the failure allows, which keeps the
reproducer short. Each candidate is judged by `still_fails`, which runs it through TVM.
"""
from __future__ import annotations

import time
from typing import Callable

from .graph import Graph, Node, Ref


def keep_operators(graph: Graph, keep: set[int],
                   as_variables: set[int] = frozenset()) -> tuple[Graph, dict[int, int]]:
    """The graph with only the operators in `keep`; dropped inputs become new variables.

    Constants in `as_variables` become variables too. Node ids are renumbered densely;
    the map from old to new ids of the nodes that stay comes with the graph, so that a
    lowering plan can follow its nodes (LoweringPlan.renumbered).
    """
    used: set[int] = set()
    for node in graph.operators:
        if node.id in keep:
            used.update(r.node for r in node.input_refs())
    out = Graph()
    remap: dict[Ref, Ref] = {}
    ids: dict[int, int] = {}

    def fresh_var(t) -> Ref:
        node = out.add(Node(len(out.nodes), "var", [t]))
        return Ref(node.id)

    def mapped(r: Ref) -> Ref:
        if r not in remap:  # an input from a dropped operator
            remap[r] = fresh_var(graph.type_of(r))
        return remap[r]

    for node in graph.nodes:
        if node.kind != "op":
            if node.id not in used:
                continue
            kind = "var" if node.id in as_variables else node.kind
            new = out.add(Node(len(out.nodes), kind, list(node.outputs),
                               value=node.value if kind == "const" else None))
            remap[Ref(node.id)] = Ref(new.id)
            ids[node.id] = new.id
            continue
        if node.id not in keep:
            continue
        inputs = [[mapped(r) for r in item] if isinstance(item, list) else mapped(item) for item in node.inputs]
        new = out.add(Node(len(out.nodes), "op", list(node.outputs), op=node.op, dtype=node.dtype,
                           inputs=inputs, attrs=dict(node.attrs)))
        for i in range(len(node.outputs)):
            remap[Ref(node.id, i)] = Ref(new.id, i)
        ids[node.id] = new.id
    return out, ids


class Budget:
    def __init__(self, max_checks: int, max_seconds: float):
        self.checks_left = max_checks
        self.deadline = time.monotonic() + max_seconds
        self.checks = 0

    @property
    def exhausted(self) -> bool:
        return self.checks_left <= 0 or time.monotonic() > self.deadline

    def spend(self) -> bool:
        if self.exhausted:
            return False
        self.checks_left -= 1
        self.checks += 1
        return True


def ddmin(items: list, fails: Callable[[list], bool], budget: Budget,
          admissible: Callable[[list], bool] = lambda trial: True) -> list:
    """Zeller's ddmin: drop ever smaller chunks while `fails` holds. Trials that are not
    `admissible` (a pass sequence missing a requirement) are skipped without a check."""
    n = 2
    while len(items) >= 2:
        chunk = -(-len(items) // n)
        reduced = False
        for start in range(0, len(items), chunk):
            trial = items[:start] + items[start + chunk:]
            if not trial or not admissible(trial) or not budget.spend():
                continue
            if fails(trial):
                items, n, reduced = trial, max(n - 1, 2), True
                break
        if budget.exhausted:
            break
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
    return items


def reduce_graph(graph: Graph, still_fails: Callable[[Graph, dict[int, int]], bool], max_checks: int = 48,
                 max_seconds: float = 90.0) -> tuple[Graph, dict[int, int], Budget]:
    """A smaller graph that still fails alike, its nodes' old-to-new ids, and the budget
    it spent (checks, exhausted). `still_fails` gets each candidate with its id map."""
    budget = Budget(max_checks, max_seconds)
    ops = [n.id for n in graph.operators]
    ops = ddmin(ops, lambda keep: still_fails(*keep_operators(graph, set(keep))), budget)
    keep = set(ops)
    used = {r.node for n in graph.operators if n.id in keep for r in n.input_refs()}
    consts = [n.id for n in graph.nodes if n.kind == "const" and n.id in used]
    as_vars: set[int] = set()
    for c in consts:  # one at a time: there are few left after the operator pass
        if not budget.spend():
            break
        if still_fails(*keep_operators(graph, keep, as_vars | {c})):
            as_vars.add(c)
    return (*keep_operators(graph, keep, as_vars), budget)
