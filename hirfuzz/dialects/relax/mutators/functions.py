"""Function-level rewrites of a Relax module.

- HIRGen function rewrites (3.3.2), on a global function f other than main:
  ``func_to_closure`` (a) f becomes a closure inside a new global g with f's parameters
  that calls it; every reference to f now names g, and f is removed;
  ``wrap_return`` (b) a new nullary global g returns f; each call ``f(args)`` becomes
  ``g()(args)``; ``call_wrap`` (c) a new global g calls f; every reference to f names g.
- TorchProbe: ``outline_closure`` / ``outline_global`` (functionalization: a range of
  bindings becomes a closure or a new global function returning every value used after
  the range; the call site binds the original variables, so nothing else changes);
  ``inline_call`` (inlining, the inverse of outlining: a call of a simple global
  function replaced by its body).
"""
from __future__ import annotations

import tvm
from tvm import relax

from .registry import mutator
from .ir import (_add_func, _bindings, _Emit, _funcs, _mentions, _op_name, _rebuild, _redirect,
                 _replace_binding, _static, _subst, _without_attrs)


# --- HIRGen function rewrites ----------------------------------------------------------------

def _callees(mod, traits=None):
    """Global Relax functions other than main that some function refers to."""
    out = []
    funcs = _funcs(mod)
    for gv, f in funcs:
        if gv.name_hint == "main" or f.attrs and "global_symbol" in f.attrs:
            continue
        if any(_mentions(h, gv) for g2, h in funcs if not g2.same_as(gv)):
            out.append(gv)
    return out


def _fresh_params(f):
    return [relax.Var(p.name, p.ty) for p in f.params]


@mutator("func_to_closure", _callees, structural=True)
def _func_to_closure(mod, f_gv, rng):
    f = mod[f_gv]
    params = _fresh_params(f)
    local = relax.Var("local_" + f_gv.name_hint, f.ty)
    r = relax.Var("r", f.ret_ty)
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(local, _without_attrs(f)),
                                              relax.VarBinding(r, relax.Call(local, params))])], r)
    g = relax.BlockBuilder(mod).normalize(relax.Function(params, body, f.ret_ty, f.is_pure))
    mod, g_gv = _add_func(mod, g, f_gv.name_hint + "_cl")
    mod = _redirect(mod, f_gv, g_gv, skip=(g_gv,))
    funcs = {gv: fn for gv, fn in mod.functions_items() if not gv.same_as(f_gv)}
    return tvm.IRModule(funcs, attrs=mod.attrs)


@mutator("call_wrap", _callees, structural=True)
def _call_wrap(mod, f_gv, rng):
    f = mod[f_gv]
    params = _fresh_params(f)
    r = relax.Var("r", f.ret_ty)
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(r, relax.Call(f_gv, params))])], r)
    g = relax.BlockBuilder(mod).normalize(relax.Function(params, body, f.ret_ty, f.is_pure))
    mod, g_gv = _add_func(mod, g, f_gv.name_hint + "_call")
    return _redirect(mod, f_gv, g_gv, skip=(g_gv,))


def _top_calls(mod, f_gv):
    return _bindings(mod, lambda b, blk, f: isinstance(b.value, relax.Call) and b.value.op.same_as(f_gv))


def _wrap_return_sites(mod, traits):
    return [gv for gv in _callees(mod) if _top_calls(mod, gv)]


@mutator("wrap_return", _wrap_return_sites, structural=True)
def _wrap_return(mod, f_gv, rng):
    g = relax.BlockBuilder(mod).normalize(relax.Function([], relax.SeqExpr([], f_gv), mod[f_gv].ty, True))
    mod, g_gv = _add_func(mod, g, "get_" + f_gv.name_hint)
    # rewrite call sites from the last, so earlier site indices stay valid
    for site in reversed(_top_calls(mod, f_gv)):
        def build(emit, b):
            h = emit(relax.Call(g_gv, []), name="fn")
            emit(relax.Call(h, list(b.value.args)), var=b.var)
        mod = _replace_binding(mod, site, build)
    return mod


# --- TorchProbe: functionalization (outlining) and inlining ----------------------------------

def _outlinable(b) -> bool:
    if not isinstance(b, relax.VarBinding) or not _static(b.var.ty):
        return False
    v = b.value
    if not (_op_name(v) is not None or isinstance(v, (relax.Tuple, relax.TupleGetItem))):
        return False
    return all(_static(u.ty) for u in relax.analysis.free_vars(v))


def _outline_sites(mod, traits):
    return _bindings(mod, lambda b, blk, f: _outlinable(b))


def _outline(mod, site, rng, local: bool):
    gv, bi, i = site
    func = mod[gv]
    blocks = list(func.body.blocks)
    blk = blocks[bi]
    bindings = list(blk.bindings)
    j = i
    while j + 1 < len(bindings) and _outlinable(bindings[j + 1]) and rng.random() < 0.7:
        j += 1
    rng_b = bindings[i:j + 1]
    defined = [b.var for b in rng_b]
    inputs = []
    for b in rng_b:
        for u in relax.analysis.free_vars(b.value):
            if not any(u.same_as(d) for d in defined) and not any(u.same_as(x) for x in inputs):
                inputs.append(u)
    rest = relax.SeqExpr([relax.BindingBlock(bindings[j + 1:])] + blocks[bi + 1:], func.body.body)
    used_after = relax.analysis.free_vars(rest)
    outs = [d for d in defined if any(d.same_as(u) for u in used_after)]
    if not outs:
        outs = [defined[-1]]
    params = [relax.Var(f"a{k}", u.ty) for k, u in enumerate(inputs)]
    vmap = dict(zip(inputs, params))
    inner = []
    for b in rng_b:
        nv = relax.Var(b.var.name, b.var.ty)
        inner.append(relax.VarBinding(nv, _subst(b.value, vmap)))
        vmap[b.var] = nv
    ret = [vmap[o] for o in outs]
    ret_expr = ret[0] if len(ret) == 1 else relax.Tuple(ret)
    ret_ty = ret[0].ty if len(ret) == 1 else relax.TupleType([r.ty for r in ret])
    new_f = relax.BlockBuilder(mod).normalize(
        relax.Function(params, relax.SeqExpr([relax.BindingBlock(inner)], ret_expr), ret_ty, True))
    if not local:
        mod, callee = _add_func(mod, new_f, "outlined")
        func = mod[gv]
    df = isinstance(blk, relax.DataflowBlock)
    emit = _Emit(mod, df)
    if local:
        callee = emit(new_f, name="outlined")
    call = relax.Call(callee, list(inputs))
    if len(outs) == 1:
        emit(call, var=outs[0])
    else:
        r = emit(call, name="ol")
        for k, o in enumerate(outs):
            emit(relax.TupleGetItem(r, k), var=o)
    new_bindings = bindings[:i] + emit.out + bindings[j + 1:]
    blocks[bi] = relax.DataflowBlock(new_bindings) if df else relax.BindingBlock(new_bindings)
    return _rebuild(mod, gv, func, blocks)


@mutator("outline_closure", _outline_sites, structural=True)
def _outline_closure(mod, site, rng):
    return _outline(mod, site, rng, True)


@mutator("outline_global", _outline_sites, structural=True)
def _outline_global(mod, site, rng):
    return _outline(mod, site, rng, False)


def _inlinable_callee(mod, value):
    if not isinstance(value, relax.Call) or not isinstance(value.op, relax.GlobalVar):
        return None
    if value.op.name_hint == "main":
        return None
    f = mod[value.op]
    if not isinstance(f, relax.Function) or not isinstance(f.body, relax.SeqExpr):
        return None
    for blk in f.body.blocks:
        for b in blk.bindings:
            if not isinstance(b, relax.VarBinding):
                return None
            v = b.value
            if isinstance(v, (relax.Function, relax.If)) or not _static(b.var.ty):
                return None
            if isinstance(v, relax.Call) and not isinstance(v.op, (tvm.ir.Op, relax.GlobalVar)):
                return None
    if not isinstance(f.body.body, (relax.Var, relax.Tuple)):
        return None
    return f


def _inline_sites(mod, traits):
    return _bindings(mod, lambda b, blk, f: _inlinable_callee(mod, b.value) is not None)


@mutator("inline_call", _inline_sites, structural=True)
def _inline_call(mod, site, rng):
    def build(emit, b):
        f = _inlinable_callee(mod, b.value)
        vmap = dict(zip(f.params, b.value.args))
        for blk in f.body.blocks:
            for ib in blk.bindings:
                vmap[ib.var] = emit(_subst(ib.value, vmap), name=ib.var.name)
        emit(_subst(f.body.body, vmap), var=b.var)
    return _replace_binding(mod, site, build)
