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


# --- composites: layout, indexing, creation -------------------------------------------------

def _static_shape(expr: relay.Expr) -> list[int]:
    """The static shape of a tensor-typed expression."""
    return [int(d) for d in relay.transform.InferTypeLocal(expr).shape]


def _index_first(indices: relay.Expr) -> relay.Expr:
    """Relax's index layout (..., M) as Relay's (M, ...): the last axis moved first."""
    rank = len(_static_shape(indices))
    return relay.transpose(indices, [rank - 1] + list(range(rank - 1)))


@composite
def expand_dims(data, axis):
    """Relay inserts one run of axes at one place: one call per new axis, ascending in the
    result's numbering, so each lands where Relax puts it."""
    out_rank = len(_static_shape(data)) + len(axis)
    for a in sorted(a % out_rank for a in axis):
        data = relay.expand_dims(data, a, 1)
    return data


@composite
def flatten(data):
    return relay.reshape(data, [-1])


@composite
def repeat(data, repeats, axis):
    """Relay's axis is required: axis None repeats the flattened tensor."""
    if axis is None:
        return relay.repeat(relay.reshape(data, [-1]), repeats, 0)
    return relay.repeat(data, repeats, axis)


@composite
def layout_transform(data, perm, split, factor, pad_value, dtype):
    """Relax's index map (a permutation, at most one axis split by `factor`) as Relay layout
    strings: source "ABC..", destination the permuted letters, the split axis's outer part in
    place and "<factor><letter>" appended, e.g. perm [1, 0] split 0 factor 3: "AB" -> "BA3a".
    Relay pads a split axis with zeros; another `pad_value` is put in through a mask (the
    transform of a tensor of ones)."""
    letters = "ABCDE"[:len(perm)]
    dst = "".join(letters[p] for p in perm)
    if split is not None:
        dst += f"{factor}{letters[split].lower()}"
    out = relay.layout_transform(data, letters, dst)
    if pad_value is not None and pad_value != 0:
        valid = relay.layout_transform(relay.ones_like(data), letters, dst)
        out = relay.where(relay.cast(valid, "bool"), out, relay.const(pad_value, dtype))
    return out


@composite
def gather_nd(data, indices):
    return relay.gather_nd(data, _index_first(indices))


@composite
def scatter_nd(data, indices, updates, reduction):
    return relay.scatter_nd(data, _index_first(indices), updates, reduction)


@composite
def one_hot(indices, on_value, off_value, depth, axis, dtype):
    """Relax's on/off PrimValues as rank-0 constants of the result dtype (given explicitly)."""
    return relay.one_hot(indices, relay.const(on_value, dtype), relay.const(off_value, dtype),
                         depth, axis, dtype)


@composite
def zeros_like(data, dtype):
    """Relay's zeros_like keeps the dtype: a dtype change is relay.zeros of the static shape."""
    if dtype is None:
        return relay.zeros_like(data)
    return relay.zeros(_static_shape(data), dtype)


@composite
def ones_like(data, dtype):
    if dtype is None:
        return relay.ones_like(data)
    return relay.ones(_static_shape(data), dtype)


@composite
def full_like(data, fill_value, dtype):
    if dtype is None:
        return relay.full_like(data, fill_value)
    return relay.full(fill_value, _static_shape(data), dtype)


@composite
def eye_like(data, k, dtype):
    """np.eye(rows, cols, k) of data's shape: ones where column == row + k."""
    rows, cols = _static_shape(data)
    row = relay.expand_dims(relay.arange(relay.const(0, "int32"), relay.const(rows, "int32"), dtype="int32"), 1)
    col = relay.arange(relay.const(0, "int32"), relay.const(cols, "int32"), dtype="int32")
    return relay.cast(relay.equal(relay.add(row, relay.const(k, "int32")), col), dtype)


@composite
def gather_elements(data, indices, axis):
    """Relay's gather needs indices shaped like data off the axis (Relax's may be smaller,
    reading only the leading part of those dims): data is sliced to that part first."""
    dshape, ishape = _static_shape(data), _static_shape(indices)
    axis = axis % len(dshape)
    end = [dshape[i] if i == axis else ishape[i] for i in range(len(dshape))]
    if end != dshape:
        data = relay.strided_slice(data, [0] * len(dshape), end)
    return relay.gather(data, axis, indices)
