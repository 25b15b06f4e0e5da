"""Relay's autodiff, as the coordinator knows it without importing TVM (issue 27): which of
hirfuzz's Relay ops `relay.transform.FirstOrderGradient` differentiates, and which graphs are
outside its contract.

FirstOrderGradient's contract (TVM 0.19, src/relay/transforms/first_order_gradient.cc, and
`relay.transform.gradient(..., mode="first_order")`, which runs it): the module's functions
hold only variables, constants, tuples, projections, calls of operators and functions in
graph form (its CheckFeature: no let, If, references, global calls, ADTs), no polymorphism,
and every operator called registers FPrimalGradient; every parameter's gradient is
returned. The worker lowers a graph's float results summed to such a `main`
(lower.lower_loss). The ops' registered gradients (python/tvm/relay/op/_tensor_grad.py) add
terms of their own, which `outside_contract` names.

Relay has a second autodiff, the higher-order one (`relay.transform.gradient(func, mod,
mode="higher_order")`, src/relay/transforms/higher_order_gradient.cc: ReverseAD), which
takes what FirstOrderGradient refuses: let, If, closures, global functions. Its terms: no
graph sharing (its CheckFeature refuses fGraph: the worker puts the module in A-normal form
first), tensor parameters, and every operator in the function and the globals it calls
registers FPrimalGradient (MissingGrad), an If's condition included. Its output reads and
writes references, which only Relay's interpreter runs (the VM and graph executor have no
RefCreate). So a higher-order gradient configuration differentiates the case's program as
its lowering plan shapes it (functions, closures, lets, tuples), less the plan's Ifs, whose
always-true conditions call ops without a gradient (shape_of, greater_equal, all), and runs
on the debug executor.
"""
from __future__ import annotations

from enum import Enum

from ...core.graph import Graph
from ...protocol import AUTODIFF

# the pass that differentiates a program (worker: protocol.GRADIENT_PASS), as titles and reports name it
AUTODIFF_PASS = "FirstOrderGradient"  # relay.transform.FirstOrderGradient


class Autodiff(str, Enum):
    """Relay's two autodiffs; a gradient configuration's protocol.AUTODIFF (none: first order)."""
    FIRST_ORDER = "first_order"    # relay.transform.FirstOrderGradient, on the graph-form loss
    HIGHER_ORDER = "higher_order"  # relay.transform.gradient(mode="higher_order"), on the planned program

    @property
    def pass_name(self) -> str:
        return AUTODIFF_PASS if self is Autodiff.FIRST_ORDER else 'gradient(mode="higher_order")'


AUTODIFF_MODES = tuple(m.value for m in Autodiff)
# op -> the attribute roles (core.attributes) a gradient case draws it without, as its
# gradient is outside the contract with them (outside_contract): a dilated conv2d made 16 of
# 150 drawn gradient cases go unjudged (seed 12). A dilated pool's gradient is TVM's to
# get right, and its wrong one a finding
CONTRACT_ROLES = {"nn.conv2d": ("dilation",)}
# op -> input slots the autodiff declares without a gradient (as Relax's DECLARED_NO_GRAD):
# none of hirfuzz's Relay ops, so every float parameter is asked for, as FirstOrderGradient
# gives them all
DECLARED_NO_GRAD: dict = {}
# the executor an autodiff's program runs on, where not the baseline: the higher-order one's
# reads and writes references, which only Relay's interpreter runs
AUTODIFF_EXECUTORS = {Autodiff.HIGHER_ORDER.value: "debug"}
# the plan features a higher-order gradient program is lowered without: their conditions
# call ops with no registered gradient, which the higher-order autodiff refuses
NOT_DIFFERENTIABLE_FEATURES = ("if_shape", "if_prim")


def autodiff_of(config: dict) -> Autodiff:
    """The autodiff a gradient configuration runs (protocol.AUTODIFF; none: the first-order one)."""
    return Autodiff(config.get(AUTODIFF) or Autodiff.FIRST_ORDER)


def autodiff_pass(config: dict) -> str:
    """The autodiff a gradient configuration runs, as titles and reports name it."""
    return autodiff_of(config).pass_name

# the Relay ops hirfuzz's specs call whose op registers FPrimalGradient in TVM 0.19
# (tests/relay/test_relay_gradient_oracle.py checks this against TVM's registry)
GRADIENT_OPS = frozenset({
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atanh", "cast", "cast_like", "clip",
    "collapse_sum_like", "collapse_sum_to", "concatenate", "copy", "cos", "cosh", "divide", "erf", "exp",
    "less_equal", "log", "log10", "log2", "max", "mean", "multiply", "negative", "nn.batch_flatten",
    "nn.batch_matmul", "nn.bias_add", "nn.conv2d", "nn.cross_entropy", "nn.cross_entropy_with_logits",
    "nn.dense", "nn.global_avg_pool2d", "nn.log_softmax", "nn.matmul", "nn.relu", "nn.softmax", "not_equal",
    "reshape", "reshape_like", "sigmoid", "sin", "sinh", "sqrt", "squeeze", "stack", "strided_slice",
    "subtract", "sum", "take", "tan", "tanh", "transpose", "variance", "where"})


# the composites (ops/"hirfuzz.*", a few Relay ops each) every op of which registers
# FPrimalGradient, with the ops they call (the test lowers each and checks both). The pools
# are the reason: nn.max_pool2d and nn.avg_pool2d are called only through a composite,
# which cuts the ceil-mode size to the spec's. The rest call an op without a gradient
# (maximum, greater, rsqrt, nn.layer_norm, broadcast_to, ...) or take no float variable.
GRADIENT_COMPOSITES = {
    "hirfuzz.avg_pool2d": frozenset({"nn.avg_pool2d", "strided_slice"}),
    "hirfuzz.expand_dims": frozenset({"expand_dims"}),
    "hirfuzz.flatten": frozenset({"reshape"}),
    "hirfuzz.gather_nd": frozenset({"gather_nd", "transpose"}),
    "hirfuzz.gelu_tanh": frozenset({"add", "multiply", "reshape", "tanh"}),
    "hirfuzz.max_pool2d": frozenset({"nn.max_pool2d", "strided_slice"}),
    "hirfuzz.outer": frozenset({"multiply", "reshape"}),
    "hirfuzz.relu6": frozenset({"clip"}),
    "hirfuzz.silu": frozenset({"multiply", "sigmoid"}),
    "hirfuzz.square": frozenset({"multiply"}),
}


def gradient_specs(specs) -> list[str]:
    """hirfuzz's op specs whose Relay op, or every op of whose composite, has a gradient."""
    return sorted(n for n in specs.names()
                  if specs.ops[n].dialect_op in GRADIENT_OPS or specs.ops[n].dialect_op in GRADIENT_COMPOSITES)


def outside_contract(graph: Graph) -> str | None:
    """Why FirstOrderGradient may fail on, or differ from the derivative of, this graph by
    its own documented terms (the ops' gradients in _tensor_grad.py); None where inside."""
    for node in graph.operators:
        if node.op == "take" and graph.type_of(node.inputs[1]).rank > 1:
            return "take with indices of rank > 1: take_grad raises (\"only supports scalar or 1D indices\")"
        if node.op == "strided_slice" and node.attrs.get("axes") is not None:
            return "strided_slice with axes: its gradient asserts they are absent (\"not yet supported\")"
        if node.op == "nn.conv2d" and (node.attrs.get("dh", 1), node.attrs.get("dw", 1)) != (1, 1):
            # conv2d_grad's backward is a dilated conv2d_transpose, whose x86 strategy asserts
            # "not support dilate now": on llvm the gradient cannot build, by TVM's own word
            return "nn.conv2d with a dilation: its backward conv2d_transpose does not support one on llvm"
    return None
