"""Strict graph generation, coverage guided (HIRGen Algorithm 1, Isra's construction order).

Operators are inserted one at a time. For each attempt an op and a data type are drawn;
its anchor input is picked among existing tensors of that type (or created), attributes are
drawn by the spec's rules (integers under constraints by `solve`), and the other inputs are
picked among existing tensors that satisfy the spec's constraints, or created as new
variables or constants. The insertion is kept only if it adds op-dtype, op-shape, op-edge
or op-path coverage (or, with guidance off, always: HIRGen's random baseline). Every
choice comes from one `numpy.random.Generator`, so a seed gives the same graphs.

Generation for a campaign's targets never produces an op instance one of them is known not
to build (the op spec's `targets:` exclusions): an excluded op-dtype is turned down before
anything is drawn for it, and a node an exclusion's `when` holds for is turned down as a
failed constraint is; `GenStats.avoided` counts both, per target. For llvm alone (no
exclusions) nothing is turned down, so its graphs are what they always were.

A campaign also turns down, the same way, the op-dtypes its confirmed findings reduced to
one operator (`avoid`: campaign.avoidance), so that one bug does not stop every later case
that draws it; `GenStats.avoided_found` counts those.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import draws
from . import expr as E
from .coverage import Coverage
from .graph import Graph, Node, Ref, TensorType
from .inputs import declared_domain, draw, not_finite, slot_domain, within
from .attributes import holds_roles, roles_held
from .reference import TensorInfo, op_env, overflow_undefined, run_op
from .solve import solve
from ..errors import HirfuzzError
from .targets import target_kinds

P_REUSE = 0.85        # pick an existing compatible tensor rather than a new leaf
P_SAME_TWICE = 0.05   # allow the same tensor twice in one op (x + x)
P_CONST = 0.25        # a new leaf is a constant rather than a variable
P_OP_OUTPUT = 0.8     # among candidates, prefer operator outputs (deeper data flow)
MAX_REJECTS = 40      # insertions without new coverage before one is kept anyway
MAX_NUMEL = 4096      # keep tensors small: fast builds, pasteable reproducers
CANDIDATE_SAMPLE = 24  # existing tensors examined per input


class Rejected(Exception):
    """This attempt cannot produce a valid insertion; draw another op."""


class Excluded(Rejected):
    """The insertion is an op instance one of the targets is known not to build."""

    def __init__(self, target: str, instance: str, error: str):
        super().__init__(f"{instance} is excluded on {target}: {error}")
        self.target = target
        self.instance = instance   # TargetExclusion.describe: "mod[float16]", "mean[float64] when ..."


FOUND = "found"  # Excluded.target of an AvoidedConstruct: the campaign's findings, not a target


class AvoidedConstruct(Excluded):
    """The insertion is an op-dtype a confirmed finding of the campaign fails on alone
    (with `roles`: where its attributes hold those roles, AvoidedOp)."""

    def __init__(self, op: str, dtype: str, roles: tuple[str, ...] = ()):
        super().__init__(FOUND, construct_name(op, dtype, roles), "a confirmed finding fails on it alone")


def construct_name(op: str, dtype: str, roles: tuple[str, ...] = ()) -> str:
    """An avoided construct as statistics count it: ``atan2[float16]``, ``nn.max_pool2d[float64] with dilation``."""
    return f"{op}[{dtype}]" + (f" with {'+'.join(roles)}" if roles else "")


@dataclass(frozen=True)
class AvoidedOp:
    """An op at a dtype generation does not insert (generate_graph's `avoid`): a confirmed
    finding fails on it alone (campaign.avoidance). With `roles`, only where its attributes
    hold every one of them at more than their plainest (core.attributes.holds_roles): the
    finding needs those (a max_pool2d gradient's dilation), and the op's other draws stay,
    so another fault of it can still be met. `gradient`: in gradient cases alone."""
    op: str
    dtype: str
    roles: tuple[str, ...] = ()
    gradient: bool = False
    # why it is not drawn where it is not a finding's: the autodiff's contract leaves it out
    # (campaign.cases.CaseMaker.contract_avoided); counted as a target's exclusions are
    outside: str = ""


DEFAULT_TARGETS = ("llvm",)


@dataclass
class Insertion:
    """An operator and the new leaves it needs, not yet part of the graph."""
    op: str
    dtype: str
    inputs: list                     # Ref or list of Ref; new leaves use negative ids
    attrs: dict
    outputs: list[TensorType]
    leaves: list[tuple[int, TensorType, tuple, int]] = field(default_factory=list)  # (tmp id, type, domain, slot)
    env: dict = field(default_factory=dict)    # what the spec's expressions saw: inputs' TensorInfo, attrs
    leaf_values: dict[int, tuple[bool, np.ndarray]] = field(default_factory=dict)  # tmp id -> (constant?, value)
    witness: list[np.ndarray] = field(default_factory=list)  # the op's results on the witness
    breaks_witness: bool = False   # kept although the witness fails it (an overflow, or forced)


class GraphBuilder:
    """Builds one graph; `values` indexes the tensors available as inputs by dtype."""

    def __init__(self, specs, rng: np.random.Generator, targets=DEFAULT_TARGETS, avoid: frozenset = frozenset()):
        self.specs = specs
        self.rng = rng
        self.target_kinds = target_kinds(targets)   # no insertion any of them cannot build
        # AvoidedOps: those avoided whatever their attributes are turned down before any draw,
        # the others once their attributes are drawn
        self.avoided_ops = avoided_whole(avoid)
        self.avoided_with_roles = [a for a in avoid if a.roles]
        self.graph = Graph()
        # pass probing and pass-directed generation (core.probe) pin what the next insertion
        # takes: `form`, the form of its second input (a new leaf), and `anchor`, the tensor
        # its first input must be; None leaves the choice to chance, as before
        self.form = None
        self.anchor: Ref | None = None
        self.by_dtype: dict[str, list[Ref]] = {}
        # tensors computed from constants alone: TVM folds them at build time, so one that
        # leaves an op's domain (a zero divisor) breaks the build, whatever the inputs
        self.const_derived: set[Ref] = set()
        # one value of every tensor under which every op input lies in its domain and every
        # result is finite and defined: the graph's witness that all its results can be
        # compared. An input with a domain takes only tensors whose witness meets it, and an
        # insertion whose result the witness leaves NaN or Inf is turned down, so
        # no strict graph holds acosh(tanh(x)), whose results below could never be compared.
        self.witness: dict[Ref, np.ndarray] = {}
        # an integer overflow TVM leaves undefined does not turn an insertion down (uint32
        # subtract would all but vanish: every element must not wrap), nor does anything once
        # the generator has been turned down too often (a spec whose reference never
        # computes); a witness broken so is no witness: the input search is on its own
        self.witness_clean = True

    # --- choosing inputs --------------------------------------------------------------------

    def _type(self, ref: Ref, pending: dict) -> TensorType:
        return pending[ref.node] if ref.node < 0 else self.graph.type_of(ref)

    def _candidates(self, dtype: str, ok, restricted: bool, leaves_only: bool = False,
                    domain_of=None) -> list[Ref]:
        """Existing tensors of `dtype` that pass `ok` and whose witness lies in the domain
        `domain_of` gives the input (None: no domain, or not known before the attributes)."""
        pool = self.by_dtype.get(dtype, [])
        if restricted:
            pool = [r for r in pool if r not in self.const_derived]
        if leaves_only:
            pool = [r for r in pool if self.graph.nodes[r.node].kind == "var"]
        if len(pool) > CANDIDATE_SAMPLE:
            idx = self.rng.choice(len(pool), size=CANDIDATE_SAMPLE, replace=False)
            pool = [pool[i] for i in idx]
        cands = []
        for r in pool:
            info = TensorInfo.of(self.graph.type_of(r))
            if ok(info) and (domain_of is None or _witness_within(self.witness.get(r), domain_of(info))):
                cands.append(r)
        return cands

    def _pick(self, cands: list[Ref], used: list[Ref]) -> Ref | None:
        if not cands or self.rng.random() >= P_REUSE:
            return None
        fresh = [r for r in cands if r not in used]
        if used and self.rng.random() < P_SAME_TWICE:
            fresh = cands
        if not fresh:
            return None
        ops = [r for r in fresh if self.graph.nodes[r.node].kind == "op"]
        pool = ops if ops and self.rng.random() < P_OP_OUTPUT else fresh
        return pool[int(self.rng.integers(len(pool)))]

    # --- one insertion ----------------------------------------------------------------------

    def propose(self, spec, dtype: str) -> Insertion:
        excluded = spec.excluded_dtype(dtype, self.target_kinds)
        if excluded is not None:  # before any draw: nothing of the stream goes on it
            raise Excluded(excluded.target, excluded.describe(spec.name, dtype), excluded.error)
        if (spec.name, dtype) in self.avoided_ops:
            raise AvoidedConstruct(spec.name, dtype)
        rng = self.rng
        env: dict = {"__rng__": rng, "dtype": dtype}
        pending: dict[int, TensorType] = {}
        inputs: list = []
        used: list[Ref] = []
        leaf_slots: list[tuple[int, int]] = []
        bound = {"dtype"}

        def new_leaf(t: TensorType, slot: int) -> Ref:
            tmp = -(len(pending) + 1)
            pending[tmp] = t
            leaf_slots.append((tmp, slot))
            return Ref(tmp)

        def checker(name: str, variadic: bool, shape_rule=None):
            ready = [c for c in spec.constraints if name in c.names and c.names <= bound | {name}]
            if not ready and shape_rule is not None:
                # no constraint speaks for this input: reuse only a tensor of the rule's shape
                wanted = [int(d) for d in shape_rule(env)]
                return lambda info: info.shape == wanted

            def ok(info):
                trial = dict(env)
                trial[name] = [info] if variadic else info
                try:
                    return all(bool(c(trial)) for c in ready)
                except E.ExprError:
                    return False
            return ok

        def domain_of(slot: int, ispec, in_dtype: str, variadic: bool):
            """The domain input `slot` has with a given tensor (None: unknown yet)."""
            if ispec.domain is None:
                return None

            def of(info):
                trial = dict(env)
                trial[ispec.name] = [info] if variadic else info
                try:
                    return declared_domain(spec, slot, trial, in_dtype)
                except E.ExprError:
                    return None
            return of

        # an input that may trap outside its domain (an integer divisor) takes only variables,
        # whose values are drawn inside it: an intermediate could be zero, and such a case
        # could only be built, never run
        traps = spec.may_trap
        for slot, ispec in enumerate(spec.inputs):
            in_dtype = ispec.dtype(env) if ispec.dtype is not None else dtype
            if slot == 0:
                lo, hi = ispec.rank
                base_ok = checker(ispec.name, False)
                ok = lambda info: lo <= info.rank <= hi and base_ok(info)  # noqa: E731
                if self.anchor is not None:
                    ref = self._anchored(in_dtype, ok)
                else:
                    ref = self._pick(self._candidates(in_dtype, ok, ispec.domain is not None,
                                                      traps and ispec.domain is not None,
                                                      domain_of(slot, ispec, in_dtype, False)), used)
                if ref is None:
                    ref = new_leaf(TensorType(tuple(draws.rand_shape(rng, rng.integers(lo, hi + 1))), in_dtype), slot)
                env[ispec.name] = TensorInfo.of(self._type(ref, pending))
                bound.add(ispec.name)
                inputs.append(ref)
                used.append(ref)
                self._draw_attrs(spec, env, bound)
                continue
            count = draws.rand_int(rng, *ispec.variadic) if ispec.variadic else 1
            ok = checker(ispec.name, ispec.variadic is not None, ispec.shape)
            meets = domain_of(slot, ispec, in_dtype, ispec.variadic is not None)
            refs = []
            formed = slot == 1 and self.form is not None and self.form.is_new_leaf
            for _ in range(count):
                ref = None if formed else self._pick(self._candidates(in_dtype, ok, ispec.domain is not None,
                                                                      traps and ispec.domain is not None, meets),
                                                     used)
                if ref is None:
                    shape = tuple(int(d) for d in ispec.shape(env))
                    if formed:
                        shape = self.form.leaf_shape(shape, rng)
                    ref = new_leaf(TensorType(shape, in_dtype), slot)
                refs.append(ref)
                used.append(ref)
            infos = [TensorInfo.of(self._type(r, pending)) for r in refs]
            env[ispec.name] = infos if ispec.variadic else infos[0]
            bound.add(ispec.name)
            inputs.append(refs if ispec.variadic else refs[0])

        for c in spec.constraints:
            if not c(env):
                raise Rejected(f"constraint '{c.text}' fails")
        self._check_conditional_exclusions(spec, dtype, env)
        self._check_avoided_attributes(spec, dtype, env)
        outputs = output_types(spec, env, dtype)
        attrs = {k: env[k] for k in list(spec.attrs) + (list(spec.solve.vars) if spec.solve else [])}
        ins = Insertion(spec.name, dtype, inputs, attrs, outputs, env=env)
        for tmp, slot in leaf_slots:
            t = pending[tmp]
            if any(d < 1 for d in t.shape) or int(np.prod(t.shape)) > MAX_NUMEL:
                raise Rejected("input shape out of bounds")
            ins.leaves.append((tmp, t, slot_domain(spec, slot, env, t.dtype), slot))
        return ins

    def _check_conditional_exclusions(self, spec, dtype: str, env: dict):
        """Turn the node down where an exclusion's `when` holds for its inputs and attributes."""
        exclusion = conditional_exclusion(spec, dtype, env, self.target_kinds)
        if exclusion is not None:
            raise Excluded(exclusion.target, exclusion.describe(spec.name, dtype), exclusion.error)

    def _check_avoided_attributes(self, spec, dtype: str, env: dict):
        """Turn the node down where its attributes hold what an avoided construct needs."""
        for avoided in self.avoided_with_roles:
            if (avoided.op, avoided.dtype) == (spec.name, dtype) and holds_roles(roles_held(spec, env), avoided.roles):
                if avoided.outside:
                    raise Excluded(avoided.outside, construct_name(spec.name, dtype, avoided.roles), avoided.outside)
                raise AvoidedConstruct(spec.name, dtype, avoided.roles)

    def _anchored(self, dtype: str, ok) -> Ref:
        """The anchor as the first input, where it fits (its dtype, the spec's constraints)."""
        t = self.graph.type_of(self.anchor)
        if t.dtype != dtype or not ok(TensorInfo.of(t)):
            raise Rejected("the anchor does not fit this op's first input")
        return self.anchor

    def _draw_attrs(self, spec, env: dict, bound: set):
        for name, rule in spec.attrs.items():
            env[name] = _plain(rule(env))
            bound.add(name)
        if spec.solve is not None:
            values = solve(spec.solve, env, self.rng)
            if values is None:
                raise Rejected("no attribute values satisfy the constraints")
            env.update(values)
            bound.update(values)

    def extend_witness(self, ins: Insertion, force: bool = False):
        """Draw the new leaves (constants' values, variables' witnesses) and compute the op's
        result on the witness; Rejected if an input leaves its domain, or a result is NaN or
        Inf or the reference cannot compute it. With `force`, such an insertion is kept and
        breaks the witness instead."""
        spec = self.specs.ops[ins.op]
        values = dict(self.witness)
        for tmp, t, domain, slot in ins.leaves:
            ins.leaf_values[tmp] = (self._leaf_is_constant(slot), draw(self.rng, t, domain))
            values[Ref(tmp)] = ins.leaf_values[tmp][1]
        for slot, item in enumerate(ins.inputs):
            for ref in item if isinstance(item, list) else [item]:
                try:
                    domain = declared_domain(spec, slot, ins.env, values[ref].dtype.name)
                except E.ExprError:
                    domain = None
                if not within(values[ref], domain):
                    self._witness_fails(ins, force, f"input {slot}'s witness leaves its domain")
        node = Node(-1, "op", ins.outputs, op=ins.op, dtype=ins.dtype, inputs=ins.inputs, attrs=ins.attrs)
        try:
            env = op_env(spec, node, self.graph, values)
            outs = run_op(spec, node, env)
            ins.breaks_witness |= overflow_undefined(spec, ins.dtype, env)
        except Exception as exc:  # noqa: BLE001 - the reference cannot compute it on the witness
            self._witness_fails(ins, force, f"no result on the witness: {exc}")
            outs = [np.zeros(t.shape, dtype=t.dtype) for t in ins.outputs]
        if any(not_finite(o) for o in outs):
            self._witness_fails(ins, force, "the result on the witness is NaN or Inf")
        ins.witness = outs

    @staticmethod
    def _witness_fails(ins: Insertion, force: bool, why: str):
        if not force:
            raise Rejected(why)
        ins.breaks_witness = True

    def commit(self, ins: Insertion) -> Node:
        """Add the insertion to the graph, extending the witness first if that was not done
        (Rejected then, with the graph unchanged)."""
        if not ins.witness:
            self.extend_witness(ins)
        remap = {}
        for tmp, t, _domain, _slot in ins.leaves:
            nid = len(self.graph.nodes)
            is_const, value = ins.leaf_values[tmp]
            if is_const:
                node = Node(nid, "const", [t], value=value.tolist())
                self.const_derived.add(Ref(nid))
            else:
                node = Node(nid, "var", [t])
            self.graph.add(node)
            self._offer(Ref(nid), t)
            self.witness[Ref(nid)] = value
            remap[tmp] = Ref(nid)

        def fix(r):
            return remap[r.node] if r.node < 0 else r
        inputs = [[fix(r) for r in i] if isinstance(i, list) else fix(i) for i in ins.inputs]
        node = Node(len(self.graph.nodes), "op", ins.outputs, op=ins.op, dtype=ins.dtype,
                    inputs=inputs, attrs=ins.attrs)
        self.graph.add(node)
        folded = all(r in self.const_derived for r in node.input_refs())
        for i, t in enumerate(ins.outputs):
            self._offer(Ref(node.id, i), t)
            self.witness[Ref(node.id, i)] = ins.witness[i]
            if folded:
                self.const_derived.add(Ref(node.id, i))
        self.witness_clean &= not ins.breaks_witness
        return node

    def _leaf_is_constant(self, slot: int) -> bool:
        if self.form is None:
            return bool(self.rng.random() < P_CONST)
        return slot == 1 and self.form.is_constant

    def _offer(self, ref: Ref, t: TensorType):
        self.by_dtype.setdefault(t.dtype, []).append(ref)

    # --- coverage ---------------------------------------------------------------------------

    def coverage_keys(self, ins: Insertion, coverage: Coverage):
        parents, pairs = [], []
        for item in ins.inputs:
            for r in item if isinstance(item, list) else [item]:
                if r.node < 0:
                    continue
                p = self.graph.nodes[r.node]
                if p.kind != "op":
                    continue
                parents.append(p.op)
                for gr in p.input_refs():
                    gp = self.graph.nodes[gr.node]
                    if gp.kind == "op":
                        pairs.append((gp.op, p.op))
        shapes = tuple(t.shape for t in ins.outputs)
        return coverage.new_keys(ins.op, ins.dtype, shapes, parents, pairs)


def _witness_within(value: np.ndarray | None, domain: tuple[float, float] | None) -> bool:
    """`inputs.within` for a tensor's witness; a tensor with none (a graph read back from
    JSON, as a disruptive case's valid part) is taken on trust."""
    return value is None or within(value, domain)


def _plain(value):
    """Attribute values as JSON-friendly Python (lists, ints, bools, strings, None)."""
    if isinstance(value, (tuple, range)):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


@dataclass
class GenStats:
    attempts: int = 0
    rejected_invalid: int = 0
    rejected_no_coverage: int = 0
    # per target kind, the op instances turned down as that target cannot build them
    # ("mod[float16]", "mean[float64] when ..."), and how often
    avoided: dict[str, dict[str, int]] = field(default_factory=dict)
    # lowering-plan features a campaign's target cannot lower (hirfuzz/targets.yaml), taken
    # out of its cases' plans (campaign.cases), and how many of each
    plan_features_stripped: dict[str, int] = field(default_factory=dict)
    # the op-dtypes turned down as a confirmed finding of the campaign fails on them alone
    # (generate_graph's `avoid`), and how often
    avoided_found: dict[str, int] = field(default_factory=dict)
    # gradient cases (campaign.cases, the gradient oracle): how many were drawn, and how many
    # of those got no gradient configuration, by why (outside the autodiff's contract, ...)
    gradient_cases: int = 0
    gradient_skipped: dict[str, int] = field(default_factory=dict)

    def count_gradient(self, skipped: str | None):
        """A gradient case drawn; `skipped`: why it is not judged as one (None: it is)."""
        self.gradient_cases += 1
        if skipped:
            reason = skipped.split(":")[0]
            self.gradient_skipped[reason] = self.gradient_skipped.get(reason, 0) + 1

    def count_avoided(self, excluded: Excluded):
        if isinstance(excluded, AvoidedConstruct):
            self.avoided_found[excluded.instance] = self.avoided_found.get(excluded.instance, 0) + 1
            return
        per_target = self.avoided.setdefault(excluded.target, {})
        per_target[excluded.instance] = per_target.get(excluded.instance, 0) + 1

    def count_stripped(self, stripped: dict[str, int]):
        for feature, n in stripped.items():
            self.plan_features_stripped[feature] = self.plan_features_stripped.get(feature, 0) + n

    def add(self, other: "GenStats"):
        """Count `other`'s figures too (one case's, as a case maker drew it)."""
        self.attempts += other.attempts
        self.rejected_invalid += other.rejected_invalid
        self.rejected_no_coverage += other.rejected_no_coverage
        for target, counts in other.avoided.items():
            mine = self.avoided.setdefault(target, {})
            for instance, n in counts.items():
                mine[instance] = mine.get(instance, 0) + n
        self.count_stripped(other.plan_features_stripped)
        for instance, n in other.avoided_found.items():
            self.avoided_found[instance] = self.avoided_found.get(instance, 0) + n
        self.gradient_cases += other.gradient_cases
        for reason, n in other.gradient_skipped.items():
            self.gradient_skipped[reason] = self.gradient_skipped.get(reason, 0) + n


def conditional_exclusion(spec, dtype: str, env: dict, kinds):
    """The exclusion of one of the target `kinds` whose `when` holds for an op instance
    (its inputs and attributes in `env`), or None."""
    return next((x for x in spec.exclusions(kinds) if x.when is not None and x.covers_dtype(dtype) and x.when(env)),
                None)


def output_types(spec, env: dict, dtype: str) -> list[TensorType]:
    """The types an op's spec gives its results in `env` (its inputs and attributes);
    Rejected where one is empty or larger than MAX_NUMEL."""
    out_dtype = spec.out_dtype(env) if spec.out_dtype is not None else dtype
    if spec.out_shapes is not None:
        shapes = spec.out_shapes(env)
    elif spec.out_shape is not None:
        shapes = [spec.out_shape(env)]
    else:
        shapes = [env[spec.inputs[0].name].shape]
    outs = [TensorType(tuple(int(d) for d in s), str(out_dtype)) for s in shapes]
    for t in outs:
        if any(d < 1 for d in t.shape) or int(np.prod(t.shape)) > MAX_NUMEL:
            raise Rejected(f"output shape {t.shape} out of bounds")
    return outs


def generate_graph(specs, rng: np.random.Generator, n_ops: int, coverage: Coverage,
                   guided: bool = True, ops: list[str] | None = None,
                   dtypes: list[str] | None = None, stats: GenStats | None = None, direction=None,
                   targets=DEFAULT_TARGETS, avoid: frozenset = frozenset()) -> Graph:
    """A valid graph of `n_ops` operators; `coverage` is read and updated in place.

    With a `direction` (core.probe.Direction: what a pass probe found), a share of the
    insertions reproduce the probe sites the pass acted on. No insertion is an op instance
    one of `targets` (kinds or target names) is known not to build, nor one `avoid` (its
    AvoidedOps) turns down."""
    names = ops if ops is not None else specs.names()
    stats = stats if stats is not None else GenStats()
    builder = GraphBuilder(specs, rng, targets, avoid)
    _check_drawable(specs, names, dtypes, builder.target_kinds, avoid)
    rejects = witness_rejects = 0
    placed = 0
    while placed < n_ops:
        stats.attempts += 1
        if direction is not None and rng.random() < direction.p_insert:
            placed += direction.insert(builder, specs, rng)
            continue
        spec = specs.ops[names[int(rng.integers(len(names)))]]
        allowed = [d for d in spec.dtypes if dtypes is None or d in dtypes]
        if not allowed:
            continue
        dtype = allowed[int(rng.integers(len(allowed)))]
        try:
            ins = builder.propose(spec, dtype)
        except Excluded as excluded:
            stats.count_avoided(excluded)
            continue
        except (Rejected, E.ExprError):
            stats.rejected_invalid += 1
            continue
        keys = builder.coverage_keys(ins, coverage) if guided else []
        if guided and not keys and rejects < MAX_REJECTS:
            rejects += 1
            stats.rejected_no_coverage += 1
            continue
        try:
            # turned down MAX_REJECTS times in a row, the next insertion is kept regardless
            builder.extend_witness(ins, force=witness_rejects >= MAX_REJECTS)
        except Rejected:
            stats.rejected_invalid += 1
            witness_rejects += 1
            continue
        witness_rejects = 0
        builder.commit(ins)
        coverage.add(keys)
        placed += 1
        rejects = 0
    if not guided:
        # the baseline still reports what it covered, to compare against guidance
        _record(builder.graph, coverage)
    if builder.witness_clean:
        builder.graph.witness = {n.id: builder.witness[Ref(n.id)] for n in builder.graph.variables}
    return builder.graph


def drawable(specs, names: list[str], dtypes: list[str] | None, kinds: tuple[str, ...],
             avoid: frozenset = frozenset()) -> bool:
    """Whether some op of `names` has a dtype allowed, buildable on every target and not
    avoided whatever its attributes (`avoid`: AvoidedOps): without one, no graph can ever be drawn."""
    whole = avoided_whole(avoid)
    return any((dtypes is None or d in dtypes) and (name, d) not in whole
               and specs.ops[name].excluded_dtype(d, kinds) is None
               for name in names for d in specs.ops[name].dtypes)


def avoided_whole(avoid) -> frozenset[tuple[str, str]]:
    """The (op, dtype) pairs of the AvoidedOps in `avoid` avoided whatever their attributes."""
    return frozenset((a.op, a.dtype) for a in avoid if not a.roles)


def _check_drawable(specs, names: list[str], dtypes: list[str] | None, kinds: tuple[str, ...], avoid: frozenset):
    if drawable(specs, names, dtypes, kinds, avoid):
        return
    raise HirfuzzError(f"no op of {', '.join(names)} can be generated with dtypes {', '.join(dtypes or ['(any)'])} "
                       f"for target {', '.join(kinds)}: every such op-dtype is excluded (the op specs' "
                       f"`targets:`), avoided (a confirmed finding's) or not among the op's dtypes")


def _record(graph: Graph, coverage: Coverage):
    for node in graph.operators:
        parents = [graph.nodes[r.node] for r in node.input_refs() if graph.nodes[r.node].kind == "op"]
        pairs = [(graph.nodes[g.node].op, p.op) for p in parents for g in p.input_refs()
                 if graph.nodes[g.node].kind == "op"]
        shapes = tuple(t.shape for t in node.outputs)
        coverage.add(coverage.new_keys(node.op, node.dtype, shapes, [p.op for p in parents], pairs))


PROPOSE_TRIES = 60   # attempts at a valid insertion before the spec is blamed


def single_op_graph(specs, op_name: str, dtype: str, rng, targets=DEFAULT_TARGETS) -> Graph:
    """A one-operator graph of `op_name` at `dtype`, for conformance checks; raises Rejected
    when none can be made (Excluded at once where one of `targets` excludes the op-dtype)."""
    spec = specs.ops[op_name]
    kinds = target_kinds(targets)
    excluded = spec.excluded_dtype(dtype, kinds)
    if excluded is not None:
        raise Excluded(excluded.target, excluded.describe(op_name, dtype), excluded.error)
    last = ""
    for _ in range(PROPOSE_TRIES):
        builder = GraphBuilder(specs, rng, kinds)
        try:
            ins = builder.propose(spec, dtype)
            builder.extend_witness(ins)
        except (Rejected, E.ExprError) as exc:
            last = str(exc)
            continue
        builder.commit(ins)
        return builder.graph
    raise Rejected(f"no valid insertion in {PROPOSE_TRIES} tries (last: {last})")
