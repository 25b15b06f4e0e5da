"""PolyJuice algebraic rules on Relax bindings.

``commute`` (a call of an op with the ``commutative`` trait, its two operands swapped:
exact); ``reassociate`` ((a+b)+c = a+(b+c) for an op with the ``associative`` trait:
add, multiply, maximum, minimum; exact for integers, max and min, within tolerance for
floats; float16 * excluded: an intermediate could overflow); ``const_split``
(x + C = (x + C1) + (C - C1), a constant split in two; exact for integers by
wrap-around) and ``const_merge`` (its inverse, (x + C1) + C2 = x + (C1 + C2));
``distribute`` ((a+b)*c = a*c + b*c; integers exact, float32/64 within tolerance).
"""
from __future__ import annotations

import numpy as np
from tvm import relax
from tvm.ir.expr import Constant as _Constant

from .registry import mutator
from .ir import (_bindings, _block_defs, _dtype_of, _matched_sites, _op_name, _replace_binding, _replace_matched,
                 _static_tensor, has_trait)


# --- PolyJuice algebraic rules ---------------------------------------------------------------

def _commute_sites(mod, traits):
    return _bindings(mod, lambda b, blk, f: has_trait(traits, b.value, "commutative") and len(b.value.args) == 2)


@mutator("commute", _commute_sites)
def _commute(mod, site, rng):
    def build(emit, b):
        c = b.value
        emit(relax.Call(c.op, [c.args[1], c.args[0]], c.attrs, c.ty_args), var=b.var)
    return _replace_binding(mod, site, build)


def _assoc_operand(b, blk, ii):
    """(side, inner call) when an operand of `b` is bound in the same block to the same op
    (an associative one: the sites check the trait)."""
    c = b.value
    name = _op_name(c)
    if len(c.args) != 2 or not _static_tensor(b.var.ty):
        return None
    dt = _dtype_of(b.var)
    if dt in ("bool", None) or (dt == "float16" and name == "relax.multiply"):
        return None
    defs = _block_defs(blk, ii)
    for side in (0, 1):
        v = defs.get(c.args[side]) if isinstance(c.args[side], relax.Var) else None
        if v is not None and _op_name(v) == name and len(v.args) == 2:
            return side, v
    return None


def _reassoc_sites(mod, traits):
    return _matched_sites(mod, lambda b, blk, f: has_trait(traits, b.value, "associative"), _assoc_operand)


@mutator("reassociate", _reassoc_sites)
def _reassoc(mod, site, rng):
    def build(emit, b, found):
        side, inner = found
        c = b.value
        a, bb_ = inner.args
        other = c.args[1 - side]
        op = c.op
        if side == 0:   # (a op b) op y  ->  a op (b op y)
            u = emit(relax.Call(op, [bb_, other], c.attrs), name="ra")
            emit(relax.Call(op, [a, u], c.attrs), var=b.var)
        else:           # x op (a op b)  ->  (x op a) op b
            u = emit(relax.Call(op, [other, a], c.attrs), name="ra")
            emit(relax.Call(op, [u, bb_], c.attrs), var=b.var)
    return _replace_matched(mod, site, _assoc_operand, build)


_CONST_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")


def _const_add(b):
    c = b.value
    if _op_name(c) != "relax.add" or len(c.args) != 2:
        return None
    for side in (0, 1):
        k = c.args[side]
        if isinstance(k, _Constant) and str(k.value.dtype) in _CONST_DTYPES:
            return side, k
    return None


def _const_split_sites(mod, traits):
    return _bindings(mod, lambda b, blk, f: _const_add(b) is not None)


@mutator("const_split", _const_split_sites)
def _const_split(mod, site, rng):
    def build(emit, b):
        side, k = _const_add(b)
        x = b.value.args[1 - side]
        value = k.value.numpy()
        dt = value.dtype
        if dt.kind == "f":
            part = rng.uniform(-2, 2, size=value.shape).astype(dt)
        else:
            part = rng.integers(0, 5, size=value.shape).astype(dt)
        with np.errstate(over="ignore"):
            rest = np.asarray(np.subtract(value, part, dtype=dt))  # wraps for integers: exact
        u = emit(relax.op.add(x, relax.const(part, str(dt))), name="cs")
        emit(relax.op.add(u, relax.const(rest, str(dt))), var=b.var)
    return _replace_binding(mod, site, build)


def _const_merge_match(b, blk, ii):
    got = _const_add(b)
    if got is None:
        return None
    side, k2 = got
    u = b.value.args[1 - side]
    inner = _block_defs(blk, ii).get(u) if isinstance(u, relax.Var) else None
    if inner is None:
        return None
    got1 = _const_add(relax.VarBinding(u, inner))
    if got1 is None or str(got1[1].value.dtype) != str(k2.value.dtype):
        return None
    return inner.args[1 - got1[0]], got1[1], k2


def _const_merge_sites(mod, traits):
    return _matched_sites(mod, lambda b, blk, f: _const_add(b) is not None, _const_merge_match)


@mutator("const_merge", _const_merge_sites)
def _const_merge(mod, site, rng):
    def build(emit, b, found):
        x, k1, k2 = found
        a, c = k1.value.numpy(), k2.value.numpy()
        with np.errstate(over="ignore"):
            merged = np.asarray(np.add(a, c, dtype=a.dtype))
        emit(relax.op.add(x, relax.const(merged, str(a.dtype))), var=b.var)
    return _replace_matched(mod, site, _const_merge_match, build)


def _distribute_match(b, blk, ii):
    c = b.value
    if _op_name(c) != "relax.multiply" or len(c.args) != 2:
        return None
    dt = _dtype_of(b.var)
    if dt in (None, "bool", "float16"):
        return None
    defs = _block_defs(blk, ii)
    for side in (0, 1):
        s = defs.get(c.args[side]) if isinstance(c.args[side], relax.Var) else None
        if s is not None and _op_name(s) == "relax.add" and len(s.args) == 2:
            return side, s
    return None


def _distribute_sites(mod, traits):
    return _matched_sites(mod, lambda b, blk, f: _op_name(b.value) == "relax.multiply", _distribute_match)


@mutator("distribute", _distribute_sites)
def _distribute(mod, site, rng):
    def build(emit, b, found):
        side, s = found
        other = b.value.args[1 - side]
        m1 = emit(relax.op.multiply(s.args[0], other), name="d")
        m2 = emit(relax.op.multiply(s.args[1], other), name="d")
        emit(relax.op.add(m1, m2), var=b.var)
    return _replace_matched(mod, site, _distribute_match, build)
