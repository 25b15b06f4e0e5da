"""Input values: drawn inside each op's value domain, so no intermediate is NaN, Inf or UB.

An op input's declared domain constrains whatever feeds it, not only the variables that
feed it directly: `sqrt(a - b)` needs `a >= b` element by element, `asin(mean(x))` needs
`x` in [-1, 1]. Inputs are chosen in two steps (the spirit of NNSmith's input search, with
NumPy only):

1. Backward interval propagation (`wanted_intervals`): every declared domain is pushed
   from the op input that declares it up through the ops above it that let an interval
   through, as each op's spec says in its ``input_search`` field (`IntervalRule`): ops that
   only select, move or average their input's values (reshape, pad, sort, mean, pooling...),
   add, subtract, multiply and divide (solved against a constant operand's range, or
   splitting the interval between two computed ones), sums, products and normalisations;
   and, with no rule, elementwise unary ops (the preimage of the interval, found
   numerically with the op's own reference on a grid, so no op needs an inverse written
   for it). Each variable is drawn inside the intersection of what its consumers want: a
   sufficient condition in most graphs, so the first draw is usually clean.
2. A repair search: after each draw the reference interpreter checks every op's inputs
   against its domain; only the variables above the first violation are redrawn, from
   intervals shrinking around a random centre (towards a point where every intermediate
   is inside; a quarter of the width each time), while the other variables keep their values.

When no draw of the budget is clean, the generator's witness (`Graph.witness`: one value of
every variable under which the generator checked every op's domain as it built the graph)
is tried; when there is none either, the draw tainting the fewest ops is kept and every
result below a violation is marked unstable (never compared); `CaseInputs.op` names the
op whose domain could not be met, for a campaign's statistics.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .graph import Graph, Ref, TensorType
from .reference import TensorFacts, interpret, op_env
from .spec import InputSearch, IntervalRule

DRAWS = 8            # interpretations per case at most: the first draw and its repairs
WIDE = 64.0          # how far a float variable may leave its default range when it must
MARGIN = 0.01        # a propagated interval keeps this share of its width off each edge

# where the preimage of an elementwise op is looked for: dense near zero, sparse further out
_GRID = np.unique(np.concatenate([np.linspace(-WIDE, WIDE, 1025), np.linspace(-8.0, 8.0, 2049)]))


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
    return within_default(declared_domain(spec, slot, env, dtype), dtype)


def within_default(declared: tuple[float, float] | None, dtype: str) -> tuple[float, float]:
    """A declared domain (None: any value) narrowed to the dtype's default range."""
    lo, hi = default_domain(dtype)
    if declared is None:
        return lo, hi
    if declared[0] > hi or declared[1] < lo:   # a domain away from the default range (a spec's [100, 200])
        return declared
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


# --- step 1: backward interval propagation ------------------------------------------------------

Interval = tuple[float, float]


def _meet(a: Interval | None, b: Interval | None) -> Interval | None:
    """The intersection; None stands for 'anything'. An empty result keeps `a` (what is
    wanted cannot all hold: the draw then shows which op's domain is not met)."""
    if b is None:
        return a
    if a is None:
        return b
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo <= hi else a


def _inset(lo: float, hi: float) -> Interval | None:
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
        return None
    with np.errstate(over="ignore"):
        m = (hi - lo) * MARGIN
    return (lo + m, hi - m) if np.isfinite(m) else (lo, hi)


def _is_float(dtype: str) -> bool:
    return dtype.startswith("float")


def wanted_intervals(graph: Graph, specs) -> dict[Ref, Interval]:
    """For each tensor, an interval that keeps the op inputs it reaches inside their domains."""
    wanted: dict[Ref, Interval] = {}

    def want(ref: Ref, interval: Interval | None):
        if interval is not None:
            wanted[ref] = _meet(wanted.get(ref), interval)

    envs = {}
    for node in graph.operators:
        spec = specs.ops[node.op]
        envs[node.id] = env = op_env(spec, node, graph)
        for slot, item in enumerate(node.inputs):
            for ref in item if isinstance(item, list) else [item]:
                want(ref, declared_domain(spec, slot, env, graph.type_of(ref).dtype))
    for node in reversed(graph.operators):
        outs = [wanted.get(Ref(node.id, i)) for i in range(len(node.outputs))]
        if all(w is None for w in outs):
            continue
        spec = specs.ops[node.op]
        for ref, interval in _backward(spec, node, graph, envs[node.id], outs, wanted):
            want(ref, interval)
    return wanted


_PRODUCT_RULES = (IntervalRule.MATMUL, IntervalRule.OUTER, IntervalRule.CONVOLUTION)
_ARITHMETIC_RULES = (IntervalRule.ADD, IntervalRule.SUBTRACT, IntervalRule.MULTIPLY, IntervalRule.DIVIDE)
_SUM_RULES = (IntervalRule.SUM, IntervalRule.RUNNING_SUM)


def _backward(spec, node, graph, env, outs, wanted):
    """(input ref, interval) pairs that keep this node's outputs inside `outs`."""
    search: InputSearch | None = spec.input_search
    rule = search.rule if search is not None else None
    if rule is IntervalRule.PASSTHROUGH or (
            rule is IntervalRule.SCATTER and node.attrs.get("reduction", "update") in ("update", "min", "max")):
        yield from _passthrough(search, node, graph, outs)
        return
    if rule is IntervalRule.NORMALIZATION:
        yield from _norm(spec, node, outs)
        return
    w = outs[0]
    if w is None or not _is_float(node.outputs[0].dtype):
        return
    refs = node.input_refs()
    if rule is None and "elementwise" in spec.traits and len(refs) == 1 and _is_float(graph.type_of(refs[0]).dtype):
        yield refs[0], _preimage(spec, env, graph.type_of(refs[0]).dtype, node.outputs[0].dtype, w,
                                 wanted.get(refs[0]))
    elif rule in _ARITHMETIC_RULES and len(refs) == 2:
        yield from _arithmetic(rule, graph, refs, w, wanted)
    elif rule in _SUM_RULES:
        yield refs[0], _summands(rule, graph.type_of(refs[0]), node, w)
    elif rule in _PRODUCT_RULES and len(refs) == 2:
        yield from _factors(rule, graph, refs, w)


def _passthrough(search: InputSearch, node, graph, outs):
    """The inputs that reach the outputs unchanged must lie where every output must."""
    w = None
    for i, o in enumerate(outs):
        if search.outputs is None or i in search.outputs:
            w = _meet(w, o) if o is not None else w
    if w is None:
        return
    for slot in search.slots:
        item = node.inputs[slot]
        for ref in item if isinstance(item, list) else [item]:
            if graph.type_of(ref).dtype == node.outputs[0].dtype:
                yield ref, w


def _summands(rule: IntervalRule, t: TensorType, node, w: Interval) -> Interval | None:
    """Where the terms of sums of 1..L of them (exactly L for `sum`) lie when each sum is in `w`."""
    lo, hi = w
    if rule is IntervalRule.SUM:
        terms = max(1, int(np.prod(t.shape)) // max(1, int(np.prod(node.outputs[0].shape))))
        return _inset(lo / terms, hi / terms)
    terms = t.shape[node.attrs["axis"]] if t.shape else 1
    if lo >= 0:
        return _inset(lo, hi / terms)
    if hi <= 0:
        return _inset(lo / terms, hi)
    return _inset(lo / terms, hi / terms)


def _factors(rule: IntervalRule, graph, refs, w: Interval):
    """Small enough factors keep sums of K products inside `w`."""
    a, b = refs
    ta, tb = graph.type_of(a), graph.type_of(b)
    if rule is IntervalRule.MATMUL:
        terms = ta.shape[-1]
    elif rule is IntervalRule.OUTER:
        terms = 1
    else:   # convolutions: weight is (out_channels, in_channels / groups, kernel...)
        terms = int(np.prod(tb.shape[1:]))
    lo, hi = w
    consts = [graph.nodes[r.node].kind == "const" for r in refs]
    if lo < 0 < hi:
        reach = min(-lo, hi) / terms
        if any(consts):
            if all(consts):
                return
            known, other = (a, b) if consts[0] else (b, a)
            m = float(np.max(np.abs(np.asarray(graph.nodes[known.node].value, dtype=np.float64)), initial=0))
            if m > 0:
                yield other, _inset(-reach / m, reach / m)
            return
        yield a, _inset(-np.sqrt(reach), np.sqrt(reach))
        yield b, _inset(-np.sqrt(reach), np.sqrt(reach))
    elif 0 < lo < hi and rule in (IntervalRule.MATMUL, IntervalRule.OUTER) and not any(consts):
        for r in refs:
            yield r, _inset(np.sqrt(lo / terms), np.sqrt(hi / terms))


def _norm(spec, node, outs):
    """Gamma small and beta near the middle keep a normalisation's result inside `outs[0]`."""
    refs = {i.name: item for i, item in zip(spec.inputs, node.inputs)}
    for name, i in spec.input_search.unchanged:   # batch_norm returns moving_mean and moving_var
        if i < len(outs) and outs[i] is not None:
            yield refs[name], outs[i]
    w = outs[0]
    if w is None or not _is_float(node.outputs[0].dtype):
        return
    bound = spec.input_search.bound
    lo, hi = w
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    scale = node.attrs.get("scale", True) and ("gamma" in refs or "weight" in refs)
    center = node.attrs.get("center", True) and "beta" in refs
    if center:
        yield refs["beta"], _inset(mid - half / 2, mid + half / 2)
        reach = half / 2
    elif lo <= 0 <= hi:
        reach = min(-lo, hi)
    else:
        return
    if scale:
        yield refs.get("gamma", refs.get("weight")), _inset(-reach / bound, reach / bound)


def _preimage(spec, env, in_dtype, out_dtype, w: Interval, current: Interval | None) -> Interval | None:
    """The widest run of grid points an elementwise op maps into `w` (within `current`),
    preferring the run that meets the default range most."""
    x = _GRID.astype(in_dtype)
    env = dict(env)
    env[spec.inputs[0].name] = x
    try:
        with np.errstate(all="ignore"):
            y = np.asarray(spec.reference(env)).astype(out_dtype).astype(np.float64)
    except Exception:  # noqa: BLE001 - no preimage known: leave the input unconstrained
        return None
    if y.shape != x.shape:
        return None
    inner = _inset(*w)   # off the edges, where rounding decides whether a value is inside
    if inner is None:
        return None
    ok = np.isfinite(y) & (y >= inner[0]) & (y <= inner[1])
    if current is not None:
        ok &= (x >= current[0]) & (x <= current[1])
    if not ok.any():
        return None
    edges = np.flatnonzero(np.diff(np.concatenate([[0], ok.view(np.int8), [0]])))
    runs = list(zip(edges[::2], edges[1::2] - 1))
    dlo, dhi = default_domain(in_dtype)

    def score(run):
        lo, hi = float(x[run[0]]), float(x[run[1]])
        return (max(0.0, min(hi, dhi) - max(lo, dlo)), hi - lo)
    i, j = max(runs, key=score)
    return float(x[i]), float(x[j])


def _range(graph, ref: Ref, wanted) -> Interval | None:
    """A constant's actual range, else what is wanted of the tensor (None: unknown)."""
    node = graph.nodes[ref.node]
    if node.kind == "const":
        v = np.asarray(node.value, dtype=np.float64)
        return (float(v.min()), float(v.max())) if v.size else None
    return wanted.get(ref)


def _arithmetic(rule: IntervalRule, graph, refs, w: Interval, wanted):
    a, b = refs
    if a == b:
        return
    lo, hi = w
    ra, rb = _range(graph, a, wanted), _range(graph, b, wanted)
    const_a, const_b = graph.nodes[a.node].kind == "const", graph.nodes[b.node].kind == "const"
    if const_b or const_a:
        # solve for the computed operand against every value of the constant one
        other, known, known_is_b = (a, rb, True) if const_b else (b, ra, False)
        if known is None or const_a and const_b:
            return
        yield other, _solve(rule, known, known_is_b, lo, hi)
        return
    # two computed operands: each gets a share of the interval that works whatever the other is
    if rule is IntervalRule.ADD:
        yield a, _inset(lo / 2, hi / 2)
        yield b, _inset(lo / 2, hi / 2)
    elif rule is IntervalRule.SUBTRACT:
        yield a, _inset(lo / 2, hi / 2)
        yield b, _inset(-hi / 2, -lo / 2)
    elif rule is IntervalRule.MULTIPLY and lo >= 0 and hi > 0:
        yield a, _inset(np.sqrt(max(lo, 0.0)), np.sqrt(hi))
        yield b, _inset(np.sqrt(max(lo, 0.0)), np.sqrt(hi))
    elif rule is IntervalRule.MULTIPLY and lo < 0 < hi:
        r = np.sqrt(min(-lo, hi))
        yield a, _inset(-r, r)
        yield b, _inset(-r, r)
    elif rule is IntervalRule.DIVIDE and rb is not None and rb[0] > 0:
        yield a, _solve(rule, rb, True, lo, hi)


def _solve(rule: IntervalRule, known: Interval, known_is_b: bool, lo: float, hi: float) -> Interval | None:
    """The values x with `x op k` (or `k op x`) in [lo, hi] for every k in `known`."""
    k0, k1 = known
    if rule is IntervalRule.ADD:
        return _inset(lo - k0, hi - k1)
    if rule is IntervalRule.SUBTRACT:
        return _inset(lo + k1, hi + k0) if known_is_b else _inset(k1 - hi, k0 - lo)
    if k0 <= 0 <= k1 and not (rule is IntervalRule.MULTIPLY and lo <= 0 <= hi):
        return None
    if rule is IntervalRule.MULTIPLY:
        if k0 <= 0 <= k1:
            nz = [abs(k) for k in (k0, k1) if k != 0]
            r = min(-lo, hi) / max(nz) if nz else WIDE
            return _inset(-r, r)
        bounds = [sorted((lo / k, hi / k)) for k in (k0, k1)]
        return _inset(max(b[0] for b in bounds), min(b[1] for b in bounds))
    if known_is_b:   # x / k in [lo, hi] for k in known (no zero in it)
        bounds = [sorted((lo * k, hi * k)) for k in (k0, k1)]
        return _inset(max(b[0] for b in bounds), min(b[1] for b in bounds))
    return None      # k / x: a division by a drawn value, left to the divisor's own domain


def leaf_domains(graph: Graph, specs) -> dict[int, tuple[float, float]]:
    """For each variable, where to draw it: inside what every op below it wants of it, within
    its default range where that leaves room, else as far out as needed (up to WIDE)."""
    wanted = wanted_intervals(graph, specs)
    domains = {}
    for n in graph.variables:
        dtype = n.type.dtype
        dlo, dhi = default_domain(dtype)
        w = wanted.get(Ref(n.id))
        if w is None or dtype == "bool":
            domains[n.id] = (dlo, dhi)
            continue
        lo, hi = w
        if not _is_float(dtype):
            lo, hi = float(np.ceil(lo)), float(np.floor(hi))
        inside = (max(lo, dlo), min(hi, dhi))
        wide = (max(lo, -WIDE), min(hi, WIDE))
        if inside[0] <= inside[1] and inside[1] - inside[0] >= 0.5 * min(wide[1] - wide[0], dhi - dlo):
            domains[n.id] = inside
        elif wide[0] <= wide[1]:
            domains[n.id] = wide
        else:   # disjoint domains: draw at the edge; the interpreter's check then rejects the draw
            domains[n.id] = (inside[0], max(inside[0], inside[1]))
    return domains


# --- checking a draw -----------------------------------------------------------------------------

@dataclass
class Violations:
    """What a draw of inputs does outside the ops' domains."""
    tainted: set[int]          # op nodes whose results are not comparable (and those below)
    trap: str | None           # a violation that may trap at run time (integer division by 0)
    first: str | None          # the first violation, for the log
    node: int | None = None    # the op node of the first violation
    slot: int | None = None    # its input outside the domain (None: its result is NaN, Inf or failed)

    @property
    def clean(self) -> bool:
        return not self.tainted


def find_violations(graph: Graph, specs, facts: dict[Ref, TensorFacts]) -> Violations:
    """Op inputs outside their declared domain, and NaN/Inf results, with what they taint."""
    tainted: set[int] = set()
    trap = first = None
    first_node = first_slot = None
    for node in graph.operators:
        spec = specs.ops[node.op]
        refs = node.input_refs()
        if any(r.node in tainted for r in refs):
            tainted.add(node.id)
            continue
        slot, problem = _input_outside_domain(spec, node, graph, facts)
        if problem is None and any(facts[Ref(node.id, i)].failed for i in range(len(node.outputs))):
            problem = (f"node {node.id} ({node.op}) has no defined result: the reference cannot compute it, "
                       "or its integer result overflows (undefined in TVM)")
        if problem is None and any(not_finite(facts[Ref(node.id, i)].value) for i in range(len(node.outputs))):
            problem = f"node {node.id} ({node.op}) produces NaN or Inf"
        if problem is None:
            continue
        tainted.add(node.id)
        if first is None:
            first, first_node, first_slot = problem, node.id, slot
        if spec.may_trap and trap is None:
            trap = problem
    return Violations(tainted, trap, first, first_node, first_slot)


def not_finite(v: np.ndarray) -> bool:
    return v.dtype.kind == "f" and not np.all(np.isfinite(v))


def within(value: np.ndarray, domain: tuple[float, float] | None) -> bool:
    """Whether every element lies in `domain` (None: anything); booleans and empty tensors
    have no domain to leave."""
    if domain is None or value.dtype.kind == "b" or value.size == 0:
        return True
    return bool(value.min() >= domain[0] and value.max() <= domain[1])


def _input_outside_domain(spec, node, graph, facts) -> tuple[int | None, str | None]:
    env = op_env(spec, node, graph)
    for slot, item in enumerate(node.inputs):
        for ref in item if isinstance(item, list) else [item]:
            value = facts[ref].value
            if value.dtype.kind == "b" or value.size == 0:
                continue   # no domain to leave (and none to evaluate for bool)
            declared = declared_domain(spec, slot, env, value.dtype.name)
            if not within(value, declared):
                lo, hi = declared
                return slot, f"input {slot} of node {node.id} ({node.op}) leaves [{lo}, {hi}]"
    return None, None


# --- step 2: drawing and repairing --------------------------------------------------------------

@dataclass
class CaseInputs:
    values: dict[int, np.ndarray]        # variable id -> value
    facts: dict[Ref, TensorFacts]        # reference result of every tensor
    runnable: bool                       # False: every draw may trap (never run such a case)
    reason: str = ""                     # the first domain violation of the kept draw, if any
    op: str = ""                         # the op whose domain the kept draw leaves ("" if none)
    draws: int = 0                       # draws interpreted to choose these inputs

    @property
    def comparable(self) -> bool:
        """Every result can be compared: the kept draw violates no domain."""
        return self.runnable and not self.reason


def _variables_above(graph: Graph) -> dict[int, frozenset[int]]:
    """For every node, the variables it is computed from."""
    above: dict[int, frozenset[int]] = {}
    for node in graph.nodes:
        if node.kind == "var":
            above[node.id] = frozenset([node.id])
        elif node.kind == "const":
            above[node.id] = frozenset()
        else:
            above[node.id] = frozenset().union(*(above[r.node] for r in node.input_refs()))
    return above


def _shrunk(rng, domain: tuple[float, float], factor: float, dtype: str) -> tuple[float, float]:
    """A sub-interval of `domain`, `factor` of its width, around a random centre."""
    lo, hi = domain
    width = (hi - lo) * factor
    centre = rng.uniform(lo + width / 2, hi - width / 2) if hi - lo > width else (lo + hi) / 2
    lo2, hi2 = centre - width / 2, centre + width / 2
    if not _is_float(dtype):
        lo2, hi2 = np.ceil(lo2), np.floor(hi2)
        if lo2 > hi2:
            lo2 = hi2 = float(np.clip(np.round(centre), lo, hi))
    return float(lo2), float(hi2)


def choose_inputs(graph: Graph, specs, rng) -> CaseInputs:
    """A draw with no violation if the search finds one; else the one tainting the fewest ops.

    Results below a violation are marked unstable (not compared); a draw that may trap
    is kept only if no other draw exists, and then the case is built but not run.
    """
    domains = leaf_domains(graph, specs)
    above = _variables_above(graph)
    values = {n.id: draw(rng, n.type, domains[n.id]) for n in graph.variables}
    types = {n.id: n.type for n in graph.variables}
    best = None
    draws = 0
    shrink = 1.0
    while True:
        facts = interpret(graph, specs, values)
        draws += 1
        found = find_violations(graph, specs, facts)
        key = (found.trap is not None, len(found.tainted))
        if best is None or key < best[0]:
            best = (key, values, facts, found)
        if found.clean or draws >= DRAWS:
            break
        node = graph.nodes[found.node]
        if found.slot is None:
            culprit = above[node.id]
        else:
            item = node.inputs[found.slot]
            culprit = frozenset().union(*(above[r.node] for r in (item if isinstance(item, list) else [item])))
        if not culprit:
            break   # computed from constants alone: no draw changes it
        shrink /= 4
        values = dict(values)
        for vid in sorted(culprit):
            values[vid] = draw(rng, types[vid], _shrunk(rng, domains[vid], shrink, types[vid].dtype))
    if not best[3].clean and graph.witness is not None:
        # the generator's witness meets every domain by construction: the search's last resort
        # (variables added after generation, as a disruptive case's, keep the search's values)
        witness = {**best[1], **{k: v for k, v in graph.witness.items() if k in best[1]}}
        facts = interpret(graph, specs, witness)
        found = find_violations(graph, specs, facts)
        draws += 1
        if found.clean:
            best = ((False, 0), witness, facts, found)
    _, values, facts, found = best
    for node_id in found.tainted:
        for i in range(len(graph.nodes[node_id].outputs)):
            facts[Ref(node_id, i)].stable = False
    op = graph.nodes[found.node].op if found.node is not None else ""
    return CaseInputs(values, facts, found.trap is None, found.first or "", op, draws)
