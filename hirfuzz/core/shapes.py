"""Shape and dtype helpers that spec expressions call by name (``broadcast_shapes(a.shape, b.shape)``).

Each is registered with ``@shape_function``, which is what makes it callable from a spec:
the compiler (``expr.py``) takes its vocabulary from ``SHAPE_FUNCTIONS``. Sizes may be z3
terms while the solver picks integer attributes, so the arithmetic here that can meet one
(division, ``min``, ``max``) picks z3's form when an operand is symbolic.
"""
from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from ..errors import ExprError

try:  # z3 is a declared dependency; the helpers still work on concrete values without it
    import z3
except ImportError:  # pragma: no cover
    z3 = None

SHAPE_FUNCTIONS: dict[str, Callable] = {}   # name -> function, filled by @shape_function


def shape_function(fn: Callable) -> Callable:
    """Make `fn` callable from spec expressions by its name."""
    if fn.__name__ in SHAPE_FUNCTIONS:
        raise ValueError(f"shape function '{fn.__name__}' is registered twice")
    SHAPE_FUNCTIONS[fn.__name__] = fn
    return fn


# --- arithmetic that also works on z3 terms ------------------------------------------------

def is_symbolic(*values) -> bool:
    return z3 is not None and any(isinstance(v, z3.ExprRef) for v in values)


def floordiv(a, b):
    if is_symbolic(a, b):
        return a / b  # z3 integer division; hirfuzz only divides non-negative sizes
    return a // b


def symbolic_min(*args):
    items = list(args[0]) if len(args) == 1 else list(args)
    out = items[0]
    for v in items[1:]:
        out = z3.If(v < out, v, out) if is_symbolic(out, v) else min(out, v)
    return out


def symbolic_max(*args):
    items = list(args[0]) if len(args) == 1 else list(args)
    out = items[0]
    for v in items[1:]:
        out = z3.If(v > out, v, out) if is_symbolic(out, v) else max(out, v)
    return out


# --- shapes ---------------------------------------------------------------------------------

@shape_function
def prod(seq):
    out = 1
    for v in seq:
        out = out * v
    return out


@shape_function
def broadcastable(a, b) -> bool:
    for x, y in zip(reversed(list(a)), reversed(list(b))):
        if x != y and x != 1 and y != 1:
            return False
    return True


@shape_function
def broadcast_shapes(a, b) -> list:
    a, b = list(a), list(b)
    if not broadcastable(a, b):
        raise ExprError(f"shapes {a} and {b} do not broadcast")
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + a
    b = [1] * (n - len(b)) + b
    return [x if y == 1 else y for x, y in zip(a, b)]


@shape_function
def normalize_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ExprError(f"axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


@shape_function
def normalize_axes(axes, rank: int) -> list:
    if axes is None:
        return list(range(rank))
    if isinstance(axes, int):
        axes = [axes]
    return sorted(normalize_axis(a, rank) for a in axes)


@shape_function
def reduce_shape(shape, axes, keepdims) -> list:
    shape = list(shape)
    axes = normalize_axes(axes, len(shape))
    if keepdims:
        return [1 if i in axes else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in axes]


@shape_function
def window_out(size, kernel, stride, pad_lo, pad_hi, dilation=1, ceil_mode=False):
    """Output length of a convolution or pooling window (floor or ceil mode)."""
    span = size + pad_lo + pad_hi - dilation * (kernel - 1) - 1
    if ceil_mode:
        return floordiv(span + stride - 1, stride) + 1
    return floordiv(span, stride) + 1


@shape_function
def pool_out(size, kernel, stride, pad_lo, pad_hi, dilation=1, ceil_mode=False):
    """Output length of a pooling window as TVM (and PyTorch) compute it: in ceil mode the
    last window must start inside the input or its leading padding (concrete values only)."""
    out = window_out(size, kernel, stride, pad_lo, pad_hi, dilation, ceil_mode)
    if ceil_mode and (out - 1) * stride >= size + pad_lo:
        out -= 1
    return out


@shape_function
def slice_len(n, begin, end, stride) -> int:
    return len(range(n)[slice(begin, end, stride)])


@shape_function
def split_shapes(shape, indices_or_sections, axis) -> list:
    shape = list(shape)
    axis = normalize_axis(axis, len(shape))
    n = shape[axis]
    if isinstance(indices_or_sections, int):
        parts = [n // indices_or_sections] * indices_or_sections
    else:
        bounds = [0] + [min(max(i, 0), n) for i in indices_or_sections] + [n]
        parts = [max(hi - lo, 0) for lo, hi in zip(bounds, bounds[1:])]
    return [shape[:axis] + [p] + shape[axis + 1:] for p in parts]


@shape_function
def reshape_valid(in_shape, shape, zero_copies=False) -> bool:
    """Is `shape` a valid reshape of `in_shape` as TVM documents it: at most one -1, inferred
    from the rest; with `zero_copies` (Relay), 0 copies the input's dimension at its index."""
    dims = []
    for i, d in enumerate(shape):
        if d == 0 and zero_copies:
            if i >= len(in_shape):
                return False
            d = in_shape[i]
        dims.append(d)
    if dims.count(-1) > 1 or any(d < 1 and d != -1 for d in dims):
        return False
    known = prod([d for d in dims if d != -1])
    return prod(in_shape) % known == 0 if -1 in dims else known == prod(in_shape)


@shape_function
def strided_slice_shape(shape, axes, begin, end, strides) -> list:
    """The shape of ``x[...]`` sliced with Python semantics along `axes` (as ``slice_len``)."""
    out = list(shape)
    for a, b, e, s in zip(axes, begin, end, strides):
        a = normalize_axis(a, len(out))
        out[a] = slice_len(out[a], b, e, s)
    return out


@shape_function
def concat_shape(shapes, axis) -> list:
    shapes = [list(s) for s in shapes]
    axis = normalize_axis(axis, len(shapes[0]))
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return out


@shape_function
def permute(shape, axes) -> list:
    shape = list(shape)
    if axes is None:
        return shape[::-1]
    return [shape[a] for a in axes]


@shape_function
def expand_shape(shape, axes) -> list:
    out = list(shape)
    rank = len(out) + len(axes)
    for a in sorted(normalize_axis(a, rank) for a in axes):
        out.insert(a, 1)
    return out


@shape_function
def squeeze_shape(shape, axes) -> list:
    shape = list(shape)
    if axes is None:
        return [d for d in shape if d != 1]
    drop = normalize_axes(axes, len(shape))
    return [d for i, d in enumerate(shape) if i not in drop]


@shape_function
def tile_shape(shape, repeats) -> list:
    shape, repeats = list(shape), list(repeats)
    n = max(len(shape), len(repeats))
    shape = [1] * (n - len(shape)) + shape
    repeats = [1] * (n - len(repeats)) + repeats
    return [d * r for d, r in zip(shape, repeats)]


@shape_function
def matmul_shape(a, b) -> list:
    a, b = list(a), list(b)
    a2 = [1] + a if len(a) == 1 else a
    b2 = b + [1] if len(b) == 1 else b
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + [a2[-2], b2[-1]]
    if len(a) == 1:
        out.pop(-2)
    if len(b) == 1:
        out.pop(-1)
    return out


@shape_function
def is_float(dtype: str) -> bool:
    return dtype.startswith("float") or dtype.startswith("bfloat")


@shape_function
def is_int(dtype: str) -> bool:
    return dtype.startswith("int") or dtype.startswith("uint")


@shape_function
def is_signed(dtype: str) -> bool:
    return dtype.startswith("int") or is_float(dtype)


@shape_function
def dtype_min(dtype: str):
    if dtype == "bool":
        return 0
    return np.iinfo(dtype).min if is_int(dtype) else float(np.finfo(dtype).min)


@shape_function
def dtype_max(dtype: str):
    if dtype == "bool":
        return 1
    return np.iinfo(dtype).max if is_int(dtype) else float(np.finfo(dtype).max)


@shape_function
def dtype_bits(dtype: str) -> int:
    """The width of a dtype in bits (bool: 1)."""
    return 1 if dtype == "bool" else int(np.dtype(dtype).itemsize * 8)


@shape_function
def einsum_shape(subscripts, shapes) -> list:
    """The result shape of ``np.einsum(subscripts, *operands)`` (explicit ``->`` form)."""
    lhs, out = subscripts.split("->")
    sizes = {}
    for letters, shape in zip(lhs.split(","), shapes):
        for c, d in zip(letters, list(shape)):
            sizes[c] = d
    return [sizes[c] for c in out]


@shape_function
def einsum_consistent(subscripts, shapes, broadcast=False) -> bool:
    """Whether operand shapes fit `subscripts`: right ranks, one size per letter. With
    `broadcast`, a letter's size may also be 1 where another operand's is not (numpy's
    einsum and TVM's topi.einsum, GetBroadcastedExtent, broadcast it)."""
    operands = subscripts.split("->")[0].split(",")
    if len(operands) != len(shapes):
        return False
    sizes = {}
    for letters, shape in zip(operands, shapes):
        shape = list(shape)
        if len(letters) != len(shape):
            return False
        for c, d in zip(letters, shape):
            known = sizes.setdefault(c, d)
            if known == d:
                continue
            if not (broadcast and 1 in (known, d)):
                return False
            sizes[c] = max(known, d)
    return True


class IndexLambda:
    """A generated index function: callable, and printed as its own lambda source, so that a
    reproducer can carry it as code (TVM's IndexMap.from_func reads its signature)."""

    def __init__(self, fn, source: str, layout: tuple = ()):
        self._fn = fn
        self.source = source
        self.layout = layout   # layout_map's arguments: what a call record carries instead
        self.__signature__ = inspect.signature(fn)

    def __call__(self, *idx):
        return self._fn(*idx)

    def __repr__(self):
        return self.source


@shape_function
def layout_map(perm, split=None, factor=1):
    """The index map of a layout transform as a function of one index per input axis (the
    arity TVM's IndexMap.from_func needs): axes reordered by `perm`, and, when `split` is an
    axis, that axis split into ``i // factor`` (in place) and ``i % factor`` (appended last)."""
    perm = [int(p) for p in perm]

    def core(idx):
        out = [idx[p] // factor if p == split else idx[p] for p in perm]
        if split is not None:
            out.append(idx[split] % factor)
        return out
    arity = {1: lambda a: core((a,)), 2: lambda a, b: core((a, b)),
             3: lambda a, b, c: core((a, b, c)), 4: lambda a, b, c, d: core((a, b, c, d)),
             5: lambda a, b, c, d, e: core((a, b, c, d, e))}
    if len(perm) not in arity:
        raise ExprError(f"layout_map: rank {len(perm)} not supported")
    names = "abcde"[:len(perm)]
    terms = [f"{names[p]} // {factor}" if p == split else names[p] for p in perm]
    if split is not None:
        terms.append(f"{names[split]} % {factor}")
    return IndexLambda(arity[len(perm)], f"lambda {', '.join(names)}: [{', '.join(terms)}]",
                       (perm, None if split is None else int(split), int(factor)))


@shape_function
def layout_shape(shape, perm, split=None, factor=1) -> list:
    """The result shape of `layout_map` applied to `shape` (a split axis is padded up)."""
    shape = list(shape)
    out = [-(-shape[p] // factor) if p == split else shape[p] for p in perm]
    if split is not None:
        out.append(factor)
    return out

