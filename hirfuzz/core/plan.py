"""Lowering plans: every random choice `lower.lower_graph` makes, as plain JSON data.

A `LoweringPlan` says how a Graph is turned into Relax beyond the plain one-dataflow-block
form (HIRGen Algorithm 2 and the Relax language features of DESIGN.md):

- ``functions``: cuts. A cut is a range of node ids ``[start, end]`` whose operators become
  one Relax function; the function's parameters are the tensors its operators read from
  outside the cut, its result the tensors used after it (a tuple when several). ``kind``
  is ``"global"`` (a private global function called through its GlobalVar) or ``"local"``
  (a closure bound inside the enclosing function; the inputs named in ``captures`` are
  captured as free variables instead of passed, where Relax allows it: a closure never
  captures a DataflowVar, so those stay parameters; and unless ``allow_known_bugs``, a
  closure captures only when it is defined in main, called directly and returns one
  tensor that only main's return uses, which keeps clear of the TVM bug in
  ``lower.KNOWN_TVM_BUGS``). Cuts nest (a cut inside a cut becomes
  a function called by the outer function's body): nesting gives call chains. With
  ``as_value`` the function is first obtained as a value (a global through a nullary global
  ``get_<f>`` returning it, a closure through a nullary local maker returning it) and
  called afterwards. ``plain`` puts the call in a plain binding block.
- ``plain_nodes``: operator nodes emitted in plain binding blocks; all others go in
  dataflow blocks (blocks are split where the kind changes; live dataflow values are
  emitted as block outputs).
- ``node_features``: per operator node, features applied to its binding:
  ``if_shape`` / ``if_prim`` wrap it in an ``If`` whose condition is always true for any
  input (``sum(shape_to_tensor(shape_of(x))) >= rank(x)``, resp. ``n >= 1`` for a symbolic
  dimension ``n`` bound by ``match_cast``) and whose else branch has the same type (zeros);
  ``match_cast`` casts its inputs to symbolic dimensions (equal sizes share one symbol),
  computes the op on dynamic shapes and casts the result back to the static type;
  ``shape_of`` reshapes its first input to its own ``shape_of``; ``tuple`` packs its
  inputs into a tuple and reads them back with ``TupleGetItem``.
- ``dynamic_params``: variable nodes whose ``main`` parameter is declared with symbolic
  dimensions and ``match_cast`` back to the static shape on entry (a dynamic signature).

A target that cannot lower some of these (cuda: symbolic shapes, hirfuzz/targets.yaml) gets
the plan drawn as for any other, then `LoweringPlan.stripped` of them: the other features
stay what an llvm-only campaign draws.

Every feature preserves the program's meaning, whatever graph it is applied to. A plan
therefore stays valid for any graph: `lower_graph` ignores entries naming nodes that do
not exist or are not of the right kind, cuts that contain no operator, and cuts that
overlap an earlier cut without nesting in it. When the reducer drops nodes it renumbers
them densely (reduce.keep_operators) and moves the plan along (`LoweringPlan.renumbered`),
so that each feature stays on its node; entries on dropped nodes go.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import numpy as np

PLAN_FORMAT = 1

NODE_FEATURES = ("if_shape", "if_prim", "match_cast", "shape_of", "tuple")


@dataclass
class Knobs:
    """Probabilities of each lowering choice (0 turns a feature off)."""
    p_cut: float = 0.15          # a cut starts at an operator
    p_local: float = 0.4         # a cut becomes a closure rather than a global function
    p_capture: float = 0.5       # a closure captures an input rather than taking it as parameter
    p_nest: float = 0.5          # a cut draws nested cuts inside it (call chains)
    max_depth: int = 3           # deepest nesting of cuts
    p_as_value: float = 0.25     # the function is obtained as a value, then called
    p_plain: float = 0.2         # an operator (or a call) is emitted in a plain binding block
    p_if: float = 0.1            # an operator is wrapped in an always-true If
    p_match_cast: float = 0.1    # an operator runs on match_cast symbolic shapes
    p_shape_of: float = 0.08     # an operator's first input goes through shape_of/reshape
    p_tuple: float = 0.08        # an operator's inputs go through a tuple
    p_dynamic_param: float = 0.2  # a main parameter gets symbolic dimensions

    @staticmethod
    def off() -> "Knobs":
        return Knobs(**{k: (0.0 if k.startswith("p_") else v) for k, v in asdict(Knobs()).items()})

    @staticmethod
    def only(**probs) -> "Knobs":
        """All features off except those given (e.g. ``Knobs.only(p_if=1.0)``)."""
        k = Knobs.off()
        for name, value in probs.items():
            if not hasattr(k, name):
                raise ValueError(f"unknown knob {name!r}")
            setattr(k, name, value)
        return k


@dataclass
class Cut:
    start: int
    end: int
    kind: str = "global"                      # "global" or "local"
    captures: list[int] = field(default_factory=list)
    as_value: bool = False
    plain: bool = False

    def to_json(self) -> dict:
        return asdict(self)

    def features(self) -> frozenset:
        """The feature kinds this cut is drawn with (as `LoweringPlan.features_used` names them)."""
        names = {f"function_{self.kind}"}
        if self.as_value:
            names.add("function_as_value")
        if self.kind == "local" and self.captures:
            names.add("closure_capture")
        if self.plain:
            names.add("plain_block")
        return frozenset(names)

    def simpler(self) -> list[tuple[str, "Cut"]]:
        """This cut with one of its extras taken off (a plain block, captures, being a value),
        each with the field it reset, for a reducer to try: what stays is what a failure needs."""
        fields = self.to_json()
        options = [("plain", False), ("captures", []), ("as_value", False)]
        return [(name, Cut(**{**fields, name: plain})) for name, plain in options if fields[name] != plain]


@dataclass
class LoweringPlan:
    functions: list[Cut] = field(default_factory=list)
    plain_nodes: list[int] = field(default_factory=list)
    node_features: dict[int, list[str]] = field(default_factory=dict)
    dynamic_params: list[int] = field(default_factory=list)
    allow_known_bugs: bool = False   # False: avoid patterns of lower.KNOWN_TVM_BUGS

    @property
    def empty(self) -> bool:
        return not (self.functions or self.plain_nodes or self.node_features or self.dynamic_params)

    def to_json(self) -> dict:
        return {"format": PLAN_FORMAT,
                "functions": [c.to_json() for c in self.functions],
                "plain_nodes": list(self.plain_nodes),
                "node_features": {str(k): list(v) for k, v in sorted(self.node_features.items())},
                "dynamic_params": list(self.dynamic_params),
                "allow_known_bugs": self.allow_known_bugs}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    @staticmethod
    def from_json(d: dict) -> "LoweringPlan":
        if d.get("format") != PLAN_FORMAT:
            raise ValueError(f"unsupported plan format {d.get('format')!r}")
        return LoweringPlan(
            functions=[Cut(int(c["start"]), int(c["end"]), str(c.get("kind", "global")),
                           [int(n) for n in c.get("captures", [])], bool(c.get("as_value", False)),
                           bool(c.get("plain", False))) for c in d.get("functions", [])],
            plain_nodes=[int(n) for n in d.get("plain_nodes", [])],
            node_features={int(k): [str(f) for f in v] for k, v in d.get("node_features", {}).items()},
            dynamic_params=[int(n) for n in d.get("dynamic_params", [])],
            allow_known_bugs=bool(d.get("allow_known_bugs", False)))

    @staticmethod
    def loads(text: str) -> "LoweringPlan":
        return LoweringPlan.from_json(json.loads(text))

    def without(self, what: str, index=None) -> "LoweringPlan":
        """A copy with one entry dropped, for reducers: ``what`` is ``"functions"`` (index: position),
        ``"plain_nodes"``, ``"dynamic_params"`` (index: node id) or ``"node_features"`` (index: node id)."""
        p = LoweringPlan.from_json(self.to_json())
        if what == "functions":
            del p.functions[index]
        elif what == "node_features":
            p.node_features.pop(index, None)
        else:
            setattr(p, what, [n for n in getattr(p, what) if n != index])
        return p

    def simpler(self) -> list[tuple[tuple, "LoweringPlan"]]:
        """Copies with one extra of one choice taken off, for reducers (where `without` drops
        a whole choice), each with what it took off: a cut's plain block, captures or being a
        value (("functions", position, field): `Cut.simpler`), one feature of a node that
        has several (("node_features", node, feature))."""
        plans = []
        for i, cut in enumerate(self.functions):
            for name, simpler in cut.simpler():
                p = LoweringPlan.from_json(self.to_json())
                p.functions[i] = simpler
                plans.append((("functions", i, name), p))
        for nid, feats in sorted(self.node_features.items()):
            for feature in feats if len(feats) > 1 else ():
                p = LoweringPlan.from_json(self.to_json())
                p.node_features[nid] = [f for f in feats if f != feature]
                plans.append((("node_features", nid, feature), p))
        return plans

    def renumbered(self, ids: dict[int, int]) -> "LoweringPlan":
        """The plan for a graph whose surviving nodes were renumbered by `ids` (old -> new,
        in order): entries follow their nodes, and those of dropped nodes go."""
        functions = []
        for c in self.functions:
            members = [ids[i] for i in range(c.start, c.end + 1) if i in ids]
            if members:
                functions.append(Cut(min(members), max(members), c.kind, [ids[n] for n in c.captures if n in ids],
                                     c.as_value, c.plain))
        return LoweringPlan(functions=functions,
                            plain_nodes=[ids[n] for n in self.plain_nodes if n in ids],
                            node_features={ids[n]: list(f) for n, f in self.node_features.items() if n in ids},
                            dynamic_params=[ids[n] for n in self.dynamic_params if n in ids],
                            allow_known_bugs=self.allow_known_bugs)

    def stripped(self, features) -> tuple["LoweringPlan", dict[str, int]]:
        """A copy without the node features named in `features` (and without dynamic
        parameters if ``dynamic_param`` is among them), with how many of each went."""
        unwanted = set(features)
        gone: dict[str, int] = {}
        node_features = {}
        for nid, feats in self.node_features.items():
            for f in feats:
                if f in unwanted:
                    gone[f] = gone.get(f, 0) + 1
            kept = [f for f in feats if f not in unwanted]
            if kept:
                node_features[nid] = kept
        dynamic_params = list(self.dynamic_params)
        if "dynamic_param" in unwanted and dynamic_params:
            gone["dynamic_param"] = len(dynamic_params)
            dynamic_params = []
        plan = LoweringPlan(functions=[Cut(**c.to_json()) for c in self.functions], plain_nodes=list(self.plain_nodes),
                            node_features=node_features, dynamic_params=dynamic_params,
                            allow_known_bugs=self.allow_known_bugs)
        return plan, gone

    def features_used(self) -> list[str]:
        """Names of the feature kinds this plan asks for (for statistics)."""
        return sorted(set().union(*(features for _, _, features in self.entries())))

    def entries(self) -> list[tuple[str, int, frozenset]]:
        """Each choice of the plan as (what, index, its feature kinds), `what` and `index` as
        `without` takes them (a node's features one entry per node)."""
        entries = [("functions", i, c.features()) for i, c in enumerate(self.functions)]
        entries += [("node_features", n, frozenset(fs)) for n, fs in sorted(self.node_features.items())]
        entries += [("dynamic_params", n, frozenset({"dynamic_param"})) for n in self.dynamic_params]
        entries += [("plain_nodes", n, frozenset({"plain_block"})) for n in self.plain_nodes]
        return entries

    def form(self) -> frozenset | None:
        """The feature kinds of the plan's one choice (a cut, one node's features, ...), the
        form a failure needs once a reducer left nothing else of the plan; None where it
        holds no choice or several."""
        entries = self.entries()
        return entries[0][2] if len(entries) == 1 else None

    def moved_to(self, graph) -> "LoweringPlan":
        """The plan's one choice (`form`) put on `graph`'s one operator instead (its cut around
        it, capturing its inputs if the cut captured any; its features on it; its inputs'
        dynamic signatures), for a reducer to tell a form that fails whatever it computes."""
        op = graph.operators[0]
        (what, _, _), = self.entries()
        if what == "functions":
            cut = self.functions[0]
            captures = [r.node for r in op.input_refs() if graph.nodes[r.node].kind == "var"] if cut.captures else []
            return LoweringPlan(functions=[Cut(op.id, op.id, cut.kind, captures, cut.as_value, cut.plain)],
                                allow_known_bugs=self.allow_known_bugs)
        if what == "node_features":
            return LoweringPlan(node_features={op.id: list(next(iter(self.node_features.values())))},
                                allow_known_bugs=self.allow_known_bugs)
        if what == "dynamic_params":
            return LoweringPlan(dynamic_params=[n.id for n in graph.variables if n.type.rank > 0][:1],
                                allow_known_bugs=self.allow_known_bugs)
        return LoweringPlan(plain_nodes=[op.id], allow_known_bugs=self.allow_known_bugs)

    def without_form(self, form: frozenset) -> tuple["LoweringPlan", int]:
        """A copy without the choices drawn with every feature kind of `form` (a cut holding
        them is inlined, a node's features of the form dropped, its others kept), and how
        many went."""
        plan, gone = self, 0
        for what, index, features in reversed(self.entries()):  # positions of cuts stay valid
            if not form <= features:
                continue
            gone += 1
            kept = sorted(features - form) if what == "node_features" else []
            plan = plan.without(what, index)
            if kept:
                plan.node_features[index] = [f for f in self.node_features[index] if f in kept]
        return plan, gone


def plan_lowering(graph, rng: np.random.Generator, knobs: Knobs | None = None) -> LoweringPlan:
    """Draw a plan for `graph`; all randomness comes from `rng`."""
    knobs = knobs or Knobs()
    plan = LoweringPlan()
    op_ids = [n.id for n in graph.operators]

    def draw_cuts(ids: list[int], depth: int, inside: set[int]):
        i = 0
        while i < len(ids):
            if rng.random() < knobs.p_cut:
                length = int(rng.integers(1, len(ids) - i + 1))
                members = ids[i:i + length]
                if inside and set(members) == inside:
                    i += 1  # a cut equal to its parent adds nothing
                    continue
                cut = Cut(members[0], members[-1])
                cut.kind = "local" if rng.random() < knobs.p_local else "global"
                if cut.kind == "local":
                    ins = _cut_inputs(graph, set(members))
                    cut.captures = [n for n in ins if rng.random() < knobs.p_capture]
                cut.as_value = bool(rng.random() < knobs.p_as_value)
                cut.plain = bool(rng.random() < knobs.p_plain)
                plan.functions.append(cut)
                if depth + 1 < knobs.max_depth and length > 1 and rng.random() < knobs.p_nest:
                    draw_cuts(members, depth + 1, set(members))
                i += length
            else:
                i += 1

    if knobs.p_cut > 0:
        draw_cuts(op_ids, 0, set())
    for nid in op_ids:
        if rng.random() < knobs.p_plain:
            plan.plain_nodes.append(nid)
        feats = []
        for name, p in (("if", knobs.p_if), ("match_cast", knobs.p_match_cast),
                        ("shape_of", knobs.p_shape_of), ("tuple", knobs.p_tuple)):
            if p > 0 and rng.random() < p:
                if name == "shape_of" and not _reshapable_first_input(graph, nid):
                    continue  # drawn all the same, so that the stream stays as it was
                if name == "if":
                    name = "if_shape" if rng.random() < 0.5 else "if_prim"
                feats.append(name)
        if feats:
            plan.node_features[nid] = feats
    for n in graph.variables:
        if knobs.p_dynamic_param > 0 and n.type.rank > 0 and rng.random() < knobs.p_dynamic_param:
            plan.dynamic_params.append(n.id)
    return plan


def _cut_inputs(graph, members: set[int]) -> list[int]:
    """Node ids (variables and operators outside the cut) whose outputs the cut reads."""
    out = set()
    for nid in members:
        for r in graph.nodes[nid].input_refs():
            if r.node not in members and graph.nodes[r.node].kind != "const":
                out.add(r.node)
    return sorted(out)


def _reshapable_first_input(graph, nid: int) -> bool:
    """shape_of needs one tensor of rank 1 or more: R.Shape([]) does not print and parse
    back to the same module, which reproducers need."""
    first = graph.nodes[nid].inputs[0] if graph.nodes[nid].inputs else None
    return first is not None and not isinstance(first, list) and graph.type_of(first).rank > 0
