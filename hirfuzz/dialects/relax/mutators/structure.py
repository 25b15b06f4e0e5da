"""PolyJuice structural rules and TorchProbe's operator resolution and conditionals.

``transpose_pair`` (an op with the ``elementwise`` trait computed on permuted operands,
its result permuted back; lower-rank operands are reshaped with leading ones first, so
broadcasting is unchanged); ``concat_split`` (split(concat(x, x))[k] = x);
``matmul_transpose`` (matmul(x, y) = T(matmul(T(y), T(x))), T swapping the last two
axes; ranks >= 2); ``expose_output`` (an intermediate of main becomes an extra result,
appended after the existing ones: compare the common prefix); ``resolve`` (operator
resolution: an elementwise op computed on parts of its operands split along one axis,
the parts concatenated); ``always_true_if`` (a binding moved into an ``If`` whose
condition is always true, the else branch zeros of the same type; a dataflow block
holding it becomes plain).
"""
from __future__ import annotations

import numpy as np
from tvm import relax

from .registry import mutator
from .ir import _bindings, _op_name, _rebuild, _replace_binding, _static_tensor, has_trait


# --- PolyJuice structural rules --------------------------------------------------------------

def _elementwise_site(traits, b, min_rank=1):
    c = b.value
    if not has_trait(traits, c, "elementwise"):
        return False
    st = _static_tensor(b.var.ty)
    if st is None or len(st[0]) < min_rank:
        return False
    for a in c.args:
        sa = _static_tensor(a.ty) if hasattr(a, "ty") else None
        if sa is None or len(sa[0]) > len(st[0]):
            return False
    return True


def _transpose_sites(mod, traits):
    return _bindings(mod, lambda b, blk, f: _elementwise_site(traits, b, 2))


@mutator("transpose_pair", _transpose_sites)
def _transpose_pair(mod, site, rng):
    def build(emit, b):
        c = b.value
        shape, _ = _static_tensor(b.var.ty)
        r = len(shape)
        perm = [int(i) for i in rng.permutation(r)]
        if perm == list(range(r)):
            perm = perm[1:] + perm[:1]
        args = []
        for a in c.args:
            sa, _ = _static_tensor(a.ty)
            if len(sa) == 0:
                args.append(a)  # a scalar broadcasts the same either way
                continue
            if len(sa) < r:
                a = emit(relax.op.reshape(a, [1] * (r - len(sa)) + sa), name="tp")
            args.append(emit(relax.op.permute_dims(a, perm), name="tp"))
        t = emit(relax.Call(c.op, args, c.attrs, c.ty_args), name="tp")
        emit(relax.op.permute_dims(t, [int(i) for i in np.argsort(perm)]), var=b.var)
    return _replace_binding(mod, site, build)


def _concat_split_sites(mod, traits):
    return _bindings(mod, lambda b, blk, f: _op_name(b.value) is not None
                     and (_static_tensor(b.var.ty) or [[]])[0] != [])


@mutator("concat_split", _concat_split_sites)
def _concat_split(mod, site, rng):
    def build(emit, b):
        shape, _ = _static_tensor(b.var.ty)
        axis = int(rng.integers(len(shape)))
        t = emit(b.value, name="cs")
        cat = emit(relax.op.concat([t, t], axis=axis), name="cs")
        parts = emit(relax.op.split(cat, 2, axis=axis), name="cs")
        emit(relax.TupleGetItem(parts, int(rng.integers(2))), var=b.var)
    return _replace_binding(mod, site, build)


def _matmul_sites(mod, traits):
    def ok(b, blk, f):
        if _op_name(b.value) != "relax.matmul":
            return False
        shapes = [_static_tensor(a.ty) for a in b.value.args]
        return all(s is not None and len(s[0]) >= 2 for s in shapes) and _static_tensor(b.var.ty) is not None
    return _bindings(mod, ok)


def _swap_last(rank):
    return list(range(rank - 2)) + [rank - 1, rank - 2]


@mutator("matmul_transpose", _matmul_sites)
def _matmul_transpose(mod, site, rng):
    def build(emit, b):
        c = b.value
        x, y = c.args
        xt = emit(relax.op.permute_dims(x, _swap_last(len(_static_tensor(x.ty)[0]))), name="mt")
        yt = emit(relax.op.permute_dims(y, _swap_last(len(_static_tensor(y.ty)[0]))), name="mt")
        t = emit(relax.Call(c.op, [yt, xt], c.attrs, c.ty_args), name="mt")
        emit(relax.op.permute_dims(t, _swap_last(len(_static_tensor(b.var.ty)[0]))), var=b.var)
    return _replace_binding(mod, site, build)


def _returned_vars(func):
    body = func.body.body
    fields = body.fields if isinstance(body, relax.Tuple) else [body]
    return [f for f in fields if isinstance(f, relax.Var)]


def _expose_sites(mod, traits):
    out = []
    for gv, bi, ii in _bindings(mod, lambda b, blk, f: _static_tensor(b.var.ty) is not None, main_only=True):
        f = mod[gv]
        b = f.body.blocks[bi].bindings[ii]
        if not any(v.same_as(b.var) for v in _returned_vars(f)):
            out.append((gv, bi, ii))
    return out


@mutator("expose_output", _expose_sites)
def _expose_output(mod, site, rng):
    """An intermediate of main becomes an extra result, appended after the existing ones."""
    gv, bi, ii = site
    func = mod[gv]
    blocks = list(func.body.blocks)
    blk = blocks[bi]
    var = blk.bindings[ii].var
    if isinstance(blk, relax.DataflowBlock):
        out = relax.Var("exposed", var.ty)
        blocks[bi] = relax.DataflowBlock(list(blk.bindings) + [relax.VarBinding(out, var)])
    else:
        out = var
    body = func.body.body
    if isinstance(body, relax.Tuple):
        fields = list(body.fields)
    elif isinstance(body.ty, relax.TupleType):
        items = [relax.Var(f"res{i}", t) for i, t in enumerate(body.ty.fields)]
        blocks.append(relax.BindingBlock([relax.VarBinding(v, relax.TupleGetItem(body, i))
                                          for i, v in enumerate(items)]))
        fields = items
    else:
        fields = [body]
    fields = fields + [out]
    return _rebuild(mod, gv, func, blocks, relax.Tuple(fields), relax.TupleType([f.ty for f in fields]))


def _resolve_sites(mod, traits):
    def ok(b, blk, f):
        if not _elementwise_site(traits, b, 1):
            return False
        return max(_static_tensor(b.var.ty)[0]) >= 2
    return _bindings(mod, ok)


@mutator("resolve", _resolve_sites)
def _resolve(mod, site, rng):
    """Operator resolution: the op on parts of its operands along one axis, concatenated."""
    def build(emit, b):
        shape, _ = _static_tensor(b.var.ty)
        axes = [i for i, d in enumerate(shape) if d >= 2]
        axis = axes[int(rng.integers(len(axes)))]
        d = shape[axis]
        k = int(rng.integers(1, min(d - 1, 3) + 1))
        cuts = sorted(int(i) for i in rng.choice(np.arange(1, d), size=k, replace=False))
        c, per_arg = b.value, []
        for a in c.args:
            sa, _ = _static_tensor(a.ty)
            ax = axis - (len(shape) - len(sa))
            if ax >= 0 and sa[ax] == d:
                s = emit(relax.op.split(a, cuts, axis=ax), name="rs")
                per_arg.append([emit(relax.TupleGetItem(s, j), name="rs") for j in range(k + 1)])
            else:
                per_arg.append([a] * (k + 1))
        parts = [emit(relax.Call(c.op, [p[j] for p in per_arg], c.attrs, c.ty_args), name="rs")
                 for j in range(k + 1)]
        emit(relax.op.concat(parts, axis=axis), var=b.var)
    return _replace_binding(mod, site, build)


# --- TorchProbe: always-true conditionals ----------------------------------------------------

def _if_sites(mod, traits):
    def ok(b, blk, f):
        return (not isinstance(blk, relax.DataflowBlock) and _op_name(b.value) is not None
                and _static_tensor(b.var.ty) is not None)
    return _bindings(mod, ok)


@mutator("always_true_if", _if_sites, structural=True)
def _always_true_if(mod, site, rng):
    """`v = call` in a plain block becomes `v = call if sum(shape(x)) >= rank(x) else zeros`."""
    def build(emit, b):
        shape, dtype = _static_tensor(b.var.ty)
        ranked = [a for a in b.value.args if (_static_tensor(getattr(a, "ty", None)) or [[]])[0]]
        if ranked:
            x = ranked[int(rng.integers(len(ranked)))]
            rank = len(_static_tensor(x.ty)[0])
            s = emit(relax.op.shape_of(x), name="c")
            t = emit(relax.op.shape_to_tensor(s), name="c")
            total = emit(relax.op.sum(t), name="c")
            cond = emit(relax.op.greater_equal(total, relax.const(rank, "int64")), name="c")
        else:
            cond = relax.const(True, "bool")
        emit(relax.If(cond, relax.SeqExpr([], b.value), relax.SeqExpr([], relax.op.zeros(shape, dtype))),
             var=b.var)
    return _replace_binding(mod, site, build)
