"""Relay op calls from call records (runs under TVM 0.19 only).

A spec's Relay spelling names either an op in `tvm.relay` ("nn.conv2d") or a composite,
"hirfuzz.<name>": a few Relay ops standing for one Relax op that Relay lacks (gelu,
atan2, eye_like, ...). Composites are registered below with `@composite`; they receive
the call record's arguments like any op and return one Relay expression. Reproducers are
Relay text, so a composite leaves no trace of hirfuzz in them.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from tvm import relay

from ...core.calls import decode_argument

COMPOSITE_PREFIX = "hirfuzz."
COMPOSITES: dict[str, Callable[..., relay.Expr]] = {}


def composite(fn: Callable[..., relay.Expr]) -> Callable[..., relay.Expr]:
    """Register `fn` as the composite op "hirfuzz.<fn name>"."""
    COMPOSITES[COMPOSITE_PREFIX + fn.__name__] = fn
    return fn


def relay_op(path: str):
    """`tvm.relay.<path>`, e.g. "nn.conv2d", or a registered composite "hirfuzz.<name>";
    raises AttributeError for an unknown op."""
    if path.startswith(COMPOSITE_PREFIX):
        if path not in COMPOSITES:
            raise AttributeError(f"no Relay composite '{path}' (known: {', '.join(sorted(COMPOSITES))})")
        return COMPOSITES[path]
    return tvm_relay_op(path)


def tvm_relay_op(path: str):
    """`tvm.relay.<path>` (reproducers copy this function: they know no composites)."""
    from tvm import relay
    fn = relay
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn


def op_call(record: dict, items: list) -> relay.Expr:
    """The Relay call of one operator node's call record (core.calls); `items` holds the
    Relay expr of each input (a list of them for a variadic input)."""
    args = [decode_argument(a, items) for a in record["args"]]
    kwargs = {k: decode_argument(v, items) for k, v in record["kwargs"].items()}
    value = relay_op(record["op"])(*args, **kwargs)
    return value.astuple() if isinstance(value, relay.expr.TupleWrapper) else value


def scalar(value, dtype: str) -> relay.Expr:
    """A rank-0 constant of `dtype` (composites mix constants with tensors of that dtype)."""
    return relay.const(value, dtype)


# --- composites: elementwise ----------------------------------------------------------------

@composite
def square(x):
    return relay.multiply(x, x)


@composite
def atan2(y, x, dtype):
    """atan(y/x) moved to the right quadrant; x = 0 gives +-pi/2 by the sign of y (0 for y = 0)."""
    pi, zero = scalar(np.pi, dtype), scalar(0, dtype)
    base = relay.atan(relay.divide(y, x))
    left = relay.where(relay.greater_equal(y, zero), relay.add(base, pi), relay.subtract(base, pi))
    on_axis = relay.multiply(relay.sign(y), scalar(np.pi / 2, dtype))
    return relay.where(relay.greater(x, zero), base, relay.where(relay.less(x, zero), left, on_axis))


@composite
def log_add_exp(a, b):
    """log(exp(a) + exp(b)) without overflow: the larger operand factored out."""
    m = relay.maximum(a, b)
    return relay.add(m, relay.log(relay.add(relay.exp(relay.subtract(a, m)), relay.exp(relay.subtract(b, m)))))


# --- composites: reductions -------------------------------------------------------------------

@composite
def argmax(x, axis=None, keepdims=False):
    """Relay's argmax gives int32 indices; the spec's (Relax's, NumPy's) are int64."""
    return relay.cast(relay.argmax(x, axis=axis, keepdims=keepdims), "int64")


@composite
def argmin(x, axis=None, keepdims=False):
    return relay.cast(relay.argmin(x, axis=axis, keepdims=keepdims), "int64")
