"""Pass probing: small programs that show where a pass acts, and the direction they give
generation (no TVM here; campaign.probe sends the programs to a worker).

A probe site is one small pattern, and one program shows it:

- an op site: one operator at one dtype, its second input in one `Form` (a variable, a
  scalar constant, a tensor constant, a lower-rank broadcast input), with the attribute
  values it drew, by region (`attr_region`);
- an edge site: one operator feeding another (first probed together, all the children
  of one parent in one fan-out program; a fan-out the pass changed is split into pairs);
- a feature site: a few operators lowered with one IR feature of `probe.yaml` (global
  functions, closures, If, tuples, match_cast...), beside the same graph lowered plainly.

A worker applies the pass sequence to each program step by step and says, per pass,
whether the module stayed structurally the same, changed, raised, or was left ill-formed
(`Outcome`); for a few changed programs the campaign also builds and runs them, to see
whether the change alters results. `PassProbe` holds what one sequence's probe found,
says it in words for report.md, and gives generation its `Direction`: the patterns to put
in graphs more often.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from importlib import resources

import numpy as np

from . import expr as E
from .coverage import Coverage
from .generate import GraphBuilder, Rejected, generate_graph
from .graph import Graph, Ref
from .plan import Knobs, plan_lowering

SAMPLES_WITH_ATTRS = 3   # programs per (op, dtype, form) for ops with attributes: several regions
TRIES = 8                # attempts at a valid program before a pattern is given up
FEATURE_GRAPHS = 3       # graphs lowered under each IR feature
FEATURE_OPS = 4          # operators in each of them
PREFERRED_EDGE_DTYPE = "float32"


class Form(Enum):
    """How an operator's second input is given."""
    VARIABLE = "variable"
    SCALAR_CONST = "scalar constant"
    TENSOR_CONST = "tensor constant"
    BROADCAST = "broadcast"

    @property
    def is_new_leaf(self) -> bool:
        """The input must be a new leaf (not a tensor already in the graph)."""
        return self is not Form.VARIABLE

    @property
    def is_constant(self) -> bool:
        return self in (Form.SCALAR_CONST, Form.TENSOR_CONST)

    def leaf_shape(self, shape: tuple, rng) -> tuple:
        """The shape a new leaf of this form takes where the spec's rule says `shape`."""
        if self is Form.SCALAR_CONST:
            return ()
        if self is Form.BROADCAST and shape:
            return shape[int(rng.integers(1, len(shape) + 1)):]
        return shape


class Outcome(Enum):
    """What a pass did to a probe program (ALTERED: the change alters its results)."""
    UNCHANGED = "unchanged"
    CHANGED = "changed"
    RAISED = "raised"
    ILL_FORMED = "ill-formed"
    ALTERED = "altered results"
    INVALID = "invalid"          # the program itself failed to lower: says nothing of the pass
    NOT_RUN = "not run"          # an earlier pass of the sequence raised

    @property
    def acted(self) -> bool:
        return self in (Outcome.CHANGED, Outcome.RAISED, Outcome.ILL_FORMED, Outcome.ALTERED)

    @property
    def weight(self) -> float:
        """How strongly generation is steered to a site: a failure more than a rewrite."""
        return 1.0 if self is Outcome.CHANGED else 4.0 if self.acted else 0.0


class SiteKind(Enum):
    OP = "op"
    EDGE = "edge"
    FEATURE = "feature"
    FANOUT = "fanout"            # one parent feeding many children: split into edges when it acts


@dataclass(frozen=True)
class Site:
    kind: SiteKind
    op: str = ""                 # the operator (the child, on an edge)
    dtype: str = ""
    form: Form = Form.VARIABLE
    attrs: tuple = ()            # ((attribute, region), ...)
    parent: str = ""             # an edge's parent op
    feature: str = ""            # a feature site's feature ("" on its plainly lowered twin)
    sample: int = 0              # which of several programs of one pattern

    @property
    def pattern(self) -> tuple:
        """What generation reproduces and coverage counts (the sample left out)."""
        return (self.kind.value, self.op, self.dtype, self.form.value, self.attrs, self.parent, self.feature)

    def to_json(self) -> dict:
        return {"kind": self.kind.value, "op": self.op, "dtype": self.dtype, "form": self.form.value,
                "attrs": [list(a) for a in self.attrs], "parent": self.parent, "feature": self.feature,
                "sample": self.sample}

    @staticmethod
    def from_json(d: dict) -> "Site":
        return Site(SiteKind(d["kind"]), d["op"], d["dtype"], Form(d["form"]), tuple(tuple(a) for a in d["attrs"]),
                    d["parent"], d["feature"], d["sample"])


@dataclass
class Program:
    site: Site
    graph: Graph
    plan: dict | None = None     # a LoweringPlan's JSON (feature sites)


@lru_cache(maxsize=1)
def probe_data() -> dict:
    import yaml
    return yaml.safe_load(resources.files("hirfuzz").joinpath("probe.yaml").read_text())


# --- attribute regions -----------------------------------------------------------------------

def attr_region(value) -> str:
    """A value's region: what a pass may treat alike (booleans and small integers by value,
    other numbers by sign, lists by length and sign)."""
    if value is None or isinstance(value, (bool, str)):
        return str(value)
    if isinstance(value, int):
        return str(value) if -2 <= value <= 4 else ("negative" if value < 0 else "large")
    if isinstance(value, float):
        return "negative" if value < 0 else "zero" if value == 0 else "positive"
    if isinstance(value, list):
        numbers = [v for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)]
        signed = " with negatives" if any(v < 0 for v in numbers) else ""
        return f"{len(value)} item(s){signed}"
    return type(value).__name__


def attr_regions(attrs: dict) -> tuple:
    return tuple(sorted((name, attr_region(v)) for name, v in attrs.items()))


def input_form(graph: Graph, node) -> Form:
    """The form an operator's second input has in a graph (VARIABLE for one-input ops)."""
    if len(node.inputs) < 2:
        return Form.VARIABLE
    second = node.inputs[1][0] if isinstance(node.inputs[1], list) and node.inputs[1] else node.inputs[1]
    if not isinstance(second, Ref):
        return Form.VARIABLE
    source = graph.nodes[second.node]
    rank = graph.type_of(second).rank
    if source.kind == "const":
        return Form.SCALAR_CONST if rank == 0 else Form.TENSOR_CONST
    first = node.inputs[0]
    if isinstance(first, Ref) and rank < graph.type_of(first).rank:
        return Form.BROADCAST
    return Form.VARIABLE


def op_site(graph: Graph, node, sample: int = 0) -> Site:
    return Site(SiteKind.OP, node.op, node.dtype, input_form(graph, node), attr_regions(node.attrs), sample=sample)


def edge_sites(graph: Graph, node) -> list[Site]:
    """The edges into `node` along its first input (how edges are probed)."""
    first = node.inputs[0] if node.inputs else None
    if not isinstance(first, Ref) or graph.nodes[first.node].kind != "op":
        return []
    return [Site(SiteKind.EDGE, node.op, node.dtype, parent=graph.nodes[first.node].op)]


# --- the programs ----------------------------------------------------------------------------

def forms_of(spec) -> list[Form]:
    return list(Form) if len(spec.inputs) >= 2 else [Form.VARIABLE]


def one_op(specs, op: str, dtype: str, form: Form, rng) -> Graph | None:
    """A graph of `op` alone at `dtype`, its second input in `form`; None if none is found."""
    for _ in range(TRIES):
        builder = GraphBuilder(specs, rng)
        builder.form = form
        try:
            builder.commit(builder.propose(specs.ops[op], dtype))
        except (Rejected, E.ExprError):
            continue
        graph = builder.graph
        if input_form(graph, graph.operators[0]) is form:
            return graph
    return None


def op_programs(specs, ops: list[str], rng, dtypes: list[str] | None = None, forms: bool = True) -> list[Program]:
    """Each op under each dtype, with each input form; ops with attributes several times."""
    programs = []
    for op in ops:
        spec = specs.ops[op]
        samples = SAMPLES_WITH_ATTRS if (spec.attrs or spec.solve) else 1
        for dtype in [d for d in spec.dtypes if dtypes is None or d in dtypes]:
            for form in forms_of(spec) if forms else [Form.VARIABLE]:
                seen = set()
                for sample in range(samples):
                    graph = one_op(specs, op, dtype, form, rng)
                    if graph is None:
                        break
                    site = op_site(graph, graph.operators[0], sample)
                    if site.attrs in seen:
                        continue
                    seen.add(site.attrs)
                    programs.append(Program(site, graph))
    return programs


def _edge_dtype(spec, dtypes: list[str] | None) -> str | None:
    allowed = [d for d in spec.dtypes if dtypes is None or d in dtypes]
    if not allowed:
        return None
    return PREFERRED_EDGE_DTYPE if PREFERRED_EDGE_DTYPE in allowed else allowed[0]


def _parent(specs, op: str, dtypes, rng) -> tuple[GraphBuilder, Ref] | None:
    dtype = _edge_dtype(specs.ops[op], dtypes)
    for _ in range(TRIES if dtype else 0):
        builder = GraphBuilder(specs, rng)
        builder.form = Form.VARIABLE
        try:
            node = builder.commit(builder.propose(specs.ops[op], dtype))
        except (Rejected, E.ExprError):
            continue
        return builder, Ref(node.id, 0)
    return None


def _feed(builder: GraphBuilder, spec, anchor: Ref) -> bool:
    """Insert `spec`'s op with `anchor` as its first input; whether that worked."""
    builder.anchor = anchor
    dtype = builder.graph.type_of(anchor).dtype
    try:
        for _ in range(2):
            try:
                builder.commit(builder.propose(spec, dtype))
                return True
            except (Rejected, E.ExprError):
                continue
        return False
    finally:
        builder.anchor = None


def fanout_programs(specs, ops: list[str], rng, dtypes: list[str] | None = None) -> list[Program]:
    """Per parent op, one program in which it feeds every op that can take its output."""
    programs = []
    for parent in ops:
        made = _parent(specs, parent, dtypes, rng)
        if made is None:
            continue
        builder, out = made
        fed = [child for child in ops if out_dtype_fits(specs, child, builder, out) and
               _feed(builder, specs.ops[child], out)]
        if fed:
            programs.append(Program(Site(SiteKind.FANOUT, "", builder.graph.operators[0].dtype, parent=parent),
                                    builder.graph))
    return programs


def out_dtype_fits(specs, op: str, builder: GraphBuilder, ref: Ref) -> bool:
    return builder.graph.type_of(ref).dtype in specs.ops[op].dtypes


def pair_programs(specs, fanout: Program, rng) -> list[Program]:
    """The edges of a fan-out program, one two-operator program each."""
    parent = fanout.site.parent
    children = sorted({n.op for n in fanout.graph.operators[1:]})
    programs = []
    for child in children:
        made = _parent(specs, parent, [fanout.site.dtype], rng)
        if made is None:
            continue
        builder, out = made
        if _feed(builder, specs.ops[child], out):
            node = builder.graph.operators[-1]
            programs.append(Program(Site(SiteKind.EDGE, child, node.dtype, parent=parent), builder.graph))
    return programs


def feature_programs(specs, ops: list[str], rng, lacking: dict, dtypes: list[str] | None = None) -> list[Program]:
    """A few small graphs, each lowered plainly and under each IR feature the dialect has
    (`lacking`: its plan knobs held at 0)."""
    programs = []
    features = {name: f for name, f in probe_data()["features"].items()
                if not any(k in lacking for k in f["knobs"])}
    for sample in range(FEATURE_GRAPHS):
        graph = generate_graph(specs, rng, FEATURE_OPS, Coverage(), ops=ops, dtypes=dtypes)
        programs.append(Program(Site(SiteKind.FEATURE, sample=sample), graph))
        for name, feature in features.items():
            plan = plan_lowering(graph, rng, Knobs.only(**feature["knobs"]))
            programs.append(Program(Site(SiteKind.FEATURE, feature=name, sample=sample), graph, plan.to_json()))
    return programs


# --- what a probe found ----------------------------------------------------------------------

@dataclass
class SiteResult:
    site: Site
    outcomes: list[Outcome]      # per pass of the sequence
    detail: str = ""             # the first error, or how results changed

    def to_json(self) -> dict:
        return {"site": self.site.to_json(), "outcomes": [o.value for o in self.outcomes], "detail": self.detail}

    @staticmethod
    def from_json(d: dict) -> "SiteResult":
        return SiteResult(Site.from_json(d["site"]), [Outcome(o) for o in d["outcomes"]], d.get("detail", ""))

    @property
    def strongest(self) -> Outcome:
        acted = [o for o in self.outcomes if o.acted]
        return max(acted, key=lambda o: o.weight) if acted else Outcome.UNCHANGED


@dataclass
class PassProbe:
    """What probing one pass sequence found, site by site."""
    passes: list[str]
    results: list[SiteResult] = field(default_factory=list)
    seconds: float = 0.0
    unprobed: int = 0            # programs left out when the probe's time ran out

    def to_json(self) -> dict:
        return {"passes": self.passes, "seconds": round(self.seconds, 3), "unprobed": self.unprobed,
                "sites": [r.to_json() for r in self.results]}

    @staticmethod
    def from_json(d: dict) -> "PassProbe":
        return PassProbe(list(d["passes"]), [SiteResult.from_json(r) for r in d["sites"]], d.get("seconds", 0.0),
                         d.get("unprobed", 0))

    def plain_twin_acted(self) -> set[int]:
        """Feature samples whose plain lowering the pass already acts on."""
        return {r.site.sample for r in self.results
                if r.site.kind is SiteKind.FEATURE and not r.site.feature and r.strongest.acted}

    def telling(self) -> list[SiteResult]:
        """The sites the pass acted on that say something: a feature only where the same
        graph lowered plainly was left alone."""
        twins = self.plain_twin_acted()
        out = []
        for r in self.results:
            if not r.strongest.acted or r.site.kind is SiteKind.FANOUT:
                continue
            if r.site.kind is SiteKind.FEATURE and (not r.site.feature or r.site.sample in twins):
                continue
            out.append(r)
        return out

    def direction(self) -> "Direction":
        weights: dict[tuple, float] = {}
        sites: dict[tuple, Site] = {}
        for r in self.telling():
            key = r.site.pattern
            weights[key] = max(weights.get(key, 0.0), r.strongest.weight)
            sites[key] = r.site
        return Direction([sites[k] for k in weights], [weights[k] for k in weights])

    def describe(self) -> list[str]:
        """One line per pass and outcome: "MyPass rewrote: subtract with a scalar constant in
        uint32, float32; raised on: modules with several functions"."""
        lines = []
        for i, name in enumerate(self.passes):
            parts = []
            for outcomes, verb in (((Outcome.CHANGED, Outcome.ALTERED), "rewrote"),
                                   ((Outcome.ALTERED,), "and so changed the results of (one program per pattern "
                                                        "built and run)"),
                                   ((Outcome.RAISED,), "raised on"), ((Outcome.ILL_FORMED,), "left ill-formed")):
                said = self._describe_sites([r for r in self.telling() if r.outcomes[i] in outcomes])
                if said:
                    parts.append(f"{verb}: {said}")
            total = sum(1 for r in self.results if r.outcomes[i] is not Outcome.INVALID)
            lines.append(f"{name} " + ("; ".join(parts) if parts else f"left all {total} probe programs unchanged"))
        return lines

    def _describe_sites(self, results: list[SiteResult]) -> str:
        if not results:
            return ""
        forms = probe_data()["forms"]
        features = probe_data()["features"]
        groups: dict[tuple, list[str]] = {}
        for r in results:
            s = r.site
            if s.kind is SiteKind.OP:
                key = (f"{s.op} with {forms[s.form.value]}" + self._attr_note(s),)
            elif s.kind is SiteKind.EDGE:
                key = (f"{s.parent} feeding {s.op}",)
            else:
                key = (features[s.feature]["says"],)
            dtypes = groups.setdefault(key, [])
            if s.kind is not SiteKind.FEATURE and s.dtype not in dtypes:
                dtypes.append(s.dtype)
        shown = [f"{k[0]} in {', '.join(d)}" if d else k[0] for k, d in groups.items()]
        more = f", and {len(shown) - 12} more" if len(shown) > 12 else ""
        return ", ".join(shown[:12]) + more

    def _attr_note(self, site: Site) -> str:
        """", where keepdims=True" when only some regions of the op's attributes were acted on."""
        same_op = [r for r in self.results if r.site.kind is SiteKind.OP and r.site.op == site.op]
        acted = [set(r.site.attrs) for r in same_op if r.strongest.acted]
        left = [set(r.site.attrs) for r in same_op if not r.strongest.acted and Outcome.INVALID not in r.outcomes]
        if not acted or not left:
            return ""
        common = set.intersection(*acted)
        telling = sorted(a for a in common if not any(a in other for other in left))
        return f" where {', '.join(f'{k}={v}' for k, v in telling)}" if telling else ""


# --- direction -------------------------------------------------------------------------------

P_DIRECTED_INSERT = 0.3   # in a directed graph, an insertion reproduces a probe site
P_FEATURE = 0.5           # a directed case's lowering turns one acted-on feature up


@dataclass
class Direction:
    """Probe sites for generation to reproduce, weighted by what the pass did there."""
    sites: list[Site]
    weights: list[float]

    p_insert: float = P_DIRECTED_INSERT

    def __post_init__(self):
        self.patterns = {s.pattern for s in self.sites}
        self.features = [s.feature for s in self.sites if s.kind is SiteKind.FEATURE]
        self.graph_sites = [(s, w) for s, w in zip(self.sites, self.weights) if s.kind is not SiteKind.FEATURE]

    @property
    def empty(self) -> bool:
        return not self.sites

    @staticmethod
    def merged(directions: list["Direction"]) -> "Direction":
        return Direction([s for d in directions for s in d.sites], [w for d in directions for w in d.weights])

    def draw_site(self, rng) -> Site | None:
        if not self.graph_sites:
            return None
        w = np.array([w for _, w in self.graph_sites])
        return self.graph_sites[int(rng.choice(len(w), p=w / w.sum()))][0]

    def exercised(self, graph: Graph, plan_features: list[str]) -> list[tuple]:
        """The probe sites a case exercises, as coverage keys (probe_site): its operators'
        op sites and edges, and the IR features its lowering plan uses."""
        sites = [s for node in graph.operators for s in [op_site(graph, node)] + edge_sites(graph, node)]
        features = probe_data()["features"]
        sites += [Site(SiteKind.FEATURE, feature=name) for name in set(self.features)
                  if set(features[name]["plan"]) & set(plan_features)]
        return [("probe_site", s.pattern) for s in sites if s.pattern in self.patterns]

    def insert(self, builder: GraphBuilder, specs, rng) -> int:
        """Reproduce a drawn site in the graph being built; the operators added (0: none fit)."""
        site = self.draw_site(rng)
        return 0 if site is None else direct_insertion(builder, specs, site, rng)

    def knobs(self, base: dict, rng) -> Knobs:
        """A directed case's lowering knobs: sometimes one acted-on feature turned up."""
        knobs = Knobs(**base)
        if self.features and rng.random() < P_FEATURE:
            feature = self.features[int(rng.integers(len(self.features)))]
            for name, value in probe_data()["features"][feature]["knobs"].items():
                setattr(knobs, name, max(getattr(knobs, name), min(value, 0.5)))
        return knobs


def direct_insertion(builder: GraphBuilder, specs, site: Site, rng) -> int:
    """Reproduce `site` in the graph being built; returns the operators added (0: none fit)."""
    try:
        if site.kind is SiteKind.EDGE:
            return _direct_edge(builder, specs, site, rng)
        return _direct_op(builder, specs, site)
    finally:
        builder.form = None
        builder.anchor = None


def _direct_op(builder: GraphBuilder, specs, site: Site) -> int:
    builder.form = site.form
    last = None
    for _ in range(TRIES):
        try:
            ins = builder.propose(specs.ops[site.op], site.dtype)
        except (Rejected, E.ExprError):
            continue
        last = ins
        if attr_regions(ins.attrs) == site.attrs:
            break
    if last is None:
        return 0
    try:
        builder.commit(last)
    except Rejected:   # its witness leaves a domain, or its result is NaN, Inf or undefined
        return 0
    return 1


def _direct_edge(builder: GraphBuilder, specs, site: Site, rng) -> int:
    parents = [n for n in builder.graph.operators if n.op == site.parent and n.outputs[0].dtype == site.dtype]
    added = 0
    if not parents:
        parent_dtype = _edge_dtype(specs.ops[site.parent], [site.dtype]) or _edge_dtype(specs.ops[site.parent], None)
        added = _direct_op(builder, specs, Site(SiteKind.OP, site.parent, parent_dtype))
        if not added:
            return 0
        parents = [builder.graph.operators[-1]]
    parent = parents[int(rng.integers(len(parents)))]
    builder.form = None
    return added + int(_feed(builder, specs.ops[site.op], Ref(parent.id, 0)))
