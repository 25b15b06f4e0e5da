"""The reference interpreter: runs a Graph in NumPy from the op specs, independent of TVM.

Besides the values, it tracks for every tensor whether rounding can have touched it
(``exact``), whether a rounding difference could have been amplified by a discontinuous op
such as a comparison or ``floor`` (``stable``), the loosest tolerance on its path and the
largest magnitude it was computed from. The oracle compares only stable tensors, with that
tolerance scaled by that magnitude (the comparison policy in DESIGN.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .graph import Graph, Node, Ref, TensorType


class TensorInfo:
    """What spec expressions see of a tensor: ``.shape`` (a list), ``.rank``, ``.dtype``."""

    __slots__ = ("shape", "rank", "dtype")

    def __init__(self, shape, dtype):
        self.shape = list(shape)
        self.rank = len(self.shape)
        self.dtype = dtype

    @staticmethod
    def of(t: TensorType) -> "TensorInfo":
        return TensorInfo(t.shape, t.dtype)

    def __repr__(self):
        return f"Tensor({self.shape}, {self.dtype})"


def op_env(spec, node: Node, graph: Graph, values=None) -> dict:
    """The environment a spec's expressions run in for `node`: inputs, attrs and `dtype`."""
    env = dict(node.attrs)
    env["dtype"] = node.dtype
    for ispec, item in zip(spec.inputs, node.inputs):
        if isinstance(item, list):
            env[ispec.name] = ([values[r] for r in item] if values is not None
                               else [TensorInfo.of(graph.type_of(r)) for r in item])
        else:
            env[ispec.name] = values[item] if values is not None else TensorInfo.of(graph.type_of(item))
    return env


# --- NumPy helpers for ops whose reference is more than one call (``ref.<name>`` in specs) ---

HELPERS: dict[str, Callable] = {}   # name -> function, filled by @helper


def helper(fn: Callable) -> Callable:
    """Make `fn` callable from spec expressions as ``ref.<its name>``: the registration is
    the decorator, so a helper is written once (a name given twice is a mistake)."""
    if fn.__name__ in HELPERS:
        raise ValueError(f"reference helper '{fn.__name__}' is registered twice")
    HELPERS[fn.__name__] = fn
    return fn


@helper
def softmax(x, axis=-1):
    x = np.asarray(x)
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def _pad_hw(x, padding, value):
    top, left, bottom, right = padding
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


@helper
def conv2d(data, weight, strides, padding, dilation, groups=1):
    """NCHW data, OIHW weight; padding is (top, left, bottom, right)."""
    acc = np.float64 if data.dtype.kind == "f" else np.int64
    return _conv(_pad_hw(data.astype(acc), padding, 0), weight.astype(acc), strides, dilation, groups)


def _conv(x, w, strides, dilation, groups):
    """The grouped convolution of padded N-C-spatial `x` with O-I-kernel `w`, over however
    many spatial axes they have, in their dtype (the accumulator)."""
    import itertools
    n = x.shape[0]
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    outs = [(x.shape[2 + q] - dilation[q] * (k - 1) - 1) // strides[q] + 1 for q, k in enumerate(kernel)]
    out = np.zeros((n, o, *outs), dtype=x.dtype)
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for offset in itertools.product(*[range(k) for k in kernel]):
            patch = xs[(slice(None), slice(None)) + tuple(
                slice(k * dilation[q], k * dilation[q] + strides[q] * (outs[q] - 1) + 1, strides[q])
                for q, k in enumerate(offset))]
            out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch, ws[(slice(None), slice(None)) + offset])
    return out


@helper
def max_pool2d(data, pool_size, strides, padding, dilation, ceil_mode=False):
    kh, kw = pool_size
    sh, sw = strides
    dh, dw = dilation
    top, left, bottom, right = padding
    n, c, h, w = data.shape
    oh = _window(h, kh, sh, top, bottom, dh, ceil_mode)
    ow = _window(w, kw, sw, left, right, dw, ceil_mode)
    if data.dtype.kind == "f":
        low = -np.inf
    elif data.dtype.kind == "b":
        low = False
    else:
        low = np.iinfo(data.dtype).min
    # pad enough on the bottom/right for ceil mode windows
    extra_h = max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + top + bottom))
    extra_w = max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + left + right))
    x = _pad_hw(data, (top, left, bottom + extra_h, right + extra_w), low)
    out = np.full((n, c, oh, ow), low, dtype=data.dtype)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
            out = np.maximum(out, patch)
    return out


@helper
def max_pool2d_tvm(data, pool_size, strides, padding, dilation, ceil_mode=False):
    """`max_pool2d` with TVM's ceil-mode output size: a last window that would start in the
    trailing padding is dropped (as in PyTorch)."""
    out = max_pool2d(data, pool_size, strides, padding, dilation, ceil_mode)
    if ceil_mode:
        h, w = data.shape[2], data.shape[3]
        oh, ow = out.shape[2], out.shape[3]
        if (oh - 1) * strides[0] >= h + padding[0]:
            oh -= 1
        if (ow - 1) * strides[1] >= w + padding[1]:
            ow -= 1
        out = out[:, :, :oh, :ow]
    return out


def _window(size, k, s, lo, hi, d, ceil_mode):
    span = size + lo + hi - d * (k - 1) - 1
    return (span + s - 1) // s + 1 if ceil_mode else span // s + 1


@helper
def strided_slice(x, axes, begin, end, strides):
    index = [slice(None)] * x.ndim
    for a, b, e, s in zip(axes, begin, end, strides):
        index[a] = slice(b, e, s)
    return x[tuple(index)]


@helper
def split(x, indices_or_sections, axis):
    return list(np.array_split(x, indices_or_sections, axis=axis)) if isinstance(
        indices_or_sections, int) else list(np.split(x, indices_or_sections, axis=axis))


@helper
def divide(a, b):
    """Relax `divide`: true division for floats, truncation towards zero for integers. In
    the inputs' own dtype: through int64, a uint64 at or above 2**63 turned negative (an
    H100 campaign's false alarm on bitwise_not then divide)."""
    if a.dtype.kind in "iu":
        floor = np.floor_divide(a, b)
        # floor and truncation differ only where the division is inexact and its signs differ
        inexact_negative = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return np.where(inexact_negative, floor + np.ones_like(floor), floor)
    return np.divide(a, b)


class SignOfZeroDecides(ValueError):
    """The result depends on the sign of a zero input, which is not comparable."""


@helper
def atan2(y, x):
    """np.arctan2 where the result does not depend on the sign of a zero. atan2(+-0, x <= 0)
    is +-pi (and atan2(+-0, +-0) four values) by the zeros' signs alone; an optimisation may
    rightly lose a zero's sign (x * 0 folded to +0 where x < 0 gives -0), and Relay's
    composite (dialects/relay/ops.py: y >= 0 holds for -0) does not follow it. A run's
    false alarm: 3 of 60 float64 elements off by 2*pi. Such inputs have no result to compare
    (the input search draws others, or the result is left uncompared)."""
    if np.any((y == 0) & (x <= 0)):
        raise SignOfZeroDecides("atan2(0, x <= 0): the sign of a zero decides the result")
    return np.arctan2(y, x)


@helper
def round_half_away(x):
    """Rounding with halves away from zero (Relay's round; NumPy rounds them to even)."""
    if x.dtype.kind != "f":
        return x
    whole = np.trunc(x)
    half = np.abs(x - whole) == 0.5   # exact in binary floating point
    return np.where(half, whole + np.sign(x), np.round(x)).astype(x.dtype)


@helper
def quantize(x, scale, zero_point, out_dtype, halves):
    """clip(round(x / scale) + zero_point) cast to `out_dtype`, in float32 as both TVMs lower
    it (opspecs/quantize.yaml); `halves` round to "even" (NumPy, Relax) or "away" from zero
    (Relay 0.19)."""
    scaled = np.asarray(x, np.float32) / np.float32(scale)
    rounded = np.round(scaled) if halves == "even" else round_half_away(scaled)
    bounds = np.iinfo(out_dtype)
    shifted = rounded + np.float32(zero_point)
    return np.clip(shifted, np.float32(bounds.min), np.float32(bounds.max)).astype(out_dtype)


@helper
def dequantize(x, scale, zero_point):
    """(x - zero_point) in int32, cast to float32, times scale (opspecs/quantize.yaml)."""
    shifted = np.asarray(x).astype(np.int32) - np.int32(zero_point)
    return shifted.astype(np.float32) * np.float32(scale)


@helper
def erf(x):
    """The error function, computed in float64 (NumPy has no erf)."""
    import math
    return np.vectorize(math.erf, otypes=[np.float64])(np.asarray(x, dtype=np.float64))


@helper
def cumsum(x, axis, exclusive=False):
    """Relax `cumsum` with the input's dtype (integers wrap), optionally exclusive."""
    x = np.asarray(x)
    out = np.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        out = out - x
    return out


@helper
def log_add_exp(a, b):
    """log(exp(a) + exp(b)), computed in float64."""
    return np.logaddexp(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


@helper
def cumprod(x, axis, exclusive=False):
    """Relax `cumprod` with the input's dtype (integers wrap), optionally exclusive."""
    x = np.asarray(x)
    if exclusive:
        ones = np.ones_like(np.take(x, [0], axis=axis))
        x = np.concatenate([ones, np.delete(x, -1, axis=axis)], axis=axis)
    return np.cumprod(x, axis=axis, dtype=x.dtype)


def _index_axis(axis: int, ndim: int) -> int:
    """`axis` in [0, ndim), from [-ndim, ndim) as TVM takes it; outside that range TVM fails
    to build (Relay's topi.scatter_elements: "IndexError: Index out of range"), so the
    reference raises rather than wrap an axis the generator should never have drawn."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} out of range for rank {ndim}")
    return axis % ndim


def _axis_grid(indices, axis):
    """Index arrays addressing every element of `indices`, with `axis` replaced by its values."""
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis] = indices.astype(np.int64)
    return tuple(grid)


@helper
def gather_elements(data, indices, axis):
    """ONNX GatherElements: out[i][j][k] = data[i][indices[i][j][k]][k] (axis 1)."""
    data, indices = np.asarray(data), np.asarray(indices)
    return data[_axis_grid(indices, _index_axis(axis, data.ndim))]


@helper
def gather_nd(data, indices):
    """Relax gather_nd (batch_dims 0): the last index axis addresses data's leading dims."""
    data, indices = np.asarray(data), np.asarray(indices).astype(np.int64)
    m = indices.shape[-1]
    return data[tuple(indices[..., j] for j in range(m))]


_SCATTER_UFUNC = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


@helper
def scatter_elements(data, indices, updates, axis, reduction="update"):
    """ONNX ScatterElements; duplicate targets combine with `reduction` ('update': last wins)."""
    out = np.array(data, copy=True)
    indices, updates = np.asarray(indices), np.asarray(updates, dtype=out.dtype)
    target = _axis_grid(indices, _index_axis(axis, out.ndim))
    if reduction == "update":
        out[target] = updates
    else:
        full = tuple(np.broadcast_to(g, indices.shape) for g in target)
        _SCATTER_UFUNC[reduction].at(out, full, updates)
    return out


@helper
def scatter_nd(data, indices, updates, reduction="update"):
    """ONNX ScatterND; duplicate targets combine with `reduction` ('update': last wins)."""
    out = np.array(data, copy=True)
    indices = np.asarray(indices).astype(np.int64)
    updates = np.asarray(updates, dtype=out.dtype)
    target = tuple(indices[..., j] for j in range(indices.shape[-1]))
    if reduction == "update":
        out[target] = updates
    else:
        _SCATTER_UFUNC[reduction].at(out, target, updates)
    return out


@helper
def one_hot(indices, on_value, off_value, depth, axis=-1):
    """`on_value` where the index equals the position along the new axis, else `off_value`."""
    indices = np.asarray(indices)
    axis = axis % (indices.ndim + 1)
    pos = np.arange(depth).reshape([depth] + [1] * (indices.ndim - axis))
    hit = np.expand_dims(indices, axis) == pos
    return np.where(hit, on_value, off_value)


@helper
def argsort(x, axis=-1, descending=False):
    """Stable argsort; descending keeps equal elements in index order."""
    x = np.asarray(x)
    if descending:
        # stable descending: sort the reversed axis ascending by negated rank order
        order = np.argsort(_desc_key(x), axis=axis, kind="stable")
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    return order


def _desc_key(x):
    if x.dtype.kind == "u":
        return np.iinfo(x.dtype).max - x
    if x.dtype.kind == "i":
        return -(x.astype(np.float64))
    return -x


@helper
def sort(x, axis=-1, descending=False):
    x = np.asarray(x)
    out = np.sort(x, axis=axis, kind="stable")
    return np.flip(out, axis=axis) if descending else out


@helper
def topk(x, k, axis=-1, ret_type="both", largest=True):
    """The k largest (or smallest) along `axis`, ties by index order; values or indices."""
    x = np.asarray(x)
    order = argsort(x, axis, descending=largest)
    idx = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(x, idx, axis=axis)
    if ret_type == "values":
        return values
    if ret_type == "indices":
        return idx
    return values, idx


@helper
def einsum(subscripts, *operands):
    """np.einsum computed wide (float64 or int64) and cast back: integers wrap as in TVM."""
    wide = [np.asarray(o).astype(np.float64 if np.asarray(o).dtype.kind == "f" else np.int64)
            for o in operands]
    return np.einsum(subscripts, *wide).astype(np.asarray(operands[0]).dtype)


@helper
def dropout_inference(x):
    """Relax dropout once legalized for inference: the data unchanged, and a mask of ones."""
    x = np.asarray(x)
    return x, np.ones_like(x)


@helper
def layout_transform(x, perm, split=None, factor=1, pad_value=None):
    """`expr.layout_map` in NumPy: pad the split axis up to a multiple of `factor` with
    `pad_value`, split it into (outer, inner), reorder by `perm`, inner axis last."""
    x = np.asarray(x)
    if split is None:
        return np.transpose(x, perm)
    n = x.shape[split]
    padded = -(-n // factor) * factor
    if padded != n:
        widths = [(0, 0)] * x.ndim
        widths[split] = (0, padded - n)
        x = np.pad(x, widths, constant_values=0 if pad_value is None else pad_value)
    x = x.reshape(x.shape[:split] + (padded // factor, factor) + x.shape[split + 1:])
    order = [p if p <= split else p + 1 for p in perm] + [split + 1]
    return np.transpose(x, order)


@helper
def repeat(x, repeats, axis=None):
    """np.repeat (a flattened result when `axis` is None)."""
    return np.repeat(np.asarray(x), repeats, axis=axis)


def _along(v, axes, ndim):
    """`v` (shaped like data's dims at `axes`) reshaped to broadcast against rank `ndim`."""
    axes = [a % ndim for a in axes]
    shape = [1] * ndim
    order = sorted(range(len(axes)), key=lambda i: axes[i])
    v = np.transpose(np.asarray(v, dtype=np.float64), order) if len(axes) > 1 else np.asarray(v, dtype=np.float64)
    for a in axes:
        shape[a] = np.asarray(v).shape[sorted(axes).index(a)] if v.ndim else 1
    return v.reshape(shape)


@helper
def layer_norm(data, gamma, beta, axes, epsilon, center=True, scale=True):
    x = np.asarray(data, dtype=np.float64)
    axes = tuple(a % x.ndim for a in axes)
    mean = x.mean(axis=axes, keepdims=True)
    out = (x - mean) / np.sqrt(x.var(axis=axes, keepdims=True) + epsilon)
    if scale:
        out = out * _along(gamma, list(axes), x.ndim)
    if center:
        out = out + _along(beta, list(axes), x.ndim)
    return out


@helper
def rms_norm(data, weight, axes, epsilon):
    x = np.asarray(data, dtype=np.float64)
    axes = tuple(a % x.ndim for a in axes)
    out = x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + epsilon)
    return out * _along(weight, list(axes), x.ndim)


@helper
def variance_amplification(data, axes, epsilon, num_groups=None) -> float:
    """How much a variance computed as E[x²] - E[x]² (TVM's legalisation does so) may
    amplify rounding: the largest E[x²] / (var + epsilon) over the normalised groups. With
    `num_groups`, channels on axis 1 are grouped as group_norm groups them."""
    x = np.asarray(data, dtype=np.float64)
    if num_groups is not None:
        x = x.reshape((x.shape[0], num_groups, -1) + x.shape[2:])
        axes = range(2, x.ndim)
    axes = tuple(a % x.ndim for a in axes)
    if x.size == 0:
        return 1.0
    ratio = (x * x).mean(axis=axes) / (x.var(axis=axes) + epsilon)
    return max(1.0, float(np.max(ratio)))


@helper
def group_norm(data, gamma, beta, num_groups, epsilon, center=True, scale=True):
    """Channels on axis 1; statistics over each group of channels and all later axes."""
    x = np.asarray(data, dtype=np.float64)
    n, c = x.shape[:2]
    g = x.reshape((n, num_groups, c // num_groups) + x.shape[2:])
    axes = tuple(range(2, g.ndim))
    g = (g - g.mean(axis=axes, keepdims=True)) / np.sqrt(g.var(axis=axes, keepdims=True) + epsilon)
    out = g.reshape(x.shape)
    if scale:
        out = out * _along(gamma, [1], x.ndim)
    if center:
        out = out + _along(beta, [1], x.ndim)
    return out


@helper
def batch_norm(data, gamma, beta, mean, var, axis, epsilon, center=True, scale=True):
    """Inference batch norm; returns (out, mean, var)."""
    x = np.asarray(data, dtype=np.float64)
    out = (x - _along(mean, [axis], x.ndim)) / np.sqrt(_along(var, [axis], x.ndim) + epsilon)
    if scale:
        out = out * _along(gamma, [axis], x.ndim)
    if center:
        out = out + _along(beta, [axis], x.ndim)
    return out, np.asarray(mean), np.asarray(var)


@helper
def avg_pool2d(data, pool_size, strides, padding, dilation, ceil_mode=False, count_include_pad=False):
    """NCHW average pooling with TVM's ceil-mode output size (see `max_pool2d_tvm`); the
    divisor counts the padding when `count_include_pad`, never the ceil-mode overhang."""
    x = np.asarray(data, dtype=np.float64)
    kh, kw = pool_size
    sh, sw = strides
    dh, dw = dilation
    top, left, bottom, right = padding
    n, c, h, w = x.shape
    out_full = max_pool2d(data, pool_size, strides, padding, dilation, ceil_mode)
    oh, ow = out_full.shape[2], out_full.shape[3]
    if ceil_mode:
        if (oh - 1) * sh >= h + top:
            oh -= 1
        if (ow - 1) * sw >= w + left:
            ow -= 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            total, count = 0.0, 0
            for a in range(kh):
                for b in range(kw):
                    y, z = i * sh + a * dh - top, j * sw + b * dw - left
                    inside = 0 <= y < h and 0 <= z < w
                    in_padded = -top <= y < h + bottom and -left <= z < w + right
                    if inside:
                        total = total + x[:, :, y, z]
                    if inside or (count_include_pad and in_padded):
                        count += 1
            out[:, :, i, j] = total / max(count, 1)
    return out


@helper
def adaptive_avg_pool2d(data, output_size):
    """NCHW adaptive average pooling: window i spans [floor(i*H/O), ceil((i+1)*H/O))."""
    return _adaptive_pool(np.asarray(data, dtype=np.float64), output_size, np.mean)


def _adaptive_pool(x, output_size, reduce):
    """`reduce` over each adaptive window of N-C-spatial `x` (any number of spatial axes), in
    `x`'s dtype: on an axis of size S pooled to O, window i spans [floor(i*S/O), ceil((i+1)*S/O))."""
    import itertools
    sizes = x.shape[2:]
    axes = tuple(range(2, x.ndim))
    out = np.zeros(x.shape[:2] + tuple(output_size), dtype=x.dtype)
    for pos in itertools.product(*[range(o) for o in output_size]):
        window = tuple(slice((i * s) // o, -(-((i + 1) * s) // o)) for i, s, o in zip(pos, sizes, output_size))
        out[(slice(None), slice(None)) + pos] = reduce(x[(slice(None), slice(None)) + window], axis=axes)
    return out


@helper
def conv1d(data, weight, stride, padding, dilation, groups=1):
    """NCW data, OIW weight, padding (left, right): `conv2d` on a height of one."""
    out = conv2d(np.asarray(data)[:, :, None, :], np.asarray(weight)[:, :, None, :],
                 [1, stride], [0, padding[0], 0, padding[1]], [1, dilation], groups)
    return out[:, :, 0, :]


@helper
def max_pool1d(data, pool_size, stride, padding, dilation, ceil_mode=False):
    """NCW max pooling, padding (left, right), TVM's ceil-mode size: `max_pool2d_tvm` on a
    height of one."""
    out = max_pool2d_tvm(np.asarray(data)[:, :, None, :], [1, pool_size], [1, stride],
                         [0, padding[0], 0, padding[1]], [1, dilation], ceil_mode)
    return out[:, :, 0, :]


@helper
def avg_pool1d(data, pool_size, stride, padding, dilation, ceil_mode=False, count_include_pad=False):
    """NCW average pooling, padding (left, right): `avg_pool2d` on a height of one."""
    out = avg_pool2d(np.asarray(data)[:, :, None, :], [1, pool_size], [1, stride],
                     [0, padding[0], 0, padding[1]], [1, dilation], ceil_mode, count_include_pad)
    return out[:, :, 0, :]


@helper
def adaptive_max_pool2d(data, output_size):
    """NCHW adaptive max pooling, `adaptive_avg_pool2d`'s windows."""
    return _adaptive_pool(np.asarray(data), output_size, np.max)


@helper
def lrn(data, size, axis, alpha, beta, bias):
    """Local response normalisation across `axis` (topi/nn/local_response_norm.h): data /
    (bias + alpha * sum of squares over a zero-padded window of `size` centred on each
    element / size) ** beta."""
    x = np.asarray(data, dtype=np.float64)
    sq = np.moveaxis(x * x, axis, -1)
    half = size // 2
    padded = np.pad(sq, [(0, 0)] * (sq.ndim - 1) + [(half, half)])
    window = sum(padded[..., k:k + sq.shape[-1]] for k in range(size))
    window = np.moveaxis(window, -1, axis)
    return x / (bias + alpha * window / size) ** beta


@helper
def l2_normalize(data, eps, axis):
    """data / sqrt(max(sum(data², axis), eps)) (Relay's SimplifyInference L2NormToInferUnpack)."""
    x = np.asarray(data, dtype=np.float64)
    s = np.sum(x * x, axis=tuple(axis), keepdims=True)
    return x / np.sqrt(np.maximum(s, eps))


# --- layout helpers (nn.space_to_depth, nn.depth_to_space, nn.dilate, slice_like,
# reshape_like, reverse_sequence, sequence_mask) ---

@helper
def space_to_depth(x, block_size, layout="NCHW"):
    """topi.nn.space_to_depth: output channel (by, bx, c) of block (y, x) is input pixel
    (y * b + by, x * b + bx) of channel c."""
    x = np.asarray(x)
    if layout == "NHWC":
        x = np.transpose(x, (0, 3, 1, 2))
    n, c, h, w = x.shape
    b = int(block_size)
    out = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)
    return np.transpose(out, (0, 2, 3, 1)) if layout == "NHWC" else out


@helper
def depth_to_space(x, block_size, layout="NCHW", mode="DCR"):
    """topi.nn.depth_to_space: DCR reads input channel (by, bx, c), any other mode (CRD)
    channel (c, by, bx), for output pixel (y * b + by, x * b + bx) of channel c."""
    x = np.asarray(x)
    if layout == "NHWC":
        x = np.transpose(x, (0, 3, 1, 2))
    n, c, h, w = x.shape
    b = int(block_size)
    if mode == "DCR":
        out = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        out = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    out = out.reshape(n, c // (b * b), h * b, w * b)
    return np.transpose(out, (0, 2, 3, 1)) if layout == "NHWC" else out


@helper
def dilate(x, strides, dilation_value=0.0):
    """topi.nn.dilate: x's elements strides[i] apart, dilation_value between."""
    x = np.asarray(x)
    shape = [(d - 1) * int(s) + 1 for d, s in zip(x.shape, strides)]
    out = np.full(shape, np.asarray(dilation_value).astype(x.dtype), dtype=x.dtype)
    out[tuple(slice(None, None, int(s)) for s in strides)] = x
    return out


@helper
def slice_like(x, like, axes=None):
    """Relay slice_like: x[0:like.shape[a]] on each axis a of `axes` (None: every axis of x
    that like has)."""
    x, like = np.asarray(x), np.asarray(like)
    picked = range(min(x.ndim, like.ndim)) if axes is None else [a % x.ndim for a in axes]
    index = [slice(None)] * x.ndim
    for a in picked:
        index[a] = slice(0, like.shape[a])
    return x[tuple(index)]


@helper
def reshape_like(x, like, lhs_begin=0, lhs_end=None, rhs_begin=0, rhs_end=None):
    """Relay reshape_like: x's dims [lhs_begin, lhs_end) become like's [rhs_begin, rhs_end)."""
    x, like = np.asarray(x), np.asarray(like)
    tail = list(x.shape[lhs_end:]) if lhs_end is not None else []
    return x.reshape(list(x.shape[:lhs_begin]) + list(like.shape[rhs_begin:rhs_end]) + tail)


@helper
def reverse_sequence(data, seq_lengths, seq_axis, batch_axis):
    """Relay reverse_sequence: in slice b along batch_axis, the first seq_lengths[b] elements
    along seq_axis reversed (a length above the axis is the axis, one below 1 is 1)."""
    data = np.asarray(data)
    seq_axis, batch_axis = seq_axis % data.ndim, batch_axis % data.ndim
    out = data.copy()
    n = data.shape[seq_axis]
    for b, length in enumerate(np.asarray(seq_lengths).reshape(-1).tolist()):
        k = min(max(int(length), 1), n)
        src = [slice(None)] * data.ndim
        src[batch_axis] = b
        src[seq_axis] = slice(k - 1, None, -1) if k < n else slice(None, None, -1)
        dst = [slice(None)] * data.ndim
        dst[batch_axis] = b
        dst[seq_axis] = slice(0, k)
        out[tuple(dst)] = data[tuple(src)]
    return out


@helper
def sequence_mask(data, valid_length, mask_value, axis):
    """Relay sequence_mask: elements at position >= valid_length[b] along `axis` (0 or 1,
    the batch axis the other) become mask_value."""
    data = np.asarray(data)
    pos = np.arange(data.shape[axis]).reshape([-1 if i == axis else 1 for i in range(data.ndim)])
    lengths = np.asarray(valid_length).astype(np.int64).reshape([-1 if i == 1 - axis else 1 for i in range(data.ndim)])
    return np.where(pos >= lengths, np.asarray(mask_value).astype(data.dtype), data)


def _nearest_source(in_size, out_size, align_corners):
    """topi.image.resize2d's nearest source index per output index (topi.nn.upsampling):
    asymmetric: floor(y * in / out) (exact for these sizes thanks to topi's 1e-5 nudge);
    align_corners: float32((in - 1) / (out - 1)) * y in float32, rounded half away from
    zero (tir round, LLVM's llvm.round)."""
    y = np.arange(out_size)
    if align_corners:
        v = np.float32((in_size - 1) / (out_size - 1)) * y.astype(np.float32)
        idx = np.floor(v.astype(np.float64) + 0.5).astype(np.int64)
    else:
        idx = (y * in_size) // out_size
    return np.clip(idx, 0, in_size - 1)


@helper
def upsampling_nearest_neighbor(data, out_h, out_w, align_corners=False):
    """NCHW nearest-neighbour upsampling to (out_h, out_w), as topi.nn.upsampling computes it."""
    x = np.asarray(data)
    rows = _nearest_source(x.shape[2], out_h, align_corners)
    cols = _nearest_source(x.shape[3], out_w, align_corners)
    return x[:, :, rows][:, :, :, cols]


# --- transposed convolutions, collapse sums, median, bucketize, NLL loss ---

@helper
def conv2d_transpose(data, weight, strides, padding, output_padding, dilation, groups=1):
    """NCHW data, IOHW weight ([in_channels, out_channels // groups, kh, kw]), padding (top,
    left, bottom, right): each input element scatters its products with the kernel at
    stride * i + dilation * k, and the result is that full map cropped by the padding at
    both ends and extended by output_padding at the end (topi group_conv2d_transpose_nchw)."""
    acc = np.float64 if data.dtype.kind == "f" else np.int64
    return _conv_transpose(np.asarray(data).astype(acc), np.asarray(weight).astype(acc), strides, padding,
                           output_padding, dilation, groups)


def _conv_transpose(x, w, strides, padding, output_padding, dilation, groups):
    """The grouped transposed convolution of N-C-spatial `x` with I-O-kernel `w` over however
    many spatial axes they have (padding: each axis's start, then each axis's end), in their
    dtype (the accumulator)."""
    import itertools
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    og = w.shape[1]
    kernel = w.shape[2:]
    rank = len(kernel)
    full = [(sizes[q] - 1) * strides[q] + dilation[q] * (kernel[q] - 1) + 1 + output_padding[q] for q in range(rank)]
    buf = np.zeros((n, og * groups) + tuple(max(full[q], padding[q] + 1) for q in range(rank)), dtype=x.dtype)
    cg = c // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * cg:(g + 1) * cg]
        for offset in itertools.product(*[range(k) for k in kernel]):
            contrib = np.einsum("nc...,co->no...", xs, ws[(slice(None), slice(None)) + offset])
            index = tuple(slice(k * dilation[q], k * dilation[q] + strides[q] * (sizes[q] - 1) + 1, strides[q])
                          for q, k in enumerate(offset))
            buf[(slice(None), slice(g * og, (g + 1) * og)) + index] += contrib
    crop = tuple(slice(padding[q], full[q] - padding[q + rank]) for q in range(rank))
    return buf[(slice(None), slice(None)) + crop]


@helper
def conv1d_transpose(data, weight, stride, padding, output_padding, dilation, groups=1):
    """NCW data, IOW weight, padding (left, right): `conv2d_transpose` on a height of one."""
    out = conv2d_transpose(np.asarray(data)[:, :, None, :], np.asarray(weight)[:, :, None, :],
                           [1, stride], [0, padding[0], 0, padding[1]], [0, output_padding],
                           [1, dilation], groups)
    return out[:, :, 0, :]


@helper
def collapse_axes(data_shape, target_shape):
    """The axes topi.collapse_sum sums over (right to left): those `target_shape` lacks and
    those where it is 1 and the data is not."""
    data_shape, target_shape = list(data_shape), list(target_shape)
    lead = len(data_shape) - len(target_shape)
    return list(range(lead)) + [lead + i for i, d in enumerate(target_shape)
                                if d == 1 and data_shape[lead + i] != 1]


@helper
def collapse_sum(data, target_shape):
    """topi.collapse_sum: `data` summed down to `target_shape` (which broadcasts to it), in
    the data's dtype (8- and 16-bit integers wrap; a bool sum is an any())."""
    x = np.asarray(data)
    axes = tuple(collapse_axes(x.shape, target_shape))
    return np.sum(x, axis=axes).reshape(list(target_shape)).astype(x.dtype)


@helper
def median_lower(x, keepdims=False):
    """Relax median over the whole tensor (axis None): the element at (n - 1) // 2 of the
    sorted values (statistical.py _te_median: the lower median, no averaging)."""
    x = np.asarray(x)
    v = np.sort(x.reshape(-1), kind="stable")[(x.size - 1) // 2]
    return np.full([1] * x.ndim if keepdims else [], v, dtype=x.dtype)


@helper
def bucketize(x, boundaries, right=False, out_int32=False):
    """torch.bucketize (topi.searchsorted over the boundaries): right=False gives the first i
    with x <= boundaries[i], right=True the first i with x < boundaries[i]."""
    idx = np.searchsorted(np.asarray(boundaries), np.asarray(x), side="right" if right else "left")
    return np.asarray(idx).astype("int32" if out_int32 else "int64")


@helper
def adaptive_avg_pool1d(data, output_size):
    """NCW adaptive average pooling (`_adaptive_pool`'s windows); an output_size of None
    keeps the width."""
    x = np.asarray(data, dtype=np.float64)
    return _adaptive_pool(x, [x.shape[2] if output_size is None else int(output_size)], np.mean)


@helper
def nll_loss(predictions, targets, weights, reduction, ignore_index):
    """Negative log likelihood loss (topi nll_loss) of predictions (N, C, d...): each target t
    (not ignore_index) gives -predictions[n, t, d...] * weights[t], an ignored one 0; 'mean'
    divides the sum by the sum of the weights of the targets not ignored, 'sum' sums, 'none'
    keeps targets' shape."""
    p = np.asarray(predictions, dtype=np.float64)
    t = np.asarray(targets).astype(np.int64)
    w = np.asarray(weights, dtype=np.float64)
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    picked = np.take_along_axis(p, np.expand_dims(safe, 1), axis=1)[:, 0]
    loss = np.where(keep, -picked * w[safe], 0.0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.sum(loss)
    return np.sum(loss) / np.sum(np.where(keep, w[safe], 0.0))


# --- integer overflow: what TVM computes (see `overflow` in spec.py) --------------------------
#
# TVM's LLVM codegen (src/target/llvm/codegen_llvm.cc, DEFINE_CODEGEN_BINARY_OP, in 0.19 and
# 0.27 alike) emits add, sub and mul of 32- and 64-bit integers with LLVM's nsw (signed) or
# nuw (unsigned) flag: an overflow there is poison, which LLVM may and does exploit (fused,
# `x + 1 > x` is always true for int32), so such a result is undefined and never compared.
# 8- and 16-bit integers get plain add/sub/mul and wrap, as the reference computes them.

def _exact(x) -> np.ndarray:
    """`x` as Python integers: arithmetic on them never wraps."""
    return np.asarray(x).astype(object)


def _signed(*xs) -> bool:
    return any(np.asarray(x).dtype.kind == "i" for x in xs)


def _span_of(v) -> list:
    v = np.asarray(v, dtype=object)
    if v.size == 0:
        return [0, 0]
    return [int(v.min()), int(v.max())]


@helper
def exact_span(fn, *xs):
    """[lo, hi] of an elementwise integer op's exact (unwrapped) result."""
    with np.errstate(all="ignore"):
        return _span_of(fn(*[_exact(x) for x in xs]))


@helper
def sum_span(x, axis=None):
    """[lo, hi] bounding every partial sum of the summed elements, in any order: the sum of
    the negative ones and the sum of the positive ones (over each reduced group)."""
    e = _exact(x)
    if e.size == 0:
        return [0, 0]
    axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    pos = np.sum(np.where(e > 0, e, 0), axis=axis)
    neg = np.sum(np.where(e < 0, e, 0), axis=axis)
    return [int(np.min(neg)), int(np.max(pos))]


@helper
def prod_span(x, axis=None):
    """[lo, hi] bounding every partial product of the multiplied elements, in any order."""
    e = _exact(x)
    if e.size == 0:
        return [0, 1]
    axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    m = int(np.max(np.prod(np.maximum(np.abs(e), 1), axis=axis)))
    return [-m if _signed(x) else 0, m]


@helper
def abs_span(fn, *xs):
    """[lo, hi] bounding every partial sum of products of a contraction `fn` (matmul,
    einsum...) in any order: `fn` of the operands' magnitudes bounds them all."""
    arrays = [x for x in xs if not isinstance(x, str)]   # np.einsum's subscripts pass as they are
    m = _span_of(fn(*[x if isinstance(x, str) else np.abs(_exact(x)) for x in xs]))[1]
    return [-m if _signed(*arrays) else 0, m]


@helper
def dot_span(a, b, terms):
    """[lo, hi] bounding every partial sum of up to `terms` products of an element of `a`
    and one of `b` (a convolution's window)."""
    ea, eb = _exact(a), _exact(b)
    m = (int(np.max(np.abs(ea))) if ea.size else 0) * (int(np.max(np.abs(eb))) if eb.size else 0) * int(terms)
    return [-m if _signed(a, b) else 0, m]


@helper
def scatter_span(data, updates, reduction):
    """[lo, hi] bounding every value a scatter with `reduction` passes through: a data
    element combined with any of the updates, in any order."""
    d, u = _exact(data), _exact(updates)
    if reduction == "add":
        lo = min(0, int(d.min()) if d.size else 0) + int(np.sum(np.where(u < 0, u, 0)))
        hi = max(0, int(d.max()) if d.size else 0) + int(np.sum(np.where(u > 0, u, 0)))
        return [lo, hi]
    if reduction == "mul":
        m = (int(np.max(np.abs(d))) if d.size else 1) * int(np.prod(np.maximum(np.abs(u), 1)))
        return [-m if _signed(data, updates) else 0, m]
    return [0, 0]       # update, min, max: nothing is computed


@helper
def mean(x, axis=None, keepdims=False):
    """TVM's mean: for integers the sum in the input dtype (wrapping) divided by the count,
    truncated towards zero (a signed division; unsigned for unsigned inputs); floats as np.mean."""
    x = np.asarray(x)
    axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    if x.dtype.kind not in "iu":
        return np.mean(x, axis=axis, keepdims=keepdims)
    with np.errstate(all="ignore"):
        total = np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    count = x.size // max(total.size, 1) if x.size else 1
    if x.dtype.kind == "u":
        return total // x.dtype.type(count)
    t = np.asarray(total).astype(object)         # Python integers: -INT_MIN does not wrap
    q = np.where(t < 0, -((-t) // count), t // count)
    return np.asarray(q).astype(x.dtype)


def overflow_undefined(spec, dtype: str, env: dict) -> bool:
    """Whether TVM's result of this op is undefined for these inputs: a 32- or 64-bit
    integer computation whose `overflow` bounds leave its dtype (nsw/nuw poison)."""
    if spec.overflow is None or not dtype.startswith(("int", "uint")):
        return False
    info = np.iinfo(dtype)
    if info.bits < 32:
        return False
    lo, hi = spec.overflow(env)
    return int(lo) < int(info.min) or int(hi) > int(info.max)


# --- interpreting a graph ---------------------------------------------------------------------

@dataclass
class TensorFacts:
    value: np.ndarray
    exact: bool          # no rounding on its path: must match bit for bit
    stable: bool         # no discontinuity applied to a rounded value: comparable at all
    rtol: float
    atol: float
    magnitude: float     # largest |value| on its path, to scale atol
    failed: bool = False  # the reference could not compute it (inputs outside the domain),
    #                       or TVM's result is undefined (an integer overflow it leaves undefined)
    smooth: bool = True   # no discontinuous op applied to a float on its path: rounding anywhere
    #                       upstream (a pass computing in float16) cannot flip it


def _magnitude(a: np.ndarray) -> float:
    if a.size == 0 or a.dtype.kind not in "fiu":
        return 0.0
    with np.errstate(all="ignore"):
        m = float(np.max(np.abs(a.astype(np.float64))))
    return m if np.isfinite(m) else float("inf")


def run_op(spec, node: Node, env: dict) -> list[np.ndarray]:
    """The reference result of one operator node (`env`: its op_env), cast to the declared
    output types."""
    with np.errstate(all="ignore"):
        result = spec.reference(env)
    results = list(result) if spec.multi_output else [result]
    out = []
    for r, t in zip(results, node.outputs):
        with np.errstate(all="ignore"):
            arr = np.asarray(r).astype(t.dtype)
        if tuple(arr.shape) != t.shape:
            arr = np.broadcast_to(arr, t.shape).copy() if arr.size == 1 else arr
        out.append(arr)
    return out


# an implementation may lose this many rounding units, times the amplification, and be right
AMPLIFIED_UNITS = 32


def _amplified_rounding(spec, env: dict, outs: list) -> float:
    """The relative error a correct implementation may reach on this node's result."""
    dtype = outs[0].dtype
    if dtype.kind != "f":
        return 0.0
    try:
        with np.errstate(all="ignore"):
            factor = float(spec.amplification(env))
    except Exception:  # noqa: BLE001 - no bound known: nothing is comparable
        return float("inf")
    unit = float(np.finfo(dtype).eps) / 2
    return AMPLIFIED_UNITS * unit * factor if np.isfinite(factor) else float("inf")


def interpret(graph: Graph, specs, leaf_values: dict[int, np.ndarray]) -> dict[Ref, TensorFacts]:
    """Evaluate every node; `leaf_values` gives variables' values (constants carry theirs)."""
    facts: dict[Ref, TensorFacts] = {}
    values: dict[Ref, np.ndarray] = {}
    for node in graph.nodes:
        if node.kind != "op":
            v = leaf_values[node.id] if node.kind == "var" else np.asarray(node.value, dtype=node.type.dtype)
            values[Ref(node.id)] = v
            facts[Ref(node.id)] = TensorFacts(v, True, True, 0.0, 0.0, _magnitude(v))
            continue
        spec = specs.ops[node.op]
        ins = [facts[r] for r in node.input_refs()]
        try:
            env = op_env(spec, node, graph, values)
            outs = run_op(spec, node, env)
            # an undefined result (integer overflow TVM leaves undefined) is not compared,
            # as one computed from inputs outside the domain is not
            failed = any(f.failed for f in ins) or overflow_undefined(spec, node.dtype, env)
        except Exception:  # noqa: BLE001 - e.g. an index input outside its domain: the case
            # is then judged by find_violations (not comparable below, never run if it may trap)
            outs = [np.zeros(t.shape, dtype=t.dtype) for t in node.outputs]
            failed = True
        amplified = _amplified_rounding(spec, env, outs) if spec.amplification and not failed else 0.0
        # arithmetic on a value at its float type's limit (a max pool's window of padding only
        # gives the lowest float) overflows in TVM's arithmetic in that type, not in the
        # reference's wider one: avg_pool3d of two lowest float32 is -inf in TVM (bench27
        # relax seed 18 0024, a false alarm)
        at_limit = not spec.exact and any(_at_float_limit(f.magnitude, graph.type_of(r).dtype)
                                          for f, r in zip(ins, node.input_refs()))
        all_exact = all(f.exact for f in ins)
        any_float = any(t.dtype.startswith("float") for t in node.outputs) or any(
            graph.type_of(r).dtype.startswith("float") for r in node.input_refs())
        exact = all_exact and (spec.exact or not any_float)
        stable = all(f.stable for f in ins) and (spec.continuous or all_exact)
        smooth = all(f.smooth for f in ins) and (spec.continuous or not any(
            graph.type_of(r).dtype.startswith("float") for r in node.input_refs()))
        for i, (arr, t) in enumerate(zip(outs, node.outputs)):
            rtol, atol = specs.tolerances[spec.tolerance].get(t.dtype, (0.0, 0.0))
            rtol = max([rtol, amplified] + [f.rtol for f in ins])
            atol = max([atol, amplified] + [f.atol for f in ins])
            mag = max([_magnitude(arr)] + [f.magnitude for f in ins])
            ref = Ref(node.id, i)
            values[ref] = arr
            compared = stable and not failed and not at_limit
            facts[ref] = TensorFacts(arr, exact, compared, rtol, atol, mag, failed, smooth)
    return facts


def _at_float_limit(magnitude: float, dtype: str) -> bool:
    """Whether a float tensor's values reach half its type's largest finite value, where one
    addition of two overflows (False for a type NumPy does not know, and for non-floats)."""
    if not dtype.startswith("float"):
        return False
    try:
        return magnitude >= float(np.finfo(dtype).max) / 2
    except (TypeError, ValueError):  # NumPy's finfo raises ValueError for "float8_e4m3fn"
        return False


# --- 3-D convolutions and pools (NCDHW): conv3d, conv3d_transpose, max/avg/adaptive pool3d ---

def _pool3d_out_size(size, k, s, lo, hi, d, ceil_mode):
    """TVM's pooled size on one axis (InferTypePool3D): in ceil mode a last window that would
    start in the trailing padding is dropped (as in PyTorch)."""
    out = _window(size, k, s, lo, hi, d, ceil_mode)
    if ceil_mode and (out - 1) * s >= size + lo:
        out -= 1
    return out


@helper
def conv3d(data, weight, strides, padding, dilation, groups=1):
    """NCDHW data, OIDHW weight; padding is (front, top, left, back, bottom, right)."""
    acc = np.float64 if data.dtype.kind == "f" else np.int64
    f, t, l, bk, b, r = padding
    x = np.pad(np.asarray(data).astype(acc), ((0, 0), (0, 0), (f, bk), (t, b), (l, r)))
    return _conv(x, np.asarray(weight).astype(acc), strides, dilation, groups)


@helper
def conv3d_transpose(data, weight, strides, padding, output_padding, dilation, groups=1):
    """NCDHW data, IODHW weight ([in_channels, out_channels // groups, kd, kh, kw]), padding
    (front, top, left, back, bottom, right): as `conv2d_transpose` on three spatial axes
    (each input element scatters its products with the kernel at stride * i + dilation * k;
    the full map is cropped by the padding and extended by output_padding at its end)."""
    acc = np.float64 if data.dtype.kind == "f" else np.int64
    return _conv_transpose(np.asarray(data).astype(acc), np.asarray(weight).astype(acc), strides, padding,
                           output_padding, dilation, groups)


def _pool3d_windows(data, pool_size, strides, padding, dilation, ceil_mode):
    """Each output position of an NCDHW pool: ([(index tuple into data, inside?, in padded?)
    per kernel offset], output index), with TVM's output size."""
    import itertools
    sizes = data.shape[2:]
    outs = [_pool3d_out_size(sizes[q], pool_size[q], strides[q], padding[q], padding[q + 3],
                             dilation[q], ceil_mode) for q in range(3)]
    for pos in itertools.product(*[range(o) for o in outs]):
        cells = []
        for off in itertools.product(*[range(k) for k in pool_size]):
            idx = [pos[q] * strides[q] + off[q] * dilation[q] - padding[q] for q in range(3)]
            inside = all(0 <= idx[q] < sizes[q] for q in range(3))
            in_padded = all(-padding[q] <= idx[q] < sizes[q] + padding[q + 3] for q in range(3))
            cells.append((tuple(idx), inside, in_padded))
        yield outs, pos, cells


@helper
def avg_pool3d(data, pool_size, strides, padding, dilation, ceil_mode=False, count_include_pad=False):
    """NCDHW average pooling (sizes as `max_pool3d_tvm`); the divisor counts the padding when
    `count_include_pad`, never the ceil-mode overhang."""
    x = np.asarray(data, dtype=np.float64)
    n, c = x.shape[:2]
    out = None
    for outs, pos, cells in _pool3d_windows(x, pool_size, strides, padding, dilation, ceil_mode):
        if out is None:
            out = np.zeros((n, c) + tuple(outs))
        total, count = 0.0, 0
        for i, inside, in_padded in cells:
            if inside:
                total = total + x[:, :, i[0], i[1], i[2]]
            if inside or (count_include_pad and in_padded):
                count += 1
        out[(slice(None), slice(None)) + pos] = total / max(count, 1)
    return out


@helper
def adaptive_avg_pool3d(data, output_size):
    """NCDHW adaptive average pooling (`_adaptive_pool`'s windows); an output_size of None
    keeps the input's size."""
    x = np.asarray(data, dtype=np.float64)
    return _adaptive_pool(x, x.shape[2:] if output_size is None else [int(v) for v in output_size], np.mean)


@helper
def max_pool3d_tvm(data, pool_size, strides, padding, dilation, ceil_mode=False):
    """NCDHW max pooling as topi's pool3d computes it, with TVM's output size
    (InferTypePool3D); where a window holds padding only (a dilated kernel can step over
    the input), padded cells hold the dtype's lowest value (tvm::min_value: the lowest
    finite float, the integer minimum), which then wins."""
    x = np.asarray(data)
    low = np.finfo(x.dtype).min if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    n, c = x.shape[:2]
    out = None
    for outs, pos, cells in _pool3d_windows(x, pool_size, strides, padding, dilation, ceil_mode):
        if out is None:
            out = np.zeros((n, c) + tuple(outs), dtype=x.dtype)
        vals = [x[:, :, i[0], i[1], i[2]] for i, inside, _ in cells if inside]
        out[(slice(None), slice(None)) + pos] = (np.max(np.stack(vals), axis=0) if vals
                                                 else np.full((n, c), low, dtype=x.dtype))
    return out


# --- image ops (resize2d, grid_sample), index_tensor, index_put, slice_scatter, meshgrid ---

def _resize_src(out_size, in_size, mode):
    """topi.image.resize's get_inx: the float32 source coordinate of each output index."""
    f = np.float32
    x = np.arange(out_size).astype(f)
    scale = f(np.float32(in_size) / np.float32(out_size))
    if mode == "half_pixel":
        return (x + f(0.5)) * scale - f(0.5)
    if mode == "align_corners":
        return (f(in_size - 1) / f(out_size - 1)) * x
    return scale * x    # asymmetric


def _resize_int_div(in_size, out_size):
    """topi's can_convert_multiply_to_intdiv: out / in a whole number, not too large."""
    div = np.float32(out_size) / np.float32(in_size)
    return float(div) % 1 == 0 and float(div) <= 1 / (1e-5 * in_size + 1e-5)


def _cubic_weights(t, alpha):
    f = np.float32
    a = f(alpha)
    t2 = t * t
    t3 = t * t * t
    return [a * (t3 - f(2) * t2 + t),
            (a + f(2)) * t3 - (f(3) + a) * t2 + f(1),
            -(a + f(2)) * t3 + (f(3) + f(2) * a) * t2 - a * t,
            -a * t3 + a * t2]


def _resize2d_interpolated(data, size, method, mode, alpha=-0.5, exclude=0):
    """topi.image.resize2d's linear and cubic on NCHW data (python/tvm/topi/image/resize.py,
    _resize_2d): the pixels are read as float32 ('float'), interpolated in float32 and cast
    to the data's dtype (truncating for integers)."""
    f = np.float32
    x = np.asarray(data)
    h, w = x.shape[2], x.shape[3]
    oh, ow = int(size[0]), int(size[1])
    xf = x.astype(f)
    iy, ix = _resize_src(oh, h, mode), _resize_src(ow, w, mode)
    y0, x0 = np.floor(iy).astype(np.int64), np.floor(ix).astype(np.int64)

    def pix(r, c):
        return xf[:, :, np.clip(r, 0, h - 1)][:, :, :, np.clip(c, 0, w - 1)]
    if method == "linear":
        ty = (iy - y0.astype(f))[:, None]
        tx = (ix - x0.astype(f))[None, :]

        def lerp(a, b, t):
            return a * (f(1.0) - t) + b * t
        top = lerp(pix(y0, x0), pix(y0, x0 + 1), tx)
        bottom = lerp(pix(y0 + 1, x0), pix(y0 + 1, x0 + 1), tx)
        value = lerp(top, bottom, ty)
    else:   # cubic
        ty, tx = iy - np.floor(iy), ix - np.floor(ix)
        wy, wx = _cubic_weights(ty, alpha), _cubic_weights(tx, alpha)
        if exclude:
            wx = [np.where((x0 - 1 + i < 0) | (x0 + i > w), f(0), wx[i]) for i in range(4)]
            wy = [np.where((y0 - 1 + i < 0) | (y0 + i > h), f(0), wy[i]) for i in range(4)]
            sx, sy = wx[0] + wx[1] + wx[2] + wx[3], wy[0] + wy[1] + wy[2] + wy[3]
            wx, wy = [v / sx for v in wx], [v / sy for v in wy]
        cols = []
        for j in range(4):
            acc = None
            for i in range(4):
                term = pix(y0 + j - 1, x0 + i - 1) * wx[i][None, :]
                acc = term if acc is None else acc + term
            cols.append(acc)
        value = None
        for j in range(4):
            term = cols[j] * wy[j][:, None]
            value = term if value is None else value + term
    if x.dtype.kind in "iu":
        with np.errstate(all="ignore"):
            return np.trunc(value).astype(x.dtype)
    return value.astype(x.dtype)


def _grid_unnormalize(g, size, align_corners):
    t = g.dtype.type
    if align_corners:
        return (g + t(1)) * t(size - 1) / t(2)
    return t(-0.5) + (g + t(1)) * t(size) / t(2)


def _grid_reflect(v, size, align_corners):
    """topi grid_sample's _reflect_coordinates in the grid's dtype."""
    t = v.dtype.type
    span, corner = (size - 1, 0.0) if align_corners else (size, -0.5)
    span_t, corner_t = t(span), t(corner)
    iac = np.abs(corner_t - v)
    times = np.trunc(iac).astype(np.int64) // span if span else np.zeros(v.shape, np.int64)
    extra = iac - (times * span).astype(v.dtype)
    refl = np.where(times % 2 == 0, extra + corner_t, span_t - extra + corner_t)
    inside = (v >= corner_t) & (v <= t(span + corner))
    return np.where(inside, v, refl).astype(v.dtype)


def _grid_clip(v, size):
    t = v.dtype.type
    return np.minimum(np.maximum(v, t(0)), t(size - 1))


@helper
def image_grid_sample(data, grid, method, padding_mode, align_corners):
    """topi.image.grid_sample, 2-D (NCHW data, grid [N, 2, H_out, W_out], x then y): the
    coordinates are unnormalised, reflected or clipped in the grid's dtype (bilinear and
    nearest; nearest rounds half to even, tir nearbyint); a pixel outside the image reads 0."""
    x = np.asarray(data)
    g = np.asarray(grid)
    n, c, h, w = x.shape
    oh, ow = g.shape[2], g.shape[3]
    ys = _grid_unnormalize(g[:, 1], h, align_corners)
    xs = _grid_unnormalize(g[:, 0], w, align_corners)
    if padding_mode == "reflection":
        ys, xs = _grid_reflect(ys, h, align_corners), _grid_reflect(xs, w, align_corners)
    if padding_mode in ("reflection", "border"):
        ys, xs = _grid_clip(ys, h), _grid_clip(xs, w)
    b = np.arange(n)[:, None, None]

    def pix(r, cc):
        ok = (r >= 0) & (cc >= 0) & (r < h) & (cc < w)
        v = x[b, :, np.clip(r, 0, h - 1), np.clip(cc, 0, w - 1)]    # [n, oh, ow, c]
        v = np.where(ok[..., None], v, np.zeros((), x.dtype))
        return np.moveaxis(v, -1, 1)                                  # [n, c, oh, ow]
    if method == "nearest":
        return pix(np.rint(ys).astype(np.int64), np.rint(xs).astype(np.int64))
    t = x.dtype.type
    y0, x0 = np.floor(ys).astype(np.int64), np.floor(xs).astype(np.int64)
    dy = (ys - y0.astype(ys.dtype))[:, None]
    dx = (xs - x0.astype(xs.dtype))[:, None]
    one = t(1.0)
    return (pix(y0, x0) * (one - dy) * (one - dx) + pix(y0, x0 + 1) * (one - dy) * dx
            + pix(y0 + 1, x0) * dy * (one - dx) + pix(y0 + 1, x0 + 1) * dy * dx).astype(x.dtype)


@helper
def index_tensor(data, indices):
    """relax.op.index_tensor: NumPy advanced indexing data[tuple(indices)] (the index
    tensors broadcast together and index data's leading axes)."""
    return np.asarray(data)[tuple(np.asarray(i).astype(np.int64) for i in indices)]


@helper
def index_put(data, indices, values, accumulate=False):
    """relax.op.index_put (topi.index_put): a copy of data with data[indices] = values, or
    += with accumulate (wrapping for integers); a negative index counts from the end."""
    out = np.array(data, copy=True)
    idx = tuple(np.asarray(i).astype(np.int64) for i in indices)
    v = np.broadcast_to(np.asarray(values).reshape(-1), np.broadcast(*idx).shape)
    if accumulate:
        with np.errstate(all="ignore"):
            np.add.at(out, idx, v.astype(out.dtype))
    else:
        out[idx] = v
    return out


@helper
def slice_scatter(data, src, start, end, step, axis):
    """relax.op.slice_scatter: data with data[start:end:step] along `axis` replaced by src."""
    out = np.array(data, copy=True)
    sl = [slice(None)] * out.ndim
    sl[axis] = slice(start, end, step)
    out[tuple(sl)] = src
    return out


@helper
def meshgrid(tensors, indexing="ij"):
    """relax.op.meshgrid: np.meshgrid of 1-D tensors, as a list (a tuple result)."""
    return [np.array(t) for t in np.meshgrid(*[np.asarray(t) for t in tensors], indexing=indexing)]


def _resize_nearest_source(out_size, in_size, mode, rounding, int_div, tvm019):
    """topi's get_closest_index in float32, clamped as get_2d_pixel clamps it. tir round is
    llvm.nearbyint in TVM 0.27 (halves to even) and llvm.round in 0.19 (halves away from zero)."""
    f = np.float32
    if int_div:
        # nearest + asymmetric upsampling by a whole factor: x // (out // in)
        return np.clip(np.arange(out_size) // (out_size // in_size), 0, in_size - 1)
    v = _resize_src(out_size, in_size, mode)
    if rounding == "":
        rounding = "round" if mode == "align_corners" else "floor"
    if rounding == "round":
        v64 = v.astype(np.float64)
        idx = np.sign(v64) * np.floor(np.abs(v64) + 0.5) if tvm019 else np.rint(v64)
    elif rounding == "round_prefer_floor":
        idx = np.ceil(v - f(0.5))
    elif rounding == "round_prefer_ceil":
        idx = np.floor(v + f(0.5))
    elif rounding == "floor":
        idx = np.floor(v + f(1e-5))
    else:                            # ceil
        idx = np.ceil(v - f(1e-5))
    return np.clip(idx.astype(np.int64), 0, in_size - 1)


@helper
def resize2d_topi(data, size, method, mode, rounding="", alpha=-0.5, exclude=0, tvm019=False):
    """topi.image.resize2d on NCHW data (python/tvm/topi/image/resize.py, _resize_2d): every
    pixel is read as float32 ('float'), so nearest returns float32-rounded values and
    linear and cubic interpolate in float32; the result is cast to the data's dtype
    (truncating for integers). Nearest + asymmetric upsampling by a whole factor divides
    indices instead: with rounding 'floor' or '' in TVM 0.27, any rounding in 0.19
    (`tvm019`, which also rounds halves away from zero)."""
    f = np.float32
    x = np.asarray(data)
    if method != "nearest_neighbor":
        return _resize2d_interpolated(data, size, method, mode, alpha, exclude)
    h, w = x.shape[2], x.shape[3]
    oh, ow = int(size[0]), int(size[1])
    asym = mode == "asymmetric" and (tvm019 or rounding in ("floor", ""))
    rows = _resize_nearest_source(oh, h, mode, rounding, asym and _resize_int_div(h, oh), tvm019)
    cols = _resize_nearest_source(ow, w, mode, rounding, asym and _resize_int_div(w, ow), tvm019)
    picked = x[:, :, rows][:, :, :, cols]
    return picked.astype(f).astype(x.dtype) if x.dtype.kind == "f" else picked
