"""The spec expression language: a small, safe subset of Python expressions.

Op specs describe shapes, attributes, constraints and references as expressions such as
``broadcast_shapes(a.shape, b.shape)`` or ``np.exp(x)``. They are parsed with ``ast`` and
compiled into closures over an environment dict; nothing is ever passed to ``eval``. Only
the node kinds, names, attributes and functions listed here are accepted, so a spec can
compute but never import, open a file or reach an object's internals.

The same compiled expression runs on plain ints, on NumPy arrays (references) and on z3
terms (solver constraints): arithmetic, comparisons and ``min``/``max``/``and``/``or`` are
routed through helpers that pick the z3 form when an operand is symbolic.
"""
from __future__ import annotations

import ast
import inspect
import math
import operator
from typing import Any, Callable

import numpy as np

from ..errors import HirfuzzError

try:  # z3 is a declared dependency; the language still works on concrete values without it
    import z3
except ImportError:  # pragma: no cover
    z3 = None


class ExprError(HirfuzzError):
    """An expression that does not parse, names something unknown, or fails to evaluate."""


def _is_sym(*values) -> bool:
    return z3 is not None and any(isinstance(v, z3.ExprRef) for v in values)


# --- arithmetic that also works on z3 terms ------------------------------------------------

def _floordiv(a, b):
    if _is_sym(a, b):
        return a / b  # z3 integer division; hirfuzz only divides non-negative sizes
    return a // b


def _mod(a, b):
    return a % b


def _and(*values):
    if _is_sym(*values):
        return z3.And(*values)
    return all(values)


def _or(*values):
    if _is_sym(*values):
        return z3.Or(*values)
    return any(values)


def _not(v):
    return z3.Not(v) if _is_sym(v) else not v


def _min(*args):
    items = list(args[0]) if len(args) == 1 else list(args)
    out = items[0]
    for v in items[1:]:
        out = z3.If(v < out, v, out) if _is_sym(out, v) else min(out, v)
    return out


def _max(*args):
    items = list(args[0]) if len(args) == 1 else list(args)
    out = items[0]
    for v in items[1:]:
        out = z3.If(v > out, v, out) if _is_sym(out, v) else max(out, v)
    return out


_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: _floordiv,
    ast.Mod: _mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
_CMPOPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_UNARYOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: _not, ast.Invert: operator.invert}

# Attributes an expression may read: tensor descriptions and a few array methods.
ALLOWED_ATTRS = {"shape", "rank", "dtype", "ndim", "size", "astype", "reshape", "transpose", "T"}


class Namespace:
    """A read-only bag of functions reachable as ``ns.name`` (``np.exp``, ``ref.conv2d``)."""

    def __init__(self, name: str, members: dict[str, Any]):
        self._name = name
        self._members = members

    def get(self, attr: str):
        if attr not in self._members:
            raise ExprError(f"'{self._name}.{attr}' is not available in spec expressions")
        return self._members[attr]


class Compiled:
    """A compiled expression: call it with an environment dict."""

    def __init__(self, text: str, fn: Callable[[dict], Any], names: set[str]):
        self.text = text
        self._fn = fn
        self.names = names  # free names it reads, for dependency checks

    def __call__(self, env: dict) -> Any:
        try:
            return self._fn(env)
        except ExprError:
            raise
        except Exception as exc:  # the spec's fault, reported with the expression
            raise ExprError(f"evaluating '{self.text}': {type(exc).__name__}: {exc}") from exc

    def __repr__(self):
        return f"Compiled({self.text!r})"


def _lookup(table: dict, op: ast.AST):
    if type(op) not in table:
        raise ExprError(f"operator '{type(op).__name__}' is not allowed in spec expressions")
    return table[type(op)]


class _Compiler:
    def __init__(self, functions: dict[str, Callable], namespaces: dict[str, Namespace]):
        self.functions = functions
        self.namespaces = namespaces
        self.names: set[str] = set()

    def compile(self, node: ast.AST) -> Callable[[dict], Any]:
        method = getattr(self, "c_" + type(node).__name__, None)
        if method is None:
            raise ExprError(f"'{type(node).__name__}' is not allowed in spec expressions")
        return method(node)

    def c_Expression(self, node):
        return self.compile(node.body)

    def c_Constant(self, node):
        value = node.value
        return lambda env: value

    def c_Name(self, node):
        name = node.id
        if name in ("True", "False", "None"):
            value = {"True": True, "False": False, "None": None}[name]
            return lambda env: value
        if name in self.namespaces:
            ns = self.namespaces[name]
            return lambda env: ns
        self.names.add(name)

        def load(env):
            try:
                return env[name]
            except KeyError:
                raise ExprError(f"unknown name '{name}'") from None
        return load

    def c_Attribute(self, node):
        base = self.compile(node.value)
        attr = node.attr
        if isinstance(node.value, ast.Name) and node.value.id in self.namespaces:
            member = self.namespaces[node.value.id].get(attr)
            return lambda env: member
        if attr not in ALLOWED_ATTRS:
            raise ExprError(f"attribute '.{attr}' is not allowed in spec expressions")
        return lambda env: getattr(base(env), attr)

    def c_Subscript(self, node):
        base = self.compile(node.value)
        index = self.compile(node.slice)
        return lambda env: base(env)[index(env)]

    def c_Slice(self, node):
        parts = [self.compile(p) if p is not None else (lambda env: None)
                 for p in (node.lower, node.upper, node.step)]
        lo, hi, st = parts
        return lambda env: slice(lo(env), hi(env), st(env))

    def c_List(self, node):
        items = [self.compile(e) for e in node.elts]
        return lambda env: [f(env) for f in items]

    def c_Tuple(self, node):
        items = [self.compile(e) for e in node.elts]
        return lambda env: tuple(f(env) for f in items)

    def c_BinOp(self, node):
        op = _lookup(_BINOPS, node.op)
        left, right = self.compile(node.left), self.compile(node.right)
        return lambda env: op(left(env), right(env))

    def c_UnaryOp(self, node):
        op = _lookup(_UNARYOPS, node.op)
        operand = self.compile(node.operand)
        return lambda env: op(operand(env))

    def c_BoolOp(self, node):
        values = [self.compile(v) for v in node.values]
        if isinstance(node.op, ast.And):
            def f(env):
                out = [v(env) for v in values]
                return _and(*out)
        else:
            def f(env):
                out = [v(env) for v in values]
                return _or(*out)
        return f

    def c_Compare(self, node):
        left = self.compile(node.left)
        ops = [_lookup(_CMPOPS, o) for o in node.ops]
        rights = [self.compile(c) for c in node.comparators]

        def f(env):
            a = left(env)
            results = []
            for op, r in zip(ops, rights):
                b = r(env)
                results.append(op(a, b))
                a = b
            return results[0] if len(results) == 1 else _and(*results)
        return f

    def c_IfExp(self, node):
        test, body, orelse = self.compile(node.test), self.compile(node.body), self.compile(node.orelse)

        def f(env):
            t = test(env)
            if _is_sym(t):
                return z3.If(t, body(env), orelse(env))
            return body(env) if t else orelse(env)
        return f

    def c_Call(self, node):
        if node.keywords:
            kwargs = {k.arg: self.compile(k.value) for k in node.keywords}
        else:
            kwargs = {}
        args = [self.compile(a) for a in node.args]
        if isinstance(node.func, ast.Name) and node.func.id in self.functions:
            fn = self.functions[node.func.id]
            return lambda env: fn(*[a(env) for a in args], **{k: v(env) for k, v in kwargs.items()})
        if isinstance(node.func, ast.Name) and node.func.id in RANDOM_FUNCTIONS:
            fn = RANDOM_FUNCTIONS[node.func.id]

            def call_random(env):
                rng = env.get("__rng__")
                if rng is None:
                    raise ExprError(f"'{node.func.id}' draws random values and needs a generator")
                return fn(rng, *[a(env) for a in args], **{k: v(env) for k, v in kwargs.items()})
            return call_random
        if isinstance(node.func, ast.Attribute):
            func = self.compile(node.func)
            return lambda env: func(env)(*[a(env) for a in args], **{k: v(env) for k, v in kwargs.items()})
        name = ast.unparse(node.func)
        raise ExprError(f"function '{name}' is not available in spec expressions")

    def c_ListComp(self, node):
        if len(node.generators) != 1 or node.generators[0].is_async:
            raise ExprError("only one 'for' is allowed in a list comprehension")
        gen = node.generators[0]
        if not isinstance(gen.target, ast.Name):
            raise ExprError("a comprehension variable must be a plain name")
        var = gen.target.id
        iterable = self.compile(gen.iter)
        conds = [self.compile(c) for c in gen.ifs]
        elt = self.compile(node.elt)
        self.names.discard(var)

        def f(env):
            out = []
            inner = dict(env)
            for item in iterable(env):
                inner[var] = item
                if all(c(inner) for c in conds):
                    out.append(elt(inner))
            return out
        return f

    c_GeneratorExp = c_ListComp


def compile_expr(text: Any, functions: dict[str, Callable] | None = None,
                 namespaces: dict[str, Namespace] | None = None) -> Compiled:
    """Compile a spec expression. Numbers and lists in YAML are accepted as constants."""
    if not isinstance(text, str):
        value = text
        return Compiled(repr(text), lambda env: value, set())
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse '{text}': {exc.msg}") from None
    compiler = _Compiler(functions if functions is not None else FUNCTIONS,
                         namespaces if namespaces is not None else {})
    fn = compiler.compile(tree)
    return Compiled(text, fn, compiler.names)


# --- shape helpers, usable from specs --------------------------------------------------------

def prod(seq):
    out = 1
    for v in seq:
        out = out * v
    return out


def broadcastable(a, b) -> bool:
    for x, y in zip(reversed(list(a)), reversed(list(b))):
        if x != y and x != 1 and y != 1:
            return False
    return True


def broadcast_shapes(a, b) -> list:
    a, b = list(a), list(b)
    if not broadcastable(a, b):
        raise ExprError(f"shapes {a} and {b} do not broadcast")
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + a
    b = [1] * (n - len(b)) + b
    return [x if y == 1 else y for x, y in zip(a, b)]


def normalize_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ExprError(f"axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def normalize_axes(axes, rank: int) -> list:
    if axes is None:
        return list(range(rank))
    if isinstance(axes, int):
        axes = [axes]
    return sorted(normalize_axis(a, rank) for a in axes)


def reduce_shape(shape, axes, keepdims) -> list:
    shape = list(shape)
    axes = normalize_axes(axes, len(shape))
    if keepdims:
        return [1 if i in axes else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in axes]


def window_out(size, kernel, stride, pad_lo, pad_hi, dilation=1, ceil_mode=False):
    """Output length of a convolution or pooling window (floor or ceil mode)."""
    span = size + pad_lo + pad_hi - dilation * (kernel - 1) - 1
    if ceil_mode:
        return _floordiv(span + stride - 1, stride) + 1
    return _floordiv(span, stride) + 1


def pool_out(size, kernel, stride, pad_lo, pad_hi, dilation=1, ceil_mode=False):
    """Output length of a pooling window as TVM (and PyTorch) compute it: in ceil mode the
    last window must start inside the input or its leading padding (concrete values only)."""
    out = window_out(size, kernel, stride, pad_lo, pad_hi, dilation, ceil_mode)
    if ceil_mode and (out - 1) * stride >= size + pad_lo:
        out -= 1
    return out


def slice_len(n, begin, end, stride) -> int:
    return len(range(n)[slice(begin, end, stride)])


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


def strided_slice_shape(shape, axes, begin, end, strides) -> list:
    """The shape of ``x[...]`` sliced with Python semantics along `axes` (as ``slice_len``)."""
    out = list(shape)
    for a, b, e, s in zip(axes, begin, end, strides):
        a = normalize_axis(a, len(out))
        out[a] = slice_len(out[a], b, e, s)
    return out


def concat_shape(shapes, axis) -> list:
    shapes = [list(s) for s in shapes]
    axis = normalize_axis(axis, len(shapes[0]))
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return out


def permute(shape, axes) -> list:
    shape = list(shape)
    if axes is None:
        return shape[::-1]
    return [shape[a] for a in axes]


def expand_shape(shape, axes) -> list:
    out = list(shape)
    rank = len(out) + len(axes)
    for a in sorted(normalize_axis(a, rank) for a in axes):
        out.insert(a, 1)
    return out


def squeeze_shape(shape, axes) -> list:
    shape = list(shape)
    if axes is None:
        return [d for d in shape if d != 1]
    drop = normalize_axes(axes, len(shape))
    return [d for i, d in enumerate(shape) if i not in drop]


def tile_shape(shape, repeats) -> list:
    shape, repeats = list(shape), list(repeats)
    n = max(len(shape), len(repeats))
    shape = [1] * (n - len(shape)) + shape
    repeats = [1] * (n - len(repeats)) + repeats
    return [d * r for d, r in zip(shape, repeats)]


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


def is_float(dtype: str) -> bool:
    return dtype.startswith("float") or dtype.startswith("bfloat")


def is_int(dtype: str) -> bool:
    return dtype.startswith("int") or dtype.startswith("uint")


def is_signed(dtype: str) -> bool:
    return dtype.startswith("int") or is_float(dtype)


def dtype_min(dtype: str):
    if dtype == "bool":
        return 0
    return np.iinfo(dtype).min if is_int(dtype) else float(np.finfo(dtype).min)


def dtype_max(dtype: str):
    if dtype == "bool":
        return 1
    return np.iinfo(dtype).max if is_int(dtype) else float(np.finfo(dtype).max)


def dtype_bits(dtype: str) -> int:
    """The width of a dtype in bits (bool: 1)."""
    return 1 if dtype == "bool" else int(np.dtype(dtype).itemsize * 8)


def einsum_shape(subscripts, shapes) -> list:
    """The result shape of ``np.einsum(subscripts, *operands)`` (explicit ``->`` form)."""
    lhs, out = subscripts.split("->")
    sizes = {}
    for letters, shape in zip(lhs.split(","), shapes):
        for c, d in zip(letters, list(shape)):
            sizes[c] = d
    return [sizes[c] for c in out]


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


def layout_shape(shape, perm, split=None, factor=1) -> list:
    """The result shape of `layout_map` applied to `shape` (a split axis is padded up)."""
    shape = list(shape)
    out = [-(-shape[p] // factor) if p == split else shape[p] for p in perm]
    if split is not None:
        out.append(factor)
    return out


FUNCTIONS: dict[str, Callable] = {
    "len": len, "min": _min, "max": _max, "abs": abs, "range": range, "list": list,
    "tuple": tuple, "sum": sum, "int": int, "float": float, "bool": bool, "sorted": sorted,
    "all": all, "any": any, "reversed": lambda s: list(reversed(list(s))),
    "ceil": math.ceil, "floor": math.floor,
    "prod": prod, "reshape_valid": reshape_valid, "broadcastable": broadcastable, "broadcast_shapes": broadcast_shapes,
    "normalize_axis": normalize_axis, "normalize_axes": normalize_axes,
    "reduce_shape": reduce_shape, "window_out": window_out, "pool_out": pool_out,
    "slice_len": slice_len,
    "split_shapes": split_shapes, "concat_shape": concat_shape,
    "strided_slice_shape": strided_slice_shape, "permute": permute,
    "expand_shape": expand_shape, "squeeze_shape": squeeze_shape, "tile_shape": tile_shape,
    "matmul_shape": matmul_shape,
    "is_float": is_float, "is_int": is_int, "is_signed": is_signed,
    "dtype_min": dtype_min, "dtype_max": dtype_max, "dtype_bits": dtype_bits,
    "einsum_shape": einsum_shape, "einsum_consistent": einsum_consistent,
    "layout_map": layout_map, "layout_shape": layout_shape,
}


# --- random choices, usable from attribute and shape rules (they get the case's rng) ----------

MAX_DIM = 6  # tensors stay small: builds stay fast and reproducers stay pasteable


def rand_int(rng, lo, hi):
    lo, hi = int(lo), int(hi)
    if hi < lo:
        raise ExprError(f"rand_int({lo}, {hi}): empty range")
    return int(rng.integers(lo, hi + 1))


def rand_choice(rng, seq):
    seq = list(seq)
    if not seq:
        raise ExprError("rand_choice of an empty sequence")
    return seq[int(rng.integers(len(seq)))]


def rand_bool(rng, p=0.5):
    return bool(rng.random() < p)


def rand_subset(rng, seq, min_size=0, max_size=None):
    seq = list(seq)
    hi = len(seq) if max_size is None else min(max_size, len(seq))
    k = int(rng.integers(min_size, hi + 1))
    picked = sorted(rng.choice(len(seq), size=k, replace=False).tolist()) if k else []
    return [seq[i] for i in picked]


def rand_perm(rng, n):
    return [int(i) for i in rng.permutation(int(n))]


def rand_dim(rng, lo=1, hi=MAX_DIM):
    return rand_int(rng, lo, hi)


def rand_shape(rng, rank, lo=1, hi=MAX_DIM):
    return [rand_int(rng, lo, hi) for _ in range(int(rank))]


def rand_broadcastable(rng, shape):
    """A shape that broadcasts with `shape` without changing it (so the result is `shape`)."""
    shape = list(shape)
    k = rand_int(rng, 0, len(shape))  # keep a suffix of length k
    return [d if rng.random() < 0.7 else 1 for d in shape[len(shape) - k:]]


def rand_broadcast_target(rng, shape):
    """A shape that `shape` broadcasts to: ones may grow, and leading dims may be added."""
    shape = list(shape)
    lead = rand_shape(rng, rand_int(rng, 0, max(0, 4 - len(shape))))
    return lead + [rand_dim(rng) if d == 1 and rng.random() < 0.5 else d for d in shape]


def rand_factor_shape(rng, numel, rank):
    """A shape of `rank` dims whose product is `numel` (a random factorisation)."""
    numel, rank = int(numel), int(rank)
    if rank == 0:
        if numel != 1:
            raise ExprError(f"no rank-0 shape holds {numel} elements")
        return []
    dims = [1] * rank
    rest = numel
    for i in range(rank - 1):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = divisors[int(rng.integers(len(divisors)))]
        dims[i] = d
        rest //= d
    dims[-1] = rest
    order = rng.permutation(rank)
    return [dims[i] for i in order]


def rand_divisor(rng, n):
    n = int(n)
    return rand_choice(rng, [d for d in range(1, n + 1) if n % d == 0])


def rand_einsum_operand(rng, subscripts, index, shape):
    """A shape for operand `index` of `subscripts`: letters shared with operand 0 (of `shape`)
    take its sizes, the others random dims."""
    operands = subscripts.split("->")[0].split(",")
    sizes = dict(zip(operands[0], list(shape)))
    return [sizes[c] if c in sizes else rand_dim(rng) for c in operands[index]]


RANDOM_FUNCTIONS: dict[str, Callable] = {
    "rand_int": rand_int, "rand_choice": rand_choice, "rand_bool": rand_bool,
    "rand_subset": rand_subset, "rand_perm": rand_perm, "rand_dim": rand_dim,
    "rand_shape": rand_shape, "rand_broadcastable": rand_broadcastable,
    "rand_broadcast_target": rand_broadcast_target, "rand_factor_shape": rand_factor_shape,
    "rand_divisor": rand_divisor, "rand_einsum_operand": rand_einsum_operand,
}
