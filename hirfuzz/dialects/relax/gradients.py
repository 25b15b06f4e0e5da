"""Relax's autodiff, as the coordinator knows it without importing TVM (issue 27): which of
hirfuzz's ops `relax.transform.Gradient` differentiates, and which graphs are outside its
contract.

Gradient's contract (its docstring, src/relax/transform/gradient.cc): `main` returns a float
scalar, holds one dataflow block, calls no other function, and every op in it registers
FPrimalGradient; only float parameters are asked for (`require_grads`), and of those the ones
reaching no input TVM declares no_grad (DECLARED_NO_GRAD). The worker lowers a
graph's float results summed to such a `main` (lower.lower_loss); what else may make Gradient
fail or differ from the derivative by its own documented terms is `outside_contract`.
"""
from __future__ import annotations

from ...core.graph import Graph

# the Relax ops hirfuzz's specs call whose op registers FPrimalGradient in apache-tvm 0.27
# (tests/relax/test_gradient_oracle.py checks this against TVM's registry)
# the pass that differentiates a program (worker: protocol.GRADIENT_PASS), as titles and reports name it
AUTODIFF_PASS = "Gradient"  # relax.transform.Gradient
AUTODIFF_MODES = ()  # one autodiff: a gradient configuration names none (protocol.AUTODIFF)
AUTODIFF_EXECUTORS: dict = {}  # its program runs on the baseline executor


def autodiff_pass(config: dict) -> str:
    """The autodiff a gradient configuration runs, as titles and reports name it."""
    return AUTODIFF_PASS

GRADIENT_OPS = frozenset({
    "abs", "add", "astype", "broadcast_to", "concat", "cos", "cumsum", "divide", "equal", "exp", "expand_dims",
    "full_like", "greater", "greater_equal", "less", "less_equal", "log", "matmul", "maximum", "mean",
    "minimum", "multiply", "negative", "nn.avg_pool2d", "nn.conv2d", "nn.cross_entropy_with_logits",
    "nn.log_softmax", "nn.max_pool2d", "nn.nll_loss", "nn.relu", "nn.silu", "nn.softmax", "not_equal",
    "ones_like", "permute_dims", "power", "reshape", "sigmoid", "sin", "split", "sqrt", "subtract", "sum",
    "take", "tanh", "triu", "variance", "where", "zeros_like"})

# op -> the input slots whose gradient TVM declares absent (no_grad) though they may be float:
# a variable reaching one is not asked for (core.gradients.float_variables), as Gradient's
# derivative of it leaves that path out by TVM's own definition
DECLARED_NO_GRAD = {
    "full_like": (1,),    # _op_gradient.py full_like_grad: the fill value
    "nn.nll_loss": (2,),  # nll_loss_grad: "The gradient w.r.t. targets and weights are not available"
}
# the pools whose backward TVM leaves unlegalized with a dilation, saying so (legalize_ops/grad.py
# logs "Dilation is not supported in TOPI pool_grad and is not legalized.")
UNDILATED_BACKWARD = {"nn.max_pool2d", "nn.avg_pool2d"}
# op -> the attribute roles (core.attributes) a gradient case draws it without, as its
# backward is outside the contract with them: a dilated pool made a fifth of Relax's
# gradient cases go unjudged (28 of 150 drawn, seed 12)
CONTRACT_ROLES = {op: ("dilation",) for op in UNDILATED_BACKWARD}


def gradient_specs(specs) -> list[str]:
    """hirfuzz's op specs whose Relax op has a gradient."""
    return sorted(n for n in specs.names() if specs.ops[n].dialect_op in GRADIENT_OPS)


def outside_contract(graph: Graph) -> str | None:
    """Why Gradient may fail on, or differ from the derivative of, this graph by its own
    documented terms; None where the graph is inside them."""
    for node in graph.operators:
        if node.op in UNDILATED_BACKWARD and (node.attrs.get("dh", 1), node.attrs.get("dw", 1)) != (1, 1):
            return f"{node.op} with a dilation: its backward is not legalized (TVM logs so)"
    return None

