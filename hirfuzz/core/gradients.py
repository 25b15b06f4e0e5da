"""Gradients against finite differences of the NumPy reference (issue 27), whatever the IR.

A graph's loss is the sum of its float results (each summed, in float64). TVM's gradient of
each float variable is compared, element by element, with a central finite difference of
the reference's loss, gradcheck-style: an element is judged only where the loss is smooth
around it, that is where the central differences at steps h and h/10 agree closely and the
one-sided differences (forward, backward) agree with them; elsewhere it is skipped (a kink,
a tie, a step). The reference is the graph with every float16/float32 tensor made float64,
so the differences carry no float32 rounding.

tools/gradient_check.py and the gradient oracle (campaign/oracles/gradient.py) both judge
with `check_gradient`; a reproducer carries `finite_differences`' estimate and mask.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .graph import Graph, Ref
from .reference import interpret

FLOATS = ("float16", "float32", "float64")

# gradcheck's tolerances, per the lowest float precision in the program: an element is
# smooth where its differences agree within SMOOTH; TVM's gradient is right within GRAD
# (rtol, atol relative to the largest difference), and its loss within LOSS (atol relative
# to the loss). GRAD's float64 absolute part allows for the reference's own rounding, which
# smoothness does not show: where tanh saturates to 1 - 45 ulp, acos of it stays put under
# the step, and the differences miss that term's slope (bench20 relay-now 0025, 4e-7 off the
# exact derivative, which TVM's gradient had to 5e-8); the oracle's bugs are off by whole values
SMOOTH = {"float64": (1e-6, 1e-9), "float32": (1e-6, 1e-9)}
GRAD = {"float64": (1e-4, 1e-6), "float32": (2e-3, 1e-4)}
LOSS = {"float64": (1e-4, 1e-6), "float32": (2e-2, 1e-3)}


def loss_tolerance(precision: str, loss: float) -> tuple[float, float]:
    """(rtol, atol) the loss TVM computes is judged within, against the reference's `loss`."""
    rtol, atol = LOSS[precision]
    return rtol, atol * max(1.0, abs(loss))
STEP = 1e-4  # h, relative to max(1, |x|)


def float_results(graph: Graph) -> list[Ref]:
    """The results the loss sums."""
    return [r for r in graph.results() if graph.type_of(r).dtype in FLOATS]


def float_variables(graph: Graph, no_grad: dict | None = None) -> list:
    """The variables whose gradients are asked for, in parameter order: the float ones, less
    any reaching an input slot the autodiff declares no_grad (`no_grad`: op -> slots, the
    dialect's DECLARED_NO_GRAD). Its gradient of such a variable leaves that path out by its
    own definition, where finite differences take every path; asking for the others judges
    the case (Relax's full_like fill value made 14% of gradient cases go unjudged)."""
    reaching = variables_reaching(graph, no_grad or {})
    return [n for n in graph.variables if n.type.dtype in FLOATS and n.id not in reaching]


def differentiated_positions(graph: Graph, no_grad: dict) -> list[int]:
    """The parameter positions of float_variables(graph, no_grad): what a worker asks its
    autodiff for (protocol.REQUIRE_GRADS), and a reproducer too."""
    wanted = {n.id for n in float_variables(graph, no_grad)}
    return [i for i, n in enumerate(graph.variables) if n.id in wanted]


def variables_reaching(graph: Graph, slots: dict) -> set[int]:
    """The ids of the variables some operator's input slot in `slots` (op -> slots) is
    computed from."""
    if not slots:
        return set()
    above: dict[int, frozenset] = {}  # node -> the variables it is computed from
    reaching: set[int] = set()
    for node in graph.nodes:
        if node.kind == "var":
            above[node.id] = frozenset({node.id})
            continue
        above[node.id] = frozenset().union(*(above[r.node] for r in node.input_refs()))
        for slot in slots.get(node.op, ()):
            item = node.inputs[slot] if slot < len(node.inputs) else []
            for ref in item if isinstance(item, list) else [item]:
                reaching |= above[ref.node]
    return reaching


def precision_of(graph: Graph) -> str:
    """The lowest float precision the graph computes in: which tolerances judge it."""
    narrow = any(t.dtype in ("float16", "float32") for n in graph.nodes for t in n.outputs)
    return "float32" if narrow else "float64"


def widened(graph: Graph) -> Graph:
    """The graph with every float16/float32 tensor, dtype and attribute made float64."""
    text = graph.dumps()
    for narrow in ("float16", "float32"):
        text = text.replace(f'"{narrow}"', '"float64"')
    return Graph.loads(text)


def widened_values(values: dict) -> dict:
    return {k: (v.astype(np.float64) if v.dtype.kind == "f" else v) for k, v in values.items()}


def reference_loss(graph64: Graph, specs, values: dict) -> float:
    facts = interpret(graph64, specs, values)
    return float(sum(np.sum(facts[r].value, dtype=np.float64) for r in float_results(graph64)))


@dataclass
class Estimate:
    """Finite differences of the loss in one variable: the estimate of its gradient (the
    fine central difference), where it is smooth enough to judge, and the scale absolute
    tolerances are relative to."""
    gradient: np.ndarray
    smooth: np.ndarray   # bool, the variable's shape
    scale: float
    unsampled: int = 0   # elements whose differences were not taken (expected_gradients' sample)


def finite_differences(graph64: Graph, specs, values: dict, var_id: int, precision: str,
                       indices: list | None = None) -> Estimate:
    """Variable `var_id`'s gradient by central differences of the float64 reference, and
    which elements are smooth (`values`: every variable's, float64 where float); at
    `indices` alone where given, the rest left unjudged (not smooth)."""
    smooth_rtol, smooth_atol = SMOOTH[precision]
    base = values[var_id].astype(np.float64)
    f0 = reference_loss(graph64, specs, {**values, var_id: base})
    estimates = {}
    for index in (np.ndindex(base.shape) if indices is None else indices):
        h = STEP * max(1.0, abs(float(base[index])))

        def at(delta):
            moved = base.copy()
            moved[index] += delta
            return reference_loss(graph64, specs, {**values, var_id: moved})
        plus, minus = at(h), at(-h)
        central = (plus - minus) / (2 * h)
        fine = (at(h / 10) - at(-h / 10)) / (h / 5)
        forward, backward = (plus - f0) / h, (f0 - minus) / h
        estimates[index] = (central, fine, forward, backward)
    scale = max([abs(e[1]) for e in estimates.values() if np.isfinite(e[1])] + [1.0])
    gradient = np.zeros(base.shape)
    smooth = np.zeros(base.shape, dtype=bool)  # an element not sampled is left unjudged
    for index, (central, fine, forward, backward) in estimates.items():
        gradient[index] = fine if np.isfinite(fine) else 0.0
        smooth_tol = smooth_atol * scale + smooth_rtol * abs(fine)
        one_sided_tol = 1e-3 * scale + 1e-3 * abs(fine)   # O(h) error expected
        smooth[index] = bool(np.isfinite(central) and np.isfinite(fine) and abs(central - fine) <= smooth_tol
                             and abs(forward - fine) <= one_sided_tol and abs(backward - fine) <= one_sided_tol)
    return Estimate(gradient, smooth, scale, unsampled=base.size - len(estimates))


def expected_gradients(graph: Graph, inputs: list[np.ndarray], specs, no_grad: dict | None = None,
                       most_elements: int | None = None) -> dict:
    """What a graph's gradients are judged against on its `inputs` (one per variable): the
    reference's loss, the precision that sets the tolerances, and the finite differences of
    each variable whose gradient is asked for ("estimates", by node id; `no_grad` as
    float_variables takes it): of every element, or of at most `most_elements` in all,
    spread evenly over each variable in proportion to its size (sampled_indices)."""
    graph64 = widened(graph)
    values = widened_values({n.id: v for n, v in zip(graph.variables, inputs)})
    precision = precision_of(graph)
    variables = float_variables(graph, no_grad)
    total = sum(int(np.prod(n.type.shape)) for n in variables)
    estimates = {}
    for n in variables:
        indices = None
        if most_elements is not None and total > most_elements:
            indices = sampled_indices(n.type.shape, max(1, most_elements * int(np.prod(n.type.shape)) // total))
        estimates[n.id] = finite_differences(graph64, specs, values, n.id, precision, indices)
    return {"loss": reference_loss(graph64, specs, values), "precision": precision, "estimates": estimates}


def sampled_indices(shape: tuple, count: int) -> list[tuple]:
    """`count` element indices of a tensor of `shape`, evenly spaced in its flat order."""
    size = int(np.prod(shape))
    flat = np.unique(np.linspace(0, size - 1, num=min(count, size)).round().astype(np.int64))
    return [tuple(int(i) for i in np.unravel_index(f, shape)) for f in flat]


@dataclass
class Judgement:
    judged: int = 0
    skipped: int = 0
    # TVM's gradient not finite where the differences are: reverse mode met 0 * inf (the
    # derivative of sqrt or log at 0, on a path whose value is constant there); not judged
    nonfinite: int = 0
    wrong: list = field(default_factory=list)   # (var id, index, tvm, fd)
    unsampled: int = 0   # of `skipped`: elements whose differences were not taken

    @property
    def not_smooth(self) -> int:
        return self.skipped - self.unsampled


def judge_estimate(estimate: Estimate, var_id: int, got: np.ndarray, precision: str) -> Judgement:
    """TVM's gradient `got` of one variable against its finite differences, smooth elements only."""
    grad_rtol, grad_atol = GRAD[precision]
    judgement = Judgement(unsampled=estimate.unsampled)
    for index in np.ndindex(estimate.gradient.shape):
        if not estimate.smooth[index]:
            judgement.skipped += 1
            continue
        value, want = float(got[index]), float(estimate.gradient[index])
        if not np.isfinite(value):
            judgement.nonfinite += 1
            continue
        judgement.judged += 1
        if not abs(value - want) <= grad_atol * estimate.scale + grad_rtol * abs(want):
            judgement.wrong.append((var_id, [int(i) for i in index], value, want))
    return judgement


def check_gradient(graph64: Graph, specs, values: dict, var_id: int, tvm_grad: np.ndarray,
                   precision: str) -> Judgement:
    """Each element of variable `var_id`'s gradient against finite differences."""
    return judge_estimate(finite_differences(graph64, specs, values, var_id, precision), var_id, tvm_grad, precision)
