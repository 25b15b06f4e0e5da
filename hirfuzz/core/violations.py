"""Disruptive mode: programs that break exactly one constraint of one operator (HIRGen 3.1.5).

A case is a valid graph (possibly empty) plus one `Violation`: an operator applied to
tensors that break one of its spec's constraints:

    dtype-unsupported   an input dtype the op does not accept
    dtype-mismatch      two inputs whose dtypes differ, each accepted on its own (not a pair
                        the dialect documents as valid: its `accepts`)
    shape-incompatible  a later input whose shape breaks a constraint (broadcast, matmul...)
    rank-wrong          an anchor of a rank outside the spec's range
    attr-out-of-range   an attribute value that breaks the spec's rules (axis beyond rank,
                        zero or negative sizes and strides)
    match-cast-lie      a variable declared through match_cast with a shape that differs
                        from the one it has at run time
    arity               one argument too few or too many

The violating call sits in main, in a private global function, or in a closure (`wrap`).

The violating call consumes variables or results of the valid graph; `violation_plan`
describes it as plain data, each dialect's `apply_violation` adds it to the lowered module
with TVM calls alone, and the reproducer carries the same function's source, so the script
builds exactly what the worker built. The oracle sorts
what TVM does into clean rejection (expected), poor diagnostic, crash and silent
acceptance (findings).
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass

import numpy as np

from . import draws
from . import expr as E
from .generate import GraphBuilder, Rejected
from .graph import Graph, Node, Ref, TensorType
from .reference import TensorInfo
from .spec import ALL_DTYPES, VIOLATION_KINDS

KINDS = VIOLATION_KINDS  # named in spec.py, whose `limitations` entries name them
CLASSES = ("clean-rejection", "poor-diagnostic", "crash", "silent-acceptance", "accepted-unlisted-dtype")
# exceptions that are TVM's user-facing diagnostics; anything else (InternalError,
# AttributeError, IndexError, ...) leaves the user with an internal failure
CLEAN_ERRORS = ("ValueError", "TypeError", "TVMError", "DiagnosticError")
BAD_ATTR_VALUES = (-1, 0, -7, 5, 99)


@dataclass
class Violation:
    kind: str
    op: str
    dtype: str
    inputs: list              # Ref or list of Ref, per spec input
    attrs: dict
    detail: str
    lie: dict | None = None   # match-cast-lie: {"var": node id, "actual": shape}
    arity: int = 0            # arity: -1 drops the last argument, +1 repeats the first
    wrap: str | None = None   # the violating call sits in main, a global function, or a closure
    attr: str | None = None   # attr-out-of-range: the attribute broken

    def to_json(self) -> dict:
        return {"kind": self.kind, "op": self.op, "dtype": self.dtype, "detail": self.detail,
                "inputs": [[[r.node, r.index] for r in i] if isinstance(i, list) else [i.node, i.index]
                           for i in self.inputs],
                "attrs": self.attrs, "lie": self.lie, "arity": self.arity, "wrap": self.wrap, "attr": self.attr}


def applicable_kinds(spec) -> list[str]:
    kinds = ["match-cast-lie", "arity"]
    if unsupported_dtypes(spec):
        kinds.append("dtype-unsupported")
    if sum(i.dtype is None for i in spec.inputs) >= 2 and len(spec.dtypes) >= 2:
        kinds.append("dtype-mismatch")
    if len(spec.inputs) >= 2:
        kinds.append("shape-incompatible")
    lo, hi = spec.inputs[0].rank
    if lo == hi:
        # a single rank is a layout requirement (NCHW, OIHW); a wider range may just be
        # hirfuzz's own preference, which TVM has every right to accept
        kinds.append("rank-wrong")
    if _draws_int_attrs(spec):
        kinds.append("attr-out-of-range")
    return sorted(kinds)


def unsupported_dtypes(spec) -> list[str]:
    """The dtypes the op does not accept: neither generated nor left out for a TVM bug on
    valid programs (the spec's `tvm_bugs`, strict mode's known bugs, not violations)."""
    valid = set(spec.dtypes) | set(spec.bug_dtypes())
    return [d for d in ALL_DTYPES if d not in valid]


_INT_ATTRS: dict[str, bool] = {}


def _draws_int_attrs(spec) -> bool:
    """Does the op take integer attributes? Asked of a few valid draws, once per op."""
    if spec.name not in _INT_ATTRS:
        rng = np.random.default_rng(0)
        found = spec.solve is not None
        for _ in range(8 if not found else 0):
            try:
                ins = GraphBuilder(None, rng).propose(spec, spec.dtypes[0])
            except (Rejected, E.ExprError):
                continue
            if any(_is_int_like(ins.attrs.get(n)) for n in spec.attrs):
                found = True
                break
        _INT_ATTRS[spec.name] = found
    return _INT_ATTRS[spec.name]


def _int_attrs(spec):
    yield from spec.attrs
    if spec.solve is not None:
        yield from spec.solve.vars


# --- building a violation -----------------------------------------------------------------

class ViolationBuilder:
    """Draws a valid insertion for the op from a GraphBuilder, then breaks one thing."""

    def __init__(self, builder: GraphBuilder, specs, rng):
        self.b = builder
        self.specs = specs
        self.rng = rng

    def new_var(self, t: TensorType) -> Ref:
        node = self.b.graph.add(Node(len(self.b.graph.nodes), "var", [t]))
        return Ref(node.id)

    def _materialise(self, ins) -> list:
        """The proposal's new leaves become variables (constants would be folded away)."""
        remap = {tmp: self.new_var(t) for tmp, t, _d, _s in ins.leaves}
        fix = lambda r: remap[r.node] if r.node < 0 else r  # noqa: E731
        return [[fix(r) for r in i] if isinstance(i, list) else fix(i) for i in ins.inputs]

    def build(self, spec, kind: str) -> Violation:
        rng = self.rng
        if kind == "dtype-unsupported":
            dtype = spec.dtypes[int(rng.integers(len(spec.dtypes)))]
            ins = self.b.propose(spec, dtype)
            bad = unsupported_dtypes(spec)
            new = bad[int(rng.integers(len(bad)))]
            inputs = self._materialise(ins)
            for slot, ispec in enumerate(spec.inputs):
                if ispec.dtype is None:
                    inputs[slot] = self._retyped(inputs[slot], dtype=new)
            return Violation(kind, spec.name, new, inputs, ins.attrs, f"{spec.name} on {new}")
        dtype = spec.dtypes[int(rng.integers(len(spec.dtypes)))]
        ins = self.b.propose(spec, dtype)
        inputs = self._materialise(ins)
        attrs = dict(ins.attrs)
        if kind == "dtype-mismatch":
            return self._break_dtype(spec, dtype, inputs, attrs)
        if kind == "shape-incompatible":
            return self._break_shape(spec, dtype, inputs, attrs)
        if kind == "rank-wrong":
            lo, hi = spec.inputs[0].rank
            ranks = [r for r in range(0, 5) if r != lo]
            rank = ranks[int(rng.integers(len(ranks)))]
            t = TensorType(tuple(draws.rand_shape(rng, rank)), self.b.graph.type_of(_first(inputs[0])).dtype)
            inputs[0] = self.new_var(t)
            return Violation(kind, spec.name, dtype, inputs, attrs, f"anchor of rank {rank}, allowed {lo}..{hi}")
        if kind == "attr-out-of-range":
            return self._break_attr(spec, dtype, inputs, attrs)
        if kind == "match-cast-lie":
            slot = int(rng.integers(len(spec.inputs)))
            ref = _first(inputs[slot])
            t = self.b.graph.type_of(ref)
            if not t.shape:
                raise Rejected("a rank-0 tensor has no dimension to lie about")
            var = self.new_var(t)
            inputs[slot] = [var] + inputs[slot][1:] if isinstance(inputs[slot], list) else var
            actual = list(t.shape)
            axis = int(rng.integers(len(actual)))
            actual[axis] = actual[axis] + 1 if actual[axis] < draws.MAX_DIM or rng.random() < 0.5 else actual[axis] - 1
            return Violation(kind, spec.name, dtype, inputs, attrs,
                             f"declared {list(t.shape)}, passed {actual}", lie={"var": var.node, "actual": actual})
        if kind == "arity":
            # a call may go without its optional trailing arguments: dropping one is valid
            change = -1 if rng.random() < 0.5 and not spec.optional_args else 1
            return Violation(kind, spec.name, dtype, inputs, attrs,
                             "one argument too few" if change < 0 else "one argument too many", arity=change)
        raise ValueError(f"unknown violation kind {kind}")

    def _retyped(self, item, dtype: str):
        refs = item if isinstance(item, list) else [item]
        new = [self.new_var(TensorType(self.b.graph.type_of(r).shape, dtype)) for r in refs]
        return new if isinstance(item, list) else new[0]

    def _env(self, spec, dtype, inputs, attrs) -> dict:
        env = dict(attrs)
        env["dtype"] = dtype
        for ispec, item in zip(spec.inputs, inputs):
            env[ispec.name] = ([TensorInfo.of(self.b.graph.type_of(r)) for r in item] if isinstance(item, list)
                               else TensorInfo.of(self.b.graph.type_of(item)))
        return env

    def _spec_rejects(self, spec, env) -> bool:
        """The spec says these inputs and attributes are invalid, and the dialect's TVM does
        not document them as valid (`accepts` in the op's dialect block). A result with a
        zero extent is valid TVM (an empty slice, a tile by 0): only a negative one is not."""
        if self._documented_valid(spec, env):
            return False
        try:
            if not all(bool(c(env)) for c in spec.constraints):
                return True
            if spec.solve is not None and not all(bool(c(env)) for c in spec.solve.constraints):
                return True
            shapes = spec.out_shapes(env) if spec.out_shapes is not None else [
                spec.out_shape(env) if spec.out_shape is not None else env[spec.inputs[0].name].shape]
            return any(int(d) < 0 for s in shapes for d in s)
        except (E.ExprError, TypeError, ValueError, IndexError, ZeroDivisionError):
            return True

    @staticmethod
    def _documented_valid(spec, env) -> bool:
        for condition in spec.accepts:
            try:
                if bool(condition(env)):
                    return True
            except (E.ExprError, TypeError, ValueError, IndexError, ZeroDivisionError):
                continue  # a condition that cannot be evaluated (a stride of 0) does not hold
        return False

    def _break_dtype(self, spec, dtype, inputs, attrs) -> Violation:
        """A later input retyped to another of the op's dtypes, unless the dialect's TVM
        documents that pair as valid (comparisons promote their operands, full_like casts
        its fill value): such a dtype is passed over, and an op with none left is rejected."""
        rng = self.rng
        slots = [s for s, i in enumerate(spec.inputs) if i.dtype is None and s > 0]
        slot = slots[int(rng.integers(len(slots)))]
        env = self._env(spec, dtype, inputs, attrs)
        name, info = spec.inputs[slot].name, env[spec.inputs[slot].name]
        candidates = [d for d in spec.dtypes if d != dtype]
        while candidates:
            new = candidates.pop(int(rng.integers(len(candidates))))
            env[name] = ([TensorInfo(i.shape, new) for i in info] if isinstance(info, list)
                         else TensorInfo(info.shape, new))
            if self._documented_valid(spec, env):
                continue
            inputs[slot] = self._retyped(inputs[slot], dtype=new)
            return Violation("dtype-mismatch", spec.name, dtype, inputs, attrs,
                             f"input {slot} is {new}, the others {dtype}")
        raise Rejected(f"every other dtype of input {slot} is documented valid")

    def _break_shape(self, spec, dtype, inputs, attrs) -> Violation:
        rng = self.rng
        slot = 1 + int(rng.integers(len(spec.inputs) - 1))
        ref = _first(inputs[slot])
        t = self.b.graph.type_of(ref)
        for _ in range(20):
            shape = list(t.shape)
            if shape and rng.random() < 0.7:
                axis = int(rng.integers(len(shape)))
                shape[axis] = draws.rand_dim(rng, 1, draws.MAX_DIM + 2)
            else:
                shape = draws.rand_shape(rng, draws.rand_int(rng, 0, 4))
            trial = list(inputs)
            new = self.new_var(TensorType(tuple(shape), t.dtype))
            trial[slot] = [new] + inputs[slot][1:] if isinstance(inputs[slot], list) else new
            if self._spec_rejects(spec, self._env(spec, dtype, trial, attrs)):
                return Violation("shape-incompatible", spec.name, dtype, trial, attrs,
                                 f"input {slot} has shape {shape}")
        raise Rejected("no incompatible shape found")

    def _break_attr(self, spec, dtype, inputs, attrs) -> Violation:
        rng = self.rng
        names = [n for n in _int_attrs(spec) if _is_int_like(attrs.get(n))]
        if not names:
            raise Rejected("no integer attribute drawn")
        for _ in range(20):
            name = names[int(rng.integers(len(names)))]
            trial = copy.deepcopy(attrs)
            value = BAD_ATTR_VALUES[int(rng.integers(len(BAD_ATTR_VALUES)))]
            if isinstance(trial[name], list):
                trial[name][int(rng.integers(len(trial[name])))] = value
            else:
                trial[name] = value
            if _same_call(spec, dtype, inputs, attrs, trial):
                continue  # the attribute never reaches the dialect's op (Relax's conv2d takes its
                #           kernel size and channels from the weight): nothing was broken
            if self._spec_rejects(spec, self._env(spec, dtype, inputs, trial)):
                return Violation("attr-out-of-range", spec.name, dtype, inputs, trial, f"{name} = {trial[name]}",
                                 attr=name)
        raise Rejected("no out-of-range attribute value found")


def _same_call(spec, dtype: str, inputs: list, attrs: dict, trial: dict) -> bool:
    """Do the two attribute sets give the dialect's op the very same arguments?"""
    names = {i.name: item for i, item in zip(spec.inputs, inputs)}
    try:
        return repr(spec.call_arguments(attrs, dtype, names)) == repr(spec.call_arguments(trial, dtype, names))
    except (E.ExprError, TypeError, ValueError, IndexError, ZeroDivisionError):
        return False


def _first(item) -> Ref:
    return item[0] if isinstance(item, list) else item


def _is_int_like(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, list) and bool(v) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def coverage_key(v: Violation, graph: Graph) -> tuple:
    """Violation coverage: (op, kind, dtype, shape class = rank of the first input)."""
    return (v.op, v.kind, v.dtype, len(graph.type_of(_first(v.inputs[0])).shape))


def generate_violation(specs, rng, n_ops: int, seen: set, guided: bool = True,
                       ops: list[str] | None = None, max_tries: int = 200) -> tuple[Graph, Violation]:
    """A valid graph of n_ops - 1 operators and one violation that consumes its results."""
    from .coverage import Coverage
    from .generate import generate_graph
    names = ops if ops is not None else specs.names()
    base = generate_graph(specs, rng, n_ops - 1, Coverage(), guided=False, ops=ops) if n_ops > 1 else Graph()
    best = None
    for _ in range(max_tries):
        graph = Graph.from_json(base.to_json())
        graph.witness = base.witness   # the valid part's inputs are searched as a strict case's
        builder = GraphBuilder(specs, rng)
        builder.graph = graph
        for ref in graph.results() + [Ref(n.id) for n in graph.variables]:
            builder.by_dtype.setdefault(graph.type_of(ref).dtype, []).append(ref)
        spec = specs.ops[names[int(rng.integers(len(names)))]]
        kinds = applicable_kinds(spec)
        kind = kinds[int(rng.integers(len(kinds)))]
        try:
            violation = ViolationBuilder(builder, specs, rng).build(spec, kind)
        except (Rejected, E.ExprError):
            continue
        try:  # the plan travels to workers and into reproducers as plain data
            json.dumps(violation_plan(violation, graph, specs))
        except (TypeError, E.ExprError):
            continue
        violation.wrap = (None, "global", "local")[int(rng.integers(3))]
        key = coverage_key(violation, graph)
        best = (graph, violation)
        if not guided or key not in seen:
            break
    if best is None:
        raise Rejected("no violation could be built")
    graph, violation = best
    seen.add(coverage_key(violation, graph))
    return graph, violation


# --- the violation as plain data, for the dialect's apply_violation ---------------------------

def violation_plan(violation: Violation, graph: Graph, specs) -> dict:
    """What `apply_violation` needs, as plain data: the call's arguments as references."""
    spec = specs.ops[violation.op]

    class Marker:
        def __init__(self, ref: Ref):
            self.ref = ref

    args_env = {i.name: ([Marker(r) for r in item] if isinstance(item, list) else Marker(item))
                for i, item in zip(spec.inputs, violation.inputs)}
    args, kwargs = spec.call_arguments(violation.attrs, violation.dtype, args_env)
    results = graph.results()
    params = [n.id for n in graph.variables]

    def where(ref: Ref):
        if graph.nodes[ref.node].kind == "var":
            return ["param", params.index(ref.node)]
        return ["result", results.index(ref)]

    def encode(a):
        if isinstance(a, Marker):
            return where(a.ref)
        if isinstance(a, list):
            return {"list": [encode(x) for x in a]}
        return {"value": a}
    return {"op": spec.dialect_op, "args": [encode(a) for a in args], "kwargs": kwargs,
            "n_results": len(results), "arity": violation.arity, "wrap": violation.wrap,
            "lie": None if violation.lie is None else {"param": params.index(violation.lie["var"])}}


# --- the disruptive oracle ------------------------------------------------------------------

def classify(answer, violation: dict) -> tuple[str, str]:
    """(class, stage) for what TVM did with an invalid program."""
    if not isinstance(answer, dict):  # the worker died (a signal, a hang)
        return "crash", "worker"
    if answer["status"] == "ok":
        stage = "run" if answer.get("outputs") else "build"
        if violation.get("kind") == "dtype-unsupported":
            # a spec's dtypes are those hirfuzz generates and those left out for a TVM bug
            # (`tvm_bugs`, never drawn here), not a contract TVM documents (one may be left
            # out for a reference hirfuzz lacks): TVM running the op on another dtype is
            # counted, never filed as a silent acceptance
            return "accepted-unlisted-dtype", stage
        return "silent-acceptance", stage
    stage, exc = answer["stage"], answer["exc_type"]
    if violation.get("kind") == "match-cast-lie" and stage == "run" and "match_cast" in answer["message"]:
        return "clean-rejection", stage  # the run-time check fired, as it should
    if exc in CLEAN_ERRORS and "InternalError" not in answer["message"][:200]:
        return "clean-rejection", stage
    return "poor-diagnostic", stage


def draw_inputs(graph: Graph, violation: dict, specs, rng, check: bool = True):
    """Inputs for every variable, and the search's verdict on the valid part (CaseInputs).

    The valid part's inputs come from the in-domain search, as a strict case's do: a
    division by zero or an index out of range there would crash the program and be blamed
    on the violation. Variables only the violating call reads are drawn from the domain its
    op's spec declares for their slot (indices in range for take, gather and scatter, a
    divisor away from zero), so that the violation is the one constraint broken; the lied
    one gets its real (different) shape, which no op of the valid part reads. With `check`,
    an input of the violating call outside its slot's domain (a result of the valid part)
    rejects the case: it would break a second constraint (Rejected).
    """
    from .inputs import choose_inputs, default_domain, draw, within, within_default
    chosen = choose_inputs(graph, specs, rng)
    spec = specs.ops.get(violation.get("op"))
    call = _call_node(violation, graph) if spec is not None else None
    env = _call_env(spec, call, graph)
    read_by_valid_part = {r.node for n in graph.operators for item in n.inputs
                          for r in (item if isinstance(item, list) else [item])}
    slots = _slots_of(call) if call is not None else {}
    lie = violation.get("lie")
    values = []
    for n in graph.variables:
        t = TensorType(tuple(lie["actual"]), n.type.dtype) if lie is not None and lie["var"] == n.id else n.type
        if n.id in read_by_valid_part:
            values.append(chosen.values[n.id])
        elif n.id in slots:
            values.append(draw(rng, t, within_default(_call_domain(spec, slots[n.id], env, t.dtype), t.dtype)))
        else:
            values.append(draw(rng, t, default_domain(t.dtype)))
    if check and call is not None:
        found = dict(zip((n.id for n in graph.variables), values))
        for ref, slot in _call_refs(call):
            value = found[ref.node] if graph.nodes[ref.node].kind == "var" else chosen.facts[ref].value
            if not within(value, _call_domain(spec, slot, env, value.dtype.name)):
                raise Rejected(f"input {slot} of the violating {violation['op']} leaves its domain: a second "
                               "broken constraint")
    return values, chosen


def _call_node(violation: dict, graph: Graph) -> Node:
    """The violating call as a node (not in the graph): its op, dtype, inputs and attributes."""
    def ref(pair):
        return Ref(int(pair[0]), int(pair[1]))
    inputs = [[ref(p) for p in item] if not item or isinstance(item[0], list) else ref(item)
              for item in violation["inputs"]]
    return Node(-1, "op", [], op=violation["op"], dtype=violation["dtype"], inputs=inputs,
                attrs=dict(violation.get("attrs") or {}))


def _call_env(spec, call: Node | None, graph: Graph) -> dict | None:
    if call is None:
        return None
    from .reference import op_env
    return op_env(spec, call, graph)


def _call_refs(call: Node):
    """(reference, input slot) of each tensor the violating call reads."""
    for slot, item in enumerate(call.inputs):
        for r in item if isinstance(item, list) else [item]:
            yield r, slot


def _slots_of(call: Node) -> dict[int, int]:
    """The input slot each variable the violating call reads feeds (its first)."""
    slots: dict[int, int] = {}
    for r, slot in _call_refs(call):
        slots.setdefault(r.node, slot)
    return slots


def _call_domain(spec, slot: int, env: dict | None, dtype: str) -> tuple[float, float] | None:
    """The domain the op's spec declares for `slot`, under the violating call's inputs and
    attributes. Where the violation leaves it undefined (an index range along an axis out of
    range), an integer input gets [0, 0], in range along any non-empty axis."""
    from .inputs import declared_domain
    if spec is None or env is None or slot >= len(spec.inputs) or spec.inputs[slot].domain is None:
        return None
    try:
        domain = declared_domain(spec, slot, env, dtype)
    except (E.ExprError, TypeError, ValueError, IndexError, ZeroDivisionError, KeyError):
        domain = None
    if domain is not None and domain[0] <= domain[1]:
        return domain
    return (0.0, 0.0) if dtype.startswith(("int", "uint")) else None
