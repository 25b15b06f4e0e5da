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
import tvm
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


def op_call(record: dict, items: list, types: list | None = None) -> relay.Expr:
    """The Relay call of one operator node's call record (core.calls); `items` holds the
    Relay expr of each input (a list of them for a variadic input), `types` their Relay
    tensor types in the same layout (composites need them)."""
    if record["op"].startswith(COMPOSITE_PREFIX) and types is not None:
        return _composite_call(record, items, types)
    return _call(record, items)


def _call(record: dict, items: list) -> relay.Expr:
    args = [decode_argument(a, items) for a in record["args"]]
    kwargs = {k: decode_argument(v, items) for k, v in record["kwargs"].items()}
    value = relay_op(record["op"])(*args, **kwargs)
    return value.astuple() if isinstance(value, relay.expr.TupleWrapper) else value


def _composite_call(record: dict, items: list, types: list) -> relay.Expr:
    """A composite reads its inputs' static shapes by local type inference, which cannot see
    through a let-bound variable or a closure's result. So it is built over typed stand-ins,
    which are then replaced by the real inputs."""
    stand_ins = [[relay.var(f"in{i}_{j}", t) for j, t in enumerate(ty)] if isinstance(ty, list)
                 else relay.var(f"in{i}", ty) for i, ty in enumerate(types)]
    value = _call(record, stand_ins)
    flat = [(s, e) for ss, ee in zip(stand_ins, items)
            for s, e in (zip(ss, ee) if isinstance(ss, list) else [(ss, ee)])]
    return relay.bind(value, dict(flat))


# Relay's text format prints scalar floats with 6 significant digits and cannot parse NaN,
# float16 scalars or INT64_MIN (relay-notes.md): such a constant is made a one-element
# tensor (printed exactly, in the metadata) reshaped to rank 0, so reproducers, which carry
# the module as text, compute what the worker computed.
_EXACT_SCALAR_DTYPES = ("bool", "int8", "int16", "int32", "uint8", "uint16", "uint32")


def constant(value, dtype: str) -> relay.Expr:
    """A constant of `dtype` that prints exactly; composites make every constant with it."""
    array = np.asarray(value, dtype=dtype)
    if array.ndim > 0 or dtype in _EXACT_SCALAR_DTYPES:
        return relay.const(array, dtype)
    return relay.reshape(relay.const(array.reshape(1), dtype), newshape=[])


def static_shape(expr: relay.Expr) -> list[int]:
    """The static shape of a tensor-typed expression, as Python ints (lowering gives every
    tensor a static shape; the type of a fresh sub-expression is inferred locally)."""
    return [int(d) for d in relay.transform.InferTypeLocal(expr).shape]


# --- composites: elementwise ----------------------------------------------------------------

@composite
def square(x):
    return relay.multiply(x, x)


@composite
def atan2(y, x, dtype):
    """atan(y/x) moved to the right quadrant; x = 0 gives +-pi/2 by the sign of y (0 for y = 0)."""
    pi, zero = constant(np.pi, dtype), constant(0, dtype)
    base = relay.atan(relay.divide(y, x))
    left = relay.where(relay.greater_equal(y, zero), relay.add(base, pi), relay.subtract(base, pi))
    on_axis = relay.multiply(relay.sign(y), constant(np.pi / 2, dtype))
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

def _index_first(indices: relay.Expr) -> relay.Expr:
    """Relax's index layout (..., M) as Relay's (M, ...): the last axis moved first."""
    rank = len(static_shape(indices))
    return relay.transpose(indices, [rank - 1] + list(range(rank - 1)))


@composite
def expand_dims(data, axis):
    """Relay inserts one run of axes at one place: one call per new axis, ascending in the
    result's numbering, so each lands where Relax puts it."""
    out_rank = len(static_shape(data)) + len(axis)
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
        out = relay.where(relay.cast(valid, "bool"), out, constant(pad_value, dtype))
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
    return relay.one_hot(indices, constant(on_value, dtype), constant(off_value, dtype),
                         depth, axis, dtype)


@composite
def zeros_like(data, dtype):
    """Relay's zeros_like keeps the dtype: a dtype change is relay.zeros of the static shape."""
    if dtype is None:
        return relay.zeros_like(data)
    return relay.zeros(static_shape(data), dtype)


@composite
def ones_like(data, dtype):
    if dtype is None:
        return relay.ones_like(data)
    return relay.ones(static_shape(data), dtype)


@composite
def full_like(data, fill_value, dtype):
    if dtype is None:
        return relay.full_like(data, fill_value)
    return relay.full(fill_value, static_shape(data), dtype)


@composite
def eye_like(data, k, dtype):
    """np.eye(rows, cols, k) of data's shape: ones where column == row + k."""
    rows, cols = static_shape(data)
    row = relay.expand_dims(relay.arange(relay.const(0, "int32"), relay.const(rows, "int32"), dtype="int32"), 1)
    col = relay.arange(relay.const(0, "int32"), relay.const(cols, "int32"), dtype="int32")
    return relay.cast(relay.equal(relay.add(row, relay.const(k, "int32")), col), dtype)


@composite
def gather_elements(data, indices, axis):
    """Relay's gather needs indices shaped like data off the axis (Relax's may be smaller,
    reading only the leading part of those dims): data is sliced to that part first."""
    dshape, ishape = static_shape(data), static_shape(indices)
    axis = axis % len(dshape)
    end = [dshape[i] if i == axis else ishape[i] for i in range(len(dshape))]
    if end != dshape:
        data = relay.strided_slice(data, [0] * len(dshape), end)
    return relay.gather(data, axis, indices)


# --- composites: nn and norm ----------------------------------------------------------------

def _broadcast_shapes(a: list[int], b: list[int]) -> list[int]:
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    return [x if y == 1 else y for x, y in zip(a, b)]


def _along(v: relay.Expr, axes: list[int], rank: int) -> relay.Expr:
    """`v`, shaped like the data's dims at `axes` (in the order given), reshaped to
    broadcast against data of rank `rank`."""
    axes = [a % rank for a in axes]
    if axes != sorted(axes):
        v = relay.transpose(v, sorted(range(len(axes)), key=lambda i: axes[i]))
    dims = static_shape(v)
    shape = [1] * rank
    for a, d in zip(sorted(axes), dims):
        shape[a] = d
    return relay.reshape(v, shape)


@composite
def matmul(a, b):
    """np.matmul semantics: 2-D x 2-D is nn.matmul; otherwise 1-D operands are promoted,
    the batch dims broadcast and flattened for nn.batch_matmul (transpose_b=False), and
    the result reshaped to matmul's shape (promoted dims dropped)."""
    sa, sb = static_shape(a), static_shape(b)
    ra, rb = len(sa), len(sb)
    if ra == 2 and rb == 2:
        return relay.nn.matmul(a, b)
    if ra == 1:
        a, sa = relay.reshape(a, [1, sa[0]]), [1, sa[0]]
    if rb == 1:
        b, sb = relay.reshape(b, [sb[0], 1]), [sb[0], 1]
    m, k, n = sa[-2], sa[-1], sb[-1]
    batch = _broadcast_shapes(sa[:-2], sb[:-2])
    nb = 1
    for d in batch:
        nb *= d
    if list(sa[:-2]) != batch:
        a = relay.broadcast_to(a, batch + [m, k])
    if list(sb[:-2]) != batch:
        b = relay.broadcast_to(b, batch + [k, n])
    c = relay.nn.batch_matmul(relay.reshape(a, [nb, m, k]), relay.reshape(b, [nb, k, n]),
                              transpose_b=False)
    return relay.reshape(c, batch + ([m] if ra > 1 else []) + ([n] if rb > 1 else []))


@composite
def relu6(x):
    return relay.clip(x, 0.0, 6.0)


@composite
def gelu(x, dtype):
    half, one = constant(0.5, dtype), constant(1.0, dtype)
    return x * half * (one + relay.erf(x * constant(0.7071067811865476, dtype)))


@composite
def gelu_tanh(x, dtype):
    c = lambda v: constant(v, dtype)  # noqa: E731
    inner = c(0.7978845608028654) * (x + c(0.044715) * x * x * x)
    return c(0.5) * x * (c(1.0) + relay.tanh(inner))


@composite
def silu(x):
    return x * relay.sigmoid(x)


@composite
def selu(x, dtype):
    c = lambda v: constant(v, dtype)  # noqa: E731
    neg = c(1.6732632423543772) * (relay.exp(x) - c(1.0))
    return c(1.0507009873554805) * relay.where(relay.greater(x, c(0.0)), x, neg)


@composite
def softplus(x, beta, threshold, dtype):
    """x where beta * x is above the threshold, else log(1 + exp(beta * x)) / beta, the latter
    as max(bx, 0) + log(1 + exp(-|bx|)), equal and never overflowing: exp(bx) overflows float16
    from bx = 11.1, below the threshold 20 (bench19 filed TVM's exact float16 evaluation of
    the naive form, inf, as a wrong result against the float64 reference)."""
    c = lambda v: constant(v, dtype)  # noqa: E731
    bx = x * c(beta)
    tail = relay.log(c(1.0) + relay.exp(relay.negative(relay.abs(bx))))
    soft = (relay.maximum(bx, c(0.0)) + tail) / c(beta)
    return relay.where(relay.greater(bx, c(threshold)), x, soft)


@composite
def dropout(x, rate):
    """Inference dropout: Relay's nn.dropout output (SimplifyInference makes it the
    identity) and a mask of ones (Relay's mask, item 1 of dropout_raw, has no compute)."""
    return relay.Tuple([relay.nn.dropout(x, rate), relay.ones_like(x)])


@composite
def layer_norm(data, gamma, beta, axes, epsilon, dtype):
    """nn.layer_norm for one axis; mean and variance over several axes otherwise."""
    rank = len(static_shape(data))
    if len(axes) == 1:
        return relay.nn.layer_norm(data, gamma, beta, axis=axes[0], epsilon=epsilon)
    norm = [a % rank for a in axes]
    mean = relay.mean(data, norm, keepdims=True)
    var = relay.variance(data, norm, keepdims=True)
    out = (data - mean) / relay.sqrt(var + constant(epsilon, dtype))
    return out * _along(gamma, axes, rank) + _along(beta, axes, rank)


@composite
def rms_norm(data, weight, axes, epsilon, dtype):
    rank = len(static_shape(data))
    norm = [a % rank for a in axes]
    ms = relay.mean(data * data, norm, keepdims=True)
    return data * relay.rsqrt(ms + constant(epsilon, dtype)) * _along(weight, axes, rank)


@composite
def outer(x1, x2):
    return relay.multiply(relay.reshape(x1, [-1, 1]), relay.reshape(x2, [1, -1]))


def _pool_out(size, k, s, lo, hi, d):
    """A ceil-mode pooled size as the spec has it (PyTorch): a last window that would start
    in the trailing padding is dropped."""
    span = size + lo + hi - (k - 1) * d - 1
    out = -(-span // s) + 1
    return out - 1 if (out - 1) * s >= size + lo else out


def _pool(op, data, pool_size, strides, dilation, padding, ceil_mode, **kw):
    """Relay's 1-D (NCW) or 2-D (NCHW) pool, cut to the spec's ceil-mode size: Relay keeps a
    last window starting in the trailing padding that PyTorch's rule (and the spec's) drops.
    `padding` is Relay's: all the befores, then all the afters."""
    out = op(data, pool_size=pool_size, strides=strides, dilation=dilation, padding=padding,
             ceil_mode=ceil_mode, **kw)
    if not ceil_mode:
        return out
    spatial = static_shape(data)[2:]
    n = len(spatial)
    want = [_pool_out(size, pool_size[i], strides[i], padding[i], padding[n + i], dilation[i])
            for i, size in enumerate(spatial)]
    shape = static_shape(out)
    if shape[2:] == want:
        return out
    # over every axis, not `axes=[2, ...]`: strided_slice's registered gradient asserts that
    # axes are absent ("not yet supported"), and the gradient oracle differentiates the pools
    return relay.strided_slice(out, begin=[0] * (n + 2), end=shape[:2] + want, strides=[1] * (n + 2))


@composite
def max_pool2d(data, pool_size, strides, dilation, padding, ceil_mode):
    return _pool(relay.nn.max_pool2d, data, pool_size, strides, dilation, padding, ceil_mode)


@composite
def avg_pool2d(data, pool_size, strides, dilation, padding, ceil_mode, count_include_pad):
    return _pool(relay.nn.avg_pool2d, data, pool_size, strides, dilation, padding, ceil_mode,
                 count_include_pad=count_include_pad)


@composite
def batch_norm(data, gamma, beta, moving_mean, moving_var, axis, epsilon, center, scale):
    """nn.batch_norm, its 3-tuple as is; Relay takes axis >= -1 only, so a more negative
    axis is normalised."""
    if axis < -1:
        axis %= len(static_shape(data))
    return relay.nn.batch_norm(data, gamma, beta, moving_mean, moving_var, axis=axis,
                               epsilon=epsilon, center=center, scale=scale)


@composite
def max_pool1d(data, pool_size, strides, dilation, padding, ceil_mode):
    return _pool(relay.nn.max_pool1d, data, pool_size, strides, dilation, padding, ceil_mode)


@composite
def avg_pool1d(data, pool_size, strides, dilation, padding, ceil_mode, count_include_pad):
    return _pool(relay.nn.avg_pool1d, data, pool_size, strides, dilation, padding, ceil_mode,
                 count_include_pad=count_include_pad)


@composite
def max_pool3d(data, pool_size, strides, dilation, padding, ceil_mode):
    return _pool(relay.nn.max_pool3d, data, pool_size, strides, dilation, padding, ceil_mode)


@composite
def avg_pool3d(data, pool_size, strides, dilation, padding, ceil_mode, count_include_pad):
    return _pool(relay.nn.avg_pool3d, data, pool_size, strides, dilation, padding, ceil_mode,
                 count_include_pad=count_include_pad)


# TVM 0.19's fast_* approximations: registered ops with no tvm.relay wrapper (topi/elemwise.h:
# fast_exp_float32 and fast_tanh_float on float32, fast_erf_float_expr on float32 and float16;
# the plain function on other dtypes)

def _registered_op(name: str, x):
    return relay.Call(tvm.ir.Op.get(name), [x])


@composite
def fast_exp(x):
    return _registered_op("fast_exp", x)


@composite
def fast_tanh(x):
    return _registered_op("fast_tanh", x)


@composite
def fast_erf(x):
    return _registered_op("fast_erf", x)
